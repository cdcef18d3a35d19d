# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""tools/gen_gpu_ids.py: it rebuilds plugins/module_utils/gpu_ids.py byte for byte from the committed inputs, and its
rules (which name, which chip, what is left out) hold on small inputs."""

import importlib.util
import os
import shutil
import subprocess
import sys

from ansible_collections.llmserve.sglang.tests.unit.plugins.module_utils.source_imports import top_level_imports

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCRIPT = os.path.join(ROOT, "tools", "gen_gpu_ids.py")
MODULE = os.path.join(ROOT, "plugins", "module_utils", "gpu_ids.py")
SPEC = importlib.util.spec_from_file_location("gen_gpu_ids", SCRIPT)
gen = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(gen)


def _read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def test_the_committed_module_is_what_the_generator_gives():
    assert gen.generate() == _read(MODULE)
    done = subprocess.run([sys.executable, SCRIPT, "--check"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_check_fails_on_a_hand_edit_and_a_run_repairs_it(tmp_path):
    module = tmp_path / "gpu_ids.py"
    shutil.copy(MODULE, module)
    edited = _read(MODULE).replace("'NVIDIA RTX PRO 6000 Blackwell Server Edition'", "'RTX 6000 by hand'")
    assert edited != _read(MODULE)
    module.write_text(edited, encoding="utf-8")
    check = subprocess.run([sys.executable, SCRIPT, "--check", "--module", str(module)], capture_output=True,
                           text=True, check=False)
    assert check.returncode == 1 and "tools/gen_gpu_ids.py" in check.stderr
    assert _read(module) == edited  # --check writes nothing
    assert subprocess.run([sys.executable, SCRIPT, "--module", str(module)], check=False).returncode == 0
    assert _read(module) == _read(MODULE)


def test_the_generator_is_stdlib_only():
    assert top_level_imports(SCRIPT) <= {"__future__", "argparse", "os", "re", "sys"}


RELEASED = '''static const CHIPS_RELEASED sChipsReleased[] = {
    { 0x2330, 0x16c1, 0x10de, "NVIDIA H100 SXM5 80GB (board)" },
    { 0x2330, 0x0000, 0x0000, "NVIDIA H100 80GB HBM3" },
    { 0x2335, 0x18be, 0x10de, "NVIDIA H200" },
    { 0x2BB5, 0x204e, 0x10de, "NVIDIA RTX PRO 6000 Blackwell Server Edition" },
    { 0x2337, 0x18f2, 0x10DE, "NVIDIA H100XS-1-8CME" },
    { 0x2BB5, 0x2160, 0x10DE, "NVIDIA RTX Pro 6000 Blackwell DC-1-2Q" },
};
'''

PCI_IDS = '''#\tVersion: test
10de  NVIDIA Corporation
\t1340  GM108M [GeForce 830M]
\t137a  GM108GLM [Quadro K620M / Quadro M500M]
\t0fbc  GM107 High Definition Audio Controller [GeForce 940MX]
\t1ad6  TU102 USB 3.1 Host Controller
\t22a3  GH100 [H100 NVSwitch]
\t1004  GK110 [GeForce GTX 780]
\t2330  GH100 [H100 SXM5 80GB]
\t\t10de 16c1  H100 SXM5 80GB
\t2335  GH100 [H200 SXM 141GB]
\t2337  GH100 [H100 SXM5 64GB]
\t2900  GB100 [Reserved Dev ID A]
\t2924  GB100
\t2b00  GB10B [Jetson AGX Thor]
\t2bb5  GB202GL [RTX PRO 6000 Blackwell Server Edition]
\t2c2c  GB6-256(N22W-ES-A1)
\t2d98  GB207M [GeForce RTX 5050 Max-Q / Mobile]
10df  Emulex Corporation
\t2d99  GB207 [not NVIDIA's]
'''


def test_rules_on_small_inputs():
    table = gen.build_table(gen.read_pci_ids(PCI_IDS), gen.read_nvidia_names(RELEASED))
    assert table == {
        0x1340: ("NVIDIA GeForce 830M", "GM108", "maxwell"),
        0x137A: ("Quadro K620M / Quadro M500M", "GM108", "maxwell"),
        # the driver's entry without a subsystem wins over the board's
        0x2330: ("NVIDIA H100 80GB HBM3", "GH100", "hopper"),
        # only a board entry: that one
        0x2335: ("NVIDIA H200", "GH100", "hopper"),
        # the driver lists 0x2337 only among the virtual GPU profiles, which are not read
        0x2337: ("NVIDIA H100 SXM5 64GB", "GH100", "hopper"),
        0x2900: ("NVIDIA GB100 (Reserved Dev ID A)", "GB100", "blackwell"),
        0x2924: ("NVIDIA GB100", "GB100", "blackwell"),
        0x2B00: ("NVIDIA Jetson AGX Thor", "GB10B", "blackwell"),
        0x2BB5: ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "GB202", "blackwell"),
        0x2C2C: ("NVIDIA GB6-256(N22W-ES-A1)", "GB6", "blackwell"),
        0x2D98: ("NVIDIA GeForce RTX 5050 Max-Q / Mobile", "GB207", "blackwell"),
    }


def test_render_and_splice_touch_only_the_table():
    module = "HEAD = 1\nDEVICE_TABLE = {\n    0x0001: ('old', 'X', 'y'),\n}\n\n\ndef f():\n    return {}\n"
    out = gen.splice(module, {0x2BB5: ("it's", "GB202", "blackwell")})
    assert out == ("HEAD = 1\nDEVICE_TABLE = {\n    0x2BB5: (\"it's\", 'GB202', 'blackwell'),\n}\n\n\n"
                   "def f():\n    return {}\n")
