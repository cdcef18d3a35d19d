# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Logic behind the ``llmserve.sglang.gateway_worker`` module: take one SGLang worker out of an smg gateway and
drain it, or put it back and wait until the gateway routes to it.

What smg 1.13.0 does, as seen on the real gateway (tests/functional/gateway):

* ``GET /workers`` (control-plane key) lists the registered workers: ``id``, ``url`` (exactly as registered: smg
  does not normalise, ``http://h:1/`` and ``http://h:1`` are two workers), ``is_healthy``, ``status`` (``ready``,
  ``not_ready`` when health checks fail, ``draining`` after a removal), ``load`` (the requests the gateway itself
  has in flight to that worker, counted live), ``model_id``, ``worker_type``. A registration that is still being
  processed is not listed; ``GET /workers/{id}`` shows it with ``status: pending`` and a ``job_status``.
* ``DELETE /workers/{id}`` answers 202 at once. The worker stays listed as ``draining`` (``is_healthy: false``,
  no new requests) until its ``load`` is 0, then disappears a few seconds later.
* ``POST /workers {"url", "api_key"}`` answers 202 with ``worker_id``; 409 ``WORKER_ALREADY_EXISTS`` (the id in
  the message) when that exact URL is known, pending ones included.
* ``GET /get_loads`` is no drain signal: it serves the load monitor's cache of each worker's ``/v1/loads``
  (refreshed every 10 s, one entry per DP rank) and only for workers still registered.

* A draining entry's ``load`` reaches 0 as its last request ends; smg then keeps listing it for a fixed settle time
  (``--drain-settle-secs``, 5 s) before dropping it. Nothing is routed to it in that time (tests/functional/gateway).

So the drain is complete when the gateway no longer routes to the worker and has nothing in flight to it (the entry
is gone, or it is ``draining`` with ``load`` 0 at two readings QUIET_CONFIRM_SECONDS apart) and the worker itself
reports no request running or waiting: SGLang's ``/v1/loads`` (``num_running_reqs`` + ``num_waiting_reqs`` of every
DP rank; needs the worker's API key), or ``sglang:num_running_reqs`` + ``sglang:num_queue_reqs`` on ``/metrics``
(needs ``--enable-metrics``). Only the worker knows about requests that reached it by another way (a second gateway,
a direct client).

Everything here takes its HTTP calls, clock and sleep from the caller, so it is unit-tested without a network.
Stdlib and ansible.module_utils only; importable on Python 3.9+ managed hosts.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
import time

from ansible_collections.llmserve.sglang.plugins.module_utils.endpoint_wait import (
    NO_CONNECTION,
    Deadline,
    decode_json_body,
    describe_status,
)
from ansible_collections.llmserve.sglang.plugins.module_utils.http_client import json_request
from ansible_collections.llmserve.sglang.plugins.module_utils.text import (
    clean_text,
    mask_secrets,
    mask_userinfo,
    redact_text,
)

READY = "ready"
DRAINING = "draining"
# how often a registration the gateway dropped right after accepting it is made again before state=present fails
REREGISTER_TRIES = 2
# A drained entry smg still lists must be seen without requests twice this far apart (see WorkerChange._drain)
QUIET_CONFIRM_SECONDS = 0.5
WORKER_LOAD_SOURCES = ("auto", "v1_loads", "metrics", "none")
_DEFAULT_PORTS = {"http": 80, "https": 443}
_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
_HOST_NAME = re.compile(r"^[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_.])?$")
_PATH = re.compile(r"^[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$")
_BAD_CHARS = re.compile(r"[\x00-\x20\x7f]")
_URL = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<netloc>[^/?#]*)(?P<path>[^?#]*)"
                  r"(?:\?(?P<query>[^#]*))?(?:#(?P<fragment>.*))?$", re.S)
_METRIC_SAMPLE = re.compile(r"^(sglang:num_running_reqs|sglang:num_queue_reqs)(?:\{[^}]*\})?[ \t]+(\S+)", re.M)


class UrlError(ValueError):
    """A URL option that breaks a rule; the message names the option."""


class GatewayError(Exception):
    """A call to the gateway or the worker that did not give a usable answer.

    ``fatal``: waiting longer cannot help (the key was refused, the path does not exist), so stop at once.
    """

    def __init__(self, message, status=None, fatal=False):
        Exception.__init__(self, message)
        self.message = message
        self.status = status
        self.fatal = fatal


