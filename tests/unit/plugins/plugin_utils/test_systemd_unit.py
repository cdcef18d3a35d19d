# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import pytest

from ansible_collections.llmserve.sglang.plugins.plugin_utils import systemd_unit
from ansible_collections.llmserve.sglang.plugins.module_utils.gpu_sysfs import parse_proc_devices
from ansible_collections.llmserve.sglang.plugins.plugin_utils.systemd_unit import (
    UnitValueError,
    control_problem,
    device_allow_problems,
    unit_value,
)
from ansible_collections.llmserve.sglang.tests.unit.plugins.module_utils.source_imports import top_level_imports
from ansible_collections.llmserve.sglang.tests.unit.roles.sglang_server import systemd_syntax as sd

HOSTILE = ["plain", "pa$word", "$HOME", "${HOME}", "$$", "100%", "%n%%", "a\"b", "a'b", "back\\slash", "\\\"", ";",
           "two words", "-x", "--flag", "ünïcödé", "x=y=z", "`id`", "\\x41", "#not-a-comment"]


@pytest.mark.parametrize("char, name", [("\0", "NUL"), ("\t", "TAB"), ("\n", "LF"), ("\r", "CR"), ("\x1b", "ESC"),
                                        ("\x1f", "US"), ("\x7f", "DEL"), ("\x80", "U+0080"), ("\x85", "NEL"),
                                        ("\x9f", "U+009F"), ("\u2028", "LINE SEPARATOR"),
                                        ("\u2029", "PARAGRAPH SEPARATOR")])
def test_control_characters_are_named_with_their_offset(char, name):
    assert control_problem("ab" + char + "c") == "contains a control character (%s at offset 2)" % name
    assert control_problem("ab" + char, secret=True).endswith("; value not shown)")


@pytest.mark.parametrize("text", ["plain", " spaced ", "\u00a0nbsp", "ünïcödé", "\u200bzero-width", ""])
def test_printable_text_has_no_control_problem(text):
    assert control_problem(text) is None


@pytest.mark.parametrize("kind", systemd_unit.KINDS)
def test_every_kind_refuses_control_characters(kind):
    value = {"environment": "A=x\0y", "env_file": "A=x\0y", "integer": "3\n"}.get(kind, "/x\0ExecStartPre=+/bin/true")
    with pytest.raises(UnitValueError, match=r"^var: contains a control character \((NUL|LF) at offset"):
        unit_value(value, kind, "var")


@pytest.mark.parametrize("value", HOSTILE)
def test_exec_arguments_read_back_unchanged(value):
    line = " ".join([unit_value("/usr/bin/python3", "executable", "python"), unit_value(value, "argument", "a"),
                     unit_value(value, "argument", "a")])
    assert sd.exec_argv(line) == ["/usr/bin/python3", value, value]


@pytest.mark.parametrize("value", HOSTILE)
def test_environment_values_read_back_unchanged(value):
    assert sd.environment(unit_value("NAME=" + value, "environment", "env.NAME")) == {"NAME": value}


@pytest.mark.parametrize("value", HOSTILE)
def test_env_file_values_read_back_unchanged(value):
    assert sd.env_file(unit_value("HF_TOKEN=" + value, "env_file", "hf_token") + "\n") == {"HF_TOKEN": value}


def test_dollar_is_doubled_only_where_systemd_expands_it():
    assert unit_value("pa$word", "argument", "a") == '"pa$$word"'
    assert unit_value("X=pa$word", "environment", "e") == '"X=pa$word"'
    assert unit_value("50% off", "text", "d") == "50%% off"
    assert unit_value("/srv/100%", "path", "p") == "/srv/100%%"


@pytest.mark.parametrize("kind, value, needle", [
    ("executable", "python3", "absolute path"),
    ("executable", "+/usr/bin/python3", "absolute path"),
    ("executable", "-/usr/bin/python3", "absolute path"),
    ("path", "/var/lib/my dir", "whitespace"),
    ("path", "/var/lib/../../etc", "'..'"),
    ("path", "/a\\b", "must not contain \\"),
    ("account", "root user", "user or group name"),
    ("account", "-root", "user or group name"),
    ("integer", "-1", "whole number"),
    ("integer", True, "must be a number"),
    ("environment", "1A=x", "not a valid environment variable name"),
    ("environment", "A", "not a valid environment variable name"),
    ("device_class", "nvidia rw", "device name"),
    ("text", None, "must be a string"),
    ("nope", "x", "unknown unit value kind"),
])
def test_unit_value_rules(kind, value, needle):
    with pytest.raises(UnitValueError) as info:
        unit_value(value, kind, "the_variable")
    assert str(info.value).startswith("the_variable: ") and needle in str(info.value)


def test_env_file_error_never_shows_the_value():
    with pytest.raises(UnitValueError) as info:
        unit_value("HF_TOKEN=hf_secret\nX=1", "env_file", "sglang_server_hf_token")
    assert "hf_secret" not in str(info.value) and "value not shown" in str(info.value)


# ---- NVIDIA device classes -------------------------------------------------------------------------------

