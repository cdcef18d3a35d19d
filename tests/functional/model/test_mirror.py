# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A real Hugging Face mirror (olah, offline, over local git repositories) and the real huggingface_hub client,
with a hostile proxy between them for what a real mirror cannot play: a flipped byte, a cut connection, a stall.

Each test pins one behaviour of huggingface_hub 1.33.0 (SGLang's own environment) that the sglang_model role's
design relies on; tools/model/README.md lists them. Everything runs on 127.0.0.1.

Needs the olah venv (tools/model/install_olah_venv.sh, default /var/cache/llmserve/venv-olah, or
LLMSERVE_OLAH_VENV) and a client interpreter with huggingface_hub (default the CPU SGLang venv's python, or
LLMSERVE_HF_CLIENT_PYTHON); skipped without them.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from model_mirror_helpers import BIG_REPO, HUB_PYTHON, NEEDS_MIRROR, REPO, TINY_MODEL, TOOLS, WEIGHTS, communicate

CLIENT = TOOLS / "hf_client.py"
BIG_SIZE = 64 * 1024 * 1024  # bytes of BIG_REPO's weights (the mirror fixture reads it)
CHUNK = 10 * 1024 * 1024  # huggingface_hub's DOWNLOAD_CHUNK_SIZE: what a retry can resume from

pytestmark = NEEDS_MIRROR


def git_blob_id(data):
    """Git's object id of a blob: sha1 over a "blob SIZE\\0" header and the content."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def git_hash_object(path):
    return subprocess.run(["git", "hash-object", "--no-filters", str(path)], check=True,
                          stdout=subprocess.PIPE, text=True).stdout.strip()


# --- the client (the mirror and the proxy: conftest.py) -------------------------------------------

def client_env(mirror, home, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING_FACE_"))}
    env.update(HF_ENDPOINT=mirror.proxy.url, HF_HOME=str(home), HF_HUB_DISABLE_TELEMETRY="1",
               HF_HUB_DISABLE_PROGRESS_BARS="1", PYTHONUNBUFFERED="1")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def start_client(mirror, tmp_path, *args, token=None, **env):
    argv = [str(HUB_PYTHON), str(CLIENT), *args] + (["--token-stdin"] if token else [])
    # pylint: disable-next=consider-using-with
    proc = subprocess.Popen(argv, env=client_env(mirror, tmp_path / "hf-home", **env), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    proc.stdin.write((token or "") + "\n")
    proc.stdin.close()
    proc.stdin = None  # communicate() must not touch it again
    return proc


def finish(proc, timeout):
    """(rc, answer, stderr, seconds waited) of a client started by start_client."""
    start = time.monotonic()
    out, err = communicate(proc, timeout)
    lines = out.strip().splitlines()
    return proc.returncode, json.loads(lines[-1]) if lines else None, err, time.monotonic() - start


def run_client(mirror, tmp_path, *args, timeout=120, token=None, **env):
    rc, answer, err, _waited = finish(start_client(mirror, tmp_path, *args, token=token, **env), timeout)
    return rc, answer, err


def files_of(directory):
    """Relative path -> bytes of every file a download left, huggingface_hub's own .cache excepted."""
    directory = Path(directory)
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*"))
            if p.is_file() and ".cache" not in p.relative_to(directory).parts}


def source_files(source):
    return {p.name: p.read_bytes() for p in Path(source).iterdir() if p.is_file()}


def incomplete_files(local_dir):
    download = Path(local_dir) / ".cache" / "huggingface" / "download"
    return sorted(download.glob("*.incomplete")) if download.is_dir() else []


# --- what the mirror answers --------------------------------------------------------------------

def test_snapshot_by_commit_is_byte_identical(hostile, tmp_path):
    first, second = hostile.commits[REPO]
    rc, answer, err = run_client(hostile, tmp_path, "snapshot", REPO, first, str(tmp_path / "dl"))
    assert rc == 0, (answer, err)
    got = files_of(tmp_path / "dl")
    assert set(got) == set(source_files(TINY_MODEL)) | {".gitattributes"}, "the first revision has no README.md"
    for name, data in source_files(TINY_MODEL).items():
        assert got[name] == data, name
    # the LFS object came back as content, not as its pointer, and the older commit is still served by id
    # after "main" moved on
    assert len(got[WEIGHTS]) == (TINY_MODEL / WEIGHTS).stat().st_size
    assert second != first and "README.md" not in got


