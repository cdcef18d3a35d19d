# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""GPU acceptance check for a real NVIDIA host: the collection's GPU-facing code against the live hardware.

Runs with nothing but the host's own Python (the one that has torch, when the P2P test should find the CUDA
runtime through it) and this checkout; it needs neither Ansible nor the network. In order:

1. facts: ``gpu_host_facts``' own gathering code over ``--root`` (``/`` on a real host);
2. preflight: the ``iommu_preflight`` rules over those facts, as a check-mode audit would apply them;
3. driver: ``nvidia_driver``'s verification of ``--registry-dwords`` against the loaded driver;
4. devices: the ``sglang_server`` unit's DeviceAllow list against every ``/dev/nvidia*`` node present;
5. p2p: the shipped ``p2p_check.py`` over every ordered GPU pair (the two-process CUDA IPC test on one GPU).

Prints one JSON object (the verdict and each check's result) and exits 0 when every check passed, 1 when one
failed, 2 when the check itself could not run. Where Ansible is not installed, the module's import of
``ansible.module_utils.basic`` is satisfied by a small stand-in class; the gathering code is the module's own.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import types

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
P2P_SCRIPT = os.path.join(ROOT, "roles", "iommu_preflight", "files", "p2p_check.py")
SBIN_PATHS = ("/sbin", "/usr/sbin", "/usr/local/sbin", "/bin", "/usr/bin", "/usr/local/bin")


class CheckError(Exception):
    """The check could not run (not a failed check)."""


def collection_on_path():
    """Make this checkout importable as ``ansible_collections.llmserve.sglang`` (a link in a temp dir)."""
    tree = tempfile.mkdtemp(prefix="llmserve-gpu-check-")
    os.makedirs(os.path.join(tree, "ansible_collections", "llmserve"))
    os.symlink(ROOT, os.path.join(tree, "ansible_collections", "llmserve", "sglang"))
    sys.path.insert(0, tree)
    return tree


class _StandInModule(object):
    """What ``gpu_host_facts.gather`` uses of AnsibleModule: run a command, find a binary, fail."""

    def __init__(self):
        self.params = {}

    @staticmethod
    def run_command(args):
        env = dict(os.environ, LANG="C", LC_ALL="C", LC_MESSAGES="C")
        try:
            proc = subprocess.run(args, capture_output=True, text=True, errors="replace", env=env, timeout=60,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return 1, "", str(exc)
        return proc.returncode, proc.stdout, proc.stderr

    @staticmethod
    def get_bin_path(name, required=False, opt_dirs=None):
        found = shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", "")] + list(SBIN_PATHS)))
        if required and not found:
            raise CheckError("%s not found" % name)
        return found

    @staticmethod
    def fail_json(msg, **_kwargs):
        raise CheckError(msg)

    @staticmethod
    def warn(_msg):
        pass


def _ensure_ansible_basic():
    """Let the module file import without Ansible: only AnsibleModule's name is needed at import time."""
    try:
        importlib.import_module("ansible.module_utils.basic")
        return "ansible"
    except ImportError:
        pass
    names = ("ansible", "ansible.module_utils", "ansible.module_utils.basic")
    for name in names:
        sys.modules.setdefault(name, types.ModuleType(name))
    sys.modules["ansible.module_utils.basic"].AnsibleModule = _StandInModule
    return "stand-in"


def gather_facts(root, kernel_log):
    _ensure_ansible_basic()
    module_file = importlib.import_module("ansible_collections.llmserve.sglang.plugins.modules.gpu_host_facts")
    return module_file.gather(_StandInModule(), root, kernel_log)


def check_preflight(facts):
    rules = importlib.import_module("ansible_collections.llmserve.sglang.plugins.plugin_utils.preflight_rules")
    result = rules.evaluate(facts)
    return {"ok": not result["errors"], "status": result["report"].get("status"), "errors": result["errors"],
            "warnings": result["warnings"], "selected": [g.get("pci_address") for g in result["selected"]]}


def check_driver(facts, registry_dwords):
    registry = importlib.import_module("ansible_collections.llmserve.sglang.plugins.module_utils.nvidia_registry")
    result = registry.compare_with_driver_facts(facts.get("nvidia_driver") or {}, registry_dwords, {})
    return {"ok": bool(result["loaded"]) and not result["pending"], "loaded": result["loaded"],
            "version": result["version"], "status": result["status"], "pending": result["pending"],
            "reboot_required": result.get("reboot_required"), "states": result.get("states")}


def role_device_classes():
    """The DeviceAllow classes of the sglang_server unit, read from the role's vars (the list the unit uses)."""
    path = os.path.join(ROOT, "roles", "sglang_server", "vars", "main.yml")
    names, inside = [], False
    with open(path) as handle:
        for line in handle:
            if line.startswith("__sglang_server_nvidia_device_classes:"):
                inside = True
            elif inside and line.startswith("  - "):
                names.append(line[4:].strip().strip("\"'"))
            elif inside and line.strip() and not line.startswith(" "):
                break
    if not names:
        raise CheckError("no __sglang_server_nvidia_device_classes list in %s" % path)
    return names


def check_devices(facts):
    unit = importlib.import_module("ansible_collections.llmserve.sglang.plugins.plugin_utils.systemd_unit")
    nodes = facts.get("device_nodes") or []
    problems = unit.device_allow_problems(facts.get("char_devices") or [], nodes, role_device_classes())
    # a host whose driver is loaded has at least /dev/nvidiactl: no node at all is a failure too
    return {"ok": not problems and bool(nodes), "problems": problems,
            "nodes": ["%s (%s:%s)" % (n.get("path"), n.get("major"), n.get("minor")) for n in nodes],
            "note": None if nodes else "no /dev/nvidia* node present"}


def check_p2p(addresses, python, timeout, size):
    if not addresses:
        return {"ok": False, "error": "no GPU to test"}
    p2p = importlib.import_module("ansible_collections.llmserve.sglang.plugins.plugin_utils.p2p")
    argv = [python, P2P_SCRIPT, "--devices", ",".join(addresses), "--timeout", str(timeout), "--size", str(size)]
    started = time.monotonic()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                              timeout=timeout * max(1, len(addresses)) ** 2 + 60, check=False)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": "p2p_check.py did not finish in time"}
    seconds = round(time.monotonic() - started, 2)
    try:
        raw = json.loads(proc.stdout.strip().splitlines()[-1])
        pairs = p2p.parse_p2p_check(raw)  # the collection's own validation of the result
    except (ValueError, IndexError) as exc:
        return {"ok": False, "error": "p2p_check.py rc=%d: %s %s" % (proc.returncode, exc, proc.stderr[-2000:])}
    bad = ["%s->%s: %s" % (src, dst, r.get("detail")) for (src, dst), r in sorted(pairs.items()) if not r["ok"]]
    return {"ok": proc.returncode == 0 and bool(pairs) and not bad, "pairs": len(pairs), "bad_pairs": bad,
            "seconds": seconds, "kind": sorted({r.get("kind") for r in pairs.values()}),
            "cudart": raw.get("cudart"), "cudart_source": raw.get("cudart_source"), "torch": raw.get("torch"),
            "runtime_version": raw.get("runtime_version"), "driver_version": raw.get("driver_version")}


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--root", default="/", help="host root to read (a fixture tree in tests)")
    parser.add_argument("--kernel-log", default=None, help="read the kernel log from this file instead")
    parser.add_argument("--registry-dwords", default='{"DmaRemapPeerMmio": 1}',
                        help="wanted NVreg_RegistryDwords as JSON (default: the story's DmaRemapPeerMmio=1)")
    parser.add_argument("--python", default=sys.executable, help="Python that runs p2p_check.py (torch's)")
    parser.add_argument("--p2p-timeout", type=float, default=60.0, help="seconds per GPU pair")
    parser.add_argument("--p2p-size", type=int, default=32 * 1024 * 1024, help="bytes per P2P buffer")
    parser.add_argument("--skip-p2p", action="store_true", help="leave the GPUs alone (no writes)")
    args = parser.parse_args(argv)
    try:
        args.registry_dwords = json.loads(args.registry_dwords)
    except ValueError as exc:
        parser.error("--registry-dwords is not JSON: %s" % exc)
    if not isinstance(args.registry_dwords, dict):
        parser.error("--registry-dwords must be a JSON object")
    return args


def main(argv=None):
    args = parse_args(argv)
    started = time.monotonic()
    collection_on_path()
    verdict = {"tool": "llmserve gpu-check", "root": args.root, "ansible": _ensure_ansible_basic(), "checks": {}}
    try:
        facts = gather_facts(args.root, args.kernel_log)
    except CheckError as exc:
        verdict.update(verdict="error", error=str(exc))
        print(json.dumps(verdict, indent=2, sort_keys=True))
        return 2
    gpus = facts.get("gpus") or []
    verdict["host"] = {
        "kernel": facts.get("kernel_release"),
        "driver": (facts.get("nvidia_driver") or {}).get("version"),
        "gpus": ["%s %s (%s)" % (g.get("pci_address"), g.get("name"), g.get("architecture")) for g in gpus],
        "iommu": (facts.get("iommu") or {}).get("enabled"),
        "sev_snp": facts.get("sev_snp"),
        "kernel_log_source": facts.get("kernel_log_source"),
    }
    checks = verdict["checks"]
    checks["preflight"] = check_preflight(facts)
    checks["driver"] = check_driver(facts, args.registry_dwords)
    checks["devices"] = check_devices(facts)
    if args.skip_p2p:
        checks["p2p"] = {"ok": None, "skipped": "--skip-p2p"}
    else:
        checks["p2p"] = check_p2p(checks["preflight"]["selected"], args.python, args.p2p_timeout, args.p2p_size)
    failed = sorted(name for name, check in checks.items() if check.get("ok") is False)
    verdict["verdict"] = "fail" if failed else "pass"
    verdict["failed"] = failed
    verdict["seconds"] = round(time.monotonic() - started, 2)
    print(json.dumps(verdict, indent=2, sort_keys=True))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
