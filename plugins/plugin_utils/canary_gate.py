# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The canary gate's arithmetic: is a freshly changed SGLang server worse than the rest of its pool?

Over one window, each worker gets the same numbers, whichever source they come from:

``requests``, ``errors``, ``error_rate``
    answers of the generation endpoints (``/generate``, ``/v1/completions``, ``/v1/chat/completions``,
    ``/v1/responses``) and those among them with an error status (``5xx`` unless told otherwise), from the counter
    ``sglang:http_responses_total{endpoint,method,status_code}`` that SGLang 0.5.23's HTTP middleware keeps with
    ``--enable-metrics`` (``srt/observability/http_request_metrics.py``). SGLang has no error counter of its own;
    the smg gateway's ``smg_http_responses_total{status}`` counts per gateway, not per worker, so it cannot tell the
    canary from its pool.
``finished``, ``aborted``
    ``sglang:num_requests_total`` and ``sglang:num_aborted_requests_total`` (reported, not judged).
``ttft_mean``/``ttft_quantile``, ``tpot_mean``/``tpot_quantile``, ``e2e_mean``
    from the histograms ``sglang:time_to_first_token_seconds``, ``sglang:request_time_per_output_token_seconds``
    (decode time per output token of each finished request) and ``sglang:e2e_request_latency_seconds``: the mean is
    the increase of ``_sum`` over the increase of ``_count``, the quantile is interpolated in the buckets as
    Prometheus' ``histogram_quantile`` does. ``sglang:inter_token_latency_seconds`` is left out: SGLang observes it
    per output chunk, so without streaming it sees few of the tokens.
``accept_length``
    the gauge ``sglang:spec_accept_length`` (mean accepted tokens per verify step), averaged over its series that are
    above 0: SGLang writes 0.0 without speculative decoding and before its first decode log interval.

Sources: two scrapes of each worker's own ``/metrics`` (``window_from_scrapes``), or Prometheus' query API when
the ``sglang_monitoring`` role runs (``promql_queries`` builds the queries, ``window_from_prometheus`` reads the
answers). A counter that went down between the scrapes was reset (the server restarted): its increase is counted
from zero, as Prometheus' ``increase()`` does.

``judge`` compares the canary with the median of the other workers and returns a verdict: ``fail`` when one judged
number is worse than its threshold allows, ``inconclusive`` when the canary or its pool served fewer than
``min_requests`` requests, a number cannot be read, or the thresholds are wrong (never a pass), else ``pass``. Each
check names the canary's value, the pool's, the ratio and difference and the threshold, and the message says which
numbers and by how much.

