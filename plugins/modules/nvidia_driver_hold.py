#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: nvidia_driver_hold
short_description: Hold the NVIDIA driver packages at their version and keep unattended-upgrades off them
version_added: 0.1.0
description:
  - With O(state=present), holds the installed NVIDIA driver, user-space and fabric manager packages with C(apt-mark
    hold), so the version installed now stays, and writes an APT drop-in, O(blacklist_file), that adds them and the
    C(nvidia-) and C(libnvidia-) families to C(Unattended-Upgrade::Package-Blacklist). A hold alone is not enough
    where a dependency of the held packages moves on its own; the blacklist covers the families.
  - The drop-in records the packages this module put on hold. O(state=absent) releases exactly those (a package an
    administrator held before is never released) and removes the drop-in; without the drop-in it changes nothing.
  - Which packages are NVIDIA's is decided from their names as C(gpu_host_facts) does (C(next_boot.packages)
    roles V(driver), V(userspace) and V(fabric_manager)); kernel packages are never held.
  - Debian and Ubuntu only (dpkg and apt-mark).
author: llmserve developers (@llmserve)
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: The diff shows the held packages and the drop-in, before and after.
options:
  state:
    description: V(present) holds and writes the drop-in; V(absent) undoes what V(present) did.
    type: str
    choices: [present, absent]
    default: present
  roles:
    description: Which packages to hold, by what they are to the driver.
    type: list
    elements: str
    choices: [driver, userspace, fabric_manager]
    default: [driver, userspace, fabric_manager]
  blacklist_file:
    description:
      - The APT drop-in this module owns. APT reads only names of letters, digits, C(-), C(_) and C(.) in
        C(/etc/apt/apt.conf.d).
    type: path
    default: /etc/apt/apt.conf.d/51llmserve-nvidia-hold
notes:
  - A held package is not upgraded by C(apt-get upgrade) or unattended-upgrades; C(apt-get install PACKAGE=VERSION)
    of a held package needs C(--allow-change-held-packages). Release the hold (O(state=absent)) before a driver
    upgrade, then hold again.
seealso:
  - name: apt-mark(8)
    description: Holding packages.
    link: https://manpages.debian.org/bookworm/apt/apt-mark.8.en.html
  - module: llmserve.sglang.gpu_host_facts
    description: C(next_boot.packages) shows the holds and what unattended-upgrades would upgrade.
extends_documentation_fragment: [ansible.builtin.action_common_attributes, llmserve.sglang.attributes]
"""

EXAMPLES = r"""
- name: Hold the NVIDIA packages and keep unattended-upgrades off them
  become: true
  llmserve.sglang.nvidia_driver_hold:
    state: present

- name: Release the holds this collection took (before a driver upgrade)
  become: true
  llmserve.sglang.nvidia_driver_hold:
    state: absent
"""

RETURN = r"""
held:
  description: The packages this module holds now (recorded in O(blacklist_file)); empty after O(state=absent).
  returned: always
  type: list
  elements: str
  sample: [libnvidia-compute-580-server, nvidia-driver-580-server-open]
newly_held:
  description: Packages put on hold by this run (or that would be, in check mode).
  returned: always
  type: list
  elements: str
released:
  description: Packages whose hold this run released (or would release).
  returned: always
  type: list
  elements: str
held_before:
  description: NVIDIA packages that were on hold already, not by this module; never released by it.
  returned: always
  type: list
  elements: str
blacklist:
  description: The unattended-upgrades blacklist entries of the drop-in (regular expressions).
  returned: always
  type: list
  elements: str
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmserve.sglang.plugins.module_utils import host_packages
from ansible_collections.llmserve.sglang.plugins.module_utils.atomic_file import write_text_atomic

RECORD_PREFIX = "// llmserve.sglang held:"
FAMILIES = ("nvidia-", "libnvidia-")
_FILE_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")