def test_snapshot_of_main_gets_the_newest_revision(hostile, tmp_path):
    rc, answer, err = run_client(hostile, tmp_path, "snapshot", REPO, "main", str(tmp_path / "dl"))
    assert rc == 0, (answer, err)
    assert files_of(tmp_path / "dl")["README.md"] == b"revision 1: second\n"
    # the client pinned what "main" was when it asked: the local metadata names the commit
    meta = (tmp_path / "dl" / ".cache" / "huggingface" / "download" / "README.md.metadata").read_text()
    assert meta.splitlines()[0] == hostile.commits[REPO][-1]


def test_revision_endpoint_gives_the_commit_as_sha(hostile):
    first, second = hostile.commits[REPO]
    for revision, want in (("main", second), (first, first)):
        conn = http.client.HTTPConnection("127.0.0.1", hostile.proxy.server_address[1], timeout=30)
        conn.request("GET", "/api/models/%s/revision/%s" % (REPO, revision))
        response = conn.getresponse()
        body = json.loads(response.read())
        conn.close()
        assert response.status == 200
        assert body["sha"] == want
        assert {s["rfilename"] for s in body["siblings"]} >= {"config.json", WEIGHTS}


def test_unknown_revision_is_refused(hostile, tmp_path):
    rc, answer, _err = run_client(hostile, tmp_path, "info", REPO, "no-such-branch")
    assert rc == 1
    # olah answers an unknown branch like an unknown repository (401), not with "revision not found"
    assert answer["error"] == "RepositoryNotFoundError", answer


@pytest.mark.parametrize("command", ["paths-info", "tree"])
def test_file_metadata_matches_git(hostile, tmp_path, command):
    """Size and blob id of every file equal git's own; an LFS file adds the sha256 and size of its content."""
    commit = hostile.commits[REPO][-1]
    repo_dir = hostile.root / "models" / REPO
    names = ["config.json", "tokenizer.json", "README.md", WEIGHTS]
    extra = names if command == "paths-info" else []
    rc, answer, err = run_client(hostile, tmp_path, command, REPO, commit, *extra)
    assert rc == 0, (answer, err)
    entries = {e["path"]: e for e in answer["paths" if command == "paths-info" else "tree"]}
    assert set(names) <= set(entries)
    for name in names:
        entry = entries[name]
        blob = subprocess.run(["git", "-C", str(repo_dir), "cat-file", "blob", "%s:%s" % (commit, name)],
                              check=True, stdout=subprocess.PIPE).stdout
        assert entry["blob_id"] == git_blob_id(blob), name
        if name == WEIGHTS:
            content = (TINY_MODEL / WEIGHTS).read_bytes()
            assert blob.startswith(b"version https://git-lfs.github.com/spec/v1\n")
            assert entry["lfs"] == {"sha256": hashlib.sha256(content).hexdigest(), "size": len(content)}
            assert entry["size"] == len(content)
        else:
            assert entry["lfs"] is None
            assert entry["size"] == len(blob)
            assert entry["blob_id"] == git_hash_object(repo_dir / name)


def test_resolve_head_carries_commit_etag_and_length(hostile):
    commit = hostile.commits[REPO][-1]
    conn = http.client.HTTPConnection("127.0.0.1", hostile.proxy.server_address[1], timeout=30)
    heads = {}
    for name in ("config.json", WEIGHTS):
        conn.request("HEAD", "/%s/resolve/main/%s" % (REPO, name))
        response = conn.getresponse()
        response.read()
        heads[name] = response
    conn.close()
    config, weights = (TINY_MODEL / "config.json").read_bytes(), (TINY_MODEL / WEIGHTS).read_bytes()
    assert heads["config.json"].getheader("x-repo-commit") == commit
    assert heads["config.json"].getheader("etag") == git_blob_id(config)
    assert heads["config.json"].getheader("content-length") == str(len(config))
    # for an LFS file olah's etag is the content's sha256 (the hub's X-Linked-Etag plays that part there)
    assert heads[WEIGHTS].getheader("etag") == hashlib.sha256(weights).hexdigest()
    assert heads[WEIGHTS].getheader("content-length") == str(len(weights))
    assert heads[WEIGHTS].getheader("x-linked-etag") is None


