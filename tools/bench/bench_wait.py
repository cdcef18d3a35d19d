# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark: llmserve.sglang.wait_for_endpoint against uri+until and the seed's curl loop.

One run, the same server timelines for every method, side by side:

* "ready" samples: for each sample the SGLang stand-in (tools/standin) becomes ready after a
  time drawn from a seeded RNG in [5, 60] s (port closed while "loading", 503 during "warm-up").
  Every method gets its own stand-in with that exact timeline, all started at the same moment, and
  runs as its own ansible-playbook (local connection) at the same time.
* a "crash" sample: the stand-in runs as a systemd unit in a test container and SIGKILLs itself at
  the end of warm-up (systemd then restarts it, Restart=on-failure); the methods run against the
  container through the podman connection, like a remote host.
* "real" samples: the real SGLang 0.5.23 (CPU, tiny model; tools/engine) starts on 127.0.0.1
  once per sample and every method polls that one server at the same time. "Ready" is the
  earlier of SGLang's own "fired up" log line and a 50 ms /ready probe; the timeline also records
  when the port opened and when /v1/models first answered 200 (during warm-up, before ready).

Measured per method: detection latency (server ready -> task result on the controller), crash
detection latency (main process killed -> task result), HTTP requests the server answered (its own
event log), module executions (AnsiballZ payloads transferred, from -vvv), controller CPU seconds
(rusage of ansible-playbook and everything it waited for).

    python tools/bench/bench_wait.py [--samples 6] [--seed 20261129] [--no-crash] [--json FILE]
        [--real-venv VENV --real-model MODEL [--real-samples 3]]

Run it through ``make bench`` (tools/bench/run.sh), which sets ANSIBLE_COLLECTIONS_PATH and prepares the
wheel, the container host and the real SGLang venv and model.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import re
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
STANDIN_SRC = os.path.join(ROOT, "tools", "standin", "src")
ENGINE_DIR = os.path.join(ROOT, "tools", "engine")
PLAYBOOKS = os.path.join(HERE, "playbooks")
CALLBACKS = os.path.join(HERE, "callback_plugins")
BIN = os.path.dirname(sys.executable)


class Method(object):
    def __init__(self, key, label, playbook, path, extra, crash_extra=None):
        self.key = key
        self.label = label
        self.playbook = playbook
        self.path = path
        self.extra = extra
        self.crash_extra = crash_extra if crash_extra is not None else extra


