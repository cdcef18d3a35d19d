# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Polling logic behind the ``llmserve.sglang.wait_for_endpoint`` module.

Everything here is independent of AnsibleModule so it can be unit-tested with a
fake clock: the caller hands in a ``probe`` callable (one HTTP request), a clock,
a sleep function and, optionally, a :class:`UnitWatcher` that reads systemd.

It also holds the module's defences against hostile or broken servers: the per-request
watchdog (:class:`RequestWatchdog`), the capped body read (:func:`read_capped`), the JSON
decoding with a nesting limit and its text made safe (:func:`decode_json_body`), the loopback test that keeps
proxies out (:func:`is_local_host`); the masking of secrets is in ``text.py``.

Stdlib only; importable on Python 3.9+ managed hosts.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
import signal
import socket
import threading
import time

from ansible_collections.llmserve.sglang.plugins.module_utils.text import clean_text, parse_systemctl_show, safe_value

# "not yet" means: keep polling.  "ready" and "fail" end the wait.
READY = "ready"
FAIL = "fail"
NOT_YET = "not_yet"

NO_CONNECTION = -1

_FAIL_HINTS = {
    401: "the server wants credentials: set api_key (sent as 'Authorization: Bearer <key>') to the server's --api-key,"
         " or poll an endpoint that needs none (/health, /health_generate, /ready, /metrics)",
    403: "the credentials were refused for this endpoint: check api_key (an admin endpoint may need the admin key)",
    404: "wrong path or port: check the URL (SGLang only has /ready from 0.5.20 on; /metrics needs --enable-metrics)",
    405: "method not allowed on this path: check method (and body)",
}

