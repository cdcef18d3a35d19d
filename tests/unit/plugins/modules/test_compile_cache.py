# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""compile_cache on fixture trees: other versions and architectures go, the size cap removes whole entries oldest
first, links are removed as links and never followed, check mode removes nothing."""

from __future__ import annotations

import os

import pytest

from ansible_collections.llmserve.sglang.plugins.modules import compile_cache
from ansible_collections.llmserve.sglang.plugins.module_utils import compile_cache as cc
from ansible_collections.llmserve.sglang.tests.unit.plugins.modules.module_exits import ExitJson, FailJson, run_module


def _file(path, size, mtime):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(b"x" * size)
    os.utime(path, (mtime, mtime))


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "sglang"
    # the installed version, on an H100 host that also served the CPU engine and once had an A100
    _file(str(root / "0.5.23/sm90/triton/aaa/kernel.so"), 1000, 1000)
    _file(str(root / "0.5.23/sm90/triton/bbb/kernel.so"), 2000, 3000)
    _file(str(root / "0.5.23/sm90/inductor/fxgraph/ab/key1/entry"), 500, 2000)
    _file(str(root / "0.5.23/sm90/jit/sm90/mod/build-k1/lib.so"), 700, 500)
    _file(str(root / "0.5.23/sm90/sglang/gpu_p2p_access_cache_for_0.json"), 10, 4000)
    _file(str(root / "0.5.23/sm80/triton/ccc/kernel.so"), 300, 1000)
    _file(str(root / "0.5.23/cpu-x86_64/inductor/xy/code.so"), 50, 1000)
    # the last good configuration's version, and one nothing uses any more
    _file(str(root / "0.5.22/sm90/triton/ddd/kernel.so"), 400, 1000)
    _file(str(root / "0.5.21/sm90/triton/eee/kernel.so"), 600, 1000)
    return root


def _run(monkeypatch, root, check_mode=False, **extra):
    args = dict(path=str(root), keep_versions=["0.5.23", "0.5.22"], keep_arches=["sm90", "cpu-x86_64"],
                current="0.5.23/sm90")
    args.update(extra)
    return run_module(monkeypatch, compile_cache, args, check_mode=check_mode)


def test_other_versions_and_architectures_go_the_kept_stay(monkeypatch, tree):
    result = _run(monkeypatch, tree)
    assert isinstance(result, ExitJson), result.result
    removed = {os.path.relpath(e["path"], str(tree)): e["bytes"] for e in result.result["removed"]}
    assert removed == {"0.5.21": 600, "0.5.23/sm80": 300}
    assert result.result["bytes_removed"] == 900
    assert result.result["changed"] is True
    assert sorted(os.listdir(str(tree))) == ["0.5.22", "0.5.23"]
    assert sorted(os.listdir(str(tree / "0.5.23"))) == ["cpu-x86_64", "sm90"]
    # no cap: the current tree is whole
    assert result.result["current_bytes"] == 1000 + 2000 + 500 + 700 + 10
    # a second run finds nothing to do
    again = _run(monkeypatch, tree)
    assert again.result["changed"] is False and again.result["removed"] == []


def test_check_mode_reports_and_removes_nothing(monkeypatch, tree):
    before = sorted(os.path.relpath(os.path.join(d, f), str(tree)) for d, _s, fs in os.walk(str(tree)) for f in fs)
    result = _run(monkeypatch, tree, check_mode=True, max_bytes=3000, _ansible_diff=True)
    assert result.result["changed"] is True
    assert result.result["bytes_removed"] > 0
    assert "0.5.21" in result.result["diff"]["before"]
    after = sorted(os.path.relpath(os.path.join(d, f), str(tree)) for d, _s, fs in os.walk(str(tree)) for f in fs)
    assert after == before


def test_size_cap_removes_whole_entries_least_recently_modified_first(monkeypatch, tree):
    # 4210 bytes in the current tree; a cap of 3000 removes the build (t=500), then the Triton kernel aaa (t=1000):
    # 4210 - 700 - 1000 = 2510 <= 3000; the FX graph (t=2000), bbb (t=3000) and the p2p file (t=4000) stay
    result = _run(monkeypatch, tree, max_bytes=3000)
    trimmed = [os.path.relpath(e["path"], str(tree / "0.5.23/sm90")) for e in result.result["removed"]
               if e["reason"].startswith("over the size cap")]
    assert trimmed == ["jit/sm90/mod/build-k1", "triton/aaa"]
    assert result.result["current_bytes"] == 2510
    assert os.path.exists(str(tree / "0.5.23/sm90/inductor/fxgraph/ab/key1/entry"))
    assert os.path.isdir(str(tree / "0.5.23/sm90/jit/sm90/mod"))  # only the build entry went


def test_trim_false_leaves_the_tree_in_use_and_says_it_is_over_the_cap(monkeypatch, tree):
    result = _run(monkeypatch, tree, max_bytes=3000, trim=False)
    assert all(not e["reason"].startswith("over the size cap") for e in result.result["removed"])
    assert result.result["over_cap"] is True
    assert os.path.exists(str(tree / "0.5.23/sm90/triton/aaa/kernel.so"))


def test_links_are_removed_as_links_never_followed(monkeypatch, tree, tmp_path):
    outside = tmp_path / "precious"
    _file(str(outside / "data"), 5000, 1000)
    # the service account owns its arch tree and may plant links in it (the oldest entry here, so the cap takes it
    # first); one also sits where a version would be
    os.symlink(str(outside), str(tree / "0.5.23/sm90/triton/zzz"))
    os.utime(str(tree / "0.5.23/sm90/triton/zzz"), (1, 1), follow_symlinks=False)
    os.symlink(str(outside), str(tree / "0.5.20"))
    result = _run(monkeypatch, tree, max_bytes=1)
    assert isinstance(result, ExitJson), result.result
    assert os.path.exists(str(outside / "data"))
    assert not os.path.lexists(str(tree / "0.5.20"))
    assert not os.path.lexists(str(tree / "0.5.23/sm90/triton/zzz"))
    # a link counts 0 bytes: its target is not the cache's
    sizes = {os.path.basename(e["path"]): e["bytes"] for e in result.result["removed"]}
    assert sizes["0.5.20"] == 0 and sizes["zzz"] == 0


def test_missing_root_is_nothing_to_do(monkeypatch, tmp_path):
    result = _run(monkeypatch, tmp_path / "absent")
    assert isinstance(result, ExitJson) and result.result["changed"] is False


@pytest.mark.parametrize("extra, message", [
    ({"current": "0.5.19/sm90"}, "current must be <version>/<arch> of a kept version"),
    ({"keep_versions": ["../etc"]}, "keep_versions: '../etc' is not one directory name"),
    ({"path": "relative"}, "path must be an absolute path"),
    ({"max_bytes": -1}, "max_bytes must be 0"),
])
def test_bad_arguments_fail_before_anything_is_removed(monkeypatch, tree, extra, message):
    result = _run(monkeypatch, tree, **extra)
    assert isinstance(result, FailJson), result.result
    assert message in result.result["msg"]
    assert os.path.exists(str(tree / "0.5.21"))


def test_root_that_is_a_link_is_refused(monkeypatch, tree, tmp_path):
    link = tmp_path / "link"
    os.symlink(str(tree), str(link))
    result = _run(monkeypatch, link)
    assert isinstance(result, FailJson) and "not a directory" in result.result["msg"]
    assert os.path.exists(str(tree / "0.5.21"))


def test_entry_depths():
    assert cc.entry_depth(["triton", "x"]) == 2
    assert cc.entry_depth(["inductor", "fxgraph"]) == 4
    assert cc.entry_depth(["jit", "sm90"]) == 4
    assert cc.entry_depth(["flashinfer", ".cache", "flashinfer", "0.6"]) == 6
