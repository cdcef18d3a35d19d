# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the NVreg_RegistryDwords grammar (module_utils/nvidia_registry.py)."""

from __future__ import annotations

import re

import pytest

from ansible_collections.llmserve.sglang.plugins.module_utils import nvidia_registry as nr


# ---------------------------------------------------------------------------------------------
# driver_strtoul: the kernel's simple_strtoul(value, NULL, 0) cut to 32 bits
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, expected",
    [
        ("0", 0),
        ("1", 1),
        ("4294967295", 4294967295),
        ("4294967296", 0),  # truncated to 32 bits
        ("4294967297", 1),
        ("99999999999999999999", 99999999999999999999 % 2 ** 64 % 2 ** 32),  # wraps at 64 bits first
        ("010", 8),  # leading zero: octal
        ("0777", 511),
        ("08", 0),  # octal stops at the 8
        ("09", 0),
        ("0x1F", 31),
        ("0X1f", 31),
        ("0xffffffff", 4294967295),
        ("0x", 0),  # no hex digit after 0x: octal 0, stops at x
        ("0xg", 0),
        ("12abc", 12),  # stops at the first non-digit
        ("1e3", 1),
        ("abc", 0),
        ("-1", 0),  # no sign handling
        ("+1", 0),
        ('"1"', 0),  # literal quote is not a digit
        ("", 0),
        ("\u0661", 0),  # a non-ASCII digit is not a digit to the kernel
    ],
)
def test_driver_strtoul(text, expected):
    assert nr.driver_strtoul(text) == expected


# ---------------------------------------------------------------------------------------------
# parse_registry_dwords
# ---------------------------------------------------------------------------------------------

def test_parse_simple():
    assert nr.parse_registry_dwords("DmaRemapPeerMmio=1;RMPcieP2PType=2") == {"DmaRemapPeerMmio": 1, "RMPcieP2PType": 2}


@pytest.mark.parametrize("text", [None, "", '""', "   ", ";;;", '" "'])
def test_parse_empty(text):
    assert nr.parse_registry_dwords(text) == {}


def test_parse_removes_every_whitespace_like_the_driver():
    assert nr.parse_registry_dwords(" A = 1 ;\tB=\n2 ;C\v=\f3\r") == {"A": 1, "B": 2, "C": 3}
    # whitespace inside a name joins it, as in the driver
    assert nr.parse_registry_dwords("Dma Remap=1") == {"DmaRemap": 1}


def test_parse_accepts_one_pair_of_surrounding_double_quotes():
    assert nr.parse_registry_dwords('"DmaRemapPeerMmio=0"') == {"DmaRemapPeerMmio": 0}
    assert nr.parse_registry_dwords('  "A=1; B=2"  ') == {"A": 1, "B": 2}
    # an opening quote without a closing one is removed too (the kernel does the same)
    assert nr.parse_registry_dwords('"A=1') == {"A": 1}


def test_parse_keeps_other_quotes_as_characters():
    # the kernel only strips double quotes around the value; single quotes reach the driver
    assert nr.parse_registry_dwords("'A=1'") == {"'A": 1}
    # an inner double quote stays in the value, which then reads as 0
    assert nr.parse_registry_dwords('A="5";B=6') == {"A": 0, "B": 6}


@pytest.mark.parametrize(
    "text",
    [
        "A",  # no '='
        "A=",  # empty value
        "=1",  # empty key
        "A=1=2",  # two '='
        "A=1=",  # two '=' with an empty tail
        "NVreg_RegistryDwords=A=1",  # the option name in front: the driver drops the piece
    ],
)
def test_parse_drops_what_the_driver_skips(text):
    assert nr.parse_registry_dwords(text) == {}


def test_parse_skipped_piece_does_not_hide_the_rest():
    assert nr.parse_registry_dwords("A=1=2;B=3;;C;D=4") == {"B": 3, "D": 4}


def test_parse_values_as_the_driver_reads_them():
    parsed = nr.parse_registry_dwords("A=010;B=0x10;C=16;D=08;E=4294967296;F=7junk")
    assert parsed == {"A": 8, "B": 16, "C": 16, "D": 0, "E": 0, "F": 7}


def test_parse_last_duplicate_wins_and_keys_are_case_sensitive():
    assert nr.parse_registry_dwords("A=1;a=2;A=3") == {"A": 3, "a": 2}


def test_parse_accepts_bytes():
    assert nr.parse_registry_dwords(b"A=1;B=2") == {"A": 1, "B": 2}


