# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the weight_swap module: its main() against the loopback stand-in of SGLang's update route (the one
module_utils/weight_swap.py is tested against, lies included), with checkpoints written here.

The real server is in tests/functional/engine/test_weight_swap_live.py."""

from __future__ import annotations

import json

import pytest

from ansible_collections.llmserve.sglang.plugins.modules import weight_swap as module
from ansible_collections.llmserve.sglang.tests.unit.plugins.module_utils import test_weight_swap_utils as stand_in
from ansible_collections.llmserve.sglang.tests.unit.plugins.modules.module_exits import ExitJson, FailJson, run_module

API, ADMIN = stand_in.API, stand_in.ADMIN
COMMIT = "0f3c5e7d9b1a2c4e6f8091a3b5c7d9e1f2a4b6c8"


@pytest.fixture
def server():
    with stand_in.running_stand_in() as state:
        yield state


@pytest.fixture
def revisions(tmp_path, server):
    """Two revisions of one layout on disk; the stand-in serves the first."""
    old = stand_in.make_model(tmp_path, "rev-a")
    new = stand_in.make_model(tmp_path, "rev-b")
    server.model_path = old
    return old, new


def _args(server, model_path, **more):
    args = dict(server_url=server.base_url, model_path=model_path, weight_version=COMMIT, api_key=API,
                admin_api_key=ADMIN, timeout=5, read_timeout=2)
    args.update(more)
    return args


def _posts(server):
    return [seen for seen in server.seen if seen[0] == "POST"]


def _no_key_in(result):
    text = json.dumps(result)
    assert API not in text and ADMIN not in text


def test_a_revision_is_swapped_then_a_rerun_changes_nothing(monkeypatch, server, revisions):
    old, new = revisions
    first = run_module(monkeypatch, module, _args(server, new, current_model_path=old))
    assert isinstance(first, ExitJson), first.result
    result = first.result
    assert result["changed"] is True and result["outcome"] == "swapped" and result["status"] == 200
    assert result["before"]["model_path"] == old and result["after"]["model_path"] == new
    assert result["after"]["weight_version"] == COMMIT and result["compared"]["same_shape"] is True
    assert result["served_model_name_changed"] is True  # SGLang renames it to the loaded path
    assert [seen[3]["weight_version"] for seen in _posts(server)] == [COMMIT]
    assert _posts(server)[0][2] == "Bearer %s" % ADMIN
    _no_key_in(result)

    again = run_module(monkeypatch, module, _args(server, new, current_model_path=old))
    assert isinstance(again, ExitJson) and again.result["changed"] is False
    assert again.result["outcome"] == "current" and again.result["status"] is None
    assert len(_posts(server)) == 1  # nothing sent the second time


def test_check_mode_reads_and_compares_but_sends_nothing(monkeypatch, server, revisions):
    old, new = revisions
    end = run_module(monkeypatch, module, _args(server, new, current_model_path=old), check_mode=True)
    assert isinstance(end, ExitJson) and end.result["changed"] is True and end.result["outcome"] == "would_swap"
    assert end.result["before"]["weight_version"] == "default" and end.result["compared"]["same_shape"] is True
    assert not _posts(server) and server.weight_version == "default"


def test_an_incompatible_candidate_is_refused_before_the_server_is_asked(monkeypatch, server, tmp_path):
    old = stand_in.make_model(tmp_path, "rev-a")
    wider = stand_in.make_model(tmp_path, "rev-wide", tensors=dict(
        stand_in.TENSORS, **{"model.layers.0.mlp.down_proj.weight": ("BF16", (64, 136))}))
    server.model_path = old
    end = run_module(monkeypatch, module, _args(server, wider, current_model_path=old))
    assert isinstance(end, FailJson) and end.result["changed"] is False
    assert end.result["outcome"] == "incompatible"
    assert "down_proj.weight BF16 [64, 128] -> BF16 [64, 136]" in end.result["msg"]
    assert not _posts(server) and server.model_path == old


def test_a_refused_update_fails_with_the_old_weights_serving(monkeypatch, server, tmp_path):
    end = run_module(monkeypatch, module, _args(server, str(tmp_path / "missing")))
    assert isinstance(end, FailJson), end.result
    result = end.result
    assert result["outcome"] == "rejected" and result["status"] == 400 and result["changed"] is False
    assert result["old_weights_serving"] is True and "Cannot find any model weights" in result["message"]


def test_an_update_that_kills_the_connection_fails_as_changed(monkeypatch, server, revisions):
    server.mode = "drop"
    end = run_module(monkeypatch, module, _args(server, revisions[1]))
    assert isinstance(end, FailJson) and end.result["outcome"] == "lost" and end.result["changed"] is True


def test_a_lying_success_is_unverified(monkeypatch, server, revisions):
    server.mode = "lie_version"
    end = run_module(monkeypatch, module, _args(server, revisions[1]))
    assert isinstance(end, FailJson) and end.result["outcome"] == "unverified"
    assert any("weight_version" in problem for problem in end.result["problems"])


@pytest.mark.parametrize("mode,outcome", [("no_route", "unsupported"), ("redirect", "bad_answer"),
                                          ("server_error", "bad_answer")])
def test_answers_that_are_no_swap_fail(monkeypatch, server, revisions, mode, outcome):
    server.mode = mode
    end = run_module(monkeypatch, module, _args(server, revisions[1]))
    assert isinstance(end, FailJson) and end.result["outcome"] == outcome, end.result


def test_the_api_key_alone_is_refused_where_the_server_has_an_admin_key(monkeypatch, server, revisions):
    end = run_module(monkeypatch, module, _args(server, revisions[1], admin_api_key=None))
    assert isinstance(end, FailJson) and end.result["outcome"] == "unauthorized" and end.result["status"] == 401
    assert end.result["changed"] is False and server.weight_version == "default"


def test_keys_from_files_and_a_server_that_echoes_them(monkeypatch, server, revisions, tmp_path):
    (tmp_path / "api").write_text("\n%s\n" % API)
    (tmp_path / "admin").write_text(ADMIN)
    server.mode = "echo_key"
    args = _args(server, revisions[1], api_key_file=str(tmp_path / "api"), admin_api_key_file=str(tmp_path / "admin"))
    del args["api_key"], args["admin_api_key"]
    end = run_module(monkeypatch, module, args)
    assert isinstance(end, FailJson) and end.result["outcome"] == "rejected"
    assert "bad key Bearer ********" in end.result["message"]
    _no_key_in(end.result)


@pytest.mark.parametrize("more,words", [
    (dict(timeout=0), "timeout must be a finite number of seconds greater than 0"),
    (dict(read_timeout=float("inf")), "read_timeout must be a finite number"),
    (dict(max_body_bytes=10), "max_body_bytes must be 1024 or more"),
    (dict(weight_version=" padded "), "weight_version must be 1 to 256 printable characters"),
    (dict(model_path="relative/dir"), "model_path must be an absolute path"),
    (dict(load_format="Safe Tensors"), "load_format must be one of SGLang's load format names"),
    (dict(api_key="two words"), "the api_key must be printable ASCII without spaces"),
    (dict(server_url="http://127.0.0.1:1/path"), "base_url"),
    (dict(api_key_file="/nonexistent/key"), "parameters are mutually exclusive: api_key|api_key_file"),
])
def test_bad_arguments_fail_before_anything_is_sent(monkeypatch, server, revisions, more, words):
    args = _args(server, revisions[1])
    args.update(more)
    end = run_module(monkeypatch, module, args)
    assert isinstance(end, FailJson) and not end.result.get("changed")
    assert words in end.result["msg"], end.result["msg"]
    assert not _posts(server)
