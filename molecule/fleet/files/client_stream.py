# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A bounded stream of chat completions through the gateway, CONCURRENCY at a time, until STOP_FILE appears (or
MAX_SECONDS pass); prints one JSON summary: requests, failures (with the first few), latency p50/p99.

    python3 client_stream.py NAME [CONCURRENCY] [MAX_SECONDS]

Runs on the gateway host as root; the client key is the workers' key, read from the gateway's root-only
environment file, so it is in no command line.
"""

import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request

NAME = sys.argv[1]
CONCURRENCY = int(sys.argv[2]) if len(sys.argv) > 2 else 4
MAX_SECONDS = float(sys.argv[3]) if len(sys.argv) > 3 else 900.0
STOP_FILE = "/tmp/client-stream-%s.stop" % NAME
URL = "http://127.0.0.1:8000/v1/chat/completions"
with open("/etc/sglang-gateway/sglang-gateway.env") as handle:
    KEY = [line.split("=", 1)[1].strip().strip('"') for line in handle if line.startswith("LLMSERVE_SMG_API_KEY=")][0]

results = []
lock = threading.Lock()
started = time.monotonic()


def one():
    body = json.dumps({"model": "tiny-llama", "messages": [{"role": "user", "content": "Count to ten."}],
                       "max_tokens": 16, "temperature": 0}).encode()
    request = urllib.request.Request(URL, data=body, method="POST", headers={
        "Content-Type": "application/json", "Authorization": "Bearer " + KEY})
    begin = time.monotonic()
    entry = {"at": round(begin - started, 3)}
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            answer = json.loads(response.read())
            entry["status"] = response.status
            entry["ok"] = bool(answer["choices"][0]["message"]["content"])
    except urllib.error.HTTPError as exc:
        entry.update(status=exc.code, ok=False, error=exc.read()[:200].decode("utf-8", "replace"))
    except (OSError, ValueError, KeyError) as exc:
        entry.update(status=0, ok=False, error=str(exc)[:200])
    entry["seconds"] = round(time.monotonic() - begin, 3)
    with lock:
        results.append(entry)


def loop():
    while not os.path.exists(STOP_FILE) and time.monotonic() - started < MAX_SECONDS:
        one()


threads = [threading.Thread(target=loop) for _index in range(CONCURRENCY)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
latencies = sorted(r["seconds"] for r in results if r["ok"])


def percentile(p):
    return latencies[min(len(latencies) - 1, int(round(p / 100.0 * (len(latencies) - 1))))] if latencies else None


failures = [r for r in results if not r["ok"]]
print(json.dumps({"name": NAME, "concurrency": CONCURRENCY, "seconds": round(time.monotonic() - started, 1),
                  "requests": len(results), "failed": len(failures), "failures": failures[:10],
                  "p50": percentile(50), "p99": percentile(99)}))
