"""The window bench's pure parts: the host names and their interleaved order, the inventory it writes (two pools,
two gateways, the slow worker), the extra vars of each way, the window sizes and the change time from the callback's
play starts."""

import importlib.util
import json
import os

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "..", "..", "tools", "bench")
SPEC = importlib.util.spec_from_file_location("bench_window", os.path.join(BENCH, "bench_window.py"))
bench_window = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench_window)


def test_a_lockstep_batch_takes_as_many_of_each_pool():
    workers, gateways, order = bench_window.names("p")
    assert workers == {"a": ["p-a1", "p-a2", "p-a3", "p-a4"], "b": ["p-b1", "p-b2", "p-b3", "p-b4"]}
    assert gateways == {"a": "p-gw-a", "b": "p-gw-b"}
    assert order == ["p-a1", "p-b1", "p-a2", "p-b2", "p-a3", "p-b3", "p-a4", "p-b4"]
    for size in (2, 4):
        for start in range(0, 8, size):
            batch = order[start:start + size]
            assert sum(h.startswith("p-a") for h in batch) == sum(h.startswith("p-b") for h in batch) == size // 2


def test_the_inventory_has_two_pools_and_one_slow_worker(tmp_path):
    directory = bench_window.write_inventory(str(tmp_path / "inv"), "p", 40)
    with open(os.path.join(directory, "hosts.yml")) as handle:
        hosts = yaml.safe_load(handle)["all"]["children"]
    assert list(hosts["sglang_servers"]["hosts"]) == bench_window.names("p")[2]
    assert hosts["sglang_gateways"]["hosts"] == {"p-gw-a": {"sglang_gateway_workers_group": "pool_a"},
                                                 "p-gw-b": {"sglang_gateway_workers_group": "pool_b"}}
    assert list(hosts["pool_a"]["hosts"]) == ["p-a1", "p-a2", "p-a3", "p-a4"]
    with open(os.path.join(directory, "host_vars", "p-a1.yml")) as handle:
        assert yaml.safe_load(handle) == {"bench_load_seconds": 40}
    with open(os.path.join(directory, "group_vars", "sglang_servers.yml")) as handle:
        servers = yaml.safe_load(handle)
    # every round restarts every worker: the round number is in the unit's environment
    assert servers["sglang_server_env"]["LLMSERVE_BENCH_ROUND"] == "{{ bench_round }}"
    assert servers["sglang_server_env"]["LLMSERVE_STANDIN_LOAD_SECONDS"] == "{{ bench_load_seconds }}"
    assert servers["sglang_server_host"] == "0.0.0.0" and servers["bench_load_seconds"] == 5
    assert servers["sglang_server_api_key"] == bench_window.WORKER_KEY


def test_the_ways_differ_only_in_the_window():
    assert bench_window.round_extra("lockstep", 3, 2) == [
        "-e", "bench_round=3", "-e", "sglang_rollout_max_unavailable=2", "-e", "sglang_rollout_serial=4"]
    assert bench_window.round_extra("window", 4, 1) == [
        "-e", "bench_round=4", "-e", "sglang_rollout_max_unavailable=1", "-e", "sglang_rollout_window=true"]
    assert bench_window.parse_windows("2,1,2") == [1, 2]
    for bad in ("", "0", "4", "x"):
        with pytest.raises(ValueError):
            bench_window.parse_windows(bad)


def test_the_change_time_runs_from_the_first_change_play_to_the_rejoin(tmp_path):
    times = tmp_path / "times.jsonl"
    records = [{"t": 100.0, "play": "Plan the SGLang deployment on every host at once", "outcome": "play_started"},
               {"t": 140.0, "play": "Change the servers behind the gateways, each as soon as its pools have room",
                "outcome": "play_started"},
               {"t": 141.0, "task": "x", "outcome": "ok"},
               {"t": 150.0, "play": "Change the hosts whose plan has changes, batch by batch", "outcome": "play_started"},
               {"t": 260.0, "play": "Change the hosts whose plan has changes, batch by batch", "outcome": "play_started"},
               {"t": 300.5, "play": "Put every serving worker back into the gateways", "outcome": "play_started"}]
    times.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert bench_window.change_seconds(str(times)) == 160.5
    times.write_text(json.dumps(records[0]) + "\n")
    assert bench_window.change_seconds(str(times)) is None


def test_pools_of_six_keep_the_batches_even_and_the_windows_below_the_pool(tmp_path):
    workers, dummy_gateways, order = bench_window.names("p", 6)
    assert workers["b"] == ["p-b%d" % i for i in range(1, 7)] and len(order) == 12
    for start in range(0, 12, 4):
        batch = order[start:start + 4]
        assert sum(h.startswith("p-a") for h in batch) == sum(h.startswith("p-b") for h in batch) == 2
    directory = bench_window.write_inventory(str(tmp_path / "inv"), "p", 60, 6)
    with open(os.path.join(directory, "hosts.yml")) as handle:
        hosts = yaml.safe_load(handle)["all"]["children"]
    assert list(hosts["pool_b"]["hosts"]) == workers["b"]
    assert list(hosts["sglang_servers"]["hosts"]) == order
    assert bench_window.parse_windows("2,5", 6) == [2, 5]
    with pytest.raises(ValueError):
        bench_window.parse_windows("6", 6)
