# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The model_check action plugin in a real ansible-playbook run (local connection, stub hub interpreter): a broken
rule fails before the host is contacted, a branch name skips the check, a missing revision asks for a fetch, and a
revision in place is verified without reading a weight and carries what the role publishes."""

from __future__ import annotations

import os

import pytest

from ansible.plugins.action import ActionBase

from ansible_collections.llmserve.sglang.plugins.action.model_check import check_args
from ansible_collections.llmserve.sglang.plugins.plugin_utils.model_config import published_revision
from ansible_collections.llmserve.sglang.tests.unit.plugins.action.test_model_stage_action import (
    C1,
    needs_root,
    play,
    stage_task,
)
from ansible_collections.llmserve.sglang.tests.unit.plugins.modules.fake_hub import FakeHub


def config(store, python, **overrides):
    cfg = dict(repo="llmserve/tiny", revision=C1, hub_endpoint="", source="hub", source_path="", dir=store,
               allow_floating_revision=False, allow_pickle=False, verify="changed", python=python, venv=False,
               venv_path="/opt/venv", install="pip", wheelhouse="", hub_version="1.33.0", prewarm="auto",
               prewarm_margin=0.1, group="root")
    cfg.update(overrides)
    return cfg


def check_task(store, python, register="b", ranges=None, publish=None, **overrides):
    args = {"config": config(store, python, **overrides),
            "ranges": ranges or {"sglang_model_keep": [2, 1, 1000]},
            "store": {"keep": 2, "unit_records": os.path.join(store, "no-units"),
                      "good_records": os.path.join(store, "no-good")}}
    if publish is not None:
        args["publish"] = publish
    return {"llmserve.sglang.model_check": args, "register": register, "ignore_errors": True}


def test_broken_rules_fail_naming_each_variable_before_the_host_is_contacted(store_dir, tmp_path):
    store = os.path.join(store_dir, "models")
    rc, out, data, _async_dir = play(tmp_path, [check_task(store, "/usr/bin/python3", revision="main",
                                                           ranges={"sglang_model_keep": [0, 1, 1000]})])
    b = data["b"]
    assert b["failed"] is True, b
    assert "sglang_model_revision: main is a branch or tag name" in b["msg"]
    assert "sglang_model_keep: must be an integer from 1 to 1000, got 0" in b["msg"]
    assert len(b["problems"]) == 2 and "nothing on the host was changed" in b["msg"]
    # the module did not run: it would have answered with the store's path
    assert "path" not in b and not os.path.exists(store)


def test_an_allowed_branch_name_skips_the_check_for_the_hub_to_resolve(store_dir, tmp_path):
    store = os.path.join(store_dir, "models")
    rc, out, data, _async_dir = play(tmp_path, [check_task(store, "/usr/bin/python3", revision="main",
                                                           allow_floating_revision=True)])
    assert rc == 0, out
    assert data["b"]["skipped"] is True and "resolved on the hub" in data["b"]["skip_reason"]
    assert "published" not in data["b"]


@needs_root
def test_missing_revision_needs_a_fetch_and_publishes_nothing(store_dir, tmp_path):
    hub = FakeHub(tmp_path, commit=C1)
    store = os.path.join(store_dir, "models")
    rc, out, data, _async_dir = play(tmp_path, [check_task(store, hub.python)])
    assert rc == 0, out
    assert data["b"]["needs_fetch"] is True and "published" not in data["b"], data["b"]
    assert hub.calls() == []


@needs_root
def test_revision_in_place_is_verified_without_reading_and_published(store_dir, tmp_path):
    hub = FakeHub(tmp_path, commit=C1, files={"config.json": "{}", "a.safetensors": {"size": 100000, "lfs": True}})
    store = os.path.join(store_dir, "models")
    rc, out, data, _async_dir = play(tmp_path, [stage_task(hub, store, "a"), check_task(store, hub.python)])
    assert rc == 0, out
    calls = len(hub.calls())
    b = data["b"]
    assert b["changed"] is False and b["bytes_read"] == 0 and not b.get("needs_fetch"), b
    published = b["published"]
    path = os.path.join(store, "llmserve--tiny", C1)
    assert published["path"] == path
    assert published["resolved"] == {"repo": "llmserve/tiny", "commit": C1, "floating": False, "manifest": [],
                                     "total_bytes": data["a"]["bytes"], "files": 2}
    report = published["report"]
    assert report["revision"] == C1 and report["bytes_read"] == 0 and report["files_hashed"] == 0
    assert report["changed"] is False and report["serving"] is False and report["prewarm"] == "not run"
    # the hub was asked only by the stage
    assert len(hub.calls()) == calls


# what a task after the check sees of the three variables the role publishes
SHOW_PUBLISHED = {"ansible.builtin.set_fact": {"c": "{{ {'resolved': sglang_model_resolved | default('unset'), "
                                                    "'path': sglang_model_path | default('unset'), "
                                                    "'report': sglang_model_report | default('unset')} }}"}}


@needs_root
@pytest.mark.parametrize("publish", [True, False])
def test_publish_sets_the_host_variables_on_ansible_core_that_can(store_dir, tmp_path, publish):
    hub = FakeHub(tmp_path, commit=C1, files={"config.json": "{}", "a.safetensors": {"size": 1000, "lfs": True}})
    store = os.path.join(store_dir, "models")
    rc, out, data, _async_dir = play(tmp_path, [stage_task(hub, store, "a"),
                                                check_task(store, hub.python, publish=publish), SHOW_PUBLISHED])
    assert rc == 0, out
    b, seen = data["b"], data["c"]
    # ansible-core 2.21 lets an action set host variables; on 2.20 (make compat-unit) the role's set_fact does it
    can = publish and hasattr(ActionBase, "register_host_variables")
    assert b["published_as_vars"] is can, b
    if can:
        assert seen == b["published"], seen
        assert seen["path"] == os.path.join(store, "llmserve--tiny", C1) and seen["report"]["bytes_read"] == 0
    else:
        assert seen == {"resolved": "unset", "path": "unset", "report": "unset"}, seen


@needs_root
def test_publish_sets_nothing_when_the_revision_must_be_fetched(store_dir, tmp_path):
    hub = FakeHub(tmp_path, commit=C1)
    store = os.path.join(store_dir, "models")
    rc, out, data, _async_dir = play(tmp_path, [check_task(store, hub.python, publish=True),
                                                SHOW_PUBLISHED])
    assert rc == 0, out
    assert data["b"]["needs_fetch"] is True and "published_as_vars" not in data["b"]
    assert data["c"] == {"resolved": "unset", "path": "unset", "report": "unset"}


def test_publish_must_be_a_boolean(store_dir, tmp_path):
    rc, out, data, _async_dir = play(tmp_path, [check_task(os.path.join(store_dir, "models"), "/usr/bin/python3",
                                                           publish="yes")])
    assert data["b"]["failed"] is True and "publish must be true or false" in data["b"]["msg"], data["b"]


def test_check_args_take_the_store_options_from_the_configuration():
    args = check_args(config("/m", "/py"), {"keep": 3, "unit_records": "/etc/sglang", "allow_remote_code": None})
    assert args == {"repo": "llmserve/tiny", "commit": C1, "dir": "/m", "source": "hub", "verify": "changed",
                    "group": "root", "allow_pickle": False, "python": "/py", "keep": 3, "unit_records": "/etc/sglang",
                    "fetch": False}
    path = check_args(config("/m", "/py", source="path", source_path="/nfs/tiny"), {})
    assert path["source_path"] == "/nfs/tiny" and "python" not in path


@pytest.mark.parametrize("done, prewarm, note", [
    ({"serving": True}, "auto", "not needed: this revision is already serving"),
    ({"serving": False}, "never", "off (sglang_model_prewarm: never)"),
    ({}, "auto", "not run"),
])
def test_the_report_says_why_nothing_is_read(done, prewarm, note):
    done = dict(done, path="/m/o--n/" + C1, bytes="12", files=2, changed=False)
    published = published_revision(done, "o/n", C1, "hub", prewarm)
    assert published["report"]["prewarm"] == note
    assert published["report"]["bytes"] == 12 and published["resolved"]["total_bytes"] == 12


def test_a_staged_revision_reports_the_resolved_commit():
    resolved = {"repo": "o/n", "commit": C1, "floating": True, "manifest": [], "total_bytes": 5, "files": 1}
    published = published_revision({"path": "/m", "changed": True, "downloaded_bytes": 5}, "o/n", "main", "hub",
                                   "auto", resolved)
    assert published["resolved"] is resolved
    assert published["report"]["revision"] == C1 and published["report"]["requested"] == "main"
    assert published["report"]["changed"] is True and published["report"]["downloaded_bytes"] == 5
