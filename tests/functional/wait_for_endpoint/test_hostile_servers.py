# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""wait_for_endpoint against hostile servers on 127.0.0.1 (security review, issue 13).

The module runs for real in a child Python. Each test pins one finding: a server that trickles its
answer past the deadline, a huge error body, JSON nested 100000 deep, a redirect that would carry
the API key to another origin, a proxy in the environment that would see loopback polls, a URL
password echoed back, and secrets in SGLang's /server_info under names other than ``api_key``.
"""

from __future__ import annotations

import json
import time

import pytest

from wfe_live_helpers import own_ipv4_address, trickle

# module start-up (interpreter + ansible imports) on a busy machine, on top of the deadline
START_UP = 3.0


def _head(status, length, content_type="application/json"):
    return ("HTTP/1.1 %d Whatever\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n"
            % (status, content_type, length)).encode()


# --- 1. deadline and memory ---------------------------------------------------------------------

@pytest.mark.parametrize("status", [200, 503])
def test_trickling_body_is_cut_at_the_deadline(raw_server, run_module, status):
    body = json.dumps({"ok": True, "pad": "x" * 4000}).encode()

    def behaviour(conn, request, stop):
        conn.sendall(_head(status, len(body)))
        trickle(conn, body, stop, every=0.05, for_at_most=25)  # about 80 s for the whole body

    srv = raw_server(behaviour)
    run = run_module({"url": srv.url + "/server_info", "timeout": 2, "request_timeout": 30, "interval": 0.1,
                      "json_query": "ok"}, limit=60)
    r = run.result
    assert run.rc == 1, run
    assert "timed out after 2 s" in r["msg"]
    assert r["elapsed"] <= 2.0 + 1.0 and run.wall < 2.0 + START_UP, run
    last = r["status_history"][-1]
    assert last["status"] == status and "the body was not read completely within" in last["reason"], last
    assert "json" not in r


def test_trickling_headers_are_cut_at_the_deadline(raw_server, run_module):
    def behaviour(conn, request, stop):
        conn.sendall(b"HTTP/1.1 200 OK\r\n")
        trickle(conn, b"X-Slow: " + b"a" * 60000, stop, every=0.05, for_at_most=25)

    srv = raw_server(behaviour)
    run = run_module({"url": srv.url + "/health", "timeout": 2, "request_timeout": 30}, limit=60)
    r = run.result
    assert run.rc == 1, run
    assert r["status"] == -1 and "timed out after 2 s" in r["msg"]
    assert "no complete answer within" in r["status_history"][-1]["reason"]
    assert r["elapsed"] <= 2.0 + 1.0 and run.wall < 2.0 + START_UP, run


def test_huge_error_body_keeps_memory_bounded(raw_server, run_module):
    size = 256 * 1024 * 1024
    block = b"e" * (1024 * 1024)

    def behaviour(conn, request, stop):
        conn.sendall(_head(503, size, "text/plain"))
        for dummy in range(size // len(block)):
            if stop.is_set():
                return
            conn.sendall(block)

    srv = raw_server(behaviour)
    run = run_module({"url": srv.url + "/health", "timeout": 3, "interval": 0.25}, limit=120)
    r = run.result
    assert run.rc == 1, run
    # the module's own peak RSS (about 40 MiB at rest); reading one body would take 256 MiB or more
    assert run.maxrss_kib < 128 * 1024, run
    assert "timed out after 3 s" in r["msg"] and r["elapsed"] <= 3.0 + 1.0 and run.wall < 3.0 + START_UP, run
    assert r["attempts"] >= 2 and len(srv.requests) == r["attempts"]
    last = r["status_history"][-1]
    assert last["status"] == 503 and "larger than max_body_bytes, 1048576 bytes" in last["reason"], last


@pytest.mark.parametrize("shape", ["list", "object"])
def test_json_nested_100000_deep_is_not_ready_not_a_crash(server, run_module, shape):
    depth = 100000
    body = (b"[" * depth + b"]" * depth) if shape == "list" else (b'{"a":' * depth + b"1" + b"}" * depth)
    srv = server(lambda t, path, m, h: (200, body))
    pytest.importorskip("jmespath")
    run = run_module({"url": srv.url + "/server_info", "timeout": 1.5, "interval": 0.2, "json_query": "a"})
    r = run.result
    assert "Traceback" not in run.stderr and run.rc == 1, run
    assert "timed out after 1.5 s" in r["msg"] and "nested deeper than 100 levels" in r["msg"]
    assert "nested deeper than 100 levels" in r["status_history"][-1]["reason"]
    assert "json" not in r
    # without json_query the status alone decides; the body is just not returned
    plain = run_module({"url": srv.url + "/server_info", "timeout": 5})
    assert plain.rc == 0 and plain.result["ready"] is True and "json" not in plain.result, plain


# --- 2. where the API key goes ------------------------------------------------------------------

@pytest.mark.parametrize("userinfo", ["", "svc:hunter2-pw@"])
def test_redirect_to_another_origin_is_not_followed(server, run_module, userinfo):
    other = server(lambda t, path, m, h: (200, {"ok": True}))  # a second loopback origin (another port)
    location = "http://%s127.0.0.1:%d/health" % (userinfo, other.port)
    srv = server(lambda t, path, m, h: (302, b"", {"Location": location}))
    run = run_module({"url": srv.url + "/health", "api_key": "sk-redirect-7", "timeout": 1.5, "interval": 0.2})
    r = run.result
    # the other origin never saw a request, let alone the Authorization header
    assert [req["authorization"] for req in other.requests] == []
    assert srv.requests and all(req["authorization"] == "Bearer sk-redirect-7" for req in srv.requests)
    assert run.rc == 1 and r["ready"] is False and r["status"] == 302, run
    shown = "http://%s127.0.0.1:%d/health" % ("********@" if userinfo else "", other.port)
    assert r["status_history"] == [dict(r["status_history"][0], status=302, reason="redirect to %s, not followed" % shown)]
    assert "redirect to %s, not followed" % shown in r["msg"]
    assert "hunter2-pw" not in json.dumps(r)


@pytest.mark.parametrize("variable,host", [("http_proxy", "127.0.0.1"), ("HTTP_PROXY", "127.0.0.1"),
                                           ("http_proxy", "localhost")])
def test_loopback_polls_never_go_to_a_proxy(server, run_module, variable, host):
    proxy = server(lambda t, path, m, h: (200, {"via": "proxy"}))
    target = server(lambda t, path, m, h: (200, {"via": "target"}))
    run = run_module({"url": "http://%s:%d/v1/models" % (host, target.port), "api_key": "sk-proxy-3", "timeout": 10},
                     env={variable: proxy.url, "no_proxy": None, "NO_PROXY": None})
    assert proxy.requests == []
    assert run.rc == 0 and run.result["json"] == {"via": "target"}, run
    assert [req["authorization"] for req in target.requests] == ["Bearer sk-proxy-3"]


@pytest.mark.parametrize("use_proxy", [None, True])
def test_polls_of_this_hosts_own_address_never_go_to_a_proxy(server, run_module, use_proxy):
    # issue 24 #2: a server bound to the host's IP is probed at that IP; the proxy must see neither the poll nor the key
    address = own_ipv4_address()
    if address is None:
        pytest.skip("this machine has no IPv4 address other than loopback")
    proxy = server(lambda t, path, m, h: (200, {"via": "proxy"}))
    target = server(lambda t, path, m, h: (200, {"via": "target"}), host=address)
    args = {"url": "%s/v1/models" % target.url, "api_key": "sk-own-ip-5", "timeout": 10}
    if use_proxy is not None:
        args["use_proxy"] = use_proxy
    run = run_module(args, env={"http_proxy": proxy.url, "no_proxy": None, "NO_PROXY": None})
    assert [req["authorization"] for req in proxy.requests] == []
    assert run.rc == 0 and run.result["json"] == {"via": "target"}, run
    assert [req["authorization"] for req in target.requests] == ["Bearer sk-own-ip-5"]


def test_remote_hosts_still_use_the_proxy(server, run_module):
    # the control for the test above: the proxy set-up is live, and use_proxy still works for other hosts
    proxy = server(lambda t, path, m, h: (200, {"via": "proxy"}))
    run = run_module({"url": "http://sglang.example.invalid:30000/health", "timeout": 10},
                     env={"http_proxy": proxy.url, "no_proxy": None, "NO_PROXY": None})
    assert run.rc == 0 and run.result["json"] == {"via": "proxy"}, run
    assert [req["path"] for req in proxy.requests] == ["http://sglang.example.invalid:30000/health"]


def test_url_password_never_comes_back(server, run_module):
    srv = server(lambda t, path, m, h: 503)
    url = "http://svc:s3cr%%40t-pw@127.0.0.1:%d/health" % srv.port
    run = run_module({"url": url, "timeout": 1, "interval": 0.2})
    assert run.rc == 1, run
    out = json.dumps(run.result)  # msg, status history and the module_args Ansible echoes
    assert "s3cr" not in out and "t-pw" not in out
    assert "http://********@127.0.0.1:%d/health" % srv.port in run.result["msg"]
    skipped = run_module({"url": url}, check_mode=True)
    assert "s3cr" not in json.dumps(skipped.result) and "********@127.0.0.1" in skipped.result["msg"], skipped


# --- 3. secrets in answers ----------------------------------------------------------------------

SERVER_INFO = {
    "ssl_keyfile_password": "kfp-1111",
    "secret_key": "sec-2222",
    "x-api-key": "xak-3333",
    "hf_token": "hf_4444",
    "admin_api_key": "adm-6666",
    "ssl_keyfile": "/etc/sglang/key.pem",
    "ssl_certfile": "/etc/sglang/cert.pem",
    "max_total_tokens": 4096,
    "launch_command": ("python3 -m sglang.launch_server --api-key ak-5555 --admin-api-key=adm-6666"
                       " --ssl-keyfile-password kfp-1111 --hf-token hf_4444 --ssl-keyfile /etc/sglang/key.pem"),
    "argv": ["--api-key", "ak-5555", "--port", "30000"],
    "note": "operator extra-7777 in text",
    "speculative_algorithm": "EAGLE",
    "version": "0.5.23",
}
LEAKS = ("kfp-1111", "sec-2222", "xak-3333", "hf_4444", "ak-5555", "adm-6666")


def test_secret_keys_and_flags_are_masked(server, run_module):
    srv = server(lambda t, path, m, h: (200, SERVER_INFO))
    # the module knows none of these values: masking by key name and flag name alone
    run = run_module({"url": srv.url + "/server_info", "timeout": 10})
    assert run.rc == 0, run
    out = json.dumps(run.result)
    assert [leak for leak in LEAKS if leak in out] == []
    info = run.result["json"]
    assert info["ssl_keyfile_password"] == info["secret_key"] == info["x-api-key"] == info["hf_token"] == "********"
    assert info["launch_command"] == ("python3 -m sglang.launch_server --api-key ******** --admin-api-key=********"
                                      " --ssl-keyfile-password ******** --hf-token ******** --ssl-keyfile"
                                      " /etc/sglang/key.pem")
    assert info["argv"] == ["--api-key", "********", "--port", "30000"]
    # innocent neighbours stay readable
    assert info["ssl_keyfile"] == "/etc/sglang/key.pem" and info["ssl_certfile"] == "/etc/sglang/cert.pem"
    assert info["max_total_tokens"] == 4096 and info["speculative_algorithm"] == "EAGLE"


def test_secrets_option_masks_literal_values(server, run_module):
    srv = server(lambda t, path, m, h: (200, SERVER_INFO))
    run = run_module({"url": srv.url + "/server_info", "secrets": ["extra-7777"], "timeout": 10})
    assert run.rc == 0, run
    assert "extra-7777" not in json.dumps(run.result)
    assert run.result["json"]["note"] == "operator ******** in text"


def test_json_keys_keeps_only_the_listed_keys(server, run_module):
    pytest.importorskip("jmespath")
    srv = server(lambda t, path, m, h: (200, SERVER_INFO))
    # json_query sees the whole body; the result keeps only what was asked for
    run = run_module({"url": srv.url + "/server_info", "timeout": 10, "json_keys": ["speculative_algorithm", "version",
                                                                                    "missing"],
                      "json_query": "speculative_algorithm == 'EAGLE' && ssl_keyfile != null"})
    assert run.rc == 0, run
    assert run.result["json"] == {"speculative_algorithm": "EAGLE", "version": "0.5.23"}


FAST = {"LLMSERVE_STANDIN_LOAD_SECONDS": "0.5", "LLMSERVE_STANDIN_WARMUP_SECONDS": "0.5",
        "LLMSERVE_STANDIN_HEALTH_SECONDS": "0.1"}


def test_standin_server_info_leaks_no_secret(standin, run_module):
    proc = standin(["--model-path", "/models/none", "--api-key", "sk-standin-1", "--admin-api-key", "adm-standin-2",
                    "--ssl-keyfile-password", "kfp-standin-3"], **FAST)
    start = time.monotonic()
    run = run_module({"url": proc.url + "/server_info", "api_key": "sk-standin-1", "timeout": 30, "interval": 0.1})
    assert run.rc == 0, (run, proc.stop())
    out = json.dumps(run.result)
    assert "standin-" not in out  # none of the three values, anywhere
    info = run.result["json"]
    assert info["ssl_keyfile_password"] == "********" and "--ssl-keyfile-password ********" in info["launch_command"]
    assert "--admin-api-key ********" in info["launch_command"] and info["version"]
    assert time.monotonic() - start < 30
