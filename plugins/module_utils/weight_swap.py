# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Load another revision of the served model into a running SGLang server (``POST /update_weights_from_disk``),
then read back what the server says it serves.

What SGLang 0.5.23 does, checked against the real server on CPU (tools/engine/README.md, "In-place weight swap"):

* The route is admin-optional: with ``--admin-api-key`` only that key opens it (the ``--api-key`` gets 401), with
  only ``--api-key`` that key, with neither no key. ``/model_info`` and ``/v1/models`` are normal routes (the
  ``--api-key`` when one is set). So the update is sent with the admin key, or the API key where there is no admin
  key, and the read-back with the API key.
* A success answers 200 ``{"success": true, "message", "num_paused_requests"}``, a refusal 400 with
  ``success: false``. The call waits for the requests already running (a writer lock), and requests that arrive
  meanwhile wait behind it: the HTTP timeout has to cover the longest request plus the load.
* The new ``weight_version`` is in ``/model_info`` and in every answer's ``meta_info``; ``/server_info`` keeps the
  value of the start-up. ``/model_info``'s ``model_path`` becomes the path that was loaded, and so does
  ``served_model_name`` (also the id in ``/v1/models``), whatever ``--served-model-name`` said.
* Only failures before the first tensor is read (no such directory, no weight files) leave the old weights serving
  with a 400. A failure while the tensors are read (a truncated file, a tensor of another shape) kills the whole
  server: SGLang's "rollback" reads the new, broken path again. A larger input dimension is even loaded without
  complaint (narrowed). Hence :func:`compare_checkpoints`, to be run on the host before asking for a swap.

Everything that talks HTTP takes a ``client`` with the ``request(method, url, data=None, headers=None, timeout=...)``
call of :class:`~http_client.HardenedClient` (one request under one wall-clock limit, capped body, no redirect
followed, no proxy for this host); it answers a dict with ``status`` (-1: no HTTP answer), ``msg``, ``body``,
``content_type`` and, where they apply, ``reason``, ``location`` and ``body_problem``. Nothing here raises for a
network or HTTP problem: it becomes the result's ``outcome``.

