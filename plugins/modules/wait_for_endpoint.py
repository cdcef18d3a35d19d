#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: wait_for_endpoint
short_description: Wait until an HTTP endpoint answers an expected status code
version_added: 0.1.0
description:
  - Polls an HTTP(S) endpoint from the managed host, inside one module run, until it answers one of O(status_code).
  - Meant for model servers such as SGLang, whose port stays closed while weights load and which answers
    C(503) on C(/health) and C(/ready) until its warm-up generation succeeded.
  - The wait has a strict total deadline (O(timeout)) measured on a monotonic clock. The timeout of every single
    request is capped by the time that is left, so the module returns within O(timeout) plus about one second.
  - A refused or reset connection, a DNS or TLS error and a request timeout are reported as status V(-1) and,
    like every status that is neither in O(status_code) nor in O(fail_status_code), mean "not yet", so polling goes on.
  - A status from O(fail_status_code) ends the wait at once with a hint in RV(msg) (401/403 point at the API key,
    404/405 at the path or method).
  - With O(unit), the systemd unit is read between polls; if the invocation that was running when the wait began is
    gone (the unit failed, stopped, is waiting to be restarted or was restarted) the module fails at once and returns
    the journal lines of that invocation only.
  - The module never changes anything; it always reports C(changed=false).
  - HTTP goes through C(ansible.module_utils.urls), so proxies, client certificates and CA bundles work as in
    M(ansible.builtin.uri).
author: llmserve developers (@llmserve)
requirements:
  - C(jmespath) on the managed host, only when O(json_query) is used.
  - systemd (C(systemctl), C(journalctl)) on the managed host, only when O(unit) is used.
attributes:
  check_mode:
    description: Can run in check mode and then reports what it would do without changing the target.
    support: full
    details:
      - By default nothing is requested in check mode and RV(ready) is V(null); the message says that the wait was
        skipped. With O(check_mode_probe=true) exactly one request is sent and its outcome is reported
        (a status from O(fail_status_code) still fails; anything else does not).
  diff_mode:
    description: Reports the changes it makes (or would make in check mode) as a diff.
    support: none
  platform:
    description: Target operating systems this module runs on.
    support: full
    platforms: posix
