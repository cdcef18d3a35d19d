# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""llmserve.sglang.gateway_worker, run as a real module process against the REAL smg 1.13.0 on 127.0.0.1 in front
of two SGLang stand-ins (A and B) that need an API key and generate slowly on request (``ignore_eos``, 0.05 s a
token), with the round_robin policy so that where a request goes can be predicted.

Proves: state=absent returns only after the request in flight on A finished (with 200), while new requests through
the gateway all succeed on B; removing the last healthy worker is refused and changes nothing; state=present puts
A back and returns once the gateway routes to it; both states are idempotent; a wrong control-plane key fails
clearly without any key in the output; check mode changes nothing; a drain that runs out of time fails (or warns);
hostile gateways (huge body, trickle, redirect, echoed key) are handled by the shared HTTP client.

Needs the smg venv (see smg_live.smg_venv); about a minute.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

import pytest

from ansible_collections.llmserve.sglang.tests.functional.gateway import smg_live as live
from ansible_collections.llmserve.sglang.tests.functional.wait_for_endpoint.wfe_live_helpers import (
    RawServer,
    _module_env,
    run_child,
    trickle,
)

VENV, SKIP_REASON = live.smg_venv()
MODULE = "ansible_collections.llmserve.sglang.plugins.modules.gateway_worker"
WORKER_KEY = "sk-worker-4d1f\"quote'tick$x"
ADMIN_KEY = "adm-9b2e7c51aa30f4d8%key"
TOKEN_SECONDS = 0.05
SLOW_TOKENS = 100  # 5 s on the worker
QUICK = {"model": "standin-model", "messages": [{"role": "user", "content": "The capital of France?"}],
         "max_tokens": 4}


def _slow_body(tokens=SLOW_TOKENS):
    return {"text": "Once upon a time", "sampling_params": {"max_new_tokens": tokens, "ignore_eos": True}}


def _worker_entry(name, worker):
    return {"name": name, "host": worker.host, "port": worker.port, "args": {}, "api_key": WORKER_KEY,
            "ansible_host": "127.0.0.1", "ipv4": "", "ipv6": ""}


