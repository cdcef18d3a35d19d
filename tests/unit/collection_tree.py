# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection link tree the repository's conftest.py made, for tests that run ansible-playbook."""

from __future__ import annotations

import os

import pytest


def collections_path():
    """The directory to put on ANSIBLE_COLLECTIONS_PATH (it holds ansible_collections/llmserve/sglang)."""
    tree = os.environ.get("LLMSERVE_PYTEST_TREE")
    if not tree or not os.path.isdir(os.path.join(tree, "ansible_collections", "llmserve", "sglang")):
        pytest.skip("collection link tree not found (run from the repository root, which has the conftest)")
    return tree
