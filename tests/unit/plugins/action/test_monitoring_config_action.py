# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The monitoring_config action plugin (llmserve.sglang.monitoring_config) and its glue (plugin_utils/
monitoring_config.py).

Real ansible-playbook runs (a Prometheus host on localhost, no connection), one per inventory: the role's check.yml,
which runs the action, beside the tasks it replaced (files/jinja_monitoring.yml: the fail task of validate.yml, the
set_fact, assert and debug of targets.yml, as the role had them), both reading the role's defaults and vars. Both
must give the same messages in the same order, or the same ``sglang_monitoring_targets``. Then the role's entry
points and tags, and the glue in Python.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.llmserve.sglang.plugins.plugin_utils import monitoring_config as mc
from ansible_collections.llmserve.sglang.tests.unit.collection_tree import collections_path, guarded_block, json_result_task

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "sglang_monitoring")
JINJA_PATH = os.path.join(HERE, "files", "jinja_monitoring.yml")

PROMETHEUS = {"sglang_monitoring": {"hosts": {"prometheus-01": {"ansible_connection": "local"}}}}
# the example inventory's shape: a single-host server, a two-node server, a gateway, a Prometheus host
EXAMPLE = {
    "sglang_servers": {
        "hosts": {"gpu-node-01": {"ansible_host": "10.0.0.1", "sglang_server_host": "0.0.0.0",
                                  "sglang_monitoring_node_exporter": True}},
        "vars": {"sglang_server_metrics": True, "sglang_model_repo": "Qwen/Qwen3.5-122B-A10B",
                 "sglang_server_served_model_name": "qwen3.5", "sglang_server_api_key": "sk-do-not-leak-0123456789"},
        "children": {"pair": {
            "hosts": {"gpu-node-02": {"ansible_host": "10.0.0.2"}, "gpu-node-03": {"ansible_host": "10.0.0.3"}},
            "vars": {"sglang_server_node_group": "pair", "sglang_server_host": "0.0.0.0",
                     "sglang_model_repo": "Qwen/Qwen3-235B-A22B"}}}},
    "sglang_gateways": {"hosts": {"gateway-01": {"ansible_host": "10.0.1.1", "sglang_gateway_host": "10.0.1.1"}}},
    "sglang_node_exporters": {"hosts": {"gpu-node-02": {}, "gateway-01": {}}},
}


def _servers(hosts, **group_vars):
    return {"sglang_servers": {"hosts": hosts, "vars": group_vars}}


CASES = {
    "example": (EXAMPLE, {}),
    "other_jobs": (EXAMPLE, {"sglang_monitoring_sglang_job": "llm", "sglang_monitoring_node_job": "hosts",
                             "sglang_monitoring_node_exporter_port": 9200}),
    # the settings are checked first: their problems alone, though the inventory has its own
    "bad_settings": (_servers({"w1": {"sglang_server_metrics": False}}),
                     {"sglang_monitoring_worker_down_for": "2 minutes", "sglang_monitoring_ttft_window": "0s",
                      "sglang_monitoring_queue_backlog_threshold": 0, "sglang_monitoring_rules_dir": "rules"}),
    # every problem of the inventory at once, in the same order
    "bad_inventory": (_servers({"w1": {"ansible_host": "10.0.0.1", "sglang_server_host": "0.0.0.0",
                                       "sglang_server_metrics": False},
                                "w2": {"ansible_host": "10.0.0.1", "sglang_server_host": "0.0.0.0",
                                       "sglang_server_metrics": "maybe"},
                                "w3": {"sglang_server_host": "0.0.0.0", "sglang_server_port": 70000},
                                "w4": {"sglang_server_host": "127.0.0.1"}}, sglang_server_metrics=True),
                      {"sglang_monitoring_gateway_job": "sglang"}),
    "no_servers": ({}, {}),
    # a warning, no error
    "none_scraped": (_servers({"w1": {"ansible_host": "10.0.0.1", "sglang_server_host": "0.0.0.0"}},
                              sglang_monitoring_scrape=False), {}),
    # host variables templated for their host, one of them undefined (left out, as `is defined` left it out)
    "templated": (_servers({"w1": {"ansible_host": "10.0.0.{{ 4 + 1 }}", "base_port": 31000,
                                   "sglang_server_host": "0.0.0.0", "sglang_server_port": "{{ base_port + 1 }}",
                                   "sglang_server_served_model_name": "{{ no_such_variable }}",
                                   "sglang_model_repo": "org/{{ inventory_hostname }}"}},
                           sglang_server_metrics=True), {}),
}


