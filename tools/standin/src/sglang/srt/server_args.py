# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Stand-in for ``sglang.srt.server_args`` (llmserve test stand-in, NOT SGLang).

The argparse parser is rebuilt from SGLang 0.5.23's own argparse actions (``standin_parser_actions``,
dumped from the real parser; never from the collection's flag table, which it is there to check), so
the same command lines parse, abbreviate and fail (exit 2) as with the real parser.  The public names a
parser-check script uses exist with the same behaviour:

* ``ServerArgs.add_cli_args(parser)`` - add every SGLang option to an ``argparse`` parser;
* ``ServerArgs.from_cli_args(namespace)``;
* ``prepare_server_args(argv)`` - ``--config`` merging, parsing, log-level check;
* ``ServerArgs.resolve_once()`` - a small part of SGLang's resolution (speculative decoding
  defaults, ``NEXTN`` -> ``EAGLE``, served model name).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys

from sglang.srt import standin_yaml
from sglang.srt.standin_parser_actions import ACTIONS

# names SGLang 0.5.23 resolves (NEXTN is rewritten to EAGLE)
SPECULATIVE_ALGORITHMS = ("EAGLE", "EAGLE3", "STANDALONE", "NGRAM", "DFLASH", "DSPARK", "UNO", "FROZEN_KV_MTP")
EAGLE_FAMILY = ("EAGLE", "EAGLE3", "STANDALONE")
# the union of the candidate steps of SGLang 0.5.23's default adaptive config
ADAPTIVE_STEPS = (0, 1, 3, 5, 7)

