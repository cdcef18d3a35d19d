# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The gateway_config action plugin (llmserve.sglang.gateway_config) and its rules (plugin_utils/gateway_role.py).

Real ansible-playbook runs (every host local, no connection): the role's ``validate`` entry point, which runs the
action, beside the Jinja path it replaced (files/jinja_gateway_validate.yml: the worker loop, the set_fact copy, the
asserts and the sglang_gateway_render filter, as the role had them) for valid and invalid configurations, each a
gateway with a workers group of its own in one generated inventory. Both must give the same messages, the same
command line, workers, URL and remarks. test_gateway_config_action_differential.py compares the two over many more
inventories in one process; the rules' own pieces are tested below.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.llmserve.sglang.plugins.plugin_utils import gateway_role as gr
from ansible_collections.llmserve.sglang.tests.unit.collection_tree import collections_path, guarded_block, json_result_task

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "sglang_gateway")
JINJA_PATH = os.path.join(HERE, "files", "jinja_gateway_validate.yml")
ADMIN_KEY = "adm-$ecret%key-0123456789"
WORKER_KEY = "sk-worker-%key$-secret"


def _w(address, **hostvars):
    values = {"ansible_host": address, "sglang_server_host": "0.0.0.0", "sglang_server_api_key": WORKER_KEY}
    values.update(hostvars)
    return values


# case: (gateway hostvars, workers {name: hostvars}, node groups {group: [names]}, play vars)
CASES = {
    "plain": ({"ansible_host": "10.0.0.1"}, {"w1": _w("10.0.0.11"), "w2": _w("10.0.0.12", sglang_server_port="30001")},
              {}, {"sglang_gateway_host": "0.0.0.0"}),
    # rank 0 only: by name (case-insensitive), or as set (a string rank too)
    "multinode": ({"ansible_host": "10.0.0.2"}, {
        "single": _w("10.0.0.21"),
        "big-B": _w("10.0.0.22", sglang_server_node_group="mn_big"),
        "big-a": _w("10.0.0.23", sglang_server_node_group="mn_big"),
        "other-0": _w("10.0.0.24", sglang_server_node_group="mn_other", sglang_server_node_rank="1"),
        "other-1": _w("10.0.0.25", sglang_server_node_group="mn_other", sglang_server_node_rank=0)},
        {"mn_big": ["big-B", "big-a"], "mn_other": ["other-0", "other-1"]}, {}),
    # no ansible_host for the gateway: the task's is its inventory name, which a worker shares (the same machine)
    "gateway_named": ({}, {"wn": _w("gw-gateway-named", sglang_server_port=8000)}, {}, {}),
    # remarks: a version the role was not written for, an open /metrics, plain HTTP
    "remarks": ({"ansible_host": "10.0.0.4"}, {"wr": _w("10.0.0.41")}, {},
                {"sglang_gateway_version": "1.14.0", "sglang_gateway_host": "10.0.0.4",
                 "sglang_gateway_metrics_host": "0.0.0.0"}),
    # each of the old asserts on its own
    "rules": ({"ansible_host": "10.0.0.5"}, {"wb": _w("10.0.0.51", sglang_server_host="127.0.0.1")}, {},
              {"sglang_gateway_admin_api_key": "short", "sglang_gateway_user": "root"}),
    "install": ({"ansible_host": "10.0.0.6"}, {"wi": _w("10.0.0.61")}, {},
                {"sglang_gateway_install": "wheelhouse", "sglang_gateway_wheelhouse": ""}),
    "version": ({"ansible_host": "10.0.0.7"}, {"wv": _w("10.0.0.71")}, {}, {"sglang_gateway_version": "latest"}),
    "ranges": ({"ansible_host": "10.0.0.8"}, {"wg": _w("10.0.0.81")}, {},
               {"sglang_gateway_restart_sec": 0, "sglang_gateway_journal_lines": 10001}),
    "no_workers": ({"ansible_host": "10.0.0.9"}, {}, {}, {}),
    # what the old loop could not template fails both
    "bad_node_group": ({"ansible_host": "10.0.0.10"}, {"wx": _w("10.0.0.101", sglang_server_node_group=5)}, {}, {}),
}


def _gateway(name):
    return "gw-" + name.replace("_", "-")


def _inventory():
    groups = {}
    for name, (gateway, workers, node_groups, _play_vars) in CASES.items():
        groups["gateways_" + name] = {"hosts": {_gateway(name): gateway}}
        groups["workers_" + name] = {"hosts": workers}
        for group, members in node_groups.items():
            groups[group] = {"hosts": dict((member, {}) for member in members)}
    return {"all": {"vars": {"ansible_connection": "local"}, "children": groups}}


