# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``sglang_args``: speculative decoding (``sglang_server_speculative`` and the ``speculative_*`` flags), as SGLang
0.5.23 resolves it, and what ``/server_info`` then reports."""

from __future__ import annotations

import re

from ansible_collections.llmserve.sglang.plugins.plugin_utils.values import blank
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_flags import SGLANG_VERSION, SPELLINGS
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args_common import (
    _UNSET,
    SPECULATIVE_KEYS,
    _as_int,
    _describe,
    _suggest,
    no_control,
    normalise_flag_name,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args_values import dedicated_value

# Names SpeculativeAlgorithm.from_string accepts in SGLang 0.5.23 (NEXTN is an alias of EAGLE).
SPECULATIVE_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH", "DSPARK", "UNO", "FROZEN_KV_MTP")
# Algorithms handled by SGLang's EAGLE-family code path (steps/topk/draft-token rules apply).
EAGLE_FAMILY = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE")
# Algorithms that keep --enable-mixed-chunk (SGLang turns it off for the others).
MIXED_CHUNK_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN", "DFLASH", "DSPARK")
# --speculative-adaptive: the algorithms that adapt (NEXTN resolves to EAGLE first) and the union of the candidate
# steps of SGLang 0.5.23's DEFAULT_ADAPTIVE_CONFIG (srt/speculative/adaptive_spec_params.py)
ADAPTIVE_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN")
ADAPTIVE_DEFAULT_STEPS = (0, 1, 3, 5, 7)
# model paths or names of the hybrid Qwen3.5 / Qwen3-Next architectures (Qwen3NextForCausalLM,
# Qwen3_5ForConditionalGeneration, Qwen3_5MoeForConditionalGeneration) that SGLang's qwen3_5 override covers
HYBRID_QWEN_MODEL = re.compile(r"qwen3(?:[._-]?5|[._-]?next)", re.IGNORECASE)
# speculative_algorithm as /server_info reports it where SGLang 0.5.23 renames it at start
# (srt/arg_groups/speculative_hook.py, _resolve_speculative_algorithm_alias): NEXTN (MTP heads) runs on the EAGLE worker.
REPORTED_ALGORITHMS = {"NEXTN": "EAGLE"}
# Common names for an algorithm that SGLang does not know under that name.
ALGORITHM_HINTS = {
    "MTP": "NEXTN",
    "NEXT_N": "NEXTN",
    "NEXT-N": "NEXTN",
    "EAGLE-3": "EAGLE3",
    "EAGLE_3": "EAGLE3",
    "EAGLE2": "EAGLE",
    "N-GRAM": "NGRAM",
    "LOOKAHEAD": "NGRAM",
    "DRAFT_MODEL": "STANDALONE",
}


def check_speculative(cfg, problems):
    spec = cfg.raw.get("speculative")
    variable = cfg.var("speculative")
    if spec is None or spec == {}:
        return
    if not isinstance(spec, dict):
        problems.add(variable, "must be a dict (algorithm, num_steps, eagle_topk, num_draft_tokens, "
                     "draft_model_path) or empty, got %s" % _describe(spec), "use {} to turn speculative decoding off")
        return
    known = [pair[0] for pair in SPECULATIVE_KEYS]
    for key in spec:
        if key not in known:
            hint = _suggest(str(key), known)
            problems.add("%s.%s" % (variable, key), "is not a known key (%s)%s" % (", ".join(known), hint),
                         "put other speculative_* flags into %s" % cfg.var("args"))
    if all(spec.get(key) is None for key in known):
        return
    algorithm = spec.get("algorithm")
    if blank(algorithm):
        problems.add(variable + ".algorithm", "is required when other speculative settings are given",
                     "set algorithm: NEXTN for MTP, or empty the dict to turn speculative decoding off")
    elif not isinstance(algorithm, str):
        problems.add(variable + ".algorithm", "must be a string, got %s" % _describe(algorithm))
    else:
        upper = algorithm.strip().upper()
        if upper in SPECULATIVE_ALGORITHMS:
            cfg.spec["algorithm"] = upper
        elif upper == "NONE":
            problems.add(variable + ".algorithm", "NONE is not an algorithm",
                         "empty %s to turn speculative decoding off" % variable)
        elif upper in ALGORITHM_HINTS:
            problems.add(variable + ".algorithm", "%r is not a name SGLang %s knows" % (algorithm, SGLANG_VERSION),
                         "use %s (names are case-insensitive: %s)"
                         % (ALGORITHM_HINTS[upper], ", ".join(SPECULATIVE_ALGORITHMS)))
        else:
            problems.add(variable + ".algorithm", "%r is not one of %s%s" % (
                algorithm, ", ".join(SPECULATIVE_ALGORITHMS), _suggest(upper, SPECULATIVE_ALGORITHMS)),
                "names are case-insensitive; MTP models use NEXTN")
    for key in ("num_steps", "eagle_topk", "num_draft_tokens"):
        dedicated_value(cfg, problems, "speculative_" + key, "%s.%s" % (variable, key), spec.get(key), "spec", key)
    draft = spec.get("draft_model_path")
    if not blank(draft):
        if not isinstance(draft, str):
            problems.add(variable + ".draft_model_path", "must be a string, got %s" % _describe(draft))
        elif no_control(cfg, problems, variable + ".draft_model_path", draft):
            cfg.spec["draft_model_path"] = draft.strip()


def rule_speculative(cfg, problems):
    algorithm = cfg.spec.get("algorithm")
    spec_var = cfg.var("speculative")
    spec_flags = sorted(d for d in cfg.args if d.startswith("speculative_") and cfg.args[d] not in (None, False))
    if algorithm is None:
        if spec_flags:
            problems.warn(cfg.arg_var(spec_flags[0]), "has no effect while %s is empty" % spec_var)
        return
    steps = cfg.spec.get("num_steps")
    topk = cfg.spec.get("eagle_topk")
    draft = cfg.spec.get("num_draft_tokens")
    adaptive = cfg.value("speculative_adaptive", False)
    if algorithm == "NGRAM":
        for key in ("num_steps", "eagle_topk"):
            if cfg.spec.get(key) is not None:
                problems.add("%s.%s" % (spec_var, key), "is computed by SGLang for NGRAM",
                             "remove it; tune speculative_ngram_max_bfs_breadth and num_draft_tokens instead")
    elif steps is None and not adaptive:
        for key, got in (("eagle_topk", topk), ("num_draft_tokens", draft)):
            if got is not None:
                problems.add("%s.%s" % (spec_var, key), "is only allowed together with num_steps (SGLang picks all "
                             "three itself when num_steps is unset and fails if only some are given)",
                             "set %s.num_steps as well, or remove %s" % (spec_var, key))
    elif steps is not None and algorithm in EAGLE_FAMILY and topk is None and not adaptive:
        problems.add(spec_var + ".eagle_topk", "is required when num_steps is set for %s" % algorithm,
                     "add eagle_topk (1 for MTP) or remove num_steps to let SGLang choose")
    if algorithm in EAGLE_FAMILY and steps is not None and topk is not None:
        if topk == 1 and draft is not None and draft != steps + 1:
            problems.add(spec_var + ".num_draft_tokens", "must be num_steps + 1 (%d) when eagle_topk is 1; SGLang "
                         "would silently change %d to %d" % (steps + 1, draft, steps + 1),
                         "set num_draft_tokens: %d" % (steps + 1))
        if topk > 1 and draft is None:
            problems.add(spec_var + ".num_draft_tokens", "is required when eagle_topk > 1",
                         "set it, e.g. num_draft_tokens: %d" % (steps * topk))
    backends = [cfg.value(d) for d in ("attention_backend", "prefill_attention_backend", "decode_attention_backend")]
    if topk is not None and topk > 1:
        if "trtllm_mha" in backends:
            problems.add(spec_var + ".eagle_topk", "must be 1 with the trtllm_mha attention backend, got %d" % topk,
                         "set eagle_topk: 1 or pick another attention backend")
        page = cfg.value("page_size", 1)
        attention = cfg.value("attention_backend")
        if page > 1 and attention is not None and attention not in ("flashinfer", "fa3", "triton"):
            problems.add(spec_var + ".eagle_topk", "> 1 with page_size > 1 needs attention_backend flashinfer, fa3 "
                         "or triton, got %s" % attention, "set eagle_topk: 1, page_size: 1 or another backend")
    if "flex_attention" in backends:
        problems.add(cfg.where("attention_backend"), "flex_attention does not support speculative decoding",
                     "pick another attention backend or empty %s" % spec_var)
    attn_dp = cfg.value("attn_dp_size", 1) > 1 or cfg.value("enable_dp_attention", False)
    if algorithm in ("STANDALONE", "NGRAM") and attn_dp:
        problems.add(spec_var + ".algorithm", "%s does not support data-parallel attention" % algorithm,
                     "remove attn_dp_size/enable_dp_attention or use another algorithm")
    if algorithm == "DFLASH":
        if cfg.spec.get("draft_model_path") is None:
            problems.add(spec_var + ".draft_model_path", "is required for DFLASH", "set the draft model path")
        if cfg.value("pp_size", 1) != 1:
            problems.add(cfg.where("pp_size"), "DFLASH needs pp_size 1")
    if algorithm == "UNO" and (cfg.value("tp_size", 1) != 1 or cfg.value("pp_size", 1) != 1):
        problems.add(spec_var + ".algorithm", "UNO needs tp_size 1 and pp_size 1")
    if cfg.value("speculative_use_rejection_sampling", False):
        variable = cfg.where("speculative_use_rejection_sampling")
        if algorithm not in ("EAGLE", "EAGLE3", "NEXTN"):
            problems.add(variable, "only works with EAGLE, EAGLE3 or NEXTN, not %s" % algorithm)
        if topk not in (None, 1):
            problems.add(variable, "needs eagle_topk 1, got %d" % topk, "set %s.eagle_topk: 1" % spec_var)
        for dest in ("speculative_accept_threshold_single", "speculative_accept_threshold_acc"):
            if cfg.value(dest, 1.0) != 1.0:
                problems.add(cfg.where(dest), "must stay 1.0 with rejection sampling")
    window = cfg.value("speculative_draft_window_size")
    if window is not None and window <= 0:
        problems.add(cfg.where("speculative_draft_window_size"), "must be > 0, got %d" % window)
    sink = cfg.value("speculative_draft_sink_size")
    if sink is not None:
        if sink < 0:
            problems.add(cfg.where("speculative_draft_sink_size"), "must be >= 0, got %d" % sink)
        if window is None:
            problems.add(cfg.where("speculative_draft_sink_size"), "needs speculative_draft_window_size",
                         "set speculative_draft_window_size too")
    if algorithm == "NGRAM" and cfg.value("speculative_ngram_external_corpus_path") is not None:
        budget = cfg.value("speculative_ngram_external_sam_budget", 0)
        tokens = draft if draft is not None else 12
        if not 0 < budget <= tokens - 1:
            problems.add(cfg.where("speculative_ngram_external_sam_budget"), "must be between 1 and num_draft_tokens "
                         "- 1 (%d) when an external corpus is set, got %d" % (tokens - 1, budget))
    if adaptive:
        _rule_adaptive(cfg, problems, algorithm, steps, topk, draft)
    _rule_hybrid_backend(cfg, problems, algorithm)
    if cfg.value("max_running_requests") is None:
        problems.warn(cfg.where("max_running_requests"), "is unset, so SGLang caps it at 48 with speculative "
                      "decoding; set it explicitly to choose")
    if cfg.value("enable_mixed_chunk", False) and algorithm not in MIXED_CHUNK_ALGORITHMS:
        problems.warn(cfg.where("enable_mixed_chunk"), "SGLang turns it off for %s" % algorithm)


def _rule_adaptive(cfg, problems, algorithm, steps, topk, draft):
    """--speculative-adaptive as SGLang 0.5.23 resolves it (srt/arg_groups/speculative_hook.py,
    _maybe_disable_adaptive and _init_adaptive_speculative_params; srt/speculative/adaptive_spec_params.py,
    adaptive_unsupported_reason): some combinations turn it off with only a log warning, a step count outside
    the candidate steps stops the server, and the draft tokens become num_steps + 1 whatever was set."""
    variable = cfg.where("speculative_adaptive")
    spec_var = cfg.var("speculative")
    reasons = []
    if algorithm not in ADAPTIVE_ALGORITHMS:
        reasons.append("%s.algorithm is %s (only EAGLE, EAGLE3 and NEXTN adapt)" % (spec_var, algorithm))
    if topk not in (None, 1):
        reasons.append("%s.eagle_topk is %d (only 1 adapts)" % (spec_var, topk))
    if cfg.value("attn_dp_size", 1) > 1 or cfg.value("enable_dp_attention", False):
        reasons.append("data-parallel attention is on")
    for dest in ("enable_multi_layer_eagle", "enable_two_batch_overlap", "enable_pdmux"):
        if cfg.value(dest, False):
            reasons.append("%s is on" % cfg.where(dest))
    if reasons:
        problems.warn(variable, "SGLang 0.5.23 turns adaptive speculation off (a log warning only) because %s; the "
                      "server then runs the static steps" % "; ".join(reasons))
        return
    if cfg.value("speculative_adaptive_config") is not None:
        return  # the candidate steps are in that file, on the host
    if steps is not None and steps not in ADAPTIVE_DEFAULT_STEPS:
        problems.add(spec_var + ".num_steps", "must be one of the adaptive candidate steps %s with "
                     "speculative_adaptive (SGLang refuses to start otherwise), got %d"
                     % (list(ADAPTIVE_DEFAULT_STEPS), steps),
                     "set num_steps to one of them, leave it unset (SGLang starts at 3) or give "
                     "speculative_adaptive_config")
        return
    start = 3 if steps is None else steps
    if draft is not None and draft != start + 1:
        problems.add(spec_var + ".num_draft_tokens", "becomes num_steps + 1 (%d) with speculative_adaptive; SGLang "
                     "would silently change %d to %d" % (start + 1, draft, start + 1),
                     "set num_draft_tokens: %d or leave it unset" % (start + 1))


def _rule_hybrid_backend(cfg, problems, algorithm):
    """Hybrid (linear attention) Qwen3.5 / Qwen3-Next models: with no attention backend given, SGLang 0.5.23 picks
    one per GPU and per speculative setting (srt/arg_groups/model_overrides/qwen3_5.py,
    _qwen3_5_hybrid_overrides): on Blackwell (SM100) triton with page size 1 without speculation, trtllm_mha with
    page size 64 with it (where its general default is trtllm_mha). The model's architecture is not known on the
    controller, so its path or served name decides."""
    if cfg.value("attention_backend") is not None:
        return
    names = " ".join(str(cfg.top.get(k) or "") for k in ("model_path", "served_model_name"))
    if not HYBRID_QWEN_MODEL.search(names):
        return
    problems.warn(cfg.arg_var("attention_backend"), "is unset for what looks like a hybrid Qwen3.5/Qwen3-Next model "
                  "with %s speculation: SGLang 0.5.23 then picks the attention backend and page size itself, and "
                  "differently with and without speculation (on Blackwell: triton, page size 1 without it, "
                  "trtllm_mha, page size 64 with it; model_overrides/qwen3_5.py). One such silent switch halved the "
                  "throughput of Qwen3.5-122B FP8 on B200 with MTP. Set attention_backend (and page_size) in %s, "
                  "and compare the report's chosen backend" % (algorithm, cfg.var("args")))


def expected_server_info(speculative, args=None):
    """The speculative fields SGLang's ``/server_info`` must report for ``speculative`` (``sglang_server_speculative``,
    validated) and ``args`` (``sglang_server_args``, any flag spelling).

    ``speculative_algorithm`` is always there (None without speculation), under the name SGLang reports (NEXTN shows
    as EAGLE). The step count, top-k and draft tokens are expected only where SGLang keeps what was set: for the
    EAGLE family with ``num_steps`` given (without it SGLang picks all three) and without
    ``--speculative-adaptive`` (which picks the steps and draft tokens at run time).
    """
    speculative = speculative if isinstance(speculative, dict) else {}
    algorithm = speculative.get("algorithm")
    if blank(algorithm):
        return {"speculative_algorithm": None}
    algorithm = str(algorithm).strip().upper()
    expected = {"speculative_algorithm": REPORTED_ALGORITHMS.get(algorithm, algorithm)}
    adaptive = any(SPELLINGS.get(normalise_flag_name(key)) == "speculative_adaptive" and value is True
                   for key, value in (args.items() if isinstance(args, dict) else ()))
    numbers = {key: _as_int(speculative.get(key)) for key in ("num_steps", "eagle_topk", "num_draft_tokens")}
    if algorithm not in EAGLE_FAMILY or adaptive or numbers["num_steps"] in (None, _UNSET):
        return expected
    if numbers["eagle_topk"] == 1 and numbers["num_draft_tokens"] not in (None, _UNSET):
        # with top-k 1 SGLang rewrites the draft tokens to steps + 1 (and warns); validation warned already
        numbers["num_draft_tokens"] = numbers["num_steps"] + 1
    for key, number in numbers.items():
        if number not in (None, _UNSET):
            expected["speculative_" + key] = number
    return expected