def _run(out, name, inventory, settings):
    case = os.path.join(out, name)
    os.makedirs(case)
    with open(os.path.join(case, "inventory.yml"), "w", encoding="utf-8") as handle:
        yaml.safe_dump({"all": {"children": dict(inventory, **PROMETHEUS)}}, handle)
    with open(os.path.join(case, "settings.json"), "w", encoding="utf-8") as handle:
        json.dump(settings, handle)
    new = [{"ansible.builtin.include_tasks": os.path.join(ROLE, "tasks", "check.yml"),
            "vars": {"__sglang_monitoring_check_settings": True, "__sglang_monitoring_check_targets": True}},
           json_result_task(out, name, "new", "sglang_monitoring_targets"),
           json_result_task(out, name, "new_checked", "__sglang_monitoring_checked")]
    old = [{"ansible.builtin.include_tasks": JINJA_PATH}, json_result_task(out, name, "old", "sglang_monitoring_targets")]
    play = {"hosts": "sglang_monitoring", "gather_facts": False,
            # the role's defaults and vars; the case's settings come as extra vars, above both
            "vars_files": [os.path.join(ROLE, "defaults", "main.yml"), os.path.join(ROLE, "vars", "main.yml")],
            "tasks": [guarded_block(out, name, "new", new),
                      {"ansible.builtin.set_fact": {"sglang_monitoring_targets": None}},
                      guarded_block(out, name, "old", old)]}
    with open(os.path.join(case, "play.yml"), "w", encoding="utf-8") as handle:
        json.dump([play], handle)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="false", ANSIBLE_HOME=os.path.join(case, "home"),
               ANSIBLE_CACHE_PLUGIN="memory")
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-v", "-i",
                             os.path.join(case, "inventory.yml"), "-e", "ansible_python_interpreter=" + sys.executable,
                             "-e", "@" + os.path.join(case, "settings.json"), os.path.join(case, "play.yml")],
                            capture_output=True, text=True, env=env, check=False, timeout=300)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    files = {"_stdout": result.stdout}
    for entry in ("new", "new_error", "new_checked", "old", "old_error"):
        path = os.path.join(case, entry + ".json")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                files[entry] = json.load(handle)
    return files


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("monitoring-config"))
    return dict((name, _run(out, name, inventory, settings)) for name, (inventory, settings) in CASES.items())


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_action_agrees_with_the_role_tasks_it_replaced(both, name):
    case = both[name]
    if "old_error" in case:
        # the same messages, in the same order; nothing published
        assert case.get("new_error") == case["old_error"], case
        assert isinstance(case["new_error"], list) and case["new_error"]
        assert "new" not in case
        return
    assert "new_error" not in case, case["new_error"]
    assert case["new"] == case["old"]
    assert case["new_checked"]["targets"] == case["new"] and case["new"]["errors"] == []
    assert case["new_checked"]["changed"] is False and case["new_checked"]["settings"]["prometheus"] == "existing"


def test_the_cases_cover_every_outcome(both):
    example = both["example"]["new"]
    assert [entry["targets"] for entry in example["targets"]["sglang"]] == [["10.0.0.1:30000"], ["10.0.0.2:30000"]]
    assert example["counts"] == {"servers": 2, "not_scraped": 0, "other_ranks": 1, "gateways": 1,
                                 "node_exporters": 3}
    assert sorted(both["other_jobs"]["new"]["targets"]) == ["hosts", "llm", "sglang_gateway"]
    settings = both["bad_settings"]["new_error"]
    assert [problem.split(":")[0] for problem in settings] == [
        "sglang_monitoring_worker_down_for", "sglang_monitoring_ttft_window", "sglang_monitoring_rules_dir",
        "sglang_monitoring_queue_backlog_threshold"]
    inventory = both["bad_inventory"]["new_error"]
    assert inventory[0].startswith("sglang_monitoring_gateway_job: must differ from sglang_monitoring_sglang_job")
    assert len(inventory) >= 4 and any("hostvars['w4'].sglang_server_host" in problem for problem in inventory)
    assert both["no_servers"]["new_error"] == [
        "sglang_monitoring_servers_group: the inventory group 'sglang_servers' has no hosts (or does not exist): "
        "there is no SGLang server to monitor"]
    assert both["none_scraped"]["new"]["warnings"][0].startswith("sglang_monitoring_scrape: every SGLang server")
    # shown by both paths' task of the same name (the callback wraps long lines and doubles quotes)
    shown = " ".join(both["none_scraped"]["_stdout"].split())
    assert shown.count("TASK [Show the inventory's remarks] ***") == 2
    assert shown.count("every SGLang server of ''sglang_servers'' is left out (sglang_monitoring_scrape: false)") >= 2
    templated = both["templated"]["new"]["targets"]["sglang"]
    assert templated == [{"targets": ["10.0.0.5:31001"], "labels": {
        "host": "w1", "model": "org/w1", "served_model_name": "/var/lib/llmserve-models/org--w1/", "rank": "0"}}]