def test_olah_ignores_range_on_a_mirror_file(hostile):
    """A resumed GET gets the whole file again with 200: olah's local-mirror route has no Range support."""
    conn = http.client.HTTPConnection("127.0.0.1", hostile.olah.port, timeout=30)
    conn.request("GET", "/%s/resolve/main/config.json" % REPO, headers={"Range": "bytes=100-"})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    assert response.status == 200
    assert body == (TINY_MODEL / "config.json").read_bytes()
    assert response.getheader("content-length") is None  # streamed chunked


def test_dry_run_lists_the_bytes_still_needed(hostile, tmp_path):
    commit = hostile.commits[REPO][0]
    local = str(tmp_path / "dl")
    rc, before, err = run_client(hostile, tmp_path, "dry-run", REPO, commit, local)
    assert rc == 0, (before, err)
    sizes = {f["filename"]: f["size"] for f in before["files"]}
    assert sizes[WEIGHTS] == (TINY_MODEL / WEIGHTS).stat().st_size
    assert all(f["will_download"] for f in before["files"])
    assert not any(f["method"] == "GET" and "/resolve/" in f["path"] for f in hostile.requests())
    assert run_client(hostile, tmp_path, "snapshot", REPO, commit, local)[0] == 0
    rc, after, err = run_client(hostile, tmp_path, "dry-run", REPO, commit, local)
    assert rc == 0, (after, err)
    assert not any(f["will_download"] for f in after["files"])


def test_rerun_with_a_commit_id_asks_the_mirror_nothing(hostile, tmp_path):
    commit = hostile.commits[REPO][0]
    local = str(tmp_path / "dl")
    assert run_client(hostile, tmp_path, "snapshot", REPO, commit, local)[0] == 0
    before = len(hostile.requests())
    rc, answer, err = run_client(hostile, tmp_path, "snapshot", REPO, commit, local)
    assert rc == 0, (answer, err)
    # the file list is cached in .cache/huggingface/trees/<commit>.json and each file's metadata matches
    assert hostile.requests()[before:] == []


# --- hostile mirrors ----------------------------------------------------------------------------

def test_flipped_byte_is_not_caught_by_the_client(hostile, tmp_path):
    """huggingface_hub checks sizes only: a flipped byte lands in local_dir and the client reports success."""
    commit = hostile.commits[REPO][-1]
    hostile.set_rules({"mode": "flip", "path": "*/resolve/*/config.json", "n": 10},
                      {"mode": "flip", "path": "*/resolve/*/" + WEIGHTS, "n": 5000})
    rc, answer, err = run_client(hostile, tmp_path, "snapshot", REPO, commit, str(tmp_path / "dl"))
    assert rc == 0, (answer, err)
    got = files_of(tmp_path / "dl")
    for name, offset in (("config.json", 10), (WEIGHTS, 5000)):
        original = (TINY_MODEL / name).read_bytes()
        assert len(got[name]) == len(original)
        assert [i for i, (a, b) in enumerate(zip(got[name], original)) if a != b] == [offset]
    assert git_blob_id(got["config.json"]) != git_hash_object(hostile.root / "models" / REPO / "config.json")
    assert hashlib.sha256(got[WEIGHTS]).hexdigest() != hashlib.sha256((TINY_MODEL / WEIGHTS).read_bytes()).hexdigest()


def test_truncated_within_the_first_chunk_restarts_without_range(hostile, tmp_path):
    """Bytes count as downloaded only per 10 MiB chunk: a cut before the first one is retried from byte 0."""
    commit = hostile.commits[REPO][-1]
    cut = 100 * 1000
    hostile.set_rules({"mode": "truncate", "path": "*/resolve/*/" + WEIGHTS, "n": cut, "times": 1})
    rc, answer, err = run_client(hostile, tmp_path, "snapshot", REPO, commit, str(tmp_path / "dl"))
    assert rc == 0, (answer, err)
    gets = hostile.gets(WEIGHTS)
    assert [(g["range"], g["status"], g["sent"]) for g in gets] == [
        (None, 200, cut), (None, 200, (TINY_MODEL / WEIGHTS).stat().st_size)]
    assert files_of(tmp_path / "dl")[WEIGHTS] == (TINY_MODEL / WEIGHTS).read_bytes()
    assert "Trying to resume download" in err


