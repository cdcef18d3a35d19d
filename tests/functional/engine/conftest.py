# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures of the engine tests: the CPU SGLang venv (see engine_tools)."""

from __future__ import annotations

import os

import pytest

from ansible_collections.llmserve.sglang.tests.functional.engine.engine_tools import VENV


@pytest.fixture(scope="session")
def sglang_venv():
    """The python of the CPU SGLang venv. The test is skipped where ``LLMSERVE_SGLANG_VENV`` is not set, and fails
    where it names a folder without ``bin/python`` (a wrong path is a mistake to see, not a reason to skip)."""
    if not VENV:
        pytest.skip("LLMSERVE_SGLANG_VENV is not set: it must name the CPU SGLang venv made by "
                    "tools/engine/install_sglang_venv.sh (make engine-assets exports it)")
    python = os.path.join(VENV, "bin", "python")
    assert os.path.isfile(python), "LLMSERVE_SGLANG_VENV=%s has no bin/python" % VENV
    return python
