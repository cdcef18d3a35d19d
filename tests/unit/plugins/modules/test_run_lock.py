"""run_lock: one changing run at a time per host, audits together; leases end abandoned holds; no double grant.

The module runs for real: as a child Python with a JSON args file (as Ansible runs it), and in the contention
tests as several forked processes at once (run_lock_contenders.py).
"""

import json
import os
import subprocess
import sys
import time

import pytest
import yaml

from ansible_collections.llmserve.sglang.plugins.modules import run_lock

MODULE = run_lock.__file__
TREE = os.environ["LLMSERVE_PYTEST_TREE"]  # set by the root conftest.py
CONTENDERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run_lock_contenders.py")


def module_env():
    return dict(os.environ, PYTHONPATH=os.pathsep.join([TREE] + sys.path))


def warnings(result):
    """Warning texts of a module result (ansible-core 2.19+ wraps each in a WarningSummary)."""
    return [w["event"]["msg"] if isinstance(w, dict) else w for w in result.get("warnings", [])]


def boot_id():
    with open("/proc/sys/kernel/random/boot_id") as handle:
        return handle.read().strip()


def boottime():
    return time.clock_gettime(time.CLOCK_BOOTTIME)


@pytest.fixture
def lock(tmp_path):
    return str(tmp_path / "llmserve.lock")


@pytest.fixture
def run(tmp_path):
    """Run the module file in a child Python, args in a JSON file named on its command line."""
    counter = [0]

    def call(args, timeout=60, check_mode=False):
        counter[0] += 1
        args = dict(args)
        if check_mode:
            args["_ansible_check_mode"] = True
        path = tmp_path / ("args-%d.json" % counter[0])
        path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        proc = subprocess.run([sys.executable, MODULE, str(path)], capture_output=True, text=True,
                              env=module_env(), timeout=timeout, check=False)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        assert lines, "module printed no JSON: rc=%s stdout=%r stderr=%r" % (proc.returncode, proc.stdout, proc.stderr)
        return json.loads(lines[-1])

    return call


@pytest.fixture
def start(tmp_path):
    """Start the module in the background (a run that waits); returns a function that collects its result."""
    procs = []

    def call(args):
        path = tmp_path / ("bg-args-%d.json" % len(procs))
        path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        proc = subprocess.Popen([sys.executable, MODULE, str(path)], stdout=subprocess.PIPE, text=True,
                                env=module_env())
        procs.append(proc)

        def result(timeout=30):
            out = proc.communicate(timeout=timeout)[0]
            return json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
        result.proc = proc
        return result

    yield call
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def record(lock):
    with open(os.path.join(lock, "owner.json")) as handle:
        return json.load(handle)


def owners(lock):
    return sorted(h["owner"] for h in record(lock)["holders"])


def write_record(lock, content):
    os.mkdir(lock, 0o700)
    with open(os.path.join(lock, "owner.json"), "w") as handle:
        handle.write(content if isinstance(content, str) else json.dumps(content))


