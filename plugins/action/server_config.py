# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin for llmserve.sglang.server_config: the sglang_server role's variables to the rendered server, in one
task on the controller (plugins/plugin_utils/server_config.py does the work).

The role's variables are read here, by name, as the host sees them (``server_config.VARIABLES``: the
``sglang_server_*`` variables and the few ``__sglang_server_*`` the role derives from them), so the role needs no
copy of them in a set_fact and a variable reaches the unit in three steps: the inventory, this action, the template
that reads its registered result. The multi-node group's records (``__sglang_server_group_nodes``, each node's
``__sglang_server_node_vars``) are read only for a node of a multi-node server. For the result's ``addresses`` it
reads the host's ``ansible_facts`` and, from the host's own variables (``hostvars``), its ``ansible_host``: a task's
variables always hold one, the inventory name where the inventory sets none, which is no address the host was given.
Nothing on the host is read or changed; every broken rule fails the task at once.
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail

from ansible_collections.llmserve.sglang.plugins.plugin_utils.ranges import RangeSpecError
from ansible_collections.llmserve.sglang.plugins.plugin_utils.role_action import RoleAction
from ansible_collections.llmserve.sglang.plugins.plugin_utils.server_config import (
    HOST_VARIABLES,
    OPTIONAL_VARIABLES,
    VARIABLES,
    ServerConfigError,
    host_addresses,
    server_config,
)

GROUP_NODES = "__sglang_server_group_nodes"


class ActionModule(RoleAction):

    ACTION = "server_config"
    ROLE = "llmserve.sglang.sglang_server"
    OPTIONAL = OPTIONAL_VARIABLES
    _VALID_ARGS = frozenset(("speculative_off", "variables"))

    def _host(self, hostname, task_vars, overrides):
        """ansible_host (only where the inventory, a set_fact or -e sets it) and ansible_facts of this host."""
        host = {}
        own = task_vars.get("hostvars")
        # hostvars[name] as the addresses entry point reads it: without the connection variables the task adds
        own = own[hostname] if own is not None and isinstance(hostname, str) and hostname in own else {}
        if "ansible_host" in own:
            host["ansible_host"] = own["ansible_host"]
        if "ansible_facts" in task_vars:
            host["ansible_facts"] = self._templar.resolve_variable_expression("ansible_facts")
        host.update((name, overrides[name]) for name in HOST_VARIABLES if name in overrides)
        return host

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        speculative_off = self._task.args.get("speculative_off", False)
        if not isinstance(speculative_off, bool):
            raise AnsibleActionFail("server_config: speculative_off must be true or false, got %s"
                                    % type(speculative_off).__name__)
        overrides = self._overrides()
        variables = dict((name, self._variable(name, task_vars, overrides)) for name in VARIABLES)
        nodes = {}
        if variables.get("sglang_server_node_group"):
            nodes = self._variable(GROUP_NODES, task_vars, overrides)
        hostname = overrides.get("inventory_hostname", task_vars.get("inventory_hostname"))
        try:
            rendered = server_config(variables, nodes=nodes, hostname=hostname, speculative_off=speculative_off)
        except ServerConfigError as exc:
            # the message is the list of broken rules, as the role's assert showed it
            result.update(failed=True, problems=exc.problems, msg=exc.problems)
            return result
        except (RangeSpecError, TypeError, ValueError) as exc:
            raise AnsibleActionFail("server_config: %s" % exc)
        result.update(rendered)
        # where the server is reached: read once the configuration is valid, so the rules' messages stay the first word
        result["addresses"] = host_addresses(variables, hostname, self._host(hostname, task_vars, overrides))
        result["changed"] = False
        # the --config file (API keys), the environment file (HF token) and the configuration carry secrets: the
        # result is never shown, whatever the task says; a failure is (its messages never show a secret's value)
        result["_ansible_no_log"] = True
        return result
