#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: nvidia_module_reload
short_description: Unload and load back the NVIDIA kernel modules so new options take effect
version_added: 0.1.0
description:
  - nvidia.ko reads its options only when it is loaded. This module unloads the loaded NVIDIA modules
    with C(rmmod), dependents first (V(nvidia_drm), V(nvidia_modeset), V(nvidia_uvm), V(nvidia_peermem),
    then V(nvidia)), and loads the same modules back with C(modprobe), which reads the current
    modprobe.d options.
  - Before touching anything it refuses, naming them, when a process still has a C(/dev/nvidia*)
    device open or mapped, when a module outside O(modules) uses one of them, or when a module has
    more references than the modules that use it (a console, X server or other driver).
    Stop the GPU services first.
  - When an unload fails half-way, the modules already removed are loaded back before the module
    fails, so the host is not left without a driver.
  - Does nothing when no NVIDIA module is loaded.
author: llmserve developers (@llmserve)
attributes:
  check_mode:
    details: Reports the plan, the holders and the problems as warnings; unloads nothing.
options:
  modules:
    description:
      - Modules to unload, dependents first. Only the ones loaded are touched; they are loaded back
        in reverse order.
    type: list
    elements: str
    default: [nvidia_drm, nvidia_modeset, nvidia_uvm, nvidia_peermem, nvidia]
  device_prefix:
    description: Device path prefix whose holders block the reload.
    type: str
    default: /dev/nvidia
  proc_root:
    description: Where procfs is mounted. For tests.
    type: path
    default: /proc
notes:
  - Needs root. Cannot work inside a container, where modules cannot be loaded.
seealso:
  - module: llmserve.sglang.nvidia_modprobe_conflicts
extends_documentation_fragment: [ansible.builtin.action_common_attributes, llmserve.sglang.attributes]
"""

EXAMPLES = r"""
- name: Reload the NVIDIA driver after the services using it were stopped
  llmserve.sglang.nvidia_module_reload:
  register: reload_result

- name: Show what happened
  ansible.builtin.debug:
    msg: "unloaded {{ reload_result.unloaded }}, loaded {{ reload_result.loaded }}"
"""

RETURN = r"""
unloaded:
  description: Modules removed, in order (what would be removed in check mode).
  returned: always
  type: list
  elements: str
  sample: [nvidia_drm, nvidia_modeset, nvidia_uvm, nvidia]
loaded:
  description: Modules loaded back, in order (what would be loaded in check mode).
  returned: always
  type: list
  elements: str
  sample: [nvidia, nvidia_uvm, nvidia_modeset, nvidia_drm]
holders:
  description: Processes holding a device, each with C(pid), C(comm), C(cmdline) and C(paths).
  returned: always
  type: list
  elements: dict
problems:
  description: Why the modules cannot be unloaded safely (empty when they can).
  returned: always
  type: list
  elements: str
msg:
  description: Summary.
  returned: always
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmserve.sglang.plugins.module_utils.nvidia_modules import (
    UNLOAD_ORDER,
    find_device_holders,
    format_holders,
    parse_proc_modules,
    plan_reload,
)


def build_module():
    return AnsibleModule(
        argument_spec=dict(
            modules=dict(type="list", elements="str", default=list(UNLOAD_ORDER)),
            device_prefix=dict(type="str", default="/dev/nvidia"),
            proc_root=dict(type="path", default="/proc"),
        ),
        supports_check_mode=True,
    )


class Reloader(object):
    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.result = dict(changed=False, unloaded=[], loaded=[], holders=[], problems=[])

    def _fail(self, msg, **extra):
        data = dict(self.result)
        data.update(extra)
        self.module.fail_json(msg=msg, **data)

    def _read_modules(self):
        path = os.path.join(self.params["proc_root"], "modules")
        try:
            with open(path) as handle:
                return parse_proc_modules(handle.read())
        except OSError as exc:
            self._fail("cannot read %s: %s" % (path, exc))

    def _run(self, argv):
        rc, out, err = self.module.run_command(argv)
        return rc, (err or out or "").strip()

    def _load(self, names, rmmod_error=None):
        modprobe = self.module.get_bin_path("modprobe", required=True)
        loaded = []
        for name in names:
            rc, text = self._run([modprobe, name])
            if rc != 0:
                self.result["loaded"] = loaded
                prefix = "%s; " % rmmod_error if rmmod_error else ""
                self._fail(
                    "%s'modprobe %s' failed (rc=%d): %s; loaded back so far: %s. Check 'dmesg' for NVRM "
                    "messages (a bad option value stops nvidia.ko from loading)"
                    % (prefix, name, rc, text, ", ".join(loaded) or "nothing"),
                    rc=rc,
                )
            loaded.append(name)
        return loaded

    def run(self):
        modules = self._read_modules()
        plan = plan_reload(modules, self.params["modules"])
        prefix = self.params["device_prefix"]
        holders = find_device_holders(self.params["proc_root"], prefix, ignore_pids=[os.getpid()])
        self.result.update(holders=holders, problems=plan["problems"], unloaded=plan["unload"], loaded=plan["load"])

        if not plan["unload"]:
            return "no NVIDIA module is loaded; nothing to reload"

        blockers = []
        if holders:
            blockers.append("processes still use the GPU: %s" % format_holders(holders, prefix))
        blockers.extend(plan["problems"])

        if self.module.check_mode:
            for text in blockers:
                self.module.warn("reload would be refused: %s" % text)
            self.result["changed"] = True
            return "would unload %s and load back %s" % (", ".join(plan["unload"]), ", ".join(plan["load"]))

        if blockers:
            self.result["unloaded"] = []
            self.result["loaded"] = []
            self._fail(
                "refusing to unload the NVIDIA modules: %s. Stop these (add their units to "
                "nvidia_driver_gpu_services) or reboot instead." % "; ".join(blockers)
            )

        rmmod = self.module.get_bin_path("rmmod", required=True)
        removed = []
        for name in plan["unload"]:
            rc, text = self._run([rmmod, name])
            if rc != 0:
                error = "'rmmod %s' failed (rc=%d): %s" % (name, rc, text)
                self.result["unloaded"] = removed
                self.result["changed"] = bool(removed)
                if removed:
                    # put back what is gone so the GPUs keep a driver
                    self._load(list(reversed(removed)), rmmod_error=error)
                self._fail("%s; loaded back: %s" % (error, ", ".join(reversed(removed)) or "nothing needed"), rc=rc)
            removed.append(name)
        self.result["changed"] = True
        self.result["unloaded"] = removed
        self.result["loaded"] = self._load(plan["load"])
        return "unloaded %s; loaded %s" % (", ".join(removed), ", ".join(self.result["loaded"]))


def main():
    module = build_module()
    module.run_command_environ_update = {"LANGUAGE": "C", "LC_ALL": "C"}
    reloader = Reloader(module)
    msg = reloader.run()
    module.exit_json(msg=msg, **reloader.result)


if __name__ == "__main__":
    main()
