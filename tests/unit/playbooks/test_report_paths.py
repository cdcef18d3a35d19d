# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The report files of a host stay in the run's report directory whatever its inventory name is (issue 24 #8): the
gateway playbook's report task and the sglang_rollout role's report entry point, run for real on hosts named ``../../x``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.llmserve.sglang.tests.unit.playbooks.test_playbook_locks import flatten, load

# one that climbs out of the report directory, one that names a subdirectory, one ordinary
HOSTS = ["../../escaped", "sub/dir", "gpu-node-01"]


def _run(tmp_path, tasks):
    tree = os.environ.get("LLMSERVE_PYTEST_TREE")
    if not tree:
        pytest.skip("collection link tree not found")
    report_dir = tmp_path / "work" / "reports" / "run-1"
    inventory = {"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
        "hosts": {"localhost": {"sglang_rollout_run_id": "run-1", "sglang_rollout_report_run_dir": str(report_dir)}},
        "children": {"named": {"hosts": {name: {} for name in HOSTS}}},
    }}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "play.yml").write_text(yaml.safe_dump([{"hosts": "named", "gather_facts": False, "tasks": tasks}]))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=tree, ANSIBLE_NOCOLOR="1", ANSIBLE_HOME=str(tmp_path / "home"),
               ANSIBLE_LOCALHOST_WARNING="false")
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                             "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml")],
                            capture_output=True, text=True, check=False, timeout=300, env=env, cwd=str(tmp_path))
    written = sorted(os.path.relpath(os.path.join(d, f), str(tmp_path))
                     for d, dummy, files in os.walk(str(tmp_path)) for f in files
                     if f.endswith((".json", ".md", ".html")) and not d.startswith(str(tmp_path / "home")))
    # first: nothing landed outside the run's report directory
    assert [p for p in written if not p.startswith("work/reports/run-1/")] == []
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return report_dir, written


def test_gateway_reports_stay_in_the_report_directory(tmp_path):
    task = next(t for t in flatten(load("roles", "sglang_rollout", "tasks", "stage_gateway.yml"))
                if t.get("name") == "Write the gateway's report (JSON)")
    directory = {"path": "{{ hostvars['localhost']['sglang_rollout_report_run_dir'] }}/gateways", "state": "directory",
                 "mode": "0755"}
    tasks = [{"name": "A gateway result", "ansible.builtin.set_fact": {"sglang_gateway_report": {"ok": True}}},
             {"name": "Make the directory", "ansible.builtin.file": directory, "delegate_to": "localhost",
              "run_once": True},
             task]
    report_dir, written = _run(tmp_path, tasks)
    assert written == sorted(["work/reports/run-1/gateways/%s.json" % name
                              for name in ("%2E.%2F..%2Fescaped", "sub%2Fdir", "gpu-node-01")])
    content = json.loads((report_dir / "gateways" / "%2E.%2F..%2Fescaped.json").read_text())
    assert content == {"ok": True, "host": "../../escaped"}


def test_host_reports_stay_in_the_report_directory(tmp_path):
    tasks = [{"name": "The host report",
              "ansible.builtin.include_role": {"name": "llmserve.sglang.sglang_rollout", "tasks_from": "report"}}]
    report_dir, written = _run(tmp_path, tasks)
    names = ("%2E.%2F..%2Fescaped", "sub%2Fdir", "gpu-node-01")
    assert written == sorted(["work/reports/run-1/report.json", "work/reports/run-1/report.md",
                              "work/reports/run-1/report.html"]
                             + ["work/reports/run-1/hosts/%s.%s" % (n, ext) for n in names for ext in ("json", "md")])
    assert json.loads((report_dir / "hosts" / "sub%2Fdir.json").read_text())["host"] == "sub/dir"
    # the same run report as HTML, written in the same module call, every name escaped
    page = (report_dir / "report.html").read_text()
    assert page.endswith("</html>\n") and "<title>SGLang deployment report run-1</title>" in page
    assert all('data-host="%s"' % name in page for name in HOSTS)