_REASONS = {
    -1: "no connection",
    200: "OK",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


def describe_status(status):
    """Short human label for a status code, e.g. ``503 (Service Unavailable)``."""
    reason = _REASONS.get(status)
    if status == NO_CONNECTION:
        return "-1 (no connection)"
    return "%s (%s)" % (status, reason) if reason else str(status)


def status_hint(status):
    """Hint added to ``msg`` when a status from ``fail_status_code`` stops the wait."""
    return _FAIL_HINTS.get(status, "status %s is listed in fail_status_code" % status)


def classify(status, success_codes, fail_codes):
    """Map one answer to READY, FAIL or NOT_YET.

    ``status`` is the HTTP status, or -1 when there was no HTTP answer at all
    (refused, reset, DNS, TLS or request timeout).  Success codes win over fail
    codes; everything that is in neither list means "not yet".
    """
    if status in success_codes:
        return READY
    if status in fail_codes:
        return FAIL
    return NOT_YET


class StatusHistory(object):
    """Run-length record of the answers: one entry per change of status.

    ``reason`` says why the last answer of a run did not count (connection error, redirect,
    body or JSON problem, json_query result); the key is absent when there is nothing to say.
    """

    def __init__(self):
        self.entries = []

    def record(self, status, at, reason=None):
        at = round(float(at), 3)
        if self.entries and self.entries[-1]["status"] == status:
            entry = self.entries[-1]
            entry["count"] += 1
            entry["last_seen"] = at
        else:
            entry = {"status": status, "first_seen": at, "last_seen": at, "count": 1}
            self.entries.append(entry)
        if reason:
            entry["reason"] = reason
        else:
            entry.pop("reason", None)

    def as_list(self):
        return [dict(entry) for entry in self.entries]

    def summary(self):
        return " -> ".join("%s x%d" % (e["status"], e["count"]) for e in self.entries) or "no request sent"


def filter_keys(data, keys):
    """Only the listed top-level keys of a JSON object; None when ``data`` is not an object."""
    if not isinstance(data, dict):
        return None
    return dict((key, data[key]) for key in keys if key in data)


# --- hostile answers ------------------------------------------------------------------------------

MAX_JSON_DEPTH = 100


def json_depth(value, limit):
    """Nesting depth of parsed JSON, counted without recursion; stops counting past ``limit``."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            if deepest > limit:
                return deepest
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


def decode_json_body(body, content_type=None, max_depth=MAX_JSON_DEPTH):
    """``(data, problem)``: the parsed JSON, or None and why the body is not usable JSON.

    Never raises: bodies that are not UTF-8, not JSON, nested deeper than ``max_depth`` (or than
    Python's recursion limit) or otherwise unparseable only give a reason.

    Every string of the answer (keys too) is ``text.safe_value``: the one place where the JSON of a server (SGLang,
    the gateway) enters a run, so no task, report or metric downstream meets a lone surrogate (which ansible-core
    refuses in a module's result), a control character or a megabyte of text.
    """
    if body is None:
        return None, "the answer has no body"
    if isinstance(body, bytes):
        try:
            body = body.decode("utf-8")
        except UnicodeDecodeError:
            return None, "the answer is not JSON (body is not UTF-8)"
    text = body.strip()
    if not text:
        return None, "the answer is not JSON (empty body)"
    if text[0] not in "{[\"" and not (content_type and "json" in str(content_type).lower()):
        return None, "the answer is not JSON"
    try:
        data = json.loads(text)
    except RecursionError:
        return None, "the answer is not usable JSON: nested deeper than %d levels" % max_depth
    except ValueError as exc:
        return None, "the answer is not valid JSON: %s" % clean_text(exc, 120)
    except Exception as exc:  # anything else the decoder raises on hostile input: not JSON, never a crash
        return None, "the answer is not usable JSON: %s" % clean_text(exc, 120)
    if json_depth(data, max_depth) > max_depth:
        return None, "the answer is not usable JSON: nested deeper than %d levels" % max_depth
    return safe_value(data), None


def read_capped(resp, limit, chunk_size=65536):
    """``(body, complete)``: at most ``limit`` bytes of ``resp``, read in chunks.

    When the body is longer than ``limit`` the read stops after ``limit + 1`` bytes and
    ``(None, False)`` is returned, so a huge answer costs at most about twice ``limit`` in memory.
    Slow senders are the watchdog's business (:class:`RequestWatchdog`).
    """
    read = getattr(resp, "read1", None) or resp.read
    chunks = []
    total = 0
    while total <= limit:
        data = read(min(chunk_size, limit + 1 - total))
        if not data:
            break
        chunks.append(data)
        total += len(data)
    if total > limit:
        return None, False
    return b"".join(chunks), True


class RequestDeadline(BaseException):
    """Raised by :class:`RequestWatchdog` when a request runs past its time.

    A BaseException, so the ``except Exception`` blocks of HTTP libraries cannot swallow it.
    """


class RequestWatchdog(object):
    """A wall-clock limit for one whole request: connect, TLS handshake, headers and body.

    Socket timeouts restart with every byte, so a server that trickles its answer can keep a
    request alive for ever.  This arms a one-shot ``ITIMER_REAL`` for the request; SIGALRM
    interrupts whatever blocking call the HTTP code is in and :class:`RequestDeadline` unwinds it
    (the HTTP code closes its connection on the way out).  A module runs as its own process in
    the main thread, where signal handlers can be installed, and nothing else in it uses SIGALRM.
    Where that is not the case (imported into a thread) the watchdog does nothing and only the
    socket timeouts apply.  DNS lookups are not interruptible this way.
    """

    def __init__(self):
        self.armed = False
        self.usable = (hasattr(signal, "setitimer") and hasattr(signal, "SIGALRM")
                       and threading.current_thread() is threading.main_thread())
        self.previous = None
        if self.usable:
            try:
                self.previous = signal.signal(signal.SIGALRM, self._fire)
            except (ValueError, OSError):
                self.usable = False

    def _fire(self, signum, frame):
        if self.armed:
            self.armed = False
            raise RequestDeadline()

    def run(self, seconds, func, *args, **kwargs):
        """``func(*args, **kwargs)``, interrupted by RequestDeadline after ``seconds``."""
        if not self.usable:
            return func(*args, **kwargs)
        if not seconds > 0:
            raise RequestDeadline()
        self.armed = True
        signal.setitimer(signal.ITIMER_REAL, float(seconds))
        try:
            return func(*args, **kwargs)
        finally:
            # the flag first: a signal that arrives after it is ignored
            self.armed = False
            signal.setitimer(signal.ITIMER_REAL, 0)

    def close(self):
        if self.usable:
            self.armed = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous if self.previous is not None else signal.SIG_DFL)
            self.usable = False


# --- proxies --------------------------------------------------------------------------------------

_LEGACY_IPV4 = re.compile(r"^[0-9a-fx.]+$")


def is_local_host(host):
    """True for hosts that must never be reached through a proxy: loopback (127.0.0.0/8, ::1,
    ``localhost`` and ``*.localhost``), link-local (169.254.0.0/16, fe80::/10) and the unspecified
    address (0.0.0.0, ::, which connect to this host).  IPv4-mapped IPv6 and the short IPv4 forms
    that the resolver accepts (``127.1``, ``0x7f000001``) count too."""
    if not host:
        return False
    host = host.strip().strip("[]").lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    host = host.split("%", 1)[0]  # IPv6 zone index
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        if not _LEGACY_IPV4.match(host):
            return False
        try:
            address = ipaddress.IPv4Address(socket.inet_aton(host))
        except (OSError, ValueError):
            return False
    if address.version == 6 and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_link_local or address.is_unspecified


def is_finite_positive(value):
    try:
        return math.isfinite(value) and value > 0
    except TypeError:
        return False


# Seconds a request needs at least (or request_timeout when that is smaller) to be worth sending near the deadline.
LEAST_REQUEST_BUDGET = 0.25


class Deadline(object):
    """A total time budget on a monotonic clock."""

    def __init__(self, timeout, clock=None):
        self.clock = clock or time.monotonic
        self.start = self.clock()
        self.timeout = float(timeout)
        self.end = self.start + self.timeout

    def elapsed(self):
        return self.clock() - self.start

    def remaining(self):
        return max(0.0, self.end - self.clock())

    def expired(self):
        return self.clock() >= self.end


def _as_int(value, default=0):
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


class UnitWatcher(object):
    """Watches one systemd unit while the endpoint is polled.

    ``run`` executes an argv list and returns ``(rc, stdout, stderr)`` (AnsibleModule.run_command
    fits).  ``start()`` takes the baseline: the invocation that is running when the wait begins.
    ``check()`` returns a failure message as soon as that invocation is gone (unit failed,
    inactive, stopping, waiting to be restarted, or restarted), else None.
    """

    PROPERTIES = ("LoadState", "ActiveState", "SubState", "InvocationID", "NRestarts",
                  "ExecMainStatus", "ExecMainStartTimestampMonotonic", "ExecMainExitTimestampMonotonic", "Result",
                  "ActiveExitTimestampMonotonic", "InactiveEnterTimestampMonotonic")
    # ``timestamps``: the moments of a restart by systemd's own CLOCK_MONOTONIC stamps (microseconds, 0 = never since
    # boot). ActiveExit is when the unit left "active" (the stop was requested), InactiveEnter when it reached
    # "inactive" (every process of the old invocation gone), ExecMainStart when the new main process was forked.
    TIMESTAMPS = (("stop_requested", "ActiveExitTimestampMonotonic"), ("stopped", "InactiveEnterTimestampMonotonic"),
                  ("main_started", "ExecMainStartTimestampMonotonic"),
                  ("main_exited", "ExecMainExitTimestampMonotonic"))

    def __init__(self, unit, run, systemctl="systemctl", journalctl="journalctl", clock=None, wall=None):
        self.unit = unit
        self.run = run
        self.systemctl = systemctl
        self.journalctl = journalctl
        self.clock = clock or time.monotonic
        self.wall = wall or time.time
        self.baseline = None
        self.last = None
        self.checks = 0

    def read(self):
        argv = [self.systemctl, "show", "--no-pager", "-p", ",".join(self.PROPERTIES), "--", self.unit]
        rc, out, err = self.run(argv)
        if rc != 0:
            raise UnitError("cannot read the state of unit %s: '%s' exited %s: %s"
                            % (self.unit, " ".join(argv), rc, (err or out or "").strip()))
        props = parse_systemctl_show(out)
        self.last = props
        self.checks += 1
        return props

    def start(self):
        self.baseline = self.read()
        return self.check(props=self.baseline)

    def check(self, props=None):
        if props is None:
            props = self.read()
        base = self.baseline or props
        load = props.get("LoadState", "")
        active = props.get("ActiveState", "")
        sub = props.get("SubState", "")
        if load in ("not-found", "bad-setting", "error", "masked"):
            return "unit %s cannot be used: LoadState=%s" % (self.unit, load)
        if base.get("InvocationID") and props.get("InvocationID") and props["InvocationID"] != base["InvocationID"]:
            return ("unit %s was restarted while waiting (invocation %s -> %s)%s"
                    % (self.unit, base["InvocationID"], props["InvocationID"], self._exit_text(props)))
        if _as_int(props.get("NRestarts")) > _as_int(base.get("NRestarts")):
            return ("unit %s was restarted while waiting (NRestarts %s -> %s)%s"
                    % (self.unit, base.get("NRestarts"), props.get("NRestarts"), self._exit_text(props)))
        if sub == "auto-restart":
            return ("unit %s: its main process exited and systemd will restart it (ActiveState=%s SubState=%s)%s"
                    % (self.unit, active, sub, self._exit_text(props)))
        if active in ("failed", "inactive", "deactivating"):
            return ("unit %s is %s (SubState=%s, Result=%s)%s"
                    % (self.unit, active, sub, props.get("Result", "?"), self._exit_text(props)))
        return None

    def _seconds_since(self, prop, props):
        """Seconds since the CLOCK_MONOTONIC stamp ``prop`` of ``props`` (default: the last read), or None when unset."""
        props = props if props is not None else (self.last or {})
        usec = _as_int(props.get(prop))
        if usec <= 0:
            return None
        return round(self.clock() - usec / 1e6, 3)

    def exit_age(self, props=None):
        """Seconds since the main process exited, or None (systemd timestamps use CLOCK_MONOTONIC)."""
        return self._seconds_since("ExecMainExitTimestampMonotonic", props)

    def start_age(self, props=None):
        """Seconds since the unit's main process started, or None: read right after readiness, it is the
        service's time to ready, however late the wait itself began."""
        return self._seconds_since("ExecMainStartTimestampMonotonic", props)

    def timestamps(self, props=None):
        """systemd's moments of the unit (:attr:`TIMESTAMPS`) and ``checked`` (now: right after the wait's last answer),
        in seconds of this host's CLOCK_MONOTONIC (``None`` where systemd has none), with ``realtime_offset``: what
        to add to turn them into seconds since the epoch by this host's wall clock, read now."""
        props = props if props is not None else (self.last or {})
        stamps = {"clock": "monotonic"}
        for name, prop in self.TIMESTAMPS:
            usec = _as_int(props.get(prop))
            stamps[name] = round(usec / 1e6, 6) if usec > 0 else None
        now = self.clock()
        stamps["checked"] = round(now, 6)
        stamps["realtime_offset"] = round(self.wall() - now, 6)
        return stamps

    def _exit_text(self, props):
        status = props.get("ExecMainStatus")
        age = self.exit_age(props)
        if age is None or status is None:
            return ""
        return "; main process exit status %s, %.1f s ago" % (status, age)

    def state(self):
        """``unit_state`` return value."""
        props = self.last or {}
        base = self.baseline or {}
        return {
            "name": self.unit,
            "load_state": props.get("LoadState"),
            "active_state": props.get("ActiveState"),
            "sub_state": props.get("SubState"),
            "result": props.get("Result"),
            "invocation_id": props.get("InvocationID"),
            "n_restarts": _as_int(props.get("NRestarts"), None),
            "exec_main_status": _as_int(props.get("ExecMainStatus"), None),
            "main_exit_seconds_ago": self.exit_age(props),
            "main_start_seconds_ago": self.start_age(props),
            "timestamps": self.timestamps(props),
            "invocation_id_at_start": base.get("InvocationID"),
            "n_restarts_at_start": _as_int(base.get("NRestarts"), None),
            "checks": self.checks,
        }

    def journal_invocation(self):
        """The invocation whose log is wanted: the one that was running when the wait began."""
        for props in (self.baseline, self.last):
            if props and props.get("InvocationID"):
                return props["InvocationID"]
        return None

    def journal(self, lines):
        """``(lines, error)`` for the watched invocation; the unit's own output plus systemd's
        messages about that invocation.  Other invocations never match the filter."""
        invocation = self.journal_invocation()
        if not lines or lines <= 0:
            return [], None
        if not invocation:
            return [], "unit %s has no invocation ID (it never started), so there is no journal to show" % self.unit
        # Ask journald to flush what it has buffered; harmless when not permitted.
        self.run([self.journalctl, "--sync"])
        argv = [self.journalctl, "_SYSTEMD_INVOCATION_ID=%s" % invocation, "+", "INVOCATION_ID=%s" % invocation,
                "-n", str(int(lines)), "-o", "cat", "--no-pager"]
        rc, out, err = self.run(argv)
        if rc != 0:
            return [], "'%s' exited %s: %s" % (" ".join(argv), rc, (err or out or "").strip())
        return [line for line in (out or "").splitlines() if line.strip() != "-- No entries --"], None


class UnitError(Exception):
    """systemd could not be queried."""


def wait_for_endpoint(probe, timeout, interval, request_timeout, success_codes, fail_codes,
                      consecutive=1, json_check=None, unit_watcher=None, clock=None, sleep=None, url=""):
    """Poll until ready, a fail status, a unit failure, or the deadline.

    ``probe(request_timeout)`` performs one request and returns a dict with ``status``
    (int, -1 for no HTTP answer), optional ``body`` (bytes/str), ``content_type``, ``msg``
    and ``reason`` (why this answer cannot count, e.g. a redirect or a body that was cut).
    ``json_check(data)`` returns ``(truthy, detail)``; it only sees parsed JSON.
    ``url`` is only used in messages (pass it with its userinfo masked).

    Returns a result dict with ``failed`` set; the module adds ``changed``.
    """
    clock = clock or time.monotonic
    sleep = sleep or time.sleep
    deadline = Deadline(timeout, clock)
    history = StatusHistory()
    result = {"ready": False, "status": None, "attempts": 0, "json": None}
    streak = 0
    last_msg = ""
    failure = None

    if unit_watcher is not None:
        problem = unit_watcher.start()
        if problem:
            failure = problem

    # A request sent with only a few milliseconds left can only time out, and its -1 would replace the last real
    # answer in the result and the message. The last pause is shortened so that the last request has this much
    # time, and when a late wake-up left less, no request is sent and the wait runs out without one.
    least_budget = min(float(request_timeout), LEAST_REQUEST_BUDGET)
    while failure is None:
        remaining = deadline.remaining()
        if 0 < remaining < least_budget and result["attempts"]:
            sleep(remaining)
            continue
        if remaining <= 0:
            failure = "timed out after %s s waiting for %s to answer %s; last answer %s%s" % (
                _fmt_seconds(timeout), url, _fmt_codes(success_codes),
                describe_status(result["status"]) if result["status"] is not None else "none",
                ": %s" % last_msg if last_msg else "")
            break
        answer = probe(min(float(request_timeout), remaining))
        status = int(answer.get("status", NO_CONNECTION))
        result["attempts"] += 1
        result["status"] = status
        data, verdict, reason = judge(answer, success_codes, fail_codes, json_check)
        result["json"] = data
        if status == NO_CONNECTION and not reason:
            reason = answer.get("msg") or None
        history.record(status, deadline.elapsed(), reason)
        last_msg = reason or answer.get("msg") or ""
        if verdict == READY:
            streak += 1
            if streak >= consecutive:
                result["ready"] = True
                break
        else:
            streak = 0
        if verdict == FAIL:
            failure = "%s answered %s: %s" % (url, describe_status(status), status_hint(status))
            break
        if unit_watcher is not None:
            problem = unit_watcher.check()
            if problem:
                failure = "%s (last answer from %s: %s)" % (problem, url, describe_status(status))
                break
        remaining = deadline.remaining()
        pause = min(float(interval), remaining)
        if least_budget < remaining < pause + least_budget:
            pause = remaining - least_budget
        if pause > 0:
            sleep(pause)

    result["elapsed"] = round(deadline.elapsed(), 3)
    result["status_history"] = history.as_list()
    result["failed"] = failure is not None
    if failure is None:
        result["msg"] = "%s answered %s after %.2f s (%d requests: %s)" % (
            url, describe_status(result["status"]), result["elapsed"], result["attempts"], history.summary())
    else:
        result["msg"] = "%s [after %.2f s, %d requests: %s]" % (
            failure, result["elapsed"], result["attempts"], history.summary())
    return result


def judge(answer, success_codes, fail_codes, json_check=None):
    """``(data, verdict, reason)`` for one answer: its parsed JSON (or None), READY/FAIL/NOT_YET,
    and why it did not count (None when it did, or when the status alone says so)."""
    status = int(answer.get("status", NO_CONNECTION))
    reason = answer.get("reason") or None
    problem = answer.get("body_problem")
    if problem:
        # the body was cut (too large, or the request ran out of time): say so even on a 503
        data = None
        reason = reason or problem
    else:
        data, problem = decode_json_body(answer.get("body"), answer.get("content_type"))
    verdict = classify(status, success_codes, fail_codes)
    if verdict == READY and json_check is not None:
        if data is None:
            met, detail = False, "json_query: %s" % problem
        else:
            met, detail = json_check(data)
        if not met:
            verdict = NOT_YET
            reason = detail
    return data, verdict, (reason if verdict != READY else None)


def _fmt_seconds(value):
    value = float(value)
    return ("%d" % value) if value == int(value) else ("%g" % value)


def _fmt_codes(codes):
    codes = list(codes)
    return str(codes[0]) if len(codes) == 1 else "one of %s" % ", ".join(str(c) for c in codes)
