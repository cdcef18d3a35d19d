# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""sglang_monitoring, run by Ansible itself: bad thresholds and durations fail naming the variable; the rule file
carries every alert with the variables' values; the live file is only replaced by one promtool accepts."""

from __future__ import annotations

import glob
import os
import subprocess

import pytest
import yaml
from ansible_collections.llmserve.sglang.tests.unit.collection_tree import run_playbook

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "sglang_monitoring")
ALERTS = ["SGLangWorkerDown", "SGLangGatewayWorkerUnhealthy", "SGLangSpecAcceptLengthLow", "SGLangQueueBacklog",
          "SGLangTimeToFirstTokenHigh", "GPUXidFatal", "IOMMUDMAFaults", "LLMServeDeployFailed",
          "LLMServeNextBootUnsafe"]
# make rules-test fetches it (tools/prometheus/get_promtool.sh); without it the promtool checks here skip
PROMTOOL = sorted(glob.glob(os.path.join(os.environ.get("LLMSERVE_CACHE", "/var/cache/llmserve"),
                                         "prometheus", "*", "promtool")))


def _play(tmp_path, settings, tasks):
    return run_playbook(tmp_path, [{"hosts": "localhost", "gather_facts": False, "vars": settings, "tasks": tasks}])


def _validate(tmp_path, settings):
    return _play(tmp_path, settings, [{"ansible.builtin.include_role": {"name": "llmserve.sglang.sglang_monitoring",
                                                                        "tasks_from": "validate"}}])


def _render(tmp_path, settings):
    """The role's template with its defaults and vars (and the settings), as the template module renders it."""
    dest = tmp_path / "rules.yml"
    result = _play(tmp_path, settings, [
        {"ansible.builtin.include_role": {"name": "llmserve.sglang.sglang_monitoring", "tasks_from": "validate",
                                          "public": True}},
        {"ansible.builtin.template": {"src": os.path.join(ROLE, "templates", "llmserve_sglang.rules.yml.j2"),
                                      "dest": str(dest), "mode": "0644"}}])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    return dest


def _alerts(path):
    groups = yaml.safe_load(path.read_text())["groups"]
    return {rule["alert"]: rule for group in groups for rule in group["rules"] if "alert" in rule}


def _records(path):
    groups = yaml.safe_load(path.read_text())["groups"]
    return {rule["record"]: rule for group in groups for rule in group["rules"] if "record" in rule}


def test_the_defaults_pass_validation(tmp_path):
    result = _validate(tmp_path, {})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "failed=0" in result.stdout


def test_bad_thresholds_and_durations_fail_naming_each_variable(tmp_path):
    settings = {
        "sglang_monitoring_worker_down_for": "2 minutes",
        "sglang_monitoring_gateway_worker_unhealthy_for": "120",
        "sglang_monitoring_queue_backlog_for": "1.5m",
        "sglang_monitoring_ttft_for": "30m1h",
        "sglang_monitoring_deploy_failed_for": "",
        "sglang_monitoring_ttft_window": "0s",
        "sglang_monitoring_ttft_p99_seconds": 0,
        "sglang_monitoring_spec_accept_length_min": "-1",
        "sglang_monitoring_queue_backlog_threshold": 0,
        "sglang_monitoring_iommu_dma_faults_threshold": -1,
        "sglang_monitoring_sglang_job": 'sglang"} or vector(1) #',
    }
    result = _validate(tmp_path, settings)
    # the callback wraps long messages: compare with the whitespace folded
    out = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 2, out[-3000:]
    for message in (
            "sglang_monitoring_worker_down_for: must be a Prometheus duration such as 0s, 30s, 2m or 1h30m",
            '(units y w d h m s ms, largest first, whole numbers), got "2 minutes"',
            "sglang_monitoring_gateway_worker_unhealthy_for: must be a Prometheus duration",
            "sglang_monitoring_queue_backlog_for: must be a Prometheus duration",
            "sglang_monitoring_ttft_for: must be a Prometheus duration",
            "sglang_monitoring_deploy_failed_for: must be a Prometheus duration",
            "sglang_monitoring_ttft_window: must be a Prometheus duration above zero",
            "sglang_monitoring_ttft_p99_seconds: must be a decimal number above 0 and at most 86400, got \"0\"",
            "sglang_monitoring_spec_accept_length_min: must be a decimal number above 0 and at most 64",
            "sglang_monitoring_queue_backlog_threshold: must be an integer from 1 to 1000000, got 0",
            "sglang_monitoring_iommu_dma_faults_threshold: must be an integer from 0 to 1000000000, got -1",
            "sglang_monitoring_sglang_job: must be a non-empty name"):
        assert message in out, message
    # the variables that were left alone are not named
    for name in ("sglang_monitoring_spec_accept_length_for", "sglang_monitoring_gateway_job:",
                 "sglang_monitoring_gpu_xid_fatal_for"):
        assert name not in out.rsplit("Check the alert thresholds", maxsplit=1)[-1], name