Standard library and the collection's own helpers only (ansible.module_utils through http_client); importable on
Python 3.9+ managed hosts.
"""

from __future__ import annotations

import json
import os
import re
import struct
import time

from ansible_collections.llmserve.sglang.plugins.module_utils.endpoint_wait import (
    NO_CONNECTION,
    decode_json_body,
    describe_status,
)
from ansible_collections.llmserve.sglang.plugins.module_utils.gateway_worker import UrlError, canonical_url
from ansible_collections.llmserve.sglang.plugins.module_utils.http_client import json_request
from ansible_collections.llmserve.sglang.plugins.module_utils.text import (
    clean_text,
    mask_secrets,
    parse_systemctl_show,
    printable,
)

# What a swap came to. Only SWAPPED is a success.
SWAPPED = "swapped"            # 200, success, and the read-back shows the new revision
REJECTED = "rejected"          # the server refused (400, or 200 with success false); see old_weights_serving
UNSUPPORTED = "unsupported"    # 404/405: this server has no such route (another version, something in front)
UNAUTHORIZED = "unauthorized"  # 401/403: the key was refused; waiting or retrying cannot help
LOST = "lost"                  # the connection ended without an answer: the server may have died
TIMEOUT = "timeout"            # no complete answer in time: the update may still be running
UNVERIFIED = "unverified"      # the server said success, but what it reports afterwards is not the revision asked
BAD_ANSWER = "bad_answer"      # a redirect, a 5xx, a body that is no answer of SGLang's: state unknown
OUTCOMES = (SWAPPED, REJECTED, UNSUPPORTED, UNAUTHORIZED, LOST, TIMEOUT, UNVERIFIED, BAD_ANSWER)

# What the modules add before anything is sent (llmserve.sglang.weight_swap and weight_swap_node)
CURRENT = "current"            # the server already serves the revision: nothing to send
WOULD_SWAP = "would_swap"      # check mode
INCOMPATIBLE = "incompatible"  # the two checkpoints differ in configuration or tensor layout: nothing sent
MAX_SECONDS = 7 * 24 * 3600    # the longest timeout an option takes

UPDATE_PATH = "/update_weights_from_disk"
IDENTITY_KEYS = ("model_path", "served_model_name", "weight_version", "load_format")

_KEY = re.compile(r"^[\x21-\x7e]+$")
_VERSION_LIMIT = 256


class SwapInputError(ValueError):
    """An argument that cannot make a request (the message names it)."""


# --- keys ---------------------------------------------------------------------------------------------------------

def read_key(value=None, path=None, env=None, environ=None, name="key"):
    """The key from ``value``, else the first non-blank line of the file ``path``, else the environment variable
    ``env``; None when none of them is given or set. The key travels in a file or the environment, never on a
    command line (``/proc/<pid>/cmdline`` is world-readable).

    SwapInputError when the key could not go into an ``Authorization`` header (spaces, control or non-ASCII
    characters) or the file cannot be read; the key itself is never in the message."""
    source = name
    if value is None and path:
        source = "%s file %s" % (name, printable(path, 200))
        try:
            with open(path, encoding="utf-8") as handle:
                lines = [line.strip() for line in handle.read().splitlines()]
        except (OSError, UnicodeDecodeError) as exc:
            raise SwapInputError("cannot read the %s: %s" % (source, clean_text(getattr(exc, "strerror", None) or exc))) from exc
        value = next((line for line in lines if line), None)
        if value is None:
            raise SwapInputError("the %s is empty" % source)
    if value is None and env:
        source = "%s in environment variable %s" % (name, printable(env, 100))
        value = (environ if environ is not None else os.environ).get(env) or None
    if value is None:
        return None
    if not isinstance(value, str) or not _KEY.match(value):
        raise SwapInputError("the %s must be printable ASCII without spaces (it is sent as 'Authorization: Bearer "
                             "<key>')" % source)
    return value


# --- the request ----------------------------------------------------------------------------------------------------

def update_body(model_path, weight_version, load_format=None, flush_cache=True, abort_all_requests=False):
    """The JSON object of the update, or SwapInputError. ``weight_version`` is what ``/model_info`` shall report
    afterwards (the role passes the revision's commit)."""
    if not isinstance(model_path, str) or not model_path.startswith("/") or "\x00" in model_path:
        raise SwapInputError("model_path must be an absolute path on the server's host, got %r"
                             % printable(model_path, 200))
    if (not isinstance(weight_version, str) or not weight_version or len(weight_version) > _VERSION_LIMIT
            or not weight_version.isprintable() or weight_version.strip() != weight_version):
        raise SwapInputError("weight_version must be 1 to %d printable characters without surrounding spaces, got %r"
                             % (_VERSION_LIMIT, printable(weight_version, 100)))
    if load_format is not None and (not isinstance(load_format, str) or not re.match(r"^[a-z0-9_]+$", load_format)):
        raise SwapInputError("load_format must be one of SGLang's load format names, got %r"
                             % printable(load_format, 100))
    body = {"model_path": model_path, "weight_version": weight_version, "flush_cache": bool(flush_cache),
            "abort_all_requests": bool(abort_all_requests)}
    if load_format:
        body["load_format"] = load_format
    return body


def _same_path(left, right):
    if not isinstance(left, str) or not isinstance(right, str):
        return False
    return os.path.normpath(left) == os.path.normpath(right)


class _Caller(object):
    def __init__(self, client, base_url, api_key, admin_key, secrets):
        self.client = client
        self.base_url = base_url
        self.api_key = api_key
        # SGLang opens the route to the admin key when it has one, else to the API key
        self.update_key = admin_key or api_key
        self.secrets = [s for s in list(secrets) + [api_key, admin_key] if s]
        self.answered = None

    def clean(self, text, limit=300):
        return clean_text(mask_secrets(text if isinstance(text, str) else str(text), self.secrets), limit)

    def call(self, method, path, timeout, key, body=None):
        return json_request(self.client, method, self.base_url + path, timeout, key, body)

    def describe(self, answer):
        status = answer.get("status", NO_CONNECTION)
        if status == NO_CONNECTION:
            return "no answer (%s)" % self.clean(answer.get("msg") or "no connection")
        detail = answer.get("reason") or answer.get("body_problem")
        if not detail:
            body = answer.get("body")
            if isinstance(body, bytes):
                body = body.decode("utf-8", "replace")
            detail = body or ""
        detail = self.clean(detail)
        return "%s%s" % (describe_status(status), ": %s" % detail if detail else "")

    def identity(self, timeout):
        """``(identity, served_models, problem)`` from ``/model_info`` and ``/v1/models``; ``self.answered`` says
        whether ``/model_info`` got an HTTP answer at all."""
        answer = self.call("GET", "/model_info", timeout, self.api_key)
        self.answered = answer.get("status", NO_CONNECTION) != NO_CONNECTION
        if answer.get("status") != 200:
            return None, None, "GET /model_info answered %s" % self.describe(answer)
        data, problem = decode_json_body(answer.get("body"), answer.get("content_type"))
        if not isinstance(data, dict):
            return None, None, "GET /model_info: %s" % (problem or "the answer is not a JSON object")
        ident = dict((key, data.get(key)) for key in IDENTITY_KEYS)
        answer = self.call("GET", "/v1/models", timeout, self.api_key)
        if answer.get("status") != 200:
            return ident, None, "GET /v1/models answered %s" % self.describe(answer)
        data, problem = decode_json_body(answer.get("body"), answer.get("content_type"))
        cards = data.get("data") if isinstance(data, dict) else None
        if not isinstance(cards, list):
            return ident, None, "GET /v1/models: %s" % (problem or "the answer has no 'data' list")
        served = [dict(id=card.get("id"), root=card.get("root")) for card in cards if isinstance(card, dict)]
        return ident, served, None


def _timed_out(answer, seconds, timeout):
    """Whether a missing answer is the request's time running out (rather than a refused or dropped connection)."""
    if answer.get("body_problem") and "within" in answer["body_problem"]:
        return True
    msg = (answer.get("msg") or "").lower()
    return "timed out" in msg or "within" in msg or seconds >= 0.95 * timeout


def classify_update(answer, seconds, timeout):
    """``(outcome, data)`` for the answer to the POST: REJECTED/SWAPPED-candidate and friends, and its parsed JSON.

    SWAPPED here only means "the server says so"; :func:`swap_weights` still checks the read-back."""
    status = answer.get("status", NO_CONNECTION)
    if status == NO_CONNECTION:
        return (TIMEOUT if _timed_out(answer, seconds, timeout) else LOST), None
    if answer.get("body_problem"):
        return (TIMEOUT if _timed_out(answer, seconds, timeout) else BAD_ANSWER), None
    if status in (404, 405):
        return UNSUPPORTED, None
    if status in (401, 403):
        return UNAUTHORIZED, None
    if status not in (200, 400):
        return BAD_ANSWER, None
    data, dummy = decode_json_body(answer.get("body"), answer.get("content_type"))
    if not isinstance(data, dict) or not isinstance(data.get("success"), bool):
        return BAD_ANSWER, None
    if status == 200 and data["success"]:
        return SWAPPED, data
    if not data["success"]:
        return REJECTED, data
    return BAD_ANSWER, data  # 400 with success true: no answer SGLang gives


def swap_weights(client, base_url, model_path, weight_version, api_key=None, admin_key=None, timeout=600.0,
                 read_timeout=10.0, load_format=None, flush_cache=True, abort_all_requests=False,
                 expect_served_model_name=None, secrets=(), clock=None):
    """Ask the server at ``base_url`` to load ``model_path`` as ``weight_version`` and check what it serves then.

    ``timeout`` is for the update call (it waits for running requests and for the load); ``read_timeout`` for
    each read-back. ``expect_served_model_name``: the name clients and the gateway use; when given, a server that
    reports another name afterwards fails the verification (SGLang 0.5.23 always reports the loaded path).

    Returns a dict: ``outcome`` (one of OUTCOMES), ``ok`` (outcome is SWAPPED), ``msg`` (one sentence), ``status``,
    ``message`` (the server's own, secrets masked), ``num_paused_requests``, ``requested``, ``before`` and
    ``after`` (``/model_info``'s ``model_path``, ``served_model_name``, ``weight_version``, ``load_format``, or None
    when they could not be read), ``served_models`` (``/v1/models`` after), ``served_model_name_changed``,
    ``old_weights_serving`` (after a failure: whether the server still reports the revision it had before; None
    when unknown), ``server_answering`` (whether ``/model_info`` gave any HTTP answer afterwards), ``problems``
    (each check that failed) and ``seconds`` (``update``, ``verify``, ``total``). SwapInputError for arguments that
    cannot make a request.
    """
    clock = clock or time.monotonic
    try:
        base_url = canonical_url(base_url, name="base_url", allow_path=False)[0]
    except UrlError as exc:
        raise SwapInputError(str(exc)) from exc
    body = update_body(model_path, weight_version, load_format, flush_cache, abort_all_requests)
    for value, name in ((api_key, "api_key"), (admin_key, "admin_key")):
        if value is not None:
            read_key(value, name=name)
    caller = _Caller(client, base_url, api_key, admin_key, secrets)
    result = {"outcome": None, "ok": False, "status": None, "message": None, "num_paused_requests": None,
              "requested": {"model_path": model_path, "weight_version": weight_version},
              "before": None, "after": None, "served_models": None, "served_model_name_changed": None,
              "old_weights_serving": None, "server_answering": None, "problems": [], "seconds": {}}
    started = clock()

    before, dummy, problem = caller.identity(read_timeout)
    result["before"] = before
    if problem:
        result["problems"].append("before the update: %s" % problem)

    sent = clock()
    answer = caller.call("POST", UPDATE_PATH, timeout, caller.update_key, body)
    result["seconds"]["update"] = round(clock() - sent, 3)
    status = answer.get("status", NO_CONNECTION)
    result["status"] = status
    outcome, data = classify_update(answer, result["seconds"]["update"], timeout)
    if isinstance(data, dict):
        result["message"] = caller.clean(data.get("message") or "", 2000)
        paused = data.get("num_paused_requests")
        result["num_paused_requests"] = paused if isinstance(paused, (int, list)) and not isinstance(paused, bool) \
            else None

    checked = clock()
    after, served, problem = caller.identity(read_timeout)
    result["seconds"]["verify"] = round(clock() - checked, 3)
    result["after"], result["served_models"] = after, served
    result["server_answering"] = caller.answered
    if problem:
        result["problems"].append("after the update: %s" % problem)
    if before and after:
        result["served_model_name_changed"] = before.get("served_model_name") != after.get("served_model_name")

    if outcome == SWAPPED:
        outcome = _verify(result, after, served, model_path, weight_version, expect_served_model_name)
    elif before and after:
        result["old_weights_serving"] = all(before.get(key) == after.get(key)
                                            for key in ("model_path", "weight_version"))
    result["outcome"] = outcome
    result["ok"] = outcome == SWAPPED
    result["seconds"]["total"] = round(clock() - started, 3)
    result["msg"] = _sentence(result, caller.describe(answer), base_url)
    return result


def read_identity(client, base_url, api_key=None, timeout=10.0, secrets=()):
    """What the server at ``base_url`` says it serves: ``(identity, served_models, problem)``, where ``identity`` holds
    ``/model_info``'s IDENTITY_KEYS and ``served_models`` the ids and roots of ``/v1/models`` (each None when it could
    not be read, and ``problem`` says why). Nothing is changed on the server."""
    try:
        base_url = canonical_url(base_url, name="base_url", allow_path=False)[0]
    except UrlError as exc:
        raise SwapInputError(str(exc)) from exc
    if api_key is not None:
        read_key(api_key, name="api_key")
    return _Caller(client, base_url, api_key, None, secrets).identity(timeout)


def serves(identity, model_path, weight_version):
    """Whether an identity read by :func:`read_identity` is already ``model_path`` as ``weight_version``."""
    return bool(identity) and identity.get("weight_version") == weight_version and _same_path(
        identity.get("model_path"), model_path)


def _verify(result, after, served, model_path, weight_version, expect_name):
    problems = result["problems"]
    if after is None:
        return UNVERIFIED
    failed = []
    if after.get("weight_version") != weight_version:
        failed.append("/model_info reports weight_version %r, not %r"
                      % (printable(after.get("weight_version"), 200), weight_version))
    if not _same_path(after.get("model_path"), model_path):
        failed.append("/model_info reports model_path %r, not %r" % (printable(after.get("model_path"), 300), model_path))
    name = after.get("served_model_name")
    if served is not None and name not in [card["id"] for card in served]:
        failed.append("/v1/models does not list the served model %r (it lists %s)"
                      % (printable(name, 300), ", ".join(repr(printable(card["id"], 300)) for card in served) or
                         "nothing"))
    if expect_name is not None and name != expect_name:
        failed.append("the server now serves the model as %r, not %r" % (printable(name, 300), expect_name))
    problems.extend(failed)
    return UNVERIFIED if failed or served is None else SWAPPED


def _sentence(result, said, base_url):
    outcome = result["outcome"]
    where = "%s%s" % (base_url, UPDATE_PATH)
    seconds = result["seconds"]["update"]
    requested = result["requested"]
    if outcome == SWAPPED:
        return "%s loaded %s as weight_version %s in %.2f s" % (
            base_url, requested["model_path"], requested["weight_version"], seconds)
    if outcome == REJECTED:
        kept = {True: "the server still reports the revision it had before",
                False: "the server no longer reports the revision it had before",
                None: "what the server serves now is unknown"}[result["old_weights_serving"]]
        return "%s refused the update (%s); %s" % (where, said, kept)
    if outcome == UNSUPPORTED:
        return "%s answered %s: this server cannot swap weights in place (no such route)" % (where, said)
    if outcome == UNAUTHORIZED:
        return ("%s answered %s: the key was refused (the route takes the server's --admin-api-key, or its --api-key "
                "when it has no admin key)" % (where, said))
    if outcome == LOST:
        alive = "it still answers" if result["server_answering"] else "it does not answer any more (it may have died)"
        return "%s dropped the connection without an answer after %.2f s (%s); %s" % (where, seconds, said, alive)
    if outcome == TIMEOUT:
        return ("%s gave no complete answer within %.2f s (%s); the update may still be running or waiting for "
                "requests to finish" % (where, seconds, said))
    if outcome == UNVERIFIED:
        return "%s answered %s, but the read-back disagrees: %s" % (where, said, "; ".join(result["problems"]))
    return "%s answered %s: not an answer of SGLang's update route; what it serves now is unknown" % (where, said)


# --- the nodes of rank >= 1 of a multi-node server -------------------------------------------------------------------

# Only rank 0 of a multi-node server answers HTTP, and its answer speaks for its own ranks: in SGLang 0.5.23 the update
# reaches every rank (rank 0's scheduler broadcasts it), each rank loads the path from its own node's disk, and only
# rank 0's result comes back. Checked with the real server on CPU (two nodes, one rank each): a rank 1 whose file was
# cut died in its load while rank 0 answered 200 "Succeeded". So each other node reads its own account in its own
# journal, where every rank that loads logs these lines (srt/model_executor/model_runner_components/weight_updater.py).
RANK_LOAD_END = "Update weights end."
RANK_LOAD_FAILED = ("Failed to update weights", "Failed to get weights iterator", "Failed to get model loader",
                    "Traceback (most recent call last)")
READY = "ready"                # a node of rank >= 1: its staged revision fits, its journal is marked
NOT_RUNNING = "not_running"    # a node of rank >= 1 whose unit does not run: nothing to load into
LOADED_LINES = 40              # journal lines a node's result keeps (the newest)


def rank_load_state(lines, ranks=1):
    """``(outcome, ends)`` from the journal lines a node's unit wrote after its mark: REJECTED at the first line of a
    failed load (whether the process survives it is read from the unit), SWAPPED once ``ranks`` ranks logged the end
    of their load, None while neither happened; ``ends`` counts the ranks that ended."""
    ends = 0
    for line in lines:
        if any(mark in line for mark in RANK_LOAD_FAILED):
            return REJECTED, ends
        if RANK_LOAD_END in line:
            ends += 1
    return (SWAPPED if ends >= ranks else None), ends


def seconds_problem(name, value):
    """The rule a timeout option ``name`` breaks (a finite number of seconds above 0, at most MAX_SECONDS), or None."""
    # NaN and both infinities fail the comparison too
    if 0 < value <= MAX_SECONDS:
        return None
    return "%s must be a finite number of seconds greater than 0 and at most %d, got %s" % (name, MAX_SECONDS, value)


def read_unit(run, unit):
    """``{"active", "main_pid", "invocation_id"}`` of the systemd ``unit``; ``run(argv)`` answers ``(rc, out, err)``."""
    rc, out, err = run(["systemctl", "show", "--no-pager", "-p", "ActiveState,MainPID,InvocationID", "--", unit])
    values = parse_systemctl_show(out)
    try:
        pid = int(values.get("MainPID") or 0)
    except ValueError:
        pid = 0
    return {"active": rc == 0 and values.get("ActiveState") == "active", "main_pid": pid,
            "invocation_id": values.get("InvocationID") or ""}


def journal_cursor(run):
    """The cursor of the journal's newest entry (None when the journal cannot say): what comes after it is new."""
    rc, out, err = run(["journalctl", "--no-pager", "-n", "1", "-o", "json"])
    for line in (out or "").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("__CURSOR"), str):
            return entry["__CURSOR"]
    return None


