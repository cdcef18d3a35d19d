# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the weight_swap_node module: main() against stand-ins of systemctl and journalctl on PATH (a unit
whose process and journal the test changes while the module waits), with checkpoints written here.

The journal lines are those the real SGLang 0.5.23 wrote on two CPU nodes (docs/multinode.md, "A new revision on
every node"); the molecule scenario multinode runs the module against the real server and systemd."""

from __future__ import annotations

import json
import os
import stat
import sys
import threading
import time

import pytest

from ansible_collections.llmserve.sglang.plugins.module_utils import weight_swap as ws
from ansible_collections.llmserve.sglang.plugins.modules import weight_swap_node as module
from ansible_collections.llmserve.sglang.tests.unit.plugins.module_utils import test_weight_swap_utils as models
from ansible_collections.llmserve.sglang.tests.unit.plugins.modules.module_exits import ExitJson, FailJson, run_module

# systemctl show and journalctl as the module calls them, reading the state file the test writes: the journal is a
# list of [invocation, line]; an entry's cursor is its index
FAKE_TOOL = r'''#!%(python)s
import json, os, sys
state = json.load(open(os.environ["FAKE_SYSTEMD_STATE"]))
args = sys.argv[1:]
if os.path.basename(sys.argv[0]) == "systemctl":
    print("ActiveState=%%s\nMainPID=%%d\nInvocationID=%%s" %% (state["active"], state["pid"], state["invocation"]))
    sys.exit(0)
if args == ["--sync"]:
    sys.exit(0)
journal = state["journal"]
if "-n" in args:
    if journal:
        print(json.dumps({"__CURSOR": "c%%d" %% (len(journal) - 1), "MESSAGE": journal[-1][1]}))
    sys.exit(0)
after = -1
for arg in args:
    if arg.startswith("--after-cursor=c"):
        after = int(arg[len("--after-cursor=c"):])
wanted = [arg.split("=", 1)[1] for arg in args if "INVOCATION_ID=" in arg]
for index, (invocation, line) in enumerate(journal):
    if index > after and invocation in wanted:
        print(line)
'''

BEGIN = "[2026-12-06 22:59:27 TP1] Update engine weights online from disk begin. avail mem=20.59 GB"
END = "[2026-12-06 22:59:27 TP1] Update weights end."
CUT = ("safetensors._safetensors_rust.SafetensorError: Error while deserializing header: incomplete metadata, "
       "file not fully covered")


class Unit:
    """The stand-in's state: one unit with a process, an invocation and a journal."""

    def __init__(self, path):
        self.path = path
        self.state = {"active": "active", "pid": 4242, "invocation": "inv-1",
                      "journal": [["inv-1", "[TP1] Load weight end."], ["other", "sshd: accepted"]]}
        self.save()

    def save(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as handle:
            json.dump(self.state, handle)
        os.replace(tmp, self.path)

    def log(self, *lines, invocation=None):
        self.state["journal"].extend([invocation or self.state["invocation"], line] for line in lines)
        self.save()


@pytest.fixture
def unit(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("systemctl", "journalctl"):
        tool = bin_dir / name
        tool.write_text(FAKE_TOOL % {"python": sys.executable})
        tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", "%s:%s" % (bin_dir, os.environ["PATH"]))
    state = Unit(str(tmp_path / "systemd.json"))
    monkeypatch.setenv("FAKE_SYSTEMD_STATE", state.path)
    return state


def _prepare(monkeypatch, tmp_path, **more):
    old, new = tmp_path / "rev-a", tmp_path / "rev-b"
    if not old.exists():
        models.make_model(tmp_path, "rev-a")
        models.make_model(tmp_path, "rev-b")
    args = dict(unit="sglang", state="prepared", model_path=str(new), current_model_path=str(old))
    args.update(more)
    return run_module(monkeypatch, module, args)


def _loaded(monkeypatch, mark, **more):
    args = dict(unit="sglang", state="loaded", mark=mark, timeout=5)
    args.update(more)
    return run_module(monkeypatch, module, args)


def test_a_node_marks_its_journal_then_sees_its_ranks_load(monkeypatch, tmp_path, unit):
    ready = _prepare(monkeypatch, tmp_path)
    assert isinstance(ready, ExitJson), ready.result
    assert ready.result["outcome"] == "ready" and ready.result["changed"] is False
    assert ready.result["mark"] == {"main_pid": 4242, "invocation_id": "inv-1", "cursor": "c1"}
    assert ready.result["compared"]["same_shape"] is True
    # the end of an earlier update, before the mark, does not count
    unit.log(BEGIN, END)
    mark = _prepare(monkeypatch, tmp_path).result["mark"]
    assert mark["cursor"] == "c3"
    timer = threading.Timer(0.5, unit.log, args=(BEGIN, END))
    timer.start()
    started = time.monotonic()
    try:
        done = _loaded(monkeypatch, mark)
    finally:
        timer.join()
    assert isinstance(done, ExitJson), done.result
    assert done.result["outcome"] == "swapped" and done.result["changed"] is True
    assert time.monotonic() - started >= 0.5  # it waited for the lines, not for the old one
    assert done.result["lines"] == [BEGIN, END]
    assert "1 of 1 rank(s) ended their load" in done.result["msg"] and "PID 4242" in done.result["msg"]


def test_two_ranks_on_a_node_must_both_end(monkeypatch, tmp_path, unit):
    mark = _prepare(monkeypatch, tmp_path).result["mark"]
    unit.log(BEGIN, END)
    waited = _loaded(monkeypatch, mark, ranks=2, timeout=1.5)
    assert isinstance(waited, FailJson) and waited.result["outcome"] == "timeout", waited.result
    assert "1 of 2 rank(s) ended their load within" in waited.result["msg"]
    unit.log(END.replace("TP1", "TP3"))
    assert _loaded(monkeypatch, mark, ranks=2).result["outcome"] == "swapped"


def test_a_rank_that_fails_its_load_fails_the_node(monkeypatch, tmp_path, unit):
    mark = _prepare(monkeypatch, tmp_path).result["mark"]
    # as the real rank 1 logged it when its file was cut: a traceback, while rank 0 answered "Succeeded"
    unit.log(BEGIN, "Traceback (most recent call last):", CUT)
    failed = _loaded(monkeypatch, mark)
    assert isinstance(failed, FailJson) and failed.result["outcome"] == "rejected", failed.result
    assert failed.result["changed"] is True and CUT in failed.result["lines"]
    assert "may hold other weights than rank 0's" in failed.result["problems"][0]


@pytest.mark.parametrize("change", [{"pid": 5151}, {"active": "failed"}])
def test_a_process_that_died_or_was_replaced_is_lost(monkeypatch, tmp_path, unit, change):
    mark = _prepare(monkeypatch, tmp_path).result["mark"]
    unit.log(BEGIN, END)  # even with the lines: not the process that was asked
    unit.state.update(change)
    unit.save()
    lost = _loaded(monkeypatch, mark)
    assert isinstance(lost, FailJson) and lost.result["outcome"] == "lost", lost.result
    assert "(PID 4242) no longer runs" in lost.result["msg"]


def test_lines_of_another_invocation_do_not_count(monkeypatch, tmp_path, unit):
    mark = _prepare(monkeypatch, tmp_path).result["mark"]
    unit.log(BEGIN, END, invocation="inv-0")
    assert _loaded(monkeypatch, mark, timeout=1.2).result["outcome"] == "timeout"


def test_an_incompatible_revision_or_a_stopped_unit_is_not_ready(monkeypatch, tmp_path, unit):
    wider = dict(models.TENSORS, **{"model.embed_tokens.weight": ("BF16", (512, 128))})
    refused = _prepare(monkeypatch, tmp_path, model_path=models.make_model(tmp_path, "rev-wide", tensors=wider),
                       current_model_path=models.make_model(tmp_path, "rev-0"))
    assert isinstance(refused, FailJson) and refused.result["outcome"] == "incompatible", refused.result
    assert refused.result["mark"] is None and refused.result["problems"]
    unit.state["active"] = "inactive"
    unit.save()
    stopped = _prepare(monkeypatch, tmp_path)
    assert isinstance(stopped, FailJson) and stopped.result["outcome"] == ws.NOT_RUNNING


def test_check_mode_waits_for_nothing(monkeypatch, unit):
    mark = {"main_pid": 4242, "invocation_id": "inv-1", "cursor": "c1"}
    result = run_module(monkeypatch, module, dict(unit="sglang", state="loaded", mark=mark), check_mode=True)
    assert isinstance(result, ExitJson) and result.result["outcome"] == "would_swap"


@pytest.mark.parametrize("args, words", [
    (dict(state="loaded"), "mark must be the mark of a state=prepared call"),
    (dict(state="loaded", mark={"main_pid": "x", "invocation_id": "inv"}), "mark must be the mark"),
    (dict(state="prepared"), "model_path is required with state=prepared"),
    (dict(state="loaded", mark={"main_pid": 1, "invocation_id": "i"}, timeout=0), "timeout must be a finite number"),
    (dict(state="loaded", mark={"main_pid": 1, "invocation_id": "i"}, ranks=0), "ranks must be 1 or more, got 0"),
])
def test_bad_arguments_fail_before_anything_is_read(monkeypatch, unit, args, words):
    result = run_module(monkeypatch, module, dict(unit="sglang", **args))
    assert isinstance(result, FailJson) and words in result.result["msg"], result.result
    assert result.result["outcome"] is None


def test_rank_load_state():
    assert ws.rank_load_state([BEGIN, END], 1) == (ws.SWAPPED, 1)
    assert ws.rank_load_state([BEGIN], 1) == (None, 0)
    assert ws.rank_load_state([BEGIN, END, "Failed to update weights: boom.\nRolling back"], 1) == (ws.REJECTED, 1)
    assert ws.rank_load_state([END, END.replace("TP1", "TP2")], 3) == (None, 2)


def test_read_unit_takes_a_unit_name_that_looks_like_an_option_as_a_name():
    seen = []

    def run(argv):
        seen.append(argv)
        return 0, "ActiveState=active\nMainPID=abc\nInvocationID=\n", ""
    assert ws.read_unit(run, "-Hevil") == {"active": True, "main_pid": 0, "invocation_id": ""}
    assert seen[0][-2:] == ["--", "-Hevil"]
