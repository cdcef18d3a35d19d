# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""--diff shows every live file the roles write: no such task is no_log (which hides the diff), and the
deploy_state tasks that write files holding secrets name them (masked in the diff by value too)."""

from __future__ import annotations

import glob
import os

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
WRITERS = ("ansible.builtin.template", "ansible.builtin.copy", "llmserve.sglang.deploy_state")
# root's own copies below the state directory: not what a change review reads, and no_log keeps them out
INTERNAL = {
    "Stage the --config file, the environment file, the unit, the command line record and the log hook",
    "Keep this configuration as the last good one, record what the verified server serves",
}
# the tasks that write a file holding a secret (API key, HF token, gateway keys)
SECRET_FILES = {"Swap the staged files in", "Restore the last good files",
                "Write the secret environment file (root-only; systemd reads it)"}


def _tasks(tasks):
    for task in tasks or []:
        yield task
        for key in ("block", "rescue", "always"):
            yield from _tasks(task.get(key))


def _writers():
    found = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml"))):
        with open(path, encoding="utf-8") as handle:
            for task in _tasks(yaml.safe_load(handle)):
                module = next((m for m in WRITERS if m in task), None)
                # deploy_state also reads; only its files option writes
                if module and (module != "llmserve.sglang.deploy_state" or "files" in (task[module] or {})):
                    found[task["name"]] = (module, task, os.path.relpath(path, ROOT))
    return found


def test_no_task_writing_a_live_file_hides_its_diff():
    writers = _writers()
    assert SECRET_FILES | INTERNAL <= set(writers)
    hidden = sorted("%s: %s" % (where, name) for name, (module, task, where) in writers.items()
                    if task.get("no_log") and name not in INTERNAL)
    assert not hidden, "no_log hides --diff; deploy_state masks the secrets instead: %s" % hidden


def test_the_tasks_writing_secrets_use_deploy_state_and_name_the_secrets():
    writers = _writers()
    for name in SECRET_FILES:
        module, task, where = writers[name]
        assert module == "llmserve.sglang.deploy_state" and task[module].get("secrets"), "%s: %s" % (where, name)
