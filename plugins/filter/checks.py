# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks the roles share that are not about one product: range rules of numeric variables."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_native

# Helpers are imported inside the filters: Ansible imports every filter file of the collection to find any one
# filter, in each worker process, so an import up here would be paid by every task that uses any of them.


def range_problems(rules):
    """``{variable: [value, minimum, maximum]}`` -> messages naming each variable out of its range."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.ranges import (
        RangeSpecError,
        range_problems as _range_problems,
    )

    try:
        return _range_problems(dict(rules) if hasattr(rules, "items") else rules)
    except RangeSpecError as exc:
        raise AnsibleFilterError("range_problems: %s" % to_native(exc))


class FilterModule(object):
    """Shared checks."""

    def filters(self):
        return {"range_problems": range_problems}
