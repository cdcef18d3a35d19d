# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Start the real SGLang server from a venv on loopback, record its start-up, generate, stop it.

    python3 tools/engine/smoke_server.py --venv VENV --model MODEL_DIR [--port 31000] [--timeout 120]

Standard library only (any Python 3.9+); the server itself runs with VENV's python. Steps:

1. refuse to start if something already listens on 127.0.0.1:PORT;
2. launch ``VENV/bin/python -m sglang.launch_server --device cpu --max-total-tokens 8192 ...``;
3. poll the TCP port (closed while SGLang imports and loads), then ``/health`` every 50 ms,
   recording each change of status (503 during warm-up, then 200);
4. POST ``/generate`` and ``/v1/chat/completions`` and check both return text;
5. SIGTERM the server's PID, wait for it to exit, and remove the ``/dev/shm/sglang_loads_*``
   file(s) it left behind (only new ones that no running process has mapped).

Prints a JSON report (timeline, responses, exit code) and exits non-zero if any step failed.
The integration tests import :func:`run_smoke`.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

HOST = "127.0.0.1"
SHM_GLOB = "/dev/shm/sglang_loads_*"


def port_open(port, host=HOST):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, port)) == 0


def http(method, url, body=None, timeout=5.0):
    """(status, parsed JSON or text); status 0 when the connection failed."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    except (urllib.error.URLError, OSError):
        return 0, None
    try:
        return status, json.loads(raw.decode("utf-8", "replace"))
    except ValueError:
        return status, raw.decode("utf-8", "replace")


def _mapped_paths():
    """Files under /dev/shm that some live process has open or mapped."""
    busy = set()
    for maps in glob.glob("/proc/[0-9]*/maps"):
        try:
            with open(maps, encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    if "/dev/shm/" in line:
                        busy.add(line.split(None, 5)[-1].strip())
        except OSError:
            continue
    for link in glob.glob("/proc/[0-9]*/fd/*"):
        try:
            target = os.readlink(link)
        except OSError:
            continue
        if target.startswith("/dev/shm/"):
            busy.add(target)
    return busy


def remove_leftover_shm(before):
    """Remove sglang_loads_* files created since ``before`` that nothing uses any more."""
    busy = _mapped_paths()
    removed = []
    for path in sorted(set(glob.glob(SHM_GLOB)) - set(before)):
        if path in busy:
            continue
        try:
            os.unlink(path)
            removed.append(path)
        except FileNotFoundError:
            pass
    return removed


def server_command(venv, model, port, extra_args=()):
    return [
        os.path.join(venv, "bin", "python"), "-m", "sglang.launch_server",
        "--model-path", model, "--device", "cpu", "--host", HOST, "--port", str(port),
        "--max-total-tokens", "8192",
    ] + list(extra_args)


def launch(venv, model, port, stdout, extra_args=(), text=False):
    """Start the server in its own session (so its whole process group can be killed) and return it.

    ``text=True`` with ``stdout=subprocess.PIPE`` gives a text pipe of its log lines.
    """
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env.pop("SGLANG_USE_CPU_ENGINE", None)  # that path needs a CPU sgl-kernel build that PyPI does not have
    return subprocess.Popen(  # pylint: disable=consider-using-with
        server_command(venv, model, port, extra_args), stdout=stdout, stderr=subprocess.STDOUT,
        env=env, start_new_session=True, text=text, errors="replace" if text else None)


def stop(process, timeout=60.0):
    """SIGTERM the server's main PID and wait; SIGKILL its process group as a last resort."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
    return process.returncode


def run_smoke(venv, model, port=31000, timeout=120.0, log_path=None, extra_args=()):
    """Run steps 1-5; return the report dict (``ok`` says whether everything passed)."""
    report = {"ok": False, "port": port, "timeline": [], "errors": []}
    if port_open(port):
        report["errors"].append("127.0.0.1:%d is already in use" % port)
        return report

    shm_before = set(glob.glob(SHM_GLOB))
    log = open(log_path, "wb") if log_path else subprocess.DEVNULL  # pylint: disable=consider-using-with
    start = time.monotonic()

    def mark(event, **extra):
        entry = dict(t=round(time.monotonic() - start, 3), event=event, **extra)
        report["timeline"].append(entry)
        return entry

    process = launch(venv, model, port, log, extra_args)
    report["pid"] = process.pid
    mark("launched", pid=process.pid)
    try:
        deadline = start + timeout
        if not port_open(port):
            mark("port closed")
        while not port_open(port):
            if process.poll() is not None:
                report["errors"].append("server exited with %s before opening the port" % process.returncode)
                return report
            if time.monotonic() > deadline:
                report["errors"].append("port %d still closed after %.0f s" % (port, timeout))
                return report
            time.sleep(0.05)
        report["port_open_s"] = mark("port open")["t"]

        last = None
        while True:
            status, _body = http("GET", "http://%s:%d/health" % (HOST, port), timeout=2.0)
            if status != last:
                mark("/health", status=status)
                last = status
            if status == 200:
                break
            if process.poll() is not None or time.monotonic() > deadline:
                report["errors"].append("/health never reached 200 (last %s)" % status)
                return report
            time.sleep(0.05)
        report["health_200_s"] = report["timeline"][-1]["t"]
        report["health_statuses"] = [e["status"] for e in report["timeline"] if e["event"] == "/health"]

        status, body = http("POST", "http://%s:%d/generate" % (HOST, port), {
            "text": "Hello world", "sampling_params": {"max_new_tokens": 8, "temperature": 0}}, timeout=60)
        report["generate"] = {"status": status, "text": body.get("text") if isinstance(body, dict) else body,
                              "meta": body.get("meta_info", {}).get("finish_reason") if isinstance(body, dict) else None}
        if status != 200 or not isinstance(body, dict) or not body.get("text"):
            report["errors"].append("/generate gave %s %r" % (status, body))

        status, body = http("POST", "http://%s:%d/v1/chat/completions" % (HOST, port), {
            "model": "default", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8,
            "temperature": 0}, timeout=60)
        try:
            chat_text = body["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            chat_text = None
        report["chat"] = {"status": status, "text": chat_text,
                          "prompt_tokens": body.get("usage", {}).get("prompt_tokens") if isinstance(body, dict) else None}
        if status != 200 or not chat_text:
            report["errors"].append("/v1/chat/completions gave %s %r" % (status, body))

        status, body = http("GET", "http://%s:%d/server_info" % (HOST, port))
        if isinstance(body, dict):
            report["server_version"] = body.get("version")
    finally:
        term = time.monotonic()
        report["exit_code"] = stop(process)
        report["stop_s"] = round(time.monotonic() - term, 3)
        mark("exited", code=report["exit_code"])
        if log_path:
            log.close()
        report["port_closed_after_stop"] = not port_open(port)
        report["shm_removed"] = remove_leftover_shm(shm_before)
    if report["exit_code"] != 0:
        report["errors"].append("SIGTERM exit code %s (expected 0)" % report["exit_code"])
    report["ok"] = not report["errors"]
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--venv", required=True, help="venv made by install_sglang_venv.sh")
    parser.add_argument("--model", required=True, help="model directory made by make_tiny_model.py")
    parser.add_argument("--port", type=int, default=31000)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds allowed from launch to /health 200")
    parser.add_argument("--log", help="write the server's output to this file")
    args = parser.parse_args(argv)
    report = run_smoke(args.venv, args.model, args.port, args.timeout, args.log)
    print(json.dumps(report, indent=2))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