class Fleet(object):
    def __init__(self, tmp):
        self.tmp = tmp
        self.a, self.b = [live.StandinWorker(tmp, i, WORKER_KEY,
                                             extra_env={"LLMSERVE_STANDIN_TOKEN_SECONDS": str(TOKEN_SECONDS)})
                          for i in range(2)]
        self.gateway = None
        self.runs = 0

    def start(self):
        for worker in (self.a, self.b):
            assert live.wait_for(lambda w=worker: live.http("GET", w.url + "/health")[0] == 200, 20)
        self.rendered = live.render({
            "sglang_gateway_port": live.free_port(), "sglang_gateway_metrics_port": live.free_port(),
            "sglang_gateway_health_check_interval": 1, "sglang_gateway_shutdown_grace_period": 2,
            "sglang_gateway_policy": "round_robin", "sglang_gateway_admin_api_key": ADMIN_KEY},
            [_worker_entry("a", self.a), _worker_entry("b", self.b)])
        self.base = self.rendered["base_url"]
        self.gateway = live.Gateway(self.tmp, VENV, self.rendered, name="smg-gw-worker", confine=False,
                                    watch_cmdline=False)
        assert live.wait_for(lambda: self.healthy_urls() == sorted([self.a.url, self.b.url])
                             or self.gateway.proc.poll() is not None, 60), self.gateway.output()[-3000:]

    def workers(self):
        status, text = live.http("GET", self.base + "/workers", ADMIN_KEY)
        assert status == 200, text
        return json.loads(text)["workers"]

    def healthy_urls(self):
        try:
            return sorted(w["url"] for w in self.workers() if w["is_healthy"] and w["status"] == "ready")
        except (AssertionError, ValueError):
            return []

    def restore(self):
        """Both workers registered and healthy again, whatever a test left."""
        assert live.wait_for(lambda: not [w for w in self.workers() if w["status"] == "draining"], 60), self.workers()
        listed = {w["url"]: w for w in self.workers()}
        for worker in (self.a, self.b):
            if worker.url not in listed:
                status, text = live.http("POST", self.base + "/workers", ADMIN_KEY,
                                         {"url": worker.url, "api_key": WORKER_KEY})
                assert status in (202, 409), text
        assert live.wait_for(lambda: self.healthy_urls() == sorted([self.a.url, self.b.url]), 60), self.workers()

    def remove_directly(self, worker):
        (entry,) = [w for w in self.workers() if w["url"] == worker.url]
        assert live.http("DELETE", self.base + "/workers/" + entry["id"], ADMIN_KEY)[0] == 202
        assert live.wait_for(lambda: worker.url not in [w["url"] for w in self.workers()], 30)

    def run(self, args, check_mode=False, limit=120):
        """The module as a child process, the way Ansible runs it: (rc, result, stdout + stderr, wall seconds)."""
        self.runs += 1
        args = dict({"gateway_url": self.base, "admin_api_key": ADMIN_KEY, "worker_api_key": WORKER_KEY,
                     "interval": 0.2, "_ansible_tmpdir": str(self.tmp)}, **args)
        if check_mode:
            args["_ansible_check_mode"] = True
        path = os.path.join(str(self.tmp), "args-%d.json" % self.runs)
        with open(path, "w") as handle:
            json.dump({"ANSIBLE_MODULE_ARGS": args}, handle)
        rc, out, err, wall, dummy, killed = run_child([sys.executable, "-m", MODULE, path], _module_env(),
                                                      str(self.tmp), limit)
        lines = [line for line in out.splitlines() if line.startswith("{")]
        assert lines and not killed, "module printed no JSON: rc=%s out=%r err=%r" % (rc, out[-2000:], err[-2000:])
        return rc, json.loads(lines[-1]), out + err, wall

    def stop(self):
        if self.gateway is not None:
            self.gateway.stop()
        for worker in (self.a, self.b):
            worker.stop()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    if VENV is None:
        pytest.skip(SKIP_REASON)
    made = Fleet(tmp_path_factory.mktemp("gateway-worker"))
    try:
        made.start()
        yield made
    finally:
        made.stop()


@pytest.fixture
def fresh(fleet):
    fleet.restore()
    yield fleet
    fleet.restore()


def _served(worker, path="/v1/chat/completions"):
    return len([r for r in worker.requests(path) if r["status"] == 200])


def _in_flight(worker):
    status, text = live.http("GET", worker.url + "/v1/loads?include=core", WORKER_KEY)
    return json.loads(text)["loads"][0]["num_running_reqs"] if status == 200 else -1


def _start_slow_on_both(fleet):
    """Two slow generations through the gateway; round_robin puts one on each worker. Returns the threads and
    their results ({"status", "body", "done_at"})."""
    results = []

    def slow():
        status, text = live.http("POST", fleet.base + "/generate", WORKER_KEY, _slow_body(), timeout=60)
        results.append({"status": status, "body": text, "done_at": time.time()})

    threads = [threading.Thread(target=slow) for dummy in range(2)]
    for thread in threads:
        thread.start()
        time.sleep(0.1)
    assert live.wait_for(lambda: _in_flight(fleet.a) == 1 and _in_flight(fleet.b) == 1, 5), \
        (_in_flight(fleet.a), _in_flight(fleet.b))
    return threads, results


# --- (1) absent drains the request in flight, while B serves --------------------------------------------------

