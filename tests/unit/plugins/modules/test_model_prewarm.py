# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""model_prewarm: reads a revision into the page cache only when MemAvailable holds it with the margin."""

from __future__ import annotations

import os

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.llmserve.sglang.plugins.modules import model_prewarm as mod
from ansible_collections.llmserve.sglang.tests.unit.plugins.modules.module_exits import ExitJson, FailJson, patch_exits

GIB = 1 << 30


@pytest.fixture(autouse=True)
def exits(monkeypatch):
    patch_exits(monkeypatch)


def revision(tmp_path, sizes=(3000, 5000)):
    root = tmp_path / "rev"
    (root / "sub").mkdir(parents=True)
    for index, size in enumerate(sizes):
        (root / ("sub" if index else "") / ("f%d" % index)).write_bytes(b"x" * size)
    outside = tmp_path / "outside"
    outside.write_bytes(b"y" * 100000)
    os.symlink(str(outside), str(root / "link"))
    return root


def meminfo(tmp_path, kib):
    path = tmp_path / "meminfo"
    path.write_text("MemTotal:       99999999 kB\nMemFree:  1 kB\nMemAvailable:   %d kB\n" % kib)
    return str(path)


def run(args, check_mode=False):
    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    with patch_module_args(args):
        with pytest.raises(ExitJson) as exc:
            mod.main()
    return exc.value.result


def test_it_reads_every_regular_file_but_no_link(tmp_path, monkeypatch):
    root = revision(tmp_path)
    read = []
    real_open = os.open
    monkeypatch.setattr(mod.os, "open", lambda path, flags: read.append(path) or real_open(path, flags))
    result = run({"path": str(root), "meminfo": meminfo(tmp_path, 1024 * 1024)})
    assert result["warmed"] is True and result["changed"] is False
    assert result["bytes"] == result["bytes_read"] == 8000
    assert sorted(os.path.relpath(p, str(root)) for p in read) == ["f0", "sub/f1"]
    assert result["mem_available"] == GIB
    assert "into the page cache" in result["note"]


def test_auto_skips_when_the_margin_does_not_fit(tmp_path):
    root = revision(tmp_path)
    # 9000 bytes available; the fraction 0.2 keeps 1800, and 8000 + 1800 > 9000
    result = run({"path": str(root), "meminfo": _bytes_meminfo(tmp_path, 9000)})
    assert result["warmed"] is False and result["bytes_read"] == 0
    assert result["note"].startswith("skipped:") and "MemAvailable" in result["note"]


def _bytes_meminfo(tmp_path, count):
    path = tmp_path / "meminfo-bytes"
    path.write_text("MemAvailable: %d\n" % count)
    return str(path)


def test_a_margin_in_bytes_and_always(tmp_path):
    root = revision(tmp_path)
    fits = run({"path": str(root), "margin": 1000, "meminfo": _bytes_meminfo(tmp_path, 9000)})
    assert fits["warmed"] is True
    short = run({"path": str(root), "margin": 2000, "meminfo": _bytes_meminfo(tmp_path, 9000)})
    assert short["warmed"] is False
    forced = run({"path": str(root), "mode": "always", "margin": 2000, "meminfo": _bytes_meminfo(tmp_path, 9000)})
    assert forced["warmed"] is True and forced["bytes_read"] == 8000


def test_check_mode_reads_nothing(tmp_path, monkeypatch):
    root = revision(tmp_path)
    monkeypatch.setattr(mod, "read_files", lambda files: pytest.fail("read in check mode"))
    result = run({"path": str(root), "meminfo": meminfo(tmp_path, 1024 * 1024)}, check_mode=True)
    assert result["warmed"] is False and result["bytes_read"] == 0 and result["note"].startswith("would read")


def test_unreadable_meminfo_skips_in_auto(tmp_path):
    result = run({"path": str(revision(tmp_path)), "meminfo": str(tmp_path / "missing")})
    assert result["warmed"] is False and "could not be read" in result["note"]


def test_a_missing_directory_fails(tmp_path):
    with patch_module_args({"path": str(tmp_path / "nope")}):
        with pytest.raises(FailJson) as exc:
            mod.main()
    assert "is not a directory" in exc.value.result["msg"]


def test_a_missing_directory_is_skipped_when_asked(tmp_path):
    result = run({"path": str(tmp_path / "nope"), "missing": "skip", "mode": "always"})
    assert result["warmed"] is False and result["bytes_read"] == 0 and result["changed"] is False
    assert result["note"] == "%s is not a directory on the host: nothing read" % (tmp_path / "nope")


@pytest.mark.parametrize("margin, available, keep", [(0.2, 1000, 200), (1, 1000, 1000), (0, 1000, 0), (4096, 1000, 4096)])
def test_margin_bytes(margin, available, keep):
    assert mod.margin_bytes(margin, available) == keep
