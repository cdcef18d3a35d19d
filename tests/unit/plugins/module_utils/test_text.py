# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for plugins/module_utils/text.py: masking, cleaning, printable names, systemctl show."""

from __future__ import annotations

import time

import pytest

from ansible_collections.llmserve.sglang.plugins.module_utils import text as txt
from ansible_collections.llmserve.sglang.plugins.plugin_utils import systemd_unit
from ansible_collections.llmserve.sglang.tests.unit.plugins.module_utils.source_imports import top_level_imports


def test_imports_only_the_standard_library():
    # modules import it on the managed hosts (Python 3.9+)
    assert top_level_imports(txt.__file__) == {"__future__", "re"}


# --- masking -------------------------------------------------------------------------------

@pytest.mark.parametrize("key", ["api_key", "admin_api_key", "hf_token", "token", "access_token", "accessToken",
                                 "HF-TOKEN", "authtoken", "token_secret", "password", "Authorization"])
def test_secret_keys(key):
    assert txt.is_secret_key(key)


@pytest.mark.parametrize("key", ["ssl_keyfile_password", "secret_key", "x-api-key", "X-Api-Key", "apiKey", "XApiKey",
                                 "client_secret", "db_passwd", "passphrase", "private_key", "aws_access_key_id",
                                 "credentials", "key", "KEY", "api-keys", "hfToken", "id_token"])
def test_secret_keys_by_pattern(key):
    assert txt.is_secret_key(key)


@pytest.mark.parametrize("key", ["max_total_tokens", "tokenizer_path", "skip_tokenizer_init", "speculative_num_draft_tokens",
                                 "max_new_tokens", "tokenizer_worker_num", "model_path", "key_value", 3,
                                 "ssl_keyfile", "ssl_certfile", "ssl_ca_certs", "client_key", "token_capacity",
                                 "eos_token_id", "keyfile", "monkey", "", "--"])
def test_not_secret_keys(key):
    assert not txt.is_secret_key(key)


@pytest.mark.parametrize("text,expected", [
    ("sglang serve --api-key sk-1 --port 1", "sglang serve --api-key ******** --port 1"),
    ("x --admin-api-key=adm1 y", "x --admin-api-key=******** y"),
    ("--ssl-keyfile-password 'a b' --ssl-keyfile /k.pem", "--ssl-keyfile-password ******** --ssl-keyfile /k.pem"),
    ("--hf-token hf_x --max-total-tokens 9 --tokenizer-path /t", "--hf-token ******** --max-total-tokens 9 --tokenizer-path /t"),
    ("--api-key --port 1", "--api-key --port 1"),  # a flag after the flag is not its value
    ("ServerArgs(model_path='/m', api_key='sk-2', ssl_keyfile='/k', admin_api_key=None)",
     "ServerArgs(model_path='/m', api_key=********, ssl_keyfile='/k', admin_api_key=********)"),
    ('{"hf_token": "hf_y", "max_total_tokens": 5}', '{"hf_token": ********, "max_total_tokens": 5}'),
    ("GET /v1?access_token=abc&model=m", "GET /v1?access_token=********&model=m"),
    ("Authorization: Bearer abc.def", "Authorization: ********"),
    ("HF_TOKEN=hf_z python3 -m sglang", "HF_TOKEN=******** python3 -m sglang"),
    ("see https://u:p%40ss@hub.example/x and //a@b", "see https://********@hub.example/x and //********@b"),
    ("token_capacity=5 eos_token_id: 2", "token_capacity=5 eos_token_id: 2"),
    # a harmless name or flag never hides the secret after it
    ("server_args=ServerArgs(api_key='sk-4', port=1)", "server_args=ServerArgs(api_key=********, port=1)"),
    ("--enable-x --api-key sk-5 --foo=--bar --hf-token=t6", "--enable-x --api-key ******** --foo=--bar --hf-token=********"),
    ("--api-key=--not-a-value", "--api-key=--not-a-value"),
])
def test_redact_text_patterns(text, expected):
    assert txt.redact_text(text) == expected


