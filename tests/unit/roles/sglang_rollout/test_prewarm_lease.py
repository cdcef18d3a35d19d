# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The pre-warm under the per-host lock has a lease of its own (issue 45 #7): the sglang_rollout role's drain entry point
renews the lock with the lease of the phase prewarm right before it reads the weights, and the read stops after
sglang_rollout_prewarm_timeout, the bound that lease counts on. Run for real on localhost: rollout:begin takes the lock
(redirected into tmp_path with module_defaults), then rollout:drain as site.yml imports it (no gateways here)."""

from __future__ import annotations

import json
import os
import time

import pytest

from ansible_collections.llmserve.sglang.plugins.plugin_utils.rollout_lease import phase_lease
from ansible_collections.llmserve.sglang.tests.unit.collection_tree import run_playbook

LOCK = "llmserve.sglang.run_lock"
PREWARM_TASK = ("TASK [llmserve.sglang.sglang_server : Read the weights into the page cache before the host leaves "
                "rotation]")
RENEW_TASK = "TASK [llmserve.sglang.sglang_rollout : Renew the per-host deployment lock, with the lease of the phase prewarm]"
SETTINGS = {"sglang_rollout_lock_lease": 300, "sglang_rollout_prewarm_timeout": 1000}


@pytest.fixture
def model_dir(tmp_path):
    path = tmp_path / "model"
    path.mkdir()
    (path / "model.safetensors").write_bytes(os.urandom(64 * 1024))
    return str(path)


def _run(tmp_path, extra, between=(), module_defaults=None, timeout=180):
    """begin (phase drain), ``between``, then drain (phase driver) on localhost; (rc, prewarm result, lock record,
    output)."""
    locks = tmp_path / "locks"
    locks.mkdir(mode=0o700, exist_ok=True)
    defaults = {LOCK: {"path": str(locks / "sglang.lock")}}
    defaults.update(module_defaults or {})
    result = tmp_path / "result.json"
    play = [{"hosts": "localhost", "gather_facts": False, "module_defaults": defaults, "tasks": [
        {"name": "Take the lock", "ansible.builtin.import_role": {"name": "llmserve.sglang.sglang_rollout",
                                                                  "tasks_from": "begin"},
         "vars": {"sglang_rollout_phase": "drain"}},
    ] + list(between) + [
        {"name": "Pre-warm and drain", "ansible.builtin.import_role": {"name": "llmserve.sglang.sglang_rollout",
                                                                       "tasks_from": "drain"},
         "vars": {"sglang_rollout_phase": "driver"}},
        {"name": "Keep the result", "ansible.builtin.copy": {
            "dest": str(result), "content": "{{ sglang_server_prewarm_result | default(None) | to_json }}"}}]}]
    (tmp_path / "vars.json").write_text(json.dumps(dict(SETTINGS, **extra)))
    proc = run_playbook(tmp_path, play, "-e", "@" + str(tmp_path / "vars.json"), timeout=timeout)
    prewarm = json.loads(result.read_text()) if result.exists() else None
    with open(locks / "sglang.lock" / "owner.json") as handle:
        record = json.load(handle)
    return proc.returncode, prewarm, record, proc.stdout + proc.stderr


def _lease(record):
    (holder,) = record["holders"]
    return holder["lease"]


def test_the_lock_is_renewed_with_the_prewarm_lease_right_before_the_read(tmp_path, model_dir):
    rc, prewarm, record, out = _run(tmp_path, {"sglang_rollout_restarts": True, "sglang_server_model_path": model_dir,
                                               "sglang_server_prewarm": "always"})
    assert rc == 0, out
    assert prewarm["warmed"] is True, prewarm
    # the read, then the drain phase: more than the lease begin took for the drain phase
    assert _lease(record) == phase_lease("prewarm", SETTINGS) == 1000 + phase_lease("drain", SETTINGS)
    assert RENEW_TASK in out and PREWARM_TASK in out, out
    assert out.index(RENEW_TASK) < out.index(PREWARM_TASK), "renewed before the read, not after"


def test_a_run_that_lost_its_lock_stops_before_the_read(tmp_path, model_dir):
    # another run took the lock over meanwhile (this run's lease ran out)
    take_over = [{"name": "Give the lock up", LOCK: {"owner": "{{ hostvars['localhost']['sglang_rollout_run_id'] }}",
                                                     "state": "released"}},
                 {"name": "Another run takes it", LOCK: {"owner": "another-run", "lease": 600}}]
    rc, prewarm, record, out = _run(tmp_path, {"sglang_rollout_restarts": True, "sglang_server_model_path": model_dir,
                                               "sglang_server_prewarm": "always"}, between=take_over)
    assert rc != 0, out
    assert "no longer holds the lock" in out, out
    assert PREWARM_TASK not in out and prewarm is None, "nothing read once the lock is lost"
    assert record["holders"][0]["owner"] == "another-run"


@pytest.mark.parametrize("extra", [
    {"sglang_rollout_restarts": False},
    {"sglang_rollout_restarts": True, "nvidia_driver_plan": {"apply": "reboot"}},
], ids=["no-restart", "reboot-planned"])
def test_no_prewarm_lease_where_nothing_is_read(tmp_path, model_dir, extra):
    variables = dict({"sglang_server_model_path": model_dir, "sglang_server_prewarm": "always"}, **extra)
    rc, prewarm, record, out = _run(tmp_path, variables)
    assert rc == 0, out
    assert prewarm is None or prewarm.get("skipped") is True, prewarm
    assert _lease(record) == phase_lease("drain", SETTINGS), "the lease begin took for the drain phase"


def _release(fifo, seconds=30):
    """Let a module blocked opening ``fifo`` for reading go on (it then reads nothing, and its small model)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            return
        except OSError:  # no reader (yet)
            time.sleep(0.2)


def test_a_prewarm_that_runs_out_of_time_is_left_and_the_run_goes_on(tmp_path, model_dir):
    # the module blocks on a MemAvailable source that never answers: only the timeout ends the task
    fifo = str(tmp_path / "meminfo")
    os.mkfifo(fifo)
    try:
        rc, prewarm, record, out = _run(
            tmp_path, {"sglang_rollout_restarts": True, "sglang_server_model_path": model_dir,
                       "sglang_server_prewarm": "always", "sglang_rollout_prewarm_timeout": 3},
            module_defaults={"llmserve.sglang.model_prewarm": {"meminfo": fifo}}, timeout=90)
    finally:
        _release(fifo)
    assert rc == 0, out
    assert "Timed out after 3 second(s)" in out and "rescued=1" in out, out
    assert "took longer than sglang_rollout_prewarm_timeout (3 s)" in out, out
    assert prewarm["failed"] is True and "timedout" in prewarm
    assert _lease(record) == phase_lease("prewarm", dict(SETTINGS, sglang_rollout_prewarm_timeout=3))


def test_any_other_prewarm_failure_still_stops_the_host(tmp_path, model_dir):
    rc, _prewarm, _record, out = _run(tmp_path, {"sglang_rollout_restarts": True, "sglang_server_model_path": model_dir,
                                                 "sglang_server_prewarm": "auto",
                                                 "sglang_server_prewarm_margin": "plenty"})
    assert rc != 0, out
    assert "sglang_model_prewarm_margin" in out, out
    assert "Go on without the rest of the pre-warm" not in out, out
