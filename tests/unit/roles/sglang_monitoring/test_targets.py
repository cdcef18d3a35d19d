# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""sglang_monitoring, run by Ansible on an inventory: the scrape target files it writes for an existing Prometheus
(idempotent), the prometheus.yml of the distribution mode that the real promtool accepts, and bad inventories that
fail naming the variable before anything is written."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import pytest
import yaml
from ansible_collections.llmserve.sglang.tests.unit.collection_tree import collections_path as _collections_path

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "sglang_monitoring")
PROMTOOL = sorted(glob.glob(os.path.join(os.environ.get("LLMSERVE_CACHE", "/var/cache/llmserve"),
                                         "prometheus", "*", "promtool")))
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the role writes root-owned files (needs root)")
needs_promtool = pytest.mark.skipif(not PROMTOOL, reason="no promtool (tools/prometheus/get_promtool.sh fetches it)")

# The example inventory's shape: a single-host server, a two-node server, a gateway, a Prometheus host.
INVENTORY = {"all": {"children": {
    "sglang_servers": {
        "hosts": {"gpu-node-01": {"ansible_host": "10.0.0.1", "sglang_server_host": "0.0.0.0",
                                  "sglang_monitoring_node_exporter": True}},
        "vars": {"sglang_server_metrics": True, "sglang_model_repo": "Qwen/Qwen3.5-122B-A10B",
                 "sglang_server_served_model_name": "qwen3.5",
                 # never read by the monitoring: /metrics takes no key
                 "sglang_server_api_key": "sk-do-not-leak-0123456789"},
        "children": {"sglang_qwen3_235b": {
            "hosts": {"gpu-node-02": {"ansible_host": "10.0.0.2"}, "gpu-node-03": {"ansible_host": "10.0.0.3"}},
            "vars": {"sglang_server_node_group": "sglang_qwen3_235b", "sglang_server_host": "0.0.0.0",
                     "sglang_monitoring_node_exporter": True,
                     "sglang_model_repo": "Qwen/Qwen3-235B-A22B", "sglang_server_served_model_name": "qwen3"}}}},
    "sglang_gateways": {"hosts": {"gateway-01": {"ansible_host": "10.0.1.1", "sglang_gateway_host": "10.0.1.1"}}},
    "sglang_monitoring": {"hosts": {"prometheus-01": {"ansible_connection": "local"}}},
}}}


def _play(tmp_path, inventory, settings, tasks, check=False):
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    playbook = tmp_path / "play.yml"
    playbook.write_text(json.dumps([{"hosts": "sglang_monitoring", "gather_facts": False, "vars": settings,
                                     "tasks": tasks}]))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=_collections_path(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_HOME=str(tmp_path / "home"), ANSIBLE_INVENTORY_UNPARSED_WARNING="false")
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-v", "-i",
            str(tmp_path / "inventory.yml"), "-e", "ansible_python_interpreter=" + sys.executable, str(playbook)]
    if check:
        argv.append("--check")
    return subprocess.run(argv, capture_output=True, text=True, env=env, check=False, timeout=300)


def _settings(tmp_path, promtool):
    return {"sglang_monitoring_rules_dir": str(tmp_path / "rules"),
            "sglang_monitoring_targets_dir": str(tmp_path / "file_sd"),
            "sglang_monitoring_promtool": promtool, "sglang_monitoring_reload": False}


def _accepting_promtool(tmp_path):
    tool = tmp_path / "promtool-accepts"
    tool.write_text("#!/bin/sh\n[ -s \"$3\" ]\n")
    tool.chmod(0o755)
    return str(tool)


ROLE_TASKS = [{"ansible.builtin.include_role": {"name": "llmserve.sglang.sglang_monitoring"}}]


