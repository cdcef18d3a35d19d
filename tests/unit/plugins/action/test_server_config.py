# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The server_config action plugin (llmserve.sglang.server_config) and its rules (plugin_utils/server_config.py).

The rules in Python, one by one; then real ansible-playbook runs (localhost, no connection): the role's ``validate``
entry point, which runs the action, beside the Jinja path it replaced (files/jinja_validate.yml: the set_fact copy,
the assert, sglang_render and sglang_spec_off|sglang_render, as the role had them) for valid and invalid
configurations. Both must give the same messages, the same command line and the same files' content.
"""

from __future__ import annotations

import json
import os

import pytest
import yaml

from ansible_collections.llmserve.sglang.plugins.filter.sglang import sglang_base_url
from ansible_collections.llmserve.sglang.plugins.plugin_utils import addresses
from ansible_collections.llmserve.sglang.plugins.plugin_utils import server_config as sc
from ansible_collections.llmserve.sglang.tests.unit.collection_tree import guarded_block, json_result_task, run_plays

HERE = os.path.dirname(os.path.abspath(__file__))
JINJA_PATH = os.path.join(HERE, "files", "jinja_validate.yml")

BASE = {"sglang_server_model_path": "/models/m", "sglang_server_install": "none",
        "sglang_server_python": "/usr/bin/python3", "sglang_server_api_key": "sk-diff-%key$\"x",
        "sglang_server_hf_token": "hf_diff_token"}
NEXTN = {"algorithm": "NEXTN", "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4}
CASES = {
    "plain": {},
    "speculative": {"sglang_server_speculative": NEXTN,
                    "sglang_server_args": {"speculative_attention_mode": "decode", "dtype": "bfloat16"}},
    "gpus_p2p_env": {"sglang_server_gpus": [0, 1], "sglang_server_tp_size": 2, "sglang_server_p2p": "off",
                     "sglang_server_env": {"PCT": "100%", "DOLLAR": "a$b"}, "sglang_server_served_model_name": "m"},
    "remarks": {"sglang_server_args": {"disable_radix_cache": True, "chunked_prefill_size": -1}},
    # several rules at once: every message, in the same order
    "many_problems": {"sglang_server_restart_sec": 5, "sglang_server_journal_lines": 10000000,
                      "sglang_server_install": "wheelhouse", "sglang_server_cache_root": "/tmp/kernels",
                      "sglang_server_speculative": {"algorithm": "MTP"}},
    "state_in_home": {"sglang_server_state_dir": "/var/lib/sglang/state"},
    "state_not_normalised": {"sglang_server_state_dir": "/var/lib//llmserve-state/"},
    "relative_home": {"sglang_server_home": "var/lib/sglang"},
    "cache_above_state": {"sglang_server_cache_root": "/var", "sglang_server_state_dir": "/var/lib/llmserve-x"},
    "cache_in_config_dir": {"sglang_server_cache_root": "/etc/sglang/cache"},
    "no_deps_without_lock": {"sglang_server_install": "pip", "sglang_server_pip_no_deps": True},
    "none_without_python": {"sglang_server_python": ""},
    "spec_check_settings": {"sglang_server_speculative_min_accept_length": "often",
                            "sglang_server_speculative_check_prompts": []},
    "control_character": {"sglang_server_env": {"FOO": "x\nExecStartPre=+/bin/true"},
                          "sglang_server_api_key": "sk-\x85secret"},
    "bad_account": {"sglang_server_user": "root"},
    "tp_without_gpus": {"sglang_server_gpus": [0], "sglang_server_tp_size": 2},
    # where the server is reached: a wildcard bind, no facts, and no ansible_host in the inventory (the task's own
    # ansible_host, the inventory name, is not taken for one); the IPv6 address probed as written
    "wildcard": {"sglang_server_host": "0.0.0.0", "sglang_server_metrics": True},
    "ipv6_tls": {"sglang_server_host": "FD00::5", "sglang_server_port": "30001",
                 "sglang_server_args": {"ssl_certfile": "/etc/ssl/s.pem", "ssl_keyfile": "/etc/ssl/s.key"}},
}
KEYS = ("argv", "config", "env", "env_file", "p2p", "expected_server_info", "requested_backend")


def _play(name, overrides, out):
    new = [{"ansible.builtin.include_role": {"name": "llmserve.sglang.sglang_server", "tasks_from": "validate",
                                             "public": True}},
           json_result_task(out, name, "new", "__sglang_server_rendered"),
           {"llmserve.sglang.server_config": {"speculative_off": True}, "register": "__new_spec_off"},
           json_result_task(out, name, "new_spec_off", "__new_spec_off"),
           # what the role publishes of it
           json_result_task(out, name, "fact", "sglang_server_addresses")]
    if name == "wildcard":
        new += [{"llmserve.sglang.server_config": {"variables": {"ansible_host": "10.1.2.3"}},
                 "register": "__new_override"},
                json_result_task(out, name, "new_override", "__new_override.addresses")]
    old = [{"ansible.builtin.include_tasks": JINJA_PATH},
           json_result_task(out, name, "old", "__old_rendered"),
           json_result_task(out, name, "old_spec_off", "__old_rendered_spec_off")]
    return {"name": name, "hosts": "localhost", "gather_facts": False, "vars": dict(BASE, **overrides),
            "tasks": [{"ansible.builtin.file": {"path": os.path.join(out, name), "state": "directory", "mode": "0700"}},
                      guarded_block(out, name, "new", new), guarded_block(out, name, "old", old)]}


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("server-config"))
    result = run_plays(out, [_play(name, overrides, out) for name, overrides in CASES.items()])
    cases = {}
    for name in CASES:
        files = {}
        for entry in ("new", "new_error", "new_spec_off", "old", "old_error", "old_spec_off", "fact", "new_override"):
            path = os.path.join(out, name, entry + ".json")
            if os.path.exists(path):
                with open(path, encoding="utf-8") as handle:
                    files[entry] = json.load(handle)
        cases[name] = files
    cases["_stdout"] = result.stdout
    return cases


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_action_agrees_with_the_jinja_rules_and_filters(both, name):
    case = both[name]
    if "old_error" in case:
        # the same messages, in the same order; nothing rendered
        assert "new_error" in case, case
        assert case["new_error"] == case["old_error"]
        assert isinstance(case["new_error"], list) and case["new_error"]
        assert "new" not in case
        return
    assert "new_error" not in case, case["new_error"]
    new, old = case["new"], case["old"]
    for key in KEYS:
        assert new[key] == old[key], key
    assert new["remarks"] == old["warnings"]
    assert new["speculative_off"] is False and new["multinode"] == {} and new["group_rank0"] == "localhost"
    assert new["node"] == {"group": "", "rank": 0, "nnodes": 1}
    # the host keeps speculation off: the same as sglang_spec_off | sglang_render
    for key in KEYS:
        assert case["new_spec_off"][key] == case["old_spec_off"][key], key
    assert case["new_spec_off"]["speculative_off"] is True
    # where the server is reached, published by validate.yml; probed where the role always probed it
    variables = dict(BASE, **CASES[name])
    assert case["fact"] == new["addresses"] == case["new_spec_off"]["addresses"]
    assert new["addresses"]["name"] == "localhost"
    assert new["addresses"]["api"]["probe_url"] == sglang_base_url(
        variables.get("sglang_server_args", {}), variables.get("sglang_server_host", "127.0.0.1"),
        variables.get("sglang_server_port", 30000))


def test_the_cases_cover_both_outcomes(both):
    assert sum(1 for name in CASES if "old_error" in both[name]) >= 8
    assert sum(1 for name in CASES if "old" in both[name]) >= 4
    spec = both["speculative"]
    assert "--speculative-algorithm" in spec["new"]["argv"]
    assert not any(token.startswith("--speculative") for token in spec["new_spec_off"]["argv"])
    assert spec["new_spec_off"]["expected_server_info"] != spec["new"]["expected_server_info"]


def test_the_addresses_of_a_wildcard_bind(both):
    found = both["wildcard"]["new"]["addresses"]
    api = found["api"]
    assert (api["bind"], api["address"], api["source"], api["url"]) == ("0.0.0.0", None, None, None)
    assert api["probe_url"] == "http://127.0.0.1:30000" and api["needs_facts"] is True
    assert found["metrics"]["probe_url"] == "http://127.0.0.1:30000/metrics"
    assert found["problems"] == [
        "hostvars['localhost'].sglang_server_host: localhost binds 0.0.0.0, so another host needs an address to reach "
        "it: set its ansible_host, or gather its facts (default_ipv4) in the same play"]
    # given in variables, ansible_host is taken
    override = both["wildcard"]["new_override"]
    assert (override["api"]["address"], override["api"]["source"]) == ("10.1.2.3", "ansible_host")
    assert override["metrics"]["url"] == "http://10.1.2.3:30000/metrics"


def test_the_addresses_of_a_tls_ipv6_bind(both):
    api = both["ipv6_tls"]["new"]["addresses"]["api"]
    assert (api["address"], api["url"]) == ("fd00::5", "https://[fd00::5]:30001")
    assert api["probe_url"] == "https://[FD00::5]:30001"


def test_many_problems_are_reported_at_once(both):
    problems = both["many_problems"]["new_error"]
    assert any(p.startswith("sglang_server_speculative.algorithm") for p in problems), problems
    assert "sglang_server_restart_sec: must be an integer from 30 to 3600, got 5" in problems
    assert "sglang_server_journal_lines: must be an integer from 0 to 10000, got 10000000" in problems
    assert sc.MSG_INSTALL in problems
    assert any(p.startswith("sglang_server_cache_root: /tmp/kernels") for p in problems), problems


def test_secrets_are_not_shown(both):
    # the action hides its result; the failure of a case shows the rule, never the key
    assert "sk-diff-%key" not in both["_stdout"] and "hf_diff_token" not in both["_stdout"]
    assert "\\x85secret" not in both["_stdout"] and "\x85secret" not in both["_stdout"]


# ---- the rules that moved from validate.yml's Jinja into Python ----------------------------------------------------

@pytest.mark.parametrize("install, wheelhouse, python, no_deps, requirements, broken", [
    ("pip", "", "", False, "", False),
    ("wheelhouse", "", "", False, "", True),
    ("wheelhouse", "/srv/wheels", "", False, "", False),
    ("none", "", "", False, "", True),
    ("none", "", "/opt/sglang/bin/python", False, "", False),
    ("pip", "", "", True, "", True),
    ("pip", "", "", True, "/srv/lock.txt", False),
])
def test_install_rule(install, wheelhouse, python, no_deps, requirements, broken):
    assert sc.install_problems(install, wheelhouse, python, no_deps, requirements) == ([sc.MSG_INSTALL] if broken else [])


@pytest.mark.parametrize("state, home, config_dir, broken", [
    ("/var/lib/llmserve-sglang", "/var/lib/sglang", "/etc/sglang", False),
    ("var/lib/state", "/var/lib/sglang", "/etc/sglang", True),
    ("/var/lib/state/", "/var/lib/sglang", "/etc/sglang", True),
    ("/", "/var/lib/sglang", "/etc/sglang", True),
    ("/var/lib/sglang/state", "/var/lib/sglang", "/etc/sglang", True),
    ("/var/lib", "/var/lib/sglang", "/etc/sglang", True),
    ("/etc/sglang/state", "/var/lib/sglang", "/etc/sglang", True),
    ("/var/lib/state", "/", "/etc/sglang", True),
    ("/var/lib/state", "home", "/etc/sglang", True),
    # a sibling whose name starts like the home is not inside it
    ("/var/lib/sglang-state", "/var/lib/sglang", "/etc/sglang", False),
])
def test_state_dir_rule(state, home, config_dir, broken):
    assert sc.state_dir_problems(state, home, config_dir) == ([sc.MSG_STATE % (state, home)] if broken else [])


@pytest.mark.parametrize("cache, broken", [
    ("/var/cache/llmserve-sglang", False),
    ("/var/cache/llmserve-sglang/", True),
    ("cache", True),
    ("/", True),
    ("/var/lib/sglang/cache", True),
    ("/etc/sglang/cache", True),
    ("/var/lib/llmserve-sglang/cache", True),
    ("/var/lib", True),
    ("/var/lib/sglang-cache", False),
])
def test_cache_root_rule(cache, broken):
    problems = sc.cache_root_problems(cache, "/var/lib/sglang", "/etc/sglang", "/var/lib/llmserve-sglang")
    assert problems == ([sc.MSG_CACHE % cache] if broken else [])


def test_every_config_key_comes_from_one_variable():
    keys = [key for key, _name in sc.CONFIG_VARIABLES]
    assert len(keys) == len(set(keys))
    assert set(sc.VARIABLES) >= set(name for _key, name in sc.CONFIG_VARIABLES)
    cfg = sc.build_config(dict((name, "") for name in sc.VARIABLES))
    assert cfg["api_key"] is None and cfg["hf_token"] is None and cfg["served_model_name"] is None
    assert all(cfg[key] is None for key in sc.MULTINODE_KEYS)


def test_host_addresses_is_server_addresses_of_the_same_variables():
    variables = {"sglang_server_host": "::", "sglang_server_port": 30001, "sglang_server_metrics": False,
                 "sglang_server_args": {"enable_metrics": True}, "sglang_server_node_group": "mn",
                 "sglang_server_dist_init_port": 26000, "sglang_server_model_path": "/models/m",
                 "ansible_host": "ignored: not a role variable"}
    facts = {"default_ipv4": {"address": "192.0.2.2"}, "default_ipv6": {"address": "fd00::2"}}
    found = sc.host_addresses(variables, "gpu-1", {"ansible_facts": facts, "other": "ignored"})
    assert found == addresses.server_addresses(
        {"inventory_hostname": "gpu-1", "sglang_server_host": "::", "sglang_server_port": 30001,
         "sglang_server_metrics": False, "sglang_server_args": {"enable_metrics": True},
         "sglang_server_node_group": "mn", "sglang_server_dist_init_port": 26000, "ansible_facts": facts})
    assert (found["api"]["address"], found["rendezvous"]["address"]) == ("fd00::2", "192.0.2.2:26000")
    assert sc.host_addresses(variables, "gpu-1", {"ansible_host": "10.0.0.9"})["api"]["address"] == "10.0.0.9"


def test_the_address_variables_are_optional_role_defaults():
    role = os.path.join(HERE, "..", "..", "..", "..", "roles", "sglang_server")
    with open(os.path.join(role, "defaults", "main.yml"), encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)
    assert set(sc.ADDRESS_VARIABLES) <= set(defaults) and set(sc.ADDRESS_VARIABLES) <= sc.OPTIONAL_VARIABLES
    # every host variable server_addresses reads comes from the action: a role variable or the host's own
    assert set(addresses.HOSTVARS) == set(name for name in sc.VARIABLES if name in addresses.HOSTVARS) | set(
        sc.HOST_VARIABLES) | {"inventory_hostname"}


def test_the_variables_exist_in_the_role():
    role = os.path.join(HERE, "..", "..", "..", "..", "roles", "sglang_server")
    names = set()
    for part in ("defaults", "vars"):
        with open(os.path.join(role, part, "main.yml"), encoding="utf-8") as handle:
            names.update(yaml.safe_load(handle))
    assert set(sc.VARIABLES) - set(sc.OPTIONAL_VARIABLES) <= names


def test_a_bad_group_is_reported_with_the_other_rules(monkeypatch):
    monkeypatch.setattr(sc, "node_group_problems", lambda nodes, group=None: ["sglang_server_node_group: bad group"])
    monkeypatch.setattr(sc, "config_problems", lambda variables, cfg: ["other rule"] if cfg["nnodes"] is None else [])
    with pytest.raises(sc.ServerConfigError) as caught:
        sc.server_config({"sglang_server_node_group": "g"}, nodes={}, hostname="h")
    assert caught.value.problems == ["sglang_server_node_group: bad group", "other rule"]


def test_a_node_takes_its_place_from_the_group_plan(monkeypatch):
    plan = {"a": {"nnodes": 2, "node_rank": 1, "dist_init_addr": "10.0.0.2:25000", "node_ifname": "eth1"},
            "b": {"nnodes": 2, "node_rank": 0, "dist_init_addr": "10.0.0.2:25000", "node_ifname": "eth1"}}
    monkeypatch.setattr(sc, "node_group_problems", lambda nodes, group=None: [])
    monkeypatch.setattr(sc, "node_group_plan", lambda nodes, group=None: plan)
    problems, multinode, rank0, node = sc.node_plan("g", {}, "a")
    assert (problems, multinode, rank0) == ([], plan["a"], "b")
    assert node == {"group": "g", "rank": 1, "nnodes": 2}
    assert sc.build_config({}, multinode)["dist_init_addr"] == "10.0.0.2:25000"