# --- URLs -------------------------------------------------------------------------------------------------------

def canonical_url(url, name="worker_url", allow_path=True):
    """``(as_sent, key)`` for an http(s) base URL, or UrlError naming ``name`` and the rule.

    ``as_sent``: scheme and host in lower case, an IPv6 address in brackets and in its short form, the port as
    written, the path without trailing slashes. ``key``: the same without the scheme's default port; two URLs that
    reach the same server the same way have the same key.
    """
    if not isinstance(url, str) or not url:
        raise UrlError("%s must be an http:// or https:// URL, got %r" % (name, url))
    if _BAD_CHARS.search(url):
        raise UrlError("%s must not contain spaces or control characters, got %r" % (name, clean_text(url, 200)))
    # split by hand: urlsplit's checks of brackets and ports differ between Python versions
    parts = _URL.match(url)
    scheme = parts.group("scheme").lower() if parts else ""
    if scheme not in _DEFAULT_PORTS or not parts.group("netloc"):
        raise UrlError("%s must be an absolute http:// or https:// URL such as http://10.0.0.5:30000, got %r"
                       % (name, mask_userinfo(url)))
    if "@" in parts.group("netloc"):
        raise UrlError("%s must not carry credentials (user:password@); the keys are options of their own, got %r"
                       % (name, mask_userinfo(url)))
    if parts.group("query") is not None or parts.group("fragment") is not None:
        raise UrlError("%s must be a base URL without a query or fragment, got %r" % (name, url))
    host, port = _split_host_port(parts.group("netloc"), name, url)
    path = parts.group("path").rstrip("/")
    if path and not allow_path:
        raise UrlError("%s must be a base URL without a path, got %r" % (name, url))
    if not _PATH.match(path):
        raise UrlError("%s has characters in its path that a URL cannot carry, got %r" % (name, url))
    shown_host = "[%s]" % host if ":" in host else host
    as_sent = "%s://%s%s%s" % (scheme, shown_host, ":%d" % port if port is not None else "", path)
    key_port = "" if port is None or port == _DEFAULT_PORTS[scheme] else ":%d" % port
    return as_sent, "%s://%s%s%s" % (scheme, shown_host, key_port, path)


def _split_host_port(netloc, name, url):
    if netloc.startswith("["):
        end = netloc.find("]")
        if end < 0:
            raise UrlError("%s has an unclosed '[' in its host, got %r" % (name, url))
        literal, rest = netloc[1:end], netloc[end + 1:]
        address, zone = (literal.split("%", 1) + [""])[:2]
        if zone.startswith("25"):  # %25 is how a URL writes the % of a zone index
            zone = zone[2:]
        try:
            host = ipaddress.IPv6Address(address).compressed
        except ValueError:
            raise UrlError("%s has %r in brackets, which is not an IPv6 address" % (name, literal))
        if zone:
            if not re.match(r"^[A-Za-z0-9_.-]+$", zone):
                raise UrlError("%s has an invalid IPv6 zone index %r" % (name, zone))
            host = "%s%%25%s" % (host, zone)
        if rest and not rest.startswith(":"):
            raise UrlError("%s has text after the bracketed IPv6 address that is not a port, got %r" % (name, url))
        port_text = rest[1:] if rest else None
    else:
        if netloc.count(":") > 1:
            raise UrlError("%s: an IPv6 address must be written in brackets, e.g. http://[fd00::5]:30000, got %r"
                           % (name, url))
        host, sep, port_text = netloc.partition(":")
        port_text = port_text if sep else None
        host = host.lower()
        if not host or not _HOST_NAME.match(host) or ".." in host:
            raise UrlError("%s has an invalid host name %r" % (name, host))
    port = None
    if port_text is not None:
        if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
            raise UrlError("%s must have a port from 1 to 65535, got %r" % (name, port_text))
        port = int(port_text)
    return host, port


def url_key(url):
    """The comparison key of a URL the gateway lists, or None when it is not a URL this module could match."""
    try:
        return canonical_url(url)[1]
    except UrlError:
        return None


# --- the gateway's worker list ----------------------------------------------------------------------------------

