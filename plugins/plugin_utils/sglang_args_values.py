# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``sglang_args``: the values of ``sglang_server_args`` (and of the role variables that stand for one flag),
checked against the flag table of the pinned SGLang release: names, types, choices, ranges, secrets, and the
leniency for another installed SGLang version."""

from __future__ import annotations

import difflib
import json
import re

from ansible_collections.llmserve.sglang.plugins.plugin_utils.values import blank
from ansible_collections.llmserve.sglang.plugins.plugin_utils.systemd_unit import (
    control_problem,
    printable,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_flags import (
    FLAGS,
    REMOVED_FLAGS,
    SGLANG_VERSION,
    SPELLINGS,
    VALUE_HINTS,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args_common import (
    _DASH_SECRET,
    _MULTINODE_HINT,
    _UNSET,
    DEDICATED_FLAGS,
    MANAGED_FLAGS,
    MULTINODE_FLAGS,
    SECRET_FLAGS,
    _as_float,
    _as_int,
    _describe,
    _json_text,
    _suggest,
    no_control,
    normalise_flag_name,
    option_for,
)

# Integer flags that must be at least 1 (resp. 0) when given.
POSITIVE_INT_FLAGS = (
    "tp_size", "pp_size", "dp_size", "attn_dp_size", "attn_cp_size", "moe_dp_size", "dcp_size", "ep_size",
    "nnodes", "tokenizer_worker_num", "detokenizer_worker_num", "page_size", "max_running_requests",
    "gpu_id_step", "mamba_track_interval", "weight_loader_prefetch_num_threads",
    "speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens",
)
NON_NEGATIVE_INT_FLAGS = ("node_rank", "base_gpu_id", "mamba_cache_philox_rounds")

LOG_LEVELS = ("CRITICAL", "FATAL", "ERROR", "WARN", "WARNING", "INFO", "DEBUG", "NOTSET")

# All patterns are used with fullmatch: '$' would also match before a trailing newline.
_HUMAN_INT = re.compile(r"([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?")
# What argparse reads as a negative number (and so as a value, not an option) in a list of values.
_NEGATIVE_NUMBER = re.compile(r"-[0-9]+|-[0-9]*\.[0-9]+")


def dedicated_value(cfg, problems, dest, variable, raw, store, key=None):
    """A role variable that stands for one SGLang flag: its type, choices and range come from the flag table."""
    if raw is None:
        return
    token = _scalar(cfg, problems, dest, variable, raw)
    if token is not _UNSET:
        getattr(cfg, store)[key or dest] = token[1]


def check_args(cfg, problems):
    args = cfg.raw.get("args")
    if args is None or args == {}:
        return
    if not isinstance(args, dict):
        problems.add(cfg.var("args"), "must be a dict of SGLang flag names to values, got %s" % _describe(args),
                     "write e.g. {mem_fraction_static: 0.85, enable_metrics: true}")
        return
    for key, raw in args.items():
        variable = "%sargs.%s" % (cfg.prefix, printable(str(key)))
        if not isinstance(key, str) or not key.strip():
            problems.add(variable, "flag names must be non-empty strings")
            continue
        if control_problem(key):
            problems.add(variable, "the flag name %s" % control_problem(key))
            continue
        name = normalise_flag_name(key)
        dest = SPELLINGS.get(name)
        if dest is None:
            _unknown_flag(cfg, problems, variable, name, raw)
            continue
        if dest in cfg.arg_keys:
            problems.add(variable, "sets %s again (already given as %r)" % (option_for(dest), cfg.arg_keys[dest]),
                         "keep one spelling")
            continue
        cfg.arg_keys[dest] = key
        if dest in DEDICATED_FLAGS:
            owner = cfg.var(DEDICATED_FLAGS[dest])
            problems.add(variable, "duplicates %s, which is the only place to set %s" % (owner, option_for(dest)),
                         "move the value to %s" % owner)
            continue
        if dest in MANAGED_FLAGS:
            problems.add(variable, "cannot be set here", MANAGED_FLAGS[dest])
            continue
        if dest in MULTINODE_FLAGS:
            problems.add(variable, "cannot be set here: %s is owned by the role (multi-node servers)"
                         % option_for(dest), _MULTINODE_HINT)
            continue
        if dest in SECRET_FLAGS:
            _check_secret_arg(cfg, problems, dest, variable, raw)
            continue
        _check_arg_value(cfg, problems, dest, variable, raw)


def _check_secret_arg(cfg, problems, dest, variable, raw):
    """Secrets go to the --config file; their value is never repeated in a message."""
    if blank(raw):
        return
    if isinstance(raw, str) and control_problem(raw):
        problems.add(variable, control_problem(raw, secret=True), "strip the value (e.g. | trim)")
        return
    if not isinstance(raw, str) or re.search(r"\s", raw):
        problems.add(variable, "must be a string without whitespace or line breaks (value not shown)",
                     "quote it in YAML or load it from a vault")
        return
    if raw.startswith("-"):
        problems.add(variable, _DASH_SECRET)
        return
    cfg.args[dest] = raw
    cfg.rendered[dest] = [raw]


def _unknown_flag(cfg, problems, variable, name, raw):
    if cfg.other_version is not None:
        _unchecked_flag(cfg, problems, variable, name, raw)
        return
    if name in REMOVED_FLAGS:
        problems.add(variable, "is not accepted by SGLang %s" % SGLANG_VERSION, REMOVED_FLAGS[name])
        return
    if name.startswith("no_") and name[3:] in FLAGS and FLAGS[name[3:]]["kind"] == "bool":
        problems.add(variable, "is the negative spelling of %s" % option_for(name[3:]),
                     "write %s: false instead" % name[3:])
        return
    hint = _suggest(name, FLAGS)
    problems.add(variable, "is not a flag of SGLang %s%s" % (SGLANG_VERSION, hint),
                 None if hint else "see 'sglang serve --help' of that version for the flag names")


def _unchecked_flag(cfg, problems, variable, name, raw):
    """A flag the table does not know, with another SGLang version installed: passed on as written."""
    note = REMOVED_FLAGS.get(name)
    problems.warn(variable, "is not a flag of SGLang %s, whose table the collection has%s; it is passed on unchecked "
                  "and the parser of the installed SGLang %s decides before anything live changes"
                  % (SGLANG_VERSION, " (%s)" % note if note else "", cfg.other_version))
    if name in cfg.rendered:
        problems.add(variable, "sets --%s again" % name.replace("_", "-"), "keep one spelling")
        return
    if raw is None or raw is False:  # without the table a false value cannot be told from --no-x: left out
        return
    items = [] if raw is True else list(raw) if isinstance(raw, (list, tuple)) else [raw]
    tokens = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (str, int, float, dict, list)):
            problems.add(variable, "takes text, numbers or a JSON dict/list for a flag the collection does not know, "
                         "got %s" % _describe(item))
            return
        text = _json_text(item) if isinstance(item, (dict, list)) else str(item)
        if not no_control(cfg, problems, variable, text):
            return
        tokens.append(text)
    cfg.rendered[name] = tokens
    cfg.options[name] = "--" + name.replace("_", "-")


def _check_arg_value(cfg, problems, dest, variable, raw):
    flag = FLAGS[dest]
    kind = flag["kind"]
    if raw is None:
        return
    if kind in ("switch", "bool"):
        if not isinstance(raw, bool):
            problems.add(variable, "%s is a switch and takes true or false, got %s" % (flag["option"], _describe(raw)),
                         "write %s: true (false or null leaves it out)" % dest if kind == "switch"
                         else "write %s: true or false (null leaves SGLang's default)" % dest)
            return
        cfg.args[dest] = raw
        if kind == "switch":
            cfg.rendered[dest] = [] if raw else None
        else:
            cfg.rendered[dest] = [] if raw else False
        return
    if flag["nargs"] == "?" and isinstance(raw, bool):
        cfg.args[dest] = raw
        cfg.rendered[dest] = [] if raw else None
        return
    if kind == "list":
        items = list(raw) if isinstance(raw, (list, tuple)) else [raw]
        if not items and flag["nargs"] == "+":
            problems.add(variable, "%s needs at least one value" % flag["option"], "give a list or leave it out")
            return
        tokens, values = [], []
        for position, item in enumerate(items):
            token = _scalar(cfg, problems, dest, "%s[%d]" % (variable, position) if isinstance(raw, (list, tuple))
                            else variable, item, in_list=len(items) > 1)
            if token is _UNSET:
                return
            tokens.append(token[0])
            values.append(token[1])
        cfg.args[dest] = values
        cfg.rendered[dest] = tokens
        return
    token = _scalar(cfg, problems, dest, variable, raw)
    if token is _UNSET:
        return
    cfg.args[dest] = token[1]
    cfg.rendered[dest] = [token[0]]


def _scalar(cfg, problems, dest, variable, raw, in_list=False):
    """Check one value against the flag's type and choices: ``(argv text, normalised value)`` or ``_UNSET``.

    A single value that starts with '-' is rendered as ``--flag=value`` (argparse then never reads it as
    an option); in a list of two or more values only what argparse reads as a negative number may
    start with '-'.
    """
    flag = FLAGS[dest]
    typ = flag["type"]
    if isinstance(raw, str) and not no_control(cfg, problems, variable, raw):
        return _UNSET
    if isinstance(raw, bool):
        problems.add(variable, "%s takes a %s value, not %s" % (flag["option"], typ, _describe(raw)),
                     "give a value, or null to leave the flag out")
        return _UNSET
    if typ == "int":
        value = _as_int(raw)
        if value is _UNSET:
            problems.add(variable, "%s takes an integer, got %s" % (flag["option"], _describe(raw)))
            return _UNSET
        if not _int_range(cfg, problems, dest, variable, value):
            return _UNSET
        text = str(value)
    elif typ == "float":
        value = _as_float(raw)
        if value is _UNSET:
            problems.add(variable, "%s takes a number, got %s" % (flag["option"], _describe(raw)))
            return _UNSET
        if dest == "mem_fraction_static" and not 0 < value < 1:
            problems.add(variable, "must be between 0 and 1 (exclusive), got %s" % value,
                         "it is the fraction of GPU memory for weights and KV cache, e.g. 0.85")
            return _UNSET
        text = str(value)
    elif typ == "human_readable_int":
        value = _human_int(cfg, problems, variable, flag, raw)
        if value is _UNSET:
            return _UNSET
        text = str(raw).strip()
    elif typ in ("json", "json_list", "cuda_graph_config"):
        value = _json(cfg, problems, variable, flag, raw)
        if value is _UNSET:
            return _UNSET
        text = raw if isinstance(raw, str) else _json_text(raw)
    else:  # str, nullable_str, cuda_graph_backend
        if isinstance(raw, (dict, list, tuple)):
            text = _json_text(raw)
        elif isinstance(raw, (str, int, float)):
            text = str(raw)
        else:
            problems.add(variable, "%s takes a string, got %s" % (flag["option"], _describe(raw)))
            return _UNSET
        value = text
    if not no_control(cfg, problems, variable, text):
        return _UNSET
    if in_list and text.startswith("-") and not _NEGATIVE_NUMBER.fullmatch(text):
        problems.add(variable, "%s takes a list, and a list item starting with '-' is read as an option by SGLang's "
                     "parser, got %r" % (flag["option"], text), "give a single value or drop the '-'")
        return _UNSET
    if flag["choices"] is not None and value not in flag["choices"]:
        if cfg.other_version is None:
            _bad_choice(cfg, problems, dest, variable, raw, value)
            return _UNSET
        problems.warn(variable, "%r is not one of the choices of %s in SGLang %s; it is passed on and the parser of "
                      "the installed SGLang %s decides" % (raw, flag["option"], SGLANG_VERSION, cfg.other_version))
    if dest in ("log_level", "log_level_http") and text.upper() not in LOG_LEVELS:
        problems.add(variable, "must be a Python logging level name, got %r" % text,
                     "use one of %s" % ", ".join(n.lower() for n in LOG_LEVELS))
        return _UNSET
    return text, value


def _int_range(cfg, problems, dest, variable, value):
    if (dest == "port" or dest.endswith("_port")) and not 1 <= value <= 65535:
        problems.add(variable, "must be a TCP port number between 1 and 65535, got %d" % value)
        return False
    if dest in POSITIVE_INT_FLAGS and value < 1:
        problems.add(variable, "must be an integer >= 1, got %d" % value)
        return False
    if dest in NON_NEGATIVE_INT_FLAGS and value < 0:
        problems.add(variable, "must be an integer >= 0, got %d" % value)
        return False
    if dest == "mamba_max_states_per_path" and value != -1 and value < 1:
        problems.add(variable, "must be -1 (unlimited) or >= 1, got %d" % value)
        return False
    if dest == "chunked_prefill_size" and value != -1 and value < 1:
        problems.add(variable, "must be -1 (chunked prefill off) or >= 1, got %d" % value)
        return False
    return True


def _human_int(cfg, problems, variable, flag, raw):
    if isinstance(raw, int):
        if raw < 0:
            problems.add(variable, "%s must not be negative, got %d" % (flag["option"], raw))
            return _UNSET
        return raw
    match = _HUMAN_INT.fullmatch(raw.strip()) if isinstance(raw, str) else None
    if not match or (match.group(2) and match.group(2).endswith("i") and "." in match.group(1)) \
            or (not match.group(2) and "." in match.group(1)):
        problems.add(variable, "%s takes an integer with an optional SI suffix (k, M, G, T: x1000) or IEC suffix "
                     "(Ki, Mi, Gi, Ti: x1024, whole numbers only), got %s" % (flag["option"], _describe(raw)),
                     "write e.g. 262144, 256Ki or 256k (suffixes are case-sensitive)")
        return _UNSET
    return raw.strip()


def _json(cfg, problems, variable, flag, raw):
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError as exc:
            problems.add(variable, "%s takes JSON text, which does not parse (%s)" % (flag["option"], exc),
                         "give a YAML dict/list instead and let the role encode it")
            return _UNSET
    elif isinstance(raw, (dict, list, tuple)):
        value = raw
    else:
        problems.add(variable, "%s takes JSON (a dict, a list or JSON text), got %s" % (flag["option"], _describe(raw)))
        return _UNSET
    if flag["type"] == "json_list" and not isinstance(value, (list, tuple)):
        problems.add(variable, "%s takes a JSON list, got %s" % (flag["option"], _describe(value)))
        return _UNSET
    return value


def _bad_choice(cfg, problems, dest, variable, raw, value):
    choices = FLAGS[dest]["choices"]
    listing = ", ".join(str(c) for c in choices)
    hint = VALUE_HINTS.get(dest, {}).get(str(value))
    if hint is None:
        lowered = [c for c in choices if str(c).lower() == str(value).lower()]
        hint = lowered[0] if lowered else None
    if hint is not None:
        fix = "use %s: %s" % (dest, hint)
    else:
        close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=3, cutoff=0.6)
        fix = "did you mean %s?" % " or ".join(close) if close else None
    if len(listing) > 300:
        listing = listing[:300] + ", ..."
    problems.add(variable, "%r is not a valid value for %s (choices: %s)" % (raw, FLAGS[dest]["option"], listing), fix)
