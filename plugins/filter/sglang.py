# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters that check and render an SGLang server configuration.

The logic lives in ``module_utils/sglang_args.py``; this file only adapts it to Jinja.
Documentation: ``sglang_validate.yml``, ``sglang_warnings.yml`` and ``sglang_render.yml`` next to it.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.llmserve.sglang.plugins.module_utils.sglang_args import (
    DEFAULT_PREFIX,
    SGLangConfigError,
    render_server_argv,
    server_config_warnings,
    validate_server_config,
)


def _check_input(name, cfg, prefix):
    if not isinstance(cfg, dict):
        raise AnsibleFilterError("%s: the input must be a dict of role variables, got %s" % (name, type(cfg).__name__))
    if not isinstance(prefix, str):
        raise AnsibleFilterError("%s: prefix must be a string, got %s" % (name, type(prefix).__name__))


def sglang_validate(cfg, prefix=DEFAULT_PREFIX):
    """Return the list of configuration errors (empty when valid)."""
    _check_input("sglang_validate", cfg, prefix)
    return validate_server_config(cfg, prefix=prefix)


def sglang_warnings(cfg, prefix=DEFAULT_PREFIX):
    """Return remarks about legal but surprising settings."""
    _check_input("sglang_warnings", cfg, prefix)
    return server_config_warnings(cfg, prefix=prefix)


def sglang_render(cfg, prefix=DEFAULT_PREFIX):
    """Return argv/config/env/env_file/p2p/warnings for the unit; fail on an invalid configuration."""
    _check_input("sglang_render", cfg, prefix)
    try:
        return render_server_argv(cfg, prefix=prefix)
    except SGLangConfigError as exc:
        raise AnsibleFilterError(to_native(exc))


class FilterModule(object):
    """SGLang server configuration filters."""

    def filters(self):
        return {
            "sglang_validate": sglang_validate,
            "sglang_warnings": sglang_warnings,
            "sglang_render": sglang_render,
        }
