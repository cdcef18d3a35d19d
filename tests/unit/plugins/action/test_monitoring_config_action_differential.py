# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The action llmserve.sglang.monitoring_config against the role's tasks it replaced (files/jinja_monitoring.yml),
for many generated inventories and settings: the same failure message (the settings' problems first, else the
inventory's errors), or the same ``sglang_monitoring_targets``.

The inventories come from the generator of plugin_utils/test_monitoring_targets_differential.py, turned into what a
play sees: ``groups`` (with ``all``), ``hostvars`` (the host variables, some None, some the targets never read, the
default addresses under ``ansible_facts`` in several shapes). The old path is emulated as the tasks ran it: the
``fail`` task's filter on the settings; then the ``set_fact`` task's input templated by Ansible's own Templar from the
task's Jinja, the filter on it and the ``assert`` on its errors. The action runs its ``run`` with a Templar over the
same variables."""

from __future__ import annotations

import os
import random
from types import SimpleNamespace

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.llmserve.sglang.plugins.action.monitoring_config import ActionModule
from ansible_collections.llmserve.sglang.plugins.filter.sglang_monitoring import (
    sglang_monitoring_problems,
    sglang_monitoring_targets,
)
from ansible_collections.llmserve.sglang.tests.unit.plugins.plugin_utils.test_monitoring_targets_differential import (
    generate,
)

HERE = os.path.dirname(os.path.abspath(__file__))
ROLE = os.path.join(HERE, "..", "..", "..", "..", "roles", "sglang_monitoring")
SEED = 4747
COUNT = int(os.environ.get("LLMSERVE_DIFF_COUNT", "1500")) // 3

with open(os.path.join(HERE, "files", "jinja_monitoring.yml"), encoding="utf-8") as handle:
    OLD_TASKS = yaml.safe_load(handle)
with open(os.path.join(ROLE, "vars", "main.yml"), encoding="utf-8") as handle:
    HOST_FIELDS = yaml.safe_load(handle)["__sglang_monitoring_host_fields"]
OLD_TARGETS_VARS = next(task for task in OLD_TASKS if "ansible.builtin.set_fact" in task)["vars"]

VALID_SETTINGS = {
    "for_durations": {"sglang_monitoring_worker_down_for": "2m", "sglang_monitoring_ttft_for": "10m"},
    "windows": {"sglang_monitoring_ttft_window": "5m", "sglang_monitoring_scrape_interval": "15s"},
    "numbers": {"sglang_monitoring_ttft_p99_seconds": ["5", 0, 86400],
                "sglang_monitoring_spec_accept_length_min": ["1.5", 0, 64]},
    "names": {"sglang_monitoring_sglang_job": "sglang", "sglang_monitoring_servers_group": "sglang_servers"},
    "paths": {"sglang_monitoring_rules_dir": "/etc/prometheus/rules"},
    "prometheus": "existing", "write_targets": True, "prometheus_version": "", "alertmanagers": [],
    "tls_ca_file": "",
    "ranges": {"sglang_monitoring_queue_backlog_threshold": ["50", 1, 1000000],
               "sglang_monitoring_node_exporter_port": ["9100", 1, 65535]},
}
# one broken rule each (the settings' rules themselves are test_monitoring_config.py's of plugin_utils)
BROKEN_SETTINGS = (
    {"for_durations": {"sglang_monitoring_worker_down_for": "2 minutes", "sglang_monitoring_ttft_for": "1.5m"}},
    {"windows": {"sglang_monitoring_ttft_window": "0s", "sglang_monitoring_scrape_interval": "15s"}},
    {"numbers": {"sglang_monitoring_ttft_p99_seconds": ["fast", 0, 86400]}},
    {"names": {"sglang_monitoring_sglang_job": 'sglang"}'}},
    {"paths": {"sglang_monitoring_rules_dir": "rules"}},
    {"prometheus": "docker"},
    {"prometheus": "distribution", "write_targets": False},
    {"alertmanagers": ["am:9093", "http://am"]},
    {"tls_ca_file": "ca.pem", "prometheus_version": "latest!"},
    {"ranges": {"sglang_monitoring_queue_backlog_threshold": ["0", 1, 1000000]}},
)


def _facts(rng, hostvars, ipv4, ipv6):
    """The gathered facts of a host in one of the shapes a play may hold them."""
    shape = rng.randrange(6)
    if shape == 0 or (ipv4 is None and ipv6 is None and shape < 3):
        return
    if shape == 1:
        hostvars["ansible_facts"] = {}
    elif shape == 2:
        hostvars["ansible_facts"] = {"default_ipv4": {}, "default_ipv6": None}
    else:
        facts = {"hostname": "h"}
        if ipv4 is not None or shape == 3:
            facts["default_ipv4"] = {"address": ipv4, "interface": "eth0"}
        if ipv6 is not None:
            facts["default_ipv6"] = {"address": ipv6}
        hostvars["ansible_facts"] = facts


def world(rng):
    """A play's view of a generated inventory: the role's target variables, groups, hostvars and the host's name;
    None for the generator's inputs no inventory can hold (not a dict)."""
    cfg = generate(rng)
    if not isinstance(cfg, dict) or not all(isinstance(cfg.get(key), dict) for key in ("groups", "hosts", "prometheus")):
        return None
    hostvars = {}
    for name, generated in cfg["hosts"].items():
        variables = dict((key, value) for key, value in generated.items() if key not in ("ipv4", "ipv6"))
        # a variable the targets never read (/metrics takes no key)
        variables["sglang_server_api_key"] = "sk-never-read"
        if rng.random() < 0.2:
            variables[rng.choice(HOST_FIELDS)] = None
        _facts(rng, variables, generated.get("ipv4"), generated.get("ipv6"))
        hostvars[name] = variables
    prometheus = cfg["prometheus"].get("name")
    if prometheus and prometheus not in hostvars:
        hostvars[prometheus] = {}
    if prometheus in hostvars and rng.random() < 0.7:
        address = cfg["prometheus"].get("ansible_host")
        if address not in ("", None) or rng.random() < 0.3:
            hostvars[prometheus]["ansible_host"] = address
    groups = dict(cfg["groups"], all=sorted(hostvars), ungrouped=[])
    return {
        "inventory_hostname": prometheus, "groups": groups, "hostvars": hostvars,
        "sglang_monitoring_servers_group": cfg.get("servers_group"),
        "sglang_monitoring_gateways_group": cfg.get("gateways_group"),
        "sglang_monitoring_node_exporters_group": cfg.get("node_exporters_group", "sglang_node_exporters"),
        "__sglang_monitoring_jobs": cfg.get("jobs"),
        "__sglang_monitoring_host_fields": HOST_FIELDS,
    }


def _trusted(value):
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return dict((key, _trusted(item)) for key, item in value.items())
    return value


def old_path(variables, settings, targets):
    """What the role's tasks did: the fail task, then (``targets``) the set_fact task and the assert."""
    if settings:
        problems = sglang_monitoring_problems(variables["__sglang_monitoring_settings"])
        if problems:
            return {"failed": True, "msg": problems}
    if not targets:
        return {"targets": None}
    templar = Templar(loader=DataLoader(), variables=dict(variables, **_trusted(
        {"__sglang_monitoring_hosts_json": OLD_TARGETS_VARS["__sglang_monitoring_hosts_json"]})))
    cfg = templar.template(_trusted(OLD_TARGETS_VARS["__sglang_monitoring_targets_cfg"]))
    fact = sglang_monitoring_targets(cfg)
    if fact["errors"]:
        return {"failed": True, "msg": fact["errors"]}
    return {"targets": fact}


def new_path(variables, settings, targets):
    task = SimpleNamespace(args={"settings": settings, "targets": targets}, async_val=0, check_mode=False,
                           action="llmserve.sglang.monitoring_config")
    connection = SimpleNamespace(_shell=SimpleNamespace(tmpdir="/nonexistent"))
    action = ActionModule(task, connection, None, DataLoader(), Templar(loader=DataLoader(), variables=variables))
    result = action.run(task_vars=variables)
    if result.get("failed"):
        return {"failed": True, "msg": result["msg"]}
    assert result["changed"] is False
    assert result["settings"] == (variables["__sglang_monitoring_settings"] if settings else None)
    return {"targets": result["targets"]}


def outcome(path, *args):
    """The path's result, or the exception it raised (the task's failure either way)."""
    try:
        return path(*args)
    except Exception as exc:  # pylint: disable=broad-except
        return {"raised": (type(exc).__name__, str(exc))}


def test_the_action_gives_what_the_role_tasks_gave():
    rng = random.Random(SEED)
    outcomes = {"settings": 0, "inventory": 0, "targets": 0, "settings only": 0, "raised": 0}
    checked = 0
    while checked < COUNT:
        variables = world(rng)
        if variables is None:
            continue
        settings_cfg = dict(VALID_SETTINGS)
        if rng.random() < 0.25:
            settings_cfg.update(rng.choice(BROKEN_SETTINGS))
        variables["__sglang_monitoring_settings"] = settings_cfg
        settings, targets = rng.choice(((True, True), (True, True), (True, False), (False, True)))
        old, new = outcome(old_path, variables, settings, targets), outcome(new_path, variables, settings, targets)
        assert new == old, "case %d differs: %r" % (checked, variables)
        checked += 1
        if "raised" in old:
            outcomes["raised"] += 1
        elif old.get("failed"):
            outcomes["settings" if settings and sglang_monitoring_problems(settings_cfg) else "inventory"] += 1
        else:
            outcomes["targets" if targets else "settings only"] += 1
    print("\n%d cases (seed %d): %r" % (COUNT, SEED, outcomes))
    # every outcome is exercised (a crash only for the generator's inputs no role gives: a job left out of the jobs)
    assert all(count > COUNT * 0.03 for name, count in outcomes.items() if name != "raised"), outcomes
    assert outcomes["raised"] < COUNT * 0.05, outcomes


@pytest.mark.parametrize("shape", [{}, {"default_ipv4": None}, {"default_ipv4": "10.0.0.1"}, "not facts",
                                   {"default_ipv4": {"address": None}}, {"default_ipv6": {"address": "fd00::1"}},
                                   {"default_ipv4": {"address": "10.0.0.5", "interface": "eth0"}}])
def test_odd_facts_read_as_the_jinja_read_them(shape):
    variables = {"inventory_hostname": "prom", "groups": {"all": ["gpu", "prom"], "s": ["gpu"]},
                 "hostvars": {"gpu": {"sglang_server_host": "0.0.0.0", "sglang_server_metrics": True,
                                      "ansible_facts": shape}, "prom": {}},
                 "sglang_monitoring_servers_group": "s", "sglang_monitoring_gateways_group": "g",
                 "sglang_monitoring_node_exporters_group": "n", "__sglang_monitoring_host_fields": HOST_FIELDS,
                 "__sglang_monitoring_jobs": {"sglang": "sglang", "gateway": "sglang_gateway", "node": "node"},
                 "__sglang_monitoring_settings": VALID_SETTINGS}
    old, new = old_path(variables, False, True), new_path(variables, False, True)
    assert new == old
    # a 0.0.0.0 bind is reached at the default IPv4 address only
    if shape == {"default_ipv4": {"address": "10.0.0.5", "interface": "eth0"}}:
        assert new["targets"]["targets"]["sglang"][0]["targets"] == ["10.0.0.5:30000"], new
    else:
        assert "gather its facts (default_ipv4)" in new["msg"][0], new