@pytest.mark.parametrize("cut", [0, 50000])
def test_truncated_within_the_first_chunk_every_time_gives_up_after_five_retries(hostile, tmp_path, cut):
    commit = hostile.commits[REPO][-1]
    hostile.set_rules({"mode": "truncate", "path": "*/resolve/*/" + WEIGHTS, "n": cut})
    rc, answer, _err = run_client(hostile, tmp_path, "snapshot", REPO, commit, str(tmp_path / "dl"))
    assert rc == 1
    assert answer["error"] == "RemoteProtocolError", answer
    gets = hostile.gets(WEIGHTS)
    assert [g["range"] for g in gets] == [None] * 6  # the first try and five retries, a second apart
    assert WEIGHTS not in files_of(tmp_path / "dl")
    assert incomplete_files(tmp_path / "dl") == []  # the partial file is removed on an error


def test_truncated_after_a_chunk_resumes_with_range_and_olah_sends_it_all_again(hostile, tmp_path):
    """Past a 10 MiB chunk the retry asks for the rest (Range); olah answers 200 with the whole file, and the
    client notices, rewinds and takes it from the start."""
    commit = hostile.commits[BIG_REPO][0]
    cut = 24 * 1024 * 1024
    hostile.set_rules({"mode": "truncate", "path": "*/resolve/*/" + WEIGHTS, "n": cut, "times": 1})
    rc, answer, err = run_client(hostile, tmp_path, "snapshot", BIG_REPO, commit, str(tmp_path / "dl"))
    assert rc == 0, (answer, err)
    gets = hostile.gets(WEIGHTS)
    assert [(g["range"], g["status"], g["sent"]) for g in gets] == [
        (None, 200, cut), ("bytes=%d-" % (2 * CHUNK), 200, BIG_SIZE)]
    assert files_of(tmp_path / "dl")[WEIGHTS] == (hostile.big_source / WEIGHTS).read_bytes()


def test_truncated_after_a_chunk_every_time_retries_without_end(hostile, tmp_path):
    """Each try brings a whole chunk, which resets the five-retry budget; as olah ignores Range the client never
    gets further, and never gives up: whoever runs it needs a deadline of its own."""
    commit = hostile.commits[BIG_REPO][0]
    hostile.set_rules({"mode": "truncate", "path": "*/resolve/*/" + WEIGHTS, "n": CHUNK + 1024 * 1024})
    proc = start_client(hostile, tmp_path, "snapshot", BIG_REPO, commit, str(tmp_path / "dl"))
    with pytest.raises(subprocess.TimeoutExpired):
        finish(proc, timeout=15)
    gets = hostile.gets(WEIGHTS)
    assert len(gets) >= 7, "more tries than the five retries it promises"
    assert all(g["range"] == "bytes=%d-" % CHUNK for g in gets[1:]), gets


def test_stall_times_out_after_the_download_timeout_then_retries(hostile, tmp_path):
    commit = hostile.commits[REPO][-1]
    hostile.set_rules({"mode": "stall", "path": "*/resolve/*/" + WEIGHTS, "n": 100000, "times": 1})
    start = time.monotonic()
    rc, answer, err = run_client(hostile, tmp_path, "snapshot", REPO, commit, str(tmp_path / "dl"),
                                 HF_HUB_DOWNLOAD_TIMEOUT=3)
    took = time.monotonic() - start
    assert rc == 0, (answer, err)
    assert took >= 3
    gets = hostile.gets(WEIGHTS)
    # under load a retry may time out as well; what matters: the stalled try is given up after the timeout and
    # retried from byte 0 (the stall came inside the first chunk)
    assert gets[0]["stalled"] and len(gets) >= 2, gets
    assert [g["range"] for g in gets] == [None] * len(gets)
    assert gets[1]["time"] - gets[0]["time"] >= 3
    assert "Trying to resume download" in err
    assert files_of(tmp_path / "dl")[WEIGHTS] == (TINY_MODEL / WEIGHTS).read_bytes()


