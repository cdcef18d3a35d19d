# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Several run reports as one: the slices of an AWX sliced job (docs/awx.md "Job slicing").

Each slice of a sliced ``preflight.yml`` writes the run report of its own hosts (``report.json``: ``run_id`` and
``hosts``, the host reports of ``deploy_report.build_host_report``) in a directory of its own. ``merge_run_reports``
puts them together into the report the unsliced job would have written: the same host reports, unchanged, in the
inventory's order. ``tools/merge_reports.py`` writes the merged ``report.json``, ``report.md``, ``report.html`` and
host files with the same code the role uses.

AWX gives slice ``k`` of ``n`` the hosts ``k-1``, ``k-1+n``, ``k-1+2n``, ... of the inventory, in its order. Taking
the slices' hosts in turn (the first host of each slice, then the second of each, ...) therefore gives the inventory's
order back, when the reports come in slice order and every host has one. A host that has no report (unreachable) only
moves the hosts after it; none is lost.
"""

from __future__ import annotations

RUN_ID_SEPARATOR = "+"


def _hosts_of(run, index):
    if not isinstance(run, dict) or "run_id" not in run or not isinstance(run.get("hosts"), list):
        raise ValueError("report %d is not a run report (report.json: run_id and a list of hosts)" % (index + 1))
    for entry in run["hosts"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("host"), str) or not entry["host"]:
            raise ValueError("report %d (run %s) has a host report without a host name" % (index + 1, run["run_id"]))
    return run["hosts"]


def merge_run_reports(runs):
    """The run reports ``runs`` (``report.json`` documents, in slice order) as one: ``run_id`` the runs' ids joined
    with ``+`` (one run keeps its own), ``runs`` the ids, ``hosts`` every host report, unchanged, taken from the runs
    in turn.

    ValueError when there is nothing to merge, a document is not a run report, a run comes twice, or a host is in two
    runs: slices of one job never share a host, so such reports are not the slices of one job (two runs of one
    slice, or of different jobs), and which of two verdicts holds is not for a merge to decide."""
    runs = list(runs or [])
    if not runs:
        raise ValueError("no run report to merge")
    hosts = [_hosts_of(run, index) for index, run in enumerate(runs)]
    ids = [str(run["run_id"]) for run in runs]
    twice = sorted(set(run_id for run_id in ids if ids.count(run_id) > 1))
    if twice:
        raise ValueError("run %s comes more than once" % ", ".join(twice))
    seen = {}
    for run_id, entries in zip(ids, hosts):
        for entry in entries:
            if entry["host"] in seen:
                raise ValueError("host %s is in run %s and in run %s: these are not the slices of one job"
                                 % (entry["host"], seen[entry["host"]], run_id))
            seen[entry["host"]] = run_id
    merged = []
    for position in range(max(len(entries) for entries in hosts)):
        merged.extend(entries[position] for entries in hosts if position < len(entries))
    # one run merged alone is that run's report (plus ``runs``): its id keeps its type (an AWX job id is a number)
    run_id = runs[0]["run_id"] if len(runs) == 1 else RUN_ID_SEPARATOR.join(ids)
    return {"run_id": run_id, "runs": [run["run_id"] for run in runs], "hosts": merged}
