"""The pre-warm bench summary: the first worker restarted is the measured one, medians per condition and mode, the
ratio with / without the pre-warm judged against the target, and runs without numbers failing the bench."""

import importlib.util
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location("bench_prewarm", os.path.join(HERE, "..", "..", "..", "tools", "bench",
                                                                            "bench_prewarm.py"))
bench_prewarm = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench_prewarm)


def record(started, out, start, load_weight, prewarm=None):
    rec = {"drain": {"seconds": 5.0}, "stop": {"seconds": 4.0}, "start": {"seconds": start},
           "rejoin": {"seconds": 12.0}, "down": {"seconds": start + 4.0},
           "out_of_rotation": {"seconds": out, "started": started},
           "startup": {"startup_time_seconds": {"load_weight": load_weight}}}
    if prewarm is not None:
        rec["prewarm"] = {"seconds": prewarm, "bytes_read": 2 << 30, "note": "read"}
    return rec


def run(storage, mode, first_out, first_load, prewarm=None, sample=0):
    # w-a left its gateway later (restarted second) although its name sorts first: the order comes from the stamps
    return {"storage": storage, "prewarm": mode, "sample": sample,
            "evicted": {"bytes": 2200000000, "resident_after": 0},
            "rotation": {"w-b": record("2026-12-03T07:00:00.000000Z", first_out, first_out - 21, first_load, prewarm),
                         "w-a": record("2026-12-03T07:02:00.000000Z", 40.0, 19.0, 3.0)}}


MEASURED = {"runs": [run("unthrottled", "never", 50.0, 9.0),
                     run("unthrottled", "auto", 45.0, 3.0, prewarm=2.0),
                     run("throttled to 100mb/s", "never", 80.0, 31.0),
                     run("throttled to 100mb/s", "auto", 44.0, 3.1, prewarm=22.0)]}


def test_medians_ratios_and_verdicts_per_condition(tmp_path, capsys):
    path = tmp_path / "m.json"
    path.write_text(json.dumps(MEASURED))
    out = tmp_path / "s.json"
    assert bench_prewarm.main([str(path), "--json", str(out)]) == 1  # the unthrottled ratio 0.9 fails 0.6
    summary = json.loads(out.read_text())
    plain, slow = summary["conditions"]["unthrottled"], summary["conditions"]["throttled to 100mb/s"]
    assert plain["ratio"] == 0.9 and slow["ratio"] == 0.55
    assert slow["never"]["load_weight"] == 31.0 and slow["auto"]["prewarm"] == 22.0
    assert slow["never"]["start"] == 59.0 and slow["auto"]["control_out_of_rotation"] == 40.0
    assert plain["control_ratio"] == 1.0
    assert summary["verdicts"] == {"ratio_unthrottled": False, "ratio_throttled_to_100mb_s": True,
                                   "every_run_measured": True}
    printed = " ".join(capsys.readouterr().out.split())
    assert "ratio with / without: 0.55 (target <= 0.6)" in printed and "ratio_unthrottled FAIL" in printed


def test_the_measured_worker_is_the_one_restarted_first():
    summary = bench_prewarm.summarise({"runs": [run("s", "never", 50.0, 9.0), run("s", "auto", 25.0, 3.0, 2.0)]})
    assert summary["conditions"]["s"]["never"]["out_of_rotation"] == 50.0  # w-b, not the alphabetically first w-a
    assert summary["verdicts"]["ratio_s"] is True


def test_a_run_without_a_time_out_of_rotation_fails_the_bench():
    broken = run("s", "auto", 25.0, 3.0, 2.0)
    broken["rotation"]["w-b"]["out_of_rotation"] = {"started": "2026-12-03T07:00:00.000000Z", "seconds": None}
    summary = bench_prewarm.summarise({"runs": [run("s", "never", 50.0, 9.0), broken]})
    assert summary["verdicts"]["every_run_measured"] is False and summary["verdicts"]["ratio_s"] is False
    assert "no time out of rotation for w-b" in summary["problems"][0]


def test_a_run_with_one_worker_record_or_no_runs_at_all_is_a_problem():
    single = run("s", "never", 50.0, 9.0)
    del single["rotation"]["w-a"]
    assert bench_prewarm.summarise({"runs": [single]})["verdicts"]["every_run_measured"] is False
    empty = bench_prewarm.summarise({"runs": []})
    assert empty["problems"] == ["no runs measured"] and not all(empty["verdicts"].values())
