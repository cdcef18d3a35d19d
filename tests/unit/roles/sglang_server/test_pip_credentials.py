# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pip logins (an index or proxy URL with user:token@) stay out of the install record and out of Ansible's output.

* The install record (``__sglang_server_candidates.record``, written into the virtualenv) and the spec hash that
  names the virtualenv are computed by Ansible from the role's own defaults and vars: no login in them, and a new
  token alone names the same virtualenv. The record is written 0600 (configure.yml, and the plan's expected mode).
* The install tasks of both roles (read from their ``tasks/install.yml``) run for real against an index that
  refuses connections: the play fails, its output (-v) holds pip's reason with the logins masked, never a login.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml
from ansible_collections.llmserve.sglang.tests.unit.collection_tree import collections_path as _collections_path

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
ROLES = os.path.join(ROOT, "roles")
TOKEN = "s3cr3t-T0KEN-91f2"
PROXY_PASS = "pr0xy-Pass-77aa"
INDEX = "https://deploy:%s@127.0.0.1:9/simple" % TOKEN
# pip gives up at once: no retries, and nothing listens on port 9
EXTRA = ["--retries", "0", "--timeout", "1", "--proxy", "proxyuser:%s@127.0.0.1:9" % PROXY_PASS]


def _run(out, plays):
    playbook = os.path.join(out, "play.yml")
    with open(playbook, "w", encoding="utf-8") as handle:
        json.dump(plays, handle)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=_collections_path(), ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="false", ANSIBLE_NOCOLOR="1", ANSIBLE_HOME=os.path.join(out, "home"))
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-v", "-i", "localhost,",
                           "-c", "local", "-e", "ansible_python_interpreter=" + sys.executable, playbook],
                          capture_output=True, text=True, env=env, check=False, timeout=600)


def _tasks(role, first):
    """The install task of ``role`` and the task after it (the one that reports a failure)."""
    with open(os.path.join(ROLES, role, "tasks", "install.yml"), encoding="utf-8") as handle:
        tasks = yaml.safe_load(handle)
    found = [i for i, t in enumerate(tasks) if t.get("name", "").startswith(first)]
    assert len(found) == 1, "%s/tasks/install.yml has no task %r" % (role, first)
    return tasks[found[0]:found[0] + 2]


def _role_vars(role):
    return [{"ansible.builtin.include_vars": os.path.join(ROLES, role, part, "main.yml")}
            for part in ("defaults", "vars")]


def _record(out, token):
    name = "record-%s" % token[-4:]
    settings = {"sglang_server_pip_index_url": "https://deploy:%s@pypi.internal/simple" % token,
                "sglang_server_pip_extra_args": ["--extra-index-url", "https://%s@extra.internal/simple" % token],
                "sglang_server_pip_extra_packages": ["tool @ https://deploy:%s@files.internal/tool.whl" % token]}
    # set_fact after include_vars: the inventory's settings win over the role's defaults, as in a real run
    return {"name": name, "hosts": "localhost", "gather_facts": False,
            "tasks": _role_vars("sglang_server") + [{"ansible.builtin.set_fact": settings}, {"ansible.builtin.copy": {
                "content": "{{ {'record': __sglang_server_install_spec | to_json, 'venv': __sglang_server_venv_dir,"
                           " 'args': __sglang_server_pip_args} | to_json }}",
                "dest": os.path.join(out, name + ".json"), "mode": "0600"}}]}


def test_the_install_record_holds_no_login(tmp_path):
    out = str(tmp_path)
    tokens = ("first-T0KEN-aaaa", "second-T0KEN-bbbb")
    result = _run(out, [_record(out, token) for token in tokens])
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    seen = []
    for token in tokens:
        with open(os.path.join(out, "record-%s.json" % token[-4:]), encoding="utf-8") as handle:
            data = json.load(handle)
        assert token in json.dumps(data["args"])  # pip itself still gets the login
        assert token not in data["record"] and token not in data["venv"], data
        record = json.loads(data["record"])
        assert record["pip_args"][:2] == ["--index-url", "https://***@pypi.internal/simple"]
        assert record["packages"] == ["tool @ https://***@files.internal/tool.whl"]
        seen.append(data)
    # a new token alone is not a new install
    assert seen[0]["record"] == seen[1]["record"] and seen[0]["venv"] == seen[1]["venv"]


def test_the_install_record_is_written_root_only():
    with open(os.path.join(ROLES, "sglang_server", "tasks", "configure.yml"), encoding="utf-8") as handle:
        configure = handle.read()
    with open(os.path.join(ROLES, "sglang_server", "tasks", "state.yml"), encoding="utf-8") as handle:
        state = yaml.safe_load(handle)
    stage = yaml.safe_load(configure)[0]["block"][0]["vars"]["__sglang_server_stage_files"]
    (record,) = [f for f in stage if f["path"] == "{{ __sglang_server_install_record }}"]
    assert record["mode"] == "0600"
    (decide,) = [t for t in state if t.get("name") == "Decide what the deployment changes"]
    (expected,) = [f for f in decide["vars"]["__sglang_server_extra_files"] if "install_record" in f["path"]]
    assert expected["mode"] == "0600"


CASES = {
    "sglang_server": ("Install SGLang into the virtualenv", {
        "__sglang_server_install_needed": True, "__sglang_server_install_selected": True,
        "sglang_server_version": "0.5.23", "sglang_server_pip_extra_packages": [],
        "__sglang_server_pip_args": ["--index-url", INDEX] + EXTRA},
        "pip could not install SGLang 0.5.23 into"),
    "sglang_gateway": ("Install smg into the virtualenv", {
        "__sglang_gateway_install_selected": True, "__sglang_gateway_version_before": {"rc": 1, "stdout": ""},
        "sglang_gateway_version": "1.13.0", "__sglang_gateway_pip_args": ["--index-url", INDEX] + EXTRA},
        "pip could not install smg 1.13.0 into"),
}


@pytest.mark.parametrize("role", sorted(CASES))
def test_a_failed_pip_run_shows_its_reason_without_the_logins(tmp_path, role):
    name, variables, message = CASES[role]
    venv = str(tmp_path / "venv")
    variables = dict(variables, __sglang_server_active_venv=venv, sglang_gateway_venv=venv,
                     sglang_server_venv_python=sys.executable, sglang_gateway_venv_python=sys.executable)
    play = {"name": role, "hosts": "localhost", "gather_facts": False, "vars": variables, "tasks": _tasks(role, name)}
    result = _run(str(tmp_path), [play])
    output = result.stdout + result.stderr
    with open(str(tmp_path / "output.txt"), "w", encoding="utf-8") as handle:
        handle.write(output)
    assert result.returncode != 0, output[-4000:]
    assert message in output, output[-4000:]
    assert "***@127.0.0.1:9" in output  # pip's own words, with the login masked
    for secret in (TOKEN, PROXY_PASS, "deploy:", "proxyuser:"):
        assert secret not in output, "%s is in the output" % secret
