# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A worker's time out of rotation in one run: the ``rotation`` record of its host report.

The phases, each from the stamps of one clock (never subtracted across clocks):

* ``drain``: out of the first gateway -> drained in the last one; ``rejoin``: put back into the first gateway ->
  healthy in every one; ``out_of_rotation``: out of the first gateway -> healthy in all. Clock: the wall clock of
  the gateway hosts (llmserve.sglang.gateway_worker runs delegated to each gateway and stamps ``removed_at``,
  ``drain_ended_at``, ``added_at``, ``healthy_at``). With gateways on several hosts, their clocks' differences
  count in, and the record says so.
* ``swap`` (only when the run asked the server to load a new model revision in place): the update call's seconds,
  measured by the module on the server host.
* ``stop``: stop requested (the unit left ``active``) -> the old invocation gone (``inactive``); ``start``: the new
  main process forked -> readiness passed; ``down``: stop requested -> ready. Clock: the server host's
  CLOCK_MONOTONIC, systemd's own stamps (the readiness wait's ``unit_state.timestamps``, kept by sglang_server as
  ``unit_times``), shown in UTC through the host's wall-clock offset read at the end of the wait.

A span whose end is before its start (a wall clock stepped back, stamps of another boot) is refused: ``seconds``
stays ``None`` and the record lists the problem, never a negative duration. With ``sglang_server_metrics`` the record
also holds SGLang's own start-up metrics (``startup``), ``None`` per metric that the server did not report.
"""

from __future__ import annotations

from datetime import datetime, timezone

from ansible_collections.llmserve.sglang.plugins.plugin_utils.values import finite_number

# (key, label) in the order the report shows them
PHASES = (("drain", "drain"), ("stop", "stop"), ("start", "start to ready"), ("swap", "swapped in place"),
          ("rejoin", "rejoin"), ("out_of_rotation", "out of rotation"), ("down", "server down"))
# SGLang 0.5.23's start-up metrics (all gauges) and the label that tells their series apart
STARTUP_METRICS = (("startup_time_seconds", "sglang:startup_time_seconds", "phase"),
                   ("startup_cuda_graph_time_seconds", "sglang:startup_cuda_graph_time_seconds", "phase"),
                   ("weight_load_duration_seconds", "sglang:weight_load_duration_seconds", "source"))
HOST_CLOCK = "host (systemd, CLOCK_MONOTONIC)"
SWAP_CLOCK = "host (the update call, llmserve.sglang.weight_swap)"


def loop_results(registered):
    """The per-item results of a looped task's registered variable (none when it was skipped or not run)."""
    if not isinstance(registered, dict):
        return []
    return [r for r in registered.get("results") or [] if isinstance(r, dict) and not r.get("skipped")]


def gateway_of(result):
    name = result.get(result.get("ansible_loop_var") or "item")
    return str(name) if name is not None else "?"


