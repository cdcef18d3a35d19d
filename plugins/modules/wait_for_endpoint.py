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
  - The wait has a strict total deadline (O(timeout)) measured on a monotonic clock. Every request, from connect to
    the last byte of the body, has one wall-clock limit (O(request_timeout), capped by the time that is left), which
    a server cannot stretch by sending slowly, so the module returns within O(timeout) plus about one second.
  - Near the deadline the last pause is shortened so that the last request still has 0.25 s (or O(request_timeout)
    when that is shorter), and no request is sent with less time left, so RV(status) and RV(msg) show the last
    answer the server could give rather than a timeout the deadline caused.
  - A refused or reset connection, a DNS or TLS error and a request timeout are reported as status V(-1) and,
    like every status that is neither in O(status_code) nor in O(fail_status_code), mean "not yet", so polling goes on.
  - Redirects are never followed. A C(3xx) answer means "not yet" (unless it is listed in O(status_code)) and its
    target appears in RV(status_history) and RV(msg), so the API key and the readiness verdict never move to
    another origin.
  - Bodies are read up to O(max_body_bytes). A larger body, one that does not arrive in time, one that is not
    JSON or JSON nested deeper than 100 levels is not returned; with O(json_query) such an answer means "not yet",
    with the reason in RV(status_history).
  - A status from O(fail_status_code) ends the wait at once with a hint in RV(msg) (401/403 point at the API key,
    404/405 at the path or method).
  - With O(unit), the systemd unit is read between polls; if the invocation that was running when the wait began is
    gone (the unit failed, stopped, is waiting to be restarted or was restarted) the module fails at once and returns
    the journal lines of that invocation only.
  - The module never changes anything; it always reports C(changed=false).
  - HTTP goes through C(ansible.module_utils.urls), so proxies, client certificates and CA bundles work as in
    M(ansible.builtin.uri). Loopback and link-local hosts and the addresses of the host the module runs on are never
    reached through a proxy (see O(use_proxy)).
  - Secrets are masked as C(********) in everything the module returns (RV(msg), RV(status_history), RV(json),
    RV(journal)), namely the values of O(api_key) and O(secrets), the password of O(url), values of request headers
    whose names look secret, values under secret-looking keys and after secret-looking command-line flags, and
    the userinfo of any URL. See RV(json) for the rule.
author: llmserve developers (@llmserve)
requirements:
  - C(jmespath) on the managed host, only when O(json_query) is used.
  - systemd (C(systemctl), C(journalctl)) on the managed host, only when O(unit) is used.
