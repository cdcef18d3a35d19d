"""The revision swap bench through the role: the measured changes (to B) per worker and way, medians of the rotation
phases, the ratio in place / restart judged against the target, and changes that went another way failing it."""

import importlib.util
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location("bench_swap_role", os.path.join(HERE, "..", "..", "..", "tools", "bench",
                                                                              "bench_swap_role.py"))
bench_swap_role = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench_swap_role)


def record(out, start=None, swap=None):
    rec = {"drain": {"seconds": 2.0}, "rejoin": {"seconds": 3.0}, "out_of_rotation": {"seconds": out}}
    if start is not None:
        rec.update(stop={"seconds": 4.0}, start={"seconds": start})
    if swap is not None:
        rec["swap"] = {"seconds": swap}
    return rec


def run(way, to, w1, w2, restarted):
    return {"way": way, "to": to, "sample": "0", "rotation": {"w1": w1, "w2": w2},
            "restarted": {"w1": restarted, "w2": restarted}}


MEASURED = {"runs": [
    run("restart", "b", record(40.0, start=30.0), record(44.0, start=33.0), True),
    run("restart", "a", record(41.0, start=31.0), record(45.0, start=34.0), True),  # the way back: not counted
    run("swap", "b", record(6.0, swap=0.3), record(7.0, swap=0.4), False),
    run("swap", "a", record(6.5, swap=0.3), record(6.9, swap=0.3), False),
    run("restart", "b", record(50.0, start=40.0), record(46.0, start=35.0), True),
    run("swap", "b", record(8.0, swap=0.5), record(7.4, swap=0.3), False),
]}


def test_medians_ratio_and_verdicts_per_worker(tmp_path, capsys):
    path = tmp_path / "m.json"
    path.write_text(json.dumps(MEASURED))
    out = tmp_path / "s.json"
    assert bench_swap_role.main([str(path), "--json", str(out)]) == 0
    summary = json.loads(out.read_text())
    w1 = summary["workers"]["w1"]
    assert w1["restart"]["out_of_rotation"] == 45.0 and w1["restart"]["start"] == 35.0 and w1["restart"]["samples"] == 2
    assert w1["swap"]["out_of_rotation"] == 7.0 and w1["swap"]["swap"] == 0.4
    assert w1["swap"]["start"] is None
    # what no phase accounts for: 8.0 - 2.0 - 0.5 - 3.0 and 6.0 - 2.0 - 0.3 - 3.0, and 40 - 2 - 4 - 30 - 3, 50 - 2 - 4 - 40 - 3
    assert w1["swap"]["steps_between"] == 1.6 and w1["restart"]["steps_between"] == 1.0
    assert w1["ratio"] == round(7.0 / 45.0, 3)
    assert summary["verdicts"] == {"ratio_w1": True, "ratio_w2": True, "every_change_as_asked": True}
    printed = capsys.readouterr().out
    assert "ratio in place / restart: 0.156 (target <= 0.3)" in printed
    assert "in place  out of rotation    7.0 s = drain 2.0 + stop None + start to ready None + swap 0.4 + rejoin 3.0 " \
        "+ steps between 1.6; 2 sample(s)" in printed


def test_a_slow_swap_or_a_change_that_went_another_way_fails():
    slow = {"runs": [run("restart", "b", record(40.0, start=30.0), record(40.0, start=30.0), True),
                     run("swap", "b", record(20.0, swap=9.0), record(8.0, swap=0.3), False)]}
    summary = bench_swap_role.summarise(slow)
    assert summary["verdicts"] == {"ratio_w1": False, "ratio_w2": True, "every_change_as_asked": True}
    restarted = {"runs": [run("restart", "b", record(40.0, start=30.0), record(40.0, start=30.0), True),
                          run("swap", "b", record(6.0), record(6.0), True)]}
    summary = bench_swap_role.summarise(restarted)
    assert summary["verdicts"]["every_change_as_asked"] is False
    assert "run 1 (swap): w1 restarted" in summary["problems"]
    assert bench_swap_role.summarise({"runs": []})["problems"] == ["no measured change"]
