# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The canary gate's arithmetic (plugin_utils/canary_gate.py): numbers over a window from two /metrics scrapes (the
real SGLang 0.5.23 CPU server's among them) or from Prometheus' answers, and the verdict on a canary against the
median of its pool."""

from __future__ import annotations

import glob
import json
import math
import os
import random
import subprocess
from pathlib import Path

import pytest
import yaml

from ansible_collections.llmserve.sglang.plugins.plugin_utils import canary_gate as cg

RECORDED = Path(__file__).resolve().parents[3] / "fixtures" / "recorded"
# one start of the real server: see tests/fixtures/recorded/README.md
REAL_START = (RECORDED / "sglang-0.5.23-cpu-metrics-start.txt").read_text()
REAL_END = (RECORDED / "sglang-0.5.23-cpu-metrics-end.txt").read_text()
PROMTOOL = sorted(glob.glob(os.path.join(os.environ.get("LLMSERVE_CACHE", "/var/cache/llmserve"),
                                         "prometheus", "*", "promtool")))

LABELS = 'engine_type="unified",is_streaming="false",model_name="m"'
SCHED = 'engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"'


def scrape(ok=0, failed=0, bad=0, ttft=(), tpot=(), e2e=None, accept=0.0, other=0):
    """An exposition shaped like SGLang 0.5.23's: ``ok``/``failed``/``bad`` answers of /generate with 200/500/400,
    ``other`` answers of /health, histograms of the given observations (cumulative since the start)."""
    lines = ["# TYPE sglang:http_responses_total counter"]
    for status, count in (("200", ok), ("500", failed), ("400", bad)):
        if count:
            lines.append('sglang:http_responses_total{endpoint="/generate",method="POST",status_code="%s"} %r'
                         % (status, float(count)))
    if other:
        lines.append('sglang:http_responses_total{endpoint="/health",method="GET",status_code="500"} %r'
                     % float(other))
    if ok:
        lines += ["# TYPE sglang:num_requests_total counter",
                  "sglang:num_requests_total{%s} %r" % (LABELS, float(ok))]
    for name, values, bounds in (("sglang:time_to_first_token_seconds", ttft, (0.1, 0.2, 0.4, 1.0, 2.0)),
                                 ("sglang:request_time_per_output_token_seconds", tpot, (0.01, 0.02, 0.04, 0.1)),
                                 ("sglang:e2e_request_latency_seconds", e2e or (), (1.0, 10.0))):
        if not values:
            continue
        lines += ["# TYPE %s histogram" % name, "%s_sum{%s} %r" % (name, LABELS, float(sum(values)))]
        for bound in bounds + (math.inf,):
            le = "+Inf" if bound == math.inf else repr(bound)
            lines.append('%s_bucket{%s,le="%s"} %r' % (name, LABELS, le, float(sum(v <= bound for v in values))))
        lines.append("%s_count{%s} %r" % (name, LABELS, float(len(values))))
    lines += ["# TYPE sglang:spec_accept_length gauge", "sglang:spec_accept_length{%s} %r" % (SCHED, float(accept))]
    return "\n".join(lines) + "\n"


def worker(requests=40, failed=0, ttft=0.2, tpot=0.02, accept=0.0, before=10):
    """Two scrapes of a worker that served ``before`` good requests before the window and ``requests`` in it
    (``failed`` of them with a 500), every one with the given TTFT and time per output token."""
    good = requests - failed
    start = scrape(ok=before, ttft=[0.2] * before, tpot=[0.02] * before, accept=accept)
    end = scrape(ok=before + good, failed=failed, ttft=[0.2] * before + [ttft] * good,
                 tpot=[0.02] * before + [tpot] * good, accept=accept, other=3)
    return {"start": start, "end": end}


def check(verdict, metric):
    return next(c for c in verdict["checks"] if c["metric"] == metric)


# --- the real SGLang 0.5.23 text ------------------------------------------------------------------------------------

def test_the_real_server_writes_the_names_and_types_the_gate_reads():
    for name, kind in ((cg.RESPONSES, "counter"), (cg.FINISHED, "counter"), (cg.TTFT, "histogram"),
                       (cg.TPOT, "histogram"), (cg.E2E, "histogram"), (cg.ACCEPT, "gauge")):
        assert "# TYPE %s %s\n" % (name, kind) in REAL_END, name
    # the label sets the stand-in copies
    assert ('sglang:http_responses_total{endpoint="/generate",method="POST",status_code="400"} 1.0'
            in REAL_END)
    assert ('sglang:time_to_first_token_seconds_bucket{engine_type="unified",is_streaming="false",le="+Inf",'
            'model_name="tiny"} 5.0' in REAL_END)


def test_numbers_of_the_real_server_over_its_window():
    numbers = cg.window_from_scrapes(REAL_START, REAL_END)
    # 3 /generate, 1 chat and 1 streamed completion decoded, a /generate and a chat refused with 400
    assert numbers["requests"] == 7 and numbers["errors"] == 0 and numbers["error_rate"] == 0
    assert numbers["finished"] == 5 and numbers["aborted"] == 0 and numbers["ttft_count"] == 5
    ttft = (0.9245304062496871 + 0.22723841699189506 - 0.31925201608100906) / 5
    assert numbers["ttft_mean"] == pytest.approx(ttft)
    assert 0.2 <= numbers["ttft_quantile"] <= 0.4  # the buckets of its 0.16 to 0.32 s first tokens
    assert numbers["tpot_count"] == 5 and 0 < numbers["tpot_mean"] < 0.2
    assert numbers["accept_length"] is None  # 0.0 without speculative decoding: not reported
    assert numbers["missing"] == [] and numbers["notes"] == []
    refused = cg.window_from_scrapes(REAL_START, REAL_END, {"error_statuses": ["4xx"]})
    assert refused["errors"] == 2 and refused["error_rate"] == pytest.approx(2 / 7)


def test_a_restart_between_the_scrapes_counts_from_zero():
    numbers = cg.window_from_scrapes(REAL_END, REAL_START)  # the counters went down
    assert numbers["requests"] == 1 and numbers["ttft_count"] == 1
    assert numbers["ttft_mean"] == pytest.approx(0.31925201608100906)
    assert any("a restart" in note and cg.RESPONSES in note for note in numbers["notes"])
    assert any("a restart" in note and cg.TTFT in note for note in numbers["notes"])


def test_no_first_scrape_counts_from_the_start_and_no_last_one_is_missing():
    assert cg.window_from_scrapes(None, REAL_END)["requests"] == 8
    numbers = cg.window_from_scrapes(REAL_START, None)
    assert numbers["requests"] is None and numbers["missing"] == [cg.RESPONSES]
    html = cg.window_from_scrapes(REAL_START, "<html>404 Not Found</html>")
    assert html["requests"] is None and "--enable-metrics" in html["notes"][0]


# --- the verdict ----------------------------------------------------------------------------------------------------

def test_equal_workers_pass():
    verdict = cg.gate_from_scrapes("a", {"a": worker(), "b": worker(), "c": worker()}, window_seconds=300)
    assert verdict["verdict"] == "pass", verdict["message"]
    assert verdict["pool"] == ["b", "c"] and verdict["source"] == "metrics"
    assert verdict["message"].startswith("canary a is no worse than its pool (b, c) over 300 s")
    assert {c["metric"]: c["result"] for c in verdict["checks"]} == {
        "error_rate": "pass", "ttft": "pass", "tpot": "pass", "e2e": "skipped", "accept_length": "skipped"}


def test_a_slow_first_token_fails_naming_the_number_and_the_ratio():
    verdict = cg.gate_from_scrapes("a", {"a": worker(ttft=0.6), "b": worker(), "c": worker()})
    assert verdict["verdict"] == "fail"
    ttft = check(verdict, "ttft")
    assert ttft["result"] == "fail" and ttft["canary"] == pytest.approx(0.6) and ttft["pool"] == pytest.approx(0.2)
    assert ttft["ratio"] == pytest.approx(3.0) and ttft["difference"] == pytest.approx(0.4)
    assert ttft["threshold"] == {"max_ttft_ratio": 1.5, "ttft_slack_seconds": 0.05}
    assert "time to first token (mean): canary 0.6 s, pool 0.2 s (median of 2), 3.00x; limit 1.50x" in \
        verdict["message"]
    assert check(verdict, "tpot")["result"] == "pass"


def test_slow_decoding_fails_on_time_per_output_token():
    verdict = cg.gate_from_scrapes("a", {"a": worker(tpot=0.05), "b": worker()})
    assert verdict["verdict"] == "fail" and check(verdict, "tpot")["ratio"] == pytest.approx(2.5)
    assert "decode time per output token (mean): canary 0.05 s, pool 0.02 s" in verdict["message"]


def test_the_median_of_the_pool_shrugs_off_one_bad_peer():
    verdict = cg.gate_from_scrapes("a", {"a": worker(), "b": worker(ttft=5.0), "c": worker(), "d": worker()})
    assert verdict["verdict"] == "pass" and check(verdict, "ttft")["pool"] == pytest.approx(0.2)


def test_errors_fail_by_the_absolute_increase():
    verdict = cg.gate_from_scrapes("a", {"a": worker(failed=4), "b": worker(failed=0)})
    errors = check(verdict, "error_rate")
    assert verdict["verdict"] == "fail" and errors["canary"] == pytest.approx(0.1) and errors["pool"] == 0
    assert "error rate: canary 10.00%, pool 0.00% (median of 1), +10.00 points; limit +1.00%" in verdict["message"]
    # 500s of /health are no generation errors; a higher limit lets the same numbers through
    assert cg.gate_from_scrapes("a", {"a": worker(failed=4), "b": worker()},
                                {"max_error_rate_increase": 0.2})["verdict"] == "pass"


def test_a_latency_below_the_slack_is_noise_not_a_failure():
    tiny = cg.gate_from_scrapes("a", {"a": worker(ttft=0.03, tpot=0.002), "b": worker(ttft=0.01, tpot=0.001)})
    assert tiny["verdict"] == "pass" and check(tiny, "ttft")["ratio"] == pytest.approx(3.0)
    strict = cg.gate_from_scrapes("a", {"a": worker(ttft=0.03), "b": worker(ttft=0.01)}, {"ttft_slack_seconds": 0})
    assert strict["verdict"] == "fail"


def test_speculative_acceptance_lower_or_gone_fails():
    low = cg.gate_from_scrapes("a", {"a": worker(accept=2.0), "b": worker(accept=3.2), "c": worker(accept=3.0)})
    accept = check(low, "accept_length")
    assert low["verdict"] == "fail" and accept["pool"] == pytest.approx(3.1)
    assert "speculative acceptance length: canary 2 tokens, pool 3.1 tokens (median of 2), 0.65x; limit 0.90x" in \
        low["message"]
    gone = cg.gate_from_scrapes("a", {"a": worker(accept=0.0), "b": worker(accept=3.0)})
    assert gone["verdict"] == "fail" and "the canary reports none" in gone["message"]
    off = cg.gate_from_scrapes("a", {"a": worker(accept=3.0), "b": worker(accept=3.0)},
                               {"min_accept_length_ratio": None})
    assert off["verdict"] == "pass" and check(off, "accept_length")["result"] == "reported"


def test_an_unjudged_number_is_reported_and_a_judged_one_can_be_switched_on():
    verdict = cg.gate_from_scrapes("a", {"a": worker(tpot=0.03), "b": worker()}, {"max_tpot_ratio": None})
    assert verdict["verdict"] == "pass" and check(verdict, "tpot")["result"] == "reported"
    assert check(verdict, "tpot")["ratio"] == pytest.approx(1.5)


@pytest.mark.parametrize("scrapes, thresholds, needle", [
    ({"a": worker(requests=5), "b": worker()}, None, "5 requests in the window, fewer than min_requests 20"),
    ({"a": worker(), "b": worker(requests=3)}, None, "no pool worker served min_requests 20 in the window (b: 3"),
    ({"a": worker()}, None, "no other worker"),
    ({"a": {"start": REAL_START, "end": None}, "b": worker()}, None, "no request count"),
    ({"b": worker()}, None, "canary a has no numbers"),
    ({"a": worker(), "b": worker()}, {"max_ttft_ratio": "fast"}, "max_ttft_ratio must be a ratio above 0 (null: not judged), got 'fast'"),
    ({"a": worker(), "b": worker()}, {"max_ttft_ration": 2}, "unknown threshold 'max_ttft_ration'"),
])
def test_too_little_to_go_on_is_inconclusive_never_a_pass(scrapes, thresholds, needle):
    verdict = cg.gate_from_scrapes("a", scrapes, thresholds)
    assert verdict["verdict"] == "inconclusive" and needle in verdict["message"], verdict["message"]


def test_a_pool_worker_without_numbers_is_left_out_and_named():
    verdict = cg.gate_from_scrapes("a", {"a": worker(), "b": worker(), "c": {"start": None, "end": None}})
    assert verdict["verdict"] == "pass" and verdict["pool"] == ["b"]
    assert verdict["excluded"] == {"c": "no request count"} and "c: %s missing" % cg.RESPONSES in verdict["problems"]


def test_a_canary_without_ttft_numbers_is_inconclusive_on_them():
    scrapes = {"a": worker(), "b": worker()}
    scrapes["a"]["end"] = scrapes["a"]["end"].replace("time_to_first_token", "renamed")
    verdict = cg.gate_from_scrapes("a", scrapes)
    assert verdict["verdict"] == "inconclusive" and "a: %s missing" % cg.TTFT in verdict["problems"]
    assert "time to first token (mean): the canary reports none" in verdict["message"]


def test_thresholds_are_read_like_inventory_values():
    merged, errors = cg.check_thresholds({"min_requests": "50", "max_ttft_ratio": "1.25", "error_statuses": "5XX",
                                          "max_e2e_ratio": 2})
    assert errors == [] and merged["min_requests"] == 50 and merged["max_ttft_ratio"] == 1.25
    assert merged["error_statuses"] == ["5xx"] and merged["max_e2e_ratio"] == 2.0
    for bad in ({"min_requests": 0}, {"min_requests": True}, {"max_error_rate_increase": 2}, {"quantile": 1},
                {"ttft_slack_seconds": -1}, {"max_tpot_ratio": float("nan")}, {"error_statuses": ["abc"]},
                {"error_statuses": []}, {"max_error_rate_increase": None}, "1.5"):
        assert cg.check_thresholds(bad)[1], bad


# --- quantiles ------------------------------------------------------------------------------------------------------

def test_bucket_quantile_interpolates_like_histogram_quantile():
    buckets = {0.1: 0.0, 0.2: 10.0, 0.4: 20.0, math.inf: 20.0}
    assert cg.bucket_quantile(0.5, buckets) == pytest.approx(0.2)
    assert cg.bucket_quantile(0.25, buckets) == pytest.approx(0.15)
    assert cg.bucket_quantile(0.9, {0.1: 1.0, math.inf: 10.0}) == 0.1  # in +Inf: the largest finite bound
    assert cg.bucket_quantile(0.5, {}) is None and cg.bucket_quantile(0.5, {0.1: 3.0}) is None
    assert cg.bucket_quantile(0.5, {0.1: 0.0, math.inf: 0.0}) is None


# --- Prometheus -----------------------------------------------------------------------------------------------------

def answer(values, by="host"):
    return {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {by: name}, "value": [1765000000.0, value]} for name, value in values.items()]}}


def prometheus_answers(ttft_a=0.6):
    return {
        "requests": answer({"a": "40", "b": "40"}), "errors": answer({"a": "0"}),
        "finished": answer({"a": "40", "b": "40"}), "aborted": answer({}),
        "ttft_sum": answer({"a": repr(40 * ttft_a), "b": "8"}), "ttft_count": answer({"a": "40", "b": "40"}),
        "ttft_quantile": answer({"a": "0.7", "b": "NaN"}),
        "tpot_sum": answer({"a": "0.8", "b": "0.8"}), "tpot_count": answer({"a": "40", "b": "40"}),
        "tpot_quantile": answer({}), "e2e_sum": answer({}), "e2e_count": answer({}),
        "accept_length": answer({}),
    }


def test_prometheus_answers_give_the_same_verdict_as_the_scrapes():
    from_prom = cg.gate_from_prometheus("a", prometheus_answers(), ["a", "b"], window_seconds=300)
    from_scrapes = cg.gate_from_scrapes("a", {"a": worker(ttft=0.6), "b": worker()}, window_seconds=300)
    assert from_prom["verdict"] == from_scrapes["verdict"] == "fail" and from_prom["source"] == "prometheus"
    for metric in ("error_rate", "ttft", "tpot", "accept_length"):
        mine, theirs = check(from_prom, metric), check(from_scrapes, metric)
        assert mine["result"] == theirs["result"], metric
        for key in ("canary", "pool", "ratio"):
            assert mine[key] == pytest.approx(theirs[key]), (metric, key)
    numbers = cg.window_from_prometheus(prometheus_answers(), ["a", "b"])[0]
    assert numbers["a"]["ttft_quantile"] == 0.7 and numbers["b"]["ttft_quantile"] is None  # NaN: none
    assert numbers["b"]["errors"] == 0 and numbers["a"]["e2e_mean"] is None
    assert cg.gate_from_prometheus("a", prometheus_answers(0.2), ["a", "b"])["verdict"] == "pass"


def test_prometheus_failures_are_named_not_raised():
    answers = prometheus_answers()
    answers["ttft_sum"] = {"status": "error", "errorType": "bad_data", "error": "parse error at char 5"}
    answers["tpot_sum"] = "not json"
    answers["errors"] = {"status": "success", "data": {"resultType": "matrix", "result": []}}
    numbers, problems = cg.window_from_prometheus(answers, ["a", "b", "gone"])
    assert "ttft_sum: the query failed: parse error at char 5" in problems
    assert "tpot_sum: the answer is not JSON" in problems and "errors: the answer is not an instant vector" in problems
    assert numbers["gone"]["requests"] is None and numbers["gone"]["missing"] == [cg.RESPONSES]
    assert numbers["a"]["ttft_mean"] is None and numbers["a"]["tpot_mean"] is None
    verdict = cg.gate_from_prometheus("gone", answers, ["a", "b", "gone"])
    assert verdict["verdict"] == "inconclusive" and "ttft_sum: the query failed: parse error at char 5" in \
        verdict["problems"]
    # a failed query is never a pass, even where every other number is fine
    broken = prometheus_answers(0.2)
    broken["errors"] = {"status": "error", "error": "timeout"}
    verdict = cg.gate_from_prometheus("a", broken, ["a", "b"])
    assert verdict["verdict"] == "inconclusive" and "error rate: reported by neither" in verdict["message"]
    del broken["errors"], broken["ttft_count"]
    verdict = cg.gate_from_prometheus("a", broken, ["a", "b"])
    assert verdict["verdict"] == "inconclusive" and "errors: no answer" in verdict["problems"]
    assert "time to first token (mean): reported by neither" in verdict["message"]
    assert cg.window_from_prometheus(None) == ({}, ["the Prometheus answers must be a dict of query answers"])


def test_promql_queries_cover_every_number_and_refuse_what_cannot_be_a_query():
    queries = cg.promql_queries(300, workers=["gpu-01.lab", 'x"y'])
    assert set(queries) == {"requests", "errors", "finished", "aborted", "accept_length", "ttft_sum", "ttft_count",
                            "ttft_quantile", "tpot_sum", "tpot_count", "tpot_quantile", "e2e_sum", "e2e_count"}
    assert queries["errors"] == (
        'sum by (host) (increase(sglang:http_responses_total{job="sglang",host=~"gpu\\\\-01\\\\.lab|x\\"y",'
        'endpoint=~"/generate|/v1/completions|/v1/chat/completions|/v1/responses",status_code=~"5[0-9][0-9]"}[300s]))')
    assert queries["ttft_quantile"].startswith("histogram_quantile(0.9, sum by (host, le) (rate(")
    assert "[300s:]" in queries["accept_length"]
    for bad in ((0,), ("5m",), (300, "sglang", "bad label")):
        assert cg.promql_queries(*bad) is None
    assert cg.promql_queries(60, thresholds={"quantile": 2}) is None


@pytest.mark.skipif(not PROMTOOL, reason="no promtool (make rules-test fetches it)")
def test_promtool_accepts_every_query(tmp_path):
    queries = cg.promql_queries(300, workers=["gpu-01.lab", "b"], thresholds={"error_statuses": ["5xx", "429"]})
    rules = {"groups": [{"name": "canary", "rules": [{"record": "canary:%s" % key, "expr": expr}
                                                     for key, expr in sorted(queries.items())]}]}
    path = tmp_path / "canary.rules.yml"
    path.write_text(yaml.safe_dump(rules))
    done = subprocess.run([PROMTOOL[-1], "check", "rules", str(path)], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "SUCCESS: 13 rules found" in done.stdout, done.stdout + done.stderr


# --- hostile input --------------------------------------------------------------------------------------------------

def test_garbage_nan_and_huge_numbers_end_as_numbers_left_out():
    name = "sglang:time_to_first_token_seconds_sum{%s}" % LABELS
    huge = scrape(ok=40, ttft=[0.2] * 40).replace(name + " 8.0", name + " 1e308")
    huge += 'sglang:time_to_first_token_seconds_sum{%s,x="1"} 1e308\n' % LABELS
    huge += 'sglang:time_to_first_token_seconds_count{%s,x="1"} 1\n' % LABELS
    huge += "sglang:http_responses_total{endpoint=\"/generate\" NaN\n\x00\xff garbage {{{\n"
    huge += 'sglang:http_responses_total{endpoint="/generate",method="POST",status_code="502"} NaN\n'
    huge += 'sglang:http_responses_total{endpoint="/generate",method="POST",status_code="503"} -4\n'
    numbers = cg.window_from_scrapes(None, huge)
    assert numbers["requests"] == 40 and numbers["errors"] == 0
    assert numbers["ttft_mean"] is None and "ttft_mean is not a finite number: left out" in numbers["notes"]
    assert cg.window_from_scrapes(b"\xff\xfe", 12)["requests"] is None
    assert cg.judge("a", "not a dict")["verdict"] == "inconclusive"
    assert cg.judge("a", {"a": None, "b": []})["message"] == "canary a has no numbers"


def test_mangled_real_scrapes_never_raise():
    rng = random.Random(49)
    lines = REAL_END.splitlines()
    junk = ["NaN", "+Inf", "-Inf", "1e999", "-1", "9" * 400, "", "{", '"', "\\", "le=", "\x00"]
    for dummy in range(150):
        mangled = list(lines)
        for dummy2 in range(rng.randint(1, 40)):
            index = rng.randrange(len(mangled))
            cut = rng.randrange(len(mangled[index]) + 1)
            mangled[index] = mangled[index][:cut] + rng.choice(junk) + mangled[index][cut + rng.randint(0, 5):]
        text = "\n".join(mangled)
        verdict = cg.gate_from_scrapes("a", {"a": {"start": REAL_START, "end": text},
                                             "b": {"start": text, "end": REAL_END}}, {"min_requests": 1})
        assert verdict["verdict"] in ("pass", "fail", "inconclusive")
        json.dumps(verdict, allow_nan=False)  # no NaN or infinity reaches the report


# --- the rollout's settings and its reads (site.yml's gate) ----------------------------------------------------------

def test_the_gate_settings_are_checked_naming_the_variable_and_the_rule():
    assert cg.settings_problems("auto", 300, {}, "rollback") == []
    assert cg.settings_problems(2, "60", {"max_tpot_ratio": 2, "min_requests": 5}, "continue") == []
    problems = cg.settings_problems("many", 0, {"max_tpot_ratio": -1, "nope": 1}, "ignore")
    assert problems[0].startswith("sglang_rollout_canary must be auto or a whole number")
    assert problems[1].startswith("sglang_rollout_canary_seconds must be a whole number of seconds from 1 to 86400")
    assert "sglang_rollout_canary_thresholds: unknown threshold 'nope'" in problems[2]
    assert "sglang_rollout_canary_thresholds: max_tpot_ratio must be a ratio above 0 (null: not judged), got -1" in problems
    assert problems[-1] == "sglang_rollout_canary_inconclusive must be one of rollback, continue, got 'ignore'"
    for bad in (True, -1, 1.5, None, [1]):
        assert cg.settings_problems(bad, 300, {}, "rollback"), bad
    assert cg.settings_problems("auto", 86401, {}, "rollback") and cg.settings_problems("auto", True, {}, "rollback")
    wrong = cg.settings_problems("auto", 300, "fast", "rollback")
    assert wrong == ["sglang_rollout_canary_thresholds: thresholds must be a dict, got str"]


def test_the_reads_become_scrapes_and_a_failed_read_is_none():
    start = {"results": [{"peer": "c", "status": 200, "content": "a 1\n"},
                         {"peer": "p1", "status": -1, "msg": "refused", "content": ""},
                         {"peer": "p2", "status": 503, "content": "warming up"},
                         {"peer": "p3", "status": 200, "failed": True, "content": "x"},
                         {"no": "name"}, "junk"]}
    end = [{"peer": "c", "status": 200, "content": "a 2\n"}, {"peer": "p1", "status": 200, "content": "b 1\n"}]
    assert cg.scrapes_from_results(start, end, "peer") == {
        "c": {"start": "a 1\n", "end": "a 2\n"}, "p1": {"start": None, "end": "b 1\n"},
        "p2": {"start": None, "end": None}, "p3": {"start": None, "end": None}}
    assert cg.scrapes_from_results(None, "nonsense", "peer") == {}


def test_a_canary_whose_read_failed_is_never_a_pass_and_a_slow_one_fails():
    good, slow = worker(), worker(tpot=0.08)
    start = [{"w": name, "status": 200, "content": w["start"]} for name, w in (("c", slow), ("p1", good), ("p2", good))]
    end = [{"w": name, "status": 200, "content": w["end"]} for name, w in (("c", slow), ("p1", good), ("p2", good))]
    verdict = cg.gate_from_scrapes("c", cg.scrapes_from_results(start, end, "w"))
    assert verdict["verdict"] == "fail" and check(verdict, "tpot")["result"] == "fail"
    assert verdict["pool"] == ["p1", "p2"]
    end[0] = {"w": "c", "status": -1, "msg": "connection refused"}
    assert cg.gate_from_scrapes("c", cg.scrapes_from_results(start, end, "w"))["verdict"] == "inconclusive"
