# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection link tree the repository's conftest.py made, for tests that run ansible-playbook."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


def collections_path():
    """The directory to put on ANSIBLE_COLLECTIONS_PATH (it holds ansible_collections/llmserve/sglang)."""
    tree = os.environ.get("LLMSERVE_PYTEST_TREE")
    if not tree or not os.path.isdir(os.path.join(tree, "ansible_collections", "llmserve", "sglang")):
        pytest.skip("collection link tree not found (run from the repository root, which has the conftest)")
    return tree


def _ansible_playbook(out, plays, inventory_args, args=(), timeout=600, env=None):
    """Write ``plays`` to ``out/play.yml`` (JSON is YAML, and keeps NUL and ESC characters intact as \\u escapes)
    and run ansible-playbook on it with this interpreter, the collection tree and a private ANSIBLE_HOME under
    ``out``; ``env`` is added to the environment. The CompletedProcess."""
    playbook = os.path.join(out, "play.yml")
    with open(playbook, "w", encoding="utf-8") as handle:
        json.dump(plays, handle)
    environment = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_LOCALHOST_WARNING="false",
                       ANSIBLE_INVENTORY_UNPARSED_WARNING="false", ANSIBLE_NOCOLOR="1",
                       ANSIBLE_HOME=os.path.join(out, "home"))
    environment.update(env or {})
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook")] + list(inventory_args)
                          + ["-e", "ansible_python_interpreter=" + sys.executable] + list(args) + [playbook],
                          capture_output=True, text=True, env=environment, check=False, timeout=timeout)


def run_playbook(tmp_path, plays, *args, timeout=300):
    """Write ``plays`` to ``tmp_path/play.yml`` and run ``ansible-playbook -v`` on localhost (connection local, this
    interpreter, the collection tree, a private ANSIBLE_HOME) with ``args`` added; the CompletedProcess."""
    return _ansible_playbook(str(tmp_path), plays, ("-i", "localhost,", "-c", "local"), ("-v",) + args,
                             timeout=timeout)


def run_plays(out, plays, inventory=None, timeout=600, **env):
    """Run ``plays`` as :func:`run_playbook` does, with the output directory ``out``: over ``inventory`` (a JSON
    inventory, written to ``out/inventory.json``), else on localhost over the local connection; without -v, with
    the roles path under ``out`` and facts cached in memory only (none from other runs of the same host), ``env``
    added to the environment. A failed run fails the test with the end of its output; the CompletedProcess."""
    if inventory is None:
        inventory_args = ("-i", "localhost,", "-c", "local")
    else:
        inventory_args = ("-i", os.path.join(out, "inventory.json"))
        with open(inventory_args[1], "w", encoding="utf-8") as handle:
            json.dump(inventory, handle)
    environment = dict(ANSIBLE_ROLES_PATH=os.path.join(out, "roles"), ANSIBLE_CACHE_PLUGIN="memory")
    environment.update(env)
    result = _ansible_playbook(out, plays, inventory_args, timeout=timeout, env=environment)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    return result


# Differential tests run a role's old tasks and its new action side by side in one play and compare what each
# wrote; these two build the tasks that write it, so every such test writes the same way.
def json_result_task(out, name, entry, expression):
    """A copy task that writes ``expression`` (a Jinja expression) as JSON to ``out/name/entry.json``."""
    return {"ansible.builtin.copy": {"content": "{{ %s | to_json }}" % expression, "mode": "0600",
                                     "dest": os.path.join(out, name, entry + ".json")}}


def guarded_block(out, name, entry, tasks):
    """A block of ``tasks`` whose rescue writes the failure's message to ``out/name/entry_error.json``, so a failing
    side is compared by its message rather than ending the play."""
    return {"block": tasks, "rescue": [json_result_task(out, name, entry + "_error", "ansible_failed_result.msg")]}
