# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for plugins/module_utils/endpoint_wait.py (fake clock, no network)."""

from __future__ import annotations

import io
import json
import socket
import threading
import time

import pytest

from ansible_collections.llmserve.sglang.plugins.module_utils import endpoint_wait as ew


class FakeClock(object):
    """Monotonic clock + sleep that only move when told to."""

    def __init__(self, start=1000.0):
        self.now = start
        self.sleeps = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        assert seconds > 0
        self.sleeps.append(seconds)
        self.now += seconds


class Timeline(object):
    """A probe that answers from a script: list of (status, latency[, body])."""

    def __init__(self, clock, script, default=(503, 0.0)):
        self.clock = clock
        self.script = list(script)
        self.default = default
        self.timeouts = []

    def __call__(self, request_timeout):
        self.timeouts.append(request_timeout)
        step = self.script.pop(0) if self.script else self.default
        status, latency = step[0], step[1]
        body = step[2] if len(step) > 2 else None
        if latency >= request_timeout:
            # like a socket timeout: the request gives up after request_timeout
            self.clock.now += request_timeout
            return {"status": -1, "msg": "Connection failure: timed out"}
        self.clock.now += latency
        return {"status": status, "body": body, "msg": "scripted"}


def run(clock, probe, **kwargs):
    params = dict(timeout=600, interval=0.25, request_timeout=30, success_codes=[200],
                  fail_codes=[401, 403, 404, 405], clock=clock, sleep=clock.sleep, url="http://x/health")
    params.update(kwargs)
    return ew.wait_for_endpoint(probe, **params)


# --- classification -------------------------------------------------------------------------

@pytest.mark.parametrize("status,expected", [
    (200, ew.READY), (-1, ew.NOT_YET), (503, ew.NOT_YET), (502, ew.NOT_YET), (500, ew.NOT_YET),
    (401, ew.FAIL), (403, ew.FAIL), (404, ew.FAIL), (405, ew.FAIL), (204, ew.NOT_YET),
])
def test_classify_defaults(status, expected):
    assert ew.classify(status, [200], [401, 403, 404, 405]) == expected


def test_classify_success_wins_and_minus_one_can_be_success():
    assert ew.classify(404, [404], [404]) == ew.READY
    assert ew.classify(-1, [-1], []) == ew.READY


def test_status_hints_point_at_the_cause():
    assert "api_key" in ew.status_hint(401)
    assert "api_key" in ew.status_hint(403)
    assert "path" in ew.status_hint(404)
    assert "method" in ew.status_hint(405)
    assert "fail_status_code" in ew.status_hint(418)
    assert ew.describe_status(-1) == "-1 (no connection)"
    assert ew.describe_status(503) == "503 (Service Unavailable)"
    assert ew.describe_status(299) == "299"


# --- history ---------------------------------------------------------------------------------

def test_status_history_run_length():
    h = ew.StatusHistory()
    for i, status in enumerate([-1, -1, -1, 503, 503, 200]):
        h.record(status, i * 0.25)
    assert h.as_list() == [
        {"status": -1, "first_seen": 0.0, "last_seen": 0.5, "count": 3},
        {"status": 503, "first_seen": 0.75, "last_seen": 1.0, "count": 2},
        {"status": 200, "first_seen": 1.25, "last_seen": 1.25, "count": 1},
    ]
    assert h.summary() == "-1 x3 -> 503 x2 -> 200 x1"
    assert ew.StatusHistory().summary() == "no request sent"


def test_status_history_reason_is_the_last_one_of_a_run():
    h = ew.StatusHistory()
    h.record(-1, 0, "refused")
    h.record(-1, 1, "timed out")
    h.record(302, 2, "redirect to x")
    h.record(302, 3)
    assert [e.get("reason") for e in h.as_list()] == ["timed out", None]


@pytest.mark.parametrize("host,local", [
    ("127.0.0.1", True), ("127.9.8.7", True), ("::1", True), ("[::1]", True), ("localhost", True),
    ("LOCALHOST.", True), ("api.localhost", True), ("169.254.169.254", True), ("fe80::1", True),
    ("fe80::1%eth0", True), ("::ffff:127.0.0.1", True), ("0.0.0.0", True), ("::", True), ("127.1", True),
    ("0x7f000001", True), ("2130706433", True),
    ("10.0.0.1", False), ("192.168.1.1", False), ("sglang.example.com", False), ("localhost.example.com", False),
    ("8.8.8.8", False), ("2001:db8::1", False), ("beef", False), ("", False), (None, False),
])
def test_is_local_host(host, local):
    assert ew.is_local_host(host) is local