def _play(name, play_vars, out):
    variables = {"sglang_gateway_admin_api_key": ADMIN_KEY, "sglang_gateway_workers_group": "workers_" + name}
    variables.update(play_vars)
    new = [{"ansible.builtin.include_role": {"name": "llmserve.sglang.sglang_gateway", "tasks_from": "validate",
                                             "public": True}},
           json_result_task(out, name, "new", "__sglang_gateway_rendered"),
           # what the role publishes of it
           json_result_task(out, name, "fact", "{'workers': sglang_gateway_workers, 'url': sglang_gateway_url}")]
    if name == "plain":
        new += [{"llmserve.sglang.gateway_config": {"variables": {"sglang_gateway_policy": "round_robin",
                                                                  "sglang_gateway_port": 8443}},
                 "register": "__new_override"},
                json_result_task(out, name, "new_override", "__new_override")]
    old = [{"ansible.builtin.include_tasks": JINJA_PATH},
           json_result_task(out, name, "old", "__old_gateway_rendered"),
           json_result_task(out, name, "old_fact", "{'workers': __old_workers, 'url': __old_url, 'remarks': __old_remarks}")]
    return {"name": name, "hosts": _gateway(name), "gather_facts": False, "vars": variables,
            "tasks": [{"ansible.builtin.file": {"path": os.path.join(out, name), "state": "directory", "mode": "0700"}},
                      guarded_block(out, name, "new", new), guarded_block(out, name, "old", old)]}


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("gateway-config"))
    playbook = os.path.join(out, "both.yml")
    inventory = os.path.join(out, "inventory.json")
    with open(playbook, "w", encoding="utf-8") as handle:
        json.dump([_play(name, case[3], out) for name, case in CASES.items()], handle)
    with open(inventory, "w", encoding="utf-8") as handle:
        json.dump(_inventory(), handle)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_NOCOLOR="1", ANSIBLE_HOME=os.path.join(out, "home"), ANSIBLE_ROLES_PATH=os.path.join(out, "roles"),
               ANSIBLE_CACHE_PLUGIN="memory", ANSIBLE_INJECT_FACT_VARS="false")
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-v", "-i", inventory,
                             "-e", "ansible_python_interpreter=" + sys.executable, playbook],
                            capture_output=True, text=True, env=env, check=False, timeout=600)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    cases = {}
    for name in CASES:
        files = {}
        for entry in ("new", "new_error", "old", "old_error", "fact", "old_fact", "new_override"):
            path = os.path.join(out, name, entry + ".json")
            if os.path.exists(path):
                with open(path, encoding="utf-8") as handle:
                    files[entry] = json.load(handle)
        cases[name] = files
    cases["_stdout"] = result.stdout
    return cases


def _old_messages(message):
    # an assert's fail_msg: the list of problems, or the install/version rule's one text
    return message if isinstance(message, list) else [message]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_action_agrees_with_the_jinja_path(both, name):
    case = both[name]
    if "old_error" in case:
        assert "new_error" in case and "new" not in case, case
        if name == "bad_node_group":
            # the old loop failed templating; the action names the variable
            assert case["new_error"] == ("gateway_config: hostvars['wx'].sglang_server_node_group: must be a string "
                                         "(the name of the multi-node server's inventory group, or empty)")
            return
        # the same messages, in the same order
        assert case["new_error"] == _old_messages(case["old_error"])
        return
    assert "new_error" not in case, case["new_error"]
    new, old = case["new"], case["old"]
    for key, value in old.items():
        assert new["gateway_warnings" if key == "warnings" else key] == value, key
    assert new["remarks"] == case["old_fact"]["remarks"]
    assert case["fact"] == {"workers": case["old_fact"]["workers"], "url": case["old_fact"]["url"]}
    assert case["fact"]["workers"] == new["workers"] and case["fact"]["url"] == new["base_url"]
    assert new["changed"] is False and "warnings" not in new