Pure functions, no network, standard library only (controller side). Nothing raises on bad input: unreadable text,
NaN, infinities and huge numbers end up as a number left out and a problem named.
"""

from __future__ import annotations

import json
import math
import re
import statistics

from ansible_collections.llmserve.sglang.plugins.module_utils.prometheus_samples import parse_samples
from ansible_collections.llmserve.sglang.plugins.plugin_utils.values import as_int, finite_number

RESPONSES = "sglang:http_responses_total"
FINISHED = "sglang:num_requests_total"
ABORTED = "sglang:num_aborted_requests_total"
TTFT = "sglang:time_to_first_token_seconds"
TPOT = "sglang:request_time_per_output_token_seconds"
E2E = "sglang:e2e_request_latency_seconds"
ACCEPT = "sglang:spec_accept_length"
# key prefix of the numbers -> histogram
HISTOGRAMS = (("ttft", TTFT), ("tpot", TPOT), ("e2e", E2E))
GENERATION_ENDPOINTS = ("/generate", "/v1/completions", "/v1/chat/completions", "/v1/responses")
# a histogram of a few label sets has ~25 buckets each; far more than any server writes, far less than a flood
SAMPLE_LIMIT = 4096

DEFAULTS = {
    "min_requests": 20,
    "max_error_rate_increase": 0.01,
    "max_ttft_ratio": 1.5,
    "ttft_slack_seconds": 0.05,
    "max_tpot_ratio": 1.5,
    "tpot_slack_seconds": 0.005,
    "max_e2e_ratio": None,
    "e2e_slack_seconds": 0.1,
    "min_accept_length_ratio": 0.9,
    "error_statuses": ["5xx"],
    "quantile": 0.9,
}

# (metric, label, value key, unit, how it is judged, threshold key, slack key); only the acceptance length may be
# absent everywhere (no speculative decoding): any other number nobody has is a failed read, not a pass
CHECKS = (
    ("error_rate", "error rate", "error_rate", "ratio", "increase", "max_error_rate_increase", None),
    ("ttft", "time to first token (mean)", "ttft_mean", "s", "max_ratio", "max_ttft_ratio", "ttft_slack_seconds"),
    ("tpot", "decode time per output token (mean)", "tpot_mean", "s", "max_ratio", "max_tpot_ratio",
     "tpot_slack_seconds"),
    ("e2e", "end-to-end latency (mean)", "e2e_mean", "s", "max_ratio", "max_e2e_ratio", "e2e_slack_seconds"),
    ("accept_length", "speculative acceptance length", "accept_length", "tokens", "min_ratio",
     "min_accept_length_ratio", None),
)
OPTIONAL = ("accept_length",)
_STATUS = re.compile(r"[1-5][0-9x]{2}")
_NUMBER_KEYS = ("requests", "errors", "error_rate", "finished", "aborted", "ttft_mean", "ttft_count",
                "ttft_quantile", "tpot_mean", "tpot_count", "tpot_quantile", "e2e_mean", "e2e_count", "accept_length")


# --- thresholds ------------------------------------------------------------------------------------------------

def check_thresholds(thresholds):
    """``(effective, errors)``: the defaults overlaid with ``thresholds`` (a dict, or None), and one message per
    key that is unknown or holds a value it cannot take. A ratio or quantile threshold set to None is not judged
    (its numbers are still reported)."""
    merged = dict(DEFAULTS)
    errors = []
    if thresholds is None:
        thresholds = {}
    if not isinstance(thresholds, dict):
        return merged, ["thresholds must be a dict, got %s" % type(thresholds).__name__]
    for key in sorted(thresholds, key=str):
        if key not in DEFAULTS:
            errors.append("unknown threshold %r (known: %s)" % (str(key)[:60], ", ".join(sorted(DEFAULTS))))
    for key, value in thresholds.items():
        if key not in DEFAULTS:
            continue
        if key == "min_requests":
            number = as_int(value, floats=True, digits=12)
            if number is None or number < 1:
                errors.append("min_requests must be a whole number of 1 or more, got %r" % (value,))
                continue
            merged[key] = number
        elif key == "error_statuses":
            items = [value] if isinstance(value, str) else value
            if not isinstance(items, (list, tuple)) or not items or not all(
                    isinstance(item, str) and _STATUS.fullmatch(item.strip().lower()) for item in items):
                errors.append("error_statuses must list HTTP statuses such as 500 or 5xx, got %r" % (value,))
                continue
            merged[key] = sorted(set(item.strip().lower() for item in items))
        else:
            if value is None and key.startswith(("max_", "min_")) and key != "max_error_rate_increase":
                merged[key] = None
                continue
            number = finite_number(value)
            if key == "quantile":
                ok, rule = number is not None and 0 < number < 1, "a number between 0 and 1"
            elif key == "max_error_rate_increase":
                ok, rule = number is not None and 0 <= number <= 1, "a fraction from 0 to 1"
            elif key.endswith("_slack_seconds"):
                ok, rule = number is not None and number >= 0, "0 or more seconds"
            else:  # a ratio
                ok, rule = number is not None and number > 0, "a ratio above 0 (null: not judged)"
            if not ok:
                errors.append("%s must be %s, got %r" % (key, rule, value))
                continue
            merged[key] = number
    return merged, errors


def _status_matches(status, patterns):
    status = str(status)
    return len(status) == 3 and any(all(p == "x" or p == c for p, c in zip(pattern, status)) for pattern in patterns)


# --- numbers from two scrapes ----------------------------------------------------------------------------------

def _names():
    names = [RESPONSES, FINISHED, ABORTED, ACCEPT]
    for _key, name in HISTOGRAMS:
        names += [name + "_sum", name + "_count", name + "_bucket"]
    return names


def parse_scrape(text):
    """The samples the gate reads from one ``/metrics`` text, ``{}`` for None or text that is not an exposition."""
    if text is None:
        return {}
    if not isinstance(text, (str, bytes)):
        return {}
    try:
        return parse_samples(text, _names(), limit=SAMPLE_LIMIT)
    except (ValueError, TypeError, RecursionError):  # a parser bug must not end the rollout's report
        return {}


def _key(labels, drop=()):
    return tuple(sorted((k, v) for k, v in labels.items() if k not in drop))


def _series(samples, name, keep=None, drop=()):
    """``{label key: value}`` of one family; a negative value is no counter's and is dropped."""
    table = {}
    for sample in samples.get(name, ()):
        if sample["value"] < 0 or (keep is not None and not keep(sample["labels"])):
            continue
        table[_key(sample["labels"], drop)] = sample["value"]
    return table


