# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every task that sets ``sglang_server_report`` passes it through ``llmserve.sglang.sglang_server_report``.

The role publishes its host report from five tasks (two rescues before the swap, the failed and the finished
deployment, the probe of an unchanged server). Read from the YAML: each of them, and any other task of the
collection that sets the fact, ends in the filter, with keys the filter knows. Run on localhost: the five tasks,
taken from the role, give reports with the same keys and their own values.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys

import yaml

from ansible_collections.llmserve.sglang.plugins.plugin_utils.server_report import FIELDS
from ansible_collections.llmserve.sglang.tests.unit.collection_tree import collections_path

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
TASKS = os.path.join(ROOT, "roles", "sglang_server", "tasks")
FILTER = "llmserve.sglang.sglang_server_report"
# (file, task name) of the five places, whether the task runs in a rescue
PLACES = [
    ("configure.yml", "Report that the deployment stopped before the swap", True),
    ("plan.yml", "Report that the deployment stopped before the swap", True),
    ("deploy.yml", "Report the failed deployment", True),
    ("deploy.yml", "Record the deployment result", False),
    ("probe.yml", "Record the unchanged server's state", False),
]


def _walk(tasks):
    for task in tasks or []:
        if not isinstance(task, dict):
            continue
        yield task
        for section in ("block", "rescue", "always"):
            yield from _walk(task.get(section))


def _report_setters():
    """(file relative to the root, task) of every task in roles/ and playbooks/ that sets sglang_server_report."""
    files = sorted(glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml"))
                   + glob.glob(os.path.join(ROOT, "roles", "*", "handlers", "*.yml"))
                   + glob.glob(os.path.join(ROOT, "playbooks", "**", "*.yml"), recursive=True)
                   + glob.glob(os.path.join(ROOT, "*.yml")))
    found = []
    for path in files:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
        plays = data if isinstance(data, list) else []
        # a playbook's plays hold their tasks in sections; a task file is the list itself
        sections = [plays] + [play.get(key) for play in plays if isinstance(play, dict)
                              for key in ("pre_tasks", "tasks", "post_tasks", "handlers")]
        for section in sections:
            for task in _walk(section):
                args = task.get("ansible.builtin.set_fact", task.get("set_fact"))
                if isinstance(args, dict) and "sglang_server_report" in args:
                    found.append((os.path.relpath(path, ROOT), task))
    return found