def test_the_cases_cover_both_outcomes(both):
    assert [w["name"] for w in both["multinode"]["new"]["workers"]] == ["single", "big-a", "other-1"]
    assert both["plain"]["new"]["worker_urls"] == ["http://10.0.0.11:30000", "http://10.0.0.12:30001"]
    assert both["remarks"]["new"]["remarks"][-1] == gr.MSG_VERSION % "1.14.0"
    assert len(both["remarks"]["new"]["remarks"]) == len(both["remarks"]["new"]["gateway_warnings"]) + 1 > 1
    assert both["gateway_named"]["new_error"] == [
        "sglang_gateway_port: clashes with worker wn on the same host, which listens on port 8000 "
        "(hostvars['wn'].sglang_server_port)"]
    assert both["install"]["new_error"] == both["version"]["new_error"] == [gr.MSG_INSTALL]
    assert len(both["rules"]["new_error"]) >= 3
    assert both["ranges"]["new_error"] == ["sglang_gateway_restart_sec: must be an integer from 1 to 3600, got 0",
                                           "sglang_gateway_journal_lines: must be an integer from 0 to 10000, got 10001"]


def test_variables_stand_in_for_the_hosts(both):
    override = both["plain"]["new_override"]
    argv = override["argv"]
    assert argv[argv.index("--policy") + 1] == "round_robin" and argv[argv.index("--port") + 1] == "8443"
    assert override["base_url"] == "http://127.0.0.1:8443"


def test_secrets_are_not_shown(both):
    # the action hides its result, even with -v; a failure shows the rules, never a key
    stdout = both["_stdout"]
    assert "adm-$ecret" not in stdout and "sk-worker-%key" not in stdout
    assert "sglang_gateway_admin_api_key: must be at least 16 characters long (value not shown)" in stdout


# ---- the rules that moved from validate.yml's Jinja into Python ----------------------------------------------------

@pytest.mark.parametrize("install, wheelhouse, version, broken", [
    ("pip", "", "1.13.0", False),
    ("wheelhouse", "", "1.13.0", True),
    ("wheelhouse", "/srv/wheels", "1.13.0", False),
    ("pip", "", "latest", True),
    ("pip", "", "1.13", False),
    ("pip", "", 1.13, False),
    ("pip", "", "1.13.0-rc1", True),
    ("pip", "", None, True),
    ("pip", "", "", True),
    # the Jinja's `is match` let a trailing newline through ($ matches before it)
    ("pip", "", "1.13.0\n", False),
])
def test_install_and_version_rule(install, wheelhouse, version, broken):
    assert gr.install_problems(install, wheelhouse, version) == ([gr.MSG_INSTALL] if broken else [])


@pytest.mark.parametrize("version, remark", [("1.13.0", False), ("1.14.0", True), (1.13, True)])
def test_version_remark(version, remark):
    assert gr.version_remarks(version) == ([gr.MSG_VERSION % version] if remark else [])


def test_every_config_key_comes_from_one_variable():
    keys = [key for key, _name in gr.CONFIG_VARIABLES]
    assert len(keys) == len(set(keys))
    cfg = gr.build_config(dict((name, name) for name in gr.VARIABLES), [{"name": "w"}], "gw", "10.0.0.1")
    assert cfg["workers"] == [{"name": "w"}] and (cfg["gateway_name"], cfg["gateway_address"]) == ("gw", "10.0.0.1")
    assert all(cfg[key] == name for key, name in gr.CONFIG_VARIABLES)


def test_the_variables_exist_in_the_role():
    names = set()
    for part in ("defaults", "vars"):
        with open(os.path.join(ROLE, part, "main.yml"), encoding="utf-8") as handle:
            names.update(yaml.safe_load(handle))
    assert set(gr.VARIABLES) <= names
    # every role variable the old Assemble task read is read by name now
    assembled = [name for name in names if name.startswith("sglang_gateway_")]
    assert set(name for _key, name in gr.CONFIG_VARIABLES) <= set(assembled)


def test_every_problem_is_reported_at_once(monkeypatch):
    monkeypatch.setattr(gr, "validate_gateway_config", lambda cfg: ["gateway rule"])
    monkeypatch.setattr(gr, "service_problems", lambda spec, state: ["service rule"])
    with pytest.raises(gr.GatewayRoleError) as caught:
        gr.gateway_config({"sglang_gateway_install": "wheelhouse", "sglang_gateway_wheelhouse": "",
                           "sglang_gateway_version": "1.13.0", "__sglang_gateway_ranges": {
                               "sglang_gateway_restart_sec": [0, 1, 3600]}}, [], "gw", "")
    assert caught.value.problems == ["gateway rule", "service rule", gr.MSG_INSTALL,
                                     "sglang_gateway_restart_sec: must be an integer from 1 to 3600, got 0"]