@pytest.mark.parametrize("duration", ["0", "0s", "30s", "2m", "1h30m", "1d", "2w", "1y", "500ms", "1h5m10s250ms"])
def test_every_form_of_the_duration_grammar_passes(tmp_path, duration):
    result = _validate(tmp_path, {"sglang_monitoring_worker_down_for": duration})
    assert result.returncode == 0, result.stdout[-2000:]


def test_a_duration_with_a_trailing_newline_is_refused(tmp_path):
    # a regular expression ending in $ also matches before a final newline; the rule file would carry the newline
    result = _validate(tmp_path, {"sglang_monitoring_worker_down_for": "30s\n"})
    assert result.returncode != 0
    assert 'sglang_monitoring_worker_down_for: must be a Prometheus duration such as 0s, 30s, 2m or 1h30m' \
        in result.stdout, result.stdout[-2000:]


def test_the_rule_file_has_every_alert_with_the_default_values(tmp_path):
    path = _render(tmp_path, {})
    text = path.read_text()
    assert text.startswith("#\n# Ansible managed\n#\n")
    alerts = _alerts(path)
    assert sorted(alerts) == sorted(ALERTS)
    for name, rule in alerts.items():
        assert rule["labels"]["severity"] in ("critical", "warning"), name
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], name
    assert alerts["SGLangWorkerDown"]["expr"] == 'up{job="sglang"} == 0'
    assert alerts["SGLangWorkerDown"]["for"] == "2m"
    assert alerts["SGLangGatewayWorkerUnhealthy"]["expr"] == 'smg_worker_health{job="sglang_gateway"} == 0'
    assert alerts["SGLangQueueBacklog"]["expr"] == "instance:sglang_num_queue_reqs:max > 50"
    assert alerts["SGLangQueueBacklog"]["for"] == "5m"
    assert alerts["SGLangTimeToFirstTokenHigh"]["expr"] == "instance:sglang_time_to_first_token_seconds:p99 > 5"
    assert alerts["SGLangSpecAcceptLengthLow"]["expr"] == "instance:sglang_spec_accept_length:min < 1.5"
    assert alerts["GPUXidFatal"]["expr"] == 'llmserve_gpu_xid_events{fatal="true"} > 0'
    assert alerts["IOMMUDMAFaults"]["expr"] == "llmserve_iommu_dma_faults > 0"
    assert alerts["LLMServeDeployFailed"]["expr"] == "llmserve_last_run_success == 0"
    records = _records(path)
    assert "rate(sglang:time_to_first_token_seconds_bucket{job=\"sglang\"}[5m])" \
        in records["instance:sglang_time_to_first_token_seconds:p99"]["expr"]
    assert "sglang:spec_accept_length{job=\"sglang\"} > 0" in records["instance:sglang_spec_accept_length:min"]["expr"]
    # Prometheus' own template syntax reaches the file untouched by Jinja
    assert "{{ $labels.instance }}" in alerts["SGLangWorkerDown"]["annotations"]["summary"]


