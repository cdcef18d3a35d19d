# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A canary's verified deployment is not the last good configuration until its gate passed: with
sglang_server_last_good_deferred the deployment keeps the one before (which `rollback` restores), and the entry point
`promote` copies the live files there with the same file list the deployment uses. The plan says where the host reads
the server's /metrics (the canary gate reads it there)."""

import os

import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "sglang_server")


def load(*parts):
    with open(os.path.join(ROLE, *parts)) as handle:
        return yaml.safe_load(handle)


def render(expression, variables):
    trusted = {k: trust_as_template(v) if isinstance(v, str) else v for k, v in variables.items()}
    return Templar(loader=DataLoader(), variables=trusted).template(trust_as_template(expression))


def _keep_good_task():
    def walk(tasks):
        for task in tasks:
            yield task
            for part in ("block", "rescue", "always"):
                yield from walk(task.get(part, []))
    (task,) = [t for t in walk(load("tasks", "deploy.yml"))
               if t.get("name") == "Keep this configuration as the last good one, record what the verified server serves"]
    return task


def test_a_deferred_deployment_keeps_the_configuration_before_as_the_last_good_one():
    keep = _keep_good_task()["vars"]["__sglang_server_keep_good"]
    base = {"__sglang_server_restart_needed": True, "sglang_server_plan": {"keep_good_needed": False},
            "sglang_server_restart_policy": "on_change"}
    assert render(keep, dict(base, sglang_server_last_good_deferred=False)) is True
    assert render(keep, dict(base, sglang_server_last_good_deferred=True)) is False
    assert load("defaults", "main.yml")["sglang_server_last_good_deferred"] is False


def test_promote_copies_the_same_files_as_a_deployment_and_shows_its_diff():
    (trust, keep) = load("tasks", "promote.yml")
    assert trust["ansible.builtin.include_tasks"] == "trust_state_dir.yml"
    assert keep["llmserve.sglang.deploy_state"]["files"] == "{{ __sglang_server_last_good_files | from_yaml }}"
    assert keep["llmserve.sglang.deploy_state"]["secrets"] == "{{ __sglang_server_secrets }}" and "no_log" not in keep
    assert _keep_good_task()["llmserve.sglang.deploy_state"]["files"].startswith(
        "{{ (__sglang_server_last_good_files | from_yaml if __sglang_server_keep_good else [])")
    files = yaml.safe_load(render(load("vars", "main.yml")["__sglang_server_last_good_files"], {
        "__sglang_server_last_good_dir": "/var/lib/s/last-good",
        "__sglang_server_managed_files": [{"path": "/etc/systemd/system/sglang.service"}, {"path": "/etc/sglang/a.env"}]}))
    assert files == [
        {"path": "/var/lib/s/last-good/sglang.service", "src": "/etc/systemd/system/sglang.service", "owner": "root",
         "group": "root", "mode": "0600"},
        {"path": "/var/lib/s/last-good/a.env", "src": "/etc/sglang/a.env", "owner": "root", "group": "root",
         "mode": "0600"}]
    specs = load("meta", "argument_specs.yml")["argument_specs"]
    assert "promote" in specs and "sglang_server_last_good_deferred" in specs["main"]["options"]


def test_the_plan_says_where_the_host_reads_metrics():
    (decide,) = [t for t in load("tasks", "state.yml") if t.get("name") == "Decide what the deployment changes"]
    plan = decide["ansible.builtin.set_fact"]["sglang_server_plan"]
    assert "'metrics_url': (__sglang_server_base_url ~ '/metrics') if sglang_server_metrics | bool else None" in plan
