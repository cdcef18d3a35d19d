# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The steps a playbook declares for the rollout: every problem at once, each naming the step, the key and the rule."""

from __future__ import annotations

import pytest

from ansible_collections.llmserve.sglang.plugins.plugin_utils.rollout_steps import step_problems


def test_the_playbooks_steps_are_fine():
    assert step_problems([
        {"name": "Plan", "role": "llmserve.sglang.sglang_server", "entry": "plan", "tags": ["sglang"],
         "vars": {"sglang_server_p2p_ok": None}},
        {"role": "llmserve.sglang.nvidia_driver", "phase": "driver"},
        {"role": "local_role", "phase": "sglang", "lock": "deploy"},
    ]) == []
    assert step_problems([]) == []
    # site.yml's change play: the driver, then the server, which drains the host itself
    assert step_problems([
        {"role": "llmserve.sglang.nvidia_driver", "phase": "driver"},
        {"role": "llmserve.sglang.sglang_server", "phase": "sglang", "lock": "deploy", "drain": "late"},
    ]) == []


@pytest.mark.parametrize("steps, message", [
    ("iommu_preflight", "sglang_rollout_steps must be a list of steps"),
    ([None], "sglang_rollout_steps[0] must be a dict"),
    ([{}], "sglang_rollout_steps[0].role must be a role name"),
    ([{"role": "../etc"}], "sglang_rollout_steps[0].role must be a role name"),
    ([{"role": "llmserve.sglang.sglang_server\n"}], "sglang_rollout_steps[0].role must be a role name"),
    ([{"role": "r", "entry": "main\n"}], "sglang_rollout_steps[0].entry must be the name of an entry point"),
    ([{"role": "r", "entry": "plan\x1b[2J"}], "sglang_rollout_steps[0].entry must be the name of an entry point"),
    ([{"role": "r", "entry": "../x"}], "sglang_rollout_steps[0].entry must be the name of an entry point"),
    ([{"role": "r", "vars": "x=1"}], "sglang_rollout_steps[0].vars must be a dict"),
    ([{"role": "r", "tags": "sglang"}], "sglang_rollout_steps[0].tags must be a list of tag names"),
    ([{"role": "r", "tags": [""]}], "sglang_rollout_steps[0].tags must be a list of tag names"),
    ([{"role": "r", "phase": "later"}], "sglang_rollout_steps[0].phase must be one of the lease phases"),
    ([{"role": "r", "lock": "everything"}], "sglang_rollout_steps[0].lock must be one of the lease phases"),
    ([{"role": "r"}, {"role": "r", "when": "x", "loop": []}], "sglang_rollout_steps[1] has unknown keys loop, when"),
    ([{"role": "llmserve.sglang.sglang_server", "drain": "early"}], "sglang_rollout_steps[0].drain must be 'late'"),
    ([{"role": "llmserve.sglang.sglang_server", "drain": True}], "sglang_rollout_steps[0].drain must be 'late'"),
    # a role that never calls the hook would be taken down while the gateways still route to it
    ([{"role": "local_role", "drain": "late"}], "sglang_rollout_steps[0].drain: late needs a role entry point"),
    ([{"role": "llmserve.sglang.sglang_server", "entry": "restart", "drain": "late"}],
     "needs a role entry point that drains the host itself right before it disrupts it "
     "(llmserve.sglang.sglang_server:main), got llmserve.sglang.sglang_server:restart"),
    # a step before it whose disruption the rollout cannot read: it would run with the host in rotation
    ([{"role": "local_role"}, {"role": "llmserve.sglang.sglang_server", "drain": "late"}],
     "sglang_rollout_steps[1].drain: late may only follow steps of llmserve.sglang.nvidia_driver"),
])
def test_each_problem_names_the_step_and_the_rule(steps, message):
    problems = step_problems(steps)
    assert len(problems) == 1 and message in problems[0], problems


def test_one_step_drains_late_at_most():
    step = {"role": "llmserve.sglang.sglang_server", "drain": "late"}
    assert step_problems([step, dict(step)]) == [
        # the second one follows a step the rollout cannot read
        "sglang_rollout_steps[1].drain: late may only follow steps of llmserve.sglang.nvidia_driver (the rollout "
        "reads from their plan whether they disrupt the host); it follows llmserve.sglang.sglang_server.",
        "sglang_rollout_steps: only one step may drain the host itself (drain: late), got 2 (steps 0, 1).",
    ]


def test_every_problem_at_once():
    problems = step_problems([{"role": 1, "phase": "x"}, {"role": "r", "vars": []}])
    assert len(problems) == 3
