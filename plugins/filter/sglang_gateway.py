# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters that check and render the SGLang model gateway (smg) configuration of the sglang_gateway role.

The logic lives in ``plugin_utils/gateway_config.py``; this file only adapts it to Jinja. Documentation: one
``<filter name>.yml`` next to it per filter.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_native

# Helpers are imported inside the filters: Ansible imports every filter file of the collection to find any one
# filter, in each worker process, so an import up here would be paid by every task that uses any of them.


def _check_input(name, cfg):
    if not isinstance(cfg, dict):
        raise AnsibleFilterError("%s: the input must be a dict of role variables, got %s" % (name, type(cfg).__name__))


def sglang_gateway_validate(cfg):
    """Return the list of configuration errors (empty when valid)."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.gateway_config import validate_gateway_config

    _check_input("sglang_gateway_validate", cfg)
    return validate_gateway_config(cfg)


def sglang_gateway_render(cfg):
    """Return argv/env/env_file/workers/probe URLs/warnings for the unit; fail on an invalid configuration."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.gateway_config import (
        GatewayConfigError,
        render_gateway,
    )

    _check_input("sglang_gateway_render", cfg)
    try:
        return render_gateway(cfg)
    except GatewayConfigError as exc:
        raise AnsibleFilterError(to_native(exc))


def sglang_gateway_workers_check(listed, expected_urls):
    """Compare the ``workers`` of smg's ``GET /workers`` with the configured URLs."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.gateway_config import workers_check

    if not isinstance(expected_urls, (list, tuple)):
        raise AnsibleFilterError("sglang_gateway_workers_check: the expected URLs must be a list, got %s"
                                 % type(expected_urls).__name__)
    return workers_check(listed, list(expected_urls))


class FilterModule(object):
    """SGLang model gateway filters."""

    def filters(self):
        return {
            "sglang_gateway_validate": sglang_gateway_validate,
            "sglang_gateway_render": sglang_gateway_render,
            "sglang_gateway_workers_check": sglang_gateway_workers_check,
        }
