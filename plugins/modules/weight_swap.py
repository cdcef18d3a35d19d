#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: weight_swap
short_description: Load another revision of the served model into a running SGLang server, without a restart
version_added: 0.1.0
description:
  - Asks the SGLang server at O(server_url) to load the model directory O(model_path) in place of the weights it
    serves (C(POST /update_weights_from_disk), SGLang 0.5.23), with O(weight_version) as the version the server
    reports afterwards, then reads back C(/model_info) and C(/v1/models) and checks that the server now serves that
    directory as that version. The process is not restarted.
  - Nothing is sent when the server already serves O(model_path) as O(weight_version) (RV(outcome=current),
    C(changed=false)), so a second run changes nothing.
  - With O(current_model_path), the two directories are compared on the host first (C(config.json), and the name,
    dtype and shape of every tensor in the safetensors files, each file whole). A candidate that differs is refused
    before the server is asked (RV(outcome=incompatible)), because SGLang 0.5.23 checks none of this and a load that fails
    part-way kills the server instead of rolling back.
  - The update waits for the requests that are running (SGLang takes a writer lock), so O(timeout) must cover the
    longest request plus the load; take the server out of rotation first (M(llmserve.sglang.gateway_worker)).
  - The module fails for every outcome but RV(outcome=swapped) and RV(outcome=current); the failure's result still
    carries RV(outcome) and RV(old_weights_serving), so a role can decide what to do next (register the result and
    set C(failed_when) to false).
  - HTTP goes through the collection's shared client (one wall-clock limit per request, capped bodies, no redirect
    followed, no proxy for the host's own or loopback addresses). The keys never appear in what the module returns.
author: llmserve developers (@llmserve)
attributes:
  check_mode:
    details:
      - In check mode the server is read (C(/model_info), C(/v1/models)) and the checkpoints compared, but no update
        is sent; RV(outcome) is V(would_swap).
options:
  server_url:
    description:
      - Base URL of the SGLang server as seen from the host the module runs on, for example V(http://127.0.0.1:30000).
        No path, credentials, query or fragment.
    type: str
    required: true
  model_path:
    description:
      - The model directory to load, on the server's host (the revision directory the C(llmserve.sglang.sglang_model)
        role verified, or a link to it).
    type: path
    required: true
  weight_version:
    description:
      - The version the server shall report afterwards in C(/model_info) and in every answer's C(meta_info) (the role
        passes the revision's commit). 1 to 256 printable characters.
    type: str
    required: true
  current_model_path:
    description:
      - The model directory the server serves now. When given, both directories are compared before the update and
        a candidate of another configuration or tensor layout is refused without asking the server.
    type: path
  api_key:
    description:
      - The server's C(--api-key), for C(/model_info) and C(/v1/models), and for the update when the server has no
        admin key.
    type: str
  api_key_file:
    description:
      - A file whose first non-blank line is the API key, instead of O(api_key).
    type: path
  admin_api_key:
    description:
      - The server's C(--admin-api-key). Where the server has one, only this key opens the update route.
    type: str
  admin_api_key_file:
    description:
      - A file whose first non-blank line is the admin key, instead of O(admin_api_key).
    type: path
  expect_served_model_name:
    description:
      - The name clients and the gateway use for the model. When given, a server that reports another name after
        the update fails the verification (SGLang 0.5.23 reports the loaded path as the served name after an update,
        whatever C(--served-model-name) said).
    type: str
  load_format:
    description:
      - SGLang's load format for the new weights (C(--load-format) names). Default is the server's own.
    type: str
  flush_cache:
    description:
      - Whether the server flushes its prefix cache after the update (the cached prefixes were computed with the old
        weights).
    type: bool
    default: true
  abort_all_requests:
    description:
      - Whether the server aborts the requests that are running instead of waiting for them. Leave it off and drain
        the server first.
    type: bool
    default: false
  timeout:
    description:
      - Seconds the update call may take as a whole (waiting for running requests, and the load).
    type: float
    default: 600
  read_timeout:
    description:
      - Seconds each read of C(/model_info) and C(/v1/models) may take.
    type: float
    default: 10
  max_body_bytes:
    description:
      - Largest answer body, in bytes, that is read.
    type: int
    default: 1048576
  validate_certs:
    description:
      - Whether an HTTPS server's certificate is checked (against O(ca_path) where given, else the system's CAs).
    type: bool
    default: true
  ca_path:
    description:
      - A PEM bundle of the CA certificates an HTTPS server's certificate is checked against.
    type: path
  use_proxy:
    description:
      - Whether C(http_proxy), C(https_proxy) and C(no_proxy) apply. The server's own host, loopback and link-local
        addresses never go through a proxy, whatever they say.
    type: bool
    default: true
