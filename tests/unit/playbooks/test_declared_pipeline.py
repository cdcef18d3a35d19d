# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The operator playbooks are declared pipelines (issue 47): plays that call roles and say which steps run, with no
plain task, no `tags: [always]`, no private variable of a role and no `when:` decision; each operator playbook is at
most 60 lines. The sglang_rollout role's stages do the rest (tests/unit/roles/sglang_rollout/test_pipeline.py runs them)."""

from __future__ import annotations

import glob
import os
import re

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PLAYBOOKS = sorted(glob.glob(os.path.join(ROOT, "playbooks", "**", "*.yml"), recursive=True))
OPERATOR = ["site.yml", "restart.yml", "rollback.yml", "gateway.yml", "preflight.yml", "monitoring.yml"]
ROLE_CALLS = ("ansible.builtin.import_role", "ansible.builtin.include_role")


def _tasks(tasks):
    for task in tasks:
        if "block" in task:
            yield task
            for part in ("block", "rescue", "always"):
                yield from _tasks(task.get(part, []))
        else:
            yield task


@pytest.mark.parametrize("path", PLAYBOOKS, ids=lambda p: os.path.relpath(p, ROOT))
def test_a_playbook_only_calls_roles(path):
    with open(path) as handle:
        text = handle.read()
    assert not re.search(r"tags:\s*\[\s*always\s*\]", text), "the rollout's own tasks tag themselves"
    assert not re.search(r"\b__\w+", text), "no private variable of a role in a playbook"
    for play in yaml.safe_load(text):
        if "ansible.builtin.import_playbook" in play:
            continue
        for task in _tasks(play.get("tasks", []) + play.get("pre_tasks", []) + play.get("post_tasks", [])):
            assert any(key in task for key in ROLE_CALLS), "a plain task: %s" % task.get("name")
            assert "when" not in task, "a decision in the playbook: %s" % task.get("name")
            assert "block" not in task


@pytest.mark.parametrize("name", OPERATOR)
def test_an_operator_playbook_reads_in_one_screen(name):
    with open(os.path.join(ROOT, "playbooks", name)) as handle:
        assert len(handle.read().splitlines()) <= 60


def test_the_grep_counts_of_the_issue():
    """What the issue measured with grep over playbooks/: today 0, 0 and 0 (it was 21, 3 and 12)."""
    always = private = plain = 0
    for path in PLAYBOOKS:
        with open(path) as handle:
            text = handle.read()
        always += len(re.findall(r"tags:\s*\[\s*always\s*\]", text))
        private += len(re.findall(r"\b__\w+", text))
        for play in yaml.safe_load(text):
            plain += sum(1 for t in _tasks(play.get("tasks", [])) if not any(k in t for k in ROLE_CALLS))
    assert (always, private, plain) == (0, 0, 0)
