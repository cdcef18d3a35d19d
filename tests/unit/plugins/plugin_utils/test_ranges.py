# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Range rules of the roles' numeric variables: every broken rule names its variable; every numeric variable of every
role entry point is covered by a range rule or by the product rules that check it."""

from __future__ import annotations

import glob
import os
import re

import pytest
import yaml

from ansible_collections.llmserve.sglang.plugins.plugin_utils.ranges import RangeSpecError, range_problems

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
# numeric variables whose range the product rules check (sglang_args, sglang_nodes, gateway_config, the preflight)
CHECKED_ELSEWHERE = {
    "sglang_server_port", "sglang_server_tp_size",
    "sglang_server_node_rank", "sglang_server_dist_init_port", "sglang_gateway_port", "sglang_gateway_metrics_port",
    "sglang_gateway_health_check_interval", "sglang_gateway_health_check_timeout",
    "sglang_gateway_health_failure_threshold", "sglang_gateway_health_success_threshold",
    "sglang_gateway_retry_max_retries", "sglang_gateway_retry_initial_backoff_ms", "sglang_gateway_retry_max_backoff_ms",
    "sglang_gateway_shutdown_grace_period", "iommu_preflight_p2p_timeout", "iommu_preflight_p2p_buffer_mib",
}


@pytest.mark.parametrize("value, ok", [
    (1, True), ("30", True), (30.0, True), (0, False), (3601, False), (-5, False), ("ten", False), (True, False),
    (None, False), (2.5, False), ("30\nExecStartPre=+/bin/true", False),
])
def test_range_problems(value, ok):
    problems = range_problems({"x_timeout": [value, 1, 3600]})
    assert (problems == []) is ok
    if not ok:
        assert problems[0].startswith("x_timeout: must be an integer from 1 to 3600, got ")
        assert "\n" not in problems[0] or "\\n" in problems[0]


def test_every_broken_rule_is_reported_in_order():
    problems = range_problems({"a": [0, 1, 2], "b": [1, 1, 2], "c": [9, 1, 2]})
    assert [p.split(":")[0] for p in problems] == ["a", "c"]


def test_malformed_rules_are_a_bug_of_the_role():
    with pytest.raises(RangeSpecError):
        range_problems({"a": [1, 1]})
    with pytest.raises(RangeSpecError):
        range_problems({"a": [1, "1", 2]})


def _role_numbers(role):
    specs = yaml.safe_load(open(os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml")))
    return {name for entry in specs["argument_specs"].values() for name, spec in entry.get("options", {}).items()
            if spec.get("type") in ("int", "float")}


@pytest.mark.parametrize("role", sorted(os.path.basename(os.path.dirname(os.path.dirname(p)))
                                        for p in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml"))))
def test_every_numeric_variable_has_a_range(role):
    text = ""
    for path in glob.glob(os.path.join(ROOT, "roles", role, "vars", "*.yml")) \
            + glob.glob(os.path.join(ROOT, "roles", role, "tasks", "validate.yml")):
        text += open(path).read()
    ranged = set(re.findall(r"['\"]?(\w+)['\"]?: \[['\"]?\{\{ ?\1 ?\}\}|'(\w+)': \[\2,", text))
    ranged = {a or b for a, b in ranged}
    # a role whose checks moved into its controller action (plugins/plugin_utils/<action>.py, on rules.py)
    for path in glob.glob(os.path.join(ROOT, "plugins", "plugin_utils", "*.py")):
        ranged.update(re.findall(r"range_rule\(problems, \"(%s_\w+)\"" % role, open(path).read()))
    missing = _role_numbers(role) - ranged - CHECKED_ELSEWHERE
    assert not missing, "%s: numeric variables without a range rule: %s" % (role, sorted(missing))


@pytest.mark.parametrize("value", ["--5", "²", "9" * 5000])
def test_text_that_int_cannot_read_is_a_problem_not_a_crash(value):
    # "--5".lstrip("-") and "²" passed isdigit() and then int() raised ValueError
    problems = range_problems({"x_timeout": [value, 1, 3600]})
    assert len(problems) == 1 and problems[0].startswith("x_timeout: must be an integer from 1 to 3600, got ")
