# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for module_utils/nvidia_modules.py: kernel argument splitting, modprobe.d conflicts,
unload/reload order and /dev/nvidia* holders (fake /proc trees under tmp_path)."""

from __future__ import annotations

import os

import pytest

from ansible_collections.llmserve.sglang.plugins.module_utils import nvidia_modules as nm


# ---------------------------------------------------------------------------------------------
# split_kernel_args (lib/cmdline.c next_arg)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, expected",
    [
        ("", []),
        ("   ", []),
        ("a=1 b=2", [("a", "1"), ("b", "2")]),
        ("flag", [("flag", None)]),
        ('NVreg_RegistryDwords="A=1; B=2"', [("NVreg_RegistryDwords", "A=1; B=2")]),
        ('"NVreg_RegistryDwords=A=1;B=2"', [("NVreg_RegistryDwords", "A=1;B=2")]),
        ("NVreg_RegistryDwords=A=1;B=2", [("NVreg_RegistryDwords", "A=1;B=2")]),
        ("a='x y'", [("a", "'x"), ("y'", None)]),  # single quotes do not group
        ('"quoted"', [("quoted", None)]),
        ("=x", [("=x", None)]),  # '=' at the start does not split
        ('a="open', [("a", "open")]),
        ("\ta=1\n\tb=2\n", [("a", "1"), ("b", "2")]),
        ('a=x"y z"', [("a", 'x"y z"')]),  # inner quotes group but stay
    ],
)
def test_split_kernel_args(text, expected):
    assert nm.split_kernel_args(text) == expected


# ---------------------------------------------------------------------------------------------
# parse_modprobe_config / parse_kernel_cmdline
# ---------------------------------------------------------------------------------------------

CONF = """\
# a comment with options nvidia NVreg_RegistryDwords="X=1"
   # indented comment
options nvidia NVreg_RegistryDwords="DmaRemapPeerMmio=1" \\
    NVreg_EnableStreamMemOPs=1
