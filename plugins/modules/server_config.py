#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: server_config
short_description: Check the sglang_server configuration and render the SGLang server for one host
version_added: 0.2.0
description:
  - The step of the C(llmserve.sglang.sglang_server) role that turns its variables into what the unit reads, as one
    task on the controller. The role's C(validate.yml) runs it before anything on the host changes, and C(state.yml)
    runs it again with the host's state (O(speculative_off)); the templates read the registered result.
  - The action reads the role's variables itself, by name, as the host sees them (the C(sglang_server_*) variables it
    needs, and C(__sglang_server_base_env), C(__sglang_server_config_path), C(__sglang_server_service_spec) and
    C(__sglang_server_ranges) of the role's C(vars/main.yml)); O(variables) may stand in for any of them.
  - "It checks, every broken rule at once: the shared SGLang rules (as P(llmserve.sglang.sglang_validate#filter)),
    the service account, group, unit name and directories (as P(llmserve.sglang.sglang_service_problems#filter)),
    the install settings, the ranges of the numeric variables (as P(llmserve.sglang.range_problems#filter)), the
    speculative check settings (as P(llmserve.sglang.sglang_spec_problems#filter)), where the deployment state and
    the compile caches may live, and for a node of a multi-node server (C(sglang_server_node_group)) its whole group
    (as P(llmserve.sglang.sglang_node_group_check#filter), from each node's C(__sglang_server_node_vars))."
  - Any broken rule fails the task with C(problems) (see RETURN), each naming its variable; the host is not contacted.
  - Otherwise it returns the rendered server (as P(llmserve.sglang.sglang_render#filter), without speculative
    decoding when O(speculative_off)) with this node's place in its multi-node group, and RV(addresses), where the
    server is reached (as P(llmserve.sglang.sglang_server_addresses#filter), from the same variables, the host's
    C(ansible_facts) as they stand, and its C(ansible_host) read from C(hostvars), so only where the inventory sets
    one). The role publishes it as C(sglang_server_addresses).
  - The result holds the API keys and the HF token, so it is never shown (as with C(no_log)); a failure is, and its
    messages never show a secret's value.
author: llmserve developers (@llmserve)
extends_documentation_fragment: [ansible.builtin.action_common_attributes, llmserve.sglang.attributes,
                                 llmserve.sglang.attributes.controller_action, llmserve.sglang.role_action]
options:
  speculative_off:
    description:
      - Render the server without speculative decoding (C(sglang_server_speculative) and the C(speculative_*) flags of
        C(sglang_server_args) left out), as the role does while the host keeps a speculative configuration off for a
        low acceptance length. The rules are checked on the configuration as given.
    type: bool
    default: false
seealso:
  - {plugin: llmserve.sglang.sglang_render, plugin_type: filter}
  - {plugin: llmserve.sglang.sglang_validate, plugin_type: filter}
  - {plugin: llmserve.sglang.sglang_server_addresses, plugin_type: filter}
notes:
  - The role registers the result as C(__sglang_server_rendered); C(templates/sglang.service.j2) reads RV(argv) and
    RV(env), C(config.yaml.j2) RV(config), C(sglang.env.j2) RV(env_file); it publishes RV(addresses) as
    C(sglang_server_addresses), whose C(api.probe_url) its own probes use.
"""

EXAMPLES = r"""
- name: Check and render the SGLang server configuration (in the sglang_server role)
  llmserve.sglang.server_config:
  register: __sglang_server_rendered

- name: Render it again without speculative decoding while the host keeps it off
  llmserve.sglang.server_config:
    speculative_off: "{{ __sglang_server_spec_disabled is mapping }}"
  register: __sglang_server_rendered

- name: Check a configuration outside the role, with some variables given here
  llmserve.sglang.server_config:
    variables:
      sglang_server_model_path: /models/Qwen3-8B
      sglang_server_tp_size: 1
  register: server
"""

RETURN = r"""
extends_documentation_fragment: [llmserve.sglang.role_action]
argv:
  description: The SGLang command line after C(-m sglang.launch_server), one option followed by its values.
  returned: success
  type: list
  elements: str
  sample: ["--model-path", "/models/m", "--host", "127.0.0.1", "--port", "30000", "--tp-size", "1"]
config:
  description: The C(--config) YAML file's content (the API keys), dash-form keys.
  returned: success
  type: dict
  sample: {"api-key": "..."}
env:
  description: The unit's environment (the role's own, then C(sglang_server_env), C(CUDA_VISIBLE_DEVICES), ...).
  returned: success
  type: dict
  sample: {"CUDA_VISIBLE_DEVICES": "0,1,2,3", "HOME": "/var/lib/sglang"}
env_file:
  description: The secret environment for the 0600 environment file (C(HF_TOKEN)).
  returned: success
  type: dict
  sample: {"HF_TOKEN": "..."}
p2p:
  description: The resolved P2P mode.
  returned: success
  type: str
  sample: "on"
remarks:
  description: Settings that are legal but probably not what was meant (C(sglang_render)'s C(warnings)).
  returned: success
  type: list
  elements: str
  sample: []
expected_server_info:
  description: The speculative fields C(/server_info) must report.
  returned: success
  type: dict
  sample: {"speculative_algorithm": "EAGLE", "speculative_num_steps": 3}
requested_backend:
  description: The attention backends and page size as configured, None where SGLang chooses.
  returned: success
  type: dict
  sample: {"attention_backend": null, "page_size": null}
cfg:
  description: The configuration the server was rendered from (what C(sglang_validate) checks), without speculative
    decoding when O(speculative_off).
  returned: success
  type: dict
speculative_off:
  description: Whether the server was rendered without speculative decoding.
  returned: success
  type: bool
  sample: false
multinode:
  description: This node's plan in its multi-node group (C(nnodes), C(node_rank), C(dist_init_addr), C(node_ifname),
    C(node_firewall)); empty for a single-host server.
  returned: success
  type: dict
  sample: {"nnodes": 2, "node_rank": 1, "dist_init_addr": "10.20.0.2:25000", "node_ifname": "ens6f0np0"}
group_rank0:
  description: The inventory name of rank 0 of this node's group; this host's own name for a single-host server.
  returned: success
  type: str
  sample: gpu-node-02
node:
  description: What the role publishes as C(sglang_server_node).
  returned: success
  type: dict
  contains:
    group:
      description: C(sglang_server_node_group).
      type: str
    rank:
      description: This node's rank (0 for a single-host server).
      type: int
    nnodes:
      description: The number of nodes (1 for a single-host server).
      type: int
addresses:
  description:
    - Where the server is reached, as P(llmserve.sglang.sglang_server_addresses#filter) returns it for this host
      (C(plugins/plugin_utils/addresses.py)). Its parts are null where they cannot be known and RV(addresses.problems)
      says why; the action does not fail for them (a server bound to C(0.0.0.0) without C(ansible_host) and without
      network facts has no address for other hosts yet, but C(api.probe_url) still holds).
  returned: success
  type: dict
  contains:
    name:
      description: The inventory name.
      type: str
    needs_facts:
      description: An address is read from the host's network facts (gathered or not).
      type: bool
    api:
      description: The API listener; C(url) is where other hosts reach it, C(probe_url) where the host itself probes
        it (the role's readiness, smoke and metrics requests).
      type: dict
      sample: {"bind": "0.0.0.0", "wildcard": true, "address": "10.20.0.2", "port": 30000, "scheme": "http",
               "url": "http://10.20.0.2:30000", "probe_url": "http://127.0.0.1:30000",
               "source": "ansible_facts.default_ipv4.address", "needs_facts": true}
    metrics:
      description: C(/metrics), which SGLang serves on the API port; its URLs are null when it serves none.
      type: dict
      sample: {"enabled": false, "address": "10.20.0.2", "port": 30000, "url": null, "probe_url": null}
    rendezvous:
      description: The multi-node rendezvous this node offers as rank 0; null for a single-host server.
      type: dict
      sample: {"host": "10.20.0.2", "port": 25000, "address": "10.20.0.2:25000", "source": "inventory",
               "needs_facts": false}
    problems:
      description: Why a part is null, each message starting with the variable.
      type: list
      elements: str
"""