def test_parse_rejects_non_text():
    with pytest.raises(TypeError):
        nr.parse_registry_dwords(12)


def test_inspect_explains_surprises():
    values, notes = nr.inspect_registry_dwords("A=010; B=1=2;C;A=2;D=99999999999;E=0x1f;F=")
    assert values == {"A": 2, "D": 99999999999 & 0xFFFFFFFF, "E": 31}
    joined = "\n".join(notes)
    assert "A=010 is read by the driver as 8" in joined
    assert "'B=1=2' holds more than one '='" in joined
    assert "'C' has no '='" in joined
    assert "A is given more than once; the last value (2) wins" in joined
    assert "D=99999999999 does not fit in 32 bits" in joined
    assert "E=0x1f is read by the driver as 31" in joined
    assert "'F=' has an empty key or value" in joined
    assert "whitespace inside the string" in joined


def test_inspect_has_no_notes_for_a_clean_string():
    assert nr.inspect_registry_dwords("A=1;B=0;C=4294967295") == ({"A": 1, "B": 0, "C": 4294967295}, [])


# ---------------------------------------------------------------------------------------------
# render_registry_dwords and the round trip
# ---------------------------------------------------------------------------------------------

def test_render_sorts_keys_and_writes_decimal():
    assert nr.render_registry_dwords({"RMPcieP2PType": 2, "DmaRemapPeerMmio": 1}) == "DmaRemapPeerMmio=1;RMPcieP2PType=2"
    assert nr.render_registry_dwords({"b": 1, "B": 2, "a": "3"}) == "B=2;a=3;b=1"
    assert nr.render_registry_dwords({"X": 0xFFFFFFFF}) == "X=4294967295"


@pytest.mark.parametrize("mapping", [{}, None])
def test_render_empty(mapping):
    assert nr.render_registry_dwords(mapping) == ""


@pytest.mark.parametrize(
    "mapping",
    [
        {"DmaRemapPeerMmio": 1},
        {"DmaRemapPeerMmio": 0, "RMForceStaticBar1": 1, "PeerMappingOverride": 1, "RMPcieP2PType": 2},
        {"A": 0, "B": 4294967295, "C": 8, "D": 10, "E": "123"},
    ],
)
def test_render_parse_round_trip(mapping):
    rendered = nr.render_registry_dwords(mapping)
    assert nr.parse_registry_dwords(rendered) == {k: int(v) for k, v in mapping.items()}
    # and the driver would find nothing surprising in it
    assert nr.inspect_registry_dwords(rendered)[1] == []
    # rendering again gives the same bytes (stable output)
    assert nr.render_registry_dwords(nr.parse_registry_dwords(rendered)) == rendered


def test_render_refuses_invalid_input_with_every_error():
    with pytest.raises(ValueError) as err:
        nr.render_registry_dwords({"A;B": 1, "C": "010"})
    text = str(err.value)
    assert "'A;B'" in text and "';'" in text
    assert "'010'" in text and "octal" in text


# ---------------------------------------------------------------------------------------------
# validate_registry_dwords
# ---------------------------------------------------------------------------------------------

VAR = "nvidia_driver_registry_dwords"


def test_validate_accepts_good_input():
    assert nr.validate_registry_dwords({"DmaRemapPeerMmio": 1, "RMPcieP2PType": "2", "X": 0, "Y": 4294967295}, VAR) == []
    assert nr.validate_registry_dwords({}, VAR) == []
    assert nr.validate_registry_dwords(None, VAR) == []


@pytest.mark.parametrize(
    "key, what",
    [
        ("A=B", "'='"),
        ("A;B", "';'"),
        ('A"B', "a double quote"),
        ("A'B", "a single quote"),
        ("A B", "whitespace"),
        ("A\tB", "whitespace"),
        ("A\u00e9", "non-printable or non-ASCII"),
        ("A\x01", "non-printable or non-ASCII"),
    ],
)
def test_validate_rejects_bad_key_characters(key, what):
    errors = nr.validate_registry_dwords({key: 1}, VAR)
    assert len(errors) == 1
    assert errors[0].startswith(VAR + ": key %r" % key)
    assert what in errors[0]
    assert "use the bare key name" in errors[0]


def test_validate_rejects_empty_and_non_string_keys():
    errors = nr.validate_registry_dwords({"": 1, 5: 1}, VAR)
    assert len(errors) == 2
    assert any("empty key" in e for e in errors)
    assert any("key 5 has type int" in e for e in errors)


