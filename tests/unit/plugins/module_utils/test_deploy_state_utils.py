# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""deploy_state's helpers: path and mode checks, the trust walk, reads that never follow a link."""

from __future__ import annotations

import os

import pytest

from ansible_collections.llmserve.sglang.plugins.module_utils.deploy_state import (
    StateError,
    check_path,
    inspect_path,
    parse_mode,
    printable,
    read_regular,
    trust_problems,
)
from ansible_collections.llmserve.sglang.plugins.module_utils.text import parse_systemctl_show


@pytest.mark.parametrize("path", ["relative", "/a/../b", "//x", "/a/", "/a\nb", ""])
def test_paths_must_be_absolute_and_normalised(path):
    with pytest.raises(StateError):
        check_path(path, "files")


def test_modes():
    assert parse_mode("0750", "m") == 0o750 and parse_mode("644", "m") == 0o644 and parse_mode(0o600, "m") == 0o600
    for bad in ("rwx", True, "99999", 0o17777):
        with pytest.raises(StateError):
            parse_mode(bad, "m")


def test_trust_walk(tmp_path):
    assert trust_problems("/usr/share") == []
    # /tmp is writable by everyone: a state directory below it is not trusted, and a link is never fixable
    problems = trust_problems(str(tmp_path / "state"))
    assert any(part == "/tmp" and fixable for part, _found, fixable in problems)
    os.symlink("/usr", str(tmp_path / "link"))
    assert trust_problems(str(tmp_path / "link" / "share"))[-1][2] is False


def test_reads_never_follow_links(tmp_path):
    (tmp_path / "f").write_text("data")
    os.symlink(str(tmp_path / "f"), str(tmp_path / "l"))
    assert read_regular(str(tmp_path / "f")) == b"data" and read_regular(str(tmp_path / "none")) is None
    with pytest.raises(StateError, match="not a regular file"):
        read_regular(str(tmp_path / "l"))
    with pytest.raises(StateError, match="larger than"):
        read_regular(str(tmp_path / "f"), limit=2)
    link = inspect_path(str(tmp_path / "l"))
    assert link["type"] == "link" and link["target"] == str(tmp_path / "f") and "sha256" not in link
    assert inspect_path(str(tmp_path / "none")) == {"exists": False, "type": None}


def test_systemctl_show_and_printable():
    assert parse_systemctl_show("ActiveState=active\nUnitFileState=enabled\nnoise\n") == {
        "ActiveState": "active", "UnitFileState": "enabled"}
    assert printable("a\nb\x1b") == "a?b?"


def test_deployer_info_reads_the_login_uid_and_sudo_user(tmp_path):
    from ansible_collections.llmserve.sglang.plugins.module_utils.deploy_state import deployer_info
    loginuid = tmp_path / "loginuid"
    loginuid.write_text("0")
    assert deployer_info({"SUDO_USER": "ops"}, str(loginuid)) == {"login_uid": 0, "login_user": "root",
                                                                  "sudo_user": "ops"}
    loginuid.write_text("4294967295")
    assert deployer_info({}, str(loginuid)) == {"login_uid": None, "login_user": None, "sudo_user": ""}
    assert deployer_info({}, str(tmp_path / "none"))["login_uid"] is None