def _role_vars(path):
    """The vars/main.yml of the role that ``path`` (relative to the root) belongs to; {} outside a role."""
    parts = path.split(os.sep)
    if parts[0] != "roles":
        return {}
    with open(os.path.join(ROOT, "roles", parts[1], "vars", "main.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


def test_the_five_places_are_found():
    names = {(os.path.basename(path), task.get("name")) for path, task in _report_setters()}
    assert {(entry, name) for entry, name, _rescue in PLACES} <= names


def test_every_place_ends_in_the_filter_with_known_keys():
    problems = []
    for path, task in _report_setters():
        value = task.get("ansible.builtin.set_fact", task.get("set_fact"))["sglang_server_report"]
        # the filter is the last step: nothing added after it (a combine) escapes the key check
        match = re.fullmatch(r"\{\{\s*(\w+)\s*\|\s*%s\s*\}\}" % re.escape(FILTER), str(value).strip())
        if not match:
            problems.append("%s, %r: does not end in %s: %r" % (path, task.get("name"), FILTER, value))
            continue
        # a mapping of the task's vars, or of its role's vars/main.yml (the restart entry point's two tasks share one)
        fields = (task.get("vars") or {}).get(match.group(1), _role_vars(path).get(match.group(1)))
        if not isinstance(fields, dict):
            problems.append("%s, %r: %s is not a mapping in the task's vars or its role's vars"
                            % (path, task.get("name"), match.group(1)))
            continue
        unknown = sorted(set(fields) - set(FIELDS))
        if unknown:
            problems.append("%s, %r: unknown keys %s" % (path, task.get("name"), unknown))
    assert problems == []


def test_nothing_combines_into_the_report():
    texts = []
    for pattern in ("roles/*/tasks/*.yml", "playbooks/**/*.yml", "*.yml"):
        for path in glob.glob(os.path.join(ROOT, pattern), recursive=True):
            with open(path, encoding="utf-8") as handle:
                texts.append((path, handle.read()))
    assert [path for path, text in texts if re.search(r"sglang_server_report\s*\|\s*combine", text)] == []


def _task(entry, name):
    with open(os.path.join(TASKS, entry), encoding="utf-8") as handle:
        for task in _walk(yaml.safe_load(handle)):
            if task.get("name") == name:
                return task
    raise AssertionError("%s: no task %r" % (entry, name))


# the readiness wait's unit_state.timestamps and the /metrics check's samples after a restart
UNIT_TIMES = {"clock": "monotonic", "stop_requested": 900.0, "stopped": 905.0, "main_started": 906.0,
              "main_exited": None, "checked": 918.5, "realtime_offset": 1.7e9}
STARTUP_METRICS = {"sglang:startup_time_seconds": [{"labels": {"phase": "load_weight"}, "value": 8.5}]}

# What the five tasks read, as a converged single-node host that just restarted would have it
FACTS = {
    "sglang_server_unit_name": "sglang.service", "sglang_server_tp_size": 2, "sglang_server_node_group": "",
    "sglang_server_speculative": {"algorithm": "NEXTN", "num_steps": 3}, "sglang_server_metrics": True,
    "sglang_server_rollback": True, "sglang_server_restart_policy": "on_change",
    "__sglang_server_base_url": "http://127.0.0.1:30000", "__sglang_server_have_last_good": True,
    "__sglang_server_restart_needed": True, "__sglang_server_restart": {"changed": True},
    "__sglang_server_failed_task": "Wait for readiness", "__sglang_server_failure": {"msg": "timed out"},
    "__sglang_server_journal": ["sglang: out of memory"], "__sglang_server_installed_version": "0.5.23",
    "__sglang_server_state": {"probe": {"stdout": "0.5.23\n"}},
    "__sglang_server_info": {"json": {"version": "0.5.23", "speculative_algorithm": "EAGLE"}},
    "__sglang_server_wait": {"ready": True, "status_history": [{"status": 503}, {"status": 200}],
                             "unit_state": {"main_start_seconds_ago": 12.5, "timestamps": UNIT_TIMES}},
    "__sglang_server_active_state": "active",
    "__sglang_server_metrics": {"metrics": STARTUP_METRICS},
    "__sglang_server_smoke": {"ready": True, "json": {"text": "Paris"}},
    "__sglang_server_rendered": {"p2p": "on"}, "__sglang_server_spec_disabled": None,
    # the prewarm entry point's result (before the drain) and the role's summary of it
    "sglang_server_prewarm_result": {"changed": False, "warmed": True, "seconds": 1.5, "bytes_read": 4096,
                                     "bytes": 4096, "mem_available": 1 << 34, "note": "read 4.0 KiB in 1.5 s"},
    "__sglang_server_prewarm_summary": _role_vars(os.path.join("roles", "sglang_server", "vars"))[
        "__sglang_server_prewarm_summary"],
    # a restart, not an in-place swap: the plan's revision decision was none
    "__sglang_server_swap_kept_old": False,
    "__sglang_server_weight_swap_report": _role_vars(os.path.join("roles", "sglang_server", "vars"))[
        "__sglang_server_weight_swap_report"],
}


def _reports(tmp_path):
    """Each place's report, run on localhost: {index in PLACES: report}."""
    tasks = []
    for index, (entry, name, rescue) in enumerate(PLACES):
        task = _task(entry, name)
        tasks.append({"ansible.builtin.set_fact": {"sglang_server_report": None}})
        if rescue:
            task = {"block": [{"ansible.builtin.fail": {"msg": "stage failed"}}], "rescue": [task]}
        tasks.append(task)
        tasks.append({"ansible.builtin.copy": {"content": "{{ sglang_server_report | to_json }}",
                                               "dest": str(tmp_path / ("%d.json" % index)), "mode": "0600"}})
    play = [{"hosts": "localhost", "gather_facts": False, "vars": FACTS, "tasks": tasks}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
               ANSIBLE_HOME=str(tmp_path / "home"))
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,",
                           "-c", "local", "-e", json.dumps({"ansible_python_interpreter": sys.executable}),
                           str(tmp_path / "play.yml")],
                          capture_output=True, text=True, env=env, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    return {index: json.loads((tmp_path / ("%d.json" % index)).read_text()) for index in range(len(PLACES))}


def test_the_five_places_give_one_shape_with_their_own_values(tmp_path):
    reports = _reports(tmp_path)
    assert {index: sorted(report) for index, report in reports.items()} == {
        index: sorted(FIELDS) for index in range(len(PLACES))}
    before_swap, plan_failed, failed, deployed, probed = (reports[i] for i in range(len(PLACES)))
    for report in (before_swap, plan_failed):
        assert report["state"] == "failed before the swap (the live configuration is unchanged)"
        assert report["error"].startswith("stage failed") and report["ready"] is False
        assert report["version"] is None and report["restarted"] is None
    assert failed["state"] == "rolled back to the last good configuration"
    assert failed["error"] == "Wait for readiness: timed out" and failed["journal"] == ["sglang: out of memory"]
    assert failed["restarted"] is True and failed["smoke"] is None
    assert deployed["state"] == "serving" and deployed["version"] == "0.5.23"
    assert deployed["weight_swap"] is None and failed["weight_swap"] is None
    assert deployed["speculative_reported"] == "EAGLE" and deployed["time_to_ready"] == 12.5
    assert deployed["smoke"] == "passed" and deployed["smoke_text"] == "Paris"
    # the restart's systemd moments and SGLang's start-up metrics, for the rotation record
    assert deployed["unit_times"] == dict(UNIT_TIMES, was_active=True, ready=True)
    assert deployed["startup_metrics"] == STARTUP_METRICS
    assert deployed["prewarm"] == {"warmed": True, "seconds": 1.5, "bytes_read": 4096, "note": "read 4.0 KiB in 1.5 s"}
    assert failed["unit_times"] == dict(UNIT_TIMES, was_active=True, ready=True)
    assert probed["unit_times"] is None and probed["startup_metrics"] is None
    assert deployed["metrics_url"] == "http://127.0.0.1:30000/metrics" and deployed["error"] is None
    assert probed["state"] == "serving" and probed["installed_version"] == "0.5.23"
    assert probed["restarted"] is False and probed["smoke"] == "not run (no change)"