@needs_root
def test_existing_prometheus_gets_target_and_rule_files_idempotently(tmp_path):
    settings = _settings(tmp_path, PROMTOOL[-1] if PROMTOOL else _accepting_promtool(tmp_path))
    first = _play(tmp_path, INVENTORY, settings, ROLE_TASKS)
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
    files = sorted(os.listdir(tmp_path / "file_sd"))
    assert files == ["node.json", "sglang.json", "sglang_gateway.json"]
    sglang = json.loads((tmp_path / "file_sd" / "sglang.json").read_text())
    # rank 0 of the two-node server only (gpu-node-02: first by name), both single servers' labels
    assert sglang == [
        {"targets": ["10.0.0.1:30000"], "labels": {"host": "gpu-node-01", "model": "Qwen/Qwen3.5-122B-A10B",
                                                   "served_model_name": "qwen3.5", "rank": "0",
                                                   "gateway": "gateway-01"}},
        {"targets": ["10.0.0.2:30000"], "labels": {"host": "gpu-node-02", "model": "Qwen/Qwen3-235B-A22B",
                                                   "served_model_name": "qwen3", "rank": "0",
                                                   "node_group": "sglang_qwen3_235b", "gateway": "gateway-01"}}]
    gateway = json.loads((tmp_path / "file_sd" / "sglang_gateway.json").read_text())
    assert gateway == [{"targets": ["10.0.1.1:29000"], "labels": {"host": "gateway-01", "gateway": "gateway-01"}}]
    node = json.loads((tmp_path / "file_sd" / "node.json").read_text())
    assert [(entry["targets"][0], entry["labels"]["rank"]) for entry in node] == [
        ("10.0.0.1:9100", "0"), ("10.0.0.2:9100", "0"), ("10.0.0.3:9100", "1")]
    for path in (tmp_path / "file_sd").iterdir():
        assert oct(path.stat().st_mode & 0o777) == "0o644"
    assert (tmp_path / "rules" / "llmserve_sglang.rules.yml").is_file()
    everything = first.stdout + "".join(p.read_text() for p in (tmp_path / "file_sd").iterdir())
    assert "sk-do-not-leak" not in everything

    again = _play(tmp_path, INVENTORY, settings, ROLE_TASKS)
    assert again.returncode == 0 and "changed=0" in again.stdout, again.stdout[-3000:]

    # a new host in the inventory: only the file of its job changes
    grown = json.loads(json.dumps(INVENTORY))
    grown["all"]["children"]["sglang_servers"]["hosts"]["gpu-node-04"] = {
        "ansible_host": "10.0.0.4", "sglang_server_host": "0.0.0.0"}
    before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "file_sd").iterdir()}
    third = _play(tmp_path, grown, settings, ROLE_TASKS)
    assert third.returncode == 0 and "changed=1" in third.stdout, third.stdout[-3000:]
    after = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "file_sd").iterdir()}
    assert [name for name in before if before[name] != after[name]] == ["sglang.json"]
    assert len(json.loads((tmp_path / "file_sd" / "sglang.json").read_text())) == 3


def test_bad_inventory_fails_before_anything_is_written(tmp_path):
    bad = json.loads(json.dumps(INVENTORY))
    servers = bad["all"]["children"]["sglang_servers"]
    servers["hosts"]["gpu-node-01"]["sglang_server_metrics"] = False
    servers["hosts"]["gpu-node-09"] = {"ansible_host": "10.0.0.1", "sglang_server_host": "0.0.0.0"}
    settings = _settings(tmp_path, _accepting_promtool(tmp_path))
    result = _play(tmp_path, bad, settings, ROLE_TASKS)
    out = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 2, out[-3000:]
    assert "hostvars['gpu-node-01'].sglang_server_metrics: is false, so SGLang on gpu-node-01 serves no /metrics" in out
    assert ("hostvars['gpu-node-09'].sglang_server_port: 10.0.0.1:30000 of gpu-node-09 (job sglang) is the same "
            "target as hostvars['gpu-node-01'].sglang_server_port") not in out  # gpu-node-01 was refused first
    assert not (tmp_path / "file_sd").exists() and not (tmp_path / "rules").exists()

    empty = {"all": {"children": {"sglang_monitoring": {"hosts": {"prometheus-01": {"ansible_connection": "local"}}}}}}
    result = _play(tmp_path, empty, settings, ROLE_TASKS)
    out = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 2
    assert ("sglang_monitoring_servers_group: the inventory group 'sglang_servers' has no hosts (or does not exist)"
            in out)


def test_bad_settings_fail_naming_the_variable(tmp_path):
    # the argument spec knows the two modes
    result = _play(tmp_path, INVENTORY, dict(_settings(tmp_path, "/usr/bin/promtool"),
                                             sglang_monitoring_prometheus="docker"),
                   [{"ansible.builtin.include_role": {"name": "llmserve.sglang.sglang_monitoring",
                                                      "tasks_from": "validate"}}])
    out = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 2
    assert "value of sglang_monitoring_prometheus must be one of: existing, distribution, got: docker" in out
    settings = dict(_settings(tmp_path, "/usr/bin/promtool"), sglang_monitoring_prometheus="distribution",
                    sglang_monitoring_write_targets=False, sglang_monitoring_targets_dir="file_sd", sglang_monitoring_scrape_interval="15 s",
                    sglang_monitoring_prometheus_version="latest; rm -rf /",
                    sglang_monitoring_alertmanagers=["am-01.example.internal:9093", "http://am:9093"],
                    sglang_monitoring_node_job="sglang", sglang_monitoring_node_exporter_port=0)
    result = _play(tmp_path, INVENTORY, settings,
                   [{"ansible.builtin.include_role": {"name": "llmserve.sglang.sglang_monitoring",
                                                      "tasks_from": "validate"}}])
    out = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 2, out[-3000:]
    for message in (
            "sglang_monitoring_write_targets: must be true with sglang_monitoring_prometheus: distribution",
            "sglang_monitoring_targets_dir: must be an absolute path",
            "sglang_monitoring_scrape_interval: must be a Prometheus duration above zero",
            "sglang_monitoring_prometheus_version: must be \"\" or a package version",
            "sglang_monitoring_alertmanagers: each entry must be host:port (an IPv6 address in brackets), got "
            "\"http://am:9093\"",
            "sglang_monitoring_node_exporter_port: must be an integer from 1 to 65535, got 0"):
        assert message in out, message
    assert "am-01.example.internal:9093\"" not in out
    # equal job names are the targets builder's (it needs them apart: one file per job)
    result = _play(tmp_path, INVENTORY, dict(_settings(tmp_path, "/usr/bin/promtool"), sglang_monitoring_node_job="sglang"),
                   [{"ansible.builtin.include_role": {"name": "llmserve.sglang.sglang_monitoring",
                                                      "tasks_from": "targets"}}])
    out = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 2
    assert "sglang_monitoring_node_job: must differ from sglang_monitoring_sglang_job (both are 'sglang')" in out


