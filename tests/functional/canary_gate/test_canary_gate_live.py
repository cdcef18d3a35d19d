# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The canary gate (plugin_utils/canary_gate.py) on live SGLang stand-ins on 127.0.0.1: each one is scraped, sent
real requests, scraped again, and the gate judges one against the others from those two scrapes.

* a stand-in told to decode four times slower (``LLMSERVE_STANDIN_TOKEN_SECONDS``) fails, the message naming the
  decode time per output token and the ratio; one with a slow prefill (``LLMSERVE_STANDIN_FIRST_TOKEN_SECONDS``)
  fails on time to first token; one answering every fourth completion with a 500 fails on its error rate;
* two stand-ins with the same settings pass against each other;
* the stand-in writes the gate's metrics with the names, types and label names of the real SGLang 0.5.23 scrape
  kept in tests/fixtures/recorded (read with prometheus_client's own parser).

Five stand-in processes (standard library servers), a few seconds.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from ansible_collections.llmserve.sglang.plugins.plugin_utils import canary_gate as cg
from ansible_collections.llmserve.sglang.tests.functional.wait_for_endpoint.wfe_live_helpers import (
    Standin,
    free_port,
    standin_env,
)
from ansible_collections.llmserve.sglang.tests.unit.prometheus_text import parse

REAL_END = Path(__file__).resolve().parents[2] / "fixtures" / "recorded" / "sglang-0.5.23-cpu-metrics-end.txt"
TOKEN = 0.01  # seconds a token on a normal stand-in
REQUESTS = 12
THRESHOLDS = {"min_requests": 10}  # the rest: the gate's defaults


def _call(url, path, data=None, timeout=10):
    request = urllib.request.Request(url + path, data=json.dumps(data).encode() if data is not None else None,
                                     headers={"Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """Five stand-ins (two normal, slow decoding, slow prefill, failing): each scraped, sent ``REQUESTS``
    completions (four at a time), scraped again. ``{name: {"start", "end", "window"}}``."""
    tmp = tmp_path_factory.mktemp("canary")
    settings = {
        "normal-a": {},
        "normal-b": {},
        "slow-decode": {"LLMSERVE_STANDIN_TOKEN_SECONDS": TOKEN * 4},
        "slow-prefill": {"LLMSERVE_STANDIN_FIRST_TOKEN_SECONDS": 0.3},
        "failing": {"LLMSERVE_STANDIN_ERROR_EVERY": 4},
    }
    procs = {}
    try:
        for name, env in settings.items():
            port = free_port()
            argv = [sys.executable, "-m", "sglang.launch_server", "--model-path", "/models/canary", "--port", str(port),
                    "--skip-server-warmup", "--enable-metrics"]
            env = dict({"LLMSERVE_STANDIN_LOAD_SECONDS": 0, "LLMSERVE_STANDIN_TOKEN_SECONDS": TOKEN}, **env)
            proc = Standin(argv, standin_env(**env), str(tmp / ("events-%s.jsonl" % name))).start()
            proc.url = "http://127.0.0.1:%d" % port
            procs[name] = proc
        for name, proc in procs.items():
            deadline = time.monotonic() + 20
            while True:
                try:
                    if _call(proc.url, "/ready", timeout=2)[0] == 200:
                        break
                except OSError:
                    pass
                assert proc.proc.poll() is None and time.monotonic() < deadline, "%s did not start" % name
                time.sleep(0.05)
        return {name: _exercise(proc.url) for name, proc in procs.items()}
    finally:
        for proc in procs.values():
            proc.stop()


def _exercise(url):
    began = time.monotonic()
    start = _call(url, "/metrics")[1]
    answers = []
    body = {"text": "The capital of France is", "sampling_params": {"max_new_tokens": 8, "ignore_eos": True}}

    def send(count):
        for dummy in range(count):
            answers.append(_call(url, "/generate", body)[0])

    threads = [threading.Thread(target=send, args=(REQUESTS // 4,)) for dummy in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    _call(url, "/health")  # not a generation: the gate leaves it out
    end = _call(url, "/metrics")[1]
    return {"start": start, "end": end, "window": time.monotonic() - began, "answers": sorted(answers)}


def _gate(fleet, canary, pool):
    scrapes = dict((name, fleet[name]) for name in [canary] + list(pool))
    return cg.gate_from_scrapes(canary, scrapes, THRESHOLDS, round(fleet[canary]["window"], 1))


def _check(verdict, metric):
    return next(c for c in verdict["checks"] if c["metric"] == metric)


def test_every_stand_in_served_its_requests(fleet):
    assert fleet["normal-a"]["answers"] == [200] * REQUESTS
    assert fleet["failing"]["answers"] == [200] * 9 + [500] * 3
    numbers = cg.window_from_scrapes(fleet["normal-a"]["start"], fleet["normal-a"]["end"])
    assert numbers["requests"] == REQUESTS and numbers["finished"] == REQUESTS and numbers["ttft_count"] == REQUESTS
    assert numbers["missing"] == [] and numbers["notes"] == []
    # a token is 10 ms: the first after about 10 ms, then 7 more at about 10 ms each
    assert 0.009 <= numbers["ttft_mean"] < 0.1 and 0.009 <= numbers["tpot_mean"] < 0.05
    assert 0.07 <= numbers["e2e_mean"] < 0.5


def test_two_equal_stand_ins_pass_against_each_other(fleet):
    for canary, pool in (("normal-a", ["normal-b"]), ("normal-b", ["normal-a"])):
        verdict = _gate(fleet, canary, pool)
        assert verdict["verdict"] == "pass", verdict["message"]
        assert _check(verdict, "tpot")["result"] == "pass" and _check(verdict, "ttft")["result"] == "pass"


def test_slower_decoding_fails_naming_the_decode_time_and_the_ratio(fleet):
    verdict = _gate(fleet, "slow-decode", ["normal-a", "normal-b"])
    assert verdict["verdict"] == "fail", verdict["message"]
    tpot = _check(verdict, "tpot")
    assert tpot["result"] == "fail" and tpot["ratio"] > 2.5, tpot
    assert "canary slow-decode is worse than its pool (normal-a, normal-b)" in verdict["message"]
    assert "decode time per output token (mean): canary %.4g s, pool %.4g s (median of 2), %.2fx; limit 1.50x" % (
        tpot["canary"], tpot["pool"], tpot["ratio"]) in verdict["message"]
    assert tpot["canary"] >= 0.04 and tpot["pool"] < 0.02
    # in the pool of a normal canary, the slow and the failing stand-in are outvoted by the median
    assert _gate(fleet, "normal-a", ["normal-b", "slow-decode", "failing"])["verdict"] == "pass"


def test_a_slow_prefill_fails_on_time_to_first_token(fleet):
    verdict = _gate(fleet, "slow-prefill", ["normal-a", "normal-b"])
    ttft = _check(verdict, "ttft")
    assert verdict["verdict"] == "fail" and ttft["result"] == "fail" and ttft["ratio"] > 5, verdict["message"]
    assert "time to first token (mean): canary 0.3" in verdict["message"]
    assert _check(verdict, "tpot")["result"] == "pass"  # the later tokens are as fast as the pool's


def test_failing_requests_fail_on_the_error_rate(fleet):
    verdict = _gate(fleet, "failing", ["normal-a", "normal-b"])
    errors = _check(verdict, "error_rate")
    assert verdict["verdict"] == "fail" and errors["canary"] == pytest.approx(0.25) and errors["pool"] == 0
    assert "error rate: canary 25.00%, pool 0.00% (median of 2), +25.00 points; limit +1.00%" in verdict["message"]


def test_too_few_requests_is_inconclusive(fleet):
    verdict = cg.gate_from_scrapes("slow-decode", dict((n, fleet[n]) for n in ("slow-decode", "normal-a")),
                                   {"min_requests": 50})
    assert verdict["verdict"] == "inconclusive"
    assert "12 requests in the window, fewer than min_requests 50" in verdict["message"]


def _shape(families):
    """``{family: (type, sorted label names of its samples)}`` of the families the gate reads."""
    wanted = set([cg.RESPONSES, cg.FINISHED, cg.TTFT, cg.TPOT, cg.E2E, cg.ACCEPT, "sglang:inter_token_latency_seconds",
                  "sglang:generation_tokens_total", "sglang:prompt_tokens_total"])
    shape = {}
    for family in families:
        # prometheus_client names a counter family without _total
        name = family["name"] + "_total" if family["type"] == "counter" else family["name"]
        if name not in wanted:
            continue
        shape[name] = (family["type"], sorted(set(tuple(sorted(s[1])) for s in family["samples"])))
    return shape


def test_the_stand_in_writes_the_real_servers_names_types_and_labels(fleet):
    real = _shape(parse(REAL_END.read_text()))
    mine = _shape(parse(fleet["normal-a"]["end"]))
    assert sorted(real) == sorted(mine)
    for name in real:
        assert real[name][0] == mine[name][0], name
        assert set(mine[name][1]) <= set(real[name][1]), (name, mine[name][1], real[name][1])
    real_buckets, mine_buckets = _buckets(REAL_END.read_text()), _buckets(fleet["normal-a"]["end"])
    for name in (cg.TTFT, cg.TPOT, cg.E2E, "sglang:inter_token_latency_seconds"):
        assert mine_buckets[name] == real_buckets[name] and len(mine_buckets[name]) > 10, name


def _buckets(text):
    """``{histogram: [le, ...]}`` of its series without streaming, in the order written."""
    return dict((f["name"], [s[1]["le"] for s in f["samples"]
                             if s[0].endswith("_bucket") and s[1].get("is_streaming", "false") == "false"])
                for f in parse(text) if f["type"] == "histogram")
