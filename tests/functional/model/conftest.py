# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures of the model tests: the test mirror (olah behind the hostile proxy, see model_mirror_helpers), started
once per test module with that module's ``BIG_SIZE``, and a fresh request log and rule file for each test."""

from __future__ import annotations

import pytest

from model_mirror_helpers import start_mirror


@pytest.fixture(scope="module")
def mirror(request, tmp_path_factory):
    made = start_mirror(tmp_path_factory.mktemp("mirror"), request.module.BIG_SIZE)
    try:
        yield made
    finally:
        made.proxy.stop()
        made.olah.stop()


@pytest.fixture
def hostile(mirror, tmp_path):
    """The mirror with a request log and rules of this test's own: ``hostile.set_rules(*rules)``."""
    mirror.watch(tmp_path / "proxy.log", tmp_path / "rules.json")
    yield mirror
    mirror.unwatch()