def _increase(start, end, notes, what):
    """Sum over the series of ``end`` of their increase since ``start``; a series that went down was reset and
    counts from zero, one that is new counts whole."""
    total = 0.0
    resets = 0
    for key, value in end.items():
        before = start.get(key)
        if before is None:
            total += value
        elif value < before:
            resets += 1
            total += value
        else:
            total += value - before
    if resets:
        notes.append("%s went down in %d series between the scrapes (a restart): counted from zero" % (what, resets))
    return total


def _histogram(start, end, name, notes):
    """``(sum, count, {upper bound: count})`` increases of one histogram over all its label sets."""
    sums = [_series(s, name + "_sum") for s in (start, end)]
    counts = [_series(s, name + "_count") for s in (start, end)]
    buckets = [{} for dummy in (start, end)]
    for index, samples in enumerate((start, end)):
        for sample in samples.get(name + "_bucket", ()):
            bound = _bound(sample["labels"].get("le"))
            if bound is None or sample["value"] < 0:
                continue
            buckets[index].setdefault(_key(sample["labels"], ("le",)), {})[bound] = sample["value"]
    total_sum = total_count = 0.0
    by_bound = {}
    resets = 0
    for key, count in counts[1].items():
        before = counts[0].get(key)
        reset = before is not None and (count < before or sums[1].get(key, 0.0) < sums[0].get(key, 0.0))
        resets += reset
        fresh = before is None or reset
        total_count += count - (0.0 if fresh else before)
        total_sum += sums[1].get(key, 0.0) - (0.0 if fresh else sums[0].get(key, 0.0))
        old = {} if fresh else buckets[0].get(key, {})
        for bound, value in buckets[1].get(key, {}).items():
            by_bound[bound] = by_bound.get(bound, 0.0) + max(0.0, value - old.get(bound, 0.0))
    if resets:
        notes.append("%s went down in %d series between the scrapes (a restart): counted from zero" % (name, resets))
    return total_sum, total_count, by_bound


def _bound(text):
    if text is None:
        return None
    if str(text).strip() in ("+Inf", "Inf", "+inf", "inf"):
        return math.inf
    return finite_number(text)


def bucket_quantile(q, by_bound):
    """Prometheus' ``histogram_quantile`` over cumulative bucket counts ``{upper bound: count}``: linear within the
    bucket, the largest finite bound when the rank falls in ``+Inf``; None without observations or a ``+Inf``
    bucket."""
    if not by_bound or math.inf not in by_bound:
        return None
    bounds = sorted(by_bound)
    counts = [by_bound[b] for b in bounds]
    for index in range(1, len(counts)):  # cumulative counts never fall; a mangled scrape may say otherwise
        counts[index] = max(counts[index], counts[index - 1])
    total = counts[-1]
    if not total > 0 or not math.isfinite(total):
        return None
    rank = q * total
    for index, bound in enumerate(bounds):
        if counts[index] >= rank:
            if bound == math.inf:
                return bounds[-2] if len(bounds) > 1 else None
            lower = bounds[index - 1] if index else 0.0
            below = counts[index - 1] if index else 0.0
            inside = counts[index] - below
            if inside <= 0:
                return bound
            if not index and bound <= 0:
                return bound
            return lower + (bound - lower) * (rank - below) / inside
    return None


def _empty(notes=None):
    numbers = dict((key, None) for key in _NUMBER_KEYS)
    numbers.update(missing=[], notes=list(notes or ()))
    return numbers


def _finish(numbers):
    """Leave out any number that is not finite (a hostile or broken scrape), naming it."""
    for key in _NUMBER_KEYS:
        value = numbers.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value)):
            numbers[key] = None
            numbers["notes"].append("%s is not a finite number: left out" % key)
    return numbers


