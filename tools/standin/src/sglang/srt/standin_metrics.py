# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The request metrics of the stand-in's ``/metrics``, shaped as SGLang 0.5.23 writes them (standard library only).

SGLang serves ``/metrics`` from prometheus_client's multiprocess collector. What that means for the text, and what
the stand-in copies:

* a family shows up only once one of its series has a value (a server that decoded nothing has no
  ``sglang:time_to_first_token_seconds`` at all);
* label names are sorted, ``le`` included; a histogram series is written ``_sum``, the cumulative ``_bucket`` lines,
  ``_count``; every number is a float (``5.0``);
* names, types, label names and buckets are those of ``srt/observability/metrics_collector.py``
  (``TokenizerMetricsCollector``) and ``srt/observability/http_request_metrics.py`` (the HTTP middleware).

The counts are the stand-in's real ones: every answer it sends, every completion it decodes and how long that took.
"""

from __future__ import annotations

import math
import threading

# SGLang 0.5.23's default buckets (TokenizerMetricsCollector)
TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 20.0, 40.0, 60.0, 80.0, 100.0, 200.0, 400.0)
E2E_BUCKETS = TTFT_BUCKETS + (600.0, 1200.0, 1800.0, 2400.0)
ITL_BUCKETS = (0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080, 0.100,
               0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000)

# name -> (type, help, buckets); the order is the order of the text
FAMILIES = (
    ("sglang:http_requests_total", "counter", "Total number of HTTP requests by endpoint and method", None),
    ("sglang:http_responses_total", "counter", "Total number of HTTP responses by endpoint and status code", None),
    ("sglang:prompt_tokens_total", "counter", "Number of prefill tokens processed.", None),
    ("sglang:generation_tokens_total", "counter", "Number of generation tokens processed.", None),
    ("sglang:num_requests_total", "counter", "Number of requests processed.", None),
    ("sglang:num_aborted_requests_total", "counter", "Number of requests aborted.", None),
    ("sglang:time_to_first_token_seconds", "histogram", "Histogram of time to first token in seconds.",
     TTFT_BUCKETS),
    ("sglang:inter_token_latency_seconds", "histogram", "Histogram of inter-token latency in seconds.", ITL_BUCKETS),
    ("sglang:request_time_per_output_token_seconds", "histogram",
     "Per-request TPOT in seconds: (finished_time - first_token_time) / (completion_tokens - 1).", ITL_BUCKETS),
    ("sglang:e2e_request_latency_seconds", "histogram", "Histogram of End-to-end request latency in seconds",
     E2E_BUCKETS),
)
# a hostile client can ask for any path; SGLang labels unknown paths verbatim, the stand-in stops adding series here
MAX_SERIES = 256


def go_float(value):
    """A number as prometheus_client writes it (``1.0``, ``0.25``, ``+Inf``)."""
    value = float(value)
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    return repr(value)


def _escape(value):
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def label_block(labels):
    return "{%s}" % ",".join('%s="%s"' % (key, _escape(labels[key])) for key in sorted(labels))


class RequestMetrics(object):
    """Counters and histograms of one stand-in, safe to update from the request threads."""

    def __init__(self, model_name):
        self.base = {"engine_type": "unified", "model_name": model_name}
        self.lock = threading.Lock()
        self.kinds = dict((name, (kind, text, buckets)) for name, kind, text, buckets in FAMILIES)
        # name -> {label tuple: value} (counters) or {label tuple: [bucket counts..., sum]} (histograms)
        self.series = dict((name, {}) for name, _kind, _text, _buckets in FAMILIES)

    def _slot(self, name, labels):
        table = self.series[name]
        key = tuple(sorted(labels.items()))
        if key not in table:
            if sum(len(t) for t in self.series.values()) >= MAX_SERIES:
                return None, None
            buckets = self.kinds[name][2]
            table[key] = 0.0 if buckets is None else [0] * len(buckets) + [0, 0.0]
        return table, key

    def inc(self, name, labels, amount=1.0):
        with self.lock:
            table, key = self._slot(name, labels)
            if table is not None:
                table[key] += float(amount)

    def observe(self, name, labels, value, times=1):
        """``times`` observations of ``value`` at once; the sum grows by ``value * times`` (SGLang's bulk
        inter-token observation does the same: one interval spread over the tokens it produced)."""
        if times <= 0:
            return
        buckets = self.kinds[name][2]
        with self.lock:
            table, key = self._slot(name, labels)
            if table is None:
                return
            slot = table[key]
            index = next((i for i, bound in enumerate(buckets) if value <= bound), len(buckets))
            slot[index] += times  # the last slot before the sum is the +Inf overflow
            slot[-1] += float(value) * times

    # --- what the server records ------------------------------------------------------------------------------

    def answered(self, endpoint, method, status):
        self.inc("sglang:http_requests_total", {"endpoint": endpoint, "method": method})
        self.inc("sglang:http_responses_total", {"endpoint": endpoint, "method": method, "status_code": str(status)})

    def finished(self, streaming, prompt_tokens, tokens, ttft, e2e):
        """One decoded request: ``ttft`` seconds to its first token (None without one) and ``e2e`` in all."""
        labels = dict(self.base, is_streaming="true" if streaming else "false")
        self.inc("sglang:prompt_tokens_total", labels, prompt_tokens)
        self.inc("sglang:generation_tokens_total", labels, tokens)
        self.inc("sglang:num_requests_total", labels)
        self.observe("sglang:e2e_request_latency_seconds", labels, e2e)
        if ttft is None:
            return
        self.observe("sglang:time_to_first_token_seconds", labels, ttft)
        if tokens > 1:
            per_token = max(0.0, e2e - ttft) / (tokens - 1)
            self.observe("sglang:inter_token_latency_seconds", dict(self.base), per_token, tokens - 1)
            self.observe("sglang:request_time_per_output_token_seconds", labels, per_token)

    # --- the text ---------------------------------------------------------------------------------------------

    def lines(self):
        with self.lock:
            snapshot = dict((name, dict((key, list(v) if isinstance(v, list) else v) for key, v in table.items()))
                            for name, table in self.series.items())
        out = []
        for name, kind, text, buckets in FAMILIES:
            table = snapshot[name]
            if not table:
                continue
            out += ["# HELP %s %s" % (name, text), "# TYPE %s %s" % (name, kind)]
            for key, value in table.items():
                labels = dict(key)
                if buckets is None:
                    out.append("%s%s %s" % (name, label_block(labels), go_float(value)))
                    continue
                out.append("%s_sum%s %s" % (name, label_block(labels), go_float(value[-1])))
                running = 0
                for bound, count in zip(buckets + (float("inf"),), value[:-1]):
                    running += count
                    out.append("%s_bucket%s %s" % (name, label_block(dict(labels, le=go_float(bound))),
                                                   go_float(running)))
                out.append("%s_count%s %s" % (name, label_block(labels), go_float(running)))
        return out