attributes:
  check_mode:
    details:
      - By default nothing is requested in check mode and RV(ready) is V(null); the message says that the wait was
        skipped. With O(check_mode_probe=true) exactly one request is sent and its outcome is reported
        (a status from O(fail_status_code) still fails; anything else does not).
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
      - The value is never logged, and it is masked wherever it appears in what the module returns.
      - It is only sent to the origin of O(url) (redirects are not followed) and never to a proxy for a loopback or
        link-local host or an address of the host the module runs on.
    type: str
  secrets:
    description:
      - Further secret strings (for example an admin key or a token that the server may echo) that are masked as
        C(********) wherever they appear in what the module returns, like O(api_key). Nothing is sent.
      - Masking literal strings also masks them where they happen to occur in other text, so very short values
        make the output hard to read.
    type: list
    elements: str
    default: []
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
      - Loopback and link-local hosts (V(localhost), names ending in V(.localhost), C(127.0.0.0/8), C(::1),
        C(169.254.0.0/16), C(fe80::/10), C(0.0.0.0), C(::)) are always reached directly, whatever the environment
        says, so a poll of the local server and its API key cannot go to a proxy.
      - So are the addresses of the host the module runs on (one a socket can be bound to), and names that resolve
        to one of them, because a server bound to the host's own IP is probed at that IP.
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
      - Like O(interval) and O(request_timeout), a finite number greater than 0 and at most 604800 (one week).
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
      - Time limit in seconds of a single request as a whole (connect, TLS handshake, status line, headers and body),
        capped by the time left before O(timeout). A server that trickles its answer is cut off after this time.
      - The limit is enforced with a C(SIGALRM) timer in the module process; a DNS lookup cannot be interrupted.
      - SGLang's C(/health) runs a one-token generation and can take up to 20 seconds under load.
    type: float
    default: 30
  max_body_bytes:
    description:
      - Largest response body, in bytes, that is read, for success and error answers alike. A longer body is not
        read further and not returned, so a huge answer cannot exhaust the memory of the managed host.
      - With O(json_query), an answer whose body is too large does not count as success.
    type: int
    default: 1048576
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
      - It sees the whole JSON body, before O(json_keys) and masking.
      - Needs the C(jmespath) Python library on the managed host.
    type: str
  json_keys:
    description:
      - Return only these top-level keys of a JSON object body in RV(json) (keys that are missing are left out).
        When the body is not a JSON object, RV(json) is not returned.
      - Use it to register only what later tasks need, for example V([speculative_algorithm, version]) from
        SGLang's C(/server_info), which otherwise returns the full server configuration.
      - Not set (the default) returns the whole body.
    type: list
    elements: str
  metric_names:
    description:
      - Names of Prometheus metrics to read from the body of the answer that made the endpoint ready (the Prometheus
        text format, as a C(/metrics) endpoint serves it), returned in RV(metrics).
      - A name without a usable sample (absent, or not a finite number) is left out of RV(metrics), never given as 0.
      - Not set (the default) reads nothing.
    type: list
    elements: str
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
  - A DNS lookup is not covered by the request timeout; a stuck resolver can delay the return beyond O(timeout).
  - Prefer O(api_key) or O(headers) to credentials in O(url). A password in O(url) is masked in what the module
    returns, but Ansible logs the module's arguments on the managed host (syslog or journal) before the module runs,
    unless the task has C(no_log).
seealso:
  - module: ansible.builtin.uri
  - module: ansible.builtin.wait_for
extends_documentation_fragment: [ansible.builtin.action_common_attributes, llmserve.sglang.attributes]
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

- name: Check that MTP speculative decoding is active, and keep only two fields of /server_info
  llmserve.sglang.wait_for_endpoint:
    url: http://127.0.0.1:30000/server_info
    api_key: "{{ sglang_api_key }}"
    secrets:
      - "{{ sglang_admin_api_key }}"
    json_query: "speculative_algorithm == 'EAGLE'"
    json_keys: [speculative_algorithm, version]
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
    reason:
      description:
        - Why the last answer of this run did not count, when there is more to say than its status.
        - "For example C(Connection failure: timed out), C(redirect to http://127.0.0.1:8080/login, not followed),
          C(the body is larger than max_body_bytes, 1048576 bytes; it was not read) or
          C(json_query: the answer is not usable JSON: nested deeper than 100 levels)."
      type: str
      returned: when there is a reason
  sample:
    - {status: -1, first_seen: 0.001, last_seen: 30.2, count: 121, reason: "Connection failure: timed out"}
    - {status: 503, first_seen: 30.45, last_seen: 40.6, count: 41}
    - {status: 200, first_seen: 40.85, last_seen: 40.85, count: 1}
