# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the ``*_differential`` tests share: the seed and number of generated cases, the draw of a good or a bad
value, the fixture that loads the baseline module, and the loop that compares the code now with its baseline on
every case.

``LLMSERVE_DIFF_COUNT`` sets the number of cases (default 4000), for a longer run or a quick one."""

from __future__ import annotations

import os
import random

import pytest

SEED = 47
COUNT = int(os.environ.get("LLMSERVE_DIFF_COUNT", "4000"))


def pick(rng, good, bad, rate):
    """One of ``bad`` with the chance ``rate`` (where there are any), else one of ``good``."""
    return rng.choice(bad) if bad and rng.random() < rate else rng.choice(good)


def baseline_fixture(rev, path):
    """A module-scoped fixture: the collection's file ``path`` as it was at commit ``rev`` (conftest's
    ``baseline_module``; the test is skipped where that history is not there)."""

    @pytest.fixture(scope="module")
    def baseline(baseline_module):
        return baseline_module(rev, path)

    return baseline


def matching_cases(generate, outcome, module, baseline, spread=False, seed=SEED, count=COUNT):
    """``(case, outcome)`` for each of ``count`` cases that ``generate(rng)`` draws from ``random.Random(seed)``,
    after asserting that ``outcome(module, case)`` equals ``outcome(baseline, case)``: the first case that differs
    fails the test, with its number and input. ``spread``: a case is a tuple of arguments for ``outcome``."""
    rng = random.Random(seed)
    for number in range(count):
        case = generate(rng)
        args = case if spread else (case,)
        new, old = outcome(module, *args), outcome(baseline, *args)
        assert new == old, "case %d differs: %s" % (number, ", ".join(repr(arg) for arg in args))
        yield case, new
