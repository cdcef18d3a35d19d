# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The gateway lists only rank 0 of a multi-node server as a worker (docs/multinode.md): its other nodes answer a
dummy /health that is always 200 and serve no API. One ansible-playbook run of the role's controller-only validate
step over an inventory with a single-host server and two 2-node servers (ranks by name, and ranks set explicitly
against the name order)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PLAYBOOK = """
- hosts: sglang_gateways
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: llmserve.sglang.sglang_gateway
        tasks_from: validate
    - ansible.builtin.copy:
        dest: "{{ out }}"
        content: "{{ sglang_gateway_workers | to_json }}"
        mode: "0644"
      delegate_to: localhost
"""


def test_gateway_lists_rank_0_of_a_multinode_server_only(tmp_path):
    tree = os.environ.get("LLMSERVE_PYTEST_TREE")
    if not tree:
        pytest.skip("collection link tree not found (run from the repository root, which has the conftest)")
    node = {"sglang_server_host": "0.0.0.0", "sglang_server_port": 30000}
    inventory = {"all": {"vars": {"ansible_connection": "local"}, "children": {
        "sglang_gateways": {"hosts": {"gw": {"sglang_gateway_admin_api_key": "adm-0123456789abcdef",
                                             "sglang_gateway_worker_api_key": "wk-0123456789abcdef"}}},
        "sglang_servers": {"hosts": {
            "single": dict(node, ansible_host="10.0.0.1"),
            # by name: big-a is rank 0, whatever the inventory order
            "big-b": dict(node, ansible_host="10.0.0.3", sglang_server_node_group="big"),
            "big-a": dict(node, ansible_host="10.0.0.2", sglang_server_node_group="big"),
            # set explicitly, against the name order
            "other-0": dict(node, ansible_host="10.0.0.4", sglang_server_node_group="other", sglang_server_node_rank=1),
            "other-1": dict(node, ansible_host="10.0.0.5", sglang_server_node_group="other", sglang_server_node_rank=0),
        }},
        "big": {"hosts": {"big-a": {}, "big-b": {}}},
        "other": {"hosts": {"other-0": {}, "other-1": {}}}}}}
    (tmp_path / "inv.json").write_text(json.dumps(inventory))
    (tmp_path / "p.yml").write_text(PLAYBOOK)
    out = tmp_path / "workers.json"
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=tree, ANSIBLE_INJECT_FACT_VARS="false")
    run = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(tmp_path / "inv.json"),
                          "-e", "ansible_python_interpreter=" + sys.executable, "-e", "out=" + str(out),
                          str(tmp_path / "p.yml")], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    workers = json.loads(out.read_text())
    assert [w["name"] for w in workers] == ["single", "big-a", "other-1"]
    assert [w["url"] for w in workers] == ["http://10.0.0.1:30000", "http://10.0.0.2:30000", "http://10.0.0.5:30000"]
