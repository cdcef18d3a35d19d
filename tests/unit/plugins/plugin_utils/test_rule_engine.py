# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rule engine: the problem collector, typed readers, path, address and range rules."""

from __future__ import annotations

import pytest

from ansible_collections.llmserve.sglang.plugins.plugin_utils import rules
from ansible_collections.llmserve.sglang.plugins.plugin_utils.rules import UNSET, Problems


def test_problems_keep_the_message_form_and_every_problem():
    problems = Problems()
    problems.add("x_port", "must be a TCP port", "pick another")
    problems.add("x_host", "is required")
    problems.warn("x_user", "is root")
    assert problems.errors == ["x_port: must be a TCP port; pick another", "x_host: is required"]
    assert problems.warnings == ["x_user: is root"]
    assert problems.check("x_a", None) is True
    assert problems.check("x_a", "is bad", "fix it") is False
    assert problems.errors[-1] == "x_a: is bad; fix it"


def test_run_rules_calls_the_list_in_order():
    seen = []
    rules.run_rules([lambda cfg, p: seen.append(1), lambda cfg, p: seen.append(2)], {}, Problems())
    assert seen == [1, 2]


@pytest.mark.parametrize("value, shown", [
    (True, "boolean true"), ("x", "'x'"), ({}, "a dict"), ([1], "a list"), ((1,), "a list"), (4, "int 4"),
    (1.5, "float 1.5"), (None, "NoneType None"),
])
def test_describe(value, shown):
    assert rules.describe(value) == shown


def test_typed_readers():
    problems = Problems()
    assert rules.read_int(problems, "v_int", "8", minimum=1) == 8
    assert rules.read_int(problems, "v_int", None, default=3) == 3
    assert rules.read_int(problems, "v_int", True, minimum=1) is UNSET
    assert rules.read_int(problems, "v_int", 0, minimum=1, maximum=9) is UNSET
    assert rules.read_float(problems, "v_float", "0.5") == 0.5
    assert rules.read_float(problems, "v_float", "x") is UNSET
    assert rules.read_bool(problems, "v_bool", None, default=False) is False
    assert rules.read_bool(problems, "v_bool", "yes", fix="use true or false") is UNSET
    assert rules.read_str(problems, "v_str", "  ") is None
    assert rules.read_str(problems, "v_str", 3) is UNSET
    assert rules.read_list(problems, "v_list", "a", what="a list of names") is UNSET
    assert rules.read_dict(problems, "v_dict", [], what="a dict of flags") is UNSET
    assert problems.errors == [
        "v_int: must be an integer >= 1, got boolean true",
        "v_int: must be an integer from 1 to 9, got int 0",
        "v_float: must be a number, got 'x'",
        "v_bool: must be a boolean, got 'yes'; use true or false",
        "v_str: must be a string, got int 3",
        "v_list: must be a list of names, got 'a'",
        "v_dict: must be a dict of flags, got a list",
    ]


@pytest.mark.parametrize("path, kwargs, problem", [
    ("/var/lib/x", {}, None),
    ("var/lib", {}, "must be an absolute path, got 'var/lib'"),
    ("/var//lib/", {"normalised": True}, "must be a normalised path ('/var/lib'), got '/var//lib/'"),
    ("/", {"not_root": True}, "must not be '/'"),
    ("//", {"not_root": True}, "must not be '/'"),
    ("/opt/a", {"inside": ("/var/lib", "/srv")}, "must be inside /var/lib or /srv, got '/opt/a'"),
    ("/srv/a", {"inside": ("/var/lib", "/srv")}, None),
    ("/srvx", {"inside": ("/srv",)}, "must be inside /srv, got '/srvx'"),
    ("/usr/lib/x", {"outside": ("/usr",)}, "must not be inside /usr, got '/usr/lib/x'"),
    ("/usr/../usr", {"outside": ("/usr",)}, "must not be inside /usr, got '/usr/../usr'"),
    (5, {}, "must be a string, got int 5"),
])
def test_path_problem(path, kwargs, problem):
    assert rules.path_problem(path, **kwargs) == problem


