#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: nvidia_driver_config
short_description: Check the nvidia_driver variables and render the NVIDIA module options file
version_added: 0.2.0
description:
  - The step of the C(llmserve.sglang.nvidia_driver) role that turns its variables into the modprobe.d options file, as
    one task on the controller. The role's C(validate.yml) runs it before anything on the host is read or changed;
    C(configure.yml) writes RV(content) and C(plan.yml) compares RV(sha256) with the file on the host.
  - The action reads the role's variables itself, by name, as the host sees them (C(nvidia_driver_registry_dwords),
    C(nvidia_driver_module_params), C(nvidia_driver_modprobe_file), C(nvidia_driver_apply),
    C(nvidia_driver_reboot_ok), C(nvidia_driver_gpu_services), C(nvidia_driver_hold_file),
    C(nvidia_driver_reboot_timeout)); O(variables) may stand in for any of them.
  - "It checks, every broken rule at once and in this order: the option mappings (as
    P(llmserve.sglang.nvidia_driver_param_errors#filter)), that kmod reads C(nvidia_driver_modprobe_file), that a
    reboot has its permission, that C(nvidia_driver_gpu_services) is a list of names, that APT reads
    C(nvidia_driver_hold_file), and the range of C(nvidia_driver_reboot_timeout) (as
    P(llmserve.sglang.range_problems#filter))."
  - Any broken rule fails the task with C(problems) (see RETURN); the host is not contacted.
  - Otherwise it renders the role's C(templates/nvidia-options.conf.j2) once, as M(ansible.builtin.template) renders
    it (the task's variables, C(ansible_managed), trim_blocks), with the options line of
    P(llmserve.sglang.nvidia_modprobe_options#filter).
author: llmserve developers (@llmserve)
extends_documentation_fragment: [ansible.builtin.action_common_attributes, llmserve.sglang.attributes,
                                 llmserve.sglang.attributes.controller_action, llmserve.sglang.role_action]
seealso:
  - {plugin: llmserve.sglang.nvidia_driver_param_errors, plugin_type: filter}
  - {plugin: llmserve.sglang.nvidia_modprobe_options, plugin_type: filter}
notes:
  - The role registers the result as C(__nvidia_driver_config); C(configure.yml) writes RV(content) with
    M(ansible.builtin.copy), C(plan.yml) compares RV(sha256), C(conflicts.yml) scans for RV(param_names).
"""

EXAMPLES = r"""
- name: Validate the role variables (in the nvidia_driver role)
  llmserve.sglang.nvidia_driver_config:
  register: __nvidia_driver_config

- name: Check driver options outside the role, with some variables given here
  llmserve.sglang.nvidia_driver_config:
    variables:
      nvidia_driver_registry_dwords:
        DmaRemapPeerMmio: 1
  register: driver_options
"""

RETURN = r"""
extends_documentation_fragment: [llmserve.sglang.role_action]
content:
  description: The options file as the role writes it, C(ansible_managed) header included.
  returned: success
  type: str
  sample: "#\n# Ansible managed\n#\n#\n# NVIDIA kernel module options (role llmserve.sglang.nvidia_driver).\n..."
sha256:
  description: The SHA-256 of RV(content) (UTF-8), as the file on the host has it when it is current.
  returned: success
  type: str
options_line:
  description: The C(options nvidia ...) line of the file, empty when no option is wanted.
  returned: success
  type: str
  sample: options nvidia NVreg_EnableStreamMemOPs=1 NVreg_RegistryDwords="DmaRemapPeerMmio=1"
param_names:
  description: The option names the file sets (C(NVreg_RegistryDwords) first when registry dwords are wanted).
  returned: success
  type: list
  elements: str
  sample: ["NVreg_RegistryDwords", "NVreg_EnableStreamMemOPs"]
variables:
  description:
    - The variables as the role uses them, by name. The option mappings are V({}) for a blank value,
      C(nvidia_driver_reboot_ok) is a boolean and C(nvidia_driver_reboot_timeout) an integer.
  returned: success
  type: dict
  sample: {"nvidia_driver_apply": "none", "nvidia_driver_module_params": {}, "nvidia_driver_reboot_timeout": 1800}
"""
