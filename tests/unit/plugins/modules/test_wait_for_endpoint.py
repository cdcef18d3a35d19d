# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the wait_for_endpoint module: fake clock, patched fetch_url, no network."""

from __future__ import annotations

import io
import json

import pytest

from ansible.module_utils import basic
from ansible.module_utils.common.text.converters import to_bytes

from ansible_collections.llmserve.sglang.plugins.module_utils import endpoint_wait
from ansible_collections.llmserve.sglang.plugins.module_utils import http_client
from ansible_collections.llmserve.sglang.plugins.modules import wait_for_endpoint as wfe
from ansible_collections.llmserve.sglang.tests.unit.plugins.modules.module_exits import ExitJson, FailJson, patch_exits


class Clock(object):
    def __init__(self):
        self.now = 500.0
        self.sleeps = []

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


class Response(io.BytesIO):
    """A response body that reads like a socket file: each read hands out the next bytes."""


class FakeFetch(object):
    """Stands in for fetch_url: answers from a script of (status, body, latency)."""

    def __init__(self, clock, script, default=None):
        self.clock = clock
        self.script = list(script)
        self.default = default
        self.calls = []

    def __call__(self, module, url, data=None, headers=None, method=None, timeout=10, ca_path=None, **kwargs):
        self.calls.append(dict(url=url, data=data, headers=dict(headers or {}), method=method, timeout=timeout,
                               ca_path=ca_path, validate_certs=module.params["validate_certs"]))
        step = self.script.pop(0) if self.script else self.default
        step = list(step)
        status = step[0]
        body = step[1] if len(step) > 1 else None
        latency = step[2] if len(step) > 2 else 0.0
        if latency >= timeout:
            self.clock.now += timeout
            return None, {"status": -1, "msg": "Connection failure: timed out", "url": url}
        self.clock.now += latency
        if status == -1:
            return None, {"status": -1, "msg": "Request failed: <urlopen error [Errno 111] Connection refused>"}
        info = {"status": status, "msg": "OK", "url": url, "content-type": "application/json"}
        if status >= 400:
            info["body"] = body or b""
            return None, info
        return Response(body or b""), info


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(endpoint_wait.time, "monotonic", c.monotonic)
    monkeypatch.setattr(endpoint_wait.time, "sleep", c.sleep)
    return c


@pytest.fixture(autouse=True)
def patched_module(monkeypatch):
    patch_exits(monkeypatch)


def run_module(monkeypatch, args, fetch, check_mode=False):
    args = dict(args)
    if check_mode:
        args["_ansible_check_mode"] = True
    monkeypatch.setattr(basic, "_ANSIBLE_ARGS", to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args})))
    monkeypatch.setattr(basic, "_ANSIBLE_PROFILE", "legacy")
    monkeypatch.setattr(wfe, "build_fetcher", lambda module: fetch)
    with pytest.raises((ExitJson, FailJson)) as exc:
        wfe.main()
    return exc.value


URL = "http://127.0.0.1:30000/health"


def test_refused_then_503_then_200(monkeypatch, clock):
    fetch = FakeFetch(clock, [(-1,)] * 4 + [(503,)] * 3 + [(200, b"")])
    out = run_module(monkeypatch, {"url": URL}, fetch)
    assert isinstance(out, ExitJson)
    r = out.result
    assert r["changed"] is False and r["ready"] is True and r["status"] == 200 and r["attempts"] == 8
    assert [(e["status"], e["count"]) for e in r["status_history"]] == [(-1, 4), (503, 3), (200, 1)]
    assert r["elapsed"] == pytest.approx(7 * 0.25)
    assert clock.sleeps == [0.25] * 7
    assert "json" not in r and "unit_state" not in r
    assert all(c["method"] == "GET" and c["timeout"] == 30 for c in fetch.calls)


@pytest.mark.parametrize("status,word", [(401, "api_key"), (403, "api_key"), (404, "wrong path"), (405, "method")])
def test_fail_status_codes_fail_fast_with_hint(monkeypatch, clock, status, word):
    fetch = FakeFetch(clock, [(-1,), (status, b'{"detail": "nope"}')])
    out = run_module(monkeypatch, {"url": URL}, fetch)
    assert isinstance(out, FailJson)
    assert out.result["status"] == status and out.result["attempts"] == 2
    assert word in out.result["msg"] and out.result["changed"] is False
    assert out.result["json"] == {"detail": "nope"}