def window_from_scrapes(start_text, end_text, thresholds=None):
    """One worker's numbers over the window between two ``/metrics`` texts (str or bytes). ``start_text`` None:
    counted from the server's start (a server that was not reachable when the window opened)."""
    options, _errors = check_thresholds(thresholds)
    end = parse_scrape(end_text)
    if not end or RESPONSES not in end:
        numbers = _empty()
        numbers["missing"].append(RESPONSES)
        numbers["notes"].append("no %s in the last scrape: no SGLang /metrics answer (is --enable-metrics set?)"
                                % RESPONSES if end_text is not None else "no last scrape")
        return numbers
    numbers = _empty()
    notes = numbers["notes"]
    start = parse_scrape(start_text)
    if start_text is None:
        notes.append("no first scrape: counted from the server's start")
    statuses = options["error_statuses"]

    def generation(labels):
        return labels.get("endpoint") in GENERATION_ENDPOINTS

    def failed(labels):
        return generation(labels) and _status_matches(labels.get("status_code"), statuses)

    requests = _increase(_series(start, RESPONSES, generation), _series(end, RESPONSES, generation), notes, RESPONSES)
    errors = _increase(_series(start, RESPONSES, failed), _series(end, RESPONSES, failed), [], RESPONSES)
    numbers.update(requests=requests, errors=errors, error_rate=errors / requests if requests > 0 else None)
    for key, name in (("finished", FINISHED), ("aborted", ABORTED)):
        # SGLang writes a family with its first value: absent means none yet
        numbers[key] = _increase(_series(start, name), _series(end, name), notes, name)
    for key, name in HISTOGRAMS:
        if name + "_count" not in end:
            if numbers["finished"]:
                numbers["missing"].append(name)
            continue
        total_sum, total_count, by_bound = _histogram(start, end, name, notes)
        numbers[key + "_count"] = total_count
        if total_count > 0:
            numbers[key + "_mean"] = total_sum / total_count
            if key != "e2e":
                numbers[key + "_quantile"] = bucket_quantile(options["quantile"], by_bound)
    accepted = [s["value"] for s in end.get(ACCEPT, ()) if s["value"] > 0]
    numbers["accept_length"] = sum(accepted) / len(accepted) if accepted else None
    return _finish(numbers)


# --- numbers from Prometheus -----------------------------------------------------------------------------------

def _promql_string(text):
    return '"%s"' % str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _status_regex(patterns):
    return "|".join(p.replace("x", "[0-9]") for p in patterns)


def promql_queries(window_seconds, job="sglang", by="host", workers=None, thresholds=None):
    """``{key: PromQL}`` over the last ``window_seconds`` (a whole number of seconds), one value per ``by`` label
    (``host``: the inventory name the ``sglang_monitoring`` role gives every target), for the job's targets and,
    with ``workers``, those of them only. None when the window or a name cannot make a query."""
    seconds = as_int(window_seconds, floats=True, digits=9)
    if seconds is None or seconds < 1 or not isinstance(by, str) or not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", by):
        return None
    options, errors = check_thresholds(thresholds)
    if errors:
        return None
    matchers = ["job=%s" % _promql_string(job)]
    if workers:
        matchers.append("%s=~%s" % (by, _promql_string("|".join(re.escape(str(w)) for w in workers))))
    base = ",".join(matchers)
    endpoints = "endpoint=~%s" % _promql_string("|".join(re.escape(e) for e in GENERATION_ENDPOINTS))
    errors_match = "status_code=~%s" % _promql_string(_status_regex(options["error_statuses"]))
    window = "[%ds]" % seconds

    def increase(name, extra=""):
        return "sum by (%s) (increase(%s{%s%s}%s))" % (by, name, base, extra, window)

    queries = {
        "requests": increase(RESPONSES, "," + endpoints),
        "errors": increase(RESPONSES, "," + endpoints + "," + errors_match),
        "finished": increase(FINISHED),
        "aborted": increase(ABORTED),
        # zeros are "no speculative decoding (yet)": left out before averaging, as from the scrapes
        "accept_length": "avg by (%s) (avg_over_time((%s{%s} > 0)%s))" % (by, ACCEPT, base, window[:-1] + ":]"),
    }
    for key, name in HISTOGRAMS:
        queries[key + "_sum"] = increase(name + "_sum")
        queries[key + "_count"] = increase(name + "_count")
        if key != "e2e":
            queries[key + "_quantile"] = "histogram_quantile(%s, sum by (%s, le) (rate(%s_bucket{%s}%s)))" % (
                repr(float(options["quantile"])), by, name, base, window)
    return queries


