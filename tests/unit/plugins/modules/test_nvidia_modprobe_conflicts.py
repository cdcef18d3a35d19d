# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the nvidia_modprobe_conflicts module, run against fixture roots."""

from __future__ import annotations

import os

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.llmserve.sglang.plugins.modules import nvidia_modprobe_conflicts as mod
from ansible_collections.llmserve.sglang.tests.unit.plugins.modules.module_exits import ExitJson, FailJson, patch_exits


@pytest.fixture(autouse=True)
def exits(monkeypatch):
    patch_exits(monkeypatch)


def _write(root, path, text):
    full = os.path.join(str(root), path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as handle:
        handle.write(text)


OWN = "/etc/modprobe.d/90-llmserve-nvidia.conf"


def _run(args):
    with patch_module_args(args):
        with pytest.raises(ExitJson) as exc:
            mod.main()
    return exc.value.args[0]


def test_reports_conflicts_with_file_names(tmp_path):
    _write(tmp_path, OWN, 'options nvidia NVreg_RegistryDwords="DmaRemapPeerMmio=1"\n')
    _write(tmp_path, "/etc/modprobe.d/50-other.conf", 'options nvidia NVreg_RegistryDwords="RMForceStaticBar1=1"\n')
    _write(tmp_path, "/proc/cmdline", "ro quiet\n")
    result = _run({"params": ["NVreg_RegistryDwords"], "own_file": OWN, "root": str(tmp_path)})
    assert result["changed"] is False
    assert [c["source"] for c in result["conflicts"]] == ["/etc/modprobe.d/50-other.conf"]
    assert result["files"] == ["/etc/modprobe.d/50-other.conf", "/proc/cmdline"]
    assert OWN in result["msg"] and "/etc/modprobe.d/50-other.conf" in result["msg"]


def test_clean_host_and_check_mode(tmp_path):
    _write(tmp_path, OWN, 'options nvidia NVreg_RegistryDwords="DmaRemapPeerMmio=1"\n')
    result = _run(
        {"params": ["NVreg_RegistryDwords"], "own_file": OWN, "root": str(tmp_path), "_ansible_check_mode": True}
    )
    assert result["conflicts"] == []
    assert result["changed"] is False
    assert "no other modprobe.d file" in result["msg"]


def test_custom_dirs_and_no_cmdline(tmp_path):
    _write(tmp_path, "/srv/conf.d/a.conf", "options nvidia NVreg_X=1\n")
    _write(tmp_path, "/proc/cmdline", "nvidia.NVreg_X=2\n")
    result = _run(
        {"params": ["NVreg_X"], "root": str(tmp_path), "config_dirs": ["/srv/conf.d"], "cmdline_path": ""}
    )
    assert [(c["source"], c["value"]) for c in result["conflicts"]] == [("/srv/conf.d/a.conf", "1")]
    assert "the managed file" in result["msg"]


def test_params_are_required():
    with patch_module_args({}):
        with pytest.raises(FailJson) as exc:
            mod.main()
    assert "params" in exc.value.args[0]["msg"]


def test_reports_the_own_file_and_its_directory_for_the_plan(tmp_path):
    _write(tmp_path, OWN, 'options nvidia NVreg_RegistryDwords="DmaRemapPeerMmio=1"\n')
    result = _run({"params": ["NVreg_RegistryDwords"], "own_file": OWN, "root": str(tmp_path)})
    assert result["own_file_state"]["type"] == "file" and len(result["own_file_state"]["sha256"]) == 64
    assert result["own_dir_state"]["type"] == "directory" and "sha256" not in result["own_dir_state"]
    os.remove(os.path.join(str(tmp_path), OWN.lstrip("/")))
    result = _run({"params": ["NVreg_RegistryDwords"], "own_file": OWN, "root": str(tmp_path)})
    assert result["own_file_state"] == {"exists": False, "type": None}
