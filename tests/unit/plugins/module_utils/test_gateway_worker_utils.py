# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for module_utils/gateway_worker.py: URL canonicalisation, picking the worker, load parsing, the
calls to the gateway over a fake client, and both states over a fake gateway with a fake clock."""

from __future__ import annotations

import copy
import json
import os

import pytest

from ansible_collections.llmserve.sglang.plugins.module_utils import gateway_worker as gw
from ansible_collections.llmserve.sglang.tests.unit.plugins.module_utils.source_imports import top_level_imports

ADMIN = "adm-secret-0123456789"
WKEY = "sk-worker-abcdef"
A = "http://10.0.0.5:30000"
B = "http://10.0.0.6:30000"
C = "http://10.0.0.7:30000"


def test_module_utils_import_only_stdlib_and_ansible():
    path = os.path.join(os.path.dirname(gw.__file__), "gateway_worker.py")
    assert top_level_imports(path) <= {"__future__", "ipaddress", "json", "math", "re", "time", "ansible_collections"}


# --- URLs -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("url,sent,key", [
    ("http://10.0.0.5:30000", "http://10.0.0.5:30000", "http://10.0.0.5:30000"),
    ("http://10.0.0.5:30000/", "http://10.0.0.5:30000", "http://10.0.0.5:30000"),
    ("http://10.0.0.5:30000///", "http://10.0.0.5:30000", "http://10.0.0.5:30000"),
    ("HTTP://GPU-Node-01.Example.:30000", "http://gpu-node-01.example.:30000", "http://gpu-node-01.example.:30000"),
    ("http://[FD00:0:0::5]:30000/", "http://[fd00::5]:30000", "http://[fd00::5]:30000"),
    ("http://[::ffff:10.0.0.5]:1", "http://[::ffff:a00:5]:1", "http://[::ffff:a00:5]:1"),
    ("http://[fe80::1%25eth0]:30000", "http://[fe80::1%25eth0]:30000", "http://[fe80::1%25eth0]:30000"),
    ("http://host:80", "http://host:80", "http://host"),
    ("https://host:443/", "https://host:443", "https://host"),
    ("https://host:8443/sglang/", "https://host:8443/sglang", "https://host:8443/sglang"),
    ("http://host", "http://host", "http://host"),
])
def test_canonical_url(url, sent, key):
    assert gw.canonical_url(url) == (sent, key)


def test_spellings_of_one_worker_share_a_key():
    keys = {gw.url_key(u) for u in ("http://[fd00::5]:30000", "HTTP://[fd00:0::5]:30000/", "http://[FD00::5]:30000//")}
    assert len(keys) == 1
    assert gw.url_key("http://host:80") == gw.url_key("http://HOST/")
    assert gw.url_key("http://host:8080") != gw.url_key("http://host:80")
    assert gw.url_key("https://host") != gw.url_key("http://host")


@pytest.mark.parametrize("url,words", [
    ("", "must be an http:// or https:// URL"),
    (None, "must be an http:// or https:// URL"),
    ("10.0.0.5:30000", "absolute http:// or https://"),
    ("ftp://10.0.0.5", "absolute http:// or https://"),
    ("http://", "absolute http:// or https://"),
    ("http://::1:30000", "IPv6 address must be written in brackets"),
    ("http://fd00::5", "IPv6 address must be written in brackets"),
    ("http://[fd00::5:30000", "unclosed '['"),
    ("http://[not-v6]:1", "which is not an IPv6 address"),
    ("http://[::1]x:1", "not a port"),
    ("http://host:0", "port from 1 to 65535"),
    ("http://host:65536", "port from 1 to 65535"),
    ("http://host:30x", "port from 1 to 65535"),
    ("http://user:pw@host:1", "must not carry credentials"),
    ("http://host:1/?a=1", "without a query or fragment"),
    ("http://host:1/#x", "without a query or fragment"),
    ("http://host:1?", "without a query or fragment"),
    ("http://ho st:1", "spaces or control characters"),
    ("http://host:1\n", "spaces or control characters"),
    ("http://host:1/\x00", "spaces or control characters"),
    ("http://host:1/\x1b[31m", "spaces or control characters"),
    ("http://ho$t:1", "invalid host name"),
    ("http://a..b:1", "invalid host name"),
    ("http://host:1/a\"b", "characters in its path"),
])
def test_canonical_url_refuses_with_the_option_name_and_the_rule(url, words):
    with pytest.raises(gw.UrlError) as exc:
        gw.canonical_url(url, "worker_url")
    assert str(exc.value).startswith("worker_url") and words in str(exc.value)


def test_credentials_are_masked_in_the_message():
    with pytest.raises(gw.UrlError) as exc:
        gw.canonical_url("ftp://user:hunter2@host/", "gateway_url")
    assert "hunter2" not in str(exc.value)
    with pytest.raises(gw.UrlError) as exc:
        gw.canonical_url("http://user:hunter2@host/", "gateway_url")
    assert "hunter2" not in str(exc.value) and "********@host" in str(exc.value)


def test_canonical_url_without_path():
    with pytest.raises(gw.UrlError):
        gw.canonical_url("http://h:1/x", "u", allow_path=False)
    assert gw.canonical_url("http://h:1/", "u", allow_path=False)[0] == "http://h:1"


# --- picking the worker -----------------------------------------------------------------------------------------

def entry(url, wid, healthy=True, status="ready", load=0, model="m", wtype="regular"):
    return {"id": wid, "url": url, "is_healthy": healthy, "status": status, "load": load, "model_id": model,
            "worker_type": wtype}


def test_find_workers_matches_canonical_forms_only():
    listed = [entry(A + "/", "1"), entry(B, "2"), {"url": 5}, {"id": "x"}, entry("not a url", "3"),
              entry("http://10.0.0.5:30001", "4")]
    assert [w["id"] for w in gw.find_workers(listed, gw.url_key(A))] == ["1"]
    assert gw.find_workers(listed, gw.url_key(C)) == []


def test_health_and_peers():
    assert gw.is_healthy(entry(A, "1"))
    assert gw.is_healthy({"is_healthy": True})  # a gateway without status
    assert not gw.is_healthy(entry(A, "1", healthy=False, status="not_ready"))
    assert not gw.is_healthy(entry(A, "1", healthy=True, status="draining"))
    assert not gw.is_healthy(entry(A, "1", healthy="true"))
    target = entry(A, "1")
    listed = [target, entry(B, "2"), entry(C, "3", model="other"), entry("http://h:4", "4", healthy=False),
              entry("http://h:5", "5", wtype="prefill"), entry("http://h:6", "6", status="draining"),
              {"url": "http://h:7", "is_healthy": True}]
    assert [w.get("id") for w in gw.peers(listed, [target])] == ["2", None]


def test_gateway_load_and_summary():
    assert gw.gateway_load([entry(A, "1", load=2), entry(A + "/", "2", load=1)]) == 3
    assert gw.gateway_load([{"load": None}, {"load": True}, {"load": -1}]) is None
    assert gw.gateway_load([]) is None
    assert gw.summarize(dict(entry(A, "1"), labels={"x": 1}, status="re\x1bady")) == {
        "id": "1", "url": A, "status": "re\\x1bady", "is_healthy": True, "load": 0, "model_id": "m",
        "worker_type": "regular"}


def test_worker_id_from_conflict():
    text = ("Worker already exists at URL 'http://127.0.0.1:33849' with ID 01a22e81-dfaa-74e9-bd1b-71c36cf7117b. "
            "Use PUT /workers/01a22e81-dfaa-74e9-bd1b-71c36cf7117b to replace")
    assert gw.worker_id_from_conflict(text) == "01a22e81-dfaa-74e9-bd1b-71c36cf7117b"
    assert gw.worker_id_from_conflict("exists") is None and gw.worker_id_from_conflict(None) is None


def test_parse_workers():
    assert gw.parse_workers({"workers": [entry(A, "1"), "junk"], "total": 1}) == [entry(A, "1")]
    for bad in ({"workers": {}}, [], None, {"data": []}):
        with pytest.raises(gw.GatewayError) as exc:
            gw.parse_workers(bad)
        assert "is gateway_url an smg gateway" in exc.value.message


# --- load parsing -----------------------------------------------------------------------------------------------

V1_LOADS = {"timestamp": "2026-11-30T22:09:49+00:00", "version": "0.5.23", "accelerator": "NVIDIA H200",
            "num_accelerators": 8, "loads": [
                {"dp_rank": 0, "num_running_reqs": 3, "num_waiting_reqs": 1, "num_used_tokens": 900},
                {"dp_rank": 1, "num_running_reqs": 2, "num_waiting_reqs": 0}]}


def test_parse_v1_loads():
    assert gw.parse_v1_loads(V1_LOADS) == 6
    assert gw.parse_v1_loads({"loads": [{"dp_rank": 0}]}) == 0
    for bad, words in (({"loads": []}, "no 'loads'"), ({}, "no 'loads'"), ([], "no 'loads'"),
                       ({"loads": ["x"]}, "not an object"), ({"loads": [{"num_running_reqs": -1}]}, "not a count"),
                       ({"loads": [{"num_running_reqs": 1.5}]}, "not a count"),
                       ({"loads": [{"num_waiting_reqs": True}]}, "not a count")):
        with pytest.raises(gw.GatewayError) as exc:
            gw.parse_v1_loads(bad)
        assert words in exc.value.message


METRICS = """# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{engine_type="unified",model_name="qwen",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 2.0
sglang:num_running_reqs{engine_type="unified",model_name="qwen",moe_ep_rank="0",pp_rank="0",tp_rank="1",dp_rank="1"} 1.0
# HELP sglang:num_queue_reqs The number of requests in the waiting queue.
sglang:num_queue_reqs{engine_type="unified",model_name="qwen",tp_rank="0"} 3.0
sglang:num_running_reqs_total 99
sglang:num_requests_total{model_name="qwen"} 1234.0
"""


def test_parse_metrics():
    assert gw.parse_metrics(METRICS) == 6
    assert gw.parse_metrics(METRICS.encode()) == 6
    assert gw.parse_metrics("sglang:num_running_reqs 0\n") == 0
    for bad, words in (("", "no sglang:num_running_reqs"), ("sglang:num_queue_reqs 1\n", "no sglang:num_running"),
                       ("sglang:num_running_reqs NaN\n", "not a count"), ("sglang:num_running_reqs x\n", "not a number"),
                       ("sglang:num_running_reqs -1\n", "not a count"), ("sglang:num_running_reqs +Inf\n", "not a count")):
        with pytest.raises(gw.GatewayError) as exc:
            gw.parse_metrics(bad)
        assert words in exc.value.message


# --- GatewayApi over a fake client ------------------------------------------------------------------------------

class FakeClient(object):
    """Answers ``request`` from a function of (method, url, data, headers)."""

    def __init__(self, answer):
        self.answer = answer
        self.calls = []

    def request(self, method, url, data=None, headers=None, timeout=30.0):
        self.calls.append({"method": method, "url": url, "data": data, "headers": dict(headers or {}),
                           "timeout": timeout})
        found = self.answer(method, url, data, headers)
        out = {"status": found[0], "msg": "", "content_type": "application/json", "body": None}
        if len(found) > 1:
            body = found[1]
            out["body"] = body if isinstance(body, bytes) else json.dumps(body).encode()
        if len(found) > 2:
            out.update(found[2])
        return out


def api_for(answer, source="auto", worker_key=WKEY):
    client = FakeClient(answer)
    return gw.GatewayApi(client, "http://gw:8000", ADMIN, A, worker_key, source, secrets=[ADMIN, WKEY]), client


def test_api_sends_the_admin_key_to_the_gateway_and_the_worker_key_to_the_worker():
    def answer(method, url, data, headers):
        if url.endswith("/workers") and method == "GET":
            return 200, {"workers": [entry(A, "1")]}
        if url.endswith("/workers") and method == "POST":
            return 202, {"status": "accepted", "worker_id": "new-id"}
        if method == "DELETE":
            return 202, {"status": "accepted"}
        return 200, V1_LOADS

    api, client = api_for(answer)
    assert api.list_workers(5) == [entry(A, "1")]
    assert api.add_worker(A, 5) == "new-id"
    assert api.delete_worker("1", 5) is True
    assert api.worker_load(5) == (6, None, False) and api.load_source_used == "v1_loads"
    list_call, post_call, delete_call, load_call = client.calls
    assert list_call["headers"]["Authorization"] == "Bearer " + ADMIN and list_call["url"] == "http://gw:8000/workers"
    assert json.loads(post_call["data"]) == {"url": A, "api_key": WKEY}
    assert post_call["headers"]["Content-Type"] == "application/json"
    assert delete_call["url"] == "http://gw:8000/workers/1" and delete_call["method"] == "DELETE"
    assert load_call["url"] == A + "/v1/loads?include=core" and load_call["headers"]["Authorization"] == "Bearer " + WKEY


def test_api_without_keys_sends_no_authorization():
    client = FakeClient(lambda *a: (202, {"worker_id": "x"}))
    api = gw.GatewayApi(client, "http://gw:8000", None, A, None, "none")
    api.add_worker(A, 5)
    assert "Authorization" not in client.calls[0]["headers"] and json.loads(client.calls[0]["data"]) == {"url": A}
    assert api.worker_load(5) == (None, None, False) and len(client.calls) == 1


@pytest.mark.parametrize("status,fatal,words", [
    (401, True, "refused the control-plane key; set admin_api_key"),
    (403, True, "refused the control-plane key"),
    (302, True, "redirect to http://elsewhere/workers, not followed; give gateway_url"),
    (404, True, "answered 404"),
    (503, False, "answered 503"),
    (-1, False, "got no answer: Connection failure: timed out"),
])
def test_api_errors(status, fatal, words):
    extra = {"reason": "redirect to http://elsewhere/workers, not followed"} if status == 302 else {}
    extra["msg"] = "Connection failure: timed out" if status == -1 else ""
    api, client = api_for(lambda *a: (status, b"echo Bearer %s and %s" % (ADMIN.encode(), WKEY.encode()), extra))
    with pytest.raises(gw.GatewayError) as exc:
        api.list_workers(5)
    assert exc.value.fatal is fatal and words in exc.value.message, exc.value.message
    assert ADMIN not in exc.value.message and WKEY not in exc.value.message
    if status in (401, 403):  # the module's own sentence stays readable; the echoed keys are masked
        assert exc.value.message.endswith("(sent as 'Authorization: Bearer <key>')"), exc.value.message
        assert "echo Bearer ******** and ********" in exc.value.message


def test_server_text_is_masked_by_pattern_and_the_modules_words_are_not():
    api, dummy = api_for(lambda *a: (500, b'{"detail": "token: abc123 api_key=zzz9 \x1b[31m"}'))
    with pytest.raises(gw.GatewayError) as exc:
        api.list_workers(5)
    message = exc.value.message
    assert "abc123" not in message and "zzz9" not in message and "\x1b" not in message, message
    assert message.startswith("GET http://gw:8000/workers answered 500 (Internal Server Error): ")
    assert gw.mask_secrets("token: the gateway; Authorization: Bearer <key>; k=%s" % ADMIN, [ADMIN]) == \
        "token: the gateway; Authorization: Bearer <key>; k=********"
    assert gw.mask_secrets("http://u:p@h/ x", []) == "http://********@h/ x"


def test_api_bad_bodies():
    api, dummy = api_for(lambda *a: (200, b"<html>not json</html>"))
    with pytest.raises(gw.GatewayError) as exc:
        api.list_workers(5)
    assert "answered 200 but the answer is not valid JSON" in exc.value.message and not exc.value.fatal
    api, dummy = api_for(lambda *a: (200, None, {"body_problem": "the body is larger than max_body_bytes"}))
    with pytest.raises(gw.GatewayError) as exc:
        api.list_workers(5)
    assert "larger than max_body_bytes" in exc.value.message
    api, dummy = api_for(lambda *a: (200, b"[" * 100000 + b"]" * 100000))
    with pytest.raises(gw.GatewayError) as exc:
        api.list_workers(5)
    assert "nested deeper than" in exc.value.message


def test_api_add_worker_conflict_gives_the_existing_id():
    conflict = {"error": "Worker already exists at URL 'http://10.0.0.5:30000' with ID "
                         "01a22e81-dfaa-74e9-bd1b-71c36cf7117b. Use PUT", "code": "WORKER_ALREADY_EXISTS"}
    api, dummy = api_for(lambda *a: (409, conflict))
    assert api.add_worker(A, 5) == "01a22e81-dfaa-74e9-bd1b-71c36cf7117b"
    api, dummy = api_for(lambda *a: (400, {"error": "Invalid URL"}))
    with pytest.raises(gw.GatewayError) as exc:
        api.add_worker(A, 5)
    assert "answered 400" in exc.value.message and "Invalid URL" in exc.value.message


def test_api_get_worker_and_delete_of_an_unknown_id():
    api, dummy = api_for(lambda *a: (404, {"error": "Worker x not found"}))
    assert api.get_worker("x", 5) is None and api.delete_worker("x", 5) is False
    api, dummy = api_for(lambda *a: (405, {"error": "no"}))
    with pytest.raises(gw.GatewayError) as exc:
        api.get_worker("x", 5)
    assert not exc.value.fatal  # only the diagnostics are lost


def test_worker_load_falls_back_to_metrics_when_v1_loads_is_missing():
    def answer(method, url, data, headers):
        return (404, {"detail": "Not Found"}) if "/v1/loads" in url else (200, METRICS.encode(), {"content_type": "text/plain"})

    api, client = api_for(answer)
    assert api.worker_load(5) == (6, None, False) and api.load_source_used == "metrics"
    assert "Authorization" not in client.calls[1]["headers"]
    api.worker_load(5)  # the source that worked is kept
    assert [c["url"].rsplit("/", 1)[-1] for c in client.calls] == ["loads?include=core", "metrics", "metrics"]


def test_worker_load_without_a_key_tries_metrics_and_explains_both():
    api, dummy = api_for(lambda method, url, *a: (401, b"Unauthorized") if "loads" in url else (404, b"nf"),
                         worker_key=None)
    count, problem, fatal = api.worker_load(5)
    assert count is None and fatal
    assert "set worker_api_key to the worker's --api-key" in problem and "without --enable-metrics" in problem


def test_worker_load_with_a_wrong_key_is_fatal_and_masked():
    api, dummy = api_for(lambda *a: (401, b"bad key " + WKEY.encode()))
    count, problem, fatal = api.worker_load(5)
    assert count is None and fatal and "answered 401" in problem and WKEY not in problem


def test_worker_load_connection_refused_is_zero_and_timeouts_are_unknown():
    api, dummy = api_for(lambda *a: (-1, None, {"msg": "Request failed: <urlopen error [Errno 111] Connection refused>"}))
    assert api.worker_load(5) == (0, None, False)
    api, dummy = api_for(lambda *a: (-1, None, {"msg": "Connection failure: no complete answer within 5 s"}))
    count, problem, fatal = api.worker_load(5)
    assert count is None and not fatal and "no complete answer" in problem
    api, dummy = api_for(lambda *a: (200, {"loads": "x"}), source="v1_loads")
    count, problem, fatal = api.worker_load(5)
    assert count is None and not fatal and "no 'loads' list" in problem


# --- the states over a fake gateway and a fake clock --------------------------------------------------------------

class Clock(object):
    def __init__(self):
        self.now = 1000.0
        self.sleeps = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


class FakeGateway(object):
    """smg's behaviour as seen on the real one: DELETE marks draining, the entry goes its settle time after its load
    reached 0 (here: at ``drained_at``); POST registers after ``register_after`` seconds (pending until then,
    GET /workers/{id} only). ``draining_loads``: the ``load`` of a draining entry at successive listings (the last
    one stays); without it the entry keeps the load it had."""

    def __init__(self, clock, workers, engine=None, drained_at=None, register_after=0.0, engine_zero_at=None,
                 draining_loads=None):
        self.clock = clock
        self.workers = [dict(w) for w in workers]
        self.engine = engine
        self.drained_at = drained_at
        self.engine_zero_at = engine_zero_at
        self.register_after = register_after
        self.pending = {}
        self.calls = []
        self.load_source_used = None
        self.errors = []
        self.draining_loads = list(draining_loads or [])

    def _tick(self):
        now = self.clock()
        for w in list(self.workers):
            if w.get("status") == "draining" and self.drained_at is not None and now >= self.drained_at:
                self.workers.remove(w)
            elif w.get("status") == "draining" and self.draining_loads:
                w["load"] = self.draining_loads.pop(0) if len(self.draining_loads) > 1 else self.draining_loads[0]
        for wid, (url, at) in list(self.pending.items()):
            if now >= at:
                del self.pending[wid]
                self.workers.append(entry(url, wid))

    def list_workers(self, timeout):
        self.calls.append("list")
        if self.errors:
            error = self.errors.pop(0)
            if error:
                raise error
        self._tick()
        return copy.deepcopy(self.workers)

    def delete_worker(self, wid, timeout):
        self.calls.append("delete %s" % wid)
        for w in self.workers:
            if w["id"] == wid:
                w.update(status="draining", is_healthy=False)
                return True
        return False

    def add_worker(self, url, timeout):
        self.calls.append("add %s" % url)
        wid = "new-%d" % len(self.calls)
        self.pending[wid] = (url, self.clock() + self.register_after)
        return wid

    def get_worker(self, wid, timeout):
        self.calls.append("get %s" % wid)
        if wid in self.pending:
            return {"id": wid, "status": "pending", "job_status": {"job_type": "AddWorker", "status": "processing",
                                                                   "message": "connect refused"}}
        return None

    def worker_load(self, timeout):
        self.calls.append("load")
        if callable(self.engine):
            return self.engine()
        if self.engine_zero_at is not None and self.clock() >= self.engine_zero_at:
            self.load_source_used = "v1_loads"
            return 0, None, False
        if self.engine is None:
            return None, None, False
        self.load_source_used = "v1_loads"
        return self.engine, None, False


def params(**over):
    p = {"worker_url": A, "worker_key": gw.url_key(A), "min_healthy": 1, "drain_timeout": 300.0,
         "drain_timeout_action": "fail", "healthy_timeout": 300.0, "interval": 1.0, "request_timeout": 10.0}
    p.update(over)
    return p


def run(fake, clock, check_mode=False, state="absent", wall=None, **over):
    change = gw.WorkerChange(fake, params(**over), check_mode=check_mode, clock=clock, sleep=clock.sleep, wall=wall)
    with pytest.raises(gw.Outcome) as exc:
        getattr(change, state)()
    return exc.value


def test_absent_waits_for_the_gateway_and_then_the_worker():
    clock = Clock()
    fake = FakeGateway(clock, [entry(A, "a", load=2), entry(B, "b", load=1)], engine=2, drained_at=1005.0,
                       engine_zero_at=1008.0)
    out = run(fake, clock)
    r = out.result
    assert not out.failed, out.msg
    assert r["changed"] and r["removed"] and r["drained"] and r["worker_id"] == "a" and r["worker_ids"] == ["a"]
    assert r["in_flight"] == {"at_removal": {"gateway": 2, "worker": 2}, "at_end": {"gateway": 0, "worker": 0}}
    assert r["drain_seconds"] == 8.0 and r["healthy_workers_left"] == 1 and r["worker_load_source"] == "v1_loads"
    assert fake.calls[:3] == ["list", "load", "delete a"]
    # the worker is only asked once the gateway let go of it
    first_gone = fake.calls.index("load", 3)
    assert fake.calls[first_gone - 1] == "list" and clock.now >= 1008.0
    assert "drained in 8.0 s (in flight at removal: gateway 2, worker 2; 1 healthy worker(s) left)" in out.msg


def test_absent_ends_once_the_draining_entry_is_quiet_without_waiting_for_the_settle_time():
    # smg: the last request ends at 1003, the entry goes at 1008; seen quiet at 1003 and again at 1004: drained
    clock = Clock()
    fake = FakeGateway(clock, [entry(A, "a", load=2), entry(B, "b")], engine=0, drained_at=1008.0,
                       draining_loads=[2, 2, 1, 0])
    out = run(fake, clock)
    r = out.result
    assert not out.failed, out.msg
    assert r["drained"] is True and r["removed"] is True and r["settling"] is True
    assert r["drain_seconds"] == 4.0 and clock.now == 1004.0
    assert r["in_flight"] == {"at_removal": {"gateway": 2, "worker": 0}, "at_end": {"gateway": 0, "worker": 0}}
    assert "lists it as draining with nothing in flight" in out.msg
    # the worker is asked only while the gateway is quiet: once at the removal, then at 1003 and 1004
    assert fake.calls.count("load") == 3


def test_absent_quiet_must_hold_at_two_readings_apart():
    # a request counted between the two quiet readings starts the confirmation over
    clock = Clock()
    fake = FakeGateway(clock, [entry(A, "a", load=1), entry(B, "b")], engine=0, drained_at=1020.0,
                       draining_loads=[0, 1, 0, 0])
    out = run(fake, clock, interval=0.25)
    assert not out.failed and out.result["settling"] is True
    # quiet at 1000, a request at 1000.25, quiet at 1000.5 and 1000.75 (too close), confirmed at 1001
    assert clock.now == 1001.0 and out.result["drain_seconds"] == 1.0
    # the worker still runs requests (another client): quiet at the gateway is not enough
    clock = Clock()
    fake = FakeGateway(clock, [entry(A, "a"), entry(B, "b")], engine=2, engine_zero_at=1006.0, drained_at=1030.0)
    out = run(fake, clock)
    assert not out.failed and out.result["drained"] is True and clock.now == 1007.0
    assert out.result["in_flight"]["at_end"] == {"gateway": 0, "worker": 0}


def test_absent_without_the_gateways_count_waits_until_the_entry_is_gone():
    # a gateway that lists no load for the entry is never judged quiet: the old rule, gone and idle
    clock = Clock()
    quiet_unknown = entry(A, "a")
    del quiet_unknown["load"]
    fake = FakeGateway(clock, [quiet_unknown, entry(B, "b")], engine=0, drained_at=1006.0)
    out = run(fake, clock)
    assert not out.failed and out.result["settling"] is False and clock.now == 1006.0


def test_absent_quiet_but_never_confirmed_times_out_with_the_workers_count():
    clock = Clock()
    fake = FakeGateway(clock, [entry(A, "a"), entry(B, "b")], engine=3)
    out = run(fake, clock, drain_timeout=4.0)
    assert out.failed and out.result["removed"] is True and out.result["drained"] is False
    assert "the gateway no longer routes to it, but 3 request(s) are still running or waiting" in out.msg


def test_absent_and_present_stamp_the_timeline_by_the_wall_clock():
    # the wall clock runs 1.7e9 s ahead of the monotonic one: the stamps must come from the wall clock
    clock = Clock()

    def wall():
        return clock.now + 1.7e9
    fake = FakeGateway(clock, [entry(A, "a", load=2), entry(B, "b")], engine=2, drained_at=1005.0,
                       engine_zero_at=1008.0)
    r = run(fake, clock, wall=wall).result
    assert r["removed_at"] == 1.7e9 + 1000.0 and r["drain_ended_at"] == 1.7e9 + 1008.0
    fake = FakeGateway(clock, [entry(B, "b")], register_after=2.5)
    r = run(fake, clock, state="present", wall=wall).result
    assert r["added_at"] == 1.7e9 + 1008.0 and r["healthy_at"] == 1.7e9 + 1011.0
    # already healthy: in and healthy at the one listing; never healthy: no healthy_at
    r = run(FakeGateway(clock, [entry(A, "a"), entry(B, "b")]), clock, state="present", wall=wall).result
    assert r["added_at"] == r["healthy_at"] == 1.7e9 + clock.now
    r = run(FakeGateway(clock, [entry(B, "b")], register_after=1e9), clock, state="present", wall=wall,
            healthy_timeout=4.0).result
    assert r["added_at"] is not None and r["healthy_at"] is None
    # nothing removed, nothing stamped
    r = run(FakeGateway(clock, [entry(B, "b")]), clock, wall=wall).result
    assert r["removed_at"] is None and r["drain_ended_at"] is None


def test_absent_refuses_to_take_the_last_healthy_worker_and_changes_nothing():
    clock = Clock()
    fake = FakeGateway(clock, [entry(A, "a"), entry(B, "b", healthy=False, status="not_ready"),
                               entry(C, "c", model="other"), entry("http://h:1", "d", status="draining")])
    out = run(fake, clock)
    assert out.failed and "refusing to remove %s" % A in out.msg and "fewer than min_healthy=1" in out.msg
    assert "nothing was changed" in out.msg and out.result["healthy_workers_left"] == 0
    assert fake.calls == ["list"] and not out.result["changed"]
    # min_healthy=0 allows it
    out = run(FakeGateway(clock, [entry(A, "a")], engine=0, drained_at=0), clock, min_healthy=0)
    assert not out.failed and out.result["drained"]


def test_absent_when_not_registered_changes_nothing():
    clock = Clock()
    fake = FakeGateway(clock, [entry(B, "b")])
    out = run(fake, clock)
    assert not out.failed and out.result["changed"] is False and out.result["removed"] is True
    assert out.result["drained"] is None and "absent already" in out.msg and fake.calls == ["list"]


def test_absent_check_mode_reads_but_never_deletes():
    clock = Clock()
    fake = FakeGateway(clock, [entry(A, "a", load=1), entry(B, "b")], engine=1)
    out = run(fake, clock, check_mode=True)
    assert not out.failed and out.result["changed"] is True and "check mode: would remove" in out.msg
    assert fake.calls == ["list", "load"] and out.result["in_flight"]["at_end"] is None
    refused = run(FakeGateway(clock, [entry(A, "a")]), clock, check_mode=True)
    assert refused.failed and "refusing" in refused.msg


def test_absent_removes_every_spelling_and_waits_for_a_removal_already_under_way():
    clock = Clock()
    fake = FakeGateway(clock, [entry(A, "a1"), entry(A + "/", "a2", status="draining", healthy=False),
                               entry(B, "b")], engine=0, drained_at=1002.0)
    out = run(fake, clock)
    assert not out.failed and out.result["worker_ids"] == ["a1", "a2"]
    assert [c for c in fake.calls if c.startswith("delete")] == ["delete a1"]
    # only a draining entry left: nothing to delete, nothing changed, still waited for
    clock = Clock()
    fake = FakeGateway(clock, [entry(A, "a", status="draining", healthy=False, load=1)], engine=0, drained_at=1003.0)
    out = run(fake, clock)
    assert not out.failed and out.result["changed"] is False and out.result["drained"] is True
    assert not [c for c in fake.calls if c.startswith("delete")] and clock.now >= 1003.0


@pytest.mark.parametrize("action", ["fail", "continue"])
def test_absent_drain_timeout(action):
    clock = Clock()
    fake = FakeGateway(clock, [entry(A, "a", load=3), entry(B, "b")], engine=3)
    fake.delete_worker = lambda wid, timeout: [w.update(status="draining") for w in fake.workers if w["id"] == wid]
    out = run(fake, clock, drain_timeout=5.0, drain_timeout_action=action)
    assert out.failed is (action == "fail")
    assert "was not drained within drain_timeout=5 s: the gateway still lists it (ids a) with 3 request(s)" in out.msg
    assert out.result["drained"] is False and out.result["removed"] is False and out.result["changed"] is True
    assert clock.now - 1000.0 <= 5.0 + 1e-9
    if action == "continue":
        assert out.warnings and "not drained" in out.warnings[0]


def test_absent_drain_timeout_with_requests_from_elsewhere_on_the_worker():
    clock = Clock()
    fake = FakeGateway(clock, [entry(A, "a"), entry(B, "b")], engine=4, drained_at=1001.0)
    out = run(fake, clock, drain_timeout=10.0)
    assert out.failed and out.result["removed"] is True and out.result["drained"] is False
    assert "4 request(s) are still running or waiting on the worker (sent by another client or gateway)" in out.msg
    assert out.result["in_flight"]["at_end"] == {"gateway": 0, "worker": 4}


def test_absent_does_not_change_anything_when_the_workers_load_cannot_be_read():
    clock = Clock()
    fake = FakeGateway(clock, [entry(A, "a"), entry(B, "b")],
                       engine=lambda: (None, "GET .../v1/loads answered 401 (Unauthorized)", True))
    out = run(fake, clock)
    assert out.failed and "cannot read the worker's load" in out.msg and "nothing was changed" in out.msg
    assert not [c for c in fake.calls if c.startswith("delete")]


def test_absent_an_unreadable_load_at_removal_only_warns():
    clock = Clock()
    answers = [(None, "no complete answer within 10 s", False)]
    fake = FakeGateway(clock, [entry(A, "a"), entry(B, "b")], engine=lambda: answers.pop(0) if answers else (0, None, False),
                       drained_at=1001.0)
    out = run(fake, clock)
    assert not out.failed and out.result["drained"] and out.result["in_flight"]["at_removal"]["worker"] is None
    assert "cannot be read now" in out.warnings[0]


def test_absent_keeps_polling_through_gateway_hiccups_but_stops_on_a_refused_key():
    clock = Clock()
    fake = FakeGateway(clock, [entry(A, "a"), entry(B, "b")], engine=0, drained_at=1003.0)
    fake.errors = [None, gw.GatewayError("503"), gw.GatewayError("timeout")]
    out = run(fake, clock)
    assert not out.failed and out.result["drained"]
    fake = FakeGateway(clock, [entry(A, "a"), entry(B, "b")], engine=0, drained_at=None)
    fake.errors = [None, gw.GatewayError("answered 401", status=401, fatal=True)]
    out = run(fake, clock)
    assert out.failed and out.msg == "%s was removed, but watching its drain failed: answered 401" % A
    assert out.result["changed"] is True and out.result["drain_seconds"] >= 0


def test_present_registers_and_waits_for_healthy():
    clock = Clock()
    fake = FakeGateway(clock, [entry(B, "b")], register_after=2.5)
    out = run(fake, clock, state="present")
    r = out.result
    assert not out.failed, out.msg
    assert r["changed"] and r["registered"] and r["healthy"] and r["healthy_workers"] == 2
    assert r["worker_id"].startswith("new-") and r["wait_seconds"] == 3.0
    assert fake.calls[:2] == ["list", "add %s" % A]
    assert "get %s" % r["worker_id"] in fake.calls  # pending: asked by id


def test_present_already_healthy_changes_nothing():
    clock = Clock()
    fake = FakeGateway(clock, [entry("HTTP://10.0.0.5:30000/", "a"), entry(B, "b")])
    out = run(fake, clock, state="present")
    assert not out.failed and out.result["changed"] is False and out.result["worker_id"] == "a"
    assert fake.calls == ["list"]


def test_present_waits_for_a_listed_unhealthy_worker_without_posting():
    clock = Clock()
    fake = FakeGateway(clock, [entry(A, "a", healthy=False, status="not_ready")])

    def heal():
        if clock.now >= 1004.0:
            fake.workers[0].update(is_healthy=True, status="ready")
    original = fake.list_workers
    fake.list_workers = lambda timeout: (heal(), original(timeout))[1]
    out = run(fake, clock, state="present")
    assert not out.failed and out.result["changed"] is False and out.result["healthy"]
    assert not [c for c in fake.calls if c.startswith("add")]


def test_present_after_a_drain_registers_again_once_the_old_entry_is_gone():
    clock = Clock()
    fake = FakeGateway(clock, [entry(A, "old", status="draining", healthy=False), entry(B, "b")],
                       drained_at=1003.0)
    out = run(fake, clock, state="present")
    assert not out.failed and out.result["changed"] and out.result["worker_id"] != "old"
    adds = [i for i, c in enumerate(fake.calls) if c.startswith("add")]
    assert len(adds) == 1 and clock.now >= 1003.0


def test_present_timeout_says_what_the_gateway_knows():
    clock = Clock()
    fake = FakeGateway(clock, [entry(B, "b")], register_after=1e9)
    out = run(fake, clock, state="present", healthy_timeout=4.0)
    assert out.failed and "did not become healthy in the gateway within healthy_timeout=4 s" in out.msg
    assert "status pending, job AddWorker processing: connect refused" in out.msg
    assert "the gateway keeps the registration" in out.msg and out.result["changed"] is True


def test_present_dropped_registration_fails_early():
    clock = Clock()
    fake = FakeGateway(clock, [entry(B, "b")], register_after=1e9)
    fake.get_worker = lambda wid, timeout: None
    out = run(fake, clock, state="present", healthy_timeout=60.0)
    # registered 1 + REREGISTER_TRIES times, then it fails well before healthy_timeout
    adds = [c for c in fake.calls if c.startswith("add")]
    assert len(adds) == 1 + gw.REREGISTER_TRIES, fake.calls
    assert out.failed and "dropped the registration of %s %d times" % (A, len(adds)) in out.msg, out.msg
    assert clock.now < 1015.0


def test_present_registers_again_when_the_gateway_drops_a_fresh_registration():
    # seen with the real smg and SGLang: a POST just as smg's settle time of the same URL's removal ended was
    # accepted (202, an id), then unknown; the module registers again and the worker ends in and healthy
    clock = Clock()
    fake = FakeGateway(clock, [entry(B, "b")], register_after=1.0)
    real_add = fake.add_worker
    first = []

    def add_once_lost(url, timeout):
        wid = real_add(url, timeout)
        if not first:
            first.append(wid)
            del fake.pending[wid]  # accepted, then forgotten
        return wid

    fake.add_worker = add_once_lost
    out = run(fake, clock, state="present", healthy_timeout=60.0)
    assert not out.failed and out.result["healthy"] and out.result["worker_id"] != first[0], out.msg
    assert len([c for c in fake.calls if c.startswith("add")]) == 2
    assert any("dropped the registration" in w and "registered again" in w for w in out.warnings), out.warnings


def test_present_check_mode():
    clock = Clock()
    fake = FakeGateway(clock, [entry(B, "b")])
    out = run(fake, clock, state="present", check_mode=True)
    assert not out.failed and out.result["changed"] is True and "would register" in out.msg and fake.calls == ["list"]
    fake = FakeGateway(clock, [entry(A, "a", healthy=False, status="not_ready")])
    out = run(fake, clock, state="present", check_mode=True)
    assert out.result["changed"] is False and "registered but not healthy" in out.msg


def test_first_list_failure_ends_the_run():
    clock = Clock()
    fake = FakeGateway(clock, [])
    fake.errors = [gw.GatewayError("GET http://gw/workers answered 401: refused")]
    for state in ("absent", "present"):
        fake.errors = [gw.GatewayError("GET http://gw/workers answered 401: refused")]
        out = run(fake, clock, state=state)
        assert out.failed and "answered 401" in out.msg and out.result["changed"] is False