def test_filter_keys():
    assert ew.filter_keys({"a": 1, "b": 2}, ["b", "c"]) == {"b": 2}
    assert ew.filter_keys([1], ["a"]) is None


@pytest.mark.parametrize("depth", [101, 900, 5000, 100000])
def test_decode_json_body_refuses_deep_nesting(depth):
    for body in ("[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth):
        data, problem = ew.decode_json_body(body.encode())
        assert data is None and "nested deeper than 100 levels" in problem


def test_decode_json_body_reasons():
    assert ew.decode_json_body(b"[" * 100 + b"]" * 100)[1] is None
    assert ew.decode_json_body(None) == (None, "the answer has no body")
    assert "not UTF-8" in ew.decode_json_body(b"\xff{")[1]
    assert "empty body" in ew.decode_json_body(b"  ")[1]
    assert ew.decode_json_body(b"OK")[1] == "the answer is not JSON"
    assert "not valid JSON" in ew.decode_json_body(b'{"a": ')[1]
    assert "not valid JSON" in ew.decode_json_body(b"1" * 5000, "application/json")[1]  # int digits limit


def test_decode_json_body_makes_the_servers_text_safe():
    # the one door of a server's JSON (issue 45 #6): ansible-core refuses a lone surrogate in a module's result
    body = (r'{"speculative_algorithm": "EAGLE3\ud83d\ude80", "version": "0.5\ud83d", "k\u0000": ["\u001b[2J", 1],'
            r' "long": "%s"}' % ("x" * 20000))
    data, problem = ew.decode_json_body(body.encode("ascii"))
    assert problem is None
    assert data["speculative_algorithm"] == "EAGLE3\U0001F680" and data["version"] == "0.5\ufffd"
    assert data["k\\x00"] == ["\\x1b[2J", 1]
    assert len(data["long"]) == 10000 and data["long"].endswith("...(cut, 20000 characters)")
    json.dumps(data, ensure_ascii=False).encode("utf-8")  # strict


def test_json_depth_counts_without_recursion():
    deep = []
    for dummy in range(50000):
        deep = [deep]
    assert ew.json_depth(deep, 100) == 101
    assert ew.json_depth({"a": [1, {"b": 2}]}, 100) == 3 and ew.json_depth(5, 100) == 0


def test_read_capped_reads_up_to_the_limit_only():
    class Counting(io.BytesIO):
        asked = 0

        def read1(self, size=-1):
            Counting.asked += size
            return super().read1(size)

    assert ew.read_capped(io.BytesIO(b"x" * 10), 10) == (b"x" * 10, True)
    big = Counting(b"y" * (10 * 1024 * 1024))
    assert ew.read_capped(big, 1024 * 1024) == (None, False)
    assert Counting.asked == 1024 * 1024 + 1  # never more than limit + 1 bytes asked for
    assert ew.read_capped(io.BytesIO(b""), 5) == (b"", True)


def test_watchdog_interrupts_a_blocked_read():
    left, right = socket.socketpair()
    try:
        left.settimeout(30)  # the socket timeout alone would wait 30 s
        watchdog = ew.RequestWatchdog()
        assert watchdog.usable
        start = time.monotonic()
        with pytest.raises(ew.RequestDeadline):
            watchdog.run(0.3, left.recv, 1)
        assert 0.25 <= time.monotonic() - start < 2
        # disarmed afterwards: a later call runs to completion
        right.sendall(b"z")
        assert watchdog.run(5, left.recv, 1) == b"z"
        time.sleep(0.05)
        watchdog.close()
    finally:
        left.close()
        right.close()


def test_watchdog_outside_the_main_thread_does_nothing():
    seen = []
    thread = threading.Thread(target=lambda: seen.append(ew.RequestWatchdog().run(0.01, lambda: "done")))
    thread.start()
    thread.join()
    assert seen == ["done"]


def test_is_finite_positive():
    assert ew.is_finite_positive(0.1)
    assert not any(ew.is_finite_positive(v) for v in (0, -1, float("nan"), float("inf"), float("-inf"), None))


def test_decode_json_body_data():
    assert ew.decode_json_body(b'{"a": 1}') == ({"a": 1}, None)
    assert ew.decode_json_body(' [1, 2] ') == ([1, 2], None)
    assert ew.decode_json_body(b"42", "application/json") == (42, None)
    for body in (b"OK", b"", None, b"\xff\xfe", b"{broken"):
        data, problem = ew.decode_json_body(body)
        assert data is None and problem


# --- deadline --------------------------------------------------------------------------------

def test_deadline_arithmetic():
    clock = FakeClock(50.0)
    d = ew.Deadline(10, clock)
    assert d.remaining() == 10 and not d.expired()
    clock.now = 57.5
    assert d.elapsed() == 7.5 and d.remaining() == 2.5
    clock.now = 61.0
    assert d.remaining() == 0.0 and d.expired()


# --- the loop --------------------------------------------------------------------------------

def test_refused_then_503_then_200():
    clock = FakeClock()
    probe = Timeline(clock, [(-1, 0.001)] * 12 + [(503, 0.002)] * 5 + [(200, 0.003, b'{"ok": true}')])
    result = run(clock, probe)
    assert result["failed"] is False and result["ready"] is True
    assert result["attempts"] == 18 and result["status"] == 200
    assert [(e["status"], e["count"]) for e in result["status_history"]] == [(-1, 12), (503, 5), (200, 1)]
    assert result["status_history"][1]["first_seen"] == pytest.approx(12 * 0.25 + 12 * 0.001 + 0.002, abs=1e-6)  # when the answer arrived
    assert result["json"] == {"ok": True}
    assert clock.sleeps == [0.25] * 17
    assert "-1 x12 -> 503 x5 -> 200 x1" in result["msg"]


@pytest.mark.parametrize("status,word", [(401, "api_key"), (404, "path"), (405, "method"), (403, "api_key")])
def test_fail_status_stops_at_once(status, word):
    clock = FakeClock()
    probe = Timeline(clock, [(-1, 0.0), (status, 0.01)])
    result = run(clock, probe)
    assert result["failed"] and result["ready"] is False
    assert result["attempts"] == 2 and result["status"] == status
    assert word in result["msg"]
    assert result["elapsed"] == pytest.approx(0.26)


def test_deadline_is_strict_and_request_timeout_capped():
    clock = FakeClock()
    # the server accepts but never answers: every request runs into its timeout
    probe = Timeline(clock, [], default=(200, 1e9))
    result = run(clock, probe, timeout=100, request_timeout=30, interval=0.25)
    assert result["failed"] and "timed out after 100 s" in result["msg"]
    assert result["elapsed"] == pytest.approx(100.0)
    # 30 + 0.25 + 30 + 0.25 + 30 + 0.25 -> 9.25 s left for the last request
    assert probe.timeouts[:3] == [30, 30, 30]
    assert probe.timeouts[3] == pytest.approx(100 - 3 * 30.25)
    assert all(t <= 30 for t in probe.timeouts)
    assert sum(clock.sleeps) + sum(probe.timeouts) == pytest.approx(100.0)


def test_sleep_never_passes_the_deadline():
    clock = FakeClock()
    probe = Timeline(clock, [], default=(503, 0.0))
    result = run(clock, probe, timeout=1.0, interval=0.4)
    assert result["failed"]
    # 0, 0.4, then 0.6 s left: the pause is cut to 0.35 so the last request has its 0.25 s
    assert clock.sleeps == pytest.approx([0.4, 0.35, 0.25])
    assert result["attempts"] == 3
    assert result["elapsed"] == pytest.approx(1.0)
    assert "last answer 503 (Service Unavailable)" in result["msg"]


def test_the_last_pause_leaves_the_last_request_its_time():
    # the CI failure this guards against: a request sent 4.5 ms before the deadline timed out, and its -1 replaced
    # the redirect that every earlier request had answered, in the status and in the message
    clock = FakeClock()
    probe = Timeline(clock, [], default=(302, 0.24))
    result = run(clock, probe, timeout=1.0, interval=0.25, success_codes=[200])
    # 0 -> 0.24, pause 0.25, 0.49 -> 0.73: 0.27 s left, so the pause is 0.02 and the last request has 0.25 s
    assert clock.sleeps == pytest.approx([0.25, 0.02, 0.01])
    assert probe.timeouts == pytest.approx([1.0, 0.51, 0.25])  # each capped by the time left
    assert result["failed"] and result["attempts"] == 3 and result["status"] == 302
    assert "last answer 302" in result["msg"] and "timed out after 1 s" in result["msg"]
    assert [(e["status"], e["count"]) for e in result["status_history"]] == [(302, 3)]
    assert result["elapsed"] == pytest.approx(1.0)


class LateClock(FakeClock):
    """A loaded machine: every sleep returns ``late`` seconds after it should."""

    def __init__(self, late):
        super(LateClock, self).__init__()
        self.late = late

    def sleep(self, seconds):
        super(LateClock, self).sleep(seconds)
        self.now += self.late


def test_no_request_is_sent_that_could_only_time_out():
    clock = LateClock(0.2)
    probe = Timeline(clock, [], default=(302, 0.0))
    result = run(clock, probe, timeout=1.0, interval=0.25, success_codes=[200])
    # 0, pause 0.25 woke at 0.45; pause 0.25 woke at 0.9: 0.1 s left is not enough for a request
    assert result["attempts"] == 2 and probe.timeouts == pytest.approx([1.0, 0.55])
    assert result["failed"] and result["status"] == 302 and "last answer 302" in result["msg"]
    assert result["elapsed"] >= 1.0


def test_a_short_request_timeout_lowers_the_least_budget():
    clock = FakeClock()
    probe = Timeline(clock, [], default=(503, 0.04))
    # requests end at 0.04, 0.33, 0.62, 0.91; 0.06 s are left after the last pause, enough for a 0.05 s request
    result = run(clock, probe, timeout=1.22, interval=0.25, request_timeout=0.05)
    assert result["attempts"] == 5 and probe.timeouts[-1] == pytest.approx(0.05)
    assert result["status"] == 503 and result["elapsed"] == pytest.approx(1.22)


def test_the_first_request_is_sent_even_with_a_shorter_timeout():
    clock = FakeClock()
    probe = Timeline(clock, [(200, 0.05)])
    result = run(clock, probe, timeout=0.1, request_timeout=30)
    assert result["ready"] and result["attempts"] == 1 and probe.timeouts == [pytest.approx(0.1)]


def test_consecutive_successes_reset_by_a_miss():
    clock = FakeClock()
    probe = Timeline(clock, [(200, 0), (503, 0), (200, 0), (200, 0), (200, 0)])
    result = run(clock, probe, consecutive=3)
    assert result["ready"] and result["attempts"] == 5


def test_json_check_turns_success_into_not_yet():
    clock = FakeClock()
    probe = Timeline(clock, [(200, 0, b'{"data": []}'), (200, 0, b'{"data": [{"id": "m"}]}')])
    seen = []

    def check(data):
        seen.append(data)
        return (bool(data["data"]), "no model yet")

    result = run(clock, probe, json_check=check)
    assert result["ready"] and result["attempts"] == 2
    assert seen == [{"data": []}, {"data": [{"id": "m"}]}]


def test_json_check_not_met_until_deadline_reports_why():
    clock = FakeClock()
    probe = Timeline(clock, [], default=(200, 0, b'{"speculative_algorithm": null}'))
    result = run(clock, probe, timeout=1, json_check=lambda d: (False, "json_query gave null"))
    assert result["failed"] and "json_query gave null" in result["msg"]


# --- systemd unit ----------------------------------------------------------------------------

def show(active="active", sub="running", inv="aaa", restarts=0, status=0, exit_us=0, result="success", load="loaded",
         start_us=0, active_exit_us=0, inactive_enter_us=0):
    return ("LoadState=%s\nActiveState=%s\nSubState=%s\nInvocationID=%s\nNRestarts=%d\nExecMainStatus=%d\n"
            "ExecMainStartTimestampMonotonic=%d\nExecMainExitTimestampMonotonic=%d\nResult=%s\n"
            "ActiveExitTimestampMonotonic=%d\nInactiveEnterTimestampMonotonic=%d\n"
            % (load, active, sub, inv, restarts, status, start_us, exit_us, result, active_exit_us, inactive_enter_us))


class FakeSystemd(object):
    def __init__(self, states, journal="line one\nline two\n", journal_rc=0):
        self.states = list(states)
        self.calls = []
        self.journal = journal
        self.journal_rc = journal_rc

    def __call__(self, argv):
        self.calls.append(argv)
        if argv[0] == "systemctl":
            out = self.states.pop(0) if len(self.states) > 1 else self.states[0]
            return 0, out, ""
        if argv[1] == "--sync":
            return 0, "", ""
        return self.journal_rc, self.journal, "" if self.journal_rc == 0 else "permission denied"


@pytest.mark.parametrize("state,needle", [
    (show(active="failed", sub="failed", result="signal"), "is failed"),
    (show(active="inactive", sub="dead"), "is inactive"),
    (show(active="deactivating", sub="stop-sigterm"), "is deactivating"),
    (show(active="activating", sub="auto-restart", status=9, exit_us=999_500_000), "systemd will restart it"),
    (show(inv="bbb", restarts=1), "was restarted while waiting (invocation aaa -> bbb)"),
    (show(restarts=2), "NRestarts 0 -> 2"),
    (show(load="not-found", active="inactive"), "LoadState=not-found"),
])
def test_unit_watcher_detects_trouble(state, needle):
    clock = FakeClock()
    fake = FakeSystemd([show(), state])
    watcher = ew.UnitWatcher("sglang.service", fake, clock=clock)
    assert watcher.start() is None
    problem = watcher.check()
    assert problem is not None and needle in problem


def test_unit_watcher_healthy_states_pass():
    clock = FakeClock()
    fake = FakeSystemd([show(), show(active="activating", sub="start"), show()])
    watcher = ew.UnitWatcher("sglang.service", fake, clock=clock)
    assert watcher.start() is None
    assert watcher.check() is None
    assert watcher.check() is None
    argv = fake.calls[0]
    assert argv[:3] == ["systemctl", "show", "--no-pager"]
    assert argv[-2:] == ["--", "sglang.service"]
    assert "ActiveState" in argv[4] and "InvocationID" in argv[4] and "NRestarts" in argv[4]


def test_unit_exit_age_and_state():
    clock = FakeClock(1000.0)
    fake = FakeSystemd([show(), show(active="activating", sub="auto-restart", status=9, exit_us=999_600_000,
                                     result="signal")])
    watcher = ew.UnitWatcher("sglang.service", fake, clock=clock)
    watcher.start()
    problem = watcher.check()
    assert "exit status 9, 0.4 s ago" in problem
    state = watcher.state()
    assert state["main_exit_seconds_ago"] == pytest.approx(0.4)
    assert state["exec_main_status"] == 9 and state["sub_state"] == "auto-restart"
    assert state["invocation_id_at_start"] == "aaa" and state["checks"] == 2
    assert state["main_start_seconds_ago"] is None  # systemd gave no start timestamp


def test_unit_start_age_is_the_time_to_ready():
    clock = FakeClock(1000.0)
    fake = FakeSystemd([show(start_us=958_500_000)])  # main process started at monotonic 958.5 s
    watcher = ew.UnitWatcher("sglang.service", fake, clock=clock)
    watcher.start()
    clock.now += 2.0  # ready detected two seconds after the wait began
    assert watcher.state()["main_start_seconds_ago"] == pytest.approx(43.5)


def test_unit_timestamps_are_systemds_own_with_the_wall_clock_offset():
    clock = FakeClock(1000.0)
    # stop asked at 900.25 s, old processes gone at 905.5 s, new main process at 906 s (monotonic)
    fake = FakeSystemd([show(active_exit_us=900_250_000, inactive_enter_us=905_500_000, start_us=906_000_000)])
    watcher = ew.UnitWatcher("sglang.service", fake, clock=clock, wall=lambda: clock.now + 1.7e9)
    watcher.start()
    clock.now += 2.0
    assert watcher.state()["timestamps"] == {
        "clock": "monotonic", "stop_requested": 900.25, "stopped": 905.5, "main_started": 906.0, "main_exited": None,
        "checked": 1002.0, "realtime_offset": 1.7e9}
    assert "ActiveExitTimestampMonotonic" in fake.calls[0][4] and "InactiveEnterTimestampMonotonic" in fake.calls[0][4]
    # a unit that never stopped since boot: no stop moments, never 0
    never = ew.UnitWatcher("u", FakeSystemd([show(start_us=5_000_000)]), clock=clock)
    never.start()
    assert never.state()["timestamps"]["stop_requested"] is None and never.state()["timestamps"]["stopped"] is None


def test_unit_read_error_raises():
    watcher = ew.UnitWatcher("x.service", lambda argv: (1, "", "System has not been booted with systemd"))
    with pytest.raises(ew.UnitError, match="not been booted"):
        watcher.start()


def test_journal_uses_the_invocation_that_was_waited_on():
    fake = FakeSystemd([show(inv="first"), show(inv="second", restarts=1)])
    watcher = ew.UnitWatcher("sglang.service", fake)
    watcher.start()
    assert "restarted" in watcher.check()
    lines, error = watcher.journal(20)
    assert error is None and lines == ["line one", "line two"]
    argv = fake.calls[-1]
    assert argv[0] == "journalctl"
    assert "_SYSTEMD_INVOCATION_ID=first" in argv and "INVOCATION_ID=first" in argv
    assert "second" not in " ".join(argv)
    assert argv[argv.index("-n") + 1] == "20" and "cat" in argv


def test_journal_disabled_error_and_never_started():
    watcher = ew.UnitWatcher("u", FakeSystemd([show()]))
    watcher.start()
    assert watcher.journal(0) == ([], None)
    denied = ew.UnitWatcher("u", FakeSystemd([show()], journal="", journal_rc=1))
    denied.start()
    lines, error = denied.journal(5)
    assert lines == [] and "permission denied" in error
    never = ew.UnitWatcher("u", FakeSystemd([show(inv="", active="inactive", sub="dead")]))
    never.start()
    lines, error = never.journal(5)
    assert lines == [] and "never started" in error


def test_wait_fails_fast_when_unit_crashes():
    clock = FakeClock()
    probe = Timeline(clock, [], default=(-1, 0.001))
    fake = FakeSystemd([show(), show(), show(), show(active="activating", sub="auto-restart", status=9)])
    watcher = ew.UnitWatcher("sglang.service", fake, clock=clock)
    result = run(clock, probe, unit_watcher=watcher)
    assert result["failed"] and "systemd will restart it" in result["msg"]
    assert result["attempts"] == 3
    assert result["elapsed"] < 1.0


def test_wait_fails_before_polling_when_unit_already_failed():
    clock = FakeClock()
    probe = Timeline(clock, [(200, 0)])
    watcher = ew.UnitWatcher("sglang.service", FakeSystemd([show(active="failed", sub="failed")]), clock=clock)
    result = run(clock, probe, unit_watcher=watcher)
    assert result["failed"] and result["attempts"] == 0 and probe.timeouts == []
    assert "is failed" in result["msg"]


# --- hostile answers in the loop -------------------------------------------------------------

def test_loop_reports_redirects_and_body_problems_as_reasons():
    clock = FakeClock()
    answers = [{"status": 302, "reason": "redirect to http://********@other:1/, not followed", "msg": "HTTP Error 302"},
               {"status": 503, "body_problem": "the body is larger than max_body_bytes, 10 bytes; it was not read"},
               {"status": 200, "body": b"[" * 5000 + b"]" * 5000},
               {"status": 200, "body": b'{"ok": true}'}]

    def probe(request_timeout):
        clock.now += 0.01
        return answers.pop(0)

    result = run(clock, probe, json_check=lambda data: (bool(data.get("ok")), "not ok"))
    assert result["ready"] and result["attempts"] == 4
    reasons = [e.get("reason") for e in result["status_history"]]
    assert reasons[0] == "redirect to http://********@other:1/, not followed"
    assert reasons[1].startswith("the body is larger than max_body_bytes")
    assert reasons[2] is None  # the last 200 counted
    assert result["json"] == {"ok": True}


def test_loop_json_problem_with_json_check_is_not_yet():
    clock = FakeClock()
    probe = Timeline(clock, [], default=(200, 0, b"[" * 100000 + b"]" * 100000))
    result = run(clock, probe, timeout=1, json_check=lambda data: (True, ""))
    assert result["failed"] and "json_query: the answer is not usable JSON: nested deeper than 100 levels" in result["msg"]
    assert result["status_history"][0]["reason"].startswith("json_query: the answer is not usable JSON")
    assert result["json"] is None
