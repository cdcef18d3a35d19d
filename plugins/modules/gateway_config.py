#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: gateway_config
short_description: Check the sglang_gateway configuration and render the SGLang model gateway for one host
version_added: 0.2.0
description:
  - The step of the C(llmserve.sglang.sglang_gateway) role that turns its variables and the workers of its inventory
    group into what the unit reads, as one task on the controller. The role's C(validate.yml) runs it before anything
    on any host changes; the templates read the registered result.
  - The action reads the role's variables itself, by name, as the host sees them (the C(sglang_gateway_*) variables it
    needs, and C(__sglang_gateway_service_spec) and C(__sglang_gateway_ranges) of the role's C(vars/main.yml));
    O(variables) may stand in for any of them.
  - The workers are the hosts of the group C(sglang_gateway_workers_group) (from C(groups)), each with its
    C(sglang_server_host), C(sglang_server_port), C(sglang_server_args), C(sglang_server_api_key), C(ansible_host) and
    default addresses from its gathered facts (from C(hostvars); the sglang_server role's defaults apply where the
    inventory sets none). Of a multi-node server (C(sglang_server_node_group)) only rank 0 is a worker, which alone
    serves the API; the rank is C(sglang_server_node_rank), else the host's position in its group sorted by name.
  - "It checks, every broken rule at once: the gateway's rules (as P(llmserve.sglang.sglang_gateway_validate#filter):
    listeners, routing, health checks, retries, keys, TLS files, C(sglang_gateway_args), and each worker's address),
    the service account, group, unit name and directories (as P(llmserve.sglang.sglang_service_problems#filter)), the
    install and version settings, and the ranges of the numeric variables
    (as P(llmserve.sglang.range_problems#filter))."
  - Any broken rule fails the task with C(problems) (see RETURN), each naming its variable; no host is contacted.
  - Otherwise it returns the rendered gateway (as P(llmserve.sglang.sglang_gateway_render#filter)).
  - The result holds the workers' and the admin API key, so it is never shown (as with C(no_log)); a failure is, and
    its messages never show a secret's value.
author: llmserve developers (@llmserve)
extends_documentation_fragment: [ansible.builtin.action_common_attributes, llmserve.sglang.attributes,
                                 llmserve.sglang.attributes.controller_action, llmserve.sglang.role_action]
seealso:
  - module: llmserve.sglang.gateway_worker
  - {plugin: llmserve.sglang.sglang_gateway_validate, plugin_type: filter}
  - {plugin: llmserve.sglang.sglang_gateway_render, plugin_type: filter}
notes:
  - The role registers the result as C(__sglang_gateway_rendered); C(templates/sglang-gateway.service.j2) reads
    RV(argv), RV(env) and RV(privileged_port), C(sglang-gateway.env.j2) RV(env_file); it publishes RV(workers) as
    C(sglang_gateway_workers) and RV(base_url) as C(sglang_gateway_url), and shows RV(remarks).
"""

EXAMPLES = r"""
- name: Check and render the gateway configuration (in the sglang_gateway role)
  llmserve.sglang.gateway_config:
  register: __sglang_gateway_rendered

- name: Check a configuration outside the role, with some variables given here
  llmserve.sglang.gateway_config:
    variables:
      sglang_gateway_workers_group: sglang_servers_eu
      sglang_gateway_policy: round_robin
  register: gateway
"""

RETURN = r"""
extends_documentation_fragment: [llmserve.sglang.role_action]
argv:
  description: The smg command line after the launcher, one option followed by its values; no secret.
  returned: success
  type: list
  elements: str
  sample: ["--host", "0.0.0.0", "--port", "8000", "--worker-urls", "http://10.0.0.11:30000", "--policy", "cache_aware"]
env:
  description: The unit's environment.
  returned: success
  type: dict
  sample: {"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}
env_file:
  description: The secret environment for the root-only environment file (the admin key, and the workers' API key
    where there is one), which the launcher reads and removes before smg starts.
  returned: success
  type: dict
  sample: {"LLMSERVE_SMG_ADMIN_API_KEY": "...", "LLMSERVE_SMG_API_KEY": "..."}
workers:
  description: The workers the gateway routes to, in inventory order (of a multi-node server rank 0 only).
  returned: success
  type: list
  elements: dict
  sample: [{"name": "gpu-node-01", "url": "http://10.0.0.11:30000"}]
worker_urls:
  description: The workers' URLs, as C(--worker-urls) gives them.
  returned: success
  type: list
  elements: str
  sample: ["http://10.0.0.11:30000"]
base_url:
  description: Where the gateway host reaches the gateway (a wildcard bind on loopback).
  returned: success
  type: str
  sample: "http://127.0.0.1:8000"
readiness_url:
  description: The gateway's C(/readiness) at RV(base_url).
  returned: success
  type: str
  sample: "http://127.0.0.1:8000/readiness"
workers_url:
  description: The gateway's control-plane C(/workers) at RV(base_url).
  returned: success
  type: str
  sample: "http://127.0.0.1:8000/workers"
metrics_url:
  description: Where the gateway host reaches the Prometheus endpoint.
  returned: success
  type: str
  sample: "http://127.0.0.1:29000/metrics"
privileged_port:
  description: Whether a listener takes a port below 1024 (the unit then grants C(CAP_NET_BIND_SERVICE)).
  returned: success
  type: bool
  sample: false
authenticated_data_plane:
  description: Whether the gateway's clients must present the workers' API key.
  returned: success
  type: bool
  sample: true
gateway_warnings:
  description: Settings that are legal but probably not what was meant (C(sglang_gateway_render)'s C(warnings)); the
    role's report keeps them.
  returned: success
  type: list
  elements: str
  sample: ["sglang_gateway_metrics_host: the Prometheus endpoint on 0.0.0.0 answers anyone without authentication
           (worker URLs, request counts)"]
remarks:
  description: What the role shows, RV(gateway_warnings) and a note when C(sglang_gateway_version) is not the smg
    release the role was written for.
  returned: success
  type: list
  elements: str
  sample: []
"""
