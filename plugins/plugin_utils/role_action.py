# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the collection's role actions share (server_config, gateway_config, monitoring_config, nvidia_driver_config):
each reads its role's variables by name, as the host sees them, with a ``variables`` argument that stands in for any
of them (a play outside the role, a test). Controller only."""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase


class RoleAction(ActionBase):
    """An action of one role. Subclasses set ACTION (its short name, the first word of its messages), ROLE (the
    role's FQCN) and OPTIONAL (variables that may be undefined: None then)."""

    ACTION = ""
    ROLE = ""
    OPTIONAL = frozenset()

    _supports_check_mode = True
    _supports_async = False
    _VALID_ARGS = frozenset(("variables",))

    def _overrides(self):
        """The ``variables`` argument: variable name to the value used instead of the host's."""
        overrides = self._task.args.get("variables") or {}
        if not isinstance(overrides, dict):
            raise AnsibleActionFail("%s: variables must be a dict, got %s" % (self.ACTION, type(overrides).__name__))
        return overrides

    def _variable(self, name, task_vars, overrides):
        if name in overrides:
            return overrides[name]
        if name not in task_vars:
            if name in self.OPTIONAL:
                return None
            raise AnsibleActionFail("%s: the variable %s is not defined (run the action from the %s role, or pass it "
                                    "in variables)" % (self.ACTION, name, self.ROLE))
        # templated as the host sees it, with the same engine as the task's arguments
        return self._templar.resolve_variable_expression(name)

    def _start(self, tmp, task_vars, names):
        """What every run begins with: ``(result, task_vars, overrides, variables)``, the last the named variables."""
        result = super(RoleAction, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        overrides = self._overrides()
        return result, task_vars, overrides, dict((name, self._variable(name, task_vars, overrides)) for name in names)
