# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the gateway_worker module: option rules, documentation against the argument spec, and whole runs
over a fake smg at the HTTP level (the module's fetcher replaced, the shared client's body cap and masking kept)."""

from __future__ import annotations

import io
import json

import pytest

from ansible.module_utils import basic
from ansible.module_utils.common.text.converters import to_bytes

from ansible_collections.llmserve.sglang.plugins.modules import gateway_worker as mod
from ansible_collections.llmserve.sglang.tests.unit.plugins.modules.module_exits import ExitJson, FailJson, patch_exits

ADMIN = "adm-0f1e2d3c4b5a69788"
WKEY = "sk-worker-13579bdf"
GW = "http://127.0.0.1:8000"
A = "http://10.0.0.5:30000"
B = "http://10.0.0.6:30000"


@pytest.fixture(autouse=True)
def patched(monkeypatch):
    patch_exits(monkeypatch)
    # no real sleeping in the waits
    monkeypatch.setattr(mod.WorkerChange, "__init__", _fast_init(mod.WorkerChange.__init__))


def _fast_init(original):
    def init(self, api, p, check_mode=False, clock=None, sleep=None):
        now = [0.0]

        def clock_fn():
            return now[0]

        def sleep_fn(seconds):
            now[0] += seconds
        original(self, api, p, check_mode=check_mode, clock=clock_fn, sleep=sleep_fn)
    return init


class SmgFetch(object):
    """A fake smg at the HTTP level: GET/POST/DELETE /workers, and the worker's /v1/loads."""

    def __init__(self, workers, engine=0, drain_polls=2):
        self.workers = workers
        self.engine = engine
        self.drain_polls = drain_polls
        self.calls = []

    def __call__(self, module, url, data=None, headers=None, method=None, timeout=10, ca_path=None):
        self.calls.append({"method": method, "url": url, "data": data, "headers": dict(headers or {})})
        auth = (headers or {}).get("Authorization")
        if url.startswith(GW):
            if auth != "Bearer " + ADMIN:
                return None, {"status": 401, "msg": "HTTP Error 401: Unauthorized", "body": b"Invalid authentication token"}
            path = url[len(GW):]
            if method == "GET" and path == "/workers":
                for w in list(self.workers):
                    if w["status"] == "draining":
                        self.drain_polls -= 1
                        if self.drain_polls < 0:
                            self.workers.remove(w)
                return _ok({"workers": self.workers, "total": len(self.workers)})
            if method == "DELETE":
                for w in self.workers:
                    if path == "/workers/" + w["id"]:
                        w.update(status="draining", is_healthy=False)
                return _ok({"status": "accepted"}, 202)
            if method == "POST" and path == "/workers":
                body = json.loads(data)
                self.workers.append({"id": "w-new", "url": body["url"], "is_healthy": True, "status": "ready", "load": 0})
                return _ok({"status": "accepted", "worker_id": "w-new"}, 202)
        if url == A + "/v1/loads?include=core":
            return _ok({"loads": [{"dp_rank": 0, "num_running_reqs": self.engine, "num_waiting_reqs": 0}]})
        return None, {"status": 404, "msg": "HTTP Error 404: Not Found", "body": b"{}"}


def _ok(data, status=200):
    return io.BytesIO(json.dumps(data).encode()), {"status": status, "msg": "OK", "content-type": "application/json"}


def worker(url, wid, status="ready", load=0):
    return {"id": wid, "url": url, "is_healthy": status == "ready", "status": status, "load": load,
            "model_id": "m", "worker_type": "regular"}


def run_module(monkeypatch, args, fetch, check_mode=False):
    args = dict({"gateway_url": GW, "admin_api_key": ADMIN, "worker_api_key": WKEY, "worker_url": A}, **args)
    if check_mode:
        args["_ansible_check_mode"] = True
    monkeypatch.setattr(basic, "_ANSIBLE_ARGS", to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args})))
    monkeypatch.setattr(basic, "_ANSIBLE_PROFILE", "legacy")
    monkeypatch.setattr(mod, "build_fetcher", lambda module: fetch)
    with pytest.raises((ExitJson, FailJson)) as exc:
        mod.main()
    return exc.value


def test_absent_then_present_over_http(monkeypatch):
    fetch = SmgFetch([worker(A + "/", "w-a", load=1), worker(B, "w-b")], engine=0)
    out = run_module(monkeypatch, {"state": "absent"}, fetch)
    assert isinstance(out, ExitJson), out.result
    r = out.result
    assert r["changed"] and r["drained"] and r["worker_id"] == "w-a" and r["worker_url"] == A
    assert r["in_flight"] == {"at_removal": {"gateway": 1, "worker": 0}, "at_end": {"gateway": 0, "worker": 0}}
    assert [c["method"] for c in fetch.calls if c["method"] == "DELETE"] == ["DELETE"]
    assert all(c["headers"].get("Authorization") == "Bearer " + (ADMIN if c["url"].startswith(GW) else WKEY)
               for c in fetch.calls)
    out = run_module(monkeypatch, {"state": "present"}, fetch)
    assert isinstance(out, ExitJson) and out.result["changed"] and out.result["healthy"], out.result
    (post,) = [c for c in fetch.calls if c["method"] == "POST"]
    assert json.loads(post["data"]) == {"url": A, "api_key": WKEY}
    assert ADMIN not in json.dumps(out.result) and WKEY not in json.dumps(out.result)