options:
  url:
    description:
      - HTTP or HTTPS URL to poll, for example V(http://127.0.0.1:30000/health).
    type: str
    required: true
  method:
    description:
      - HTTP method of every request.
    type: str
    default: GET
  body:
    description:
      - Request body. With O(body_format=json), a dict or list is serialised to JSON.
    type: raw
  body_format:
    description:
      - How O(body) is sent. V(json) serialises it and sets the C(Content-Type) header to C(application/json) unless
        O(headers) already has a content type; V(raw) sends the string as it is.
    type: str
    choices: [json, raw]
    default: json
  headers:
    description:
      - Extra request headers.
    type: dict
    default: {}
  api_key:
    description:
      - Bearer token, sent in the C(Authorization) header as C(Bearer <api_key>). It replaces an C(Authorization) header from O(headers).
      - SGLang protects every endpoint except C(/health*), C(/ready) and C(/metrics) with C(--api-key).
      - The value is never logged, and it is masked in the returned RV(json).
    type: str
  validate_certs:
    description:
      - Whether to verify the server certificate of an HTTPS O(url).
    type: bool
    default: true
  ca_path:
    description:
      - PEM file with the CA certificate(s) used to verify the server.
    type: path
  client_cert:
    description:
      - PEM client certificate for TLS client authentication. May also hold the key.
    type: path
  client_key:
    description:
      - PEM private key for O(client_cert), when the certificate file does not hold it.
    type: path
  use_proxy:
    description:
      - Whether proxy environment variables (C(http_proxy), C(https_proxy), C(no_proxy)) are honoured.
    type: bool
    default: true
  status_code:
    description:
      - Status codes that count as success. V(-1) is allowed, to wait until nothing answers any more.
    type: list
    elements: int
    default: [200]
  fail_status_code:
    description:
      - Status codes that end the wait at once with a failure. They must not overlap O(status_code).
      - Use V([]) to treat every non-success answer as "not yet".
    type: list
    elements: int
    default: [401, 403, 404, 405]
  timeout:
    description:
      - Total time budget in seconds for the whole wait, measured on a monotonic clock.
    type: float
    default: 600
  interval:
    description:
      - Pause in seconds between the end of one request and the start of the next. It bounds how late
        readiness is noticed; a refused connection or an immediate C(503) costs the server next to nothing.
    type: float
    default: 0.25
  request_timeout:
    description:
      - Timeout in seconds of a single request (connect and each read), capped by the time left before O(timeout).
      - SGLang's C(/health) runs a one-token generation and can take up to 20 seconds under load.
    type: float
    default: 30
  consecutive:
    description:
      - Number of successful answers in a row that are needed before the endpoint counts as ready.
    type: int
    default: 1
  json_query:
    description:
      - JMESPath expression evaluated on the JSON body of a response whose status is in O(status_code).
        The answer only counts as success when the result is truthy (not null, false, empty or zero).
      - For example V(data[?id=='qwen3'] | length(@\) > `0`) on C(/v1/models), or
        V(speculative_algorithm == 'EAGLE') on C(/server_info).
      - Needs the C(jmespath) Python library on the managed host.
    type: str
  unit:
    description:
      - Name of the systemd unit that runs the server. Between polls the module reads
        C(ActiveState), C(SubState), C(InvocationID), C(NRestarts), C(ExecMainStatus) and C(Result) and fails at once
        when the unit is failed, inactive or stopping, waits for an automatic restart, or was restarted
        since the wait began.
    type: str
  journal_lines:
    description:
      - On failure with O(unit) set, how many of the last journal lines to return in RV(journal).
      - Only lines of the invocation that was running when the wait began are returned
        (C(journalctl _SYSTEMD_INVOCATION_ID=<id>)), together with systemd's own messages about it, so logs of
        earlier or later runs never mix in. V(0) disables this.
    type: int
    default: 50
  check_mode_probe:
    description:
      - In check mode, send one request and report its result instead of skipping the wait.
    type: bool
    default: false
notes:
  - Unlike M(ansible.builtin.uri) with C(until)/C(retries), the module is transferred and started once per wait, has
    a total deadline and can run in check mode.
  - A DNS lookup is not covered by the request timeout of the Python standard library; a stuck resolver can delay
    the return beyond O(timeout).
seealso:
  - module: ansible.builtin.uri
  - module: ansible.builtin.wait_for
"""

EXAMPLES = r"""
- name: Wait until SGLang finished its warm-up (no API key needed for /health)
  llmserve.sglang.wait_for_endpoint:
    url: http://127.0.0.1:30000/health
    timeout: 1800
    unit: sglang.service

- name: Cheap readiness flag (SGLang >= 0.5.20), tight polling
  llmserve.sglang.wait_for_endpoint:
    url: http://127.0.0.1:30000/ready
    timeout: 1800
    interval: 0.25
    unit: sglang.service
  register: sglang_ready

- name: Check that the served model is listed
  llmserve.sglang.wait_for_endpoint:
    url: http://127.0.0.1:30000/v1/models
    api_key: "{{ sglang_api_key }}"
    json_query: "data[?id=='qwen3.5-122b-a10b'] | length(@) > `0`"
    timeout: 60

- name: Check that MTP speculative decoding is active
  llmserve.sglang.wait_for_endpoint:
    url: http://127.0.0.1:30000/server_info
    api_key: "{{ sglang_api_key }}"
    json_query: "speculative_algorithm == 'EAGLE'"
    timeout: 30

- name: Send a short generation and require three good answers in a row
  llmserve.sglang.wait_for_endpoint:
    url: https://llm.example.com/generate
    method: POST
    body:
      text: Hello
      sampling_params:
        max_new_tokens: 4
    ca_path: /etc/pki/llm-ca.pem
    consecutive: 3
    timeout: 120
"""

RETURN = r"""
ready:
  description:
    - Whether the endpoint answered as expected. V(null) in check mode when no request was sent.
  returned: always
  type: bool
  sample: true
status:
  description:
    - Status of the last answer; V(-1) when there was no HTTP answer (refused, timeout, DNS or TLS error).
    - V(null) when no request was sent.
  returned: always
  type: int
  sample: 200
elapsed:
  description: Seconds spent waiting, on a monotonic clock.
  returned: always
  type: float
  sample: 41.27
attempts:
  description: Number of requests sent.
  returned: always
  type: int
  sample: 166
status_history:
  description:
    - The answers in order, one entry per change of status.
  returned: always
  type: list
  elements: dict
  contains:
    status:
      description: Status code, V(-1) for no connection.
      type: int
    first_seen:
      description: Seconds after the start of the wait when this status was first seen.
      type: float
    last_seen:
      description: Seconds after the start of the wait when this status was last seen before it changed.
      type: float
    count:
      description: How many answers in a row had this status.
      type: int
  sample:
    - {status: -1, first_seen: 0.001, last_seen: 30.2, count: 121}
    - {status: 503, first_seen: 30.45, last_seen: 40.6, count: 41}
    - {status: 200, first_seen: 40.85, last_seen: 40.85, count: 1}
json:
  description:
    - Parsed body of the last answer when it was JSON.
    - Values of keys such as C(api_key), C(admin_api_key), C(password), C(secret) and any key with the word
      C(token) in it (C(hf_token), C(access_token); not C(max_total_tokens)) are replaced by C(********),
      as are C(--api-key) values inside strings, because SGLang's C(/server_info) shows them in clear text.
  returned: when the last answer had a JSON body
  type: raw
  sample: {"object": "list", "data": [{"id": "qwen3.5-122b-a10b", "object": "model"}]}
unit_state:
  description: State of O(unit) at the last check.
  returned: when O(unit) is set
  type: dict
  contains:
    name:
      description: The unit name.
      type: str
    active_state:
      description: C(ActiveState) at the last check.
      type: str
    sub_state:
      description: C(SubState) at the last check.
      type: str
    result:
      description: C(Result) at the last check.
      type: str
    invocation_id:
      description: C(InvocationID) at the last check.
      type: str
    invocation_id_at_start:
      description: C(InvocationID) when the wait began.
      type: str
    n_restarts:
      description: C(NRestarts) at the last check.
      type: int
    n_restarts_at_start:
      description: C(NRestarts) when the wait began.
      type: int
    exec_main_status:
      description: Exit status (or signal number) of the last main process.
      type: int
    main_exit_seconds_ago:
      description: Seconds between the exit of the main process and the last check, V(null) when it has not exited.
      type: float
    main_start_seconds_ago:
      description:
        - Seconds between the start of the unit's main process and the module's return. After a successful wait this
          is the service's time to ready, however late the wait began.
      type: float
  sample:
    name: sglang.service
    active_state: activating
    sub_state: auto-restart
    result: signal
    invocation_id: 5f0c6c0a1e8c4e5f9a3c2b1d0e9f8a7b
    invocation_id_at_start: 5f0c6c0a1e8c4e5f9a3c2b1d0e9f8a7b
    n_restarts: 0
    n_restarts_at_start: 0
    exec_main_status: 9
    main_exit_seconds_ago: 0.21
    main_start_seconds_ago: 24.7
journal:
  description:
    - On failure, the last O(journal_lines) journal lines of the invocation that was running when the wait began.
      Empty on success.
  returned: when O(unit) is set
  type: list
  elements: str
  sample: ["Initialization failed. warmup error", "sglang.service: Main process exited, code=killed, status=9/KILL"]
msg:
  description: What happened, with the status history and, on failure, a hint.
  returned: always
  type: str
  sample: "http://127.0.0.1:30000/ready answered 200 (OK) after 40.85 s (163 requests: -1 x121 -> 503 x41 -> 200 x1)"
"""

import http.client
import inspect
import json
import traceback
import urllib.error
from urllib.parse import urlparse

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible.module_utils.common.text.converters import to_native
from ansible.module_utils import urls
from ansible.module_utils.urls import fetch_url

from ansible_collections.llmserve.sglang.plugins.module_utils.endpoint_wait import (
    FAIL,
    READY,
    UnitError,
    UnitWatcher,
    classify,
    describe_status,
    parse_json_body,
    redact,
    status_hint,
    wait_for_endpoint,
)

JMESPATH_IMPORT_ERROR = None
try:
    import jmespath
except ImportError:
    jmespath = None
    JMESPATH_IMPORT_ERROR = traceback.format_exc()

MAX_BODY_BYTES = 4 * 1024 * 1024


def _request_takes_context():
    try:
        return hasattr(urls, "make_context") and "context" in inspect.signature(urls.Request.open).parameters
    except (TypeError, ValueError):
        return False


class ContextFetcher(object):
    """Same call and return value as ``fetch_url``, but the TLS context is built once per run.

    ``fetch_url`` builds a new SSL context and loads the system CA store for every request, even for
    plain http (about 25 ms of CPU each); at four polls a second that would be most of the module's
    cost. Errors map to ``info`` exactly as ``fetch_url`` maps them (status -1 without an HTTP answer).
    """

    def __init__(self, module):
        p = module.params
        self.context = urls.make_context(cafile=p["ca_path"], validate_certs=p["validate_certs"],
                                         client_cert=p["client_cert"], client_key=p["client_key"])
        self.request = urls.Request(use_proxy=p["use_proxy"], validate_certs=p["validate_certs"],
                                    client_cert=p["client_cert"], client_key=p["client_key"], ca_path=p["ca_path"],
                                    http_agent="ansible-httpget", context=self.context)

    def __call__(self, module, url, data=None, headers=None, method=None, timeout=10, ca_path=None):
        info = {"url": url, "status": -1}
        try:
            resp = self.request.open(method or "GET", url, data=data, headers=headers, timeout=timeout)
        except urllib.error.HTTPError as exc:
            try:
                body = exc.read() if exc.fp is not None else b""
            except Exception:
                body = b""
            info.update({k.lower(): v for k, v in (exc.headers or {}).items()})
            info.update(status=exc.code, msg=to_native(exc), body=body)
            return exc, info
        except urllib.error.URLError as exc:
            info.update(status=int(getattr(exc, "code", -1) or -1), msg="Request failed: %s" % to_native(exc))
        except http.client.BadStatusLine as exc:
            info.update(msg="Connection failure: connection was closed before a valid response was received: %s"
                        % to_native(exc.line))
        except OSError as exc:
            info.update(msg="Connection failure: %s" % to_native(exc))
        except ValueError as exc:
            module.fail_json(msg="cannot request %s: %s" % (url, to_native(exc)))
        except Exception as exc:  # ansible's own ConnectionError family and anything unexpected: not yet
            info.update(msg="Request failed: %s" % to_native(exc))
        else:
            info.update({k.lower(): v for k, v in resp.headers.items()})
            info.update(status=resp.status, msg="OK (%s bytes)" % resp.headers.get("Content-Length", "unknown"))
            return resp, info
        return None, info


def build_fetcher(module):
    """``fetch_url`` or, where ``urls.Request`` accepts a prebuilt context, the cheaper ContextFetcher."""
    if _request_takes_context():
        return ContextFetcher(module)
    return fetch_url


def build_module():
    return AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True),
            method=dict(type="str", default="GET"),
            body=dict(type="raw"),
            body_format=dict(type="str", default="json", choices=["json", "raw"]),
            headers=dict(type="dict", default={}),
            api_key=dict(type="str", no_log=True),
            validate_certs=dict(type="bool", default=True),
            ca_path=dict(type="path"),
            client_cert=dict(type="path"),
            client_key=dict(type="path"),
            use_proxy=dict(type="bool", default=True),
            status_code=dict(type="list", elements="int", default=[200]),
            fail_status_code=dict(type="list", elements="int", default=[401, 403, 404, 405]),
            timeout=dict(type="float", default=600),
            interval=dict(type="float", default=0.25),
            request_timeout=dict(type="float", default=30),
            consecutive=dict(type="int", default=1),
            json_query=dict(type="str"),
            unit=dict(type="str"),
            journal_lines=dict(type="int", default=50),
            check_mode_probe=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )


def validate_params(params):
    """Return an error message for the first invalid option, or None."""
    url = params["url"]
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        return "url must be an absolute http:// or https:// URL, got %r" % url
    for name in ("timeout", "interval", "request_timeout"):
        if not params[name] > 0:
            return "%s must be greater than 0, got %s" % (name, params[name])
    if params["consecutive"] < 1:
        return "consecutive must be 1 or more, got %s" % params["consecutive"]
    if params["journal_lines"] < 0:
        return "journal_lines must be 0 or more, got %s" % params["journal_lines"]
    if not params["status_code"]:
        return "status_code must list at least one status code"
    for code in params["status_code"]:
        if code != -1 and not 100 <= code <= 599:
            return "status_code entries must be HTTP status codes (100-599) or -1, got %s" % code
    for code in params["fail_status_code"]:
        if not 100 <= code <= 599:
            return "fail_status_code entries must be HTTP status codes (100-599), got %s" % code
    overlap = sorted(set(params["status_code"]) & set(params["fail_status_code"]))
    if overlap:
        return "status_code and fail_status_code must not overlap; both list %s" % ", ".join(str(c) for c in overlap)
    if params["body"] is not None and params["body_format"] == "raw" and not isinstance(params["body"], str):
        return "body must be a string when body_format is raw (use body_format: json for a dict or list)"
    if params["unit"] is not None and not params["unit"].strip():
        return "unit must be a systemd unit name, got an empty string"
    return None


class EndpointWaiter(object):
    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.url = self.params["url"]
        self.method = self.params["method"].upper()
        self.headers = dict(self.params["headers"] or {})
        self.data = None
        self.json_expr = None
        self.watcher = None
        self.fetch = build_fetcher(module)
        self._prepare_request()

    def _prepare_request(self):
        body = self.params["body"]
        if body is not None:
            if self.params["body_format"] == "json":
                self.data = json.dumps(body)
                if not any(k.lower() == "content-type" for k in self.headers):
                    self.headers["Content-Type"] = "application/json"
            else:
                self.data = body
        if self.params["api_key"]:
            for key in list(self.headers):
                if key.lower() == "authorization":
                    del self.headers[key]
            self.headers["Authorization"] = "Bearer %s" % self.params["api_key"]

    def setup(self):
        query = self.params["json_query"]
        if query:
            if jmespath is None:
                self.module.fail_json(
                    msg=missing_required_lib("jmespath", reason="to evaluate json_query (pip package 'jmespath',"
                                             " Debian/Ubuntu package 'python3-jmespath')"),
                    exception=JMESPATH_IMPORT_ERROR)
            try:
                self.json_expr = jmespath.compile(query)
            except Exception as exc:  # jmespath raises several ParseError subclasses
                self.module.fail_json(msg="json_query is not a valid JMESPath expression: %s" % to_native(exc))
        if self.params["unit"]:
            systemctl = self.module.get_bin_path("systemctl", required=True)
            journalctl = self.module.get_bin_path("journalctl") or "journalctl"
            self.watcher = UnitWatcher(self.params["unit"], self._run, systemctl=systemctl, journalctl=journalctl)

    def _run(self, argv):
        return self.module.run_command(argv)

    def probe(self, request_timeout):
        resp, info = self.fetch(self.module, self.url, data=self.data, headers=self.headers, method=self.method,
                                timeout=request_timeout, ca_path=self.params["ca_path"])
        status = int(info.get("status", -1))
        answer = {"status": status, "msg": to_native(info.get("msg", "")), "content_type": info.get("content-type")}
        body = None
        try:
            if status >= 400:
                body = info.get("body")
            elif resp is not None:
                body = resp.read(MAX_BODY_BYTES)
        except Exception as exc:  # a stalled or reset body read keeps the status but loses the body
            answer["msg"] = "reading the body failed: %s" % to_native(exc)
        finally:
            if resp is not None:
                try:
                    resp.close()
                except Exception:
                    pass
        answer["body"] = body
        return answer

    def json_check(self, data):
        if data is None:
            return False, "json_query: the answer is not JSON"
        try:
            found = self.json_expr.search(data)
        except Exception as exc:
            return False, "json_query failed on the answer: %s" % to_native(exc)
        if found:
            return True, ""
        return False, "json_query %r gave %s" % (self.params["json_query"], json.dumps(found))

    def secrets(self):
        return [self.params["api_key"]] if self.params["api_key"] else []

    def finish(self, result, with_journal=True):
        failed = result.pop("failed", False)
        if result.get("json") is not None:
            result["json"] = redact(result["json"], self.secrets())
        else:
            result.pop("json", None)
        if self.watcher is not None:
            result["unit_state"] = self.watcher.state()
            result["journal"] = []
            if failed and with_journal:
                lines, error = self.watcher.journal(self.params["journal_lines"])
                result["journal"] = lines
                if error:
                    self.module.warn("journal of %s not available: %s" % (self.params["unit"], error))
        result["changed"] = False
        if failed:
            self.module.fail_json(**result)
        self.module.exit_json(**result)

    def run(self):
        p = self.params
        json_check = self.json_check if self.json_expr is not None else None
        try:
            result = wait_for_endpoint(
                self.probe, timeout=p["timeout"], interval=p["interval"], request_timeout=p["request_timeout"],
                success_codes=p["status_code"], fail_codes=p["fail_status_code"], consecutive=p["consecutive"],
                json_check=json_check, unit_watcher=self.watcher, url=self.url)
        except UnitError as exc:
            self.module.fail_json(msg=to_native(exc), ready=False, changed=False)
        self.finish(result)

    def check_mode(self):
        p = self.params
        result = {"ready": None, "status": None, "elapsed": 0.0, "attempts": 0, "status_history": []}
        if not p["check_mode_probe"]:
            result["msg"] = ("check mode: not waiting for %s (set check_mode_probe: true to send one request)" % self.url)
            result["changed"] = False
            self.module.exit_json(**result)
        answer = self.probe(min(p["request_timeout"], p["timeout"]))
        status = answer["status"]
        verdict = classify(status, p["status_code"], p["fail_status_code"])
        detail = answer.get("msg") or ""
        data = parse_json_body(answer.get("body"), answer.get("content_type"))
        if verdict == READY and self.json_expr is not None:
            met, why = self.json_check(data)
            if not met:
                verdict, detail = None, why
        result.update(status=status, attempts=1, json=data, ready=verdict == READY,
                      status_history=[{"status": status, "first_seen": 0.0, "last_seen": 0.0, "count": 1}])
        if self.watcher is not None:
            try:
                self.watcher.start()
            except UnitError as exc:
                self.module.warn(to_native(exc))
        if verdict == FAIL:
            result["msg"] = "check mode probe: %s answered %s: %s" % (self.url, describe_status(status), status_hint(status))
            result["failed"] = True
        else:
            result["msg"] = "check mode probe: %s answered %s%s; not waiting in check mode" % (
                self.url, describe_status(status), (" (%s)" % detail) if detail and verdict != READY else "")
            result["failed"] = False
        # a check-mode probe reports the unit state but never fails on it nor reads the journal
        self.finish(result, with_journal=False)


def main():
    module = build_module()
    module.run_command_environ_update = dict(LANG="C", LC_ALL="C", LC_MESSAGES="C", LANGUAGE="C")
    error = validate_params(module.params)
    if error:
        module.fail_json(msg=error)
    waiter = EndpointWaiter(module)
    waiter.setup()
    if module.check_mode:
        waiter.check_mode()
    else:
        waiter.run()


if __name__ == "__main__":
    main()
