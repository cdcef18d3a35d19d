# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for model_hub: the child's environment, its answer, its deadline, and the script it runs."""

from __future__ import annotations

import fnmatch
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ansible_collections.llmserve.sglang.plugins.module_utils import model_hub
from ansible_collections.llmserve.sglang.tests.unit.plugins.module_utils.source_imports import top_level_imports

ROOT = Path(__file__).resolve().parents[4]


def test_module_utils_imports_stdlib_only():
    imported = top_level_imports(ROOT / "plugins" / "module_utils" / "model_hub.py", feature_version=(3, 8))
    assert imported <= {"__future__", "base64", "hashlib", "json", "os", "shutil", "signal", "subprocess", "tempfile",
                        "time", "ansible_collections"}


def test_child_script_compiles_for_python_38():
    import ast
    ast.parse(model_hub.CHILD_SCRIPT, feature_version=(3, 8))


def test_real_child_without_huggingface_hub_says_so(tmp_path):
    # the controller venv has no huggingface_hub: the real script runs and answers with an ImportError
    pytest.importorskip("json")
    if any(os.path.isdir(os.path.join(p, "huggingface_hub")) for p in sys.path if p):
        pytest.skip("this interpreter has huggingface_hub")
    with pytest.raises(model_hub.HubError) as exc:
        model_hub.run_child(sys.executable, {"op": "resolve", "repo": "a/b", "revision": "main", "token": "t0k3n"},
                            60, tmp_root=str(tmp_path))
    assert exc.value.error == "ImportError" and "huggingface_hub cannot be imported" in str(exc.value)
    assert os.listdir(tmp_path) == [], "the child's HF_HOME is removed"


def test_child_env_drops_hf_variables_and_sets_its_own():
    base = {"PATH": "/bin", "HF_TOKEN": "x", "HF_HUB_OFFLINE": "1", "HUGGING_FACE_HUB_TOKEN": "y", "HTTPS_PROXY": "p"}
    env = model_hub.child_env("http://m:1", "/tmp/h", base=base)
    assert env["PATH"] == "/bin" and env["HTTPS_PROXY"] == "p"
    assert "HF_TOKEN" not in env and "HUGGING_FACE_HUB_TOKEN" not in env and "HF_HUB_OFFLINE" not in env
    assert env["HF_HOME"] == "/tmp/h" and env["HF_ENDPOINT"] == "http://m:1"
    assert env["HF_HUB_DISABLE_TELEMETRY"] == "1" and env["HF_HUB_DISABLE_IMPLICIT_TOKEN"] == "1"
    assert "HF_ENDPOINT" not in model_hub.child_env("", "/tmp/h", base={})


@pytest.mark.parametrize("name", ["model.safetensors", "a[1].bin", "what?.json", "star*.txt", "dir/x[ab].py"])
def test_allow_pattern_matches_only_that_name(name):
    pattern = model_hub.allow_pattern(name)
    assert fnmatch.fnmatch(name, pattern)
    others = [name + "x", name.replace("[", "a", 1), name.replace("?", "Z"), name.replace("*", "long")]
    assert not any(fnmatch.fnmatch(other, pattern) for other in others if other != name)


def test_deadline_kills_the_child(tmp_path):
    slow = tmp_path / "python"
    slow.write_text("#!/bin/sh\nexec sleep 30\n", encoding="utf-8")
    slow.chmod(0o755)
    start = time.monotonic()
    with pytest.raises(model_hub.HubError) as exc:
        model_hub.run_child(str(slow), {"op": "resolve"}, 1)
    assert "did not finish within 1 s" in str(exc.value) and time.monotonic() - start < 10


def test_missing_interpreter(tmp_path):
    with pytest.raises(model_hub.HubError) as exc:
        model_hub.run_child(str(tmp_path / "nope"), {"op": "resolve"}, 5)
    assert "cannot run" in str(exc.value)


def test_hub_name_masks_login():
    assert model_hub.hub_name("") == "https://huggingface.co"
    assert model_hub.hub_name("https://u:pw@m.example/") == "https://********@m.example/"


