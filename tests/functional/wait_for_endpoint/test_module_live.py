# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""wait_for_endpoint against real HTTP(S) servers on 127.0.0.1 with scripted timelines.

The module runs for real in a child Python (as Ansible runs it); one test goes through
``ansible localhost -m llmserve.sglang.wait_for_endpoint`` to cover the controller path
(argument handling, no_log, check mode).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from wfe_live_helpers import HANG, TREE, free_port


def test_refused_then_503_then_200(server, run_module):
    # closed for 1.5 s (longer than the module's start-up), then 503 for 0.8 s, then 200
    srv = server(lambda t, path, m, h: 503 if t < 0.8 else 200, closed_for=1.5)
    run = run_module({"url": srv.url + "/health", "timeout": 20, "interval": 0.1})
    r = run.result
    assert run.rc == 0, run
    assert r["ready"] is True and r["changed"] is False and r["status"] == 200
    assert [e["status"] for e in r["status_history"]] == [-1, 503, 200]
    counts = {e["status"]: e["count"] for e in r["status_history"]}
    assert counts[-1] >= 1 and counts[503] >= 3 and counts[200] == 1
    # every answered request was seen by the server, refused ones could not be
    assert len(srv.requests) == counts[503] + counts[200] == r["attempts"] - counts[-1]
    # the server's clock: the 200 came in the ready phase, and quickly (interval 0.1 s)
    assert 0.8 <= srv.requests[-1]["elapsed"] <= 0.8 + 0.5
    assert all(req["elapsed"] < 0.8 for req in srv.requests[:-1])
    assert r["elapsed"] <= 3.0
    assert "-1 x" in r["msg"] and "503 x" in r["msg"]


def test_401_fails_fast_with_api_key_hint(server, run_module):
    srv = server(lambda t, path, m, h: 401 if h.get("Authorization") != "Bearer right" else 200)
    run = run_module({"url": srv.url + "/v1/models", "timeout": 30, "api_key": "wrong"})
    assert run.rc == 1, run
    assert run.result["status"] == 401 and run.result["attempts"] == 1
    assert "api_key" in run.result["msg"] and run.wall < 5
    assert "wrong" not in json.dumps(run.result)  # no_log value never comes back
    assert srv.requests[0]["authorization"] == "Bearer wrong"
    ok = run_module({"url": srv.url + "/v1/models", "timeout": 30, "api_key": "right"})
    assert ok.rc == 0 and ok.result["ready"], ok


def test_404_fails_fast_with_path_hint(server, run_module):
    srv = server(lambda t, path, m, h: 404)
    run = run_module({"url": srv.url + "/ready", "timeout": 30})
    assert run.rc == 1, run
    assert run.result["status"] == 404 and run.result["attempts"] == 1 and run.wall < 5
    assert "wrong path" in run.result["msg"]


def test_server_that_never_answers_within_request_timeout(server, run_module):
    srv = server(lambda t, path, m, h: HANG)
    run = run_module({"url": srv.url + "/health", "timeout": 2.5, "request_timeout": 1, "interval": 0.1})
    assert run.rc == 1, run
    r = run.result
    assert r["status"] == -1 and "timed out after 2.5 s" in r["msg"]
    assert r["attempts"] >= 2 and len(srv.requests) == r["attempts"]
    assert 2.4 <= r["elapsed"] <= 2.7
    assert run.wall < 2.5 + 1 + 1.5  # deadline + 1 s + interpreter start-up


@pytest.mark.parametrize("case", ["refused", "hanging"])
def test_deadline_honoured(server, run_module, case):
    if case == "refused":
        url = "http://127.0.0.1:%d/health" % free_port()
    else:
        url = server(lambda t, path, m, h: HANG).url + "/health"
    run = run_module({"url": url, "timeout": 2, "request_timeout": 30})
    assert run.rc == 1, run
    assert 2.0 <= run.result["elapsed"] <= 2.0 + 1.0
    assert "timed out after 2 s" in run.result["msg"]