def test_absent_returns_after_the_request_in_flight_on_a_finished(fresh):
    fleet = fresh
    threads, slow_results = _start_slow_on_both(fleet)
    quick_results = []
    served_on_a = []
    stop = threading.Event()

    def traffic():  # new requests from the moment A drains: all must succeed, none on A
        draining = live.wait_for(lambda: stop.is_set() or [w for w in fleet.workers()
                                                           if w["url"] == fleet.a.url and w["status"] == "draining"], 20,
                                 every=0.05)
        served_on_a.append(_served(fleet.a))
        while draining and not stop.is_set():
            quick_results.append(live.http("POST", fleet.base + "/v1/chat/completions", WORKER_KEY, QUICK)[0])
            time.sleep(0.1)
        served_on_a.append(_served(fleet.a))

    runner = threading.Thread(target=traffic)
    runner.start()
    try:
        rc, result, output, wall = fleet.run({"worker_url": fleet.a.url + "/", "state": "absent"})
        returned_at = time.time()
    finally:
        stop.set()
        runner.join(30)
        for thread in threads:
            thread.join(60)
    assert rc == 0, result
    assert result["changed"] is True and result["removed"] is True and result["drained"] is True, result
    assert result["worker_url"] == fleet.a.url and result["worker_id"]
    assert result["in_flight"]["at_removal"] == {"gateway": 1, "worker": 1}, result
    assert result["in_flight"]["at_end"] == {"gateway": 0, "worker": 0}, result
    assert result["worker_load_source"] == "v1_loads" and result["healthy_workers_left"] == 1
    assert result["drain_seconds"] >= 2.0, result  # the generation had most of its 5 s to go
    # the slow requests finished with 200 and their full length, and the module returned after A's did
    assert sorted(r["status"] for r in slow_results) == [200, 200], slow_results
    assert all(json.loads(r["body"])["meta_info"]["completion_tokens"] == SLOW_TOKENS for r in slow_results)
    assert max(r["done_at"] for r in slow_results) <= returned_at
    assert [r for r in fleet.a.requests("/generate") if r["status"] == 200], "the slow request never ran on A"
    # meanwhile: every new request answered 200, all of them on B
    assert len(quick_results) >= 5 and set(quick_results) == {200}, quick_results
    assert served_on_a[0] == served_on_a[1], "the gateway sent new requests to the draining worker"
    # at the return smg had let go of A: gone, or still listed as draining with nothing in flight (its settle time)
    left = [w for w in fleet.workers() if w["url"] == fleet.a.url]
    assert all(w["status"] == "draining" and w["load"] == 0 for w in left), left
    if left:
        assert result["settling"] is True, result
    # new requests until smg drops the entry: all answered, none by A
    served_before, settle_results = _served(fleet.a), []
    while [w for w in fleet.workers() if w["url"] == fleet.a.url] and len(settle_results) < 100:
        settle_results.append(live.http("POST", fleet.base + "/v1/chat/completions", WORKER_KEY, QUICK)[0])
    assert set(settle_results) <= {200} and _served(fleet.a) == served_before, settle_results
    assert fleet.a.url not in [w["url"] for w in fleet.workers()]
    assert ADMIN_KEY not in output and WORKER_KEY not in output


def test_why_the_drain_is_judged_by_the_worker_list_and_the_worker_not_by_get_loads(fresh):
    """The smg facts the module rests on: after DELETE the worker stays listed as draining with its in-flight count
    in ``load``, receives nothing new, and disappears only after its request finished; /get_loads never shows the
    request that is still running on it (it serves a cache of registered workers only)."""
    fleet = fresh
    threads, slow_results = _start_slow_on_both(fleet)
    (entry,) = [w for w in fleet.workers() if w["url"] == fleet.a.url]
    assert entry["load"] == 1 and entry["status"] == "ready"
    assert live.http("DELETE", fleet.base + "/workers/" + entry["id"], ADMIN_KEY)[0] == 202
    seen = []
    while _in_flight(fleet.a) == 1:
        listed = [w for w in fleet.workers() if w["url"] == fleet.a.url]
        status, text = live.http("GET", fleet.base + "/get_loads", ADMIN_KEY)
        assert status == 200, text
        loads = json.loads(text)
        seen.append((listed[0]["status"], listed[0]["is_healthy"], listed[0]["load"],
                     [(l.get("worker"), l.get("num_running_reqs")) for l in loads["loads"] if l.get("worker") == fleet.a.url]))
        time.sleep(0.3)
    for thread in threads:
        thread.join(60)
    assert len(seen) >= 3 and set((s[0], s[1], s[2]) for s in seen) == {("draining", False, 1)}, seen
    assert not [s for s in seen if [n for url, n in s[3] if n]], "/get_loads reported the draining worker's request"
    assert live.wait_for(lambda: fleet.a.url not in [w["url"] for w in fleet.workers()], 30)
    assert sorted(r["status"] for r in slow_results) == [200, 200]