def test_empty_fail_list_keeps_polling_on_404(monkeypatch, clock):
    fetch = FakeFetch(clock, [(404,), (404,), (200,)])
    out = run_module(monkeypatch, {"url": URL, "fail_status_code": []}, fetch)
    assert isinstance(out, ExitJson) and out.result["attempts"] == 3


def test_deadline_and_request_timeout_cap(monkeypatch, clock):
    # a server that accepts but never answers in time
    fetch = FakeFetch(clock, [], default=(200, b"", 1e9))
    out = run_module(monkeypatch, {"url": URL, "timeout": 70, "request_timeout": 30, "interval": 1}, fetch)
    assert isinstance(out, FailJson)
    r = out.result
    assert r["elapsed"] == pytest.approx(70.0)
    assert [c["timeout"] for c in fetch.calls] == pytest.approx([30, 30, 8])
    assert "timed out after 70 s" in r["msg"] and r["status"] == -1


def test_api_key_header_no_log_and_redaction(monkeypatch, clock):
    body = json.dumps({"api_key": "sk-secret-1", "speculative_algorithm": "EAGLE", "max_total_tokens": 9,
                       "launch_command": "sglang serve --api-key sk-secret-1"}).encode()
    fetch = FakeFetch(clock, [(200, body)])
    out = run_module(monkeypatch, {"url": "http://127.0.0.1:30000/server_info", "api_key": "sk-secret-1",
                                   "headers": {"authorization": "Basic old", "X-Extra": "1"}}, fetch)
    assert isinstance(out, ExitJson)
    headers = fetch.calls[0]["headers"]
    assert headers == {"Authorization": "Bearer sk-secret-1", "X-Extra": "1"}
    assert "sk-secret-1" not in json.dumps(out.result)
    assert out.result["json"]["api_key"] == "********"
    assert out.result["json"]["speculative_algorithm"] == "EAGLE"
    assert out.result["json"]["max_total_tokens"] == 9


def test_metric_names_reads_the_samples_of_the_ready_answer(monkeypatch, clock):
    text = (b'# TYPE sglang:startup_time_seconds gauge\n'
            b'sglang:startup_time_seconds{phase="load_weight"} 41.5\nsglang:num_running_reqs 0\n')
    fetch = FakeFetch(clock, [(503, b"sglang:startup_time_seconds 1\n"), (200, text)])
    out = run_module(monkeypatch, {"url": "http://127.0.0.1:30000/metrics", "api_key": "sk-secret-1",
                                   "metric_names": ["sglang:startup_time_seconds", "sglang:weight_load_duration_seconds"]},
                     fetch)
    assert isinstance(out, ExitJson) and fetch.calls[-1]["headers"]["Authorization"] == "Bearer sk-secret-1"
    # the ready answer's samples only; a name it lacks is absent
    assert out.result["metrics"] == {"sglang:startup_time_seconds": [{"labels": {"phase": "load_weight"},
                                                                      "value": 41.5}]}
    # without metric_names nothing is read
    fetch = FakeFetch(clock, [(200, text)])
    assert "metrics" not in run_module(monkeypatch, {"url": "http://127.0.0.1:30000/metrics"}, fetch).result


def test_json_body_post(monkeypatch, clock):
    fetch = FakeFetch(clock, [(200, b'{"text": "Paris"}')])
    out = run_module(monkeypatch, {"url": "http://127.0.0.1:30000/generate", "method": "post",
                                   "body": {"text": "The capital of France is"}}, fetch)
    call = fetch.calls[0]
    assert call["method"] == "POST" and json.loads(call["data"]) == {"text": "The capital of France is"}
    assert call["headers"]["Content-Type"] == "application/json"
    assert out.result["json"] == {"text": "Paris"}


