#!/usr/bin/python
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: run_lock
short_description: Serialise playbook runs against one host
version_added: 0.1.0
description:
  - Takes or releases a per-host lock so that two runs of the site playbook (two AWX schedules colliding, a person and
    a schedule) never change one host at the same time.
  - The lock is a directory created atomically with C(mkdir) holding an C(owner.json) (run id, controller, time).
    Taking it waits up to O(wait) seconds for another run to release it, then fails naming that run.
  - A lock older than O(stale_after) seconds is taken over with a warning (a controller that died mid-run).
  - Lock bookkeeping is not a change to the host's configuration, so the module always reports C(changed=false),
    also in check mode (where it takes and releases the lock as well, because an audit must not read a half-applied host).
author: llmserve developers (@llmserve)
options:
  state:
    description: Take (V(acquired)) or give back (V(released)) the lock.
    type: str
    choices: [acquired, released]
    default: acquired
  owner:
    description: Identifier of this run; the same run may take the lock again (another play of the same playbook).
    type: str
    required: true
  path:
    description: The lock directory.
    type: path
    default: /run/lock/llmserve-sglang.lock
  wait:
    description: Seconds to wait for another run's lock before failing.
    type: float
    default: 600
  interval:
    description: Seconds between attempts while waiting.
    type: float
    default: 1
  stale_after:
    description: Seconds after which another run's lock counts as abandoned and is taken over.
    type: float
    default: 14400
attributes:
  check_mode:
    support: full
    description: Takes and releases the lock in check mode too; nothing else on the host changes.
  diff_mode:
    support: none
    description: Nothing to show a diff of.
  platform:
    support: full
    platforms: posix
    description: Needs a writable lock directory (C(/run/lock) on systemd hosts).
"""

EXAMPLES = r"""
- name: Take the deployment lock
  llmserve.sglang.run_lock:
    owner: "{{ awx_job_id | default('manual-' ~ now(fmt='%Y%m%dT%H%M%S')) }}"
    wait: 1800

- name: Release the deployment lock
  llmserve.sglang.run_lock:
    owner: "{{ awx_job_id | default('manual') }}"
    state: released
"""

RETURN = r"""
held_by:
  description: The owner record of the lock before this call (empty when it was free).
  returned: always
  type: dict
  sample: {owner: "awx-1234", controller: "awx-task-1", since: 1795968606.9}
waited:
  description: Seconds spent waiting for another run.
  returned: always
  type: float
taken_over:
  description: Whether a stale lock of another run was taken over.
  returned: always
  type: bool
"""

import json
import os
import shutil
import socket
import time

from ansible.module_utils.basic import AnsibleModule


def read_owner(path):
    try:
        with open(os.path.join(path, "owner.json")) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def try_acquire(path, record):
    """Create the lock directory atomically; True when this call created it."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        return False
    with open(os.path.join(path, "owner.json"), "w") as handle:
        json.dump(record, handle)
    return True


def build_module():
    return AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", default="acquired", choices=["acquired", "released"]),
            owner=dict(type="str", required=True),
            path=dict(type="path", default="/run/lock/llmserve-sglang.lock"),
            wait=dict(type="float", default=600),
            interval=dict(type="float", default=1),
            stale_after=dict(type="float", default=14400),
        ),
        supports_check_mode=True,
    )


def main():
    module = build_module()
    p = module.params
    path, owner = p["path"], p["owner"]
    result = dict(changed=False, held_by=read_owner(path), waited=0.0, taken_over=False)

    if p["state"] == "released":
        holder = result["held_by"]
        if os.path.isdir(path) and holder.get("owner") in (owner, None):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.isdir(path):
            module.warn("lock %s is held by run %s, not by %s: left in place" % (path, holder.get("owner"), owner))
        module.exit_json(**result)

    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        module.fail_json(msg="directory %s for the lock %s does not exist" % (parent, path), **result)
    record = dict(owner=owner, controller=os.environ.get("SSH_CLIENT", "").split(" ")[0] or socket.gethostname(),
                  since=time.time())
    start = time.monotonic()
    while True:
        if try_acquire(path, record):
            break
        holder = read_owner(path)
        if holder.get("owner") == owner:
            break  # this run already holds it (e.g. from an earlier play of the same playbook)
        try:
            since = float(holder.get("since") or os.stat(path).st_mtime)  # no owner.json: a run died right after mkdir
        except OSError:
            continue  # released between our mkdir and now: try again
        age = time.time() - since
        if age > p["stale_after"]:
            module.warn("taking over the lock of run %s, abandoned %.0f s ago (stale_after=%.0f)"
                        % (holder.get("owner"), age, p["stale_after"]))
            shutil.rmtree(path, ignore_errors=True)
            result["taken_over"] = True
            continue
        waited = time.monotonic() - start
        if waited >= p["wait"]:
            result["waited"] = round(waited, 3)
            module.fail_json(
                msg="another run holds the lock %s: run %s from %s since %s (%.0f s ago); waited %.0f s. "
                    "Let it finish, or remove the lock if that run is known to be dead."
                    % (path, holder.get("owner", "?"), holder.get("controller", "?"),
                       time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(since)),
                       age, waited),
                **result)
        time.sleep(min(p["interval"], max(0.0, p["wait"] - waited)))
    result["waited"] = round(time.monotonic() - start, 3)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
