# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``sglang_nodes`` on the rule engine against its class-based version before the port (commit ``BASELINE``): the
same problems in the same order, the same plan (or the same exception) for thousands of node groups from a seeded
generator: groups of one to four nodes, agreeing and disagreeing settings, ranks given, missing and duplicated,
rendezvous hosts and ports, inventory names and addresses, network facts, firewall switches and sources, interface
names, data-parallel attention, and many bad values of every variable. The baseline is read with ``git show``; the
test is skipped where that history is not there (a shallow clone or an unpacked tarball)."""

from __future__ import annotations

import copy


from ansible_collections.llmserve.sglang.plugins.plugin_utils import addresses, sglang_nodes
from ansible_collections.llmserve.sglang.tests.unit.differential import COUNT, SEED, baseline_fixture, matching_cases, pick

BASELINE = "3e44798"
GROUP = "mn"


baseline = baseline_fixture(BASELINE, "plugins/plugin_utils/sglang_nodes.py")


# -- the generator ---------------------------------------------------------------------------------------------

NAMES = ("gpu-a", "gpu-b", "gpu-c", "gpu-d", "node10", "Node-2")


def _args(rng, rate):
    args = {"mem_fraction_static": 0.85}
    attention = rng.random()
    if attention < 0.1:
        args["attn_dp_size"] = rng.choice((2, "3", 1))
    elif attention < 0.2:
        args["enable_dp_attention"] = True
        if rng.random() < 0.6:
            args[rng.choice(("dp_size", "--dp-size", "data_parallel_size"))] = rng.choice((2, 4, "8"))
    elif attention < 0.25:
        args[rng.choice(("--attn-dp-size", "attention-data-parallel-size"))] = rng.choice((2, 4))
    elif attention < 0.28:
        args["enable-dp-attention"] = rng.choice((True, "true"))
    if rng.random() < 0.25:
        args[rng.choice(("nccl_port", "--nccl-port", "grpc_port", "disaggregation_bootstrap_port"))] = rng.choice(
            (25003, "26000", 31000, 25000, 25004, "x", 24999))
    if rng.random() < 0.1:
        args["admin_api_key"] = rng.choice(("secret-1", "secret-2"))
    return pick(rng, (args,), ("not a dict", None, {}, ["--tp-size", "8"], {5: 1, "tp_size": 2}), rate)


def _facts(rng, rate, index):
    v4, v6, fabric = "10.0.0.%d" % (11 + index), "fd00::%d" % (11 + index), "10.20.0.%d" % (2 + index)
    facts = {"lo": {"device": "lo", "ipv4": {"address": "127.0.0.1"}, "ipv6": [{"address": "::1"}]}}
    if rng.random() < 0.85:
        facts["default_ipv4"] = {"address": pick(rng, (v4,), ("nope", "", None, " %s " % v4), rate),
                                 "interface": "ens5"}
    if rng.random() < 0.3:
        facts["default_ipv6"] = {"address": pick(rng, (v6,), ("fe80::1", "bad::x"), rate), "interface": "ens5"}
    if rng.random() < 0.9:
        ens5 = {"device": "ens5", "ipv4": {"address": v4}}
        if rng.random() < 0.6:
            ens5["ipv6"] = [{"address": "fe80::%d" % (index + 1), "prefix": "64"}, {"address": v6, "prefix": "64"}]
        facts["ens5"] = ens5
    if rng.random() < 0.35:
        ib0 = {"device": "ib0", "ipv4": pick(rng, ({"address": fabric},), ([{"address": fabric}], "x", None), rate)}
        if rng.random() < 0.3:
            ib0["ipv4_secondaries"] = [{"address": "10.20.0.%d" % (50 + index)}, "junk"]
        facts["ib0"] = ib0
    if rng.random() < rate:
        facts[rng.choice(("eth9", "junk"))] = rng.choice(({"device": ""}, {"device": None, "ipv4": {"address": v4}},
                                                          "text", {"ipv4": {"address": v4}}))
    return pick(rng, (facts,), (None, {}, "facts", {"default_ipv4": "x"}, {"default_ipv6": {"address": v6}}), rate)


def _node(rng, rate, name, index, shared, count):
    v4, v6 = "10.0.0.%d" % (11 + index), "fd00::%d" % (11 + index)
    prefix = shared["prefix"]
    node = {"inventory_hostname": name}
    if rng.random() < 0.9:
        node["ansible_host"] = pick(rng, ("%s.example.internal" % name, v4, v4, v6, "[%s]" % v6),
                                    ("", "bad host", "127.0.0.1", 5, "10.0.0.300", "::"), rate)
    if rng.random() < 0.95:
        node["ansible_facts"] = _facts(rng, rate, index)

    def own(key, bad):
        """The group's setting, or (at the rate) one of ``bad`` on this node alone."""
        return rng.choice(bad) if bad and rng.random() < rate * 0.3 else shared[key]

    settings = {
        "node_group": own("node_group", ("other", None, "", 5)),
        "version": own("version", ("0.5.22", None)),
        "model_path": own("model_path", ("/models/other", "")),
        "tp_size": own("tp_size", (3, "x", None, count * 2 + 1)),
        "speculative": own("speculative", ({"algorithm": "NGRAM"}, "x", {"num_steps": 3})),
        "args": own("args", (_args(rng, 0.0), _args(rng, 0.5), "flags")),
        "dist_init_host": own("dist_init_host", ("10.0.0.99", "", "rank0")),
        "dist_init_port": own("dist_init_port", (26000, "", "x")),
        "node_firewall_sources": own("node_firewall_sources", (["10.0.0.0/33"], "10.0.0.1", ["::/0"])),
        "port": pick(rng, (30000, 30000, "30001", None), ("x", 25000, 25003), rate),
        "node_rank": shared["ranks"][index],
        "node_ifname": pick(rng, ("", "", None, "ens5", "ib0", " ens5 "), ("a/b", "x" * 16, ".", 5, "eth7"), rate),
        "node_firewall": pick(rng, (None, None, "", True, False), ("yes", 1, "false"), rate),
    }
    tp = as_tp(settings["tp_size"])
    per_node = tp // count if tp and tp % count == 0 else 2
    settings["gpus"] = pick(rng, (list(range(per_node)), None, []), (list(range(per_node + 1)), "0,1", [0]), rate)
    for key, value in settings.items():
        if rng.random() < rate * 0.05:
            continue  # the variable is not set on this host
        node[prefix + key] = value
    return node