def test_redact_argv_lists_and_literals():
    out = txt.redact({"argv": ["sglang", "--api-key", "sk-3", "--port", "1", "--hf-token", "--x"],
                      "cmd": ["--admin-api-key=adm"], "n": 7, "nested": {"deeper": ["key sk-long-3 here"]}},
                     secrets=["sk-long-3", "", None])
    assert out["argv"] == ["sglang", "--api-key", "********", "--port", "1", "--hf-token", "--x"]
    assert out["cmd"] == ["--admin-api-key=********"] and out["n"] == 7
    assert out["nested"]["deeper"] == ["key ******** here"]


@pytest.mark.parametrize("text", ["a." * 500000 + ":", "--a " * 250000 + "x", "//a" * 300000 + "@",
                                  'a="' * 300000, "api_key=" + '"' * 1000000, "--api-key" + " " * 1000000])
def test_redact_text_is_linear_on_hostile_strings(text):
    # a server decides what is in the body (up to max_body_bytes): no pattern may backtrack quadratically
    start = time.monotonic()
    txt.redact_text(text)
    assert time.monotonic() - start < 2.0


def test_redact_longest_secret_first():
    assert txt.redact_text("abc-long", ["abc", "abc-long"]) == "********"


@pytest.mark.parametrize("text,expected", [
    ("http://user:pw@127.0.0.1:1/x", "http://********@127.0.0.1:1/x"),
    ("https://a:b@c@host/p?q=1", "https://********@host/p?q=1"),
    ("http://127.0.0.1:1/x?mail=a@b", "http://127.0.0.1:1/x?mail=a@b"),
    ("no url", "no url"),
])
def test_mask_userinfo(text, expected):
    assert txt.mask_userinfo(text) == expected


def test_clean_text_escapes_controls_and_caps_length():
    assert txt.clean_text("a\x00b\x1bc\r\nd") == "a\\x00b\\x1bc  d"
    long = txt.clean_text("x" * 1000, limit=10)
    assert long.startswith("x" * 10) and "990 characters cut" in long
    assert txt.clean_text(None) == "" and txt.clean_text(b"\xff") == "\ufffd"


def test_redact_nested_and_strings():
    data = {
        "api_key": "sk-123",
        "admin_api_key": None,
        "max_total_tokens": 4096,
        "launch_command": "sglang serve --model-path /m --api-key sk-123 --port 1",
        "other_cmd": "x --admin-api-key=adm1 y",
        "internal_states": [{"hf_token": "hf_abc", "note": "key sk-123 leaked"}],
    }
    out = txt.redact(data, secrets=["sk-123"])
    assert out["api_key"] == txt.REDACTED
    assert out["admin_api_key"] is None  # nothing to hide
    assert out["max_total_tokens"] == 4096
    assert out["launch_command"] == "sglang serve --model-path /m --api-key ******** --port 1"
    assert out["other_cmd"] == "x --admin-api-key=******** y"
    assert out["internal_states"][0] == {"hf_token": txt.REDACTED, "note": "key ******** leaked"}
    assert data["api_key"] == "sk-123"  # input untouched


def test_parse_systemctl_show():
    assert txt.parse_systemctl_show("A=1\nB=x=y\n\nnoise\n") == {"A": "1", "B": "x=y"}


def test_mask_secrets_masks_literals_and_logins_but_not_words():
    # the modules' own sentences: "token:" and "Bearer <key>" are words there, not secrets
    sentence = "token: the gateway; Authorization: Bearer <key>; k=adm-secret"
    assert txt.mask_secrets(sentence, ["adm-secret", "", None]) == \
        "token: the gateway; Authorization: Bearer <key>; k=********"
    assert txt.mask_secrets("http://u:p@h/ x", []) == "http://********@h/ x"
    assert txt.mask_secrets("ab abc", ["ab", "abc"]) == "******** ********"
    assert txt.mask_secrets(None, ["x"]) is None