# --- the proxy: an endpoint that goes direct gets no proxy in the child either (issue 45, finding 4) ------------

PROXIES = {"http_proxy": "http://proxy.corp:3128", "HTTPS_PROXY": "http://proxy.corp:3128", "no_proxy": "corp.example"}
HUB_PYTHON = "/var/cache/llmserve/venv-sglang-cpu/bin/python"


def test_a_loopback_endpoint_is_added_to_no_proxy_and_the_proxy_stays_for_the_rest():
    for endpoint, host in (("http://127.0.0.1:8090", "127.0.0.1"), ("http://[::1]:8090/", "::1"),
                           ("http://localhost:1", "localhost"), ("http://169.254.1.2", "169.254.1.2")):
        env = model_hub.child_env(endpoint, "/tmp/h", base=dict(PROXIES, NO_PROXY="other.example,corp.example"))
        assert env["no_proxy"] == env["NO_PROXY"] == "corp.example,other.example," + host, endpoint
        assert env["http_proxy"] == env["HTTPS_PROXY"] == "http://proxy.corp:3128"


def test_an_endpoint_at_an_own_address_goes_direct_too():
    def resolve(host, *args):
        assert host == "mirror.internal"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", 0))]
    env = model_hub.child_env("http://mirror.internal:8090", "/tmp/h", base={}, resolve=resolve)
    assert env["no_proxy"] == env["NO_PROXY"] == "mirror.internal"


def test_a_remote_endpoint_and_the_default_hub_keep_the_proxy():
    def resolve(host, *args):
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("192.0.2.1", 0))]  # TEST-NET-1: nobody's address
    for endpoint in ("https://mirror.example", ""):
        env = model_hub.child_env(endpoint, "/tmp/h", base=dict(PROXIES), resolve=resolve)
        assert env["http_proxy"] == env["HTTPS_PROXY"] == "http://proxy.corp:3128"
        assert env["no_proxy"] == "corp.example" and "NO_PROXY" not in env, endpoint


@pytest.mark.skipif(not os.path.exists(HUB_PYTHON), reason="no interpreter with huggingface_hub at " + HUB_PYTHON)
@pytest.mark.parametrize("endpoint,direct", [("http://127.0.0.1:8090", True), ("http://[::1]:8090", True),
                                             ("https://huggingface.co", False)])
def test_httpx_as_huggingface_hub_makes_it_honours_that(tmp_path, endpoint, direct):
    # huggingface_hub 1.x's own client factory, in the environment the child gets: which transport a URL takes
    env = model_hub.child_env(endpoint, str(tmp_path), base=dict(PROXIES, PATH=os.environ.get("PATH", "")))
    probe = ("import sys, httpx\n"
             "from huggingface_hub.utils._http import default_client_factory\n"
             "client = default_client_factory()\n"
             "transport = client._transport_for_url(httpx.URL(sys.argv[1] + '/api/models/a/b'))\n"
             "print('direct' if transport is client._transport else 'proxy')\n")
    out = subprocess.run([HUB_PYTHON, "-I", "-c", probe, endpoint], env=env, check=True, stdout=subprocess.PIPE,
                         text=True).stdout.strip()
    assert out == ("direct" if direct else "proxy")


# --- the size cap (issue 45, finding 3) ----------------------------------------------------------------------

def partial_name(path, etag="e7a6"):
    """huggingface_hub 1.33's partial file of ``path`` in a local_dir (_local_folder.incomplete_path plus the
    download's own suffix), written out here so that a change of that naming shows."""
    import base64
    import hashlib
    folder, name = os.path.split(path)
    short = base64.urlsafe_b64encode(hashlib.sha1((name + ".metadata").encode()).digest()).decode()
    return os.path.join(".cache", "huggingface", "download", folder, "%s.%s.1a2b3c4d.incomplete" % (short, etag))


