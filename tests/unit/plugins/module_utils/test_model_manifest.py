# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A model revision's manifest, file hashes, verification (changed and full) and the verification record."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess

import pytest

from ansible_collections.llmserve.sglang.plugins.module_utils import model_manifest as mm
from ansible_collections.llmserve.sglang.plugins.module_utils import model_store as ms
from ansible_collections.llmserve.sglang.plugins.module_utils.model_store import ModelStoreError
from ansible_collections.llmserve.sglang.tests.unit.plugins.module_utils.source_imports import top_level_imports

EMPTY_BLOB = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
HELLO_BLOB = "ce013625030ba8dba906f756967f9e9ca394464a"  # git hash-object of b"hello\n"
EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
HELLO_SHA256 = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"


def test_imports_only_the_standard_library():
    assert top_level_imports(mm.__file__, (3, 8)) <= {
        "__future__", "collections", "concurrent", "hashlib", "json", "os", "re", "stat", "tempfile",
        "ansible_collections"}


# --- hashes -----------------------------------------------------------------------------------

def _write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return str(path)


def test_known_hashes(tmp_path):
    empty, hello = _write(tmp_path / "empty", b""), _write(tmp_path / "hello", b"hello\n")
    assert mm.git_blob_sha1(empty) == EMPTY_BLOB
    assert mm.git_blob_sha1(hello) == HELLO_BLOB
    assert mm.sha256_file(empty) == EMPTY_SHA256
    assert mm.sha256_file(hello) == HELLO_SHA256


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.parametrize("size", [0, 1, mm.CHUNK - 1, mm.CHUNK, 2 * mm.CHUNK + 12345])
def test_blob_id_is_what_git_prints(tmp_path, size):
    data = (b"0123456789abcdef\x00\xff" * (size // 18 + 1))[:size]
    path = _write(tmp_path / "f", data)
    git = subprocess.run(["git", "hash-object", path], check=True, capture_output=True, text=True).stdout.strip()
    assert mm.git_blob_sha1(path) == git
    assert mm.sha256_file(path) == hashlib.sha256(data).hexdigest()


def test_hash_file_reads_once_for_both_hashes(tmp_path, monkeypatch):
    data = os.urandom(3 * mm.CHUNK + 7)
    path = _write(tmp_path / "f", data)
    reads = []
    real_readv = os.readv

    def counting_readv(fd, buffers):
        count = real_readv(fd, buffers)
        reads.append(count)
        return count

    monkeypatch.setattr(mm.os, "readv", counting_readv)
    digests, done = mm.hash_file(path, ("sha256", "blob"))
    assert digests == {"sha256": hashlib.sha256(data).hexdigest(),
                       "blob": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()}
    assert done == sum(reads) == len(data)
    assert max(reads) <= mm.CHUNK


def test_hash_file_refuses_links_directories_and_unknown_hashes(tmp_path):
    target = _write(tmp_path / "target", b"x")
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(OSError):
        mm.hash_file(str(tmp_path / "link"))
    with pytest.raises(ModelStoreError, match="is not a regular file"):
        mm.hash_file(str(tmp_path))
    with pytest.raises(ValueError, match="unknown hash md5"):
        mm.hash_file(target, ("md5",))


# --- manifest ---------------------------------------------------------------------------------

def test_check_manifest_sorts_and_lowers():
    entries = [{"path": "z.json", "size": 6, "blob": HELLO_BLOB.upper()},
               {"path": "a/model.safetensors", "size": 0, "sha256": EMPTY_SHA256, "blob": None}]
    assert mm.check_manifest(entries) == [{"path": "a/model.safetensors", "size": 0, "sha256": EMPTY_SHA256},
                                          {"path": "z.json", "size": 6, "blob": HELLO_BLOB}]


@pytest.mark.parametrize("entries, message", [
    ([{"path": "../x", "size": 1, "blob": HELLO_BLOB}], "model file name ../x from the hub refused"),
    ([{"path": "x", "size": -1, "blob": HELLO_BLOB}], "manifest entry x: size -1 is not a byte count"),
    ([{"path": "x", "size": True, "blob": HELLO_BLOB}], "size True is not a byte count"),
    ([{"path": "x", "size": "6", "blob": HELLO_BLOB}], "size '6' is not a byte count"),
    ([{"path": "x", "size": 6}], "needs exactly one of sha256 (LFS files) or blob"),
    ([{"path": "x", "size": 6, "blob": HELLO_BLOB, "sha256": HELLO_SHA256}], "needs exactly one of"),
    ([{"path": "x", "size": 6, "blob": HELLO_SHA256}], "blob '%s' is not 40 hexadecimal digits" % HELLO_SHA256),
    ([{"path": "x", "size": 6, "sha256": "g" * 64}], "sha256 '%s' is not 64 hexadecimal digits" % ("g" * 64)),
    ([{"path": "x", "size": 6, "blob": HELLO_BLOB}] * 2, "manifest lists x twice"),
    ([{"path": "a", "size": 6, "blob": HELLO_BLOB}, {"path": "a/b/c", "size": 6, "blob": HELLO_BLOB}],
     "manifest lists a as a file and as the directory of a/b/c"),
    (["x"], "manifest entry 'x' is not a mapping"),
])
def test_check_manifest_refuses(entries, message):
    with pytest.raises(ModelStoreError) as err:
        mm.check_manifest(entries)
    assert message in str(err.value)


def test_entries_from_the_hub():
    lfs = {"type": "file", "oid": "a" * 40, "size": 1234, "path": "model.safetensors",
           "lfs": {"oid": "sha256:" + "b" * 64, "size": 1234, "pointerSize": 134}}
    lfs_hf_hub = {"path": "m.safetensors", "size": 5, "lfs": {"sha256": "c" * 64, "size": 5}}
    plain = {"type": "file", "oid": HELLO_BLOB, "size": 6, "path": "config.json"}
    assert mm.entry_from_hub(lfs) == {"path": "model.safetensors", "size": 1234, "sha256": "b" * 64}
    assert mm.entry_from_hub(lfs_hf_hub) == {"path": "m.safetensors", "size": 5, "sha256": "c" * 64}
    assert mm.entry_from_hub(plain) == {"path": "config.json", "size": 6, "blob": HELLO_BLOB}
    assert mm.entry_from_hub({"type": "directory", "oid": "d" * 40, "path": "sub"}) is None
    assert len(mm.check_manifest([mm.entry_from_hub(lfs), mm.entry_from_hub(plain)])) == 2


# --- verification -----------------------------------------------------------------------------

WEIGHTS = os.urandom(2 * mm.CHUNK + 100)
CONFIG = b'{"architectures": ["LlamaForCausalLM"]}\n'


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "rev"
    _write(root / "model.safetensors", WEIGHTS)
    _write(root / "sub" / "config.json", CONFIG)
    manifest = mm.check_manifest([
        {"path": "model.safetensors", "size": len(WEIGHTS), "sha256": hashlib.sha256(WEIGHTS).hexdigest()},
        {"path": "sub/config.json", "size": len(CONFIG),
         "blob": hashlib.sha1(b"blob %d\0" % len(CONFIG) + CONFIG).hexdigest()},
    ])
    return root, manifest


class CountingHash:
    """Wraps model_manifest._hash_fd: which files were read, and how many bytes."""

    def __init__(self, monkeypatch):
        self.real, self.files = mm._hash_fd, []
        monkeypatch.setattr(mm, "_hash_fd", self)

    def __call__(self, fd, want):
        self.files.append(os.readlink("/proc/self/fd/%d" % fd) if os.path.exists("/proc/self/fd") else fd)
        return self.real(fd, want)


def test_full_then_changed_reads_nothing(tree, monkeypatch):
    root, manifest = tree
    first = mm.verify_tree(str(root), manifest, {}, "full")
    assert first.ok == ["model.safetensors", "sub/config.json"]
    assert (first.bad, first.missing, first.extra) == ([], [], [])
    assert first.bytes_read == len(WEIGHTS) + len(CONFIG)
    info = os.stat(str(root / "model.safetensors"))
    assert first.state["model.safetensors"] == {
        "size": info.st_size, "mtime_ns": info.st_mtime_ns, "ctime_ns": info.st_ctime_ns, "ino": info.st_ino,
        "sha256": manifest[0]["sha256"]}
    assert first.state["sub/config.json"]["blob"] == manifest[1]["blob"]

    counting = CountingHash(monkeypatch)
    again = mm.verify_tree(str(root), manifest, first.state, "changed")
    assert again.ok == first.ok and again.bad == [] and again.state == first.state
    assert again.bytes_read == 0 and counting.files == []

    # full mode reads everything whatever the record says
    full = mm.verify_tree(str(root), manifest, first.state, "full")
    assert full.ok == first.ok and full.bytes_read == first.bytes_read and len(counting.files) == 2


def test_changed_rehashes_a_touched_file_only(tree, monkeypatch):
    root, manifest = tree
    state = mm.verify_tree(str(root), manifest, {}, "full").state
    info = os.stat(str(root / "sub" / "config.json"))
    os.utime(str(root / "sub" / "config.json"), ns=(info.st_atime_ns, info.st_mtime_ns + 1000))
    counting = CountingHash(monkeypatch)
    result = mm.verify_tree(str(root), manifest, state, "changed")
    assert result.ok == ["model.safetensors", "sub/config.json"]
    assert result.bytes_read == len(CONFIG)
    assert [os.path.basename(str(name)) for name in counting.files] == ["config.json"]
    assert result.state["sub/config.json"]["mtime_ns"] == info.st_mtime_ns + 1000


@pytest.mark.parametrize("key", ["size", "mtime_ns", "ctime_ns", "ino"])
def test_changed_rehashes_when_any_recorded_attribute_differs(tree, key):
    root, manifest = tree
    state = mm.verify_tree(str(root), manifest, {}, "full").state
    state["model.safetensors"][key] += 1
    assert mm.verify_tree(str(root), manifest, state, "changed").bytes_read == len(WEIGHTS)


def test_changed_rehashes_when_the_record_holds_another_hash(tree):
    root, manifest = tree
    state = mm.verify_tree(str(root), manifest, {}, "full").state
    state["model.safetensors"]["sha256"] = "0" * 64
    assert mm.verify_tree(str(root), manifest, state, "changed").bytes_read == len(WEIGHTS)


def test_changed_rehashes_a_replaced_file(tree):
    root, manifest = tree
    state = mm.verify_tree(str(root), manifest, {}, "full").state
    path = str(root / "model.safetensors")
    info = os.stat(path)
    _write(root / "copy", WEIGHTS)
    os.utime(str(root / "copy"), ns=(info.st_atime_ns, info.st_mtime_ns))
    os.replace(str(root / "copy"), path)
    result = mm.verify_tree(str(root), manifest, state, "changed")
    assert result.bytes_read == len(WEIGHTS) and result.ok == ["model.safetensors", "sub/config.json"]
    assert result.state["model.safetensors"]["ino"] == os.stat(path).st_ino != info.st_ino


def _flip_keeping_mtime(path):
    info = os.stat(path)
    with open(path, "r+b") as handle:
        handle.seek(mm.CHUNK + 3)
        byte = handle.read(1)
        handle.seek(mm.CHUNK + 3)
        handle.write(bytes([byte[0] ^ 0x01]))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (info.st_size, info.st_mtime_ns, info.st_ino)


def test_full_catches_a_flipped_byte_behind_a_restored_mtime(tree):
    root, manifest = tree
    state = mm.verify_tree(str(root), manifest, {}, "full").state
    path = str(root / "model.safetensors")
    _flip_keeping_mtime(path)
    result = mm.verify_tree(str(root), manifest, state, "full")
    assert result.ok == ["sub/config.json"]
    assert result.bad == [{"path": "model.safetensors", "reason": "hash", "algo": "sha256",
                           "want": manifest[0]["sha256"], "got": mm.sha256_file(path),
                           "size_want": len(WEIGHTS), "size_got": len(WEIGHTS)}]
    assert "model.safetensors" not in result.state and "sub/config.json" in result.state
    assert mm.bad_message(result.bad[0]) == "model.safetensors: sha256 is %s, the hub publishes %s" % (
        mm.sha256_file(path), manifest[0]["sha256"])


def test_size_mismatch_is_reported_without_reading(tree, monkeypatch):
    root, manifest = tree
    with open(str(root / "model.safetensors"), "ab") as handle:
        handle.write(b"x")
    counting = CountingHash(monkeypatch)
    result = mm.verify_tree(str(root), manifest, {}, "full")
    assert result.bad == [{"path": "model.safetensors", "reason": "size", "algo": "sha256",
                           "want": manifest[0]["sha256"], "got": None, "size_want": len(WEIGHTS),
                           "size_got": len(WEIGHTS) + 1}]
    assert [os.path.basename(str(name)) for name in counting.files] == ["config.json"]
    assert mm.bad_message(result.bad[0]) == "model.safetensors: %d bytes, the hub publishes %d" % (
        len(WEIGHTS) + 1, len(WEIGHTS))


def test_missing_extra_and_links(tree, tmp_path):
    root, manifest = tree
    os.unlink(str(root / "sub" / "config.json"))
    _write(root / "notes.txt", b"x")
    _write(tmp_path / "elsewhere" / "x", b"x")
    (root / "dirlink").symlink_to(tmp_path / "elsewhere")
    os.unlink(str(root / "model.safetensors"))
    (root / "model.safetensors").symlink_to(root / "notes.txt")
    result = mm.verify_tree(str(root), manifest, {}, "full")
    assert result.ok == [] and result.missing == ["sub/config.json"]
    assert [(item["path"], item["reason"]) for item in result.bad] == [("model.safetensors", "not a regular file")]
    assert mm.bad_message(result.bad[0]) == "model.safetensors: not a regular file"
    assert result.extra == ["dirlink", "notes.txt"]
    assert result.bytes_read == 0 and result.state == {}


def test_a_link_out_of_the_revision_is_refused(tree, tmp_path):
    root, manifest = tree
    os.unlink(str(root / "model.safetensors"))
    (root / "model.safetensors").symlink_to(_write(tmp_path / "evil", WEIGHTS))
    with pytest.raises(ModelStoreError, match="model.safetensors does not resolve to a path inside"):
        mm.verify_tree(str(root), manifest, {}, "full")


def test_a_file_where_a_directory_belongs_is_missing(tree):
    root, manifest = tree
    shutil.rmtree(str(root / "sub"))
    _write(root / "sub", b"not a directory")
    result = mm.verify_tree(str(root), manifest, {}, "changed")
    assert result.missing == ["sub/config.json"] and result.extra == ["sub"]


def test_missing_root_is_all_missing(tmp_path, tree):
    manifest = tree[1]
    result = mm.verify_tree(str(tmp_path / "none"), manifest, {}, "changed")
    assert result.missing == ["model.safetensors", "sub/config.json"] and result.extra == []


@pytest.mark.parametrize("state", [None, [], "x", {"model.safetensors": "x"}])
def test_unusable_state_means_hash_everything(tree, state):
    root, manifest = tree
    assert mm.verify_tree(str(root), manifest, state, "changed").bytes_read == len(WEIGHTS) + len(CONFIG)


def test_workers_give_the_same_answer(tree):
    root, manifest = tree
    _flip_keeping_mtime(str(root / "model.safetensors"))
    one = mm.verify_tree(str(root), manifest, {}, "full")
    four = mm.verify_tree(str(root), manifest, {}, "full", workers=4)
    assert one == four and one.bad and one.ok == ["sub/config.json"]


@pytest.mark.parametrize("mode", ["fast", "", None, "Changed"])
def test_mode_is_checked(tree, mode):
    root, manifest = tree
    with pytest.raises(ModelStoreError, match="^sglang_model_verify: .* must be 'changed' or 'full'"):
        mm.verify_tree(str(root), manifest, {}, mode)


def test_present_sizes_and_bytes_needed(tree):
    root, manifest = tree
    with open(str(root / "model.safetensors"), "r+b") as handle:
        handle.truncate(100)  # a download cut short
    present = mm.present_sizes(str(root), manifest)
    assert present == {"sub/config.json": len(CONFIG)}
    assert ms.bytes_needed(manifest, present) == len(WEIGHTS)


# --- state ------------------------------------------------------------------------------------

def test_state_round_trip(tree, tmp_path):
    root, manifest = tree
    state = mm.verify_tree(str(root), manifest, {}, "full").state
    path = str(tmp_path / "state.json")
    mm.save_state(path, state)
    assert mm.load_state(path) == state
    assert oct(os.stat(path).st_mode & 0o777) == "0o644"
    assert sorted(os.listdir(str(tmp_path))) == ["rev", "state.json"]
    assert mm.verify_tree(str(root), manifest, mm.load_state(path), "changed").bytes_read == 0


@pytest.mark.parametrize("content", [
    b"", b"{", b"\xff\xfe", b"[]", b'{"version": 2, "files": {}}', b'{"files": {}}', b'{"version": 1, "files": []}',
    b"[" * 100000 + b"]" * 100000,
])
def test_corrupt_state_is_empty(tmp_path, content):
    path = tmp_path / "state.json"
    path.write_bytes(content)
    assert mm.load_state(str(path)) == {}


def test_missing_and_linked_state_is_empty(tmp_path):
    assert mm.load_state(str(tmp_path / "none.json")) == {}
    mm.save_state(str(tmp_path / "real.json"), {})
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
    assert mm.load_state(str(tmp_path / "link.json")) == {}


def test_state_records_are_checked_one_by_one(tmp_path):
    good = {"size": 6, "mtime_ns": 1, "ctime_ns": 2, "ino": 3, "blob": HELLO_BLOB}
    files = {"good": good, "no-hash": dict(good, blob=None), "two-hashes": dict(good, sha256=HELLO_SHA256),
             "short-hash": dict(good, blob="abc"), "upper-hash": dict(good, blob=HELLO_BLOB.upper()),
             "bool-size": dict(good, size=True), "negative": dict(good, ino=-1), "no-ctime": dict(
                 (key, value) for key, value in good.items() if key != "ctime_ns"), "text": "x"}
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"version": 1, "files": files}))
    assert mm.load_state(str(path)) == {"good": good}


