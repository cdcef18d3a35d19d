# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The address rules in one place (plugins/plugin_utils/addresses.py): where other hosts reach a listener (the
wildcard rule), where the host probes it (the probe rule), the multi-node rendezvous, and server_addresses, the
fact the sglang_server role publishes."""

from __future__ import annotations

import os

import pytest
import yaml

from ansible_collections.llmserve.sglang.plugins.plugin_utils import addresses as ad
from ansible_collections.llmserve.sglang.plugins.plugin_utils import gateway_config, monitoring_targets, sglang_nodes
from ansible_collections.llmserve.sglang.tests.unit.plugins.module_utils.source_imports import top_level_imports

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


def facts(ipv4="", ipv6=""):
    found = {}
    if ipv4:
        found["default_ipv4"] = {"address": ipv4, "interface": "eth0"}
    if ipv6:
        found["default_ipv6"] = {"address": ipv6, "interface": "eth0"}
    return found


def server(**hostvars):
    hostvars.setdefault("inventory_hostname", "w1")
    return ad.server_addresses(hostvars)


def test_imports_only_the_standard_library_and_the_collection():
    # netaddr (the multi-node helpers, as sglang_nodes always read them) only where it is used
    assert top_level_imports(ad.__file__) == {"__future__", "ipaddress", "re", "ansible_collections", "netaddr"}


def test_defaults_follow_the_sglang_server_role():
    with open(os.path.join(ROOT, "roles", "sglang_server", "defaults", "main.yml"), encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)
    assert (ad.SERVER_DEFAULT_HOST, ad.SERVER_DEFAULT_PORT) == (defaults["sglang_server_host"],
                                                                defaults["sglang_server_port"])
    assert ad.DEFAULT_DIST_INIT_PORT == defaults["sglang_server_dist_init_port"]


def test_the_consumers_share_the_helpers():
    """One copy: the gateway, monitoring and multi-node rules use these very functions."""
    assert gateway_config.server_addresses is ad.server_addresses
    assert gateway_config.probe_address is ad.probe_address
    assert gateway_config.url_host is ad.url_host
    assert monitoring_targets.wildcard_address is ad.wildcard_address
    assert monitoring_targets.named_address is ad.named_address
    assert sglang_nodes.inventory_address is ad.inventory_address
    assert sglang_nodes._interface_addresses is ad.interface_addresses
    assert gateway_config.WORKER_DEFAULT_HOST == monitoring_targets.SERVER_DEFAULT_HOST == ad.SERVER_DEFAULT_HOST


# -- the wildcard rule -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bind, explicit, found, expected", [
    ("0.0.0.0", "", {"ipv4": "10.0.0.5", "ipv6": "fd00::5"}, "10.0.0.5"),
    ("::", "", {"ipv4": "10.0.0.5", "ipv6": "fd00::5"}, "fd00::5"),
    ("::", "", {"ipv4": "10.0.0.5", "ipv6": ""}, "10.0.0.5"),
    ("0.0.0.0", "Node-1.Example.", {"ipv4": "10.0.0.5"}, "node-1.example"),
    # the resolver reads 010 as octal 8; the address is the one a connection goes to
    ("0.0.0.0", "10.010.0.7", {}, "10.8.0.7"),
    ("0.0.0.0", "bad_name!", {"ipv4": "10.0.0.5"}, None),
    ("::", "2001:DB8::0:1", {}, "2001:db8::1"),
    ("0.0.0.0", "0x0a000007", {}, "10.0.0.7"),
])
def test_wildcard_address(bind, explicit, found, expected):
    address, _source, problem = ad.wildcard_address("w1", ad.ip_literal(bind), explicit, found, "the gateway",
                                                    "the gateway reaches")
    if expected is None:
        assert address is None and problem
    else:
        assert (address, problem) == (expected, None)


def test_wildcard_messages_name_the_fix():
    _address, source, problem = ad.wildcard_address("w1", ad.ip_literal("::"), "", {}, "Prometheus",
                                                    "Prometheus scrapes", " (playbooks/monitoring.yml does)")
    assert source is None
    assert problem == ("w1 binds ::, so Prometheus needs an address to reach it: set its ansible_host, or gather its "
                       "facts (default_ipv4/default_ipv6) in the same play (playbooks/monitoring.yml does)")
    _address, source, problem = ad.wildcard_address("w1", ad.ip_literal("0.0.0.0"), "fd00::1", {}, "the gateway",
                                                    "the gateway reaches")
    assert source == "ansible_host"
    assert problem == ("is the IPv6 address fd00::1, but w1 binds 0.0.0.0 (IPv4 only); bind '::' or give an IPv4 "
                       "ansible_host")
    _address, source, problem = ad.wildcard_address("w1", ad.ip_literal("0.0.0.0"), "", {"ipv4": "nope"},
                                                    "the gateway", "the gateway reaches")
    assert (source, problem) == ("ansible_facts.default_ipv4.address", "must be an IP address, got 'nope'")


@pytest.mark.parametrize("value, expected", [
    ("127.1", True), ("0x7f000001", True), ("::ffff:127.0.0.1", True), ("::1", True), ("localhost", True),
    ("db.localhost.", True), ("10.0.0.1", False), ("example.com", False),
])
def test_loopback_in_every_spelling(value, expected):
    assert ad.is_loopback_name(value) is expected


# -- the probe rule ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bind, expected", [("0.0.0.0", "127.0.0.1"), ("::", "::1"), ("10.0.0.1", "10.0.0.1"),
                                            ("::1", "::1")])
def test_probe_address(bind, expected):
    assert ad.probe_address(bind) == expected


@pytest.mark.parametrize("host, port, args, url", [
    ("0.0.0.0", 30000, {}, "http://127.0.0.1:30000"),
    # SGLang's :: socket takes IPv4 too: the role always probed a wildcard on 127.0.0.1
    ("::", "30001", None, "http://127.0.0.1:30001"),
    ("fd00::1", 30000, {"--ssl-certfile": "/c"}, "https://[fd00::1]:30000"),
    ("", 30000, {}, "http://127.0.0.1:30000"),
])
def test_probe_url(host, port, args, url):
    assert ad.probe_url(host, port, args) == url


@pytest.mark.parametrize("host, port, message", [
    ("evil.example", 1, "host: must be an IP address, got 'evil.example'"),
    ("127.0.0.1", 0, "port: must be a TCP port number between 1 and 65535, got int 0"),
    ("127.0.0.1", True, "port: must be a TCP port number between 1 and 65535, got boolean true"),
])
def test_probe_url_refuses_what_is_no_address(host, port, message):
    with pytest.raises(ValueError) as raised:
        ad.probe_url(host, port, {})
    assert str(raised.value) == message


# -- server_addresses --------------------------------------------------------------------------------------------

def test_a_server_bound_to_one_address():
    found = server(sglang_server_host="10.0.0.5", sglang_server_port=30001, sglang_server_metrics=True)
    assert found == {
        "name": "w1", "needs_facts": False, "problems": [], "rendezvous": None,
        "api": {"bind": "10.0.0.5", "wildcard": False, "address": "10.0.0.5", "port": 30001, "scheme": "http",
                "url": "http://10.0.0.5:30001", "probe_url": "http://10.0.0.5:30001", "source": "sglang_server_host",
                "needs_facts": False},
        "metrics": {"enabled": True, "address": "10.0.0.5", "port": 30001, "url": "http://10.0.0.5:30001/metrics",
                    "probe_url": "http://10.0.0.5:30001/metrics"}}


def test_the_role_defaults_apply():
    found = server()
    assert found["api"]["url"] == found["api"]["probe_url"] == "http://127.0.0.1:30000"
    assert found["metrics"] == {"enabled": False, "address": "127.0.0.1", "port": 30000, "url": None,
                                "probe_url": None}


def test_wildcard_v4_at_the_default_address_probed_on_loopback():
    found = server(sglang_server_host="0.0.0.0", ansible_facts=facts("10.0.0.5", "fd00::5"),
                   sglang_server_args={"enable-metrics": True})
    assert found["api"]["address"] == "10.0.0.5"
    assert found["api"]["source"] == "ansible_facts.default_ipv4.address"
    assert found["api"]["url"] == "http://10.0.0.5:30000"
    assert found["api"]["probe_url"] == "http://127.0.0.1:30000"
    assert found["metrics"]["url"] == "http://10.0.0.5:30000/metrics"
    # read from the facts (gathered here)
    assert found["needs_facts"] and not found["problems"]


def test_wildcard_v6_prefers_the_default_ipv6():
    found = server(sglang_server_host="::", ansible_facts=facts("10.0.0.5", "fd00::5"))
    assert (found["api"]["address"], found["api"]["url"], found["api"]["source"]) == (
        "fd00::5", "http://[fd00::5]:30000", "ansible_facts.default_ipv6.address")


def test_ansible_host_names_come_first():
    found = server(sglang_server_host="0.0.0.0", ansible_host="GPU-1.example.", ansible_facts=facts("10.0.0.5"))
    assert (found["api"]["address"], found["api"]["source"]) == ("gpu-1.example", "ansible_host")
    assert found["needs_facts"] is False
    assert found["api"]["url"] == "http://gpu-1.example:30000"


def test_tls_scheme():
    found = server(sglang_server_host="10.0.0.5", sglang_server_args={"ssl_certfile": "/c", "ssl_keyfile": "/k"},
                   sglang_server_metrics="yes")
    assert found["api"]["scheme"] == "https"
    assert found["api"]["url"] == "https://10.0.0.5:30000"
    assert found["metrics"]["url"] == "https://10.0.0.5:30000/metrics"


def test_a_wildcard_without_an_address_needs_facts():
    found = server(sglang_server_host="::")
    assert found["needs_facts"] is True
    assert found["api"]["address"] is None and found["api"]["url"] is None
    assert found["api"]["probe_url"] == "http://127.0.0.1:30000"
    assert found["problems"] == [
        "hostvars['w1'].sglang_server_host: w1 binds ::, so another host needs an address to reach it: set its "
        "ansible_host, or gather its facts (default_ipv4/default_ipv6) in the same play"]


def test_multi_node_rendezvous():
    found = server(sglang_server_host="0.0.0.0", sglang_server_node_group="mn", ansible_host="10.0.0.9",
                   ansible_facts=facts("10.0.0.5"))
    assert found["rendezvous"] == {"host": "10.0.0.9", "port": 25000, "address": "10.0.0.9:25000",
                                   "source": "inventory", "needs_facts": False}
    assert found["needs_facts"] is False
    # an ansible_host that is a name is not an address the nodes meet at: the default IPv4, else IPv6
    found = server(sglang_server_node_group="mn", ansible_host="gpu-1", ansible_facts=facts("", "fd00::5"))
    assert found["rendezvous"]["address"] == "[fd00::5]:25000"
    assert found["rendezvous"]["needs_facts"] and found["needs_facts"] and not found["api"]["needs_facts"]
    found = server(sglang_server_node_group="mn", sglang_server_dist_init_host="10.1.0.1",
                   sglang_server_dist_init_port="26000")
    assert found["rendezvous"] == {"host": "10.1.0.1", "port": 26000, "address": "10.1.0.1:26000",
                                   "source": "sglang_server_dist_init_host", "needs_facts": False}
    assert not found["needs_facts"]
    found = server(sglang_server_node_group="mn")
    assert found["needs_facts"] and found["rendezvous"]["address"] is None
    assert found["problems"] == ["hostvars['w1'].sglang_server_dist_init_host: is unset and w1 has no IP address in "
                                 "the inventory (ansible_host) or its facts (default IPv4/IPv6)"]


@pytest.mark.parametrize("hostvars, problem", [
    ({"sglang_server_host": "gpu-1"},
     "hostvars['w1'].sglang_server_host: must be an IP address (the listener binds it), got 'gpu-1'"),
    ({"sglang_server_port": 70000},
     "hostvars['w1'].sglang_server_port: must be an integer between 1 and 65535, got int 70000"),
    ({"sglang_server_host": "0.0.0.0", "ansible_host": "bad host"},
     "hostvars['w1'].ansible_host: must be a host name or an IP address (other hosts reach w1 there), got "
     "'bad host'"),
    ({"sglang_server_host": "0.0.0.0", "ansible_facts": facts("nope")},
     "hostvars['w1'].ansible_facts.default_ipv4.address: must be an IP address, got 'nope'"),
    ({"sglang_server_node_group": "mn", "sglang_server_dist_init_host": "rank0"},
     "hostvars['w1'].sglang_server_dist_init_host: must be an IP address (the nodes meet at it; IPv6 without "
     "brackets), got 'rank0' from sglang_server_dist_init_host"),
    ({"sglang_server_node_group": "mn", "sglang_server_dist_init_host": "10.0.0.1",
      "sglang_server_dist_init_port": "x"},
     "hostvars['w1'].sglang_server_dist_init_port: must be a TCP port number between 1 and 65535, got 'x'"),
])
def test_bad_inputs_are_problems(hostvars, problem):
    assert server(**hostvars)["problems"] == [problem]


def test_not_a_dict():
    with pytest.raises(TypeError):
        ad.server_addresses(["w1"])
