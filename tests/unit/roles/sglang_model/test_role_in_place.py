# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""sglang_model on a host that already holds the revision, run by Ansible itself: the check publishes the revision
and the role ends there (ansible-core 2.21 and later), or a set_fact publishes it (2.20); either way the play that
follows sees the same variables, nothing changed and no weight was read."""

from __future__ import annotations

import json
import os

import pytest
from ansible.plugins.action import ActionBase

from ansible_collections.llmserve.sglang.tests.unit.collection_tree import run_playbook
from ansible_collections.llmserve.sglang.tests.unit.plugins.action.test_model_stage_action import (
    C1,
    needs_root,
    play,
    stage_task,
)
from ansible_collections.llmserve.sglang.tests.unit.plugins.modules.fake_hub import FakeHub

TASKS_AFTER_THE_CHECK = ("Publish the verified revision", "Fetch the revision, or read it into the page cache")


def _role_then_show(tmp_path, hub, store, prewarm):
    shown = tmp_path / "shown.json"
    settings = {"sglang_model_repo": "llmserve/tiny", "sglang_model_revision": C1, "sglang_model_dir": store,
                "sglang_model_python": hub.python, "sglang_model_group": "root", "sglang_model_prewarm": prewarm}
    plays = [{"hosts": "localhost", "gather_facts": False, "vars": settings,
              "tasks": [{"ansible.builtin.include_role": {"name": "llmserve.sglang.sglang_model"}}]},
             # a later play, as site.yml's change play: only host variables carry over
             {"hosts": "localhost", "gather_facts": False, "tasks": [{"ansible.builtin.copy": {
                 "dest": str(shown), "content": "{{ {'path': sglang_model_path, 'report': sglang_model_report, "
                                                "'resolved': sglang_model_resolved, "
                                                "'fact': ansible_facts['sglang_model_path'] | default('none')} "
                                                "| to_json }}"}}]}]
    result = run_playbook(tmp_path, plays)
    return result, (json.loads(shown.read_text()) if shown.exists() else None)


@needs_root
@pytest.mark.parametrize("prewarm", ["never", "auto"])
def test_a_host_that_holds_the_revision_runs_the_check_alone(store_dir, tmp_path, prewarm):
    hub = FakeHub(tmp_path, commit=C1, files={"config.json": "{}", "a.safetensors": {"size": 4096, "lfs": True}})
    store = os.path.join(store_dir, "models")
    rc, out, _data, _async_dir = play(tmp_path, [stage_task(hub, store, "a", group="root")])
    assert rc == 0, out
    calls = len(hub.calls())

    result, shown = _role_then_show(tmp_path, hub, store, prewarm)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-4000:]
    assert "changed=1" in out and "failed=0" in out  # the copy of the second play, nothing of the role
    path = os.path.join(store, "llmserve--tiny", C1)
    assert shown["path"] == path and shown["resolved"]["commit"] == C1
    assert shown["report"]["bytes_read"] == 0 and shown["report"]["files_hashed"] == 0
    assert shown["fact"] == "none"  # host variables, never facts: nothing for a fact cache to keep
    assert len(hub.calls()) == calls  # the hub was not asked
    ends = hasattr(ActionBase, "register_host_variables")
    if prewarm == "never" and ends:
        # the check published the revision; no other task of the role ran or was even skipped on the host
        for name in TASKS_AFTER_THE_CHECK:
            assert name not in out, name
    elif prewarm == "never":
        # ansible-core 2.20: a set_fact publishes, the include is skipped
        assert "Publish the verified revision" in out
    else:
        # the revision does not serve yet: the role goes on to read it into the page cache
        assert shown["report"]["prewarm"] != "not run", shown["report"]
        assert TASKS_AFTER_THE_CHECK[1] in out
