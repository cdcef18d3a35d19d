# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures the unit tests share."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile

import pytest

# the differential tests' shared comparison asserts in that module: show its comparisons as pytest does in a test
pytest.register_assert_rewrite("ansible_collections.llmserve.sglang.tests.unit.differential")


# The differential tests compare each action plugin or filter with the Jinja (or older Python) code it replaced, for
# every case, through ansible-playbook: they judge the two implementations against each other, which the newest
# ansible-core does as well as the oldest. make compat-unit sets LLMSERVE_UNIT_SKIP_DIFFERENTIAL=1 and leaves them
# to make unit: about a quarter of the unit tests' time. The action plugins themselves still run there through the
# roles' tests and their own.
DIFFERENTIAL_FIXTURES = ("both", "baseline_module")


def pytest_collection_modifyitems(config, items):
    if os.environ.get("LLMSERVE_UNIT_SKIP_DIFFERENTIAL") != "1":
        return
    skip = pytest.mark.skip(reason="differential test: make unit runs it on the newest ansible-core "
                                   "(LLMSERVE_UNIT_SKIP_DIFFERENTIAL=1)")
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if item.path.name.endswith("_differential.py") or any(f in fixtures for f in DIFFERENTIAL_FIXTURES):
            item.add_marker(skip)


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


@pytest.fixture(scope="session")
def baseline_module(tmp_path_factory):
    """``load(rev, path)``: the module at ``path`` (a file of this collection) as it was at commit ``rev``, read
    with ``git show`` and imported under a name of its own, for the ``*_differential`` tests that compare a module
    with its version before a rewrite. It imports its siblings from the installed collection. The test is skipped
    where that history is not there (an archive, a shallow clone)."""
    root = os.path.dirname(os.path.abspath(__file__))

    def load(rev, path):
        try:
            text = subprocess.run(["git", "show", "%s:%s" % (rev, path)], cwd=root, capture_output=True, text=True,
                                  check=True, timeout=60).stdout
        except (OSError, subprocess.SubprocessError) as exc:
            pytest.skip("the baseline %s is not in this checkout's history (%s)" % (rev, exc))
        stem = os.path.splitext(os.path.basename(path))[0]
        copy = tmp_path_factory.mktemp("baseline") / ("%s_%s.py" % (stem, rev))
        copy.write_text(text)
        spec = importlib.util.spec_from_file_location("llmserve_%s_baseline_%s" % (stem, rev), str(copy))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load
