# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Prometheus targets from the inventory: who is scraped where, with which labels, and what is refused."""

from __future__ import annotations

import os

import yaml
from ansible_collections.llmserve.sglang.plugins.plugin_utils import monitoring_targets as mt

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


def _defaults(role):
    with open(os.path.join(ROOT, "roles", role, "defaults", "main.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _cfg(hosts, groups, prometheus="prom-01", prom_address="10.0.9.1", jobs=None):
    return {"prometheus": {"name": prometheus, "ansible_host": prom_address},
            "servers_group": "sglang_servers", "gateways_group": "sglang_gateways",
            "jobs": jobs or {"sglang": "sglang", "gateway": "sglang_gateway", "node": "node"},
            "groups": groups, "hosts": hosts}


def _server(address, **extra):
    return dict({"sglang_server_host": address, "sglang_server_metrics": True,
                 "sglang_model_repo": "Qwen/Qwen3.5-122B-A10B", "sglang_model_revision": "a" * 40,
                 "sglang_server_served_model_name": "qwen"}, **extra)


def test_defaults_follow_the_roles():
    server, gateway, monitoring = _defaults("sglang_server"), _defaults("sglang_gateway"), _defaults("sglang_monitoring")
    assert (mt.SERVER_DEFAULT_HOST, mt.SERVER_DEFAULT_PORT) == (server["sglang_server_host"],
                                                                server["sglang_server_port"])
    assert (mt.GATEWAY_DEFAULT_HOST, mt.GATEWAY_DEFAULT_METRICS_PORT, mt.GATEWAY_DEFAULT_WORKERS_GROUP) == (
        gateway["sglang_gateway_host"], gateway["sglang_gateway_metrics_port"], gateway["sglang_gateway_workers_group"])
    assert gateway["sglang_gateway_metrics_host"] == ""
    assert mt.NODE_EXPORTER_DEFAULT_PORT == monitoring["sglang_monitoring_node_exporter_port"]
    assert "'/var/lib/llmserve-models'" in server["sglang_server_model_path"]
    assert mt.MODEL_DEFAULT_DIR == "/var/lib/llmserve-models"


def test_single_server_with_labels():
    result = mt.build_targets(_cfg({"gpu-node-01": _server("10.0.0.11", sglang_server_port=30001)},
                                   {"sglang_servers": ["gpu-node-01"]}))
    assert result["errors"] == [] and result["warnings"] == []
    assert result["targets"] == {
        "sglang": [{"targets": ["10.0.0.11:30001"],
                    "labels": {"host": "gpu-node-01", "model": "Qwen/Qwen3.5-122B-A10B", "served_model_name": "qwen",
                               "rank": "0"}}],
        "sglang_gateway": [], "node": []}
    assert result["counts"]["servers"] == 1


def test_served_model_name_defaults_to_the_path_sglang_loads():
    hosts = {"a": _server("10.0.0.1", sglang_server_served_model_name=""),
             "b": _server("10.0.0.2", sglang_server_served_model_name="", sglang_model_dir="/srv/models"),
             "c": {"sglang_server_host": "10.0.0.3", "sglang_server_metrics": True,
                   "sglang_server_model_path": "/models/llama"}}
    result = mt.build_targets(_cfg(hosts, {"sglang_servers": ["a", "b", "c"]}))
    labels = {entry["labels"]["host"]: entry["labels"] for entry in result["targets"]["sglang"]}
    assert labels["a"]["served_model_name"] == "/var/lib/llmserve-models/Qwen--Qwen3.5-122B-A10B/" + "a" * 40
    assert labels["b"]["served_model_name"] == "/srv/models/Qwen--Qwen3.5-122B-A10B/" + "a" * 40
    assert labels["c"]["model"] == labels["c"]["served_model_name"] == "/models/llama"


def test_multi_node_server_only_rank_0_is_an_sglang_target_and_every_rank_has_its_node_exporter():
    node = {"sglang_server_node_group": "sglang_qwen3_235b", "sglang_monitoring_node_exporter": True}
    hosts = {"gpu-node-02": _server("0.0.0.0", ansible_host="10.0.0.2", **node),
             "gpu-node-03": _server("0.0.0.0", ansible_host="10.0.0.3", **node),
             # an explicit rank wins over the sorted position
             "gpu-node-04": _server("0.0.0.0", ansible_host="10.0.0.4", sglang_server_node_rank=0,
                                    sglang_server_node_group="pair"),
             "gpu-node-05": _server("0.0.0.0", ansible_host="10.0.0.5", sglang_server_node_rank="1",
                                    sglang_server_node_group="pair", sglang_server_metrics=False)}
    groups = {"sglang_servers": sorted(hosts), "sglang_qwen3_235b": ["gpu-node-03", "gpu-node-02"],
              "pair": ["gpu-node-05", "gpu-node-04"]}
    result = mt.build_targets(_cfg(hosts, groups))
    # a non-zero rank's metrics switch does not matter: it is never scraped
    assert result["errors"] == []
    assert [entry["targets"] for entry in result["targets"]["sglang"]] == [["10.0.0.2:30000"], ["10.0.0.4:30000"]]
    assert result["targets"]["sglang"][0]["labels"] == {
        "host": "gpu-node-02", "model": "Qwen/Qwen3.5-122B-A10B", "served_model_name": "qwen",
        "node_group": "sglang_qwen3_235b", "rank": "0"}
    assert [(entry["targets"], entry["labels"]["rank"]) for entry in result["targets"]["node"]] == [
        (["10.0.0.2:9100"], "0"), (["10.0.0.3:9100"], "1")]
    assert result["counts"]["other_ranks"] == 2


def test_a_multi_node_server_without_rank_0_is_an_error():
    hosts = {"n1": _server("10.0.0.1", sglang_server_node_group="g", sglang_server_node_rank=1),
             "n2": _server("10.0.0.2", sglang_server_node_group="g", sglang_server_node_rank=2)}
    result = mt.build_targets(_cfg(hosts, {"sglang_servers": ["n1", "n2"], "g": ["n1", "n2"]}))
    assert result["errors"] == ["hostvars['n1'].sglang_server_node_rank: no node of the multi-node server 'g' (n1, n2) "
                                "has rank 0, so the server's /metrics is not scraped"]


def test_gateway_targets_and_the_gateway_label_of_its_workers():
    hosts = {"w1": _server("10.0.0.1"), "w2": _server("10.0.0.2"), "w3": _server("10.0.0.3"),
             "gw-a": {"sglang_gateway_host": "10.0.1.1", "ansible_host": "10.0.1.1"},
             "gw-b": {"sglang_gateway_host": "0.0.0.0", "sglang_gateway_metrics_host": "10.0.1.2",
                      "sglang_gateway_metrics_port": "9200", "sglang_gateway_workers_group": "pool"},
             "gw-c": {"sglang_gateway_host": "::", "ansible_host": "gw-c.example.internal",
                      "sglang_gateway_workers_group": "pool"}}
    groups = {"sglang_servers": ["w1", "w2", "w3"], "pool": ["w2", "w3"], "sglang_gateways": ["gw-a", "gw-b", "gw-c"]}
    result = mt.build_targets(_cfg(hosts, groups))
    assert result["errors"] == []
    assert result["targets"]["sglang_gateway"] == [
        {"targets": ["10.0.1.1:29000"], "labels": {"host": "gw-a", "gateway": "gw-a"}},
        {"targets": ["10.0.1.2:9200"], "labels": {"host": "gw-b", "gateway": "gw-b"}},
        {"targets": ["gw-c.example.internal:29000"], "labels": {"host": "gw-c", "gateway": "gw-c"}}]
    gateways = {entry["labels"]["host"]: entry["labels"]["gateway"] for entry in result["targets"]["sglang"]}
    assert gateways == {"w1": "gw-a", "w2": "gw-a,gw-b,gw-c", "w3": "gw-a,gw-b,gw-c"}


def test_node_exporters_only_where_the_inventory_says_so():
    hosts = {"w1": _server("10.0.0.1", ansible_host="10.0.0.1", sglang_monitoring_node_exporter=True),
             "w2": _server("10.0.0.2", ansible_host="10.0.0.2"),
             "w3": _server("10.0.0.3", ansible_host="10.0.0.3", sglang_monitoring_node_exporter="no"),
             "gw": {"sglang_gateway_host": "10.0.1.1", "sglang_monitoring_node_exporter": "yes",
                    "sglang_monitoring_node_exporter_port": 9101},
             "other": {"sglang_monitoring_node_exporter": True, "ansible_host": "other.example.internal"}}
    groups = {"sglang_servers": ["w1", "w2", "w3"], "sglang_gateways": ["gw"]}
    result = mt.build_targets(_cfg(hosts, groups))
    assert result["errors"] == []
    assert result["targets"]["node"] == [
        {"targets": ["gw:9101"], "labels": {"host": "gw", "gateway": "gw"}},
        {"targets": ["other.example.internal:9100"], "labels": {"host": "other"}},
        {"targets": ["10.0.0.1:9100"], "labels": {"host": "w1", "model": "Qwen/Qwen3.5-122B-A10B",
                                                  "served_model_name": "qwen", "rank": "0", "gateway": "gw"}}]


def test_the_hosts_that_get_the_roles_node_exporter_are_targets_unless_they_say_otherwise():
    hosts = {"w1": _server("10.0.0.1", ansible_host="10.0.0.1"),
             "w2": _server("10.0.0.2", ansible_host="10.0.0.2", sglang_monitoring_node_exporter=False),
             "w3": _server("10.0.0.3", ansible_host="10.0.0.3"),
             "w4": _server("10.0.0.4", ansible_host="10.0.0.4", sglang_monitoring_node_exporter=True)}
    groups = {"sglang_servers": ["w1", "w2", "w3", "w4"], "sglang_node_exporters": ["w1", "w2"]}
    cfg = dict(_cfg(hosts, groups), node_exporters_group="sglang_node_exporters")
    result = mt.build_targets(cfg)
    assert result["errors"] == []
    assert [entry["targets"] for entry in result["targets"]["node"]] == [["10.0.0.1:9100"], ["10.0.0.4:9100"]]
    # without the group in the configuration, only the host variable counts
    assert [entry["targets"] for entry in mt.build_targets(_cfg(hosts, groups))["targets"]["node"]] == [
        ["10.0.0.4:9100"]]


def test_tls_servers_are_scraped_over_https_and_ipv6_is_bracketed():
    hosts = {"w1": _server("::", ansible_host="fd00::11", sglang_server_args={"ssl-certfile": "/etc/s/t.crt",
                                                                              "ssl_keyfile": "/etc/s/t.key"})}
    result = mt.build_targets(_cfg(hosts, {"sglang_servers": ["w1"]}))
    assert result["errors"] == []
    entry = result["targets"]["sglang"][0]
    assert entry["targets"] == ["[fd00::11]:30000"]
    assert entry["labels"]["__scheme__"] == "https"


def test_wildcard_servers_use_the_gathered_default_address():
    hosts = {"w4": _server("0.0.0.0", ipv4="10.0.0.4"), "w6": _server("::", ipv4="10.0.0.6", ipv6="fd00::6"),
             "w7": _server("0.0.0.0")}
    result = mt.build_targets(_cfg(hosts, {"sglang_servers": ["w4", "w6", "w7"]}))
    assert [entry["targets"][0] for entry in result["targets"]["sglang"]] == ["10.0.0.4:30000", "[fd00::6]:30000"]
    assert result["errors"] == [
        "hostvars['w7'].sglang_server_host: w7 binds 0.0.0.0, so Prometheus needs an address to reach it: set its "
        "ansible_host, or gather its facts (default_ipv4) in the same play (playbooks/monitoring.yml does)"]


def test_a_server_with_metrics_off_is_refused_unless_left_out():
    hosts = {"w1": _server("10.0.0.1", sglang_server_metrics=False),
             "w2": _server("10.0.0.2", sglang_server_metrics=False, sglang_server_args={"enable-metrics": True}),
             "w3": {"sglang_server_host": "10.0.0.3", "sglang_monitoring_scrape": False}}
    result = mt.build_targets(_cfg(hosts, {"sglang_servers": ["w1", "w2", "w3"]}))
    assert result["errors"] == [
        "hostvars['w1'].sglang_server_metrics: is false, so SGLang on w1 serves no /metrics (404) and "
        "SGLangWorkerDown would fire for it: set it to true (the sglang_server role adds --enable-metrics), or set "
        "sglang_monitoring_scrape: false on the host to leave it unmonitored"]
    assert [entry["labels"]["host"] for entry in result["targets"]["sglang"]] == ["w2"]
    assert result["counts"]["not_scraped"] == 1


def test_every_server_left_out_is_a_warning():
    result = mt.build_targets(_cfg({"w1": {"sglang_monitoring_scrape": "false"}}, {"sglang_servers": ["w1"]}))
    assert result["errors"] == []
    assert result["warnings"] == ["sglang_monitoring_scrape: every SGLang server of 'sglang_servers' is left out "
                                  "(sglang_monitoring_scrape: false): Prometheus scrapes none"]


def test_no_servers_is_an_error_naming_the_group_variable():
    for groups in ({}, {"sglang_servers": []}):
        result = mt.build_targets(_cfg({}, groups))
        assert result["errors"] == ["sglang_monitoring_servers_group: the inventory group 'sglang_servers' has no "
                                    "hosts (or does not exist): there is no SGLang server to monitor"]


def test_duplicate_targets_are_refused_naming_both_hosts():
    hosts = {"w1": _server("10.0.0.1"), "w2": _server("0.0.0.0", ansible_host="10.0.0.1"),
             "gw": {"sglang_gateway_host": "10.0.0.1", "sglang_gateway_metrics_port": 30000}}
    result = mt.build_targets(_cfg(hosts, {"sglang_servers": ["w1", "w2"], "sglang_gateways": ["gw"]}))
    assert result["errors"] == [
        "hostvars['w2'].sglang_server_port: 10.0.0.1:30000 of w2 (job sglang) is the same target as "
        "hostvars['w1'].sglang_server_port of w1 (job sglang): each target must be scraped once; give them "
        "different addresses or ports",
        "hostvars['gw'].sglang_gateway_metrics_port: 10.0.0.1:30000 of gw (job sglang_gateway) is the same target "
        "as hostvars['w1'].sglang_server_port of w1 (job sglang): each target must be scraped once; give them "
        "different addresses or ports"]
    assert len(result["targets"]["sglang"]) == 1 and result["targets"]["sglang_gateway"] == []


def test_loopback_listeners_only_from_prometheus_on_the_same_host():
    # the sglang_server and sglang_gateway defaults bind 127.0.0.1
    hosts = {"w1": {"sglang_server_metrics": True}, "gw": {}}
    groups = {"sglang_servers": ["w1"], "sglang_gateways": ["gw"]}
    result = mt.build_targets(_cfg(hosts, groups))
    assert result["errors"] == [
        "hostvars['w1'].sglang_server_host: w1 is reached at the loopback address 127.0.0.1, which Prometheus on "
        "prom-01 (another host) cannot reach; bind it to the host's network address, or run Prometheus on w1",
        "hostvars['gw'].sglang_gateway_host: gw is reached at the loopback address 127.0.0.1, which Prometheus on "
        "prom-01 (another host) cannot reach; bind it to the host's network address, or run Prometheus on gw"]
    # Prometheus on the server's host (same inventory name, or the same ansible_host)
    same = mt.build_targets(_cfg({"w1": {"sglang_server_metrics": True, "ansible_host": "10.0.9.1"}},
                                 {"sglang_servers": ["w1"]}))
    assert same["errors"] == [] and same["targets"]["sglang"][0]["targets"] == ["127.0.0.1:30000"]
    own = mt.build_targets(_cfg({"w1": {"sglang_server_metrics": True}}, {"sglang_servers": ["w1"]},
                                prometheus="w1", prom_address=""))
    assert own["errors"] == []


def test_bad_values_name_their_variable():
    hosts = {"w1": _server("gpu-node-01", sglang_server_port=70000),
             "w2": _server("10.0.0.2", sglang_server_metrics="maybe", sglang_monitoring_node_exporter=True,
                           ansible_host="bad host", sglang_monitoring_node_exporter_port="x"),
             "w3": _server("10.0.0.3", sglang_server_node_group="g", sglang_server_node_rank=-1),
             "w4": _server("10.0.0.4", sglang_server_served_model_name="a\nb")}
    result = mt.build_targets(_cfg(hosts, {"sglang_servers": ["w1", "w2", "w3", "w4"]},
                                   jobs={"sglang": "sglang", "gateway": "sglang", "node": "node"}))
    text = "\n".join(result["errors"])
    for message in (
            "sglang_monitoring_gateway_job: must differ from sglang_monitoring_sglang_job (both are 'sglang')",
            "hostvars['w1'].sglang_server_host: must be an IP address (the listener binds it), got 'gpu-node-01'",
            "hostvars['w1'].sglang_server_port: must be an integer between 1 and 65535, got int 70000",
            "hostvars['w2'].sglang_server_metrics: must be true or false, got 'maybe'",
            "hostvars['w2'].ansible_host: must be a host name or an IP address (Prometheus scrapes w2 there), "
            "got 'bad host'",
            "hostvars['w3'].sglang_server_node_rank: must be an integer >= 0, got int -1",
            "hostvars['w4'].sglang_server_served_model_name: contains a control character (LF at offset 1)"):
        assert message in text, message


def test_no_api_key_is_read_or_written():
    # SGLang 0.5.23 serves /metrics without the API key: the targets never carry one, whatever the inventory holds
    hosts = {"w1": _server("10.0.0.1", sglang_server_api_key="sk-secret-value-1234")}
    result = mt.build_targets(_cfg(hosts, {"sglang_servers": ["w1"]}))
    assert result["errors"] == [] and "sk-secret" not in repr(result)
