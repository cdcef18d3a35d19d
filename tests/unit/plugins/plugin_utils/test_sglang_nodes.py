# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Multi-node server groups: the inventory contract and the rules (plugins/plugin_utils/sglang_nodes.py)."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args import (
    SGLangConfigError,
    render_server_argv,
    validate_server_config,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_nodes import (
    node_group_plan,
    node_group_problems,
)

GROUP = "mn"


def _facts(address, device="ens5"):
    return {"default_ipv4": {"address": address, "interface": device},
            device: {"device": device, "ipv4": {"address": address}},
            "lo": {"device": "lo", "ipv4": {"address": "127.0.0.1"}}}


def _node(name, address, **extra):
    node = {
        "inventory_hostname": name,
        "ansible_host": "%s.example.internal" % name,
        "ansible_facts": _facts(address),
        "sglang_server_node_group": GROUP,
        "sglang_server_node_rank": None,
        "sglang_server_dist_init_host": "",
        "sglang_server_dist_init_port": 25000,
        "sglang_server_node_ifname": "",
        "sglang_server_version": "0.5.23",
        "sglang_server_model_path": "/models/big",
        "sglang_server_tp_size": 8,
        "sglang_server_speculative": {},
        "sglang_server_args": {"mem_fraction_static": 0.85},
        "sglang_server_gpus": [0, 1, 2, 3],
        "sglang_server_port": 30000,
    }
    node.update(("sglang_server_" + k, v) for k, v in extra.items())
    return node


def _group(**per_host):
    nodes = {"gpu-b": _node("gpu-b", "10.0.0.12"), "gpu-a": _node("gpu-a", "10.0.0.11")}
    for name, extra in per_host.items():
        nodes[name.replace("_", "-")].update(("sglang_server_" + k, v) for k, v in extra.items())
    return nodes


def _one(errors, variable, *words):
    matching = [e for e in errors if e.startswith(variable)]
    assert matching, errors
    assert any(all(w in e for w in words) for e in matching), errors


def test_good_group_plan():
    plan = node_group_plan(_group(), GROUP)
    peers = ["10.0.0.11", "10.0.0.12"]
    assert plan == {
        "gpu-a": {"nnodes": 2, "node_rank": 0, "dist_init_addr": "10.0.0.11:25000", "node_ifname": "ens5",
                  "node_firewall": {"enabled": True, "ports": ["25000"], "sources": peers}},
        "gpu-b": {"nnodes": 2, "node_rank": 1, "dist_init_addr": "10.0.0.11:25000", "node_ifname": "ens5",
                  "node_firewall": {"enabled": True, "ports": ["30000"], "sources": peers}},
    }


def test_list_input_and_group_from_nodes():
    assert node_group_plan(list(_group().values()))["gpu-b"]["node_rank"] == 1


def test_explicit_ranks_host_port_ifname_and_ipv6():
    nodes = _group(gpu_a={"node_rank": 1, "node_ifname": "ib0"},
                   gpu_b={"node_rank": 0, "node_ifname": "ib0"})
    for node in nodes.values():
        node["sglang_server_dist_init_host"] = "fd00::2"
        node["sglang_server_dist_init_port"] = 5000
    plan = node_group_plan(nodes, GROUP)
    assert plan["gpu-b"] == {"nnodes": 2, "node_rank": 0, "dist_init_addr": "[fd00::2]:5000", "node_ifname": "ib0",
                             "node_firewall": {"enabled": True, "ports": ["5000"],
                                               "sources": ["10.0.0.11", "10.0.0.12", "fd00::2"]}}
    assert plan["gpu-a"]["node_rank"] == 1


def test_ansible_host_ip_is_the_address():
    nodes = _group()
    nodes["gpu-a"]["ansible_host"] = "192.168.7.1"
    nodes["gpu-a"]["ansible_facts"]["ib0"] = {"device": "ib0", "ipv4": {"address": "192.168.7.1"}}
    plan = node_group_plan(nodes, GROUP)
    assert plan["gpu-a"]["dist_init_addr"] == "192.168.7.1:25000" and plan["gpu-a"]["node_ifname"] == "ib0"


# -- the rendezvous firewall (issue 24, finding 6) ------------------------------------------------------

