# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The SGLang stand-in (tools/standin): start-up timeline, endpoints, auth, crash, command line,
--config files, the YAML subset reader and the wheel. Short timelines (about 1 s per phase)."""

from __future__ import annotations

import ast
import base64
import csv
import hashlib
import importlib.util
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import zipfile

import pytest

from wfe_live_helpers import ROOT, STANDIN_SRC, standin_env


def _load_standin_yaml():
    """The stand-in's YAML reader, loaded by path so no ``sglang`` package lands on sys.path."""
    path = os.path.join(STANDIN_SRC, "sglang", "srt", "standin_yaml.py")
    spec = importlib.util.spec_from_file_location("llmserve_standin_yaml", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


standin_yaml = _load_standin_yaml()

FAST = {"LLMSERVE_STANDIN_LOAD_SECONDS": "1", "LLMSERVE_STANDIN_WARMUP_SECONDS": "1",
        "LLMSERVE_STANDIN_HEALTH_SECONDS": "0.2"}
PYTHONS = [sys.executable] + [p for p in ("/usr/bin/python3",) if os.path.exists(p)
                              and os.path.realpath(p) != os.path.realpath(sys.executable)]


def get(url, path, key=None, data=None, timeout=5):
    """(status, body) with the standard library; -1 when nothing answers."""
    request = urllib.request.Request(url + path, data=json.dumps(data).encode() if data is not None else None,
                                     headers={"Content-Type": "application/json"})
    if key:
        request.add_header("Authorization", "Bearer %s" % key)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except (urllib.error.URLError, OSError):
        return -1, b""


def wait_listening(proc, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if get(proc.url, "/ready")[0] != -1:
            return
        assert proc.proc.poll() is None, proc.proc.communicate()[0]
        time.sleep(0.05)
    raise AssertionError("stand-in never opened its port")


@pytest.mark.parametrize("python", PYTHONS)
def test_timeline_closed_then_warmup_then_up(standin, run_module, python):
    timings = dict(FAST, LLMSERVE_STANDIN_WARMUP_SECONDS="2")  # room for the checks below
    proc = standin(["--model-path", "/models/none", "--served-model-name", "m1"], python=python, **timings)
    assert get(proc.url, "/ready")[0] == -1  # loading: port closed
    wait_listening(proc)
    # warm-up: readiness endpoints 503, model endpoints already 200
    assert get(proc.url, "/health")[0] == 503
    assert get(proc.url, "/health_generate")[0] == 503
    assert get(proc.url, "/ready")[0] == 503
    status, body = get(proc.url, "/v1/models")
    assert status == 200 and json.loads(body)["data"][0]["id"] == "m1"
    assert get(proc.url, "/model_info")[0] == 200 and get(proc.url, "/server_info")[0] == 200
    run = run_module({"url": proc.url + "/ready", "timeout": 15})
    assert run.rc == 0, run
    assert [e["status"] for e in run.result["status_history"]][-2:] == [503, 200]
    events = proc.events()
    kinds = [e["event"] for e in events]
    assert kinds[:2] == ["start", "listening"] and "ready" in kinds
    t = {e["event"]: e["t"] for e in events if e["event"] != "request"}
    assert t["listening"] - t["start"] >= 0.95 and t["ready"] - t["listening"] >= 1.95
    first_ok = min(e["t"] for e in events if e["event"] == "request" and e["path"] == "/ready" and e["status"] == 200)
    assert first_ok - t["ready"] <= 0.5  # module default interval: readiness noticed within 0.5 s
    start = time.monotonic()
    assert get(proc.url, "/health")[0] == 200
    assert time.monotonic() - start >= 0.2  # /health "generates" after readiness


def test_api_key_endpoints_and_speculative_resolution(standin, run_module):
    pytest.importorskip("jmespath")
    proc = standin(["--model-path", "/m", "--api-key", "sk-test-1", "--speculative-algo", "nextn",
                    "--skip-server-warmup"], LLMSERVE_STANDIN_LOAD_SECONDS="0.2")
    wait_listening(proc)
    for path in ("/health", "/health_generate", "/ready"):
        assert get(proc.url, path)[0] == 200, path
    assert get(proc.url, "/metrics")[0] == 404  # not mounted without --enable-metrics, and no 401
    for path in ("/v1/models", "/model_info", "/server_info", "/ping", "/nonexistent"):
        assert get(proc.url, path)[0] == 401, path
        assert get(proc.url, path, key="wrong")[0] == 401, path
    assert get(proc.url, "/nonexistent", key="sk-test-1")[0] == 404
    status, body = get(proc.url, "/generate", key="sk-test-1", data={"text": "The capital of France is"})
    assert status == 200 and json.loads(body)["text"]
    status, body = get(proc.url, "/v1/chat/completions", key="sk-test-1",
                       data={"model": "/m", "messages": [{"role": "user", "content": "hi"}]})
    assert status == 200 and json.loads(body)["choices"][0]["message"]["content"]
    assert get(proc.url, "/generate", key="sk-test-1")[0] == 405  # GET on a POST route
    status, body = get(proc.url, "/server_info", key="sk-test-1")
    info = json.loads(body)
    assert info["api_key"] == "sk-test-1"  # in clear text, as SGLang does
    assert info["speculative_algorithm"] == "EAGLE" and info["max_running_requests"] == 48
    assert (info["speculative_num_steps"], info["speculative_eagle_topk"], info["speculative_num_draft_tokens"]) == (3, 1, 4)
    assert info["version"] == "0.5.23+llmserve.standin"

    fail = run_module({"url": proc.url + "/v1/models", "timeout": 10})
    assert fail.rc == 1 and fail.result["status"] == 401 and "api_key" in fail.result["msg"], fail
    ok = run_module({"url": proc.url + "/server_info", "api_key": "sk-test-1", "timeout": 10,
                     "json_query": "speculative_algorithm == 'EAGLE'"})
    assert ok.rc == 0, ok
    assert ok.result["json"]["api_key"] == "********" and "sk-test-1" not in json.dumps(ok.result)


def _running(proc, key):
    status, body = get(proc.url, "/v1/loads?include=core", key=key)
    assert status == 200, body
    return json.loads(body)["loads"][0]["num_running_reqs"]


def test_slow_generation_load_endpoints_and_drain_on_sigterm(standin):
    """ignore_eos makes the stand-in decode the whole max_new_tokens at LLMSERVE_STANDIN_TOKEN_SECONDS a token; the
    requests being generated are its load (/v1/loads, sglang:num_running_reqs); SIGTERM waits for them."""
    key = "sk-load-1"
    proc = standin(["--model-path", "/m", "--api-key", key, "--skip-server-warmup", "--enable-metrics"],
                   LLMSERVE_STANDIN_LOAD_SECONDS="0.2", LLMSERVE_STANDIN_TOKEN_SECONDS="0.1")
    wait_listening(proc)
    # without ignore_eos the made-up model stops after " Paris." (2 tokens), so a large max_tokens stays quick
    start = time.monotonic()
    status, body = get(proc.url, "/v1/chat/completions", key=key,
                       data={"model": "/m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 500})
    assert status == 200 and json.loads(body)["usage"]["completion_tokens"] == 2
    assert time.monotonic() - start < 1.5
    assert get(proc.url, "/generate", key=key, data={"text": "x", "sampling_params": {"max_new_tokens": -1}})[0] == 400
    assert get(proc.url, "/v1/loads")[0] == 401  # not on SGLang's list of paths without the key
    assert _running(proc, key) == 0
    status, body = get(proc.url, "/v1/loads?include=bogus", key=key)
    assert status == 400 and "Invalid include sections" in json.loads(body)["detail"]
    status, body = get(proc.url, "/v1/loads", key=key)
    full = json.loads(body)
    assert full["version"] == "0.5.23+llmserve.standin" and {"memory", "queues", "disaggregation"} <= set(full["loads"][0])

    results = []

    def slow():
        results.append(get(proc.url, "/generate", key=key, timeout=30,
                           data={"text": "x", "sampling_params": {"max_new_tokens": 20, "ignore_eos": True}}))

    threads = [threading.Thread(target=slow) for dummy in range(2)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 1.5
    while _running(proc, key) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running(proc, key) == 2
    status, body = get(proc.url, "/metrics")
    assert status == 200 and re.search(r'^sglang:num_running_reqs\{[^}]*model_name="/m"[^}]*\} 2\.0$', body.decode(), re.M)
    proc.proc.send_signal(signal.SIGTERM)  # SGLang drains before it stops
    assert get(proc.url, "/ready")[0] == 503
    for thread in threads:
        thread.join(30)
    assert sorted(r[0] for r in results) == [200, 200]
    meta = json.loads(results[0][1])["meta_info"]
    assert meta["completion_tokens"] == 20 and time.monotonic() - started >= 1.9
    rc, out = proc.wait(timeout=10)
    assert rc == 0 and "Gracefully exiting... Remaining number of requests 2." in out, out[-2000:]


@pytest.mark.parametrize("how", ["env", "override"])
def test_warmup_failure_kills_itself(standin, how):
    args = ["--model-path", "/m"]
    env = dict(FAST)
    if how == "env":
        env["LLMSERVE_STANDIN_FAIL"] = "warmup"
    else:
        args += ["--json-model-override-args", '{"standin_fail_warmup": true}']
    proc = standin(args, **env)
    rc, out = proc.wait(timeout=15)
    assert rc == -signal.SIGKILL
    assert "Initialization failed. warmup error" in out
    assert "fired up" not in out
    kinds = [e["event"] for e in proc.events()]
    assert kinds[:2] == ["start", "listening"] and kinds[-1] == "crash" and "ready" not in kinds


def run_cli(args, python=sys.executable, env=None, entry=("-m", "sglang.launch_server")):
    return subprocess.run([python] + list(entry) + list(args), capture_output=True, text=True, timeout=30,
                          env=env or standin_env(), check=False)


@pytest.mark.parametrize("args,needle", [
    (["--model-path", "/m", "--frobnicate"], "unrecognized arguments: --frobnicate"),
    (["--model-path", "/m", "--cuda-graph-max-bs", "64"], "ambiguous option: --cuda-graph-max-bs"),
    (["--model-path", "/m", "--mamba-scheduler-strategy", "extra_buffer"], "unrecognized arguments"),
    (["--model-path", "/m", "--dtype", "bf16"], "invalid choice: 'bf16'"),
    (["--model-path", "/m", "--tp-size", "four"], "invalid int value: 'four'"),
    (["--port", "1"], "the following arguments are required: --model-path"),
])
def test_command_line_rejected_like_argparse(args, needle):
    proc = run_cli(args)
    assert proc.returncode == 2 and needle in proc.stderr, proc.stderr[-400:]


@pytest.mark.parametrize("args,needle", [
    (["--model-path", "/m", "--speculative-algorithm", "MTP"], "Unknown speculative algorithm name: MTP"),
    (["--model-path", "/m", "--speculative-algorithm", "EAGLE", "--speculative-eagle-topk", "1"], "AssertionError"),
    (["--model-path", "/m", "--served-model-name", "a:b"], "colon"),
])
def test_resolution_errors_exit_1_before_listening(args, needle):
    proc = run_cli(args, env=standin_env(LLMSERVE_STANDIN_LOAD_SECONDS="30"))
    assert proc.returncode == 1 and needle in proc.stderr, proc.stderr[-400:]


def test_sglang_serve_cli_and_config_file(standin, tmp_path):
    config = tmp_path / "sglang.yaml"
    config.write_text("# rendered by a role\nserved-model-name: 'qwen3.5-122b-a10b'\napi-key: \"sk-from-config\"\n"
                      "speculative-algorithm: NEXTN\nspeculative-num-steps: 3\nspeculative-eagle-topk: 1\n"
                      "speculative-num-draft-tokens: 4\nenable-metrics: true\ndisable-radix-cache: false\n"
                      "skip-server-warmup: yes\n")
    proc = standin(["serve", "--model-type", "llm", "/models/q", "--config", str(config), "--tp", "4"],
                   entry=("-m", "sglang.cli.main"), LLMSERVE_STANDIN_LOAD_SECONDS="0.2", LLMSERVE_STANDIN_YAML="subset")
    wait_listening(proc)
    assert get(proc.url, "/v1/models")[0] == 401
    status, body = get(proc.url, "/server_info", key="sk-from-config")
    info = json.loads(body)
    assert status == 200 and info["model_path"] == "/models/q" and info["tp_size"] == 4
    assert info["served_model_name"] == "qwen3.5-122b-a10b" and info["enable_metrics"] is True
    assert info["disable_radix_cache"] is False and info["speculative_algorithm"] == "EAGLE"
    assert get(proc.url, "/metrics")[0] == 200


def test_config_underscore_key_and_cli_precedence(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("speculative_num_steps: 3\n")
    proc = run_cli(["--model-path", "/m", "--config", str(bad)])
    assert proc.returncode == 2 and "unrecognized arguments: --speculative_num_steps 3" in proc.stderr
    wrong_suffix = tmp_path / "conf.json"
    wrong_suffix.write_text("{}")
    proc = run_cli(["--model-path", "/m", "--config", str(wrong_suffix)])
    assert proc.returncode == 2 and "YAML" in proc.stderr
    good = tmp_path / "good.yaml"
    good.write_text("port: 1111\ntp-size: 2\n")
    script = ("from sglang.srt.server_args import prepare_server_args as p; a = p(['--config', %r, '--port', '2222',"
              " '--model-path', '/m']); print(a.port, a.tp_size)" % str(good))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=standin_env(), timeout=30, check=False)
    assert out.stdout.split() == ["2222", "2"], out.stderr


def test_parser_check_script_api():
    """What a parser-check script written for the real SGLang does."""
    script = (
        "import argparse, sys\n"
        "from sglang.srt.server_args import ServerArgs, prepare_server_args\n"
        "parser = argparse.ArgumentParser()\n"
        "ServerArgs.add_cli_args(parser)\n"
        "ns = parser.parse_args(['--model-path', '/m', '--tp', '4', '--context-length', '256k',\n"
        "                        '--speculative-algo', 'NEXTN', '--enable-dp-attention'])\n"
        "args = ServerArgs.from_cli_args(ns)\n"
        "print(len(parser._actions), args.tp_size, args.context_length, args.speculative_algorithm,\n"
        "      parser.parse_args(['--model-path', 'x', '--context-length', '256Ki']).context_length)\n"
        "prepare_server_args(['--model-path', '/m', '--log-level', 'nosuchlevel'])\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=standin_env(), timeout=30, check=False)
    assert out.stdout.split() == ["532", "4", "256000", "NEXTN", "262144"], out.stderr
    assert out.returncode == 1 and "AttributeError" in out.stderr


REAL_SGLANG_PYTHON = os.environ.get("LLMSERVE_REAL_SGLANG_PYTHON", "/var/cache/llmserve/venv-sglang-cpu/bin/python")


def test_parity_with_real_sglang_parser():
    """When a real SGLang venv is around, the same argv must parse to the same values (or fail alike).

    Importing the real SGLang takes about 15 s (torch), so this runs only with LLMSERVE_STANDIN_PARITY=1."""
    if os.environ.get("LLMSERVE_STANDIN_PARITY") != "1":
        pytest.skip("set LLMSERVE_STANDIN_PARITY=1 to compare with the real SGLang parser (slow)")
    if not os.path.exists(REAL_SGLANG_PYTHON):
        pytest.skip("no real SGLang venv at %s" % REAL_SGLANG_PYTHON)
    cases = [
        ["--model-path", "/m", "--tp", "4", "--speculative-algo", "NEXTN", "--context-length", "256k"],
        ["--model-path", "/m", "--mamba-radix-cache-strategy", "extra_buffer", "--cuda-graph-max-bs-decode", "64",
         "--enable-metrics", "--api-key", "k", "--no-enable-tf32-matmul", "--cuda-graph-bs-decode", "1", "2", "4"],
        ["--model-path", "/m", "--cuda-graph-max-bs", "64"],
        ["--model-path", "/m", "--dtype", "bf16"],
        ["--model-path", "/m", "--bogus"],
        ["--port", "30000"],
    ]
    script = (
        "import argparse, json, sys\n"
        "from sglang.srt.server_args import ServerArgs\n"
        "out = []\n"
        "for argv in json.loads(sys.argv[1]):\n"
        "    parser = argparse.ArgumentParser(prog='x')\n"
        "    ServerArgs.add_cli_args(parser)\n"
        "    parser.error = lambda msg: (_ for _ in ()).throw(SystemExit(2))\n"
        "    try:\n"
        "        ns = vars(parser.parse_args(argv))\n"
        "        out.append({k: ns[k] for k in ('model_path', 'tp_size', 'context_length', 'speculative_algorithm',\n"
        "                    'mamba_radix_cache_strategy', 'cuda_graph_max_bs_decode', 'enable_metrics', 'api_key',\n"
        "                    'enable_tf32_matmul', 'cuda_graph_bs_decode')})\n"
        "    except SystemExit as exc:\n"
        "        out.append('exit %s' % exc.code)\n"
        "print('RESULT ' + json.dumps(out))\n"
    )
    results = []
    for python, env in ((REAL_SGLANG_PYTHON, dict(os.environ, PYTHONPATH="")), (sys.executable, standin_env())):
        proc = subprocess.run([python, "-c", script, json.dumps(cases)], capture_output=True, text=True,
                              env=env, timeout=180, check=False)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
        if python == REAL_SGLANG_PYTHON and not lines:
            pytest.skip("real SGLang parser not importable here: %s" % proc.stderr.strip().splitlines()[-1:])
        assert lines, proc.stderr
        results.append(json.loads(lines[-1][len("RESULT "):]))
    assert results[0] == results[1]


def test_wheel_contents_and_runs_from_the_zip(tmp_path):
    build = subprocess.run(["bash", os.path.join(ROOT, "tools", "standin", "build_wheel.sh"), str(tmp_path)],
                           capture_output=True, text=True, timeout=60, check=False)
    assert build.returncode == 0, build.stderr
    wheel = build.stdout.strip()
    assert os.path.basename(wheel) == "sglang-0.5.23+llmserve.standin-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        dist = "sglang-0.5.23+llmserve.standin.dist-info/"
        assert {"sglang/launch_server.py", "sglang/cli/main.py", "sglang/srt/server_args.py",
                "sglang/srt/standin_parser_actions.py", dist + "METADATA", dist + "WHEEL", dist + "RECORD"} <= set(names)
        assert not [n for n in names if n.endswith("sglang_flags.py") or n.endswith("standin_flags.py")], names
        assert "Version: 0.5.23+llmserve.standin" in archive.read(dist + "METADATA").decode()
        assert "sglang = sglang.cli.main:main" in archive.read(dist + "entry_points.txt").decode()
        rows = list(csv.reader(io.StringIO(archive.read(dist + "RECORD").decode())))
        for name, digest, size in rows:
            if name == dist + "RECORD":
                continue
            data = archive.read(name)
            expected = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert digest == expected and int(size) == len(data), name
        assert not any("__pycache__" in n for n in names)
    # a second build is byte-identical
    again = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "standin", "build_wheel.py"),
                            str(tmp_path / "again")], capture_output=True, text=True, timeout=60, check=False)
    with open(wheel, "rb") as one, open(again.stdout.strip(), "rb") as two:
        assert one.read() == two.read()
    # pure Python: importable straight from the zip, without the source tree
    env = dict(os.environ, PYTHONPATH=wheel)
    proc = subprocess.run([sys.executable, "-c", "import sglang, sglang.srt.standin_parser_actions as f; "
                           "print(sglang.__version__, f.SGLANG_VERSION)"], capture_output=True, text=True, env=env,
                          cwd=str(tmp_path), timeout=30, check=False)
    assert proc.stdout.split() == ["0.5.23+llmserve.standin", "0.5.23"], proc.stderr
    proc = subprocess.run([sys.executable, "-m", "sglang.launch_server", "--model-path", "/m", "--bogus"], capture_output=True, text=True,
                          env=env, cwd=str(tmp_path), timeout=30, check=False)
    assert proc.returncode == 2 and "unrecognized arguments" in proc.stderr


def test_sources_parse_as_python_39():
    files = [os.path.join(ROOT, "plugins", "module_utils", "endpoint_wait.py"),
             os.path.join(ROOT, "plugins", "modules", "wait_for_endpoint.py"),
             os.path.join(ROOT, "plugins", "plugin_utils", "sglang_flags.py")]
    for dirpath, _dirs, names in os.walk(STANDIN_SRC):
        files += [os.path.join(dirpath, n) for n in names if n.endswith(".py")]
    for path in files:
        with open(path) as handle:
            ast.parse(handle.read(), filename=path, feature_version=(3, 9))


# --- YAML subset reader ------------------------------------------------------------------------

SUBSET_SAMPLES = [
    "model-path: /models/x\ntp-size: 4\nmem-fraction-static: 0.85\nenable-metrics: true\n",
    "---\n# comment\napi-key: 'it''s # not a comment'\nhost: \"0.0.0.0\"  # trailing comment\nport: 30000\n",
    "json-model-override-args: '{\"standin_fail_warmup\": true}'\nwatchdog-timeout: 1200\n",
    "cuda-graph-bs-decode: [1, 2, 4, 8]\nlora-paths:\n  - a\n  - 'b c'\nempty:\nnone: null\ntilde: ~\n",
    "numa-node:\n- 0\n- 1\nlog-level: info\nyes-word: yes\noff-word: off\nneg: -3\nexp: 1.0e-3\n",
    "model-loader-extra-config: '{\"enable_multithread_load\": true, \"num_threads\": 8, \"very_long_key_name_here\":\n"
    "  \"a long value that a YAML emitter folds onto the next line\"}'\nplain: this is a\n  folded plain scalar\n",
]


@pytest.mark.parametrize("text", SUBSET_SAMPLES)
def test_yaml_subset_matches_pyyaml(text):
    yaml = pytest.importorskip("yaml")
    assert standin_yaml.parse_subset(text) == yaml.safe_load(text)


def test_yaml_subset_reads_to_nice_yaml_output():
    yaml = pytest.importorskip("yaml")
    data = {"api-key": "sk-" + "x" * 40, "served-model-name": "qwen3.5-122b-a10b",
            "json-model-override-args": json.dumps({"standin_fail_warmup": True, "note": "word " * 30}),
            "cuda-graph-bs-decode": [1, 2, 4], "enable-metrics": True, "mem-fraction-static": 0.9}
    text = yaml.safe_dump(data, default_flow_style=False, indent=4)  # what to_nice_yaml does
    assert standin_yaml.parse_subset(text) == data


@pytest.mark.parametrize("text,needle", [
    ("a:\n  b: 1\n", "nested mappings"),
    ("a: &x 1\n", "outside the YAML subset"),
    ("a: |\n  text\n", "block scalars"),
    ("a: {b: 1}\n", "outside the YAML subset"),
    ("a: 'open\n", "unterminated"),
    ("a: 1\na: 2\n", "duplicate key"),
    ("  a: 1\n", "unexpected indentation"),
    ("just text\n", "expected 'key: value'"),
    ("a: [1, [2]]\n", "nested flow"),
])
def test_yaml_subset_rejects_what_it_cannot_read(text, needle):
    with pytest.raises(standin_yaml.ConfigSyntaxError, match=needle):
        standin_yaml.parse_subset(text)


def test_module_and_standin_need_no_third_party_imports():
    """The stand-in must run on a bare Python: its imports are stdlib or its own package."""
    stdlib = set(getattr(sys, "stdlib_module_names", ())) or None
    if stdlib is None:
        pytest.skip("needs Python 3.10+ to list the standard library")
    for dirpath, _dirs, names in os.walk(STANDIN_SRC):
        for name in names:
            if not name.endswith(".py"):
                continue
            with open(os.path.join(dirpath, name)) as handle:
                tree = ast.parse(handle.read())
            for node in ast.walk(tree):
                mods = []
                if isinstance(node, ast.Import):
                    mods = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    mods = [node.module]
                for mod in mods:
                    top = mod.split(".")[0]
                    assert top in stdlib or top in ("sglang", "yaml", "__future__"), (name, mod)
