# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark: what the controller spends per host on a site.yml run that changes nothing, at 1, 2, 4 and 8 hosts.

Boots N systemd test hosts (podman containers, named PREFIX-1 .. PREFIX-N, removed at the end) set up as the demo's
stand-in host (the demo inventory's group_vars and the stand-in host's host_vars, the same read-only mounts),
converges them once, then runs site.yml limited to the first k of them for every k of ``--counts``, the order
flipping every sample so that a drift in the machine's load hits every k alike. Every run must report changed=0,
failed=0 and unreachable=0, or the bench fails. Per run it records the controller's CPU (user + system of
ansible-playbook and everything it waited for: its forks and the connection's client processes), the peak memory of
the ansible-playbook process tree (summed RSS and summed PSS, sampled every 0.1 s from /proc), the largest single
process (ru_maxrss), the CPU of ansible-playbook's own process (one process, one core at a time: the part that more
cores do not spread), the wall time and the forks. Then least squares: CPU = a + b * hosts and memory = a + b *
workers (workers = min(hosts, forks): ansible-playbook runs at most that many forks at once), with R^2; reported, not
judged. With ``--uncached`` it also measures the smallest and largest k with facts gathered on every run
(ANSIBLE_GATHERING=implicit) instead of from the fact cache that ansible.cfg turns on, to show what the cache saves.

    python tools/bench/bench_scale.py [--counts 1,2,4,8] [--samples 2] [--forks 8] [--uncached] [--json FILE]
        [--workdir DIR] [--prefix llmserve-scale-PID] [--image localhost/llmserve-testhost:trixie] [--keep]

Run it through ``make bench`` (tools/bench/run.sh: BENCH_NO_SCALE=1 skips it, BENCH_SCALE_HOSTS picks the counts),
which sets ANSIBLE_COLLECTIONS_PATH; it needs the test host images, the fixture trees and the stand-in wheelhouse
(`make bench` makes them).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEMO = os.path.join(ROOT, "inventories", "demo")
# the demo host that runs the SGLang stand-in: its host_vars are every scale host's
STANDIN_HOST = "llmserve-demo-debian13"

# bench_site.py's run of site.yml, recap check, warm-up and memory sampler, loaded from its file (tools/bench is
# not a package)
_SPEC = importlib.util.spec_from_file_location("bench_site", os.path.join(HERE, "bench_site.py"))
bench_site = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bench_site)
bench_site.LOG_PREFIX = "bench-scale"
log = bench_site.log


def parse_counts(text):
    """``"1,2,4,8"`` -> ``[1, 2, 4, 8]``: positive, distinct, sorted; at least two, or there is nothing to fit."""
    try:
        counts = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise ValueError("host counts must be whole numbers separated by commas, got %r" % text) from None
    if len(counts) < 2 or counts[0] < 1:
        raise ValueError("give at least two host counts, each at least 1, got %r" % text)
    return counts


def sample_order(counts, index):
    """The host counts of sample ``index``: ascending in even samples, descending in odd ones."""
    return list(counts) if index % 2 == 0 else list(reversed(counts))


def linear_fit(xs, ys):
    """Least squares ``y = a + b * x``: dict(a, b, r2, n). R^2 is 1 where every y is equal and the fit exact."""
    n = len(xs)
    if n != len(ys) or n < 2:
        raise ValueError("a fit needs at least two (x, y) pairs")
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mean_x) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("a fit needs at least two distinct x values")
    b = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / sxx
    a = mean_y - b * mean_x
    ss_res = sum((y - (a + b * x)) ** 2 for x, y in zip(xs, ys))
    ss_tot = sum((y - mean_y) ** 2 for y in ys)
    r2 = 1.0 - ss_res / ss_tot if ss_tot else (1.0 if ss_res == 0 else 0.0)
    return dict(a=a, b=b, r2=r2, n=n)


def workers(hosts, forks):
    """Forks that ansible-playbook runs at once over ``hosts`` hosts."""
    return min(hosts, forks)


