# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/gateway.yml: the gateway role runs under the per-host lock and the gateway lock (their lease, the gateway
phase's, is tested with the other leases in tests/unit/plugins/plugin_utils/test_rollout_lease.py), and the playbook
parses against the example inventory."""

from __future__ import annotations

import json
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
from ansible_collections.llmserve.sglang.tests.unit.collection_tree import collections_path


def gateway_play():
    plays = load("playbooks", "gateway.yml")
    # the refusal of a sliced AWX run, the worker addresses, then the gateways
    imported = [p.get("ansible.builtin.import_playbook") for p in plays[:2]]
    assert imported == ["plays/unsliced.yml", "plays/worker_addresses.yml"]
    return plays[2]


def test_the_role_runs_between_taking_and_releasing_the_lock():
    """The host's lock, then the gateway lock (exclusive: no worker is out of this gateway meanwhile, as drains
    hold it shared), both released whatever happens: the rollout's gateway stage, around the declared gateway step."""
    (task,) = gateway_play()["tasks"]
    assert task["ansible.builtin.import_role"] == {"name": "llmserve.sglang.sglang_rollout"}
    assert task["vars"]["sglang_rollout_stage"] == "gateway"
    assert [s["role"] for s in task["vars"]["sglang_rollout_steps"]] == ["llmserve.sglang.sglang_gateway"]
    stage = load("roles", "sglang_rollout", "tasks", "stage_gateway.yml")
    steps = []
    for task in flatten(stage):
        if LOCK in task:
            path = task[LOCK].get("path")
            assert path == GATEWAY_LOCK
            steps.append("gateway-lock:" + task[LOCK].get("state", "acquired"))
            assert "always" in task.get("tags", [])
            assert task[LOCK].get("mode", "exclusive") == "exclusive"
            if "lease" in task[LOCK]:
                assert task[LOCK]["lease"] == "{{ __sglang_rollout_lease_gateway }}", "the host lock's lease"
        elif "ansible.builtin.import_tasks" in task:
            steps.append("rollout:" + task["ansible.builtin.import_tasks"][:-4])
    assert steps == ["rollout:budgets", "rollout:begin", "gateway-lock:acquired", "rollout:steps",
                     "gateway-lock:released", "rollout:end"]
    (block,) = [t for t in stage if "block" in t]
    assert block["block"][0]["vars"] == {"sglang_rollout_phase": "gateway"}
    take, release = block["block"][1], block["always"][0]
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


@pytest.mark.parametrize("args, read", [
    ([], ["wildcard"]),
    (["--limit", "gw,loopback"], ["wildcard"]),
    (["--limit", "gw"], ["wildcard"]),
    # read-only: the same in check mode
    (["--check"], ["wildcard"]),
    # untagged, as the plain tasks the play held before: a run that selects tags reads nothing here
    (["--tags", "sglang_gateway"], []),
])
def test_workers_bound_to_every_address_get_their_network_facts(tmp_path, args, read):
    """plays/worker_addresses.yml (the sglang_gateway role's entry point worker_addresses), run for real: a worker
    that binds 0.0.0.0 without an ansible_host has its network facts read (the gateway reaches it at its default
    address), also when --limit leaves it out of the run (the gateways' configuration lists every worker); one with
    an ansible_host, or bound to one address, is not contacted, nor is the gateway. The play only calls the role."""
    (play,) = load("playbooks", "plays", "worker_addresses.yml")
    assert play["hosts"] == "{{ sglang_gateway_workers_group | default('sglang_servers') }}:sglang_gateways"
    assert set(play) == {"name", "hosts", "gather_facts", "tasks"}, "no vars, no decisions of its own"
    (task,) = play["tasks"]
    assert role_of(task) == "sglang_gateway:worker_addresses"
    assert set(task) == {"name", "ansible.builtin.include_role"}, "no when, no tags, no vars"
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
        "        msg: \"FACTS {{ groups['all'] | map('extract', hostvars)"
        " | selectattr('ansible_facts.interfaces', 'defined')"
        " | map(attribute='inventory_hostname') | list | to_json }}\"\n"
        "      tags: [always]\n"
        % os.path.join(ROOT, "playbooks", "plays", "worker_addresses.yml"))
    result = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(inventory), str(playbook)]
        + args,
        # facts only from this run: a fact cache (the project's ansible.cfg has one) could hold an earlier run's
        capture_output=True, text=True, timeout=300, check=False,
        env=dict(os.environ, ANSIBLE_CACHE_PLUGIN="memory", ANSIBLE_COLLECTIONS_PATH=collections_path(),
                 ANSIBLE_NOCOLOR="1"))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    facts = [line for line in result.stdout.splitlines() if "FACTS " in line]
    assert len(facts) == 1, result.stdout[-3000:]
    assert json.loads(facts[0].split("FACTS ", 1)[1].rstrip('"').replace('\\"', '"')) == read, facts[0]
    # the role's argument check comes with the read, and is left out with it
    assert ("Validating arguments against arg spec 'worker_addresses'" in result.stdout) == bool(read)