def journal_after(run, invocation_id, cursor):
    """The lines the unit's invocation ``invocation_id`` wrote after ``cursor`` (its whole journal without one)."""
    argv = ["journalctl", "--no-pager", "-o", "cat", "_SYSTEMD_INVOCATION_ID=%s" % invocation_id, "+",
            "INVOCATION_ID=%s" % invocation_id]
    if cursor:
        argv.insert(2, "--after-cursor=%s" % cursor)
    run(["journalctl", "--sync"])
    rc, out, err = run(argv)
    return (out or "").splitlines()


def wait_rank_load(run, unit, mark, ranks=1, timeout=600.0, interval=1.0, clock=None, sleep=None):
    """Wait until this node's ranks of a multi-node server loaded the revision rank 0 was asked to load.

    ``mark``: what :func:`read_unit` and :func:`journal_cursor` read before rank 0 was asked (``main_pid``,
    ``invocation_id``, ``cursor``). Returns ``{outcome, msg, lines, ends, seconds}``: SWAPPED (``ranks`` ranks logged
    the end of their load, and the same process runs), REJECTED (a rank logged a failed load, the process still runs:
    this node's ranks may hold other weights than rank 0's), LOST (the unit stopped or another process runs it) or
    TIMEOUT."""
    clock = clock or time.monotonic
    sleep = sleep or time.sleep
    started = clock()
    result = {"outcome": TIMEOUT, "msg": "", "lines": [], "ends": 0, "seconds": 0.0}
    while True:
        unit_now = read_unit(run, unit)
        lines = [clean_text(line, 500) for line in journal_after(run, mark["invocation_id"], mark.get("cursor"))]
        outcome, result["ends"] = rank_load_state(lines, ranks)
        result["lines"] = lines[-LOADED_LINES:]
        if not unit_now["active"] or unit_now["main_pid"] != mark["main_pid"]:
            outcome = LOST
        if outcome or clock() - started >= timeout:
            break
        sleep(interval)
    result["seconds"] = round(clock() - started, 3)
    result["outcome"] = outcome or TIMEOUT
    ended = "%d of %d rank(s) ended their load" % (result["ends"], ranks)
    result["msg"] = {
        SWAPPED: "%s: %s in %.2f s, the same process (PID %d) serves" % (
            unit, ended, result["seconds"], mark["main_pid"]),
        REJECTED: "%s: a rank failed to load the revision (%s); this node's ranks may hold other weights than rank "
                  "0's" % (unit, ended),
        LOST: "%s: the process that was asked to load (PID %d) no longer runs (%s)" % (unit, mark["main_pid"], ended),
        TIMEOUT: "%s: %s within %.2f s" % (unit, ended, result["seconds"]),
    }[result["outcome"]]
    return result


