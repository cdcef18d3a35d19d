# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Check (make bench): site.yml's canary gate on two gateway pools of SGLang stand-ins, a bad change and a good one.

Boots what bench_window.py boots with ``--pool-size`` workers per pool (default 3): 2 gateway hosts (smg) and the
stand-in workers ``PREFIX-a1..`` and ``PREFIX-b1..`` as systemd test containers on a podman network of their own,
every worker with ``sglang_server_metrics`` (the gate reads /metrics) and the sliding window. Converges them, then,
with a client stream on each gateway (2 loops of short chat completions, 1 of streamed ones):

1. a bad change: every worker's stand-in decodes ``--bad-token-seconds`` per token instead of 0.02 s. The canary (the
   first worker in inventory order, a1) changes first; the gate must judge it worse than its pool (fail), roll it
   back, and stop the run: the run fails, a1 runs its configuration from before (restarted twice), and no other
   worker restarted or changed;
2. a good change (a new value of an environment variable on every worker): the gate must pass, and the run goes on
   and restarts every worker with it.

Targets (PASS/FAIL): the bad run fails at the gate with the verdict ``fail`` naming the decode time per output token,
the canary serves its old configuration again and no other worker changed; the good run succeeds, the gate passes
and every worker runs the new configuration; 0 failed client requests in both; never more than the window (1) out of
a pool.

    python tools/bench/bench_canary.py [--pool-size 3] [--canary-seconds 60] [--bad-token-seconds 0.1]
        [--json FILE] [--workdir DIR] [--keep] [--reuse]

Run it through ``make bench`` (tools/bench/run.sh: BENCH_NO_CANARY=1 skips it), which sets ANSIBLE_COLLECTIONS_PATH
and makes the test host images, the fixture trees and the stand-in and smg wheelhouses.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GOOD_TOKEN = "0.02"

_SPEC = importlib.util.spec_from_file_location("bench_window", os.path.join(HERE, "bench_window.py"))
bench_window = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bench_window)
bench_scale = bench_window.bench_scale
POOLS = bench_window.POOLS


def log(text):
    print("bench-canary: %s" % text, flush=True)


def write_inventory(directory, prefix, per_pool, canary_seconds):
    """bench_window's inventory, with the token time a variable, metrics on and the gate's window."""
    bench_window.write_inventory(directory, prefix, 5, per_pool)
    path = os.path.join(directory, "group_vars", "sglang_servers.yml")
    with open(path) as handle:
        text = handle.read()
    needle = 'LLMSERVE_STANDIN_TOKEN_SECONDS: "%s"' % GOOD_TOKEN
    if needle not in text:
        raise RuntimeError("bench_window.py's inventory changed; update bench_canary.py")
    text = text.replace(needle, 'LLMSERVE_STANDIN_TOKEN_SECONDS: "{{ bench_token_seconds }}"')
    text += ("bench_token_seconds: \"%s\"\nsglang_server_metrics: true\nsglang_rollout_window: true\n"
             "sglang_rollout_canary_seconds: %d\n" % (GOOD_TOKEN, canary_seconds))
    with open(path, "w") as handle:
        handle.write(text)
    # smg's default cache_aware policy sends a prompt to the worker that served its prefix: the client's few prompts
    # would all go to one worker of each pool, and the canary would see none of them
    with open(os.path.join(directory, "group_vars", "sglang_gateways.yml"), "a") as handle:
        handle.write("sglang_gateway_policy: round_robin\n")
    return directory


