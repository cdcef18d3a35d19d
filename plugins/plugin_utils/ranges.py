# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Range rules for the roles' numeric time, size and count variables, one message per broken rule naming the variable.

``range_problems({"sglang_server_ready_timeout": [value, 1, 86400], ...})`` returns, in the order given,
``"sglang_server_ready_timeout: must be an integer from 1 to 86400, got -5"`` for each value that is not an integer
(booleans are not) or is outside its bounds. Controller only.
"""

from __future__ import annotations

from ansible_collections.llmserve.sglang.plugins.plugin_utils.values import as_int


class RangeSpecError(ValueError):
    """The rule table itself is malformed (a bug in the role, not in the inventory)."""


def range_problems(rules):
    """``{variable: [value, minimum, maximum]}`` -> list of messages for the values that break their rule."""
    if not isinstance(rules, dict):
        raise RangeSpecError("the rules must be a dict of variable -> [value, minimum, maximum]")
    problems = []
    for name, rule in rules.items():
        if not isinstance(rule, (list, tuple)) or len(rule) != 3 \
                or not all(isinstance(bound, int) and not isinstance(bound, bool) for bound in rule[1:]):
            raise RangeSpecError("%s: the rule must be [value, minimum, maximum] with integer bounds, got %r"
                                 % (name, rule))
        value, low, high = rule
        number = as_int(value, floats=True)
        if number is None or not low <= number <= high:
            shown = repr(value) if isinstance(value, str) else str(value)
            problems.append("%s: must be an integer from %d to %d, got %s" % (name, low, high, shown[:80]))
    return problems