def _render_config(tmp_path, settings):
    dest = tmp_path / "prometheus.yml"
    result = _play(tmp_path, INVENTORY, settings, [
        {"ansible.builtin.include_role": {"name": "llmserve.sglang.sglang_monitoring", "tasks_from": "validate",
                                          "public": True}},
        {"ansible.builtin.template": {"src": os.path.join(ROLE, "templates", "prometheus.yml.j2"),
                                      "dest": str(dest), "mode": "0644"}}])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    return dest


@needs_root
@needs_promtool
def test_the_distribution_configuration_passes_the_real_promtool(tmp_path):
    settings = _settings(tmp_path, PROMTOOL[-1])
    # the rule and target files the configuration names, as the role writes them
    written = _play(tmp_path, INVENTORY, settings, ROLE_TASKS)
    assert written.returncode == 0, written.stdout[-3000:]
    for extra in ({}, {"sglang_monitoring_alertmanagers": ["am-01.example.internal:9093", "[fd00::9]:9093"],
                       "sglang_monitoring_tls_ca_file": "/etc/prometheus/sglang-ca.pem",
                       "sglang_monitoring_scrape_interval": "30s", "sglang_monitoring_node_job": "node_exporter"}):
        config = _render_config(tmp_path, dict(settings, **extra))
        text = config.read_text()
        assert text.startswith("#\n# Ansible managed\n#\n")
        parsed = yaml.safe_load(text)
        jobs = {job["job_name"]: job for job in parsed["scrape_configs"]}
        assert set(jobs) == {"sglang", "sglang_gateway", extra.get("sglang_monitoring_node_job", "node")}
        assert jobs["sglang"]["file_sd_configs"] == [{"files": [str(tmp_path / "file_sd" / "sglang.json")]}]
        assert parsed["rule_files"] == [str(tmp_path / "rules" / "*.yml")]
        assert "api_key" not in text and "authorization" not in text and "basic_auth" not in text
        check = subprocess.run([PROMTOOL[-1], "check", "config", str(config)], capture_output=True, text=True,
                               check=False, timeout=60)
        output = check.stdout + check.stderr
        assert check.returncode == 0, output
        # promtool also read the rule file and the sglang/gateway target files
        assert "SUCCESS" in output and "rules found" in output
        assert "WARNING" not in output or extra, output
    assert parsed["global"]["scrape_interval"] == "30s"
    assert parsed["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"] == [
        "am-01.example.internal:9093", "[fd00::9]:9093"]
    assert jobs["sglang"]["tls_config"] == {"ca_file": "/etc/prometheus/sglang-ca.pem"}


@needs_promtool
def test_promtool_refuses_a_scrape_timeout_above_the_interval(tmp_path):
    # the role leaves this rule to promtool on the host (the template task's validate): prove promtool has it
    config = _render_config(tmp_path, dict(_settings(tmp_path, PROMTOOL[-1]), sglang_monitoring_scrape_timeout="20s",
                                           sglang_monitoring_scrape_interval="15s"))
    check = subprocess.run([PROMTOOL[-1], "check", "config", str(config)], capture_output=True, text=True,
                           check=False, timeout=60)
    assert check.returncode != 0
    assert "scrape timeout greater than scrape interval" in check.stdout + check.stderr


def test_the_hardening_drop_in(tmp_path):
    dest = tmp_path / "hardening.conf"
    result = _play(tmp_path, INVENTORY, {"sglang_monitoring_storage_dir": "/srv/prometheus"}, [
        {"ansible.builtin.template": {"src": os.path.join(ROLE, "templates", "prometheus-hardening.conf.j2"),
                                      "dest": str(dest), "mode": "0644"}}])
    assert result.returncode == 0, result.stdout[-3000:]
    lines = [line for line in dest.read_text().splitlines() if line and not line.startswith("#")]
    assert lines[0] == "[Service]"
    settings = dict(line.split("=", 1) for line in lines[1:] if not line.startswith("SystemCallFilter"))
    assert settings["ProtectSystem"] == "strict" and settings["ReadWritePaths"] == "/srv/prometheus"
    for key in ("NoNewPrivileges", "PrivateTmp", "ProtectHome", "PrivateDevices", "ProtectKernelTunables",
                "ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups", "RestrictNamespaces",
                "RestrictRealtime", "RestrictSUIDSGID", "LockPersonality", "MemoryDenyWriteExecute"):
        assert settings[key] == "true", key
    assert settings["CapabilityBoundingSet"] == "" and "ProcSubset" not in settings