notes:
  - After a failed update SGLang 0.5.23 only keeps the old weights when the failure came before the first tensor was
    read (no such directory, no weight files); RV(old_weights_serving) says what the read-back showed.
  - The served name moves to the loaded path. Serve the model under its path (no C(--served-model-name)) where the
    name must stay the same across a swap, or expect a restart.
seealso:
  - module: llmserve.sglang.gateway_worker
  - module: llmserve.sglang.wait_for_endpoint
extends_documentation_fragment: [ansible.builtin.action_common_attributes, llmserve.sglang.attributes]
"""

EXAMPLES = r"""
- name: Swap revision 2 into the running server, after comparing it with what it serves
  llmserve.sglang.weight_swap:
    server_url: "http://127.0.0.1:30000"
    model_path: /var/lib/llmserve-models/Qwen--Qwen3.5-122B-A10B/0f3c5e7d9b1a2c4e6f8091a3b5c7d9e1f2a4b6c8
    current_model_path: /var/lib/llmserve-models/Qwen--Qwen3.5-122B-A10B/9d8c7b6a5f4e3d2c1b0a99887766554433221100
    weight_version: 0f3c5e7d9b1a2c4e6f8091a3b5c7d9e1f2a4b6c8
    api_key: "{{ sglang_server_api_key }}"
    timeout: 900
  register: swap
  failed_when: false

- name: Say what happened when the server did not swap
  ansible.builtin.debug:
    msg: "{{ swap.msg }} (old weights serving: {{ swap.old_weights_serving }})"
  when: swap.outcome not in ['swapped', 'current']
"""

RETURN = r"""
outcome:
  description:
    - V(swapped) - the server loaded the revision and the read-back shows it.
    - V(current) - the server already served O(model_path) as O(weight_version); nothing was sent.
    - V(would_swap) - check mode; nothing was sent.
    - V(incompatible) - O(current_model_path) and O(model_path) differ in configuration or tensor layout; nothing was
      sent.
    - V(rejected) - the server refused the update (400); see RV(old_weights_serving).
    - V(unsupported) - the server has no such route (404 or 405, from another SGLang version or something in front of it).
    - V(unauthorized) - the key was refused (401 or 403).
    - V(lost) - the connection ended without an answer; the server may have died.
    - V(timeout) - no complete answer within O(timeout); the update may still be running.
    - V(unverified) - the server said it succeeded, but the read-back does not show the revision asked for.
    - V(bad_answer) - an answer that is not SGLang's (a redirect, a 5xx, no JSON); the state is unknown.
  returned: always
  type: str
  sample: swapped
msg:
  description: One sentence that says what happened.
  returned: always
  type: str
status:
  description: HTTP status of the update (-1 when there was no HTTP answer); V(null) when no update was sent.
  returned: always
  type: int
  sample: 200
message:
  description: The server's own message about the update, keys masked; V(null) when there was none.
  returned: always
  type: str
  sample: Succeeded to update model weights. Weight version updated to 0f3c5e7d.
before:
  description: C(model_path), C(served_model_name), C(weight_version) and C(load_format) of C(/model_info) before the
    update (V(null) when they could not be read).
  returned: always
  type: dict
after:
  description: The same after the update; V(null) when no update was sent or they could not be read.
  returned: always
  type: dict
served_models:
  description: The C(id) and C(root) of every model in C(/v1/models) after the update.
  returned: always
  type: list
  elements: dict
served_model_name_changed:
  description: Whether the served name differs before and after the update (SGLang 0.5.23 renames it to the path).
  returned: always
  type: bool
old_weights_serving:
  description: After a failed update, whether the server still reports the revision it had before; V(null) when
    unknown or when the update succeeded.
  returned: always
  type: bool
server_answering:
  description: Whether C(/model_info) gave any HTTP answer after the update (V(false) after a server died).
  returned: always
  type: bool
compared:
  description: The comparison of O(current_model_path) with O(model_path) (C(same_shape), C(problems), C(tensors));
    V(null) without O(current_model_path).
  returned: always
  type: dict
problems:
  description: Each check that failed.
  returned: always
  type: list
  elements: str
seconds:
  description: Seconds of the C(update) call, of the read-back (C(verify)) and in C(total).
  returned: always
  type: dict
  sample: {update: 41.2, verify: 0.02, total: 41.3}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmserve.sglang.plugins.module_utils import weight_swap
from ansible_collections.llmserve.sglang.plugins.module_utils.http_client import (
    HardenedClient,
    client_argument_spec,
    build_fetcher,  # looked up at call time: the unit tests replace it with fake servers
)
from ansible_collections.llmserve.sglang.plugins.module_utils.text import mask_secrets, redact


