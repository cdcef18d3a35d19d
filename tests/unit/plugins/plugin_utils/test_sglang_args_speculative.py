# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What ``/server_info`` must report for the speculative settings: decided once, by the render step."""

from __future__ import annotations

import pytest

from ansible_collections.llmserve.sglang.plugins.filter.sglang import FilterModule
from ansible_collections.llmserve.sglang.plugins.plugin_utils import sglang_args
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args import render_server_argv

BASE = {
    "model_path": "/models/Qwen3.5-122B-A10B",
    "host": "127.0.0.1",
    "port": 30000,
    "tp_size": 4,
    "gpus": [0, 1, 2, 3],
    "args": {"max_running_requests": 64},
}
STEPS = {"num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4}
REPORTED_STEPS = {"speculative_num_steps": 3, "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 4}


@pytest.mark.parametrize("algorithm, reported", [
    # SGLang resolves NEXTN (MTP heads) to its EAGLE worker and reports EAGLE
    ("NEXTN", "EAGLE"),
    ("nextn", "EAGLE"),
    ("EAGLE", "EAGLE"),
    ("EAGLE3", "EAGLE3"),
    ("STANDALONE", "STANDALONE"),
])
def test_render_says_what_server_info_reports(algorithm, reported):
    speculative = dict(STEPS, algorithm=algorithm)
    if algorithm == "STANDALONE":
        speculative["draft_model_path"] = "/models/draft"
    rendered = render_server_argv(dict(BASE, speculative=speculative))
    assert rendered["expected_server_info"] == dict(REPORTED_STEPS, speculative_algorithm=reported)


def test_without_speculation_the_server_reports_none():
    assert render_server_argv(dict(BASE, speculative={}))["expected_server_info"] == {"speculative_algorithm": None}
    assert sglang_args.expected_server_info(None) == {"speculative_algorithm": None}


def test_steps_left_to_sglang_are_not_expected():
    rendered = render_server_argv(dict(BASE, speculative={"algorithm": "NEXTN"}))
    assert rendered["expected_server_info"] == {"speculative_algorithm": "EAGLE"}


def test_adaptive_speculation_expects_the_algorithm_only():
    # with --speculative-adaptive SGLang picks the step count (and the draft tokens) at run time
    rendered = render_server_argv(dict(BASE, speculative=dict(STEPS, algorithm="EAGLE"),
                                       args={"max_running_requests": 64, "speculative-adaptive": True}))
    assert rendered["expected_server_info"] == {"speculative_algorithm": "EAGLE"}


def test_ngram_expects_the_algorithm_only():
    rendered = render_server_argv(dict(BASE, speculative={"algorithm": "ngram", "num_draft_tokens": 8}))
    assert rendered["expected_server_info"] == {"speculative_algorithm": "NGRAM"}


def test_the_filter_gives_what_the_render_step_gives():
    speculative = dict(STEPS, algorithm=" nextn ")
    expected = FilterModule().filters()["sglang_server_info_expected"](speculative, {"max_running_requests": 64})
    assert expected == render_server_argv(dict(BASE, speculative=speculative))["expected_server_info"]
    assert FilterModule().filters()["sglang_server_info_expected"]({}) == {"speculative_algorithm": None}


def test_top_k_one_expects_the_draft_tokens_sglang_rewrites():
    # SGLang 0.5.23 forces num_draft_tokens = num_steps + 1 when top-k is 1 (a warning, then the rewrite): 8 becomes 4
    speculative = {"algorithm": "NEXTN", "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 8}
    assert sglang_args.expected_server_info(speculative) == {
        "speculative_algorithm": "EAGLE", "speculative_num_steps": 3, "speculative_eagle_topk": 1,
        "speculative_num_draft_tokens": 4}
    # top-k above 1 keeps what was set
    speculative = dict(speculative, eagle_topk=4)
    assert sglang_args.expected_server_info(speculative)["speculative_num_draft_tokens"] == 8
