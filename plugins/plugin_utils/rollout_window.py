# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The gateway pools of a rollout and the window of each: how many of a pool's workers may be out at once.

A pool is one gateway's worker set (the ``sglang_gateway_workers`` the gateway role publishes, by inventory name).
``sglang_rollout_max_unavailable`` is a count (``2``) or a percentage of each pool (``"25%"``, rounded down); either
way a pool's window is at least one worker and never its last one: a pool of ``n > 1`` workers keeps ``n - window >=
1`` healthy. A pool of one worker has window 1 and ``min_healthy`` 1, so the gateway module refuses to drain its only
worker, as it always did.

``host_pools`` gives a host the pools it is in, sorted by gateway name: the rollout takes their window slots in that
order, so two hosts (or two runs) that need the same two pools never wait on each other in a cycle.
``batch_problems`` checks a lockstep batch against every pool it touches (a batch drains all its hosts at once).
"""

from __future__ import annotations

import math
import re

SETTING = "sglang_rollout_max_unavailable"
_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")


class WindowError(ValueError):
    """A max_unavailable or pool description the rollout cannot use."""


def max_unavailable_problem(value):
    """'' when ``value`` is a usable sglang_rollout_max_unavailable, else the message that names the rule."""
    try:
        _parse(value)
    except WindowError as exc:
        return str(exc)
    return ""


def _parse(value):
    """('count', n) or ('percent', p) from a max_unavailable value; WindowError names the setting and the rule."""
    rule = ("%s: must be a whole number of workers >= 1 or a percentage of each gateway's workers such as '25%%' "
            "(more than 0, at most 100), got %r" % (SETTING, value))
    if isinstance(value, bool):
        raise WindowError(rule)
    if isinstance(value, int):
        if value < 1:
            raise WindowError(rule)
        return ("count", value)
    if isinstance(value, float):
        # .nan and .inf are floats in YAML: int() would raise on them
        if not math.isfinite(value) or value != int(value) or value < 1:
            raise WindowError(rule)
        return ("count", int(value))
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            if int(text) < 1:
                raise WindowError(rule)
            return ("count", int(text))
        match = _PERCENT.match(text)
        if match:
            percent = float(match.group(1))
            if 0 < percent <= 100:
                return ("percent", percent)
    raise WindowError(rule)


def pool_window(max_unavailable, size):
    """The most workers of a pool of ``size`` workers that may be out at once (>= 1, < size when size > 1)."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise WindowError("a pool's size must be a whole number >= 0, got %r" % (size,))
    kind, amount = _parse(max_unavailable)
    window = amount if kind == "count" else int(size * amount / 100.0)
    return max(1, min(window, size - 1))


def min_healthy(max_unavailable, size):
    """What the gateway must keep healthy while one of the pool's workers goes out (gateway_worker's min_healthy):
    the pool less its window, and never fewer than one."""
    return max(1, size - pool_window(max_unavailable, size))


def _pool_members(workers):
    if not isinstance(workers, (list, tuple)):
        raise WindowError("a gateway's workers must be a list, got %r" % (workers,))
    names = []
    for worker in workers:
        name = worker.get("name") if isinstance(worker, dict) else worker
        if not isinstance(name, str) or not name:
            raise WindowError("a gateway's worker has no name: %r" % (worker,))
        names.append(name)
    return names


def host_pools(host, pools, max_unavailable):
    """The pools ``host`` is a worker of, sorted by gateway: ``[{gateway, size, window, min_healthy}]``.

    ``pools``: gateway -> its workers (names, or ``{name, url}`` dicts as the gateway role publishes them)."""
    if not isinstance(pools, dict):
        raise WindowError("pools must map each gateway to its workers, got %r" % (pools,))
    found = []
    for gateway in sorted(pools):
        members = _pool_members(pools[gateway])
        if host in members:
            size = len(members)
            found.append({"gateway": gateway, "size": size, "window": pool_window(max_unavailable, size),
                          "min_healthy": min_healthy(max_unavailable, size)})
    return found


def batch_problems(batch, pools, max_unavailable):
    """One message per pool that a lockstep batch would take more workers out of than the pool's window."""
    problems = []
    batch = list(batch or [])
    for gateway in sorted(pools or {}):
        members = _pool_members(pools[gateway])
        out = [host for host in batch if host in members]
        window = pool_window(max_unavailable, len(members))
        if len(out) > window:
            problems.append(
                "This batch takes %d of the %d workers of gateway %s out at once (%s), more than %s (%r) allows "
                "there (%d): a batch drains all its servers together, so sglang_rollout_serial must not put more "
                "workers of one gateway into a batch than its window." % (
                    len(out), len(members), gateway, ", ".join(out), SETTING, max_unavailable, window))
    return problems
