# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The run report as one self-contained HTML page (``report.html`` beside ``report.md``).

``render_run_report`` takes the run's host reports (``deploy_report.build_host_report``) and returns the page: the
hosts with their verdicts, the model revision, the GPU peer-to-peer pair matrix of each host as a coloured grid
(inline SVG), the rollout of each host as a row of phases (drain, stop, start, ready, rejoin; inline SVG), the
gateway states, and each host's full table (the rows of the Markdown report).

The page loads nothing: the CSS is inline, the pictures are inline SVG, there is no script, no link to anything, and
a Content-Security-Policy forbids scripts and every fetch should anything slip through. Every value is escaped:
host names come from the inventory, errors and versions from servers, so none of them may become markup. Each
colour comes with a word or a mark (ok, fail, ?), for readers who do not tell the colours apart and for print.

The host report records no clock time per rollout phase: the timeline shows what the run measured (seconds to drain
and to be healthy again in each gateway, seconds from the new process's start to readiness) and whether a phase
happened, not when.
"""

from __future__ import annotations

import html

from ansible_collections.llmserve.sglang.plugins.plugin_utils.deploy_report import NOT_RUN, finite_number, host_rows

PHASES = ("drain", "stop", "start", "ready", "rejoin")

# The SGLang states that are no failure: the server serves, or nothing touched it.
_SGLANG_FINE = ("serving", NOT_RUN)

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1b1f24;margin:0;
background:#f6f7f9}
main{max-width:1180px;margin:0 auto;padding:18px 24px 40px}
h1{font-size:22px;margin:6px 0 2px}h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #d5d9de;
padding-bottom:4px}h3{font-size:14px;margin:12px 0 4px}
p.sub{color:#57606a;margin:0 0 10px}
table{border-collapse:collapse;background:#fff;margin:4px 0 8px}
th,td{border:1px solid #d5d9de;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eef1f4;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
code{font-family:"DejaVu Sans Mono",monospace;font-size:12px}
.verdict{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:600;border:1px solid;white-space:nowrap}
.verdict.ok{background:#dcf3dc;border-color:#2e7d32;color:#1b5e20}
.verdict.warn{background:#fff3c4;border-color:#b08800;color:#6b5200}
.verdict.fail{background:#ffdcdc;border-color:#c62828;color:#8e1111}
.verdict.unknown{background:#eceff1;border-color:#78909c;color:#37474f}
.counts span{margin-right:14px}
.grids{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
figure{margin:0;background:#fff;border:1px solid #d5d9de;padding:8px 10px}
figcaption{font-weight:600;margin-bottom:4px;max-width:300px;overflow-wrap:anywhere}
figure p{margin:4px 0;color:#57606a;font-size:12px;max-width:300px}
td.host{white-space:nowrap}
svg text{font-family:"DejaVu Sans",sans-serif}
.p2p-ok rect,.phase-done rect{fill:#c8e6c9;stroke:#2e7d32}
.p2p-fail rect,.phase-fail rect{fill:#ffcdd2;stroke:#c62828}
.phase-warn rect{fill:#fff3c4;stroke:#b08800}
.p2p-untested rect,.phase-unknown rect{fill:#eceff1;stroke:#78909c}
.p2p-none rect,.phase-skipped rect{fill:#fafafa;stroke:#b0bec5;stroke-dasharray:3 2}
.legend span{display:inline-block;margin-right:12px;font-size:12px}
.swatch{display:inline-block;width:12px;height:12px;border:1px solid;vertical-align:-2px;margin-right:4px}
.sw-ok{background:#c8e6c9;border-color:#2e7d32}.sw-fail{background:#ffcdd2;border-color:#c62828}
.sw-warn{background:#fff3c4;border-color:#b08800}.sw-unknown{background:#eceff1;border-color:#78909c}
.sw-skipped{background:#fafafa;border-color:#b0bec5;border-style:dashed}
details{background:#fff;border:1px solid #d5d9de;margin:6px 0;padding:4px 10px}
summary{cursor:pointer;font-weight:600;overflow-wrap:anywhere}
.note{color:#57606a;font-size:12px}
"""

# What a pair's state looks like in the grid: the mark in the cell and the word of its tooltip.
_P2P_MARK = {"ok": "ok", "fail": "fail", "untested": "?", "none": "\u2013"}
_PHASE_MARK = {"done": "\u2713", "warn": "!", "fail": "\u2717", "skipped": "\u2013", "unknown": "?"}


def _e(value):
    """``value`` as text that cannot become markup, in an element or in a quoted attribute."""
    return html.escape("" if value is None else str(value), quote=True)


def _seconds(value):
    number = finite_number(value)
    return number if number is not None and number >= 0 else None


def _seconds_text(value):
    return "%.1f s" % value


def _short(text, limit):
    text = str(text)
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def host_verdict(report):
    """``(level, label, reasons)`` of one host: ``level`` is ``ok``, ``warn`` or ``fail``; ``label`` the SGLang
    state (or the preflight's when SGLang was not part of the run); ``reasons`` why it is not ``ok``."""
    stages = report.get("stages") or {}
    sg = report.get("sglang") or {}
    state = str(stages.get("sglang") or NOT_RUN)
    fail, warn = [], []
    if state == "restart pending":
        warn.append("restart pending")
    elif state not in _SGLANG_FINE:
        fail.append("SGLang %s" % state)
    if sg.get("error"):
        fail.append("deployment error")
    if sg.get("rollback_error"):
        fail.append("rollback error")
    preflight = str(stages.get("preflight") or NOT_RUN)
    if preflight == "fail":
        fail.append("preflight failed")
    elif preflight == "warn":
        warn.append("preflight warnings")
    # serving now, but the next reboot would break it (the preflight failed already when its policy is fail)
    if (report.get("next_boot") or {}).get("verdict") == "error" and preflight != "fail":
        warn.append("next boot unsafe")
    # a server that runs with a failed pair was let run so (iommu_preflight_p2p_required: false, P2P off)
    if (report.get("p2p") or {}).get("ok") is False:
        warn.append("P2P test failed")
    for row in report.get("gateways") or []:
        if row.get("state") == "out":
            fail.append("out of gateway %s" % row.get("gateway"))
        elif row.get("state") != "in":
            warn.append("gateway %s: %s" % (row.get("gateway"), row.get("state")))
    label = state if state != NOT_RUN else "preflight %s" % preflight
    if fail or warn:
        level = "fail" if fail else "warn"
    else:
        level = "unknown" if state == NOT_RUN and preflight == NOT_RUN else "ok"
    return level, label, fail + warn


def p2p_cells(p2p):
    """``{(src, dst): state}`` of one host's pair matrix, ``state`` one of ``ok``, ``fail``, ``untested`` or
    ``none`` (a GPU with itself, which has a result only from the one-GPU IPC test)."""
    gpus = list(p2p.get("gpus") or [])
    bad = set(p2p.get("bad_pairs") or [])
    unknown = p2p.get("unknown_pairs")
    unknown = set(unknown) if isinstance(unknown, list) else None
    ipc_failed = set(p2p.get("ipc_failed") or [])
    tested = bool(p2p.get("tested"))
    cells = {}
    for src in gpus:
        for dst in gpus:
            key = "%s->%s" % (src, dst)
            if key in bad or (src == dst and src in ipc_failed):
                cells[(src, dst)] = "fail"
            elif unknown is not None and key in unknown:
                cells[(src, dst)] = "untested"
            elif src == dst:
                # the only diagonal pair there is: the IPC test of a single GPU
                cells[(src, dst)] = ("ok" if tested else "untested") if len(gpus) == 1 else "none"
            elif unknown is None and not tested:
                cells[(src, dst)] = "untested"
            else:
                cells[(src, dst)] = "ok"
    return cells


def _timed_phase(name, phase, done):
    """A restart's stop or start box from the rotation record: its seconds, or why there are none."""
    seconds = _seconds((phase or {}).get("seconds"))
    if seconds is None:
        note = (phase or {}).get("note") or "no time recorded"
        return (name, "fail" if note.startswith("did not become ready") else "done", "done", "%s (%s)" % (done, note))
    return (name, "done", _seconds_text(seconds), "%s: %s -> %s, %s" % (
        done, phase.get("started") or "?", phase.get("ended") or "?", phase.get("clock")))


def host_phases(report):
    """``[(phase, state, text, detail)]`` for drain, stop, start, ready and rejoin; ``state`` is ``done``, ``warn``,
    ``fail``, ``skipped`` or ``unknown``."""
    sg = report.get("sglang")
    state = (report.get("stages") or {}).get("sglang") or NOT_RUN
    gateways = report.get("gateways") or []
    phases = []

    taken = [row for row in gateways if "drained" in row or str(row.get("error") or "").startswith("taking it out")]
    drain_times = [t for t in (_seconds(row.get("drain_seconds")) for row in taken) if t is not None]
    drain_text = _seconds_text(max(drain_times)) if drain_times else ""
    if not gateways:
        phases.append(("drain", "skipped", "none", "in no gateway this run"))
    elif any(str(row.get("error") or "").startswith("taking it out") for row in taken):
        phases.append(("drain", "fail", "failed", "; ".join(str(r["error"]) for r in taken if r.get("error"))))
    elif any(row.get("drained") is False for row in taken):
        phases.append(("drain", "warn", drain_text or "not drained", "requests still running when the wait ended"))
    elif taken:
        phases.append(("drain", "done", drain_text or "done",
                       "out of %d gateway(s), drained (slowest shown)" % len(taken)))
    else:
        phases.append(("drain", "skipped", "none", "not taken out of its gateways"))

    if not sg:
        phases.append(("stop", "unknown", "not run", "SGLang was not part of this run"))
        phases.append(("start", "unknown", "not run", "SGLang was not part of this run"))
    elif sg.get("restarted"):
        rotation = report.get("rotation") or {}
        phases.append(_timed_phase("stop", rotation.get("stop"), "the old server stopped"))
        phases.append(_timed_phase("start", rotation.get("start"), "the new server started"))
    elif sg.get("restart_pending"):
        phases.append(("stop", "warn", "pending", "a restart is pending (restart policy)"))
        phases.append(("start", "warn", "pending", "a restart is pending (restart policy)"))
    else:
        phases.append(("stop", "skipped", "none", "no restart this run"))
        phases.append(("start", "skipped", "none", "no restart this run"))

    ready = _seconds((sg or {}).get("time_to_ready"))
    if not sg:
        phases.append(("ready", "unknown", "not run", "SGLang was not part of this run"))
    elif state == "serving":
        text = _seconds_text(ready) if ready is not None and sg.get("restarted") else "serving"
        phases.append(("ready", "done", text, "seconds from the new process's start to readiness"
                       if text != "serving" else "serving, no restart this run"))
    elif state == "restart pending":
        phases.append(("ready", "warn", "pending", "still serving the old configuration"))
    else:
        phases.append(("ready", "fail", _short(state, 14), str(state)))

    if not gateways:
        phases.append(("rejoin", "skipped", "none", "in no gateway this run"))
    else:
        states = [row.get("state") for row in gateways]
        waits = [t for t in (_seconds(row.get("wait_seconds")) for row in gateways) if t is not None]
        errors = "; ".join(str(row["error"]) for row in gateways if row.get("error"))
        if "out" in states:
            phases.append(("rejoin", "fail", "out", errors or "left out of a gateway"))
        elif any(s != "in" for s in states):
            phases.append(("rejoin", "warn", "unhealthy",
                           ", ".join("%s: %s" % (row.get("gateway"), row.get("state")) for row in gateways)))
        else:
            phases.append(("rejoin", "done", _seconds_text(max(waits)) if waits else "in",
                           "healthy again in %d gateway(s) (slowest shown)" % len(gateways)))
    return phases


def _svg_text(x, y, text, size=12, anchor="middle", weight="normal"):
    return ('<text x="%s" y="%s" font-size="%s" text-anchor="%s" font-weight="%s">%s</text>'
            % (x, y, size, anchor, weight, _e(text)))


def p2p_svg(p2p):
    """One host's pair matrix: a row per source GPU, a column per destination GPU (numbered as in the legend)."""
    gpus = list(p2p.get("gpus") or [])
    cells = p2p_cells(p2p)
    size, left, top = 46, 54, 40
    width, height = left + size * len(gpus) + 4, top + size * len(gpus) + 4
    parts = ['<svg class="p2p-grid" role="img" width="%d" height="%d" '
             'viewBox="0 0 %d %d">' % (width, height, width, height),
             '<title>GPU peer-to-peer pairs: row writes to column</title>',
             _svg_text(left + size * len(gpus) / 2, 12, "to GPU", 11, weight="bold"),
             _svg_text(4, top - 6, "from", 11, anchor="start", weight="bold")]
    for i in range(len(gpus)):
        parts.append(_svg_text(left + size * i + size / 2, top - 8, "GPU%d" % i, 11))
        parts.append(_svg_text(left - 6, top + size * i + size / 2 + 4, "GPU%d" % i, 11, anchor="end"))
    for i, src in enumerate(gpus):
        for j, dst in enumerate(gpus):
            state = cells[(src, dst)]
            x, y = left + size * j, top + size * i
            parts.append('<g class="p2p-cell p2p-%s" data-pair="%s" data-state="%s"><title>%s</title>'
                         '<rect x="%d" y="%d" width="%d" height="%d" rx="3"/>%s</g>'
                         % (state, _e("%s->%s" % (src, dst)), state,
                            _e("GPU%d -> GPU%d (%s -> %s): %s" % (i, j, src, dst, state)),
                            x + 2, y + 2, size - 4, size - 4,
                            _svg_text(x + size / 2, y + size / 2 + 4, _P2P_MARK[state], 12, weight="bold")))
    parts.append("</svg>")
    return "".join(parts)


def timeline_svg(reports):
    """The rollout of every host: a row per host, a box per phase, coloured and marked by what became of it."""
    label_w, box_w, row_h, top = 230, 118, 36, 28
    width, height = label_w + box_w * len(PHASES) + 6, top + row_h * len(reports) + 4
    parts = ['<svg class="timeline" role="img" width="%d" height="%d" '
             'viewBox="0 0 %d %d">' % (width, height, width, height),
             '<title>Rollout per host: drain, stop, start, ready, rejoin</title>']
    for k, phase in enumerate(PHASES):
        parts.append(_svg_text(label_w + box_w * k + box_w / 2, 18, phase, 12, weight="bold"))
    for i, report in enumerate(reports):
        host = str(report.get("host"))
        y = top + row_h * i
        parts.append('<g class="timeline-row" data-host="%s"><title>%s</title>%s'
                     % (_e(host), _e(host), _svg_text(6, y + row_h / 2 + 4, _short(host, 30), 12, anchor="start")))
        for k, (phase, state, text, detail) in enumerate(host_phases(report)):
            x = label_w + box_w * k
            parts.append('<g class="phase phase-%s" data-phase="%s" data-state="%s"><title>%s</title>'
                         '<rect x="%d" y="%d" width="%d" height="%d" rx="4"/>%s</g>'
                         % (state, phase, state, _e("%s, %s: %s (%s)" % (host, phase, text, detail)),
                            x + 3, y + 3, box_w - 6, row_h - 6,
                            _svg_text(x + box_w / 2, y + row_h / 2 + 4,
                                      "%s %s" % (_PHASE_MARK[state], _short(text, 14)), 12)))
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


def _verdict_badge(level, label):
    return '<span class="verdict %s" data-verdict="%s">%s %s</span>' % (
        level, level, {"ok": "\u2713", "warn": "!", "fail": "\u2717", "unknown": "?"}[level], _e(label))


def _model_text(model):
    if not model:
        return "-"
    return "%s@%s" % (model.get("repo") or "?", model.get("revision") or "?")


def _hosts_section(reports):
    out = ['<section id="hosts"><h2>Hosts</h2><table class="hosts"><thead><tr><th>Host</th><th>Verdict</th>'
           '<th>Why</th><th>SGLang</th><th>GPUs</th><th>Model revision</th><th>Smoke test</th></tr></thead><tbody>']
    for report in reports:
        level, label, reasons = host_verdict(report)
        sg = report.get("sglang") or {}
        revision = str((report.get("model") or {}).get("revision") or "-")
        out.append('<tr data-host="%s"><td class="host">%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>'
                   '<td><code title="%s">%s</code></td><td>%s</td></tr>'
                   % (_e(report.get("host")), _e(report.get("host")), _verdict_badge(level, label),
                      _e("; ".join(reasons) or "-"), _e(sg.get("version") or "-"), _e(report.get("gpus") or "-"),
                      _e(revision), _e(_short(revision, 13)), _e(sg.get("smoke") or "-")))
    out.append("</tbody></table></section>")
    return "".join(out)


def _model_section(reports):
    models = {}
    for report in reports:
        if report.get("model"):
            models.setdefault(_model_text(report["model"]), []).append(str(report.get("host")))
    out = ['<section id="model"><h2>Model</h2>']
    if not models:
        out.append('<p class="note">No host staged or verified a model in this run.</p>')
    else:
        out.append('<table class="models"><thead><tr><th>Repository@revision</th><th>Hosts</th></tr></thead><tbody>')
        for text, hosts in models.items():
            out.append('<tr><td class="revision"><code>%s</code></td><td>%s</td></tr>' % (_e(text),
                                                                                          _e(", ".join(hosts))))
        out.append("</tbody></table>")
        if len(models) > 1:
            out.append('<p class="note">The hosts hold different model revisions.</p>')
    out.append("</section>")
    return "".join(out)


def _legend(entries):
    return '<p class="legend">%s</p>' % "".join(
        '<span><i class="swatch sw-%s"></i>%s</span>' % (cls, _e(text)) for cls, text in entries)


def _p2p_section(reports):
    out = ['<section id="p2p"><h2>GPU peer-to-peer</h2>',
           _legend((("ok", "ok: the write and read-back passed"), ("fail", "fail: it failed"),
                    ("unknown", "?: untested"), ("skipped", "\u2013: a GPU with itself"))),
           '<div class="grids">']
    for report in reports:
        p2p = report.get("p2p")
        out.append('<figure class="p2p" data-host="%s"><figcaption>%s</figcaption>'
                   % (_e(report.get("host")), _e(report.get("host"))))
        if not p2p:
            why = ("preflight not run" if (report.get("stages") or {}).get("preflight") == NOT_RUN
                   else "not in this report")
            out.append("<p>No P2P result: %s.</p>" % why)
        elif not p2p.get("gpus"):
            out.append("<p>No GPU selected.</p>")
        else:
            out.append(p2p_svg(p2p))
            if p2p.get("skipped"):
                note = "Not tested: %s." % p2p["skipped"]
            elif not p2p.get("tested"):
                note = "The functional test did not run (iommu_preflight_p2p_test)."
            elif p2p.get("ok") is False:
                note = "Largest group where every pair passes: %s." % (
                    ", ".join(p2p.get("largest_p2p_group") or []) or "none")
            else:
                note = "Every pair passed." if p2p.get("ok") else "Some pairs could not be decided."
            out.append("<p>%s</p><p>%s</p>" % (_e(note), _e(", ".join(
                "GPU%d = %s" % (i, gpu) for i, gpu in enumerate(p2p["gpus"])))))
        out.append("</figure>")
    out.append("</div></section>")
    return "".join(out)


def _timeline_section(reports):
    return "".join([
        '<section id="rollout"><h2>Rollout</h2>',
        _legend((("ok", "\u2713 done"), ("warn", "! pending or degraded"), ("fail", "\u2717 failed"),
                 ("skipped", "\u2013 not needed"), ("unknown", "? not run"))),
        timeline_svg(reports) if reports else '<p class="note">No host in this report.</p>',
        '<p class="note">The report keeps no clock time per phase: drain shows the slowest gateway\'s drain, ready the '
        'seconds from the new process\'s start to readiness, rejoin the slowest gateway\'s wait until healthy; stop '
        'and start show only whether they happened.</p></section>'])


def _gateways_section(reports):
    rows = [(report.get("host"), row) for report in reports for row in report.get("gateways") or []]
    out = ['<section id="gateways"><h2>Gateways</h2>']
    if not rows:
        out.append('<p class="note">No worker was taken out of or put back into a gateway in this run.</p>')
    else:
        out.append('<table class="gateways"><thead><tr><th>Host</th><th>Gateway</th><th>State</th><th>Drained in</th>'
                   '<th>Healthy again after</th><th>Error</th></tr></thead><tbody>')
        for host, row in rows:
            state = str(row.get("state") or "?")
            level = {"in": "ok", "out": "fail"}.get(state, "warn")
            drain, wait = _seconds(row.get("drain_seconds")), _seconds(row.get("wait_seconds"))
            out.append('<tr data-host="%s" data-gateway="%s"><td>%s</td><td>%s</td><td>%s</td><td class="num">%s</td>'
                       '<td class="num">%s</td><td>%s</td></tr>'
                       % (_e(host), _e(row.get("gateway")), _e(host), _e(row.get("gateway")),
                          _verdict_badge(level, state), _seconds_text(drain) if drain is not None else "-",
                          _seconds_text(wait) if wait is not None else "-", _e(row.get("error") or "-")))
        out.append("</tbody></table>")
    out.append("</section>")
    return "".join(out)


def _details_section(reports):
    out = ['<section id="details"><h2>Host details</h2>']
    for report in reports:
        level, label, _reasons = host_verdict(report)
        out.append('<details><summary>%s %s</summary><table><tbody>' % (_e(report.get("host")),
                                                                        _verdict_badge(level, label)))
        for name, value in host_rows(report):
            out.append("<tr><th>%s</th><td>%s</td></tr>" % (_e(name), _e(value)))
        out.append("</tbody></table></details>")
    out.append("</section>")
    return "".join(out)


def render_run_report(run_id, reports, title=None):
    """The HTML page of a run report: ``reports`` are host reports in the order the page lists them."""
    reports = [report for report in reports or [] if isinstance(report, dict)]
    title = title or "SGLang deployment report %s" % run_id
    levels = [host_verdict(report)[0] for report in reports]
    counts = "".join('<span class="count-%s">%s: %d</span>' % (level, word, levels.count(level))
                     for level, word in (("ok", "ok"), ("warn", "warnings"), ("fail", "failed"),
                                         ("unknown", "not run")) if levels.count(level))
    return "".join([
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        # nothing on this page runs or loads: a value that escaped its escaping would still be inert
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>%s</title><style>%s</style></head><body><main>" % (_e(title), _CSS),
        '<h1>%s</h1><p class="sub">Run <code id="run-id">%s</code>, %d host(s)</p>' % (_e(title), _e(run_id),
                                                                                       len(reports)),
        '<p class="counts">%s</p>' % counts,
        _hosts_section(reports), _model_section(reports), _p2p_section(reports), _timeline_section(reports),
        _gateways_section(reports), _details_section(reports),
        "</main></body></html>\n"])
