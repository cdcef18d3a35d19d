# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What every rule area of ``sglang_args`` shares: which role variable owns which SGLang flag, the error type, the
normalised configuration the rules read and fill (``ServerConfig``) and the small helpers that read and describe
values. See ``sglang_args`` for the public entry points and ``rules`` for the engine."""

from __future__ import annotations

import difflib
import json

from ansible_collections.llmserve.sglang.plugins.plugin_utils.values import as_int, blank
from ansible_collections.llmserve.sglang.plugins.plugin_utils.rules import UNSET, as_float, describe
from ansible_collections.llmserve.sglang.plugins.plugin_utils.systemd_unit import control_problem, path_problem
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_flags import FLAGS, SGLANG_VERSION

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

_UNSET = UNSET

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


_as_float = as_float
_describe = describe


def _json_text(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def no_control(cfg, problems, variable, text, secret=False):
    """Control characters end a unit line (NUL, line breaks) or split a value; none is allowed."""
    return problems.check(variable, control_problem(text, secret=secret), "remove it; values must be plain text")


def path_ok(cfg, problems, variable, text):
    """A path for the unit (``systemd_unit.path_problem``)."""
    return problems.check(variable, path_problem(text))


class ServerConfig(object):
    """The normalised configuration the rules of ``sglang_args`` read and fill, one per check.

    ``raw`` is the role's variables as given (``{}`` when they are not a dict); the rules store what they normalised
    in ``top`` (role variable -> value, None = unset), ``spec`` (speculative key -> value), ``args`` (dest -> value),
    ``arg_keys`` (dest -> key as written), ``rendered`` (dest -> argv tokens after the option, None = bare switch),
    ``options`` (name -> option, for flags the table does not know), ``env``, ``p2p`` and ``loader_extra``.
    """

    def __init__(self, raw, prefix):
        self.prefix = prefix
        self.raw = raw if isinstance(raw, dict) else {}
        self.top = {}
        self.spec = {}
        self.args = {}
        self.arg_keys = {}
        self.rendered = {}
        self.options = {}
        version = self.raw.get("version")
        version = "" if blank(version) else str(version).strip()
        # None: the table is the pinned release's (or no version was given), so it is the authority
        self.other_version = version if version and version.split("+", maxsplit=1)[0] != SGLANG_VERSION else None
        self.env = {}
        self.p2p = "on"
        self.loader_extra = {}

    def var(self, name):
        return self.prefix + name

    def arg_var(self, dest):
        return "%sargs.%s" % (self.prefix, self.arg_keys.get(dest, dest))

    def value(self, dest, default=None):
        """Effective normalised value of a SGLang dest, from a dedicated variable or ``args``."""
        if dest in MULTINODE_FLAGS:
            got = self.top.get(dest)
            return default if got is None else got
        owner = DEDICATED_FLAGS.get(dest)
        if owner is not None:
            if owner.startswith("speculative."):
                got = self.spec.get(owner.split(".", 1)[1])
            else:
                got = self.top.get(owner)
            return default if got is None else got
        got = self.args.get(dest)
        return default if got is None else got

    def where(self, dest):
        if dest in MULTINODE_FLAGS:
            return self.var(MULTINODE_FLAGS[dest])
        owner = DEDICATED_FLAGS.get(dest)
        if owner is not None:
            return self.var(owner)
        if dest in self.args:
            return self.arg_var(dest)
        return "%sargs.%s" % (self.prefix, dest)