def as_tp(value):
    try:
        return int(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def _ranks(rng, rate, count):
    roll = rng.random()
    if roll < 0.6:
        return [rng.choice((None, "")) for dummy in range(count)]
    if roll < 0.85:
        order = list(range(count))
        rng.shuffle(order)
        return [rng.choice((rank, str(rank))) for rank in order]
    ranks = list(range(count))
    bad = (-1, "x", True, 1.5, count, count + 2, "1", 0, None, " 2 ")
    for position in rng.sample(range(count), rng.randint(1, count)):
        ranks[position] = rng.choice(bad) if rng.random() < max(rate, 0.5) else ranks[position]
    return ranks


def generate(rng):
    """One group check's input: ``(nodes, group, prefix)``."""
    rate = rng.choice((0.0, 0.0, 0.05, 0.15, 0.4))
    count = rng.choice((1, 2, 2, 2, 2, 3, 3, 4, 4, 4))
    names = rng.sample(NAMES, count)
    prefix = rng.choice(("sglang_server_",) * 5 + ("llm_node_",))
    first = "10.0.0.%d" % 11
    shared = {
        "prefix": prefix,
        "node_group": GROUP,
        "version": "0.5.23",
        "model_path": "/models/big",
        "tp_size": pick(rng, (count * 2, str(count * 4), count, 8), (0, -count, "eight", None, True), rate),
        "speculative": pick(rng, ({}, None, {"algorithm": "EAGLE", "num_steps": 3}), ("x",), rate),
        "args": _args(rng, rate),
        "dist_init_host": pick(rng, ("", "", None, first, "fd00::11", "10.20.0.2"),
                               ("rank0", "127.0.0.1", "0.0.0.0", "::", "::1", "[fd00::11]", " 10.0.0.11 ", 5,
                                "10.0.0.256", "fe80::1%eth0", "localhost"), rate),
        "dist_init_port": pick(rng, (25000, "25000", None, "", 26000, 5000, 65530),
                               (0, 70000, "x", 30000, 29995, True, 1.5, 65535, "25003", [25000]), rate),
        "node_firewall_sources": pick(rng, (None, "", [], ["192.168.50.0/24"], ["fd00:1::/64", "10.9.9.9"]),
                                      ("10.0.0.1", 5, ["10.0.0.0/33"], ["0.0.0.0/0"], ["::/0"], [None], ["x"],
                                       {"a": 1}), rate),
        "ranks": _ranks(rng, rate, count),
    }
    nodes = dict((name, _node(rng, rate, name, index, shared, count)) for index, name in enumerate(names))
    if rng.random() < 0.06:
        # every node on one machine (one address, or none known): a loopback rendezvous may then do
        same = rng.choice(("127.0.0.1", "10.0.0.11", "::1", None))
        for node in nodes.values():
            node["ansible_host"] = same if same else "%s.example.internal" % node["inventory_hostname"]
            node["ansible_facts"] = {"lo": {"device": "lo", "ipv4": {"address": "127.0.0.1"},
                                            "ipv6": [{"address": "::1"}]}} if same != "10.0.0.11" else _facts(rng, 0, 0)
            node[prefix + "dist_init_host"] = rng.choice(("127.0.0.1", "::1", "0.0.0.0", "::", "", "127.0.0.2"))
    roll = rng.random()
    if roll < rate * 0.3:
        nodes[rng.choice(names)] = rng.choice(({}, None, "x", 5, [("inventory_hostname", "z")]))
    group = pick(rng, (GROUP, GROUP, GROUP, None), ("other", "", 5, None), rate)
    shape = rng.random()
    if shape < 0.2:
        nodes = list(nodes.values())
        if rng.random() < rate:
            nodes.append(rng.choice(({"inventory_hostname": ""}, "x", {})))
    elif shape < 0.2 + rate * 0.1:
        nodes = rng.choice(("x", 5, None, ()))
    return nodes, group, prefix


def outcome(module, nodes, group, prefix):
    """Both public functions on one input: their results, or the exception each raised."""
    found = []
    for function in (module.node_group_problems, module.node_group_plan):
        try:
            found.append(function(copy.deepcopy(nodes), group=group, prefix=prefix))
        except Exception as exc:  # pylint: disable=broad-except
            found.append(("raised", type(exc).__name__, str(exc), getattr(exc, "errors", None)))
    return found


def test_rule_engine_port_matches_the_baseline(baseline):
    planned = raised = 0
    for dummy, new in matching_cases(generate, outcome, sglang_nodes, baseline, spread=True):
        planned += isinstance(new[1], dict)
        raised += isinstance(new[0], tuple)
    print("\n%d cases (seed %d): %d planned, %d refused, %d raised" % (COUNT, SEED, planned, COUNT - planned,
                                                                       raised))
    assert COUNT * 0.05 < planned < COUNT * 0.95, planned


def test_the_rendezvous_comes_from_server_addresses():
    """One function for the addresses: the group check reads rank 0's rendezvous from server_addresses."""
    assert sglang_nodes.server_addresses is addresses.server_addresses
