# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""`make gpu-check` (tools/gpu/gpu_check.py) run as a real process, without Ansible (python -S), over fixture trees
copied in shape from real hosts and the stand-in CUDA runtime of tools/standin/cudart: the verdicts a real host
would get, and each way it must fail."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SCRIPT = os.path.join(ROOT, "tools", "gpu", "gpu_check.py")
MATERIALIZE = os.path.join(ROOT, "tests", "fixtures", "hosts", "materialize.py")
CUDART_SOURCE = os.path.join(ROOT, "tools", "standin", "cudart", "cudart_standin.c")
H200 = "0000:00:06.0"


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    dest = tmp_path_factory.mktemp("gpu-check-hosts")
    subprocess.run([sys.executable, MATERIALIZE, str(dest), "h200_vm_580", "h200_vm_580_xid79", "no_nvidia_gpu"],
                   check=True, capture_output=True, timeout=120)
    return dest


@pytest.fixture(scope="module")
def cudart(tmp_path_factory):
    compiler = shutil.which(os.environ.get("CC") or "cc")
    if compiler is None:
        pytest.skip("no C compiler (cc or $CC) to build the stand-in CUDA runtime")
    built = str(tmp_path_factory.mktemp("cudart") / "libcudart-standin.so")
    subprocess.run([compiler, "-std=c11", "-shared", "-fPIC", "-O2", "-o", built, CUDART_SOURCE, "-lrt"],
                   check=True, capture_output=True, timeout=120)
    return built


def gpu_check(tree, cudart=None, standin=None, extra=()):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDART_STANDIN_", "LLMSERVE_CUDART"))}
    env["CUDART_STANDIN_SHM_PREFIX"] = "/llmserve-gpu-check-%d" % os.getpid()
    if cudart:
        env["LLMSERVE_CUDART"] = cudart
    env.update({"CUDART_STANDIN_" + k: v for k, v in (standin or {}).items()})
    argv = [sys.executable, "-S", SCRIPT, "--root", str(tree), "--kernel-log", str(tree / "var" / "log" / "kern.log"),
            "--p2p-size", "1048576", "--p2p-timeout", "20"] + list(extra)
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=180, check=False)
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_h200_guest_passes_without_ansible(trees, cudart):
    rc, verdict = gpu_check(trees / "h200_vm_580", cudart, {"GPUS": H200})
    assert (rc, verdict["verdict"], verdict["failed"]) == (0, "pass", [])
    # python -S: no site-packages, so the module's own gathering ran with the stand-in AnsibleModule
    assert verdict["ansible"] == "stand-in"
    assert verdict["host"]["gpus"] == [H200 + " NVIDIA H200 (hopper)"]
    assert verdict["host"]["driver"] == "580.159.04"
    checks = verdict["checks"]
    assert checks["preflight"]["status"] == "warn"
    assert "virtual machine" in checks["preflight"]["warnings"][0]
    assert checks["driver"]["states"] == {"DmaRemapPeerMmio": "in effect (driver default)"}
    assert checks["driver"]["reboot_required"] is False
    assert "/dev/nvidia0 (195:0)" in checks["devices"]["nodes"] and checks["devices"]["problems"] == []
    assert checks["p2p"]["kind"] == ["ipc"] and checks["p2p"]["pairs"] == 1


def test_h200_guest_wanting_a_different_value_fails_driver(trees, cudart):
    rc, verdict = gpu_check(trees / "h200_vm_580", cudart, {"GPUS": H200},
                            ["--registry-dwords", '{"DmaRemapPeerMmio": 0}'])
    assert (rc, verdict["failed"]) == (1, ["driver"])
    assert verdict["checks"]["driver"]["states"]["DmaRemapPeerMmio"] == "pending: loaded 1, wanted 0"


def test_broken_ipc_fails_p2p(trees, cudart):
    rc, verdict = gpu_check(trees / "h200_vm_580", cudart, {"GPUS": H200, "DROP": "0>0"})
    assert (rc, verdict["failed"]) == (1, ["p2p"])
    assert verdict["checks"]["p2p"]["bad_pairs"][0].startswith(H200 + "->" + H200 + ": writer side")


def test_fatal_xid_fails_preflight(trees, cudart):
    rc, verdict = gpu_check(trees / "h200_vm_580_xid79", cudart, {"GPUS": H200})
    assert rc == 1 and "preflight" in verdict["failed"]
    assert any(e.startswith("gpu-xid: GPU " + H200) for e in verdict["checks"]["preflight"]["errors"])


def test_no_gpu_fails(trees):
    rc, verdict = gpu_check(trees / "no_nvidia_gpu", extra=["--skip-p2p"])
    assert rc == 1 and "preflight" in verdict["failed"] and "devices" in verdict["failed"]
    assert verdict["checks"]["preflight"]["errors"][0].startswith("no-gpu: no NVIDIA GPU found")
    assert verdict["checks"]["p2p"] == {"ok": None, "skipped": "--skip-p2p"}


def test_device_major_the_unit_does_not_allow_fails(trees, cudart, tmp_path):
    # a future driver that names major 195 differently: the unit's DeviceAllow list would hide the GPU
    tree = tmp_path / "renamed"
    shutil.copytree(trees / "h200_vm_580", tree, symlinks=True)
    devices = tree / "proc" / "devices"
    devices.write_text(devices.read_text().replace("195 nvidia\n", "195 nvidia-gpu\n")
                       .replace("195 nvidiactl\n", "195 nvidia-ctl\n"))
    rc, verdict = gpu_check(tree, cudart, {"GPUS": H200})
    assert (rc, verdict["failed"]) == (1, ["devices"])
    problems = " ".join(verdict["checks"]["devices"]["problems"])
    assert "/dev/nvidia0" in problems and "195" in problems
