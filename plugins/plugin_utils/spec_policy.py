# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Does speculative decoding pay for itself on this server? The policy over the speculative check's numbers.

The check (module ``llmserve.sglang.speculative_check``) measures; this decides, on the controller:

``problems(setting, prompts)``
    what is wrong with the policy's variables (validated with the role's other variables).
``min_accept_length(setting, algorithm, num_steps)``
    the floor the acceptance length must reach: ``auto`` derives it from the draft steps (``default_floor``),
    a number is taken as it is, ``none`` judges nothing.
``verdict(check, setting, on_low, speculative)``
    ``pass``, ``low``, ``unmeasured`` or ``not judged``, the action the role takes (``none``, ``fail``, ``warn``,
    ``disable``), why, and the numbers the report and the job artifacts carry.
``backend(requested, server)``
    the attention backend and page size the inventory asked for next to those SGLang chose.
``fingerprint(speculative, args, model_path)``
    identifies one speculative configuration; a host remembers the one it disabled for low acceptance by it.
``without_speculation(cfg)``
    the role's configuration with speculative decoding off (no ``speculative`` settings, no ``speculative_*`` flag).

The default floor. A speculative step drafts ``num_steps`` tokens, then verifies them together with the target
model, which costs about one ordinary decode step while decoding is bound by memory bandwidth. An MTP or EAGLE draft
head is one layer or a few, so each draft step costs a fraction of a target step; a quarter is a conservative
round figure for that fraction. The step yields ``acceptance length`` tokens, so it beats plain decoding when
``acceptance length > 1 + num_steps / 4``: 1.75 for the usual 3 steps, 1.25 for one step, 2.25 for five. A server
below that spends more on drafting than it saves; one above it may still gain less than hoped, which the tokens
per second in the report show. SGLang's own CI expects far more from a healthy setup (Qwen3.5 with NEXTN, 3 steps,
above 3.3 on GSM8K), so the floor catches a collapse (such as about 1.6 on long contexts), not mediocrity.
It applies to the draft-model algorithms (EAGLE, EAGLE3, NEXTN, STANDALONE, FROZEN_KV_MTP). NGRAM drafts from a
cache at almost no cost and proposes many tokens at once, so its step count says nothing about its break-even: it
gets no default floor (set a number to judge it).
"""

from __future__ import annotations

import hashlib
import json
import math

DRAFT_STEP_COST = 0.25
FLOOR_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "FROZEN_KV_MTP")
ACTIONS = ("fail", "warn", "disable")
MAX_FLOOR = 64.0


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _int(value):
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def default_floor(algorithm, num_steps):
    """``1 + num_steps * DRAFT_STEP_COST`` for the draft-model algorithms, None otherwise (or without steps)."""
    steps = _int(num_steps)
    if str(algorithm or "").upper() not in FLOOR_ALGORITHMS or steps is None or steps < 1:
        return None
    return round(1.0 + steps * DRAFT_STEP_COST, 2)


def _is_off(setting):
    return setting is None or (isinstance(setting, str) and setting.strip().lower() in ("", "none", "off"))


def setting_problem(setting, variable="sglang_server_speculative_min_accept_length"):
    """The rule ``setting`` breaks, or None: ``auto``, ``none`` (or null), or a number from 1 to 64."""
    if _is_off(setting) or (isinstance(setting, str) and setting.strip().lower() == "auto"):
        return None
    value = setting
    if isinstance(setting, str):
        try:
            value = float(setting)
        except ValueError:
            value = None
    value = _number(value)
    if value is None or not 1.0 <= value <= MAX_FLOOR:
        return ("%s must be auto, none or a number from 1 to %g (an acceptance length counts the bonus token, so 1 "
                "means nothing accepted), got %r" % (variable, MAX_FLOOR, setting))
    return None


def problems(setting, prompts, prefix="sglang_server_"):
    """Every rule the policy's variables break: the floor setting, and prompts that are not non-empty strings."""
    found = []
    problem = setting_problem(setting, prefix + "speculative_min_accept_length")
    if problem:
        found.append(problem)
    if not isinstance(prompts, (list, tuple)) or not prompts \
            or not all(isinstance(p, str) and p.strip() for p in prompts):
        found.append("%sspeculative_check_prompts must list at least one prompt, each a non-empty string"
                     % prefix)
    return found


def min_accept_length(setting, algorithm, num_steps):
    """``(floor or None, rule)``: the acceptance length the server must reach and how it was found."""
    if _is_off(setting):
        return None, "none (not judged)"
    if isinstance(setting, str) and setting.strip().lower() == "auto":
        floor = default_floor(algorithm, num_steps)
        if floor is None:
            return None, "auto: no default floor for %s%s" % (
                str(algorithm or "no algorithm").upper(), "" if _int(num_steps) else " without a step count")
        return floor, "auto: 1 + %d draft steps x %g" % (_int(num_steps), DRAFT_STEP_COST)
    problem = setting_problem(setting)
    if problem:
        raise ValueError(problem)
    return float(setting), "set"


