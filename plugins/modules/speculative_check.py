#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: speculative_check
short_description: Measure an SGLang server's speculative decoding with a few fixed prompts
version_added: 0.1.0
description:
  - Sends a bounded number of greedy C(POST /generate) requests, one after the other, to an SGLang server on the
    managed host, then reads C(/server_info) and, with O(metrics), C(/metrics), and returns SGLang's own numbers
    about its speculative decoding. It judges nothing; the C(sglang_server) role applies its policy to the result
    (filter P(llmserve.sglang.sglang_spec_verdict#filter)).
  - RV(requests.accept_length) is the acceptance length of exactly these requests, from each request's
    C(meta_info) (completion tokens over verify forwards, as SGLang 0.5.23's tokenizer manager computes it).
    C(avg_spec_accept_length) in RV(server) is SGLang's own cumulative figure since its start, which includes earlier
    traffic and is only updated every C(decode_log_interval) decode forwards (40 by default).
  - RV(requests.decode_tokens_per_s) is the completion tokens over SGLang's own C(e2e_latency) of the requests
    (prefill included), one request at a time.
  - The HTTP client is the one of P(llmserve.sglang.wait_for_endpoint#module), with one wall-clock limit per request,
    no redirects followed, no proxy for loopback and link-local hosts or the addresses of the host the module runs on
    (see O(use_proxy)), capped bodies. The API key goes into the
    C(Authorization) header and is masked in everything returned.
author: llmserve developers (@llmserve)
attributes:
  check_mode:
    support: full
    details:
      - In check mode nothing is sent and nothing is measured.
options:
  url:
    description: Base URL of the server, for example V(http://127.0.0.1:30000) (no path).
    type: str
    required: true
  prompts:
    description: The prompts, sent in order; with more O(requests) than prompts they are used again from the first.
    type: list
    elements: str
    required: true
  requests:
    description: How many requests to send (1 to 64).
    type: int
    default: 4
  max_new_tokens:
    description: C(max_new_tokens) of each request (1 to 8192); generation is greedy (C(temperature) 0).
    type: int
    default: 128
  metrics:
    description: Also read the C(sglang:spec_*) gauges from C(/metrics) (SGLang serves it with C(--enable-metrics)).
    type: bool
    default: false
  api_key:
    description: Bearer token for the server (C(--api-key)); never logged, masked in what is returned.
    type: str
  timeout:
    description: Seconds the whole check may take (each request gets what is left, at most O(request_timeout)).
    type: float
    default: 300
  request_timeout:
    description: Seconds one request may take.
    type: float
    default: 120
  validate_certs:
    description: Verify the server's certificate on an https O(url).
    type: bool
    default: true
  ca_path:
    description: PEM file with the CA certificate(s) that verify the server.
    type: path
  use_proxy:
    description:
      - Whether proxy environment variables (C(http_proxy), C(https_proxy), C(no_proxy)) are honoured.
      - Loopback and link-local hosts and the addresses of the host the module runs on are always reached directly,
        whatever the environment says. The C(sglang_server) role passes V(false).
    type: bool
    default: true
extends_documentation_fragment: [ansible.builtin.action_common_attributes, llmserve.sglang.attributes]
"""

EXAMPLES = r"""
- name: Measure MTP on the local server
  llmserve.sglang.speculative_check:
    url: http://127.0.0.1:30000
    prompts:
      - "Explain step by step how a hash table handles collisions."
      - "Write a Python function that merges two sorted lists."
    requests: 4
    max_new_tokens: 128
    metrics: true
    api_key: "{{ sglang_server_api_key }}"
  register: spec
"""

RETURN = r"""
requests:
  description: What the check's own requests measured (from SGLang's C(meta_info) of each).
  returned: unless in check mode
  type: dict
  contains:
    requests:
      description: Requests sent.
      type: int
    prompt_tokens:
      description: Prompt tokens of each request, as SGLang counted them.
      type: list
      elements: int
    completion_tokens:
      description: Completion tokens of each request.
      type: list
      elements: int
    completion_tokens_total:
      description: Their sum.
      type: int
    verify_forwards:
      description: Sum of C(spec_verify_ct) (SGLang's verify forwards of these requests).
      type: int
    accept_length:
      description: Completion tokens over verify forwards; null when SGLang reported no verify forward.
      type: float
    accept_length_per_request:
      description: The same per request.
      type: list
      elements: float
    accept_rate:
      description: Accepted over proposed draft tokens (C(spec_num_correct_drafts) / C(spec_num_proposed_drafts)).
      type: float
    decode_seconds:
      description: Sum of SGLang's C(e2e_latency) of the requests.
      type: float
    decode_tokens_per_s:
      description: Completion tokens over RV(requests.decode_seconds).
      type: float
  sample: {requests: 4, prompt_tokens: [21, 18, 17, 23], completion_tokens: [128, 128, 128, 128],
           completion_tokens_total: 512, verify_forwards: 160, accept_length: 3.2, accept_rate: 0.733,
           decode_seconds: 4.1, decode_tokens_per_s: 124.9}
server:
  description:
    - What C(/server_info) reports. The attention settings are those of the first scheduler
      (C(internal_states[0])) where it reports them; C(active_num_steps) is the scheduler's step count in use
      (it moves with C(--speculative-adaptive)); C(speculative_num_steps) is the resolved start-up value.
  returned: unless in check mode
  type: dict
  sample: {speculative_algorithm: EAGLE, speculative_num_steps: 3, speculative_eagle_topk: 1,
           speculative_num_draft_tokens: 4, speculative_adaptive: false, attention_backend: triton,
           prefill_attention_backend: null, decode_attention_backend: null, page_size: 1,
           avg_spec_accept_length: 3.05, active_num_steps: 3, version: 0.5.23}
metrics:
  description: The mean of each C(sglang:spec_accept_length), C(sglang:spec_accept_rate) and C(sglang:spec_num_steps)
    series; null without O(metrics) or when C(/metrics) did not answer.
  returned: unless in check mode
  type: dict
  sample: {"sglang:spec_accept_length": 3.1, "sglang:spec_accept_rate": 0.7, "sglang:spec_num_steps": 3}
elapsed:
  description: Seconds the check took.
  returned: always
  type: float
msg:
  description: What was measured, in one sentence.
  returned: always
  type: str
"""

import json
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmserve.sglang.plugins.module_utils.endpoint_wait import (
    decode_json_body,
    describe_status,
    is_finite_positive,
)
from ansible_collections.llmserve.sglang.plugins.module_utils.http_client import (
    HardenedClient,
    build_fetcher,
)
from ansible_collections.llmserve.sglang.plugins.module_utils.spec_check import (
    parse_gauges,
    server_state,
    summarise_requests,
)
from ansible_collections.llmserve.sglang.plugins.module_utils.text import redact, redact_text

MAX_BODY_BYTES = 4 * 1024 * 1024
MAX_SECONDS = 24 * 3600


def build_module():
    return AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True),
            prompts=dict(type="list", elements="str", required=True),
            requests=dict(type="int", default=4),
            # a token count, not a secret
            max_new_tokens=dict(type="int", default=128, no_log=False),
            metrics=dict(type="bool", default=False),
            api_key=dict(type="str", no_log=True),
            timeout=dict(type="float", default=300),
            request_timeout=dict(type="float", default=120),
            validate_certs=dict(type="bool", default=True),
            ca_path=dict(type="path"),
            use_proxy=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )


def validate_params(p):
    url = p["url"].rstrip("/")
    if not url.startswith(("http://", "https://")) or "?" in url or "#" in url or "@" in url:
        return "url must be an http:// or https:// base URL without credentials, query or fragment"
    if not p["prompts"] or not all(isinstance(t, str) and t.strip() for t in p["prompts"]):
        return "prompts must list at least one non-empty prompt"
    if not 1 <= p["requests"] <= 64:
        return "requests must be 1 to 64, got %s" % p["requests"]
    if not 1 <= p["max_new_tokens"] <= 8192:
        return "max_new_tokens must be 1 to 8192, got %s" % p["max_new_tokens"]
    for name in ("timeout", "request_timeout"):
        if not is_finite_positive(p[name]) or p[name] > MAX_SECONDS:
            return "%s must be a number of seconds greater than 0 and at most %d, got %s" % (name, MAX_SECONDS, p[name])
    key = p["api_key"]
    if key is not None and (not key or any(ord(c) < 0x21 or ord(c) == 0x7f for c in key)):
        return "api_key must be a non-empty key without spaces or control characters"
    return None


class CheckFailed(Exception):
    pass


class SpeculativeCheck(object):
    def __init__(self, module, client):
        self.p = module.params
        self.client = client
        self.base = self.p["url"].rstrip("/")
        self.start = time.monotonic()
        self.headers = {}
        if self.p["api_key"]:
            self.headers["Authorization"] = "Bearer %s" % self.p["api_key"]

    def _left(self):
        left = self.p["timeout"] - (time.monotonic() - self.start)
        if left <= 0:
            raise CheckFailed("the check ran out of its %s s (timeout)" % self.p["timeout"])
        return min(left, self.p["request_timeout"])

    def _call(self, method, path, body=None, want_json=True):
        headers = dict(self.headers)
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = "application/json"
        answer = self.client.request(method, self.base + path, data=data, headers=headers, timeout=self._left())
        status = answer["status"]
        if status != 200:
            detail = (": " + answer["msg"]) if answer.get("msg") else ""
            raise CheckFailed("%s %s answered %s%s" % (method, path, describe_status(status), detail))
        if answer.get("body") is None:
            raise CheckFailed("%s %s: %s" % (method, path, answer.get("body_problem") or "no body"))
        if not want_json:
            return answer["body"].decode("utf-8", "replace")
        data, problem = decode_json_body(answer["body"], answer.get("content_type"))
        if problem or not isinstance(data, dict):
            raise CheckFailed("%s %s: %s" % (method, path, problem or "the answer is not a JSON object"))
        return data

    def run(self):
        prompts = self.p["prompts"]
        answers = []
        for i in range(self.p["requests"]):
            began = time.monotonic()
            data = self._call("POST", "/generate", {
                "text": prompts[i % len(prompts)],
                "sampling_params": {"max_new_tokens": self.p["max_new_tokens"], "temperature": 0},
            })
            answers.append({"meta_info": data.get("meta_info") or {}, "seconds": time.monotonic() - began})
        result = {"requests": summarise_requests(answers)}
        result["server"] = server_state(self._call("GET", "/server_info"))
        result["metrics"] = None
        warnings = []
        if self.p["metrics"]:
            try:
                result["metrics"] = parse_gauges(self._call("GET", "/metrics", want_json=False))
            except CheckFailed as exc:  # the role's own metrics check judges the endpoint; here it is a number less
                warnings.append("speculative gauges not read: %s" % exc)
        return result, warnings


def describe(result):
    req = result["requests"]
    srv = result["server"]
    parts = ["%d requests, %d completion tokens" % (req["requests"], req["completion_tokens_total"])]
    if req["accept_length"] is not None:
        parts.append("acceptance length %.2f over these requests" % req["accept_length"])
    else:
        parts.append("no verify forwards reported (is speculative decoding on?)")
    if srv.get("avg_spec_accept_length") is not None:
        parts.append("%.2f cumulative (/server_info)" % srv["avg_spec_accept_length"])
    if req["decode_tokens_per_s"] is not None:
        parts.append("%.1f tokens/s" % req["decode_tokens_per_s"])
    parts.append("attention backend %s, page size %s" % (srv.get("attention_backend"), srv.get("page_size")))
    return "; ".join(parts)


def main():
    module = build_module()
    p = module.params
    secrets = [p["api_key"]] if p["api_key"] else []
    module.no_log_values.update(secrets)
    error = validate_params(p)
    if error:
        module.fail_json(msg=error, changed=False)
    if module.check_mode:
        module.exit_json(changed=False, elapsed=0.0, msg="check mode: nothing sent, nothing measured")
    client = HardenedClient(module, build_fetcher(module), MAX_BODY_BYTES)
    check = SpeculativeCheck(module, client)
    try:
        with client:
            result, warnings = check.run()
    except CheckFailed as exc:
        module.fail_json(msg=redact_text("speculative check failed: %s" % exc, secrets), changed=False,
                         elapsed=round(time.monotonic() - check.start, 3))
    for warning in warnings:
        module.warn(redact_text(warning, secrets))
    result = redact(result, secrets)
    module.exit_json(changed=False, elapsed=round(time.monotonic() - check.start, 3), msg=describe(result), **result)


if __name__ == "__main__":
    main()
