# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""plan_server: stage, swap, restart, refresh and enable decided from one deploy_state read; a host where
everything is in place plans nothing; the filter wraps bad input as a filter error."""

from __future__ import annotations

import hashlib

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.llmserve.sglang.plugins.filter.sglang import sglang_deploy_plan
from ansible_collections.llmserve.sglang.plugins.plugin_utils.deploy_plan import PlanError, plan_server

MANAGED = [{"name": "unit", "path": "/etc/systemd/system/sglang.service"},
           {"name": "config", "path": "/etc/sglang/sglang.yaml"}]
CANDIDATES = {"unit": "[Service]\n", "config": "api_key: secret\n"}
STAGING, GOOD = "/var/lib/x/staging", "/var/lib/x/last-good"
ATTRS = {"owner": "root", "group": "root", "mode": "0600"}


def sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


def file_info(text, mode="0600"):
    return {"exists": True, "type": "file", "owner": "root", "group": "root", "mode": mode, "sha256": sha(text)}


def converged():
    paths = {}
    for item in MANAGED:
        base = item["path"].rsplit("/", 1)[1]
        text = CANDIDATES[item["name"]]
        paths[item["path"]] = file_info(text, "0644")
        paths["%s/%s" % (STAGING, base)] = file_info(text)
        paths["%s/%s" % (GOOD, base)] = file_info(text)
    return {"paths": paths, "directories": [{"path": "/etc/sglang", "changes": []}],
            "unit": {"ActiveState": "active", "UnitFileState": "enabled"},
            "accounts": {"user": {"exists": True, "gid": 5, "home": "/var/lib/sglang", "shell": "/usr/sbin/nologin"},
                         "group": {"exists": True, "gid": 5}}}


ACCOUNT = {"user": "sglang", "group": "sglang", "home": "/var/lib/sglang", "shell": "/usr/sbin/nologin"}


def plan(state, **kwargs):
    kwargs.setdefault("staged_attrs", ATTRS)
    kwargs.setdefault("good_attrs", ATTRS)
    kwargs.setdefault("account", ACCOUNT)
    return plan_server(state, MANAGED, CANDIDATES, STAGING, GOOD, **kwargs)


def test_a_converged_host_plans_nothing():
    result = plan(converged())
    assert result["changes"] == [] and result["stage"] == [] and result["swap"] == []
    assert not (result["restart_needed"] or result["swap_needed"] or result["keep_good_needed"]
                or result["enable_needed"] or result["restart_pending"])
    assert result["have_last_good"] is True


def test_a_new_configuration_is_staged_swapped_and_restarted():
    changed = dict(CANDIDATES, config="api_key: other\n")
    result = plan_server(converged(), MANAGED, changed, STAGING, GOOD, staged_attrs=ATTRS, good_attrs=ATTRS)
    assert result["stage"] == [STAGING + "/sglang.yaml"] and result["swap"] == ["/etc/sglang/sglang.yaml"]
    assert result["swap_needed"] and result["restart_needed"]
    assert any(c.startswith("restart: the staged files change (sglang.yaml)") for c in result["changes"])
    assert "secret" not in repr(result) and "other" not in repr(result), "no content in the plan"


def test_restart_reasons_install_inactive_unit_and_a_live_file_that_drifted():
    state = converged()
    state["unit"]["ActiveState"] = "failed"
    state["paths"]["/etc/sglang/sglang.yaml"] = file_info("edited by hand", "0644")
    result = plan(state, install={"needed": True, "what": "SGLang 0.5.23 into /opt/sglang/venv-x"})
    reasons = " ".join(result["restart_reasons"])
    assert "installed anew" in reasons and "not active (failed)" in reasons and "live files differ" in reasons
    assert "install SGLang 0.5.23 into /opt/sglang/venv-x" in result["changes"]
    assert result["swap"] == ["/etc/sglang/sglang.yaml"] and result["stage"] == []


def test_restart_policy_never_keeps_the_restart_pending():
    state = converged()
    state["paths"]["/etc/sglang/sglang.yaml"] = file_info("old", "0644")
    result = plan(state, restart_policy="never")
    assert result["restart_needed"] and result["restart_pending"]
    assert any(c.startswith("restart pending (sglang_server_restart_policy: never)") for c in result["changes"])


def test_accounts_directories_enable_and_last_good_copy():
    state = converged()
    state["accounts"]["user"]["shell"] = "/bin/bash"
    state["directories"] = [{"path": "/etc/sglang", "changes": ["mode"]}]
    state["unit"]["UnitFileState"] = "disabled"
    state["paths"][GOOD + "/sglang.service"]["mode"] = "0644"
    result = plan(state)
    assert "update the user sglang (shell)" in result["changes"]
    assert "directory /etc/sglang: mode" in result["changes"]
    assert "enable the unit at boot" in result["changes"]
    assert "refresh the last good copy" in result["changes"] and not result["restart_needed"]
    state["accounts"] = {"user": {"exists": False}, "group": {"exists": False}}
    assert plan(state)["changes"][:2] == ["create the group sglang", "create the user sglang"]


def test_no_last_good_copy_yet():
    state = converged()
    for item in MANAGED:
        state["paths"][GOOD + "/" + item["path"].rsplit("/", 1)[1]] = {"exists": False, "type": None}
    result = plan(state)
    assert result["have_last_good"] is False and result["restart_needed"] and result["keep_good_needed"]


def test_extra_files_are_staged_without_a_restart():
    state = converged()
    state["paths"]["/var/lib/x/check.py"] = {"exists": False, "type": None}
    result = plan(state, extra=[{"path": "/var/lib/x/check.py", "sha256": sha("x"), "owner": "root", "mode": "0600"}])
    assert result["stage"] == ["/var/lib/x/check.py"] and not result["restart_needed"]
    assert result["changes"] == ["stage check.py"]


def test_bad_input():
    with pytest.raises(PlanError, match="did not inspect"):
        plan({"paths": {}})
    with pytest.raises(PlanError, match="no rendered content"):
        plan_server(converged(), MANAGED, {"unit": "x"}, STAGING, GOOD)
    with pytest.raises(AnsibleFilterError, match="sglang_deploy_plan"):
        sglang_deploy_plan("not a state", MANAGED, CANDIDATES, STAGING, GOOD)
    assert sglang_deploy_plan(converged(), MANAGED, CANDIDATES, STAGING, GOOD, staged_attrs=ATTRS,
                              good_attrs=ATTRS)["changes"] == []


@pytest.mark.parametrize("serial, batches", [
    (1, [["a"], ["b"], ["c"], ["d"], ["e"]]),
    ("2", [["a", "b"], ["c", "d"], ["e"]]),
    (0, [["a", "b", "c", "d", "e"]]),
    (None, [["a", "b", "c", "d", "e"]]),
    ([], [["a", "b", "c", "d", "e"]]),
    ("40%", [["a", "b"], ["c", "d"], ["e"]]),
    ("10%", [["a"], ["b"], ["c"], ["d"], ["e"]]),  # at least one host
    ([1, "50%", 10], [["a"], ["b", "c"], ["d", "e"]]),  # the last size repeats; 50% of all five hosts
])
def test_rollout_batches_follow_ansibles_serial(serial, batches):
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.deploy_plan import rollout_batches
    assert rollout_batches(["a", "b", "c", "d", "e"], serial) == batches


def test_rollout_batches_refuse_what_is_not_a_batch_size():
    from ansible_collections.llmserve.sglang.plugins.filter.sglang import sglang_rollout_batches
    assert sglang_rollout_batches([], 1) == []
    for bad in ("x%", "many", True):
        with pytest.raises(AnsibleFilterError, match="sglang_rollout_batches"):
            sglang_rollout_batches(["a"], bad)


@pytest.mark.parametrize("serial, batches", [
    # serial counts servers: the two nodes of "big" are one server, placed where its first node is
    (1, [["a"], ["n0", "n1"], ["b"]]),
    (2, [["a", "n0", "n1"], ["b"]]),
    ([1, 2], [["a"], ["n0", "n1", "b"]]),
    ("50%", [["a"], ["n0", "n1"], ["b"]]),
    (0, [["a", "n0", "n1", "b"]]),
])
def test_rollout_batches_keep_a_multinode_server_in_one_batch(serial, batches):
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.deploy_plan import rollout_batches
    groups = {"n0": "big", "n1": "big", "a": "", "b": None}
    got = rollout_batches(["a", "n0", "b", "n1"], serial, groups)
    assert got == batches
    # the flattened batches are the play's host order, their lengths a serial list that cuts the same batches
    order = [h for batch in got for h in batch]
    assert rollout_batches(order, [len(b) for b in got]) == got


def test_rollout_batches_without_groups_count_hosts():
    from ansible_collections.llmserve.sglang.plugins.filter.sglang import sglang_rollout_batches
    assert sglang_rollout_batches(["a", "n0", "b", "n1"], 1, {}) == [["a"], ["n0"], ["b"], ["n1"]]
    assert sglang_rollout_batches(["n1", "a", "n0"], 1, {"n0": "big", "n1": "big"}) == [["n1", "n0"], ["a"]]
    with pytest.raises(AnsibleFilterError, match="groups"):
        sglang_rollout_batches(["a"], 1, ["big"])
