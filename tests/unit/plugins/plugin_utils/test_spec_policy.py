# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The speculative decoding policy: the default floor, the verdict and its actions, the backend comparison, the
fingerprint that remembers a disabled configuration, and the configuration without speculation."""

from __future__ import annotations

import pytest

from ansible_collections.llmserve.sglang.plugins.plugin_utils import spec_policy
from ansible_collections.llmserve.sglang.plugins.filter import sglang_spec

NEXTN = {"algorithm": "NEXTN", "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4}


def check(accept=3.0, server_avg=2.9, gauge=None, steps=3, verify=True):
    """A speculative_check result as the module returns it."""
    return {
        "requests": {"requests": 4, "prompt_tokens": [20, 18, 25, 22], "completion_tokens": [64] * 4,
                     "accept_length": accept if verify else None, "accept_rate": 0.6,
                     "decode_tokens_per_s": 120.5},
        "server": {"speculative_algorithm": "EAGLE", "speculative_num_steps": steps, "avg_spec_accept_length": server_avg,
                   "speculative_adaptive": False, "active_num_steps": steps, "attention_backend": "fa3",
                   "page_size": 1},
        "metrics": None if gauge is None else {"sglang:spec_accept_length": gauge, "sglang:spec_accept_rate": 0.5,
                                               "sglang:spec_num_steps": steps},
    }


@pytest.mark.parametrize("algorithm, steps, floor", [
    ("NEXTN", 3, 1.75), ("nextn", 1, 1.25), ("EAGLE", 5, 2.25), ("EAGLE3", 7, 2.75), ("STANDALONE", 2, 1.5),
    ("FROZEN_KV_MTP", 4, 2.0), ("NGRAM", 12, None), ("DFLASH", 3, None), ("NEXTN", None, None), ("NEXTN", 0, None),
    (None, 3, None),
])
def test_default_floor_is_one_plus_a_quarter_per_draft_step(algorithm, steps, floor):
    assert spec_policy.default_floor(algorithm, steps) == floor


def test_the_floor_stays_below_what_sglang_ci_expects_and_above_a_collapse():
    # SGLang's CI gates Qwen3.5 NEXTN (3 steps) above 3.3; a collapse on long contexts was about 1.6
    assert 1.6 < spec_policy.default_floor("NEXTN", 3) < 3.3


@pytest.mark.parametrize("setting, expected", [
    ("auto", (1.75, "auto: 1 + 3 draft steps x 0.25")),
    ("AUTO", (1.75, "auto: 1 + 3 draft steps x 0.25")),
    (2.5, (2.5, "set")),
    ("2.5", (2.5, "set")),
    (1, (1.0, "set")),
    (None, (None, "none (not judged)")),
    ("none", (None, "none (not judged)")),
    ("", (None, "none (not judged)")),
])
def test_min_accept_length_settings(setting, expected):
    assert spec_policy.min_accept_length(setting, "NEXTN", 3) == expected


@pytest.mark.parametrize("setting", [0.5, 65, "fast", True, [2], float("nan"), float("inf")])
def test_bad_settings_are_refused(setting):
    assert "sglang_server_speculative_min_accept_length must be auto, none or a number" in (
        spec_policy.setting_problem(setting))
    with pytest.raises(ValueError):
        spec_policy.min_accept_length(setting, "NEXTN", 3)


def test_auto_without_a_floor_says_why():
    assert spec_policy.min_accept_length("auto", "NGRAM", 12) == (None, "auto: no default floor for NGRAM")


def test_pass_judges_the_requests_own_acceptance_length():
    out = spec_policy.verdict(check(accept=3.1, server_avg=1.2), "auto", "fail", NEXTN)
    assert (out["verdict"], out["action"]) == ("pass", "none")
    assert out["accept_length"] == 3.1 and out["accept_length_source"] == "requests"
    assert out["accept_length_server_info"] == 1.2  # reported, not judged: it counts earlier traffic
    assert out["min_accept_length"] == 1.75
    assert out["decode_tokens_per_s"] == 120.5
    assert out["prompt_tokens"] == [20, 18, 25, 22]
    assert "reaches the floor 1.75" in out["reason"]


@pytest.mark.parametrize("on_low", ["fail", "warn", "disable"])
def test_low_acceptance_takes_the_configured_action(on_low):
    out = spec_policy.verdict(check(accept=1.4), "auto", on_low, NEXTN)
    assert (out["verdict"], out["action"], out["on_low"]) == ("low", on_low, on_low)
    assert out["reason"] == ("acceptance length 1.40 (requests) is below the floor 1.75 "
                             "(auto: 1 + 3 draft steps x 0.25)")


def test_the_floor_uses_the_steps_sglang_resolved():
    # NEXTN without num_steps: SGLang chose 5 steps, so the floor is 2.25 and 2.0 is low
    out = spec_policy.verdict(check(accept=2.0, steps=5), "auto", "warn", {"algorithm": "NEXTN"})
    assert (out["verdict"], out["min_accept_length"], out["num_steps"]) == ("low", 2.25, 5)


def test_a_set_number_overrides_the_formula():
    out = spec_policy.verdict(check(accept=3.0), 3.3, "fail", NEXTN)
    assert (out["verdict"], out["action"], out["min_accept_length_rule"]) == ("low", "fail", "set")


def test_without_the_requests_figure_the_server_then_the_gauge_decides():
    out = spec_policy.verdict(check(verify=False, server_avg=1.5, gauge=3.0), "auto", "fail", NEXTN)
    assert (out["accept_length"], out["accept_length_source"], out["verdict"]) == (1.5, "server_info", "low")
    out = spec_policy.verdict(check(verify=False, server_avg=None, gauge=3.0), "auto", "fail", NEXTN)
    assert (out["accept_length"], out["accept_length_source"], out["verdict"]) == (3.0, "metrics", "pass")
    assert out["active_num_steps_metrics"] == 3


def test_no_number_at_all_only_warns_even_under_fail():
    out = spec_policy.verdict(check(verify=False, server_avg=None), "auto", "fail", NEXTN)
    assert (out["verdict"], out["action"], out["accept_length"]) == ("unmeasured", "warn", None)


def test_none_judges_nothing():
    out = spec_policy.verdict(check(accept=1.0), "none", "fail", NEXTN)
    assert (out["verdict"], out["action"]) == ("not judged", "none")


def test_an_unknown_action_is_refused():
    with pytest.raises(ValueError, match="sglang_server_speculative_on_low must be one of fail, warn, disable"):
        spec_policy.verdict(check(), "auto", "ignore", NEXTN)


def test_backend_puts_asked_and_chosen_side_by_side():
    out = spec_policy.backend({"attention_backend": None, "page_size": None},
                              {"attention_backend": "trtllm_mha", "page_size": 64})
    assert out["asked"]["attention_backend"] is None and out["chosen"]["attention_backend"] == "trtllm_mha"
    assert out["chosen_by_sglang"] == ["attention_backend", "page_size"] and out["differs"] == []
    out = spec_policy.backend({"attention_backend": "fa3", "page_size": 1},
                              {"attention_backend": "triton", "page_size": 1})
    assert out["differs"] == ["attention_backend"] and out["chosen_by_sglang"] == []


def test_fingerprint_ignores_spelling_and_order_but_not_content():
    one = spec_policy.fingerprint(NEXTN, {"speculative-adaptive": True, "max_running_requests": 8}, "/m")
    two = spec_policy.fingerprint(dict(reversed(list(NEXTN.items())), algorithm="nextn"),
                                  {"speculative_adaptive": True, "max_running_requests": 16}, "/m")
    assert one == two and len(one) == 64
    assert spec_policy.fingerprint(dict(NEXTN, num_steps=2, num_draft_tokens=3), {}, "/m") != \
        spec_policy.fingerprint(NEXTN, {}, "/m")
    assert spec_policy.fingerprint(NEXTN, {}, "/other") != spec_policy.fingerprint(NEXTN, {}, "/m")
    assert spec_policy.fingerprint(NEXTN, {"speculative_adaptive": False}, "/m") == \
        spec_policy.fingerprint(NEXTN, {}, "/m")


def test_without_speculation_drops_every_speculative_setting():
    cfg = {"model_path": "/m", "speculative": NEXTN,
           "args": {"speculative-adaptive": True, "speculative_accept_threshold_single": 1.0, "page_size": 1}}
    out = spec_policy.without_speculation(cfg)
    assert out == {"model_path": "/m", "speculative": {}, "args": {"page_size": 1}}
    assert cfg["speculative"] == NEXTN  # the input is not changed


def test_filters_wrap_the_policy():
    filters = sglang_spec.FilterModule().filters()
    assert filters["sglang_spec_verdict"](check(accept=1.2), "auto", "warn", NEXTN)["action"] == "warn"
    with pytest.raises(Exception, match="sglang_spec_verdict: sglang_server_speculative_on_low"):
        filters["sglang_spec_verdict"](check(), "auto", "nope", NEXTN)
    with pytest.raises(Exception, match="sglang_spec_off"):
        filters["sglang_spec_off"]("not a dict")
