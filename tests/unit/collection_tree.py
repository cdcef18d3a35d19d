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


def run_playbook(tmp_path, plays, *args, timeout=300):
    """Write ``plays`` to ``tmp_path/play.yml`` and run ``ansible-playbook -v`` on localhost (connection local, this
    interpreter, the collection tree, a private ANSIBLE_HOME) with ``args`` added; the CompletedProcess."""
    playbook = tmp_path / "play.yml"
    playbook.write_text(json.dumps(plays))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="false", ANSIBLE_NOCOLOR="1",
               ANSIBLE_HOME=str(tmp_path / "home"))
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-v", "-i",
                           "localhost,", "-c", "local", "-e", "ansible_python_interpreter=" + sys.executable]
                          + list(args) + [str(playbook)],
                          capture_output=True, text=True, env=env, check=False, timeout=timeout)


def run_inventory_playbook(out, inventory, plays, timeout=600, **env):
    """Write ``inventory`` (a JSON inventory) and ``plays`` into the folder ``out`` and run ansible-playbook over
    that inventory (this interpreter, the collection tree, a private ANSIBLE_HOME under ``out``, ``env`` added to
    the environment); the CompletedProcess. A failed run fails the test with the end of its output."""
    inventory_file = os.path.join(out, "inventory.json")
    playbook = os.path.join(out, "play.yml")
    for path, content in ((inventory_file, inventory), (playbook, plays)):
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(content, handle)
    environment = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR="1",
                       ANSIBLE_HOME=os.path.join(out, "home"), ANSIBLE_LOCALHOST_WARNING="false")
    environment.update(env)
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory_file,
                             "-e", "ansible_python_interpreter=" + sys.executable, playbook],
                            capture_output=True, text=True, env=environment, check=False, timeout=timeout)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    return result