def test_validate_rejects_the_nvreg_prefix_in_a_registry_key():
    errors = nr.validate_registry_dwords({"NVreg_DmaRemapPeerMmio": 1}, VAR)
    assert len(errors) == 1
    assert "without that prefix" in errors[0]
    assert "'DmaRemapPeerMmio'" in errors[0]
    assert "nvidia_driver_module_params" in errors[0]


@pytest.mark.parametrize(
    "value, fragment",
    [
        ("010", "starts with 0: the driver reads such a number as octal"),
        ("010", "would load as 8"),
        ("00", "would load as 0"),
        ("0x1F", "would load as 31"),
        (-1, "is negative"),
        ("-1", "is negative"),
        ("+1", "has a sign"),
        (4294967296, "does not fit in 32 bits"),
        ("4294967296", "the driver would keep only 0"),
        (True, "is a boolean"),
        (False, "write 0"),
        (1.0, "is a float"),
        ("1.5", "is not a decimal integer"),
        ("one", "is not a decimal integer"),
        ("", "is an empty string"),
        ("1;B=2", "contains '=' and ';'"),
        ("1=2", "contains '='"),
        ('"1"', "contains a double quote"),
        (" 1", "contains whitespace"),
        (None, "has type NoneType"),
        ([1], "has type list"),
    ],
)
def test_validate_rejects_bad_values(value, fragment):
    errors = nr.validate_registry_dwords({"DmaRemapPeerMmio": value}, VAR)
    assert len(errors) == 1, errors
    assert errors[0].startswith("%s: value %r for key 'DmaRemapPeerMmio'" % (VAR, value))
    assert fragment in errors[0]


class _AnsibleLazyList(list):
    """Stands in for ansible-core's lazy and tagged containers (subclasses of the builtin types)."""


class _AnsibleTaggedDict(dict):
    pass


def test_ansible_container_classes_are_named_by_their_builtin_type():
    # the same message from a Jinja filter (lazy containers), an action (tagged ones) and plain Python
    assert "has type list; write a whole number" in nr.validate_registry_dwords(
        {"DmaRemapPeerMmio": _AnsibleLazyList([1])}, VAR)[0]
    assert nr.validate_registry_dwords(_AnsibleLazyList([1]), VAR) == nr.validate_registry_dwords([1], VAR)
    assert nr.validate_registry_dwords(_AnsibleLazyList([1]), VAR)[0].endswith("got list")
    assert nr.validate_module_params({"NVreg_X": _AnsibleTaggedDict()}, "p") == nr.validate_module_params(
        {"NVreg_X": {}}, "p")


@pytest.mark.parametrize("value", [0, 1, "0", "7", 4294967295, "4294967295"])
def test_validate_accepts_edge_values(value):
    assert nr.validate_registry_dwords({"K": value}, VAR) == []


def test_validate_rejects_a_non_mapping():
    errors = nr.validate_registry_dwords(["DmaRemapPeerMmio=1"], VAR)
    assert errors == [
        "%s must be a mapping of registry key to integer (for example {DmaRemapPeerMmio: 1}), got list" % VAR
    ]


def test_validate_reports_every_problem():
    errors = nr.validate_registry_dwords({"A B": 1, "C": "010", "D": -4, "E": 1}, VAR)
    assert len(errors) == 3


# ---------------------------------------------------------------------------------------------
# validate_module_params
# ---------------------------------------------------------------------------------------------

PVAR = "nvidia_driver_module_params"


def test_params_accept_good_input():
    assert nr.validate_module_params({"NVreg_EnableStreamMemOPs": 1, "NVreg_DmaRemapPeerMmio": "0"}, PVAR) == []
    assert nr.validate_module_params({"NVreg_X": 2147483647}, PVAR) == []
    assert nr.validate_module_params(None, PVAR) == []


@pytest.mark.parametrize(
    "name, suggestion",
    [
        ("DmaRemapPeerMmio", "NVreg_DmaRemapPeerMmio"),
        ("nvreg_DmaRemapPeerMmio", "NVreg_DmaRemapPeerMmio"),
        ("nvidia.NVreg_DmaRemapPeerMmio", "NVreg_DmaRemapPeerMmio"),
        ("NVreg_", "NVreg_Name"),
    ],
)
def test_params_need_the_nvreg_prefix(name, suggestion):
    errors = nr.validate_module_params({name: 1}, PVAR)
    assert len(errors) == 1
    assert errors[0].startswith("%s: option name %r does not start with NVreg_" % (PVAR, name))
    assert "write %r" % suggestion in errors[0]


