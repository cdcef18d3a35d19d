#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gateway_worker
short_description: Take an SGLang worker out of an smg gateway and drain it, or put it back
version_added: 0.1.0
description:
  - Manages one worker of the SGLang model gateway (C(smg) 1.13.0, as run by the collection's role
    C(llmserve.sglang.sglang_gateway)) through its control plane, so that a worker can be restarted without
    dropping a request.
  - With O(state=absent) the worker is found by its URL in C(GET /workers) and removed with C(DELETE /workers/{id}).
    smg then stops sending it new requests, marks it C(draining), counts down the requests it has in flight to it
    and drops the entry a fixed settle time (5 s) after the last one ended. The module waits, up to O(drain_timeout),
    until the gateway has let go of the worker - the entry is gone, or it is C(draining) with no request in flight at
    two readings half a second apart, so the settle time is not waited for - B(and) the worker itself reports no
    request running or waiting (see O(worker_load_source)), because requests that reached it by another way (a second
    gateway, a direct client) are only known to the worker.
  - It refuses to remove a worker, and changes nothing, when fewer than O(min_healthy) other healthy workers of the
    same model and worker type would be left; so it never takes out the last one that serves.
  - With O(state=present) the worker is registered with C(POST /workers) (URL and O(worker_api_key)) unless the
    gateway already lists it, and the module waits, up to O(healthy_timeout), until the gateway lists it as
    healthy and C(ready), the state in which smg routes requests to it. A worker the gateway still lists as
    C(draining) (an earlier removal) is registered again once that entry is gone. A registration the gateway accepted
    and then no longer knows (seen when the POST came just as smg finished the removal of the same URL) is made again,
    up to twice, with a warning; the third loss fails the task.
  - smg compares worker URLs as strings (C(http://10.0.0.5:30000/) and C(http://10.0.0.5:30000) are two workers).
    The module compares canonical forms instead (scheme and host in lower case, IPv6 in brackets and short form,
    no trailing slash, no default port) and registers the canonical form, so a second run never adds a duplicate.
  - HTTP goes through the collection's shared client (also used by M(llmserve.sglang.wait_for_endpoint)); every
    request has one wall-clock limit (O(request_timeout)) from connect to the last byte, bodies are read up to
    O(max_body_bytes), redirects are never followed (the key never goes to another origin), and loopback or
    link-local hosts and the addresses of the host the module runs on are never reached through a proxy.
  - The keys never appear in what the module returns or logs; answers of the gateway are cleaned of them.
author: llmserve developers (@llmserve)
attributes:
  check_mode:
    details:
      - In check mode the gateway's worker list (and, for O(state=absent), the worker's load) is read, nothing is
        registered or removed and nothing is waited for. The refusal by O(min_healthy) happens in check mode too.
options:
  gateway_url:
    description:
      - Base URL of the smg gateway as seen from the host the module runs on, for example V(http://127.0.0.1:8000)
        when the task is delegated to the gateway's host. A path prefix is kept (a gateway behind a reverse proxy).
      - No credentials, query or fragment.
    type: str
    required: true
  admin_api_key:
    description:
      - "The gateway's control-plane key (an C(admin) key of C(--control-plane-api-keys); the role
        C(llmserve.sglang.sglang_gateway) takes it as C(sglang_gateway_admin_api_key)), sent as
        C(Authorization: Bearer <key>) to C(/workers)."
      - A gateway without control-plane keys takes its C(--api-key) here, and one with neither takes none (an open
        control plane, which that role never runs).
    type: str
  worker_url:
    description:
      - The worker's URL exactly as the gateway reaches it (C(http://host:port) of the inventory's
        C(sglang_server_host) and C(sglang_server_port); the role's fact C(sglang_gateway_workers) lists them).
      - An IPv6 address must be in brackets (V(http://[fd00::5]:30000)). Trailing slashes, the case of scheme and
        host and the default port do not matter.
    type: str
    required: true
  worker_api_key:
    description:
      - The worker's C(--api-key). Sent to the gateway when the worker is registered (smg uses it for its requests to
        the worker) and to the worker when its load is read from C(/v1/loads).
    type: str
  state:
    description:
      - V(absent) removes the worker from the gateway and waits until it is drained.
      - V(present) registers it (unless the gateway lists it already) and waits until the gateway routes to it.
    type: str
    choices: [absent, present]
    default: present
  min_healthy:
    description:
      - O(state=absent) is refused, before anything changes, when fewer than this many healthy workers (C(ready),
        not draining) other than this one would be left that serve the same model (C(model_id)) and have the same
        C(worker_type).
      - V(0) allows removing the last one (the gateway then answers 503 until a worker is back).
    type: int
    default: 1
  drain_timeout:
    description:
      - Seconds O(state=absent) waits, after the removal, until the gateway no longer lists the worker and the worker
        has no request left. Should be at least as long as the longest generation the worker serves.
    type: float
    default: 300
  drain_timeout_action:
    description:
      - What happens when O(drain_timeout) passes with requests still in flight. V(fail) fails the task and says
        what is still running (the worker is out of the gateway all the same); V(continue) returns with
        RV(drained=false) and a warning.
    type: str
    choices: [fail, continue]
    default: fail
  healthy_timeout:
    description:
      - Seconds O(state=present) waits until the gateway lists the worker as healthy. smg registers a worker only
        after it answered C(/v1/models), C(/server_info) and C(/model_info), so a worker that is still starting can
        take its start-up time here; waiting for its own readiness first (M(llmserve.sglang.wait_for_endpoint)) is
        clearer.
    type: float
    default: 300
  worker_load_source:
    description:
      - Where the worker's own count of requests in flight comes from, once the gateway has let go of it.
      - V(v1_loads) - SGLang's C(GET /v1/loads), C(num_running_reqs) plus C(num_waiting_reqs) of every DP rank, read
        with O(worker_api_key). Always there in SGLang 0.5.23.
      - V(metrics) - C(sglang:num_running_reqs) plus C(sglang:num_queue_reqs) on C(GET /metrics) (needs the worker's
        C(--enable-metrics); no key).
      - V(auto) - V(v1_loads); V(metrics) when C(/v1/loads) does not exist or no O(worker_api_key) is given and
        the worker wants one.
      - V(none) - trust the gateway alone (its own in-flight count reaches 0 before it drops the worker).
        Requests sent to the worker by anything else are then not waited for.
      - A worker whose port is closed counts as having no request. When the load cannot be read at all before the
        removal (wrong key, endpoint missing), nothing is changed.
    type: str
    choices: [auto, v1_loads, metrics, none]
    default: auto
  worker_load_url:
    description:
      - Base URL the worker's load is read from, when it differs from O(worker_url) as seen from the host the module
        runs on. Defaults to O(worker_url).
    type: str
  interval:
    description:
      - Seconds between two looks at the gateway (and the worker) while waiting.
    type: float
    default: 1
  request_timeout:
    description:
      - Time limit in seconds of one request as a whole (connect, TLS handshake, headers and body), capped by the
        time left of the wait.
    type: float
    default: 10
  max_body_bytes:
    description:
      - Largest answer body, in bytes, that is read. The worker list of smg is about 2 KiB a worker.
    type: int
    default: 4194304
  validate_certs:
    description:
      - Whether the certificate of an HTTPS gateway (and worker) is verified.
    type: bool
    default: true
  ca_path:
    description:
      - PEM file with the CA certificate(s) that verify them.
    type: path
  use_proxy:
    description:
      - Whether proxy environment variables are honoured. Loopback and link-local hosts and the addresses of the
        host the module runs on (names that resolve to one included) are always reached directly.
    type: bool
    default: true
notes:
  - Per batch of a rolling restart, the sequence is O(state=absent) (delegated to the gateway's host), restart the
    worker and wait for its readiness, O(state=present). With several gateways in front of the same workers, take the
    worker out of each of them first; the worker's own count includes every gateway's requests.
  - A registration that smg is still processing is not in C(GET /workers); O(state=absent) does not see it.
seealso:
  - module: llmserve.sglang.wait_for_endpoint
extends_documentation_fragment: [ansible.builtin.action_common_attributes, llmserve.sglang.attributes]
"""

EXAMPLES = r"""
- name: Take the worker out of the gateway and wait until its requests are done
  llmserve.sglang.gateway_worker:
    gateway_url: "http://127.0.0.1:8000"
    admin_api_key: "{{ sglang_gateway_admin_api_key }}"
    worker_url: "http://10.0.0.5:30000"
    worker_api_key: "{{ sglang_server_api_key }}"
    state: absent
    drain_timeout: 600
  delegate_to: gateway-01

- name: Put it back and wait until the gateway routes to it
  llmserve.sglang.gateway_worker:
    gateway_url: "http://127.0.0.1:8000"
    admin_api_key: "{{ sglang_gateway_admin_api_key }}"
    worker_url: "http://10.0.0.5:30000"
    worker_api_key: "{{ sglang_server_api_key }}"
    state: present
    healthy_timeout: 120
  delegate_to: gateway-01

- name: Remove a worker that is already dead, without reading its load
  llmserve.sglang.gateway_worker:
    gateway_url: "https://gateway.example.internal:8443"
    ca_path: /etc/pki/llm-ca.pem
    admin_api_key: "{{ sglang_gateway_admin_api_key }}"
    worker_url: "http://[fd00::5]:30000"
    state: absent
    worker_load_source: none
"""

RETURN = r"""
worker_url:
  description: The worker's URL in the canonical form the module compares and registers.
  returned: always
  type: str
  sample: http://10.0.0.5:30000
worker_id:
  description:
    - The gateway's id of the worker (for O(state=absent), of the first entry removed); V(null) when it has none.
  returned: always
  type: str
  sample: 01a22e81-cbb9-73ce-99c2-2a1ac64401f4
worker_ids:
  description: Every id the gateway had for the worker's URL (smg can hold the same worker under two spellings).
  returned: when O(state=absent)
  type: list
  elements: str
worker:
  description: The gateway's entry for the worker (C(id), C(url), C(status), C(is_healthy), C(load), C(model_id),
    C(worker_type)) when it was last listed.
  returned: when the gateway listed the worker
  type: dict
  sample: {id: 01a22e81-cbb9-73ce-99c2-2a1ac64401f4, url: "http://10.0.0.5:30000", status: ready, is_healthy: true,
           load: 3, model_id: qwen, worker_type: regular}
removed:
  description:
    - Whether the gateway had let go of the worker at the end - it no longer lists it (also when it never did), or
      lists it as C(draining) with nothing in flight (RV(settling)).
  returned: when O(state=absent)
  type: bool
settling:
  description:
    - Whether the gateway still listed the drained worker (C(draining), nothing in flight) at the end; smg drops the
      entry after its settle time, and O(state=present) registers the worker again once it has.
  returned: when O(state=absent)
  type: bool
drained:
  description:
    - Whether the worker was drained - the gateway let go of it (RV(removed)) and it has no request running or
      waiting.
      V(null) when it was not registered (or in check mode).
  returned: when O(state=absent)
  type: bool
drain_seconds:
  description: Seconds from the removal until the worker was drained (or the wait ended).
  returned: when O(state=absent)
  type: float
  sample: 41.3
removed_at:
  description:
    - When the removal was sent, in seconds since the epoch by the clock of the host the module runs on (the gateway's
      host when delegated there). V(null) when nothing was removed (not registered, check mode, refused).
  returned: when O(state=absent)
  type: float
  sample: 1764675000.123456
drain_ended_at:
  description:
    - When the drain wait ended (drained, or given up), by the same clock as RV(removed_at). V(null) without a removal.
  returned: when O(state=absent)
  type: float
  sample: 1764675041.4231
in_flight:
  description:
    - Requests in flight, counted by the gateway (C(load) in its worker list) and by the worker itself
      (RV(worker_load_source)), at the removal and at the end. A count is V(null) where it could not be read.
  returned: when O(state=absent)
  type: dict
  contains:
    at_removal:
      description: The counts just before the removal (V(null) when the worker was not registered).
      type: dict
    at_end:
      description: The counts when the wait ended (V(null) in check mode).
      type: dict
  sample: {at_removal: {gateway: 2, worker: 2}, at_end: {gateway: 0, worker: 0}}
worker_load_source:
  description: Where the worker's own count came from (V(v1_loads) or V(metrics)); V(null) when it was not read.
  returned: when O(state=absent)
  type: str
healthy_workers_left:
  description: Healthy workers of the same model and worker type left in the gateway, the worker not counted.
  returned: when O(state=absent)
  type: int
  sample: 3
registered:
  description: Whether the gateway has the worker registered at the end.
  returned: when O(state=present)
  type: bool
healthy:
  description: Whether the gateway lists the worker as healthy and C(ready) at the end.
  returned: when O(state=present)
  type: bool
healthy_workers:
  description: Healthy workers in the gateway at the end, this one included.
  returned: when O(state=present)
  type: int
wait_seconds:
  description: Seconds spent waiting for the worker to become healthy.
  returned: when O(state=present)
  type: float
added_at:
  description:
    - When the module began putting the worker back (registering it or waiting for a listed one), in seconds since the
      epoch by the clock of the host the module runs on. For a worker already healthy, when it was listed so.
      V(null) in check mode.
  returned: when O(state=present)
  type: float
  sample: 1764675130.5
healthy_at:
  description:
    - When the gateway first listed the worker healthy and C(ready), by the same clock as RV(added_at). V(null) when it
      did not become healthy.
  returned: when O(state=present)
  type: float
  sample: 1764675133.52
msg:
  description: What happened, or why it failed.
  returned: always
  type: str
  sample: "http://10.0.0.5:30000 removed from the gateway and drained in 41.3 s (in flight at removal: gateway 2,
    worker 2; 3 healthy worker(s) left)"
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmserve.sglang.plugins.module_utils.endpoint_wait import is_finite_positive
from ansible_collections.llmserve.sglang.plugins.module_utils.gateway_worker import (
    WORKER_LOAD_SOURCES,
    GatewayApi,
    Outcome,
    UrlError,
    WorkerChange,
    canonical_url,
)
from ansible_collections.llmserve.sglang.plugins.module_utils.http_client import (
    HardenedClient,
    client_argument_spec,
    build_fetcher,  # looked up at call time: the unit tests replace it with fake servers
)
from ansible_collections.llmserve.sglang.plugins.module_utils.text import mask_secrets, redact

MAX_SECONDS = 7 * 24 * 3600


def build_module():
    return AnsibleModule(
        argument_spec=dict(
            gateway_url=dict(type="str", required=True),
            admin_api_key=dict(type="str", no_log=True),
            worker_url=dict(type="str", required=True),
            worker_api_key=dict(type="str", no_log=True),
            state=dict(type="str", default="present", choices=["absent", "present"]),
            min_healthy=dict(type="int", default=1),
            drain_timeout=dict(type="float", default=300),
            drain_timeout_action=dict(type="str", default="fail", choices=["fail", "continue"]),
            healthy_timeout=dict(type="float", default=300),
            worker_load_source=dict(type="str", default="auto", choices=list(WORKER_LOAD_SOURCES)),
            worker_load_url=dict(type="str"),
            interval=dict(type="float", default=1),
            request_timeout=dict(type="float", default=10),
            **client_argument_spec(max_body_bytes=4 * 1024 * 1024)
        ),
        supports_check_mode=True,
    )


def validate_params(params):
    """``(error, urls)``: the first rule an option breaks (None when all hold) and the canonical URLs."""
    urls = {}
    try:
        urls["gateway_url"] = canonical_url(params["gateway_url"], "gateway_url")[0]
        urls["worker_url"], urls["worker_key"] = canonical_url(params["worker_url"], "worker_url")
        load_url = params["worker_load_url"]
        urls["worker_load_url"] = (canonical_url(load_url, "worker_load_url")[0] if load_url is not None
                                   else urls["worker_url"])
    except UrlError as exc:
        return str(exc), None
    for name in ("drain_timeout", "healthy_timeout", "interval", "request_timeout"):
        if not is_finite_positive(params[name]) or params[name] > MAX_SECONDS:
            return ("%s must be a finite number of seconds greater than 0 and at most %d, got %s"
                    % (name, MAX_SECONDS, params[name])), None
    if params["min_healthy"] < 0:
        return "min_healthy must be 0 or more, got %s" % params["min_healthy"], None
    if params["max_body_bytes"] < 1024:
        return "max_body_bytes must be 1024 or more, got %s" % params["max_body_bytes"], None
    for name in ("admin_api_key", "worker_api_key"):
        value = params[name]
        if value is not None and (not value or any(ord(c) < 0x21 or ord(c) == 0x7f for c in value)):
            # it goes into an HTTP header: a line break there would be a header of the caller's choosing
            return "%s must be a non-empty key without spaces or control characters" % name, None
    return None, urls


def main():
    module = build_module()
    p = module.params
    secrets = sorted(set(s for s in (p["admin_api_key"], p["worker_api_key"]) if s), key=len, reverse=True)
    module.no_log_values.update(secrets)

    def finish(outcome):
        # the module's own sentences get the literal keys masked; what came from servers was masked on arrival
        result = redact(dict(outcome.result), secrets)
        for warning in outcome.warnings:
            module.warn(mask_secrets(warning, secrets))
        result["msg"] = mask_secrets(outcome.msg, secrets)
        if outcome.failed:
            module.fail_json(**result)
        module.exit_json(**result)

    error, urls = validate_params(p)
    if error:
        module.fail_json(msg=mask_secrets(error, secrets), changed=False)
    params = dict(p, **urls)
    client = HardenedClient(module, build_fetcher(module), p["max_body_bytes"])
    api = GatewayApi(client, urls["gateway_url"], p["admin_api_key"], urls["worker_load_url"], p["worker_api_key"],
                     p["worker_load_source"], secrets=secrets)
    change = WorkerChange(api, params, check_mode=module.check_mode)
    outcome = None
    with client:
        try:
            if p["state"] == "absent":
                change.absent()
            else:
                change.present()
        except Outcome as exc:
            outcome = exc
    if outcome is None:  # absent() and present() always end with an Outcome
        module.fail_json(msg="gateway_worker ended without a result", changed=False)
    finish(outcome)


if __name__ == "__main__":
    main()
