# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fact sglang_server_addresses: validate.yml publishes it from the llmserve.sglang.server_config action, the
``addresses`` entry point from the filter llmserve.sglang.sglang_server_addresses; both apply
``addresses.server_addresses`` to the same variables, so for the same host and facts they publish the same. The
role's probe URL (``__sglang_server_base_url``) is the fact's ``api.probe_url``, and where no entry point published
it (preflight.yml's probe, restart of a single-host server) the same function applied to the same variables.

One ansible-playbook run over an inventory of local hosts (no connection): the first play records the probe URLs
before anything published the fact; the second runs ``validate``, records the fact and the URLs, hides the fact and
runs ``addresses``. The URLs are compared with the filter the role used before (``sglang_base_url``), failures
included.
"""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.llmserve.sglang.plugins.filter.sglang import sglang_base_url
from ansible_collections.llmserve.sglang.tests.unit.collection_tree import guarded_block, json_result_task, run_plays

COMMON = {"ansible_connection": "local", "sglang_server_model_path": "/models/tiny", "sglang_server_install": "none",
          "sglang_server_python": "/usr/bin/python3", "sglang_server_api_key": "k-1"}
HOSTS = {
    "plain": {},
    "bound": {"sglang_server_host": "10.0.0.5", "sglang_server_port": "30001", "sglang_server_metrics": True},
    # written as the inventory writes it: the probe URL keeps that spelling, as it always had
    "tls-v6": {"sglang_server_host": "2001:DB8::1",
               "sglang_server_args": {"ssl_certfile": "/etc/ssl/s.pem", "ssl_keyfile": "/etc/ssl/s.key"}},
    "named": {"sglang_server_host": "0.0.0.0", "ansible_host": "GPU-1.example."},
    # an inventory name that is an IP address is no ansible_host: the address comes from the facts (gathered)
    "10.7.7.7": {"sglang_server_host": "::", "sglang_server_args": {"enable_metrics": True}},
    "gathered": {"sglang_server_host": "0.0.0.0"},
    # facts not gathered: validate.yml reads none, the entry point reads the network facts first
    "unread": {"sglang_server_host": "0.0.0.0"},
    "mn-0": {"ansible_host": "10.9.0.1"},
    "mn-1": {"ansible_host": "10.9.0.2"},
    # the probe rule refuses these: the role fails at the probe with its message, as it always did (validation
    # refuses the null port first; a host with a line break it takes, and renders stripped)
    "lf-host": {"sglang_server_host": "10.0.0.1\n"},
    "null-port": {"sglang_server_port": None},
}
GATHERED = ("10.7.7.7", "gathered")
FAILING = ("lf-host", "null-port")
UNREAD = ("unread",)
GROUP = {"sglang_server_node_group": "mn", "sglang_server_tp_size": 2, "sglang_server_node_ifname": "eth0",
         "sglang_server_host": "0.0.0.0", "sglang_server_dist_init_port": 26000, "sglang_server_nft": "/bin/true"}


def _inventory():
    hosts = dict((name, dict(variables)) for name, variables in HOSTS.items() if not name.startswith("mn-"))
    group = dict((name, dict(variables)) for name, variables in HOSTS.items() if name.startswith("mn-"))
    return {"all": {"vars": COMMON, "children": {"single": {"hosts": hosts}, "mn": {"hosts": group, "vars": GROUP}}}}


def _write(out, entry, expression):
    host = "{{ inventory_hostname }}"
    return guarded_block(out, host, entry, [json_result_task(out, host, entry, expression)])


URLS = "{'base': __sglang_server_base_url, 'ready': __sglang_server_ready_url}"


def _plays(out):
    role = "llmserve.sglang.sglang_server"
    directory = {"ansible.builtin.file": {"path": os.path.join(out, "{{ inventory_hostname }}"), "state": "directory",
                                          "mode": "0700"}}
    gather = {"ansible.builtin.setup": {"gather_subset": ["!all", "!min", "network"]},
              "when": "inventory_hostname in %s" % json.dumps(list(GATHERED))}
    # the role's variables without running any of its tasks: no entry point publishes the fact here
    load = {"ansible.builtin.include_role": {"name": role, "tasks_from": "addresses", "public": True,
                                             "apply": {"when": False}}}
    validate = {"ansible.builtin.include_role": {"name": role, "tasks_from": "validate", "public": True}}
    addresses = {"ansible.builtin.include_role": {"name": role, "tasks_from": "addresses"}}
    hide = {"ansible.builtin.set_fact": {"sglang_server_addresses": "hidden"}}
    return [
        {"name": "no fact yet", "hosts": "all", "gather_facts": False,
         "tasks": [directory, gather, load, _write(out, "fallback_urls", URLS),
                   _write(out, "fallback_fact_defined", "sglang_server_addresses is defined")]},
        {"name": "validate, then addresses", "hosts": "all", "gather_facts": False,
         "tasks": [{"block": [validate, _write(out, "validate", "sglang_server_addresses"),
                              _write(out, "validate_urls", URLS), hide, addresses,
                              _write(out, "addresses", "sglang_server_addresses")],
                    "rescue": [_write(out, "validate_error", "ansible_failed_result.msg")]}]},
    ]


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("addresses-fact"))
    run_plays(out, _plays(out), _inventory())
    found = {}
    for name in HOSTS:
        files = {}
        folder = os.path.join(out, name)
        for entry in sorted(os.listdir(folder)):
            with open(os.path.join(folder, entry), encoding="utf-8") as handle:
                files[entry[:-len(".json")]] = json.load(handle)
        found[name] = files
    return found


def _old_url(name):
    """The probe URL the role computed before the fact, or the message it failed with."""
    variables = dict(COMMON, **(GROUP if name.startswith("mn-") else {}))
    variables.update(HOSTS[name])
    try:
        return sglang_base_url(variables.get("sglang_server_args", {}), variables.get("sglang_server_host", "127.0.0.1"),
                               variables.get("sglang_server_port", 30000))
    except Exception as exc:  # pylint: disable=broad-except
        return ("failed", str(exc))


@pytest.mark.parametrize("name", sorted(set(HOSTS) - set(FAILING) - set(UNREAD)))
def test_validate_and_the_entry_point_publish_the_same(published, name):
    found = published[name]
    assert "validate_error" not in found, found.get("validate_error")
    assert found["validate"] == found["addresses"]
    assert found["validate"]["name"] == name
    assert found["validate"]["api"]["probe_url"] == _old_url(name)


@pytest.mark.parametrize("name", sorted(set(HOSTS) - set(FAILING)))
def test_the_probe_url_is_the_old_one_with_or_without_the_fact(published, name):
    found = published[name]
    assert found["fallback_fact_defined"] is False
    assert found["fallback_urls"] == found["validate_urls"]
    assert found["validate_urls"]["base"] == _old_url(name) == found["validate"]["api"]["probe_url"]
    assert found["validate_urls"]["ready"] == _old_url(name) + "/health"


def test_validate_reads_no_facts(published):
    validate, entry = published["unread"]["validate"], published["unread"]["addresses"]
    assert validate["api"]["address"] is None and validate["api"]["needs_facts"] is True
    assert validate["problems"] == [
        "hostvars['unread'].sglang_server_host: unread binds 0.0.0.0, so another host needs an address to reach it: "
        "set its ansible_host, or gather its facts (default_ipv4) in the same play"]
    # the entry point read them; where this machine has a default route, it has the address
    assert entry["api"]["source"] in ("ansible_facts.default_ipv4.address", None)
    assert validate["api"]["probe_url"] == entry["api"]["probe_url"] == "http://127.0.0.1:30000"
    assert dict(validate, api=None, metrics=None, problems=None) == dict(entry, api=None, metrics=None, problems=None)


def test_the_probe_rule_as_the_role_always_applied_it(published):
    assert published["plain"]["validate_urls"]["base"] == "http://127.0.0.1:30000"
    assert published["bound"]["validate_urls"]["base"] == "http://10.0.0.5:30001"
    assert published["tls-v6"]["validate_urls"]["base"] == "https://[2001:DB8::1]:30000"
    for name in ("named", "10.7.7.7", "gathered", "mn-0"):
        assert published[name]["validate_urls"]["base"] == "http://127.0.0.1:30000", name


def test_what_other_hosts_reach(published):
    assert published["bound"]["validate"]["metrics"]["url"] == "http://10.0.0.5:30001/metrics"
    named = published["named"]["validate"]["api"]
    assert (named["address"], named["source"], named["url"]) == ("gpu-1.example", "ansible_host",
                                                                 "http://gpu-1.example:30000")
    # the inventory name, which a task sees as ansible_host, is not taken for one
    numeric = published["10.7.7.7"]["validate"]
    assert numeric["api"]["source"] != "ansible_host" and numeric["api"]["needs_facts"] is True
    assert numeric["api"]["address"] != "10.7.7.7" or numeric["api"]["source"].startswith("ansible_facts.")
    rendezvous = [published[name]["validate"]["rendezvous"] for name in ("mn-0", "mn-1")]
    assert [item["address"] for item in rendezvous] == ["10.9.0.1:26000", "10.9.0.2:26000"]
    assert published["plain"]["validate"]["rendezvous"] is None


@pytest.mark.parametrize("name", FAILING)
def test_a_value_the_probe_rule_refuses_fails_as_before(published, name):
    found = published[name]
    old = _old_url(name)
    assert old[0] == "failed"
    # without validation (preflight.yml's probe): the old filter's message
    assert old[1] in found["fallback_urls_error"], found["fallback_urls_error"]
    if name == "null-port":
        # the role's argument specification refuses it before validate.yml runs
        assert "argument 'sglang_server_port' is of type NoneType" in found["validate_error"]
        assert "validate" not in found
        return
    # validation lets it through and publishes the fact, whose probe_url is null; the probe fails as before
    assert found["validate"]["api"]["probe_url"] is None
    assert found["validate"] == found["addresses"]
    assert old[1] in found["validate_urls_error"], found["validate_urls_error"]
