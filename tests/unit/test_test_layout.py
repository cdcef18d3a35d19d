# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The test tree imports its files by basename (no __init__.py), so two test files of one name in two folders pass
when each runs alone and stop `make unit` at collection ("import file mismatch"). Found twice by a clean-clone run."""

from __future__ import annotations

import collections
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_test_file_name_is_unique_across_the_test_tree():
    by_name = collections.defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        if "__pycache__" not in path.parts:
            by_name[path.name].append(str(path.relative_to(TESTS)))
    assert len(by_name) > 100  # the whole tree was read
    clashes = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert not clashes, "rename one of each: %s" % clashes
