# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The compile and JIT cache layout of an SGLang unit: one directory per unit, SGLang version and architecture.

``<cache root>/<unit>/<SGLang version>/<architecture>`` holds every kernel cache the engine and its libraries keep
(Triton, Inductor, CUDA's PTX cache, SGLang's own JIT, FlashInfer, DeepGEMM, TileLang, CuTe DSL, tvm-ffi, torch
extensions). The unit sets each library's variable to a subdirectory of it, so nothing depends on SGLang's
``setdefault`` redirect, import order or a library's literal ``~/.cache`` default, and an upgrade or a GPU swap
starts with an empty tree instead of loading kernels another build made.

The architecture tag:

* ``--device`` other than cuda (the CPU engine): ``<device>-<machine>``, e.g. ``cpu-x86_64``;
* NVIDIA GPUs: ``sm<major><minor>`` of the host's GPUs (SGLang's own JIT tag), the distinct ones joined with
  ``+`` in ascending order on a host with mixed boards (``sm80+sm86``). All of the host's GPUs count, not only the
  unit's: CUDA's device order (fastest first) need not be the PCI order the facts list, and a coarser tag is never
  wrong, only recompiled more often. A chip the table does not know is tagged by its PCI device ID (``pci-2bb5``);
* no NVIDIA GPU and no ``--device``: ``cpu-<machine>``.
"""

from __future__ import annotations

import re

# The cache variables the unit sets, each to <cache dir>/<subdirectory>. sglang_server_env may not set them: a value
# there would point a library back at a directory shared by every version (sglang_args_service refuses them).
CACHE_ENV_SUBDIRS = (
    ("SGLANG_CACHE_DIR", "sglang"),
    ("SGLANG_JIT_CACHE_DIR", "jit"),
    ("SGLANG_DG_CACHE_DIR", "deep_gemm"),
    ("SGLANG_CUTE_AOT_CACHE_DIR", "cute_aot"),
    ("TRITON_CACHE_DIR", "triton"),
    ("TRITON_HOME", "triton-home"),
    ("TORCHINDUCTOR_CACHE_DIR", "inductor"),
    ("CUDA_CACHE_PATH", "nv"),
    ("TILELANG_CACHE_DIR", "tilelang"),
    ("FLASHINFER_WORKSPACE_BASE", "flashinfer"),
    ("CUTE_DSL_CACHE_DIR", "cute_dsl"),
    ("TVM_FFI_CACHE_DIR", "tvm-ffi"),
    ("TORCH_EXTENSIONS_DIR", "torch_extensions"),
    ("PYTORCH_KERNEL_CACHE_PATH", "torch-kernels"),
    # whatever else follows XDG (torch hub, appdirs users) lands in the same tree
    ("XDG_CACHE_HOME", "xdg"),
)
# The CUDA driver's PTX cache has a size limit of its own: 4 GiB is the largest the driver accepts.
CUDA_CACHE_MAXSIZE = "4294967296"
CACHE_ENV_NAMES = tuple(name for name, _sub in CACHE_ENV_SUBDIRS) + ("CUDA_CACHE_MAXSIZE",)

# Chip code name (plugins/module_utils/gpu_ids.py) -> compute capability. GA100 is 8.0, the other Ampere chips 8.6
# (GA10B, Orin, 8.7, is not in the PCI table); GB100 (B200) 10.0, GB20x consumer and RTX PRO Blackwell 12.0, GB20B
# (GB10, DGX Spark) 12.1. A chip left out here (one whose capability is not certain) is tagged by its PCI device ID:
# never shared with another board, only never matched by name.
CHIP_CAPABILITY = {
    "GM107": "50", "GM108": "50", "GM200": "52", "GM204": "52", "GM206": "52",
    "GP100": "60", "GP102": "61", "GP104": "61", "GP106": "61", "GP107": "61", "GP108": "61",
    "GV100": "70",
    "TU102": "75", "TU104": "75", "TU106": "75", "TU116": "75", "TU117": "75",
    "GA100": "80", "GA102": "86", "GA103": "86", "GA104": "86", "GA106": "86", "GA107": "86",
    "AD102": "89", "AD103": "89", "AD104": "89", "AD106": "89", "AD107": "89",
    "GH100": "90",
    "GB100": "100",
    "GB202": "120", "GB203": "120", "GB205": "120", "GB206": "120", "GB207": "120", "GB20B": "121",
}

# A version or tag must be one path component of plain characters (it names a directory root removes trees under).
_COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,127}")


class CacheLayoutError(ValueError):
    """A version, unit or architecture that cannot name a cache directory."""


def component(value, what):
    """``value`` when it is one safe path component, else CacheLayoutError."""
    text = str(value)
    if not _COMPONENT.fullmatch(text) or text in (".", ".."):
        raise CacheLayoutError("%s %r cannot name a cache directory: use letters, digits, '.', '_', '+' and '-' "
                               "(at most 128, not starting with a punctuation mark)" % (what, text))
    return text


def device_of(argv):
    """The value of ``--device`` in a rendered SGLang command line, or None."""
    argv = list(argv or [])
    for index, token in enumerate(argv):
        if token == "--device" and index + 1 < len(argv):
            return str(argv[index + 1])
        if isinstance(token, str) and token.startswith("--device="):
            return token.split("=", 1)[1]
    return None


def gpu_tag(gpus):
    """``sm90``-style tag of the NVIDIA GPUs in ``gpu_host`` facts (``gpus`` list); None without any."""
    tags = set()
    for gpu in gpus or []:
        if not isinstance(gpu, dict):
            continue
        capability = CHIP_CAPABILITY.get(str(gpu.get("chip") or ""))
        if capability:
            tags.add((0, int(capability), "sm" + capability))
        else:
            device = str(gpu.get("device_id") or "unknown").lower()
            device = device[2:] if device.startswith("0x") else device
            tags.add((1, 0, "pci-" + device))
    if not tags:
        return None
    return "+".join(tag for _order, _cap, tag in sorted(tags))


def arch_tag(argv, gpu_host, machine):
    """The architecture part of the cache directory (module docstring)."""
    machine = component(machine or "unknown", "the machine architecture")
    device = device_of(argv)
    if device and device.lower() != "cuda":
        return component("%s-%s" % (device.lower(), machine), "--device")
    tag = gpu_tag((gpu_host or {}).get("gpus") if isinstance(gpu_host, dict) else None)
    return tag if tag else "cpu-" + machine


def host_tags(gpu_host, machine):
    """Every architecture tag this host can serve with: its GPUs' and the CPU engine's."""
    machine = component(machine or "unknown", "the machine architecture")
    tags = ["cpu-" + machine]
    tag = gpu_tag((gpu_host or {}).get("gpus") if isinstance(gpu_host, dict) else None)
    if tag:
        tags.insert(0, tag)
    return tags


def cache_dir(root, unit, version, arch):
    """``<root>/<unit>/<version>/<arch>``; the version's local suffix (``+cpu``) is kept (another build)."""
    root = str(root)
    if not root.startswith("/") or root.rstrip("/") == "":
        raise CacheLayoutError("the cache root %r must be an absolute path other than /" % root)
    return "/".join([root.rstrip("/"), component(unit, "the unit name"), component(version, "the SGLang version"),
                     component(arch, "the architecture tag")])


def cache_env(directory):
    """The environment that points every cache at its subdirectory of ``directory``, in a fixed order."""
    env = {name: "%s/%s" % (directory, sub) for name, sub in CACHE_ENV_SUBDIRS}
    env["CUDA_CACHE_MAXSIZE"] = CUDA_CACHE_MAXSIZE
    return env