def snapshot(workers):
    """Each worker's stand-in as it runs now: main PID, its start, and the environment the change sets, as systemd
    has the unit loaded (the service's /proc/PID/environ is closed to root in the container: ProtectProc)."""
    found = {}
    for worker in workers:
        show = subprocess.run(["podman", "exec", worker, "systemctl", "show", "-p", "MainPID", "-p",
                               "ExecMainStartTimestampMonotonic", "-p", "Environment", "sglang"], capture_output=True,
                              text=True, check=False)
        props = dict(line.split("=", 1) for line in show.stdout.splitlines() if "=" in line)
        env = dict(item.split("=", 1) for item in props.get("Environment", "").split() if "=" in item)
        found[worker] = {"pid": props.get("MainPID", "0"), "started": props.get("ExecMainStartTimestampMonotonic"),
                         "token": env.get("LLMSERVE_STANDIN_TOKEN_SECONDS"), "round": env.get("LLMSERVE_BENCH_ROUND")}
    return found


def newest_report(report_root):
    runs = sorted(d for d in os.listdir(report_root) if os.path.isdir(os.path.join(report_root, d)))
    with open(os.path.join(report_root, runs[-1], "report.json")) as handle:
        return {entry["host"]: entry for entry in json.load(handle)["hosts"]}


def run_round(label, number, token, inventory, workdir, urls, gateways, sizes):
    watch = bench_window.PoolWatch(urls, sizes)
    watch.start()
    clients = bench_window.start_clients(gateways, label)
    time.sleep(3)
    run = bench_window.playbook("site.yml", inventory, workdir, label, forks=8,
                                extra=["-e", "bench_round=%d" % number, "-e", "bench_token_seconds=%s" % token])
    time.sleep(2)
    client = bench_window.stop_clients(gateways, clients, label)
    watch.stop_event.set()
    watch.join()
    return run, client, watch


