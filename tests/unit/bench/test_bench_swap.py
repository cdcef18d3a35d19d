"""The swap bench's pure parts: the answer check that turns a wrong answer into a FAIL, the medians per phase over
correct changes only, and the ratio verdict."""

import importlib.util
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location("bench_swap", os.path.join(HERE, "..", "..", "..", "tools", "bench", "bench_swap.py"))
bench_swap = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench_swap)

EXPECTED = {"A": "ulu ka", "B": "rim rim"}
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _change(method, ok_answer=True, wall=1.0, **seconds):
    sample = {"method": method, "seconds": dict(seconds)}
    answer = EXPECTED["B"] if ok_answer else EXPECTED["A"]
    problems = bench_swap.answer_problems(answer, {"weight_version": COMMIT}, EXPECTED, "B", COMMIT)
    return bench_swap.finish_sample(sample, problems, wall)


def test_a_wrong_answer_is_a_fail_without_a_total():
    right = _change("swap", wall=0.5, update=0.1, smoke=0.3)
    assert right["ok"] and right["problems"] == [] and right["total"] == 0.5
    assert right["seconds"] == {"update": 0.1, "smoke": 0.3, "other": 0.1}  # the wall time between the phases
    wrong = _change("swap", ok_answer=False, wall=0.4, update=0.1)
    assert not wrong["ok"] and wrong["total"] is None and wrong["wall"] == 0.4
    assert wrong["problems"] == ["answered 'ulu ka', revision B answers 'rim rim'"]


def test_the_answer_must_come_from_the_weight_version_loaded():
    assert bench_swap.answer_problems("rim rim", {"weight_version": "default"}, EXPECTED, "B", COMMIT) == [
        "meta_info.weight_version is 'default', not %r" % COMMIT]
    assert bench_swap.answer_problems("rim rim", {}, EXPECTED, "C", "default") == [
        "no reference answer recorded for revision C", "meta_info.weight_version is None, not 'default'"]


def test_fake_commits_are_40_hex_and_differ_per_change():
    commits = {bench_swap.fake_commit(rev, index) for rev in "AB" for index in range(3)}
    assert len(commits) == 6 and all(re.match(r"^[0-9a-f]{40}$", c) for c in commits)


def test_medians_per_phase_leave_failed_changes_out():
    changes = [_change("restart", wall=30.0, stop=2.0, start_to_ready=27.0, smoke=1.0),
               _change("restart", wall=40.0, stop=4.0, start_to_ready=35.0, smoke=1.0),
               _change("restart", wall=50.0, stop=3.0, start_to_ready=46.0, smoke=1.0),
               _change("restart", ok_answer=False, wall=1.0, stop=0.1, start_to_ready=0.8, smoke=0.1)]
    summary = bench_swap.summarise(changes, bench_swap.PHASES["restart"])
    assert summary == {"samples": 3, "failed": 1, "total": 40.0, "totals": [30.0, 40.0, 50.0],
                       "phases": {"stop": 3.0, "start_to_ready": 35.0, "smoke": 1.0, "other": 0.0}}
    empty = bench_swap.summarise(changes[3:], bench_swap.PHASES["restart"])
    assert empty["samples"] == 0 and empty["total"] is None and empty["phases"] == {}


def test_ratio_verdict():
    restart = bench_swap.summarise([_change("restart", wall=40.0), _change("restart", wall=44.0)], ())
    fast = bench_swap.summarise([_change("swap", wall=2.1), _change("swap", wall=1.9)], ())
    assert bench_swap.verdict(restart, fast, 0.3) == (0.0476, True, "swap/restart 0.0476 <= 0.30")
    slow = bench_swap.summarise([_change("swap", wall=14.0)], ())
    assert bench_swap.verdict(restart, slow, 0.3) == (0.3333, False, "swap/restart 0.3333 > 0.30")
    # one wrong answer fails the run, however fast the rest
    failed = bench_swap.summarise([_change("swap", wall=1.0), _change("swap", ok_answer=False, wall=1.0)], ())
    assert bench_swap.verdict(restart, failed, 0.3) == (None, False, "0 restart and 1 swap changes failed")
    none = bench_swap.summarise([], ())
    assert bench_swap.verdict(none, fast, 0.3) == (None, False, "no correct change to compare")


def test_table_rows():
    restart = bench_swap.summarise([_change("restart", wall=40.0, stop=2.0, start_to_ready=37.0, smoke=1.0)],
                                   bench_swap.PHASES["restart"])
    lines = bench_swap.table([(("restart", "A->B"), restart), (("swap", "A->B"), bench_swap.summarise([], ()))])
    assert lines[2] == "| restart | A->B | stop 2.000, start_to_ready 37.000, smoke 1.000, other 0.000 | 40.000 s | 1 | 0 |"
    assert lines[3] == "| swap | A->B | - | - | 0 | 0 |"
