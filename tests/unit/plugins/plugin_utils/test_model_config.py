# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The sglang_model role's variable rules (the revisions sglang_server's records load: test_model_store.py)."""

from __future__ import annotations

import pytest

from ansible_collections.llmserve.sglang.plugins.plugin_utils.model_config import model_config_problems

COMMIT = "0123456789abcdef0123456789abcdef01234567"
STORE = "/var/lib/llmserve-models"


def cfg(**overrides):
    base = dict(repo="Qwen/Qwen3.5-122B-A10B", revision=COMMIT, hub_endpoint="", source="hub", source_path="",
                dir=STORE, allow_floating_revision=False, allow_pickle=False, verify="changed", python="/opt/llmserve-model-venv/bin/python", venv=True,
                venv_path="/opt/llmserve-model-venv", install="pip", wheelhouse="", hub_version="1.33.0",
                prewarm="auto", prewarm_margin=0.2,
                group="sglang")
    base.update(overrides)
    return base


def only(problems, variable):
    assert len(problems) == 1, problems
    assert problems[0].startswith(variable + ":"), problems
    return problems[0]


def test_the_defaults_with_a_repo_and_a_commit_are_valid():
    assert model_config_problems(cfg()) == []


def test_a_missing_repo_is_named():
    assert "required" in only(model_config_problems(cfg(repo="")), "sglang_model_repo")


@pytest.mark.parametrize("repo", ["noslash", "a/b/c", "../etc", "org/na--me", "org/name-", "/abs"])
def test_a_repo_that_is_not_org_name_is_refused(repo):
    only(model_config_problems(cfg(repo=repo)), "sglang_model_repo")


def test_a_branch_is_refused_naming_the_switch():
    text = only(model_config_problems(cfg(revision="main")), "sglang_model_revision")
    assert "sglang_model_allow_floating_revision" in text


def test_a_branch_is_accepted_when_floating_revisions_are_allowed():
    assert model_config_problems(cfg(revision="main", allow_floating_revision=True)) == []


def test_a_path_source_needs_a_commit_even_when_floating_is_allowed():
    problems = model_config_problems(cfg(revision="main", allow_floating_revision=True, source="path",
                                         source_path="/mnt/nfs/qwen"))
    assert "sglang_model_source: path" in only(problems, "sglang_model_revision")


@pytest.mark.parametrize("revision", ["0123456", COMMIT.upper(), ""])
def test_short_upper_case_or_empty_commits_are_refused(revision):
    only(model_config_problems(cfg(revision=revision)), "sglang_model_revision")


@pytest.mark.parametrize("endpoint", ["https://user:pw@mirror.internal", "ftp://mirror", "mirror.internal",
                                      "https://mirror/x?token=1", "https://mirror /x"])
def test_an_endpoint_must_be_a_base_url_without_login(endpoint):
    text = only(model_config_problems(cfg(hub_endpoint=endpoint)), "sglang_model_hub_endpoint")
    assert "pw" not in text


@pytest.mark.parametrize("endpoint", ["", "https://hf-mirror.internal", "http://10.0.0.5:8090", "https://m/hf/"])
def test_base_urls_are_accepted(endpoint):
    assert model_config_problems(cfg(hub_endpoint=endpoint)) == []


@pytest.mark.parametrize("name, value", [
    ("source", "s3"), ("verify", "sometimes"), ("install", "conda"), ("prewarm", "maybe"),
    ("allow_pickle", "perhaps"), ("allow_floating_revision", None),
])
def test_choices_and_flags_name_their_variable(name, value):
    only(model_config_problems(cfg(**{name: value})), "sglang_model_" + name)


@pytest.mark.parametrize("margin", [-0.1, 1.5, "lots", None, True])
def test_a_prewarm_margin_is_a_fraction_or_bytes(margin):
    only(model_config_problems(cfg(prewarm_margin=margin)), "sglang_model_prewarm_margin")


@pytest.mark.parametrize("margin", [0, 0.2, 1, "0.5", 8 << 30])
def test_prewarm_margins_that_are_accepted(margin):
    assert model_config_problems(cfg(prewarm_margin=margin)) == []


@pytest.mark.parametrize("path", ["relative", "/var/lib/../models", "/", "//x"])
def test_the_store_is_an_absolute_normalised_directory(path):
    only(model_config_problems(cfg(dir=path)), "sglang_model_dir")


