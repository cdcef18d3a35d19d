# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the nvidia_module_reload module: fake /proc, recorded rmmod/modprobe calls."""

from __future__ import annotations

import os

import pytest

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.llmserve.sglang.plugins.modules import nvidia_module_reload as mod
from ansible_collections.llmserve.sglang.tests.unit.plugins.modules.module_exits import ExitJson, FailJson, patch_exits


FULL_STACK = """\
nvidia_drm 126976 0 - Live 0x0 (POE)
nvidia_uvm 1564672 0 - Live 0x0 (POE)
nvidia_modeset 1589248 1 nvidia_drm, Live 0x0 (POE)
nvidia 60936192 2 nvidia_uvm,nvidia_modeset, Live 0x0 (POE)
"""


class Host(object):
    """Records commands; fails the ones listed in ``fail``."""

    def __init__(self, fail=()):
        self.calls = []
        self.fail = set(fail)

    def run_command(self, module, argv, **kwargs):
        self.calls.append(" ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(argv)))
        if self.calls[-1] in self.fail:
            return 1, "", "%s: ERROR: Module is in use" % self.calls[-1].split()[0]
        return 0, "", ""


def _bin_path(self, name, required=False, opt_dirs=None):
    return "/usr/sbin/" + name


def _patch(monkeypatch, fail=()):
    state = Host(fail)

    def run_command(self, argv, **kwargs):
        return state.run_command(self, argv, **kwargs)

    patch_exits(monkeypatch)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", _bin_path)
    monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
    return state


@pytest.fixture
def host(monkeypatch):
    return _patch(monkeypatch)


def _proc(tmp_path, modules_text, holders=()):
    proc = tmp_path / "proc"
    proc.mkdir(exist_ok=True)
    (proc / "modules").write_text(modules_text)
    for pid, cmd, dev in holders:
        base = proc / str(pid)
        (base / "fd").mkdir(parents=True)
        (base / "comm").write_text(cmd.split()[0] + "\n")
        (base / "cmdline").write_bytes(cmd.replace(" ", "\0").encode() + b"\0")
        os.symlink(dev, str(base / "fd" / "3"))
    return str(proc)


def _run(args, expect=ExitJson):
    with patch_module_args(args):
        with pytest.raises(expect) as exc:
            mod.main()
    return exc.value.args[0]


def test_unloads_in_order_and_loads_back(tmp_path, host):
    result = _run({"proc_root": _proc(tmp_path, FULL_STACK)})
    assert host.calls == [
        "rmmod nvidia_drm",
        "rmmod nvidia_modeset",
        "rmmod nvidia_uvm",
        "rmmod nvidia",
        "modprobe nvidia",
        "modprobe nvidia_uvm",
        "modprobe nvidia_modeset",
        "modprobe nvidia_drm",
    ]
    assert result["changed"] is True
    assert result["unloaded"] == ["nvidia_drm", "nvidia_modeset", "nvidia_uvm", "nvidia"]
    assert result["loaded"] == ["nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm"]
    assert result["msg"].startswith("unloaded nvidia_drm, nvidia_modeset")


def test_nothing_loaded(tmp_path, host):
    result = _run({"proc_root": _proc(tmp_path, "video 1 0 - Live 0x0\n")})
    assert result["changed"] is False
    assert host.calls == []
    assert "no NVIDIA module is loaded" in result["msg"]


def test_refuses_naming_pids_and_commands(tmp_path, host):
    proc = _proc(
        tmp_path,
        FULL_STACK.replace("nvidia_uvm 1564672 0", "nvidia_uvm 1564672 1"),
        holders=[(4242, "python3 -m sglang.launch_server", "/dev/nvidia0")],
    )
    result = _run({"proc_root": proc}, expect=FailJson)
    assert host.calls == []
    assert "refusing to unload the NVIDIA modules" in result["msg"]
    assert "PID 4242 (python3: python3 -m sglang.launch_server) holds /dev/nvidia0" in result["msg"]
    assert "module nvidia_uvm has 1 reference(s)" in result["msg"]
    assert result["holders"][0]["pid"] == 4242
    assert result["unloaded"] == [] and result["loaded"] == []


def test_check_mode_only_plans(tmp_path, host, monkeypatch):
    warnings = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, text: warnings.append(text))
    proc = _proc(tmp_path, FULL_STACK, holders=[(7, "nv-hostengine", "/dev/nvidiactl")])
    result = _run({"proc_root": proc, "_ansible_check_mode": True})
    assert host.calls == []
    assert result["changed"] is True
    assert result["msg"] == "would unload nvidia_drm, nvidia_modeset, nvidia_uvm, nvidia and load back nvidia, nvidia_uvm, nvidia_modeset, nvidia_drm"
    assert result["holders"][0]["pid"] == 7
    assert warnings == ["reload would be refused: processes still use the GPU: PID 7 (nv-hostengine: nv-hostengine) holds /dev/nvidiactl"]


def test_failed_unload_puts_back_what_was_removed(tmp_path, monkeypatch):
    state = _patch(monkeypatch, fail={"rmmod nvidia_uvm"})
    result = _run({"proc_root": _proc(tmp_path, FULL_STACK)}, expect=FailJson)
    assert state.calls == [
        "rmmod nvidia_drm",
        "rmmod nvidia_modeset",
        "rmmod nvidia_uvm",
        "modprobe nvidia_modeset",
        "modprobe nvidia_drm",
    ]
    assert "'rmmod nvidia_uvm' failed (rc=1)" in result["msg"]
    assert "loaded back: nvidia_modeset, nvidia_drm" in result["msg"]
    assert result["unloaded"] == ["nvidia_drm", "nvidia_modeset"]


def test_failed_first_unload_changes_nothing(tmp_path, monkeypatch):
    state = _patch(monkeypatch, fail={"rmmod nvidia_drm"})
    result = _run({"proc_root": _proc(tmp_path, FULL_STACK)}, expect=FailJson)
    assert state.calls == ["rmmod nvidia_drm"]
    assert result["changed"] is False
    assert "loaded back: nothing needed" in result["msg"]


def test_failed_load_is_reported_with_a_hint(tmp_path, monkeypatch):
    state = _patch(monkeypatch, fail={"modprobe nvidia"})
    result = _run({"proc_root": _proc(tmp_path, "nvidia 1 0 - Live 0x0\n")}, expect=FailJson)
    assert state.calls == ["rmmod nvidia", "modprobe nvidia"]
    assert "'modprobe nvidia' failed (rc=1)" in result["msg"]
    assert "dmesg" in result["msg"]
    assert result["loaded"] == []


def test_missing_proc_modules(tmp_path, host):
    result = _run({"proc_root": str(tmp_path / "nope")}, expect=FailJson)
    assert "cannot read" in result["msg"]