def test_params_reject_bad_name_characters():
    errors = nr.validate_module_params({"NVreg_A=B": 1, "NVreg_A B": 1}, PVAR)
    assert len(errors) == 2
    assert all("option name" in e for e in errors)


def test_params_reject_the_registry_dwords_option_itself():
    errors = nr.validate_module_params({"NVreg_RegistryDwords": "DmaRemapPeerMmio=1"}, PVAR)
    assert len(errors) == 1
    assert "nvidia_driver_registry_dwords" in errors[0]


def test_params_reject_string_options():
    errors = nr.validate_module_params({"NVreg_ExcludedGpus": "GPU-1"}, PVAR)
    assert len(errors) == 1
    assert "takes a string" in errors[0]


def test_params_limit_is_signed_int():
    errors = nr.validate_module_params({"NVreg_ResmanDebugLevel": 4294967295}, PVAR)
    assert len(errors) == 1
    assert "above 2147483647" in errors[0]
    assert "refuses to load nvidia" in errors[0]
    assert "NVreg_RegistryDwords" in errors[0]


def test_params_reject_octal_strings_too():
    errors = nr.validate_module_params({"NVreg_DeviceFileMode": "0666"}, PVAR)
    assert len(errors) == 1
    assert "would load as 438" in errors[0]


def test_params_conflicting_with_a_registry_dword():
    errors = nr.validate_module_params(
        {"NVreg_DmaRemapPeerMmio": 1, "NVreg_EnableStreamMemOPs": 1},
        PVAR,
        registry={"DmaRemapPeerMmio": 0},
    )
    assert len(errors) == 1
    assert errors[0].startswith(PVAR + ": NVreg_DmaRemapPeerMmio is also set as 'DmaRemapPeerMmio' in nvidia_driver_registry_dwords")
    assert "silently win" in errors[0]
    assert "keep only one" in errors[0]


def test_params_conflict_uses_the_driver_table_name():
    # NVreg_RestrictProfilingToAdminUsers is RmProfilingAdminOnly inside the driver
    errors = nr.validate_module_params(
        {"NVreg_RestrictProfilingToAdminUsers": 0}, PVAR, registry={"RmProfilingAdminOnly": 1}
    )
    assert len(errors) == 1
    assert "'RmProfilingAdminOnly'" in errors[0]
    assert nr.validate_module_params({"NVreg_RestrictProfilingToAdminUsers": 0}, PVAR, registry={"Other": 1}) == []


def test_params_reject_a_non_mapping():
    assert "must be a mapping" in nr.validate_module_params("NVreg_X=1", PVAR)[0]


def test_registry_key_for_param():
    assert nr.registry_key_for_param("NVreg_DmaRemapPeerMmio") == "DmaRemapPeerMmio"
    assert nr.registry_key_for_param("NVreg_RestrictProfilingToAdminUsers") == "RmProfilingAdminOnly"
    assert nr.registry_key_for_param("EnableMSI") == "EnableMSI"


# ---------------------------------------------------------------------------------------------
# render_modprobe_options
# ---------------------------------------------------------------------------------------------

def test_options_line():
    line = nr.render_modprobe_options(
        {"RMPcieP2PType": 2, "DmaRemapPeerMmio": 1}, {"NVreg_EnableStreamMemOPs": 1, "NVreg_EnableResizableBar": "1"}
    )
    assert line == (
        'options nvidia NVreg_EnableResizableBar=1 NVreg_EnableStreamMemOPs=1 '
        'NVreg_RegistryDwords="DmaRemapPeerMmio=1;RMPcieP2PType=2"'
    )


def test_options_line_variants():
    assert nr.render_modprobe_options({}, {}) == ""
    assert nr.render_modprobe_options(None, None) == ""
    assert nr.render_modprobe_options({"A": 1}, {}) == 'options nvidia NVreg_RegistryDwords="A=1"'
    assert nr.render_modprobe_options({}, {"NVreg_A": 1}) == "options nvidia NVreg_A=1"


def test_options_line_refuses_conflicts():
    with pytest.raises(ValueError) as err:
        nr.render_modprobe_options({"DmaRemapPeerMmio": 1}, {"NVreg_DmaRemapPeerMmio": 1})
    assert "silently win" in str(err.value)


