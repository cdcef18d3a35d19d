# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures the unit tests share."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest


@pytest.fixture
def store_dir():
    """A fresh directory for a model store where the sglang_model role accepts one: not under /tmp (pytest's
    tmp_path is), which the role refuses as volatile and world-writable. Root's under LLMSERVE_CACHE (the test
    assets' own directory), another user's under ~/.cache; removed afterwards."""
    if os.geteuid() == 0:
        base = os.path.join(os.environ.get("LLMSERVE_CACHE") or "/var/cache/llmserve", "test-stores")
    else:
        base = os.path.join(os.path.expanduser("~"), ".cache", "llmserve-test-stores")
    os.makedirs(base, 0o755, exist_ok=True)
    path = tempfile.mkdtemp(prefix="store-", dir=base)
    os.chmod(path, 0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
