# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Summarise the fleet measurements of one `molecule test -s fleet` run (written by its side effect to
$LLMSERVE_FLEET_REPORT): the same client workload through the gateway (4 loops of short chat completions and, where
measured, 2 loops of streamed completions that outlast the workers' stop timeout) in steady state, during
restart.yml through the gateway (drain, restart, put back) and during a plain restart of both units without the
drain. All three ran in the same scenario run, one after the other, on the same hosts. Each phase also says how
many retries the gateway made (its smg_worker_retries_total over the phase).

    python3 bench_fleet.py MEASUREMENTS.json [--json OUT.json]

Prints one line per workload and phase and the verdicts; exits 1 when a verdict fails:
  - rollout_no_failures: the rolling restart through the gateway failed no request (and cut no stream);
  - rollout_not_empty / plain_not_empty: the clients really sent requests while the restarts ran;
  - drain_saves_streams (when streams were measured): the plain restart cut streams and the rollout none, i.e. the
    workload tells the two paths apart;
  - failing_config_no_failures (when measured): site.yml with a configuration that kills the first worker during
    start-up failed no request (that worker drained out, rolled back and left out; the other served alone).
The plain restart's failed short requests are counted, not judged: the gateway's retries hide most of them.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_summary import ratio, scenario_main  # noqa: E402  pylint: disable=wrong-import-position


PHASES = ("steady", "rollout_through_gateway", "plain_restart_without_drain")
FIELDS = ("requests", "failed", "p50", "p99")


def _counts(workload):
    """A client workload's counts and latencies, or None when it was not measured."""
    return None if workload is None else {k: workload.get(k) for k in FIELDS}


def summarise(measurements):
    steady = measurements["steady"]
    rollout = measurements["rollout_through_gateway"]
    plain = measurements["plain_restart_without_drain"]
    wall = measurements.get("rollout_wall_seconds")
    if isinstance(wall, str):  # ansible's command delta, H:MM:SS.ffffff
        hours, minutes, seconds = wall.split(":")
        wall = round(int(hours) * 3600 + int(minutes) * 60 + float(seconds), 1)
    summary = {
        "steady": _counts(steady),
        "rollout_through_gateway": _counts(rollout),
        "plain_restart_without_drain": _counts(plain),
        "streams": {name: _counts(measurements[name].get("streams")) for name in PHASES},
        "gateway_retries": {name: measurements[name].get("gateway_retries") for name in PHASES},
        "rollout_wall_seconds": wall,
        "rollout_p50_vs_steady": ratio(rollout.get("p50"), steady.get("p50")),
        "rollout_p99_vs_steady": ratio(rollout.get("p99"), steady.get("p99")),
        "plain_failures_sample": [f.get("error") or f.get("status") for f in plain.get("failures") or []][:3],
        "plain_stream_failures_sample": [f.get("error") or f.get("status")
                                         for f in (plain.get("streams") or {}).get("failures") or []][:3],
    }
    rollout_streams = summary["streams"]["rollout_through_gateway"]
    plain_streams = summary["streams"]["plain_restart_without_drain"]
    failing = measurements.get("failing_config_rollout")
    if failing is not None:
        summary["failing_config_rollout"] = _counts(failing)
    summary["verdicts"] = {
        "rollout_no_failures": rollout.get("requests", 0) > 0 and rollout.get("failed") == 0 and (
            rollout_streams is None or (rollout_streams["requests"] or 0) > 0 and rollout_streams["failed"] == 0),
        "rollout_not_empty": rollout.get("requests", 0) > 0,
        "plain_not_empty": plain.get("requests", 0) > 0,
    }
    if rollout_streams is not None and plain_streams is not None:
        summary["verdicts"]["drain_saves_streams"] = (
            (plain_streams["failed"] or 0) > 0 and rollout_streams["failed"] == 0
            and (rollout_streams["requests"] or 0) > 0)
    if failing is not None:
        summary["verdicts"]["failing_config_no_failures"] = failing.get("requests", 0) > 0 and failing.get("failed") == 0
    return summary


def report_lines(summary):
    def line(name, s):
        return "%-34s %5s requests %4s failed   p50 %6s s   p99 %6s s" % (
            name, s["requests"], s["failed"], s["p50"], s["p99"])

    titles = {"steady": "steady state", "rollout_through_gateway": "restart.yml through the gateway",
              "plain_restart_without_drain": "plain restart, no drain"}
    out = [line(titles[name], summary[name]) for name in PHASES]
    out += [line(titles[name] + ", streams", summary["streams"][name]) for name in PHASES
            if summary["streams"].get(name) is not None]
    out.append("gateway retries (smg_worker_retries_total): " + ", ".join(
        "%s %s" % (titles[name], summary["gateway_retries"].get(name)) for name in PHASES))
    out.append("rollout wall time %s s; rollout/steady latency: p50 x%s, p99 x%s" % (
        summary["rollout_wall_seconds"], summary["rollout_p50_vs_steady"], summary["rollout_p99_vs_steady"]))
    if summary["plain_failures_sample"]:
        out.append("plain restart failures, first ones: %s" % summary["plain_failures_sample"])
    if summary["plain_stream_failures_sample"]:
        out.append("plain restart cut streams, first ones: %s" % summary["plain_stream_failures_sample"])
    if "failing_config_rollout" in summary:
        out.append(line("site.yml, config dies at start-up", summary["failing_config_rollout"]))
    for name, ok in summary["verdicts"].items():
        out.append("%-24s %s" % (name, "PASS" if ok else "FAIL"))
    return out


def main(argv=None):
    return scenario_main(argv, __doc__, summarise, report_lines,
                         "== fleet: rolling restart through the gateway vs plain restart (one scenario run)")


if __name__ == "__main__":
    sys.exit(main())
