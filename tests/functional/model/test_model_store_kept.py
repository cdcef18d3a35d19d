# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""model_stage keeps what it verified (issue 45), against the real mirror (olah) and the real huggingface_hub with
the hostile proxy between them: a mirror that corrupts each file of the revision once in turn, and a store another
account controls (the real unprivileged account ``nobody``)."""

from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import tempfile

import pytest

from model_mirror_helpers import NEEDS_MIRROR
from test_model_modules import TREE, resolved_for, revision_files, stage

BIG_SIZE = 1024 * 1024  # bytes of BIG_REPO's weights (the mirror fixture reads it; unused here)

pytestmark = NEEDS_MIRROR + [
    pytest.mark.skipif(not TREE, reason="run from the repository root (its conftest links the collection)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="the store's files are root's: chown needs root"),
]


def digest(data, entry):
    """The hash of ``data`` as the manifest entry gives it: sha256 for an LFS file, the git blob id otherwise."""
    if "sha256" in entry:
        return hashlib.sha256(data).hexdigest()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def test_each_file_corrupted_once_in_turn_is_fetched_again_and_no_other_file_is_lost(hostile, tmp_path):
    resolved = resolved_for(hostile, tmp_path)
    names = sorted(entry["path"] for entry in resolved["manifest"])
    assert len(names) >= 6, names
    for name in names:
        store = tmp_path / ("models-" + name.replace("/", "_"))
        hostile.set_rules({"mode": "flip", "path": "*/resolve/*/" + name, "n": 0, "times": 1})
        gets = len(hostile.gets(name))
        out = stage(hostile, tmp_path, store, resolved)
        assert not out.get("failed") and out["changed"] is True, (name, out)
        assert len(hostile.gets(name)) == gets + 2, "%s fetched twice" % name
        got = revision_files(out["path"])
        assert sorted(got) == names, (name, sorted(got))
        for entry in resolved["manifest"]:
            assert digest(got[entry["path"]], entry) == entry.get("sha256", entry.get("blob")), (name, entry)
        # the next run with full verification agrees with the record and changes nothing
        hostile.set_rules()
        again = stage(hostile, tmp_path, store, dict(resolved, manifest=[]), fetch=False, verify="full")
        assert not again.get("failed") and again["changed"] is False, (name, again)
        assert again["files_hashed"] == len(names)


def test_a_store_whose_parent_another_account_owns_is_refused_before_the_hub_is_asked(hostile, tmp_path):
    nobody = pwd.getpwnam("nobody")
    shared = tempfile.mkdtemp(prefix="llmserve-store-trust-")
    try:
        os.chmod(shared, 0o755)
        parent = os.path.join(shared, "parent")
        os.mkdir(parent)
        os.chown(parent, nobody.pw_uid, nobody.pw_gid)
        resolved = resolved_for(hostile, tmp_path)
        gets = len(hostile.gets())
        out = stage(hostile, tmp_path, os.path.join(parent, "models"), resolved)
        assert out.get("failed"), out
        assert out["msg"].startswith("sglang_model_dir: ") and "%s (found: uid %d" % (parent, nobody.pw_uid) \
            in out["msg"], out["msg"]
        assert len(hostile.gets()) == gets and os.listdir(parent) == []
    finally:
        shutil.rmtree(shared, ignore_errors=True)