def _vector(answer, by, problems, key):
    """``{worker: float or None}`` of one query API answer (a dict, or its JSON text)."""
    if isinstance(answer, (str, bytes)):
        try:
            answer = json.loads(answer)
        except (ValueError, RecursionError):
            problems.append("%s: the answer is not JSON" % key)
            return {}
    if not isinstance(answer, dict) or answer.get("status") != "success":
        error = answer.get("error") if isinstance(answer, dict) else None
        problems.append("%s: the query failed%s" % (key, ": %s" % str(error)[:200] if error else ""))
        return {}
    data = answer.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "vector" or not isinstance(data.get("result"), list):
        problems.append("%s: the answer is not an instant vector" % key)
        return {}
    values = {}
    for item in data["result"][:SAMPLE_LIMIT]:
        metric = item.get("metric") if isinstance(item, dict) else None
        value = item.get("value") if isinstance(item, dict) else None
        if not isinstance(metric, dict) or not isinstance(metric.get(by), str):
            continue
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            continue
        values[metric[by]] = finite_number(value[1]) if isinstance(value[1], str) else None
    return values


def window_from_prometheus(answers, workers=None, by="host"):
    """``({worker: numbers}, problems)`` from the answers (``{key: query API answer}``) to the queries of
    ``promql_queries``; ``workers`` (default: every worker named in an answer) each get numbers, empty where
    Prometheus had none."""
    problems = []
    if not isinstance(answers, dict):
        return {}, ["the Prometheus answers must be a dict of query answers"]
    vectors = dict((key, _vector(answer, by, problems, key)) for key, answer in sorted(answers.items(), key=str))
    # a failed or missing query leaves its number unknown for everyone, never 0
    failed = set(key for key in vectors if any(p.startswith(key + ": ") for p in problems))
    for key in ("requests", "errors", "finished", "aborted", "accept_length", "ttft_sum", "ttft_count",
                "tpot_sum", "tpot_count"):
        if key not in answers:
            problems.append("%s: no answer" % key)
            failed.add(key)
    names = list(workers) if workers else sorted(set(w for vector in vectors.values() for w in vector))
    result = {}
    for worker in names:
        worker = str(worker)
        numbers = _empty()

        def pick(key):
            return vectors.get(key, {}).get(worker)

        requests = pick("requests")
        if requests is None:
            numbers["missing"].append(RESPONSES)
            numbers["notes"].append("Prometheus has no %s of this worker in the window" % RESPONSES)
            result[worker] = numbers
            continue
        # a query that worked but has no series for the worker: none happened (SGLang writes a series with its
        # first value)
        errors = None if "errors" in failed else pick("errors") or 0.0
        numbers.update(requests=requests, errors=errors,
                       error_rate=errors / requests if errors is not None and requests > 0 else None,
                       finished=pick("finished"), aborted=None if "aborted" in failed else pick("aborted") or 0.0,
                       accept_length=pick("accept_length"))
        for key, name in HISTOGRAMS:
            total, count = pick(key + "_sum"), pick(key + "_count")
            if count is None:
                if numbers["finished"]:
                    numbers["missing"].append(name)
                continue
            numbers[key + "_count"] = count
            if count > 0 and total is not None:
                numbers[key + "_mean"] = total / count
            if key != "e2e":
                numbers[key + "_quantile"] = pick(key + "_quantile")
        result[worker] = _finish(numbers)
    return result, problems


# --- the verdict ---------------------------------------------------------------------------------------------

def _show(value, unit):
    if value is None:
        return "none"
    if unit == "ratio":
        return "%.2f%%" % (100.0 * value)
    if unit == "s":
        return "%.4g s" % value
    return "%.4g %s" % (value, unit)


