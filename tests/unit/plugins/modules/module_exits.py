# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the module unit tests share: exit_json/fail_json turned into exceptions that carry the result.

The result is masked with the module's no_log values first, as Ansible masks what a module returns,
so tests see exactly what a playbook would.  ``run_module`` runs a module's ``main()`` with task arguments and
hands back how it ended.
"""

from __future__ import annotations

import json

from ansible.module_utils import basic
from ansible.module_utils.common.text.converters import to_bytes


class ModuleExit(Exception):
    def __init__(self, result):
        super().__init__(result)
        self.result = result


class ExitJson(ModuleExit):
    """The module called exit_json."""


class FailJson(ModuleExit):
    """The module called fail_json."""


def exit_json(self, **kwargs):
    raise ExitJson(basic.remove_values(kwargs, self.no_log_values))


def fail_json(self, **kwargs):
    kwargs = basic.remove_values(kwargs, self.no_log_values)
    kwargs["failed"] = True
    raise FailJson(kwargs)


def patch_exits(monkeypatch):
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)


def run_module(monkeypatch, module, args, check_mode=False):
    """The ExitJson or FailJson that ``module.main()`` ends with, given the task arguments ``args``."""
    patch_exits(monkeypatch)
    args = dict(args)
    if check_mode:
        args["_ansible_check_mode"] = True
    monkeypatch.setattr(basic, "_ANSIBLE_ARGS", to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args})))
    monkeypatch.setattr(basic, "_ANSIBLE_PROFILE", "legacy")
    try:
        module.main()
    except ModuleExit as exc:
        return exc
    raise AssertionError("%s.main() returned without exit_json or fail_json" % module.__name__)