# --- checkpoints ----------------------------------------------------------------------------------------------------

# bytes per element of the safetensors dtypes
_DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1, "U16": 2, "I16": 2, "F16": 2,
                "BF16": 2, "U32": 4, "I32": 4, "F32": 4, "U64": 8, "I64": 8, "F64": 8, "F4": 0.5, "F6_E2M3": 0.75,
                "F6_E3M2": 0.75}
_HEADER_LIMIT = 100 * 1024 * 1024
# config.json keys that differ between two saves of one model without changing it
CONFIG_IGNORED = ("_name_or_path", "transformers_version")
_SHOWN = 10


def safetensors_header(path):
    """``(tensors, problem)``: ``{name: (dtype, shape)}`` of one ``.safetensors`` file, read from its header alone,
    and why the file is unusable (None when it is whole): a header that is cut or not JSON, a tensor whose bytes do
    not fit its dtype and shape, data that ends before the header says."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as handle:
            head = handle.read(8)
            if len(head) < 8:
                return None, "%s is shorter than a safetensors header" % path
            length = struct.unpack("<Q", head)[0]
            if length > min(_HEADER_LIMIT, size - 8):
                return None, "%s: its header claims %d bytes; the file has %d" % (path, length, size)
            header = json.loads(handle.read(length).decode("utf-8"))
    except OSError as exc:
        return None, "cannot read %s: %s" % (path, clean_text(exc.strerror or exc))
    except (ValueError, UnicodeDecodeError) as exc:
        return None, "%s: the header is not JSON (%s)" % (path, clean_text(exc, 120))
    if not isinstance(header, dict):
        return None, "%s: the header is not a JSON object" % path
    tensors = {}
    end = 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (first, last) = entry["dtype"], [int(n) for n in entry["shape"]], entry["data_offsets"]
            count = 1
            for dim in shape:
                count *= dim
            if int(last) - int(first) != count * _DTYPE_BYTES[dtype]:
                return None, "%s: tensor %s has %d bytes for %s %s" % (path, name, int(last) - int(first), dtype, shape)
        except (KeyError, TypeError, ValueError):
            return None, "%s: the header entry of %s is not a tensor description" % (path, printable(name, 200))
        tensors[name] = (dtype, tuple(shape))
        end = max(end, int(last))
    if 8 + length + end != size:
        return None, "%s: the tensors need %d bytes after the header; the file has %d (cut or padded)" % (
            path, end, size - 8 - length)
    return tensors, None


def _weight_files(directory):
    index = os.path.join(directory, "model.safetensors.index.json")
    if os.path.isfile(index):
        try:
            with open(index, encoding="utf-8") as handle:
                weight_map = json.load(handle)["weight_map"]
            return sorted(set(weight_map.values())), None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return None, "%s is not a usable safetensors index (%s)" % (index, clean_text(exc, 120))
    try:
        names = sorted(name for name in os.listdir(directory) if name.endswith(".safetensors"))
    except OSError as exc:
        return None, "cannot list %s: %s" % (directory, clean_text(exc.strerror or exc))
    if not names:
        return None, "%s holds no *.safetensors file" % directory
    return names, None


def checkpoint_shape(directory):
    """``(summary, problems)`` of a model directory: ``config`` (config.json without CONFIG_IGNORED), ``tensors``
    (``{name: (dtype, shape)}`` over every weight file), ``files``; problems say what could not be read."""
    problems = []
    config = None
    try:
        with open(os.path.join(directory, "config.json"), encoding="utf-8") as handle:
            config = json.load(handle)
        if not isinstance(config, dict):
            raise ValueError("not a JSON object")
        config = dict((key, value) for key, value in config.items() if key not in CONFIG_IGNORED)
    except (OSError, ValueError) as exc:
        problems.append("%s/config.json cannot be read: %s" % (directory, clean_text(exc, 120)))
    files, problem = _weight_files(directory)
    tensors = {}
    for name in files or ():
        found, problem_of_file = safetensors_header(os.path.join(directory, name))
        if problem_of_file:
            problems.append(problem_of_file)
            continue
        for tensor in set(found) & set(tensors):
            problems.append("%s: tensor %s is in two weight files" % (directory, tensor))
        tensors.update(found)
    if problem:
        problems.append(problem)
    return {"config": config, "tensors": tensors, "files": files or []}, problems


def _described(tensor):
    return "%s %s" % (tensor[0], list(tensor[1]))


def compare_checkpoints(current, candidate):
    """Whether ``candidate`` can be swapped in for ``current`` (two model directories on this host): the same
    configuration and, tensor by tensor, the same names, dtypes and shapes, every weight file whole.

    Returns ``{"same_shape": bool, "problems": [...], "tensors": n}``. SGLang 0.5.23 checks none of this before it
    starts copying, and a failure part-way kills the server (see the module's notes)."""
    left, problems = checkpoint_shape(current)
    right, more = checkpoint_shape(candidate)
    problems = ["current: %s" % p for p in problems] + ["candidate: %s" % p for p in more]
    if left["config"] is not None and right["config"] is not None:
        keys = sorted(set(left["config"]) | set(right["config"]))
        differ = [key for key in keys if left["config"].get(key) != right["config"].get(key)]
        if differ:
            problems.append("config.json differs in %s" % ", ".join(differ[:_SHOWN]) +
                            (" and %d more" % (len(differ) - _SHOWN) if len(differ) > _SHOWN else ""))
    old, new = left["tensors"], right["tensors"]
    if old and new:
        missing = sorted(set(old) - set(new))
        extra = sorted(set(new) - set(old))
        changed = sorted(name for name in set(old) & set(new) if old[name] != new[name])
        for label, names in (("missing from the candidate", missing), ("only in the candidate", extra),
                             ("of another dtype or shape", changed)):
            if not names:
                continue
            if names is changed:
                shown = ["%s %s -> %s" % (name, _described(old[name]), _described(new[name])) for name in names[:_SHOWN]]
            else:
                shown = names[:_SHOWN]
            problems.append("%d tensors %s: %s%s" % (len(names), label, "; ".join(shown),
                                                     " ..." if len(names) > _SHOWN else ""))
    return {"same_shape": not problems, "problems": problems, "tensors": len(new)}
