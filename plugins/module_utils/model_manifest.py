# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A model revision's manifest, the hashes of its files, and their verification.

A manifest lists every file of a revision as ``{path, size, sha256}`` (a file the hub keeps in LFS: the sha256 it
publishes) or ``{path, size, blob}`` (a plain git file: its git blob id, ``sha1(b"blob <size>\\0" + content)``).

``check_manifest(entries)`` / ``entry_from_hub(item)``
    a clean manifest: safe names, sizes, hashes; the hub's ``paths-info``/tree items turned into entries.
``hash_file(path, want)`` / ``sha256_file(path)`` / ``git_blob_sha1(path)``
    the hashes of one file, read once in 1 MiB chunks.
``verify_tree(root, manifest, state, mode)``
    which files are good, bad, missing or extra.  In ``changed`` mode a file whose size, mtime, ctime and inode match
    the previous run's record, and whose recorded hash is the manifest's, is not read; ``full`` reads every file.
``load_state(path)`` / ``read_state(path)`` / ``save_state(path, state, origin=...)``
    that record, as JSON written atomically; a record that is missing, corrupt or malformed counts as empty, so every
    file is hashed again. ``origin`` says where the hashes came from (``hub``: the hub's manifest; ``path``: hashed
    from a directory on the host); only a ``hub`` record can stand in for the hub's manifest of its commit.
``present_sizes(root, manifest)``
    the files already complete in a staging directory (for ``model_store.bytes_needed``).
``manifest_from_dir(root)`` / ``manifest_from_state(state)``
    the manifest of a directory (a ``path`` source: every file hashed with sha256), or of a verified record.

Standard library only: this runs on the managed hosts (Python 3.8+).
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import re
import stat
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.llmserve.sglang.plugins.module_utils.model_store import (
    ModelStoreError,
    check_file_name,
    safe_join,
)
from ansible_collections.llmserve.sglang.plugins.module_utils.atomic_file import write_json_atomic
from ansible_collections.llmserve.sglang.plugins.module_utils.text import printable

CHUNK = 1 << 20
O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
HASH_LENGTHS = {"sha256": 64, "blob": 40}
STATE_VERSION = 1
# A record of some thousand files is far below this; a bigger file is not one the store wrote.
MAX_STATE = 16 << 20
_STAT_KEYS = ("size", "mtime_ns", "ctime_ns", "ino")
# Where a record's hashes came from: the hub's manifest, or hashing a directory on the host (source path).
ORIGINS = ("hub", "path")

Verification = collections.namedtuple("Verification", "ok bad missing extra state bytes_read")


def _sha1():
    # A git blob id identifies content the hub already published; FIPS hosts allow sha1 only when told so.
    try:
        return hashlib.sha1(usedforsecurity=False)
    except TypeError:  # Python 3.8
        return hashlib.sha1()


def _show(path):
    return printable(path, 300, escape=True)


# --- manifest ------------------------------------------------------------------------------

def _algo(entry):
    return ("sha256", entry["sha256"]) if "sha256" in entry else ("blob", entry["blob"])


def check_manifest(entries):
    """``entries`` as clean manifest entries sorted by path; ModelStoreError naming the first bad one."""
    clean = {}
    for entry in entries:
        if not isinstance(entry, dict):
            raise ModelStoreError("manifest entry %s is not a mapping" % _show(repr(entry)))
        path = check_file_name(entry.get("path"))
        size = entry.get("size")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ModelStoreError("manifest entry %s: size %r is not a byte count" % (_show(path), size))
        algos = [algo for algo in HASH_LENGTHS if entry.get(algo) is not None]
        if len(algos) != 1:
            raise ModelStoreError("manifest entry %s needs exactly one of sha256 (LFS files) or blob (git files)"
                                  % _show(path))
        digest = entry[algos[0]]
        if not isinstance(digest, str) or not re.match("[0-9a-fA-F]{%d}\\Z" % HASH_LENGTHS[algos[0]], digest):
            raise ModelStoreError("manifest entry %s: %s %r is not %d hexadecimal digits"
                                  % (_show(path), algos[0], digest, HASH_LENGTHS[algos[0]]))
        if path in clean:
            raise ModelStoreError("manifest lists %s twice" % _show(path))
        clean[path] = {"path": path, "size": size, algos[0]: digest.lower()}
    # A name that is also another's directory cannot be a file on disk.
    for path in clean:
        parent = path
        while "/" in parent:
            parent = parent.rsplit("/", 1)[0]
            if parent in clean:
                raise ModelStoreError("manifest lists %s as a file and as the directory of %s"
                                      % (_show(parent), _show(path)))
    return [clean[path] for path in sorted(clean)]


def entry_from_hub(item):
    """A manifest entry from one item of the hub's ``paths-info`` or tree answer; None for a directory.

    LFS files carry ``lfs: {oid|sha256, size}`` (the sha256 of the content); other files only ``oid``, their git
    blob id.
    """
    if item.get("type", "file") != "file":
        return None
    lfs = item.get("lfs")
    if isinstance(lfs, dict):
        digest = lfs.get("sha256") or lfs.get("oid") or ""
        if digest.startswith("sha256:"):
            digest = digest[len("sha256:"):]
        return {"path": item.get("path"), "size": lfs.get("size", item.get("size")), "sha256": digest}
    return {"path": item.get("path"), "size": item.get("size"), "blob": item.get("oid")}