def verdict(check, setting="auto", on_low="fail", speculative=None):
    """Judge one speculative check (the module's result) under the policy.

    The acceptance length judged is that of the check's own requests; without it (no verify forwards in their
    ``meta_info``), SGLang's cumulative ``/server_info`` figure, then the ``/metrics`` gauge. The draft steps of
    the floor are those SGLang resolved (``/server_info``), else those configured.
    """
    if on_low not in ACTIONS:
        raise ValueError("sglang_server_speculative_on_low must be one of %s, got %r" % (", ".join(ACTIONS), on_low))
    check = check if isinstance(check, dict) else {}
    speculative = speculative if isinstance(speculative, dict) else {}
    req = check.get("requests") or {}
    srv = check.get("server") or {}
    gauges = check.get("metrics") or {}
    algorithm = speculative.get("algorithm") or srv.get("speculative_algorithm")
    steps = _int(srv.get("speculative_num_steps"))
    if steps is None:
        steps = _int(speculative.get("num_steps"))
    floor, rule = min_accept_length(setting, algorithm, steps)
    candidates = (("requests", _number(req.get("accept_length"))),
                  ("server_info", _number(srv.get("avg_spec_accept_length"))),
                  ("metrics", _number(gauges.get("sglang:spec_accept_length"))))
    source, measured = next(((name, value) for name, value in candidates if value is not None), (None, None))
    out = {
        "accept_length": measured,
        "accept_length_source": source,
        "accept_length_server_info": _number(srv.get("avg_spec_accept_length")),
        "accept_length_metrics": _number(gauges.get("sglang:spec_accept_length")),
        "accept_rate": _number(req.get("accept_rate")),
        "accept_rate_metrics": _number(gauges.get("sglang:spec_accept_rate")),
        "decode_tokens_per_s": _number(req.get("decode_tokens_per_s")),
        "requests": _int(req.get("requests")) or 0,
        "prompt_tokens": list(req.get("prompt_tokens") or []),
        "completion_tokens": list(req.get("completion_tokens") or []),
        "num_steps": steps,
        "adaptive": bool(srv.get("speculative_adaptive")),
        "active_num_steps": _int(srv.get("active_num_steps")),
        "active_num_steps_metrics": _int(_number(gauges.get("sglang:spec_num_steps"))),
        "min_accept_length": floor,
        "min_accept_length_rule": rule,
        "on_low": on_low,
    }
    if floor is None:
        out.update(verdict="not judged", action="none",
                   reason="no floor for the acceptance length (%s)" % rule)
    elif measured is None:
        out.update(verdict="unmeasured", action="warn",
                   reason="SGLang reported no acceptance length (no verify forwards in the requests' meta_info, "
                          "none in /server_info or /metrics) - is speculative decoding running?")
    elif measured < floor:
        out.update(verdict="low", action=on_low,
                   reason="acceptance length %.2f (%s) is below the floor %.2f (%s)" % (measured, source, floor, rule))
    else:
        out.update(verdict="pass", action="none",
                   reason="acceptance length %.2f (%s) reaches the floor %.2f (%s)" % (measured, source, floor, rule))
    return out


def backend(requested, server):
    """The attention backend and page size asked for (None: left to SGLang) and those SGLang runs with."""
    requested = requested if isinstance(requested, dict) else {}
    server = server if isinstance(server, dict) else {}
    keys = ("attention_backend", "prefill_attention_backend", "decode_attention_backend", "page_size")
    asked = {k: requested.get(k) for k in keys}
    chosen = {k: server.get(k) for k in keys}
    differs = [k for k in keys if asked[k] is not None and chosen[k] is not None and str(asked[k]) != str(chosen[k])]
    chosen_by_sglang = [k for k in ("attention_backend", "page_size") if asked[k] is None and chosen[k] is not None]
    return {"asked": asked, "chosen": chosen, "differs": differs, "chosen_by_sglang": chosen_by_sglang}


def _flag(name):
    return str(name).strip().lstrip("-").replace("-", "_").lower()


def fingerprint(speculative, args=None, model_path=None):
    """sha256 (hex) of one speculative configuration: the speculative settings, every ``speculative_*`` flag of
    ``args`` (any spelling) and the model. Key order and flag spelling do not matter."""
    spec = {}
    for key, value in sorted((speculative or {}).items()):
        if value is None:
            continue
        spec[str(key)] = str(value).upper() if key == "algorithm" else value
    flags = {}
    for key, value in (args or {}).items():
        name = _flag(key)
        if name.startswith("speculative_") and value is not None and value is not False:
            flags[name] = value
    text = json.dumps({"speculative": spec, "args": flags, "model_path": model_path}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def without_speculation(cfg):
    """A copy of the role's configuration (``__sglang_server_cfg``) with speculative decoding off."""
    out = dict(cfg or {})
    out["speculative"] = {}
    out["args"] = {k: v for k, v in (out.get("args") or {}).items() if not _flag(k).startswith("speculative_")}
    return out