@pytest.mark.skipif(not os.path.exists(HUB_PYTHON), reason="no interpreter with huggingface_hub at " + HUB_PYTHON)
def test_partial_name_is_huggingface_hubs(tmp_path):
    probe = ("import sys\nfrom pathlib import Path\n"
             "from huggingface_hub._local_folder import get_local_download_paths\n"
             "print(get_local_download_paths(Path(sys.argv[1]), 'sub/w.bin').incomplete_path('e7a6'))\n")
    out = subprocess.run([HUB_PYTHON, "-I", "-c", probe, str(tmp_path)], check=True, stdout=subprocess.PIPE,
                         text=True).stdout.strip()
    assert out == str(tmp_path / partial_name("sub/w.bin")).replace(".1a2b3c4d.incomplete", ".incomplete")


def write(root, rel, size):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(size))
    return path


def test_size_watch_holds_each_file_and_its_partial_to_its_listed_size(tmp_path):
    sizes = {"config.json": 10, "sub/w.bin": 1000}
    watch = model_hub.SizeWatch(str(tmp_path), sizes)
    write(tmp_path, "config.json", 10)
    write(tmp_path, partial_name("sub/w.bin"), 1000)
    write(tmp_path, ".cache/huggingface/download/sub/w.bin.metadata", 5000)  # bookkeeping: not judged
    write(tmp_path, ".cache/huggingface/trees/c.json", 5000)
    watch()
    write(tmp_path, partial_name("config.json"), 11)
    with pytest.raises(model_hub.Oversize) as exc:
        watch()
    assert (exc.value.path, exc.value.listed, exc.value.seen) == ("config.json", 10, 11)
    assert str(exc.value) == "config.json is listed with 10 bytes and the hub sent at least 11"
    (tmp_path / partial_name("config.json")).unlink()
    write(tmp_path, "sub/w.bin", 1001)
    with pytest.raises(model_hub.Oversize) as exc:
        watch()
    assert (exc.value.path, exc.value.listed, exc.value.seen) == ("sub/w.bin", 1000, 1001)
    assert sorted(watch.clean()) == [partial_name("sub/w.bin"), "sub/w.bin"]
    assert (tmp_path / "config.json").exists() and (tmp_path / ".cache/huggingface/trees/c.json").exists()


def test_size_watch_holds_an_unknown_partial_to_the_largest_size_and_all_to_their_sum(tmp_path):
    write(tmp_path, "old.bin", 50)  # fetched by an earlier run: counted, not judged
    write(tmp_path, "big.bin", 5000)  # not asked for now, larger than listed: there before, so not the hub's doing
    watch = model_hub.SizeWatch(str(tmp_path), {"a": 100, "b": 200})
    write(tmp_path, ".cache/huggingface/download/other-naming.incomplete", 200)
    watch()
    write(tmp_path, ".cache/huggingface/download/other-naming.incomplete", 201)
    with pytest.raises(model_hub.Oversize) as exc:
        watch()
    assert exc.value.path is None and exc.value.listed == 200 and "larger than any file listed" in str(exc.value)
    (tmp_path / ".cache/huggingface/download/other-naming.incomplete").unlink()
    write(tmp_path, "a", 100)
    write(tmp_path, "b", 200)
    write(tmp_path, "c", 1)  # not asked for: one byte more than all
    with pytest.raises(model_hub.Oversize) as exc:
        watch()
    assert (exc.value.path, exc.value.listed, exc.value.seen) == (None, 5350, 5351)


FAKE_HUB_MODULE = """
import os
from concurrent.futures import ThreadPoolExecutor
__version__ = "0.0-fake"

def fetch(local_dir, filename, size):
    with open(os.path.join(local_dir, filename), "wb") as handle:
        for _ in range(size // 65536):
            handle.write(bytes(65536))

def snapshot_download(repo, revision, local_dir, allow_patterns, token, endpoint, max_workers):
    # as huggingface_hub does: the files in a thread pool, the first error raised in the caller's thread
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda name: fetch(local_dir, name, int(open(os.path.join(local_dir, name + ".stream")).read())),
                      allow_patterns))
    return local_dir
"""

WRAPPER = """#!%s
import sys
sys.path.insert(0, %r)
script = sys.argv[sys.argv.index("-c") + 1]
sys.argv = ["-c"]
exec(compile(script, "<child>", "exec"), {"__name__": "__main__"})
"""