_HUMAN = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kKMGT]i?)?\s*$")
_HUMAN_FACTORS = {"k": 10 ** 3, "K": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12,
                  "ki": 2 ** 10, "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40}


def human_readable_int(text):
    """``256k`` -> 256000 (SI), ``256Ki`` -> 262144 (binary), ``4096`` -> 4096."""
    match = _HUMAN.match(str(text))
    if not match:
        raise ValueError("not a number: %r" % text)
    number, suffix = match.groups()
    value = float(number) * (_HUMAN_FACTORS[suffix] if suffix else 1)
    if value != int(value):
        raise ValueError("not a whole number: %r" % text)
    return int(value)


def nullable_str(text):
    if not text or text in ("None", "none", "null"):
        return None
    return text


def json_text(text):
    return json.loads(text)


def json_list(text):
    value = json.loads(text)
    if not isinstance(value, list):
        raise ValueError("expected a JSON list")
    return value


def cuda_graph_config(text):
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError("expected a JSON object")
    return value


def cuda_graph_backend(text):
    return str(text)


# argparse type names of SGLang's parser -> the stand-in's own converters.
_TYPES = {
    "str": str,
    "int": int,
    "float": float,
    "human_readable_int": human_readable_int,
    "nullable_str": nullable_str,
    "loads": json_text,
    "json_list_type": json_list,
    "parse_cuda_graph_config_arg": cuda_graph_config,
    "parse_cuda_graph_backend_arg": cuda_graph_backend,
}
# SGLang's own action classes -> what argparse does for them here (the deprecated ones also print a warning there).
_ACTIONS = {
    "_StoreAction": "store",
    "LoRAPathAction": "store",
    "DeprecatedStoreConstAction": "store",
    "_StoreTrueAction": "store_true",
    "DeprecatedStoreTrueAction": "store_true",
    "BooleanOptionalAction": argparse.BooleanOptionalAction,
}

# dest -> default, for every action (several options may share a dest; the first one's default counts).
DEFAULTS = {}
for _action in ACTIONS:
    DEFAULTS.setdefault(_action[1], _action[6])
del _action


def _add_action(parser, options, dest, action, typ, nargs, const, default, choices, required):
    if action not in _ACTIONS:
        raise ValueError("stand-in: SGLang's argparse action %s (%s) is not imitated" % (action, options[0]))
    kwargs = {"dest": dest, "default": default, "action": _ACTIONS[action]}
    if required:
        kwargs["required"] = True
    if action == "BooleanOptionalAction":
        options = [o for o in options if not o.startswith("--no-")]  # argparse adds the --no- form itself
    elif _ACTIONS[action] == "store":
        kwargs["type"] = _TYPES.get(typ or "str", str)
        if choices is not None:
            kwargs["choices"] = list(choices)
        if nargs is not None:
            kwargs["nargs"] = nargs
        if nargs == "?":
            kwargs["const"] = const
    parser.add_argument(*options, **kwargs)


class ServerArgs(object):
    """Parsed (and, after ``resolve_once``, resolved) server arguments."""

    def __init__(self, **kwargs):
        for dest, default in DEFAULTS.items():
            setattr(self, dest, default)
        for key, value in kwargs.items():
            setattr(self, key, value)
        self.launch_command = kwargs.get("launch_command")
        self._resolved = False

    @staticmethod
    def add_cli_args(parser):
        for action in ACTIONS:
            _add_action(parser, *action)

    @classmethod
    def from_cli_args(cls, args):
        return cls(**{dest: getattr(args, dest) for dest in DEFAULTS if hasattr(args, dest)})

    def url(self):
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        return "http://%s:%s" % (host, self.port)

    def resolve_once(self):
        """A few of SGLang's resolution rules; raises ValueError/AssertionError like SGLang does."""
        if self._resolved:
            return self
        self._resolved = True
        if self.served_model_name is None:
            self.served_model_name = self.model_path
        if self.tokenizer_path is None:
            self.tokenizer_path = self.model_path
        algo = self.speculative_algorithm
        if algo is not None:
            algo = str(algo).upper()
            if algo == "NEXTN":
                algo = "EAGLE"
            if algo not in SPECULATIVE_ALGORITHMS:
                raise ValueError("Unknown speculative algorithm name: %s" % self.speculative_algorithm)
            self.speculative_algorithm = algo
            if self.max_running_requests is None:
                self.max_running_requests = 48
                _log("Max running requests is reset to 48 for speculative decoding (stand-in).")
            if self.speculative_adaptive:
                self._resolve_adaptive(algo)
            if algo in EAGLE_FAMILY:
                if self.speculative_num_steps is None:
                    assert self.speculative_eagle_topk is None and self.speculative_num_draft_tokens is None
                    self.speculative_num_steps, self.speculative_eagle_topk, self.speculative_num_draft_tokens = 3, 1, 4
                if self.speculative_eagle_topk == 1 and self.speculative_num_draft_tokens != self.speculative_num_steps + 1:
                    _log("speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when "
                         "speculative_eagle_topk == 1 (stand-in).")
                    self.speculative_num_draft_tokens = self.speculative_num_steps + 1
            elif algo == "NGRAM":
                self.speculative_eagle_topk = self.speculative_ngram_max_bfs_breadth
                if self.speculative_num_draft_tokens is None:
                    self.speculative_num_draft_tokens = 12
                self.speculative_num_steps = self.speculative_num_draft_tokens // max(1, self.speculative_eagle_topk)
        if self.served_model_name and ":" in str(self.served_model_name):
            raise AssertionError("served_model_name must not contain a colon (':'), got %r" % self.served_model_name)
        if self.api_key and (self.tokenizer_worker_num or 1) > 1:
            raise AssertionError("--api-key is not supported with --tokenizer-worker-num > 1")
        return self

    def _resolve_adaptive(self, algo):
        """SGLang 0.5.23's --speculative-adaptive: turned off (a warning) where it cannot run, else topk 1, the step
        count one of the default candidate steps (3 when unset) and num_steps + 1 draft tokens."""
        reason = None
        if algo not in ("EAGLE", "EAGLE3"):
            reason = "speculative_algorithm=%s (only EAGLE/EAGLE3 are supported)" % algo
        elif self.speculative_eagle_topk not in (None, 1):
            reason = "speculative_eagle_topk=%s (only topk=1 is supported)" % self.speculative_eagle_topk
        elif (self.attn_dp_size or 1) > 1 or self.enable_dp_attention:
            reason = "attention DP is not supported"
        elif self.enable_multi_layer_eagle or self.enable_two_batch_overlap or self.enable_pdmux:
            reason = "enable_multi_layer_eagle, enable_two_batch_overlap and enable_pdmux are not supported"
        if reason:
            _log("speculative_adaptive disabled: %s. Falling back to static speculative params." % reason)
            self.speculative_adaptive = False
            return
        if self.speculative_eagle_topk is None:
            self.speculative_eagle_topk = 1
        if self.speculative_num_steps is None:
            self.speculative_num_steps = ADAPTIVE_STEPS[len(ADAPTIVE_STEPS) // 2]
        if self.speculative_adaptive_config is None and self.speculative_num_steps not in ADAPTIVE_STEPS:
            raise ValueError("--speculative-num-steps=%s is not in the adaptive config candidate_steps %s. "
                             "Pass one of those values." % (self.speculative_num_steps, list(ADAPTIVE_STEPS)))
        self.speculative_num_draft_tokens = self.speculative_num_steps + 1

    def resolved_dict(self):
        return {dest: getattr(self, dest) for dest in DEFAULTS}

    def model_overrides(self):
        """``--json-model-override-args`` as a dict (the stand-in reads its own ``standin_*`` keys)."""
        raw = self.json_model_override_args or "{}"
        try:
            value = json.loads(raw)
        except ValueError as exc:
            raise ValueError("--json-model-override-args is not valid JSON: %s" % exc)
        if not isinstance(value, dict):
            raise ValueError("--json-model-override-args must be a JSON object")
        return value


def _log(message):
    sys.stderr.write("[stand-in] %s\n" % message)
    sys.stderr.flush()


def _find_config(argv):
    for i, arg in enumerate(argv):
        if arg == "--config":
            if i + 1 >= len(argv):
                return None, argv
            return argv[i + 1], argv[:i] + argv[i + 2:]
        if arg.startswith("--config="):
            return arg.split("=", 1)[1], argv[:i] + argv[i + 1:]
    return None, argv


def config_to_argv(path):
    """A ``--config`` YAML file as command-line arguments (keys verbatim as ``--key``)."""
    if not path.lower().endswith((".yaml", ".yml")):
        raise ValueError("Config file must be YAML (.yaml or .yml), got %s" % path)
    if not os.path.isfile(path):
        raise ValueError("Config file not found: %s" % path)
    with open(path) as handle:
        data = standin_yaml.load(handle.read())
    if not isinstance(data, dict):
        raise ValueError("Config file %s must hold a mapping of option names to values" % path)
    argv = []
    for key, value in data.items():
        flag = "--%s" % key
        if isinstance(value, bool):
            if value:
                argv.append(flag)
        elif value is None:
            continue
        elif isinstance(value, list):
            argv.append(flag)
            argv.extend(str(v) for v in value)
        elif isinstance(value, dict):
            raise ValueError("Config key %r holds a mapping; give a JSON string instead" % key)
        else:
            argv.extend([flag, str(value)])
    return argv


def prepare_server_args(argv):
    """Parse ``argv`` (without the program name) into :class:`ServerArgs`; argparse exits 2 on errors."""
    argv = list(argv)
    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    config_path, rest = _find_config(argv)
    if config_path is not None:
        try:
            argv = config_to_argv(config_path) + rest
        except (ValueError, OSError) as exc:
            parser.error(str(exc))
    raw = parser.parse_args(argv)
    getattr(logging, str(raw.log_level).upper())  # SGLang raises AttributeError for an unknown level
    server_args = ServerArgs.from_cli_args(raw)
    server_args.config = config_path
    server_args.launch_command = " ".join([os.path.basename(sys.argv[0] or "sglang")] + list(sys.argv[1:]))
    return server_args
