# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""llmserve.sglang.speculative_check, run as a real module process against the SGLang stand-in on 127.0.0.1, and the
role's policy (sglang_spec_verdict) applied to what it measured: each branch of sglang_server_speculative_on_low
(fail, warn, disable) is reached from a live server's numbers, and a healthy acceptance passes.

The stand-in models SGLang 0.5.23's numbers (tools/standin/README.md): per-request meta_info (spec_verify_ct,
spec_accept_length, e2e_latency), the cumulative avg_spec_accept_length of /server_info, the sglang:spec_* gauges,
the backend it chose, and --speculative-adaptive's step count. About 15 s.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request

import pytest

from ansible_collections.llmserve.sglang.plugins.plugin_utils import spec_policy
from ansible_collections.llmserve.sglang.tests.functional.wait_for_endpoint.wfe_live_helpers import (
    Standin,
    _module_env,
    free_port,
    run_child,
    standin_env,
)

MODULE = "ansible_collections.llmserve.sglang.plugins.modules.speculative_check"
API_KEY = "spec-check-key-7c1e$x"
PROMPTS = ["Explain how a hash table resolves collisions.", "Write a merge of two sorted lists in Python."]
NEXTN = ["--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
         "--speculative-num-draft-tokens", "4"]


@pytest.fixture
def server(tmp_path):
    made = []

    def start(args, **env):
        port = free_port()
        argv = [sys.executable, "-m", "sglang.launch_server", "--model-path", "/nonexistent/tiny", "--port", str(port),
                "--api-key", API_KEY, "--skip-server-warmup"] + list(args)
        proc = Standin(argv, standin_env(LLMSERVE_STANDIN_LOAD_SECONDS=0, LLMSERVE_STANDIN_HEALTH_SECONDS=0,
                                         LLMSERVE_STANDIN_ANSWER_TOKENS=64, **env),
                       str(tmp_path / ("events-%d.jsonl" % len(made)))).start()
        proc.url = "http://127.0.0.1:%d" % port
        made.append(proc)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(proc.url + "/health", timeout=2) as resp:
                    if resp.status == 200:
                        return proc
            except OSError:
                time.sleep(0.1)
        raise AssertionError("the stand-in did not become ready: %s" % (proc.stop() or ""))

    yield start
    for proc in made:
        proc.stop()


def run(tmp_path, args):
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": dict(args, _ansible_tmpdir=str(tmp_path))}))
    rc, stdout, stderr, _wall, _rss, _killed = run_child([sys.executable, "-m", MODULE, str(path)], _module_env(),
                                                         str(tmp_path), 60)
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    assert lines, (rc, stdout, stderr)
    return json.loads(lines[-1]), stdout + stderr


def check_args(url, **extra):
    return dict({"url": url, "prompts": PROMPTS, "requests": 3, "max_new_tokens": 48, "metrics": True,
                 "api_key": API_KEY}, **extra)


def test_healthy_acceptance_passes_with_sglangs_numbers(server, tmp_path):
    srv = server(NEXTN + ["--enable-metrics"], LLMSERVE_STANDIN_ACCEPT_LENGTH="3")
    result, output = run(tmp_path, check_args(srv.url))
    assert not result.get("failed"), result
    req = result["requests"]
    assert req["requests"] == 3 and req["completion_tokens"] == [48, 48, 48]
    assert req["verify_forwards"] == 48 and req["accept_length"] == 3.0
    assert req["prompt_tokens"] == [8, 10, 8]  # the stand-in counts words + BOS
    assert req["decode_tokens_per_s"] > 0
    assert result["server"]["speculative_algorithm"] == "EAGLE"
    assert result["server"]["avg_spec_accept_length"] == 3.0
    assert result["server"]["attention_backend"] == "triton" and result["server"]["page_size"] == 1
    assert result["metrics"]["sglang:spec_accept_length"] == 3.0
    assert API_KEY not in output
    out = spec_policy.verdict(result, "auto", "fail", {"algorithm": "NEXTN", "num_steps": 3})
    assert (out["verdict"], out["action"], out["min_accept_length"]) == ("pass", "none", 1.75)


@pytest.mark.parametrize("on_low", ["fail", "warn", "disable"])
def test_low_acceptance_reaches_each_branch(server, tmp_path, on_low):
    srv = server(NEXTN, LLMSERVE_STANDIN_ACCEPT_LENGTH="1.2")
    result, _output = run(tmp_path, check_args(srv.url, metrics=False))
    assert result["requests"]["accept_length"] == pytest.approx(1.2, abs=0.01)
    assert result["metrics"] is None
    out = spec_policy.verdict(result, "auto", on_low, {"algorithm": "NEXTN", "num_steps": 3})
    assert (out["verdict"], out["action"]) == ("low", on_low)
    assert out["reason"].startswith("acceptance length 1.2")


def test_the_backend_sglang_switched_to_and_the_adaptive_step_count(server, tmp_path):
    # SGLang picks trtllm_mha with page size 64 by itself for hybrid Qwen3.5 on Blackwell once speculation is on
    srv = server(["--speculative-algorithm", "NEXTN", "--speculative-adaptive", "--enable-metrics"],
                 LLMSERVE_STANDIN_ACCEPT_LENGTH="4.6", LLMSERVE_STANDIN_SPEC_ATTENTION_BACKEND="trtllm_mha:64")
    result, _output = run(tmp_path, check_args(srv.url))
    server_state = result["server"]
    assert server_state["speculative_adaptive"] is True and server_state["speculative_num_steps"] == 3
    assert server_state["active_num_steps"] == 5 and result["metrics"]["sglang:spec_num_steps"] == 5
    assert (server_state["attention_backend"], server_state["page_size"]) == ("trtllm_mha", 64)
    backend = spec_policy.backend({"attention_backend": None, "page_size": None}, server_state)
    assert backend["chosen_by_sglang"] == ["attention_backend", "page_size"]


def test_a_named_backend_is_kept(server, tmp_path):
    srv = server(NEXTN + ["--attention-backend", "fa3"], LLMSERVE_STANDIN_SPEC_ATTENTION_BACKEND="trtllm_mha:64")
    result, _output = run(tmp_path, check_args(srv.url, requests=1))
    assert (result["server"]["attention_backend"], result["server"]["page_size"]) == ("fa3", 1)


def test_without_speculation_nothing_is_measured_and_it_only_warns(server, tmp_path):
    srv = server([])
    result, _output = run(tmp_path, check_args(srv.url, requests=1, metrics=False))
    assert result["requests"]["accept_length"] is None and result["server"]["avg_spec_accept_length"] is None
    out = spec_policy.verdict(result, "auto", "fail", {"algorithm": "NEXTN", "num_steps": 3})
    assert (out["verdict"], out["action"]) == ("unmeasured", "warn")


def test_a_wrong_key_fails_without_showing_it(server, tmp_path):
    srv = server(NEXTN)
    result, output = run(tmp_path, check_args(srv.url, api_key="wrong-key-123"))
    assert result["failed"] and "POST /generate answered 401" in result["msg"]
    assert "wrong-key-123" not in output


def test_check_mode_sends_nothing(server, tmp_path):
    srv = server(NEXTN)
    result, _output = run(tmp_path, dict(check_args(srv.url), _ansible_check_mode=True))
    assert "requests" not in result and result["msg"].startswith("check mode")
    assert not [e for e in srv.events() if e.get("event") == "request" and e.get("path") == "/generate"]