# The crash budget is 30 s for every method: uri/curl retry counts are scaled to it (delay x retries = 30).
CRASH_BUDGET = 30
METHODS = [
    Method("module-ready", "(a) wait_for_endpoint, defaults, /ready", "wait_module.yml", "/ready", {},
           {"bench_budget": CRASH_BUDGET}),
    Method("module-health", "(a) wait_for_endpoint, defaults, /health", "wait_module.yml", "/health", {},
           {"bench_budget": CRASH_BUDGET}),
    Method("uri-10", "(b) uri until, delay 10, retries 40, /health", "wait_uri.yml", "/health",
           {"bench_delay": 10, "bench_retries": 40}, {"bench_delay": 10, "bench_retries": CRASH_BUDGET // 10}),
    Method("uri-1", "(b) uri until, delay 1, retries 400, /health", "wait_uri.yml", "/health",
           {"bench_delay": 1, "bench_retries": 400}, {"bench_delay": 1, "bench_retries": CRASH_BUDGET}),
    Method("curl", "(c) seed curl loop, sleep 10, 40 tries, /v1/models", "wait_curl.yml", "/v1/models",
           {"bench_delay": 10, "bench_retries": 40}, {"bench_delay": 10, "bench_retries": CRASH_BUDGET // 10}),
]


SHORT_LABELS = {"module-ready": "(a) module /ready", "module-health": "(a) module /health",
                "uri-10": "(b) uri delay 10 /health", "uri-1": "(b) uri delay 1 /health",
                "curl": "(c) curl loop /v1/models"}


def log(message):
    sys.stderr.write("[bench %s] %s\n" % (time.strftime("%H:%M:%S"), message))
    sys.stderr.flush()


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def collections_tree():
    """The ANSIBLE_COLLECTIONS_PATH entry that holds this checkout as llmserve.sglang (make bench sets it)."""
    for tree in os.environ.get("ANSIBLE_COLLECTIONS_PATH", "").split(os.pathsep):
        if tree and os.path.realpath(os.path.join(tree, "ansible_collections", "llmserve", "sglang")) == ROOT:
            return tree
    raise SystemExit("ANSIBLE_COLLECTIONS_PATH has no ansible_collections/llmserve/sglang pointing at %s; "
                     "run the benchmark through 'make bench'" % ROOT)


def read_jsonl(path):
    if not os.path.exists(path):
        return []
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def timeline_for(rng):
    """Ready time in [5, 60] s, a fifth of it (1..8 s) in warm-up."""
    ready = round(rng.uniform(5.0, 60.0), 2)
    warmup = round(min(8.0, max(1.0, ready / 5.0)), 2)
    return ready, warmup, round(ready - warmup, 2)


class Run(object):
    """One ansible-playbook process for one method."""

    def __init__(self, method, workdir, tag, inventory, extra, env):
        self.method = method
        self.times = os.path.join(workdir, "%s-%s-times.jsonl" % (tag, method.key))
        self.output = os.path.join(workdir, "%s-%s-ansible.log" % (tag, method.key))
        env = dict(env, BENCH_TIMES_FILE=self.times)
        if os.path.exists(self.times):
            os.unlink(self.times)
        argv = [os.path.join(BIN, "ansible-playbook"), "-vvv", "-i", inventory,
                os.path.join(PLAYBOOKS, method.playbook), "-e", json.dumps(extra)]
        self.handle = open(self.output, "w")
        self.proc = subprocess.Popen(argv, stdout=self.handle, stderr=subprocess.STDOUT, env=env)
        self.rc = None
        self.cpu = None

    def poll(self):
        if self.rc is not None:
            return True
        pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
        if pid == 0:
            return False
        self.rc = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8
        self.proc.returncode = self.rc
        self.cpu = usage.ru_utime + usage.ru_stime
        self.handle.close()
        return True

    def started(self):
        return any(r["task"] == "Wait for the endpoint" and r["outcome"] == "started" for r in read_jsonl(self.times))

    def result(self):
        records = [r for r in read_jsonl(self.times) if r["task"] == "Wait for the endpoint" and r["outcome"] != "started"]
        record = records[-1] if records else {}
        with open(self.output) as handle:
            text = handle.read()
        # local connection: "PUT src TO dst"; podman connection: "PUT: src -> dst"
        executions = len(re.findall(r"PUT:? \S+ (?:TO|->) \S+/AnsiballZ_\w+\.py", text))
        if self.method.playbook == "wait_curl.yml":
            attempts = record.get("stdout_lines")
        else:
            attempts = record.get("attempts")
        return {"end": record.get("t"), "outcome": record.get("outcome"), "attempts": attempts,
                "module_noticed": record.get("main_exit_seconds_ago"),
                "executions": executions, "cpu": round(self.cpu, 3), "rc": self.rc, "msg": record.get("msg"),
                "history": record.get("status_history")}


def base_env():
    env = dict(os.environ)
    env.update(ANSIBLE_COLLECTIONS_PATH=collections_tree(), ANSIBLE_CALLBACK_PLUGINS=CALLBACKS,
               ANSIBLE_CALLBACKS_ENABLED="bench_times", ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_HOST_KEY_CHECKING="0", ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_PIPELINING="0",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        env.pop(var, None)
    return env


def local_inventory(workdir):
    """Inventory for the loopback samples: this machine over the local connection, this Python."""
    inventory = os.path.join(workdir, "local.ini")
    with open(inventory, "w") as handle:
        handle.write("[bench]\nlocalhost ansible_connection=local ansible_python_interpreter=%s\n" % sys.executable)
    return inventory


def wait_started(runs, limit=120):
    """Block until every playbook has reached its wait task (the timelines start only then)."""
    deadline = time.monotonic() + limit
    while not all(run.started() for run in runs):
        for run in runs:
            if run.poll():
                raise SystemExit("ansible-playbook for %s ended before its wait task; see %s" % (run.method.key, run.output))
        if time.monotonic() > deadline:
            raise SystemExit("playbooks did not reach their wait task within %s s" % limit)
        time.sleep(0.05)
    time.sleep(0.5)  # module transfer and start-up of the first attempt


def wait_all(runs, limit):
    deadline = time.monotonic() + limit
    while not all(run.poll() for run in runs):
        if time.monotonic() > deadline:
            for run in runs:
                if run.rc is None:
                    run.proc.kill()
            raise SystemExit("benchmark run exceeded %s s" % limit)
        time.sleep(0.05)


def ready_sample(index, ready, warmup, load, workdir):
    """All methods side by side against identical stand-in timelines on 127.0.0.1."""
    inventory = local_inventory(workdir)
    env = base_env()
    servers, runs, plans = [], [], []
    for method in METHODS:
        port = free_port()
        events = os.path.join(workdir, "s%d-%s-events.jsonl" % (index, method.key))
        if os.path.exists(events):
            os.unlink(events)
        plans.append((method, port, events))
        extra = dict(method.extra, bench_url="http://127.0.0.1:%d%s" % (port, method.path))
        runs.append(Run(method, workdir, "s%d" % index, inventory, extra, env))
    # the clock of every timeline starts once all methods are polling
    wait_started(runs)
    for method, port, events in plans:
        senv = dict(os.environ, PYTHONPATH=STANDIN_SRC, LLMSERVE_STANDIN_LOAD_SECONDS=str(load),
                    LLMSERVE_STANDIN_WARMUP_SECONDS=str(warmup), LLMSERVE_STANDIN_EVENT_LOG=events)
        proc = subprocess.Popen([sys.executable, "-m", "sglang.launch_server", "--model-path", "/bench/model",
                                 "--served-model-name", "bench", "--port", str(port)],
                                env=senv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        servers.append((method, proc, events))
    try:
        wait_all(runs, 900)
    finally:
        for _method, proc, _events in servers:
            proc.send_signal(signal.SIGTERM)
        for _method, proc, _events in servers:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
    rows = {}
    for run, (method, _proc, events_path) in zip(runs, servers):
        events = read_jsonl(events_path)
        ready_at = next((e["t"] for e in events if e["event"] == "ready"), None)
        res = run.result()
        res["requests"] = sum(1 for e in events if e["event"] == "request")
        res["latency"] = round(res["end"] - ready_at, 3) if res["end"] and ready_at else None
        rows[method.key] = res
    return rows


# --- the real SGLang server's start-up ---------------------------------------------------------

def load_smoke_server():
    """tools/engine/smoke_server.py: how the real server is launched, stopped and cleaned up after."""
    spec = importlib.util.spec_from_file_location("llmserve_smoke_server", os.path.join(ENGINE_DIR, "smoke_server.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class StartupObserver(object):
    """Records one real SGLang start-up on the benchmark's clock (time.time()).

    Two independent witnesses of "ready": the server's own log line, written right after the
    warm-up succeeded and the status flipped to Up, and a probe of /ready every 50 ms (a flag
    check in SGLang). The earlier of the two is the moment the server became ready. The probe also
    records when the port opened and when /v1/models first answered 200.
    """

    READY_LINE = "The server is fired up and ready to roll"

    def __init__(self, smoke, process, port, log_path):
        self.smoke = smoke
        self.process = process
        self.port = port
        self.log_path = log_path
        self.marks = {"launched": time.time()}
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._read_log, daemon=True),
                        threading.Thread(target=self._probe, daemon=True)]
        for thread in self.threads:
            thread.start()

    def _mark(self, name):
        self.marks.setdefault(name, time.time())

    def _read_log(self):
        with open(self.log_path, "w") as log:
            for line in iter(self.process.stdout.readline, ""):
                if self.READY_LINE in line:
                    self._mark("ready_log")
                log.write(line)
        self._mark("exited")

    def _probe(self):
        base = "http://127.0.0.1:%d" % self.port
        while not self.stopping.is_set() and "ready_probe" not in self.marks and self.process.poll() is None:
            if "port_open" not in self.marks:
                if self.smoke.port_open(self.port):
                    self._mark("port_open")
                    continue
            else:
                if "models_200" not in self.marks and self.smoke.http("GET", base + "/v1/models", timeout=1.0)[0] == 200:
                    self._mark("models_200")
                if self.smoke.http("GET", base + "/ready", timeout=1.0)[0] == 200:
                    self._mark("ready_probe")
                    break
            time.sleep(0.05)

    def ready_at(self):
        seen = [self.marks[k] for k in ("ready_probe", "ready_log") if k in self.marks]
        return min(seen) if seen else None

    def close(self):
        self.stopping.set()
        for thread in self.threads:
            thread.join(15)


def real_sample(index, venv, model, workdir):
    """Every method side by side against ONE real SGLang server starting on 127.0.0.1.

    The same server, so literally the same timeline for all; each method polls the path it would
    poll in a playbook (the module /ready and /health, uri /health, the curl loop /v1/models).
    """
    smoke = load_smoke_server()
    inventory = local_inventory(workdir)
    env = base_env()
    port = free_port()
    runs = []
    for method in METHODS:
        extra = dict(method.extra, bench_url="http://127.0.0.1:%d%s" % (port, method.path))
        runs.append(Run(method, workdir, "real%d" % index, inventory, extra, env))
    wait_started(runs)
    shm_before = set(smoke.glob.glob(smoke.SHM_GLOB))
    process = smoke.launch(venv, model, port, subprocess.PIPE, text=True)
    observer = StartupObserver(smoke, process, port, os.path.join(workdir, "real%d-server.log" % index))
    try:
        wait_all(runs, 900)
    finally:
        exit_code = smoke.stop(process)
        observer.close()  # its log reader ends at the server's end of output, so after stop()
        removed = smoke.remove_leftover_shm(shm_before)
    launched = observer.marks["launched"]
    ready_at = observer.ready_at()
    timeline = {name: round(value - launched, 3) for name, value in observer.marks.items()}
    timeline["ready"] = round(ready_at - launched, 3) if ready_at else None
    rows = {}
    for run in runs:
        res = run.result()
        res["requests"] = None  # one shared server: requests cannot be told apart per method
        res["latency"] = round(res["end"] - ready_at, 3) if res["end"] and ready_at else None
        res["end_after_launch"] = round(res["end"] - launched, 3) if res["end"] else None
        rows[run.method.key] = res
    return {"timeline": timeline, "rows": rows, "exit_code": exit_code, "shm_removed": removed, "port": port}


def history_text(history):
    """[{status, first_seen, count}, ...] -> 'refused x84 -> 503 x9 -> 200'."""
    parts = []
    for entry in history or []:
        name = "refused" if entry.get("status") == -1 else str(entry.get("status"))
        parts.append("%s x%s" % (name, entry.get("count")) if entry.get("count", 1) > 1 else name)
    return " -> ".join(parts) or "-"


# --- crash sample in a systemd test container ------------------------------------------------

def podman(*args, check=True):
    return subprocess.run(["podman"] + list(args), capture_output=True, text=True, check=check)


def container_prepare(container, methods, load, warmup):
    units = {}
    script = ["set -e", "python3 -m venv /opt/standin",
              "/opt/standin/bin/pip install -q --no-index --find-links /opt/llmserve-wheelhouse sglang==0.5.23",
              "mkdir -p /var/log/bench"]
    for number, method in enumerate(methods):
        port = 31001 + number
        name = "bench-%s.service" % method.key
        units[method.key] = (name, port)
        unit = (
            "[Unit]\nDescription=bench stand-in %s\n[Service]\nType=exec\n"
            "Environment=LLMSERVE_STANDIN_LOAD_SECONDS=%s LLMSERVE_STANDIN_WARMUP_SECONDS=%s "
            "LLMSERVE_STANDIN_FAIL=warmup LLMSERVE_STANDIN_EVENT_LOG=/var/log/bench/%s.jsonl\n"
            "ExecStart=/opt/standin/bin/sglang serve --model-path /bench/model --port %d\n"
            "Restart=on-failure\nRestartSec=5\n" % (method.key, load, warmup, method.key, port))
        script.append("cat > /etc/systemd/system/%s <<'UNIT'\n%sUNIT" % (name, unit))
    script.append("systemctl daemon-reload")
    podman("exec", container, "bash", "-c", "\n".join(script))
    return units


def crash_sample(container, workdir, load=25.0, warmup=5.0):
    methods = METHODS
    units = container_prepare(container, methods, load, warmup)
    inventory = os.path.join(workdir, "container.ini")
    with open(inventory, "w") as handle:
        handle.write("[bench]\n%s ansible_connection=containers.podman.podman ansible_python_interpreter=/usr/bin/python3\n"
                     % container)
    env = base_env()
    # the units must run before the module takes its baseline, so they start first; loading (5 s)
    # (25 s) covers the playbooks' start-up, even on a busy machine
    podman("exec", container, "systemctl", "start", *[units[m.key][0] for m in methods])
    runs = []
    for method in methods:
        name, port = units[method.key]
        extra = dict(method.crash_extra, bench_url="http://127.0.0.1:%d%s" % (port, method.path))
        if method.playbook == "wait_module.yml":
            extra["bench_unit"] = name
        runs.append(Run(method, workdir, "crash", inventory, extra, env))
    wait_all(runs, 600)
    podman("exec", container, "systemctl", "stop", *[units[m.key][0] for m in methods], check=False)
    rows = {}
    for run, method in zip(runs, methods):
        out = podman("exec", container, "cat", "/var/log/bench/%s.jsonl" % method.key, check=False).stdout
        events = [json.loads(line) for line in out.splitlines() if line.strip()]
        res = run.result()
        crashes = [e["t"] for e in events if e["event"] == "crash" and (res["end"] is None or e["t"] <= res["end"])]
        res["requests"] = sum(1 for e in events if e["event"] == "request")
        res["crashes"] = len(crashes)
        # the unit restarts after each crash: measure from the last crash before the task returned
        res["latency"] = round(res["end"] - crashes[-1], 3) if res["end"] and crashes else None
        res["since_first_crash"] = round(res["end"] - crashes[0], 3) if res["end"] and crashes else None
        # only the module reports the crash itself; the others just run out of retries
        # it must have been polling before the crash it reports ("N requests" with N > 0)
        polled = re.search(r"\[after [0-9.]+ s, ([0-9]+) requests", res.get("msg") or "")
        res["identified"] = (res["outcome"] == "failed" and bool(polled) and int(polled.group(1)) > 0
                             and bool(re.search(r"restart|unit .* is (failed|inactive)", res.get("msg") or "")))
        rows[method.key] = res
    return rows


# --- report ----------------------------------------------------------------------------------

def fmt(value, unit="s"):
    return "-" if value is None else ("%.2f %s" % (value, unit)).strip()


def method_stats(method, rows):
    """Latency and cost figures of one method over its samples' rows."""
    latencies = [r["latency"] for r in rows if r["latency"] is not None and r["outcome"] == "ok"]
    on_time = [x for x in latencies if x >= 0]
    premature = [x for x in latencies if x < 0]

    def mean(key, digits=1):
        values = [r[key] for r in rows if r[key] is not None]
        return round(statistics.mean(values), digits) if values else None

    return {
        "method": method.key, "label": method.label, "path": method.path,
        "median_latency": round(statistics.median(on_time), 3) if on_time else None,
        "max_latency": round(max(on_time), 3) if on_time else None,
        "premature": len(premature), "premature_by_max": round(-min(premature), 2) if premature else None,
        "failed": sum(1 for r in rows if r["outcome"] != "ok"),
        "requests_per_wait": mean("requests"),
        "attempts_per_wait": round(statistics.mean(r["attempts"] or 0 for r in rows), 1) if rows else None,
        "executions_per_wait": mean("executions"), "cpu_per_wait": mean("cpu", 2),
    }


def early_text(entry, count):
    if not entry["premature"]:
        return "0"
    return "%d of %d (up to %.1f s early)" % (entry["premature"], count, entry["premature_by_max"])


def summarise(samples, crash):
    table = []
    for method in METHODS:
        entry = method_stats(method, [s["rows"][method.key] for s in samples])
        if crash:
            c = crash[method.key]
            entry.update(crash_latency=c["latency"], crash_identified=c["identified"], crash_executions=c["executions"],
                         crash_noticed=c["module_noticed"],
                         crash_since_first=c["since_first_crash"], crash_count=c["crashes"],
                         crash_requests=c["requests"], crash_cpu=c["cpu"], crash_outcome=c["outcome"])
        table.append(entry)
    return table


def summarise_real(real):
    return [method_stats(method, [sample["rows"][method.key] for sample in real]) for method in METHODS]


def markdown_real(table, real):
    lines = [
        "| sample | port open | /v1/models 200 | ready (/ready 200 or log line) | "
        + " | ".join(SHORT_LABELS[e["method"]] for e in table) + " |",
        "|---" * (4 + len(table)) + "|",
    ]
    for number, sample in enumerate(real, 1):
        t = sample["timeline"]
        cells = []
        for e in table:
            row = sample["rows"][e["method"]]
            if row["outcome"] != "ok":
                cells.append("%s after %s" % (row["outcome"], fmt(row["end_after_launch"])))
            else:
                cells.append("%s (%s%.2f)" % (fmt(row["end_after_launch"]), "+" if row["latency"] >= 0 else "",
                                              row["latency"]))
        marks = [fmt(t.get(name)) for name in ("port_open", "models_200", "ready")]
        lines.append("| %d | %s | %s |" % (number, " | ".join(marks), " | ".join(cells)))
    lines.append("")
    for number, sample in enumerate(real, 1):
        lines.append("* sample %d, status history seen by wait_for_endpoint: %s" % (number, "; ".join(
            "%s %s" % (e["path"], history_text(sample["rows"][e["method"]]["history"]))
            for e in table if sample["rows"][e["method"]]["history"])))
    lines += [
        "",
        "| method | median detect | max detect | early (ready too soon) | failed | attempts/wait (client)"
        " | module executions/wait | controller CPU s/wait |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for e in table:
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            e["label"], fmt(e["median_latency"]), fmt(e["max_latency"]), early_text(e, len(real)), e["failed"],
            e["attempts_per_wait"], e["executions_per_wait"], e["cpu_per_wait"]))
    return "\n".join(lines)


def check_real_targets(table, real):
    by = {e["method"]: e for e in table}
    modules = (by["module-ready"], by["module-health"])
    return [
        ("real server: every start-up reached ready", all(s["timeline"].get("ready") is not None for s in real),
         [s["timeline"].get("ready") for s in real]),
        ("real server: median detection on /ready <= 0.5 s", modules[0]["median_latency"] is not None
         and modules[0]["median_latency"] <= 0.5, modules[0]["median_latency"]),
        ("real server: no module wait failed or was early", all(e["failed"] == 0 and e["premature"] == 0 for e in modules),
         sum(e["failed"] + e["premature"] for e in modules)),
        ("real server: exactly 1 module execution per wait", all(e["executions_per_wait"] == 1 for e in modules),
         modules[0]["executions_per_wait"]),
        # /health runs a generation, so its own duration bounds every method that polls it; polling it
        # 4 times a second must not make the module slower than uri polling once a second
        ("real server: /health median not above uri delay 1 + 0.25 s", modules[1]["median_latency"] is not None
         and by["uri-1"]["median_latency"] is not None
         and modules[1]["median_latency"] <= by["uri-1"]["median_latency"] + 0.25,
         (modules[1]["median_latency"], by["uri-1"]["median_latency"])),
    ]


def markdown(table, samples, crash_ran):
    lines = [
        "| method | median detect | max detect | early (ready too soon) | crash detected after | requests/wait"
        " (server) | attempts/wait (client) | module executions/wait | controller CPU s/wait |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for e in table:
        early = early_text(e, len(samples))
        if not crash_ran:
            crash = "not run"
        elif e.get("crash_identified"):
            crash = "reported: noticed %s after the kill, result on the controller %s later" % (
                fmt(e["crash_noticed"]), fmt(e["crash_latency"]))
        elif e.get("crash_outcome") == "ok":
            crash = "false success: declared ready during the doomed warm-up"
        else:
            crash = "not reported: gave up %s after the first crash (%s crashes)" % (
                fmt(e.get("crash_since_first")), e.get("crash_count"))
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            e["label"], fmt(e["median_latency"]), fmt(e["max_latency"]), early, crash, e["requests_per_wait"],
            e["attempts_per_wait"], e["executions_per_wait"], e["cpu_per_wait"]))
    return "\n".join(lines)


def check_targets(table, ready_ran, crash_ran):
    by = {e["method"]: e for e in table}
    checks = [] if not ready_ran else [
        ("median detection on /ready <= 0.5 s", by["module-ready"]["median_latency"] is not None
         and by["module-ready"]["median_latency"] <= 0.5, by["module-ready"]["median_latency"]),
        ("median detection on /health <= 1.5 s", by["module-health"]["median_latency"] is not None
         and by["module-health"]["median_latency"] <= 1.5, by["module-health"]["median_latency"]),
        ("exactly 1 module execution per wait", by["module-ready"]["executions_per_wait"] == 1
         and by["module-health"]["executions_per_wait"] == 1, by["module-ready"]["executions_per_wait"]),
        ("every module wait succeeded", by["module-ready"]["failed"] == 0 and by["module-health"]["failed"] == 0,
         by["module-ready"]["failed"] + by["module-health"]["failed"]),
    ]
    if crash_ran:
        for key in ("module-ready", "module-health"):
            e = by[key]
            checks.append(("%s: crash noticed <= 2 s after the kill" % key,
                           bool(e.get("crash_identified")) and e.get("crash_noticed") is not None
                           and e["crash_noticed"] <= 2.0, e.get("crash_noticed")))
    return checks


def main(argv=None):
    parser = argparse.ArgumentParser(description="wait_for_endpoint vs uri+until vs curl loop")
    parser.add_argument("--samples", type=int, default=6, help="ready timelines (default 6)")
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--container", help="running systemd test container for the crash sample")
    parser.add_argument("--no-crash", action="store_true", help="skip the crash sample (no container)")
    parser.add_argument("--real-venv", help="venv with the real SGLang (tools/engine/install_sglang_venv.sh)")
    parser.add_argument("--real-model", help="model directory for it (tools/engine/make_tiny_model.py)")
    parser.add_argument("--real-samples", type=int, default=3, help="real SGLang start-ups (default 3)")
    parser.add_argument("--json", help="write all measurements to this file")
    parser.add_argument("--workdir", help="keep logs here (default: a temporary directory)")
    args = parser.parse_args(argv)
    if not args.no_crash and not args.container:
        parser.error("--container NAME is needed for the crash sample (or --no-crash)")
    if bool(args.real_venv) != bool(args.real_model):
        parser.error("--real-venv and --real-model go together")
    collections_tree()  # before anything starts

    workdir = args.workdir or tempfile.mkdtemp(prefix="llmserve-bench-")
    os.makedirs(workdir, exist_ok=True)
    rng = random.Random(args.seed)
    started = time.monotonic()
    samples = []
    crash = None
    if not args.no_crash:
        log("crash sample: 25 s loading, 5 s warm-up, then SIGKILL; budget %d s for every method" % CRASH_BUDGET)
        crash = crash_sample(args.container, workdir)
        for key, row in crash.items():
            log("  %-14s %-6s last crash -> result %s s (first crash -> result %s s, %s crashes), reported: %s"
                " (module noticed after %s s), executions %s, cpu %.2f s" % (
                    key, row["outcome"], row["latency"], row["since_first_crash"], row["crashes"], row["identified"],
                    row["module_noticed"], row["executions"], row["cpu"]))
    for index in range(args.samples):
        ready, warmup, load = timeline_for(rng)
        log("ready sample %d/%d: ready at %.2f s (loading %.2f s + warm-up %.2f s)" % (
            index + 1, args.samples, ready, load, warmup))
        rows = ready_sample(index, ready, warmup, load, workdir)
        samples.append({"ready": ready, "warmup": warmup, "load": load, "rows": rows})
        for key, row in rows.items():
            log("  %-14s %-6s latency %7s s  requests %4s  executions %3s  cpu %5.2f s" % (
                key, row["outcome"], row["latency"], row["requests"], row["executions"], row["cpu"]))
    real = []
    if args.real_venv:
        for index in range(args.real_samples):
            log("real SGLang sample %d/%d: one server from %s, every method polling it" % (
                index + 1, args.real_samples, args.real_venv))
            sample = real_sample(index, args.real_venv, args.real_model, workdir)
            real.append(sample)
            t = sample["timeline"]
            log("  port open %s s, /v1/models 200 %s s, ready %s s (probe %s, log %s), exit code %s, shm removed %d" % (
                t.get("port_open"), t.get("models_200"), t.get("ready"), t.get("ready_probe"), t.get("ready_log"),
                sample["exit_code"], len(sample["shm_removed"])))
            for key, row in sample["rows"].items():
                log("  %-14s %-6s at %7s s  latency %7s s  attempts %4s  executions %3s  cpu %5.2f s  %s" % (
                    key, row["outcome"], row["end_after_launch"], row["latency"], row["attempts"], row["executions"],
                    row["cpu"], history_text(row["history"]) if row["history"] else ""))
    table = summarise(samples, crash) if samples or crash else None
    checks = check_targets(table, bool(samples), crash is not None) if table else []
    real_table = summarise_real(real) if real else None
    if real:
        checks += check_real_targets(real_table, real)
    report = {"seed": args.seed, "samples": samples, "crash": crash, "table": table,
              "real": real, "real_table": real_table,
              "checks": [{"target": t, "ok": ok, "value": v} for t, ok, v in checks],
              "wall_seconds": round(time.monotonic() - started, 1), "workdir": workdir}
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as handle:
            json.dump(report, handle, indent=2)
    print()
    print("Seed %d, %d ready samples (ready at %s s), crash sample: %s; wall %.0f s" % (
        args.seed, len(samples), ", ".join("%.1f" % s["ready"] for s in samples),
        "yes" if crash else "no", report["wall_seconds"]))
    print()
    if table:
        print(markdown(table, samples, crash is not None))
        print()
    if real:
        print("Real SGLang start-ups (seconds after launch; in brackets: result minus ready):")
        print()
        print(markdown_real(real_table, real))
        print()
    failed = 0
    for target, ok, value in checks:
        print("target %-48s %s (measured %s)" % (target, "PASS" if ok else "FAIL", value))
        failed += 0 if ok else 1
    print("bench: %d targets passed, %d failed" % (len(checks) - failed, failed))
    print("logs: %s" % shlex.quote(workdir))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
