# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""metrics_textfile: the file written atomically with mode 0644, changed only when the content differs, check and
diff mode, nothing created outside the directory, refusals naming the metric before anything is written."""

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.llmserve.sglang.plugins.module_utils import atomic_file
from ansible_collections.llmserve.sglang.plugins.modules import metrics_textfile as mod
from ansible_collections.llmserve.sglang.tests.unit.plugins.modules.module_exits import ExitJson, FailJson, run_module
from ansible_collections.llmserve.sglang.tests.unit.prometheus_text import parse

METRICS = [
    {"name": "llmserve_last_run_success", "help": "1 when the last run succeeded.", "value": 1},
    {"name": "llmserve_gpu_xid_events", "help": "Xid events.", "value": 2,
     "labels": {"gpu": "0000:41:00.0", "code": "79", "fatal": True}},
]
TEXT = ("# HELP llmserve_gpu_xid_events Xid events.\n"
        "# TYPE llmserve_gpu_xid_events gauge\n"
        'llmserve_gpu_xid_events{code="79",fatal="true",gpu="0000:41:00.0"} 2\n'
        "# HELP llmserve_last_run_success 1 when the last run succeeded.\n"
        "# TYPE llmserve_last_run_success gauge\n"
        "llmserve_last_run_success 1\n")


def _run(monkeypatch, path, metrics=None, check_mode=False, diff=False):
    args = {"path": str(path), "metrics": METRICS if metrics is None else metrics}
    if diff:
        args["_ansible_diff"] = True
    return run_module(monkeypatch, mod, args, check_mode=check_mode)


def test_writes_the_file_with_mode_0644_and_then_changes_nothing(tmp_path, monkeypatch):
    path = tmp_path / "llmserve_run.prom"
    umask = os.umask(0o077)  # the mode comes from the module, not from the umask
    try:
        first = _run(monkeypatch, path)
    finally:
        os.umask(umask)
    assert isinstance(first, ExitJson)
    assert first.result["changed"] is True and first.result["written"] is True
    assert first.result["metrics"] == ["llmserve_gpu_xid_events", "llmserve_last_run_success"]
    assert first.result["samples"] == 2
    assert path.read_text() == TEXT
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert os.listdir(str(tmp_path)) == ["llmserve_run.prom"]
    inode = path.stat().st_ino
    second = _run(monkeypatch, path, metrics=list(reversed(METRICS)))
    assert second.result["changed"] is False and second.result["written"] is False
    assert path.stat().st_ino == inode  # not even rewritten


def test_the_file_is_replaced_by_rename_never_written_in_place(tmp_path, monkeypatch):
    path = tmp_path / "llmserve_run.prom"
    path.write_text("llmserve_last_run_success 0\n")
    os.chmod(str(path), 0o644)
    calls = []
    real = atomic_file._replace
    monkeypatch.setattr(atomic_file, "_replace", lambda *args: calls.append(args[:2]) or real(*args))
    result = _run(monkeypatch, path).result
    assert result["changed"] is True and calls == [(str(path), ".llmserve_run.prom.")]
    assert path.read_text() == TEXT


def test_only_a_wrong_mode_is_fixed_without_rewriting(tmp_path, monkeypatch):
    path = tmp_path / "llmserve_run.prom"
    path.write_text(TEXT)
    os.chmod(str(path), 0o600)
    inode = path.stat().st_ino
    result = _run(monkeypatch, path, diff=True).result
    assert result["changed"] is True and result["written"] is False
    assert stat.S_IMODE(path.stat().st_mode) == 0o644 and path.stat().st_ino == inode
    assert "mode 0600" in result["diff"]["before_header"] and "mode 0644" in result["diff"]["after_header"]


def test_check_mode_and_diff_write_nothing(tmp_path, monkeypatch):
    path = tmp_path / "llmserve_run.prom"
    path.write_text("# HELP llmserve_last_run_success old\n# TYPE llmserve_last_run_success gauge\n"
                    "llmserve_last_run_success 0\n")
    os.chmod(str(path), 0o644)
    result = _run(monkeypatch, path, check_mode=True, diff=True).result
    assert result["changed"] is True and result["written"] is False
    assert "-llmserve_last_run_success 0\n" in result["diff"]["prepared"]
    assert "+llmserve_last_run_success 1\n" in result["diff"]["prepared"]
    assert path.read_text().endswith("llmserve_last_run_success 0\n")
    assert os.listdir(str(tmp_path)) == ["llmserve_run.prom"]
    new = tmp_path / "new.prom"
    result = _run(monkeypatch, new, check_mode=True, diff=True).result
    assert result["changed"] is True and not new.exists()
    assert result["diff"]["before_header"].endswith("(absent)")
    assert _run(monkeypatch, new, check_mode=False).result["changed"] is True
    assert "diff" not in _run(monkeypatch, new, diff=True).result


@pytest.mark.parametrize("metrics, message", [
    ([{"name": "node_gpu_xid", "help": "h", "value": 1}], "metric node_gpu_xid: the name must start with llmserve_"),
    ([{"name": "llmserve_mtp_accept_length", "help": "h", "value": "nan"}],
     "metric llmserve_mtp_accept_length: the value must be a finite number, got 'nan'"),
    ([{"name": "llmserve_last_run_success", "help": "h", "value": True}],
     "metric llmserve_last_run_success: the value must be a finite number, got True"),
    ([{"name": "llmserve_p2p_pair_ok", "help": "h", "value": float("inf"), "labels": {"src": "a", "dst": "b"}}],
     'metric llmserve_p2p_pair_ok{dst="b",src="a"}: the value must be a finite number'),
])
def test_refusals_name_the_metric_and_leave_the_file(tmp_path, monkeypatch, metrics, message):
    path = tmp_path / "llmserve_run.prom"
    path.write_text(TEXT)
    result = _run(monkeypatch, path, metrics=metrics)
    assert isinstance(result, FailJson)
    assert message in result.result["msg"] and str(path) in result.result["msg"]
    assert path.read_text() == TEXT and os.listdir(str(tmp_path)) == ["llmserve_run.prom"]


@pytest.mark.parametrize("name, message", [
    ("metrics.txt", "the file name must end in .prom"),
    (".hidden.prom", "not starting with a dot"),
    ("missing/llmserve.prom", "does not exist; the module creates nothing but the file"),
])
def test_paths_it_refuses_and_creates_nothing(tmp_path, monkeypatch, name, message):
    result = _run(monkeypatch, tmp_path / name)
    assert isinstance(result, FailJson) and message in result.result["msg"]
    assert os.listdir(str(tmp_path)) == []


def test_relative_paths_links_and_directories_are_refused(tmp_path, monkeypatch):
    assert "must be absolute" in _run(monkeypatch, "x.prom").result["msg"]
    victim = tmp_path / "victim"
    victim.write_text("keep")
    os.symlink(str(victim), str(tmp_path / "link.prom"))
    result = _run(monkeypatch, tmp_path / "link.prom")
    assert isinstance(result, FailJson) and "is not a regular file" in result.result["msg"]
    assert victim.read_text() == "keep"
    (tmp_path / "dir.prom").mkdir()
    assert "is not a regular file" in _run(monkeypatch, tmp_path / "dir.prom").result["msg"]


def test_the_prometheus_parser_reads_the_file(tmp_path, monkeypatch):
    path = tmp_path / "llmserve_run.prom"
    _run(monkeypatch, path)
    families = {family["name"]: family for family in parse(path.read_text())}
    assert families["llmserve_gpu_xid_events"]["samples"] == [
        ["llmserve_gpu_xid_events", {"gpu": "0000:41:00.0", "code": "79", "fatal": "true"}, 2.0, None]]
    assert families["llmserve_last_run_success"]["samples"][0][2] == 1.0
