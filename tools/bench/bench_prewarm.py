# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Summarise one `molecule test -s prewarm` run (its side effect writes $LLMSERVE_PREWARM_REPORT): restart.yml through
the gateway over two workers of the real SGLang on CPU with a model of over 2 GiB, the weights dropped from the page
cache before every run, the pre-warm off (``never``) and on (``auto``) in turns; per storage condition (as it is,
and throttled when the scenario was asked to).

    python3 bench_prewarm.py MEASUREMENTS.json [--json OUT.json] [--max-ratio 0.6]

The worker restarted first is the measured one: its weights were cold unless the pre-warm read them. The other
worker reads the same files (both mount one directory of the podman host, so they share its page cache) after the
first one's start has read them: warm in both modes, it is the control. For each condition and mode the medians of
the measured worker's phases (the rotation record of its host report: drain, stop, start to ready, rejoin, out of
rotation, server down; SGLang's own load_weight time; the pre-warm's read before the drain) and the ratio
out of rotation with the pre-warm / without. Verdict per condition: ratio <= --max-ratio (PASS/FAIL); exits 1 when
one fails or a run lacks a number.
"""

from __future__ import annotations

import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_summary import closing_lines, ratio, scenario_main  # noqa: E402  pylint: disable=wrong-import-position

PHASES = ("drain", "stop", "start", "rejoin", "out_of_rotation", "down")
MODES = ("never", "auto")


def _number(value):
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _seconds(record, phase):
    return _number(((record or {}).get(phase) or {}).get("seconds"))


def _order(rotation):
    """The workers of one run, the first restarted first (by the moment each left its first gateway)."""
    def started(item):
        return ((item[1] or {}).get("out_of_rotation") or {}).get("started") or "~"
    return [name for name, _record in sorted(rotation.items(), key=lambda item: (started(item), item[0]))]


def _median(values):
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 2) if values else None


def worker_numbers(record):
    """The phases of one worker's rotation record, SGLang's load_weight time and the pre-warm's read, in seconds."""
    numbers = {phase: _seconds(record, phase) for phase in PHASES + ("prewarm",)}
    startup = ((record or {}).get("startup") or {}).get("startup_time_seconds") or {}
    numbers["load_weight"] = _number(startup.get("load_weight"))
    return numbers


def summarise(measurements, max_ratio=0.6):
    conditions = {}
    problems = []
    for index, run in enumerate(measurements.get("runs") or []):
        rotation = run.get("rotation") or {}
        order = _order(rotation)
        if len(order) < 2:
            problems.append("run %d: %d worker record(s), expected 2" % (index, len(order)))
            continue
        first, control = order[0], order[1]
        measured = worker_numbers(rotation[first])
        if measured["out_of_rotation"] is None:
            problems.append("run %d (%s, %s): no time out of rotation for %s" % (
                index, run.get("storage"), run.get("prewarm"), first))
        entry = conditions.setdefault(run.get("storage") or "?", {mode: [] for mode in MODES})
        entry.setdefault(run.get("prewarm"), []).append({
            "numbers": measured, "control_out_of_rotation": _seconds(rotation[control], "out_of_rotation")})
    summary = {"max_ratio": max_ratio, "conditions": {}, "problems": problems, "verdicts": {}}
    for storage, modes in conditions.items():
        block = {}
        for mode in MODES:
            runs = modes.get(mode) or []
            block[mode] = {key: _median([r["numbers"][key] for r in runs])
                           for key in PHASES + ("load_weight", "prewarm")}
            block[mode]["samples"] = len(runs)
            block[mode]["control_out_of_rotation"] = _median([r["control_out_of_rotation"] for r in runs])
        block["ratio"] = ratio(block["auto"]["out_of_rotation"], block["never"]["out_of_rotation"], 3)
        block["control_ratio"] = ratio(block["auto"]["control_out_of_rotation"],
                                       block["never"]["control_out_of_rotation"], 3)
        summary["conditions"][storage] = block
        summary["verdicts"]["ratio_%s" % storage.replace(" ", "_").replace("/", "_")] = (
            block["ratio"] is not None and block["ratio"] <= max_ratio)
    if not conditions:
        problems.append("no runs measured")
    summary["verdicts"]["every_run_measured"] = not problems
    return summary


def report_lines(summary):
    out = []
    for storage, block in summary["conditions"].items():
        out.append("-- storage %s (the first worker's weights dropped from the page cache before each run)" % storage)
        for mode, title in (("never", "without the pre-warm"), ("auto", "with the pre-warm")):
            numbers = block[mode]
            out.append("%-22s out of rotation %6s s = drain %s + stop %s + start to ready %s + rejoin %s (+ steps "
                       "between); SGLang load_weight %s s; pre-warm before the drain %s s; control worker %s s; %d "
                       "sample(s)" % (title, numbers["out_of_rotation"], numbers["drain"], numbers["stop"],
                                      numbers["start"], numbers["rejoin"], numbers["load_weight"],
                                      numbers["prewarm"], numbers["control_out_of_rotation"], numbers["samples"]))
        out.append("ratio with / without: %s (target <= %s); control worker: %s" % (
            block["ratio"], summary["max_ratio"], block["control_ratio"]))
    return out + closing_lines(summary)


def main(argv=None):
    return scenario_main(argv, __doc__, summarise, report_lines,
                         "== pre-warm: restart.yml through the gateway with the weights evicted, without and with the pre-warm",
                         max_ratio=0.6)


if __name__ == "__main__":
    sys.exit(main())