# --- hashes --------------------------------------------------------------------------------

def _hash_fd(fd, want):
    """(digests, bytes read, stat before, stat after) of an open regular file, read once."""
    before = os.fstat(fd)
    hashes = {}
    if "sha256" in want:
        hashes["sha256"] = hashlib.sha256()
    if "blob" in want:
        # The header holds the size, so it comes from fstat; a file that changes size while it is read gives
        # a read count that differs from it, and the caller sees that.
        hashes["blob"] = _sha1()
        hashes["blob"].update(b"blob %d\0" % before.st_size)
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    done = 0
    while True:
        count = os.readv(fd, [buf])
        if not count:
            break
        for digest in hashes.values():
            digest.update(view[:count])
        done += count
    return dict((name, digest.hexdigest()) for name, digest in hashes.items()), done, before, os.fstat(fd)


def _open_regular(path):
    fd = os.open(path, os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ModelStoreError("%s is not a regular file" % _show(path))
    return fd


def hash_file(path, want=("sha256",)):
    """``({algo: hex}, bytes read)`` for the algorithms in ``want`` (``sha256``, ``blob``), reading ``path`` once."""
    unknown = set(want) - set(HASH_LENGTHS)
    if unknown:
        raise ValueError("unknown hash %s" % ", ".join(sorted(unknown)))
    fd = _open_regular(path)
    try:
        digests, done = _hash_fd(fd, want)[:2]
    finally:
        os.close(fd)
    return digests, done


def sha256_file(path):
    """The sha256 of ``path`` (hex)."""
    return hash_file(path, ("sha256",))[0]["sha256"]


def git_blob_sha1(path):
    """The git blob id of ``path`` (what ``git hash-object`` prints)."""
    return hash_file(path, ("blob",))[0]["blob"]


# --- verification --------------------------------------------------------------------------

def _record(info, algo, digest):
    return {"size": info.st_size, "mtime_ns": info.st_mtime_ns, "ctime_ns": info.st_ctime_ns, "ino": info.st_ino,
            algo: digest}


def _same_file(record, info):
    # ctime as well as mtime: writing a byte and putting the old mtime back (os.utime) still moves ctime.
    return all(record.get(key) == value for key, value in zip(_STAT_KEYS, (
        info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)))


def _bad(entry, reason, got=None, size_got=None):
    algo, want = _algo(entry)
    return {"path": entry["path"], "reason": reason, "algo": algo, "want": want, "got": got,
            "size_want": entry["size"], "size_got": size_got}


def _verify_one(root, entry, record, mode):
    """('ok'|'bad'|'missing', bad item or None, new record or None, bytes read) for one manifest entry."""
    path = safe_join(root, entry["path"])
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return "missing", None, None, 0
    if not stat.S_ISREG(info.st_mode):
        return "bad", _bad(entry, "not a regular file"), None, 0
    if info.st_size != entry["size"]:
        return "bad", _bad(entry, "size", size_got=info.st_size), None, 0
    algo, want = _algo(entry)
    if mode == "changed" and isinstance(record, dict) and record.get(algo) == want and _same_file(record, info):
        return "ok", None, record, 0
    fd = _open_regular(path)
    try:
        digests, done, before, after = _hash_fd(fd, (algo,))
    finally:
        os.close(fd)
    if done != entry["size"]:
        return "bad", _bad(entry, "size", size_got=done), None, done
    if digests[algo] != want:
        return "bad", _bad(entry, "hash", digests[algo], done), None, done
    # Remember the file only when it held still while it was read.
    stable = _same_file(_record(before, algo, None), after) and before.st_ino == info.st_ino
    return "ok", None, _record(before, algo, want) if stable else None, done


def _extra(root, listed):
    extra = []
    for top, dirs, files in os.walk(root):
        rel = os.path.relpath(top, root)
        prefix = "" if rel == "." else rel + "/"
        # os.walk lists a link to a directory among dirs and does not descend into it.
        names = files + [name for name in dirs if os.path.islink(os.path.join(top, name))]
        extra.extend(prefix + name for name in names if prefix + name not in listed)
    return sorted(extra)


def verify_tree(root, manifest, state, mode, workers=1):
    """A ``Verification(ok, bad, missing, extra, state, bytes_read)`` of ``root`` against ``manifest``.

    ``bad`` items are ``{path, reason, algo, want, got, size_want, size_got}`` (a wrong size is reported without
    reading the file); ``extra`` lists files under ``root`` that the manifest does not; ``state`` is the record for
    the next run (the good files only).  ``workers`` files are hashed at once (hashlib lets threads run).
    """
    if mode not in ("changed", "full"):
        raise ModelStoreError("sglang_model_verify: %r must be 'changed' or 'full'" % (mode,))
    state = state if isinstance(state, dict) else {}

    def one(entry):
        return entry, _verify_one(root, entry, state.get(entry["path"]), mode)

    if workers > 1 and len(manifest) > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(one, manifest))
    else:
        results = [one(entry) for entry in manifest]
    ok, bad, missing, new_state, total = [], [], [], {}, 0
    for entry, (status, item, record, done) in results:
        total += done
        if status == "ok":
            ok.append(entry["path"])
            if record is not None:
                new_state[entry["path"]] = record
        elif status == "bad":
            bad.append(item)
        else:
            missing.append(entry["path"])
    extra = _extra(root, set(entry["path"] for entry in manifest)) if os.path.isdir(root) else []
    return Verification(ok, bad, missing, extra, new_state, total)