def test_raw_body_and_tls_options_are_passed(monkeypatch, clock):
    fetch = FakeFetch(clock, [(200,)])
    run_module(monkeypatch, {"url": "https://127.0.0.1:1/x", "body": "a=b", "body_format": "raw",
                             "headers": {"Content-Type": "text/plain"}, "ca_path": "/tmp/ca.pem",
                             "validate_certs": False}, fetch)
    call = fetch.calls[0]
    assert call["data"] == "a=b" and call["headers"] == {"Content-Type": "text/plain"}
    assert call["ca_path"] == "/tmp/ca.pem" and call["validate_certs"] is False


def test_json_query_waits_for_truthy_result(monkeypatch, clock):
    pytest.importorskip("jmespath")
    empty = b'{"data": []}'
    listed = b'{"data": [{"id": "qwen"}]}'
    fetch = FakeFetch(clock, [(200, empty), (200, empty), (200, listed)])
    out = run_module(monkeypatch, {"url": URL, "json_query": "data[?id=='qwen'] | length(@) > `0`"}, fetch)
    assert isinstance(out, ExitJson) and out.result["attempts"] == 3


def test_json_query_never_true_reports_result(monkeypatch, clock):
    pytest.importorskip("jmespath")
    fetch = FakeFetch(clock, [], default=(200, b'{"speculative_algorithm": null}'))
    out = run_module(monkeypatch, {"url": URL, "json_query": "speculative_algorithm", "timeout": 1}, fetch)
    assert isinstance(out, FailJson)
    assert "gave null" in out.result["msg"]


def test_json_query_invalid_expression(monkeypatch, clock):
    pytest.importorskip("jmespath")
    out = run_module(monkeypatch, {"url": URL, "json_query": "data[?"}, FakeFetch(clock, []))
    assert isinstance(out, FailJson) and "not a valid JMESPath expression" in out.result["msg"]


def test_missing_jmespath_names_the_package(monkeypatch, clock):
    monkeypatch.setattr(wfe, "jmespath", None)
    fetch = FakeFetch(clock, [(200,)])
    out = run_module(monkeypatch, {"url": URL, "json_query": "a"}, fetch)
    assert isinstance(out, FailJson)
    assert "jmespath" in out.result["msg"] and "python3-jmespath" in out.result["msg"]
    assert fetch.calls == []


@pytest.mark.parametrize("args,needle", [
    ({"url": "127.0.0.1:30000/health"}, "url must be an absolute http"),
    ({"url": URL, "timeout": 0}, "timeout must be a finite number of seconds greater than 0"),
    ({"url": URL, "interval": -1}, "interval must be a finite number of seconds greater than 0"),
    ({"url": URL, "request_timeout": 0}, "request_timeout must be a finite number of seconds greater than 0"),
    ({"url": URL, "consecutive": 0}, "consecutive must be 1 or more"),
    ({"url": URL, "journal_lines": -1}, "journal_lines must be 0 or more"),
    ({"url": URL, "status_code": []}, "status_code must list at least one"),
    ({"url": URL, "status_code": [200, 700]}, "status_code entries must be HTTP status codes"),
    ({"url": URL, "fail_status_code": [-1]}, "fail_status_code entries must be HTTP status codes"),
    ({"url": URL, "status_code": [200, 404]}, "must not overlap; both list 404"),
    ({"url": URL, "body": {"a": 1}, "body_format": "raw"}, "body must be a string when body_format is raw"),
    ({"url": URL, "unit": " "}, "unit must be a systemd unit name"),
    ({"url": URL, "timeout": "inf"}, "timeout must be a finite number of seconds greater than 0"),
    ({"url": URL, "timeout": "nan"}, "timeout must be a finite number of seconds greater than 0"),
    ({"url": URL, "timeout": 1e300}, "timeout must be a finite number of seconds greater than 0 and at most 604800"),
    ({"url": URL, "interval": "inf"}, "interval must be a finite number of seconds greater than 0"),
    ({"url": URL, "interval": "nan"}, "interval must be a finite number of seconds greater than 0"),
    ({"url": URL, "request_timeout": "-inf"}, "request_timeout must be a finite number of seconds greater than 0"),
    ({"url": URL, "request_timeout": float("inf")}, "request_timeout must be a finite number of seconds"),
    ({"url": URL, "request_timeout": -5}, "request_timeout must be a finite number of seconds greater than 0"),
    ({"url": URL, "max_body_bytes": 0}, "max_body_bytes must be 1 or more"),
    ({"url": "http://[::1/health"}, "url must be an absolute http"),
    ({"url": "http://127.0.0.1:port/health"}, "url must be an absolute http"),
    ({"url": "http://u:pw-in-url@/health"}, "url must be an absolute http:// or https:// URL, got 'http://********@/health'"),
])
def test_bad_input_is_named(monkeypatch, clock, args, needle):
    fetch = FakeFetch(clock, [(200,)])
    out = run_module(monkeypatch, args, fetch)
    assert isinstance(out, FailJson) and needle in out.result["msg"]
    assert fetch.calls == [] and "pw-in-url" not in json.dumps(out.result)


