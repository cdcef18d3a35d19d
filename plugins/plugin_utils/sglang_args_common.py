# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What every rule family of ``sglang_args`` shares: which role variable owns which SGLang flag, the error type
and the small helpers that read and describe values. See ``sglang_args`` for the public entry points."""

from __future__ import annotations

import difflib
import json

from ansible_collections.llmserve.sglang.plugins.plugin_utils.values import as_int
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_flags import FLAGS

DEFAULT_PREFIX = "sglang_server_"

# sglang_server_speculative keys -> SGLang dest, in rendering order.
SPECULATIVE_KEYS = (
    ("algorithm", "speculative_algorithm"),
    ("num_steps", "speculative_num_steps"),
    ("eagle_topk", "speculative_eagle_topk"),
    ("num_draft_tokens", "speculative_num_draft_tokens"),
    ("draft_model_path", "speculative_draft_model_path"),
)

# SGLang dest -> role variable (without prefix) that owns it; such flags are refused in ``args``.
DEDICATED_FLAGS = {
    "model_path": "model_path",
    "served_model_name": "served_model_name",
    "host": "host",
    "port": "port",
    "tp_size": "tp_size",
    "api_key": "api_key",
}
DEDICATED_FLAGS.update((dest, "speculative." + key) for key, dest in SPECULATIVE_KEYS)

# Multi-node flags: computed from the inventory's node group (cfg keys of the same name); dest -> the role
# variable that decides it. Refused in ``args``.
MULTINODE_FLAGS = {
    "nnodes": "node_group",
    "node_rank": "node_rank",
    "dist_init_addr": "dist_init_host",
}
# What the multi-node settings are made of (for the messages).
_MULTINODE_HINT = ("the role derives --nnodes, --node-rank and --dist-init-addr from the inventory: put the hosts "
                   "in one group, set sglang_server_node_group to its name on them and, where needed, "
                   "sglang_server_node_rank, sglang_server_dist_init_host and sglang_server_dist_init_port")

# Flags the role manages itself and that make no sense in ``args``.
MANAGED_FLAGS = {
    "config": "the role writes its own --config file (it carries the API key); put the settings in this dict instead",
}

# Secrets: never on the command line, written to the --config YAML (dash-form keys) instead.
SECRET_FLAGS = ("api_key", "admin_api_key", "ssl_keyfile_password")

_UNSET = object()

# SGLang turns each --config key into '--key' followed by the value as a separate argument.
_DASH_SECRET = ("must not start with '-' (value not shown): SGLang passes the --config file's values to its parser as "
                "separate arguments, which reads such a value as an option and does not start")


class SGLangConfigError(ValueError):
    """Raised by ``render_server_argv`` when the configuration does not validate."""

    def __init__(self, errors):
        self.errors = list(errors)
        super(SGLangConfigError, self).__init__(
            "invalid SGLang server configuration:\n- " + "\n- ".join(self.errors)
        )


def normalise_flag_name(name):
    """``--tp-size``, ``tp-size`` and ``tp_size`` all become ``tp_size``."""
    return str(name).strip().lstrip("-").replace("-", "_")


def option_for(dest):
    """Main command-line spelling of a dest (``tp_size`` -> ``--tp-size``)."""
    return FLAGS[dest]["option"]


def _suggest(word, candidates, n=3):
    matches = difflib.get_close_matches(word, list(candidates), n=n, cutoff=0.75)
    if not matches:
        return ""
    return " (did you mean %s?)" % " or ".join(matches)


def _as_int(value):
    """``value`` as an int, or ``_UNSET`` when it is not an integer (booleans are not; 4.0 is most likely a typo)."""
    return as_int(value, _UNSET)


def _as_float(value):
    if isinstance(value, bool):
        return _UNSET
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return _UNSET
    return _UNSET


def _describe(value):
    if isinstance(value, bool):
        return "boolean %s" % ("true" if value else "false")
    if isinstance(value, str):
        return "%r" % (value,)
    if isinstance(value, dict):
        return "a dict"
    if isinstance(value, (list, tuple)):
        return "a list"
    return "%s %r" % (type(value).__name__, value)


def _json_text(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