def read_record(path):
    """The packages the drop-in says this module held, and its text (``None`` when there is no drop-in)."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return [], None
    for line in text.splitlines():
        if line.startswith(RECORD_PREFIX):
            return sorted(set(line[len(RECORD_PREFIX):].split())), text
    return [], text


def render(held, packages):
    """The drop-in: the record line, then the blacklist (the families and every NVIDIA package by its name)."""
    entries = ["^%s" % re.escape(prefix) for prefix in FAMILIES]
    entries += ["^%s$" % re.escape(name) for name in sorted(packages) if not name.startswith(FAMILIES)]
    lines = [
        "// Managed by llmserve.sglang (nvidia_driver_hold): the NVIDIA packages are held at their version and kept",
        "// away from unattended-upgrades. Set nvidia_driver_hold_packages: false to undo both.",
        "%s %s" % (RECORD_PREFIX, " ".join(sorted(held))),
        "Unattended-Upgrade::Package-Blacklist {",
    ]
    lines += ['    "%s";' % entry for entry in entries]
    lines.append("};")
    return "\n".join(lines) + "\n", entries


def apt_mark(module, action, names):
    if not names or module.check_mode:
        return
    binary = module.get_bin_path("apt-mark", required=True)
    rc, out, err = module.run_command([binary, action] + sorted(names))
    if rc != 0:
        module.fail_json(msg="apt-mark %s %s failed (rc %d): %s" % (action, " ".join(sorted(names)), rc,
                                                                    (err or out).strip()[:500]))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["present", "absent"], default="present"),
            roles=dict(type="list", elements="str", choices=["driver", "userspace", "fabric_manager"],
                       default=["driver", "userspace", "fabric_manager"]),
            blacklist_file=dict(type="path", default="/etc/apt/apt.conf.d/51llmserve-nvidia-hold"),
        ),
        supports_check_mode=True,
    )
    module.run_command_environ_update = {"LANG": "C", "LC_ALL": "C", "LC_MESSAGES": "C"}
    path = module.params["blacklist_file"]
    name = os.path.basename(path)
    if not os.path.isabs(path) or not _FILE_NAME_RE.match(name) or name.endswith(".disabled"):
        module.fail_json(msg="blacklist_file must be an absolute path whose name APT reads (letters, digits, -, _ "
                             "and . only); got %s" % path)
    if not os.path.isdir(os.path.dirname(path)):
        module.fail_json(msg="blacklist_file %s: the directory %s does not exist (is this a Debian or Ubuntu host?)"
                             % (path, os.path.dirname(path)))
    try:
        with open(host_packages.DPKG_STATUS, encoding="utf-8", errors="replace") as handle:
            installed = host_packages.parse_dpkg_status(handle.read())
    except OSError as exc:
        module.fail_json(msg="cannot read %s (dpkg): %s" % (host_packages.DPKG_STATUS, exc))
    recorded, old_text = read_record(path)
    held_now = sorted(name for name, info in installed.items() if info["selection"] == "hold")
    nvidia = sorted(name for name in installed if host_packages.package_role(name) in module.params["roles"])

    if module.params["state"] == "present":
        ours = [name for name in recorded if name in installed]
        held_before = [name for name in nvidia if name in held_now and name not in ours]
        newly = [name for name in nvidia if name not in held_now]
        # what was ours stays ours (still held), plus what this run holds
        held = sorted(set(ours) | set(newly))
        new_text, entries = render(held, nvidia)
        released = []
    else:
        held_before = [name for name in nvidia if name in held_now and name not in recorded]
        released = [name for name in recorded if name in held_now]
        newly, held, entries, new_text = [], [], [], None

    changed = bool(newly or released) or new_text != old_text
    diff = {
        "before": "held: %s\n%s" % (" ".join(held_now) or "-", old_text or ""),
        "after": "held: %s\n%s" % (" ".join(sorted((set(held_now) | set(newly)) - set(released))) or "-",
                                   new_text or ""),
        "before_header": "dpkg holds and %s" % path, "after_header": "dpkg holds and %s" % path,
    }
    apt_mark(module, "hold", newly)
    apt_mark(module, "unhold", released)
    if not module.check_mode and new_text != old_text:
        try:
            if new_text is None:
                os.unlink(path)
            else:
                write_text_atomic(path, new_text, prefix=".llmserve-hold-", mode=0o644)
        except OSError as exc:
            module.fail_json(msg="cannot write %s: %s (the holds were changed: %s)"
                                 % (path, exc, ", ".join(newly + released) or "none"))
    result = dict(changed=changed, held=held, newly_held=newly, released=released, held_before=held_before,
                  blacklist=entries)
    if module._diff and changed:
        result["diff"] = diff
    module.exit_json(**result)


if __name__ == "__main__":
    main()
