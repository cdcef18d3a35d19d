# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures of the p2p_check tests: the stand-in CUDA runtime, built once per session (see p2p_standin_helpers)."""

from __future__ import annotations

import pytest

from p2p_standin_helpers import Standin, build_standin


@pytest.fixture(scope='session')
def standin_build(tmp_path_factory):
    return build_standin(tmp_path_factory)


@pytest.fixture
def standin(standin_build):
    """A Standin with a shared memory prefix of its own; fails the test when a run leaked a segment, unless the
    test set ``leftovers_allowed`` (a killed process cannot free its memory)."""
    made = Standin(standin_build)
    made.leftovers_allowed = False
    yield made
    left = made.leftovers()
    made.clean()
    if not made.leftovers_allowed:
        assert left == [], 'shared memory segments left behind: %s' % left
