# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark: a new model revision by restart vs swapped into the running server, real SGLang 0.5.23 on CPU.

    python tools/bench/bench_swap.py [--venv VENV] [--model REV_A_DIR] [--samples 3] [--json reports/bench_swap.json]
                                     [--workdir DIR] [--max-ratio 0.3] [--start-budget 240]

What it measures: the seconds one worker is out of rotation for the same revision change, done two ways against
one real server on loopback, side by side in one run:

* restart: SIGTERM the server's main PID and wait until its whole process group is gone (systemd's stop does the
  same with the unit's cgroup) [stop]; launch it on the other revision and poll until ``/health`` answers 200, i.e.
  after SGLang's warm-up generation (the readiness endpoint, ../shared/reference/sglang.md) [start_to_ready]; one
  greedy ``/generate`` [smoke];
* swap: :func:`weight_swap.compare_checkpoints` of the two directories on this host [compare]; then
  :func:`weight_swap.swap_weights` through the collection's HardenedClient, with a fake 40-hex commit as
  ``weight_version``: its ``/model_info`` read before [read_before], ``POST /update_weights_from_disk`` with the admin
  key [update], the read-back of ``/model_info`` and ``/v1/models`` [verify]; one greedy ``/generate`` [smoke]. The
  server's main PID and its child processes must be the same before and after, and ``meta_info.weight_version`` the
  commit.

The two revisions are tools/engine/make_tiny_model.py with the default seed (A; a copy of ``--model`` when it is
given, as the live test does) and ``--seed 2`` (B): same tokenizer, configuration and tensor shapes, other weights,
other greedy answers. The greedy answer of each revision is recorded once from a fresh start of it (not measured);
every measured change must then answer exactly that of the revision it loaded, or it is a FAIL and no number. Each
sample does, for each method (the order flips every sample): A->B (the change the medians report), then B->A (the
way back, so the next change starts from a serving server again; its medians are reported apart).

What it does not measure: the role's rollout (no drain, no gateway; sglang_server does not swap yet), nor a GPU host.
A tiny model on CPU starts in tens of seconds; a real GPU start-up is 3-6 minutes (issue 48: weight load, CUDA
graph capture, NCCL set-up; public reports of Qwen3-235B FP8 at about 6.5 minutes on 4 GPUs, the story's 3-4 minutes
cold). Both ways read the weights; the restart alone pays the process start, graph capture and NCCL, so the ratio on
a real host is expected to be lower still than here.

The server's API key and admin key are made up for the run and sit in a ``--config`` file (mode 0600, removed at
the end), never in argv or in the JSON; SGLang logs its arguments, so the server logs are 0600 and the keys in them
are masked when the server stops. Target: median swap total <= 0.3 x median restart total (A->B), every change correct.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools", "engine"))
sys.path.insert(0, HERE)

import smoke_server  # noqa: E402  pylint: disable=wrong-import-position

METHODS = ("restart", "swap")
# "other": the rest of the change's wall time (the bench's own steps between phases, e.g. the client's set-up)
PHASES = {"restart": ("stop", "start_to_ready", "smoke", "other"),
          "swap": ("compare", "read_before", "update", "verify", "smoke", "other")}
PROMPT = "Hello world"
SMOKE_TOKENS = 8
REVISION_B_SEED = 2
SCOPE = ("the SGLang server's own mechanism on CPU (tiny model, loopback), not the role's rollout: no drain, no "
         "gateway, and sglang_server does not swap yet. A tiny model starts on CPU in tens of seconds; a real GPU "
         "start-up takes 3-6 minutes (issue 48: weight load, CUDA graph capture, NCCL set-up; Qwen3-235B FP8 about "
         "6.5 minutes on 4 GPUs, the story's 3-4 minutes cold), of which a swap skips all but the weight load, so "
         "the ratio on a real host is expected to be lower still.")


def log(text):
    print("bench-swap: " + text, flush=True)


