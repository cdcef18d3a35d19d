# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Merge the run reports of the slices of an AWX sliced job into one report directory.

    python tools/merge_reports.py -o reports/audit-merged reports/20261207T060949Z-4711 reports/20261207T060949Z-4712 ...

Each argument is a run's report directory (the one holding report.json) or its report.json, in slice order. The
output directory (new, or empty) gets what a run writes: report.json (with ``runs``, the merged runs' ids), report.md,
report.html and hosts/<host>.json and .md. The host reports are the slices' own, unchanged; report.md is rendered from
the sglang_rollout role's template and report.html by the role's filters (plugins/filter/deploy_report.py),
so one slice merged alone gives its own report back. The merge refuses reports that share a host or a run
(plugins/plugin_utils/report_merge.py). Prints one line per host (its verdict as report.html shows it and the run that
reported it) and exits 1 when the reports cannot be merged.

Run it with the controller venv's Python (Jinja2 and PyYAML, as ansible-core brings them); it imports this
checkout's collections/ link as llmserve.sglang.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATE = os.path.join(ROOT, "roles", "sglang_rollout", "templates", "sglang_report.md.j2")


def _collection():
    if os.path.join(ROOT, "collections") not in sys.path:
        sys.path.insert(0, os.path.join(ROOT, "collections"))
    from ansible_collections.llmserve.sglang.plugins.filter import deploy_report as filters
    from ansible_collections.llmserve.sglang.plugins.plugin_utils import report_html, report_merge
    return filters, report_html, report_merge


def read_run(path):
    """The report.json of a run directory, or the file itself."""
    name = os.path.join(path, "report.json") if os.path.isdir(path) else path
    with open(name, encoding="utf-8") as handle:
        return json.load(handle)


def nice_json(value):
    """As the role writes report.json (to_nice_json, then a newline)."""
    return json.dumps(value, indent=4, sort_keys=True, separators=(",", ": ")) + "\n"


def markdown(title, reports, filters):
    """report.md as the role renders it: its template, with the collection's filters it calls."""
    import jinja2

    with open(TEMPLATE, encoding="utf-8") as handle:
        source = handle.read()
    # the template lookup's settings (ansible-core: trim_blocks on, the final newline kept)
    env = jinja2.Environment(trim_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined,
                             autoescape=False)
    for name in ("sglang_report_servers", "sglang_report_rows"):
        env.filters["llmserve.sglang." + name] = getattr(filters, name)
    return env.from_string(source).render(__sglang_rollout_md_title=title, __sglang_rollout_md_reports=reports)


def write_merged(out, merged):
    """Write the merged report's files under ``out`` (created; it must be new or empty)."""
    filters, dummy, dummy = _collection()
    if os.path.isdir(out) and os.listdir(out):
        raise ValueError("%s is not empty: give a new directory" % out)
    os.makedirs(os.path.join(out, "hosts"), 0o755, exist_ok=True)
    files = {"report.json": nice_json(merged),
             "report.md": markdown("SGLang deployment report %s" % merged["run_id"], merged["hosts"], filters),
             "report.html": filters.sglang_report_html(merged["hosts"], merged["run_id"])}
    for entry in merged["hosts"]:
        name = filters.sglang_report_file_name(entry["host"])
        files["hosts/%s.json" % name] = nice_json(entry)
        files["hosts/%s.md" % name] = markdown("SGLang deployment: %s" % entry["host"], [entry], filters)
    for name, text in files.items():
        with open(os.path.join(out, name), "w", encoding="utf-8") as handle:
            handle.write(text)
    return sorted(files)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True, help="the merged report's directory (new or empty)")
    parser.add_argument("reports", nargs="+", help="each slice's report directory or report.json, in slice order")
    options = parser.parse_args(argv)
    dummy, report_html, report_merge = _collection()
    try:
        runs = [read_run(path) for path in options.reports]
        merged = report_merge.merge_run_reports(runs)
        write_merged(options.output, merged)
    except (OSError, ValueError) as exc:
        sys.stderr.write("merge_reports: %s\n" % exc)
        return 1
    origin = {entry["host"]: str(run["run_id"]) for run in runs for entry in run["hosts"]}
    width = max([len(entry["host"]) for entry in merged["hosts"]] or [0])
    for entry in merged["hosts"]:
        level, label, reasons = report_html.host_verdict(entry)
        why = (": " + "; ".join(reasons)) if reasons else ""
        print("%s  %-7s %s%s  (run %s)" % (entry["host"].ljust(width), level, label, why, origin[entry["host"]]))
    ids = ", ".join(str(run_id) for run_id in merged["runs"])
    print("merged %d run(s) (%s), %d host(s), into %s" % (len(runs), ids, len(merged["hosts"]), options.output))
    return 0


if __name__ == "__main__":
    sys.exit(main())