def test_firewall_sources_are_every_nodes_addresses_on_its_interface():
    """The nodes talk over a fabric (ib0) that is not the network of their default address: the sources are the
    addresses of both networks, never a link-local one."""
    nodes = _group(gpu_a={"node_ifname": "ib0", "dist_init_host": "10.20.0.2"},
                   gpu_b={"node_ifname": "ib0", "dist_init_host": "10.20.0.2"})
    nodes["gpu-a"]["ansible_facts"]["ib0"] = {"device": "ib0", "ipv4": {"address": "10.20.0.2"},
                                              "ipv6": [{"address": "fe80::1", "prefix": "64"},
                                                       {"address": "fd20::2", "prefix": "64"}]}
    nodes["gpu-b"]["ansible_facts"]["ib0"] = {"device": "ib0", "ipv4": {"address": "10.20.0.3"},
                                              "ipv4_secondaries": [{"address": "10.20.0.33"}]}
    plan = node_group_plan(nodes, GROUP)
    expected = ["10.0.0.11", "10.0.0.12", "10.20.0.2", "10.20.0.3", "10.20.0.33", "fd20::2"]
    assert plan["gpu-a"]["node_firewall"]["sources"] == expected
    assert plan["gpu-b"]["node_firewall"]["sources"] == expected


def test_firewall_ports_with_data_parallel_attention():
    """Rank 0 also guards the ports SGLang derives from the rendezvous port: six, plus one per further DP rank."""
    for args, last in (({"attn_dp_size": 2}, 25007), ({"enable_dp_attention": True, "dp_size": 4}, 25009),
                       ({"enable_dp_attention": True}, 25013)):
        nodes = _group(gpu_a={"args": dict(args)}, gpu_b={"args": dict(args)})
        plan = node_group_plan(nodes, GROUP)
        assert plan["gpu-a"]["node_firewall"]["ports"] == ["25000", "25001-%d" % last], args
        assert plan["gpu-b"]["node_firewall"]["ports"] == ["30000"]


def test_firewall_extra_sources_and_switch():
    nodes = _group(gpu_a={"node_firewall_sources": ["192.168.50.0/24", "192.168.60.7"]},
                   gpu_b={"node_firewall": False})
    plan = node_group_plan(nodes, GROUP)
    assert plan["gpu-a"]["node_firewall"] == {"enabled": True, "ports": ["25000"],
                                              "sources": ["10.0.0.11", "10.0.0.12", "192.168.50.0/24",
                                                          "192.168.60.7"]}
    assert plan["gpu-b"]["node_firewall"]["enabled"] is False


@pytest.mark.parametrize("sources, words", [
    (["10.0.0.0/33"], ["'10.0.0.0/33' is not an IP address or network"]),
    (["0.0.0.0/0"], ["allows every address", "sglang_server_node_firewall: false"]),
    ("10.0.0.1", ["must be a list"]),
])
def test_firewall_bad_sources(sources, words):
    _one(node_group_problems(_group(gpu_a={"node_firewall_sources": sources}), GROUP),
         "sglang_server_node_firewall_sources (host gpu-a)", *words)


def test_firewall_needs_every_nodes_address():
    nodes = _group(gpu_a={"node_ifname": "ens5"}, gpu_b={"node_ifname": "ens5"})
    nodes["gpu-b"]["ansible_facts"] = {}
    errors = node_group_problems(nodes, GROUP)
    assert errors and all("cannot tell which addresses node(s) gpu-b" in e for e in errors), errors
    assert "sglang_server_node_firewall: false" in errors[0]
    for node in nodes.values():
        node["sglang_server_node_firewall"] = False
    assert node_group_problems(nodes, GROUP) == []


# -- held-out style bad inputs: each names the variable and the rule --------------------------------------

def test_mismatched_tp():
    _one(node_group_problems(_group(gpu_b={"tp_size": 4}), GROUP), "sglang_server_tp_size", "differs", "gpu-b: 4")


def test_mismatched_model_version_spec_args():
    errors = node_group_problems(_group(gpu_b={"model_path": "/models/other", "version": "0.5.22",
                                               "speculative": {"algorithm": "NEXTN"},
                                               "args": {"mem_fraction_static": 0.8, "admin_api_key": "sekrit"}}),
                                 GROUP)
    for variable in ("sglang_server_model_path", "sglang_server_version", "sglang_server_speculative",
                     "sglang_server_args"):
        _one(errors, variable, "differs")
    _one(errors, "sglang_server_args", "admin_api_key", "mem_fraction_static")
    assert not any("sekrit" in e for e in errors)


