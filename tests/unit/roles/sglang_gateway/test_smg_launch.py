# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The gateway launcher (roles/sglang_gateway/files/smg_launch.py) with an smg stand-in: where it takes the keys from.

The unit passes the key file as the systemd credential ``smg-keys``; the launcher must read the keys there (the
role's EnvironmentFile syntax, escapes included) and nowhere else: keys in the environment would stay in
``/proc/<pid>/environ``. A start without the credential is refused, and a broken credential file is reported
without echoing its lines. The live tests with the real smg are in tests/functional/gateway.
"""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.llmserve.sglang.plugins.plugin_utils.systemd_unit import unit_value
from ansible_collections.llmserve.sglang.tests.unit.roles.sglang_gateway import smg_stub

ADMIN_KEY = "adm-$x\"y`z\\w%key"
WORKER_KEY = "sk-worker-\\n$HOME"
ARGV = ["--host", "127.0.0.1", "--port", "8000"]


@pytest.fixture
def env(tmp_path):
    return {"PATH": "/usr/bin:/bin", "PYTHONPATH": smg_stub.make_stub(tmp_path / "stub"),
            "SMG_STUB_REPORT": str(tmp_path / "launched.json")}


def _credential(tmp_path, text):
    directory = tmp_path / "credentials"
    directory.mkdir(mode=0o700)
    (directory / "smg-keys").write_text(text, encoding="utf-8")
    return str(directory)


def _run(env):
    proc = smg_stub.start(ARGV, env, env["SMG_STUB_REPORT"])
    try:
        launched = os.path.exists(env["SMG_STUB_REPORT"])
        if launched:
            with open(env["SMG_STUB_REPORT"], encoding="utf-8") as handle:
                return json.load(handle), ""
        return None, proc.communicate(timeout=30)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)


def test_keys_come_from_the_credential_as_the_role_writes_it(tmp_path, env):
    keys = (("LLMSERVE_SMG_ADMIN_API_KEY", ADMIN_KEY), ("LLMSERVE_SMG_API_KEY", WORKER_KEY))
    lines = ["# Ansible managed", ""] + [unit_value("%s=%s" % pair, "env_file", pair[0]) for pair in keys]
    env["CREDENTIALS_DIRECTORY"] = _credential(tmp_path, "\n".join(lines) + "\n")
    received, stderr = _run(env)
    assert received is not None, stderr
    assert received["api_key"] == WORKER_KEY
    expected = [["llmserve-admin", "llmserve.sglang gateway role", ADMIN_KEY, "admin"]]
    assert received["control_plane_api_keys"] == expected


def test_keys_in_the_environment_are_not_taken(env):
    env.update({"LLMSERVE_SMG_ADMIN_API_KEY": ADMIN_KEY, "LLMSERVE_SMG_API_KEY": WORKER_KEY})
    received, stderr = _run(env)
    assert received is None
    assert "$CREDENTIALS_DIRECTORY is not set" in stderr and ADMIN_KEY not in stderr


def test_a_credential_without_the_control_plane_key_is_refused(tmp_path, env):
    env["CREDENTIALS_DIRECTORY"] = _credential(tmp_path, 'LLMSERVE_SMG_API_KEY="%s"\n' % "sk-only")
    received, stderr = _run(env)
    assert received is None and "LLMSERVE_SMG_ADMIN_API_KEY is missing from the credential smg-keys" in stderr


def test_a_broken_credential_line_is_reported_without_its_content(tmp_path, env):
    env["CREDENTIALS_DIRECTORY"] = _credential(tmp_path, 'LLMSERVE_SMG_ADMIN_API_KEY=unquoted-secret-0123\n')
    received, stderr = _run(env)
    assert received is None and "line 1, is not NAME=\"value\"" in stderr
    assert "unquoted-secret-0123" not in stderr
