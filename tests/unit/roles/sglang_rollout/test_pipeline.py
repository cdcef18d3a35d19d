# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The sglang_rollout role's main entry point runs the steps a playbook declares (issue 47): run for real on localhost with
recording stand-in roles as the steps and the per-host lock redirected into tmp_path (module_defaults). What it must
do: the lock first, each step after a renewal with the lease of its phase, a step's variables for that step only, the
run's lock handed to a step with `lock`, the lock taken again after a step that rebooted the host (a reboot empties
/run), tags that select steps while the rollout's own tasks always run, bad steps refused before the lock is taken,
and the lock given back whatever happens."""

from __future__ import annotations

import json
import os
import pytest
import yaml

from ansible_collections.llmserve.sglang.plugins.plugin_utils.rollout_lease import phase_lease
from ansible_collections.llmserve.sglang.tests.unit.collection_tree import run_playbook

LOCK = "llmserve.sglang.run_lock"
SETTINGS = {"sglang_rollout_lock_lease": 300}
# a step that writes what it saw: its name, a variable of its own, the lock handed to it and the lock's current lease
RECORDER = """
- name: Record this step
  ansible.builtin.shell:
    cmd: >-
      printf '%s\\n' '{{ {"step": recorder_name | default("?"), "x": recorder_x | default(None),
      "lock_owner": recorder_lock_owner | default(None), "lock_lease": recorder_lock_lease | default(None)}
      | to_json }}' >> {{ journal }};
      printf '%s\\n' "$(cat {{ locks }}/sglang.lock/owner.json 2>/dev/null || echo null)" >> {{ journal }}.locks
  changed_when: false
- name: A task the recorder tags for itself
  ansible.builtin.shell: "printf '%s\\n' '{{ recorder_name | default(\\"?\\") }}:inner' >> {{ journal }}.inner"
  changed_when: false
  tags: [inner]
"""
# a stand-in for the driver role's reboot: /run (the lock) is gone afterwards
REBOOTER = """
- name: Reboot (the lock directory is emptied like /run)
  ansible.builtin.file:
    path: "{{ locks }}/sglang.lock"
    state: absent
"""


@pytest.fixture
def work(tmp_path):
    # names no role of the collection has: a step's role name is looked up in the collection first
    for name, text in (("recorder", RECORDER), ("rebooter", REBOOTER)):
        tasks = tmp_path / "roles" / name / "tasks"
        tasks.mkdir(parents=True)
        (tasks / "main.yml").write_text(text)
    (tmp_path / "locks").mkdir(mode=0o700)
    return tmp_path


def _run(work, stage, steps, *args, extra=None):
    variables = dict(SETTINGS, journal=str(work / "journal"), locks=str(work / "locks"),
                     sglang_rollout_report_dir=str(work / "reports"), **(extra or {}))
    (work / "vars.json").write_text(json.dumps(variables))
    play = [{"hosts": "localhost", "gather_facts": False,
             "module_defaults": {LOCK: {"path": str(work / "locks" / "sglang.lock")}},
             "tasks": [{"name": "The rollout", "ansible.builtin.import_role": {"name": "llmserve.sglang.sglang_rollout"},
                        "vars": {"sglang_rollout_stage": stage, "sglang_rollout_steps": steps}}]}]
    proc = run_playbook(work, play, "-e", "@" + str(work / "vars.json"), *args)
    return proc.returncode, proc.stdout + proc.stderr


def _journal(work, suffix=""):
    path = work / ("journal" + suffix)
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _holders(work):
    """The lock's holders now: none when the last holder released it (the module removes the lock then)."""
    record = work / "locks" / "sglang.lock" / "owner.json"
    return json.loads(record.read_text())["holders"] if record.exists() else []


def test_each_step_runs_after_a_renewal_with_its_phase_lease_and_the_lock_is_given_back(work):
    steps = [{"name": "first", "role": "recorder", "phase": "driver", "vars": {"recorder_name": "first"}},
             {"name": "second", "role": "recorder", "phase": "sglang", "lock": "deploy",
              "vars": {"recorder_name": "second", "recorder_x": "{{ 40 + 2 }}"}}]
    rc, out = _run(work, "restart", steps)
    assert rc == 0, out
    first, second = _journal(work)
    # the step's variables, templated, for that step only
    assert (first["step"], first["x"]) == ("first", None)
    assert (second["step"], second["x"]) == ("second", 42)
    # `lock`: the role gets the run's lock and the lease of that phase to renew it itself
    assert first["lock_owner"] is None and first["lock_lease"] is None
    assert second["lock_owner"].startswith("run-") and second["lock_lease"] == phase_lease("deploy", SETTINGS)
    # the lock each step ran under: renewed with the lease of the step's phase right before it
    lock_first, lock_second = _journal(work, ".locks")
    assert [h["lease"] for h in lock_first["holders"]] == [phase_lease("driver", SETTINGS)]
    assert [h["lease"] for h in lock_second["holders"]] == [phase_lease("sglang", SETTINGS)]
    assert lock_first["holders"][0]["owner"] == second["lock_owner"], "one owner: the run"
    assert _holders(work) == [], "given back at the end"


