"""The fleet bench summary: ratios from one scenario run's three streams, and verdicts that can fail."""

import importlib.util
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location("bench_fleet", os.path.join(HERE, "..", "..", "..", "tools", "bench", "bench_fleet.py"))
bench_fleet = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench_fleet)


def stream(requests, failed, p50, p99, failures=()):
    return {"requests": requests, "failed": failed, "p50": p50, "p99": p99, "failures": list(failures)}


MEASURED = {
    "steady": stream(80, 0, 0.5, 0.9),
    "rollout_through_gateway": stream(400, 0, 0.75, 2.7),
    "rollout_wall_seconds": "0:01:42.500000",
    "plain_restart_without_drain": stream(300, 12, 0.5, 1.0, [{"status": 0, "error": "Connection refused"}]),
}


def test_summary_ratios_wall_time_and_pass(tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps(MEASURED))
    out = tmp_path / "s.json"
    assert bench_fleet.main([str(path), "--json", str(out)]) == 0
    summary = json.loads(out.read_text())
    assert summary["rollout_wall_seconds"] == 102.5
    assert summary["rollout_p50_vs_steady"] == 1.5 and summary["rollout_p99_vs_steady"] == 3.0
    assert summary["plain_restart_without_drain"]["failed"] == 12
    assert summary["plain_failures_sample"] == ["Connection refused"]
    assert all(summary["verdicts"].values())


def test_a_failed_request_in_the_rollout_fails_the_bench(tmp_path):
    bad = dict(MEASURED, rollout_through_gateway=stream(400, 1, 0.75, 2.7, [{"status": 502, "error": "bad"}]))
    path = tmp_path / "m.json"
    path.write_text(json.dumps(bad))
    assert bench_fleet.main([str(path)]) == 1
    assert bench_fleet.summarise(bad)["verdicts"]["rollout_no_failures"] is False


def test_an_empty_stream_fails_instead_of_passing_vacuously():
    empty = dict(MEASURED, rollout_through_gateway=stream(0, 0, None, None))
    verdicts = bench_fleet.summarise(empty)["verdicts"]
    assert verdicts["rollout_no_failures"] is False and verdicts["rollout_not_empty"] is False
    assert bench_fleet.summarise(empty)["rollout_p50_vs_steady"] is None


def test_the_failing_config_stream_is_judged_when_measured(capsys, tmp_path):
    with_failing = dict(MEASURED, failing_config_rollout=stream(50, 0, 0.6, 1.2))
    assert bench_fleet.summarise(with_failing)["verdicts"]["failing_config_no_failures"] is True
    broken = dict(MEASURED, failing_config_rollout=stream(50, 3, 0.6, 1.2))
    path = tmp_path / "m.json"
    path.write_text(json.dumps(broken))
    assert bench_fleet.main([str(path)]) == 1
    assert "failing_config_no_failures FAIL" in " ".join(capsys.readouterr().out.split())


def with_streams(phase, requests, failed, failures=(), retries=0):
    return dict(phase, streams=stream(requests, failed, 12.0, 19.0, failures), gateway_retries=retries)


STREAMED = dict(
    MEASURED,
    steady=with_streams(MEASURED["steady"], 4, 0),
    rollout_through_gateway=with_streams(MEASURED["rollout_through_gateway"], 20, 0, retries=0),
    plain_restart_without_drain=with_streams(MEASURED["plain_restart_without_drain"], 18, 3,
                                             [{"status": 200, "error": "stream cut after 310 chunks"}], retries=41),
)


def test_streams_cut_by_the_plain_restart_and_none_by_the_rollout_pass(capsys, tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps(STREAMED))
    assert bench_fleet.main([str(path)]) == 0
    summary = bench_fleet.summarise(STREAMED)
    assert summary["verdicts"]["drain_saves_streams"] is True
    assert summary["gateway_retries"]["plain_restart_without_drain"] == 41
    assert summary["plain_stream_failures_sample"] == ["stream cut after 310 chunks"]
    out = " ".join(capsys.readouterr().out.split())
    assert "plain restart, no drain, streams 18 requests 3 failed" in out


def test_a_stream_cut_in_the_rollout_fails_it():
    cut = dict(STREAMED, rollout_through_gateway=with_streams(
        MEASURED["rollout_through_gateway"], 20, 1, [{"status": 200, "error": "stream cut after 5 chunks"}]))
    verdicts = bench_fleet.summarise(cut)["verdicts"]
    assert verdicts["rollout_no_failures"] is False and verdicts["drain_saves_streams"] is False


def test_a_workload_that_does_not_tell_the_paths_apart_fails_the_drain_verdict():
    equal = dict(STREAMED, plain_restart_without_drain=with_streams(MEASURED["plain_restart_without_drain"], 18, 0))
    assert bench_fleet.summarise(equal)["verdicts"]["drain_saves_streams"] is False
    no_rollout_streams = dict(STREAMED, rollout_through_gateway=with_streams(MEASURED["rollout_through_gateway"], 0, 0))
    verdicts = bench_fleet.summarise(no_rollout_streams)["verdicts"]
    assert verdicts["drain_saves_streams"] is False and verdicts["rollout_no_failures"] is False
