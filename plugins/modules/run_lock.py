#!/usr/bin/python
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: run_lock
short_description: Serialise playbook runs against one host, with leases
version_added: 0.1.0
description:
  - Takes, renews or releases a per-host lock so that two runs that change a host (two AWX schedules colliding, a
    person and a schedule) never work on it at the same time, and so that read-only audits never read a half-applied
    host.
  - "Two modes: an V(exclusive) holder (C(site.yml), C(restart.yml), C(rollback.yml)) is alone; V(shared) holders
    (C(preflight.yml) audits) may hold the lock together. An exclusive request waits while shared holders remain, and
    a shared request waits while an exclusive holder remains. The same O(owner) may take the lock again: that renews
    its lease (and keeps the stronger mode)."
  - Every holder has a lease of O(lease) seconds. A run renews it (O(state=renewed), or O(state=acquired) again)
    before each long step with a lease that covers that step. A holder whose lease ran out counts as abandoned
    (a killed controller, a cancelled AWX job) and is taken over with a warning by the next run that asks.
    O(state=renewed) fails when this run no longer holds the lock, because another run may have changed the host
    in between.
  - The lock is the directory O(path) with an C(owner.json) record, as in earlier versions of this module, which also
    still understand it. Records written by those versions have no lease; they count as abandoned after
    O(stale_after) seconds.
  - Every change of the lock (taking, renewing, taking over, releasing) is made while holding C(flock) on the file
    C(<path>.guard), which is never removed, so two runs can never both judge a lock abandoned and both take it. A lock
    in the format of earlier versions is taken over by renaming its directory aside and checking that the renamed
    directory is the one judged abandoned (otherwise a run of an earlier version took it meanwhile, and it is put
    back).
  - The lock directory and the guard file must belong to the user the module runs as (or root), and O(path) must not
    be a symbolic link; otherwise the module fails and changes nothing.
  - The directory that holds the lock (C(/run/llmserve) by default) must belong to root or the user the module runs as
    and must not be writable by its group or others, so that no other local user can create the lock and block every
    run (as anyone could in the world-writable C(/run/lock)). The module creates it (mode C(0700)) when it is missing
    and its own parent exists; any other directory fails the module before it changes anything.
  - Lock bookkeeping is not a change to the host's configuration, so the module always reports C(changed=false),
    also in check mode (where it takes and releases the lock as well, because an audit must not read a half-applied host).
author: llmserve developers (@llmserve)
options:
  state:
    description:
      - V(acquired) takes the lock (waiting up to O(wait) seconds), or renews it when O(owner) already holds it.
      - V(renewed) extends the lease of O(owner), and fails when O(owner) does not hold the lock any more.
      - V(released) gives the lock back; a lock that O(owner) does not hold is left in place with a warning.
    type: str
    choices: [acquired, renewed, released]
    default: acquired
  owner:
    description:
      - Identifier of this run (the AWX job id); printable characters only, at most 200.
      - The same run may take the lock again (another play of the same playbook, after a reboot).
    type: str
    required: true
  mode:
    description:
      - V(exclusive) for runs that change the host, V(shared) for read-only audits.
      - Ignored by O(state=renewed) and O(state=released).
    type: str
    choices: [exclusive, shared]
    default: exclusive
  path:
    description:
      - The lock directory (absolute). Its parent must be private (see above); C(/run/lock) is refused.
      - C(/run) is emptied by a reboot, so a run that reboots the host takes the lock again afterwards.
    type: path
    default: /run/llmserve/sglang.lock
  max_holders:
    description:
      - With O(mode=shared), the most holders the lock may have at once, this one included (a counting semaphore). A
        shared request waits while that many other live holders hold it (a holder whose lease ended does not
        count). The rollout takes a gateway's lock this way, one holder per drained worker, so that no more workers
        than the window are out of that gateway at once, across every run.
      - V(0) (default) sets no limit. Ignored with O(mode=exclusive), by O(state=renewed) and O(state=released), and
        when O(owner) already holds the lock (a renewal never waits).
    type: int
    default: 0
  lease:
    description:
      - Seconds this holder keeps the lock without renewing it. After that, another run may take it over.
      - Make it longer than the longest step before the next renewal (readiness waits, reboots); a lease that is too
        short lets a second run in, one that is too long delays the recovery after a dead run.
    type: float
    default: 300
  wait:
    description: Seconds to wait for another run's lock before failing.
    type: float
    default: 600
  interval:
    description: Seconds between attempts while waiting.
    type: float
    default: 1
  stale_after:
    description:
      - Seconds after which a record without a lease (written by an earlier version of this module) counts as
        abandoned. Holders with a lease are judged by their lease only.
    type: float
    default: 14400
