# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin for llmserve.sglang.gateway_config: the sglang_gateway role's variables and the workers of its
inventory group to the rendered gateway, in one task on the controller (plugins/plugin_utils/gateway_role.py does the
work).

The role's variables are read here, by name, as the host sees them (``gateway_role.VARIABLES``: the
``sglang_gateway_*`` variables and the two ``__sglang_gateway_*`` the role derives from them), so the role needs no
copy of them in a set_fact. The workers come from ``groups`` and ``hostvars`` (``gateway_role.collect_workers``), the
gateway's own name and address from ``inventory_hostname`` and the task's ``ansible_host`` (the inventory name where
the inventory sets none), as the role's set_fact read them. Nothing on any host is read or changed; every broken rule
fails the task at once.
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail

from ansible_collections.llmserve.sglang.plugins.plugin_utils.gateway_role import (
    VARIABLES,
    GatewayRoleError,
    WorkerCollectionError,
    collect_workers,
    gateway_config,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.ranges import RangeSpecError
from ansible_collections.llmserve.sglang.plugins.plugin_utils.role_action import RoleAction

# what ``variables`` may give besides the role's variables
INVENTORY_VARIABLES = ("inventory_hostname", "ansible_host", "hostvars", "groups")


class ActionModule(RoleAction):

    ACTION = "gateway_config"
    ROLE = "llmserve.sglang.sglang_gateway"

    def _inventory(self, task_vars, overrides):
        """inventory_hostname, ansible_host (the task's: the inventory name where none is set), hostvars, groups."""
        found = {}
        for name in INVENTORY_VARIABLES:
            if name in overrides:
                found[name] = overrides[name]
            elif name == "ansible_host":
                # the role's set_fact read ``ansible_host | default('')``
                found[name] = self._templar.template(task_vars[name]) if name in task_vars else ""
            else:
                found[name] = task_vars.get(name) or ({} if name in ("hostvars", "groups") else None)
        return found

    def run(self, tmp=None, task_vars=None):
        result, task_vars, overrides, variables = self._start(tmp, task_vars, VARIABLES)
        del tmp
        inventory = self._inventory(task_vars, overrides)
        try:
            workers = collect_workers(inventory["hostvars"], inventory["groups"],
                                      variables["sglang_gateway_workers_group"])
            rendered = gateway_config(variables, workers, inventory["inventory_hostname"], inventory["ansible_host"])
        except GatewayRoleError as exc:
            # the message is the list of broken rules, as the role's asserts showed them
            result.update(failed=True, problems=exc.problems, msg=exc.problems)
            return result
        except (WorkerCollectionError, RangeSpecError, TypeError, ValueError) as exc:
            raise AnsibleActionFail("gateway_config: %s" % exc)
        result.update(rendered)
        result["changed"] = False
        # the environment file's content (env_file: the workers' and the admin API key) is secret: the result is never
        # shown, whatever the task says; a failure is (its messages never show a secret's value)
        result["_ansible_no_log"] = True
        return result
