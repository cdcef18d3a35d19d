#!/usr/bin/python
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: compile_cache
short_description: Remove an SGLang unit's compile caches of other versions and architectures, and cap their size
version_added: 0.3.0
description:
  - The C(sglang_server) role gives each unit one compile and JIT cache directory per SGLang version and
    architecture, C(<path>/<version>/<arch>) (Triton, Inductor, CUDA's PTX cache, SGLang's JIT, FlashInfer,
    DeepGEMM and the rest; see the role's README). This module keeps that tree from growing without bound.
  - "Prune: every C(<version>) directory not in O(keep_versions) is removed, and below a kept version every
    C(<arch>) directory not in O(keep_arches). Anything else directly below O(path) or a version (a file, a link) is
    removed too: nothing but these directories belongs there."
  - "Trim: when O(trim) is true and the current tree C(<path>/<current>) holds more than O(max_bytes), whole cache
    entries are removed, least recently modified first, until it fits: a Triton kernel directory, an Inductor FX
    graph or code bucket, a build of SGLang's JIT, a FlashInfer build set, a torch extension, or any other
    C(<cache>/<name>). Removing one costs a recompile at the next start that needs it, nothing else."
  - "Run it while no server uses the trees it may remove: the role prunes only trees no running unit names, and trims
    only a tree the running unit does not use (or while the unit is stopped)."
  - "Nothing is followed: links are removed as links, and directories are removed through file descriptors, so a
    link planted in a cache (whose leaves belong to the service account) never leads the removal out of it."
  - Sizes are apparent sizes (the sum of the regular files' sizes).
author: llmserve developers (@llmserve)
options:
  path:
    description:
      - The unit's cache directory, C(<sglang_server_cache_root>/<unit>), absolute. Missing is fine (nothing to do).
      - It must be a directory, not a link.
    type: path
    required: true
  keep_versions:
    description: SGLang versions whose trees stay (the installed one, the live unit's, the last good one's).
    type: list
    elements: str
    required: true
  keep_arches:
    description: Architecture tags whose trees stay below a kept version (those of this host, e.g. V(sm90), V(cpu-x86_64)).
    type: list
    elements: str
    required: true
  current:
    description:
      - The tree to trim, C(<version>/<arch>) relative to O(path); it must be kept by O(keep_versions) and
        O(keep_arches). Empty trims nothing.
    type: str
    default: ""
  max_bytes:
    description: Size cap of the current tree in bytes; V(0) means no cap.
    type: int
    default: 0
  trim:
    description: Whether to trim the current tree now (false while a running server uses it).
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    details: In check mode nothing is removed; RV(removed) and RV(bytes_removed) say what would be.
  diff_mode:
    support: full
    details: The diff lists the removed paths (before) and their absence (after).
  platform:
    platforms: posix
notes:
  - The module does not stop or start anything; the role decides when it runs.
extends_documentation_fragment: [ansible.builtin.action_common_attributes, llmserve.sglang.attributes]
"""

EXAMPLES = r"""
- name: Remove compile caches of SGLang versions and architectures no longer used, cap the current one at 20 GiB
  llmserve.sglang.compile_cache:
    path: /var/cache/llmserve-sglang/sglang
    keep_versions: ["0.5.23", "0.5.22"]
    keep_arches: [sm90, cpu-x86_64]
    current: 0.5.23/sm90
    max_bytes: 21474836480
"""

RETURN = r"""
removed:
  description: What was removed (would be, in check mode), in order.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The removed directory, file or link.
      type: str
      sample: /var/cache/llmserve-sglang/sglang/0.5.22
    bytes:
      description: Its size.
      type: int
      sample: 734003200
    reason:
      description: Why it went.
      type: str
      sample: SGLang version 0.5.22 is neither installed nor kept
bytes_removed:
  description: The sum of RV(removed)'s sizes.
  returned: always
  type: int
  sample: 734003200
current_bytes:
  description: The size of the current tree after the trim (before it when O(trim) is false).
  returned: always
  type: int
  sample: 1048576
over_cap:
  description: True when the current tree is larger than O(max_bytes) and was not trimmed (O(trim) false).
  returned: always
  type: bool
"""

import os
import stat

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmserve.sglang.plugins.module_utils import compile_cache


def _component(module, value, what):
    if not value or value in (".", "..") or "/" in value or "\0" in value:
        module.fail_json(msg="%s: %r is not one directory name" % (what, value))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            keep_versions=dict(type="list", elements="str", required=True),
            keep_arches=dict(type="list", elements="str", required=True),
            current=dict(type="str", default=""),
            max_bytes=dict(type="int", default=0),
            trim=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    path = p["path"]
    if not os.path.isabs(path) or os.path.normpath(path) == "/":
        module.fail_json(msg="path must be an absolute path other than /; got %r" % path)
    if p["max_bytes"] < 0:
        module.fail_json(msg="max_bytes must be 0 (no cap) or more; got %d" % p["max_bytes"])
    for version in p["keep_versions"]:
        _component(module, version, "keep_versions")
    for arch in p["keep_arches"]:
        _component(module, arch, "keep_arches")
    if p["current"]:
        parts = p["current"].split("/")
        if len(parts) != 2 or parts[0] not in p["keep_versions"] or parts[1] not in p["keep_arches"]:
            module.fail_json(msg="current must be <version>/<arch> of a kept version and architecture; got %r"
                             % p["current"])
    result = dict(changed=False, removed=[], bytes_removed=0, current_bytes=0, over_cap=False)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        module.exit_json(**result)
    if not stat.S_ISDIR(info.st_mode):
        module.fail_json(msg="path %s is not a directory (a link or a file); nothing was removed" % path, **result)

    planned = compile_cache.plan(path, p["keep_versions"], p["keep_arches"], p["current"], p["max_bytes"], p["trim"])
    removed = []
    for entry in planned["removals"]:
        entry = dict((k, v) for k, v in entry.items() if k != "mtime")
        if module.check_mode or compile_cache.remove(entry["path"]):
            removed.append(entry)
    result.update(
        changed=bool(removed),
        removed=removed,
        bytes_removed=sum(e["bytes"] for e in removed),
        current_bytes=planned["current_bytes_after"],
        over_cap=bool(not p["trim"] and p["max_bytes"] and planned["current_bytes_before"] > p["max_bytes"]),
    )
    if module._diff and removed:
        result["diff"] = dict(before="".join("%s (%d bytes)\n" % (e["path"], e["bytes"]) for e in removed), after="",
                              before_header="%s: removed" % path, after_header=path)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