def test_options_line_round_trips_through_the_kernel_splitter():
    from ansible_collections.llmserve.sglang.plugins.module_utils.nvidia_modules import parse_modprobe_config

    line = nr.render_modprobe_options({"B": 2, "A": 1}, {"NVreg_X": 3})
    found = {(i["param"], i["value"]) for i in parse_modprobe_config(line)}
    assert found == {("NVreg_X", "3"), ("NVreg_RegistryDwords", "A=1;B=2")}


# ---------------------------------------------------------------------------------------------
# compare_with_loaded / compare_with_driver_facts: verification by effective value
# ---------------------------------------------------------------------------------------------

DEFAULTS = {"DmaRemapPeerMmio": 1, "EnableStreamMemOPs": 0, "RmProfilingAdminOnly": 1, "RegistryDwords": ""}

# /proc/driver/nvidia/params of a real H200 host, open kernel module 580.159.04, no options set
# (verbatim from /work/shared/reference/real-gpu-hosts.md).
H200_580_PARAMS = """\
ResmanDebugLevel: 4294967295
RmLogonRC: 1
ModifyDeviceFiles: 1
DeviceFileUID: 0
DeviceFileGID: 0
DeviceFileMode: 438
InitializeSystemMemoryAllocations: 1
UsePageAttributeTable: 4294967295
EnableMSI: 1
EnablePCIeGen3: 0
MemoryPoolSize: 0
KMallocHeapMaxSize: 0
VMallocHeapMaxSize: 0
IgnoreMMIOCheck: 0
EnableStreamMemOPs: 0
EnableUserNUMAManagement: 1
NvLinkDisable: 1
RmProfilingAdminOnly: 0
PreserveVideoMemoryAllocations: 0
EnableS0ixPowerManagement: 0
S0ixPowerManagementVideoMemoryThreshold: 256
DynamicPowerManagement: 3
DynamicPowerManagementVideoMemoryThreshold: 200
RegisterPCIDriver: 1
EnablePCIERelaxedOrderingMode: 0
EnableResizableBar: 0
EnableGpuFirmware: 18
EnableGpuFirmwareLogs: 2
RmNvlinkBandwidthLinkCount: 0
EnableDbgBreakpoint: 0
OpenRmEnableUnsupportedGpus: 1
DmaRemapPeerMmio: 1
ImexChannelCount: 2048
CreateImexChannel0: 0
GrdmaPciTopoCheckOverride: 0
CoherentGPUMemoryMode: ""
RegistryDwords: ""
RegistryDwordsPerDevice: ""
RmMsg: ""
GpuBlacklist: ""
TemporaryFilePath: ""
ExcludedGpus: ""
"""


def _driver_facts(params_text, version="580.159.04"):
    """The nvidia_driver facts gpu_host_facts builds from a params file (same parsers)."""
    from ansible_collections.llmserve.sglang.plugins.module_utils.gpu_sysfs import parse_nvidia_params

    params = parse_nvidia_params(params_text)
    values, notes = nr.inspect_registry_dwords(params.get("RegistryDwords") or "")
    return {"loaded": True, "version": version, "params": params, "registry_dwords": values,
            "registry_dwords_notes": notes}


def _h200(registry_dwords=None, **live):
    """The H200 params, optionally loaded with a RegistryDwords string and other live values."""
    text = H200_580_PARAMS
    for key, value in live.items():
        text = re.sub(r"^%s: \d+$" % key, "%s: %d" % (key, value), text, count=1, flags=re.M)
    if registry_dwords is not None:
        text = text.replace('\nRegistryDwords: ""', '\nRegistryDwords: "%s"' % registry_dwords, 1)
    return _driver_facts(text)


def test_h200_fixture_helper_changes_only_what_it_is_told():
    assert _h200()["params"]["DmaRemapPeerMmio"] == 1
    assert _h200()["params"]["RegistryDwords"] == ""
    changed = _h200("DmaRemapPeerMmio=0", DmaRemapPeerMmio=0)
    assert changed["params"]["DmaRemapPeerMmio"] == 0
    assert changed["registry_dwords"] == {"DmaRemapPeerMmio": 0}
    assert len(changed["params"]) == len(_h200()["params"]) == 42


def test_h200_driver_default_is_in_effect_without_a_reboot():
    # The issue: the driver runs DmaRemapPeerMmio 1 by default and RegistryDwords is empty.
    result = nr.compare_with_driver_facts(_h200(), {"DmaRemapPeerMmio": 1}, {})
    assert result["pending"] == []
    assert result["reboot_required"] is False
    assert result["states"] == {"DmaRemapPeerMmio": "in effect (driver default)"}
    assert result["loaded_values"] == {"DmaRemapPeerMmio": 1}
    assert result["status"] == "driver 580.159.04 loaded with the wanted options; DmaRemapPeerMmio: in effect (driver default)"


