# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""monitoring.yml: only the hosts of group sglang_monitoring, so site.yml (which imports it last) runs unchanged for an
inventory without the group; the example inventory's targets."""

from __future__ import annotations

import os
import subprocess
import sys

import yaml
from ansible_collections.llmserve.sglang.tests.unit.collection_tree import collections_path as _collections_path

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def _run(tmp_path, args, **extra_env):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=_collections_path(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_HOME=str(tmp_path / "home"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), **extra_env)
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                           "-e", "ansible_python_interpreter=" + sys.executable] + args,
                          capture_output=True, text=True, env=env, cwd=ROOT, check=False, timeout=300)


def _load(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def test_site_ends_with_the_monitoring_and_it_touches_only_its_group():
    site = _load("playbooks", "site.yml")
    assert site[-1]["ansible.builtin.import_playbook"] == "monitoring.yml"
    plays = _load("playbooks", "monitoring.yml")
    assert [play["hosts"] for play in plays][1:] == ["sglang_monitoring"]
    # the node exporter play: only the hosts of its group (tested below)
    assert plays[0]["hosts"] == "{{ sglang_monitoring_node_exporters_group | default('sglang_node_exporters') }}"
    # each play only calls the role: no variables, no decisions, no tasks of its own
    for play, entry in ((plays[0], "node_exporter"), (plays[1], None)):
        assert "vars" not in play
        (task,) = play["tasks"]
        call = task.get("ansible.builtin.include_role") or task["ansible.builtin.import_role"]
        assert call["name"] == "llmserve.sglang.sglang_monitoring" and call.get("tasks_from") == entry
        assert "when" not in task
    assert plays[1]["tasks"][0]["tags"] == ["sglang_monitoring"]


def test_the_role_reads_the_addresses_first():
    """The network facts the targets need are read at the start of the role's main entry point (entry point
    addresses), with the tags the read had in the play (the role's import adds sglang_monitoring)."""
    first = _load("roles", "sglang_monitoring", "tasks", "main.yml")[0]
    assert first["ansible.builtin.import_tasks"] == "addresses.yml"
    assert first["tags"] == ["sglang_monitoring", "sglang_monitoring_targets"]
    (facts,) = _load("roles", "sglang_monitoring", "tasks", "addresses.yml")
    # read-only network facts, delegated, once
    assert facts["ansible.builtin.setup"] == {"gather_subset": ["!all", "!min", "network"]}
    assert facts["delegate_facts"] is True and facts["run_once"] is True and facts["ignore_unreachable"] is True
    specs = _load("roles", "sglang_monitoring", "meta", "argument_specs.yml")["argument_specs"]
    assert set(specs["addresses"]["options"]) == {"sglang_monitoring_servers_group", "sglang_monitoring_gateways_group"}


def _read_addresses(tmp_path, *args):
    """monitoring.yml on a local Prometheus host, then the inventory hosts whose network facts were read."""
    local = {"ansible_connection": "local"}
    inventory = {"all": {"children": {
        "sglang_servers": {"vars": {"sglang_server_metrics": True}, "hosts": {
            "wild": dict(local, sglang_server_host="0.0.0.0"),
            "named": dict(local, sglang_server_host="0.0.0.0", ansible_host="10.0.0.10"),
            "fixed": dict(local, sglang_server_host="10.0.0.9")}},
        "sglang_gateways": {"hosts": {
            "gw-wild": dict(local, sglang_gateway_host="0.0.0.0"),
            "gw-metrics": dict(local, sglang_gateway_host="10.0.0.8", sglang_gateway_metrics_host="::"),
            "gw-fixed": dict(local, sglang_gateway_host="10.0.0.7")}},
        "sglang_monitoring": {"hosts": {"prometheus-01": local}}}}}
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "play.yml").write_text(yaml.safe_dump([
        {"ansible.builtin.import_playbook": os.path.join(ROOT, "playbooks", "monitoring.yml")},
        {"hosts": "prometheus-01", "gather_facts": False, "tasks": [{"ansible.builtin.debug": {
            "msg": "READ {{ groups['all'] | map('extract', hostvars)"
                   " | selectattr('ansible_facts.interfaces', 'defined')"
                   " | map(attribute='inventory_hostname') | sort | join(',') }}"}, "tags": ["always"]}]}]))
    argv = ["-i", str(tmp_path / "inventory.yml"), "-e", "sglang_monitoring_targets_dir=%s" % (tmp_path / "file_sd"),
            "--check", str(tmp_path / "play.yml")] + list(args)
    # facts only from this run: the project's ansible.cfg keeps a fact cache
    result = _run(tmp_path, argv, ANSIBLE_CACHE_PLUGIN="memory")
    read = [line.split("READ ", 1)[1].rstrip('"') for line in result.stdout.splitlines() if "READ " in line]
    return result, read


def test_servers_and_gateways_bound_to_every_address_get_their_network_facts(tmp_path):
    # read-only, so in check mode too (the target files are not written); a run limited to the Prometheus host
    # still reads them (delegated)
    for limit in ([], ["--limit", "prometheus-01"]):
        result, read = _read_addresses(tmp_path, "--tags", "sglang_monitoring_targets", *limit)
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
        assert read == ["gw-metrics,gw-wild,wild"]
    # the controller-only checks contact no host: without the addresses the targets name what is missing
    result, read = _read_addresses(tmp_path, "--tags", "sglang_monitoring_validate")
    assert result.returncode == 2 and read == []
    assert "-> wild]" not in result.stdout and "wild binds 0.0.0.0, so Prometheus needs an address" in result.stdout


def test_an_inventory_without_the_group_matches_no_host(tmp_path):
    result = _run(tmp_path, ["-i", "inventories/demo", "monitoring.yml"])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "skipping: no hosts matched" in result.stdout
    assert "TASK [" not in result.stdout


def test_the_node_exporter_play_runs_on_its_group_only(tmp_path):
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {"gpu-c": {}}, "children": {"sglang_node_exporters": {
        "hosts": {"gpu-a": {}, "gpu-d": {"sglang_monitoring_node_exporter_textfile_dir": "textfiles"}}}}}}))
    # the controller-side check only: it fails gpu-d's relative directory, nothing is contacted
    result = _run(tmp_path, ["-i", str(inventory), "-e", "ansible_connection=local", "--tags",
                             "sglang_monitoring_validate", "monitoring.yml"])
    out = result.stdout
    assert result.returncode == 2, out[-4000:] + result.stderr[-2000:]
    assert "skipping: [gpu-a]" in out and "fatal: [gpu-d]" in out
    assert "sglang_monitoring_node_exporter_textfile_dir: must be an absolute path" in out
    assert "gpu-c" not in out


def test_the_example_inventory_gives_its_targets(tmp_path):
    # the controller-side steps only (validate and the targets): nothing is contacted
    result = _run(tmp_path, ["-i", "inventories/example", "-v", "--vault-password-file",
                             "inventories/example/vault-password.example.txt", "-e", "ansible_connection=local",
                             "-e", "ansible_become=false", "--tags", "sglang_monitoring_validate", "monitoring.yml"])
    out = result.stdout
    assert result.returncode == 0, out[-4000:] + result.stderr[-2000:]
    for target in ("gpu-node-01.example.internal:30000", "gpu-node-02.example.internal:30000",
                   "gateway-01.example.internal:29000", "gpu-node-03.example.internal:9100"):
        assert target in out, target
    # rank 1 of the two-node server is no SGLang target
    assert "gpu-node-03.example.internal:30000" not in out
    assert "vault_sglang_api_key" not in out and "Bearer" not in out
