# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The sglang_rollout role's report entry point, run for real on localhost, carries a worker's time out of rotation (issue
27) into report.json, report.md, report.html and the job's custom stats (the AWX artifacts), from what the
gateway_worker loops and sglang_server registered."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from ansible_collections.llmserve.sglang.tests.unit.plugins.plugin_utils.test_rotation import IN, OUT, SG


def test_the_rotation_record_reaches_every_report_file_and_the_artifacts(tmp_path):
    tree = os.environ.get("LLMSERVE_PYTEST_TREE")
    if not tree:
        pytest.skip("collection link tree not found")
    report_dir = tmp_path / "reports" / "run-1"
    # gpu-1 was drained, restarted and put back; gpu-2 did not change (no restart, no gateway)
    inventory = {"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
        "hosts": {"localhost": {"sglang_rollout_run_id": "run-1", "sglang_rollout_report_run_dir": str(report_dir)},
                  "gpu-1": {"sglang_server_report": SG, "sglang_rollout_gateway_out": OUT, "sglang_rollout_gateway_in": IN},
                  "gpu-2": {"sglang_server_report": {"state": "serving", "ready": True, "restarted": False}}}}}
    tasks = [{"name": "The host report",
              "ansible.builtin.include_role": {"name": "llmserve.sglang.sglang_rollout", "tasks_from": "report"}}]
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "play.yml").write_text(yaml.safe_dump([{"hosts": "gpu-1,gpu-2", "gather_facts": False,
                                                        "tasks": tasks}]))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=tree, ANSIBLE_NOCOLOR="1", ANSIBLE_HOME=str(tmp_path / "home"),
               ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_SHOW_CUSTOM_STATS="true",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default")
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                             "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml")],
                            capture_output=True, text=True, check=False, timeout=300, env=env, cwd=str(tmp_path))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]

    hosts = {h["host"]: h for h in json.loads((report_dir / "report.json").read_text())["hosts"]}
    rotation = hosts["gpu-1"]["rotation"]
    assert {k: rotation[k]["seconds"] for k in ("drain", "stop", "start", "rejoin", "out_of_rotation")} == {
        "drain": 40.5, "stop": 6.5, "start": 80.0, "rejoin": 3.25, "out_of_rotation": 133.25}
    assert rotation["startup"]["startup_time_seconds"]["load_weight"] == 43.0
    assert "rotation" not in hosts["gpu-2"]
    markdown = (report_dir / "report.md").read_text()
    assert re.search(r"\| Rotation: out of rotation \| 133\.2 s, 2025-12-02T11:30:00\.000000Z -> ", markdown)
    assert "| SGLang start-up (its /metrics) | start-up: kv_cache_allocation 2.5 s, load_weight 43.0 s" in markdown
    page = (report_dir / "report.html").read_text()
    assert "no time recorded" not in page and "6.5 s" in page and "80.0 s" in page
    # the custom stats the play prints at its end are what AWX keeps as the job's artifacts
    stats = result.stdout[result.stdout.index("CUSTOM STATS"):]
    assert '"drain_seconds": 40.5' in stats and '"out_of_rotation_seconds": 133.25' in stats