PROC_DEVICES_580_OPEN = """Character devices:
  1 mem
  4 /dev/vc/0
  4 tty
 10 misc
195 nvidia
195 nvidiactl
238 nvidia-uvm
239 nvidia-nvswitch
240 nvidia-nvlink
241 nvidia-caps
242 nvidia-caps-imex-channels
254 rtc

Block devices:
  7 loop
  8 sd
238 nvidia-not-a-char-device
"""
PROC_DEVICES_535_PROPRIETARY = """Character devices:
  1 mem
195 nvidia-frontend
236 nvidia-nvlink
237 nvidia-nvswitch
508 nvidia-uvm
509 nvidia-caps

Block devices:
259 blkext
"""
NODES_580 = [
    {"path": "/dev/nvidia0", "major": 195, "minor": 0},
    {"path": "/dev/nvidiactl", "major": 195, "minor": 255},
    {"path": "/dev/nvidia-uvm", "major": 238, "minor": 0},
    {"path": "/dev/nvidia-uvm-tools", "major": 238, "minor": 1},
    {"path": "/dev/nvidia-caps/nvidia-cap1", "major": 241, "minor": 1},
    {"path": "/dev/nvidia-caps/nvidia-cap2", "major": 241, "minor": 2},
]
NODES_535 = [
    {"path": "/dev/nvidia0", "major": 195, "minor": 0},
    {"path": "/dev/nvidiactl", "major": 195, "minor": 255},
    {"path": "/dev/nvidia-uvm", "major": 508, "minor": 0},
    {"path": "/dev/nvidia-caps/nvidia-cap1", "major": 509, "minor": 1},
]
ROLE_CLASSES = ["nvidia", "nvidiactl", "nvidia-frontend", "nvidia-uvm", "nvidia-caps", "nvidia-caps-imex-channels",
                "nvidia-nvswitch", "nvidia-nvlink"]
OLD_CLASSES = ["nvidia-frontend", "nvidia-uvm", "nvidia-caps", "nvidia-caps-imex-channels", "nvidia-nvswitch",
               "nvidia-nvlink"]


def test_parse_proc_devices_reads_the_driver_580_names():
    entries = parse_proc_devices(PROC_DEVICES_580_OPEN)
    assert {"major": 195, "name": "nvidia"} in entries and {"major": 195, "name": "nvidiactl"} in entries
    assert {"major": 4, "name": "/dev/vc/0"} in entries
    assert not [e for e in entries if e["name"] in ("loop", "nvidia-not-a-char-device")]


@pytest.mark.parametrize("proc_devices, nodes", [(PROC_DEVICES_580_OPEN, NODES_580),
                                                 (PROC_DEVICES_535_PROPRIETARY, NODES_535)])
def test_role_classes_open_every_node_of_both_driver_generations(proc_devices, nodes):
    assert device_allow_problems(parse_proc_devices(proc_devices), nodes, ROLE_CLASSES) == []


def test_old_class_list_hides_the_gpu_on_driver_580():
    problems = device_allow_problems(parse_proc_devices(PROC_DEVICES_580_OPEN), NODES_580, OLD_CLASSES)
    assert len(problems) == 2
    assert problems[0].startswith("/dev/nvidia0 (char 195:0): ")
    assert "do not cover major 195" in problems[0] and "names major 195 'nvidia', 'nvidiactl'" in problems[0]
    assert problems[1].startswith("/dev/nvidiactl (char 195:255): ")


def test_major_missing_from_proc_devices_is_reported():
    nodes = [{"path": "/dev/nvidia-weird", "major": 777, "minor": 3}]
    (problem,) = device_allow_problems(parse_proc_devices(PROC_DEVICES_580_OPEN), nodes, ROLE_CLASSES)
    assert "/dev/nvidia-weird (char 777:3)" in problem and "/proc/devices does not list major 777" in problem


def test_classes_match_like_systemd_with_fnmatch():
    devices = parse_proc_devices(PROC_DEVICES_580_OPEN)
    assert device_allow_problems(devices, NODES_580, ["nvidia*"]) == []
    assert device_allow_problems(devices, NODES_580, ["nvidia-uvm", "nvidia-caps"])[0].startswith("/dev/nvidia0 ")


def test_path_with_control_characters_is_written_escaped():
    (problem,) = device_allow_problems([], [{"path": "/dev/nvidia0\nINJECT", "major": 195, "minor": 0}], ["nvidia"])
    assert "\n" not in problem and "/dev/nvidia0\\x0aINJECT" in problem


@pytest.mark.parametrize("char_devices, nodes, classes, needle", [
    ("195 nvidia", [], [], "char_devices must be a list"),
    ([{"major": "x", "name": "nvidia"}], [], [], "char_devices[0]: 'major' must be an integer"),
    ([{"major": True, "name": "nvidia"}], [], [], "must be an integer"),
    ([{"major": 195}], [], [], "'name' must be a non-empty string"),
    ([], [{"path": "/dev/nvidia0", "major": 195}], [], "device_nodes[0]: 'minor'"),
    ([], [{"major": 195, "minor": 0}], [], "'path' must be a non-empty string"),
    ([], [], [""], "allowed_classes[0]"),
])
def test_malformed_input_is_refused(char_devices, nodes, classes, needle):
    with pytest.raises(ValueError) as info:
        device_allow_problems(char_devices, nodes, classes)
    assert needle in str(info.value)


def test_string_numbers_from_facts_are_accepted():
    assert device_allow_problems([{"major": "195", "name": "nvidia"}],
                                 [{"path": "/dev/nvidia0", "major": "195", "minor": "0"}], ["nvidia"]) == []


def test_module_is_stdlib_only():
    # ansible_collections: module_utils/text.py (printable), itself standard library only (test_text.py)
    assert top_level_imports(systemd_unit.__file__) == {"__future__", "fnmatch", "re", "ansible_collections"}