attributes:
  check_mode:
    details: Takes, renews and releases the lock in check mode too; nothing else on the host changes.
  diff_mode:
    details: Nothing to show a diff of.
  platform:
    details: Needs a private directory for the lock (C(/run/llmserve), created when missing) and C(flock).
notes:
  - A lease is measured on the host's boot-time clock, which NTP does not step; a lease taken before the last boot
    (only possible with O(path) on persistent storage) is judged by the wall clock.
  - Older versions of this module do not take the guard file; run one version of the collection against a host.
extends_documentation_fragment: [ansible.builtin.action_common_attributes, llmserve.sglang.attributes]
"""

EXAMPLES = r"""
- name: Take the deployment lock for the first phase
  llmserve.sglang.run_lock:
    owner: "{{ awx_job_id | default('manual-' ~ now(fmt='%Y%m%dT%H%M%S')) }}"
    wait: 1800
    lease: 300

- name: Renew the lease before a long step (fails if another run took the lock over)
  llmserve.sglang.run_lock:
    owner: "{{ awx_job_id | default('manual') }}"
    state: renewed
    lease: 2400

- name: Take the lock again after a reboot emptied /run (a renewal when this run still holds it)
  llmserve.sglang.run_lock:
    owner: "{{ awx_job_id | default('manual') }}"
    lease: 2400

- name: Hold the lock together with other audits
  llmserve.sglang.run_lock:
    owner: "{{ awx_job_id | default('audit') }}"
    mode: shared

- name: Take one of the 2 slots of a gateway's worker window (waits while two other workers are out)
  llmserve.sglang.run_lock:
    path: /run/llmserve/sglang-gateway.lock
    owner: "{{ awx_job_id | default('manual') }} drain {{ inventory_hostname }}"
    mode: shared
    max_holders: 2
    wait: 3600

- name: Release the deployment lock
  llmserve.sglang.run_lock:
    owner: "{{ awx_job_id | default('manual') }}"
    state: released
"""

RETURN = r"""
held_by:
  description:
    - The lock record as this call first found it (empty when the lock was free).
    - C(holders) lists every holder with its C(lease) and C(expires) (epoch seconds). C(owner), C(controller) and
      C(since) at the top level name the first holder, with C(since) the last renewal, for earlier module versions.
      Records of earlier versions have only C(owner), C(controller) and C(since).
  returned: always
  type: dict
  sample:
    format: 2
    mode: exclusive
    owner: "awx-1234"
    controller: "10.0.0.5"
    since: 1795968606.9
    holders:
      - {owner: "awx-1234", controller: "10.0.0.5", since: 1795968606.9, renewed: 1795968606.9, lease: 300,
         expires: 1795968906.9, boot_id: "5f0c...", expires_boottime: 8127.4}
mode:
  description: The mode this run holds the lock in after the call (V(null) after O(state=released)).
  returned: always
  type: str
  sample: exclusive
expires:
  description: Epoch seconds when this run's lease ends (V(null) after O(state=released)).
  returned: always
  type: float
  sample: 1795968906.9
waited:
  description: Seconds spent waiting for another run.
  returned: always
  type: float
