# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Contention driver for the run_lock tests: ``python run_lock_contenders.py CONFIG.json``.

For every trial it prepares the lock (``setup``), forks one real process per contender, releases them all at
once through a pipe, and lets each run the module file as Ansible does (``python run_lock.py ARGS.json``, here
``runpy`` in the forked child so that eight processes start within microseconds instead of one interpreter
start-up apart). Every file-system change the module makes (mkdir, rename, replace, rmdir, unlink, rmtree) is
delayed by a random 0..``jitter`` seconds in the contenders, which stretches every window between looking at
the lock and changing it, wherever a version of the module has one. Nothing of this is in the module.

A contender that got the lock holds it ``hold`` seconds and releases it when ``hold`` is set. The driver prints
one JSON list: per trial, the contenders' results (with monotonic times) and the lock record left behind.
"""

from __future__ import annotations

import json
import os
import random
import runpy
import shutil
import sys
import time

from ansible.module_utils import basic

CONFIG = json.load(open(sys.argv[1]))
MODULE = CONFIG["module"]
LOCK = CONFIG["lock"]
WORK = CONFIG["work"]


def slowed(function):
    def call(*args, **kwargs):
        time.sleep(random.uniform(0, CONFIG["jitter"]))
        return function(*args, **kwargs)
    return call


def run_module(args, out_path):
    """One run of the module file in this process: args from a JSON file named in argv, result on fd 1."""
    args_path = out_path + ".args.json"
    with open(args_path, "w") as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": args}, handle)
    sys.argv = [MODULE, args_path]
    basic._ANSIBLE_ARGS = None  # pylint: disable=protected-access
    sys.stdout.flush()
    fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.close(fd)
    try:
        runpy.run_path(MODULE, run_name="__main__")
    except SystemExit:
        pass
    sys.stdout.flush()
    with open(out_path) as handle:
        lines = [line for line in handle.read().splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {"failed": True, "msg": "no JSON from the module"}


def prepare(setup):
    shutil.rmtree(LOCK, ignore_errors=True)
    if setup == "free":
        return
    os.mkdir(LOCK, 0o700)
    now = time.time()
    if setup == "old-stale":  # what an earlier module version left: no lease, taken two hours ago
        record = {"owner": "dead-run", "controller": "10.0.0.9", "since": now - 7200}
    elif setup == "lease-expired":  # this version's record of a run killed 10 s after its lease of 5 s
        with open("/proc/sys/kernel/random/boot_id") as handle:
            boot = handle.read().strip()
        clock = time.clock_gettime(time.CLOCK_BOOTTIME)
        holder = {"owner": "dead-run", "controller": "10.0.0.9", "since": now - 7215, "renewed": now - 7215,
                  "lease": 5.0, "expires": now - 7210, "boot_id": boot, "expires_boottime": clock - 10}
        record = {"format": 2, "mode": "exclusive", "owner": "dead-run", "controller": "10.0.0.9",
                  "since": now - 7215, "holders": [holder]}
    else:
        raise SystemExit("unknown setup %r" % setup)
    with open(os.path.join(LOCK, "owner.json"), "w") as handle:
        json.dump(record, handle)


def contender(index, trial, spec, gate):
    random.seed((os.getpid() << 16) ^ trial ^ index)
    for name in ("mkdir", "rename", "replace", "rmdir", "unlink"):
        setattr(os, name, slowed(getattr(os, name)))
    shutil.rmtree = slowed(shutil.rmtree)
    os.read(gate, 1)  # returns once the driver closes the other end: all contenders start together
    out = os.path.join(WORK, "t%d-c%d" % (trial, index))
    result = run_module(spec["args"], out + ".acquire")
    entry = {"index": index, "owner": spec["args"]["owner"], "mode": spec["args"].get("mode", "exclusive"),
             "ok": not result.get("failed"), "result": result, "held_from": time.monotonic()}
    if entry["ok"] and spec.get("hold"):
        time.sleep(spec["hold"])
        entry["held_until"] = time.monotonic()
        released = run_module(dict(path=LOCK, owner=spec["args"]["owner"], state="released"), out + ".release")
        entry["released"] = not released.get("failed")
    with open(out + ".json", "w") as handle:
        json.dump(entry, handle)


def trial_run(trial):
    prepare(CONFIG["setup"])
    gate_read, gate_write = os.pipe()
    children = []
    for index, spec in enumerate(CONFIG["contenders"]):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.close(gate_write)
                contender(index, trial, spec, gate_read)
            except BaseException:  # pylint: disable=broad-except
                code = 1
            os._exit(code)  # pylint: disable=protected-access
        children.append(pid)
    os.close(gate_read)
    time.sleep(0.05)
    os.close(gate_write)
    codes = [os.waitpid(pid, 0)[1] for pid in children]
    entries = []
    for index in range(len(CONFIG["contenders"])):
        path = os.path.join(WORK, "t%d-c%d.json" % (trial, index))
        entries.append(json.load(open(path)) if os.path.exists(path) else {"index": index, "crashed": True})
    try:
        left = json.load(open(os.path.join(LOCK, "owner.json")))
    except (OSError, ValueError):
        left = None
    return {"trial": trial, "exit_codes": codes, "contenders": entries, "lock_left": left}


def main():
    trials = [trial_run(trial) for trial in range(CONFIG["trials"])]
    shutil.rmtree(LOCK, ignore_errors=True)
    print(json.dumps(trials))


if __name__ == "__main__":
    main()
