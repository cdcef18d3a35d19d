# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The pre-warm before a host leaves rotation: the sglang_rollout role's drain entry point includes sglang_server's prewarm
entry point, which reads the model directory the restart will load into the page cache. Run for real on localhost
(the drain itself does nothing here: no gateways)."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.llmserve.sglang.tests.unit.collection_tree import run_playbook

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


def _run(tmp_path, extra):
    """The drain entry point on localhost with ``extra`` vars; (rc, the prewarm task's result or None, output)."""
    play = [{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "Drain", "ansible.builtin.import_role": {"name": "llmserve.sglang.sglang_rollout", "tasks_from": "drain"}},
        {"name": "Keep the result", "ansible.builtin.copy": {
            "dest": str(tmp_path / "result.json"),
            "content": "{{ sglang_server_prewarm_result | default(None) | to_json }}"}}]}]
    (tmp_path / "vars.json").write_text(json.dumps(extra))
    proc = run_playbook(tmp_path, play, "-e", "@" + str(tmp_path / "vars.json"), timeout=180)
    out = proc.stdout + proc.stderr
    path = tmp_path / "result.json"
    result = json.loads(path.read_text()) if path.exists() else None
    if path.exists():
        path.unlink()
    return proc.returncode, result, out


@pytest.fixture
def model_dir(tmp_path):
    path = tmp_path / "model"
    path.mkdir()
    (path / "model.safetensors").write_bytes(os.urandom(64 * 1024))
    (path / "config.json").write_text("{}")
    return str(path)


def test_a_restarting_host_reads_its_model_before_the_drain(tmp_path, model_dir):
    rc, result, out = _run(tmp_path, {"sglang_rollout_restarts": True, "sglang_server_model_path": model_dir,
                                      "sglang_server_prewarm": "always"})
    assert rc == 0, out
    assert result["warmed"] is True and result["bytes_read"] == 64 * 1024 + 2, result


@pytest.mark.parametrize("extra", [
    {"sglang_rollout_restarts": False},
    {"sglang_rollout_restarts": True, "nvidia_driver_plan": {"apply": "reboot"}},
    {"sglang_rollout_restarts": True, "sglang_server_prewarm": "never"},
    {"sglang_rollout_restarts": True, "sglang_server_model_path": "Qwen/Qwen3-8B"},
], ids=["no-restart", "reboot-planned", "never", "hub-id"])
def test_nothing_is_read_where_it_would_not_help(tmp_path, model_dir, extra):
    variables = dict({"sglang_server_model_path": model_dir, "sglang_server_prewarm": "always"}, **extra)
    rc, result, out = _run(tmp_path, variables)
    assert rc == 0, out
    assert result is None or result.get("skipped") is True, result


def test_a_revision_the_model_role_read_in_this_run_is_not_read_again(tmp_path, model_dir):
    report = {"path": model_dir, "prewarm": "read 0.1 MiB into the page cache in 0.0 s (9 MiB/s)"}
    rc, result, out = _run(tmp_path, {"sglang_rollout_restarts": True, "sglang_server_model_path": model_dir,
                                      "sglang_server_prewarm": "always", "sglang_model_report": report})
    assert rc == 0, out
    assert result is None or result.get("skipped") is True, result
    # another directory than the one the model role read is read
    report["path"] = model_dir + "-other"
    rc, result, out = _run(tmp_path, {"sglang_rollout_restarts": True, "sglang_server_model_path": model_dir,
                                      "sglang_server_prewarm": "always", "sglang_model_report": report})
    assert rc == 0 and result["warmed"] is True, out


def test_a_missing_model_directory_is_noted_not_refused(tmp_path):
    # a stand-in engine or a model SGLang fetches itself has no directory here; the restart proves whether it loads
    rc, result, out = _run(tmp_path, {"sglang_rollout_restarts": True,
                                      "sglang_server_model_path": str(tmp_path / "absent")})
    assert rc == 0, out
    assert result["warmed"] is False and result["bytes_read"] == 0
    assert result["note"] == "%s is not a directory on the host: nothing read" % (tmp_path / "absent")
