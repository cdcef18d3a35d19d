# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark: a rollout through two gateway pools in a sliding window against lockstep batches of the same size.

Boots 2 gateway hosts (smg, the real SGLang model gateway) and 2 x ``--pool-size`` (default 4) worker hosts (the
SGLang stand-in, tools/standin) as systemd test containers on a podman network of their own; gateway ``PREFIX-gw-a``
routes to the workers ``PREFIX-a1..a4`` (group pool_a), ``PREFIX-gw-b`` to ``PREFIX-b1..b4`` (pool_b). Worker ``a1``
is slow to start: its stand-in loads for ``--slow-seconds`` instead of 5 s. The inventory lists the workers a1, b1,
a2, b2, ... so that a lockstep batch of 2w takes w workers of each pool, the same number that a window of w lets out
of each pool.

Converges them (site.yml in the window, which is also the first deployment's fastest way, then gateway.yml), then
runs site.yml rounds that change every worker's environment (so every worker restarts), for each window size w of
``--windows`` (default 1 and 2) alternating the two ways (lockstep, window, window, lockstep, ... for ``--samples``
of each):

* lockstep: ``sglang_rollout_serial=2w``, ``sglang_rollout_max_unavailable=w``: pool-size/w batches, each as slow as
  its slowest host, and each doing its in-rotation work (validation, install check, staging) only when its turn comes;
* window: ``sglang_rollout_window=true``, ``sglang_rollout_max_unavailable=w``: each pool lets w workers out at once,
  a worker that serves again frees its slot for the next, and every worker does its in-rotation work at once.

During every round a client runs on each gateway host (molecule/fleet/files/client_stream.py: 2 loops of short
chat completions and 1 of streamed ones through that gateway) and the bench polls both gateways' worker lists every
0.2 s: a pool's worker is "out" while the gateway does not list it as healthy. Per round it records the wall time of
the whole site.yml run and of its change (from the first change play's start to the rejoin play's start, from the
bench_times callback), the client's requests and failures, and the most workers out of each pool at once.

Targets (PASS/FAIL): per window size, the window's change time <= 0.75 x the lockstep's (medians); 0 failed client
requests in every round, never more workers out of a pool than the round's window, every round's recap without
failures, and each round really restarted every worker (changed on all of them).

With pools of n, a window of w and the slow worker's time S against a normal worker's T (both out of rotation), the
lockstep batches take about S + (n/w - 1) T and the window about max(S, (S + (n - 1) T) / w): with n = 4 and w = 2
the window cannot do better than 0.75 of lockstep (at S = 3T), with n = 6 it can reach 0.71 (at S = 5T).

    python tools/bench/bench_window.py [--samples 1] [--windows 1,2] [--slow-seconds 40] [--pool-size 4]
        [--json FILE] [--workdir DIR] [--keep]

Run it through ``make bench`` (tools/bench/run.sh: BENCH_NO_WINDOW=1 skips it), which sets ANSIBLE_COLLECTIONS_PATH
and makes the test host images, the fixture trees and the stand-in and smg wheelhouses.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEMO = os.path.join(ROOT, "inventories", "demo")
CLIENT = os.path.join(ROOT, "molecule", "fleet", "files", "client_stream.py")
ADMIN_KEY = "window-bench-admin-key-5c1f"
WORKER_KEY = "window-bench-worker-key-9a27"
POOLS = ("a", "b")
PER_POOL = 4
TARGET_RATIO = 0.75

# bench_scale.py's test host options and boot wait, loaded from its file (tools/bench is not a package)
_SPEC = importlib.util.spec_from_file_location("bench_scale", os.path.join(HERE, "bench_scale.py"))
bench_scale = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bench_scale)


def log(text):
    print("bench-window: %s" % text, flush=True)


def names(prefix, per_pool=PER_POOL):
    workers = {pool: ["%s-%s%d" % (prefix, pool, i + 1) for i in range(per_pool)] for pool in POOLS}
    gateways = {pool: "%s-gw-%s" % (prefix, pool) for pool in POOLS}
    # a1, b1, a2, b2, ...: a lockstep batch of 4 takes 2 of each pool
    order = [workers[pool][i] for i in range(per_pool) for pool in POOLS]
    return workers, gateways, order


