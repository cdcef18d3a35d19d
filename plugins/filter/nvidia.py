# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Jinja filters for NVIDIA driver options; the logic lives in module_utils.nvidia_registry."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

# Helpers are imported inside the filters: Ansible imports every filter file of the collection to find any one
# filter, in each worker process, so an import up here would be paid by every task that uses any of them.


def _plain(value):
    """Turn Ansible's lazy/tagged containers into plain dicts (keys and values untouched)."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return dict(value)
    try:
        return dict(value)
    except (TypeError, ValueError):
        return value


def nvidia_modprobe_options(registry, params=None, module="nvidia"):
    """The ``options nvidia ...`` line for a modprobe.d file ('' when there is nothing to set)."""
    from ansible_collections.llmserve.sglang.plugins.module_utils.nvidia_registry import render_modprobe_options

    try:
        return render_modprobe_options(_plain(registry), _plain(params), module=module)
    except ValueError as exc:
        raise AnsibleFilterError("nvidia_modprobe_options: %s" % exc)


def nvidia_driver_param_errors(
    registry,
    params=None,
    registry_var="nvidia_driver_registry_dwords",
    params_var="nvidia_driver_module_params",
):
    """Every validation error of the registry dwords and standalone options, as a list of strings."""
    from ansible_collections.llmserve.sglang.plugins.module_utils.nvidia_registry import (
        validate_module_params,
        validate_registry_dwords,
    )

    registry = _plain(registry)
    params = _plain(params)
    errors = validate_registry_dwords(registry, registry_var)
    errors += validate_module_params(
        params, params_var, registry=registry if isinstance(registry, dict) else None, registry_var=registry_var
    )
    return errors


def nvidia_driver_compare(driver, registry=None, params=None):
    """Compare wanted options with ``ansible_facts['gpu_host']['nvidia_driver']``, key by key."""
    from ansible_collections.llmserve.sglang.plugins.module_utils.nvidia_registry import compare_with_driver_facts

    try:
        return compare_with_driver_facts(_plain(driver), _plain(registry), _plain(params))
    except ValueError as exc:
        raise AnsibleFilterError("nvidia_driver_compare: %s" % exc)


class FilterModule(object):
    """NVIDIA driver option filters."""

    def filters(self):
        return {
            "nvidia_modprobe_options": nvidia_modprobe_options,
            "nvidia_driver_param_errors": nvidia_driver_param_errors,
            "nvidia_driver_compare": nvidia_driver_compare,
        }