def test_check_mode_does_not_wait_by_default(monkeypatch, clock):
    fetch = FakeFetch(clock, [(200,)])
    out = run_module(monkeypatch, {"url": URL}, fetch, check_mode=True)
    assert isinstance(out, ExitJson)
    assert out.result["ready"] is None and out.result["attempts"] == 0 and "not waiting" in out.result["msg"]
    assert fetch.calls == []


def test_check_mode_probe_sends_one_request(monkeypatch, clock):
    fetch = FakeFetch(clock, [(503,), (200,)])
    out = run_module(monkeypatch, {"url": URL, "check_mode_probe": True}, fetch, check_mode=True)
    assert isinstance(out, ExitJson)
    assert out.result["ready"] is False and out.result["status"] == 503 and len(fetch.calls) == 1
    assert clock.sleeps == []


def test_check_mode_probe_fails_on_fail_status(monkeypatch, clock):
    fetch = FakeFetch(clock, [(401,)])
    out = run_module(monkeypatch, {"url": URL, "check_mode_probe": True}, fetch, check_mode=True)
    assert isinstance(out, FailJson) and "api_key" in out.result["msg"]


class FakeSystem(object):
    """run_command/get_bin_path replacement simulating a unit that dies after a few polls."""

    def __init__(self, states, journal):
        self.states = list(states)
        self.journal = journal
        self.calls = []

    # bound to this object, so AnsibleModule's self is not passed
    def run_command(self, argv, **kwargs):
        self.calls.append(list(argv))
        if argv[0].endswith("systemctl"):
            out = self.states.pop(0) if len(self.states) > 1 else self.states[0]
            return 0, out, ""
        if "--sync" in argv:
            return 0, "", ""
        return 0, self.journal, ""

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return "/usr/bin/" + name


def _show(active, sub, inv, restarts=0, status=0):
    return ("LoadState=loaded\nActiveState=%s\nSubState=%s\nInvocationID=%s\nNRestarts=%d\nExecMainStatus=%d\n"
            "ExecMainExitTimestampMonotonic=0\nResult=success\n" % (active, sub, inv, restarts, status))


def test_unit_crash_fails_fast_with_journal_of_that_invocation(monkeypatch, clock):
    system = FakeSystem([_show("active", "running", "inv2")] * 3 + [_show("activating", "auto-restart", "inv2", 0, 9)],
                        "Load weight begin\nInitialization failed. warmup error\n")
    monkeypatch.setattr(basic.AnsibleModule, "run_command", system.run_command)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", system.get_bin_path)
    fetch = FakeFetch(clock, [], default=(503,))
    out = run_module(monkeypatch, {"url": URL, "unit": "sglang.service", "journal_lines": 7}, fetch)
    assert isinstance(out, FailJson)
    r = out.result
    assert "systemd will restart it" in r["msg"] and r["attempts"] == 3
    assert r["journal"] == ["Load weight begin", "Initialization failed. warmup error"]
    assert r["unit_state"]["sub_state"] == "auto-restart" and r["unit_state"]["exec_main_status"] == 9
    journal_call = system.calls[-1]
    assert journal_call[0] == "/usr/bin/journalctl" and "_SYSTEMD_INVOCATION_ID=inv2" in journal_call
    assert journal_call[journal_call.index("-n") + 1] == "7"