def test_no_api_key_is_read(both):
    for case in both.values():
        assert "sk-do-not-leak" not in case["_stdout"]
        assert "sk-do-not-leak" not in json.dumps(case.get("new_checked", {}))


# ---- the role's entry points and tags ------------------------------------------------------------------------------

def _role_run(tmp_path, inventory, *args, tasks_from=None):
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump({"all": {"children": dict(inventory, **PROMETHEUS)}}))
    promtool = tmp_path / "promtool"
    promtool.write_text("#!/bin/sh\n[ -s \"$3\" ]\n")
    promtool.chmod(0o755)
    call = {"name": "llmserve.sglang.sglang_monitoring"}
    if tasks_from:
        call["tasks_from"] = tasks_from
    (tmp_path / "play.yml").write_text(json.dumps([{"hosts": "sglang_monitoring", "gather_facts": False, "tasks": [
        # imported, as playbooks/monitoring.yml imports it: --tags selects its tasks
        {"ansible.builtin.import_role": call, "tags": ["sglang_monitoring"]},
        {"ansible.builtin.debug": {"msg": "PUBLISHED {{ sglang_monitoring_targets is defined }}"},
         "tags": ["always"]}]}]))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_HOME=str(tmp_path / "home"), ANSIBLE_CACHE_PLUGIN="memory")
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i",
                           str(tmp_path / "inventory.yml"), "-e", "ansible_python_interpreter=" + sys.executable,
                           "-e", "sglang_monitoring_promtool=%s" % promtool,
                           "-e", "sglang_monitoring_rules_dir=%s" % (tmp_path / "rules"),
                           "-e", "sglang_monitoring_targets_dir=%s" % (tmp_path / "file_sd"), "--check"]
                          + list(args) + [str(tmp_path / "play.yml")],
                          capture_output=True, text=True, env=env, check=False, timeout=300)


@pytest.mark.parametrize("tags, builds", [("sglang_monitoring_rules", False), ("sglang_monitoring_validate", True),
                                          ("sglang_monitoring_targets", True), ("sglang_monitoring", True)])
def test_each_tag_runs_the_steps_it_ran(tmp_path, tags, builds):
    # no server in the inventory: building the targets fails naming the group; the rule file alone checks only the
    # settings, as the role always did
    result = _role_run(tmp_path, {}, "--tags", tags)
    out = " ".join(result.stdout.split())
    assert "Check the alert thresholds, durations, job names and paths" in out
    if builds:
        assert result.returncode == 2, out[-3000:]
        assert "the inventory group 'sglang_servers' has no hosts" in out
    else:
        assert result.returncode == 0, out[-3000:]
        assert "PUBLISHED False" in out and "has no hosts" not in out


def test_skipping_the_rule_file_still_builds_and_writes_the_targets(tmp_path):
    # the settings check carries the rules tag, the targets step does not (as before the action): a run that leaves
    # the rule file alone still checks the inventory and writes the target files
    # (a broken setting shows that the settings step was skipped: the targets step does not read it)
    result = _role_run(tmp_path, EXAMPLE, "-e", "sglang_monitoring_ttft_window=0s", "--skip-tags",
                       "sglang_monitoring_rules,sglang_monitoring_install,sglang_monitoring_config,"
                       "sglang_monitoring_node_exporter")
    out = " ".join(result.stdout.split())
    assert result.returncode == 0, out[-3000:]
    assert "sglang_monitoring_ttft_window" not in out
    assert "sglang.json: 10.0.0.1:30000, 10.0.0.2:30000" in out and "PUBLISHED True" in out


