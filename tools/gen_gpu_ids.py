# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Regenerate ``DEVICE_TABLE`` in plugins/module_utils/gpu_ids.py from its two sources.

    python3 tools/gen_gpu_ids.py [--pci-ids FILE] [--nvidia-names FILE] [--module FILE] [--check]

Inputs (committed next to this script, trimmed copies; the full upstream files give the same table):

``tools/gpu_ids/g_nv_name_released.h``
    ``src/nvidia/generated/g_nv_name_released.h`` of NVIDIA's open GPU kernel module (tag 595.45.04), physical
    GPUs only: the array lists them first in ascending device ID, then the virtual GPU profiles from a low ID
    again, where the reading stops. The name of a device is its entry without a subsystem, else its first one.
``tools/gpu_ids/pci.ids``
    the device lines of vendor 10de of the PCI ID database (pci.ids 2026.08.22, subsystem lines dropped). Its chip
    code (``GB202GL`` -> ``GB202``) gives every entry its chip and, by the code's two letters, its architecture;
    it names the devices NVIDIA's table does not have.

Only the lines between ``DEVICE_TABLE = {`` and its closing ``}`` are generated; the rest of gpu_ids.py (header,
lookup functions) is written by hand. ``--check`` writes nothing and exits 1 when the module differs from what the
inputs give (tests/unit/tools/test_gen_gpu_ids.py runs it). Standard library only.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PCI_IDS = os.path.join(HERE, "gpu_ids", "pci.ids")
NVIDIA_NAMES = os.path.join(HERE, "gpu_ids", "g_nv_name_released.h")
MODULE = os.path.join(ROOT, "plugins", "module_utils", "gpu_ids.py")

VENDOR = "10de"
# chip code prefix -> architecture; codes of other families (Kepler and older, Tegra, chipsets) are left out
ARCHITECTURES = {
    "GM": "maxwell", "GP": "pascal", "GV": "volta", "TU": "turing", "GA": "ampere", "AD": "ada", "GH": "hopper",
    "GB": "blackwell", "GR": "rubin",
}
# functions of a GPU board that are not the GPU (the scanner only looks at display-class functions anyway)
NOT_A_GPU = ("Audio", "USB", "NVSwitch", "PCIe host", "PCI bridge")
# pci.ids names that describe an ID, not a product: shown after the chip code
PLACEHOLDER_NAMES = ("Reserved", "Initial")
# product lines pci.ids and the driver write without the vendor name
BARE_BRANDS = ("Quadro", "Tesla", "GRID")

_RELEASED = re.compile(r'\{\s*0x([0-9A-Fa-f]{4}),\s*0x([0-9A-Fa-f]{4}),\s*0x([0-9A-Fa-f]{4}),\s*"([^"]*)"\s*\}')
_DEVICE = re.compile(r"\t([0-9a-f]{4})  (.+)")
_CHIP = re.compile(r"([A-Z]{2})([0-9]{3}|[0-9]{2}B|[0-9]+)")
_BRACKETS = re.compile(r"\[(.*)\]")
TABLE_START = "DEVICE_TABLE = {\n"
TABLE_END = "\n}\n"


def read_nvidia_names(text):
    """device ID -> name from g_nv_name_released.h, physical GPUs only."""
    names = {}
    previous = -1
    for match in _RELEASED.finditer(text):
        device = int(match.group(1), 16)
        if device < previous:  # the virtual GPU profiles start here
            break
        previous = device
        if device not in names or match.group(2, 3) == ("0000", "0000"):
            names[device] = match.group(4)
    return names


def read_pci_ids(text):
    """device ID -> description for the devices of vendor 10de in pci.ids text."""
    devices = {}
    inside = False
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        if not line.startswith("\t"):
            inside = line.split(" ", 1)[0] == VENDOR
            continue
        match = _DEVICE.fullmatch(line) if inside else None
        if match:
            devices[int(match.group(1), 16)] = match.group(2)
    return devices


def _pci_name(description, chip):
    inner = _BRACKETS.search(description)
    if inner is None:
        return "NVIDIA " + description
    inner = inner.group(1)
    if inner.startswith(PLACEHOLDER_NAMES):
        return "NVIDIA %s (%s)" % (chip, inner)
    if inner.startswith(BARE_BRANDS):
        return inner
    return "NVIDIA " + inner


def build_table(pci_devices, nvidia_names):
    """device ID -> (name, chip, architecture) for the GPUs of the families in ARCHITECTURES."""
    table = {}
    for device, description in sorted(pci_devices.items()):
        match = _CHIP.match(description)
        if match is None or match.group(1) not in ARCHITECTURES or any(w in description for w in NOT_A_GPU):
            continue
        chip = match.group(0)
        name = nvidia_names.get(device) or _pci_name(description, chip)
        table[device] = (name, chip, ARCHITECTURES[match.group(1)])
    return table


def render_table(table):
    return "".join("    0x%04X: (%r, %r, %r),\n" % ((device,) + entry) for device, entry in sorted(table.items()))


def splice(module_text, table):
    """``module_text`` with the body of ``DEVICE_TABLE = {...}`` replaced by ``table``."""
    start = module_text.index(TABLE_START) + len(TABLE_START)
    end = module_text.index(TABLE_END, start) + 1
    return module_text[:start] + render_table(table) + module_text[end:]


def _read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def generate(pci_ids=PCI_IDS, nvidia_names=NVIDIA_NAMES, module=MODULE):
    """The text gpu_ids.py should have."""
    table = build_table(read_pci_ids(_read(pci_ids)), read_nvidia_names(_read(nvidia_names)))
    return splice(_read(module), table)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pci-ids", default=PCI_IDS, help="pci.ids (the whole file or the trimmed copy)")
    parser.add_argument("--nvidia-names", default=NVIDIA_NAMES, help="g_nv_name_released.h")
    parser.add_argument("--module", default=MODULE, help="the gpu_ids.py to update")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when the module differs")
    args = parser.parse_args(argv)
    text = generate(args.pci_ids, args.nvidia_names, args.module)
    if _read(args.module) == text:
        return 0
    if args.check:
        sys.stderr.write("%s differs from what %s gives; run: python3 tools/gen_gpu_ids.py\n"
                         % (args.module, os.path.basename(__file__)))
        return 1
    with open(args.module, "w", encoding="utf-8") as handle:
        handle.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