taken_over:
  description: Whether abandoned holders of other runs were taken over.
  returned: always
  type: bool
taken_over_from:
  description: The owners whose abandoned hold was taken over, each with the reason.
  returned: always
  type: list
  elements: dict
  sample: [{owner: "awx-1200", reason: "its lease of 300 s ended 412 s ago"}]
"""

import errno
import fcntl
import json
import math
import os
import shutil
import socket
import stat
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmserve.sglang.plugins.module_utils.atomic_file import write_json_atomic
from ansible_collections.llmserve.sglang.plugins.module_utils.text import printable

RECORD = "owner.json"
FORMAT = 2
# A lock directory without a readable record: an earlier version's run between its mkdir and its write, or a run
# that died right there. Counts as abandoned after this long (or stale_after, if shorter).
UNOWNED_GRACE = 60.0
# The guard is held for milliseconds; a holder that keeps it this long is stuck.
GUARD_TIMEOUT = 60.0
MAX_RECORD_BYTES = 65536
MAX_OWNER = 200


class LockError(Exception):
    """A condition that fails the module with this message."""


def boot_id():
    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            return handle.read(64).strip() or None
    except OSError:
        return None


def boottime():
    """Seconds since boot on a clock that NTP does not step, shared by every process of this boot."""
    clock = getattr(time, "CLOCK_BOOTTIME", None)
    return time.clock_gettime(clock) if clock is not None else time.monotonic()


class Now(object):
    def __init__(self):
        self.wall = time.time()
        self.boot = boottime()
        self.boot_id = boot_id()


def number(value):
    """A finite float, or None (bools, strings, NaN and infinities are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def ago(seconds):
    return "%.0f s" % max(0.0, seconds)


def clock_text(epoch):
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))
    except (OverflowError, ValueError, OSError):
        return "?"


