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
import shutil
import stat
import subprocess
import tempfile

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

def test_custom_code_in_the_downloaded_config_is_refused_although_resolve_was_shown_a_harmless_one(
        monkeypatch, tmp_path):
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


# --- finding 2: the store is trusted only where root alone controls it ------------------------------------

NOBODY = pwd.getpwnam("nobody")


@pytest.fixture
def shared(tmp_path):
    """A directory that the unprivileged account can reach (pytest's own are root's, mode 0700)."""
    path = tempfile.mkdtemp(prefix="llmserve-store-trust-")
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


# The attacker's interpreter: the system's, which nobody can run (the tests' own may live under /root).
SYSTEM_PYTHON = "/usr/bin/python3"


def as_nobody(code):
    """Run ``code`` (Python) as the real unprivileged account ``nobody``: what a hostile local account can do."""
    if not os.access(SYSTEM_PYTHON, os.X_OK) or not shutil.which("setpriv"):
        pytest.skip("needs %s and setpriv (util-linux) to act as nobody" % SYSTEM_PYTHON)
    done = subprocess.run(["setpriv", "--reuid=%d" % NOBODY.pw_uid, "--regid=%d" % NOBODY.pw_gid, "--clear-groups",
                           SYSTEM_PYTHON, "-I", "-c", code], check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done


def test_an_account_owning_the_stores_parent_cannot_forge_a_verified_revision(monkeypatch, hub, shared):
    """The attack as reported: the account that owns the store's parent swaps the revision for its own files and
    forges the record; the next run, with full verification, must not call that verified."""
    parent = os.path.join(shared, "parent")
    os.mkdir(parent, 0o755)
    store = os.path.join(parent, "models")
    assert isinstance(stage(monkeypatch, hub, store), ExitJson)
    os.chown(parent, NOBODY.pw_uid, NOBODY.pw_gid)
    repo_dir = os.path.join(store, "llmserve--tiny")
    as_nobody("""
import json, os, shutil
store, repo_dir, commit = %r, %r, %r
fake = store + ".fake"
os.makedirs(os.path.join(fake, "llmserve--tiny", commit))
with open(os.path.join(fake, "llmserve--tiny", commit, "model.safetensors"), "wb") as handle:
    handle.write(b"not the weights")
with open(os.path.join(fake, "llmserve--tiny", ".verified-%%s.json" %% commit), "w") as handle:
    json.dump({"origin": "hub", "files": {}}, handle)
os.rename(store, store + ".old")  # root's tree, renamed by the owner of the parent
os.rename(fake, store)
""" % (store, repo_dir, C1))
    calls = len(hub.calls())
    out = stage(monkeypatch, hub, store, manifest=[], fetch=False, verify="full")
    assert isinstance(out, FailJson), out.result
    msg = out.result["msg"]
    assert msg.startswith("sglang_model_dir: ") and "owned by root and writable by root only" in msg
    assert "%s (found: uid %d" % (parent, NOBODY.pw_uid) in msg and "nothing was changed" in msg
    assert len(hub.calls()) == calls, "the hub was not asked"
    # the same with a fetch: refused before anything is written below the untrusted directory
    out = stage(monkeypatch, hub, store)
    assert isinstance(out, FailJson) and out.result["msg"].startswith("sglang_model_dir: ")
    assert len(hub.calls()) == calls
    assert not os.path.exists(os.path.join(repo_dir, ".staging-" + C1))


def test_a_store_directory_another_account_made_first_is_refused(monkeypatch, hub, shared):
    """Created by the account before root's first run (a race, or a directory the inventory points at)."""
    open_dir = os.path.join(shared, "open")
    os.mkdir(open_dir, 0o1777)
    os.chmod(open_dir, 0o1777)
    store = os.path.join(open_dir, "models")
    as_nobody("import os; os.makedirs(%r, 0o755)" % os.path.join(store, "llmserve--tiny"))
    out = stage(monkeypatch, hub, store)
    assert isinstance(out, FailJson), out.result
    assert "(found: uid %d, mode 0755)" % NOBODY.pw_uid in out.result["msg"]
    assert downloads(hub) == []
    # root's own directory in the same sticky directory is fine: nobody else can rename or remove it there
    root_store = os.path.join(open_dir, "root-models")
    assert isinstance(stage(monkeypatch, hub, root_store), ExitJson)


@pytest.mark.parametrize("what", ["file", "record", "directory"])
def test_published_files_and_records_must_stay_roots(monkeypatch, hub, shared, what):
    """Checked on every run, not only when the revision was made: a file handed to another account (or made
    writable for the service's group) is not trusted, however well its stat matches the record."""
    store = os.path.join(shared, "models")
    assert isinstance(stage(monkeypatch, hub, store), ExitJson)
    rev = os.path.join(store, "llmserve--tiny", C1)
    target = {"file": os.path.join(rev, WEIGHTS),
              "record": os.path.join(store, "llmserve--tiny", ".verified-%s.json" % C1),
              "directory": os.path.join(rev, "sub")}[what]
    if what == "directory":
        os.chmod(target, 0o770)
    else:
        os.chown(target, NOBODY.pw_uid, -1)
    out = stage(monkeypatch, hub, store, manifest=[], fetch=False)
    assert isinstance(out, FailJson), out.result
    assert "%s (found: " % target in out.result["msg"] and "move the revision" in out.result["msg"]
    assert "owned by root and writable by root only" in out.result["msg"]


def test_a_link_in_the_staging_directory_is_refused_and_nothing_is_written_through_it(monkeypatch, hub, shared):
    store = os.path.join(shared, "models")
    victim = os.path.join(shared, "victim")
    os.mkdir(victim)
    stage_dir = os.path.join(store, "llmserve--tiny", ".staging-" + C1)
    os.makedirs(stage_dir, 0o700)
    os.symlink(victim, os.path.join(stage_dir, ".cache"))
    out = stage(monkeypatch, hub, store)
    assert isinstance(out, FailJson), out.result
    assert "staging directory" in out.result["msg"] and ".cache (found: a symbolic link to %s)" % victim \
        in out.result["msg"]
    assert os.listdir(victim) == [] and downloads(hub) == []


def test_an_interpreter_another_account_can_change_is_refused_before_the_token_is_handed_over(
        monkeypatch, tmp_path, shared):
    owned = os.path.join(shared, "hub-bin")
    os.mkdir(owned)
    hub = FakeHub(tmp_path, commit=C1, files=dict(FILES))
    python = os.path.join(owned, "python")
    with open(hub.python) as source, open(python, "w") as copy:
        copy.write(source.read())
    os.chmod(python, 0o755)
    os.chown(owned, NOBODY.pw_uid, NOBODY.pw_gid)
    out = stage(monkeypatch, hub, os.path.join(shared, "models"), python=python, token="hf_TrustToken123456")
    assert isinstance(out, FailJson), out.result
    msg = out.result["msg"]
    assert msg.startswith("sglang_model_python: ") and "%s (found: uid %d" % (owned, NOBODY.pw_uid) in msg
    assert hub.calls() == [] and "hf_TrustToken123456" not in json.dumps(out.result)
    # a virtualenv with one file the group may write
    os.chown(owned, 0, 0)
    venv = os.path.join(shared, "venv")
    os.makedirs(os.path.join(venv, "bin"))
    os.makedirs(os.path.join(venv, "lib", "site-packages", "huggingface_hub"))
    with open(os.path.join(venv, "pyvenv.cfg"), "w") as handle:
        handle.write("home = /usr/bin\n")
    planted = os.path.join(venv, "lib", "site-packages", "huggingface_hub", "__init__.py")
    with open(planted, "w") as handle:
        handle.write("")
    os.chmod(planted, 0o664)
    os.symlink(python, os.path.join(venv, "bin", "python"))
    out = stage(monkeypatch, hub, os.path.join(shared, "models"), python=os.path.join(venv, "bin", "python"))
    assert isinstance(out, FailJson), out.result
    assert "%s (found: uid 0, mode 0664)" % planted in out.result["msg"]
    assert hub.calls() == []
    os.chmod(planted, 0o644)
    out = stage(monkeypatch, hub, os.path.join(shared, "models"), python=os.path.join(venv, "bin", "python"))
    assert isinstance(out, ExitJson), out.result
    assert stat.S_IMODE(os.stat(os.path.join(shared, "models")).st_mode) == 0o750


def test_resolving_refuses_an_interpreter_another_account_can_change(monkeypatch, tmp_path, shared):
    from ansible_collections.llmserve.sglang.plugins.modules import model_revision

    hub = FakeHub(tmp_path, commit=C1, files=dict(FILES))
    python = os.path.join(shared, "python")
    shutil.copy(hub.python, python)
    os.chmod(python, 0o755)
    os.chown(python, NOBODY.pw_uid, NOBODY.pw_gid)
    out = run_module(monkeypatch, model_revision, dict(repo=REPO, revision=C1, python=python,
                                                       token="hf_TrustToken123456"))
    assert isinstance(out, FailJson), out.result
    assert out.result["msg"].startswith("sglang_model_python: ")
    assert "%s (found: uid %d, mode 0755)" % (python, NOBODY.pw_uid) in out.result["msg"]
    assert hub.calls() == []
