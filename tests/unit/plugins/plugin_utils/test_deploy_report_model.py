# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The model's weights in the host report, the run report's rows and the set_stats artifacts (issue 29)."""

from __future__ import annotations

import json

from ansible_collections.llmserve.sglang.plugins.filter.deploy_report import sglang_host_report
from ansible_collections.llmserve.sglang.plugins.plugin_utils.deploy_report import (
    build_host_report,
    host_rows,
    host_stats,
)

COMMIT = "0123456789abcdef0123456789abcdef01234567"
PATH = "/var/lib/llmserve-models/Qwen--Qwen3.5-122B-A10B/" + COMMIT
# sglang_model_report as the role's set_fact publishes it (Ansible may hand numbers and flags over as text)
STAGED = {"repo": "Qwen/Qwen3.5-122B-A10B", "revision": COMMIT, "requested": COMMIT, "source": "hub", "path": PATH,
          "bytes": 244 * (1 << 30), "files": 52, "changed": True, "downloaded_bytes": 244 * (1 << 30),
          "bytes_read": 244 * (1 << 30), "files_hashed": 52, "verified": "full", "removed": ["/old/rev"],
          "serving": False, "prewarm": "read 244.0 GiB into the page cache in 20.1 s (12.1 GiB/s)"}
UNCHANGED = dict(STAGED, changed="False", downloaded_bytes="0", bytes_read="0", files_hashed=0, verified="changed",
                 removed=[], serving=True, prewarm="not needed: this revision is already serving")


def test_the_report_holds_repo_revision_bytes_and_verification():
    report = build_host_report("gpu-01", model=STAGED)
    assert report["stages"]["model"] == "staged"
    assert report["model"] == {
        "repo": "Qwen/Qwen3.5-122B-A10B", "revision": COMMIT, "requested": COMMIT, "path": PATH,
        "bytes": 244 * (1 << 30), "files": 52, "staged": True, "downloaded_bytes": 244 * (1 << 30),
        "bytes_read": 244 * (1 << 30), "files_hashed": 52, "verified": "full", "removed": ["/old/rev"],
        "prewarm": "read 244.0 GiB into the page cache in 20.1 s (12.1 GiB/s)"}


def test_a_run_that_changed_nothing_shows_no_byte_read():
    report = build_host_report("gpu-01", model=UNCHANGED)
    assert report["stages"]["model"] == "verified"
    assert report["model"]["staged"] is False
    assert report["model"]["bytes_read"] == 0 and report["model"]["downloaded_bytes"] == 0
    rows = dict(host_rows(report))
    assert rows["Model"] == "Qwen/Qwen3.5-122B-A10B@%s (244.0 GiB (261993005056 bytes), 52 files)" % COMMIT
    assert rows["Model this run"] == "already in the store; downloaded 0 B, hashed 0 B (0 files, verify changed)"
    assert rows["Page-cache pre-warm"] == "not needed: this revision is already serving"


def test_the_rows_of_a_staged_revision_name_what_was_removed():
    rows = dict(host_rows(build_host_report("gpu-01", model=STAGED)))
    assert rows["Model this run"].startswith("staged; downloaded 244.0 GiB")
    assert rows["Model this run"].endswith("(52 files, verify full); removed /old/rev")


def test_the_artifacts_carry_the_model_per_host():
    stats = host_stats(build_host_report("gpu-01", model=UNCHANGED))
    assert stats["model"] == {"repo": "Qwen/Qwen3.5-122B-A10B", "revision": COMMIT, "bytes": 244 * (1 << 30),
                              "downloaded_bytes": 0, "bytes_read": 0, "verified": "changed", "staged": False}
    assert stats["stages"]["model"] == "verified"
    json.dumps(stats)


def test_without_the_model_role_nothing_about_a_model_is_reported():
    report = build_host_report("gpu-01")
    assert "model" not in report and "model" not in report["stages"]
    assert "model" not in host_stats(report)
    assert "Model" not in dict(host_rows(report))


def test_the_filter_passes_the_model_on():
    assert sglang_host_report("gpu-01", None, None, None, None, None, None, model=STAGED)["model"]["revision"] \
        == COMMIT
    assert "model" not in sglang_host_report("gpu-01", model={})


def test_the_artifacts_never_carry_a_template_from_the_host():
    hostile = dict(STAGED, repo="org/{{ lookup('pipe', 'id') }}", verified="{% raw %}x")
    text = json.dumps(host_stats(build_host_report("gpu-01", model=hostile)))
    assert "{{" not in text and "{%" not in text
