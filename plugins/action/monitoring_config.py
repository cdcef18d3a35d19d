# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin for llmserve.sglang.monitoring_config: the sglang_monitoring role's variables and the inventory to
its checked settings and Prometheus scrape targets, in one task on the controller (plugins/plugin_utils/
monitoring_config.py does the work).

The role's variables are read here, by name, as the host sees them: ``__sglang_monitoring_settings`` (the settings
vars/main.yml assembles from the ``sglang_monitoring_*`` variables, with each rule's bounds) and, for the targets,
``monitoring_config.TARGET_VARIABLES``. The targets also read the inventory: ``groups`` and, of every host of group
all, the variables ``__sglang_monitoring_host_fields`` names and the default addresses of its gathered facts, through
``hostvars`` (where a host's ``ansible_host`` is only what the inventory, a set_fact or -e gave it). The settings are
checked first; where they hold, the targets are built. Each step reports every problem it finds at once, the
settings' before the inventory's, as the role's two tasks of old did. Nothing on any host is read or changed.
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.llmserve.sglang.plugins.plugin_utils.monitoring_config import (
    SETTINGS_VARIABLE,
    TARGET_VARIABLES,
    MonitoringConfigError,
    monitoring_config,
    targets_input,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.role_action import RoleAction

# what ``variables`` may give besides the role's variables (a play outside the role, a test)
INVENTORY_VARIABLES = ("inventory_hostname", "groups", "hostvars")


class ActionModule(RoleAction):

    ACTION = "monitoring_config"
    ROLE = "llmserve.sglang.sglang_monitoring"
    _VALID_ARGS = frozenset(("settings", "targets", "variables"))

    def _flag(self, name, default):
        value = self._task.args.get(name, default)
        try:
            return boolean(value, strict=True)
        except TypeError:
            raise AnsibleActionFail("monitoring_config: %s must be true or false, got %s"
                                    % (name, type(value).__name__))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        check_settings = self._flag("settings", True)
        build_targets = self._flag("targets", True)
        overrides = self._overrides()
        settings = self._variable(SETTINGS_VARIABLE, task_vars, overrides) if check_settings else None
        targets = None
        if build_targets:
            variables = dict((name, self._variable(name, task_vars, overrides)) for name in TARGET_VARIABLES)
            # the inventory as it stands: hostvars templates each host's variable for that host when it is read
            inventory = dict((name, overrides[name] if name in overrides else task_vars.get(name))
                             for name in INVENTORY_VARIABLES)
            try:
                targets = targets_input(variables, inventory["inventory_hostname"], inventory["groups"] or {},
                                        inventory["hostvars"] or {})
            except (KeyError, TypeError, ValueError) as exc:
                raise AnsibleActionFail("monitoring_config: cannot read the inventory: %s" % exc)
        try:
            checked = monitoring_config(settings, targets)
        except MonitoringConfigError as exc:
            # the message is the list of broken rules, as the role's fail and assert tasks showed it
            result.update(failed=True, problems=exc.problems, msg=exc.problems)
            return result
        except (TypeError, ValueError) as exc:
            # a malformed rule table: a bug in the role, not in its variables
            raise AnsibleActionFail("monitoring_config: %s" % exc)
        result.update(checked)
        result["changed"] = False
        return result
