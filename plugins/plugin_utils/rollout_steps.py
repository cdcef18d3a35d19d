# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The steps an operator playbook declares for the sglang_rollout role (``sglang_rollout_steps``): what a step may say, and
the problems of a list of them, each naming the step, the key and the rule, all at once and before anything runs."""

from __future__ import annotations

import re

from ansible_collections.llmserve.sglang.plugins.plugin_utils.rollout_lease import PHASES

# name: shown in the output; role: the role's name (FQCN); entry: its entry point (tasks_from, default main); vars:
# the step's variables; tags: the tags that select it (and reach its tasks); phase: the lease renewed before it;
# lock: the phase whose lease the role gets (ROLE_lock_owner, ROLE_lock_lease) to renew the lock itself;
# drain: "late" when the step's role takes the host out of the gateways itself, right before its disruptive part
STEP_KEYS = ("name", "role", "entry", "vars", "tags", "phase", "lock", "drain")
# The role entry points that call the rollout's drain hook (ROLE_drain_hook) right before they take the server down or
# load new weights into it, and the roles that may run before such a step: the rollout knows from their plan whether
# they disrupt the host (nvidia_driver_plan.apply) and then drains before the steps as usual.
LATE_DRAIN_STEPS = (("llmserve.sglang.sglang_server", "main"),)
LATE_DRAIN_AFTER = ("llmserve.sglang.nvidia_driver",)
# matched whole (fullmatch): "$" alone would let a trailing newline through
_ROLE_NAME = re.compile(r"([a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*\.)?[a-z_][a-z0-9_]*")
_ENTRY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def step_problems(steps):
    """Return the problems of ``steps`` (a list of dicts), an empty list when there are none."""
    if not isinstance(steps, (list, tuple)):
        return ["sglang_rollout_steps must be a list of steps (dicts with %s), got %s."
                % (", ".join(STEP_KEYS), type(steps).__name__)]
    problems = []
    for index, step in enumerate(steps):
        where = "sglang_rollout_steps[%d]" % index
        if not isinstance(step, dict):
            problems.append("%s must be a dict with %s, got %s." % (where, ", ".join(STEP_KEYS), type(step).__name__))
            continue
        unknown = sorted(str(key) for key in step if key not in STEP_KEYS)
        if unknown:
            problems.append("%s has unknown keys %s (a step takes %s)." % (where, ", ".join(unknown), ", ".join(STEP_KEYS)))
        role = step.get("role")
        if not isinstance(role, str) or not _ROLE_NAME.fullmatch(role):
            problems.append("%s.role must be a role name (llmserve.sglang.sglang_server), got %r." % (where, role))
        entry = step.get("entry", "main")
        if not isinstance(entry, str) or not _ENTRY.fullmatch(entry):
            problems.append("%s.entry must be the name of an entry point of the role (tasks_from), got %r." % (where, entry))
        if not isinstance(step.get("vars", {}), dict):
            problems.append("%s.vars must be a dict of the step's variables, got %s."
                            % (where, type(step.get("vars")).__name__))
        tags = step.get("tags", [])
        if not isinstance(tags, (list, tuple)) or not all(isinstance(tag, str) and tag for tag in tags):
            problems.append("%s.tags must be a list of tag names, got %r." % (where, tags))
        for key in ("phase", "lock"):
            if key in step and step[key] not in PHASES:
                problems.append("%s.%s must be one of the lease phases %s, got %r."
                                % (where, key, ", ".join(sorted(PHASES)), step[key]))
    problems.extend(_late_drain_problems(steps))
    return problems


def _late_drain_problems(steps):
    """A step with ``drain: late`` leaves the host in the gateways until its own disruptive part: only a role that
    drains there may say so, once, and only after steps whose disruption the rollout can read from their plan."""
    problems = []
    late = [index for index, step in enumerate(steps) if isinstance(step, dict) and "drain" in step]
    for index in late:
        step = steps[index]
        where = "sglang_rollout_steps[%d]" % index
        if step["drain"] != "late":
            problems.append("%s.drain must be 'late' (or left out: the host is drained before the steps), got %r."
                            % (where, step["drain"]))
            continue
        if (step.get("role"), step.get("entry", "main")) not in LATE_DRAIN_STEPS:
            problems.append("%s.drain: late needs a role entry point that drains the host itself right before it "
                            "disrupts it (%s), got %s:%s." % (
                                where, ", ".join("%s:%s" % pair for pair in LATE_DRAIN_STEPS),
                                step.get("role"), step.get("entry", "main")))
        before = [other.get("role") for other in steps[:index] if isinstance(other, dict)]
        unknown = sorted(set(str(role) for role in before if role not in LATE_DRAIN_AFTER))
        if unknown:
            problems.append("%s.drain: late may only follow steps of %s (the rollout reads from their plan whether "
                            "they disrupt the host); it follows %s." % (where, ", ".join(LATE_DRAIN_AFTER),
                                                                        ", ".join(unknown)))
    if len(late) > 1:
        problems.append("sglang_rollout_steps: only one step may drain the host itself (drain: late), got %d "
                        "(steps %s)." % (len(late), ", ".join(str(index) for index in late)))
    return problems
