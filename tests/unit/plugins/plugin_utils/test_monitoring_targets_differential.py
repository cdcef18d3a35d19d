# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``monitoring_targets`` on the rule engine against its class-based version before the port (commit ``BASELINE``):
the same errors and warnings (message for message, in the same order), targets and counts, or the same exception, for
thousands of inventories from a seeded generator: servers, gateways and node exporters, wildcard binds with and
without ``ansible_host`` and facts, loopback, IPv6, bad ports and booleans, duplicate targets, multi-node ranks and
job names. The baseline is read with ``git show``; the test is skipped where that history is not there."""

from __future__ import annotations


from ansible_collections.llmserve.sglang.plugins.plugin_utils import monitoring_targets
from ansible_collections.llmserve.sglang.tests.unit.differential import COUNT, SEED, baseline_fixture, matching_cases, pick

BASELINE = "3e44798"


baseline = baseline_fixture(BASELINE, "plugins/plugin_utils/monitoring_targets.py")


# -- the generator ---------------------------------------------------------------------------------------------

LONG = "x" * 95
SERVERS = ("gpu-01", "gpu-02", "gpu-03", "gpu-04", "gpu-05", "gpu-06")
GATEWAYS = ("gw-01", "gw-02", "gw-03")
OTHERS = ("prom-01", "edge-01", "n" * 70, "odd\tname")
GOOD_ADDRESSES = ("10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.1.1", "fd00::11", "2001:db8::5", "host-a.example",
                  "Host-B.Example.", "10.0.9.1")
BAD_ADDRESSES = ("bad host", "127.0.0.1", "::1", "localhost", "a.localhost", "127.1", "0x7f000001", "fe80::1%eth0",
                 5, ["10.0.0.1"], {"a": 1}, True, "a\nb", "h" * 300, "[fd00::1]")
GOOD_BINDS = ("10.0.0.1", "10.0.0.2", "10.0.1.1", "0.0.0.0", "::", "fd00::11", " 10.0.0.3 ")
# a blank bind takes the role's default, loopback
BAD_BINDS = ("", None, "127.0.0.1", "::1", "gpu-01", "localhost", "0.0.0.0%x", 5, 1.5, ["0.0.0.0"], {"h": 1}, LONG, "a\x00b",
             "::ffff:127.0.0.1", "127.0.0.2")
GOOD_PORTS = (30000, 30001, "30002", 9100, 29000, " 9200 ", "", None, 65535, 1)
BAD_PORTS = (0, 70000, -1, "abc", True, 1.5, "123456", "000030000", {"p": 1}, ["1"], LONG, "x" * 85, "3e4", "+80",
             "1_000", 10 ** 30)
GOOD_BOOLS = (True, False, "yes", "no", "true", "off", "1", None)
BAD_BOOLS = ("maybe", 0, 2, 1.0, [], {"x": True}, LONG, "")
GOOD_FACTS = ("10.1.0.1", "10.1.0.2", "fd00::21", "", None)
BAD_FACTS = ("127.0.0.1", "::1", "bad", 5, "fe80::2", ["10.0.0.1"], "10.1.0.999")


def _maybe(rng, hostvars, key, value, keep=0.6):
    if rng.random() < keep:
        hostvars[key] = value


def _common(rng, rate, hostvars):
    """The variables every host may carry: its address, facts and node exporter."""
    _maybe(rng, hostvars, "ansible_host", pick(rng, GOOD_ADDRESSES + ("",), BAD_ADDRESSES, rate), 0.5)
    _maybe(rng, hostvars, "ipv4", pick(rng, GOOD_FACTS, BAD_FACTS, rate), 0.5)
    _maybe(rng, hostvars, "ipv6", pick(rng, GOOD_FACTS, BAD_FACTS, rate), 0.3)
    _maybe(rng, hostvars, "sglang_monitoring_node_exporter", pick(rng, GOOD_BOOLS, BAD_BOOLS, rate), 0.4)
    _maybe(rng, hostvars, "sglang_monitoring_node_exporter_port", pick(rng, GOOD_PORTS, BAD_PORTS, rate), 0.3)


def _server(rng, rate, node_groups):
    hostvars = {}
    _maybe(rng, hostvars, "sglang_server_host", pick(rng, GOOD_BINDS, BAD_BINDS, rate), 0.9)
    _maybe(rng, hostvars, "sglang_server_port", pick(rng, GOOD_PORTS, BAD_PORTS, rate), 0.6)
    _maybe(rng, hostvars, "sglang_server_metrics", pick(rng, (True, True, "yes", "on"), (False, None, "maybe", 7),
                                                        rate), 0.95)
    _maybe(rng, hostvars, "sglang_server_args", pick(
        rng, ({}, {"enable_metrics": True}, {"enable-metrics": "yes"}, {"ssl_certfile": "/etc/s/t.crt"},
              {"ssl-certfile": "/c", "enable_metrics": "no"}, None),
        ("text", ["--enable-metrics"], {"ssl_certfile": ""}, {5: True}), rate), 0.4)
    if node_groups and rng.random() < 0.4:
        hostvars["sglang_server_node_group"] = pick(rng, node_groups, (5, ["g"], "  ", "nowhere"), rate)
        _maybe(rng, hostvars, "sglang_server_node_rank", pick(rng, (0, 1, "1", 2, "", None),
                                                              (-1, "x", True, "12345", 1.0), rate), 0.4)
    _maybe(rng, hostvars, "sglang_monitoring_scrape", pick(rng, (True, False, "false", None), ("perhaps", 3), rate),
           0.25)
    _maybe(rng, hostvars, "sglang_model_repo", pick(rng, ("Qwen/Qwen3-8B", "org/m", ""), ("a\nb", 5, "m" * 120),
                                                    rate), 0.7)
    _maybe(rng, hostvars, "sglang_model_revision", rng.choice(("a" * 40, "main", "", None)), 0.6)
    _maybe(rng, hostvars, "sglang_model_dir", rng.choice(("/srv/models", "", None, 5)), 0.2)
    _maybe(rng, hostvars, "sglang_model_path", rng.choice(("/srv/models/q", "", None)), 0.2)
    _maybe(rng, hostvars, "sglang_server_model_path", pick(rng, ("/models/llama", "", None), ("/m\x7f", ["p"]), rate),
           0.3)
    _maybe(rng, hostvars, "sglang_server_served_model_name", pick(rng, ("qwen", "", "llama-3"), ("a\tb", {"n": 1}),
                                                                  rate), 0.5)
    _common(rng, rate, hostvars)
    return hostvars


def _gateway(rng, rate, groups):
    hostvars = {}
    _maybe(rng, hostvars, "sglang_gateway_host", pick(rng, GOOD_BINDS, BAD_BINDS, rate), 0.9)
    _maybe(rng, hostvars, "sglang_gateway_metrics_host", pick(rng, GOOD_BINDS, BAD_BINDS, rate), 0.3)
    _maybe(rng, hostvars, "sglang_gateway_metrics_port", pick(rng, GOOD_PORTS, BAD_PORTS, rate), 0.5)
    _maybe(rng, hostvars, "sglang_gateway_workers_group", pick(rng, tuple(groups) + ("", None), (5, ["x"]), rate),
           0.5)
    _common(rng, rate, hostvars)
    return hostvars


def generate(rng):
    rate = rng.choice((0.0, 0.0, 0.0, 0.05, 0.15, 0.4))
    servers = rng.sample(SERVERS, rng.randint(0, len(SERVERS)))
    gateways = rng.sample(GATEWAYS, rng.randint(0, len(GATEWAYS)))
    # odd inventory names only with the broken values
    others = rng.sample(OTHERS if rate else OTHERS[:2], rng.randint(0, 2))
    # a host may be a server and a gateway at once
    if servers and rng.random() < 0.15:
        gateways.append(rng.choice(servers))
    node_groups = tuple(rng.sample(("pair", "trio", "solo"), rng.randint(0, 2)))
    groups = {"sglang_servers": list(servers), "sglang_gateways": list(gateways)}
    for group in node_groups:
        groups[group] = rng.sample(servers, min(len(servers), rng.randint(1, 3)))
    if servers and rng.random() < 0.5:
        groups["pool"] = rng.sample(servers, rng.randint(1, len(servers)))
    everyone = sorted(set(servers) | set(gateways) | set(others))
    if everyone and rng.random() < 0.5:
        groups["sglang_node_exporters"] = rng.sample(everyone, rng.randint(1, len(everyone)))
    hosts = {}
    for name in servers:
        hosts[name] = _server(rng, rate, node_groups)
    for name in gateways:
        hosts[name] = dict(hosts.get(name, {}), **_gateway(rng, rate, groups))
    for name in others:
        hosts[name] = {}
        _common(rng, rate, hosts[name])
    if rng.random() < rate:
        groups["sglang_servers"].extend(rng.choice(([5, None], ["ghost"], [servers[0]] if servers else [])))
    prometheus_name = rng.choice(everyone + ["prom-elsewhere", "prom-elsewhere", ""] if everyone else ["prom-01", ""])
    cfg = {"prometheus": {"name": prometheus_name,
                          "ansible_host": pick(rng, ("10.0.9.1", "", "10.0.0.1", "10.0.1.1"), (None, 5), rate)},
           "servers_group": pick(rng, ("sglang_servers",), ("missing", 5, None, ["sglang_servers"]), rate),
           "gateways_group": pick(rng, ("sglang_gateways",), ("missing", None), rate),
           "jobs": pick(rng, ({"sglang": "sglang", "gateway": "sglang_gateway", "node": "node"},
                              {"sglang": "s", "gateway": "g", "node": "n"}),
                        ({"sglang": "sglang", "gateway": "sglang", "node": "node"},
                         {"sglang": "x", "gateway": "y", "node": "x"}, {"gateway": "sglang", "node": "sglang"},
                         {}, "jobs"), rate),
           "groups": groups, "hosts": hosts}
    if rng.random() < 0.5:
        cfg["node_exporters_group"] = pick(rng, ("sglang_node_exporters",), ("pool", None, 5), rate)
    if rng.random() < rate * 0.1:
        cfg[rng.choice(("groups", "hosts", "prometheus"))] = rng.choice(("x", [], None))
    if rng.random() < rate * 0.02:
        cfg = rng.choice(("cfg", None, []))
    return cfg


def outcome(module, cfg):
    try:
        return module.build_targets(cfg)
    except Exception as exc:  # pylint: disable=broad-except
        return ("raised", type(exc).__name__, str(exc))


def test_rule_engine_port_matches_the_baseline(baseline):
    clean = raised = messages = 0
    for dummy, new in matching_cases(generate, outcome, monitoring_targets, baseline):
        if isinstance(new, tuple):
            raised += 1
            continue
        clean += not new["errors"]
        messages += len(new["errors"]) + len(new["warnings"])
    print("\n%d cases (seed %d): %d without errors, %d with, %d raised; %d messages"
          % (COUNT, SEED, clean, COUNT - clean - raised, raised, messages))
    assert COUNT * 0.05 < clean < COUNT * 0.95, clean


def test_not_a_dict_is_refused_as_before(baseline):
    for cfg in ("x", None, []):
        assert outcome(monitoring_targets, cfg) == outcome(baseline, cfg)
