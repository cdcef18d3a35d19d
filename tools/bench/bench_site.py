# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark: playbooks/site.yml on converged hosts (a run that changes nothing), over one host and over two.

site.yml plans every host at once and changes only the hosts whose plan has changes, in rolling batches; a run
that changes nothing should therefore cost about one host's time, whatever the number of hosts. This measures it
side by side in one run: samples alternate between ``--limit <first host>`` and both hosts (the order flips every
sample, so a drift in the machine's load hits both alike), every run must report changed=0 and failed=0, and the
ratio of the medians is checked against the target.

    python tools/bench/bench_site.py --inventory INVENTORY --hosts HOST1,HOST2 [--samples 5] [--json FILE]
        [--workdir DIR] [--max-ratio 1.3] [--max-one 22]

The hosts must run the configuration of INVENTORY already; a first run over both (not measured) must change nothing
or converge them (then a second one must change nothing). Run it through ``make bench`` (tools/bench/run.sh), which
sets ANSIBLE_COLLECTIONS_PATH and either boots two demo-style hosts of its own or reuses the running demo hosts.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SITE = os.path.join(ROOT, "playbooks", "site.yml")
BIN = os.path.dirname(sys.executable)
RECAP = re.compile(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


def log(text):
    print("bench-site: " + text, flush=True)


def parse_recap(stdout):
    """``{host: {ok, changed, unreachable, failed}}`` from the PLAY RECAP of an ansible-playbook run."""
    return {m.group(1): dict(ok=int(m.group(2)), changed=int(m.group(3)), unreachable=int(m.group(4)),
                             failed=int(m.group(5)))
            for m in RECAP.finditer(stdout.split("PLAY RECAP", 1)[-1])}


def clean(recap, hosts):
    """Whether every host ran and none changed, failed or was unreachable."""
    return set(recap) == set(hosts) and all(
        r["changed"] == 0 and r["failed"] == 0 and r["unreachable"] == 0 for r in recap.values())


def run_site(inventory, hosts, workdir, label, extra=()):
    """One ansible-playbook run of site.yml limited to ``hosts``: wall and CPU seconds, recap, log file."""
    logfile = os.path.join(workdir, "%s.log" % label)
    argv = [os.path.join(BIN, "ansible-playbook") if os.path.exists(os.path.join(BIN, "ansible-playbook"))
            else "ansible-playbook", SITE, "-i", inventory, "--limit", ",".join(hosts),
            "-e", "sglang_rollout_report_dir=%s" % os.path.join(workdir, "reports")] + list(extra)
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, check=False,
                          cwd=ROOT)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(logfile, "w") as handle:
        handle.write(proc.stdout)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    recap = parse_recap(proc.stdout)
    return dict(label=label, hosts=list(hosts), wall=round(wall, 2), cpu=round(cpu, 2), rc=proc.returncode,
                recap=recap, clean=proc.returncode == 0 and clean(recap, hosts), log=logfile)


def summarise(runs):
    walls = [r["wall"] for r in runs]
    return dict(median=round(statistics.median(walls), 2), min=min(walls), max=max(walls),
                cpu_median=round(statistics.median(r["cpu"] for r in runs), 2), samples=walls)


def check_targets(one, both, pair_ratios, runs, max_ratio, max_one):
    ratio = both["median"] / one["median"]
    return [
        ("every measured run changed nothing and failed nothing", all(r["clean"] for r in runs),
         sum(1 for r in runs if not r["clean"])),
        ("both hosts <= %.2f x one host (ratio of the medians)" % max_ratio, ratio <= max_ratio, round(ratio, 3)),
        ("one host <= %g s (median)" % max_one, one["median"] <= max_one, one["median"]),
        ("median of the per-sample ratios <= %.2f" % max_ratio, statistics.median(pair_ratios) <= max_ratio,
         round(statistics.median(pair_ratios), 3)),
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description="site.yml that changes nothing: one host vs two, side by side")
    parser.add_argument("--inventory", required=True, help="inventory of converged hosts (group sglang_servers)")
    parser.add_argument("--hosts", required=True, help="two host names, comma separated; the first is the one-host run")
    parser.add_argument("--samples", type=int, default=5, help="pairs of runs (default 5)")
    parser.add_argument("--max-ratio", type=float, default=1.3, help="target: both hosts / one host (default 1.3)")
    parser.add_argument("--max-one", type=float, default=22.0, help="target: one host, seconds (default 22)")
    parser.add_argument("--json", help="write all measurements to this file")
    parser.add_argument("--workdir", help="keep logs and reports here (default: a temporary directory)")
    args = parser.parse_args(argv)
    hosts = [h for h in args.hosts.split(",") if h]
    if len(hosts) != 2:
        parser.error("--hosts takes exactly two host names")
    if args.samples < 1:
        parser.error("--samples must be at least 1")
    workdir = args.workdir or tempfile.mkdtemp(prefix="llmserve-bench-site-")
    os.makedirs(workdir, exist_ok=True)
    started = time.monotonic()

    # the hosts must be converged: a first run may converge them, the next one must change nothing
    for attempt in (1, 2):
        warm = run_site(args.inventory, hosts, workdir, "warm-up-%d" % attempt)
        log("warm-up %d over %s: %.1f s, rc %d, changed %s" % (
            attempt, ",".join(hosts), warm["wall"], warm["rc"], {h: r["changed"] for h, r in warm["recap"].items()}))
        if warm["clean"]:
            break
        if warm["rc"] != 0 or attempt == 2:
            log("the hosts are not converged (see %s); no measurement" % warm["log"])
            return 2

    runs, one_runs, both_runs, pair_ratios = [], [], [], []
    for index in range(args.samples):
        order = [("one", hosts[:1]), ("both", hosts)]
        if index % 2:
            order.reverse()
        sample = {}
        for kind, limit in order:
            result = run_site(args.inventory, limit, workdir, "sample-%d-%s" % (index + 1, kind))
            result["sample"], result["kind"] = index + 1, kind
            runs.append(result)
            (one_runs if kind == "one" else both_runs).append(result)
            sample[kind] = result
            log("sample %d/%d %-4s %5.1f s (cpu %5.1f s) %s" % (
                index + 1, args.samples, kind, result["wall"], result["cpu"],
                "changed nothing" if result["clean"] else "NOT CLEAN: rc %d %s" % (result["rc"], result["recap"])))
        pair_ratios.append(sample["both"]["wall"] / sample["one"]["wall"])

    one, both = summarise(one_runs), summarise(both_runs)
    checks = check_targets(one, both, pair_ratios, runs, args.max_ratio, args.max_one)
    wall = time.monotonic() - started
    print()
    print("site.yml, no change, %d samples each, alternating; load average at the end %s; wall %.0f s" % (
        args.samples, " ".join("%.2f" % x for x in os.getloadavg()), wall))
    print()
    print("| run | median | min | max | controller CPU (median) | samples |")
    print("|---|---|---|---|---|---|")
    for label, row in (("one host (%s)" % hosts[0], one), ("both hosts (%s)" % ", ".join(hosts), both)):
        print("| %s | %.2f s | %.2f s | %.2f s | %.2f s | %s |" % (
            label, row["median"], row["min"], row["max"], row["cpu_median"], ", ".join("%.1f" % w for w in row["samples"])))
    print()
    print("ratio both/one: %.3f (medians), per sample %s" % (
        both["median"] / one["median"], ", ".join("%.2f" % r for r in pair_ratios)))
    failed = 0
    for name, ok, measured in checks:
        print("target %-55s %s (measured %s)" % (name, "PASS" if ok else "FAIL", measured))
        failed += 0 if ok else 1
    print("bench-site: %d targets passed, %d failed; logs in %s" % (len(checks) - failed, failed, workdir))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as handle:
            json.dump(dict(hosts=hosts, inventory=args.inventory, one=one, both=both, pair_ratios=pair_ratios,
                           runs=runs, targets=[dict(name=n, ok=o, measured=m) for n, o, m in checks],
                           loadavg=os.getloadavg(), wall=wall), handle, indent=2)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