def test_h200_different_value_is_pending_and_needs_a_reboot():
    result = nr.compare_with_driver_facts(_h200(), {"DmaRemapPeerMmio": 0}, {})
    assert result["status"] == (
        "driver 580.159.04 loaded with options that differ from the wanted ones; "
        "DmaRemapPeerMmio: pending: loaded 1, wanted 0"
    )
    assert result["pending"] == ["DmaRemapPeerMmio"]
    assert result["reboot_required"] is True
    assert result["states"] == {"DmaRemapPeerMmio": "pending: loaded 1, wanted 0"}


def test_h200_after_loading_the_file_the_key_is_in_effect():
    # what the H200 shows once it booted with the role's file
    result = nr.compare_with_driver_facts(_h200("DmaRemapPeerMmio=0", DmaRemapPeerMmio=0), {"DmaRemapPeerMmio": 0}, {})
    assert result["pending"] == [] and result["reboot_required"] is False
    assert result["states"] == {"DmaRemapPeerMmio": "in effect"}


def test_live_value_beats_the_registry_string_for_printed_keys():
    # RegistryDwords names the key but the printed live value is another one: the live value decides
    driver = _h200("DmaRemapPeerMmio=0")
    result = nr.compare_with_driver_facts(driver, {"DmaRemapPeerMmio": 0}, {})
    assert result["states"] == {"DmaRemapPeerMmio": "pending: loaded 1, wanted 0"}
    assert result["loaded_values"] == {"DmaRemapPeerMmio": 1}


def test_key_the_driver_does_not_print_is_decided_by_the_registry_string():
    want = {"RMForceStaticBar1": 1}
    assert "RMForceStaticBar1" not in _h200()["params"]
    result = nr.compare_with_driver_facts(_h200("RMForceStaticBar1=1"), want, {})
    assert result["pending"] == [] and result["states"] == {"RMForceStaticBar1": "in effect"}
    result = nr.compare_with_driver_facts(_h200("RMForceStaticBar1=2"), want, {})
    assert result["pending"] == ["RMForceStaticBar1"]
    assert result["states"] == {"RMForceStaticBar1": "pending: loaded 2, wanted 1"}
    assert result["reboot_required"] is True
    result = nr.compare_with_driver_facts(_h200(), want, {})
    assert result["pending"] == ["RMForceStaticBar1"]
    assert result["states"] == {"RMForceStaticBar1": "pending: not set in the loaded RegistryDwords, wanted 1"}
    assert result["loaded_values"] == {"RMForceStaticBar1": None}


def test_registry_string_read_with_the_driver_grammar():
    # octal in the loaded string: 010 is 8 to the driver
    result = nr.compare_with_driver_facts(_h200("RMPcieP2PType=010"), {"RMPcieP2PType": 8}, {})
    assert result["states"] == {"RMPcieP2PType": "in effect"}


def test_stale_registry_key_is_pending_removal():
    driver = _h200("DmaRemapPeerMmio=1;RMForceStaticBar1=1")
    result = nr.compare_with_driver_facts(driver, {"DmaRemapPeerMmio": 1}, {})
    assert result["pending"] == ["RMForceStaticBar1"]
    assert result["reboot_required"] is True
    assert result["states"]["DmaRemapPeerMmio"] == "in effect"
    assert result["states"]["RMForceStaticBar1"].startswith(
        "pending removal: the loaded RegistryDwords sets RMForceStaticBar1=1, which is no longer wanted"
    )
    assert result["loaded_values"]["RMForceStaticBar1"] == 1
    assert "RMForceStaticBar1: pending removal" in result["status"]


def test_stale_printed_key_is_pending_removal_too():
    # nothing wanted any more, the driver was loaded with DmaRemapPeerMmio=0
    result = nr.compare_with_driver_facts(_h200("DmaRemapPeerMmio=0", DmaRemapPeerMmio=0), {}, {})
    assert result["pending"] == ["DmaRemapPeerMmio"]
    assert result["states"]["DmaRemapPeerMmio"].startswith("pending removal:")