def _check(spec, canary, pool, options):
    metric, label, key, unit, how, limit_key, slack_key = spec
    limit = options[limit_key]
    slack = options[slack_key] if slack_key else None
    value = canary.get(key)
    values = [numbers[key] for numbers in pool.values() if numbers.get(key) is not None]
    reference = statistics.median(values) if values else None
    check = {"metric": metric, "label": label, "unit": unit, "canary": value, "pool": reference,
             "pool_workers": len(values), "ratio": None, "difference": None,
             "threshold": dict([(limit_key, limit)] + ([(slack_key, slack)] if slack_key else []))}
    if value is None and reference is None:
        result = "skipped" if metric in OPTIONAL or limit is None else "inconclusive"
        check.update(result=result, message="%s: reported by neither the canary nor its pool" % label)
        return check
    if value is None or reference is None:
        lost = value is None and how == "min_ratio" and limit is not None
        who = "the canary" if value is None else "its pool"
        text = "%s: %s reports none (canary %s, pool %s)" % (label, who, _show(value, unit), _show(reference, unit))
        check.update(result="fail" if lost else ("inconclusive" if limit is not None else "reported"), message=text)
        return check
    difference = value - reference
    ratio = value / reference if reference > 0 else None
    if ratio is not None and not math.isfinite(ratio):  # a tiny pool value under a huge canary one
        ratio = None
    check.update(ratio=ratio, difference=difference)
    if how == "increase":
        worse = limit is not None and difference > limit
        limit_text = "limit +%s" % _show(limit, unit)
        by = "%+.2f points" % (100.0 * difference)
    elif how == "max_ratio":
        worse = limit is not None and difference > slack and (ratio is None or ratio > limit)
        limit_text = "limit %.2fx" % limit if limit is not None else "not judged"
        by = "%.2fx" % ratio if ratio is not None else "+%s" % _show(difference, unit)
    else:
        worse = limit is not None and ratio is not None and ratio < limit
        limit_text = "limit %.2fx" % limit if limit is not None else "not judged"
        by = "%.2fx" % ratio if ratio is not None else "pool 0"
    result = "reported" if limit is None else ("fail" if worse else "pass")
    check.update(result=result, message="%s: canary %s, pool %s (median of %d), %s; %s" % (
        label, _show(value, unit), _show(reference, unit), len(values), by, limit_text))
    return check


def judge(canary, workers, thresholds=None, source="metrics", window_seconds=None):
    """The verdict on ``canary`` (a worker name) against the other entries of ``workers`` (``{name: numbers}``
    from ``window_from_scrapes`` or ``window_from_prometheus``). Never raises."""
    options, errors = check_thresholds(thresholds)
    verdict = {"verdict": "inconclusive", "canary": str(canary), "pool": [], "excluded": {}, "source": source,
               "window_seconds": window_seconds, "thresholds": options, "checks": [], "problems": list(errors),
               "workers": {}, "message": ""}
    if not isinstance(workers, dict):
        workers = {}
    verdict["workers"] = dict((str(k), v) for k, v in workers.items() if isinstance(v, dict))
    workers = verdict["workers"]
    if errors:
        verdict["message"] = "canary gate thresholds are wrong: %s" % "; ".join(errors)
        return verdict
    numbers = workers.get(str(canary))
    if numbers is None:
        verdict["message"] = "canary %s has no numbers" % canary
        return verdict
    for name, other in sorted(workers.items()):
        if name == str(canary):
            continue
        served = other.get("requests")
        if served is None:
            verdict["excluded"][name] = "no request count"

        elif served < options["min_requests"]:
            verdict["excluded"][name] = "%g requests, fewer than min_requests %d" % (served, options["min_requests"])
        else:
            verdict["pool"].append(name)
    for name, other in sorted(workers.items()):
        verdict["problems"] += ["%s: %s missing" % (name, missing) for missing in other.get("missing") or ()]
        verdict["problems"] += ["%s: %s" % (name, note) for note in other.get("notes") or ()]
    served = numbers.get("requests")
    if served is None:
        verdict["message"] = "canary %s: no request count (%s)" % (
            canary, "; ".join(list(numbers.get("missing") or ()) + list(numbers.get("notes") or ())) or "no numbers")
        return verdict
    if served < options["min_requests"]:
        verdict["message"] = "canary %s: %g requests in the window, fewer than min_requests %d" % (
            canary, served, options["min_requests"])
        return verdict
    if not verdict["pool"]:
        verdict["message"] = "canary %s: no pool worker served min_requests %d in the window (%s)" % (
            canary, options["min_requests"],
            "; ".join("%s: %s" % item for item in sorted(verdict["excluded"].items())) or "no other worker")
        return verdict
    pool = dict((name, workers[name]) for name in verdict["pool"])
    verdict["checks"] = [_check(spec, numbers, pool, options) for spec in CHECKS]
    failed = [c for c in verdict["checks"] if c["result"] == "fail"]
    unsure = [c for c in verdict["checks"] if c["result"] == "inconclusive"]
    window = " over %g s" % window_seconds if finite_number(window_seconds) is not None else ""
    if failed:
        verdict["verdict"] = "fail"
        verdict["message"] = "canary %s is worse than its pool (%s)%s: %s" % (
            canary, ", ".join(verdict["pool"]), window, "; ".join(c["message"] for c in failed))
    elif unsure:
        verdict["message"] = "canary %s: cannot compare%s: %s" % (
            canary, window, "; ".join(c["message"] for c in unsure))
    else:
        verdict["verdict"] = "pass"
        verdict["message"] = "canary %s is no worse than its pool (%s)%s: %s" % (
            canary, ", ".join(verdict["pool"]), window,
            "; ".join(c["message"] for c in verdict["checks"] if c["result"] == "pass"))
    return verdict