def test_other_values_change_the_expressions_and_durations(tmp_path):
    settings = {
        "sglang_monitoring_sglang_job": "llm-engines", "sglang_monitoring_gateway_job": "smg",
        "sglang_monitoring_worker_down_for": "45s", "sglang_monitoring_gateway_worker_unhealthy_for": "3m",
        "sglang_monitoring_spec_accept_length_min": 2.25, "sglang_monitoring_spec_accept_length_for": "1h",
        "sglang_monitoring_queue_backlog_threshold": 7, "sglang_monitoring_queue_backlog_for": "90s",
        "sglang_monitoring_ttft_p99_seconds": 0.75, "sglang_monitoring_ttft_for": "20m",
        "sglang_monitoring_ttft_window": "2m", "sglang_monitoring_gpu_xid_fatal_for": "1m",
        "sglang_monitoring_iommu_dma_faults_threshold": 10, "sglang_monitoring_iommu_dma_faults_for": "5m",
        "sglang_monitoring_deploy_failed_for": "15m", "sglang_monitoring_next_boot_unsafe_for": "30m",
    }
    path = _render(tmp_path, settings)
    alerts = _alerts(path)
    assert alerts["SGLangWorkerDown"]["expr"] == 'up{job="llm-engines"} == 0'
    assert alerts["SGLangGatewayWorkerUnhealthy"]["expr"] == 'smg_worker_health{job="smg"} == 0'
    assert alerts["SGLangQueueBacklog"]["expr"] == "instance:sglang_num_queue_reqs:max > 7"
    assert alerts["SGLangTimeToFirstTokenHigh"]["expr"] == "instance:sglang_time_to_first_token_seconds:p99 > 0.75"
    assert alerts["SGLangSpecAcceptLengthLow"]["expr"] == "instance:sglang_spec_accept_length:min < 2.25"
    assert alerts["IOMMUDMAFaults"]["expr"] == "llmserve_iommu_dma_faults > 10"
    assert {name: rule["for"] for name, rule in alerts.items()} == {
        "SGLangWorkerDown": "45s", "SGLangGatewayWorkerUnhealthy": "3m", "SGLangSpecAcceptLengthLow": "1h",
        "SGLangQueueBacklog": "90s", "SGLangTimeToFirstTokenHigh": "20m", "GPUXidFatal": "1m",
        "IOMMUDMAFaults": "5m", "LLMServeDeployFailed": "15m", "LLMServeNextBootUnsafe": "30m"}
    assert "more than 7 for" in alerts["SGLangQueueBacklog"]["annotations"]["description"]
    records = _records(path)
    assert "{job=\"llm-engines\"}[2m]" in records["instance:sglang_time_to_first_token_seconds:p99"]["expr"]
    if PROMTOOL:
        check = subprocess.run([PROMTOOL[-1], "check", "rules", str(path)], capture_output=True, text=True,
                               check=False, timeout=60)
        assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="the role writes a root-owned rule file (needs root)")
def test_the_live_file_is_only_replaced_by_one_promtool_accepts(tmp_path):
    rules_dir = tmp_path / "rules"
    live = rules_dir / "llmserve_sglang.rules.yml"
    accept = tmp_path / "promtool-accepts"
    accept.write_text("#!/bin/sh\n[ \"$1 $2\" = 'check rules' ] && [ -s \"$3\" ]\n")
    refuse = tmp_path / "promtool-refuses"
    refuse.write_text("#!/bin/sh\necho 'FAILED: 1 error' >&2\nexit 1\n")
    for tool in (accept, refuse):
        tool.chmod(0o755)
    role = [{"ansible.builtin.include_role": {"name": "llmserve.sglang.sglang_monitoring"}},
            {"ansible.builtin.debug": {"msg": "RESULT {{ {'changed': sglang_monitoring_rules_changed,"
                                              " 'backup': sglang_monitoring_backup_file} | to_json }}"}}]
    base = {"sglang_monitoring_rules_dir": str(rules_dir), "sglang_monitoring_reload": False,
            "sglang_monitoring_write_targets": False}

    first = _play(tmp_path, dict(base, sglang_monitoring_promtool=str(accept)), role)
    assert first.returncode == 0, first.stdout[-3000:]
    assert "> 50" in live.read_text()
    again = _play(tmp_path, dict(base, sglang_monitoring_promtool=str(accept)), role)
    assert again.returncode == 0 and "changed=0" in again.stdout, again.stdout[-3000:]

    # a new threshold: written, the old file kept beside it (out of a *.yml glob)
    changed = _play(tmp_path, dict(base, sglang_monitoring_promtool=str(accept),
                                   sglang_monitoring_queue_backlog_threshold=80), role)
    assert changed.returncode == 0, changed.stdout[-3000:]
    assert "> 80" in live.read_text()
    backups = sorted(p for p in rules_dir.iterdir() if p.name != live.name)
    assert len(backups) == 1 and backups[0].name.endswith("~") and "> 50" in backups[0].read_text()
    assert '"backup": "%s"' % backups[0] in " ".join(changed.stdout.split())

    # promtool refuses: the play fails and the live file is the last good one
    refused = _play(tmp_path, dict(base, sglang_monitoring_promtool=str(refuse),
                                   sglang_monitoring_queue_backlog_threshold=90), role)
    assert refused.returncode == 2
    assert "failed to validate" in refused.stdout
    assert "> 80" in live.read_text()

    missing = _play(tmp_path, dict(base, sglang_monitoring_promtool=str(tmp_path / "nowhere")), role)
    assert missing.returncode == 2
    assert "sglang_monitoring_promtool: %s is not an executable" % (tmp_path / "nowhere") \
        in " ".join(missing.stdout.split())
