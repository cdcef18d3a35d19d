# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The speculative check in the host report, its rows (play output and Markdown) and the job artifacts."""

from __future__ import annotations

import json

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.llmserve.sglang.plugins.plugin_utils import spec_policy
from ansible_collections.llmserve.sglang.plugins.plugin_utils.deploy_report import (
    build_host_report,
    host_rows,
    host_stats,
)
from ansible_collections.llmserve.sglang.tests.unit.plugins.plugin_utils.test_deploy_report import (
    SGLANG,
    _as_extra_vars,
    _render_markdown,
)

CHECK = {
    "requests": {"requests": 4, "prompt_tokens": [21, 22, 19, 26], "completion_tokens": [128] * 4,
                 "accept_length": 3.12, "accept_rate": 0.71, "decode_tokens_per_s": 141.3},
    "server": {"speculative_algorithm": "EAGLE", "speculative_num_steps": 3, "avg_spec_accept_length": 2.95,
               "speculative_adaptive": True, "active_num_steps": 5, "attention_backend": "trtllm_mha", "page_size": 64},
    "metrics": {"sglang:spec_accept_length": 3.0, "sglang:spec_accept_rate": 0.66, "sglang:spec_num_steps": 5},
}


def verdict(check=None, on_low="warn", setting="auto"):
    check = check or CHECK
    out = spec_policy.verdict(check, setting, on_low, {"algorithm": "NEXTN", "num_steps": 3})
    out["backend"] = spec_policy.backend({"attention_backend": None, "page_size": None}, check["server"])
    out["prompts"] = 4
    return out


def test_report_rows_show_acceptance_tokens_per_second_and_the_chosen_backend():
    report = build_host_report("h", None, None, dict(SGLANG, speculative_check=verdict()))
    rows = dict(host_rows(report))
    assert rows["Speculative check"] == (
        "pass: acceptance length 3.12 (requests) [server_info 2.95, /metrics 3.00], floor 1.75 "
        "(auto: 1 + 3 draft steps x 0.25); 141.3 tokens/s; 4 requests, prompt tokens 21/22/19/26")
    assert rows["Attention backend (asked / chosen)"] == (
        "left to SGLang, page size left to SGLang / trtllm_mha, page size 64")
    assert rows["Speculative steps (adaptive)"] == "3 configured, 5 active (5 on /metrics)"
    assert report["sglang"]["speculative_check"]["decode_tokens_per_s"] == 141.3


def test_a_low_verdict_names_its_action_and_a_disabled_configuration_its_reason():
    low = dict(CHECK, requests=dict(CHECK["requests"], accept_length=1.3))
    off = {"fingerprint": "f" * 64, "disabled_at": "2026-05-01T10:00:00Z",
           "reason": "acceptance length 1.30 (requests) is below the floor 1.75"}
    report = build_host_report("h", None, None, dict(SGLANG, speculative_reported=None,
                                                     speculative_check=verdict(low, "disable"),
                                                     speculative_disabled=off))
    rows = dict(host_rows(report))
    assert rows["Speculative check"].startswith("low: acceptance length 1.30 (requests)")
    assert rows["Speculative check"].endswith("; action: disable")
    assert rows["Speculative decoding"] == ("kept off on this host since 2026-05-01T10:00:00Z: acceptance length "
                                            "1.30 (requests) is below the floor 1.75")
    stats = host_stats(report)["speculative"]
    assert stats["verdict"] == "low" and stats["action"] == "disable" and stats["disabled"] is True
    assert stats["disabled_reason"].startswith("acceptance length 1.30")


def test_job_artifacts_carry_the_numbers_and_the_backend():
    stats = host_stats(build_host_report("h", None, None, dict(SGLANG, speculative_check=verdict())))
    assert stats["speculative"] == {
        "verdict": "pass", "action": "none", "accept_length": 3.12, "accept_length_source": "requests",
        "min_accept_length": 1.75, "decode_tokens_per_s": 141.3, "prompt_tokens": [21, 22, 19, 26],
        "attention_backend": "trtllm_mha", "page_size": 64, "active_num_steps": 5, "disabled": False,
        "disabled_reason": None}


def test_without_a_check_nothing_changes():
    report = build_host_report("h", None, None, SGLANG)
    assert "speculative" not in host_stats(report)
    assert not [label for label, _v in host_rows(report) if label.startswith(("Speculative check", "Attention"))]


def test_markdown_shows_the_speculative_rows():
    text = _render_markdown([build_host_report("h", None, None, dict(SGLANG, speculative_check=verdict()))], "T")
    assert "| Speculative check | pass: acceptance length 3.12 (requests)" in text
    assert "| Attention backend (asked / chosen) | left to SGLang, page size left to SGLang / trtllm_mha" in text


def test_job_artifacts_of_a_hostile_server_are_numbers_and_inert_text():
    """Issue 24 #3 applied to the check: the backend SGLang chose and the numbers come from the server's answers."""
    hostile = verdict()
    hostile["backend"]["chosen"] = {"attention_backend": "fa3{{ lookup('pipe', 'id') }}", "page_size": "{{ 64 }}"}
    hostile.update(accept_length="{{ 7 * 191 }}", decode_tokens_per_s=float("nan"), prompt_tokens=[21, "{% x %}", 2.5],
                   active_num_steps=True, min_accept_length="1.75")
    off = {"disabled_at": "2026-05-01T10:00:00Z", "reason": "below {# the floor #} {{ 7 * 191 }}"}
    stats = host_stats(build_host_report("h", None, None, dict(SGLANG, speculative_check=hostile,
                                                               speculative_disabled=off)))
    spec = stats["speculative"]
    assert spec["attention_backend"] == "fa3{ { lookup('pipe', 'id') }}"
    assert spec["page_size"] is None and spec["accept_length"] is None and spec["decode_tokens_per_s"] is None
    assert spec["min_accept_length"] == 1.75 and spec["prompt_tokens"] == [21, None, None]
    assert spec["active_num_steps"] is None
    assert spec["disabled_reason"] == "below { # the floor #} { { 7 * 191 }}"
    artifacts = {"sglang_run_summary": {"run_id": 7, "hosts": {"h": stats}}}
    rendered = Templar(loader=DataLoader(), variables={}).template(_as_extra_vars(artifacts))
    assert rendered == json.loads(json.dumps(artifacts))
    text = json.dumps(rendered)
    assert "1337" not in text and "uid=" not in text
    for opening in ("{{", "{%", "{#"):
        assert opening not in text