def test_wrong_admin_key_over_http(monkeypatch):
    fetch = SmgFetch([worker(A, "w-a"), worker(B, "w-b")])
    out = run_module(monkeypatch, {"state": "absent", "admin_api_key": "not-the-key-123"}, fetch)
    assert isinstance(out, FailJson)
    assert out.result["msg"] == (
        "GET http://127.0.0.1:8000/workers answered 401 (Unauthorized): Invalid authentication token: the gateway "
        "refused the control-plane key; set admin_api_key to an admin key of its --control-plane-api-keys "
        "(sent as 'Authorization: Bearer <key>')")
    assert "not-the-key-123" not in json.dumps(out.result)


def test_check_mode_over_http_sends_no_change(monkeypatch):
    fetch = SmgFetch([worker(A, "w-a"), worker(B, "w-b")])
    out = run_module(monkeypatch, {"state": "absent"}, fetch, check_mode=True)
    assert isinstance(out, ExitJson) and out.result["changed"] is True
    assert {c["method"] for c in fetch.calls} == {"GET"}


@pytest.mark.parametrize("args,words", [
    ({"gateway_url": "127.0.0.1:8000"}, "gateway_url must be an absolute http:// or https:// URL"),
    ({"gateway_url": "http://admin:%s@gw:8000" % ADMIN}, "gateway_url must not carry credentials"),
    ({"worker_url": "http://fd00::5:30000"}, "worker_url: an IPv6 address must be written in brackets"),
    ({"worker_url": "http://10.0.0.5:30000/\n"}, "worker_url must not contain spaces or control characters"),
    ({"worker_load_url": "http://h:0"}, "worker_load_url must have a port from 1 to 65535"),
    ({"drain_timeout": 0}, "drain_timeout must be a finite number of seconds greater than 0"),
    ({"healthy_timeout": float("inf")}, "healthy_timeout must be a finite number"),
    ({"interval": -1}, "interval must be"),
    ({"request_timeout": 1e9}, "request_timeout must be"),
    ({"min_healthy": -1}, "min_healthy must be 0 or more"),
    ({"max_body_bytes": 10}, "max_body_bytes must be 1024 or more"),
    ({"admin_api_key": "key\r\nX-Injected: 1"}, "admin_api_key must be a non-empty key without spaces or control"),
    ({"worker_api_key": ""}, "worker_api_key must be a non-empty key"),
])
def test_bad_options_fail_before_any_request(monkeypatch, args, words):
    fetch = SmgFetch([worker(A, "w-a")])
    out = run_module(monkeypatch, args, fetch)
    assert isinstance(out, FailJson) and words in out.result["msg"], out.result
    assert fetch.calls == [] and out.result["changed"] is False
    assert ADMIN not in json.dumps(out.result)


def test_validate_params_canonical_urls():
    params = {"gateway_url": "HTTP://GW:8000/", "worker_url": "http://[FD00::5]:30000/", "worker_load_url": None,
              "drain_timeout": 1.0, "healthy_timeout": 1.0, "interval": 1.0, "request_timeout": 1.0,
              "min_healthy": 1, "max_body_bytes": 4096, "admin_api_key": None, "worker_api_key": None}
    error, urls = mod.validate_params(params)
    assert error is None
    assert urls == {"gateway_url": "http://gw:8000", "worker_url": "http://[fd00::5]:30000",
                    "worker_key": "http://[fd00::5]:30000", "worker_load_url": "http://[fd00::5]:30000"}


def test_docs_parse_and_match_argument_spec():
    yaml = pytest.importorskip("yaml")
    doc = yaml.safe_load(mod.DOCUMENTATION)
    yaml.safe_load(mod.EXAMPLES)
    ret = yaml.safe_load(mod.RETURN)
    captured = {}

    def fake_init(self, argument_spec, **kwargs):
        captured.update(argument_spec)
        captured["__check_mode__"] = kwargs.get("supports_check_mode")

    monkeypatch = pytest.MonkeyPatch()
    try:
        monkeypatch.setattr(basic.AnsibleModule, "__init__", fake_init)
        mod.build_module()
    finally:
        monkeypatch.undo()
    assert captured.pop("__check_mode__") is True
    assert set(doc["options"]) == set(captured)
    for name, spec in captured.items():
        assert doc["options"][name]["type"] == spec["type"], name
        assert doc["options"][name].get("default") == spec.get("default"), name
        assert doc["options"][name].get("choices") == spec.get("choices"), name
        assert bool(doc["options"][name].get("required")) == bool(spec.get("required")), name
    assert captured["admin_api_key"]["no_log"] is True and captured["worker_api_key"]["no_log"] is True
    assert set(ret) >= {"worker_url", "worker_id", "removed", "drained", "drain_seconds", "in_flight",
                        "healthy_workers_left", "healthy_workers", "msg"}
