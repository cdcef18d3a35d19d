# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Polling logic behind the ``llmserve.sglang.wait_for_endpoint`` module.

Everything here is independent of AnsibleModule so it can be unit-tested with a
fake clock: the caller hands in a ``probe`` callable (one HTTP request), a clock,
a sleep function and, optionally, a :class:`UnitWatcher` that reads systemd.

Stdlib only; importable on Python 3.9+ managed hosts.
"""

from __future__ import annotations

import json
import re
import time

REDACTED = "********"

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
    """Run-length record of the answers: one entry per change of status."""

    def __init__(self):
        self.entries = []

    def record(self, status, at):
        at = round(float(at), 3)
        if self.entries and self.entries[-1]["status"] == status:
            self.entries[-1]["count"] += 1
            self.entries[-1]["last_seen"] = at
        else:
            self.entries.append({"status": status, "first_seen": at, "last_seen": at, "count": 1})

    def as_list(self):
        return [dict(entry) for entry in self.entries]

    def summary(self):
        return " -> ".join("%s x%d" % (e["status"], e["count"]) for e in self.entries) or "no request sent"


# Secrets in JSON answers.  SGLang's /server_info returns api_key and admin_api_key in
# clear text; tokens (hf_token, access_token, ...) are redacted as well.  Key names are
# split into words so counters such as max_total_tokens or tokenizer_path stay readable.
_SECRET_NAMES = frozenset(("api_key", "admin_api_key", "apikey", "password", "passwd", "secret", "authorization"))
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def is_secret_key(name):
    """True for dictionary keys whose value must never be returned."""
    if not isinstance(name, str):
        return False
    lowered = _CAMEL.sub("_", name).lower()
    if lowered in _SECRET_NAMES or lowered.replace("-", "_") in _SECRET_NAMES:
        return True
    words = [w for w in _WORD_SPLIT.split(lowered) if w]
    if "token" in words:
        return True
    # run-together names such as hftoken or accesstoken
    return lowered.endswith("token")


def redact(value, secrets=()):
    """Copy of ``value`` with secret keys masked and known secret strings cut out.

    ``secrets`` are literal strings (for example the API key the module sent) that are
    replaced wherever they appear inside other strings, e.g. in SGLang's launch_command.
    """
    secrets = [s for s in secrets if s]
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if is_secret_key(key) and item not in (None, "", [], {}):
                out[key] = REDACTED
            else:
                out[key] = redact(item, secrets)
        return out
    if isinstance(value, list):
        return [redact(item, secrets) for item in value]
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return _redact_cli_secrets(value)
    return value


_CLI_SECRET = re.compile(r"(--(?:admin-)?api-key(?:=|\s+))(\S+)")


def _redact_cli_secrets(text):
    """Mask ``--api-key X`` / ``--admin-api-key=X`` inside command lines."""
    return _CLI_SECRET.sub(lambda m: m.group(1) + REDACTED, text)


def parse_json_body(body, content_type=None):
    """Parsed JSON or None.  Bodies that do not parse are simply not JSON."""
    if body is None:
        return None
    if isinstance(body, bytes):
        try:
            body = body.decode("utf-8")
        except UnicodeDecodeError:
            return None
    text = body.strip()
    if not text or text[0] not in "{[\"" and not (content_type and "json" in content_type.lower()):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


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


def parse_systemctl_show(text):
    """``Key=Value`` lines from ``systemctl show`` into a dict."""
    props = {}
    for line in (text or "").splitlines():
        key, sep, val = line.partition("=")
        if sep:
            props[key.strip()] = val.strip()
    return props


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
                  "ExecMainStatus", "ExecMainStartTimestampMonotonic", "ExecMainExitTimestampMonotonic", "Result")

    def __init__(self, unit, run, systemctl="systemctl", journalctl="journalctl", clock=None):
        self.unit = unit
        self.run = run
        self.systemctl = systemctl
        self.journalctl = journalctl
        self.clock = clock or time.monotonic
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

    def exit_age(self, props=None):
        """Seconds since the main process exited, or None (systemd timestamps use CLOCK_MONOTONIC)."""
        props = props if props is not None else (self.last or {})
        usec = _as_int(props.get("ExecMainExitTimestampMonotonic"))
        if usec <= 0:
            return None
        return round(self.clock() - usec / 1e6, 3)

    def start_age(self, props=None):
        """Seconds since the unit's main process started, or None: read right after readiness, it is the
        service's time to ready, however late the wait itself began."""
        props = props if props is not None else (self.last or {})
        usec = _as_int(props.get("ExecMainStartTimestampMonotonic"))
        if usec <= 0:
            return None
        return round(self.clock() - usec / 1e6, 3)

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
    (int, -1 for no HTTP answer), optional ``body`` (bytes/str), ``content_type`` and
    ``msg``.  ``json_check(data)`` returns ``(truthy, detail)``.

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

    while failure is None:
        remaining = deadline.remaining()
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
        history.record(status, deadline.elapsed())
        last_msg = answer.get("msg") or ""
        data = parse_json_body(answer.get("body"), answer.get("content_type"))
        result["json"] = data
        verdict = classify(status, success_codes, fail_codes)
        if verdict == READY and json_check is not None:
            met, detail = json_check(data)
            if not met:
                verdict = NOT_YET
                last_msg = detail
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
        pause = min(float(interval), deadline.remaining())
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


def _fmt_seconds(value):
    value = float(value)
    return ("%d" % value) if value == int(value) else ("%g" % value)


def _fmt_codes(codes):
    codes = list(codes)
    return str(codes[0]) if len(codes) == 1 else "one of %s" % ", ".join(str(c) for c in codes)