# --- pure parts (tests/unit/bench/test_bench_swap.py) -----------------------------------------------------------------

def fake_commit(revision, index):
    """A 40-hex "commit" for the swap's weight_version, another for every change."""
    return hashlib.sha1(("llmserve-bench-swap-%s-%d" % (revision, index)).encode()).hexdigest()


def answer_problems(text, meta, expected_answers, revision, weight_version):
    """What is wrong with a smoke answer after loading ``revision``: not the greedy answer recorded for it from a
    fresh start, or another ``meta_info.weight_version`` than the one loaded. Empty when it is right."""
    problems = []
    if revision not in expected_answers:
        problems.append("no reference answer recorded for revision %s" % revision)
    elif text != expected_answers[revision]:
        problems.append("answered %r, revision %s answers %r" % (text, revision, expected_answers[revision]))
    served = (meta or {}).get("weight_version")
    if served != weight_version:
        problems.append("meta_info.weight_version is %r, not %r" % (served, weight_version))
    return problems


def finish_sample(sample, problems, wall):
    """Mark a measured change that took ``wall`` seconds in all (its phases and what lies between them): ``ok`` only
    without problems. A failed one keeps its seconds for the record, but its total is None: no median takes it."""
    sample["problems"] = list(problems)
    sample["ok"] = not problems
    sample["wall"] = round(wall, 3)
    sample["seconds"]["other"] = round(max(0.0, wall - sum(sample["seconds"].values())), 3)
    sample["total"] = sample["wall"] if sample["ok"] else None
    return sample


def summarise(samples, phases):
    """Medians per phase and of the total over the changes that were right; how many were and were not."""
    good = [s for s in samples if s["ok"]]
    summary = {"samples": len(good), "failed": len(samples) - len(good), "phases": {}, "total": None,
               "totals": [s["total"] for s in good]}
    if good:
        for phase in phases:
            summary["phases"][phase] = round(statistics.median(s["seconds"].get(phase, 0.0) for s in good), 3)
        summary["total"] = round(statistics.median(summary["totals"]), 3)
    return summary


def verdict(restart, swap, max_ratio):
    """``(ratio, ok, why)``: swap total / restart total of the medians, against the target. Any failed change, or a
    method without a correct change, fails the run whatever the ratio."""
    if restart["failed"] or swap["failed"]:
        return None, False, "%d restart and %d swap changes failed" % (restart["failed"], swap["failed"])
    if not restart["total"] or swap["total"] is None:
        return None, False, "no correct change to compare"
    ratio = round(swap["total"] / restart["total"], 4)
    if ratio > max_ratio:
        return ratio, False, "swap/restart %.4f > %.2f" % (ratio, max_ratio)
    return ratio, True, "swap/restart %.4f <= %.2f" % (ratio, max_ratio)


def table(summaries):
    """Markdown rows: method, direction, each phase, total, correct/failed changes."""
    lines = ["| method | change | phases (median s) | total (median) | correct | failed |", "|---|---|---|---|---|---|"]
    for (method, direction), row in summaries:
        phases = ", ".join("%s %.3f" % (name, value) for name, value in row["phases"].items()) or "-"
        total = "%.3f s" % row["total"] if row["total"] is not None else "-"
        lines.append("| %s | %s | %s | %s | %d | %d |" % (method, direction, phases, total, row["samples"],
                                                          row["failed"]))
    return lines


# --- the real server ------------------------------------------------------------------------------------------------

def load_collection():
    """module_utils.http_client and module_utils.weight_swap of this checkout (ansible-core must be importable)."""
    from bench_cache import collection_import_path  # pylint: disable=import-outside-toplevel

    sys.path.insert(0, collection_import_path())
    from ansible_collections.llmserve.sglang.plugins.module_utils import http_client  # noqa: E501  pylint: disable=import-outside-toplevel
    from ansible_collections.llmserve.sglang.plugins.module_utils import weight_swap  # pylint: disable=import-outside-toplevel
    return http_client, weight_swap