def test_an_unreadable_worker_load_changes_nothing(fresh):
    fleet = fresh
    rc, result, output, wall = fleet.run({"worker_url": fleet.a.url, "state": "absent",
                                          "worker_load_source": "metrics"})
    assert rc == 1 and result["changed"] is False, result
    assert "answered 404" in result["msg"] and "without --enable-metrics" in result["msg"], result
    assert "nothing was changed" in result["msg"]
    assert fleet.healthy_urls() == sorted([fleet.a.url, fleet.b.url])


# --- (2) never the last healthy worker ---------------------------------------------------------------------------

def test_removing_the_last_healthy_worker_is_refused_and_changes_nothing(fresh):
    fleet = fresh
    fleet.remove_directly(fleet.a)
    before = fleet.workers()
    rc, result, output, wall = fleet.run({"worker_url": fleet.b.url, "state": "absent"})
    assert rc == 1 and result["changed"] is False, result
    assert "refusing to remove %s" % fleet.b.url in result["msg"] and "min_healthy=1" in result["msg"], result
    assert "nothing was changed" in result["msg"] and result["healthy_workers_left"] == 0
    after = fleet.workers()
    assert [(w["id"], w["status"], w["is_healthy"]) for w in after] == \
        [(w["id"], w["status"], w["is_healthy"]) for w in before] == [(before[0]["id"], "ready", True)]
    assert live.http("POST", fleet.base + "/v1/chat/completions", WORKER_KEY, QUICK)[0] == 200


def test_min_healthy_two_refuses_with_two_workers(fresh):
    fleet = fresh
    rc, result, output, wall = fleet.run({"worker_url": fleet.a.url, "state": "absent", "min_healthy": 2})
    assert rc == 1 and "fewer than min_healthy=2" in result["msg"] and result["healthy_workers_left"] == 1, result
    assert fleet.healthy_urls() == sorted([fleet.a.url, fleet.b.url])


# --- (3) present puts A back and the gateway routes to it ---------------------------------------------------------

def test_present_readds_the_worker_and_returns_once_the_gateway_routes_to_it(fresh):
    fleet = fresh
    fleet.remove_directly(fleet.a)
    rc, result, output, wall = fleet.run({"worker_url": fleet.a.url, "state": "present", "healthy_timeout": 60})
    assert rc == 0, result
    assert result["changed"] is True and result["registered"] is True and result["healthy"] is True, result
    assert result["healthy_workers"] == 2 and result["worker_id"] and result["worker"]["status"] == "ready"
    before = _served(fleet.a)
    statuses = [live.http("POST", fleet.base + "/v1/chat/completions", WORKER_KEY, QUICK)[0] for dummy in range(4)]
    assert statuses == [200] * 4
    assert _served(fleet.a) > before, "right after state=present returned, no request reached A"
    # the worker was registered with the key: smg's own calls to it were accepted
    assert ADMIN_KEY not in output and WORKER_KEY not in output


# --- (4) idempotence ------------------------------------------------------------------------------------------