class Guard(object):
    """flock on <path>.guard: every reader-decider-writer of the lock holds it, so decisions never overlap.

    The guard file is never removed: a lock file that is removed and recreated can be locked by two processes
    at once (one holds the old inode). The kernel drops the flock when its process dies, so a killed module
    never leaves it held.
    """

    def __init__(self, path):
        self.path = path + ".guard"
        self.fd = None

    def __enter__(self):
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            self.fd = os.open(self.path, flags, 0o600)
        except OSError as exc:
            raise LockError("cannot open the lock guard %s: %s (a symbolic link, or a file of another user in "
                            "a sticky directory, is refused)" % (self.path, exc.strerror))
        info = os.fstat(self.fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid not in (os.geteuid(), 0):
            self.close()
            raise LockError("the lock guard %s is not a regular file of uid %d or root (uid %d): someone else made "
                            "it; remove it" % (self.path, os.geteuid(), info.st_uid))
        deadline = time.monotonic() + GUARD_TIMEOUT
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    self.close()
                    raise LockError("cannot lock the guard %s: %s" % (self.path, exc.strerror))
            if time.monotonic() >= deadline:
                self.close()
                raise LockError("the lock guard %s stayed locked for %.0f s; find the process with 'fuser -v %s'"
                                % (self.path, GUARD_TIMEOUT, self.path))
            time.sleep(0.005)

    def close(self):
        if self.fd is not None:
            os.close(self.fd)  # also drops the flock
            self.fd = None

    def __exit__(self, *exc):
        self.close()


class Lock(object):
    """What is in the lock directory, as one caller sees it while holding the guard."""

    def __init__(self, path, stale_after, now):
        self.path = path
        self.now = now
        self.exists = False
        self.inode = None
        self.raw = {}        # the record as read, for held_by
        self.format = None   # FORMAT, "old" (earlier versions) or None (no readable record)
        self.mode = "exclusive"
        self.holders = []    # dicts; each gets "_abandoned": reason or None
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return
        if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
            raise LockError("the lock path %s exists but is not a directory (a symbolic link or a file); "
                            "remove it" % path)
        if info.st_uid not in (os.geteuid(), 0):
            raise LockError("the lock directory %s belongs to uid %d, not to uid %d or root: someone else made it; "
                            "remove it" % (path, info.st_uid, os.geteuid()))
        strangers = [name for name in os.listdir(path) if name != RECORD and not name.startswith("." + RECORD + ".")]
        if strangers:
            # never take over (rename aside and delete) a directory that is not a lock: a wrong path option
            raise LockError("the lock path %s is a directory with other files (%s): not a lock made by this module; "
                            "choose another path" % (path, ", ".join(printable(n, 60) for n in sorted(strangers)[:5])))
        self.exists = True
        self.inode = (info.st_dev, info.st_ino)
        self.raw = self._read()
        self._parse(info, stale_after)

    def _read(self):
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(os.path.join(self.path, RECORD), flags)
        except OSError:
            return {}
        try:
            data = os.read(fd, MAX_RECORD_BYTES + 1)
        except OSError:
            return {}
        finally:
            os.close(fd)
        if len(data) > MAX_RECORD_BYTES:
            return {}
        try:
            raw = json.loads(data.decode("utf-8"))
        except ValueError:
            return {}
        return raw if isinstance(raw, dict) else {}

    def _parse(self, info, stale_after):
        raw, now = self.raw, self.now
        if raw.get("format") == FORMAT and isinstance(raw.get("holders"), list):
            holders = [dict(h) for h in raw["holders"] if valid_holder(h)]
            if holders:
                self.format = FORMAT
                self.mode = "shared" if raw.get("mode") == "shared" else "exclusive"
                for holder in holders:
                    holder["_abandoned"] = lease_ended(holder, now)
                self.holders = holders
                return
        if isinstance(raw.get("owner"), str) and raw["owner"]:
            # an earlier version's record: one exclusive holder without a lease
            since = number(raw.get("since"))
            since = info.st_mtime if since is None else since
            holder = dict(owner=raw["owner"], controller=raw.get("controller"), since=since, lease=None)
            age = now.wall - since
            holder["_abandoned"] = ("its record has no lease and is %s old (stale_after=%.0f s)" % (ago(age), stale_after)
                                    if age > stale_after else None)
            self.format, self.holders = "old", [holder]
            return
        # a directory without a readable record
        age = now.wall - info.st_mtime
        limit = min(UNOWNED_GRACE, stale_after)
        holder = dict(owner=None, controller=None, since=info.st_mtime, lease=None)
        holder["_abandoned"] = ("the lock directory has had no owner record for %s" % ago(age)
                                if age > limit else None)
        self.holders = [holder]

    def others(self, owner):
        return [h for h in self.holders if h["owner"] != owner]

    def mine(self, owner):
        return [h for h in self.holders if h["owner"] == owner]


def valid_holder(holder):
    return (isinstance(holder, dict) and isinstance(holder.get("owner"), str) and holder["owner"] != ""
            and number(holder.get("since")) is not None and number(holder.get("lease")) is not None
            and number(holder.get("expires")) is not None)


def lease_ended(holder, now):
    """None while the holder's lease runs, else why it counts as abandoned.

    Within one boot the boot-time clock decides (NTP may step the wall clock by hours); a lease taken in an
    earlier boot (a lock path on persistent storage) can only be judged by the wall clock.
    """
    left = number(holder.get("expires_boottime"))
    if left is not None and holder.get("boot_id") and holder.get("boot_id") == now.boot_id:
        left -= now.boot
    else:
        left = holder["expires"] - now.wall
    return None if left >= 0 else "its lease of %.0f s ended %s ago" % (holder["lease"], ago(-left))


def describe(holder, now):
    owner = holder["owner"]
    text = "run %s from %s since %s (%s ago)" % (
        printable(owner, MAX_OWNER) if owner is not None else "? (no owner record)",
        printable(holder.get("controller") or "?", MAX_OWNER), clock_text(holder["since"]),
        ago(now.wall - holder["since"]))
    if holder.get("lease") is None:
        return text + ", no lease"
    return text + ", lease until %s" % clock_text(holder["expires"])


def new_holder(owner, lease, now, previous=None):
    holder = dict(owner=owner, controller=controller(),
                  since=previous["since"] if previous else now.wall, renewed=now.wall, lease=lease,
                  expires=now.wall + lease)
    if now.boot_id:
        holder.update(boot_id=now.boot_id, expires_boottime=now.boot + lease)
    return holder


def controller():
    return printable(os.environ.get("SSH_CLIENT", "").split(" ")[0] or socket.gethostname(), 255)


def record_of(mode, holders):
    holders = [{k: v for k, v in h.items() if not k.startswith("_")} for h in holders]
    first = holders[0]
    # owner/controller/since at the top level keep earlier module versions working: they judge a lock by its
    # since, so since is the latest renewal and a renewed lock never looks stale to them.
    return dict(format=FORMAT, mode=mode, owner=first["owner"], controller=first["controller"],
                since=max(number(h.get("renewed")) or h["since"] for h in holders), holders=holders)


def write_record(path, record):
    """Replace owner.json atomically (readers without the guard never see half a record)."""
    write_json_atomic(os.path.join(path, RECORD), record, ".%s." % RECORD)


def create(path, record):
    """mkdir, then the record; False when the directory appeared meanwhile (a run of an earlier version)."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        return False
    write_record(path, record)
    return True


def set_aside(lock):
    """Rename the lock directory aside and check it is the one judged; its new name, or None.

    Earlier versions do not take the guard: one of them may have replaced the directory since we read it.
    Then the renamed directory is a live lock, and it goes back.
    """
    aside = "%s.abandoned.%d.%s" % (lock.path, os.getpid(), os.urandom(4).hex())
    try:
        os.rename(lock.path, aside)
    except FileNotFoundError:
        return None
    info = os.lstat(aside)
    if (info.st_dev, info.st_ino) == lock.inode:
        return aside
    try:
        os.rename(aside, lock.path)
    except OSError:
        pass  # the path is taken again: the stray directory stays beside it (the next look finds the live lock)
    return None


def private_parent(parent):
    """Create the lock's parent (0700) when missing; refuse one that another local user could write to.

    In a directory others can write to (/run/lock is 1777) anyone can create the lock or its guard first, and every
    run then fails on it.
    """
    try:
        os.mkdir(parent, 0o700)
    except FileExistsError:
        pass
    except FileNotFoundError:
        raise LockError("directory %s for the lock does not exist, nor does its parent" % parent)
    info = os.lstat(parent)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise LockError("%s, the directory for the lock, is not a directory (a symbolic link or a file)" % parent)
    if info.st_uid not in (os.geteuid(), 0):
        raise LockError("%s, the directory for the lock, belongs to uid %d, not to uid %d or root: another user could "
                        "block every run there; choose a private directory" % (parent, info.st_uid, os.geteuid()))
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise LockError("%s, the directory for the lock, is writable by its group or others (mode %04o): any local "
                        "user could create the lock there first and block every run; choose a private directory "
                        "such as /run/llmserve" % (parent, stat.S_IMODE(info.st_mode)))


def check_params(module):
    p = module.params
    owner = p["owner"]
    if not owner or len(owner) > MAX_OWNER or not owner.isprintable():
        module.fail_json(msg="owner must be 1 to %d printable characters (no newline, tab or escape); got %r"
                         % (MAX_OWNER, owner[:MAX_OWNER]))
    if not os.path.isabs(p["path"]):
        module.fail_json(msg="path must be absolute; got %r" % p["path"])
    if p["max_holders"] < 0:
        module.fail_json(msg="max_holders must be 0 (no limit) or the most holders of a shared lock; got %d"
                         % p["max_holders"])
    for name, low, inclusive in (("lease", 0.0, False), ("wait", 0.0, True), ("interval", 0.0, False),
                                 ("stale_after", 0.0, False)):
        value = p[name]
        if not math.isfinite(value) or value < low or (value == low and not inclusive):
            module.fail_json(msg="%s must be a finite number of seconds %s %g; got %r"
                             % (name, ">=" if inclusive else ">", low, value))


def build_module():
    return AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", default="acquired", choices=["acquired", "renewed", "released"]),
            owner=dict(type="str", required=True),
            mode=dict(type="str", default="exclusive", choices=["exclusive", "shared"]),
            max_holders=dict(type="int", default=0),
            path=dict(type="path", default="/run/llmserve/sglang.lock"),
            lease=dict(type="float", default=300),
            wait=dict(type="float", default=600),
            interval=dict(type="float", default=1),
            stale_after=dict(type="float", default=14400),
        ),
        supports_check_mode=True,
    )


def release(module, path, owner, stale_after, result):
    aside = None
    with Guard(path):
        lock = Lock(path, stale_after, Now())
        result["held_by"] = lock.raw
        if not lock.exists:
            return aside
        if lock.format is None or lock.mine(owner):
            keep = [h for h in lock.others(owner) if not h["_abandoned"]] if lock.format == FORMAT else []
            if keep:
                write_record(path, record_of(lock.mode, keep))
            else:
                aside = path + ".released.%d.%s" % (os.getpid(), os.urandom(4).hex())
                os.rename(path, aside)
        else:
            module.warn("lock %s is held by %s, not by %s: left in place"
                        % (path, "; ".join(describe(h, lock.now) for h in lock.holders), printable(owner, MAX_OWNER)))
    return aside


def renew(module, path, owner, lease, stale_after, result):
    with Guard(path):
        now = Now()
        lock = Lock(path, stale_after, now)
        result["held_by"] = lock.raw
        mine = lock.mine(owner)
        if not mine:
            if lock.exists:
                why = ("another run took it over after this run's lease ended (it is held by %s), and that run may "
                       "have changed the host since" % "; ".join(describe(h, now) for h in lock.holders))
            else:
                why = ("it is free: this run's lease ended and another run may have taken it, changed the host and "
                       "given it back, or the host rebooted")
            raise LockError("run %s no longer holds the lock %s: %s. Stop here and run again; take a longer lease "
                            "before long steps." % (printable(owner, MAX_OWNER), path, why))
        if mine[0]["_abandoned"]:
            module.warn("the lease of run %s on %s had ended (%s); no other run took the lock meanwhile, so it is "
                        "renewed" % (printable(owner, MAX_OWNER), path, mine[0]["_abandoned"]))
        holder = new_holder(owner, lease, now, previous=mine[0])
        keep = [h for h in lock.others(owner) if not h["_abandoned"]]
        if lock.format == FORMAT:
            write_record(path, record_of(lock.mode, keep + [holder]))
        else:  # an earlier version's record of this owner: rewrite it in this format
            aside = set_aside(lock)
            if aside is None or not create(path, record_of("exclusive", [holder])):
                raise LockError("the lock %s changed while run %s renewed it (a run of an earlier module version?); "
                                "run again" % (path, printable(owner, MAX_OWNER)))
            shutil.rmtree(aside, ignore_errors=True)
        result.update(mode=lock.mode, expires=holder["expires"])


def try_acquire(module, path, owner, mode, lease, stale_after, result, first, max_holders=0):
    """One attempt under the guard: None when this run holds the lock now, else (held mode, holders in the way).

    ``max_holders`` (shared only): a new shared holder waits while that many other live holders hold the lock.

    An empty list of holders means the directory changed under us (a run of an earlier version): look again.
    """
    aside = None
    with Guard(path):
        now = Now()
        lock = Lock(path, stale_after, now)
        if first:
            result["held_by"] = lock.raw
        if not lock.exists:
            holder = new_holder(owner, lease, now)
            if not create(path, record_of(mode, [holder])):
                return "exclusive", []
            result.update(mode=mode, expires=holder["expires"])
            return None
        mine = lock.mine(owner)
        alive = [h for h in lock.others(owner) if not h["_abandoned"]]
        abandoned = [h for h in lock.others(owner) if h["_abandoned"]]
        held_mode = lock.mode if lock.format == FORMAT else "exclusive"
        if alive and (mode == "exclusive" or held_mode == "exclusive"):
            return held_mode, alive
        if mode == "shared" and max_holders and not mine and len(alive) >= max_holders:
            return held_mode, alive
        # this owner holding the lock exclusively and asking for shared keeps the stronger mode
        new_mode = "exclusive" if mode == "exclusive" or (mine and held_mode == "exclusive") else "shared"
        holder = new_holder(owner, lease, now, previous=mine[0] if mine and mine[0].get("lease") is not None else None)
        if lock.format == FORMAT:
            write_record(path, record_of(new_mode, alive + [holder]))
        else:
            # an earlier version's lock, or one without a record: replace the directory, never write into it
            aside = set_aside(lock)
            if aside is None or not create(path, record_of(new_mode, [holder])):
                return "exclusive", []
        for gone in abandoned:
            module.warn("taking over the lock %s, abandoned by %s: %s" % (path, describe(gone, now), gone["_abandoned"]))
            result["taken_over_from"].append(dict(owner=gone["owner"], reason=gone["_abandoned"]))
        result.update(mode=new_mode, expires=holder["expires"], taken_over=bool(abandoned))
    if aside:
        shutil.rmtree(aside, ignore_errors=True)
    return None


def acquire(module, path, owner, result):
    p = module.params
    start = time.monotonic()
    first = True
    while True:
        conflict = try_acquire(module, path, owner, p["mode"], p["lease"], p["stale_after"], result, first,
                               max_holders=p["max_holders"])
        first = False
        waited = time.monotonic() - start
        result["waited"] = round(waited, 3)
        if conflict is None:
            return
        held_mode, holders = conflict
        if waited >= p["wait"]:
            if not holders:
                raise LockError("the lock %s kept changing under run %s (runs of an earlier module version?); "
                                "waited %.0f s" % (path, printable(owner, MAX_OWNER), waited))
            now = Now()
            if p["mode"] == "shared" and held_mode == "shared":
                raise LockError(
                    "the lock %s has %d shared holders, max_holders=%d: %s; waited %.0f s for a free slot. A holder "
                    "that died frees its slot when its lease ends." % (
                        path, len(holders), p["max_holders"], "; ".join(describe(h, now) for h in holders), waited))
            raise LockError(
                "another run holds the lock %s (%s): %s; waited %.0f s for a %s hold. Let it finish; a run that "
                "died loses the lock when its lease ends." % (
                    path, held_mode, "; ".join(describe(h, now) for h in holders), waited, p["mode"]))
        time.sleep(min(p["interval"] if holders else 0.01, max(0.0, p["wait"] - waited)))


def main():
    module = build_module()
    check_params(module)
    p = module.params
    path, owner = os.path.normpath(p["path"]), p["owner"]
    result = dict(changed=False, held_by={}, waited=0.0, taken_over=False, taken_over_from=[], mode=None,
                  expires=None)
    try:
        private_parent(os.path.dirname(path))
        if p["state"] == "released":
            aside = release(module, path, owner, p["stale_after"], result)
            if aside:
                shutil.rmtree(aside, ignore_errors=True)
        elif p["state"] == "renewed":
            renew(module, path, owner, p["lease"], p["stale_after"], result)
        else:
            acquire(module, path, owner, result)
    except LockError as exc:
        module.fail_json(msg=str(exc), **result)
    except OSError as exc:
        module.fail_json(msg="lock %s: %s" % (path, exc), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