def test_key_names_are_case_sensitive_like_the_driver():
    result = nr.compare_with_driver_facts(_h200(), {"dmaRemapPeerMmio": 0}, {})
    assert result["pending"] == ["dmaRemapPeerMmio"]
    assert result["states"]["dmaRemapPeerMmio"] == (
        "pending: not set in the loaded RegistryDwords, wanted 0 (the driver matches key names "
        "case-sensitively, so dmaRemapPeerMmio is not its option DmaRemapPeerMmio)"
    )
    # a lower-case key in the loaded string did not touch the static option: still 1
    result = nr.compare_with_driver_facts(_h200("dmaremappeermmio=0"), {"DmaRemapPeerMmio": 0}, {})
    assert result["pending"] == ["DmaRemapPeerMmio", "dmaremappeermmio"]
    assert result["states"]["DmaRemapPeerMmio"] == "pending: loaded 1, wanted 0"
    assert result["states"]["dmaremappeermmio"].startswith("pending removal:")


def test_module_params_are_verified_by_their_printed_value():
    params = {
        "NVreg_DmaRemapPeerMmio": 1,
        "NVreg_EnableStreamMemOPs": 1,
        "NVreg_RestrictProfilingToAdminUsers": 0,  # printed as RmProfilingAdminOnly
    }
    result = nr.compare_with_driver_facts(_h200(), {}, params)
    assert result["pending"] == ["NVreg_EnableStreamMemOPs"]
    assert result["states"] == {
        "NVreg_DmaRemapPeerMmio": "in effect",
        "NVreg_EnableStreamMemOPs": "pending: loaded 0, wanted 1",
        "NVreg_RestrictProfilingToAdminUsers": "in effect",
    }


def test_unverifiable_option_is_reported_but_not_pending():
    result = nr.compare_with_driver_facts(_h200(), {"DmaRemapPeerMmio": 1}, {"NVreg_GpuInitOnProbe": 1})
    assert result["pending"] == [] and result["reboot_required"] is False
    assert result["unverifiable"] == ["NVreg_GpuInitOnProbe"]
    assert result["states"]["NVreg_GpuInitOnProbe"] == "unverifiable: the driver does not print GpuInitOnProbe"
    assert result["status"].startswith("driver 580.159.04 loaded; nothing pending, but it does not print every wanted option; ")


def test_standalone_option_takes_over_a_key_from_the_loaded_registry_string():
    # moved from RegistryDwords to NVreg_DmaRemapPeerMmio with the same value: nothing to reload
    driver = _h200("DmaRemapPeerMmio=0", DmaRemapPeerMmio=0)
    result = nr.compare_with_driver_facts(driver, {}, {"NVreg_DmaRemapPeerMmio": 0})
    assert result["pending"] == []
    assert result["states"] == {"NVreg_DmaRemapPeerMmio": "in effect (the loaded driver has it from RegistryDwords)"}
    result = nr.compare_with_driver_facts(driver, {}, {"NVreg_DmaRemapPeerMmio": 1})
    assert result["pending"] == ["NVreg_DmaRemapPeerMmio"]
    assert result["states"] == {"NVreg_DmaRemapPeerMmio": "pending: loaded 0, wanted 1"}


def test_stale_key_named_like_a_wanted_option_is_kept_apart():
    driver = _h200("NVreg_EnableStreamMemOPs=1")
    result = nr.compare_with_driver_facts(driver, {}, {"NVreg_EnableStreamMemOPs": 0})
    assert result["states"]["NVreg_EnableStreamMemOPs"] == "in effect"
    assert result["states"]["RegistryDwords[NVreg_EnableStreamMemOPs]"].startswith("pending removal:")
    assert result["pending"] == ["RegistryDwords[NVreg_EnableStreamMemOPs]"]


def test_compare_all_applied():
    loaded = dict(DEFAULTS, EnableStreamMemOPs=1, RegistryDwords="DmaRemapPeerMmio=1;RMPcieP2PType=2")
    result = nr.compare_with_loaded({"DmaRemapPeerMmio": 1, "RMPcieP2PType": 2}, {"NVreg_EnableStreamMemOPs": 1}, loaded)
    assert result["pending"] == []
    assert result["unverifiable"] == []
    assert result["loaded"] == {"DmaRemapPeerMmio": 1, "RMPcieP2PType": 2, "NVreg_EnableStreamMemOPs": 1}
    assert set(result["states"].values()) == {"in effect"}


def test_compare_static_value_differs():
    loaded = dict(DEFAULTS, DmaRemapPeerMmio=0, RegistryDwords="DmaRemapPeerMmio=1")
    result = nr.compare_with_loaded({"DmaRemapPeerMmio": 1}, {}, loaded)
    assert result["pending"] == ["DmaRemapPeerMmio"]
    assert result["loaded"]["DmaRemapPeerMmio"] == 0