def bad_message(item):
    """One line naming a bad file and what differs (both hashes, or both sizes)."""
    if item["reason"] == "hash":
        return "%s: %s is %s, the hub publishes %s" % (_show(item["path"]), item["algo"], item["got"], item["want"])
    if item["reason"] == "size":
        return "%s: %d bytes, the hub publishes %d" % (_show(item["path"]), item["size_got"], item["size_want"])
    return "%s: %s" % (_show(item["path"]), item["reason"])


def present_sizes(root, manifest):
    """``{path: size}`` of the manifest's files that lie complete (right size, regular file) under ``root``."""
    present = {}
    for entry in manifest:
        try:
            info = os.lstat(safe_join(root, entry["path"]))
        except (OSError, ModelStoreError):
            continue
        if stat.S_ISREG(info.st_mode) and info.st_size == entry["size"]:
            present[entry["path"]] = info.st_size
    return present


def manifest_from_dir(root, skip=(".git", ".cache")):
    """The manifest (sha256 of every file) of the files under ``root``, top-level ``skip`` directories left out.

    A link is followed only when it resolves inside ``root``; one that leads out, and a name the hub would not
    accept, raise ModelStoreError naming it.  Each file is read once.
    """
    entries = []
    for top, dirs, files in os.walk(root):
        rel_top = os.path.relpath(top, root)
        prefix = "" if rel_top == "." else rel_top + "/"
        if not prefix:
            dirs[:] = [name for name in dirs if name not in skip]
        for name in list(dirs):
            if os.path.islink(os.path.join(top, name)):
                # os.walk does not descend into a link to a directory; a model source has no need for one
                raise ModelStoreError("%s in %s is a link to a directory" % (_show(prefix + name), _show(root)))
        for name in files:
            rel = check_file_name(prefix + name)
            path = safe_join(root, rel)
            fd = os.open(os.path.realpath(path), os.O_RDONLY | O_CLOEXEC)
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise ModelStoreError("%s in %s is not a regular file" % (_show(rel), _show(root)))
                digests, done = _hash_fd(fd, ("sha256",))[:2]
            finally:
                os.close(fd)
            entries.append({"path": rel, "size": done, "sha256": digests["sha256"]})
    return check_manifest(entries)


def manifest_from_state(state):
    """The manifest that a verified record ``state`` (from ``load_state``) describes."""
    entries = []
    for path, record in (state or {}).items():
        algo = "sha256" if "sha256" in record else "blob"
        entries.append({"path": path, "size": record["size"], algo: record[algo]})
    return check_manifest(entries)


# --- state ---------------------------------------------------------------------------------

def _valid_record(record):
    if not isinstance(record, dict):
        return False
    for key in _STAT_KEYS:
        value = record.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return False
    digests = [algo for algo in HASH_LENGTHS if algo in record]
    return len(digests) == 1 and isinstance(record[digests[0]], str) and bool(
        re.match("[0-9a-f]{%d}\\Z" % HASH_LENGTHS[digests[0]], record[digests[0]]))


def read_state(path):
    """``(files, origin)`` of the record ``save_state`` wrote at ``path``: ``({}, None)`` when it is missing,
    unreadable or not one it wrote; ``origin`` is None for a record written without one."""
    try:
        fd = os.open(path, os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
    except OSError:
        return {}, None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_STATE + 1)
    if len(data) > MAX_STATE:
        return {}, None
    try:
        doc = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        return {}, None
    if not isinstance(doc, dict) or doc.get("version") != STATE_VERSION or not isinstance(doc.get("files"), dict):
        return {}, None
    origin = doc.get("origin") if doc.get("origin") in ORIGINS else None
    return dict((name, record) for name, record in doc["files"].items() if _valid_record(record)), origin


def load_state(path):
    """The files of the record ``save_state`` wrote at ``path``; ``{}`` when it is missing, unreadable or not one it
    wrote."""
    return read_state(path)[0]


def save_state(path, state, mode=0o644, origin=None):
    """Write ``state`` (and its ``origin``, one of ORIGINS, when given) to ``path`` atomically and durably (a crash
    leaves the old record or the new one)."""
    doc = {"version": STATE_VERSION, "files": state}
    if origin is not None:
        if origin not in ORIGINS:
            raise ValueError("origin must be one of %s, not %r" % (", ".join(ORIGINS), origin))
        doc["origin"] = origin
    write_json_atomic(path, doc, ".tmp-", mode=mode, durable=True, sort_keys=True, indent=1)
