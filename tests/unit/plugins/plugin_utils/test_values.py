# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The value coercion the controller-side rules share (plugins/plugin_utils/values.py)."""

from __future__ import annotations

import pytest

from ansible_collections.llmserve.sglang.plugins.plugin_utils import values
from ansible_collections.llmserve.sglang.plugins.plugin_utils.gateway_config import _UNSET, _as_int as gateway_int
from ansible_collections.llmserve.sglang.tests.unit.plugins.module_utils.source_imports import top_level_imports

SENTINEL = object()


def test_imports_only_the_standard_library():
    # service_host.py and the filters import it; it must not pull anything in behind them
    assert top_level_imports(values.__file__) == {"__future__", "math", "re"}


@pytest.mark.parametrize("value, expected", [
    (None, True), ("", True), ("  \t\n", True), ("x", False), (" x ", False), (0, False), (False, False),
    ([], False), ({}, False),
])
def test_blank(value, expected):
    assert values.blank(value) is expected


@pytest.mark.parametrize("value, expected", [
    (4, 4), (-4, -4), (0, 0), ("4", 4), (" 4 ", 4), ("+4", 4), ("-4", -4), ("007", 7), ("\t12\n", 12),
])
def test_as_int_takes_integers_and_decimal_text(value, expected):
    number = values.as_int(value)
    assert number == expected and isinstance(number, int) and not isinstance(number, bool)


@pytest.mark.parametrize("value", [
    True, False, None, "", " ", "4.0", "4e3", "0x10", "1_000", "--5", "+-5", "4 4", "²", "\u0663", "four", [4], {},
    4.0, 4.5, float("nan"), float("inf"), b"4",
])
def test_as_int_refuses_the_rest(value):
    assert values.as_int(value) is None
    assert values.as_int(value, SENTINEL) is SENTINEL


def test_as_int_floats_admits_only_whole_floats():
    number = values.as_int(4.0, floats=True)
    assert number == 4 and isinstance(number, int) and not isinstance(number, float)
    for value in (4.5, float("nan"), float("inf"), True):
        assert values.as_int(value, floats=True) is None


def test_as_int_digits_caps_the_length_of_a_string():
    assert values.as_int("9" * 18, digits=18) == int("9" * 18)
    assert values.as_int("-" + "9" * 18, digits=18) == -int("9" * 18)
    assert values.as_int("9" * 19, digits=18) is None
    assert values.as_int("9" * 19) == int("9" * 19)


def test_as_int_of_more_digits_than_python_converts_is_no_integer():
    # int() raises ValueError past sys.get_int_max_str_digits() (4300 by default): no crash, no integer
    assert values.as_int("9" * 5000) is None


@pytest.mark.parametrize("value, expected", [
    (True, True), (False, False), ("true", True), ("Yes", True), (" ON ", True), ("1", True),
    ("false", False), ("NO", False), ("off", False), ("0", False),
])
def test_as_bool_words(value, expected):
    assert values.as_bool(value) is expected


@pytest.mark.parametrize("value", [None, "", "y", "n", "enabled", 1, 0, 1.0, [], "truee"])
def test_as_bool_refuses_the_rest(value):
    assert values.as_bool(value) is None
    assert values.as_bool(value, SENTINEL) is SENTINEL


def test_gateway_keeps_its_sentinel_and_its_18_digit_cap():
    # gateway_config tells "not an integer" (_UNSET) from None (unset, a default applies)
    assert gateway_int("65535") == 65535
    assert gateway_int(None) is _UNSET and gateway_int(True) is _UNSET
    assert gateway_int("1" * 19) is _UNSET


@pytest.mark.parametrize("value, expected", [
    (1, 1.0), ("2.5", 2.5), (" 3 ", 3.0), (True, None), (None, None), ("nan", None), (float("inf"), None),
    ("1e400", None), ("x", None), ([], None),
])
def test_finite_number(value, expected):
    assert values.finite_number(value) == expected
