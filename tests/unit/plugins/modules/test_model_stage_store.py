# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""model_stage keeps what it verified: a second fetch of one file never costs the others, the policy refusals are
made on the files that were verified, and the store is trusted only where root alone controls it.

The hub is the stand-in interpreter of fake_hub.py; a hostile local account is the real unprivileged ``nobody``
(its changes are made by a child process that has dropped to its uid)."""

from __future__ import annotations

import json
import os
import pwd
import stat
import subprocess
import sys

import pytest

from ansible_collections.llmserve.sglang.plugins.modules import model_stage
from ansible_collections.llmserve.sglang.tests.unit.plugins.modules.fake_hub import FakeHub
from ansible_collections.llmserve.sglang.tests.unit.plugins.modules.module_exits import ExitJson, FailJson, run_module

C1 = "1" * 40
REPO = "llmserve/tiny"
WEIGHTS = "model.safetensors"
FILES = {
    "config.json": json.dumps({"architectures": ["LlamaForCausalLM"]}),
    WEIGHTS: {"size": 300000, "lfs": True},
    "sub/tokenizer.json": "{}",
    "tokenizer_config.json": json.dumps({"model_max_length": 2048}),
}

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the store's files are root's: chown needs root")


@pytest.fixture
def hub(tmp_path):
    return FakeHub(tmp_path, commit=C1, files=dict(FILES))


def stage(monkeypatch, hub, store, **extra):
    args = dict(repo=REPO, commit=C1, manifest=hub.manifest(), dir=store, python=hub.python,
                endpoint="http://mirror.test:8090", disk_margin=0)
    args.update(extra)
    return run_module(monkeypatch, model_stage, args)


def published(store):
    root = os.path.join(store, "llmserve--tiny", C1)
    found = {}
    for top, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(top, name)
            with open(path, "rb") as handle:
                found[os.path.relpath(path, root)] = handle.read()
    return found


def downloads(hub):
    return [call["request"] for call in hub.calls() if call["request"]["op"] == "download"]


# --- finding 1: a retry never loses the files of the first pass -------------------------------------------

@pytest.mark.parametrize("bad", sorted(FILES))
def test_a_file_corrupted_once_is_fetched_again_and_every_other_file_is_kept(monkeypatch, hub, tmp_path, bad):
    store = str(tmp_path / "models")
    hub.update(corrupt={bad: 1})
    out = stage(monkeypatch, hub, store)
    assert isinstance(out, ExitJson), out.result
    first, second = downloads(hub)
    assert second["allow_patterns"] == [bad]
    # every file of the revision is published with the hub's content, not only the one fetched again
    assert published(store) == dict((path, hub.content(path)) for path in FILES)
    # the files of the first pass were not read twice: the second pass read only the refetched file
    total = sum(len(hub.content(path)) for path in FILES)
    assert out.result["bytes_read"] == total + len(hub.content(bad))
    assert out.result["files_hashed"] == len(FILES) + 1
    # the record lists what is there, and the next run with full verification agrees, changing nothing
    again = stage(monkeypatch, hub, store, manifest=[], fetch=False, verify="full")
    assert isinstance(again, ExitJson), again.result
    assert again.result["changed"] is False and again.result["files_hashed"] == len(FILES)
    assert len(downloads(hub)) == 2


def test_a_second_fetch_that_deletes_a_verified_file_fails_instead_of_publishing(monkeypatch, hub, tmp_path):
    """A file of the first pass that is gone after the second fetch (huggingface_hub tidying its directory, another
    process): the staged tree is verified whole again, so the revision is not published without it."""
    store = str(tmp_path / "models")
    hub.update(corrupt={WEIGHTS: 1})
    fetch = model_stage.Stager._fetch
    calls = []

    def fetch_then_lose_config(self, entries):
        fetch(self, entries)
        calls.append([entry["path"] for entry in entries])
        if len(calls) == 2:
            os.unlink(os.path.join(self.stage, "config.json"))

    monkeypatch.setattr(model_stage.Stager, "_fetch", fetch_then_lose_config)
    out = stage(monkeypatch, hub, store)
    assert isinstance(out, FailJson), out.result
    assert calls[1] == [WEIGHTS]
    assert "config.json: missing" in out.result["msg"] and "untouched" in out.result["msg"]
    assert not os.path.exists(os.path.join(store, "llmserve--tiny", C1))


# --- finding 5: the policy is held on the files that were verified ---------------------------------------------

def test_custom_code_in_the_downloaded_config_is_refused_although_resolve_was_shown_a_harmless_one(monkeypatch,
                                                                                                  tmp_path):
    """A hub answers the resolve's config.json request with a harmless file and lists (and later serves) one with
    ``auto_map``: model_revision passes, and the staged, verified config.json is what the refusal reads."""
    from ansible_collections.llmserve.sglang.plugins.modules import model_revision

    hostile = FakeHub(tmp_path, commit=C1, files=dict(FILES, **{
        "config.json": json.dumps({"architectures": ["X"], "auto_map": {"AutoModel": "modeling_x.X"}}),
        "modeling_x.py": "import os\n",
    }), config={"architectures": ["LlamaForCausalLM"]})
    resolved = run_module(monkeypatch, model_revision, dict(repo=REPO, revision=C1, python=hostile.python,
                                                              endpoint="http://mirror.test:8090"))
    assert isinstance(resolved, ExitJson) and resolved.result["remote_code_files"] == [], resolved.result
    store = str(tmp_path / "models")
    out = stage(monkeypatch, hostile, store, manifest=resolved.result["manifest"])
    assert isinstance(out, FailJson), out.result
    assert "modeling_x.py" in out.result["msg"] and "sglang_server_args.trust_remote_code" in out.result["msg"]
    assert "unpublished" in out.result["msg"]
    assert not os.path.exists(os.path.join(store, "llmserve--tiny", C1))
    # allowed by the inventory, the same verified files are published without a second download
    out = stage(monkeypatch, hostile, store, manifest=resolved.result["manifest"], allow_remote_code=True)
    assert isinstance(out, ExitJson), out.result
    assert sorted(published(store)) == sorted(list(FILES) + ["modeling_x.py"])
    assert len(downloads(hostile)) == 1