def make_model(venv, outdir, seed=None):
    argv = [os.path.join(venv, "bin", "python"), os.path.join(ROOT, "tools", "engine", "make_tiny_model.py"), outdir]
    if seed is not None:
        argv += ["--seed", str(seed)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False,
                          env=dict(os.environ, HF_HUB_OFFLINE="1"))
    if proc.returncode != 0:
        raise RuntimeError("make_tiny_model.py %s failed: %s" % (outdir, proc.stderr[-2000:]))


def _processes():
    """(pid, fields after the command name) of every process /proc lists now."""
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        yield int(stat.split("/")[2]), fields


def group_members(pgid):
    """PIDs of live (not zombie) processes in process group ``pgid``."""
    return sorted(pid for pid, fields in _processes() if fields[2] == str(pgid) and fields[0] != "Z")


def children_of(pid):
    return sorted(child for child, fields in _processes() if fields[1] == str(pid))


class Worker(object):
    """One SGLang server on a fixed loopback port, started and stopped as a unit would be (same port every time)."""

    def __init__(self, venv, workdir, start_budget):
        self.venv = venv
        self.workdir = workdir
        self.start_budget = start_budget
        self.port = free_port()
        self.base_url = "http://127.0.0.1:%d" % self.port
        self.api_key = "sk-bench-api-" + secrets.token_hex(16)
        self.admin_key = "sk-bench-admin-" + secrets.token_hex(16)
        self.config = os.path.join(workdir, "server.yaml")
        fd = os.open(self.config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write("api-key: %s\nadmin-api-key: %s\nserved-model-name: tiny\n" % (self.api_key, self.admin_key))
        self.process = None
        self.log = None
        self.log_path = None
        self.main_exited = None  # seconds from SIGTERM to the main PID's exit, at the last stop
        self.model = None
        self.starts = 0
        self.shm_before = set(glob.glob(smoke_server.SHM_GLOB))

    def start(self, model):
        """Launch on ``model`` and wait for /health 200: seconds from launch, or RuntimeError."""
        self.starts += 1
        log_path = os.path.join(self.workdir, "server-%02d-%s.log" % (self.starts, os.path.basename(model)))
        # SGLang logs its arguments, both keys among them: the file stays private, and they are masked at the stop
        self.log_path = log_path
        self.log = os.fdopen(os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb")
        started = time.monotonic()
        self.process = smoke_server.launch(self.venv, model, self.port, self.log, ["--config", self.config])
        self.model = model
        while True:
            if self.process.poll() is not None:
                raise RuntimeError("the server exited with %s during start-up (log %s)" % (self.process.returncode,
                                                                                           log_path))
            if time.monotonic() - started > self.start_budget:
                raise RuntimeError("no /health 200 within %d s (log %s)" % (self.start_budget, log_path))
            if smoke_server.port_open(self.port):
                status, dummy = smoke_server.http("GET", self.base_url + "/health", timeout=25.0)
                if status == 200:
                    return round(time.monotonic() - started, 3)
            time.sleep(0.05)

    def stop(self, timeout=60.0):
        """SIGTERM the main PID, wait until its whole process group is gone: ``(seconds, problem or None)``."""
        if self.process is None:
            return 0.0, None
        problem = None
        pgid = self.process.pid
        started = time.monotonic()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout)
            self.main_exited = round(time.monotonic() - started, 3)
            while group_members(pgid):
                if time.monotonic() - started > timeout:
                    raise subprocess.TimeoutExpired("process group %d" % pgid, timeout)
                time.sleep(0.02)
        except subprocess.TimeoutExpired:
            problem = "the server was still running %d s after SIGTERM: killed" % timeout
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait(timeout=10)
        seconds = round(time.monotonic() - started, 3)
        self.close_log()
        self.process = None
        smoke_server.remove_leftover_shm(self.shm_before)
        return seconds, problem

    def kill(self):
        """Whatever is left, at the end or after an error (not measured)."""
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait(timeout=30)
            self.process = None
            self.close_log()
        smoke_server.remove_leftover_shm(self.shm_before)

    def close_log(self):
        """Close the server's log and mask the keys in it (the made-up keys of this run, but keys all the same)."""
        self.log.close()
        with open(self.log_path, "rb") as handle:
            text = handle.read()
        for key, label in ((self.api_key, b"<api key>"), (self.admin_key, b"<admin key>")):
            text = text.replace(key.encode(), label)
        with open(self.log_path, "wb") as handle:
            handle.write(text)

    def generate(self):
        """One greedy /generate with the API key: ``(text, meta_info)``; RuntimeError when it gives no answer."""
        body = {"text": PROMPT, "sampling_params": {"max_new_tokens": SMOKE_TOKENS, "temperature": 0}}
        request = urllib.request.Request(self.base_url + "/generate", data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json",
                                                  "Authorization": "Bearer %s" % self.api_key})
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                answer = json.loads(response.read())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise RuntimeError("/generate gave no answer: %s" % exc) from exc
        return answer.get("text"), answer.get("meta_info") or {}


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _Module(object):
    """What HardenedClient and build_fetcher need of an AnsibleModule (no proxy: the server is on loopback)."""
    params = {"use_proxy": False, "validate_certs": True}

    def fail_json(self, **kwargs):
        raise RuntimeError(kwargs.get("msg"))