def main(argv=None):
    parser = argparse.ArgumentParser(description="the canary gate: a bad change caught, a good one rolled on")
    parser.add_argument("--pool-size", type=int, default=3, help="workers per pool (default 3, at least 2)")
    parser.add_argument("--canary-seconds", type=int, default=60, help="the gate's window (default 60)")
    parser.add_argument("--bad-token-seconds", default="0.1", help="the bad change's decode time per token (0.1)")
    parser.add_argument("--prefix", default="llmserve-canary-%d" % os.getpid())
    parser.add_argument("--reuse", action="store_true",
                        help="use the test hosts a run with --keep and the same --prefix left (converged again)")
    image_prefix = os.environ.get("TH_IMAGE_PREFIX", "localhost/llmserve-testhost")
    bench_scale.add_host_arguments(parser)
    args = parser.parse_args(argv)
    if args.pool_size < 2:
        parser.error("--pool-size must be at least 2")
    workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="llmserve-bench-canary-"))
    os.makedirs(workdir, exist_ok=True)
    inventory = write_inventory(os.path.join(workdir, "inventory"), args.prefix, args.pool_size, args.canary_seconds)
    workers, gateways, order = bench_window.names(args.prefix, args.pool_size)
    canary = order[0]
    containers = bench_window.pool_containers(args, gateways, order, image_prefix, say=log)
    if containers is None:
        return 2
    network = args.prefix
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    checks = []
    rounds = {}
    try:
        log("booting 2 gateways and %d workers (%s-*) on network %s" % (len(order), args.prefix, network))
        if not args.reuse:
            bench_window.boot(containers, network)
        # no canary while nothing sends traffic (the gate could not judge, and would roll back)
        for step, name in (("converge-workers", "site.yml"), ("converge-gateways", "gateway.yml")):
            run = bench_window.playbook(name, inventory, workdir, step, extra=["-e", "sglang_rollout_canary=0"])
            log("%s: rc %d, %.1f s" % (step, run["rc"], run["wall"]))
            if run["rc"] != 0:
                log("the test hosts did not converge (see %s); no measurement" % run["log"])
                return 2
        urls = {p: "http://%s:8000" % bench_window.container_ip(gateways[p], network) for p in POOLS}
        for gateway in gateways.values():
            subprocess.run(["podman", "cp", bench_window.CLIENT, "%s:/tmp/client_stream.py" % gateway], check=True)
        sizes = {p: args.pool_size for p in POOLS}
        reports = os.path.join(workdir, "reports")
        # rounds numbered from the clock: hosts reused (--reuse) never run a round's number already
        base = int(time.time())
        for number, (label, token) in enumerate((("bad", args.bad_token_seconds), ("good", GOOD_TOKEN)), start=base + 1):
            before = snapshot(order)
            run, client, watch = run_round(label, number, token, inventory, workdir, urls, gateways, sizes)
            after = snapshot(order)
            report = newest_report(reports)
            gate = (report.get(canary) or {}).get("canary") or {}
            rounds[label] = dict(number=number, rc=run["rc"], wall=run["wall"], log=run["log"], before=before, after=after,
                                 gate=gate, clients=client, most_out=watch.most_out, watch_samples=watch.samples,
                                 watch_errors=watch.errors)
            log("%s change: rc %d, %.1f s; gate %s: %s; requests %s, failed %s; most out %s" % (
                label, run["rc"], run["wall"], gate.get("verdict"), gate.get("message"),
                {p: c.get("requests") for p, c in client.items()}, {p: c.get("failed") for p, c in client.items()},
                watch.most_out))
    finally:
        if not args.keep:
            bench_window.remove(containers, network)
    others = order[1:]
    bad, good = rounds.get("bad"), rounds.get("good")
    if bad:
        tpot = [c for c in bad["gate"].get("checks") or [] if c.get("metric") == "tpot"]
        checks.append(("the bad change fails the gate on the decode time per token",
                       bad["rc"] != 0 and bad["gate"].get("verdict") == "fail" and tpot and tpot[0]["result"] == "fail",
                       "rc %s, verdict %s: %s" % (bad["rc"], bad["gate"].get("verdict"), bad["gate"].get("message"))))
        was, now = bad["before"][canary], bad["after"][canary]
        checks.append(("the canary runs its configuration from before again, restarted",
                       now["token"] == was["token"] == GOOD_TOKEN and now["round"] == was["round"]
                       and now["pid"] != was["pid"], "before %s, after %s" % (was, now)))
        changed = [w for w in others if bad["before"][w] != bad["after"][w]]
        checks.append(("no other worker changed or restarted", not changed,
                       "changed %s of %d" % (changed, len(others))))
    if good:
        moved = [w for w in order if good["after"][w]["round"] != str(good["number"])
                 or good["after"][w]["pid"] == good["before"][w]["pid"]]
        checks.append(("the good change passes the gate and rolls on to every worker",
                       good["rc"] == 0 and good["gate"].get("verdict") == "pass" and good["gate"].get("kept") and not moved,
                       "rc %s, verdict %s: %s; workers not on the new configuration %s" % (
                           good["rc"], good["gate"].get("verdict"), good["gate"].get("message"), moved)))
    done = [r for r in (bad, good) if r]
    failed = [(label, p, c.get("failed")) for label, r in rounds.items() for p, c in r["clients"].items()
              if c.get("failed") != 0 or not c.get("requests")]
    checks.append(("0 failed client requests in both runs", len(done) == 2 and not failed, "failed %s" % failed))
    over = [(label, r["most_out"]) for label, r in rounds.items() if max(r["most_out"].values()) > 1
            or r["watch_samples"] < 10]
    checks.append(("never more than the window (1) out of a pool", len(done) == 2 and not over, "over %s" % over))
    failures = 0
    for name, ok, measured in checks:
        print("target %-62s %s (%s)" % (name, "PASS" if ok else "FAIL", measured))
        failures += 0 if ok else 1
    wall = time.monotonic() - started
    print("bench-canary: %d targets passed, %d failed in %.0f s (load %s); logs in %s" % (
        len(checks) - failures, failures, wall, "%.1f %.1f %.1f" % os.getloadavg(), workdir))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as handle:
            json.dump(dict(rounds=rounds, targets=[dict(name=n, ok=bool(o), measured=m) for n, o, m in checks],
                           canary=canary, wall=wall, loadavg=os.getloadavg()), handle, indent=2)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