def test_unit_success_returns_state_and_empty_journal(monkeypatch, clock):
    system = FakeSystem([_show("active", "running", "inv1")], "should not be read\n")
    monkeypatch.setattr(basic.AnsibleModule, "run_command", system.run_command)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", system.get_bin_path)
    out = run_module(monkeypatch, {"url": URL, "unit": "sglang.service"}, FakeFetch(clock, [(503,), (200,)]))
    assert isinstance(out, ExitJson)
    assert out.result["journal"] == [] and out.result["unit_state"]["active_state"] == "active"
    assert not any("journalctl" in c[0] for c in system.calls)


def test_unit_without_systemd_is_a_clear_error(monkeypatch, clock):
    def run_command(module, argv, **kwargs):
        return 1, "", "System has not been booted with systemd as init system (PID 1). Can't operate."

    monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda *a, **k: "/usr/bin/systemctl")
    out = run_module(monkeypatch, {"url": URL, "unit": "sglang.service"}, FakeFetch(clock, [(200,)]))
    assert isinstance(out, FailJson)
    assert "cannot read the state of unit sglang.service" in out.result["msg"]


def test_body_read_failure_keeps_status(monkeypatch, clock):
    class Broken(Response):
        def read(self, limit=-1):
            raise TimeoutError("timed out")

        read1 = read

    def fetch(module, url, **kwargs):
        return Broken(b'{"a": 1}'), {"status": 200, "msg": "OK"}

    out = run_module(monkeypatch, {"url": URL}, fetch)
    assert isinstance(out, ExitJson) and out.result["status"] == 200 and "json" not in out.result
    pytest.importorskip("jmespath")
    out = run_module(monkeypatch, {"url": URL, "json_query": "a", "timeout": 1}, fetch)
    assert isinstance(out, FailJson)
    assert out.result["status_history"][0]["reason"] == "json_query: reading the body failed: timed out"


def test_docs_parse_and_match_argument_spec():
    yaml = pytest.importorskip("yaml")
    doc = yaml.safe_load(wfe.DOCUMENTATION)
    yaml.safe_load(wfe.EXAMPLES)
    ret = yaml.safe_load(wfe.RETURN)
    captured = {}

    def fake_init(self, argument_spec, **kwargs):
        captured.update(argument_spec)
        captured["__check_mode__"] = kwargs.get("supports_check_mode")

    orig = basic.AnsibleModule.__init__
    try:
        basic.AnsibleModule.__init__ = fake_init
        wfe.build_module()
    finally:
        basic.AnsibleModule.__init__ = orig
    assert captured.pop("__check_mode__") is True
    assert set(doc["options"]) == set(captured)
    for name, spec in captured.items():
        assert doc["options"][name]["type"] == spec["type"], name
        assert doc["options"][name].get("default") == spec.get("default"), name
    assert set(ret) >= {"ready", "status", "elapsed", "attempts", "status_history", "json", "unit_state", "journal", "msg"}


# --- build_fetcher: fetch_url's calling convention over one urls.Request -----------------------------

class _Resp(object):
    status = 200

    def __init__(self, body=b"{}", headers=None):
        self.headers = headers or {"Content-Length": "2", "Content-Type": "application/json"}
        self._body = body

    def read(self, limit=-1):
        return self._body


def _module_for(monkeypatch, args):
    monkeypatch.setattr(basic, "_ANSIBLE_ARGS", to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args})))
    monkeypatch.setattr(basic, "_ANSIBLE_PROFILE", "legacy")
    return wfe.build_module()


def test_fetcher_uses_one_request_with_the_module_settings(monkeypatch):
    calls = []

    def fake_open(self, method, url, data=None, headers=None, timeout=None, **kwargs):
        calls.append((method, url, data, headers, timeout, self))
        return _Resp()

    monkeypatch.setattr(http_client.urls.Request, "open", fake_open)
    monkeypatch.setattr(http_client.urls, "make_context", lambda **kw: object())  # the files do not exist here
    module = _module_for(monkeypatch, {"url": URL, "validate_certs": False, "ca_path": "/ca.pem",
                                       "client_cert": "/c.pem", "client_key": "/k.pem"})
    fetch = wfe.build_fetcher(module)
    request = fetch.request
    assert isinstance(request, http_client.urls.Request)
    assert (request.validate_certs, request.ca_path, request.client_cert, request.client_key) == \
        (False, "/ca.pem", "/c.pem", "/k.pem")
    assert request.follow_redirects == "none"
    for timeout in (5, 4.5, 0.25):
        resp, info = fetch(module, URL, data='{"a": 1}', headers={"X": "1"}, method="POST", timeout=timeout)
        assert info["status"] == 200 and info["content-type"] == "application/json" and resp.read() == b"{}"
    assert [c[4] for c in calls] == [5, 4.5, 0.25]
    assert all(c[5] is request and c[0] == "POST" and c[3] == {"X": "1"} for c in calls)