def fake_hub_python(tmp_path):
    """An interpreter whose huggingface_hub streams ``<name>.stream`` bytes (a number in that file) for ``name``."""
    (tmp_path / "fake" / "huggingface_hub").mkdir(parents=True)
    (tmp_path / "fake" / "huggingface_hub" / "__init__.py").write_text(FAKE_HUB_MODULE, encoding="utf-8")
    python = tmp_path / "python"
    python.write_text(WRAPPER % (sys.executable, str(tmp_path / "fake")), encoding="utf-8")
    python.chmod(0o755)
    return str(python)


def test_the_child_cannot_write_past_the_largest_listed_size(tmp_path):
    # the kernel's ceiling alone (a watch that never stops it): the write past it fails, and the answer names the file
    python = fake_hub_python(tmp_path)
    local = tmp_path / "local"
    local.mkdir()
    (local / "a.bin.stream").write_text(str(64 << 20))
    (local / "b.bin.stream").write_text("65536")
    request = {"op": "download", "repo": "a/b", "revision": "c" * 40, "token": "t0k3n", "local_dir": str(local),
               "allow_patterns": ["a.bin", "b.bin"], "sizes": {"a.bin": 10, "b.bin": 65536}}
    with pytest.raises(model_hub.Oversize) as exc:
        model_hub.run_child(python, request, 60, tmp_root=str(tmp_path), watch=lambda: None)
    limit = 65536 + (1 << 20)
    assert (exc.value.path, exc.value.listed, exc.value.seen) == ("a.bin", 10, limit)
    assert (local / "a.bin").stat().st_size <= limit


def test_a_download_with_sizes_is_watched_stopped_and_cleaned(tmp_path):
    # a child that grows a partial file of config.json slowly: the watch stops it long before it ends
    local = tmp_path / "local"
    partial = local / partial_name("config.json")
    slow = tmp_path / "python"
    slow.write_text("#!/bin/sh\ncat >/dev/null\nmkdir -p '%s'\nfor i in $(seq 100); do head -c 65536 /dev/zero >>'%s'; "
                    "sleep 0.05; done\n" % (partial.parent, partial), encoding="utf-8")
    slow.chmod(0o755)
    request = {"op": "download", "local_dir": str(local), "sizes": {"config.json": 700, "w": 300000}}
    start = time.monotonic()
    with pytest.raises(model_hub.Oversize) as exc:
        model_hub.run_child(str(slow), request, 60)
    assert time.monotonic() - start < 3
    assert exc.value.path == "config.json" and exc.value.listed == 700 and 700 < exc.value.seen < 1 << 20
    assert exc.value.removed == [partial_name("config.json")] and not partial.exists()


def test_the_deadline_holds_with_a_watch(tmp_path):
    slow = tmp_path / "python"
    slow.write_text("#!/bin/sh\nexec sleep 30\n", encoding="utf-8")
    slow.chmod(0o755)
    looks = []
    start = time.monotonic()
    with pytest.raises(model_hub.HubError) as exc:
        model_hub.run_child(str(slow), {"op": "download", "local_dir": str(tmp_path), "sizes": {"a": 1}}, 1,
                            watch=lambda: looks.append(1))
    assert "did not finish within 1 s" in str(exc.value) and time.monotonic() - start < 5
    assert 2 <= len(looks) <= 6


def test_a_watched_child_loses_no_output(tmp_path):
    # the answer comes before the watch's first looks: the retried communicate keeps it
    child = tmp_path / "python"
    child.write_text("#!/bin/sh\ncat >/dev/null\necho 'LLMSERVE-HUB-ANSWER {\"path\": \"p\", \"version\": \"v\"}'\n"
                     "head -c 200000 /dev/zero >&2\nsleep 0.6\n", encoding="utf-8")
    child.chmod(0o755)
    looks = []
    answer = model_hub.run_child(str(child), {"op": "download", "local_dir": str(tmp_path)}, 30,
                                 watch=lambda: looks.append(1))
    assert answer == {"path": "p", "version": "v"} and len(looks) >= 2