options nvidia-drm modeset=1 fbdev=1
blacklist nouveau
options	nvidia	NVreg_DmaRemapPeerMmio=0
install nvidia /sbin/modprobe --ignore-install nvidia NVreg_EnableResizableBar=1 $CMDLINE_OPTS
options nvidia
"""


def test_parse_modprobe_config():
    found = nm.parse_modprobe_config(CONF)
    assert found == [
        {"line": 3, "module": "nvidia", "param": "NVreg_RegistryDwords", "value": "DmaRemapPeerMmio=1", "command": "options"},
        {"line": 3, "module": "nvidia", "param": "NVreg_EnableStreamMemOPs", "value": "1", "command": "options"},
        {"line": 5, "module": "nvidia_drm", "param": "modeset", "value": "1", "command": "options"},
        {"line": 5, "module": "nvidia_drm", "param": "fbdev", "value": "1", "command": "options"},
        {"line": 7, "module": "nvidia", "param": "NVreg_DmaRemapPeerMmio", "value": "0", "command": "options"},
        {"line": 8, "module": "nvidia", "param": "NVreg_EnableResizableBar", "value": "1", "command": "install"},
    ]


def test_parse_modprobe_config_trailing_backslash_at_end_of_file():
    assert nm.parse_modprobe_config("options nvidia A=1 \\") == [
        {"line": 1, "module": "nvidia", "param": "A", "value": "1", "command": "options"}
    ]


def test_parse_kernel_cmdline():
    cmdline = (
        'BOOT_IMAGE=/vmlinuz root=UUID=x ro quiet nvidia.NVreg_RegistryDwords="A=1;B=2" '
        "nvidia-drm.modeset=1 iommu=pt .bad=1 nvidia.=x amd_iommu=on\n"
    )
    assert nm.parse_kernel_cmdline(cmdline) == [
        {"module": "nvidia", "param": "NVreg_RegistryDwords", "value": "A=1;B=2"},
        {"module": "nvidia_drm", "param": "modeset", "value": "1"},
    ]


# ---------------------------------------------------------------------------------------------
# modprobe_config_files / find_option_conflicts on a fixture root
# ---------------------------------------------------------------------------------------------

def _write(root, path, text):
    full = os.path.join(str(root), path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as handle:
        handle.write(text)
    return full


OWN = "/etc/modprobe.d/90-llmserve-nvidia.conf"


@pytest.fixture
def host(tmp_path):
    _write(tmp_path, OWN, 'options nvidia NVreg_RegistryDwords="DmaRemapPeerMmio=1"\n')
    _write(tmp_path, "/etc/modprobe.d/blacklist.conf", "blacklist nouveau\n")
    _write(tmp_path, "/proc/cmdline", "BOOT_IMAGE=/vmlinuz ro quiet\n")
    return tmp_path


def test_config_files_order_and_masking(tmp_path):
    _write(tmp_path, "/etc/modprobe.d/b.conf", "")
    _write(tmp_path, "/usr/lib/modprobe.d/b.conf", "")  # hidden by /etc
    _write(tmp_path, "/lib/modprobe.d/a.conf", "")
    _write(tmp_path, "/run/modprobe.d/c.conf", "")
    _write(tmp_path, "/etc/modprobe.d/.hidden.conf", "")
    _write(tmp_path, "/etc/modprobe.d/notes.txt", "")
    _write(tmp_path, "/etc/modprobe.d/x.conf.2026-01-01@10:00:00~", "")  # an Ansible backup
    os.makedirs(os.path.join(str(tmp_path), "etc/modprobe.d/dir.conf"))
    _write(tmp_path, "/etc/modprobe.conf", "")
    assert nm.modprobe_config_files(str(tmp_path)) == [
        "/lib/modprobe.d/a.conf",
        "/etc/modprobe.d/b.conf",
        "/run/modprobe.d/c.conf",
        "/etc/modprobe.conf",
    ]


def test_no_conflict(host):
    conflicts, scanned = nm.find_option_conflicts(["NVreg_RegistryDwords"], exclude=[OWN], root=str(host))
    assert conflicts == []
    assert scanned == ["/etc/modprobe.d/blacklist.conf", "/proc/cmdline"]


def test_conflict_in_another_file_and_on_the_cmdline(host):
    _write(host, "/etc/modprobe.d/nvidia-tweaks.conf", 'options nvidia "NVreg_RegistryDwords=RMForceStaticBar1=1"\n')
    _write(host, "/usr/lib/modprobe.d/nvidia.conf", "options nvidia NVreg_EnableStreamMemOPs=0 NVreg_Other=1\n")
    _write(host, "/proc/cmdline", "ro nvidia.NVreg_EnableStreamMemOPs=1\n")
    conflicts, dummy = nm.find_option_conflicts(
        ["NVreg_RegistryDwords", "NVreg_EnableStreamMemOPs"], exclude=[OWN], root=str(host)
    )
    # kmod order: by file name ('-' sorts before '.'), whatever the directory; the command line last
    assert conflicts == [
        {"source": "/etc/modprobe.d/nvidia-tweaks.conf", "line": 1, "param": "NVreg_RegistryDwords",
         "value": "RMForceStaticBar1=1", "kind": "modprobe.d"},
        {"source": "/usr/lib/modprobe.d/nvidia.conf", "line": 1, "param": "NVreg_EnableStreamMemOPs", "value": "0", "kind": "modprobe.d"},
        {"source": "/proc/cmdline", "line": None, "param": "NVreg_EnableStreamMemOPs", "value": "1", "kind": "cmdline"},
    ]
    msg = nm.format_conflicts(conflicts, OWN)
    assert msg.startswith(OWN + " is not the only place setting nvidia options")
    assert "/etc/modprobe.d/nvidia-tweaks.conf:1 sets NVreg_RegistryDwords=RMForceStaticBar1=1" in msg
    assert "/usr/lib/modprobe.d/nvidia.conf:1 sets NVreg_EnableStreamMemOPs=0" in msg
    assert "/proc/cmdline sets nvidia.NVreg_EnableStreamMemOPs=1" in msg
    assert "last one silently wins" in msg


def test_own_file_is_not_a_conflict_but_its_lib_twin_is_hidden(host):
    # same name under /usr/lib is hidden by our /etc file, so kmod never reads it
    _write(host, "/usr/lib/modprobe.d/90-llmserve-nvidia.conf", "options nvidia NVreg_RegistryDwords=X=1\n")
    assert nm.find_option_conflicts(["NVreg_RegistryDwords"], exclude=[OWN], root=str(host))[0] == []


def test_other_modules_do_not_conflict(host):
    _write(host, "/etc/modprobe.d/drm.conf", "options nvidia-drm NVreg_RegistryDwords=1 modeset=1\n")
    assert nm.find_option_conflicts(["NVreg_RegistryDwords"], exclude=[OWN], root=str(host))[0] == []


def test_registry_dwords_shadowing_a_standalone_param(host):
    # we only set NVreg_EnableStreamMemOPs; another file's RegistryDwords sets the same key -> it wins
    _write(host, "/etc/modprobe.d/10-a.conf", 'options nvidia NVreg_RegistryDwords="EnableStreamMemOPs=0"\n')
    _write(host, "/etc/modprobe.d/20-b.conf", 'options nvidia NVreg_RegistryDwords="RMPcieP2PType=2"\n')
    conflicts, dummy = nm.find_option_conflicts(["NVreg_EnableStreamMemOPs"], exclude=[OWN], root=str(host))
    assert [c["source"] for c in conflicts] == ["/etc/modprobe.d/10-a.conf"]


def test_restrict_profiling_alias_is_shadowed(host):
    _write(host, "/etc/modprobe.d/10-a.conf", 'options nvidia NVreg_RegistryDwords="RmProfilingAdminOnly=1"\n')
    conflicts, dummy = nm.find_option_conflicts(["NVreg_RestrictProfilingToAdminUsers"], exclude=[OWN], root=str(host))
    assert len(conflicts) == 1


def test_install_command_conflict(host):
    _write(host, "/etc/modprobe.d/inst.conf", "install nvidia /sbin/modprobe --ignore-install nvidia NVreg_RegistryDwords=A=1\n")
    conflicts, dummy = nm.find_option_conflicts(["NVreg_RegistryDwords"], exclude=[OWN], root=str(host))
    assert conflicts[0]["kind"] == "modprobe.d install"


def test_cmdline_skipped_or_missing(host):
    _write(host, "/proc/cmdline", "nvidia.NVreg_RegistryDwords=A=1\n")
    assert nm.find_option_conflicts(["NVreg_RegistryDwords"], exclude=[OWN], root=str(host), cmdline_path=None)[0] == []
    os.unlink(os.path.join(str(host), "proc/cmdline"))
    conflicts, scanned = nm.find_option_conflicts(["NVreg_RegistryDwords"], exclude=[OWN], root=str(host))
    assert conflicts == [] and "/proc/cmdline" not in scanned


def test_format_no_conflicts():
    assert "no other modprobe.d file" in nm.format_conflicts([], OWN)


# ---------------------------------------------------------------------------------------------
# /proc/modules and the reload plan
# ---------------------------------------------------------------------------------------------

PROC_MODULES = """\
nvidia_drm 126976 0 - Live 0x0000000000000000 (POE)
nvidia_uvm 1564672 0 - Live 0x0000000000000000 (POE)
nvidia_modeset 1589248 1 nvidia_drm, Live 0x0000000000000000 (POE)
nvidia 60936192 2 nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (POE)
drm_kms_helper 200704 1 nvidia_drm, Live 0x0000000000000000
video 65536 0 - Live 0x0000000000000000
"""


def test_parse_proc_modules():
    mods = nm.parse_proc_modules(PROC_MODULES + "broken\nodd x - - Loading 0x0\n")
    assert mods["nvidia"] == {"size": 60936192, "refcount": 2, "used_by": ["nvidia_uvm", "nvidia_modeset"], "state": "Live"}
    assert mods["nvidia_drm"]["used_by"] == []
    assert mods["odd"] == {"size": None, "refcount": None, "used_by": [], "state": "Loading"}
    assert "broken" not in mods


def test_plan_full_stack():
    plan = nm.plan_reload(nm.parse_proc_modules(PROC_MODULES))
    assert plan == {
        "unload": ["nvidia_drm", "nvidia_modeset", "nvidia_uvm", "nvidia"],
        "load": ["nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm"],
        "problems": [],
    }


def test_plan_with_peermem_keeps_the_documented_order():
    text = PROC_MODULES.replace("nvidia_uvm,nvidia_modeset,", "nvidia_uvm,nvidia_modeset,nvidia_peermem,").replace(
        "nvidia 60936192 2", "nvidia 60936192 3"
    ) + "nvidia_peermem 16384 0 - Live 0x0 (POE)\n"
    plan = nm.plan_reload(nm.parse_proc_modules(text))
    assert plan["unload"] == ["nvidia_drm", "nvidia_modeset", "nvidia_uvm", "nvidia_peermem", "nvidia"]
    assert plan["load"] == ["nvidia", "nvidia_peermem", "nvidia_uvm", "nvidia_modeset", "nvidia_drm"]
    assert plan["problems"] == []


def test_unload_order_constant():
    assert nm.UNLOAD_ORDER == ("nvidia_drm", "nvidia_modeset", "nvidia_uvm", "nvidia_peermem", "nvidia")
    # every module comes before the ones it depends on
    deps = {"nvidia_drm": {"nvidia_modeset"}, "nvidia_modeset": {"nvidia"}, "nvidia_uvm": {"nvidia"}, "nvidia_peermem": {"nvidia"}}
    for user, used in deps.items():
        for dep in used:
            assert nm.UNLOAD_ORDER.index(user) < nm.UNLOAD_ORDER.index(dep)


def test_plan_only_nvidia_loaded():
    plan = nm.plan_reload(nm.parse_proc_modules("nvidia 100 0 - Live 0x0\n"))
    assert plan == {"unload": ["nvidia"], "load": ["nvidia"], "problems": []}


def test_plan_nothing_loaded():
    assert nm.plan_reload(nm.parse_proc_modules("video 1 0 - Live 0x0\n")) == {"unload": [], "load": [], "problems": []}


def test_plan_refuses_an_open_device():
    text = PROC_MODULES.replace("nvidia_uvm 1564672 0", "nvidia_uvm 1564672 3")
    problems = nm.plan_reload(nm.parse_proc_modules(text))["problems"]
    assert problems == [
        "module nvidia_uvm has 3 reference(s) but only 0 come from the modules using it (none); "
        "a process, the console or another driver still holds it"
    ]


def test_plan_refuses_a_foreign_dependent():
    text = PROC_MODULES.replace("nvidia_uvm,nvidia_modeset,", "nvidia_uvm,nvidia_modeset,gdrdrv,").replace(
        "nvidia 60936192 2", "nvidia 60936192 3"
    )
    problems = nm.plan_reload(nm.parse_proc_modules(text))["problems"]
    assert len(problems) == 1
    assert "module nvidia is used by gdrdrv, which is not in the unload list" in problems[0]


def test_plan_refuses_a_wrong_order():
    problems = nm.plan_reload(nm.parse_proc_modules(PROC_MODULES), order=["nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm"])[
        "problems"
    ]
    assert any("removes after it" in p for p in problems)


def test_plan_refuses_modules_that_cannot_unload_or_are_busy():
    problems = nm.plan_reload(nm.parse_proc_modules("nvidia 100 - - Live 0x0\n"))["problems"]
    assert "no reference count" in problems[0]
    problems = nm.plan_reload(nm.parse_proc_modules("nvidia 100 0 - Unloading 0x0\n"))["problems"]
    assert "state Unloading" in problems[0]


def test_plan_accepts_dashed_names():
    plan = nm.plan_reload(nm.parse_proc_modules("nvidia 100 0 - Live 0x0\n"), order=["nvidia-drm", "nvidia"])
    assert plan["unload"] == ["nvidia"]


# ---------------------------------------------------------------------------------------------
# /dev/nvidia* holders
# ---------------------------------------------------------------------------------------------

def _proc(tmp_path, pid, comm, cmdline, fds=(), maps=""):
    base = tmp_path / "proc" / str(pid)
    (base / "fd").mkdir(parents=True)
    (base / "comm").write_text(comm + "\n")
    (base / "cmdline").write_bytes(b"\0".join(part.encode() for part in cmdline) + b"\0")
    (base / "maps").write_text(maps)
    for number, target in enumerate(fds):
        os.symlink(target, str(base / "fd" / str(number)))
    return base


def test_find_holders(tmp_path):
    _proc(tmp_path, 1, "systemd", ["/sbin/init"], fds=["/dev/null", "socket:[123]"])
    _proc(
        tmp_path, 4242, "python3", ["python3", "-m", "sglang.launch_server", "--tp", "4"],
        fds=["/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia0", "/dev/nvidia-uvm"],
    )
    _proc(
        tmp_path, 77, "nv-hostengine", ["/usr/bin/nv-hostengine"],
        maps="7f0000000000-7f0000001000 rw-s 00000000 00:05 123  /dev/nvidia1\n7f1-7f2 r-xp 0 08:01 5 /usr/lib/libc.so.6\n",
    )
    _proc(tmp_path, 99, "self", ["ansible"], fds=["/dev/nvidiactl"])
    (tmp_path / "proc" / "self").mkdir()
    (tmp_path / "proc" / "cmdline").write_text("x")
    holders = nm.find_device_holders(str(tmp_path / "proc"), ignore_pids=[99])
    assert holders == [
        {"pid": 77, "comm": "nv-hostengine", "cmdline": "/usr/bin/nv-hostengine", "paths": ["/dev/nvidia1"]},
        {
            "pid": 4242,
            "comm": "python3",
            "cmdline": "python3 -m sglang.launch_server --tp 4",
            "paths": ["/dev/nvidia-uvm", "/dev/nvidia0", "/dev/nvidiactl"],
        },
    ]
    msg = nm.format_holders(holders)
    assert "PID 77 (nv-hostengine: /usr/bin/nv-hostengine) holds /dev/nvidia1" in msg
    assert "PID 4242 (python3: python3 -m sglang.launch_server --tp 4) holds /dev/nvidia-uvm, /dev/nvidia0, /dev/nvidiactl" in msg


def test_find_holders_none(tmp_path):
    _proc(tmp_path, 1, "systemd", ["/sbin/init"], fds=["/dev/null"])
    assert nm.find_device_holders(str(tmp_path / "proc")) == []
    assert nm.format_holders([]) == "no process holds /dev/nvidia*"
    assert nm.find_device_holders(str(tmp_path / "missing")) == []


def test_format_holders_shortens_long_command_lines():
    msg = nm.format_holders([{"pid": 1, "comm": "x", "cmdline": "y" * 500, "paths": ["/dev/nvidia0"]}])
    assert len(msg) < 250 and msg.count("y") == 157
