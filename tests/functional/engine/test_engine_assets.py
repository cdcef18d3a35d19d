# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks of the CPU SGLang test assets under tools/engine/.

Always run: the lock is an exact lock, the shim wheels are reproducible and say what they are,
the wheelhouse cache key follows the shim sources.

Need an installed CPU SGLang venv (tools/engine/install_sglang_venv.sh), given as
``LLMSERVE_SGLANG_VENV=/path/to/venv``; skipped otherwise:
  * the venv holds exactly the locked distributions,
  * make_tiny_model.py writes byte-identical files on two runs.
``LLMSERVE_SGLANG_WHEELHOUSE=/path`` additionally checks a built wheelhouse, and
``LLMSERVE_SGLANG_SMOKE=1`` (with the venv) starts the real server once on 127.0.0.1 (~35 s).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import shutil
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ansible_collections.llmserve.sglang.tests.functional.engine.engine_tools import ENGINE_DIR, VENV, load_engine_tool

LOCK = ENGINE_DIR / "requirements-sglang-cpu.lock.txt"
SHIMS = ENGINE_DIR / "shims"
MARKER = "0.0.0+llmserve.importshim"
SHIM_NAMES = ("torchvision", "vllm")

WHEELHOUSE = os.environ.get("LLMSERVE_SGLANG_WHEELHOUSE", "")

needs_wheelhouse = pytest.mark.skipif(
    not WHEELHOUSE, reason="set LLMSERVE_SGLANG_WHEELHOUSE to a wheelhouse made by tools/engine/build_wheelhouse.sh")


wheelhouse = load_engine_tool("wheelhouse")


def _sha256_tree(directory):
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(Path(directory).iterdir()) if path.is_file()}


# --- the lock ---------------------------------------------------------------------------------

def test_lock_has_only_exact_pins():
    lines = LOCK.read_text(encoding="utf-8").splitlines()
    assert lines, "lock file is empty"
    for number, line in enumerate(lines, start=1):
        assert line == line.strip() and line, "line %d is blank or padded: %r" % (number, line)
        name, sep, version = line.partition("==")
        assert sep and name and version, "line %d is not name==version: %r" % (number, line)
        assert not any(c in line for c in "<>~!;#@ [],"), "line %d is not an exact pin: %r" % (number, line)
    pins = {wheelhouse.canonical_name(n): v for n, v, _l in wheelhouse.read_lock(LOCK)}
    assert len(pins) == len(lines), "a project is pinned twice"
    assert pins["torch"] == "2.13.0+cpu", "torch must be the CPU build so pip cannot pick a CUDA one"
    assert pins["triton"] == "3.9.0"
    assert pins["sglang"] == "0.5.23"
    for name in SHIM_NAMES:
        assert pins[name] == MARKER


@pytest.mark.parametrize("bad", ["torch>=2.13", "sglang", "numpy==2.4.6 ; python_version>'3'", "-e .", "numpy==2.4.6\nnumpy==2.4.5"])
def test_read_lock_rejects_loose_lines(tmp_path, bad):
    lock = tmp_path / "lock.txt"
    lock.write_text("six==1.17.0\n" + bad + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="pin"):
        wheelhouse.read_lock(str(lock))


# --- the shims --------------------------------------------------------------------------------

def _check_shim_wheel(path, name):
    assert path.name == "%s-%s-py3-none-any.whl" % (name, MARKER)
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        dist_info = "%s-%s.dist-info" % (name, MARKER)
        metadata = archive.read(dist_info + "/METADATA").decode()
        assert "Name: %s\n" % name in metadata
        assert "Version: %s\n" % MARKER in metadata
        assert "import-only" in metadata.lower()
        assert "%s/__init__.py" % name in names
        record = list(csv.reader(io.StringIO(archive.read(dist_info + "/RECORD").decode())))
        assert sorted(row[0] for row in record) == sorted(names)
        for entry, digest, size in record:
            if entry.endswith("/RECORD"):
                continue
            data = archive.read(entry)
            expected = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert (digest, int(size)) == (expected, len(data)), entry


def test_shim_wheels_carry_marker_version_and_are_reproducible(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    built = wheelhouse.build_shims(str(LOCK), str(SHIMS), str(first))
    wheelhouse.build_shims(str(LOCK), str(SHIMS), str(second))
    assert sorted(Path(p).name for p in built) == ["%s-%s-py3-none-any.whl" % (n, MARKER) for n in SHIM_NAMES]
    for name in SHIM_NAMES:
        _check_shim_wheel(first / ("%s-%s-py3-none-any.whl" % (name, MARKER)), name)
    assert _sha256_tree(first) == _sha256_tree(second)


def test_shims_import_and_refuse_to_run(tmp_path):
    site = tmp_path / "site"
    for wheel in wheelhouse.build_shims(str(LOCK), str(SHIMS), str(tmp_path)):
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(site)
    code = "\n".join([
        "import torchvision.transforms as T",
        "from torchvision.transforms.v2 import functional as F",
        "from torchvision.transforms import InterpolationMode",
        "assert InterpolationMode.BICUBIC is InterpolationMode",
        "from vllm._custom_ops import rotary_embedding",
        "for call in (lambda: T.Compose([]), lambda: rotary_embedding(1)):",
        "    try:",
        "        call()",
        "    except (RuntimeError, NotImplementedError) as exc:",
        "        assert 'placeholder' in str(exc), exc",
        "    else:",
        "        raise SystemExit('shim ran')",
        "try:",
        "    import vllm.model_executor",
        "except ImportError:",
        "    pass",
        "else:",
        "    raise SystemExit('vllm shim must not pretend to be the whole of vllm')",
        "import torchvision, vllm",
        "print(torchvision.__version__, vllm.__version__)",
    ])
    result = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(site)),
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr + result.stdout
    assert result.stdout.split() == [MARKER, MARKER]