def build_module():
    return AnsibleModule(
        argument_spec=dict(
            server_url=dict(type="str", required=True),
            current_model_path=dict(type="path"),
            model_path=dict(type="path", required=True),
            weight_version=dict(type="str", required=True),
            api_key=dict(type="str", no_log=True),
            api_key_file=dict(type="path"),
            admin_api_key=dict(type="str", no_log=True),
            admin_api_key_file=dict(type="path"),
            expect_served_model_name=dict(type="str"),
            load_format=dict(type="str"),
            flush_cache=dict(type="bool", default=True),
            abort_all_requests=dict(type="bool", default=False),
            timeout=dict(type="float", default=600),
            read_timeout=dict(type="float", default=10),
            **client_argument_spec(max_body_bytes=1024 * 1024)
        ),
        mutually_exclusive=[("api_key", "api_key_file"), ("admin_api_key", "admin_api_key_file")],
        supports_check_mode=True,
    )


def _empty_result(outcome=None, msg=""):
    return {"outcome": outcome, "msg": msg, "status": None, "message": None, "before": None, "after": None,
            "served_models": None, "served_model_name_changed": None, "old_weights_serving": None,
            "server_answering": None, "compared": None, "problems": [], "seconds": {}}


def read_params(params):
    """``(error, keys)``: the first rule an option breaks (None when all hold) and the two keys."""
    for name in ("timeout", "read_timeout"):
        problem = weight_swap.seconds_problem(name, params[name])
        if problem:
            return problem, None
    if params["max_body_bytes"] < 1024:
        return "max_body_bytes must be 1024 or more, got %s" % params["max_body_bytes"], None
    keys = {}
    try:
        for name in ("api_key", "admin_api_key"):
            keys[name] = weight_swap.read_key(params[name], params[name + "_file"], name=name)
        weight_swap.update_body(params["model_path"], params["weight_version"], params["load_format"])
    except weight_swap.SwapInputError as exc:
        return str(exc), None
    return None, keys


def main():
    module = build_module()
    p = module.params
    error, keys = read_params(p)
    if error:
        module.fail_json(changed=False, **_empty_result(msg=error))
    secrets = sorted(set(k for k in keys.values() if k), key=len, reverse=True)
    module.no_log_values.update(secrets)

    def finish(result, changed):
        result = redact(result, secrets)
        result["msg"] = mask_secrets(result["msg"], secrets)
        if result["outcome"] in (weight_swap.SWAPPED, weight_swap.CURRENT, weight_swap.WOULD_SWAP):
            module.exit_json(changed=changed, **result)
        module.fail_json(changed=changed, **result)

    client = HardenedClient(module, build_fetcher(module), p["max_body_bytes"])
    with client:
        try:
            before, served, problem = weight_swap.read_identity(client, p["server_url"], keys["api_key"],
                                                                p["read_timeout"], secrets)
        except weight_swap.SwapInputError as exc:
            module.fail_json(changed=False, **_empty_result(msg=str(exc)))
        if weight_swap.serves(before, p["model_path"], p["weight_version"]):
            result = _empty_result(weight_swap.CURRENT, "%s already serves %s as weight_version %s" % (
                p["server_url"], p["model_path"], p["weight_version"]))
            result.update(before=before, served_models=served)
            finish(result, False)

        compared = None
        if p["current_model_path"]:
            compared = weight_swap.compare_checkpoints(p["current_model_path"], p["model_path"])
            if not compared["same_shape"]:
                result = _empty_result(weight_swap.INCOMPATIBLE)
                result.update(before=before, served_models=served, compared=compared, problems=list(compared["problems"]),
                              msg="%s cannot be swapped in for %s: %s" % (p["model_path"], p["current_model_path"],
                                                                          "; ".join(compared["problems"])))
                finish(result, False)

        if module.check_mode:
            result = _empty_result(weight_swap.WOULD_SWAP)
            result.update(before=before, served_models=served, compared=compared,
                          problems=[problem] if problem else [],
                          msg="%s would be asked to load %s as weight_version %s" % (
                              p["server_url"], p["model_path"], p["weight_version"]))
            finish(result, True)

        result = weight_swap.swap_weights(
            client, p["server_url"], p["model_path"], p["weight_version"], api_key=keys["api_key"],
            admin_key=keys["admin_api_key"], timeout=p["timeout"], read_timeout=p["read_timeout"],
            load_format=p["load_format"], flush_cache=p["flush_cache"], abort_all_requests=p["abort_all_requests"],
            expect_served_model_name=p["expect_served_model_name"], secrets=secrets)
    result.pop("ok", None)
    result.pop("requested", None)
    result.pop("num_paused_requests", None)
    result["compared"] = compared
    # a refusal that left the old revision serving changed nothing; anything else may have
    changed = not (result["outcome"] in (weight_swap.REJECTED, weight_swap.UNSUPPORTED, weight_swap.UNAUTHORIZED)
                   and result["old_weights_serving"] is not False)
    finish(result, changed)


if __name__ == "__main__":
    main()