def test_absent_twice_and_present_twice_change_once(fresh):
    fleet = fresh
    url = fleet.a.url.replace("http://", "HTTP://") + "//"  # any spelling of the same URL
    first = fleet.run({"worker_url": url, "state": "absent"})[1]
    second = fleet.run({"worker_url": url, "state": "absent"})[1]
    assert first["changed"] is True and first["drained"] is True, first
    # the first returned once smg routed nothing to A and had nothing in flight to it; smg keeps listing the entry
    # as draining for its settle time (5 s): the second run finds it still settling or gone, and removes nothing
    assert second["changed"] is False and second["removed"] is True and second["drained"] is not False, second
    assert ("absent already" in second["msg"]) is not second["settling"], second
    assert live.wait_for(lambda: fleet.a.url not in [w["url"] for w in fleet.workers()], 15, every=0.1)
    first = fleet.run({"worker_url": url, "state": "present"})[1]
    second = fleet.run({"worker_url": url, "state": "present"})[1]
    assert first["changed"] is True and first["healthy"] is True, first
    assert second["changed"] is False and second["healthy"] is True and second["worker_id"] == first["worker_id"]
    # one registration, under the canonical URL
    assert sorted(w["url"] for w in fleet.workers()) == sorted([fleet.a.url, fleet.b.url])


# --- (5) a wrong control-plane key --------------------------------------------------------------------------------

@pytest.mark.parametrize("key", ["wrong-admin-key-0123456789", WORKER_KEY])
def test_wrong_admin_key_fails_clearly_without_a_key_in_the_output(fresh, key):
    fleet = fresh
    for state in ("absent", "present"):
        rc, result, output, wall = fleet.run({"worker_url": fleet.a.url, "state": state, "admin_api_key": key})
        assert rc == 1 and result["changed"] is False, result
        assert "answered 401 (Unauthorized): Invalid authentication token: the gateway refused the control-plane " \
               "key; set admin_api_key" in result["msg"], result
        assert result["msg"].endswith("(sent as 'Authorization: Bearer <key>')"), result["msg"]
        for secret in (key, ADMIN_KEY, WORKER_KEY):
            assert secret not in output
    assert fleet.healthy_urls() == sorted([fleet.a.url, fleet.b.url])


# --- (6) check mode -----------------------------------------------------------------------------------------------

def test_check_mode_changes_nothing(fresh):
    fleet = fresh
    before = [(w["id"], w["status"]) for w in fleet.workers()]
    rc, result, output, wall = fleet.run({"worker_url": fleet.a.url, "state": "absent"}, check_mode=True)
    assert rc == 0 and result["changed"] is True and "check mode: would remove" in result["msg"], result
    assert result["drained"] is None and result["in_flight"]["at_end"] is None
    assert [(w["id"], w["status"]) for w in fleet.workers()] == before
    fleet.remove_directly(fleet.a)
    rc, result, output, wall = fleet.run({"worker_url": fleet.a.url, "state": "present"}, check_mode=True)
    assert rc == 0 and result["changed"] is True and "would register" in result["msg"], result
    time.sleep(1.5)  # a registration would have been listed by now
    assert fleet.a.url not in [w["url"] for w in fleet.workers()]


# --- drain timeout ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("action", ["fail", "continue"])
def test_drain_timeout_reports_what_is_still_running(fresh, action):
    fleet = fresh
    threads, slow_results = _start_slow_on_both(fleet)
    try:
        rc, result, output, wall = fleet.run({"worker_url": fleet.a.url, "state": "absent", "drain_timeout": 1,
                                              "drain_timeout_action": action})
    finally:
        for thread in threads:
            thread.join(60)
    assert rc == (1 if action == "fail" else 0), result
    assert result["changed"] is True and result["drained"] is False and result["removed"] is False, result
    assert "was not drained within drain_timeout=1 s: the gateway still lists it" in result["msg"]
    assert "with 1 request(s) in flight" in result["msg"], result["msg"]
    assert result["in_flight"]["at_end"]["gateway"] == 1
    assert sorted(r["status"] for r in slow_results) == [200, 200]  # the removal cut nothing off
    if action == "continue":
        assert "not drained" in json.dumps(result.get("warnings")), result


# --- (7) hostile gateways -----------------------------------------------------------------------------------------

def _hostile(behaviour):
    server = RawServer(behaviour).start()
    return server


def _run_against(fleet, server, **args):
    return fleet.run(dict({"gateway_url": server.url, "worker_url": fleet.a.url, "state": "absent",
                           "request_timeout": 2}, **args), limit=60)


