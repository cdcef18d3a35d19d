# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Logins in pip arguments are found and masked (plugins/plugin_utils/pip_args.py, filter sglang_pip_redact)."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.llmserve.sglang.plugins.filter.sglang import sglang_pip_redact
from ansible_collections.llmserve.sglang.plugins.plugin_utils.pip_args import pip_secrets, redact_pip_args, redact_text

ARGS = [
    "--index-url", "https://deploy:t0ken%40x@pypi.internal/simple",
    "--extra-index-url=https://GLPAT123456@gitlab.internal/api/v4/projects/1/packages/pypi/simple",
    "--proxy", "proxyuser:pr0xy-pass@proxy.internal:3128",
    "--prox=http://other:0ther-pass@proxy2.internal:8080",
    "--find-links", "https://host/wheels",
    "pkg @ git+ssh://git@github.com/org/pkg.git",
    "--no-deps",
]
SECRETS = ("t0ken%40x", "t0ken@x", "GLPAT123456", "pr0xy-pass", "0ther-pass")


def test_logins_are_masked_and_the_rest_is_kept():
    assert redact_pip_args(ARGS) == [
        "--index-url", "https://***@pypi.internal/simple",
        "--extra-index-url=https://***@gitlab.internal/api/v4/projects/1/packages/pypi/simple",
        "--proxy", "***@proxy.internal:3128",
        "--prox=http://***@proxy2.internal:8080",
        "--find-links", "https://host/wheels",
        "pkg @ git+ssh://git@github.com/org/pkg.git",
        "--no-deps",
    ]


def test_arguments_without_a_login_come_back_unchanged():
    plain = ["--index-url", "https://pypi.internal/simple", "--proxy", "proxy.internal:3128", "--no-index",
             "--find-links", "/opt/wheels", "sglang==0.5.23"]
    assert redact_pip_args(plain) == plain
    assert pip_secrets(plain) == []


def test_secrets_are_found_raw_and_decoded():
    found = pip_secrets(ARGS)
    for secret in SECRETS:
        assert secret in found
    assert "git" not in found  # the ssh user is an account name


def test_text_is_masked():
    text = ("stdout: Looking in indexes: https://deploy:****@pypi.internal/simple\n:stderr: ERROR: proxy "
            "proxyuser:pr0xy-pass@proxy.internal:3128 refused; cmd: pip install --index-url "
            "https://deploy:t0ken%40x@pypi.internal/simple (decoded t0ken@x) at https://GLPAT123456@gitlab.internal "
            "from github.com")
    masked = redact_text(text, ARGS)
    for secret in SECRETS + ("deploy:",):
        assert secret not in masked
    assert "github.com" in masked and "https://***@pypi.internal/simple" in masked


def test_short_logins_are_masked_only_where_they_stand_alone():
    args = ["--proxy", "http://a:b@proxy:3128"]
    assert redact_text("b github b:x", args) == "*** github ***:x"


def test_any_url_login_in_a_text_is_masked_even_without_args():
    assert redact_text("failed: https://u:p4ss@host/simple") == "failed: https://***@host/simple"


def test_filter_takes_a_list_or_a_text():
    assert sglang_pip_redact(["--index-url", "https://u:secret1@h/simple"]) == ["--index-url", "https://***@h/simple"]
    assert sglang_pip_redact("x secret1 y", ["--index-url", "https://u:secret1@h/simple"]) == "x *** y"
    with pytest.raises(AnsibleFilterError, match="args must be the list of pip arguments"):
        sglang_pip_redact("text", "--index-url")
