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
    plan_group_swap,
    plan_host_swap,
    serving_record,
    serving_record_text,
    swap_verdict,
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


def _node_plans(node_files=None, policy="auto"):
    """Each node's plan after plan_host_swap, as state.yml leaves it for a two-node server."""
    managed = [{"name": "unit", "path": "/etc/systemd/system/sglang.service"},
               {"name": "config", "path": "/etc/sglang/sglang.yaml"}]
    old = files(OLD)
    state = {"paths": {"/etc/systemd/system/sglang.service": {"type": "file", "sha256": sums(old)["unit"]},
                       "/etc/sglang/sglang.yaml": {"type": "file", "sha256": sums(old)["config"]}}}
    record = serving_record_text(old, ["unit", "config"], OLD, "a" * 40)
    plan = dict(RESTART_PLAN, changes=["stage sglang.service", "restart: the staged files change"],
                install_needed=False, active=True)
    plans = {}
    for host in ("node0", "node1"):
        new = (node_files or {}).get(host, files(NEW))
        plans[host] = plan_host_swap(plan, state, managed, new, record, policy, NEW, "b" * 40, multinode=True)
    return plans


def test_a_multi_node_swap_waits_for_the_group_decision():
    plans = _node_plans()
    # each node's own decision: a swap, but the changes still show the restart until the group is decided
    assert [p["weight_swap"]["action"] for p in plans.values()] == [SWAP, SWAP]
    assert plans["node0"]["weight_swap"]["group"] is True
    assert plans["node0"]["changes"][-1] == "restart: the staged files change"
    out = plan_group_swap(plans["node0"], plans, "required")
    assert out["weight_swap"]["action"] == SWAP and out["weight_swap"]["problems"] == []
    assert out["changes"] == ["stage sglang.service", "load revision %s on every node of the multi-node server in "
                              "place of %s (no restart)" % ("b" * 40, "a" * 40)]


@pytest.mark.parametrize("change, reason", [
    # node1's configuration changes more than the revision: both nodes restart
    ({"node1": files(NEW, chunk=4096)}, "node node1 of the multi-node server restarts (more than the model revision "
                                        "changes (config))"),
])
def test_one_node_that_restarts_restarts_the_server(change, reason):
    plans = _node_plans(change)
    assert plans["node0"]["weight_swap"]["action"] == SWAP and plans["node1"]["weight_swap"]["action"] == RESTART
    out = plan_group_swap(plans["node0"], plans, "auto")
    assert out["weight_swap"]["action"] == RESTART
    assert out["weight_swap"]["reasons"] == ["a multi-node server restarts as one: " + reason]
    assert out["weight_swap"]["problems"] == []
    assert out["changes"][-1] == "restart instead of loading the revision in place: " + out["weight_swap"]["reasons"][0]
    assert out["changes"][1] == "restart: the staged files change"
    required = plan_group_swap(plans["node0"], plans, "required")["weight_swap"]["problems"]
    assert required == ["sglang_server_weight_swap is required, but this change needs a restart: "
                        "a multi-node server restarts as one: " + reason]
    # a plan that restarts anyway is left as it is
    assert plan_group_swap(plans["node1"], plans, "auto") is plans["node1"]


def test_a_node_without_a_plan_or_on_another_revision_restarts_the_server():
    plans = _node_plans()
    missing = dict(plans, node2=None)
    out = plan_group_swap(plans["node0"], missing, "auto")["weight_swap"]
    assert out["action"] == RESTART
    assert out["reasons"] == ["a multi-node server restarts as one: node node2 of the multi-node server restarts "
                              "(it has no revision to load)"]
    other = dict(plans["node1"], weight_swap=dict(plans["node1"]["weight_swap"], to_weight_version="c" * 40))
    out = plan_group_swap(plans["node0"], dict(plans, node1=other), "auto")["weight_swap"]
    assert out["action"] == RESTART and ("node node1 of the multi-node server moves from revision %s to %s at %s"
                                         % ("a" * 40, "c" * 40, NEW)) in out["reasons"][0]
    with pytest.raises(RevisionSwapError, match="plan and node_plans must be dicts"):
        plan_group_swap(plans["node0"], [], "auto")