def test_huge_worker_list_is_cut_at_max_body_bytes(fleet):
    size = 64 * 1024 * 1024

    def behaviour(conn, request, stop):
        conn.sendall(("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                      % size).encode() + b'{"workers": [' + b" " * 65536)
        for dummy in range(size // 65536):
            if stop.is_set():
                return
            conn.sendall(b" " * 65536)

    server = _hostile(behaviour)
    try:
        rc, result, output, wall = _run_against(fleet, server, request_timeout=20)
    finally:
        server.stop()
    assert rc == 1 and "the body is larger than max_body_bytes, 4194304 bytes" in result["msg"], result
    assert wall < 15, wall


def test_trickling_gateway_is_cut_at_request_timeout(fleet):
    def behaviour(conn, request, stop):
        body = b'{"workers": []}' + b" " * 4000
        conn.sendall(("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                      % len(body)).encode())
        trickle(conn, body, stop, every=0.05, for_at_most=30)

    server = _hostile(behaviour)
    try:
        rc, result, output, wall = _run_against(fleet, server, request_timeout=2)
    finally:
        server.stop()
    assert rc == 1 and "the body was not read completely within 2 s" in result["msg"], result
    assert wall < 2 + 6, wall


def test_redirect_is_not_followed_and_the_key_stays_home(fleet):
    target = _hostile(lambda conn, request, stop: conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{\"workers\": []}"))

    def behaviour(conn, request, stop):
        conn.sendall(("HTTP/1.1 307 Temporary Redirect\r\nLocation: %s/workers\r\nContent-Length: 0\r\n\r\n"
                      % target.url).encode())

    server = _hostile(behaviour)
    try:
        rc, result, output, wall = _run_against(fleet, server)
    finally:
        server.stop()
        target.stop()
    assert rc == 1 and "redirect to %s/workers, not followed" % target.url in result["msg"], result
    assert not target.requests, "the module followed the redirect"
    assert server.requests[0]["headers"]["authorization"] == "Bearer " + ADMIN_KEY  # sent to the gateway only
    assert ADMIN_KEY not in output


def test_a_gateway_that_echoes_the_keys_gets_them_masked(fleet):
    def behaviour(conn, request, stop):
        body = ("bad request from %s; worker key %s" % (request["headers"].get("authorization"), WORKER_KEY)).encode()
        conn.sendall(("HTTP/1.1 500 Oops\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n"
                      % len(body)).encode() + body)

    server = _hostile(behaviour)
    try:
        rc, result, output, wall = _run_against(fleet, server)
    finally:
        server.stop()
    assert rc == 1 and "answered 500" in result["msg"] and "********" in result["msg"], result
    assert ADMIN_KEY not in output and WORKER_KEY not in output


# --- (4b) back in right after the drain: smg still finishing the removal of the same URL --------------------------

@pytest.mark.parametrize("attempt", range(3))
def test_present_right_after_absent_returned_gets_the_worker_back(fresh, attempt):
    """A swap in place takes seconds: the rejoin's POST can come while smg is still settling the removal of the same
    URL (--drain-settle-secs, 5 s). The worker must end registered and healthy, whatever the timing."""
    fleet = fresh
    first = fleet.run({"worker_url": fleet.a.url, "state": "absent"})[1]
    assert first["changed"] is True and first["drained"] is True, first
    # vary the moment of the POST around the end of smg's settle time
    time.sleep([0.0, 4.3, 4.8][attempt])
    rc, result, output, wall = fleet.run({"worker_url": fleet.a.url, "state": "present", "healthy_timeout": 60})
    assert rc == 0, result
    assert result["healthy"] is True and result["registered"] is True, result
    assert live.wait_for(lambda: fleet.healthy_urls() == sorted([fleet.a.url, fleet.b.url]), 10), fleet.workers()
    # and it stays registered (the earlier removal does not take the new registration along later)
    time.sleep(6)
    assert fleet.healthy_urls() == sorted([fleet.a.url, fleet.b.url]), fleet.workers()
