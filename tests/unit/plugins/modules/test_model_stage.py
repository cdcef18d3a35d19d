# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the model_stage and model_stage_progress modules, with a stub interpreter in place of
huggingface_hub (tests/unit/plugins/modules/fake_hub.py)."""

from __future__ import annotations

import collections
import grp
import hashlib
import json
import os
import stat
import threading
import time

import pytest

from ansible_collections.llmserve.sglang.plugins.module_utils import model_store
from ansible_collections.llmserve.sglang.plugins.modules import model_stage, model_stage_progress
from ansible_collections.llmserve.sglang.tests.unit.plugins.modules.fake_hub import FakeHub
from ansible_collections.llmserve.sglang.tests.unit.plugins.modules.module_exits import ExitJson, FailJson, run_module

C1 = "1" * 40
C2 = "2" * 40
C3 = "3" * 40
REPO = "llmserve/tiny"
TOKEN = "hf_StageToken987654321"
WEIGHTS = "model.safetensors"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the store's files are root's: chown needs root")


@pytest.fixture
def hub(tmp_path):
    return FakeHub(tmp_path, commit=C1, files={
        "config.json": json.dumps({"architectures": ["LlamaForCausalLM"]}),
        WEIGHTS: {"size": 300000, "lfs": True},
        "sub/tokenizer.json": "{}",
    })


@pytest.fixture
def store(tmp_path):
    return str(tmp_path / "models")


def stage_args(hub, store, commit=C1, **extra):
    args = dict(repo=REPO, commit=commit, manifest=hub.manifest(), dir=store, python=hub.python, token=TOKEN,
                endpoint="http://mirror.test:8090", disk_margin=0)
    args.update(extra)
    return args


def rev(store, commit=C1):
    return os.path.join(store, "llmserve--tiny", commit)


def stage(monkeypatch, hub, store, commit=C1, check_mode=False, **extra):
    return run_module(monkeypatch, model_stage, stage_args(hub, store, commit, **extra), check_mode=check_mode)


def downloads(hub):
    return [call["request"] for call in hub.calls() if call["request"]["op"] == "download"]


def test_first_stage_fetches_verifies_and_publishes(monkeypatch, hub, store):
    out = stage(monkeypatch, hub, store, group="daemon")
    assert isinstance(out, ExitJson), out.result
    r = out.result
    total = sum(e["size"] for e in hub.manifest())
    assert r["changed"] is True and r["staged"] is True and r["path"] == rev(store) and r["commit"] == C1
    assert r["downloaded_bytes"] == total and r["bytes_read"] == total and r["files_hashed"] == 3
    assert r["verified"] == "full" and r["removed"] == []
    assert r["disk"]["needed"] == total and r["disk"]["mount"] and r["disk"]["free"] > total
    for entry in hub.manifest():
        with open(os.path.join(rev(store), entry["path"]), "rb") as handle:
            assert handle.read() == hub.content(entry["path"])
    # root:daemon, 0750 directories and 0640 files; no staging, no .cache left
    gid = grp.getgrnam("daemon").gr_gid
    for top, dirs, files in os.walk(os.path.join(store, "llmserve--tiny")):
        for name in dirs:
            info = os.lstat(os.path.join(top, name))
            assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (0, gid, 0o750), name
    for entry in hub.manifest():
        info = os.lstat(os.path.join(rev(store), entry["path"]))
        assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (0, gid, 0o640), entry["path"]
    assert sorted(os.listdir(os.path.join(store, "llmserve--tiny"))) == sorted([C1, ".verified-%s.json" % C1, ".lock"])
    assert ".cache" not in os.listdir(rev(store))
    (request,) = downloads(hub)
    assert request["revision"] == C1
    assert request["local_dir"] == os.path.join(store, "llmserve--tiny", ".staging-" + C1)
    assert sorted(request["allow_patterns"]) == sorted(e["path"] for e in hub.manifest())


def test_rerun_reads_no_weights(monkeypatch, hub, store):
    assert isinstance(stage(monkeypatch, hub, store), ExitJson)
    out = stage(monkeypatch, hub, store)
    assert isinstance(out, ExitJson)
    r = out.result
    assert r["changed"] is False and r["staged"] is False
    assert r["bytes_read"] == 0 and r["files_hashed"] == 0 and r["downloaded_bytes"] == 0
    assert r["verified"] == "changed" and "disk" not in r
    assert len(downloads(hub)) == 1
    full = stage(monkeypatch, hub, store, verify="full")
    assert full.result["bytes_read"] == sum(e["size"] for e in hub.manifest()) and full.result["files_hashed"] == 3
    assert full.result["changed"] is False


def test_without_fetch_a_missing_revision_is_left_alone_and_one_in_place_verified(monkeypatch, hub, store):
    out = stage(monkeypatch, hub, store, fetch=False)
    assert isinstance(out, ExitJson), out.result
    assert out.result["needs_fetch"] is True and out.result["changed"] is False and out.result["staged"] is False
    assert not os.path.exists(store) and downloads(hub) == []
    assert isinstance(stage(monkeypatch, hub, store), ExitJson)
    again = stage(monkeypatch, hub, store, fetch=False)
    assert isinstance(again, ExitJson)
    assert "needs_fetch" not in again.result and again.result["changed"] is False
    assert again.result["bytes_read"] == 0 and "in place" in again.result["msg"] and len(downloads(hub)) == 1


def state_doc(store, commit=C1):
    with open(os.path.join(store, "llmserve--tiny", ".verified-%s.json" % commit)) as handle:
        return json.load(handle)


def test_a_pinned_revision_in_place_is_verified_from_its_record_without_the_hub(monkeypatch, hub, store):
    assert isinstance(stage(monkeypatch, hub, store), ExitJson)
    assert state_doc(store)["origin"] == "hub"
    out = stage(monkeypatch, hub, store, manifest=[], fetch=False)
    assert isinstance(out, ExitJson), out.result
    r = out.result
    assert r["changed"] is False and "needs_fetch" not in r and "needs_manifest" not in r
    assert r["bytes_read"] == 0 and r["files_hashed"] == 0 and r["verified"] == "changed"
    assert r["bytes"] == sum(e["size"] for e in hub.manifest()) and r["files"] == 3
    assert len(hub.calls()) == 1  # the download of the first run; nothing asked the hub since
    # the record's hashes are the hub's: a changed byte still fails, naming the file
    with open(os.path.join(rev(store), WEIGHTS), "r+b") as handle:
        handle.write(b"\x01")
    bad = stage(monkeypatch, hub, store, manifest=[], fetch=False)
    assert isinstance(bad, FailJson) and "model.safetensors: sha256 is " in bad.result["msg"]


def test_without_a_record_of_the_hubs_hashes_the_manifest_is_asked_for(monkeypatch, hub, store):
    assert isinstance(stage(monkeypatch, hub, store), ExitJson)
    record = os.path.join(store, "llmserve--tiny", ".verified-%s.json" % C1)
    doc = state_doc(store)
    for origin in (None, "path"):
        # a record from before origins were written, or one hashed from a directory on the host
        changed = dict(doc)
        changed.pop("origin")
        if origin:
            changed["origin"] = origin
        with open(record, "w") as handle:
            json.dump(changed, handle)
        out = stage(monkeypatch, hub, store, manifest=[], fetch=False)
        assert isinstance(out, ExitJson), out.result
        assert out.result["needs_manifest"] is True and out.result["changed"] is False
        assert out.result["bytes_read"] == 0 and state_doc(store) == changed
    # with the hub's manifest the record is verified and marked as the hub's again
    out = stage(monkeypatch, hub, store, fetch=False)
    assert isinstance(out, ExitJson) and "needs_manifest" not in out.result and out.result["bytes_read"] == 0
    assert state_doc(store)["origin"] == "hub"
    # to fetch, a hub source needs the manifest
    fetching = stage(monkeypatch, hub, store, commit=C2, manifest=[])
    assert isinstance(fetching, FailJson) and "manifest: the files of" in fetching.result["msg"]


def test_the_record_is_held_to_the_inventorys_current_refusals(monkeypatch, tmp_path, store):
    (tmp_path / "p").mkdir()
    pickled = FakeHub(tmp_path / "p", commit=C1, files={
        "config.json": json.dumps({"architectures": ["X"], "auto_map": {"AutoModel": "modeling_x.X"}}),
        "modeling_x.py": "print('custom code')\n",
        "pytorch_model.bin": {"size": 1000, "lfs": True},
    })
    assert isinstance(stage(monkeypatch, pickled, store, allow_pickle=True, allow_remote_code=True), ExitJson)
    out = stage(monkeypatch, pickled, store, manifest=[], fetch=False)
    assert isinstance(out, FailJson) and "pytorch_model.bin" in out.result["msg"]
    assert "sglang_model_allow_pickle" in out.result["msg"]
    out = stage(monkeypatch, pickled, store, manifest=[], fetch=False, allow_pickle=True)
    assert isinstance(out, FailJson) and "modeling_x.py" in out.result["msg"]
    assert "sglang_server_args.trust_remote_code" in out.result["msg"]
    out = stage(monkeypatch, pickled, store, manifest=[], fetch=False, allow_pickle=True, allow_remote_code=True)
    assert isinstance(out, ExitJson) and out.result["changed"] is False
    # a config.json that is not the recorded file is named as such (verified before the refusals are made again)
    os.chmod(os.path.join(rev(store), "config.json"), 0o640)
    os.unlink(os.path.join(rev(store), "config.json"))
    os.mkfifo(os.path.join(rev(store), "config.json"))
    out = stage(monkeypatch, pickled, store, manifest=[], fetch=False, allow_pickle=True)
    assert isinstance(out, FailJson) and "config.json (found: a special file)" in out.result["msg"]
    os.unlink(os.path.join(rev(store), "config.json"))
    out = stage(monkeypatch, pickled, store, manifest=[], fetch=False, allow_pickle=True)
    assert isinstance(out, FailJson) and "config.json: missing" in out.result["msg"], out.result["msg"]


def test_the_records_of_sglang_server_keep_revisions_and_tell_which_one_serves(monkeypatch, hub, store, tmp_path):
    live, good = tmp_path / "etc-sglang", tmp_path / "state"
    (good / "last-good" / "main").mkdir(parents=True)
    live.mkdir()
    for i, commit in enumerate((C1, C2)):
        assert isinstance(stage(monkeypatch, hub, store, commit=commit), ExitJson)
        os.utime(rev(store, commit), (1000 + i, 1000 + i))
    (live / "main.args.json").write_text(json.dumps({"argv": ["python", "--model-path", rev(store, C1)]}))
    (good / "last-good" / "main" / "main.args.json").write_text(
        json.dumps({"argv": ["python", "--model-path=" + rev(store, C2) + "/"]}))
    records = dict(unit_records=str(live), good_records=str(good))
    # keep 1 would drop both older revisions; the live unit loads C1 and the last good configuration C2
    out = stage(monkeypatch, hub, store, commit=C3, keep=1, **records)
    assert isinstance(out, ExitJson) and out.result["removed"] == []
    assert out.result["serving"] is False and out.result["referenced"] == [rev(store, C1), rev(store, C2)]
    serving = stage(monkeypatch, hub, store, commit=C1, keep=1, fetch=False, manifest=[], **records)
    # C3 is the newest: keep 1 keeps it
    assert serving.result["serving"] is True and serving.result["removed"] == []
    # without the good records, C2 is no longer kept
    out = stage(monkeypatch, hub, store, commit=C1, keep=1, unit_records=str(live))
    assert out.result["removed"] == [rev(store, C2)] and os.path.isdir(rev(store, C1))


def test_touched_file_is_hashed_again_and_tampering_fails(monkeypatch, hub, store):
    assert isinstance(stage(monkeypatch, hub, store), ExitJson)
    weights = os.path.join(rev(store), WEIGHTS)
    os.utime(weights, ns=(1, 1))  # same content, other mtime
    out = stage(monkeypatch, hub, store)
    assert isinstance(out, ExitJson) and out.result["files_hashed"] == 1 and out.result["bytes_read"] == 300000
    with open(weights, "r+b") as handle:
        handle.write(b"\x01")
    before = sorted(os.listdir(rev(store)))
    out = stage(monkeypatch, hub, store)
    assert isinstance(out, FailJson)
    assert "model.safetensors: sha256 is " in out.result["msg"] and "left as it is" in out.result["msg"]
    assert sorted(os.listdir(rev(store))) == before and len(downloads(hub)) == 1


def test_corrupt_once_is_fetched_again(monkeypatch, hub, store):
    hub.update(corrupt={WEIGHTS: 1})
    out = stage(monkeypatch, hub, store)
    assert isinstance(out, ExitJson), out.result
    first, second = downloads(hub)
    assert second["allow_patterns"] == [WEIGHTS]
    assert out.result["downloaded_bytes"] == sum(e["size"] for e in hub.manifest()) + 300000
    with open(os.path.join(rev(store), WEIGHTS), "rb") as handle:
        assert handle.read() == hub.content(WEIGHTS)
    assert first["allow_patterns"] != second["allow_patterns"]


def test_corrupt_every_time_fails_naming_file_and_hashes(monkeypatch, hub, store):
    assert isinstance(stage(monkeypatch, hub, store), ExitJson)  # C1 is published and serving
    hub.update(corrupt={WEIGHTS: 99})
    out = stage(monkeypatch, hub, store, commit=C2)
    assert isinstance(out, FailJson)
    msg = out.result["msg"]
    good = hashlib.sha256(hub.content(WEIGHTS)).hexdigest()
    bad = bytearray(hub.content(WEIGHTS))
    bad[0] ^= 0xFF
    assert "model.safetensors: sha256 is %s, the hub publishes %s" % (hashlib.sha256(bad).hexdigest(), good) in msg
    assert "published revisions are untouched" in msg
    assert len(downloads(hub)) == 3  # C1, then C2 and its one second try
    assert not os.path.exists(rev(store, C2)) and os.path.isdir(rev(store, C1))
    with open(os.path.join(rev(store, C1), WEIGHTS), "rb") as handle:
        assert handle.read() == hub.content(WEIGHTS)
    # the bad copy is not kept as "present" for the next run
    assert not os.path.exists(os.path.join(store, "llmserve--tiny", ".staging-" + C2, WEIGHTS))


def test_disk_full_refused_before_anything_is_written(monkeypatch, hub, store):
    Stat = collections.namedtuple("Stat", "f_bavail f_frsize")
    real = model_store.check_free_space

    def small_disk(path, needed, **kwargs):
        return real(path, needed, statvfs=lambda _path: Stat(10, 4096), **kwargs)

    monkeypatch.setattr(model_stage, "check_free_space", small_disk)
    out = stage(monkeypatch, hub, store, disk_margin=1 << 20)
    assert isinstance(out, FailJson)
    msg = out.result["msg"]
    total = sum(e["size"] for e in hub.manifest())
    assert "sglang_model_dir" in msg and "(%d bytes) still to fetch" % total in msg and "(40960 bytes) free" in msg
    assert "mounted at /" in msg
    assert not os.path.exists(store) and downloads(hub) == []


def test_killed_download_resumes_per_file(monkeypatch, hub, store):
    hub.update(die_after="config.json")
    out = stage(monkeypatch, hub, store)
    assert isinstance(out, FailJson)
    assert "fetching llmserve/tiny@%s from http://mirror.test:8090 failed" % C1 in out.result["msg"]
    staging = os.path.join(store, "llmserve--tiny", ".staging-" + C1)
    assert os.path.isfile(os.path.join(staging, "config.json")) and not os.path.exists(rev(store))
    # a partial file huggingface_hub left behind is removed, not kept
    partial = os.path.join(staging, ".cache", "huggingface", "download", "abc.def.12345678.incomplete")
    os.makedirs(os.path.dirname(partial))
    with open(partial, "wb") as handle:
        handle.write(b"x" * 1000)
    out = stage(monkeypatch, hub, store)
    assert isinstance(out, ExitJson), out.result
    assert downloads(hub)[-1]["allow_patterns"] == [WEIGHTS, "sub/tokenizer.json"]
    assert out.result["downloaded_bytes"] == 300000 + 2
    assert not os.path.exists(staging)


def test_retention_keeps_referenced_and_newest(monkeypatch, hub, store):
    for i, commit in enumerate((C1, C2)):
        assert isinstance(stage(monkeypatch, hub, store, commit=commit), ExitJson)
        os.utime(rev(store, commit), (1000 + i, 1000 + i))
    # C3 makes three; keep 2 would drop C1, but the unit still points into it
    out = stage(monkeypatch, hub, store, commit=C3, keep=2, referenced=[os.path.join(rev(store, C1), "config.json")])
    assert isinstance(out, ExitJson) and out.result["removed"] == []
    out = stage(monkeypatch, hub, store, commit=C3, keep=1, referenced=[rev(store, C1)])
    assert out.result["removed"] == [rev(store, C2)] and out.result["changed"] is True
    assert sorted(os.listdir(os.path.join(store, "llmserve--tiny"))) == sorted([
        C1, C3, ".verified-%s.json" % C1, ".verified-%s.json" % C3, ".lock"])


def test_check_mode_writes_nothing(monkeypatch, hub, store):
    out = stage(monkeypatch, hub, store, check_mode=True)
    assert isinstance(out, ExitJson)
    r = out.result
    assert r["changed"] is True and r["staged"] is True and r["downloaded_bytes"] == 0
    assert "would fetch" in r["msg"] and r["disk"]["needed"] == sum(e["size"] for e in hub.manifest())
    assert not os.path.exists(store) and downloads(hub) == []


def test_check_mode_reports_the_retention_that_would_follow(monkeypatch, hub, store):
    for i, commit in enumerate((C1, C2)):
        assert isinstance(stage(monkeypatch, hub, store, commit=commit), ExitJson)
        os.utime(rev(store, commit), (1000 + i, 1000 + i))
    out = stage(monkeypatch, hub, store, commit=C3, check_mode=True)
    assert out.result["removed"] == [rev(store, C1)] and os.path.isdir(rev(store, C1))


def test_token_only_on_stdin_and_never_returned(monkeypatch, hub, store):
    out = stage(monkeypatch, hub, store)
    assert isinstance(out, ExitJson) and TOKEN not in json.dumps(out.result)
    for call in hub.calls():
        assert all(TOKEN not in arg for arg in call["argv"]) and TOKEN not in json.dumps(call["env"])
        assert call["request"]["token"] == TOKEN


@pytest.mark.parametrize("extra,word", [
    (dict(keep=0), "sglang_model_keep"),
    (dict(group="no-such-group-here"), "group: no-such-group-here does not exist"),
    (dict(commit="main"), "not a 40-hex commit id"),
    (dict(manifest=[]), "manifest:"),
    (dict(manifest=[{"path": "../x", "size": 1, "blob": "0" * 40}]), "'..'"),
])
def test_bad_input_refused_before_anything(monkeypatch, hub, store, extra, word):
    out = run_module(monkeypatch, model_stage, dict(stage_args(hub, store), **extra))
    assert isinstance(out, FailJson) and word in out.result["msg"]
    assert not os.path.exists(store) and downloads(hub) == []


def test_source_path_copies_and_verifies(monkeypatch, tmp_path, store):
    source = tmp_path / "nfs" / "tiny"
    (source / "sub").mkdir(parents=True)
    (source / "config.json").write_bytes(b"{}")
    (source / WEIGHTS).write_bytes(b"w" * 5000)
    (source / "sub" / "t.json").write_bytes(b"[]")
    args = dict(repo=REPO, commit=C1, dir=store, source="path", source_path=str(source), disk_margin=0)
    out = run_module(monkeypatch, model_stage, args)
    assert isinstance(out, ExitJson), out.result
    assert out.result["downloaded_bytes"] == 5004 and out.result["changed"] is True
    with open(os.path.join(rev(store), "sub", "t.json"), "rb") as handle:
        assert handle.read() == b"[]"
    again = run_module(monkeypatch, model_stage, args)
    assert again.result["changed"] is False and again.result["bytes_read"] == 0
    os.unlink(os.path.join(rev(store), "config.json"))
    broken = run_module(monkeypatch, model_stage, args)
    assert isinstance(broken, FailJson) and "config.json: missing" in broken.result["msg"]


def test_extra_file_in_published_revision_fails(monkeypatch, hub, store):
    assert isinstance(stage(monkeypatch, hub, store), ExitJson)
    with open(os.path.join(rev(store), "evil.py"), "w", encoding="utf-8") as handle:
        handle.write("x")
    out = stage(monkeypatch, hub, store)
    assert isinstance(out, FailJson) and "evil.py: not in the manifest" in out.result["msg"]


def test_many_problems_are_listed_ten_then_counted(monkeypatch, hub, store):
    assert isinstance(stage(monkeypatch, hub, store), ExitJson)
    for number in range(12):
        with open(os.path.join(rev(store), "stray-%02d.txt" % number), "w", encoding="utf-8") as handle:
            handle.write("x")
    out = stage(monkeypatch, hub, store)
    assert isinstance(out, FailJson)
    msg = out.result["msg"]
    assert msg.count(": not in the manifest") == 10 and msg.endswith(": not in the manifest; and 2 more"), msg


def test_progress_counts_bytes_incomplete_files_included(monkeypatch, tmp_path):
    root = tmp_path / ".staging-x"
    (root / ".cache" / "huggingface" / "download").mkdir(parents=True)
    (root / "a.json").write_bytes(b"abc")
    (root / ".cache" / "huggingface" / "download" / "h.e.1234abcd.incomplete").write_bytes(b"x" * 100)
    os.symlink("/etc/passwd", str(root / "link"))
    out = run_module(monkeypatch, model_stage_progress, {"path": str(root)})
    assert out.result == dict(changed=False, bytes=103, files=2, exists=True)
    out = run_module(monkeypatch, model_stage_progress, {"path": str(tmp_path / "none")})
    assert out.result == dict(changed=False, bytes=0, files=0, exists=False)


# --- two runs on one store ------------------------------------------------------------------------

def test_a_fetch_waits_for_the_stores_lock_and_gives_up_naming_it(monkeypatch, hub, store):
    repo_dir = os.path.join(store, "llmserve--tiny")
    os.makedirs(repo_dir)
    held = model_store.lock_repo(repo_dir, 0)
    try:
        out = stage(monkeypatch, hub, store, timeout=1)
    finally:
        os.close(held)
    assert isinstance(out, FailJson)
    assert "another run held the lock of" in out.result["msg"] and ".lock" in out.result["msg"]
    assert "for all of 1 s" in out.result["msg"]
    assert downloads(hub) == [] and sorted(os.listdir(repo_dir)) == [".lock"]


def test_the_check_in_the_store_does_not_wait_for_the_lock_and_leaves_retention_to_its_holder(
        monkeypatch, hub, store):
    for i, commit in enumerate((C1, C2)):
        assert isinstance(stage(monkeypatch, hub, store, commit=commit), ExitJson)
        os.utime(rev(store, commit), (1000 + i, 1000 + i))
    held = model_store.lock_repo(os.path.join(store, "llmserve--tiny"), 0)
    try:
        out = stage(monkeypatch, hub, store, commit=C2, manifest=[], fetch=False, keep=1)
    finally:
        os.close(held)
    assert isinstance(out, ExitJson) and out.result["removed"] == [] and out.result["changed"] is False
    assert "old revisions were not looked at" in out.result["msg"]
    assert os.path.isdir(rev(store, C1))
    # once the lock is free, the same check removes what keep leaves over
    out = stage(monkeypatch, hub, store, commit=C2, manifest=[], fetch=False, keep=1)
    assert out.result["removed"] == [rev(store, C1)]


def test_two_runs_staging_one_revision_at_once_download_it_once(monkeypatch, tmp_path, store):
    # the first run holds its download after the first file until "go" exists; the second starts meanwhile
    slow = FakeHub(tmp_path, commit=C1, hold=str(tmp_path / "go"), files={
        "a.json": "{}", "config.json": json.dumps({"architectures": ["X"]}),
        WEIGHTS: {"size": 200000, "lfs": True}})
    staging = os.path.join(store, "llmserve--tiny", ".staging-" + C1)
    pid = os.fork()
    if pid == 0:  # the first run
        code = 1
        try:
            code = 0 if isinstance(stage(monkeypatch, slow, store), ExitJson) else 3
        finally:
            os._exit(code)
    deadline = time.time() + 60
    while not os.path.exists(os.path.join(staging, "a.json")) and time.time() < deadline:
        time.sleep(0.05)
    assert os.path.exists(os.path.join(staging, "a.json")), "the first run did not start"
    release = threading.Timer(1.0, lambda: (tmp_path / "go").write_text("go"))
    release.start()
    try:
        second = stage(monkeypatch, slow, store)
    finally:
        release.cancel()
        status = os.waitpid(pid, 0)[1]
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert isinstance(second, ExitJson), second.result
    # the second run found the revision published by the first and verified it in place
    assert second.result["staged"] is False and second.result["downloaded_bytes"] == 0
    assert len(downloads(slow)) == 1
    for entry in slow.manifest():
        with open(os.path.join(rev(store), entry["path"]), "rb") as handle:
            assert handle.read() == slow.content(entry["path"])


def test_a_hub_that_streams_more_than_it_lists_is_stopped_and_the_file_removed(monkeypatch, tmp_path, store):
    # issue 45: config.json is listed with some bytes and 16 MiB come, slowly; the watch stops the child mid-way
    big = FakeHub(tmp_path, commit=C1, files={"config.json": json.dumps({"architectures": ["X"]}),
                                              WEIGHTS: {"size": 300000, "lfs": True}},
                  oversize={"config.json": 16 << 20})
    listed = len(big.content("config.json"))
    start = time.monotonic()
    out = stage(monkeypatch, big, store)
    assert isinstance(out, FailJson), out.result
    msg = out.result["msg"]
    assert "config.json is listed with %d bytes and the hub sent at least " % listed in msg, msg
    assert "the over-long file removed; the published revisions are untouched" in msg
    seen = int(msg.split("sent at least ")[1].split(".")[0])
    assert listed < seen < 8 << 20 and time.monotonic() - start < 10
    assert not (tmp_path / "fake-hub" / "oversize-done").exists(), "the child was stopped before it wrote it all"
    staging = os.path.join(store, "llmserve--tiny", ".staging-" + C1)
    assert not os.path.exists(os.path.join(staging, "config.json")) and not os.path.exists(rev(store))
    assert len(downloads(big)) == 1 and downloads(big)[0]["sizes"] == {e["path"]: e["size"] for e in big.manifest()}