def test_duplicate_rank():
    _one(node_group_problems(_group(gpu_a={"node_rank": 1}, gpu_b={"node_rank": 1}), GROUP),
         "sglang_server_node_rank", "rank 1", "more than one", "unique")


def test_rank_gap():
    nodes = _group(gpu_a={"node_rank": 0}, gpu_b={"node_rank": 2})
    nodes["gpu-c"] = _node("gpu-c", "10.0.0.13", node_rank=3)
    nodes["gpu-a"]["sglang_server_tp_size"] = nodes["gpu-b"]["sglang_server_tp_size"] = 9
    nodes["gpu-c"]["sglang_server_tp_size"] = 9
    errors = node_group_problems(nodes, GROUP)
    _one(errors, "sglang_server_node_rank", "without gaps", "missing 1")


def test_missing_rank_0():
    _one(node_group_problems(_group(gpu_a={"node_rank": 1}, gpu_b={"node_rank": 2}), GROUP),
         "sglang_server_node_rank", "no rank 0")


def test_rendezvous_port_is_http_port():
    nodes = _group()
    for node in nodes.values():
        node["sglang_server_dist_init_port"] = 30000
    _one(node_group_problems(nodes, GROUP), "sglang_server_dist_init_port", "HTTP port", "rank 0")


def test_rendezvous_port_used_by_another_flag():
    nodes = _group()
    for node in nodes.values():
        node["sglang_server_args"] = {"nccl_port": 25000}
    _one(node_group_problems(nodes, GROUP), "sglang_server_dist_init_port", "sglang_server_args.nccl_port")


def test_rendezvous_ports_with_dp_attention():
    nodes = _group()
    for node in nodes.values():
        node["sglang_server_args"] = {"enable_dp_attention": True}
        node["sglang_server_dist_init_port"] = 29997
    _one(node_group_problems(nodes, GROUP), "sglang_server_dist_init_port", "data-parallel attention", "30000")


def test_tp_not_multiple_of_nnodes():
    nodes = _group(gpu_a={"tp_size": 7, "gpus": [0, 1, 2]}, gpu_b={"tp_size": 7, "gpus": [0, 1, 2]})
    _one(node_group_problems(nodes, GROUP), "sglang_server_tp_size", "not a multiple", "(2)")


def test_wrong_gpu_count_per_node():
    _one(node_group_problems(_group(gpu_b={"gpus": [0, 1]}), GROUP), "sglang_server_gpus (host gpu-b)",
         "2 GPU(s)", "8 / 2 = 4")


def test_node_not_in_run():
    nodes = _group()
    nodes["gpu-b"] = {}
    _one(node_group_problems(nodes, GROUP), "sglang_server_node_group", "gpu-b", "not part of this run")


def test_host_names_another_group_and_single_host_group():
    _one(node_group_problems(_group(gpu_b={"node_group": "other"}), GROUP),
         "sglang_server_node_group (host gpu-b)", "'other'")
    _one(node_group_problems({"gpu-a": _node("gpu-a", "10.0.0.11")}, GROUP), "sglang_server_node_group",
         "only one host")
    _one(node_group_problems({}, GROUP), "sglang_server_node_group", "no inventory group")


def test_bad_rank_host_port_ifname():
    _one(node_group_problems(_group(gpu_a={"node_rank": -1}), GROUP), "sglang_server_node_rank (host gpu-a)", ">= 0")
    nodes = _group()
    for node in nodes.values():
        node["sglang_server_dist_init_host"] = "rank0.example"
    _one(node_group_problems(nodes, GROUP), "sglang_server_dist_init_host", "must be an IP address")
    nodes = _group()
    for node in nodes.values():
        node["sglang_server_dist_init_port"] = 70000
    _one(node_group_problems(nodes, GROUP), "sglang_server_dist_init_port", "between 1 and 65535")
    _one(node_group_problems(_group(gpu_b={"node_ifname": "eth0/1"}), GROUP), "sglang_server_node_ifname (host gpu-b)",
         "interface name")


