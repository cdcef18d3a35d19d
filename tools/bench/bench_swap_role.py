# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Summarise one `molecule test -s swap` run (its side effect writes $LLMSERVE_SWAP_REPORT): site.yml changes the
model revision of two workers of the real SGLang on CPU behind smg, A -> B, by restart (an environment variable of
the unit changes with the revision, so the unit keeps the model link and the gateway its model name) and in place
(``sglang_server_weight_swap: required``), in turns.

    python3 bench_swap_role.py MEASUREMENTS.json [--json OUT.json] [--max-ratio 0.3]

Per worker and way, the medians of the phases of its rotation record (the host report's: drain, stop, start to
ready, swapped in place, rejoin, out of rotation, and what is left of it: the steps between) over the measured
changes (to B; the way back to A is not counted), and the ratio of the time out of rotation in place / by restart. Verdict per worker: ratio <= --max-ratio,
and every measured change went the way asked (a swap never restarted, a restart never swapped); exits 1 otherwise.
bench_swap.py measures the server's mechanism alone (no drain, no gateway, no Ansible) beside it.
"""

from __future__ import annotations

import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_summary import closing_lines, ratio, scenario_main  # noqa: E402  pylint: disable=wrong-import-position

PHASES = ("drain", "stop", "start", "swap", "rejoin", "out_of_rotation")
# the rest of the window: the rollout's and the role's tasks between the drain and the rejoin (the verification, the
# reports, the lock renewals), which both ways pay
BETWEEN = "steps_between"
WAYS = (("restart", "restart"), ("swap", "in place"))


def _number(value):
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _median(values):
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 2) if values else None


def _between(phases):
    """The time out of rotation that no measured phase accounts for (None when it is not known)."""
    if phases["out_of_rotation"] is None:
        return None
    return round(phases["out_of_rotation"] - sum(phases[p] or 0.0 for p in PHASES if p != "out_of_rotation"), 3)


def summarise(measurements, max_ratio=0.3):
    numbers = {}
    problems = []
    for index, run in enumerate(measurements.get("runs") or []):
        if run.get("to") != "b":
            continue
        policy = run.get("way")
        if policy not in dict(WAYS):
            problems.append("run %d: way %r is neither restart nor swap" % (index, policy))
            continue
        for worker, record in sorted((run.get("rotation") or {}).items()):
            restarted = (run.get("restarted") or {}).get(worker)
            if restarted is not (policy == "restart"):
                problems.append("run %d (%s): %s %s" % (index, policy, worker,
                                                        "restarted" if restarted else "did not restart"))
            phases = {phase: _number(((record or {}).get(phase) or {}).get("seconds")) for phase in PHASES}
            phases[BETWEEN] = _between(phases)
            if phases["out_of_rotation"] is None:
                problems.append("run %d (%s): no time out of rotation for %s" % (index, policy, worker))
            numbers.setdefault(worker, {}).setdefault(policy, []).append(phases)
    summary = {"max_ratio": max_ratio, "workers": {}, "problems": problems, "verdicts": {}}
    for worker, ways in sorted(numbers.items()):
        block = {}
        for policy, _title in WAYS:
            runs = ways.get(policy) or []
            block[policy] = dict((phase, _median([r[phase] for r in runs])) for phase in PHASES + (BETWEEN,))
            block[policy]["samples"] = len(runs)
        block["ratio"] = ratio(block["swap"]["out_of_rotation"], block["restart"]["out_of_rotation"], 3)
        summary["workers"][worker] = block
        summary["verdicts"]["ratio_%s" % worker] = block["ratio"] is not None and block["ratio"] <= max_ratio
    if not numbers:
        problems.append("no measured change")
    summary["verdicts"]["every_change_as_asked"] = not problems
    return summary


def report_lines(summary):
    out = []
    for worker, block in summary["workers"].items():
        out.append("-- %s" % worker)
        for policy, title in WAYS:
            n = block[policy]
            out.append("%-9s out of rotation %6s s = drain %s + stop %s + start to ready %s + swap %s + rejoin %s "
                       "+ steps between %s; %d sample(s)" % (title, n["out_of_rotation"], n["drain"], n["stop"],
                                                             n["start"], n["swap"], n["rejoin"], n[BETWEEN],
                                                             n["samples"]))
        out.append("ratio in place / restart: %s (target <= %s)" % (block["ratio"], summary["max_ratio"]))
    return out + closing_lines(summary)


def main(argv=None):
    return scenario_main(argv, __doc__, summarise, report_lines,
                         "== revision change through site.yml and the gateway: restart vs in place, per worker",
                         max_ratio=0.3)


if __name__ == "__main__":
    sys.exit(main())