def test_read_path_address_and_range_rules():
    problems = Problems()
    assert rules.read_path(problems, "p_home", None) is None
    assert rules.read_path(problems, "p_home", "/h", not_root=True) == "/h"
    assert rules.read_path(problems, "p_home", "/", not_root=True, fix="choose a directory") is UNSET

    def parse(text):
        return ("h", 1) if text == "h:1" else "it must be HOST:PORT"

    assert rules.address_rule(problems, "p_addr", "h:1", parse) == ("h", 1)
    assert rules.address_rule(problems, "p_addr", "h", parse, "gives the address %s") is UNSET
    assert rules.range_rule(problems, "p_timeout", 5, 1, 10) is True
    assert rules.range_rule(problems, "p_timeout", -5, 1, 10) is False
    assert problems.errors == [
        "p_home: must not be '/'; choose a directory",
        "p_addr: gives the address it must be HOST:PORT",
        "p_timeout: must be an integer from 1 to 10, got -5",
    ]


# -- gateway_config ------------------------------------------------------------------------------------------


def test_readers_in_the_gateways_words():
    problems = Problems()
    assert rules.read_text(problems, "g_policy", " random ", required=True) == "random"
    assert rules.read_text(problems, "g_path", "  ") is None
    assert rules.read_text(problems, "g_policy", None, required=True) is UNSET
    assert rules.read_text(problems, "g_policy", 1.5) is UNSET
    assert rules.read_text(problems, "g_policy", "a\nb") is UNSET
    assert rules.read_int_between(problems, "g_port", " 0030000 ", 1, 65535, digits=18) == 30000
    assert rules.read_int_between(problems, "g_port", None, 1, 65535) is UNSET
    assert rules.read_int_between(problems, "g_port", "x" * 120, 1, 65535) is UNSET
    assert rules.read_int_between(problems, "g_retries", 0, 1) is UNSET
    assert rules.read_int_between(problems, "g_port", "1" * 19, 1, digits=18) is UNSET
    assert rules.read_bool(problems, "g_json", "off", True, what="true or false",
                           show=rules.describe_shown, words=True) is False
    assert rules.read_bool(problems, "g_json", None, True, what="true or false",
                           show=rules.describe_shown, words=True) is True
    assert rules.read_bool(problems, "g_json", "maybe\n", True, what="true or false",
                           show=rules.describe_shown, words=True) is UNSET
    assert problems.errors == [
        "g_policy: must be set",
        "g_policy: must be a string, got float 1.5",
        "g_policy: contains a control character (LF at offset 1)",
        "g_port: must be an integer between 1 and 65535, got null",
        "g_port: must be an integer between 1 and 65535, got '%s... (120 characters)'" % ("x" * 100),
        "g_retries: must be an integer >= 1, got int 0",
        "g_port: must be an integer >= 1, got '%s'" % ("1" * 19),
        "g_json: must be true or false, got 'maybe\\\\x0a'",
    ]


# -- sglang_nodes ------------------------------------------------------------------------------------------------

def test_readers_word_the_type_and_show_the_value_as_asked():
    """The group check's messages always showed the refused value with repr() (and a type by its name)."""
    problems = Problems()
    assert rules.read_int(problems, "n_rank", True, minimum=0, show=repr, fix="leave it unset") is UNSET
    assert rules.read_bool(problems, "n_firewall", "yes", what="true or false", show=repr) is UNSET
    assert rules.read_bool(problems, "n_firewall", None, default=True, what="true or false") is True
    assert rules.read_list(problems, "n_sources", "10.0.0.1", what="a list of networks",
                           show=lambda value: type(value).__name__) is UNSET
    assert problems.errors == [
        "n_rank: must be an integer >= 0, got True; leave it unset",
        "n_firewall: must be true or false, got 'yes'",
        "n_sources: must be a list of networks, got str",
    ]


# -- monitoring_targets ------------------------------------------------------------------------------------------

def test_read_port_gives_the_default_for_blank_and_refuses_the_rest():
    problems = Problems()
    assert rules.read_port(problems, "m_port", " ", default=9100) == 9100
    assert rules.read_port(problems, "m_port", "09090") == 9090
    assert rules.read_port(problems, "m_port", "123456") is UNSET
    assert rules.read_port(problems, "m_port", [1], show=lambda value: rules.describe_shown(value, 80, False)) is UNSET
    assert rules.read_int(problems, "m_rank", "12345", minimum=0, digits=4) is UNSET
    assert problems.errors == [
        "m_port: must be an integer between 1 and 65535, got '123456'",
        "m_port: must be an integer between 1 and 65535, got list [1]",
        "m_rank: must be an integer >= 0, got '12345'",
    ]
