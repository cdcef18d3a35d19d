"""The site.yml bench: the recap parser, what counts as a clean (no-change) run, and targets that can fail."""

import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location("bench_site", os.path.join(HERE, "..", "..", "..", "tools", "bench", "bench_site.py"))
bench_site = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench_site)

RECAP = """
TASK [Release the per-host deployment lock] ************************************
ok: [h1]

PLAY RECAP *********************************************************************
h1                         : ok=28   changed=0    unreachable=0    failed=0    skipped=9    rescued=0    ignored=0
h2                         : ok=25   changed=1    unreachable=0    failed=0    skipped=10   rescued=0    ignored=0
"""


def test_recap_is_parsed_per_host():
    recap = bench_site.parse_recap(RECAP)
    assert recap == {"h1": dict(ok=28, changed=0, unreachable=0, failed=0),
                     "h2": dict(ok=25, changed=1, unreachable=0, failed=0)}


def test_a_run_is_clean_only_when_every_host_ran_and_nothing_changed():
    recap = bench_site.parse_recap(RECAP)
    assert bench_site.clean({"h1": recap["h1"]}, ["h1"])
    assert not bench_site.clean(recap, ["h1", "h2"]), "h2 changed"
    assert not bench_site.clean({"h1": recap["h1"]}, ["h1", "h2"]), "h2 did not run"


def test_targets_pass_and_fail():
    runs = [{"clean": True}] * 4
    one = bench_site.summarise([{"wall": 10.0, "cpu": 5.0}, {"wall": 12.0, "cpu": 5.0}])
    both = bench_site.summarise([{"wall": 12.0, "cpu": 6.0}, {"wall": 13.0, "cpu": 6.0}])
    checks = bench_site.check_targets(one, both, [1.2, 1.08], runs, 1.3, 22)
    assert all(check[1] for check in checks)
    slow = bench_site.summarise([{"wall": 30.0, "cpu": 9.0}])
    checks = {check[0]: check[1] for check in bench_site.check_targets(one, slow, [2.5], runs + [{"clean": False}], 1.3, 22)}
    assert checks == {"every measured run changed nothing and failed nothing": False,
                      "both hosts <= 1.30 x one host (ratio of the medians)": False,
                      "one host <= 22 s (median)": True,
                      "median of the per-sample ratios <= 1.30": False}