def write_inventory(directory, prefix, slow_seconds, per_pool=PER_POOL):
    """The inventory: the demo's settings for the stand-in workers, two pools, two gateways. Returns its path."""
    workers, gateways, order = names(prefix, per_pool)
    os.makedirs(os.path.join(directory, "host_vars"), exist_ok=True)
    slow = workers["a"][0]
    lines = ["---", "# written by tools/bench/bench_window.py", "all:", "  vars:",
             "    ansible_connection: containers.podman.podman",
             "    ansible_python_interpreter: /usr/bin/python3", "  children:",
             "    sglang_servers:", "      hosts:"]
    lines += ["        %s:" % host for host in order]
    for pool in POOLS:
        lines += ["    pool_%s:" % pool, "      hosts:"] + ["        %s:" % host for host in workers[pool]]
    lines += ["    sglang_gateways:", "      hosts:"]
    for pool in POOLS:
        lines += ["        %s:" % gateways[pool], "          sglang_gateway_workers_group: pool_%s" % pool]
    with open(os.path.join(directory, "hosts.yml"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    group_vars = os.path.join(directory, "group_vars")
    os.makedirs(group_vars, exist_ok=True)
    with open(os.path.join(DEMO, "group_vars", "sglang_servers.yml")) as handle:
        servers = handle.read()
    with open(os.path.join(DEMO, "host_vars", "llmserve-demo-debian13.yml")) as handle:
        standin = handle.read()
    standin = standin.replace("sglang_server_env:\n  LLMSERVE_STANDIN_LOAD_SECONDS: \"5\"\n",
                              "sglang_server_env:\n  LLMSERVE_STANDIN_LOAD_SECONDS: \"{{ bench_load_seconds }}\"\n"
                              "  LLMSERVE_STANDIN_TOKEN_SECONDS: \"0.02\"\n"
                              "  LLMSERVE_BENCH_ROUND: \"{{ bench_round }}\"\n")
    if "bench_load_seconds" not in standin:
        raise RuntimeError("the demo stand-in host's sglang_server_env changed; update bench_window.py")
    with open(os.path.join(group_vars, "sglang_servers.yml"), "w") as handle:
        handle.write(servers.replace("sglang_server_api_key: demo-api-key-not-secret",
                                     "sglang_server_api_key: %s" % WORKER_KEY))
        handle.write("\n# the bench's workers: the demo's stand-in host, reached by the gateways over the network\n")
        handle.write(standin.replace("---\n", ""))
        handle.write("sglang_server_host: 0.0.0.0\nbench_round: 0\nbench_load_seconds: 5\n")
    with open(os.path.join(group_vars, "sglang_gateways.yml"), "w") as handle:
        handle.write("---\nsglang_gateway_install: wheelhouse\nsglang_gateway_wheelhouse: /opt/llmserve-wheelhouse-smg\n"
                     "sglang_gateway_host: 0.0.0.0\nsglang_gateway_port: 8000\n"
                     "sglang_gateway_admin_api_key: %s\nsglang_gateway_workers_timeout: 300\n" % ADMIN_KEY)
    with open(os.path.join(directory, "host_vars", slow + ".yml"), "w") as handle:
        handle.write("---\n# the slow one: its stand-in loads this long at every start\nbench_load_seconds: %d\n"
                     % slow_seconds)
    return directory


def boot(containers, network):
    """One systemd container per (name, image, mounts) on ``network``; waits until each runs."""
    subprocess.run(["podman", "network", "create", network], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False)
    for name, image, volumes in containers:
        subprocess.run(["podman", "rm", "-f", "-t", "2", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False)
        argv = ["podman", "run", "-d", "--name", name, "--hostname", name, "--systemd=always", "--network", network,
                "--label", "owner=llmserve-window"]
        for source, target in volumes:
            argv += ["-v", "%s:%s:ro" % (source, target)]
        subprocess.run(argv + [image, "/sbin/init"], stdout=subprocess.DEVNULL, check=True)
    bench_scale.wait_booted([name for name, dummy_image, dummy_volumes in containers])


def pool_containers(args, gateways, order, image_prefix, say=None):
    """The test hosts of two pools: (name, image, mounts) for each gateway (smg's wheelhouse) and each worker (the
    fixtures, the wheelhouses, the models); None, said, when a directory to mount is missing."""
    worker_mounts = [(args.fixtures, "/opt/llmserve-fixtures"), (args.wheelhouse, "/opt/llmserve-wheelhouse"),
                     (args.models, "/opt/llmserve-models")]
    gateway_mounts = [(os.path.join(args.wheelhouse, "smg"), "/opt/llmserve-wheelhouse-smg")]
    for source, dummy_target in worker_mounts + gateway_mounts:
        if not os.path.isdir(source):
            (say or log)("no %s (make bench makes the fixtures, the wheelhouses and the model)" % source)
            return None
    containers = [(gateways[p], image_prefix + ":bookworm", gateway_mounts) for p in POOLS]
    return containers + [(w, image_prefix + ":trixie", worker_mounts) for w in order]


def remove(containers, network):
    for name, dummy_image, dummy_volumes in containers:
        subprocess.run(["podman", "rm", "-f", "-t", "2", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False)
    subprocess.run(["podman", "network", "rm", "-f", network], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False)


def container_ip(name, network):
    out = subprocess.run(["podman", "inspect", "-f", "{{ (index .NetworkSettings.Networks \"%s\").IPAddress }}" % network,
                          name], capture_output=True, text=True, check=True).stdout.strip()
    if not out:
        raise RuntimeError("no address of %s on %s" % (name, network))
    return out


def playbook(name, inventory, workdir, label, extra=(), times=None, forks=10):
    """One ansible-playbook run: rc, wall seconds, recap {host: counts}, log path."""
    logfile = os.path.join(workdir, "%s.log" % label)
    argv = ["ansible-playbook", os.path.join(ROOT, "playbooks", name), "-i", inventory, "--forks", str(forks),
            "-e", "sglang_rollout_report_dir=%s" % os.path.join(workdir, "reports")] + list(extra)
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1")
    if times:
        env.update(ANSIBLE_CALLBACKS_ENABLED="bench_times", BENCH_TIMES_FILE=times,
                   ANSIBLE_CALLBACK_PLUGINS=os.path.join(HERE, "callback_plugins"))
    start = time.monotonic()
    with open(logfile, "w") as handle:
        rc = subprocess.run(argv, stdout=handle, stderr=subprocess.STDOUT, env=env, cwd=ROOT, check=False).returncode
    wall = time.monotonic() - start
    with open(logfile) as handle:
        output = handle.read()
    recap = {}
    for line in output.split("PLAY RECAP", 1)[-1].splitlines()[1:]:
        if ":" not in line or "ok=" not in line:
            continue
        host, rest = line.split(":", 1)
        recap[host.strip()] = {k: int(v) for k, v in (part.split("=") for part in rest.split() if "=" in part)}
    return dict(rc=rc, wall=round(wall, 2), recap=recap, log=logfile)


def out_of_rotation(report_root):
    """Each worker's seconds out of rotation in the newest run report under ``report_root`` (its host reports'
    ``rotation.out_of_rotation``), or {} when there is none."""
    runs = sorted(d for d in os.listdir(report_root) if os.path.isdir(os.path.join(report_root, d))) \
        if os.path.isdir(report_root) else []
    found = {}
    if runs:
        hosts = os.path.join(report_root, runs[-1], "hosts")
        for name in sorted(os.listdir(hosts)) if os.path.isdir(hosts) else []:
            if name.endswith(".json"):
                with open(os.path.join(hosts, name)) as handle:
                    report = json.load(handle)
                span = ((report.get("rotation") or {}).get("out_of_rotation") or {}).get("seconds")
                if span is not None:
                    found[report.get("host", name[:-5])] = span
    return found


def change_seconds(times):
    """From the start of the first change play to the start of the rejoin play (bench_times' play records)."""
    starts = {}
    with open(times) as handle:
        for line in handle:
            record = json.loads(line)
            if record.get("outcome") == "play_started":
                starts.setdefault(record["play"], record["t"])
    change = [t for play, t in starts.items() if play.startswith("Change the")]
    rejoin = [t for play, t in starts.items() if play.startswith("Put every serving worker back")]
    if not change or not rejoin:
        return None
    return round(min(rejoin) - min(change), 2)


class PoolWatch(threading.Thread):
    """Polls each gateway's GET /workers; records the most workers of each pool that are not healthy there."""

    def __init__(self, gateways, sizes):
        super().__init__(daemon=True)
        self.gateways = gateways  # pool -> http://ip:8000
        self.sizes = sizes
        self.most_out = {pool: 0 for pool in gateways}
        self.errors = 0
        self.samples = 0
        self.stop_event = threading.Event()

    def out_of(self, url, size):
        request = urllib.request.Request(url + "/workers", headers={"Authorization": "Bearer " + ADMIN_KEY})
        with urllib.request.urlopen(request, timeout=2) as answer:
            listed = json.loads(answer.read().decode()).get("workers") or []
        healthy = [w for w in listed if w.get("is_healthy") is True and w.get("status", "ready") in ("ready", None)]
        return size - len(healthy)

    def run(self):
        while not self.stop_event.is_set():
            for pool, url in self.gateways.items():
                try:
                    self.most_out[pool] = max(self.most_out[pool], self.out_of(url, self.sizes[pool]))
                except (OSError, ValueError):
                    self.errors += 1
            self.samples += 1
            self.stop_event.wait(0.2)


def start_clients(gateways, label):
    procs = {}
    for pool, gateway in gateways.items():
        subprocess.run(["podman", "exec", gateway, "rm", "-f", "/tmp/client-stream-%s.stop" % label], check=False)
        procs[pool] = subprocess.Popen(
            ["podman", "exec", "-e", "CLIENT_MODEL=tiny-llama", gateway, "python3", "/tmp/client_stream.py", label,
             "2", "1800", "1", "64"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return procs


def stop_clients(gateways, procs, label):
    results = {}
    for pool, gateway in gateways.items():
        subprocess.run(["podman", "exec", gateway, "touch", "/tmp/client-stream-%s.stop" % label], check=False)
    for pool, proc in procs.items():
        out, dummy_err = proc.communicate(timeout=120)
        try:
            results[pool] = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            results[pool] = {"requests": 0, "failed": None, "error": out[-2000:]}
    return results


def round_extra(way, number, window):
    extra = ["-e", "bench_round=%d" % number, "-e", "sglang_rollout_max_unavailable=%d" % window]
    if way == "window":
        return extra + ["-e", "sglang_rollout_window=true"]
    return extra + ["-e", "sglang_rollout_serial=%d" % (window * len(POOLS))]


def parse_windows(text, per_pool=PER_POOL):
    windows = sorted({int(part) for part in text.split(",") if part.strip()})
    if not windows or any(w < 1 or w >= per_pool for w in windows):
        raise ValueError("--windows: sizes from 1 to %d, comma separated" % (per_pool - 1))
    return windows


def main(argv=None):
    parser = argparse.ArgumentParser(description="sliding window vs lockstep batches, two gateway pools")
    parser.add_argument("--samples", type=int, default=1, help="rounds of each way (default 1)")
    parser.add_argument("--slow-seconds", type=int, default=40, help="the slow worker's load time (default 40)")
    parser.add_argument("--windows", default="1,2", help="workers out of each pool at once, comma separated (default 1,2)")
    parser.add_argument("--window-forks", type=int, default=0,
                        help="forks of the window rounds (default: the pools x (window + 1): one server preparing "
                             "behind each pool's slots; the lockstep rounds have 10, more than a batch)")
    parser.add_argument("--pool-size", type=int, default=PER_POOL, help="workers per pool (default 4, at least 2)")
    parser.add_argument("--prefix", default="llmserve-window-%d" % os.getpid())
    image_prefix = os.environ.get("TH_IMAGE_PREFIX", "localhost/llmserve-testhost")
    bench_scale.add_host_arguments(parser)
    args = parser.parse_args(argv)
    if args.samples < 1:
        parser.error("--samples must be at least 1")
    if args.pool_size < 2:
        parser.error("--pool-size must be at least 2")
    try:
        windows = parse_windows(args.windows, args.pool_size)
    except ValueError as error:
        parser.error(str(error))
    workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="llmserve-bench-window-"))
    os.makedirs(workdir, exist_ok=True)
    inventory = write_inventory(os.path.join(workdir, "inventory"), args.prefix, args.slow_seconds, args.pool_size)
    workers, gateways, order = names(args.prefix, args.pool_size)
    containers = pool_containers(args, gateways, order, image_prefix)
    if containers is None:
        return 2
    network = args.prefix
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    rounds = []
    checks = []
    try:
        log("booting 2 gateways and %d workers (%s-*) on network %s" % (len(order), args.prefix, network))
        boot(containers, network)
        for step, name, extra in (("converge-workers", "site.yml", ["-e", "sglang_rollout_window=true"]),
                                  ("converge-gateways", "gateway.yml", [])):
            run = playbook(name, inventory, workdir, step, extra=extra)
            log("%s: rc %d, %.1f s" % (step, run["rc"], run["wall"]))
            if run["rc"] != 0:
                log("the test hosts did not converge (see %s); no measurement" % run["log"])
                return 2
        urls = {p: "http://%s:8000" % container_ip(gateways[p], network) for p in POOLS}
        for gateway in gateways.values():
            subprocess.run(["podman", "cp", CLIENT, "%s:/tmp/client_stream.py" % gateway], check=True)
        ways = []
        for window in windows:
            for index in range(args.samples):
                ways += [(w, window) for w in (["lockstep", "window"] if index % 2 == 0 else ["window", "lockstep"])]
        for number, (way, window) in enumerate(ways, start=1):
            label = "round-%d-%s-%d" % (number, way, window)
            times = os.path.join(workdir, label + ".times.jsonl")
            watch = PoolWatch(urls, {p: args.pool_size for p in POOLS})
            watch.start()
            clients = start_clients(gateways, label)
            time.sleep(3)
            forks = 10 if way == "lockstep" else (args.window_forks or len(POOLS) * (window + 1))
            run = playbook("site.yml", inventory, workdir, label, extra=round_extra(way, number, window), times=times,
                           forks=forks)
            outs = out_of_rotation(os.path.join(workdir, "reports"))
            time.sleep(2)
            client = stop_clients(gateways, clients, label)
            watch.stop_event.set()
            watch.join()
            result = dict(way=way, window=window, forks=forks, out_of_rotation=outs,
                          out_of_rotation_mean=round(statistics.mean(outs.values()), 2) if outs else None,
                          number=number, wall=run["wall"], change=change_seconds(times), rc=run["rc"],
                          recap=run["recap"], log=run["log"], most_out=watch.most_out, watch_errors=watch.errors,
                          watch_samples=watch.samples, clients=client,
                          changed_workers=sorted(h for h in order if run["recap"].get(h, {}).get("changed", 0) > 0))
            rounds.append(result)
            requests = {p: c.get("requests") for p, c in client.items()}
            failures = {p: c.get("failed") for p, c in client.items()}
            log("%s (forks %d): rc %d, wall %.1f s, change %s s, most out %s, mean out of rotation %s s, requests %s, "
                "failed %s, workers changed %d/%d" % (label, forks, run["rc"], run["wall"], result["change"],
                                                      watch.most_out, result["out_of_rotation_mean"], requests, failures,
                                                      len(result["changed_workers"]), len(order)))
    finally:
        if not args.keep:
            remove(containers, network)
    summary = {}
    for window in windows:
        mine = [r for r in rounds if r["window"] == window]
        medians = {way: statistics.median([r["change"] for r in mine if r["way"] == way and r["change"] is not None]
                                          or [float("nan")]) for way in ("lockstep", "window")}
        walls = {way: statistics.median([r["wall"] for r in mine if r["way"] == way] or [float("nan")])
                 for way in ("lockstep", "window")}
        ratio = medians["window"] / medians["lockstep"] if medians["lockstep"] else float("nan")
        summary[window] = dict(medians=medians, walls=walls, ratio=ratio)
        checks.append(("window %d: change <= %.2f x lockstep batches of %d" % (window, TARGET_RATIO, window * len(POOLS)),
                       ratio <= TARGET_RATIO, "%.1f s / %.1f s = %.3f; whole run %.1f s / %.1f s = %.3f" % (
                           medians["window"], medians["lockstep"], ratio, walls["window"], walls["lockstep"],
                           walls["window"] / walls["lockstep"])))
    failed = [(r["number"], p, c.get("failed")) for r in rounds for p, c in r["clients"].items() if c.get("failed") != 0]
    empty = [(r["number"], p) for r in rounds for p, c in r["clients"].items() if not c.get("requests")]
    checks.append(("0 failed client requests in every round", not failed and not empty,
                   "failed %s, rounds without requests %s" % (failed, empty)))
    over = [(r["number"], r["most_out"]) for r in rounds if max(r["most_out"].values()) > r["window"]]
    blind = [r["number"] for r in rounds if r["watch_samples"] < 10 or r["watch_errors"] > r["watch_samples"]]
    checks.append(("never more than the window out of a pool", rounds and not over and not blind,
                   "most out per round %s; over the window %s; rounds the watch could not see %s" % (
                       [(r["number"], r["window"], r["most_out"]) for r in rounds], over, blind)))
    bad = [r["number"] for r in rounds if r["rc"] != 0 or any(c.get("failures", 0) or c.get("unreachable", 0)
                                                              for c in r["recap"].values())]
    checks.append(("every round's run succeeded", not bad, "rounds with failures %s" % bad))
    partial = [r["number"] for r in rounds if len(r["changed_workers"]) != len(order)]
    checks.append(("every round restarted all %d workers" % len(order), not partial, "rounds that did not %s" % partial))
    wall = time.monotonic() - started
    failures = 0
    for name, ok, measured in checks:
        print("target %-55s %s (%s)" % (name, "PASS" if ok else "FAIL", measured))
        failures += 0 if ok else 1
    print("bench-window: %d targets passed, %d failed in %.0f s (load %s); logs in %s" % (
        len(checks) - failures, failures, wall, "%.1f %.1f %.1f" % os.getloadavg(), workdir))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as handle:
            json.dump(dict(rounds=rounds, summary=summary, slow_seconds=args.slow_seconds, pool_size=args.pool_size,
                           windows=windows, targets=[dict(name=n, ok=o, measured=m) for n, o, m in checks],
                           loadavg=os.getloadavg(), wall=wall), handle, indent=2)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
