#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: monitoring_config
short_description: Check the sglang_monitoring settings and build the Prometheus scrape targets from the inventory
author: llmserve developers (@llmserve)
version_added: 0.2.0
description:
  - The step of the C(llmserve.sglang.sglang_monitoring) role that turns its variables and the inventory into what
    Prometheus is given, as one task on the controller. The role's C(tasks/check.yml) runs it before anything on the
    Prometheus host changes; the target files are written from its result.
  - The action reads the role's variables itself, by name, as the host sees them (C(__sglang_monitoring_settings),
    which the role's C(vars/main.yml) assembles from the C(sglang_monitoring_*) variables, and for the targets
    C(sglang_monitoring_servers_group), C(sglang_monitoring_gateways_group), C(sglang_monitoring_node_exporters_group),
    C(__sglang_monitoring_jobs) and C(__sglang_monitoring_host_fields)), and the inventory (C(groups), and through
    C(hostvars) the variables of every host of group C(all) that C(__sglang_monitoring_host_fields) names, with the
    default addresses of its gathered facts); O(variables) may stand in for any of them.
  - "First the settings (as P(llmserve.sglang.sglang_monitoring_problems#filter)): the C(for:) durations and range
    windows against Prometheus' duration grammar, the thresholds, job, group, package and unit names, paths, the
    Prometheus mode and package version, the Alertmanagers, the CA file and the integer ranges. Where they hold, the
    scrape targets (as P(llmserve.sglang.sglang_monitoring_targets#filter)) of every SGLang server (rank 0 of a
    multi-node one), gateway and node exporter."
  - The first step with a broken rule fails the task, its message the list of every problem of that step, each naming
    its variable; nothing on any host is contacted.
  - No API key is read; SGLang 0.5.23 serves C(/metrics) without one even with C(--api-key).
extends_documentation_fragment: [ansible.builtin.action_common_attributes, llmserve.sglang.attributes,
                                 llmserve.sglang.attributes.controller_action, llmserve.sglang.role_action]
options:
  settings:
    description:
      - Check the settings (C(__sglang_monitoring_settings)). The role's entry point C(targets) leaves them to the
        entry point C(validate).
    type: bool
    default: true
  targets:
    description:
      - Build the scrape targets from the inventory, once the settings hold. The role builds them only where it writes
        the target files (C(sglang_monitoring_write_targets)), and not when the run selects its rule file alone
        (C(--tags sglang_monitoring_rules)).
    type: bool
    default: true
seealso:
  - {plugin: llmserve.sglang.sglang_monitoring_problems, plugin_type: filter}
  - {plugin: llmserve.sglang.sglang_monitoring_targets, plugin_type: filter}
notes:
  - The role registers the result as C(__sglang_monitoring_checked) and publishes RV(targets) as the fact
    C(sglang_monitoring_targets), which C(tasks/target_files.yml) writes one file per job from.
"""

EXAMPLES = r"""
- name: Check the settings and build the scrape targets (in the sglang_monitoring role)
  llmserve.sglang.monitoring_config:
  register: __sglang_monitoring_checked

- name: Check the settings only
  llmserve.sglang.monitoring_config:
    targets: false
  register: checked

- name: Build the targets of an inventory given here, outside the role
  llmserve.sglang.monitoring_config:
    settings: false
    variables:
      sglang_monitoring_servers_group: sglang_servers
      sglang_monitoring_gateways_group: sglang_gateways
      sglang_monitoring_node_exporters_group: sglang_node_exporters
      __sglang_monitoring_jobs: {sglang: sglang, gateway: sglang_gateway, node: node}
      __sglang_monitoring_host_fields: [ansible_host, sglang_server_host, sglang_server_port, sglang_server_metrics]
      inventory_hostname: prometheus-01
      groups: {all: [gpu-node-01, prometheus-01], sglang_servers: [gpu-node-01]}
      hostvars:
        gpu-node-01: {ansible_host: 10.0.0.1, sglang_server_host: 0.0.0.0, sglang_server_metrics: true}
        prometheus-01: {}
  register: checked
"""

RETURN = r"""
extends_documentation_fragment: [llmserve.sglang.role_action]
settings:
  description:
    - The settings as checked (C(__sglang_monitoring_settings)), the durations, windows, thresholds, names and paths
      the rule file and Prometheus' configuration are written with. Null where O(settings) is false.
  returned: success
  type: dict
  sample: {"for_durations": {"sglang_monitoring_worker_down_for": "2m"}, "prometheus": "existing"}
targets:
  description:
    - What the role publishes as C(sglang_monitoring_targets), as P(llmserve.sglang.sglang_monitoring_targets#filter)
      returns it. Null where O(targets) is false.
  returned: success
  type: dict
  contains:
    targets:
      description: Scrape job name to its file_sd list (C([{targets, labels}]), sorted).
      type: dict
      sample: {"sglang": [{"targets": ["10.0.0.1:30000"], "labels": {"host": "gpu-node-01", "rank": "0"}}]}
    errors:
      description: Always empty here (any error fails the task).
      type: list
      elements: str
    warnings:
      description: Remarks on the inventory, each naming its variable (the role shows them).
      type: list
      elements: str
    counts:
      description: C(servers), C(not_scraped), C(other_ranks), C(gateways), C(node_exporters).
      type: dict
      sample: {"servers": 2, "not_scraped": 0, "other_ranks": 1, "gateways": 1, "node_exporters": 3}
"""
