# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The speculative decoding policy of the sglang_server role (plugin_utils/_policy().py)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_native

# Helpers are imported inside the filters: Ansible imports every filter file of the collection to find any one
# filter, in each worker process, so an import up here would be paid by every task that uses any of them.


def _policy():
    from ansible_collections.llmserve.sglang.plugins.plugin_utils import spec_policy

    return spec_policy


def sglang_spec_verdict(check, setting="auto", on_low="fail", speculative=None):
    try:
        return _policy().verdict(check, setting, on_low, speculative)
    except ValueError as exc:
        raise AnsibleFilterError("sglang_spec_verdict: %s" % to_native(exc))


def sglang_spec_problems(setting, prompts):
    return _policy().problems(setting, prompts)


def sglang_spec_backend(requested, server):
    return _policy().backend(requested, server)


def sglang_spec_fingerprint(speculative, args=None, model_path=None):
    return _policy().fingerprint(speculative, args, model_path)


def sglang_spec_off(cfg):
    if not isinstance(cfg, dict):
        raise AnsibleFilterError("sglang_spec_off: the input must be the role's configuration dict")
    return _policy().without_speculation(cfg)


class FilterModule(object):
    """Speculative decoding policy filters."""

    def filters(self):
        return {
            "sglang_spec_verdict": sglang_spec_verdict,
            "sglang_spec_backend": sglang_spec_backend,
            "sglang_spec_fingerprint": sglang_spec_fingerprint,
            "sglang_spec_off": sglang_spec_off,
            "sglang_spec_problems": sglang_spec_problems,
        }