def test_stamp_follows_lock_and_shim_sources(tmp_path):
    shims = tmp_path / "shims"
    shutil.copytree(SHIMS, shims, ignore=shutil.ignore_patterns("__pycache__"))
    lock = tmp_path / "lock.txt"
    shutil.copy(LOCK, lock)
    original = wheelhouse.stamp(str(lock), str(shims))
    assert original == wheelhouse.stamp(str(LOCK), str(SHIMS))
    with open(shims / "vllm" / "_custom_ops.py", "a", encoding="utf-8") as handle:
        handle.write("# changed\n")
    changed_shim = wheelhouse.stamp(str(lock), str(shims))
    assert changed_shim != original
    lock.write_text(lock.read_text(encoding="utf-8").replace("six==1.17.0", "six==1.16.0"), encoding="utf-8")
    assert wheelhouse.stamp(str(lock), str(shims)) not in (original, changed_shim)


def test_build_wheelhouse_refuses_a_loose_lock(tmp_path):
    # The script validates the lock before touching the network or the target directory.
    engine = tmp_path / "engine"
    shutil.copytree(ENGINE_DIR, engine, ignore=shutil.ignore_patterns("__pycache__"))
    (engine / LOCK.name).write_text("sglang>=0.5\n", encoding="utf-8")
    target = tmp_path / "wheelhouse"
    python = shutil.which("python3.11") or shutil.which("python3")
    result = subprocess.run(["bash", str(engine / "build_wheelhouse.sh"), str(target)], capture_output=True,
                            text=True, env=dict(os.environ, PYTHON=python), check=False)
    assert result.returncode != 0
    assert "exact" in result.stderr
    assert not target.exists()


# --- a built wheelhouse (optional) -----------------------------------------------------------

@needs_wheelhouse
def test_wheelhouse_is_complete_and_offline_ready(tmp_path):
    directory = Path(WHEELHOUSE)
    assert (directory / ".stamp").read_text().strip() == wheelhouse.stamp(str(LOCK), str(SHIMS)), \
        "wheelhouse is stale: rerun tools/engine/build_wheelhouse.sh"
    assert (directory / LOCK.name).read_bytes() == LOCK.read_bytes()
    assert wheelhouse.missing(str(LOCK), str(directory), include_shims=True) == []
    assert wheelhouse.extras(str(LOCK), str(directory)) == []
    assert not list(directory.glob("*.tar.gz")), "sdists would need a build step offline"
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    for wheel in wheelhouse.build_shims(str(LOCK), str(SHIMS), str(fresh)):
        name = Path(wheel).name
        assert (directory / name).read_bytes() == Path(wheel).read_bytes(), name


# --- an installed venv (optional) ------------------------------------------------------------

def test_venv_holds_exactly_the_lock(sglang_venv):
    assert wheelhouse.check_installed(str(LOCK), sglang_venv) == []


def test_tiny_model_is_byte_deterministic(tmp_path, sglang_venv):
    outs = [tmp_path / "one", tmp_path / "two"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    # Both builds at once: each is mostly import time.
    runs = [subprocess.Popen([sglang_venv, str(ENGINE_DIR / "make_tiny_model.py"), str(out)], env=env,  # pylint: disable=consider-using-with
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for out in outs]
    for run in runs:
        output = run.communicate(timeout=180)[0]
        assert run.returncode == 0, output
    first, second = (_sha256_tree(out) for out in outs)
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} <= set(first)
    assert any("im_start" in (outs[0] / name).read_text() for name in ("chat_template.jinja", "tokenizer_config.json")
               if (outs[0] / name).exists()), "the model has no chat template"
    assert first == second


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.skipif(os.environ.get("LLMSERVE_SGLANG_SMOKE") != "1", reason="set LLMSERVE_SGLANG_SMOKE=1 to start the real server (~35 s)")
def test_real_server_starts_generates_and_stops(tmp_path, sglang_venv):
    smoke = load_engine_tool("smoke_server")
    model = tmp_path / "model"
    subprocess.run([sglang_venv, str(ENGINE_DIR / "make_tiny_model.py"), str(model)],
                   check=True, capture_output=True)
    report = smoke.run_smoke(VENV, str(model), port=_free_port(), timeout=150, log_path=str(tmp_path / "server.log"))
    assert report["ok"], (report, (tmp_path / "server.log").read_text(errors="replace")[-4000:])
    events = [entry["event"] for entry in report["timeline"]]
    assert events[:3] == ["launched", "port closed", "port open"]
    assert report["health_statuses"][-1] == 200
    assert report["generate"]["text"] and report["chat"]["text"]
    assert report["server_version"] == "0.5.23"
    assert report["exit_code"] == 0 and report["port_closed_after_stop"]