def parse_workers(data):
    """The ``workers`` list of smg's ``GET /workers`` answer; GatewayError when the answer is not one."""
    if not isinstance(data, dict) or not isinstance(data.get("workers"), list):
        raise GatewayError("the answer of GET /workers is not smg's worker list (a JSON object with a 'workers' "
                           "list): is gateway_url an smg gateway?")
    return [item for item in data["workers"] if isinstance(item, dict)]


def find_workers(listed, key):
    """The entries of ``listed`` whose URL has the comparison key ``key``."""
    return [item for item in listed if isinstance(item.get("url"), str) and url_key(item["url"]) == key]


def is_healthy(entry):
    """Routed to: healthy and not on its way out (smg's ``status`` is ``ready``; older gateways have none)."""
    return entry.get("is_healthy") is True and entry.get("status", READY) in (READY, None)


def is_draining(entry):
    return entry.get("status") == DRAINING


def peers(listed, targets):
    """Healthy workers, other than ``targets``, that can take over their requests: same model and worker type as
    the first target, where the gateway says which (a worker of another model is no replacement)."""
    ids = set(id(item) for item in targets)
    first = targets[0] if targets else {}
    found = []
    for item in listed:
        if id(item) in ids or not is_healthy(item):
            continue
        if any(isinstance(first.get(field), str) and isinstance(item.get(field), str) and item[field] != first[field]
               for field in ("model_id", "worker_type")):
            continue
        found.append(item)
    return found


def gateway_load(entries):
    """Sum of smg's ``load`` (its own in-flight requests) over ``entries``; None when none carries a number."""
    values = [item.get("load") for item in entries]
    numbers = [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v >= 0]
    return sum(numbers) if numbers else None


def summarize(entry):
    """What the module returns of a listed worker."""
    out = {}
    for field in ("id", "url", "status", "is_healthy", "load", "model_id", "worker_type"):
        if field in entry:
            value = entry[field]
            out[field] = clean_text(value, 300) if isinstance(value, str) else value
    return out


def worker_id_from_conflict(text):
    """The id in smg's 409 ``Worker already exists at URL '...' with ID <uuid>``, or None."""
    match = _UUID.search(text or "")
    return match.group(0) if match else None


# --- the worker's own load --------------------------------------------------------------------------------------

def parse_v1_loads(data):
    """Requests running or waiting on the engine, from SGLang's ``GET /v1/loads`` (one entry per DP rank)."""
    if not isinstance(data, dict) or not isinstance(data.get("loads"), list) or not data["loads"]:
        raise GatewayError("the worker's /v1/loads answer has no 'loads' list")
    total = 0
    for load in data["loads"]:
        if not isinstance(load, dict):
            raise GatewayError("the worker's /v1/loads answer has an entry that is not an object")
        for field in ("num_running_reqs", "num_waiting_reqs"):
            value = load.get(field, 0)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise GatewayError("the worker's /v1/loads answer has %s=%r, not a count" % (field, value))
            total += value
    return total