json:
  description:
    - Parsed body of the last answer when it was JSON (at most O(max_body_bytes), nested at most 100 levels),
      reduced to O(json_keys) when that is set.
    - Secrets are replaced by C(********), because SGLang's C(/server_info) shows them in clear text. A key is
      secret when its name, in snake case (camelCase split, lower case, other characters as C(_)), contains
      C(password), C(passwd), C(passphrase), C(secret), C(api_key), C(apikey), C(private_key), C(access_key),
      C(credential) or C(authorization), or its last word ends in C(token), or it is exactly C(key). So
      C(api_key), C(admin_api_key), C(ssl_keyfile_password), C(x-api-key), C(secret_key) and C(hf_token) are masked,
      while C(ssl_keyfile), C(ssl_certfile), C(max_total_tokens), C(token_capacity) and C(tokenizer_path) are not.
    - Inside strings (such as C(launch_command)), the value after a command-line flag with a secret name
      (C(--api-key X), C(--admin-api-key=X), C(--ssl-keyfile-password X), C(--hf-token X)), after C(name=value) or
      C(name:value) with a secret name, the values of O(api_key) and O(secrets), and URL userinfo are masked too.
    - Every string (keys too) is made safe to store - a surrogate pair the server escaped (C(\ud83d\ude80)) is
      joined into its character, a lone surrogate becomes U+FFFD, other unprintable characters are escaped
      (newlines kept), and a string is cut at 10000 characters, the cut said at its end - so a report, a custom stat
      or a textfile made from it can always be written.
  returned: when the last answer had a JSON body (an object, if O(json_keys) is set)
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
    timestamps:
      description:
        - systemd's own moments of the unit, in seconds of the host's C(CLOCK_MONOTONIC) (C(clock) is V(monotonic)),
          V(null) where systemd has none since boot - C(stop_requested) (C(ActiveExitTimestampMonotonic), the unit
          left C(active)), C(stopped) (C(InactiveEnterTimestampMonotonic), every process of it gone),
          C(main_started) (C(ExecMainStartTimestampMonotonic)), C(main_exited) (C(ExecMainExitTimestampMonotonic)).
        - C(checked) is the moment of the module's return on the same clock (after a successful wait, right after
          the answer that made it ready), and C(realtime_offset) what to add to any of them for seconds since the
          epoch by the host's wall clock, read at that moment.
      type: dict
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
    timestamps: {clock: monotonic, stop_requested: 8811.52, stopped: 8815.9, main_started: 8816.01,
                 main_exited: 8840.5, checked: 8840.71, realtime_offset: 1764666189.2}
metrics:
  description:
    - With O(metric_names), the samples of those metrics in the answer that made the endpoint ready - per name
      found, a list of C(labels) (a dict) and C(value) (a float).
  returned: when O(metric_names) is set and the endpoint became ready
  type: dict
  sample: {"sglang:startup_time_seconds": [{labels: {model_name: qwen, phase: load_weight}, value: 41.2}]}
journal:
  description:
    - On failure, the last O(journal_lines) journal lines of the invocation that was running when the wait began.
      Empty on success. Secrets are masked as in RV(json).
  returned: when O(unit) is set
  type: list
  elements: str
  sample: ["Initialization failed. warmup error", "sglang.service: Main process exited, code=killed, status=9/KILL"]
msg:
  description: What happened, with the status history and, on failure, a hint. The userinfo of URLs is masked.
  returned: always
  type: str
  sample: "http://127.0.0.1:30000/ready answered 200 (OK) after 40.85 s (163 requests: -1 x121 -> 503 x41 -> 200 x1)"
