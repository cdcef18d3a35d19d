# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin for llmserve.sglang.nvidia_driver_config: the nvidia_driver role's variables to its rendered options
file, in one task on the controller (plugins/plugin_utils/nvidia_driver_config.py holds the rules).

The role's variables are read here, by name, as the host sees them (``nvidia_driver_config.VARIABLES``). Every broken
rule fails the task at once, before anything on the host is read or changed. Otherwise the role's own template
(roles/nvidia_driver/templates/nvidia-options.conf.j2) is rendered here, once, the way ansible.builtin.template renders
it (the task's variables, ``ansible_managed`` and the other template variables, trim_blocks), with the options line
in ``__nvidia_driver_options_line``; the role writes the result's ``content`` with ansible.builtin.copy and its plan
compares ``sha256`` with the file's.
"""

from __future__ import annotations

import hashlib
import os

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.module_utils.common.text.converters import to_bytes
from ansible.template import generate_ansible_template_vars, trust_as_template

from ansible_collections.llmserve.sglang.plugins.plugin_utils.nvidia_driver_config import (
    OPTIONAL_VARIABLES,
    VARIABLES,
    nvidia_driver_problems,
    nvidia_driver_values,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.ranges import RangeSpecError
from ansible_collections.llmserve.sglang.plugins.plugin_utils.role_action import RoleAction

TEMPLATE = "nvidia-options.conf.j2"
# the role's template, found from this file: the action belongs to the role and renders it from a play outside the
# role too (the role's own template always wins over a playbook's templates/ anyway)
TEMPLATE_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                             "roles", "nvidia_driver", "templates", TEMPLATE)
# the variable the template reads the options line from
OPTIONS_LINE_VARIABLE = "__nvidia_driver_options_line"


class ActionModule(RoleAction):

    ACTION = "nvidia_driver_config"
    ROLE = "llmserve.sglang.nvidia_driver"
    OPTIONAL = OPTIONAL_VARIABLES

    def _render(self, task_vars, options_line, dest):
        """The options file as ansible.builtin.template writes it (plugins/action/template.py of ansible-core)."""
        template_data = trust_as_template(self._loader.get_text_file_contents(TEMPLATE_PATH))
        template_vars = dict(task_vars)
        generated = generate_ansible_template_vars(TEMPLATE, fullpath=TEMPLATE_PATH, dest_path=dest)
        if "ansible_managed" in template_vars:
            # the inventory's own ansible_managed is kept, as the template module keeps it
            generated.pop("ansible_managed", None)
        template_vars.update(generated)
        template_vars[OPTIONS_LINE_VARIABLE] = options_line
        templar = self._templar.copy_with_new_env(searchpath=[os.path.dirname(TEMPLATE_PATH)],
                                                  available_variables=template_vars)
        rendered = templar.template(template_data, escape_backslashes=False,
                                    overrides=dict(trim_blocks=True, lstrip_blocks=False, newline_sequence="\n"))
        return rendered or ""

    def run(self, tmp=None, task_vars=None):
        result, task_vars, overrides, variables = self._start(tmp, task_vars, VARIABLES)
        del tmp
        try:
            problems = nvidia_driver_problems(variables)
        except (AnsibleError, RangeSpecError, TypeError, ValueError) as exc:
            raise AnsibleActionFail("nvidia_driver_config: %s" % exc)
        if problems:
            # the message is the list of broken rules, as the role's assert showed it
            result.update(failed=True, problems=problems, msg=problems)
            return result
        try:
            config = nvidia_driver_values(variables)
        except (AnsibleError, TypeError, ValueError) as exc:
            raise AnsibleActionFail("nvidia_driver_config: %s" % exc)
        content = self._render(dict(task_vars, **overrides), config["options_line"],
                               config["variables"]["nvidia_driver_modprobe_file"])
        result.update(config)
        result["content"] = content
        result["sha256"] = hashlib.sha256(to_bytes(content, errors="surrogate_or_strict")).hexdigest()
        result["changed"] = False
        return result
