# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the nvidia filters (thin wrappers over module_utils.nvidia_registry)."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.llmserve.sglang.plugins.filter import nvidia


def test_filters_are_registered():
    assert set(nvidia.FilterModule().filters()) == {
        "nvidia_modprobe_options",
        "nvidia_driver_param_errors",
        "nvidia_driver_compare",
    }


def test_render_and_errors():
    assert nvidia.nvidia_modprobe_options({"B": 2, "A": 1}) == 'options nvidia NVreg_RegistryDwords="A=1;B=2"'
    with pytest.raises(AnsibleFilterError) as err:
        nvidia.nvidia_modprobe_options({"A": "010"})
    assert "octal" in str(err.value)


def test_options_line():
    assert nvidia.nvidia_modprobe_options({"A": 1}, {"NVreg_B": 2}) == 'options nvidia NVreg_B=2 NVreg_RegistryDwords="A=1"'
    assert nvidia.nvidia_modprobe_options(None, None) == ""
    with pytest.raises(AnsibleFilterError):
        nvidia.nvidia_modprobe_options({"A": 1}, {"B": 1})


def test_param_errors_name_both_variables():
    errors = nvidia.nvidia_driver_param_errors({"DmaRemapPeerMmio": "01"}, {"NVreg_DmaRemapPeerMmio": 1, "X": 1})
    assert len(errors) == 3
    assert errors[0].startswith("nvidia_driver_registry_dwords: value '01'")
    assert any(e.startswith("nvidia_driver_module_params: option name 'X'") for e in errors)
    assert any("would silently win" in e for e in errors)
    assert nvidia.nvidia_driver_param_errors({}, None) == []
    custom = nvidia.nvidia_driver_param_errors({"A B": 1}, {}, registry_var="my_dwords")
    assert custom[0].startswith("my_dwords: key 'A B'")


def test_param_errors_on_a_non_mapping():
    errors = nvidia.nvidia_driver_param_errors("DmaRemapPeerMmio=1", {})
    assert errors[0].startswith("nvidia_driver_registry_dwords must be a mapping")


def test_compare():
    driver = {"loaded": True, "version": "595.45.04", "params": {"DmaRemapPeerMmio": 0, "RegistryDwords": ""}}
    result = nvidia.nvidia_driver_compare(driver, {"DmaRemapPeerMmio": 1}, {})
    assert result["pending"] == ["DmaRemapPeerMmio"]
    assert result["states"] == {"DmaRemapPeerMmio": "pending: loaded 0, wanted 1"}
    assert nvidia.nvidia_driver_compare(None, {"DmaRemapPeerMmio": 1})["status"].startswith("driver not loaded")


def test_compare_driver_default_is_not_pending():
    # DmaRemapPeerMmio is 1 by default: an empty RegistryDwords does not make {DmaRemapPeerMmio: 1} pending
    driver = {"loaded": True, "version": "580.159.04", "params": {"DmaRemapPeerMmio": 1, "RegistryDwords": ""},
              "registry_dwords": {}}
    result = nvidia.nvidia_driver_compare(driver, {"DmaRemapPeerMmio": 1}, None)
    assert result["pending"] == [] and result["reboot_required"] is False
    assert result["states"] == {"DmaRemapPeerMmio": "in effect (driver default)"}


def test_compare_refuses_invalid_options():
    with pytest.raises(AnsibleFilterError, match="nvidia_driver_compare: .*octal"):
        nvidia.nvidia_driver_compare(None, {"DmaRemapPeerMmio": "010"}, {})
