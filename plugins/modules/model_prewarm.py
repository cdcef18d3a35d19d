#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: model_prewarm
short_description: Read a model revision into the page cache before SGLang loads it
version_added: 0.3.0
description:
  - Reads every regular file under O(path) once (after C(posix_fadvise) C(WILLNEED)), so the pages are in the
    page cache when SGLang loads the weights right after. A restart then reads them at memory speed instead of the
    disk's.
  - With O(mode=auto) it reads only when the host's C(MemAvailable) (C(/proc/meminfo)) holds the revision's bytes
    plus O(margin); otherwise it reads nothing and says why in RV(note). O(mode=always) reads regardless.
  - Links are not followed; nothing on the host changes (the page cache is no configuration), so the result is
    never C(changed).
author: llmserve developers (@llmserve)
attributes:
  check_mode:
    details: In check mode the module decides and reports, but reads no file.
options:
  path:
    description: The revision directory.
    type: path
    required: true
  mode:
    description: V(auto) reads when the memory holds the revision with the margin; V(always) reads regardless.
    type: str
    choices: [auto, always]
    default: auto
  margin:
    description:
      - What must stay available after the read, for V(auto). A number from 0 to 1 is a fraction of
        C(MemAvailable); a larger whole number is bytes.
    type: raw
    default: 0.2
  missing:
    description:
      - What a missing O(path) (or one that is not a directory) does. V(fail) fails the task; V(skip) reads nothing
        and says so in RV(note), for a caller that pre-warms whatever is there (the drain before a restart; the
        model may be a hub id SGLang downloads itself, or a stand-in that loads no weights).
    type: str
    choices: [fail, skip]
    default: fail
  meminfo:
    description: The file to read C(MemAvailable) from (tests).
    type: path
    default: /proc/meminfo
extends_documentation_fragment: [ansible.builtin.action_common_attributes, llmserve.sglang.attributes]
"""

EXAMPLES = r"""
- name: Read the revision that the restart will load into the page cache
  llmserve.sglang.model_prewarm:
    path: /var/lib/llmserve-models/Qwen--Qwen3.5-122B-A10B/0123456789abcdef0123456789abcdef01234567
    margin: 0.2
  register: prewarm
"""

RETURN = r"""
warmed:
  description: Whether the files were read.
  returned: always
  type: bool
bytes:
  description: Bytes of the regular files under O(path).
  returned: always
  type: int
bytes_read:
  description: Bytes read (0 when skipped or in check mode).
  returned: always
  type: int
mem_available:
  description: C(MemAvailable) in bytes before the read, null when it could not be read.
  returned: always
  type: int
seconds:
  description: Time spent reading.
  returned: always
  type: float
note:
  description: One sentence for the report, saying what was done or why not.
  returned: always
  type: str
  sample: read 2.3 GiB into the page cache in 1.2 s (1.9 GiB/s)
"""

import os
import stat
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.llmserve.sglang.plugins.module_utils.model_store import human_bytes

CHUNK = 16 << 20


def mem_available(path="/proc/meminfo"):
    """``MemAvailable`` in bytes, or None when the file does not say."""
    try:
        with open(path, encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    parts = line.split()
                    return int(parts[1]) * (1024 if len(parts) > 2 and parts[2] == "kB" else 1)
    except (OSError, ValueError, IndexError):
        return None
    return None


def margin_bytes(margin, available):
    """The bytes ``margin`` keeps free: a fraction (0 to 1) of ``available``, else a count of bytes."""
    value = float(margin)
    if value < 0:
        raise ValueError("margin must not be negative, got %r" % (margin,))
    return int(value * available) if value <= 1 else int(value)


def decide(total, available, margin, mode):
    """``(read, note)``: whether to read ``total`` bytes, and why not when not."""
    if mode == "always":
        return True, ""
    if available is None:
        return False, "skipped: MemAvailable could not be read"
    keep = margin_bytes(margin, available)
    if total + keep > available:
        return False, ("skipped: the revision (%s) and the margin (%s) do not fit in MemAvailable (%s)"
                       % (human_bytes(total), human_bytes(keep), human_bytes(available)))
    return True, ""


def regular_files(root):
    """``[(path, size)]`` of the regular files under ``root``, links not followed, in a stable order."""
    found = []
    for top, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(top, name)
            info = os.lstat(full)
            if stat.S_ISREG(info.st_mode):
                found.append((full, info.st_size))
    return found


def read_files(files):
    """Read every file once; the bytes read."""
    done = 0
    for path, dummy in files:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            if hasattr(os, "posix_fadvise"):
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
            while True:
                chunk = os.read(fd, CHUNK)
                if not chunk:
                    break
                done += len(chunk)
        finally:
            os.close(fd)
    return done


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            mode=dict(type="str", choices=["auto", "always"], default="auto"),
            margin=dict(type="raw", default=0.2),
            missing=dict(type="str", choices=["fail", "skip"], default="fail"),
            meminfo=dict(type="path", default="/proc/meminfo"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if not os.path.isdir(p["path"]) or os.path.islink(p["path"]):
        if p["missing"] == "skip":
            module.exit_json(changed=False, warmed=False, bytes=0, bytes_read=0, mem_available=None, seconds=0.0,
                             note="%s is not a directory on the host: nothing read" % p["path"])
        module.fail_json(msg="%s is not a directory (the revision to pre-warm)" % p["path"])
    try:
        files = regular_files(p["path"])
    except OSError as exc:
        module.fail_json(msg="cannot list %s: %s" % (p["path"], exc))
    total = sum(size for dummy, size in files)
    available = mem_available(p["meminfo"])
    try:
        wanted, note = decide(total, available, p["margin"], p["mode"])
    except (TypeError, ValueError) as exc:
        module.fail_json(msg="sglang_model_prewarm_margin: %s" % exc)
    result = dict(changed=False, warmed=False, bytes=total, bytes_read=0, mem_available=available, seconds=0.0,
                  note=note)
    if wanted and module.check_mode:
        result["note"] = "would read %s into the page cache" % human_bytes(total)
    elif wanted:
        start = time.monotonic()
        try:
            done = read_files(files)
        except OSError as exc:
            module.fail_json(msg="cannot read %s into the page cache: %s" % (p["path"], exc))
        seconds = time.monotonic() - start
        result.update(warmed=True, bytes_read=done, seconds=round(seconds, 3),
                      note="read %s into the page cache in %.1f s (%s/s)"
                           % (human_bytes(done), seconds, human_bytes(done / seconds if seconds > 0 else done)))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