def iso_utc(epoch):
    """``epoch`` (seconds) as ``2026-12-02T11:29:53.123456Z``, or ``None`` when it is no usable moment."""
    number = finite_number(epoch)
    if number is None:
        return None
    try:
        return datetime.fromtimestamp(number, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    except (OverflowError, OSError, ValueError):
        return None


def _phase(clock, note=None):
    return {"clock": clock, "started": None, "ended": None, "seconds": None, "note": note}


def _span(phase, name, start, end, problems, to_epoch=None):
    """Fill ``phase`` from two moments of one clock; an end before the start is refused (and listed)."""
    to_epoch = to_epoch or (lambda value: value)
    phase["started"] = iso_utc(to_epoch(start)) if start is not None else None
    phase["ended"] = iso_utc(to_epoch(end)) if end is not None else None
    if start is None or end is None:
        return phase
    if end < start:
        problem = ("%s: ends %.3f s before it starts on the %s clock (a clock went backwards); not counted"
                   % (name, start - end, phase["clock"]))
        phase["note"] = problem
        problems.append(problem)
        return phase
    phase["seconds"] = round(end - start, 3)
    return phase


def _gateway_clock(names):
    names = sorted(set(names))
    if not names:
        return "gateway"
    if len(names) == 1:
        return "gateway %s (wall clock)" % names[0]
    return "gateways %s (their wall clocks: differences between them count in)" % ", ".join(names)


def _gateway_phases(taken_out, put_back, problems):
    out, back = loop_results(taken_out), loop_results(put_back)
    clock = _gateway_clock([gateway_of(r) for r in out + back])
    drain, rejoin, total = _phase(clock), _phase(clock), _phase(clock)
    if not out and not back:
        for phase in (drain, rejoin, total):
            phase["note"] = "in no gateway this run"
        return drain, rejoin, total

    removed = [(finite_number(r.get("removed_at")), finite_number(r.get("drain_ended_at"))) for r in out]
    starts = [start for start, _end in removed if start is not None]
    ends = [end for start, end in removed if start is not None]
    if any(r.get("failed") for r in out) and not starts:
        drain["note"] = "taking it out failed"
    elif not starts:
        drain["note"] = "not taken out: no gateway listed it"
    else:
        ended = max(ends) if None not in ends else None
        _span(drain, "drain", min(starts), ended, problems)
        if not drain["note"] and not all(r.get("drained") for r in out if finite_number(r.get("removed_at")) is not None):
            drain["note"] = "not drained: requests still ran when the wait ended" if ended is not None \
                else "the drain did not end (taking it out failed)"

    added = [finite_number(r.get("added_at")) for r in back]
    healthy = [finite_number(r.get("healthy_at")) for r in back]
    if not back:
        rejoin["note"] = "not put back (the host failed, or the run stopped before)"
    else:
        all_in = all(r.get("healthy") and not r.get("failed") for r in back) and None not in healthy
        begun = [a for a in added if a is not None]
        _span(rejoin, "rejoin", min(begun) if begun else None, max(healthy) if all_in else None, problems)
        if not all_in:
            rejoin["note"] = "not healthy in every gateway"
    if starts and rejoin["seconds"] is not None:
        # rejoin counted: every gateway has it healthy, each with its healthy_at
        _span(total, "out of rotation", min(starts), max(healthy), problems)
    elif starts:
        total["started"] = drain["started"]
        total["note"] = "not back in rotation in every gateway"
    else:
        total["note"] = drain["note"]
    return drain, rejoin, total


def _host_phases(sglang, problems):
    stop, start, down = _phase(HOST_CLOCK), _phase(HOST_CLOCK), _phase(HOST_CLOCK)
    times = sglang.get("unit_times") if isinstance(sglang.get("unit_times"), dict) else None
    if not sglang.get("restarted") or times is None:
        note = "no restart this run" if not sglang.get("restarted") else "systemd's moments were not read"
        for phase in (stop, start, down):
            phase["note"] = note
        return stop, start, down
    offset = finite_number(times.get("realtime_offset"))

    def to_epoch(value):
        return value + offset if offset is not None else None

    requested, stopped = finite_number(times.get("stop_requested")), finite_number(times.get("stopped"))
    main_started, checked = finite_number(times.get("main_started")), finite_number(times.get("checked"))
    ready = bool(times.get("ready"))
    if times.get("was_active") is False:
        stop["note"] = "the unit was not running before this start"
        requested = None
    elif requested is None or stopped is None:
        stop["note"] = "systemd has no stop moment since boot"
        requested = None
    else:
        _span(stop, "stop", requested, stopped, problems, to_epoch)
        if main_started is not None and stopped > main_started:
            problem = "stop: the old invocation ended after the new main process started; not this run's stop"
            stop.update(seconds=None, note=problem)
            problems.append(problem)
            requested = None
    if main_started is None:
        start["note"] = "systemd has no start moment of the new main process"
    elif ready:
        _span(start, "start to ready", main_started, checked, problems, to_epoch)
    else:
        start["started"] = iso_utc(to_epoch(main_started))
        waited = checked - main_started if checked is not None else None
        start["note"] = ("did not become ready (the wait gave up %.1f s after the new main process started)" % waited
                         if waited is not None and waited >= 0 else "did not become ready")
    if requested is not None and ready and start["seconds"] is not None:
        _span(down, "server down", requested, checked, problems, to_epoch)
    else:
        down["note"] = start["note"] if not ready or start["seconds"] is None else stop["note"]
    return stop, start, down


def swap_total(swap):
    """The total seconds of a report's ``weight_swap`` (llmserve.sglang.weight_swap's ``seconds.total``) as a finite
    number, else None."""
    seconds = swap.get("seconds") if isinstance(swap, dict) else None
    return finite_number(seconds.get("total")) if isinstance(seconds, dict) else None


def _swap_phase(sglang):
    """``swap``: the in-place load of a new model revision (llmserve.sglang.weight_swap's seconds), or None when this
    run asked the server for none."""
    swap = sglang.get("weight_swap")
    if not isinstance(swap, dict) or not swap.get("outcome"):
        return None
    phase = _phase(SWAP_CLOCK)
    total = swap_total(swap)
    if swap.get("swapped_in_place") and total is not None and total >= 0:
        phase.update(seconds=round(total, 3), note="revision %s loaded into the running server" % (
            swap.get("to_weight_version") or "?"))
    else:
        phase["note"] = "the in-place swap did not succeed (%s)" % swap.get("outcome")
    return phase


def startup_metrics(samples):
    """SGLang's start-up metrics by name (:data:`STARTUP_METRICS`): ``{phase or source: seconds}``, the largest over
    the series that share a label value (one per scheduler rank: the slowest rank is the server's time), or ``None``
    for a metric the server did not report. ``None`` as a whole when nothing was read."""
    if not isinstance(samples, dict):
        return None
    out = {}
    for key, name, label in STARTUP_METRICS:
        values = {}
        for sample in samples.get(name) or []:
            if not isinstance(sample, dict):
                continue
            value = finite_number(sample.get("value"))
            labels = sample.get("labels") if isinstance(sample.get("labels"), dict) else {}
            if value is None or value < 0:
                continue
            part = str(labels.get(label) or "all")
            values[part] = max(value, values.get(part, value))
        out[key] = {part: round(value, 3) for part, value in sorted(values.items())} or None
    return out


def rotation_record(taken_out=None, put_back=None, sglang=None):
    """The host's ``rotation`` record, or ``None`` when it neither left a gateway nor restarted this run.

    ``taken_out`` and ``put_back`` are the registered results of gateway_worker (state absent, present) looped over
    the gateways; ``sglang`` the ``sglang_server_report`` (``restarted``, ``unit_times``, ``startup_metrics``,
    ``metrics_url``).
    """
    sglang = sglang if isinstance(sglang, dict) else {}
    swap = _swap_phase(sglang)
    if not loop_results(taken_out) and not loop_results(put_back) and not sglang.get("restarted") and swap is None:
        return None
    problems = []
    drain, rejoin, total = _gateway_phases(taken_out, put_back, problems)
    stop, start, down = _host_phases(sglang, problems)
    record = {"drain": drain, "stop": stop, "start": start, "rejoin": rejoin, "out_of_rotation": total,
              "down": down, "problems": problems,
              "clocks": "drain, rejoin and out of rotation by the gateway host's wall clock (gateway_worker's "
                        "stamps); stop, start to ready and server down by systemd's monotonic stamps on this host. "
                        "No span mixes the two."}
    if swap is not None:
        record["swap"] = swap
    prewarm = sglang.get("prewarm")
    if isinstance(prewarm, dict) and prewarm.get("note"):
        # before the drain, so not part of any phase above: what the start did not have to read from storage
        record["prewarm"] = {"seconds": finite_number(prewarm.get("seconds")) if prewarm.get("warmed") else None,
                             "bytes_read": prewarm.get("bytes_read"), "note": str(prewarm["note"])}
    if sglang.get("restarted"):
        record["startup"] = startup_metrics(sglang.get("startup_metrics"))
        if record["startup"] is None:
            record["startup_note"] = ("sglang_server_metrics is off" if not sglang.get("metrics_url")
                                      else "/metrics was not read")
    return record


def _seconds_text(phase):
    text = "%.1f s" % phase["seconds"] if phase.get("seconds") is not None else (phase.get("note") or "-")
    if phase.get("seconds") is not None and phase.get("note"):
        text += " (%s)" % phase["note"]
    if phase.get("started") or phase.get("ended"):
        text += ", %s -> %s" % (phase.get("started") or "?", phase.get("ended") or "?")
    return "%s [%s]" % (text, phase.get("clock"))


def _startup_text(record):
    if "startup" not in record:
        return None
    startup = record["startup"]
    if startup is None:
        return record.get("startup_note") or "not read"
    parts = []
    for key, what in (("startup_time_seconds", "start-up"), ("startup_cuda_graph_time_seconds", "CUDA graphs"),
                      ("weight_load_duration_seconds", "weight update")):
        values = startup.get(key)
        parts.append("%s: %s" % (what, ", ".join("%s %.1f s" % (k, v) for k, v in values.items())
                                 if values else "not reported"))
    return "; ".join(parts)


def rotation_rows(record):
    """(label, value) rows of the record for the host's table."""
    if not record:
        return []
    rows = []
    if record.get("prewarm"):
        rows.append(("Pre-warm (before the drain)", record["prewarm"]["note"]))
    rows += [("Rotation: %s" % label, _seconds_text(record[key])) for key, label in PHASES if record.get(key)]
    if record.get("problems"):
        rows.append(("Rotation: clock problems", "; ".join(record["problems"])))
    startup = _startup_text(record)
    if startup is not None:
        rows.append(("SGLang start-up (its /metrics)", startup))
    return rows


def rotation_stats(record):
    """The few numbers of the record the job artifacts carry: seconds per phase (``None`` where not counted) and the
    start-up metrics."""
    stats = {"%s_seconds" % key: record[key].get("seconds") for key, _label in PHASES if record.get(key)}
    if record.get("prewarm"):
        stats["prewarm_seconds"] = record["prewarm"]["seconds"]
    if "startup" in record:
        stats["startup"] = record["startup"]
    if record.get("problems"):
        stats["problems"] = list(record["problems"])
    return stats