def test_dist_init_host_disagrees_and_loopback_across_hosts():
    _one(node_group_problems(_group(gpu_b={"dist_init_host": "10.0.0.99"}), GROUP),
         "sglang_server_dist_init_host", "differs")
    nodes = _group()
    for node in nodes.values():
        node["sglang_server_dist_init_host"] = "127.0.0.1"
    _one(node_group_problems(nodes, GROUP), "sglang_server_dist_init_host", "cannot be reached")


def test_no_address_and_no_interface():
    nodes = _group()
    nodes["gpu-a"]["ansible_facts"] = {}
    _one(node_group_problems(nodes, GROUP), "sglang_server_dist_init_host", "rank 0 (gpu-a) has no IP address")
    nodes = _group()
    nodes["gpu-b"]["ansible_facts"] = {"default_ipv4": {"address": "10.0.0.12"}}
    _one(node_group_problems(nodes, GROUP), "sglang_server_node_ifname (host gpu-b)", "no interface")


def test_plan_raises_with_all_messages():
    with pytest.raises(SGLangConfigError) as info:
        node_group_plan(_group(gpu_b={"tp_size": 4}), GROUP)
    assert "sglang_server_tp_size" in str(info.value)


# -- the per-node rules of the engine (sglang_args) ---------------------------------------------------------

NODE = {"model_path": "/models/big", "tp_size": 8, "gpus": [0, 1, 2, 3], "nnodes": 2, "node_rank": 0,
        "dist_init_addr": "10.0.0.11:25000", "node_ifname": "ens5"}


def test_render_node():
    result = render_server_argv(NODE)
    assert result["argv"] == ["--model-path", "/models/big", "--tp-size", "8", "--nnodes", "2", "--node-rank", "0",
                              "--dist-init-addr", "10.0.0.11:25000"]
    assert result["env"] == {"CUDA_VISIBLE_DEVICES": "0,1,2,3", "GLOO_SOCKET_IFNAME": "ens5",
                             "NCCL_SOCKET_IFNAME": "ens5"}
    single = render_server_argv({"model_path": "/m"})
    assert "--nnodes" not in single["argv"] and "NCCL_SOCKET_IFNAME" not in single["env"]


@pytest.mark.parametrize("key, value", [("nnodes", 2), ("node_rank", 1), ("dist_init_addr", "10.0.0.1:5000"),
                                        ("nccl-init-addr", "10.0.0.1:5000"), ("--node-rank", 0)])
def test_args_cannot_set_multinode_flags(key, value):
    errors = validate_server_config(dict(NODE, args={key: value}))
    _one(errors, "sglang_server_args.%s" % key, "owned by the role", "sglang_server_node_group")


@pytest.mark.parametrize("change, variable, words", [
    ({"port": 25000}, "sglang_server_dist_init_port", ("HTTP port",)),
    ({"args": {"nccl_port": 25000}}, "sglang_server_dist_init_port", ("sglang_server_args.nccl_port",)),
    ({"dist_init_addr": "fd00::1:25000"}, "sglang_server_dist_init_host", ("brackets",)),
    ({"dist_init_addr": "node0:25000"}, "sglang_server_dist_init_host", ("not an IP address",)),
    ({"dist_init_addr": None}, "sglang_server_dist_init_host", ("required when nnodes > 1",)),
    ({"node_rank": 2}, "sglang_server_node_rank", ("below nnodes",)),
    ({"node_rank": -1}, "sglang_server_node_rank", (">= 0",)),
    ({"gpus": [0, 1]}, "sglang_server_gpus", ("2 GPU(s)",)),
    ({"tp_size": 7, "gpus": []}, "sglang_server_node_group", ("divisible by nnodes",)),
    ({"node_ifname": "a b"}, "sglang_server_node_ifname", ("interface name",)),
    ({"env": {"NCCL_SOCKET_IFNAME": "eth1"}}, "sglang_server_env.NCCL_SOCKET_IFNAME", ("sglang_server_node_ifname",)),
])
def test_node_rules(change, variable, words):
    _one(validate_server_config(dict(copy.deepcopy(NODE), **change)), variable, *words)


def test_rank_1_may_share_the_rendezvous_port_number_with_its_http_port():
    # only rank 0 binds the rendezvous port
    assert validate_server_config(dict(NODE, node_rank=1, port=25000)) == []
