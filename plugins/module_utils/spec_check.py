# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What SGLang itself says about its speculative decoding, read from its own answers (no HTTP here).

Where each number comes from in SGLang 0.5.23 (python/sglang/srt/...):

* Per request, ``/generate``'s ``meta_info`` of a finished request (``managers/tokenizer_manager.py``,
  ``_calculate_spec_decoding_metrics``, about line 3138): ``spec_verify_ct`` (verify forwards of that request),
  ``spec_accept_length`` = ``completion_tokens / spec_verify_ct`` (the bonus token included),
  ``spec_accept_rate`` = ``spec_num_correct_drafts / spec_num_proposed_drafts`` with
  ``spec_num_proposed_drafts = spec_verify_ct * (speculative_num_draft_tokens - 1)``; ``prompt_tokens``,
  ``completion_tokens`` and ``e2e_latency`` (seconds from arrival to finish) are in every ``meta_info``.
  Only this number covers exactly the check's own requests, so :func:`summarise_requests` judges by it.
* ``/server_info`` (``entrypoints/http_server.py``, ``server_info()`` about line 864):
  ``internal_states[i].avg_spec_accept_length`` (``managers/scheduler_components/internal_state.py``,
  ``_average_accept_length``: ``spec_total_num_accept_tokens / spec_total_num_forward_ct``). It is cumulative since
  the start, and the totals grow only when the scheduler logs decode stats, every ``decode_log_interval`` (40)
  decode forwards (``metrics_reporter.py`` about line 934-1000): absent until then, and it counts earlier traffic.
  The top level holds the resolved server arguments (``attention_backend``, ``page_size``,
  ``speculative_num_steps``, ...); ``internal_states[i]`` overlays the scheduler's run-time overrides on them, so
  with ``--speculative-adaptive`` its ``speculative_num_steps`` is the step count in use
  (``speculative/eagle_worker_v2.py``, ``apply_runtime_state``: ``get_context().override("adaptive_spec.restore",
  speculative_num_steps=...)``).
* ``/metrics`` with ``--enable-metrics`` (``observability/metrics_collector.py`` about line 511): the gauges
  ``sglang:spec_accept_length``, ``sglang:spec_accept_rate`` and ``sglang:spec_num_steps`` (the active step
  count), one series per scheduler rank, set at the same log interval over the last interval only.
"""

from __future__ import annotations

import math

from ansible_collections.llmserve.sglang.plugins.module_utils.prometheus_samples import parse_samples

SPEC_GAUGES = ("sglang:spec_accept_length", "sglang:spec_accept_rate", "sglang:spec_num_steps")

# the resolved server arguments the report shows next to what the inventory asked for
SERVER_KEYS = ("speculative_algorithm", "speculative_num_steps", "speculative_eagle_topk",
               "speculative_num_draft_tokens", "speculative_adaptive", "attention_backend",
               "prefill_attention_backend", "decode_attention_backend", "page_size")


def _number(value):
    """A finite float, or None (bools, text, NaN and infinities are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def parse_gauges(text, names=SPEC_GAUGES):
    """``{name: mean over its series}`` for each of ``names`` found in Prometheus text (tensor-parallel ranks
    report the same gauge once each; their mean is the server's figure). Unparsable lines are skipped."""
    return {name: round(sum(sample["value"] for sample in samples) / len(samples), 4)
            for name, samples in parse_samples(text, names).items()}


def summarise_requests(answers):
    """Sum the check's own requests up from their ``meta_info``.

    ``answers``: one dict per request, ``{"meta_info": {...}, "seconds": client wall time}``. Returns request and
    token counts, the per-prompt token counts, the acceptance length over exactly these requests (sum of
    completion tokens / sum of verify forwards; None when SGLang reported no verify forwards), the acceptance
    rate (correct / proposed drafts) and decode tokens per second (completion tokens / SGLang's own
    ``e2e_latency``, prefill included; the client's wall time where ``e2e_latency`` is missing).
    """
    completion = verify = correct = proposed = 0
    seconds = 0.0
    prompt_tokens = []
    completion_tokens = []
    per_request = []
    for answer in answers:
        meta = answer.get("meta_info") or {}
        done = int(_number(meta.get("completion_tokens")) or 0)
        prompt = _number(meta.get("prompt_tokens"))
        prompt_tokens.append(int(prompt) if prompt is not None else None)
        completion_tokens.append(done)
        completion += done
        latency = _number(meta.get("e2e_latency"))
        if not latency or latency < 0:
            latency = _number(answer.get("seconds")) or 0.0
        seconds += max(0.0, latency)
        count = _number(meta.get("spec_verify_ct"))
        if count:
            verify += int(count)
            correct += int(_number(meta.get("spec_num_correct_drafts")) or 0)
            proposed += int(_number(meta.get("spec_num_proposed_drafts")) or 0)
            per_request.append(round(done / count, 3))
        else:
            per_request.append(None)
    return {
        "requests": len(answers),
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "completion_tokens_total": completion,
        "verify_forwards": verify,
        "accept_length": round(completion / verify, 3) if verify else None,
        "accept_length_per_request": per_request,
        "accept_rate": round(correct / proposed, 3) if proposed else None,
        "decode_seconds": round(seconds, 3),
        "decode_tokens_per_s": round(completion / seconds, 1) if seconds > 0 and completion else None,
    }


def server_state(info):
    """The speculative and attention settings SGLang resolved, from a ``/server_info`` body.

    ``avg_spec_accept_length`` and the run-time ``speculative_num_steps`` come from the first scheduler's
    ``internal_states`` entry (data-parallel ranks each have one; their mean is taken for the acceptance length).
    """
    info = info if isinstance(info, dict) else {}
    states = [s for s in info.get("internal_states") or [] if isinstance(s, dict)]
    first = states[0] if states else {}
    out = {}
    for key in SERVER_KEYS:
        # the scheduler's own view decides what runs: its attention settings win over the top level's
        if key in first and key in ("attention_backend", "prefill_attention_backend", "decode_attention_backend",
                                    "page_size"):
            value = first[key]
        else:
            value = info.get(key, first.get(key))
        out[key] = value if isinstance(value, (str, int, float, bool)) or value is None else str(value)
    lengths = [_number(s.get("avg_spec_accept_length")) for s in states]
    lengths = [v for v in lengths if v is not None]
    out["avg_spec_accept_length"] = round(sum(lengths) / len(lengths), 3) if lengths else None
    active = first.get("speculative_num_steps")
    out["active_num_steps"] = active if isinstance(active, int) and not isinstance(active, bool) else None
    out["version"] = info.get("version") if isinstance(info.get("version"), str) else None
    return out