def test_failed_save_keeps_the_old_state(tmp_path, monkeypatch):
    path = str(tmp_path / "state.json")
    mm.save_state(path, {"a": 1})

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(mm.json, "dump", broken)
    with pytest.raises(OSError):
        mm.save_state(path, {"b": 2})
    with open(path) as handle:
        assert json.load(handle) == {"version": 1, "files": {"a": 1}}
    assert os.listdir(str(tmp_path)) == ["state.json"]


def test_manifest_from_dir_hashes_every_file(tmp_path):
    _write(tmp_path / "src" / "config.json", b"{}")
    _write(tmp_path / "src" / "sub" / "w.safetensors", b"w" * 3000)
    _write(tmp_path / "src" / ".cache" / "huggingface" / "x.metadata", b"skip")
    _write(tmp_path / "src" / ".git" / "HEAD", b"skip")
    os.symlink("config.json", str(tmp_path / "src" / "alias.json"))
    manifest = mm.manifest_from_dir(str(tmp_path / "src"))
    assert manifest == [
        {"path": "alias.json", "size": 2, "sha256": hashlib.sha256(b"{}").hexdigest()},
        {"path": "config.json", "size": 2, "sha256": hashlib.sha256(b"{}").hexdigest()},
        {"path": "sub/w.safetensors", "size": 3000, "sha256": hashlib.sha256(b"w" * 3000).hexdigest()},
    ]
    # what it lists verifies against a copy
    shutil.copytree(str(tmp_path / "src"), str(tmp_path / "copy"))
    result = mm.verify_tree(str(tmp_path / "copy"), manifest, {}, "full")
    assert result.bad == [] and result.missing == []