def test_compare_standalone_param_differs_and_numbers_as_strings():
    result = nr.compare_with_loaded({}, {"NVreg_EnableStreamMemOPs": 1}, dict(DEFAULTS, EnableStreamMemOPs="0"))
    assert result["pending"] == ["NVreg_EnableStreamMemOPs"]
    result = nr.compare_with_loaded({}, {"NVreg_EnableStreamMemOPs": "1"}, dict(DEFAULTS, EnableStreamMemOPs="1"))
    assert result["pending"] == []


def test_compare_alias_and_unverifiable():
    result = nr.compare_with_loaded(
        {}, {"NVreg_RestrictProfilingToAdminUsers": 0, "NVreg_GpuInitOnProbe": 1}, DEFAULTS
    )
    assert result["pending"] == ["NVreg_RestrictProfilingToAdminUsers"]
    assert result["unverifiable"] == ["NVreg_GpuInitOnProbe"]


def test_compare_explicit_loaded_registry():
    assert nr.compare_with_loaded({}, {}, DEFAULTS, {"Old": 1})["pending"] == ["Old"]


def test_printed_string_value_does_not_count_as_live_number():
    # a wanted key that the driver prints as a string option: only the registry string can tell
    result = nr.compare_with_loaded({"RmMsg": 1}, {}, dict(DEFAULTS, RmMsg=""))
    assert result["states"] == {"RmMsg": "pending: not set in the loaded RegistryDwords, wanted 1"}
    result = nr.compare_with_loaded({"RmMsg": 1}, {}, dict(DEFAULTS, RmMsg="", RegistryDwords="RmMsg=1"))
    assert result["states"] == {"RmMsg": "in effect"}


@pytest.mark.parametrize(
    "registry, params, message",
    [
        ({"DmaRemapPeerMmio": "010"}, {}, "octal"),
        ({"DmaRemapPeerMmio": True}, {}, "boolean"),
        ({"DmaRemapPeerMmio": 1}, {"NVreg_DmaRemapPeerMmio": 1}, "silently win"),
        ({}, {"EnableStreamMemOPs": 1}, "does not start with NVreg_"),
        ("DmaRemapPeerMmio=1", {}, "must be a mapping"),
    ],
)
def test_compare_refuses_invalid_wanted_options(registry, params, message):
    for driver in (_h200(), None):
        with pytest.raises(ValueError, match=message):
            nr.compare_with_driver_facts(driver, registry, params)


def test_compare_survives_hostile_loaded_values():
    params = dict(DEFAULTS, DmaRemapPeerMmio="junk\x00", EnableStreamMemOPs=True,
                  RegistryDwords="A\x1b[31m=1;\nB=2;" + "K=1;" * 10000 + "C=1=2;=3;D=")
    result = nr.compare_with_loaded({"DmaRemapPeerMmio": 1, "B": 2}, {"NVreg_EnableStreamMemOPs": 1}, params)
    # unreadable live values are not numbers: DmaRemapPeerMmio falls back to the registry string
    assert result["states"]["DmaRemapPeerMmio"] == "pending: not set in the loaded RegistryDwords, wanted 1"
    assert result["states"]["NVreg_EnableStreamMemOPs"].startswith("unverifiable")
    assert result["states"]["B"] == "in effect"  # whitespace is removed by the driver
    assert sorted(k for k in result["pending"] if k not in ("DmaRemapPeerMmio",)) == ["A\x1b[31m", "K"]


def test_compare_with_driver_facts_not_loaded():
    for driver in (None, {}, {"loaded": False, "version": None, "params": {}}):
        result = nr.compare_with_driver_facts(driver, {"DmaRemapPeerMmio": 1}, {"NVreg_EnableStreamMemOPs": 1})
        assert result["loaded"] is False
        assert result["pending"] == [] and result["reboot_required"] is False
        assert result["states"] == {}
        assert result["status"].startswith("driver not loaded")


def test_compare_with_driver_facts_nothing_wanted_nothing_set():
    result = nr.compare_with_driver_facts(_h200(), {}, {})
    assert result["pending"] == [] and result["states"] == {}
    assert result["status"] == "driver 580.159.04 loaded with the wanted options"
    result = nr.compare_with_driver_facts(dict(_h200(), version=None), {}, {})
    assert result["status"] == "driver (unknown version) loaded with the wanted options"
