# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of the sglang_monitoring role: Prometheus scrape targets from the inventory, the role's configuration rules.

The logic lives in ``plugin_utils/monitoring_targets.py`` and ``plugin_utils/monitoring_config.py``; this file only
adapts it to Jinja. Documentation: one
``<filter name>.yml`` next to it per filter.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

# Helpers are imported inside the filters: Ansible imports every filter file of the collection to find any one
# filter, in each worker process, so an import up here would be paid by every task that uses any of them.


def sglang_monitoring_targets(cfg):
    """file_sd target lists per scrape job, with the inventory's problems (errors, warnings)."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.monitoring_targets import build_targets

    if not isinstance(cfg, dict):
        raise AnsibleFilterError("sglang_monitoring_targets: the input must be a dict, got %s" % type(cfg).__name__)
    return build_targets(cfg)


def sglang_monitoring_problems(settings, entry_point="main"):
    """Every broken configuration rule of an entry point (main or node_exporter), one message each."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.monitoring_config import (
        config_problems, node_exporter_problems)

    if not isinstance(settings, dict):
        raise AnsibleFilterError("sglang_monitoring_problems: the input must be a dict, got %s" % type(settings).__name__)
    checks = {"main": config_problems, "node_exporter": node_exporter_problems}
    if entry_point not in checks:
        raise AnsibleFilterError("sglang_monitoring_problems: the entry point must be main or node_exporter, got %r"
                                 % (entry_point,))
    try:
        return checks[entry_point](settings)
    except ValueError as exc:
        raise AnsibleFilterError("sglang_monitoring_problems: %s" % exc)


class FilterModule(object):
    """sglang_monitoring filters."""

    def filters(self):
        return {
            "sglang_monitoring_problems": sglang_monitoring_problems,
            "sglang_monitoring_targets": sglang_monitoring_targets,
        }