def _smoke(worker, sample):
    """(text, meta) of one generation, its seconds in the sample's ``smoke``; RuntimeError when it fails."""
    started = time.monotonic()
    text, meta = worker.generate()
    sample["seconds"]["smoke"] = round(time.monotonic() - started, 3)
    return text, meta


def measure_restart(worker, target, revision, expected_answers):
    """One change by restart onto ``target``; the sample dict (see finish_sample)."""
    sample = {"method": "restart", "revision": revision, "seconds": {}, "pid_before": worker.process.pid}
    problems = []
    began = time.monotonic()
    sample["seconds"]["stop"], problem = worker.stop()
    sample["stop_main_pid_exited"] = worker.main_exited  # the rest of "stop": its child processes ending
    if problem:
        problems.append(problem)
    try:
        sample["seconds"]["start_to_ready"] = worker.start(target)
        text, meta = _smoke(worker, sample)
    except RuntimeError as exc:
        problems.append(str(exc))
        return finish_sample(sample, problems, time.monotonic() - began)
    wall = time.monotonic() - began
    sample["pid_after"] = worker.process.pid
    sample["answer"] = text
    problems += answer_problems(text, meta, expected_answers, revision, "default")
    return finish_sample(sample, problems, wall)


def measure_swap(worker, target, revision, expected_answers, commit, http_client, weight_swap):
    """One change by swap onto ``target`` as ``commit``; the sample dict (see finish_sample). The PID and child
    processes are read outside the measured time."""
    pid, children = worker.process.pid, children_of(worker.process.pid)
    sample = {"method": "swap", "revision": revision, "seconds": {}, "pid_before": pid, "weight_version": commit}
    problems = []
    began = time.monotonic()
    compared = weight_swap.compare_checkpoints(worker.model, target)
    sample["seconds"]["compare"] = round(time.monotonic() - began, 3)
    if not compared["same_shape"]:
        problems += ["compare_checkpoints: %s" % p for p in compared["problems"]]
        return finish_sample(sample, problems, time.monotonic() - began)
    module = _Module()
    try:
        with http_client.HardenedClient(module, http_client.build_fetcher(module)) as client:
            result = weight_swap.swap_weights(client, worker.base_url, target, commit, api_key=worker.api_key,
                                              admin_key=worker.admin_key, timeout=300.0, read_timeout=30.0)
    except weight_swap.SwapInputError as exc:
        problems.append("swap_weights refused its arguments: %s" % exc)
        return finish_sample(sample, problems, time.monotonic() - began)
    seconds = result["seconds"]
    sample["seconds"]["read_before"] = round(seconds["total"] - seconds["update"] - seconds["verify"], 3)
    sample["seconds"]["update"] = seconds["update"]
    sample["seconds"]["verify"] = seconds["verify"]
    sample["outcome"], sample["msg"] = result["outcome"], result["msg"]
    if not result["ok"]:
        problems.append("swap_weights: %s" % result["msg"])
        return finish_sample(sample, problems, time.monotonic() - began)
    worker.model = target
    try:
        text, meta = _smoke(worker, sample)
    except RuntimeError as exc:
        problems.append(str(exc))
        return finish_sample(sample, problems, time.monotonic() - began)
    wall = time.monotonic() - began
    sample["answer"] = text
    sample["pid_after"] = worker.process.pid if worker.process.poll() is None else None
    if sample["pid_after"] != pid:
        problems.append("the server's main PID %s is not running any more" % pid)
    elif children_of(pid) != children:
        problems.append("the server's child processes changed: %s -> %s" % (children, children_of(pid)))
    problems += answer_problems(text, meta, expected_answers, revision, commit)
    return finish_sample(sample, problems, wall)


