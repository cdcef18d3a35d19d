# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Publish a model directory as one new revision of a git repository that olah serves as a hub repository.

    python3 tools/model/make_mirror_repo.py --model-dir DIR --root MIRROR_ROOT --repo ORG/NAME
        [--message MSG] [--touch FILE] [--lfs-min-size BYTES]

The repository is ``MIRROR_ROOT/models/ORG/NAME`` (olah's ``mirrors-path`` layout), branch ``main`` (olah answers
"Repository Not Found" for a repository without one). Each call replaces the working tree with the files of
``--model-dir`` (so files missing there are removed), optionally appends a line to ``--touch FILE`` so the revision
differs, commits with the real ``git`` binary and prints the new commit id on stdout. Every call makes a commit,
even with no change, so every call is "a new revision pushed to the mirror".

``--lfs-min-size``: files at least that large are committed the way the Hugging Face hub stores weights, as Git LFS
pointers with the content under ``.git/lfs/objects/``; olah then reports ``lfs: {oid: <sha256>, size}`` for them, as
the real hub does. git-lfs itself is not needed: the pointer format is three lines of text.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# what the hub puts in a new repository's .gitattributes for weights (git ignores the unknown filter here)
GITATTRIBUTES = "*.safetensors filter=lfs diff=lfs merge=lfs -text\n*.bin filter=lfs diff=lfs merge=lfs -text\n"
# fixed identity and dates from the environment are not wanted: each call must give a new commit id
GIT_ENV = {"GIT_AUTHOR_NAME": "llmserve test", "GIT_AUTHOR_EMAIL": "test@llmserve.invalid",
           "GIT_COMMITTER_NAME": "llmserve test", "GIT_COMMITTER_EMAIL": "test@llmserve.invalid"}


def lfs_pointer(sha256, size):
    """The text of a Git LFS pointer file for content with this sha256 and size."""
    return "version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n" % (sha256, size)


def _git(repo, *args):
    env = dict(os.environ, **GIT_ENV)
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        env.pop(name, None)
    return subprocess.run(["git", "-C", str(repo), *args], check=True, env=env,
                          stdout=subprocess.PIPE, text=True).stdout.strip()


def _sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _store_lfs(repo, source, dest):
    """Put ``source``'s content into the repository's LFS object store and write its pointer at ``dest``."""
    sha256 = _sha256_file(source)
    obj = repo / ".git" / "lfs" / "objects" / sha256[:2] / sha256[2:4] / sha256
    if not obj.exists():
        obj.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, obj)
    dest.write_text(lfs_pointer(sha256, source.stat().st_size), encoding="ascii")


def publish(model_dir, root, repo_id, message="new revision", touch=None, lfs_min_size=0):
    """Commit ``model_dir`` as the next revision of ``repo_id`` under ``root``; return the commit id."""
    model_dir = Path(model_dir)
    parts = repo_id.split("/")
    if len(parts) != 2 or not all(NAME.match(p) for p in parts):
        raise ValueError("--repo must be ORG/NAME, got %r" % repo_id)
    if not model_dir.is_dir():
        raise ValueError("--model-dir %s is not a directory" % model_dir)
    repo = Path(root) / "models" / parts[0] / parts[1]
    if not (repo / ".git").is_dir():
        repo.mkdir(parents=True, exist_ok=True)
        _git(repo, "init", "--quiet", "--initial-branch=main")
    for entry in repo.iterdir():
        if entry.name == ".git":
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    for source in sorted(model_dir.rglob("*")):
        rel = source.relative_to(model_dir)
        if rel.parts[0] in (".git", ".cache") or not source.is_file() or source.is_symlink():
            continue
        dest = repo / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if lfs_min_size and source.stat().st_size >= lfs_min_size:
            _store_lfs(repo, source, dest)
        else:
            shutil.copyfile(source, dest)
    if not (repo / ".gitattributes").exists():
        (repo / ".gitattributes").write_text(GITATTRIBUTES, encoding="ascii")
    if touch:
        target = repo / touch
        target.parent.mkdir(parents=True, exist_ok=True)
        count = len(target.read_text(encoding="utf-8").splitlines()) if target.exists() else 0
        with open(target, "a", encoding="utf-8") as handle:
            handle.write("revision %d: %s\n" % (count + 1, message))
    _git(repo, "add", "--all")
    _git(repo, "commit", "--quiet", "--allow-empty", "--no-verify", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--model-dir", required=True, help="directory whose files become the revision")
    parser.add_argument("--root", required=True, help="olah mirrors-path directory")
    parser.add_argument("--repo", required=True, help="ORG/NAME")
    parser.add_argument("--message", default="new revision", help="commit message")
    parser.add_argument("--touch", help="file (relative to the repository) to append a line to")
    parser.add_argument("--lfs-min-size", type=int, default=0,
                        help="store files of at least this many bytes as Git LFS objects (0: never)")
    args = parser.parse_args(argv)
    try:
        commit = publish(args.model_dir, args.root, args.repo, args.message, args.touch, args.lfs_min_size)
    except (ValueError, subprocess.CalledProcessError) as exc:
        print("make_mirror_repo: %s" % exc, file=sys.stderr)
        return 1
    print(commit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
