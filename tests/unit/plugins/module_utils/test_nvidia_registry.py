# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the NVreg_RegistryDwords grammar (module_utils/nvidia_registry.py)."""

from __future__ import annotations

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
# compare_with_loaded / compare_with_driver_facts
# ---------------------------------------------------------------------------------------------

DEFAULTS = {"DmaRemapPeerMmio": 1, "EnableStreamMemOPs": 0, "RmProfilingAdminOnly": 1, "RegistryDwords": ""}


def test_compare_all_applied():
    loaded = dict(DEFAULTS, EnableStreamMemOPs=1, RegistryDwords="DmaRemapPeerMmio=1;RMPcieP2PType=2")
    result = nr.compare_with_loaded({"DmaRemapPeerMmio": 1, "RMPcieP2PType": 2}, {"NVreg_EnableStreamMemOPs": 1}, loaded)
    assert result["pending"] == []
    assert result["unverifiable"] == []
    assert result["loaded"] == {"DmaRemapPeerMmio": 1, "RMPcieP2PType": 2, "NVreg_EnableStreamMemOPs": 1}


def test_compare_registry_missing_from_loaded_string():
    # the static value happens to match the default, but the RegistryDwords string lacks the key:
    # the file has not been loaded yet
    result = nr.compare_with_loaded({"DmaRemapPeerMmio": 1}, {}, DEFAULTS)
    assert result["pending"] == ["DmaRemapPeerMmio"]


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


def test_compare_leftover_registry_keys_are_pending():
    loaded = dict(DEFAULTS, RegistryDwords="DmaRemapPeerMmio=1;RMForceStaticBar1=1")
    assert nr.compare_with_loaded({"DmaRemapPeerMmio": 1}, {}, loaded)["pending"] == ["RegistryDwords"]
    # and with an explicit loaded_registry argument
    assert nr.compare_with_loaded({}, {}, DEFAULTS, {"Old": 1})["pending"] == ["RegistryDwords"]


def test_compare_with_driver_facts_not_loaded():
    for driver in (None, {}, {"loaded": False, "version": None, "params": {}}):
        result = nr.compare_with_driver_facts(driver, {"DmaRemapPeerMmio": 1}, {"NVreg_EnableStreamMemOPs": 1})
        assert result["loaded"] is False
        assert result["pending"] == []
        assert result["status"].startswith("driver not loaded")


def test_compare_with_driver_facts_loaded():
    driver = {
        "loaded": True,
        "version": "595.45.04",
        "params": dict(DEFAULTS, DmaRemapPeerMmio=0, RegistryDwords="DmaRemapPeerMmio=0"),
        "registry_dwords": {"DmaRemapPeerMmio": 0},
    }
    result = nr.compare_with_driver_facts(driver, {"DmaRemapPeerMmio": 1}, {})
    assert result["loaded"] is True
    assert result["pending"] == ["DmaRemapPeerMmio"]
    assert result["status"] == "driver 595.45.04 loaded; differs from the wanted options for: DmaRemapPeerMmio"
    result = nr.compare_with_driver_facts(driver, {"DmaRemapPeerMmio": 0}, {})
    assert result["pending"] == []
    assert result["status"] == "driver 595.45.04 loaded with the wanted options"