def test_tls_validate_certs_and_ca_path(server, run_module, tls_files):
    srv = server(lambda t, path, m, h: (200, {"ok": True}), tls=tls_files)
    url = srv.url + "/health"
    untrusted = run_module({"url": url, "timeout": 1.5, "interval": 0.2})
    assert untrusted.rc == 1, untrusted
    assert untrusted.result["status"] == -1 and "CERTIFICATE_VERIFY_FAILED" in untrusted.result["msg"]
    assert untrusted.result["attempts"] >= 2  # a TLS error means "not yet", polling went on

    insecure = run_module({"url": url, "timeout": 10, "validate_certs": False})
    assert insecure.rc == 0 and insecure.result["ready"] and insecure.result["json"] == {"ok": True}, insecure

    trusted = run_module({"url": url, "timeout": 10, "ca_path": tls_files["ca"]})
    assert trusted.rc == 0 and trusted.result["ready"] and trusted.result["attempts"] == 1, trusted


def test_json_query_depends_on_the_body(server, run_module):
    pytest.importorskip("jmespath")

    def models(t, path, m, h):
        data = [{"id": "qwen3.5-122b-a10b", "object": "model"}] if t > 1.0 else []
        return 200, {"object": "list", "data": data}

    srv = server(models)
    run = run_module({"url": srv.url + "/v1/models", "timeout": 20, "interval": 0.2,
                      "json_query": "data[?id=='qwen3.5-122b-a10b'] | length(@) > `0`"})
    assert run.rc == 0, run
    assert run.result["attempts"] >= 2
    assert srv.requests[-1]["elapsed"] > 1.0 and all(req["elapsed"] <= 1.0 for req in srv.requests[:-1])
    assert run.result["json"]["data"][0]["id"] == "qwen3.5-122b-a10b"
    assert [e["status"] for e in run.result["status_history"]] == [200]

    never = run_module({"url": srv.url + "/v1/models", "timeout": 1, "json_query": "data[?id=='other'] | [0]"})
    assert never.rc == 1 and "json_query" in never.result["msg"], never


def test_post_body_and_consecutive(server, run_module):
    srv = server(lambda t, path, m, h: (200, {"text": " Paris."}) if m == "POST" else 405)
    run = run_module({"url": srv.url + "/generate", "method": "POST", "consecutive": 3, "interval": 0.05,
                      "body": {"text": "The capital city of France is", "sampling_params": {"max_new_tokens": 8}}})
    assert run.rc == 0 and run.result["attempts"] == 3, run
    assert json.loads(srv.requests[0]["body"])["sampling_params"] == {"max_new_tokens": 8}
    assert run.result["json"] == {"text": " Paris."}


def test_check_mode_skips_or_probes_once(server, run_module):
    srv = server(lambda t, path, m, h: 503)
    skipped = run_module({"url": srv.url + "/health"}, check_mode=True)
    assert skipped.rc == 0 and skipped.result["ready"] is None and srv.requests == [], skipped
    probed = run_module({"url": srv.url + "/health", "check_mode_probe": True}, check_mode=True)
    assert probed.rc == 0 and probed.result["ready"] is False and probed.result["status"] == 503, probed
    assert len(srv.requests) == 1


@pytest.mark.skipif(not shutil.which("ansible", path=os.path.dirname(sys.executable)),
                    reason="ansible CLI not installed next to this Python")
def test_through_ansible_adhoc(server):
    srv = server(lambda t, path, m, h: (200, {"api_key": "sk-live-123", "speculative_algorithm": "EAGLE"}))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=TREE, ANSIBLE_STDOUT_CALLBACK="json",
               ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0",
               ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible"), "localhost", "-m",
           "llmserve.sglang.wait_for_endpoint", "-a",
           json.dumps({"url": srv.url + "/server_info", "api_key": "sk-live-123", "timeout": 10})]
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "sk-live-123" not in proc.stdout
    result = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert result["ready"] is True and result["changed"] is False
    assert result["json"]["speculative_algorithm"] == "EAGLE"
    assert time.monotonic() - start < 30
