# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/gateway.yml: the gateway role runs under the per-host lock and the gateway lock (their lease, the gateway
phase's, is tested with the other leases in tests/unit/plugins/plugin_utils/test_rollout_lease.py), and the playbook
parses against the example inventory."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ansible_collections.llmserve.sglang.tests.unit.playbooks.test_playbook_locks import (
    GATEWAY_LOCK,
    LOCK,
    ROOT,
    flatten,
    load,
    role_of,
)


def gateway_play():
    return load("playbooks", "gateway.yml")[1]


def test_the_role_runs_between_taking_and_releasing_the_lock():
    """The host's lock, then the gateway lock (exclusive: no worker is out of this gateway meanwhile, as drains
    hold it shared), both released whatever happens."""
    steps = []
    for task in flatten(gateway_play()["tasks"]):
        if LOCK in task:
            path = task[LOCK].get("path")
            assert path == GATEWAY_LOCK
            steps.append("gateway-lock:" + task[LOCK].get("state", "acquired"))
            assert "always" in task.get("tags", [])
            assert task[LOCK].get("mode", "exclusive") == "exclusive"
            if "lease" in task[LOCK]:
                assert task[LOCK]["lease"] == "{{ __sglang_lock_lease_gateway }}", "the host lock's lease"
        elif role_of(task):
            steps.append(role_of(task))
            if role_of(task).startswith("rollout:"):
                assert "always" in task.get("tags", [])
    assert steps == ["rollout:begin", "gateway-lock:acquired", "sglang_gateway", "gateway-lock:released",
                     "rollout:end"]
    (begin,) = [t for t in gateway_play()["tasks"] if role_of(t) == "rollout:begin"]
    assert begin["vars"] == {"sglang_rollout_phase": "gateway"}
    block = [t for t in gateway_play()["tasks"] if "block" in t][0]
    take, release = block["block"][0], block["always"][0]
    assert take[LOCK].get("path") == GATEWAY_LOCK and release[LOCK].get("path") == GATEWAY_LOCK
    assert "%s is succeeded" % take["register"] in release["when"], "a lock that was not taken is not released"


def test_syntax_check_with_the_example_inventory():
    tree = os.environ.get("LLMSERVE_PYTEST_TREE")
    if not tree:
        pytest.skip("collection link tree not found")
    inventory = os.path.join(ROOT, "inventories", "example")
    result = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "--syntax-check", "-i", inventory,
         "--vault-password-file", os.path.join(inventory, "vault-password.example.txt"),
         os.path.join(ROOT, "playbooks", "gateway.yml")],
        capture_output=True, text=True, check=False, timeout=300,
        env=dict(os.environ, ANSIBLE_COLLECTIONS_PATH=tree, ANSIBLE_NOCOLOR="1"))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


@pytest.mark.parametrize("limit", [None, "gw,loopback", "gw"])
def test_workers_bound_to_every_address_get_their_network_facts(tmp_path, limit):
    """plays/worker_addresses.yml, run for real: a worker that binds 0.0.0.0 without an ansible_host has its network
    facts read (the gateway reaches it at its default address), also when --limit leaves it out of the run (the
    gateways' configuration lists every worker); one with an ansible_host, or bound to one address, is not
    contacted."""
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "all:\n"
        "  vars: {ansible_connection: local, ansible_python_interpreter: %s}\n"
        "  children:\n"
        "    sglang_gateways: {hosts: {gw: {}}}\n"
        "    sglang_servers:\n"
        "      hosts:\n"
        "        wildcard: {sglang_server_host: 0.0.0.0}\n"
        "        named: {sglang_server_host: 0.0.0.0, ansible_host: 127.0.0.1}\n"
        "        loopback: {sglang_server_host: 127.0.0.1}\n" % sys.executable)
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        "- ansible.builtin.import_playbook: %s\n"
        "- hosts: gw\n"
        "  gather_facts: false\n"
        "  tasks:\n"
        "    - ansible.builtin.debug:\n"
        "        msg: \"FACTS {{ groups['sglang_servers'] | map('extract', hostvars) | selectattr('ansible_facts.interfaces', 'defined')"
        " | map(attribute='inventory_hostname') | list | to_json }}\"\n"
        % os.path.join(ROOT, "playbooks", "plays", "worker_addresses.yml"))
    result = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(inventory), str(playbook)]
        + (["--limit", limit] if limit else []),
        # facts only from this run: a fact cache (the project's ansible.cfg has one) could hold an earlier run's
        capture_output=True, text=True, timeout=300, check=False, env=dict(os.environ, ANSIBLE_CACHE_PLUGIN="memory"))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert 'FACTS [\\"wildcard\\"]' in result.stdout or 'FACTS ["wildcard"]' in result.stdout, result.stdout[-3000:]
