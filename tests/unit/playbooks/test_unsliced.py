# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The playbooks that coordinate the fleet refuse to run as one slice of an AWX sliced job, before anything else.

AWX starts a sliced job template as a workflow job named after the template, one job per slice, each on every n-th
host; the slice's extra vars carry no slice number (awx/main/models: JobTemplate.create_unified_job,
UnifiedJob.awx_meta_vars, Inventory.get_sliced_hosts). The real ansible-playbook runs each playbook here with the extra
vars AWX would give a slice, and with those of an unsliced job, against an inventory without hosts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import yaml
from ansible_collections.llmserve.sglang.tests.unit.collection_tree import collections_path

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
COORDINATING = ("site", "restart", "rollback", "gateway")


def _run(tmp_path, playbook, extra, *args):
    """The playbook against an inventory of two hosts that no later play targets (group other): the guard play runs
    on the run's hosts (hosts: all, once), the plays after it find none of theirs. Connection local: nothing connects
    before the guard, which needs no connection."""
    inventory = {"all": {"vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
                         "children": {"other": {"hosts": {"host-a": {}, "host-b": {}}},
                                      "sglang_servers": {"hosts": {}}}}}
    (tmp_path / "inventory.json").write_text(json.dumps(inventory))
    (tmp_path / "extra.json").write_text(json.dumps(extra))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_HOME=str(tmp_path / "home"), ANSIBLE_LOCALHOST_WARNING="false")
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                           "-i", str(tmp_path / "inventory.json"), os.path.join(ROOT, "playbooks", playbook + ".yml"),
                           "-e", "@" + str(tmp_path / "extra.json"), "--tags", "nothing-else"] + list(args),
                          capture_output=True, text=True, env=env, check=False, timeout=300)


# what AWX gives a slice job of the template "GPU fleet: site" (awx_* and the older tower_* names)
SLICE = {"awx_job_id": 4711, "awx_job_template_name": "GPU fleet: site", "awx_workflow_job_id": 4710,
         "awx_workflow_job_name": "GPU fleet: site", "awx_job_launch_type": "workflow"}
SLICE_TOWER = {"tower_job_id": 4711, "tower_job_template_name": "site", "tower_workflow_job_name": "site"}


@pytest.mark.parametrize("playbook", COORDINATING)
def test_a_slice_is_refused_first(tmp_path, playbook):
    out = _run(tmp_path, playbook, SLICE)
    assert out.returncode != 0, out.stdout[-2000:]
    assert "This run looks like one slice of a sliced AWX job" in out.stdout
    assert "(GPU fleet: site)" in out.stdout and "job slice count to 1" in out.stdout
    # the refusal is in the first play, and the run ends with it: nothing else ran
    plays = [line for line in out.stdout.splitlines() if line.startswith("PLAY [")]
    assert len(plays) == 1 and plays[0].startswith("PLAY [Refuse to run as a slice of a sliced AWX job]"), plays
    ran = [line for line in out.stdout.splitlines() if line.startswith("TASK [")]
    assert ran[-1].startswith("TASK [llmserve.sglang.sglang_rollout : Refuse a sliced run of a playbook"), ran
    recap = out.stdout.split("PLAY RECAP")[1]
    assert re.search(r"host-a\s+:\s+ok=\d+\s+changed=0\s+unreachable=0\s+failed=1", recap), recap


def test_a_slice_with_a_limit_is_refused_too(tmp_path):
    """AWX jobs often carry a limit: localhost is then not in the run, the run's hosts are."""
    out = _run(tmp_path, "site", SLICE, "--limit", "host-b")
    assert out.returncode != 0 and "This run looks like one slice of a sliced AWX job" in out.stdout
    # once, and the whole run stops (any_errors_fatal)
    assert re.findall(r"^fatal: \[([^]]+)\]", out.stdout, re.M) == ["host-b"]
    assert "PLAY [Fetch, verify and stage" not in out.stdout


def test_the_older_tower_names_count_too(tmp_path):
    out = _run(tmp_path, "site", SLICE_TOWER)
    assert out.returncode != 0 and "(site)" in out.stdout


@pytest.mark.parametrize("extra", [
    {},  # ansible-playbook by hand
    {"awx_job_id": 12, "awx_job_template_name": "site", "awx_job_launch_type": "manual"},  # an unsliced AWX job
    # a job in a workflow of another name (a user's workflow)
    {"awx_job_id": 12, "awx_job_template_name": "site", "awx_workflow_job_name": "nightly", "awx_workflow_job_id": 9},
    dict(SLICE, sglang_rollout_allow_sliced=True),  # the operator's override
])
def test_unsliced_runs_pass_the_guard(tmp_path, extra):
    out = _run(tmp_path, "restart", extra)
    assert "This run looks like one slice" not in out.stdout
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]


def test_the_audit_may_be_sliced_and_every_coordinating_playbook_starts_with_the_guard():
    assert "unsliced" not in open(os.path.join(ROOT, "playbooks", "preflight.yml"), encoding="utf-8").read()
    for name in COORDINATING:
        first = yaml.safe_load(open(os.path.join(ROOT, "playbooks", name + ".yml"), encoding="utf-8"))[0]
        assert first["ansible.builtin.import_playbook"] == "plays/unsliced.yml", name