def test_fetcher_builds_the_tls_context_once(monkeypatch):
    made = []
    monkeypatch.setattr(http_client.urls, "make_context", lambda **kw: made.append(kw) or object())
    monkeypatch.setattr(http_client.urls.Request, "open", lambda self, *a, **kw: _Resp())
    module = _module_for(monkeypatch, {"url": URL, "validate_certs": False, "ca_path": "/ca.pem"})
    fetch = wfe.build_fetcher(module)
    for dummy in range(3):
        fetch(module, URL, timeout=1)
    assert len(made) == 1 and made[0] == {"cafile": "/ca.pem", "validate_certs": False, "client_cert": None,
                                          "client_key": None}
    assert fetch.request.context is not None


@pytest.mark.parametrize("error,status,msg", [
    (http_client.urllib.error.URLError(ConnectionRefusedError(111, "Connection refused")), -1, "Request failed"),
    (TimeoutError("timed out"), -1, "Connection failure: timed out"),
    (ConnectionResetError(104, "reset"), -1, "Connection failure"),
    (http_client.http.client.BadStatusLine("garbage"), -1, "closed before a valid response"),
    (http_client.urls.SSLValidationError("bad cert"), -1, "Request failed: bad cert"),
])
def test_fetcher_maps_errors_like_fetch_url(monkeypatch, error, status, msg):
    def fake_open(self, *args, **kwargs):
        raise error

    monkeypatch.setattr(http_client.urls.Request, "open", fake_open)
    module = _module_for(monkeypatch, {"url": URL})
    resp, info = wfe.build_fetcher(module)(module, URL, timeout=1)
    assert resp is None and info["status"] == status and msg in info["msg"]


def test_fetcher_http_error_keeps_body(monkeypatch):
    def fake_open(self, *args, **kwargs):
        raise http_client.urllib.error.HTTPError(URL, 503, "Service Unavailable", {"Content-Type": "text/plain"},
                                                 io.BytesIO(b"warming up"))

    monkeypatch.setattr(http_client.urls.Request, "open", fake_open)
    module = _module_for(monkeypatch, {"url": URL})
    resp, info = wfe.build_fetcher(module)(module, URL, timeout=1)
    # the body is left to the caller, who reads it with the max_body_bytes cap (fetch_url would read it whole)
    assert info["status"] == 503 and info["content-type"] == "text/plain" and "body" not in info
    assert info["msg"] == "HTTP Error 503: Service Unavailable" and resp.read() == b"warming up"


def test_fetcher_bad_url_fails(monkeypatch):
    def fake_open(self, *args, **kwargs):
        raise ValueError("unknown url type")

    monkeypatch.setattr(http_client.urls.Request, "open", fake_open)
    module = _module_for(monkeypatch, {"url": URL})
    with pytest.raises(FailJson) as exc:
        wfe.build_fetcher(module)(module, URL, timeout=1)
    assert "unknown url type" in exc.value.result["msg"]


# --- security review (issue 13) -----------------------------------------------------------------

def _loopback_open(monkeypatch):
    calls = []

    def fake_open(self, method, url, **kwargs):
        calls.append(dict(kwargs, url=url, follow_redirects=self.follow_redirects))
        return _Resp()

    monkeypatch.setattr(http_client.urls.Request, "open", fake_open)
    return calls


@pytest.mark.parametrize("url,proxied", [
    ("http://127.0.0.1:30000/health", False), ("http://localhost:30000/health", False),
    ("http://[::1]:30000/health", False), ("http://169.254.169.254/latest", False),
    ("http://[fe80::1%25eth0]:30000/health", False), ("http://u:p@127.0.0.1:1/x", False),
    ("http://sglang.example.com:30000/health", True), ("https://10.0.0.7/health", True),
])
def test_fetcher_never_proxies_loopback_and_never_redirects(monkeypatch, url, proxied):
    calls = _loopback_open(monkeypatch)
    module = _module_for(monkeypatch, {"url": url})
    wfe.build_fetcher(module)(module, url, timeout=1)
    assert calls[0]["use_proxy"] is proxied and calls[0]["follow_redirects"] == "none"


