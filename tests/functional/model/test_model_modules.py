# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""model_revision and model_stage against a real mirror (olah 0.5.4, offline, local git repositories) and the real
huggingface_hub (the CPU SGLang venv's, 1.33.0), with the hostile proxy between them.

The modules run as real processes (``python -m <module> ARGS_FILE``), so their download child is a real process
too and its command line can be read while it runs.  Needs what tests/functional/model/test_mirror.py needs
(skipped without it); the disk-full test needs root (it mounts a small tmpfs).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from model_mirror_helpers import (
    BIG_REPO,
    HUB_PYTHON,
    NEEDS_MIRROR,
    PICKLE_REPO,
    REPO,
    TINY_MODEL,
    WEIGHTS,
    communicate,
)

TREE = os.environ.get("LLMSERVE_PYTEST_TREE", "")
MODULES = "ansible_collections.llmserve.sglang.plugins.modules."
BIG_SIZE = 48 * 1024 * 1024  # bytes of BIG_REPO's weights (the mirror fixture reads it)
TOKEN = "hf_llmserveFUNCtoken%08d" % random.Random().randrange(10 ** 8)

pytestmark = NEEDS_MIRROR + [
    pytest.mark.skipif(not TREE, reason="run from the repository root (its conftest links the collection)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="the store's files are root's: chown needs root"),
]


def start_module(name, args, tmp_path):
    path = tmp_path / ("args-%s-%d.json" % (name, time.monotonic_ns()))
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=TREE)
    # pylint: disable-next=consider-using-with
    return subprocess.Popen([sys.executable, "-m", MODULES + name, str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=str(tmp_path), start_new_session=True)


def finish(proc, timeout=300):
    out, err = communicate(proc, timeout)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    assert lines, (out, err)
    return json.loads(lines[-1])


def run_module(name, args, tmp_path, timeout=300):
    return finish(start_module(name, args, tmp_path), timeout)


def resolve(mirror, tmp_path, repo=REPO, revision=None, **extra):
    args = dict(repo=repo, revision=revision or mirror.commits[repo][-1], endpoint=mirror.proxy.url, token=TOKEN,
                python=str(HUB_PYTHON))
    args.update(extra)
    return run_module("model_revision", args, tmp_path)


def stage(mirror, tmp_path, store, resolved, **extra):
    args = dict(repo=resolved["repo"], commit=resolved["commit"], manifest=resolved["manifest"], dir=str(store),
                endpoint=mirror.proxy.url, token=TOKEN, python=str(HUB_PYTHON), disk_margin=0, timeout=240)
    args.update(extra)
    return run_module("model_stage", args, tmp_path)


def resolved_for(mirror, tmp_path, repo=REPO, revision=None):
    out = resolve(mirror, tmp_path, repo, revision)
    assert not out.get("failed"), out
    return dict(repo=repo, commit=out["commit"], manifest=out["manifest"])


def git_file(mirror, repo, commit, name):
    return subprocess.run(["git", "-C", str(mirror.root / "models" / repo), "show", "%s:%s" % (commit, name)],
                          check=True, stdout=subprocess.PIPE).stdout


# --- model_revision ---------------------------------------------------------------------------------

def test_revision_resolves_the_manifest_the_mirror_publishes(hostile, tmp_path):
    first = hostile.commits[REPO][0]
    out = resolve(hostile, tmp_path, revision=first)
    assert not out.get("failed"), out
    assert out["commit"] == first and out["floating"] is False and out["huggingface_hub"] == "1.33.0"
    entries = {e["path"]: e for e in out["manifest"]}
    assert set(entries) == {p.name for p in TINY_MODEL.iterdir() if p.is_file()} | {".gitattributes"}
    weights = (TINY_MODEL / WEIGHTS).read_bytes()
    assert entries[WEIGHTS] == {"path": WEIGHTS, "size": len(weights), "sha256": hashlib.sha256(weights).hexdigest()}
    config = git_file(hostile, REPO, first, "config.json")
    assert entries["config.json"]["blob"] == hashlib.sha1(b"blob %d\0" % len(config) + config).hexdigest()
    assert out["total_bytes"] == sum(e["size"] for e in out["manifest"]) and out["files"] == len(entries)
    assert TOKEN not in json.dumps(out)
    # every request carried the token as a Bearer header, and nothing was downloaded but config.json
    digest = hashlib.sha256(TOKEN.encode()).hexdigest()
    assert all(r["authorization"] == {"scheme": "Bearer", "sha256": digest} for r in hostile.requests())
    assert [r["path"].rsplit("/", 1)[1] for r in hostile.gets()] == ["config.json"], hostile.requests()


def test_floating_revision_refused_without_a_request_or_resolved_when_allowed(hostile, tmp_path):
    out = resolve(hostile, tmp_path, revision="main")
    assert out.get("failed") and "sglang_model_allow_floating_revision" in out["msg"]
    assert hostile.requests() == []
    out = resolve(hostile, tmp_path, revision="main", allow_floating=True)
    assert out["commit"] == hostile.commits[REPO][-1] and out["floating"] is True


def test_unknown_branch_names_repo_revision_and_endpoint(hostile, tmp_path):
    out = resolve(hostile, tmp_path, revision="no-such-branch", allow_floating=True)
    assert out.get("failed")
    for word in (REPO, "no-such-branch", hostile.proxy.url, "RepositoryNotFoundError"):
        assert word in out["msg"], out["msg"]
    assert TOKEN not in json.dumps(out)


def test_pickle_repository_refused_naming_the_file(hostile, tmp_path):
    out = resolve(hostile, tmp_path, repo=PICKLE_REPO)
    assert out.get("failed") and "pytorch_model.bin" in out["msg"] and "sglang_model_allow_pickle" in out["msg"]


# --- model_stage --------------------------------------------------------------------------------------

def revision_files(path):
    return {str(p.relative_to(path)): p.read_bytes() for p in Path(path).rglob("*") if p.is_file()}


def test_stage_then_rerun_reads_nothing(hostile, tmp_path):
    store = tmp_path / "models"
    resolved = resolved_for(hostile, tmp_path, revision=hostile.commits[REPO][0])
    out = stage(hostile, tmp_path, store, resolved)
    assert not out.get("failed") and out["changed"] is True, out
    got = revision_files(out["path"])
    assert set(got) == {e["path"] for e in resolved["manifest"]}
    assert got[WEIGHTS] == (TINY_MODEL / WEIGHTS).read_bytes()
    assert out["bytes_read"] == out["downloaded_bytes"] == sum(e["size"] for e in resolved["manifest"])
    gets = len(hostile.gets())
    again = stage(hostile, tmp_path, store, resolved)
    assert again["changed"] is False and again["bytes_read"] == 0 and again["files_hashed"] == 0, again
    assert len(hostile.gets()) == gets, "a rerun fetches nothing"


def test_flipped_byte_once_is_fetched_again(hostile, tmp_path):
    store = tmp_path / "models"
    resolved = resolved_for(hostile, tmp_path)
    hostile.set_rules({"mode": "flip", "path": "*/resolve/*/" + WEIGHTS, "n": 1000, "times": 1})
    out = stage(hostile, tmp_path, store, resolved)
    assert not out.get("failed"), out
    assert len(hostile.gets(WEIGHTS)) == 2
    assert revision_files(out["path"])[WEIGHTS] == (TINY_MODEL / WEIGHTS).read_bytes()


def test_flipped_byte_every_time_fails_and_the_old_revision_stays(hostile, tmp_path):
    store = tmp_path / "models"
    old = resolved_for(hostile, tmp_path, revision=hostile.commits[REPO][0])
    served = stage(hostile, tmp_path, store, old)
    assert not served.get("failed"), served
    before = revision_files(served["path"])
    new = resolved_for(hostile, tmp_path)
    hostile.set_rules({"mode": "flip", "path": "*/resolve/*/" + WEIGHTS, "n": 1000})
    out = stage(hostile, tmp_path, store, new)
    assert out.get("failed")
    good = hashlib.sha256((TINY_MODEL / WEIGHTS).read_bytes()).hexdigest()
    bad = bytearray((TINY_MODEL / WEIGHTS).read_bytes())
    bad[1000] ^= 0xFF
    assert "%s: sha256 is %s, the hub publishes %s" % (WEIGHTS, hashlib.sha256(bad).hexdigest(), good) in out["msg"]
    assert not os.path.exists(os.path.join(str(store), "llmserve--tiny-llama", new["commit"]))
    assert revision_files(served["path"]) == before


def test_disk_full_refused_before_any_byte(hostile, tmp_path):
    small = tmp_path / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=20m", "tmpfs", str(small)], check=False).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        resolved = resolved_for(hostile, tmp_path, repo=BIG_REPO)
        gets = len(hostile.gets())
        out = stage(hostile, tmp_path, small / "models", resolved, disk_margin=1 << 20)
        assert out.get("failed")
        assert "mounted at %s" % small in out["msg"] and "(%d bytes) still to fetch" % resolved_total(resolved) \
            in out["msg"], out["msg"]
        assert os.listdir(str(small)) == [] and len(hostile.gets()) == gets
    finally:
        subprocess.run(["umount", str(small)], check=False)


def resolved_total(resolved):
    return sum(e["size"] for e in resolved["manifest"])


def _hub_child(pid):
    """The pid of the module's huggingface_hub child (``python -I -c ...``), or None."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (stat.parent / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid and b"\0-I\0-c\0" in cmdline:
            return int(stat.parent.name)
    return None


def test_killed_download_resumes_and_token_stays_out_of_argv(hostile, tmp_path):
    store = tmp_path / "models"
    resolved = resolved_for(hostile, tmp_path, repo=BIG_REPO)
    hostile.set_rules({"mode": "slow", "path": "*/resolve/*/" + WEIGHTS, "n": 8 * 1024 * 1024})
    proc = start_module("model_stage", dict(
        repo=BIG_REPO, commit=resolved["commit"], manifest=resolved["manifest"], dir=str(store),
        endpoint=hostile.proxy.url, token=TOKEN, python=str(HUB_PYTHON), disk_margin=0, timeout=240), tmp_path)
    staging = store / "llmserve--big" / (".staging-" + resolved["commit"])
    partial = staging / ".cache" / "huggingface" / "download"
    deadline = time.monotonic() + 120
    child = None
    while time.monotonic() < deadline:
        child = child or _hub_child(proc.pid)
        if child and any(p.name.endswith(".incomplete") and p.stat().st_size > 2 * 1024 * 1024
                         for p in (partial.glob("*") if partial.is_dir() else [])):
            break
        time.sleep(0.2)
    assert child, "the module started no huggingface_hub child"
    for pid in (proc.pid, child):
        for part in ("cmdline", "environ"):
            assert TOKEN.encode() not in Path("/proc/%d/%s" % (pid, part)).read_bytes(), (pid, part)
    os.kill(child, signal.SIGKILL)
    out = finish(proc)
    assert out.get("failed") and "failed" in out["msg"] and TOKEN not in json.dumps(out), out
    assert list(partial.glob("*.incomplete")), "the killed child left its partial file"
    done_before = {p.name for p in staging.iterdir() if p.is_file()}
    assert "config.json" in done_before and WEIGHTS not in done_before
    hostile.set_rules()
    gets = len(hostile.gets())
    out = stage(hostile, tmp_path, store, resolved)
    assert not out.get("failed"), out
    again = [r["path"].rsplit("/", 1)[1] for r in hostile.gets()[gets:]]
    assert again == [WEIGHTS], "only the file cut half-way is fetched again"
    assert out["downloaded_bytes"] == BIG_SIZE and not staging.exists()
    assert revision_files(out["path"])[WEIGHTS] == (hostile.big_source / WEIGHTS).read_bytes()


# --- issue 45: a mirror that streams more than it lists; the host's proxy and a loopback mirror ---------------------

def store_files(root):
    """{path: size} of every file under ``root`` now (files that vanish meanwhile are left out)."""
    found = {}
    for top, _dirs, files in os.walk(str(root)):
        for name in files:
            try:
                found[os.path.join(top, name)] = os.lstat(os.path.join(top, name)).st_size
            except OSError:
                pass
    return found


def test_a_mirror_that_streams_more_than_it_lists_is_cut_off(hostile, tmp_path):
    store = tmp_path / "models"
    resolved = resolved_for(hostile, tmp_path)
    sizes = {e["path"]: e["size"] for e in resolved["manifest"]}
    pad = 400 << 20
    hostile.set_rules({"mode": "pad", "path": "*/resolve/*/config.json", "n": pad})
    # the largest file of any one moment under the store, looked at every millisecond while the module runs
    peak = {"file": 0, "all": 0}
    running = threading.Event()
    running.set()

    def sample():
        while running.is_set():
            now = store_files(store)
            peak["file"] = max([peak["file"]] + list(now.values()))
            peak["all"] = max(peak["all"], sum(now.values()))
            time.sleep(0.001)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        out = stage(hostile, tmp_path, store, resolved)
    finally:
        running.clear()
        sampler.join()
    assert out.get("failed"), out
    # The bound: the child cannot write a file past the largest listed size plus 1 MiB (its RLIMIT_FSIZE; the watch
    # stops it within 0.25 s besides), so config.json never held more than that, 400 MiB offered.
    ceiling = max(sizes.values()) + (1 << 20)
    assert peak["file"] <= ceiling, (peak, ceiling)
    # and all together: the files, that one over-long file, and huggingface_hub's few KiB of metadata and listing
    assert peak["all"] <= sum(sizes.values()) + ceiling + (64 << 10), (peak, sizes)
    assert "config.json is listed with %d bytes and the hub sent at least " % sizes["config.json"] in out["msg"]
    assert "the published revisions are untouched" in out["msg"] and TOKEN not in json.dumps(out)
    sent = [r.get("sent", 0) for r in hostile.gets("config.json")]
    assert sent and max(sent) < 64 << 20, "the child stopped reading long before the 400 MiB were sent: %s" % sent
    left = store_files(store)
    assert not [path for path in left if path.endswith(".incomplete")], left
    assert not [path for path, size in left.items() if os.path.basename(path) in sizes
                and size > sizes[os.path.basename(path)]], left
    assert not os.path.exists(os.path.join(str(store), "llmserve--tiny-llama", resolved["commit"]))


class ProxyRecorder(object):
    """A listener standing for the host's HTTP proxy: it records each request line and answers 502."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        self.seen = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _addr = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                try:
                    self.seen.append(conn.recv(4096).split(b"\r\n", 1)[0].decode("latin-1"))
                    conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                except OSError:
                    pass

    def close(self):
        self.sock.close()


def run_module_env(name, args, tmp_path, env):
    path = tmp_path / ("args-%s-%d.json" % (name, time.monotonic_ns()))
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}), encoding="utf-8")
    # pylint: disable-next=consider-using-with
    proc = subprocess.Popen([sys.executable, "-m", MODULES + name, str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(env, PYTHONPATH=TREE), cwd=str(tmp_path),
                            start_new_session=True)
    return finish(proc)


def test_a_loopback_mirror_is_reached_direct_whatever_the_hosts_proxy(hostile, tmp_path):
    recorder = ProxyRecorder()
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(http_proxy=recorder.url, https_proxy=recorder.url, HTTP_PROXY=recorder.url,
               HTTPS_PROXY=recorder.url, ALL_PROXY=recorder.url)
    try:
        first = hostile.commits[REPO][0]
        common = dict(endpoint=hostile.proxy.url, token=TOKEN, python=str(HUB_PYTHON))
        out = run_module_env("model_revision", dict(common, repo=REPO, revision=first), tmp_path, env)
        assert recorder.seen == [], "the host's proxy got: %s" % recorder.seen
        assert not out.get("failed"), out
        staged = run_module_env("model_stage", dict(common, repo=REPO, commit=out["commit"], manifest=out["manifest"],
                                                    dir=str(tmp_path / "models"), disk_margin=0, timeout=240),
                                tmp_path, env)
    finally:
        recorder.close()
    assert recorder.seen == [], "the host's proxy got: %s" % recorder.seen
    assert not staged.get("failed"), staged
    digest = hashlib.sha256(TOKEN.encode()).hexdigest()
    assert hostile.gets(WEIGHTS) and all(r["authorization"] == {"scheme": "Bearer", "sha256": digest}
                                         for r in hostile.requests())