def fits(runs, forks):
    """The fits of the measured runs: CPU (all of it, and ansible-playbook's own process alone) and wall time per
    host, memory per worker (fork)."""
    hosts = [len(r["hosts"]) for r in runs]
    out = dict(cpu=linear_fit(hosts, [r["cpu"] for r in runs]),
               wall=linear_fit(hosts, [r["wall"] for r in runs]))
    if all(r.get("main_cpu") is not None for r in runs):
        out["main_cpu"] = linear_fit(hosts, [r["main_cpu"] for r in runs])
    busy = [workers(h, forks) for h in hosts]
    if len(set(busy)) > 1:
        for key in ("rss_peak_mb", "pss_peak_mb", "maxrss_mb"):
            if all(r.get(key) is not None for r in runs):
                out[key] = linear_fit(busy, [r[key] for r in runs])
    return out


def per_count(runs):
    """Medians per host count: {hosts: {samples, cpu, main_cpu, wall, rss_peak_mb, pss_peak_mb, maxrss_mb,
    procs_peak, cpu_per_host}}."""
    table = {}
    for run in runs:
        table.setdefault(len(run["hosts"]), []).append(run)
    out = {}
    for count, group in sorted(table.items()):
        row = dict(samples=len(group))
        for key in ("cpu", "main_cpu", "wall", "rss_peak_mb", "pss_peak_mb", "maxrss_mb", "procs_peak"):
            values = [r[key] for r in group if r.get(key) is not None]
            row[key] = round(statistics.median(values), 2) if values else None
        row["cpu_per_host"] = round(row["cpu"] / count, 2)
        out[count] = row
    return out


def check_targets(runs, counts, samples, other_runs=()):
    """The bench's verdicts: only what must hold whatever the machine (the fits are reported, not judged).
    ``other_runs`` (the uncached ones) must be clean too but do not count as samples."""
    dirty = [r["label"] for r in list(runs) + list(other_runs) if not r["clean"]]
    short = [c for c in counts if sum(1 for r in runs if len(r["hosts"]) == c) < samples]
    return [
        ("every measured run changed nothing and failed nothing", not dirty, ", ".join(dirty) or "all clean"),
        ("every host count measured %d times" % samples, not short, ", ".join(map(str, short)) or "all"),
    ]


def write_inventory(directory, hosts, demo=DEMO, standin_host=STANDIN_HOST):
    """An inventory of ``hosts`` (group sglang_servers) set up as the demo's stand-in host: the demo's group_vars,
    and the stand-in host's host_vars for each host. Returns its directory."""
    if os.path.isdir(directory):
        shutil.rmtree(directory)
    shutil.copytree(os.path.join(demo, "group_vars"), os.path.join(directory, "group_vars"))
    os.makedirs(os.path.join(directory, "host_vars"))
    for host in hosts:
        shutil.copyfile(os.path.join(demo, "host_vars", standin_host + ".yml"),
                        os.path.join(directory, "host_vars", host + ".yml"))
    with open(os.path.join(directory, "hosts.yml"), "w") as handle:
        handle.write("---\n# written by tools/bench/bench_scale.py: the scale bench's test hosts\nall:\n  children:\n"
                     "    sglang_servers:\n      hosts:\n")
        handle.writelines("        %s:\n" % host for host in hosts)
    return directory


