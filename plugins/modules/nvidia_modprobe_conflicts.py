#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: nvidia_modprobe_conflicts
short_description: Find other places that set the same NVIDIA kernel module options
version_added: 0.1.0
description:
  - Reads every modprobe configuration file that kmod would read (C(*.conf) in C(/etc/modprobe.d),
    C(/run/modprobe.d), C(/usr/local/lib/modprobe.d), C(/usr/lib/modprobe.d), C(/lib/modprobe.d), with
    a file name in a higher directory hiding the same name further down, plus C(/etc/modprobe.conf))
    and the kernel command line, and reports each one that sets any of O(params) for O(module).
  - kmod passes the options of all files and then the command line to the kernel, and for a parameter
    given more than once the last value silently wins; a second C(NVreg_RegistryDwords) replaces the
    whole first one. This module finds such competing settings so a role can refuse to go on.
  - C(options) lines (with backslash continuation lines) and C(install) commands that pass one of the
    parameters are both reported. Module names match with C(-) and C(_) treated alike.
  - When O(params) holds standalone C(NVreg_*) options but not C(NVreg_RegistryDwords), another
    C(NVreg_RegistryDwords) is reported only when it sets one of the same keys, because the driver
    applies the registry value after the standalone option.
  - Read-only; never changes the host.
author: llmserve developers (@llmserve)
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
    details: The module never changes anything.
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: posix
options:
  params:
    description:
      - Option names to look for, for example V(NVreg_RegistryDwords) or V(NVreg_EnableStreamMemOPs).
      - An empty list finds nothing.
    type: list
    elements: str
    required: true
  module:
    description: Kernel module whose options are checked.
    type: str
    default: nvidia
  own_file:
    description:
      - The file the caller manages itself (host path). It is not reported and is named in RV(msg).
    type: path
  root:
    description:
      - Directory that stands for C(/); every path is read under it. For tests with fixture trees.
    type: path
    default: /
  config_dirs:
    description: modprobe configuration directories, highest priority first.
    type: list
    elements: path
    default: [/etc/modprobe.d, /run/modprobe.d, /usr/local/lib/modprobe.d, /usr/lib/modprobe.d, /lib/modprobe.d]
  cmdline_path:
    description:
      - File holding the kernel command line. Set to an empty string to skip the command line.
    type: path
    default: /proc/cmdline
notes:
  - To check the merged result by hand, run C(modprobe -c | grep '^options nvidia ').
seealso:
  - name: modprobe.d(5)
    description: Configuration directory format of kmod.
    link: https://man7.org/linux/man-pages/man5/modprobe.d.5.html
"""

EXAMPLES = r"""
- name: Refuse to write our options when something else sets them too
  llmserve.sglang.nvidia_modprobe_conflicts:
    params:
      - NVreg_RegistryDwords
      - NVreg_EnableStreamMemOPs
    own_file: /etc/modprobe.d/90-llmserve-nvidia.conf
  register: nvidia_conflicts

- name: Stop with the file names
  ansible.builtin.fail:
    msg: "{{ nvidia_conflicts.msg }}"
  when: nvidia_conflicts.conflicts | length > 0
"""

RETURN = r"""
conflicts:
  description: Every setting of one of O(params) outside O(own_file), in the order kmod applies them.
  returned: always
  type: list
  elements: dict
  contains:
    source:
      description: File (host path) or the command line path.
      type: str
      sample: /etc/modprobe.d/nvidia-tweaks.conf
    line:
      description: Line number in the file, null for the command line.
      type: int
      sample: 3
    param:
      description: The option name.
      type: str
      sample: NVreg_RegistryDwords
    value:
      description: The value as the kernel would receive it (quotes removed), null when there is none.
      type: str
      sample: RMForceStaticBar1=1
    kind:
      description: V(modprobe.d), V(modprobe.d install) or V(cmdline).
      type: str
      sample: modprobe.d
files:
  description: Files read (host paths), including the command line file when read.
  returned: always
  type: list
  elements: str
  sample: [/etc/modprobe.d/nvidia-tweaks.conf, /proc/cmdline]
msg:
  description: One sentence naming O(own_file) and every conflicting source, or saying there is none.
  returned: always
  type: str
own_file_state:
  description:
    - What O(own_file) is on the host (read under O(root), the file itself not followed), so that a caller that plans
      a change of it needs no second read. C(exists) is false and C(type) null when there is no such file.
  returned: when O(own_file) is given
  type: dict
  sample: {exists: true, type: file, uid: 0, gid: 0, owner: root, group: root, mode: "0644", size: 401, sha256: "6c1f..."}
own_dir_state:
  description: The same for the directory of O(own_file).
  returned: when O(own_file) is given
  type: dict
  sample: {exists: true, type: directory, uid: 0, gid: 0, owner: root, group: root, mode: "0755", size: 4096}
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmserve.sglang.plugins.module_utils.deploy_state import StateError, inspect_path
from ansible_collections.llmserve.sglang.plugins.module_utils.nvidia_modules import (
    MODPROBE_CONFIG_DIRS,
    find_option_conflicts,
    format_conflicts,
)


def build_module():
    return AnsibleModule(
        argument_spec=dict(
            params=dict(type="list", elements="str", required=True),
            module=dict(type="str", default="nvidia"),
            own_file=dict(type="path"),
            root=dict(type="path", default="/"),
            config_dirs=dict(type="list", elements="path", default=list(MODPROBE_CONFIG_DIRS)),
            cmdline_path=dict(type="path", default="/proc/cmdline"),
        ),
        supports_check_mode=True,
    )


def main():
    module = build_module()
    p = module.params
    own = p["own_file"]
    try:
        conflicts, files = find_option_conflicts(
            p["params"],
            module=p["module"],
            exclude=[own] if own else [],
            root=p["root"],
            dirs=p["config_dirs"],
            cmdline_path=p["cmdline_path"] or None,
        )
    except (OSError, ValueError) as exc:
        module.fail_json(msg="cannot scan the modprobe configuration under %s: %s" % (p["root"], exc))
    msg = format_conflicts(conflicts, own or "the managed file", module=p["module"])
    states = {}
    if own:
        host_path = os.path.join(p["root"], os.path.normpath(own).lstrip("/"))
        try:
            states = dict(own_file_state=inspect_path(host_path),
                          own_dir_state=inspect_path(os.path.dirname(host_path), checksum=False))
        except StateError as exc:
            module.fail_json(msg="cannot inspect %s: %s" % (own, exc))
    module.exit_json(changed=False, conflicts=conflicts, files=files, msg=msg, **states)


if __name__ == "__main__":
    main()
