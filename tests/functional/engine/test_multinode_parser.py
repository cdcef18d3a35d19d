# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The example inventory's multi-node server: both nodes' command lines, parsed by the REAL SGLang 0.5.23 parser.

``inventories/example`` has one server over two hosts (group ``sglang_qwen3_235b``: gpu-node-02 and
gpu-node-03, tensor parallel 8 = 2 x 4 GPUs). For each node the test does what ``roles/sglang_server/tasks/
validate.yml`` does, with Ansible's own Templar and the task templates read from that file: the node's
"Record this node's multi-node settings" dict, the group plan (``node_group_plan``, as the
``llmserve.sglang.server_config`` action), then the configuration that action builds from the role's variables
(``server_config.build_config``) with the node's plan, rendered by ``render_server_argv``. The role's ``files/sglang_parser_check.py`` then runs once per node
with the python of the CPU SGLang venv (``LLMSERVE_SGLANG_VENV``), and what argparse made of
``--nnodes``/``--node-rank``/``--dist-init-addr`` is compared with the plan.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ansible_collections.llmserve.sglang.tests.functional.engine.example_inventory import load_example

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "sglang_server"
INVENTORY = ROOT / "inventories" / "example"
CHECK_SCRIPT = ROLE / "files" / "sglang_parser_check.py"
GROUP = "sglang_qwen3_235b"
NODES = ("gpu-node-02", "gpu-node-03")
FABRIC = {"gpu-node-02": "10.20.0.2", "gpu-node-03": "10.20.0.3"}

VAR_FILES = (
    ROLE / "defaults" / "main.yml",
    INVENTORY / "group_vars" / "sglang_servers" / "main.yml",
    INVENTORY / "group_vars" / GROUP / "main.yml",
    INVENTORY / "group_vars" / "sglang_servers" / "vault.yml",
    ROLE / "vars" / "main.yml",
)


def _task(tasks, name):
    found = [t for t in tasks if t.get("name") == name]
    assert len(found) == 1, "validate.yml no longer has the task %r" % name
    return found[0]["ansible.builtin.set_fact"]


def _plan_and_cfgs():
    from ansible.template import Templar

    from ansible_collections.llmserve.sglang.plugins.plugin_utils.server_config import (
        OPTIONAL_VARIABLES,
        VARIABLES,
        build_config,
    )
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_nodes import node_group_plan

    loader, base, tasks = load_example(VAR_FILES)
    hosts = loader.load_from_file(str(INVENTORY / "hosts.yml"))["all"]["children"]["sglang_servers"]["children"][GROUP]["hosts"]
    assert tuple(sorted(hosts)) == NODES
    record = _task(tasks, "Record this node's multi-node settings")["__sglang_server_node_vars"]

    variables = {}
    records = {}
    for name in NODES:
        # the network facts site.yml, restart.yml and rollback.yml gather on the nodes: the fabric interface's address
        facts = {"ens6f0np0": {"device": "ens6f0np0", "ipv4": {"address": FABRIC[name]}}}
        variables[name] = dict(base, inventory_hostname=name, ansible_host=hosts[name]["ansible_host"],
                               ansible_facts=facts, __sglang_server_network_facts=facts)
        records[name] = Templar(loader=loader, variables=variables[name]).template(record)
    plan = node_group_plan(records, GROUP)
    cfgs = {}
    for name in NODES:
        # the variables as the action reads them (by name, templated for the host)
        templar = Templar(loader=loader, variables=variables[name])
        values = dict((var, templar.resolve_variable_expression(var)) for var in VARIABLES
                      if var in variables[name] or var not in OPTIONAL_VARIABLES)
        cfgs[name] = build_config(values, plan[name])
    return plan, cfgs


@pytest.fixture(scope="module")
def rendered():
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args import (
        render_server_argv,
        validate_server_config,
    )

    plan, cfgs = _plan_and_cfgs()
    for name in NODES:
        assert validate_server_config(cfgs[name]) == [], name
    return plan, dict((name, render_server_argv(cfgs[name])) for name in NODES)


def test_plan_of_the_example_group(rendered):
    plan, result = rendered
    peers = ["10.20.0.2", "10.20.0.3"]
    assert plan == {
        "gpu-node-02": {"nnodes": 2, "node_rank": 0, "dist_init_addr": "10.20.0.2:25000", "node_ifname": "ens6f0np0",
                        "node_firewall": {"enabled": True, "ports": ["25000"], "sources": peers}},
        "gpu-node-03": {"nnodes": 2, "node_rank": 1, "dist_init_addr": "10.20.0.2:25000", "node_ifname": "ens6f0np0",
                        "node_firewall": {"enabled": True, "ports": ["30000"], "sources": peers}},
    }
    for name in NODES:
        argv = result[name]["argv"]
        assert argv[argv.index("--nnodes"):argv.index("--nnodes") + 6] == [
            "--nnodes", "2", "--node-rank", str(plan[name]["node_rank"]), "--dist-init-addr", "10.20.0.2:25000"]
        assert argv[argv.index("--tp-size") + 1] == "8"
        env = result[name]["env"]
        assert env["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"
        assert env["NCCL_SOCKET_IFNAME"] == env["GLOO_SOCKET_IFNAME"] == "ens6f0np0"
        api_key = result[name]["config"]["api-key"]
        assert api_key and not api_key.startswith("{{") and api_key not in argv


def test_both_nodes_parse_with_the_real_parser(rendered, tmp_path, sglang_venv):
    plan, result = rendered
    env = dict(os.environ, HOME=str(tmp_path), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    procs = {}
    for name in NODES:
        args_file = tmp_path / ("%s.json" % name)
        args_file.write_text(json.dumps({"argv": result[name]["argv"]}))
        procs[name] = subprocess.Popen([sglang_venv, str(CHECK_SCRIPT), str(args_file)], env=env, cwd=str(tmp_path),
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    outputs = {}
    try:
        for name, proc in procs.items():
            out, err = proc.communicate(timeout=180)
            assert proc.returncode == 0, "%s: %s" % (name, err[-3000:])
            outputs[name] = json.loads(out.strip().splitlines()[-1])
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for name in NODES:
        parsed = outputs[name]
        assert parsed["nnodes"] == 2 and parsed["tp_size"] == 8
        assert parsed["node_rank"] == plan[name]["node_rank"]
        assert parsed["dist_init_addr"] == "10.20.0.2:25000"
        assert parsed["model_path"] == "/models/Qwen3-235B-A22B-Instruct-2507"
