"""run_lock: one run at a time per host; a second run waits, then fails naming the holder."""

import json
import os
import subprocess
import sys
import time

import pytest

from ansible_collections.llmserve.sglang.plugins.modules import run_lock

MODULE = run_lock.__file__


def warnings(result):
    """Warning texts of a module result (ansible-core 2.19+ wraps each in a WarningSummary)."""
    return [w["event"]["msg"] if isinstance(w, dict) else w for w in result.get("warnings", [])]


def run(args, timeout=30):
    """Run the module for real in a subprocess, as Ansible would."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, MODULE], input=json.dumps({"ANSIBLE_MODULE_ARGS": args}),
                          capture_output=True, text=True, env=env, timeout=timeout, check=False)
    return json.loads(proc.stdout)


@pytest.fixture
def lock(tmp_path):
    return str(tmp_path / "llmserve.lock")


def test_acquire_release_cycle(lock):
    first = run({"path": lock, "owner": "run-a"})
    assert not first.get("failed") and first["changed"] is False
    assert json.load(open(os.path.join(lock, "owner.json")))["owner"] == "run-a"
    again = run({"path": lock, "owner": "run-a", "wait": 0})
    assert not again.get("failed"), "the same run may take its own lock again"
    released = run({"path": lock, "owner": "run-a", "state": "released"})
    assert not released.get("failed") and not os.path.exists(lock)


def test_second_run_fails_with_holder_named(lock):
    run({"path": lock, "owner": "awx-101"})
    start = time.monotonic()
    other = run({"path": lock, "owner": "awx-102", "wait": 1.5, "interval": 0.2})
    waited = time.monotonic() - start
    assert other["failed"] is True
    assert "another run holds the lock" in other["msg"] and "awx-101" in other["msg"]
    assert 1.5 <= waited < 10
    assert os.path.isdir(lock), "the holder's lock must stay"


def test_second_run_waits_for_release(lock, tmp_path):
    run({"path": lock, "owner": "first"})
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    waiter = subprocess.Popen([sys.executable, MODULE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    waiter.stdin.write(json.dumps({"ANSIBLE_MODULE_ARGS": {"path": lock, "owner": "second", "wait": 20,
                                                           "interval": 0.1}}))
    waiter.stdin.close()
    time.sleep(1.0)
    assert waiter.poll() is None, "the second run must wait while the first holds the lock"
    run({"path": lock, "owner": "first", "state": "released"})
    out = json.loads(waiter.stdout.read())
    waiter.wait(timeout=10)
    # how long it waited depends on how fast the subprocess started; that it waited at all is the point
    assert not out.get("failed") and out["waited"] > 0
    assert json.load(open(os.path.join(lock, "owner.json")))["owner"] == "second"


def test_release_of_someone_elses_lock_leaves_it(lock):
    run({"path": lock, "owner": "holder"})
    out = run({"path": lock, "owner": "intruder", "state": "released"})
    assert os.path.isdir(lock)
    assert any("held by run holder" in w for w in warnings(out))


def test_stale_lock_is_taken_over(lock):
    os.mkdir(lock)
    with open(os.path.join(lock, "owner.json"), "w") as handle:
        json.dump({"owner": "dead-run", "since": time.time() - 7200}, handle)
    out = run({"path": lock, "owner": "new", "wait": 0, "stale_after": 3600})
    assert not out.get("failed") and out["taken_over"] is True
    assert any("dead-run" in w for w in warnings(out))
