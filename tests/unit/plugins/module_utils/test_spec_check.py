# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading SGLang's speculative numbers: the gauges of /metrics, the requests' meta_info, /server_info."""

from __future__ import annotations

from ansible_collections.llmserve.sglang.plugins.module_utils.spec_check import (
    parse_gauges,
    server_state,
    summarise_requests,
)

LABELS = 'engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="%d"'
METRICS = "\n".join([
    "# HELP sglang:spec_accept_length Mean acceptance length of speculative decoding.",
    "# TYPE sglang:spec_accept_length gauge",
    "sglang:spec_accept_length{%s} 3.0" % (LABELS % 0),
    "sglang:spec_accept_length{%s} 2.0" % (LABELS % 1),
    "sglang:spec_accept_rate{%s} 0.5 1700000000000" % (LABELS % 0),
    "sglang:spec_num_steps{%s} 3.0" % (LABELS % 0),
    "sglang:spec_accept_length_other{%s} 9.0" % (LABELS % 0),
    "sglang:num_running_reqs{%s} 1.0" % (LABELS % 0),
    "sglang:spec_accept_rate{%s} NaN" % (LABELS % 1),
    "garbage line",
])


def test_gauges_are_averaged_over_ranks_and_other_series_ignored():
    assert parse_gauges(METRICS) == {"sglang:spec_accept_length": 2.5, "sglang:spec_accept_rate": 0.5,
                                     "sglang:spec_num_steps": 3.0}
    assert parse_gauges("") == {} and parse_gauges(None) == {}


def meta(completion, verify=None, prompt=12, latency=1.0, correct=None):
    info = {"prompt_tokens": prompt, "completion_tokens": completion, "e2e_latency": latency}
    if verify:
        info.update(spec_verify_ct=verify, spec_accept_length=completion / verify,
                    spec_num_correct_drafts=correct if correct is not None else completion - verify,
                    spec_num_proposed_drafts=verify * 3)
    return {"meta_info": info, "seconds": latency + 0.01}


def test_requests_are_summed_over_tokens_not_averaged_over_requests():
    out = summarise_requests([meta(100, 25), meta(20, 20, prompt=30)])
    assert out["accept_length"] == round(120 / 45, 3)  # not the mean of 4.0 and 1.0
    assert out["accept_length_per_request"] == [4.0, 1.0]
    assert out["accept_rate"] == round((75 + 0) / (75 + 60), 3)
    assert out["prompt_tokens"] == [12, 30] and out["completion_tokens"] == [100, 20]
    assert out["decode_tokens_per_s"] == 60.0 and out["decode_seconds"] == 2.0


def test_without_speculation_there_is_no_acceptance_length():
    out = summarise_requests([meta(8), meta(8)])
    assert out["accept_length"] is None and out["accept_rate"] is None
    assert out["accept_length_per_request"] == [None, None]
    assert out["verify_forwards"] == 0


def test_client_time_stands_in_for_a_missing_e2e_latency():
    answer = meta(50, 10)
    del answer["meta_info"]["e2e_latency"]
    answer["seconds"] = 0.5
    assert summarise_requests([answer])["decode_tokens_per_s"] == 100.0
    assert summarise_requests([])["decode_tokens_per_s"] is None


def test_server_state_prefers_the_schedulers_attention_settings_and_active_steps():
    info = {"speculative_algorithm": "EAGLE", "speculative_num_steps": 3, "speculative_eagle_topk": 1,
            "speculative_num_draft_tokens": 4, "speculative_adaptive": True, "attention_backend": None,
            "page_size": 1, "version": "0.5.23", "api_key": "secret",
            "internal_states": [{"attention_backend": "trtllm_mha", "page_size": 64, "speculative_num_steps": 5,
                                 "avg_spec_accept_length": 3.0},
                                {"avg_spec_accept_length": 2.0}]}
    out = server_state(info)
    assert out["attention_backend"] == "trtllm_mha" and out["page_size"] == 64
    assert out["speculative_num_steps"] == 3 and out["active_num_steps"] == 5
    assert out["avg_spec_accept_length"] == 2.5
    assert "api_key" not in out and out["version"] == "0.5.23"


def test_server_state_of_a_server_without_internal_states():
    out = server_state({"attention_backend": "fa3", "page_size": 16})
    assert out["attention_backend"] == "fa3" and out["avg_spec_accept_length"] is None
    assert out["active_num_steps"] is None
    assert server_state("nonsense")["attention_backend"] is None
