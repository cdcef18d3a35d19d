# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The gateway pools of a rollout and their windows (plugins/plugin_utils/rollout_window.py)."""

from __future__ import annotations

import pytest

from ansible_collections.llmserve.sglang.plugins.plugin_utils.rollout_window import (
    WindowError,
    batch_problems,
    host_pools,
    max_unavailable_problem,
    min_healthy,
    pool_window,
)

POOLS = {
    "gw-b": [{"name": "b1", "url": "http://b1:30000"}, {"name": "b2", "url": "http://b2:30000"},
             {"name": "b3", "url": "http://b3:30000"}, {"name": "b4", "url": "http://b4:30000"}],
    "gw-a": ["a1", "a2", "a3", "a4", "shared"],
    "gw-c": ["shared", "c1"],
}


@pytest.mark.parametrize("value, size, window", [
    (1, 4, 1), ("1", 4, 1), (2, 4, 2), (2.0, 4, 2), (" 3 ", 8, 3),
    # never the pool's last worker, never fewer than one
    (5, 4, 3), (100, 2, 1), (1, 1, 1), (3, 1, 1),
    # percentages round down, at least one
    ("25%", 8, 2), ("25%", 4, 1), ("25%", 3, 1), ("50%", 4, 2), ("50 %", 5, 2), ("100%", 4, 3),
    ("12.5%", 16, 2), ("1%", 10, 1), ("100%", 1, 1),
])
def test_pool_window(value, size, window):
    assert pool_window(value, size) == window
    assert min_healthy(value, size) == max(1, size - window)


@pytest.mark.parametrize("value", [0, -1, "0", "", "two", "0%", "101%", "-5%", "25", True, None, 1.5, [1], "%",
                                   float("nan"), float("inf"), float("-inf"), "1e999%", "nan%", "inf%", "9" * 400 + "%",
                                   "2%\x1b[31m"])
def test_bad_max_unavailable_names_the_setting_and_the_rule(value):
    if value == "25":
        assert max_unavailable_problem(value) == ""
        return
    message = max_unavailable_problem(value)
    assert message.startswith("sglang_rollout_max_unavailable: must be a whole number of workers >= 1 or a percentage")
    assert repr(value) in message
    with pytest.raises(WindowError):
        pool_window(value, 4)


def test_host_pools_sorted_by_gateway_with_windows():
    assert host_pools("shared", POOLS, "50%") == [
        {"gateway": "gw-a", "size": 5, "window": 2, "min_healthy": 3},
        {"gateway": "gw-c", "size": 2, "window": 1, "min_healthy": 1},
    ]
    assert host_pools("b3", POOLS, 2) == [{"gateway": "gw-b", "size": 4, "window": 2, "min_healthy": 2}]
    assert host_pools("nowhere", POOLS, 1) == []
    assert host_pools("a1", {}, 1) == []


@pytest.mark.parametrize("pools", [None, ["gw"], {"gw": "a1"}, {"gw": [{"url": "x"}]}, {"gw": [""]}])
def test_host_pools_refuses_what_is_no_pool(pools):
    with pytest.raises(WindowError):
        host_pools("a1", pools, 1)


def test_batch_problems_count_per_pool():
    # one worker of each pool: fine with a window of one
    assert batch_problems(["a1", "b1"], POOLS, 1) == []
    # two of gw-a in one batch with a window of one: refused, naming the pool, the hosts and the window
    problems = batch_problems(["a1", "a2", "b1"], POOLS, 1)
    assert len(problems) == 1
    assert "2 of the 5 workers of gateway gw-a" in problems[0]
    assert "a1, a2" in problems[0]
    assert "sglang_rollout_max_unavailable (1)" in problems[0]
    # a worker in two pools counts in both
    assert [p.split(" out at once")[0] for p in batch_problems(["shared", "c1", "a1"], POOLS, 1)] == [
        "This batch takes 2 of the 5 workers of gateway gw-a",
        "This batch takes 2 of the 2 workers of gateway gw-c",
    ]
    assert batch_problems(["a1", "a2", "b1", "b2"], POOLS, "50%") == []
    assert batch_problems([], POOLS, 1) == []
