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


def _run(tmp_path, args):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=_collections_path(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_HOME=str(tmp_path / "home"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                           "-e", "ansible_python_interpreter=" + sys.executable] + args,
                          capture_output=True, text=True, env=env, cwd=ROOT, check=False, timeout=300)


def test_site_ends_with_the_monitoring_and_it_touches_only_its_group():
    with open(os.path.join(ROOT, "playbooks", "site.yml"), encoding="utf-8") as handle:
        site = yaml.safe_load(handle)
    assert site[-1]["ansible.builtin.import_playbook"] == "monitoring.yml"
    with open(os.path.join(ROOT, "playbooks", "monitoring.yml"), encoding="utf-8") as handle:
        plays = yaml.safe_load(handle)
    assert [play["hosts"] for play in plays][1:] == ["sglang_monitoring"]
    # the node exporter play: only the hosts of its group (tested below)
    assert plays[0]["hosts"] == "{{ sglang_monitoring_node_exporters_group | default('sglang_node_exporters') }}"
    (facts,) = [task for task in plays[1]["tasks"] if "ansible.builtin.setup" in task]
    # read-only network facts, only of the hosts Prometheus has no address for
    assert facts["ansible.builtin.setup"] == {"gather_subset": ["!all", "!min", "network"]}
    assert facts["delegate_facts"] is True and facts["run_once"] is True
    assert "hostvars[item]['ansible_host'] is not defined" in facts["when"]


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