def test_killed_download_starts_the_file_over_and_leaves_its_partial_file(hostile, tmp_path):
    """SIGKILL mid-file: the next run fetches that file again from byte 0 (no Range), finished files are kept,
    and the killed run's <hash>.<etag>.<random>.incomplete stays behind in .cache/huggingface/download/."""
    commit = hostile.commits[BIG_REPO][0]
    local = tmp_path / "dl"
    hostile.set_rules({"mode": "slow", "path": "*/resolve/*/" + WEIGHTS, "n": 8 * 1024 * 1024})
    proc = start_client(hostile, tmp_path, "snapshot", BIG_REPO, commit, str(local), "--max-workers", "1")
    deadline = time.monotonic() + 60
    partial = []
    while time.monotonic() < deadline:
        partial = incomplete_files(local)
        if partial and partial[0].stat().st_size >= 4 * 1024 * 1024:
            break
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
    assert len(partial) == 1, partial
    orphan = partial[0]
    orphan_size = orphan.stat().st_size
    assert 0 < orphan_size < BIG_SIZE
    sha256 = hashlib.sha256((hostile.big_source / WEIGHTS).read_bytes()).hexdigest()
    stem, etag, rand, suffix = orphan.name.split(".")
    assert (len(stem), etag, len(rand), suffix) == (len(stem), sha256, 8, "incomplete")
    done_before = set(files_of(local))

    hostile.set_rules()
    first_gets = len(hostile.gets(WEIGHTS))
    rc, answer, err = run_client(hostile, tmp_path, "snapshot", BIG_REPO, commit, str(local), "--max-workers", "1")
    assert rc == 0, (answer, err)
    rerun = hostile.gets(WEIGHTS)[first_gets:]
    assert [(g["range"], g["sent"]) for g in rerun] == [(None, BIG_SIZE)]
    for name in done_before:
        assert not hostile.gets(name)[1:], "%s was fetched again although it was complete" % name
    assert files_of(local)[WEIGHTS] == (hostile.big_source / WEIGHTS).read_bytes()
    assert orphan.exists() and orphan.stat().st_size == orphan_size
    assert incomplete_files(local) == [orphan]


# --- the token ----------------------------------------------------------------------------------

def _descendants(pid):
    children = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def test_token_goes_to_the_mirror_as_bearer_and_nowhere_else(hostile, tmp_path):
    token = "hf_llmserveFAKEtoken%08d" % random.Random().randrange(10 ** 8)
    commit = hostile.commits[REPO][-1]
    # hold the client mid-download so its processes can be looked at while it runs
    hostile.set_rules({"mode": "stall", "path": "*/resolve/*/" + WEIGHTS, "n": 1000, "times": 1})
    proc = start_client(hostile, tmp_path, "snapshot", REPO, commit, str(tmp_path / "dl"), token=token,
                        HF_HUB_DOWNLOAD_TIMEOUT=4)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not hostile.gets(WEIGHTS):
        time.sleep(0.1)
    time.sleep(0.5)
    looked_at = [proc.pid] + _descendants(proc.pid)
    for pid in looked_at:
        for part in ("cmdline", "environ"):
            try:
                exposed = Path("/proc/%d/%s" % (pid, part)).read_bytes()
            except OSError:
                continue  # gone meanwhile
            assert token.encode() not in exposed, (pid, part)
    assert looked_at == [proc.pid], "huggingface_hub started no child process"
    rc, answer, err = finish(proc, timeout=60)[:3]
    assert rc == 0, (answer, err)
    digest = hashlib.sha256(token.encode()).hexdigest()
    seen = hostile.requests()
    assert seen and all(r["authorization"] == {"scheme": "Bearer", "sha256": digest} for r in seen), seen
    # the file list's 307 (to the URL with a trailing slash) led back through the proxy, token and all
    assert [r["status"] for r in seen if "/tree/%s" % commit in r["path"]] == [307, 200], seen
    for path in list((tmp_path / "hf-home").rglob("*")) + list((tmp_path / "dl").rglob("*")):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path
    assert token not in err and token not in json.dumps(answer)


def test_no_token_sends_no_authorization(hostile, tmp_path):
    rc, answer, err = run_client(hostile, tmp_path, "info", REPO, "main")
    assert rc == 0, (answer, err)
    assert hostile.requests() and all(r["authorization"] is None for r in hostile.requests())