def parse_metrics(text):
    """Requests running or queued on the engine, from SGLang's Prometheus text (``--enable-metrics``): the sum of
    every ``sglang:num_running_reqs`` and ``sglang:num_queue_reqs`` sample (one per scheduler)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    samples = _METRIC_SAMPLE.findall(text or "")
    if not any(name == "sglang:num_running_reqs" for name, value in samples):
        raise GatewayError("the worker's /metrics has no sglang:num_running_reqs sample (is it an SGLang server?)")
    total = 0.0
    for name, value in samples:
        try:
            number = float(value)
        except ValueError:
            raise GatewayError("the worker's /metrics has %s %r, not a number" % (name, clean_text(value, 40)))
        if not math.isfinite(number) or number < 0:
            raise GatewayError("the worker's /metrics has %s %r, not a count" % (name, value))
        total += number
    return int(math.ceil(total))


# --- HTTP -------------------------------------------------------------------------------------------------------

def _answer_text(answer, secrets=(), limit=300):
    """The server's body as one cleaned line: control characters escaped, the known secrets and anything that
    looks like one (``api_key=...``, ``Authorization: Bearer ...``) masked."""
    body = answer.get("body")
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    return clean_text(redact_text(body or "", secrets), limit)


def _failed(what, answer, secrets=()):
    if answer.get("status", NO_CONNECTION) == NO_CONNECTION:
        return "%s got no answer: %s" % (what, answer.get("msg") or "no connection")
    return "%s answered %s" % (what, describe_answer(answer, secrets))


def describe_answer(answer, secrets=()):
    """``401 (Unauthorized): Invalid authentication token`` and the like, from one answer of the client."""
    status = answer.get("status", NO_CONNECTION)
    if status == NO_CONNECTION:
        return "no answer (%s)" % (answer.get("msg") or "no connection")
    detail = answer.get("reason") or answer.get("body_problem") or _answer_text(answer, secrets)
    return "%s%s" % (describe_status(status), ": %s" % detail if detail else "")


class GatewayApi(object):
    """The calls the module makes, over :class:`~http_client.HardenedClient`.

    ``client.request(method, url, data, headers, timeout)`` returns the client's answer dict. Every message is
    cleaned of control characters and of ``secrets``.
    """

    def __init__(self, client, gateway_url, admin_api_key, worker_load_url, worker_api_key, worker_load_source,
                 secrets=()):
        self.client = client
        self.gateway_url = gateway_url
        self.admin_api_key = admin_api_key
        self.worker_load_url = worker_load_url
        self.worker_api_key = worker_api_key
        self.worker_load_source = worker_load_source
        self.secrets = [s for s in secrets if s]
        self.load_source_used = None

    def _clean(self, text):
        return mask_secrets(text, self.secrets)

    def _call(self, method, url, timeout, key, body=None):
        return json_request(self.client, method, url, timeout, key, body)

    def _gateway(self, method, path, timeout, body=None, ok=(200,)):
        """``(status, data)``: the gateway's JSON answer for an expected status, else GatewayError."""
        url = self.gateway_url + path
        answer = self._call(method, url, timeout, self.admin_api_key, body)
        status = answer.get("status", NO_CONNECTION)
        what = "%s %s" % (method, url)
        if status in (401, 403):
            raise GatewayError(self._clean(
                "%s answered %s: the gateway refused the control-plane key; set admin_api_key to an admin key of its "
                "--control-plane-api-keys (sent as 'Authorization: Bearer <key>')" % (what, describe_answer(answer, self.secrets))),
                status=status, fatal=True)
        if 300 <= status < 400:
            raise GatewayError(self._clean("%s answered %s; give gateway_url as the gateway's own address"
                                           % (what, describe_answer(answer, self.secrets))), status=status, fatal=True)
        if status not in ok:
            raise GatewayError(self._clean(_failed(what, answer, self.secrets)), status=status, fatal=status in (404, 405))
        if answer.get("body_problem"):
            raise GatewayError(self._clean("%s answered %s but %s" % (what, describe_status(status),
                                                                      answer["body_problem"])), status=status)
        data, problem = decode_json_body(answer.get("body"), answer.get("content_type"))
        if data is None and status == 200:
            raise GatewayError(self._clean("%s answered 200 but %s" % (what, problem)), status=status)
        return status, (data if data is not None else _answer_text(answer, self.secrets))

    def list_workers(self, timeout):
        return parse_workers(self._gateway("GET", "/workers", timeout)[1])

    def get_worker(self, worker_id, timeout):
        """smg's entry for ``worker_id`` (pending registrations included), or None when it does not know it."""
        try:
            status, data = self._gateway("GET", "/workers/%s" % worker_id, timeout, ok=(200, 404))
        except GatewayError as exc:
            exc.fatal = exc.fatal and exc.status in (401, 403)  # a 405 here only costs the diagnostics
            raise
        return data if status == 200 and isinstance(data, dict) else None

    def delete_worker(self, worker_id, timeout):
        """True when the removal was accepted, False when the gateway no longer knows the worker."""
        status, data = self._gateway("DELETE", "/workers/%s" % worker_id, timeout, ok=(200, 202, 204, 404))
        return status != 404

    def add_worker(self, url, timeout):
        """The id of the registration the gateway accepted, or of the one it already has for ``url`` (409)."""
        body = {"url": url}
        if self.worker_api_key:
            body["api_key"] = self.worker_api_key
        status, data = self._gateway("POST", "/workers", timeout, body=body, ok=(200, 201, 202, 409))
        if status == 409:
            text = data.get("error") if isinstance(data, dict) else data
            return worker_id_from_conflict(text if isinstance(text, str) else json.dumps(data))
        return data.get("worker_id") if isinstance(data, dict) and isinstance(data.get("worker_id"), str) else None

    def worker_load(self, timeout):
        """``(in_flight, problem, fatal)`` from the worker itself: requests running or waiting on it; 0 when
        nothing listens on its port any more; None with the reason when it cannot be told (``fatal``: asking
        again will not help)."""
        source = self.load_source_used or self.worker_load_source
        if source == "none":
            return None, None, False
        if source == "metrics":
            return self._judge_load(self._call("GET", self.worker_load_url + "/metrics", timeout, None), "metrics")
        answer = self._call("GET", self.worker_load_url + "/v1/loads?include=core", timeout, self.worker_api_key)
        count, problem, fatal = self._judge_load(answer, "v1_loads")
        status = answer.get("status")
        if source == "auto" and fatal and (status == 404 or not self.worker_api_key):
            # an SGLang without /v1/loads, or no key to read it with: its Prometheus endpoint needs none
            other = self._judge_load(self._call("GET", self.worker_load_url + "/metrics", timeout, None), "metrics")
            if other[1] is None:
                return other
            return None, "%s; %s" % (problem, other[1]), other[2]
        return count, problem, fatal

    def _judge_load(self, answer, source):
        path = "/v1/loads" if source == "v1_loads" else "/metrics"
        what = "GET %s%s" % (self.worker_load_url, path)
        status = answer.get("status", NO_CONNECTION)
        if status == NO_CONNECTION and "refused" in (answer.get("msg") or "").lower():
            return 0, None, False  # nothing listens: no request can be running on it
        if status in (401, 403):
            return None, self._clean("%s answered %s: set worker_api_key to the worker's --api-key (or "
                                     "worker_load_source to metrics, which needs --enable-metrics, or none)"
                                     % (what, describe_answer(answer, self.secrets))), True
        if status == 404:
            hint = ("the worker runs without --enable-metrics" if source == "metrics"
                    else "this SGLang has no /v1/loads")
            return None, self._clean("%s answered 404 (%s); choose another worker_load_source (none: trust the "
                                     "gateway's count alone)" % (what, hint)), True
        if status != 200:
            return None, self._clean(_failed(what, answer, self.secrets)), False
        if answer.get("body_problem"):
            return None, self._clean("%s: %s" % (what, answer["body_problem"])), False
        try:
            if source == "v1_loads":
                data, problem = decode_json_body(answer.get("body"), answer.get("content_type"))
                if data is None:
                    raise GatewayError("the worker's /v1/loads answer: %s" % problem)
                count = parse_v1_loads(data)
            else:
                count = parse_metrics(answer.get("body"))
        except GatewayError as exc:
            return None, self._clean("%s: %s" % (what, exc.message)), False
        self.load_source_used = source
        return count, None, False