# --- printable -------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, shown", [
    ("plain name", "plain name"),
    ("caf\u00e9 \u6a21\u578b", "caf\u00e9 \u6a21\u578b"),  # letters of any script stay
    ("a\nb\x1b[31m", "a?b?[31m"),
    ("tab\there", "tab?here"),
    ("del\x7f c1\x85", "del? c1?"),
    ("line\u2028para\u2029", "line?para?"),
    ("bidi\u202eevil", "bidi?evil"),  # a right-to-left override would reorder what the reader sees
    ("nbsp\u00a0zw\u200b", "nbsp?zw?"),
])
def test_printable_replaces_what_is_not_printable(raw, shown):
    assert txt.printable(raw) == shown


def test_printable_escape_names_each_character():
    assert txt.printable("a\nb\x1b\u2028\u202e\U000e0001") == "a?b????"
    assert txt.printable("a\nb\x1b\u2028\u202e\U000e0001", escape=True) == "a\\x0ab\\x1b\\u2028\\u202e\\U000e0001"


def test_printable_limit_none_and_other_types():
    assert txt.printable("x" * 500, 200) == "x" * 200
    assert txt.printable("x" * 500) == "x" * 500
    assert txt.printable("ab\ncd", 3) == "ab?"
    assert txt.printable(None) == "" and txt.printable(42) == "42"


# --- server text (issue 45 #6) ---------------------------------------------------------------

@pytest.mark.parametrize("raw, shown", [
    ("EAGLE3\ud83d\ude80", "EAGLE3\U0001F680"),  # a pair, code unit by code unit: the character it encodes
    ("EAGLE3\U0001F680", "EAGLE3\U0001F680"),
    ("x\ud83d", "x\ufffd"), ("\udc80y", "\ufffdy"), ("\ude80\ud83d", "\ufffd\ufffd"),  # lone or out of order
    ("a\x1b[31mb\x00\x7f\x85\r", "a\\x1b[31mb\\x00\\x7f\\x85\\x0d"),
    ("two\nlines", "two\nlines"), ("tab\there", "tab\\x09here"), ("bidi\u202e", "bidi\\u202e"),
    (None, ""), (b"by\xfftes", "by\ufffdtes"), (3, "3"),
])
def test_safe_text(raw, shown):
    assert txt.safe_text(raw) == shown
    assert txt.safe_text(shown) == shown, "idempotent"


def test_safe_text_is_valid_utf8_and_capped():
    text = txt.safe_text("\ud83d" * 5 + "x" * 50000, limit=1000)
    assert len(text) == 1000 and text.startswith("\ufffd" * 5 + "x")
    assert text.endswith("...(cut, 50005 characters)")
    text.encode("utf-8")  # strict
    assert txt.safe_text(text, limit=1000) == text, "a second pass cuts nothing more"
    assert txt.safe_text("x" * txt.TEXT_LIMIT) == "x" * txt.TEXT_LIMIT
    assert txt.safe_text("x" * 50, limit=None) == "x" * 50


def test_safe_value_walks_keys_lists_and_leaves_other_values():
    value = {"spec\ud83d": ["EAGLE3\ud83d\ude80", {"n": 3, "ok": True, "none": None, "f": 1.5}], 7: ("a\x00",)}
    assert txt.safe_value(value) == {"spec\ufffd": ["EAGLE3\U0001F680", {"n": 3, "ok": True, "none": None, "f": 1.5}],
                                     7: ["a\\x00"]}


@pytest.mark.parametrize("raw, shown", [
    ("ssh\n", "ssh\\x0a"), ("evil\x1b]0;title\x07", "evil\\x1b]0;title\\x07"), ("a\u202eb", "a\\u202eb"),
    ("zero\u200bwidth", "zero\\u200bwidth"),
])
def test_systemd_unit_printable_escapes_through_text(raw, shown):
    # systemd_unit.printable (messages of the unit and gateway rules) is text.printable with escapes: the bidi
    # override and the zero-width space, which its own control-character class let through, are escaped too
    assert systemd_unit.printable(raw) == shown
