# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A bounded client workload through the gateway until STOP_FILE appears (or MAX_SECONDS pass): CONCURRENCY loops of
short chat completions and STREAMS loops of streamed chat completions of STREAM_TOKENS tokens each (ignore_eos, so
every stream lasts the same number of tokens: several seconds on the CPU engine). Prints one JSON summary.

    python3 client_stream.py NAME [CONCURRENCY] [MAX_SECONDS] [STREAMS] [STREAM_TOKENS]

A short request fails on any error or an empty answer. A stream fails unless it ends with its `data: [DONE]` line
after a chunk with a finish_reason: a worker killed under it cuts the stream, and the gateway cannot retry a
response it has begun to send. The gateway's `smg_worker_retries_total` (summed over its labels) is read from its
metrics port before and after, so the summary says how many retries the gateway made to hide failures.

CLIENT_MODEL names the model the requests ask for (default tiny-llama). Runs on the gateway host as root; the client
key is the workers' key, read from the gateway's root-only environment file, so it is in no command line.
"""

import http.client
import json
import os
import re
import sys
import threading
import time
import urllib.error
import urllib.request

NAME = sys.argv[1]
CONCURRENCY = int(sys.argv[2]) if len(sys.argv) > 2 else 4
MAX_SECONDS = float(sys.argv[3]) if len(sys.argv) > 3 else 900.0
STREAMS = int(sys.argv[4]) if len(sys.argv) > 4 else 0
STREAM_TOKENS = int(sys.argv[5]) if len(sys.argv) > 5 else 1024
STOP_FILE = "/tmp/client-stream-%s.stop" % NAME
# the gateway host's own addresses; the environment may point elsewhere (a trial against a gateway on this machine)
URL = os.environ.get("CLIENT_GATEWAY", "http://127.0.0.1:8000") + "/v1/chat/completions"
METRICS_URL = os.environ.get("CLIENT_GATEWAY_METRICS", "http://127.0.0.1:29000") + "/metrics"
KEY_FILE = os.environ.get("CLIENT_KEY_FILE", "/etc/sglang-gateway/sglang-gateway.env")
# the name the workers serve the model under (the model scenario's workers serve it under their model link's path)
MODEL = os.environ.get("CLIENT_MODEL", "tiny-llama")
# label values are quoted and may hold "}" or an escaped quote
RETRIES = re.compile(r'^smg_worker_retries_total(?:\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})?\s+([0-9.eE+-]+)\s*$', re.M)
with open(KEY_FILE) as handle:
    KEY = [line.split("=", 1)[1].strip().strip('"') for line in handle if line.startswith("LLMSERVE_SMG_API_KEY=")][0]

results = {"requests": [], "streams": []}
lock = threading.Lock()
started = time.monotonic()


def gateway_retries():
    """The sum of smg_worker_retries_total over its series, or None when the metrics cannot be read."""
    try:
        with urllib.request.urlopen(METRICS_URL, timeout=10) as response:
            text = response.read().decode("utf-8", "replace")
    except (OSError, ValueError):
        return None
    try:
        return int(sum(float(value) for value in RETRIES.findall(text)))
    except (OverflowError, ValueError):  # 1e999, "1.2.3": a count that says nothing
        return None


def post(body):
    return urllib.request.Request(URL, data=json.dumps(body).encode(), method="POST", headers={
        "Content-Type": "application/json", "Authorization": "Bearer " + KEY})


def short_request(entry):
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Count to ten."}],
            "max_tokens": 16, "temperature": 0}
    with urllib.request.urlopen(post(body), timeout=120) as response:
        answer = json.loads(response.read())
        entry["status"] = response.status
        entry["ok"] = bool(answer["choices"][0]["message"]["content"])


def stream_request(entry):
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Count to a thousand."}],
            "max_tokens": STREAM_TOKENS, "temperature": 0, "stream": True, "ignore_eos": True}
    chunks, finished, done = 0, None, False
    with urllib.request.urlopen(post(body), timeout=300) as response:
        entry["status"] = response.status
        for raw in response:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:"):
                continue
            data = line[len("data:"):].strip()
            if data == "[DONE]":
                done = True
                break
            event = json.loads(data)
            if "error" in event:
                raise ValueError("error event: %s" % json.dumps(event["error"])[:150])
            chunks += 1
            finished = (event.get("choices") or [{}])[0].get("finish_reason") or finished
    entry["chunks"] = chunks
    entry["ok"] = done and finished is not None
    if not entry["ok"]:
        entry["error"] = "stream cut after %d chunks (finish_reason %s, [DONE] %s)" % (chunks, finished, done)


def one(kind, send):
    begin = time.monotonic()
    entry = {"at": round(begin - started, 3)}
    try:
        send(entry)
    except urllib.error.HTTPError as exc:
        entry.update(status=exc.code, ok=False, error=exc.read()[:200].decode("utf-8", "replace"))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError, http.client.HTTPException) as exc:
        # HTTPException: IncompleteRead when the connection closes in the middle of a chunked body; TypeError,
        # AttributeError, IndexError: an answer of the wrong shape ([] or {"choices": 5}), a failure like any other,
        # never a thread that dies and takes its count with it
        entry.update(ok=False, error=str(exc)[:200])
        entry.setdefault("status", 0)
    entry["seconds"] = round(time.monotonic() - begin, 3)
    with lock:
        results[kind].append(entry)
    if not entry["ok"]:
        # a client that retries at once would count one outage thousands of times
        time.sleep(0.2)


def loop(kind, send):
    while not os.path.exists(STOP_FILE) and time.monotonic() - started < MAX_SECONDS:
        one(kind, send)


def summary(entries):
    latencies = sorted(r["seconds"] for r in entries if r["ok"])

    def percentile(p):
        if not latencies:
            return None
        return latencies[min(len(latencies) - 1, int(round(p / 100.0 * (len(latencies) - 1))))]

    failures = [r for r in entries if not r["ok"]]
    return {"requests": len(entries), "failed": len(failures), "failures": failures[:10],
            "p50": percentile(50), "p99": percentile(99)}


retries_before = gateway_retries()
threads = [threading.Thread(target=loop, args=("requests", short_request)) for _index in range(CONCURRENCY)]
threads += [threading.Thread(target=loop, args=("streams", stream_request)) for _index in range(STREAMS)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
retries_after = gateway_retries()
report = {"name": NAME, "concurrency": CONCURRENCY, "seconds": round(time.monotonic() - started, 1)}
report.update(summary(results["requests"]))
if STREAMS:
    report["streams"] = dict(summary(results["streams"]), concurrency=STREAMS, tokens=STREAM_TOKENS)
report["gateway_retries"] = (None if retries_before is None or retries_after is None
                             else retries_after - retries_before)
print(json.dumps(report))
