# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the scenario benchmarks' summarisers share: a ratio of two measured numbers, and printing the summary's lines
under a title, writing it as JSON when asked and turning its verdicts into the exit status (0 when all passed)."""

from __future__ import annotations

import argparse
import json


def ratio(value, base, digits=2):
    """``value / base`` rounded, or None when either was not measured (or the base is 0)."""
    if value is None or not base:
        return None
    return round(float(value) / float(base), digits)


def publish(title, lines, summary, json_path=None):
    print(title)
    for text in lines:
        print(text)
    if json_path:
        with open(json_path, "w") as handle:
            json.dump(summary, handle, indent=2)
            handle.write("\n")
    return 0 if all(summary["verdicts"].values()) else 1


def closing_lines(summary, width=40):
    """The summary's problems, then one PASS/FAIL line per verdict."""
    out = ["problem: %s" % problem for problem in summary.get("problems", [])]
    for name, ok in summary["verdicts"].items():
        out.append("%-*s %s" % (width, name, "PASS" if ok else "FAIL"))
    return out


def scenario_main(argv, doc, summarise, report_lines, title, max_ratio=None):
    """The command line of a scenario summariser: MEASUREMENTS.json [--json OUT] [--max-ratio R] (the option only where
    ``max_ratio`` gives its default); ``summarise(measurements[, max_ratio])`` and ``report_lines(summary)`` do the
    rest. Returns the exit status."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n", maxsplit=1)[0])
    parser.add_argument("measurements")
    parser.add_argument("--json", help="write the summary here")
    if max_ratio is not None:
        parser.add_argument("--max-ratio", type=float, default=max_ratio)
    args = parser.parse_args(argv)
    with open(args.measurements) as handle:
        measurements = json.load(handle)
    summary = summarise(measurements) if max_ratio is None else summarise(measurements, args.max_ratio)
    return publish(title, report_lines(summary), summary, args.json)
