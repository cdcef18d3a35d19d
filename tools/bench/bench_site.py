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
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SITE = os.path.join(ROOT, "playbooks", "site.yml")
BIN = os.path.dirname(sys.executable)
RECAP = re.compile(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


LOG_PREFIX = "bench-site"  # bench_scale.py, which reuses this module, sets its own


def log(text):
    print("%s: %s" % (LOG_PREFIX, text), flush=True)


def parse_recap(stdout):
    """``{host: {ok, changed, unreachable, failed}}`` from the PLAY RECAP of an ansible-playbook run."""
    return {m.group(1): dict(ok=int(m.group(2)), changed=int(m.group(3)), unreachable=int(m.group(4)),
                             failed=int(m.group(5)))
            for m in RECAP.finditer(stdout.split("PLAY RECAP", 1)[-1])}


def clean(recap, hosts):
    """Whether every host ran and none changed, failed or was unreachable."""
    return set(recap) == set(hosts) and all(
        r["changed"] == 0 and r["failed"] == 0 and r["unreachable"] == 0 for r in recap.values())


def read_processes(proc_root="/proc"):
    """``{pid: (ppid, rss_pages, cpu_ticks)}`` of every process under ``proc_root``, cpu_ticks its own user + system
    time (a process that ends meanwhile is skipped)."""
    table = {}
    for name in os.listdir(proc_root):
        if not name.isdigit():
            continue
        try:
            with open(os.path.join(proc_root, name, "stat")) as handle:
                stat = handle.read()
        except OSError:
            continue
        # the command name may hold spaces and parentheses: the fields start after the last ")"
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) < 22:
            continue
        table[int(name)] = (int(fields[1]), int(fields[21]), int(fields[11]) + int(fields[12]))
    return table


def descendants(table, root):
    """``root`` and every process below it in ``table`` (from read_processes)."""
    children = {}
    for pid, (ppid, *dummy_rest) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root] if root in table else []
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def read_pss(proc_root, pid):
    """Proportional set size of one process in bytes (smaps_rollup), or None where it cannot be read."""
    try:
        with open(os.path.join(proc_root, str(pid), "smaps_rollup")) as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def tree_usage(root, proc_root="/proc", page_size=None, ticks=None):
    """A process tree now: summed RSS (shared pages counted once per process), summed PSS (shared pages split
    between their users: what the tree really holds), the number of processes, and the CPU seconds the root
    process itself has used so far (``root_cpu``: without its children; None once it has ended)."""
    page_size = page_size or os.sysconf("SC_PAGE_SIZE")
    ticks = ticks or os.sysconf("SC_CLK_TCK")
    table = read_processes(proc_root)
    pids = descendants(table, root)
    pss = [read_pss(proc_root, pid) for pid in pids]
    return dict(rss=sum(table[pid][1] for pid in pids) * page_size,
                pss=sum(p for p in pss if p is not None) if any(p is not None for p in pss) else None,
                procs=len(pids), root_cpu=table[root][2] / ticks if root in table else None)


class TreeSampler(threading.Thread):
    """Samples tree_usage of one process every ``interval`` seconds until stopped; keeps the peaks (for root_cpu:
    the last reading, at most one interval before the root ended)."""

    def __init__(self, root, interval=0.1, proc_root="/proc", page_size=None, ticks=None):
        super().__init__(daemon=True)
        self.root, self.interval, self.proc_root, self.page_size, self.ticks = root, interval, proc_root, page_size, ticks
        self.peak = dict(rss=0, pss=None, procs=0, root_cpu=None)
        self.samples = 0
        self._stop_event = threading.Event()

    def sample(self):
        now = tree_usage(self.root, self.proc_root, self.page_size, self.ticks)
        self.samples += 1
        for key, value in now.items():
            if value is not None and (self.peak[key] is None or value > self.peak[key]):
                self.peak[key] = value

    def run(self):
        while not self._stop_event.is_set():
            self.sample()
            self._stop_event.wait(self.interval)

    def stop(self):
        self._stop_event.set()
        self.join()


def run_site(inventory, hosts, workdir, label, extra=(), env=None, sample_memory=False):
    """One ansible-playbook run of site.yml limited to ``hosts``: wall and CPU seconds, recap, log file.

    CPU is the user + system time of ansible-playbook and every process it waited for (its forks, and what they ran:
    the connection's client), from wait4. With ``sample_memory`` the tree's memory is sampled every 0.1 s as well
    (peak summed RSS and PSS, peak process count), ``maxrss_mb`` is the largest single process of the tree and
    ``main_cpu`` the CPU of ansible-playbook's own process (its last reading before the end), without its forks.
    The ``*_mb`` values are MiB."""
    logfile = os.path.join(workdir, "%s.log" % label)
    argv = [os.path.join(BIN, "ansible-playbook") if os.path.exists(os.path.join(BIN, "ansible-playbook"))
            else "ansible-playbook", SITE, "-i", inventory, "--limit", ",".join(hosts),
            "-e", "sglang_rollout_report_dir=%s" % os.path.join(workdir, "reports")] + list(extra)
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1", **(env or {}))
    start = time.monotonic()
    with open(logfile, "w") as handle:
        proc = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT)
        sampler = TreeSampler(proc.pid) if sample_memory else None
        if sampler:
            sampler.start()
        # wait4 instead of proc.wait(): the rusage of this run alone, the largest process's peak RSS included
        dummy_pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if sampler:
            sampler.stop()
    with open(logfile) as handle:
        output = handle.read()
    recap = parse_recap(output)
    result = dict(label=label, hosts=list(hosts), wall=round(wall, 2), cpu=round(usage.ru_utime + usage.ru_stime, 2),
                  rc=proc.returncode, recap=recap, clean=proc.returncode == 0 and clean(recap, hosts), log=logfile)
    if sampler:
        mib = 1024.0 * 1024.0
        result.update(maxrss_mb=round(usage.ru_maxrss / 1024.0, 1), rss_peak_mb=round(sampler.peak["rss"] / mib, 1),
                      pss_peak_mb=None if sampler.peak["pss"] is None else round(sampler.peak["pss"] / mib, 1),
                      procs_peak=sampler.peak["procs"], memory_samples=sampler.samples,
                      main_cpu=None if sampler.peak["root_cpu"] is None else round(sampler.peak["root_cpu"], 2))
    return result


def warm_up(inventory, hosts, workdir, extra=(), env=None, attempts=2):
    """Bring ``hosts`` to the state INVENTORY describes: a first run may converge them, a later one must change
    nothing. The last run's result; its ``clean`` says whether they are converged."""
    for attempt in range(1, attempts + 1):
        warm = run_site(inventory, hosts, workdir, "warm-up-%d" % attempt, extra=extra, env=env)
        log("warm-up %d over %s: %.1f s, rc %d, changed %s" % (
            attempt, ",".join(hosts), warm["wall"], warm["rc"], {h: r["changed"] for h, r in warm["recap"].items()}))
        if warm["clean"] or warm["rc"] != 0:
            break
    if not warm["clean"]:
        log("the hosts are not converged (see %s); no measurement" % warm["log"])
    return warm


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
    if not warm_up(args.inventory, hosts, workdir)["clean"]:
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