def test_a_path_source_needs_an_absolute_directory_outside_the_store():
    only(model_config_problems(cfg(source="path", source_path="nfs/qwen")), "sglang_model_source_path")
    only(model_config_problems(cfg(source="path", source_path=STORE + "/x")), "sglang_model_source_path")
    assert model_config_problems(cfg(source="path", source_path="/mnt/nfs/qwen")) == []


def test_install_none_needs_an_interpreter():
    only(model_config_problems(cfg(install="none", python="", venv=False)), "sglang_model_python")
    only(model_config_problems(cfg(python="bin/python")), "sglang_model_python")


def test_a_wheelhouse_install_of_the_venv_needs_the_wheelhouse():
    only(model_config_problems(cfg(install="wheelhouse")), "sglang_model_wheelhouse")
    assert model_config_problems(cfg(install="wheelhouse", wheelhouse="/opt/wheels")) == []
    # an interpreter of the inventory's own needs no install
    assert model_config_problems(cfg(install="wheelhouse", venv=False)) == []


def test_the_venv_path_and_the_hub_version_and_the_group():
    only(model_config_problems(cfg(venv_path="venv")), "sglang_model_venv")
    only(model_config_problems(cfg(hub_version="latest")), "sglang_model_hub_version")
    only(model_config_problems(cfg(group="Bad Group")), "sglang_model_group")


def test_every_broken_rule_is_reported_at_once():
    problems = model_config_problems(cfg(repo="x", revision="main", verify="no", group="A B"))
    names = [p.split(":")[0] for p in problems]
    assert names == ["sglang_model_verify", "sglang_model_repo", "sglang_model_revision", "sglang_model_group"]


@pytest.mark.parametrize("bad,char", [("\x00", "NUL"), ("\n", "LF"), ("\x1b[2J", "ESC"), ("\r", "CR"),
                                      ("\x7f", "DEL"), ("\t", "TAB"), ("\x85", "NEL"), ("\u2028", "LINE SEPARATOR")])
@pytest.mark.parametrize("name,variable,overrides", [
    ("dir", "sglang_model_dir", dict()),
    ("source_path", "sglang_model_source_path", dict(source="path")),
    ("python", "sglang_model_python", dict()),
    ("venv_path", "sglang_model_venv", dict()),
    ("wheelhouse", "sglang_model_wheelhouse", dict(install="wheelhouse")),
])
def test_a_control_character_in_a_path_is_refused_naming_the_variable(name, variable, overrides, bad, char):
    # each path is valid without the character, so the control character is the only rule broken
    good = dict(dir="/var/lib/models", source_path="/mnt/nfs/qwen", python="/opt/venv/bin/python",
                venv_path="/opt/llmserve-model-venv", wheelhouse="/opt/wheels")[name]
    assert model_config_problems(cfg(**dict(overrides, **{name: good}))) == []
    message = only(model_config_problems(cfg(**dict(overrides, **{name: good[:5] + bad + good[5:]}))), variable)
    assert message == "%s: contains a control character (%s at offset 5)" % (variable, char)
    # the message shows the character escaped, never as the raw byte
    assert bad not in message


def test_a_control_character_in_a_path_not_in_use_is_not_reported():
    # sglang_model_source: hub never reads sglang_model_source_path
    assert model_config_problems(cfg(source_path="/mnt/\x00")) == []


@pytest.mark.parametrize("path,rule", [
    ("/etc", "is the system directory /etc"),
    ("/var/lib", "is the system directory /var/lib"),
    ("/tmp/models", "is inside /tmp"),
    ("/var/tmp/m", "is inside /var/tmp"),
    ("/run/models", "is inside /run"),
    ("/home/alice", "is a person's home directory"),
])
def test_the_store_is_no_system_volatile_or_world_writable_directory(path, rule):
    (problem,) = model_config_problems(cfg(dir=path))
    assert problem.startswith("sglang_model_dir: %s %s" % (path, rule)), problem


def test_the_store_is_not_in_the_service_accounts_home():
    (problem,) = model_config_problems(cfg(dir="/var/lib/sglang/models", service_home="/var/lib/sglang"))
    assert problem.startswith("sglang_model_dir: /var/lib/sglang/models is inside the service account's home")
    assert model_config_problems(cfg(dir="/var/lib/sglang-models", service_home="/var/lib/sglang")) == []


def test_the_venv_is_no_system_directory():
    (problem,) = model_config_problems(cfg(venv_path="/usr/local"))
    assert problem.startswith("sglang_model_venv: /usr/local is the system directory /usr/local")