def test_fetcher_use_proxy_false_stays_false(monkeypatch):
    calls = _loopback_open(monkeypatch)
    module = _module_for(monkeypatch, {"url": URL, "use_proxy": False})
    wfe.build_fetcher(module)(module, "http://sglang.example.com/health", timeout=1)
    assert calls[0]["use_proxy"] is False


def test_fetcher_returns_a_redirect_unread_with_its_location(monkeypatch):
    def fake_open(self, *args, **kwargs):
        raise http_client.urllib.error.HTTPError("http://other:2/x", 302, "Found",
                                                 {"Location": "http://a:b@other:2/x"}, io.BytesIO(b"moved"))

    monkeypatch.setattr(http_client.urls.Request, "open", fake_open)
    module = _module_for(monkeypatch, {"url": URL})
    resp, info = wfe.build_fetcher(module)(module, URL, timeout=1)
    assert info["status"] == 302 and info["location"] == "http://a:b@other:2/x" and resp.read() == b"moved"


def test_redirect_is_not_ready_and_location_is_masked(monkeypatch, clock):
    def fetch(module, url, **kwargs):
        return Response(b""), {"status": 307, "msg": "HTTP Error 307: \x1b[31mred", "location": "http://u:pw1@o:2/\x00"}

    out = run_module(monkeypatch, {"url": URL, "timeout": 1}, fetch)
    assert isinstance(out, FailJson)
    entry = out.result["status_history"][0]
    assert entry["status"] == 307 and entry["reason"] == "redirect to http://********@o:2/\\x00, not followed"
    assert "pw1" not in json.dumps(out.result) and "\x1b" not in json.dumps(out.result)


def test_error_body_is_capped(monkeypatch, clock):
    handed_out = []

    class Big(Response):
        def read1(self, size=-1):
            data = super().read1(size)
            handed_out.append(len(data))
            return data

        def read(self, size=-1):
            raise AssertionError("the body must be read in bounded chunks")

    out = run_module(monkeypatch, {"url": URL, "timeout": 1, "max_body_bytes": 1000},
                     lambda module, url, **kw: (Big(b"e" * 5000), {"status": 503, "msg": "HTTP Error 503"}))
    assert isinstance(out, FailJson)
    assert handed_out and sum(handed_out) == 1001 * out.result["attempts"]  # limit + 1 bytes a request, not 5000
    assert "larger than max_body_bytes, 1000 bytes" in out.result["status_history"][0]["reason"]


def test_success_body_over_the_cap_fails_json_query_but_not_status(monkeypatch, clock):
    pytest.importorskip("jmespath")
    body = json.dumps({"ok": True, "pad": "x" * 2000}).encode()
    fetch = FakeFetch(clock, [], default=(200, body))
    out = run_module(monkeypatch, {"url": URL, "timeout": 1, "max_body_bytes": 1024, "json_query": "ok"}, fetch)
    assert isinstance(out, FailJson) and "json_query: the body is larger than max_body_bytes" in out.result["msg"]
    plain = run_module(monkeypatch, {"url": URL, "max_body_bytes": 1024}, FakeFetch(clock, [(200, body)]))
    assert isinstance(plain, ExitJson) and plain.result["ready"] and "json" not in plain.result


def test_request_deadline_inside_the_body_read(monkeypatch, clock):
    class Stalled(Response):
        def read1(self, size=-1):
            raise endpoint_wait.RequestDeadline()

    out = run_module(monkeypatch, {"url": URL, "timeout": 1, "json_query": "ok"},
                     lambda module, url, **kw: (Stalled(b""), {"status": 200, "msg": "OK"}))
    assert isinstance(out, FailJson)
    assert "the body was not read completely within" in out.result["status_history"][0]["reason"]