# --- the two states ---------------------------------------------------------------------------------------------

class Outcome(Exception):
    """Ends a run: ``failed`` or not, with the result so far."""

    def __init__(self, msg, result, failed=False, warnings=()):
        Exception.__init__(self, msg)
        self.msg = msg
        self.result = result
        self.failed = failed
        self.warnings = list(warnings)


class WorkerChange(object):
    """``absent()`` and ``present()``; both raise :class:`Outcome`.

    ``api`` is a :class:`GatewayApi` (or a fake with its methods); ``p`` the module's parameters after
    validation, with ``worker_url`` and ``worker_key`` (as sent, comparison key) added.
    ``clock`` (monotonic) times the waits; ``wall`` (seconds since the epoch, this host's clock) stamps the moments
    the run report puts on its timeline: removed, drained, put back, healthy.
    """

    def __init__(self, api, p, check_mode=False, clock=None, sleep=None, wall=None):
        self.api = api
        self.p = p
        self.check_mode = check_mode
        self.clock = clock or time.monotonic
        self.wall = wall or time.time
        self.sleep = sleep or time.sleep
        self.warnings = []
        self.template = {}

    def _timeout(self, deadline=None):
        limit = float(self.p["request_timeout"])
        if deadline is not None:
            limit = min(limit, max(deadline.remaining(), 0.05))
        return limit

    def _list(self, result, deadline=None):
        try:
            return self.api.list_workers(self._timeout(deadline))
        except GatewayError as exc:
            raise Outcome(exc.message, result, failed=True, warnings=self.warnings)

    def _pause(self, deadline):
        pause = min(float(self.p["interval"]), deadline.remaining())
        if pause > 0:
            self.sleep(pause)

    # absent ----------------------------------------------------------------------------------------------------

    def absent(self):
        p = self.p
        url = p["worker_url"]
        result = {"changed": False, "state": "absent", "worker_url": url, "worker_id": None, "worker_ids": [],
                  "removed": False, "drained": None, "drain_seconds": 0.0,
                  "in_flight": {"at_removal": None, "at_end": None}, "worker_load_source": None,
                  "healthy_workers_left": None, "removed_at": None, "drain_ended_at": None, "settling": False}
        listed = self._list(result)
        targets = find_workers(listed, p["worker_key"])
        others = [item for item in listed if not any(item is t for t in targets)]
        result["healthy_workers_left"] = len([item for item in others if is_healthy(item)])
        if not targets:
            result["removed"] = True
            raise Outcome("%s is not registered in the gateway: absent already" % url, result,
                          warnings=self.warnings)
        result["worker_ids"] = [t.get("id") for t in targets if isinstance(t.get("id"), str)]
        result["worker_id"] = result["worker_ids"][0] if result["worker_ids"] else None
        result["worker"] = summarize(targets[0])
        to_delete = [t for t in targets if not is_draining(t)]
        if any(not isinstance(t.get("id"), str) for t in to_delete):
            raise Outcome("the gateway lists %s without an id, so it cannot be removed through DELETE /workers/{id}"
                          % url, result, failed=True, warnings=self.warnings)
        self.template = targets[0]
        replacements = peers(listed, targets)
        result["healthy_workers_left"] = len(replacements)
        if to_delete and len(replacements) < p["min_healthy"]:
            raise Outcome(
                "refusing to remove %s: the gateway would be left with %d healthy worker(s) that can take its "
                "requests (same model and worker type), fewer than min_healthy=%d; nothing was changed"
                % (url, len(replacements), p["min_healthy"]), result, failed=True, warnings=self.warnings)
        engine, problem, fatal = self.api.worker_load(self._timeout())
        result["worker_load_source"] = self.api.load_source_used
        if fatal and to_delete:
            raise Outcome("cannot read the worker's load to tell when it is drained: %s; nothing was changed"
                          % problem, result, failed=True, warnings=self.warnings)
        if problem:
            self.warnings.append("the worker's load cannot be read now: %s" % problem)
        result["in_flight"]["at_removal"] = {"gateway": gateway_load(targets), "worker": engine}
        if self.check_mode:
            result["changed"] = bool(to_delete)
            verb = "would remove" if to_delete else "would wait for the removal already under way of"
            raise Outcome("check mode: %s %s (id %s) from the gateway and wait for its requests; %d healthy "
                          "worker(s) would be left" % (verb, url, result["worker_id"], len(replacements)),
                          result, warnings=self.warnings)
        started = self.clock()
        result["removed_at"] = round(self.wall(), 6)
        for target in to_delete:
            try:
                self.api.delete_worker(target["id"], self._timeout())
            except GatewayError as exc:
                raise Outcome("removing %s (id %s) failed: %s" % (url, target["id"], exc.message), result,
                              failed=True, warnings=self.warnings)
            result["changed"] = True
        self._drain(result, started)

    def _drain(self, result, started):
        p = self.p
        url = p["worker_url"]
        deadline = Deadline(p["drain_timeout"], self.clock)
        gateway_count = result["in_flight"]["at_removal"]["gateway"]
        engine = None
        engine_problem = None
        gateway_problem = None
        listed_ids = result["worker_ids"]
        quiet_since = None
        while True:
            gone = False
            quiet = False
            try:
                listed = self.api.list_workers(self._timeout(deadline))
                gateway_problem = None
                targets = find_workers(listed, p["worker_key"])
                gateway_count = gateway_load(targets) if targets else 0
                listed_ids = [t.get("id") for t in targets]
                gone = not targets
                # smg routes nothing new to an entry it marked draining and counts its own requests to it live: at 0
                # it only keeps the entry for its fixed settle time (5 s) before dropping it
                quiet = not gone and gateway_count == 0 and all(is_draining(t) for t in targets)
                result["healthy_workers_left"] = len(peers(listed, targets or [self.template]))
            except GatewayError as exc:
                if exc.fatal:
                    result["drain_seconds"] = round(self.clock() - started, 3)
                    result["drain_ended_at"] = round(self.wall(), 6)
                    raise Outcome("%s was removed, but watching its drain failed: %s" % (url, exc.message), result,
                                  failed=True, warnings=self.warnings)
                gateway_problem = exc.message
            if gone or quiet:
                engine, engine_problem, fatal = self.api.worker_load(self._timeout(deadline))
                result["worker_load_source"] = self.api.load_source_used
                idle = engine == 0 or (engine is None and engine_problem is None)
                if fatal or (gone and idle):
                    break
                if quiet and idle:
                    # seen quiet twice, QUIET_CONFIRM_SECONDS apart: a request smg picked this worker for just before
                    # it marked the entry is counted by then
                    now = self.clock()
                    if quiet_since is None:
                        quiet_since = now
                    elif now - quiet_since >= QUIET_CONFIRM_SECONDS:
                        break
                else:
                    quiet_since = None
            else:
                quiet_since = None
            if deadline.expired():
                break
            self._pause(deadline)
        let_go = gone or quiet
        result["drain_seconds"] = round(self.clock() - started, 3)
        result["drain_ended_at"] = round(self.wall(), 6)
        result["removed"] = let_go
        result["settling"] = quiet and not gone
        result["in_flight"]["at_end"] = {"gateway": 0 if let_go else gateway_count, "worker": engine if let_go else None}
        result["drained"] = let_go and (engine == 0 or (engine is None and engine_problem is None))
        if result["drained"]:
            raise Outcome("%s removed from the gateway and drained in %.1f s (in flight at removal: gateway %s, "
                          "worker %s; %d healthy worker(s) left)%s"
                          % (url, result["drain_seconds"], _count(result["in_flight"]["at_removal"]["gateway"]),
                             _count(result["in_flight"]["at_removal"]["worker"]), result["healthy_workers_left"],
                             "; the gateway lists it as draining with nothing in flight until it drops the entry"
                             if result["settling"] else ""),
                          result, warnings=self.warnings)
        if not let_go:
            still = "the gateway still lists it (ids %s) with %s request(s) in flight%s" % (
                ", ".join(str(i) for i in listed_ids), _count(gateway_count),
                "; last error: %s" % gateway_problem if gateway_problem else "")
        elif engine_problem:
            still = "the gateway no longer routes to it, but its own load cannot be read: %s" % engine_problem
        else:
            still = "the gateway no longer routes to it, but %s request(s) are still running or waiting on the worker " \
                    "(sent by another client or gateway)" % _count(engine)
        msg = "%s was not drained within drain_timeout=%s s: %s" % (url, _seconds(p["drain_timeout"]), still)
        if p["drain_timeout_action"] == "continue":
            self.warnings.append(msg)
            raise Outcome(msg + " (drain_timeout_action=continue)", result, warnings=self.warnings)
        raise Outcome(msg, result, failed=True, warnings=self.warnings)

    # present ---------------------------------------------------------------------------------------------------

    def present(self):
        p = self.p
        url = p["worker_url"]
        result = {"changed": False, "state": "present", "worker_url": url, "worker_id": None, "registered": False,
                  "healthy": False, "healthy_workers": None, "wait_seconds": 0.0, "added_at": None,
                  "healthy_at": None}
        listed = self._list(result)
        targets = find_workers(listed, p["worker_key"])
        result["healthy_workers"] = len([item for item in listed if is_healthy(item)])
        healthy = [t for t in targets if is_healthy(t)]
        if healthy:
            # already routed to (a gateway that restarted with its full list): in and healthy when it was listed
            now = round(self.wall(), 6)
            result.update(worker_id=healthy[0].get("id"), registered=True, healthy=True, worker=summarize(healthy[0]),
                          added_at=now, healthy_at=now)
            raise Outcome("%s is registered and healthy (id %s)" % (url, result["worker_id"]), result,
                          warnings=self.warnings)
        waiting_for = [t for t in targets if not is_draining(t)]
        if self.check_mode:
            if waiting_for:
                result.update(worker_id=waiting_for[0].get("id"), registered=True, worker=summarize(waiting_for[0]))
                raise Outcome("check mode: %s is registered but not healthy (status %s); would wait for it"
                              % (url, waiting_for[0].get("status")), result, warnings=self.warnings)
            result["changed"] = True
            raise Outcome("check mode: would register %s with the gateway and wait until it is healthy" % url,
                          result, warnings=self.warnings)
        started = self.clock()
        result["added_at"] = round(self.wall(), 6)
        deadline = Deadline(p["healthy_timeout"], self.clock)
        worker_id = waiting_for[0].get("id") if waiting_for else None
        registered = bool(waiting_for)
        result["registered"] = registered
        last = "status %s" % waiting_for[0].get("status") if waiting_for else "not listed"
        misses = 0
        dropped = []
        while True:
            if not registered and not find_workers(listed, p["worker_key"]):
                try:
                    worker_id = self.api.add_worker(url, self._timeout(deadline)) or worker_id
                except GatewayError as exc:
                    raise Outcome("registering %s failed: %s" % (url, exc.message), result, failed=True,
                                  warnings=self.warnings)
                registered = True
                result.update(changed=True, registered=True, worker_id=worker_id)
            if deadline.expired():
                break
            self._pause(deadline)
            try:
                listed = self.api.list_workers(self._timeout(deadline))
            except GatewayError as exc:
                if exc.fatal:
                    raise Outcome(exc.message, result, failed=True, warnings=self.warnings)
                last = exc.message
                continue
            targets = find_workers(listed, p["worker_key"])
            result["healthy_workers"] = len([item for item in listed if is_healthy(item)])
            healthy = [t for t in targets if is_healthy(t)]
            if healthy:
                result.update(worker_id=healthy[0].get("id"), healthy=True, registered=True,
                              worker=summarize(healthy[0]), healthy_at=round(self.wall(), 6))
                break
            if targets:
                misses = 0
                last = "listed with status %s, is_healthy %s" % (targets[0].get("status"), targets[0].get("is_healthy"))
                result["worker"] = summarize(targets[0])
                if all(is_draining(t) for t in targets):
                    registered = False  # an earlier removal is still draining it; register again once it is gone
                continue
            if registered and worker_id:
                last, misses = self._pending(worker_id, deadline, misses, result)
                if misses >= 2:
                    dropped.append(worker_id)
                    if len(dropped) <= REREGISTER_TRIES:
                        # smg finishing the removal of the same URL (its settle time ends just as the worker comes
                        # back after a short swap) can take a fresh registration along: register it again (a 409
                        # gives the id of a registration still alive)
                        self.warnings.append("the gateway dropped the registration of %s (id %s) right after it "
                                             "was accepted; registered again" % (url, worker_id))
                        registered, misses = False, 0
                        result["registered"] = False
                        continue
                    result["wait_seconds"] = round(self.clock() - started, 3)
                    raise Outcome("the gateway dropped the registration of %s %d times (ids %s): it no longer knows it"
                                  % (url, len(dropped), ", ".join(str(d) for d in dropped)), result, failed=True,
                                  warnings=self.warnings)
        result["wait_seconds"] = round(self.clock() - started, 3)
        if result["healthy"]:
            raise Outcome("%s is registered (id %s) and healthy after %.1f s; the gateway routes to it (%d healthy "
                          "worker(s))" % (url, result["worker_id"], result["wait_seconds"],
                                          result["healthy_workers"] or 0), result, warnings=self.warnings)
        raise Outcome("%s did not become healthy in the gateway within healthy_timeout=%s s (%s)%s"
                      % (url, _seconds(p["healthy_timeout"]), last,
                         "; the gateway keeps the registration (id %s) and adds the worker once it answers"
                         % worker_id if registered and worker_id else ""),
                      result, failed=True, warnings=self.warnings)

    def _pending(self, worker_id, deadline, misses, result):
        """What the gateway says of a registration it does not list yet: ``(text, misses)``."""
        try:
            entry = self.api.get_worker(worker_id, self._timeout(deadline))
        except GatewayError as exc:
            if exc.fatal:
                raise Outcome(exc.message, result, failed=True, warnings=self.warnings)
            return exc.message, misses
        if entry is None:
            return "not known to the gateway", misses + 1
        job = entry.get("job_status") if isinstance(entry.get("job_status"), dict) else {}
        text = "status %s" % clean_text(str(entry.get("status")), 40)
        if job:
            message = redact_text(str(job["message"]), getattr(self.api, "secrets", ())) if job.get("message") else ""
            text += ", job %s %s%s" % (clean_text(str(job.get("job_type")), 40), clean_text(str(job.get("status")), 40),
                                       ": %s" % clean_text(message, 300) if message else "")
        return text, 0


def _count(value):
    return "?" if value is None else str(value)


def _seconds(value):
    value = float(value)
    return ("%d" % value) if value == int(value) else ("%g" % value)