def gate_from_scrapes(canary, scrapes, thresholds=None, window_seconds=None):
    """``judge`` over ``scrapes`` (``{worker: {"start": text, "end": text}}``, text None where a scrape failed)."""
    workers = {}
    if isinstance(scrapes, dict):
        for name, pair in scrapes.items():
            pair = pair if isinstance(pair, dict) else {}
            workers[str(name)] = window_from_scrapes(pair.get("start"), pair.get("end"), thresholds)
    return judge(canary, workers, thresholds, "metrics", window_seconds)


def gate_from_prometheus(canary, answers, workers, thresholds=None, window_seconds=None, by="host"):
    """``judge`` over Prometheus' answers to ``promql_queries`` (``workers``: the canary and its pool)."""
    numbers, problems = window_from_prometheus(answers, workers, by)
    verdict = judge(canary, numbers, thresholds, "prometheus", window_seconds)
    verdict["problems"] = problems + verdict["problems"]
    return verdict


# --- the rollout's settings and its reads of /metrics --------------------------------------------------------------

INCONCLUSIVE_CHOICES = ("rollback", "continue")


def settings_problems(canary, seconds, thresholds, inconclusive):
    """One message per rollout setting of the gate that is wrong (``sglang_rollout_canary``: ``auto`` or a whole
    number of 0 or more; ``sglang_rollout_canary_seconds``: 1 to 86400; the thresholds; what an inconclusive gate
    does). site.yml checks them with the plan, before any server changes."""
    problems = []
    if not (isinstance(canary, str) and canary.strip().lower() == "auto"):
        number = None if isinstance(canary, bool) else as_int(canary)
        if number is None or number < 0:
            problems.append("sglang_rollout_canary must be auto or a whole number of servers (0: no canary gate), "
                            "got %r" % (canary,))
    number = None if isinstance(seconds, bool) else as_int(seconds)
    if number is None or not 1 <= number <= 86400:
        problems.append("sglang_rollout_canary_seconds must be a whole number of seconds from 1 to 86400, got %r"
                        % (seconds,))
    dummy_options, errors = check_thresholds(thresholds)
    problems += ["sglang_rollout_canary_thresholds: %s" % error for error in errors]
    if inconclusive not in INCONCLUSIVE_CHOICES:
        problems.append("sglang_rollout_canary_inconclusive must be one of %s, got %r" % (
            ", ".join(INCONCLUSIVE_CHOICES), inconclusive))
    return problems


def scrapes_from_results(start, end, key="item"):
    """``{worker: {"start": text, "end": text}}`` from two looped ``ansible.builtin.uri`` results (``return_content``),
    the worker named by the loop variable ``key``; a read that did not answer 200 is None."""
    scrapes = {}
    for which, results in (("start", start), ("end", end)):
        if isinstance(results, dict):
            results = results.get("results")
        for result in results if isinstance(results, list) else []:
            if not isinstance(result, dict) or not isinstance(result.get(key), str):
                continue
            text = result.get("content") if result.get("status") == 200 and not result.get("failed") else None
            scrapes.setdefault(result[key], {"start": None, "end": None})[which] = \
                text if isinstance(text, str) else None
    return scrapes