"""

import json
import traceback
from urllib.parse import unquote, urlsplit

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.llmserve.sglang.plugins.module_utils.endpoint_wait import (
    FAIL,
    NO_CONNECTION,
    READY,
    UnitError,
    UnitWatcher,
    describe_status,
    filter_keys,
    is_finite_positive,
    judge,
    status_hint,
    wait_for_endpoint,
)
from ansible_collections.llmserve.sglang.plugins.module_utils.prometheus_samples import parse_samples
from ansible_collections.llmserve.sglang.plugins.module_utils.text import (
    clean_text,
    is_secret_key,
    mask_userinfo,
    redact,
    redact_text,
)
from ansible_collections.llmserve.sglang.plugins.module_utils.http_client import (
    DEFAULT_MAX_BODY_BYTES,
    HardenedClient,
    build_fetcher,  # looked up at call time: the unit tests replace it with fake servers
)

JMESPATH_IMPORT_ERROR = None
try:
    import jmespath
except ImportError:
    jmespath = None
    JMESPATH_IMPORT_ERROR = traceback.format_exc()

MAX_SECONDS = 7 * 24 * 3600


def build_module():
    return AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True),
            method=dict(type="str", default="GET"),
            body=dict(type="raw"),
            body_format=dict(type="str", default="json", choices=["json", "raw"]),
            headers=dict(type="dict", default={}),
            api_key=dict(type="str", no_log=True),
            secrets=dict(type="list", elements="str", default=[], no_log=True),
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
            max_body_bytes=dict(type="int", default=DEFAULT_MAX_BODY_BYTES),
            consecutive=dict(type="int", default=1),
            json_query=dict(type="str"),
            json_keys=dict(type="list", elements="str", no_log=False),
            metric_names=dict(type="list", elements="str"),
            unit=dict(type="str"),
            journal_lines=dict(type="int", default=50),
            check_mode_probe=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )


def validate_params(params):
    """Return an error message for the first invalid option, or None."""
    url = params["url"]
    try:
        parsed = urlsplit(url)
        parsed.port  # pylint: disable=pointless-statement  # raises ValueError on a port that is not a number
    except ValueError as exc:
        return "url must be an absolute http:// or https:// URL, got %r (%s)" % (mask_userinfo(url), to_native(exc))
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        return "url must be an absolute http:// or https:// URL, got %r" % mask_userinfo(url)
    for name in ("timeout", "interval", "request_timeout"):
        if not is_finite_positive(params[name]) or params[name] > MAX_SECONDS:
            return "%s must be a finite number of seconds greater than 0 and at most %d, got %s" % (
                name, MAX_SECONDS, params[name])
    if params["max_body_bytes"] < 1:
        return "max_body_bytes must be 1 or more, got %s" % params["max_body_bytes"]
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


def known_secrets(params):
    """Literal strings that must not come back: the API key, the ``secrets`` option, the password of
    the URL (as written and decoded) and the values of secret-looking request headers."""
    found = []
    if params["api_key"]:
        found.append(params["api_key"])
    found.extend(params["secrets"] or [])
    try:
        password = urlsplit(params["url"]).password
    except ValueError:
        password = None
    if password:
        found.extend([password, unquote(password)])
    for name, value in (params["headers"] or {}).items():
        if value is None or not is_secret_key(str(name)):
            continue
        value = to_native(value)
        found.append(value)
        scheme, sep, token = value.partition(" ")
        if sep and token.strip():
            found.append(token.strip())
    return sorted(set(s for s in found if s), key=len, reverse=True)


class EndpointWaiter(object):
    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.url = self.params["url"]
        self.display_url = mask_userinfo(self.url)
        self.method = self.params["method"].upper()
        self.headers = dict(self.params["headers"] or {})
        self.data = None
        self.json_expr = None
        self.watcher = None
        self.last_answer = None
        self.secrets = known_secrets(self.params)
        # Ansible masks no_log values in everything the module returns, module_args included
        module.no_log_values.update(self.secrets)
        self.client = HardenedClient(module, build_fetcher(module), self.params["max_body_bytes"])
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
                self.fail("json_query is not a valid JMESPath expression: %s" % to_native(exc))
        if self.params["unit"]:
            systemctl = self.module.get_bin_path("systemctl", required=True)
            journalctl = self.module.get_bin_path("journalctl") or "journalctl"
            self.watcher = UnitWatcher(self.params["unit"], self._run, systemctl=systemctl, journalctl=journalctl)

    def _run(self, argv):
        return self.module.run_command(argv)

    def fail(self, msg, **result):
        result.setdefault("changed", False)
        self.module.fail_json(msg=redact_text(msg, self.secrets), **redact(result, self.secrets))

    def probe(self, request_timeout):
        """One request through the shared client: connect, headers and body share one time limit."""
        answer = self.client.request(self.method, self.url, data=self.data, headers=self.headers,
                                     timeout=request_timeout)
        # the answer that ends the wait is the last one: metric_names reads its body
        self.last_answer = answer
        return answer

    def json_check(self, data):
        if data is None:
            return False, "json_query: the answer is not JSON"
        try:
            found = self.json_expr.search(data)
        except Exception as exc:
            return False, "json_query failed on the answer: %s" % clean_text(to_native(exc))
        if found:
            return True, ""
        return False, "json_query %r gave %s" % (self.params["json_query"], json.dumps(found))

    def finish(self, result, with_journal=True):
        failed = result.pop("failed", False)
        data = result.pop("json", None)
        if data is not None and self.params["json_keys"] is not None:
            data = filter_keys(data, self.params["json_keys"])
        if data is not None:
            result["json"] = data
        if self.params["metric_names"] and result.get("ready") and self.last_answer is not None:
            result["metrics"] = parse_samples(self.last_answer.get("body"), self.params["metric_names"])
        if self.watcher is not None:
            result["unit_state"] = self.watcher.state()
            result["journal"] = []
            if failed and with_journal:
                lines, error = self.watcher.journal(self.params["journal_lines"])
                result["journal"] = lines
                if error:
                    self.module.warn(redact_text("journal of %s not available: %s" % (self.params["unit"], error),
                                                 self.secrets))
        # every returned string: known secrets, secret keys and flags, URL userinfo
        result = redact(result, self.secrets)
        result["changed"] = False
        if failed:
            self.module.fail_json(**result)
        self.module.exit_json(**result)

    def run(self):
        p = self.params
        json_check = self.json_check if self.json_expr is not None else None
        try:
            with self.client:
                result = wait_for_endpoint(
                    self.probe, timeout=p["timeout"], interval=p["interval"], request_timeout=p["request_timeout"],
                    success_codes=p["status_code"], fail_codes=p["fail_status_code"], consecutive=p["consecutive"],
                    json_check=json_check, unit_watcher=self.watcher, url=self.display_url)
        except UnitError as exc:
            self.fail(to_native(exc), ready=False)
        self.finish(result)

    def check_mode(self):
        p = self.params
        result = {"ready": None, "status": None, "elapsed": 0.0, "attempts": 0, "status_history": []}
        if not p["check_mode_probe"]:
            result["msg"] = ("check mode: not waiting for %s (set check_mode_probe: true to send one request)"
                             % self.display_url)
            result["changed"] = False
            self.module.exit_json(**result)
        with self.client:
            answer = self.probe(min(p["request_timeout"], p["timeout"]))
        status = answer["status"]
        json_check = self.json_check if self.json_expr is not None else None
        data, verdict, reason = judge(answer, p["status_code"], p["fail_status_code"], json_check)
        if status == NO_CONNECTION and not reason:
            reason = answer.get("msg") or None
        entry = {"status": status, "first_seen": 0.0, "last_seen": 0.0, "count": 1}
        if reason:
            entry["reason"] = reason
        result.update(status=status, attempts=1, json=data, ready=verdict == READY, status_history=[entry])
        if self.watcher is not None:
            try:
                self.watcher.start()
            except UnitError as exc:
                self.module.warn(redact_text(to_native(exc), self.secrets))
        if verdict == FAIL:
            result["msg"] = "check mode probe: %s answered %s: %s" % (
                self.display_url, describe_status(status), status_hint(status))
            result["failed"] = True
        else:
            detail = reason or answer.get("msg") or ""
            result["msg"] = "check mode probe: %s answered %s%s; not waiting in check mode" % (
                self.display_url, describe_status(status), (" (%s)" % detail) if detail and verdict != READY else "")
            result["failed"] = False
        # a check-mode probe reports the unit state but never fails on it nor reads the journal
        self.finish(result, with_journal=False)


def main():
    module = build_module()
    module.run_command_environ_update = dict(LANG="C", LC_ALL="C", LC_MESSAGES="C", LANGUAGE="C")
    # before anything can fail: the URL's password must not come back in module_args either
    module.no_log_values.update(known_secrets(module.params))
    error = validate_params(module.params)
    if error:
        module.fail_json(msg=error, changed=False)
    waiter = EndpointWaiter(module)
    waiter.setup()
    if module.check_mode:
        waiter.check_mode()
    else:
        waiter.run()


if __name__ == "__main__":
    main()