SWAPPED_RANK0 = {"outcome": "swapped", "msg": "http://n0:30000 loaded /m as weight_version b in 0.10 s",
                 "seconds": {"update": 0.1, "verify": 0.01, "total": 0.12}, "problems": [],
                 "old_weights_serving": None}
READY = {"outcome": "ready", "msg": "sglang (PID 7) is ready", "mark": {"main_pid": 7}}
SKIPPED = {"skipped": True, "changed": False}


def test_a_single_host_verdict_follows_the_module():
    assert swap_verdict(SWAPPED_RANK0)["swapped"] is True
    assert swap_verdict(dict(SWAPPED_RANK0, outcome="current"))["swapped"] is True
    refused = swap_verdict({"outcome": "rejected", "msg": "refused", "old_weights_serving": True})
    assert (refused["swapped"], refused["kept_old"]) == (False, True)
    died = swap_verdict({"outcome": "lost", "msg": "dropped", "old_weights_serving": None})
    assert (died["swapped"], died["kept_old"], died["outcome"]) == (False, False, "lost")
    for outcome in ("incompatible", "unsupported", "unauthorized"):
        assert swap_verdict({"outcome": outcome, "msg": "x"})["kept_old"] is True
    assert swap_verdict(SKIPPED)["msg"] == "the server was not asked to load the revision"


def test_a_multi_node_swap_needs_every_node_account():
    loaded = {"outcome": "swapped", "msg": "sglang: 1 of 1 rank(s) ended their load", "seconds": 0.4}
    verdict = swap_verdict(SWAPPED_RANK0, {"n1": READY}, {"n1": loaded})
    assert verdict["swapped"] is True and verdict["nodes"]["n1"]["outcome"] == "swapped"
    assert verdict["msg"].endswith("; the ranks of n1 loaded it too")
    # rank 0 answered success, node 1's rank died in its load (as the real server did): no swap, state unknown
    died = {"outcome": "lost", "msg": "sglang: the process that was asked to load (PID 7) no longer runs"}
    verdict = swap_verdict(SWAPPED_RANK0, {"n1": READY, "n2": READY}, {"n1": loaded, "n2": died})
    assert (verdict["swapped"], verdict["kept_old"], verdict["outcome"]) == (False, False, "lost")
    assert verdict["problems"] == ["n2: " + died["msg"]] and "mixed" in verdict["msg"]
    # a node's wait that did not run although rank 0 swapped counts as a failure
    assert swap_verdict(SWAPPED_RANK0, {"n1": READY}, {"n1": SKIPPED})["swapped"] is False
    # rank 0 refused: with other nodes the old weights are certain only where nothing was loaded
    refused = {"outcome": "rejected", "msg": "refused", "old_weights_serving": True}
    assert swap_verdict(refused, {"n1": READY}, {"n1": SKIPPED})["kept_old"] is False
    assert swap_verdict({"outcome": "unsupported", "msg": "404"}, {"n1": READY}, {"n1": SKIPPED})["kept_old"] is True


def test_a_node_that_is_not_ready_keeps_rank_0_from_being_asked():
    incompatible = {"outcome": "incompatible", "msg": "/m cannot be swapped in for /o on this node: shape"}
    verdict = swap_verdict(SKIPPED, {"n1": incompatible, "n2": READY}, {"n1": SKIPPED, "n2": SKIPPED})
    assert (verdict["swapped"], verdict["kept_old"], verdict["outcome"]) == (False, True, "incompatible")
    assert verdict["msg"] == "rank 0 was not asked to load the revision: n1: " + incompatible["msg"]
    stopped = {"outcome": "not_running", "msg": "sglang does not run"}
    verdict = swap_verdict(SKIPPED, {"n1": stopped}, {"n1": SKIPPED})
    assert (verdict["kept_old"], verdict["outcome"]) == (False, "not_ready")
