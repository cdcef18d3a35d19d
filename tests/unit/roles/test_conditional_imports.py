# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A conditional ``import_tasks`` still runs each imported task, as skipped, and a skipped task with ``register``
overwrites the variable with its skip result: a later ``is defined`` or ``.key`` then reads that instead of a real
result (the sglang_server rollback entry point once read ``.config`` of a skipped render). So no task file of a role
imports, under a ``when``, a file that registers a variable the rest of the role reads; such a file is included
instead (a variable read only inside the imported file is skipped with it)."""

from __future__ import annotations

import glob
import os

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
IMPORT = ("ansible.builtin.import_tasks", "import_tasks")


def _tasks(path):
    with open(path) as handle:
        return yaml.safe_load(handle) or []


def _walk(tasks):
    for task in tasks:
        if not isinstance(task, dict):
            continue
        yield task
        for key in ("block", "rescue", "always"):
            yield from _walk(task.get(key) or [])


def _registers(path, seen=()):
    """The variables the tasks of ``path`` (and of the files it imports) register, and those files."""
    names = []
    files = [path]
    for task in _walk(_tasks(path)):
        if "register" in task:
            names.append(task["register"])
        for key in IMPORT:
            if key in task and path not in seen:
                imported = task[key] if isinstance(task[key], str) else task[key].get("file")
                more, more_files = _registers(os.path.join(os.path.dirname(path), imported), seen + (path,))
                names.extend(more)
                files.extend(more_files)
    return names, files


def _read_elsewhere(role_dir, name, files):
    """The files of the role, outside ``files``, that name the variable ``name``."""
    readers = []
    for folder, _dirs, names in os.walk(role_dir):
        for file_name in names:
            path = os.path.join(folder, file_name)
            if os.path.abspath(path) in [os.path.abspath(f) for f in files]:
                continue
            with open(path, errors="replace") as handle:
                if name in handle.read():
                    readers.append(os.path.relpath(path, ROOT))
    return readers


def _conditional_imports():
    found = []
    for path in sorted(glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml"))):
        for task in _walk(_tasks(path)):
            for key in IMPORT:
                if key in task and "when" in task:
                    imported = task[key] if isinstance(task[key], str) else task[key].get("file")
                    found.append((os.path.relpath(path, ROOT), imported))
    return found


def test_the_rule_finds_registering_files():
    # the rule is worth something only if it sees a register: validate.yml registers the render
    validate = os.path.join(ROOT, "roles", "sglang_server", "tasks", "validate.yml")
    names, files = _registers(validate)
    assert "__sglang_server_rendered" in names
    assert _read_elsewhere(os.path.join(ROOT, "roles", "sglang_server"), "__sglang_server_rendered", files)


@pytest.mark.parametrize("path,imported", _conditional_imports() or [("none", None)])
def test_no_conditional_import_registers(path, imported):
    if imported is None:
        return
    target = os.path.join(ROOT, os.path.dirname(path), imported)
    names, files = _registers(target)
    role_dir = os.path.join(ROOT, *path.split("/")[:2])
    read = dict((name, _read_elsewhere(role_dir, name, files)) for name in names)
    assert not any(read.values()), "%s imports %s under a when; the rest of the role reads what it registers (%s): " \
        "include it instead" % (path, imported, read)