def test_a_step_after_a_reboot_takes_the_lock_again(work):
    steps = [{"role": "rebooter", "phase": "driver"},
             {"role": "recorder", "phase": "sglang", "vars": {"recorder_name": "after"}}]
    # the stand-in plays the driver role, whose planned reboot the rollout knows of
    reboot = {"__sglang_rollout_reboot_roles": ["rebooter"]}
    rc, out = _run(work, "restart", steps, extra=dict(reboot, nvidia_driver_plan={"apply": "reboot"}))
    assert rc == 0, out
    (lock,) = _journal(work, ".locks")
    assert [h["lease"] for h in lock["holders"]] == [phase_lease("sglang", SETTINGS)], "taken again"
    # without a planned reboot the lock that vanished is not taken again: the renewal fails, the step never runs
    (work / "journal.locks").unlink()
    rc, out = _run(work, "restart", steps, extra=dict(reboot, nvidia_driver_plan={"apply": "none"}))
    assert rc != 0, out
    assert not (work / "journal.locks").exists(), out


def test_tags_select_steps_and_the_rollout_always_runs(work):
    steps = [{"role": "recorder", "tags": ["a"], "vars": {"recorder_name": "a"}},
             {"role": "recorder", "tags": ["b", "inner"], "vars": {"recorder_name": "b"}}]
    rc, out = _run(work, "restart", steps, "--tags", "a")
    assert rc == 0, out
    assert [s["step"] for s in _journal(work)] == ["a"], out
    assert _holders(work) == [], "the lock was taken and given back under --tags a"
    # a step's tags reach its tasks: the role's own tag selects the step and its task within the step
    (work / "journal.inner").unlink()
    rc, out = _run(work, "restart", steps, "--tags", "inner")
    assert rc == 0, out
    assert (work / "journal.inner").read_text().splitlines() == ["b:inner"]


@pytest.mark.parametrize("steps, message", [
    ([{"name": "no role"}], "sglang_rollout_steps[0].role must be a role name"),
    ([{"role": "recorder", "phase": "later"}], "sglang_rollout_steps[0].phase must be one of the lease phases"),
    ([{"role": "recorder"}, {"role": "recorder", "when": "x"}], "sglang_rollout_steps[1] has unknown keys when"),
    ([{"role": "recorder", "vars": ["x"]}], "sglang_rollout_steps[0].vars must be a dict"),
])
def test_bad_steps_are_refused_before_the_lock_is_taken(work, steps, message):
    rc, out = _run(work, "restart", steps)
    assert rc != 0 and message in out, out
    assert not (work / "locks" / "sglang.lock").exists(), "nothing taken"
    assert not (work / "journal").exists()


def test_an_unknown_stage_is_refused(work):
    rc, out = _run(work, "deploy", [])
    assert rc != 0 and "sglang_rollout_stage" in out and "plan, order, change, restart" in out, out
    assert not (work / "locks" / "sglang.lock").exists(), "nothing taken"
    # the argument spec refuses it: its choices are exactly the stages the role has
    root = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles", "sglang_rollout")
    with open(os.path.join(root, "meta", "argument_specs.yml")) as handle:
        choices = yaml.safe_load(handle)["argument_specs"]["main"]["options"]["sglang_rollout_stage"]["choices"]
    with open(os.path.join(root, "vars", "main.yml")) as handle:
        assert set(choices) == set(yaml.safe_load(handle)["__sglang_rollout_stages"])


def test_a_failing_step_still_gives_the_lock_back(work):
    (work / "roles" / "broken" / "tasks").mkdir(parents=True)
    (work / "roles" / "broken" / "tasks" / "main.yml").write_text(
        "- name: Fail\n  ansible.builtin.fail: {msg: the step failed}\n")
    rc, out = _run(work, "rollback", [{"role": "broken"}, {"role": "recorder"}])
    assert rc != 0 and "the step failed" in out
    assert not (work / "journal").exists(), "the steps after a failed one do not run"
    assert _holders(work) == [], out


def test_the_audit_holds_the_lock_shared(work):
    rc, out = _run(work, "audit", [{"role": "recorder", "vars": {"recorder_name": "audit"}}],
                   extra={"sglang_rollout_audit_probe": False})
    assert rc == 0, out
    (lock,) = _journal(work, ".locks")
    assert lock["mode"] == "shared" and [h["lease"] for h in lock["holders"]] == [phase_lease("audit", SETTINGS)]
    assert _holders(work) == []


def test_the_lease_follows_the_budget_a_step_role_publishes(work):
    """Each role owns its time budget: before the lock, the steps' roles publish theirs (entry point budget), so an
    inventory's longer readiness wait lengthens the lease the lock is taken with (the rollback's: stop + ready)."""
    steps = [{"role": "llmserve.sglang.sglang_server", "entry": "budget"},
             {"role": "recorder", "vars": {"recorder_name": "after"}}]
    for ready in (900, 5000):
        (work / "journal.locks").unlink(missing_ok=True)
        rc, out = _run(work, "rollback", steps, extra={"sglang_server_ready_timeout": ready})
        assert rc == 0, out
        (lock,) = _journal(work, ".locks")
        expected = phase_lease("rollback", dict(SETTINGS, sglang_server_ready_timeout=ready))
        assert [h["lease"] for h in lock["holders"]] == [expected]
    assert expected == phase_lease("rollback", SETTINGS) + 5000 - 900
