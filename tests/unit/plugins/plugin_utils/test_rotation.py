# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A worker's time out of rotation (plugin_utils/rotation.py) and where the report shows it: the arithmetic of each
phase on its own clock, a restart without a gateway, a failed start, start-up metrics that are missing, and clocks
that go backwards (refused, never negative)."""

from __future__ import annotations

import json

from ansible_collections.llmserve.sglang.plugins.filter.deploy_report import FilterModule
from ansible_collections.llmserve.sglang.plugins.plugin_utils.deploy_report import host_rows, host_stats
from ansible_collections.llmserve.sglang.plugins.plugin_utils.report_html import host_phases, render_run_report
from ansible_collections.llmserve.sglang.plugins.plugin_utils.rotation import (
    iso_utc,
    rotation_record,
    startup_metrics,
)

T = 1764675000.0  # 2025-12-02T11:30:00Z on the gateway's wall clock
OFFSET = 1764670000.0  # the host's wall clock minus its monotonic clock
OUT = {"results": [{"__sglang_rollout_gw": "gw-1", "ansible_loop_var": "__sglang_rollout_gw", "drained": True,
                    "removed_at": T, "drain_ended_at": T + 40.5}]}
IN = {"results": [{"__sglang_rollout_gw": "gw-1", "ansible_loop_var": "__sglang_rollout_gw", "healthy": True,
                   "added_at": T + 130.0, "healthy_at": T + 133.25}]}
# stop asked at 5000 s, old processes gone 5006.5 s, new main process 5007 s, ready 5087 s (host monotonic)
TIMES = {"clock": "monotonic", "stop_requested": 5000.0, "stopped": 5006.5, "main_started": 5007.0,
         "main_exited": None, "checked": 5087.0, "realtime_offset": OFFSET, "was_active": True, "ready": True}
METRICS = {"sglang:startup_time_seconds": [
    {"labels": {"phase": "load_weight", "tp_rank": "0"}, "value": 41.2},
    {"labels": {"phase": "load_weight", "tp_rank": "1"}, "value": 43.0},
    {"labels": {"phase": "kv_cache_allocation"}, "value": 2.5}],
    "sglang:startup_cuda_graph_time_seconds": [{"labels": {"phase": "decode"}, "value": 12.0}]}
SG = {"state": "serving", "ready": True, "restarted": True, "time_to_ready": 80.0, "unit_times": TIMES,
      "startup_metrics": METRICS, "metrics_url": "http://127.0.0.1:30000/metrics"}


def test_a_rollout_through_a_gateway_times_each_phase_on_its_own_clock():
    record = rotation_record(OUT, IN, SG)
    assert {k: record[k]["seconds"] for k in ("drain", "stop", "start", "rejoin", "out_of_rotation", "down")} == {
        "drain": 40.5, "stop": 6.5, "start": 80.0, "rejoin": 3.25, "out_of_rotation": 133.25, "down": 87.0}
    assert record["drain"]["started"] == "2025-12-02T11:30:00.000000Z"
    assert record["drain"]["ended"] == "2025-12-02T11:30:40.500000Z"
    assert record["out_of_rotation"]["ended"] == "2025-12-02T11:32:13.250000Z"
    # the host phases in UTC through the host's offset: 1764670000 + 5000 = 11:30:00
    assert record["stop"]["started"] == "2025-12-02T11:30:00.000000Z"
    assert record["start"]["ended"] == iso_utc(OFFSET + 5087.0) == "2025-12-02T11:31:27.000000Z"
    assert record["drain"]["clock"] == "gateway gw-1 (wall clock)"
    assert record["stop"]["clock"] == record["start"]["clock"] == "host (systemd, CLOCK_MONOTONIC)"
    assert record["problems"] == [] and "No span mixes the two" in record["clocks"]
    # the slowest rank's load, one value per phase
    assert record["startup"] == {"startup_time_seconds": {"kv_cache_allocation": 2.5, "load_weight": 43.0},
                                 "startup_cuda_graph_time_seconds": {"decode": 12.0},
                                 "weight_load_duration_seconds": None}


def test_a_restart_without_a_gateway_has_host_phases_only():
    record = rotation_record(None, None, SG)
    for key in ("drain", "rejoin", "out_of_rotation"):
        assert record[key]["seconds"] is None and record[key]["note"] == "in no gateway this run"
    assert record["stop"]["seconds"] == 6.5 and record["start"]["seconds"] == 80.0 and record["down"]["seconds"] == 87.0


def test_nothing_is_recorded_for_a_host_that_neither_left_a_gateway_nor_restarted():
    assert rotation_record(None, None, {"state": "serving", "restarted": False, "unit_times": None}) is None
    assert rotation_record(None, None, None) is None


def test_a_failed_start_is_no_time_to_ready_and_the_worker_stays_out():
    failed = dict(SG, ready=False, state="rolled back to the last good configuration",
                  unit_times=dict(TIMES, ready=False, checked=5607.0), startup_metrics=None)
    record = rotation_record(OUT, None, failed)
    assert record["start"]["seconds"] is None and record["start"]["ended"] is None
    assert record["start"]["note"] == "did not become ready (the wait gave up 600.0 s after the new main process started)"
    assert record["stop"]["seconds"] == 6.5 and record["down"]["seconds"] is None
    assert record["drain"]["seconds"] == 40.5
    assert record["rejoin"]["note"].startswith("not put back") and record["out_of_rotation"]["seconds"] is None
    assert record["out_of_rotation"]["started"] == record["drain"]["started"]
    report = {"host": "h", "stages": {"sglang": failed["state"]}, "sglang": failed, "rotation": record}
    phases = dict((p[0], p) for p in host_phases(report))
    assert phases["start"][1] == "fail" and "did not become ready" in phases["start"][3]


def test_start_up_metrics_missing_are_not_reported_never_zero():
    assert startup_metrics({}) == {"startup_time_seconds": None, "startup_cuda_graph_time_seconds": None,
                                   "weight_load_duration_seconds": None}
    assert startup_metrics({"sglang:startup_time_seconds": [{"labels": {"phase": "load_weight"}, "value": -1}]}
                           )["startup_time_seconds"] is None
    # metrics off: nothing read, and the record says why
    record = rotation_record(None, None, dict(SG, startup_metrics=None, metrics_url=None))
    assert record["startup"] is None and record["startup_note"] == "sglang_server_metrics is off"
    rows = dict(host_rows({"host": "h", "stages": {}, "rotation": rotation_record(None, None, dict(
        SG, startup_metrics={}))}))
    assert rows["SGLang start-up (its /metrics)"] == (
        "start-up: not reported; CUDA graphs: not reported; weight update: not reported")


def test_a_clock_going_backwards_is_refused_not_negative():
    # the gateway's wall clock stepped back 10 s between the removal and the healthy answer
    back = {"results": [dict(IN["results"][0], added_at=T - 20.0, healthy_at=T - 10.0)]}
    record = rotation_record(OUT, back, SG)
    assert record["out_of_rotation"]["seconds"] is None and record["rejoin"]["seconds"] == 10.0
    assert "out of rotation: ends 10.000 s before it starts" in record["out_of_rotation"]["note"]
    # systemd's stamps out of order (another boot's): stop refused, no negative number anywhere
    skewed = dict(SG, unit_times=dict(TIMES, stop_requested=5010.0, stopped=5006.5))
    record = rotation_record(None, None, skewed)
    assert record["stop"]["seconds"] is None and record["problems"][0].startswith("stop: ends 3.500 s before")
    assert record["down"]["seconds"] == 77.0  # stop requested at 5010 -> ready at 5087 is still one clock's span
    numbers = [p["seconds"] for p in record.values() if isinstance(p, dict) and "seconds" in p]
    assert all(n is None or n >= 0 for n in numbers)


def test_a_stop_that_was_not_this_runs_is_not_counted():
    not_running = rotation_record(None, None, dict(SG, unit_times=dict(TIMES, was_active=False)))
    assert not_running["stop"]["seconds"] is None and not_running["down"]["seconds"] is None
    assert not_running["stop"]["note"] == "the unit was not running before this start"
    late = rotation_record(None, None, dict(SG, unit_times=dict(TIMES, stopped=5008.0)))
    assert late["stop"]["seconds"] is None and "not this run's stop" in late["problems"][0]


def test_several_gateways_say_their_clocks_differ_and_take_first_out_last_healthy():
    second = dict(OUT["results"][0], __sglang_rollout_gw="gw-2", removed_at=T + 1.0, drain_ended_at=T + 45.0)
    out = {"results": [OUT["results"][0], second]}
    back = {"results": [IN["results"][0], dict(IN["results"][0], __sglang_rollout_gw="gw-2", added_at=T + 134.0,
                                               healthy_at=T + 136.0)]}
    record = rotation_record(out, back, SG)
    assert record["drain"]["seconds"] == 45.0 and record["rejoin"]["seconds"] == 6.0
    assert record["out_of_rotation"]["seconds"] == 136.0
    assert record["drain"]["clock"].startswith("gateways gw-1, gw-2 (their wall clocks")
    # unhealthy in one: no rejoin end, no total
    back["results"][1] = dict(back["results"][1], healthy=False, healthy_at=None)
    record = rotation_record(out, back, SG)
    assert record["rejoin"]["seconds"] is None and record["rejoin"]["note"] == "not healthy in every gateway"
    assert record["out_of_rotation"]["seconds"] is None


def test_the_report_shows_it_in_rows_stats_html_and_through_the_filter():
    report = FilterModule().filters()["sglang_host_report"]("gpu-1", None, None, SG, OUT, IN)
    assert report["rotation"]["out_of_rotation"]["seconds"] == 133.25
    rows = dict(host_rows(report))
    assert rows["Rotation: stop"].startswith("6.5 s, 2025-12-02T11:30:00.000000Z -> 2025-12-02T11:30:06.500000Z")
    assert rows["Rotation: out of rotation"].endswith("[gateway gw-1 (wall clock)]")
    assert rows["SGLang start-up (its /metrics)"].startswith("start-up: kv_cache_allocation 2.5 s, load_weight 43.0 s")
    stats = host_stats(report)
    assert stats["rotation"]["drain_seconds"] == 40.5 and stats["rotation"]["start_seconds"] == 80.0
    assert stats["rotation"]["startup"]["startup_time_seconds"]["load_weight"] == 43.0
    json.dumps(stats)
    phases = dict((p[0], p) for p in host_phases(report))
    assert phases["stop"][2] == "6.5 s" and phases["start"][2] == "80.0 s"
    assert "no time recorded" not in json.dumps(host_phases(report))
    page = render_run_report("run-1", [report])
    assert "Rotation: out of rotation" in page and "133.2 s" in page
    # a host that did not restart carries no record, and its artifacts no rotation
    no_restart = {"state": "serving", "restarted": False}
    unchanged = FilterModule().filters()["sglang_host_report"]("gpu-2", None, None, no_restart)
    assert "rotation" not in unchanged and "rotation" not in host_stats(unchanged)


def test_the_prewarm_before_the_drain_is_kept_beside_the_phases_not_in_them():
    warmed = dict(SG, prewarm={"warmed": True, "seconds": 2.25, "bytes_read": 2193791440,
                               "note": "read 2.0 GiB into the page cache in 2.2 s (0.9 GiB/s)"})
    record = rotation_record(OUT, IN, warmed)
    assert record["prewarm"] == {"seconds": 2.25, "bytes_read": 2193791440,
                                 "note": "read 2.0 GiB into the page cache in 2.2 s (0.9 GiB/s)"}
    assert record["out_of_rotation"]["seconds"] == 133.25  # unchanged: it happened while the host still served
    assert host_stats({"host": "w1", "rotation": record})["rotation"]["prewarm_seconds"] == 2.25
    rows = dict(host_rows({"host": "w1", "rotation": record}))
    assert rows["Pre-warm (before the drain)"].startswith("read 2.0 GiB")
    # skipped (not enough memory) is a note without seconds; no prewarm at all is no entry
    skipped = rotation_record(OUT, IN, dict(SG, prewarm={"warmed": False, "seconds": 0.0, "bytes_read": 0,
                                                         "note": "skipped: 2.0 GiB do not fit"}))
    assert skipped["prewarm"]["seconds"] is None and skipped["prewarm"]["note"].startswith("skipped")
    assert "prewarm" not in rotation_record(OUT, IN, SG)
    assert "prewarm_seconds" not in host_stats({"host": "w1", "rotation": rotation_record(OUT, IN, SG)})["rotation"]


SWAPPED = {"state": "serving", "ready": True, "restarted": False, "unit_times": None,
           "weight_swap": {"action": "swap", "swapped_in_place": True, "outcome": "swapped",
                           "to_weight_version": "b" * 40, "seconds": {"update": 0.21, "verify": 0.02, "total": 0.234}}}


def test_an_in_place_swap_through_a_gateway_is_a_phase_of_its_own():
    record = rotation_record(OUT, IN, SWAPPED)
    assert record["swap"]["seconds"] == 0.234
    assert record["swap"]["note"] == "revision %s loaded into the running server" % ("b" * 40)
    assert record["swap"]["clock"].startswith("host (the update call")
    # no restart: the host's systemd phases say so, the gateway's phases are still measured
    assert record["stop"]["seconds"] is None and record["stop"]["note"] == "no restart this run"
    assert record["out_of_rotation"]["seconds"] == 133.25
    assert "startup" not in record
    rows = dict(host_rows({"rotation": record, "sglang": {}, "stages": {}}))
    assert rows["Rotation: swapped in place"].startswith("0.2 s (revision bbbb")
    stats = host_stats({"rotation": record, "sglang": {"restarted": False, "weight_swap": SWAPPED["weight_swap"]}})
    assert stats["rotation"]["swap_seconds"] == 0.234
    assert stats["weight_swap"] == {"action": "swap", "swapped_in_place": True, "outcome": "swapped",
                                    "seconds": 0.234, "to_weight_version": "b" * 40}


def test_a_swap_alone_makes_a_record_and_a_failed_one_has_no_seconds():
    record = rotation_record(None, None, SWAPPED)
    assert record is not None and record["swap"]["seconds"] == 0.234
    failed = dict(SWAPPED, weight_swap=dict(SWAPPED["weight_swap"], swapped_in_place=False, outcome="incompatible"))
    record = rotation_record(None, None, failed)
    assert record["swap"]["seconds"] is None
    assert record["swap"]["note"] == "the in-place swap did not succeed (incompatible)"
    # a plan that restarted (no update asked): no swap phase
    restarted = dict(SG, weight_swap={"action": "restart", "swapped_in_place": False, "outcome": None})
    assert "swap" not in rotation_record(None, None, restarted)
