# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the real SGLang does on SIGTERM with requests in flight: its exit code and how long it drains.

    python3 tools/engine/sigterm_drain.py --venv VENV --model MODEL_DIR [--port 31010] [--requests 4]
                                          [--tokens 256] [--samples 2] [--out FILE]
                                          [--kill-mode mixed|control-group|both]

Standard library only. For each sample: start the server on 127.0.0.1 (tools/engine/smoke_server.py), wait until
/health is 200, start REQUESTS concurrent /generate calls of TOKENS new tokens each (ignore_eos, so each one really
generates that many), wait until all of them are running (the server's log shows the batch), send SIGTERM to the
main PID, and record: the main process's exit code and time to exit after SIGTERM, each in-flight request's outcome
(HTTP status, tokens generated, when it ended), whether a request started AFTER the SIGTERM was accepted, and when
the port closed. Prints one JSON report; the sglang_server role's TimeoutStopSec/SuccessExitStatus rest on it
(roles/sglang_server/README.md, "Stopping").
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import smoke_server  # noqa: E402  pylint: disable=wrong-import-position


def generate(port, tokens, timeout):
    body = {"text": "Once upon a time", "sampling_params": {"max_new_tokens": tokens, "temperature": 0,
                                                            "ignore_eos": True}}
    started = time.monotonic()
    status, answer = smoke_server.http("POST", "http://%s:%d/generate" % (smoke_server.HOST, port), body, timeout)
    meta = answer.get("meta_info", {}) if isinstance(answer, dict) else {}
    return {"status": status, "completion_tokens": meta.get("completion_tokens"),
            "ended": time.monotonic(), "started": started,
            "error": None if status == 200 else (str(answer)[:300] if answer else "no answer")}


def sample(venv, model, port, requests, tokens, log_path, kill_mode="mixed"):
    before = glob.glob(smoke_server.SHM_GLOB)
    with open(log_path, "w") as log:
        server = smoke_server.launch(venv, model, port, log)
    result = {"requests": requests, "tokens": tokens, "kill_mode": kill_mode}
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if smoke_server.http("GET", "http://%s:%d/health" % (smoke_server.HOST, port), timeout=5)[0] == 200:
                break
            if server.poll() is not None:
                raise RuntimeError("server exited during start-up: %s" % server.returncode)
            time.sleep(0.1)
        else:
            raise RuntimeError("server not ready in 300 s")
        # how long one request of this size takes on its own, for scale
        alone = generate(port, tokens, 300)
        result["alone_seconds"] = round(alone["ended"] - alone["started"], 2)
        outcomes = [None] * requests
        threads = []
        for index in range(requests):
            def run(i=index):
                outcomes[i] = generate(port, tokens, 600)
            thread = threading.Thread(target=run, daemon=True)
            thread.start()
            threads.append(thread)
        # SIGTERM a third of the way into the batch: every request is running and far from done
        time.sleep(max(0.5, result["alone_seconds"] / 3.0))
        sigterm = time.monotonic()
        if kill_mode == "control-group":
            # what systemd's default KillMode=control-group does: SIGTERM to every process of the service at once
            os.killpg(server.pid, signal.SIGTERM)
        else:
            # KillMode=mixed: SIGTERM to the main process only
            server.send_signal(signal.SIGTERM)
        late = {}

        def late_request():
            time.sleep(0.5)
            late.update(generate(port, 8, 60))
        late_thread = threading.Thread(target=late_request, daemon=True)
        late_thread.start()
        port_closed = None
        while server.poll() is None and time.monotonic() - sigterm < 600:
            if port_closed is None and not smoke_server.port_open(port):
                port_closed = time.monotonic()
            time.sleep(0.05)
        exited = time.monotonic()
        for thread in threads + [late_thread]:
            thread.join(timeout=30)
        result.update({
            "exit_code": server.returncode,
            "exit_seconds_after_sigterm": round(exited - sigterm, 2),
            "port_closed_seconds_after_sigterm": round(port_closed - sigterm, 2) if port_closed else None,
            "in_flight": [dict(o, ended=round(o["ended"] - sigterm, 2), started=round(o["started"] - sigterm, 2))
                          for o in outcomes if o],
            "request_after_sigterm": dict(late, ended=round(late["ended"] - sigterm, 2),
                                          started=round(late["started"] - sigterm, 2)) if late else None,
        })
        result["in_flight_completed"] = sum(1 for o in outcomes if o and o["status"] == 200
                                            and o["completion_tokens"] == tokens)
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=30)
        result["shm_removed"] = smoke_server.remove_leftover_shm(before)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--venv", default=os.environ.get("LLMSERVE_SGLANG_VENV"), required=False)
    parser.add_argument("--model", default=os.environ.get("LLMSERVE_SGLANG_MODEL"), required=False)
    parser.add_argument("--port", type=int, default=31010)
    parser.add_argument("--requests", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--out", default=None)
    parser.add_argument("--kill-mode", choices=["mixed", "control-group", "both"], default="both",
                        help="SIGTERM the main PID (systemd KillMode=mixed), every process (control-group), or both")
    args = parser.parse_args(argv)
    if not args.venv or not args.model:
        parser.error("--venv and --model (or LLMSERVE_SGLANG_VENV / LLMSERVE_SGLANG_MODEL) are required")
    report = {"sglang_venv": args.venv, "samples": []}
    modes = ["mixed", "control-group"] if args.kill_mode == "both" else [args.kill_mode]
    for mode in modes:
        for index in range(args.samples):
            log_path = (args.out or "/tmp/sigterm-drain") + ".%s-%d.log" % (mode, index)
            report["samples"].append(sample(args.venv, args.model, args.port, args.requests, args.tokens, log_path,
                                            mode))
    text = json.dumps(report, indent=2)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
