# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""For tests that pin what a module_utils file may import (it must run on the managed hosts)."""

from __future__ import annotations

import ast


def top_level_imports(path, feature_version=(3, 9)):
    """Top-level package names a source file imports; parsing with ``feature_version`` also proves its syntax."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), feature_version=feature_version)
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    return imported