def revisions(args, workdir):
    """``{"A": dir, "B": dir}`` in the work directory."""
    rev_a, rev_b = os.path.join(workdir, "rev-a"), os.path.join(workdir, "rev-b")
    for path in (rev_a, rev_b):
        shutil.rmtree(path, ignore_errors=True)
    if args.model and os.path.isfile(os.path.join(args.model, "model.safetensors")):
        shutil.copytree(args.model, rev_a)  # the default seed, as make_tiny_model.py writes it without --seed
    else:
        make_model(args.venv, rev_a)
    make_model(args.venv, rev_b, seed=REVISION_B_SEED)
    return {"A": rev_a, "B": rev_b}


def sglang_version(venv):
    proc = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                           "import importlib.metadata as m; print(m.version('sglang'))"],
                          capture_output=True, text=True, check=False, timeout=60)
    return proc.stdout.strip() or None


def run(args, workdir):
    http_client, weight_swap = load_collection()
    revs = revisions(args, workdir)
    compared = weight_swap.compare_checkpoints(revs["A"], revs["B"])
    if not compared["same_shape"]:
        raise RuntimeError("the two revisions do not fit each other: %s" % compared["problems"])
    report = {"scope": SCOPE, "sglang": sglang_version(args.venv), "revisions": revs, "samples_asked": args.samples,
              "changes": [], "reference": {}}
    worker = Worker(args.venv, workdir, args.start_budget)
    expected = {}
    try:
        # the greedy answer of each revision from a fresh start (not measured); B first, so A serves afterwards
        for revision in ("B", "A"):
            if worker.process is not None:
                worker.stop()
            seconds = worker.start(revs[revision])
            expected[revision], meta = worker.generate()
            report["reference"][revision] = {"answer": expected[revision], "start_to_ready": seconds,
                                             "weight_version": meta.get("weight_version")}
            log("reference start on %s: ready in %.1f s, greedy answer %r" % (revision, seconds, expected[revision]))
        if expected["A"] == expected["B"]:
            raise RuntimeError("revisions A and B give the same greedy answer: the answer check would prove nothing")

        index = 0
        for number in range(1, args.samples + 1):
            order = list(METHODS) if number % 2 else list(reversed(METHODS))
            for method in order:
                for source, revision in (("A", "B"), ("B", "A")):
                    index += 1
                    if method == "restart":
                        sample = measure_restart(worker, revs[revision], revision, expected)
                    else:
                        sample = measure_swap(worker, revs[revision], revision, expected,
                                              fake_commit(revision, index), http_client, weight_swap)
                    sample.update(sample=number, change="%s->%s" % (source, revision))
                    report["changes"].append(sample)
                    log("sample %d/%d %-7s %s %7.3f s  %s" % (
                        number, args.samples, method, sample["change"], sample["wall"],
                        "ok" if sample["ok"] else "FAIL: " + "; ".join(sample["problems"])))
                    if worker.process is None or worker.process.poll() is not None:
                        raise RuntimeError("the server is not running after that change; no further sample")
    except RuntimeError as exc:
        report["error"] = str(exc)
        log("stopped: %s" % exc)
    finally:
        # a SIGKILLed server leaves its /dev/shm files (sglang_loads_*, sem.mp-*): stop it as the unit would first
        if worker.process is not None and worker.process.poll() is None:
            worker.stop()
        worker.kill()
        os.unlink(worker.config)  # the keys: nothing after the run needs them
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(description="revision change: restart vs in-place weight swap, real SGLang on CPU")
    parser.add_argument("--venv", default=os.environ.get("LLMSERVE_SGLANG_VENV")
                        or "/var/cache/llmserve/venv-sglang-cpu", help="the CPU SGLang venv")
    parser.add_argument("--model", default=os.environ.get("LLMSERVE_SGLANG_MODEL", ""),
                        help="the tiny model with the default seed, copied as revision A (else built)")
    parser.add_argument("--samples", type=int, default=3, help="changes A->B per method (default 3)")
    parser.add_argument("--max-ratio", type=float, default=0.3, help="target: swap / restart total (default 0.3)")
    parser.add_argument("--start-budget", type=float, default=240.0, help="seconds from launch to /health 200")
    parser.add_argument("--json", default=os.path.join(ROOT, "reports", "bench_swap.json"))
    parser.add_argument("--workdir", help="revisions and server logs (default: a temporary directory, kept)")
    args = parser.parse_args(argv)
    if args.samples < 1:
        parser.error("--samples must be at least 1")
    if not os.access(os.path.join(args.venv, "bin", "python"), os.X_OK):
        parser.error("no SGLang venv at %s (make engine-assets)" % args.venv)
    # absolute: the swap sends the revisions' paths to the server
    workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="llmserve-bench-swap-"))
    os.makedirs(workdir, exist_ok=True)
    started = time.monotonic()
    report = run(args, workdir)
    report["wall"] = round(time.monotonic() - started, 1)
    report["loadavg"] = os.getloadavg()

    summaries = []
    for direction in ("A->B", "B->A"):
        for method in METHODS:
            changes = [c for c in report["changes"] if c["method"] == method and c["change"] == direction]
            summaries.append(((method, direction), summarise(changes, PHASES[method])))
    report["summary"] = dict(("%s %s" % key, row) for key, row in summaries)
    ratio, ok, why = verdict(summaries[0][1], summaries[1][1], args.max_ratio)
    if "error" in report:
        ok, why = False, "%s; %s" % (report["error"], why)
    back_ratio = verdict(summaries[2][1], summaries[3][1], args.max_ratio)[0]
    report["target"] = {"name": "swap total <= %.2f x restart total (medians, A->B)" % args.max_ratio,
                        "ratio": ratio, "ratio_way_back": back_ratio, "ok": ok, "why": why}

    print()
    print("revision change, restart vs in-place swap: SGLang %s on CPU, %d samples each, alternating; wall %.0f s; "
          "load average at the end %s" % (report["sglang"], args.samples, report["wall"],
                                          " ".join("%.2f" % x for x in report["loadavg"])))
    print("measures " + SCOPE)
    print()
    for line in table(summaries):
        print(line)
    print()
    back = "%.4f" % back_ratio if back_ratio is not None else "-"
    print("target %s: %s (%s; the way back B->A: %s)" % (report["target"]["name"], "PASS" if ok else "FAIL", why, back))
    print("bench-swap: server logs and revisions in %s" % workdir)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as handle:
            json.dump(report, handle, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