def test_request_deadline_before_the_answer_is_no_connection(monkeypatch, clock):
    def fetch(module, url, **kwargs):
        raise endpoint_wait.RequestDeadline()

    out = run_module(monkeypatch, {"url": URL, "timeout": 1}, fetch)
    assert isinstance(out, FailJson) and out.result["status"] == -1
    assert "no complete answer within" in out.result["status_history"][0]["reason"]


def test_deep_json_is_never_a_traceback(monkeypatch, clock):
    deep = b"[" * 100000 + b"]" * 100000
    out = run_module(monkeypatch, {"url": URL}, FakeFetch(clock, [(200, deep)]))
    assert isinstance(out, ExitJson) and out.result["ready"] and "json" not in out.result
    pytest.importorskip("jmespath")
    out = run_module(monkeypatch, {"url": URL, "json_query": "a", "timeout": 1}, FakeFetch(clock, [], default=(200, deep)))
    assert isinstance(out, FailJson) and "nested deeper than 100 levels" in out.result["msg"]


def test_secrets_headers_and_url_password_are_masked_everywhere(monkeypatch, clock):
    body = json.dumps({"echo": "lit-1 hdr-2 tok-3 pw:4", "mode": "x"}).encode()
    fetch = FakeFetch(clock, [(200, body)])
    out = run_module(monkeypatch, {"url": "http://svc:pw%3A4@127.0.0.1:30000/health", "secrets": ["lit-1"],
                                   "headers": {"X-Api-Key": "hdr-2", "Authorization": "Bearer tok-3", "X-Mode": "x"}},
                     fetch)
    assert isinstance(out, ExitJson)
    assert out.result["json"] == {"echo": "******** ******** ******** ********", "mode": "x"}
    assert "http://********@127.0.0.1:30000/health answered 200" in out.result["msg"]


def test_json_keys_filters_after_the_query(monkeypatch, clock):
    pytest.importorskip("jmespath")
    body = json.dumps({"speculative_algorithm": "EAGLE", "version": "0.5.23", "model_path": "/m"}).encode()
    out = run_module(monkeypatch, {"url": URL, "json_keys": ["version"], "json_query": "model_path == '/m'"},
                     FakeFetch(clock, [(200, body)]))
    assert isinstance(out, ExitJson) and out.result["json"] == {"version": "0.5.23"}
    listed = run_module(monkeypatch, {"url": URL, "json_keys": ["version"]}, FakeFetch(clock, [(200, b"[1, 2]")]))
    assert isinstance(listed, ExitJson) and "json" not in listed.result
    empty = run_module(monkeypatch, {"url": URL, "json_keys": []}, FakeFetch(clock, [(200, body)]))
    assert empty.result["json"] == {}


def test_journal_lines_are_masked(monkeypatch, clock):
    system = FakeSystem([_show("active", "running", "inv3")] + [_show("failed", "failed", "inv3", 0, 1)],
                        "server_args=ServerArgs(api_key='sk-j1', ssl_keyfile_password='kfp-j2', port=1)\n"
                        "launch: --hf-token hf_j3 --admin-api-key=adm-j4\nextra lit-j5\n")
    monkeypatch.setattr(basic.AnsibleModule, "run_command", system.run_command)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", system.get_bin_path)
    out = run_module(monkeypatch, {"url": URL, "unit": "sglang.service", "secrets": ["lit-j5"]},
                     FakeFetch(clock, [], default=(503,)))
    assert isinstance(out, FailJson)
    assert out.result["journal"] == [
        "server_args=ServerArgs(api_key=********, ssl_keyfile_password=********, port=1)",
        "launch: --hf-token ******** --admin-api-key=********", "extra ********"]


def test_check_mode_probe_masks_and_reports_reason(monkeypatch, clock):
    def fetch(module, url, **kwargs):
        return Response(b""), {"status": 301, "msg": "HTTP Error 301", "location": "https://x:y@elsewhere/"}

    out = run_module(monkeypatch, {"url": "http://a:b-pw@127.0.0.1:1/h", "check_mode_probe": True}, fetch,
                     check_mode=True)
    assert isinstance(out, ExitJson) and out.result["ready"] is False
    assert out.result["status_history"][0]["reason"] == "redirect to https://********@elsewhere/, not followed"
    assert "b-pw" not in json.dumps(out.result) and "redirect to https://********@elsewhere/" in out.result["msg"]
