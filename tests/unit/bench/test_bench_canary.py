"""The canary bench's pure parts: the inventory it writes (bench_window's, with the token time a variable, metrics
on, the window and the gate's seconds) and the run report it reads the gate's verdict from."""

import importlib.util
import json
import os

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "..", "..", "tools", "bench")
SPEC = importlib.util.spec_from_file_location("bench_canary", os.path.join(BENCH, "bench_canary.py"))
bench_canary = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench_canary)


def test_the_inventory_makes_the_token_time_a_variable_and_turns_metrics_on(tmp_path):
    directory = bench_canary.write_inventory(str(tmp_path / "inv"), "p", 3, 45)
    with open(os.path.join(directory, "hosts.yml")) as handle:
        hosts = yaml.safe_load(handle)["all"]["children"]
    assert list(hosts["sglang_servers"]["hosts"]) == ["p-a1", "p-b1", "p-a2", "p-b2", "p-a3", "p-b3"]
    with open(os.path.join(directory, "group_vars", "sglang_servers.yml")) as handle:
        servers = yaml.safe_load(handle)
    assert servers["sglang_server_env"]["LLMSERVE_STANDIN_TOKEN_SECONDS"] == "{{ bench_token_seconds }}"
    assert servers["bench_token_seconds"] == bench_canary.GOOD_TOKEN
    assert servers["sglang_server_metrics"] is True and servers["sglang_rollout_window"] is True
    assert servers["sglang_rollout_canary_seconds"] == 45
    with open(os.path.join(directory, "group_vars", "sglang_gateways.yml")) as handle:
        assert yaml.safe_load(handle)["sglang_gateway_policy"] == "round_robin"
    # the canary is the first worker in inventory order, and nothing makes it slow to start
    with open(os.path.join(directory, "host_vars", "p-a1.yml")) as handle:
        assert yaml.safe_load(handle) == {"bench_load_seconds": 5}


def test_the_newest_run_report_is_read_by_host(tmp_path):
    for run, verdict in (("20261207-1", "fail"), ("20261207-2", "pass")):
        os.makedirs(str(tmp_path / run))
        with open(str(tmp_path / run / "report.json"), "w") as handle:
            json.dump({"run_id": run, "hosts": [{"host": "a1", "canary": {"verdict": verdict}}, {"host": "b1"}]}, handle)
    newest = bench_canary.newest_report(str(tmp_path))
    assert newest == {"a1": {"host": "a1", "canary": {"verdict": "pass"}}, "b1": {"host": "b1"}}


def test_the_test_hosts_mount_what_the_bench_made_and_none_without_it(tmp_path):
    class Args:
        fixtures, wheelhouse, models = str(tmp_path / "f"), str(tmp_path / "w"), str(tmp_path / "m")

    for path in ("f", "w", "w/smg", "m"):
        os.makedirs(str(tmp_path / path))
    dummy_workers, gateways, order = bench_canary.bench_window.names("p", 2)
    containers = bench_canary.bench_window.pool_containers(Args, gateways, order, "img", say=lambda text: None)
    assert [(name, image) for name, image, dummy_mounts in containers] == [
        ("p-gw-a", "img:bookworm"), ("p-gw-b", "img:bookworm"), ("p-a1", "img:trixie"), ("p-b1", "img:trixie"),
        ("p-a2", "img:trixie"), ("p-b2", "img:trixie")]
    assert containers[0][2] == [(str(tmp_path / "w" / "smg"), "/opt/llmserve-wheelhouse-smg")]
    said = []
    os.rmdir(str(tmp_path / "m"))
    assert bench_canary.bench_window.pool_containers(Args, gateways, order, "img", say=said.append) is None
    assert said == ["no %s (make bench makes the fixtures, the wheelhouses and the model)" % (tmp_path / "m")]