def boot_hosts(names, image, mounts):
    """Start one systemd container per name (as tools/demo.sh starts the demo hosts) and wait until each runs."""
    for name in names:
        subprocess.run(["podman", "rm", "-f", "-t", "2", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False)
        argv = ["podman", "run", "-d", "--name", name, "--hostname", name, "--systemd=always",
                "--label", "owner=llmserve-scale"]
        for source, target in mounts:
            argv += ["-v", "%s:%s:ro" % (source, target)]
        subprocess.run(argv + [image, "/sbin/init"], stdout=subprocess.DEVNULL, check=True)
    wait_booted(names)


def wait_booted(names):
    """Wait until systemd in each container says running (or degraded: a unit the image does not need failed)."""
    for name in names:
        for dummy_try in range(120):
            state = subprocess.run(["podman", "exec", name, "systemctl", "is-system-running"], capture_output=True,
                                   text=True, check=False).stdout.strip()
            if state in ("running", "degraded"):
                break
            time.sleep(0.5)
        else:
            raise RuntimeError("test host %s did not finish booting" % name)


def remove_hosts(names):
    for name in names:
        subprocess.run(["podman", "rm", "-f", "-t", "2", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False)


def measure(inventory, hosts, counts, samples, forks, workdir, kind="cached", env=None):
    """``samples`` runs of site.yml at each of ``counts`` (limited to the first k hosts), alternating orders."""
    runs = []
    for index in range(samples):
        for count in sample_order(counts, index):
            label = "%s-sample-%d-hosts-%d" % (kind, index + 1, count)
            run = bench_site.run_site(inventory, hosts[:count], workdir, label, extra=["--forks", str(forks)],
                                      env=env, sample_memory=True)
            run.update(sample=index + 1, kind=kind, forks=forks, workers=workers(count, forks))
            runs.append(run)
            log("%s sample %d/%d, %d host(s): wall %5.1f s, cpu %5.1f s (main process %s s), tree rss %6.1f MiB, "
                "pss %s MiB, largest %5.1f MiB, %d processes; %s" % (
                    kind, index + 1, samples, count, run["wall"], run["cpu"], run["main_cpu"], run["rss_peak_mb"],
                    run["pss_peak_mb"], run["maxrss_mb"], run["procs_peak"],
                    "changed nothing" if run["clean"] else "NOT CLEAN: rc %d %s" % (run["rc"], run["recap"])))
    return runs


def print_report(rows, fit, forks, uncached_rows, wall, loadavg):
    print()
    print("site.yml, no change, forks %d; load average at the end %s; bench wall %.0f s" % (
        forks, " ".join("%.2f" % x for x in loadavg), wall))
    print()
    print("| hosts | samples | controller CPU (median) | CPU per host | main process CPU | wall (median) "
          "| peak tree RSS | peak tree PSS | largest process | processes |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for count, row in rows.items():
        print("| %d | %d | %.2f s | %.2f s | %s s | %.2f s | %s MiB | %s MiB | %s MiB | %s |" % (
            count, row["samples"], row["cpu"], row["cpu_per_host"], row["main_cpu"], row["wall"], row["rss_peak_mb"],
            row["pss_peak_mb"], row["maxrss_mb"], row["procs_peak"]))
    print()
    names = dict(cpu="controller CPU s = a + b * hosts", main_cpu="main process CPU s = a + b * hosts",
                 wall="wall s = a + b * hosts",
                 rss_peak_mb="peak tree RSS MiB = a + b * workers", pss_peak_mb="peak tree PSS MiB = a + b * workers",
                 maxrss_mb="largest process MiB = a + b * workers")
    for key, name in names.items():
        if key in fit:
            print("fit %-40s a %8.2f  b (slope) %7.3f  R^2 %.3f  (%d runs)" % (
                name, fit[key]["a"], fit[key]["b"], fit[key]["r2"], fit[key]["n"]))
    if uncached_rows:
        print()
        print("facts gathered on every run (ANSIBLE_GATHERING=implicit) vs from the fact cache, medians:")
        for count, row in uncached_rows.items():
            cached = rows.get(count)
            print("  %d host(s): cpu %.2f s vs %s s, wall %.2f s vs %s s" % (
                count, row["cpu"], cached and cached["cpu"], row["wall"], cached and cached["wall"]))


def add_host_arguments(parser):
    """The options every bench that boots test hosts takes (bench_window.py too): what the hosts mount, --keep, and
    where the results go."""
    cache = os.environ.get("LLMSERVE_CACHE", "/var/cache/llmserve")
    parser.add_argument("--fixtures", default=os.path.join(cache, "fixtures"))
    parser.add_argument("--wheelhouse", default=os.path.join(cache, "wheelhouse"))
    parser.add_argument("--models", default=os.path.dirname(
        os.environ.get("LLMSERVE_SGLANG_MODEL", os.path.join(cache, "models", "tiny-llama"))))
    parser.add_argument("--keep", action="store_true", help="leave the test hosts running")
    parser.add_argument("--json", help="write all measurements to this file")
    parser.add_argument("--workdir", help="keep logs, reports and the inventory here (default: a temporary directory)")


def main(argv=None):
    parser = argparse.ArgumentParser(description="site.yml that changes nothing: controller CPU and memory per host")
    parser.add_argument("--counts", default="1,2,4,8", help="host counts, comma separated (default 1,2,4,8)")
    parser.add_argument("--samples", type=int, default=2, help="runs per host count (default 2, at least 2)")
    parser.add_argument("--forks", type=int, help="ansible-playbook --forks (default: the largest host count)")
    parser.add_argument("--uncached", action="store_true",
                        help="also measure the smallest and largest count with facts gathered on every run")
    parser.add_argument("--prefix", default="llmserve-scale-%d" % os.getpid(), help="container name prefix")
    parser.add_argument("--image", default=os.environ.get("TH_IMAGE_PREFIX", "localhost/llmserve-testhost") + ":trixie",
                        help="test host image (default: the Debian 13 one, like the demo's stand-in host)")
    add_host_arguments(parser)
    args = parser.parse_args(argv)
    try:
        counts = parse_counts(args.counts)
    except ValueError as error:
        parser.error(str(error))
    if args.samples < 2:
        parser.error("--samples must be at least 2")
    forks = args.forks or counts[-1]
    # absolute: the rollout refuses a relative report directory
    workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="llmserve-bench-scale-"))
    os.makedirs(workdir, exist_ok=True)
    hosts = ["%s-%d" % (args.prefix, i + 1) for i in range(counts[-1])]
    inventory = write_inventory(os.path.join(workdir, "inventory"), hosts)
    mounts = [(args.fixtures, "/opt/llmserve-fixtures"), (args.wheelhouse, "/opt/llmserve-wheelhouse"),
              (args.models, "/opt/llmserve-models")]
    for source, dummy_target in mounts:
        if not os.path.isdir(source):
            log("no %s (make bench makes the fixtures, the wheelhouse and the model)" % source)
            return 2
    # ansible.cfg's jsonfile fact cache, in a directory of this run's own: the warm-up fills it, the measured runs
    # read it (smart gathering), and nothing is left in the user's cache
    env = dict(ANSIBLE_CACHE_PLUGIN_CONNECTION=os.path.join(workdir, "facts"))
    # SIGTERM (a timeout, a kill) still runs the finally below, which removes the test hosts
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    try:
        log("booting %d test hosts %s-1..%d from %s" % (len(hosts), args.prefix, len(hosts), args.image))
        boot_hosts(hosts, args.image, mounts)
        # not measured: every host converges in one batch instead of the demo's one at a time
        warm = bench_site.warm_up(inventory, hosts, workdir, env=env,
                                  extra=["--forks", str(forks), "-e", "sglang_rollout_serial=%d" % len(hosts)])
        if not warm["clean"]:
            return 2
        runs = measure(inventory, hosts, counts, args.samples, forks, workdir, env=env)
        uncached = []
        if args.uncached:
            uncached = measure(inventory, hosts, [counts[0], counts[-1]], args.samples, forks, workdir,
                               kind="uncached", env=dict(env, ANSIBLE_GATHERING="implicit"))
    finally:
        if not args.keep:
            remove_hosts(hosts)
    rows, fit = per_count(runs), fits(runs, forks)
    uncached_rows = per_count(uncached) if uncached else {}
    checks = check_targets(runs, counts, args.samples, uncached)
    wall, loadavg = time.monotonic() - started, os.getloadavg()
    print_report(rows, fit, forks, uncached_rows, wall, loadavg)
    failed = 0
    for name, ok, measured in checks:
        print("target %-55s %s (%s)" % (name, "PASS" if ok else "FAIL", measured))
        failed += 0 if ok else 1
    print("bench-scale: %d targets passed, %d failed; logs in %s" % (len(checks) - failed, failed, workdir))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as handle:
            json.dump(dict(hosts=hosts, counts=counts, samples=args.samples, forks=forks, image=args.image,
                           per_count=rows, fits=fit, uncached_per_count=uncached_rows, runs=runs + uncached,
                           warm_up=warm, targets=[dict(name=n, ok=o, measured=m) for n, o, m in checks],
                           loadavg=loadavg, nproc=os.cpu_count(), wall=wall), handle, indent=2)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
