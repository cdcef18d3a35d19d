# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""revision_swap: a restart becomes an in-place weight swap only when nothing but the model path moves, the record
still describes the live files and nothing else stands in the way; every other case says why it restarts, and the
policy ``required`` turns that into a problem. The role's real templates are checked in
tests/unit/roles/sglang_server/test_unit_file.py (test_only_the_model_path_differs_between_revisions)."""

from __future__ import annotations

import hashlib

import pytest

from ansible_collections.llmserve.sglang.plugins.plugin_utils.revision_swap import (
    MARKER,
    NOTHING,
    VERSION_MARKER,
    RESTART,
    SWAP,
    RevisionSwapError,
    neutral_sums,
    plan_revision_swap,
    plan_host_swap,
    serving_record,
    serving_record_text,
    weight_version_for,
)

OLD = "/var/lib/llmserve-models/Qwen--Qwen3.5-122B-A10B/" + "a" * 40
NEW = "/var/lib/llmserve-models/Qwen--Qwen3.5-122B-A10B/" + "b" * 40


def files(model_path, chunk=8192):
    return {
        "unit": "[Unit]\nDescription=SGLang server %s\n[Service]\nExecStart=/opt/venv/bin/python -m sglang.launch_server"
                " --config /etc/sglang/config.yaml\n" % model_path,
        "config": "model-path: %s\napi-key: sk-secret\nchunked-prefill-size: %d\n" % (model_path, chunk),
        "env": "HF_HOME=/var/lib/sglang/hf\n",
    }


def sums(contents):
    return dict((name, hashlib.sha256(text.encode()).hexdigest()) for name, text in contents.items())


RESTART_PLAN = {"restart_needed": True, "restart_pending": False, "restart_reasons": ["the staged files change"]}


def decide(policy="auto", record=None, live=None, candidates=None, model_path=NEW, **kwargs):
    record = serving_record(files(OLD), OLD, "a" * 40) if record is None else record
    live = sums(files(OLD)) if live is None else live
    candidates = files(NEW) if candidates is None else candidates
    return plan_revision_swap(policy, kwargs.pop("plan", RESTART_PLAN), record, live, candidates, model_path,
                              "b" * 40, **kwargs)


def test_neutral_sums_are_equal_when_only_the_model_path_differs():
    assert neutral_sums(files(OLD), OLD) == neutral_sums(files(NEW), NEW)
    assert sums(files(OLD)) != sums(files(NEW))
    assert neutral_sums(files(OLD), OLD)["config"] != neutral_sums(files(NEW, chunk=4096), NEW)["config"]
    # spelling the marker out can not make another file equal: it is refused
    with pytest.raises(RevisionSwapError, match="the rendered x holds a marker"):
        neutral_sums({"x": MARKER}, OLD)
    with pytest.raises(RevisionSwapError, match="the rendered y holds a marker"):
        neutral_sums({"y": "v" + VERSION_MARKER}, OLD)


def versioned(model_path, version, flag="1"):
    # the unit loads a stable link; the revision shows only as the version flag and the record's model directory
    return {"unit": "ExecStart=/opt/venv/bin/python -m sglang.launch_server --model-path /var/lib/sglang/model "
                    "--weight-version %s --flag %s\n" % (version, flag),
            "args": '{"argv": ["--weight-version", "%s"], "model_dir": "%s"}\n' % (version, model_path)}


def test_a_commit_is_neutralised_with_the_model_path():
    assert neutral_sums(versioned(OLD, "a" * 40), OLD, "a" * 40) == neutral_sums(versioned(NEW, "b" * 40), NEW, "b" * 40)
    # any other change still shows
    assert neutral_sums(versioned(OLD, "a" * 40), OLD, "a" * 40) != neutral_sums(
        versioned(NEW, "b" * 40, flag="2"), NEW, "b" * 40)
    # a 64-digit commit (SHA-256 repositories) too
    assert neutral_sums(versioned(OLD, "c" * 64), OLD, "c" * 64) == neutral_sums(versioned(NEW, "d" * 64), NEW, "d" * 64)


def test_a_version_that_is_no_commit_is_not_neutralised():
    # "a" -> "b" in a flag value would otherwise look like a revision change
    old = {"unit": "--weight-version a --flag a"}
    new = {"unit": "--weight-version b --flag b"}
    assert neutral_sums(old, "/m/x", "a") != neutral_sums(new, "/m/y", "b")


@pytest.mark.parametrize("path, version", [
    ("/var/lib/llmserve-models/org--name/" + "a" * 40, "a" * 40),
    ("/var/lib/llmserve-models/org--name/" + "a" * 40 + "/", "a" * 40),
    ("/var/lib/llmserve-models/org--name/" + "e" * 64, "e" * 64),
    ("/models/qwen", ""),
    ("/models/" + "A" * 40, ""),
    ("Qwen/Qwen3.5-122B-A10B", ""),
    ("relative/" + "a" * 40, ""),
    (None, ""),
])
def test_weight_version_for(path, version):
    assert weight_version_for(path) == version


def test_a_model_path_without_a_commit_restarts():
    result = plan_revision_swap("auto", RESTART_PLAN, serving_record(files(OLD), OLD, "a" * 40), sums(files(OLD)),
                                files(NEW), NEW, "")
    assert result["action"] == RESTART
    assert "the model path is not a revision directory of the model store (no commit to report)" in result["reasons"]


def test_the_record_holds_checksums_not_content():
    record = serving_record(files(OLD), OLD, "a" * 40)
    assert sorted(record) == ["live", "model_path", "neutral", "weight_version"]
    assert "sk-secret" not in repr(record)
    assert record["live"] == sums(files(OLD))


def test_a_revision_only_change_is_swapped():
    result = decide()
    assert result["action"] == SWAP
    assert result["reasons"] == [] and result["problems"] == []
    assert (result["from_model_path"], result["from_weight_version"]) == (OLD, "a" * 40)
    assert (result["to_model_path"], result["to_weight_version"]) == (NEW, "b" * 40)


def test_nothing_to_do_when_the_plan_restarts_nothing():
    result = decide(plan={"restart_needed": False}, policy="required")
    assert result["action"] == NOTHING and result["problems"] == []


def test_policy_never_restarts_without_looking_further():
    assert decide(policy="never")["reasons"] == ["sglang_server_weight_swap is never"]


@pytest.mark.parametrize("kwargs, reason", [
    ({"candidates": files(NEW, chunk=4096)}, "more than the model revision changes (config)"),
    ({"record": {}}, "the record of the running server lacks model_path, weight_version, live, neutral"),
    ({"record": "garbage"}, "no record of what the running server was started with"),
    ({"live": sums(files(NEW))}, "the live files are not the ones the running server was started with"),
    ({"candidates": files(OLD, chunk=4096), "model_path": OLD}, "the model revision does not change"),
    ({"install_needed": True}, "SGLang is installed anew"),
    ({"active": False}, "the unit is not active"),
    ({"plan": dict(RESTART_PLAN, restart_pending=True)}, "sglang_server_restart_policy is never"),
    ({"served_model_name": "qwen"}, "sglang_server_served_model_name is set"),
    ({"draft_model_path": "/models/draft"}, "a separate draft model is configured"),
    ({"multinode": True}, "multi-node servers are restarted"),
])
def test_each_obstacle_falls_back_to_a_restart_and_says_why(kwargs, reason):
    result = decide(**kwargs)
    assert result["action"] == RESTART
    assert any(r.startswith(reason) for r in result["reasons"]), result["reasons"]
    assert result["problems"] == []
    required = decide(policy="required", **kwargs)
    assert required["action"] == RESTART
    if kwargs.get("active") is False:
        # nothing runs: starting the unit is no restart of a serving model, the policy lets it happen
        assert required["problems"] == []
        return
    assert len(required["problems"]) == 1
    assert required["problems"][0].startswith("sglang_server_weight_swap is required, but this change needs a restart: ")
    assert reason in required["problems"][0]


def test_a_file_that_appears_or_goes_is_more_than_a_revision():
    candidates = dict(files(NEW), hook="import os\n")
    assert decide(candidates=candidates)["reasons"] == ["more than the model revision changes (hook)"]


def test_bad_input():
    with pytest.raises(RevisionSwapError, match="sglang_server_weight_swap must be one of auto, never, required"):
        decide(policy="sometimes")
    with pytest.raises(RevisionSwapError, match="model_path must be a non-empty string"):
        neutral_sums(files(OLD), "")
    with pytest.raises(RevisionSwapError, match="must be dicts"):
        plan_revision_swap("auto", RESTART_PLAN, None, [], {}, NEW, "b")


def test_plan_host_swap_reads_the_record_and_the_live_files():
    managed = [{"name": "unit", "path": "/etc/systemd/system/sglang.service"},
               {"name": "config", "path": "/etc/sglang/sglang.yaml"}]
    old, new = files(OLD), files(NEW)
    state = {"paths": {"/etc/systemd/system/sglang.service": {"type": "file", "sha256": sums(old)["unit"]},
                       "/etc/sglang/sglang.yaml": {"type": "file", "sha256": sums(old)["config"]}}}
    record = serving_record_text(old, ["unit", "config"], OLD, "a" * 40)
    plan = dict(RESTART_PLAN, changes=["stage sglang.service", "restart: the staged files change"],
                install_needed=False, active=True)
    out = plan_host_swap(plan, state, managed, dict(new, env="ignored"), record, "auto", NEW, "b" * 40)
    assert out["weight_swap"]["action"] == SWAP and out["weight_swap"]["revision_changes"] is True
    assert out["changes"] == ["stage sglang.service", "load revision %s into the running server in place of %s "
                              "(no restart)" % ("b" * 40, "a" * 40)]
    # a live file somebody edited since: restart, and the plan says why
    state["paths"]["/etc/sglang/sglang.yaml"]["sha256"] = "0" * 64
    out = plan_host_swap(plan, state, managed, new, record, "auto", NEW, "b" * 40)
    assert out["weight_swap"]["action"] == RESTART and out["weight_swap"]["revision_changes"] is True
    assert out["changes"][-1] == ("restart instead of loading the revision in place: the live files are not the "
                                  "ones the running server was started with")
    # no record file, or one that is no JSON
    for text in (None, "", "{not json", "[]"):
        out = plan_host_swap(plan, state, managed, new, text, "auto", NEW, "b" * 40)
        assert out["weight_swap"]["reasons"][0] == "no record of what the running server was started with"
    # nothing to restart: nothing to swap
    # a restart of the same revision (another flag): no revision change to report
    same = plan_host_swap(plan, state, managed, old, record, "auto", OLD, "a" * 40)["weight_swap"]
    assert same["action"] == RESTART and same["revision_changes"] is False
    quiet = dict(plan, restart_needed=False, changes=[])
    assert plan_host_swap(quiet, state, managed, new, record, "auto", NEW, "b" * 40)["weight_swap"]["action"] == NOTHING