def test_manifest_from_dir_refuses_links_out(tmp_path):
    _write(tmp_path / "secret", b"s")
    _write(tmp_path / "src" / "config.json", b"{}")
    os.symlink(str(tmp_path / "secret"), str(tmp_path / "src" / "model.safetensors"))
    with pytest.raises(ModelStoreError, match="model.safetensors does not resolve to a path inside"):
        mm.manifest_from_dir(str(tmp_path / "src"))
    os.unlink(str(tmp_path / "src" / "model.safetensors"))
    os.symlink(str(tmp_path), str(tmp_path / "src" / "d"))
    with pytest.raises(ModelStoreError, match="link to a directory"):
        mm.manifest_from_dir(str(tmp_path / "src"))


def test_manifest_from_state_round_trip(tree):
    root, manifest = tree
    state = mm.verify_tree(str(root), manifest, {}, "full").state
    assert mm.manifest_from_state(state) == manifest


def test_a_record_says_where_its_hashes_came_from(tmp_path):
    path = str(tmp_path / "state.json")
    mm.save_state(path, {}, origin="hub")
    assert mm.read_state(path) == ({}, "hub")
    mm.save_state(path, {})
    assert mm.read_state(path) == ({}, None)
    with open(path, "w") as handle:
        json.dump({"version": mm.STATE_VERSION, "files": {}, "origin": "somewhere"}, handle)
    assert mm.read_state(path) == ({}, None)
    with pytest.raises(ValueError, match="origin must be one of hub, path"):
        mm.save_state(path, {}, origin="elsewhere")
    assert mm.read_state(str(tmp_path / "missing.json")) == ({}, None)