def test_the_entry_points_validate_and_targets(tmp_path):
    # validate: the settings only (no inventory needed)
    result = _role_run(tmp_path, {}, "-e", "sglang_monitoring_ttft_window=0s", tasks_from="validate")
    out = " ".join(result.stdout.split())
    assert result.returncode == 2 and "sglang_monitoring_ttft_window: must be a Prometheus duration above zero" in out
    assert "has no hosts" not in out
    # targets: the inventory only, published
    result = _role_run(tmp_path, EXAMPLE, "-e", "sglang_monitoring_ttft_window=0s", tasks_from="targets")
    out = " ".join(result.stdout.split())
    assert result.returncode == 0, out[-3000:]
    assert "PUBLISHED True" in out and "sglang_monitoring_ttft_window" not in out
    # the main entry point writes the target files from the published fact (check mode: none written)
    result = _role_run(tmp_path, EXAMPLE, "--tags", "sglang_monitoring_targets")
    out = " ".join(result.stdout.split())
    assert result.returncode == 0, out[-3000:]
    assert "sglang.json: 10.0.0.1:30000, 10.0.0.2:30000" in out and "PUBLISHED True" in out


# ---- the glue in Python --------------------------------------------------------------------------------------------

def test_inventory_host_reads_the_fields_as_the_jinja_did():
    fields = ["ansible_host", "sglang_server_port", "sglang_server_host"]
    variables = {"ansible_host": "10.0.0.1", "sglang_server_port": None, "other": "x",
                 "ansible_facts": {"default_ipv4": {"address": "10.1.0.1"}, "default_ipv6": None}}
    assert mc.inventory_host(variables, fields) == {"ansible_host": "10.0.0.1", "ipv4": "10.1.0.1", "ipv6": ""}
    assert mc.inventory_host({}, fields) == {"ipv4": "", "ipv6": ""}


def test_targets_input_passes_the_hosts_through_json():
    variables = {"sglang_monitoring_servers_group": "s", "sglang_monitoring_gateways_group": "g",
                 "sglang_monitoring_node_exporters_group": "n", "__sglang_monitoring_jobs": {"sglang": "sglang"},
                 "__sglang_monitoring_host_fields": ["sglang_server_args", "ansible_host"]}
    hostvars = {"w1": {"sglang_server_args": {5: ("a", "b")}}, "prom": {"ansible_host": "10.0.9.1"}}
    cfg = mc.targets_input(variables, "prom", {"all": ["w1", "prom"], "s": ["w1"]}, hostvars)
    assert cfg["prometheus"] == {"name": "prom", "ansible_host": "10.0.9.1"}
    assert cfg["hosts"]["w1"] == {"sglang_server_args": {"5": ["a", "b"]}, "ipv4": "", "ipv6": ""}
    assert (cfg["servers_group"], cfg["gateways_group"], cfg["node_exporters_group"]) == ("s", "g", "n")
    assert mc.targets_input(variables, "elsewhere", {"all": []}, hostvars)["prometheus"]["ansible_host"] == ""


def test_monitoring_config_checks_the_settings_before_the_inventory():
    bad = {"windows": {"sglang_monitoring_ttft_window": "0s"}, "prometheus": "existing"}
    no_servers = {"servers_group": "s", "groups": {}, "hosts": {}, "jobs": {"sglang": "a", "gateway": "b", "node": "c"}}
    with pytest.raises(mc.MonitoringConfigError) as caught:
        mc.monitoring_config(bad, no_servers)
    assert [problem.split(":")[0] for problem in caught.value.problems] == ["sglang_monitoring_ttft_window"]
    with pytest.raises(mc.MonitoringConfigError) as caught:
        mc.monitoring_config({"prometheus": "existing"}, no_servers)
    assert caught.value.problems[0].startswith("sglang_monitoring_servers_group:")
    assert mc.monitoring_config({"prometheus": "existing"}) == {"settings": {"prometheus": "existing"}, "targets": None}


def test_the_variables_exist_in_the_role():
    names = set()
    for part in ("defaults", "vars"):
        with open(os.path.join(ROLE, part, "main.yml"), encoding="utf-8") as handle:
            names.update(yaml.safe_load(handle))
    assert {mc.SETTINGS_VARIABLE} | set(mc.TARGET_VARIABLES) <= names