def contend(tmp_path, setup, contenders, trials, jitter=0.05, timeout=300):
    """Run run_lock_contenders.py; one entry per trial."""
    work = tmp_path / "contenders"
    work.mkdir()
    config = tmp_path / "contenders.json"
    config.write_text(json.dumps({"module": MODULE, "lock": str(tmp_path / "race.lock"), "work": str(work),
                                  "setup": setup, "contenders": contenders, "trials": trials, "jitter": jitter}))
    proc = subprocess.run([sys.executable, CONTENDERS, str(config)], capture_output=True, text=True,
                          env=module_env(), timeout=timeout, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    trials_out = json.loads(proc.stdout.splitlines()[-1])
    for trial in trials_out:
        assert trial["exit_codes"] == [0] * len(contenders), trial
        assert not any(c.get("crashed") for c in trial["contenders"]), trial
    return trials_out


# --- basics -------------------------------------------------------------------------------------------------------

def test_acquire_release_cycle(lock, run):
    first = run({"path": lock, "owner": "run-a"})
    assert not first.get("failed") and first["changed"] is False
    assert record(lock)["owner"] == "run-a" and first["mode"] == "exclusive"
    again = run({"path": lock, "owner": "run-a", "wait": 0})
    assert not again.get("failed"), "the same run may take its own lock again"
    released = run({"path": lock, "owner": "run-a", "state": "released"})
    assert not released.get("failed") and not os.path.exists(lock)
    assert released["held_by"]["owner"] == "run-a"


def test_check_mode_takes_and_releases_the_lock(lock, run):
    taken = run({"path": lock, "owner": "audit-1", "mode": "shared"}, check_mode=True)
    assert not taken.get("failed") and taken["changed"] is False
    assert owners(lock) == ["audit-1"], "an audit in check mode must hold the lock for real"
    assert run({"path": lock, "owner": "audit-1", "state": "released"}, check_mode=True)["changed"] is False
    assert not os.path.exists(lock)


def test_second_run_fails_with_holder_named(lock, run):
    run({"path": lock, "owner": "awx-101"})
    begin = time.monotonic()
    other = run({"path": lock, "owner": "awx-102", "wait": 1.5, "interval": 0.2})
    waited = time.monotonic() - begin
    assert other["failed"] is True
    assert "another run holds the lock" in other["msg"] and "awx-101" in other["msg"]
    assert "lease until" in other["msg"]
    assert 1.5 <= waited < 10
    assert owners(lock) == ["awx-101"], "the holder's lock must stay"


def test_second_run_waits_for_release(lock, run, start):
    run({"path": lock, "owner": "first"})
    waiter = start({"path": lock, "owner": "second", "wait": 20, "interval": 0.1})
    time.sleep(1.0)
    assert waiter.proc.poll() is None, "the second run must wait while the first holds the lock"
    run({"path": lock, "owner": "first", "state": "released"})
    out = waiter()
    assert not out.get("failed") and out["waited"] > 0
    assert owners(lock) == ["second"]


def test_release_of_someone_elses_lock_leaves_it(lock, run):
    run({"path": lock, "owner": "holder"})
    out = run({"path": lock, "owner": "intruder", "state": "released"})
    assert owners(lock) == ["holder"]
    assert any("held by run holder" in w for w in warnings(out))


# --- takeover of a stale lock: exactly one winner -------------------------------------------------------------

@pytest.mark.parametrize("setup", ["old-stale", "lease-expired"])
def test_eight_processes_contending_for_an_abandoned_lock_one_wins(tmp_path, setup):
    """8 real processes race for an abandoned lock, 25 times; every file-system step is randomly delayed.

    Main's module judged the lock stale and removed it outside any critical section, so several contenders
    each removed the previous winner's fresh lock and "won" too.
    """
    contenders = [{"args": {"path": str(tmp_path / "race.lock"), "owner": "racer-%d" % i, "wait": 0,
                            "stale_after": 3600}} for i in range(8)]
    trials = contend(tmp_path, setup, contenders, trials=25)
    bad = []
    for trial in trials:
        winners = [c for c in trial["contenders"] if c["ok"]]
        left = trial["lock_left"] or {}
        if len(winners) != 1 or left.get("owner") != winners[0]["owner"]:
            names = [w["owner"] for w in winners]
            bad.append("trial %d: winners %s, lock left to %s" % (trial["trial"], names, left.get("owner")))
    assert not bad, "%d of %d trials did not grant the lock exactly once:\n%s" % (len(bad), len(trials), "\n".join(bad))
    for trial in trials:
        winner = [c for c in trial["contenders"] if c["ok"]][0]
        assert winner["result"]["taken_over"] is True
        assert winner["result"]["taken_over_from"][0]["owner"] == "dead-run"
        losers = [c for c in trial["contenders"] if not c["ok"]]
        assert all("another run holds the lock" in c["result"]["msg"] for c in losers), losers


def test_exclusive_and_shared_holds_never_overlap_under_contention(tmp_path):
    """4 exclusive and 4 shared runs, released together, each holding 30 ms: an exclusive hold overlaps nothing."""
    path = str(tmp_path / "race.lock")
    contenders = [{"args": {"path": path, "owner": "%s-%d" % (mode, i), "mode": mode, "wait": 60, "interval": 0.01},
                   "hold": 0.03} for i, mode in enumerate(["exclusive", "shared"] * 4)]
    trials = contend(tmp_path, "free", contenders, trials=6)
    for trial in trials:
        holds = trial["contenders"]
        assert all(c["ok"] and c["released"] for c in holds), holds
        assert trial["lock_left"] is None, "the last release must remove the lock"
        for one in holds:
            for other in holds:
                if one is other or (one["mode"] == "shared" and other["mode"] == "shared"):
                    continue
                overlap = min(one["held_until"], other["held_until"]) - max(one["held_from"], other["held_from"])
                assert overlap < 0, "trial %d: %s and %s held the lock together" % (
                    trial["trial"], one["owner"], other["owner"])


def test_never_more_shared_holders_than_max_holders_under_contention(tmp_path):
    """8 workers asking for one of 3 slots at once, each holding 0.3 s: at no moment more than 3 hold the lock, and
    the slots are used (holds long enough to overlap, whatever the jitter of the file-system changes)."""
    path = str(tmp_path / "race.lock")
    contenders = [{"args": {"path": path, "owner": "run drain w%d" % i, "mode": "shared", "max_holders": 3,
                            "wait": 60, "interval": 0.01}, "hold": 0.3} for i in range(8)]
    trials = contend(tmp_path, "free", contenders, trials=3)
    for trial in trials:
        holds = trial["contenders"]
        assert all(c["ok"] and c["released"] for c in holds), holds
        assert trial["lock_left"] is None, "the last release must remove the lock"
        moments = sorted([(c["held_from"], 1) for c in holds] + [(c["held_until"], -1) for c in holds],
                         key=lambda m: (m[0], m[1]))
        level = peak = 0
        for _moment, step in moments:
            level += step
            peak = max(peak, level)
        assert peak <= 3, "trial %d: %d workers held the window of 3 at once" % (trial["trial"], peak)
        assert peak >= 2, "the slots are shared: more than one worker should hold at once"


# --- leases -------------------------------------------------------------------------------------------------------

def test_dead_run_is_detected_when_its_lease_ends(lock, run):
    """A run that took the lock with a 2 s lease and died: the next run gets it within the lease, not after 4 h."""
    dead = run({"path": lock, "owner": "killed-run", "lease": 2})
    assert not dead.get("failed") and dead["expires"] == pytest.approx(time.time() + 2, abs=1.5)
    out = run({"path": lock, "owner": "next-run", "wait": 30, "interval": 0.1})
    got_it = time.time()
    assert not out.get("failed"), out
    assert out["taken_over"] is True and out["taken_over_from"][0]["owner"] == "killed-run"
    assert "lease of 2 s ended" in out["taken_over_from"][0]["reason"]
    assert any("taking over the lock" in w and "killed-run" in w for w in warnings(out))
    assert dead["expires"] <= got_it < dead["expires"] + 5, "the waiter must get the lock right after the lease ends"
    assert owners(lock) == ["next-run"]


def test_holder_renews_its_lease(lock, run):
    run({"path": lock, "owner": "holder", "lease": 1.5})
    since = record(lock)["holders"][0]["since"]
    renewed = run({"path": lock, "owner": "holder", "state": "renewed", "lease": 30})
    assert not renewed.get("failed") and renewed["expires"] > time.time() + 25
    time.sleep(2)  # past the first lease
    other = run({"path": lock, "owner": "other", "wait": 0})
    assert other["failed"] is True and "holder" in other["msg"], "a renewed lease must keep the lock"
    holder = record(lock)["holders"][0]
    assert holder["since"] == since and holder["lease"] == 30
    assert record(lock)["since"] >= holder["renewed"] - 0.001, "top-level since is the last renewal (older modules)"


def test_reacquire_by_the_same_owner_renews(lock, run):
    run({"path": lock, "owner": "holder", "lease": 1.5})
    again = run({"path": lock, "owner": "holder", "lease": 30, "wait": 0})
    assert not again.get("failed") and again["taken_over"] is False
    time.sleep(2)
    assert run({"path": lock, "owner": "other", "wait": 0})["failed"] is True


def test_renewal_by_a_non_holder_is_refused(lock, run):
    run({"path": lock, "owner": "holder"})
    before = record(lock)
    out = run({"path": lock, "owner": "intruder", "state": "renewed", "lease": 3600})
    assert out["failed"] is True
    assert "run intruder no longer holds the lock" in out["msg"] and "holder" in out["msg"]
    assert record(lock) == before, "a refused renewal changes nothing"


def test_renewal_after_a_takeover_is_refused(lock, run):
    run({"path": lock, "owner": "slow-run", "lease": 0.5})
    time.sleep(1)
    assert run({"path": lock, "owner": "next-run", "wait": 0})["taken_over"] is True
    out = run({"path": lock, "owner": "slow-run", "state": "renewed", "lease": 600})
    assert out["failed"] is True and "next-run" in out["msg"] and "another run took it over" in out["msg"]
    assert owners(lock) == ["next-run"]


LAPSING_RUN = r"""
import json, subprocess, sys, time
module, args_dir, lock, marker = sys.argv[1:5]

def step(n, args):
    path = "%s/run-a-%d.json" % (args_dir, n)
    with open(path, "w") as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": dict(args, path=lock, owner="run-a")}, handle)
    out = subprocess.run([sys.executable, module, path], capture_output=True, text=True).stdout
    return json.loads([line for line in out.splitlines() if line.startswith("{")][-1])

took = step(1, {"lease": 1})
time.sleep(float(sys.argv[5]))  # a step longer than the lease (a slow install, a stalled controller)
renewed = step(2, {"state": "renewed", "lease": 600})
if not renewed.get("failed"):  # as the playbooks do: the change comes only after a renewal that succeeded
    open(marker, "w").write("run-a changed the host")
print(json.dumps({"took": took, "renewed": renewed}))
"""


def test_run_whose_lease_lapsed_learns_it_at_its_renewal_and_changes_nothing(lock, run, start, tmp_path):
    """Two real runs on one lock: A's lease ends mid-step, B (waiting) takes the lock over, A's renewal fails
    saying so, and A never makes the change that comes after the renewal."""
    marker = tmp_path / "changed-by-a"
    script = tmp_path / "run_a.py"
    script.write_text(LAPSING_RUN)
    run_a = subprocess.Popen([sys.executable, str(script), MODULE, str(tmp_path), lock, str(marker), "3"],
                             stdout=subprocess.PIPE, text=True, env=module_env())
    deadline = time.monotonic() + 30
    while not os.path.exists(os.path.join(lock, "owner.json")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert owners(lock) == ["run-a"]
    run_b = start({"path": lock, "owner": "run-b", "lease": 600, "wait": 30, "interval": 0.1})
    b = run_b()
    assert not b.get("failed") and b["taken_over"] is True, b
    assert b["taken_over_from"][0]["owner"] == "run-a" and "lease of 1 s ended" in b["taken_over_from"][0]["reason"]
    a = json.loads(run_a.communicate(timeout=60)[0].splitlines()[-1])
    assert not a["took"].get("failed")
    assert a["renewed"]["failed"] is True, "a run whose lock was taken over must not be renewed"
    assert "run run-a no longer holds the lock" in a["renewed"]["msg"]
    assert "another run took it over" in a["renewed"]["msg"] and "run run-b" in a["renewed"]["msg"]
    assert not marker.exists(), "run A changed the host after it had lost the lock"
    assert owners(lock) == ["run-b"], "the refused renewal left B's hold as it was"


def test_renewal_of_a_free_lock_is_refused(lock, run):
    out = run({"path": lock, "owner": "lost-run", "state": "renewed"})
    assert out["failed"] is True and "it is free" in out["msg"]
    assert not os.path.exists(lock), "renewed never takes a free lock"


def test_expired_own_lease_is_renewed_with_a_warning_when_nobody_took_it(lock, run):
    run({"path": lock, "owner": "holder", "lease": 0.5})
    time.sleep(1)
    out = run({"path": lock, "owner": "holder", "state": "renewed", "lease": 60})
    assert not out.get("failed") and any("had ended" in w for w in warnings(out))
    assert owners(lock) == ["holder"]


def test_lock_is_taken_again_after_a_reboot(lock, run):
    """/run is a tmpfs: after the driver role's reboot the lock is gone and the same run takes it again."""
    run({"path": lock, "owner": "site-run"})
    for name in os.listdir(lock):
        os.unlink(os.path.join(lock, name))
    os.rmdir(lock)
    out = run({"path": lock, "owner": "site-run", "lease": 2400, "wait": 0})
    assert not out.get("failed") and out["taken_over"] is False
    assert owners(lock) == ["site-run"] and out["expires"] > time.time() + 2300


@pytest.mark.parametrize("expires_in, held", [(3540, True), (-5, False)])
def test_hold_from_an_earlier_boot_is_judged_by_the_wall_clock(lock, run, expires_in, held):
    """A persistent lock path: the boot clock of an earlier boot means nothing here, the wall clock decides."""
    now = time.time()
    holder = {"owner": "before-reboot", "controller": "c", "since": now - 60, "renewed": now - 60, "lease": 3600,
              "expires": now + expires_in, "boot_id": "00000000-0000-0000-0000-000000000000",
              "expires_boottime": 1e9 if not held else 0.0}
    write_record(lock, {"format": 2, "mode": "exclusive", "owner": "before-reboot", "since": now - 60,
                        "holders": [holder]})
    out = run({"path": lock, "owner": "after", "wait": 0})
    if held:
        assert out["failed"] is True and "before-reboot" in out["msg"]
    else:
        assert not out.get("failed") and "lease of 3600 s ended" in out["taken_over_from"][0]["reason"]


def test_lease_is_judged_on_the_boot_clock_not_the_wall_clock(lock, run):
    """A wall clock stepped forward (NTP) must not end a lease early: expires_boottime decides."""
    now = time.time()
    holder = {"owner": "alive", "controller": "c", "since": now - 7200, "renewed": now - 7200, "lease": 600,
              "expires": now - 6600, "boot_id": boot_id(), "expires_boottime": boottime() + 300}
    write_record(lock, {"format": 2, "mode": "exclusive", "owner": "alive", "since": now - 7200, "holders": [holder]})
    out = run({"path": lock, "owner": "other", "wait": 0})
    assert out["failed"] is True and "alive" in out["msg"]


# --- shared mode ----------------------------------------------------------------------------------------------

def test_shared_holders_coexist(lock, run):
    first = run({"path": lock, "owner": "audit-1", "mode": "shared"})
    second = run({"path": lock, "owner": "audit-2", "mode": "shared", "wait": 0})
    assert not first.get("failed") and not second.get("failed") and second["mode"] == "shared"
    assert owners(lock) == ["audit-1", "audit-2"] and record(lock)["mode"] == "shared"
    run({"path": lock, "owner": "audit-1", "state": "released"})
    assert owners(lock) == ["audit-2"], "releasing one shared holder leaves the others"
    run({"path": lock, "owner": "audit-2", "state": "released"})
    assert not os.path.exists(lock)


def test_exclusive_waits_for_shared_holders(lock, run, start):
    run({"path": lock, "owner": "audit-1", "mode": "shared"})
    refused = run({"path": lock, "owner": "site-1", "wait": 0.5, "interval": 0.1})
    assert refused["failed"] is True and "audit-1" in refused["msg"] and "(shared)" in refused["msg"]
    waiter = start({"path": lock, "owner": "site-2", "wait": 20, "interval": 0.1})
    time.sleep(1.0)
    assert waiter.proc.poll() is None, "an exclusive run must wait while an audit holds the lock"
    run({"path": lock, "owner": "audit-1", "state": "released"})
    out = waiter()
    assert not out.get("failed") and out["mode"] == "exclusive" and owners(lock) == ["site-2"]


def test_shared_waits_for_the_exclusive_holder(lock, run, start):
    run({"path": lock, "owner": "site-1"})
    refused = run({"path": lock, "owner": "audit-1", "mode": "shared", "wait": 0.5, "interval": 0.1})
    assert refused["failed"] is True and "site-1" in refused["msg"] and "(exclusive)" in refused["msg"]
    waiter = start({"path": lock, "owner": "audit-2", "mode": "shared", "wait": 20, "interval": 0.1})
    time.sleep(1.0)
    assert waiter.proc.poll() is None, "an audit must wait while a site run holds the lock"
    run({"path": lock, "owner": "site-1", "state": "released"})
    out = waiter()
    assert not out.get("failed") and out["mode"] == "shared" and owners(lock) == ["audit-2"]


def test_each_shared_holder_has_its_own_lease(lock, run):
    run({"path": lock, "owner": "audit-dead", "mode": "shared", "lease": 4})
    run({"path": lock, "owner": "audit-alive", "mode": "shared", "lease": 60})
    assert owners(lock) == ["audit-alive", "audit-dead"]
    time.sleep(4.5)
    refused = run({"path": lock, "owner": "site-1", "wait": 0})
    assert refused["failed"] is True and "audit-alive" in refused["msg"] and "audit-dead" not in refused["msg"]
    joined = run({"path": lock, "owner": "audit-3", "mode": "shared", "wait": 0})
    assert joined["taken_over_from"] == [{"owner": "audit-dead", "reason": joined["taken_over_from"][0]["reason"]}]
    assert owners(lock) == ["audit-3", "audit-alive"], "the dead audit's hold is dropped, the live one stays"
    run({"path": lock, "owner": "audit-alive", "state": "released"})
    run({"path": lock, "owner": "audit-3", "state": "released"})
    out = run({"path": lock, "owner": "site-1", "wait": 0})
    assert not out.get("failed") and out["taken_over"] is False


def test_max_holders_counts_the_shared_holders(lock, run, start):
    """A counting semaphore: two slots, a third shared request waits for a free one; a renewal never waits."""
    for owner in ("run drain w1", "run drain w2"):
        out = run({"path": lock, "owner": owner, "mode": "shared", "max_holders": 2, "wait": 0})
        assert not out.get("failed") and out["mode"] == "shared", out
    refused = run({"path": lock, "owner": "run drain w3", "mode": "shared", "max_holders": 2, "wait": 0.3,
                   "interval": 0.1})
    assert refused["failed"] is True
    assert "has 2 shared holders, max_holders=2" in refused["msg"] and "run drain w1" in refused["msg"]
    assert "waited" in refused["msg"] and "for a free slot" in refused["msg"]
    again = run({"path": lock, "owner": "run drain w2", "mode": "shared", "max_holders": 2, "wait": 0})
    assert not again.get("failed"), "a holder taking its slot again renews it"
    waiter = start({"path": lock, "owner": "run drain w3", "mode": "shared", "max_holders": 2, "wait": 20,
                    "interval": 0.1})
    time.sleep(1.0)
    assert waiter.proc.poll() is None, "the third worker waits while both slots are taken"
    run({"path": lock, "owner": "run drain w1", "state": "released"})
    out = waiter()
    assert not out.get("failed") and owners(lock) == ["run drain w2", "run drain w3"]
    # without a limit, and for a limit the holders already exceed, shared holders join as before
    assert not run({"path": lock, "owner": "audit", "mode": "shared", "wait": 0}).get("failed")
    assert run({"path": lock, "owner": "run drain w4", "mode": "shared", "max_holders": 3, "wait": 0})["failed"]


def test_max_holders_does_not_count_a_holder_whose_lease_ended(lock, run):
    run({"path": lock, "owner": "run-dead drain w1", "mode": "shared", "max_holders": 1, "lease": 2})
    assert run({"path": lock, "owner": "run drain w2", "mode": "shared", "max_holders": 1, "wait": 0})["failed"]
    time.sleep(2.5)
    out = run({"path": lock, "owner": "run drain w2", "mode": "shared", "max_holders": 1, "wait": 0})
    assert not out.get("failed") and out["taken_over_from"][0]["owner"] == "run-dead drain w1"
    assert owners(lock) == ["run drain w2"]


def test_max_holders_must_not_be_negative(lock, run):
    out = run({"path": lock, "owner": "x", "mode": "shared", "max_holders": -1})
    assert out["failed"] is True and "max_holders must be 0 (no limit)" in out["msg"]


def test_exclusive_holder_asking_for_shared_keeps_exclusive(lock, run):
    run({"path": lock, "owner": "site-1"})
    out = run({"path": lock, "owner": "site-1", "mode": "shared", "wait": 0})
    assert not out.get("failed") and out["mode"] == "exclusive"
    assert run({"path": lock, "owner": "audit", "mode": "shared", "wait": 0})["failed"] is True


# --- records of earlier module versions -----------------------------------------------------------------------

def test_fresh_old_format_lock_is_respected(lock, run):
    write_record(lock, {"owner": "old-run", "controller": "10.0.0.7", "since": time.time() - 60})
    out = run({"path": lock, "owner": "new-run", "wait": 0})
    assert out["failed"] is True and "old-run" in out["msg"] and "no lease" in out["msg"]
    assert record(lock)["owner"] == "old-run", "an earlier version's live lock stays untouched"


def test_stale_old_format_lock_is_taken_over(lock, run):
    write_record(lock, {"owner": "dead-run", "since": time.time() - 7200})
    out = run({"path": lock, "owner": "new", "wait": 0, "stale_after": 3600})
    assert not out.get("failed") and out["taken_over"] is True
    assert any("dead-run" in w for w in warnings(out))
    assert out["held_by"] == {"owner": "dead-run", "since": pytest.approx(time.time() - 7200, abs=30)}
    assert owners(lock) == ["new"] and record(lock)["format"] == 2
    assert [n for n in os.listdir(os.path.dirname(lock)) if ".abandoned." in n] == [], "the old lock is removed"


def test_old_format_lock_of_the_same_owner_is_renewed_in_the_new_format(lock, run):
    write_record(lock, {"owner": "same-run", "since": time.time() - 30})
    out = run({"path": lock, "owner": "same-run", "state": "renewed", "lease": 60})
    assert not out.get("failed") and owners(lock) == ["same-run"] and record(lock)["holders"][0]["lease"] == 60
    assert not run({"path": lock, "owner": "same-run", "state": "released"}).get("failed")
    assert not os.path.exists(lock)


def test_new_record_keeps_what_earlier_versions_read(lock, run):
    """Earlier versions read owner and since (and take a lock over when since is older than stale_after)."""
    run({"path": lock, "owner": "awx-7"})
    rec = record(lock)
    assert rec["owner"] == "awx-7" and abs(rec["since"] - time.time()) < 30 and rec["controller"]


@pytest.mark.parametrize("content", ["", "{not json", "[1, 2]", json.dumps({"format": 2, "holders": "x"}),
                                     json.dumps({"format": 2, "holders": [{"owner": 5}]}), " " * 70000])
def test_unreadable_record_counts_as_a_fresh_unowned_lock(lock, run, content):
    write_record(lock, content)
    out = run({"path": lock, "owner": "new", "wait": 0})
    assert out["failed"] is True and "no owner record" in out["msg"]


def test_unowned_lock_directory_is_taken_over_after_the_grace(lock, run):
    os.mkdir(lock, 0o700)
    old = time.time() - run_lock.UNOWNED_GRACE - 5
    os.utime(lock, (old, old))
    out = run({"path": lock, "owner": "new", "wait": 0})
    assert not out.get("failed") and out["taken_over"] is True and owners(lock) == ["new"]


# --- hostile input ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("owner", ["", "run\nforged: line", "esc\x1b[31m", "x" * 201])
def test_owner_must_be_printable(lock, run, owner):
    out = run({"path": lock, "owner": owner})
    assert out["failed"] is True and "owner must be 1 to 200 printable characters" in out["msg"]
    assert not os.path.exists(lock)


@pytest.mark.parametrize("name, value", [("lease", 0), ("lease", -5), ("lease", "nan"), ("lease", "inf"),
                                         ("wait", -1), ("interval", 0), ("stale_after", 0)])
def test_bad_numbers_are_refused(lock, run, name, value):
    out = run({"path": lock, "owner": "x", name: value})
    assert out["failed"] is True and out["msg"].startswith(name + " must be a finite number")
    assert not os.path.exists(lock)


def test_relative_path_is_refused(run):
    out = run({"path": "relative.lock", "owner": "x"})
    assert out["failed"] is True and "path must be absolute" in out["msg"]


def test_symlinked_lock_path_is_refused(lock, run, tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    os.symlink(str(target), lock)
    out = run({"path": lock, "owner": "x"})
    assert out["failed"] is True and "not a directory" in out["msg"]
    assert os.listdir(str(target)) == [], "nothing is written through the link"


def test_symlinked_guard_is_refused(lock, run, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    os.symlink(str(victim), lock + ".guard")
    out = run({"path": lock, "owner": "x"})
    assert out["failed"] is True and "cannot open the lock guard" in out["msg"]
    assert victim.read_text() == "keep" and not os.path.exists(lock)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the directory to another user")
def test_lock_directory_of_another_user_is_refused(lock, run):
    write_record(lock, {"owner": "planted", "since": 0})
    os.chown(lock, 65534, 65534)
    out = run({"path": lock, "owner": "x", "wait": 0})
    assert out["failed"] is True and "belongs to uid 65534" in out["msg"]
    assert record(lock)["owner"] == "planted"


def test_missing_parent_directory_fails_clearly(tmp_path, run):
    out = run({"path": str(tmp_path / "nope" / "deeper" / "x.lock"), "owner": "x"})
    assert out["failed"] is True and "does not exist" in out["msg"]
    assert not os.path.exists(str(tmp_path / "nope"))


def test_missing_parent_is_created_private(tmp_path, run):
    parent = tmp_path / "llmserve"
    out = run({"path": str(parent / "sglang.lock"), "owner": "x"})
    assert not out.get("failed"), out
    info = os.lstat(str(parent))
    assert info.st_uid == os.geteuid() and info.st_mode & 0o777 == 0o700
    assert owners(str(parent / "sglang.lock")) == ["x"]


def test_default_lock_is_not_in_the_world_writable_run_lock():
    # validate-modules (make sanity) holds the argument spec's default to the documented one
    assert yaml.safe_load(run_lock.DOCUMENTATION)["options"]["path"]["default"] == "/run/llmserve/sglang.lock"


@pytest.mark.parametrize("mode", [0o1777, 0o777, 0o770, 0o720, 0o702], ids=lambda mode: "%04o" % mode)
def test_parent_writable_by_others_is_refused(tmp_path, run, mode):
    """In /run/lock (1777) any local user could create the lock (or its guard) first and block every run."""
    parent = tmp_path / "shared"
    parent.mkdir()
    os.chmod(str(parent), mode)
    out = run({"path": str(parent / "sglang.lock"), "owner": "x", "wait": 0})
    assert out["failed"] is True and "writable by its group or others" in out["msg"] and "%04o" % mode in out["msg"]
    assert os.listdir(str(parent)) == [], "nothing is created in such a directory (no lock, no guard)"
    released = run({"path": str(parent / "sglang.lock"), "owner": "x", "state": "released"})
    assert released["failed"] is True


def test_symlinked_parent_is_refused(tmp_path, run):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    os.symlink(str(real), str(tmp_path / "link"))
    out = run({"path": str(tmp_path / "link" / "sglang.lock"), "owner": "x"})
    assert out["failed"] is True and "not a directory" in out["msg"]
    assert os.listdir(str(real)) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the directory to another user")
def test_parent_of_another_user_is_refused(tmp_path, run):
    parent = tmp_path / "theirs"
    parent.mkdir(mode=0o700)
    os.chown(str(parent), 65534, 65534)
    out = run({"path": str(parent / "sglang.lock"), "owner": "x"})
    assert out["failed"] is True and "belongs to uid 65534" in out["msg"]


def test_directory_that_is_not_a_lock_is_never_taken_over(tmp_path, run):
    """A wrong path (an existing system directory) must not be renamed aside and deleted as an abandoned lock."""
    victim = tmp_path / "var-lib-something"
    victim.mkdir()
    (victim / "data.db").write_text("precious")
    old = time.time() - 100000
    os.utime(str(victim), (old, old))
    out = run({"path": str(victim), "owner": "x", "wait": 0, "stale_after": 1})
    assert out["failed"] is True and "not a lock made by this module" in out["msg"] and "data.db" in out["msg"]
    assert (victim / "data.db").read_text() == "precious"


@pytest.mark.parametrize("since, taken", [(1e300, False), (-1e300, True), ("yesterday", False), (True, False)])
def test_hostile_times_in_a_record_do_not_crash(lock, run, since, taken):
    """Absurd or non-numeric times: held (no number: the directory's time counts) or taken over, never a crash."""
    write_record(lock, {"owner": "odd\x1b[2J", "controller": "c\nd", "since": since})
    out = run({"path": lock, "owner": "x", "wait": 0})
    if taken:
        assert not out.get("failed") and out["taken_over"] is True and owners(lock) == ["x"]
    else:
        assert out["failed"] is True and "another run holds the lock" in out["msg"]
        assert "run odd?[2J from c?d since" in out["msg"], "control characters of a record are not echoed"
