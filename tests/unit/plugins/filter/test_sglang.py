# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.llmserve.sglang.plugins.filter import sglang as sglang_filter
from ansible_collections.llmserve.sglang.plugins.filter.sglang import FilterModule

GOOD = {
    "model_path": "/models/m",
    "tp_size": 2,
    "gpus": [0, 1],
    "speculative": {"algorithm": "nextn", "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4},
    "args": {"max_running_requests": 64},
    "p2p": "off",
    "api_key": "sk-filter-test-key",
    "config_path": "/etc/sglang/sglang.yaml",
}
FILTER_DIR = os.path.dirname(sglang_filter.__file__)


ALL_FILTERS = ["sglang_validate", "sglang_render", "sglang_unit_value", "sglang_base_url",
               "sglang_url_path", "sglang_device_problems", "sglang_node_group_check", "sglang_node_group_plan",
               "sglang_deploy_plan", "sglang_rollout_batches", "sglang_rollout_lease", "sglang_rollout_step_problems",
               "sglang_rollout_pools", "sglang_rollout_window_problems", "sglang_canary_gate", "sglang_canary_problems",
               "sglang_service_problems",
               "sglang_pip_redact", "sglang_node_firewall", "sglang_server_info_expected", "sglang_cache_layout",
               "sglang_server_addresses", "sglang_revision_swap", "sglang_revision_swap_group", "sglang_swap_verdict", "sglang_serving_record"]


def test_revision_swap_filters_report_bad_input_as_filter_errors():
    filters = FilterModule().filters()
    with pytest.raises(AnsibleFilterError, match="^sglang_revision_swap: plan_host_swap: plan, state and candidates"):
        filters["sglang_revision_swap"]([], {}, [], {}, None, "auto", "/m/" + "a" * 40, "a" * 40)
    with pytest.raises(AnsibleFilterError, match="^sglang_revision_swap: sglang_server_weight_swap must be one of"):
        filters["sglang_revision_swap"]({"restart_needed": True}, {}, [], {}, None, "often", "/m", "")
    with pytest.raises(AnsibleFilterError, match="^sglang_revision_swap_group: plan_group_swap: plan and node_plans"):
        filters["sglang_revision_swap_group"]({}, [], "auto")
    with pytest.raises(AnsibleFilterError, match="^sglang_serving_record: neutral_sums: model_path must be"):
        filters["sglang_serving_record"]({"unit": "x"}, ["unit"], "", "")
    text = filters["sglang_serving_record"]({"unit": "x", "env": "secret"}, ["unit"], "/m/" + "a" * 40, "a" * 40)
    assert "secret" not in text and '"weight_version": "' + "a" * 40 in text


def test_rollout_window_filters():
    filters = FilterModule().filters()
    assert filters["sglang_rollout_pools"]("w1", {"gw": [{"name": "w1", "url": "u"}, {"name": "w2", "url": "v"}]}, "50%") == [
        {"gateway": "gw", "size": 2, "window": 1, "min_healthy": 1}]
    with pytest.raises(AnsibleFilterError, match="^sglang_rollout_pools: sglang_rollout_max_unavailable: must be"):
        filters["sglang_rollout_pools"]("w1", {"gw": ["w1"]}, "often")
    with pytest.raises(AnsibleFilterError, match="^sglang_rollout_pools: pools must map"):
        filters["sglang_rollout_pools"]("w1", ["gw"], 1)
    assert filters["sglang_rollout_window_problems"](2) == []
    assert filters["sglang_rollout_window_problems"]("x")[0].startswith("sglang_rollout_max_unavailable: must be")
    assert len(filters["sglang_rollout_window_problems"](1, ["a", "b"], {"gw": ["a", "b", "c"]})) == 1
    with pytest.raises(AnsibleFilterError, match="^sglang_rollout_window_problems: a gateway's workers must be a list"):
        filters["sglang_rollout_window_problems"](1, ["a"], {"gw": "a"})


def test_filters_are_registered():
    filters = FilterModule().filters()
    assert set(filters) == set(ALL_FILTERS)


def test_validate_returns_errors():
    validate = FilterModule().filters()["sglang_validate"]
    assert validate(GOOD) == []
    errors = validate(dict(GOOD, speculative={"algorithm": "MTP"}))
    assert len(errors) == 1 and "NEXTN" in errors[0]
    assert validate(dict(GOOD, port=0), prefix="x_")[0].startswith("x_port: ")


def test_render_filter_gives_the_warnings():
    render = FilterModule().filters()["sglang_render"]
    assert render(GOOD)["warnings"] == []
    assert any("48" in w for w in render(dict(GOOD, args={}))["warnings"])


def test_render_filter():
    result = FilterModule().filters()["sglang_render"](GOOD)
    assert result["argv"][:2] == ["--model-path", "/models/m"]
    assert "--disable-custom-all-reduce" in result["argv"]
    assert result["config"] == {"api-key": "sk-filter-test-key"}
    assert "sk-filter-test-key" not in result["argv"]


def test_render_filter_fails_with_all_messages():
    render = FilterModule().filters()["sglang_render"]
    with pytest.raises(AnsibleFilterError) as info:
        render(dict(GOOD, port=0, served_model_name="a:b"))
    assert "sglang_server_port" in str(info.value)
    assert "sglang_server_served_model_name" in str(info.value)


@pytest.mark.parametrize("name", ["sglang_validate", "sglang_render"])
def test_filters_reject_non_dict_input(name):
    with pytest.raises(AnsibleFilterError, match="must be a dict"):
        FilterModule().filters()[name]("model_path=/m")


@pytest.mark.parametrize("name", ALL_FILTERS)
def test_every_filter_has_documentation(name):
    with open(os.path.join(FILTER_DIR, name + ".yml"), encoding="utf-8") as handle:
        doc = yaml.safe_load(handle)
    assert doc["DOCUMENTATION"]["name"] == name
    assert doc["DOCUMENTATION"]["options"]["_input"]["required"] is True
    assert "llmserve.sglang." + name in doc["EXAMPLES"]
    assert "_value" in doc["RETURN"]


def test_unit_value_filter():
    unit_value = FilterModule().filters()["sglang_unit_value"]
    assert unit_value("pa$word", "argument", "x") == '"pa$$word"'
    assert unit_value("A=pa$word", "environment", "x") == '"A=pa$word"'
    with pytest.raises(AnsibleFilterError, match=r"^sglang_server_env\.FOO: contains a control character \(NUL at "
                                                 r"offset 5\)"):
        unit_value("FOO=x\0ExecStartPre=+/bin/true", "environment", "sglang_server_env.FOO")


def test_base_url_filter():
    base_url = FilterModule().filters()["sglang_base_url"]
    assert base_url({}, "0.0.0.0", 30000) == "http://127.0.0.1:30000"
    assert base_url({"ssl_certfile": "/c", "ssl_keyfile": "/k"}, "::1", 8443) == "https://[::1]:8443"
    with pytest.raises(AnsibleFilterError, match="sglang_base_url: host"):
        base_url({}, "127.0.0.1@evil.example", 30000)


class _HostVars(Mapping):
    """Like hostvars[host]: a mapping that templates a value when asked; here any other variable fails."""

    def __init__(self, data):
        self.data = data

    def __getitem__(self, key):
        if key not in self.data:
            raise AssertionError("read %s" % key)
        return self.data[key]

    def __contains__(self, key):
        return key in self.data

    def __iter__(self):
        raise AssertionError("every variable templated")

    def __len__(self):
        return len(self.data)


def test_server_addresses_filter():
    addresses = FilterModule().filters()["sglang_server_addresses"]
    found = addresses(_HostVars({"inventory_hostname": "w1", "sglang_server_host": "::", "unrelated": "{{ boom }}",
                                 "ansible_facts": {"default_ipv6": {"address": "fd00::1"}}}))
    assert (found["api"]["url"], found["api"]["probe_url"]) == ("http://[fd00::1]:30000", "http://127.0.0.1:30000")
    assert addresses({"sglang_server_host": "10.0.0.1"}, "w2")["name"] == "w2"
    with pytest.raises(AnsibleFilterError, match="^sglang_server_addresses: the input must be the host's variables"):
        addresses(["w1"])


def test_url_path_filter():
    url_path = FilterModule().filters()["sglang_url_path"]
    assert url_path("/health") == "/health"
    with pytest.raises(AnsibleFilterError, match="^sglang_server_ready_path: must be a plain absolute URL path"):
        url_path("@evil.example/health")
    with pytest.raises(AnsibleFilterError, match="^my_path: "):
        url_path("//evil.example", "my_path")


def test_device_problems_filter():
    problems = FilterModule().filters()["sglang_device_problems"]
    facts = {"char_devices": [{"major": 195, "name": "nvidia"}, {"major": 195, "name": "nvidiactl"}],
             "device_nodes": [{"path": "/dev/nvidia0", "major": 195, "minor": 0}]}
    assert problems(facts, ["nvidia", "nvidia-uvm"]) == []
    (problem,) = problems(facts, ["nvidia-frontend"])
    assert problem.startswith("/dev/nvidia0 (char 195:0): ") and "'nvidia', 'nvidiactl'" in problem
    with pytest.raises(AnsibleFilterError, match="have no char_devices or device_nodes"):
        problems({}, ["nvidia"])
    with pytest.raises(AnsibleFilterError, match="must be the gpu_host facts"):
        problems([], ["nvidia"])
    with pytest.raises(AnsibleFilterError, match="allowed_classes must be a list"):
        problems(facts, "nvidia")


def _collections_path():
    here = os.path.realpath(FILTER_DIR)
    for entry in sys.path:
        link = os.path.join(entry, "ansible_collections", "llmserve", "sglang")
        if os.path.islink(link) and os.path.realpath(os.path.join(link, "plugins", "filter")) == here:
            return entry
    pytest.skip("collection link tree not found on sys.path")
    return None


def test_filter_through_ansible_fqcn(tmp_path):
    """The filters load under their FQCN in a real playbook run (localhost, no connection)."""
    bindir = os.path.dirname(sys.executable)
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        "- hosts: localhost\n"
        "  gather_facts: false\n"
        "  vars:\n"
        "    cfg: " + json.dumps(GOOD) + "\n"
        "  tasks:\n"
        "    - ansible.builtin.debug:\n"
        "        msg: \"{{ {'errors': cfg | llmserve.sglang.sglang_validate,"
        " 'bad': (cfg | combine({'port': 0})) | llmserve.sglang.sglang_validate,"
        " 'argv': (cfg | llmserve.sglang.sglang_render).argv} | to_json }}\"\n",
        encoding="utf-8",
    )
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=_collections_path(), ANSIBLE_STDOUT_CALLBACK="json",
               ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
               ANSIBLE_NOCOLOR="1", ANSIBLE_HOME=str(tmp_path / "home"))
    result = subprocess.run([os.path.join(bindir, "ansible-playbook"), "-i", "localhost,", "-c", "local",
                             str(playbook)], capture_output=True, text=True, env=env, check=False, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    output = json.loads(result.stdout)
    msg = json.loads(output["plays"][0]["tasks"][0]["hosts"]["localhost"]["msg"])
    assert msg["errors"] == []
    assert msg["bad"] and msg["bad"][0].startswith("sglang_server_port: ")
    assert msg["argv"][:4] == ["--model-path", "/models/m", "--tp-size", "2"]
    assert "sk-filter-test-key" not in msg["argv"]


def _mn_node(name, address, **extra):
    node = {"inventory_hostname": name, "ansible_host": address,
            "ansible_facts": {"eth0": {"device": "eth0", "ipv4": {"address": address}}},
            "sglang_server_node_group": "mn", "sglang_server_model_path": "/m", "sglang_server_tp_size": 2,
            "sglang_server_dist_init_port": 25000, "sglang_server_port": 30000}
    node.update(extra)
    return node


def test_node_group_filters():
    filters = FilterModule().filters()
    nodes = {"b": _mn_node("b", "10.1.0.2"), "a": _mn_node("a", "10.1.0.1")}
    assert filters["sglang_node_group_check"](nodes, "mn") == []
    plan = filters["sglang_node_group_plan"](nodes, "mn")
    assert plan["b"] == {"nnodes": 2, "node_rank": 1, "dist_init_addr": "10.1.0.1:25000", "node_ifname": "eth0",
                         "node_firewall": {"enabled": True, "ports": ["30000"], "sources": ["10.1.0.1", "10.1.0.2"]}}
    lines = filters["sglang_node_firewall"](plan["a"]["node_firewall"], "sglang-big.x")
    assert lines["table"] == "llmserve_sglang_big_x"
    assert "tcp dport { 25000 } ip saddr { 10.1.0.1, 10.1.0.2 } accept" in lines["load"]
    assert lines["remove"] == "table inet llmserve_sglang_big_x; delete table inet llmserve_sglang_big_x"
    assert filters["sglang_node_firewall"](dict(plan["a"]["node_firewall"], enabled=False), "s")["load"] is None
    with pytest.raises(AnsibleFilterError, match="is not a TCP port"):
        filters["sglang_node_firewall"](dict(plan["a"]["node_firewall"], ports=["25000; flush ruleset"]), "s")
    with pytest.raises(AnsibleFilterError, match="is not an IP address"):
        filters["sglang_node_firewall"](dict(plan["a"]["node_firewall"], sources=["1.2.3.4 } accept"]), "s")
    bad = dict(nodes, b=_mn_node("b", "10.1.0.2", sglang_server_tp_size=4))
    errors = filters["sglang_node_group_check"](bad, "mn")
    assert errors and errors[0].startswith("sglang_server_tp_size: ")
    with pytest.raises(AnsibleFilterError, match="sglang_server_tp_size"):
        filters["sglang_node_group_plan"](bad, "mn")
    with pytest.raises(AnsibleFilterError, match="group must be"):
        filters["sglang_node_group_check"](nodes, 3)


def test_service_problems_filter():
    problems = FilterModule().filters()["sglang_service_problems"]
    assert problems({"prefix": "sglang_server_", "user": "sglang", "group": "sglang"}) == []
    assert problems({"prefix": "sglang_server_", "user": "root", "group": "sglang"})[0].startswith(
        "sglang_server_user: is root")
    with pytest.raises(AnsibleFilterError, match="state must be a deploy_state result"):
        problems({"user": "sglang"}, state=[])


def test_the_canary_filters_judge_registered_reads_and_name_bad_settings():
    filters = FilterModule().filters()
    assert filters["sglang_canary_problems"]("auto") == []
    assert filters["sglang_canary_problems"](1, 0)[0].startswith("sglang_rollout_canary_seconds must be")
    # no reads at all: the gate cannot judge, and says so
    verdict = filters["sglang_canary_gate"]("c", start={"results": []}, end={"results": []}, loop_var="w")
    assert verdict["verdict"] == "inconclusive" and verdict["message"] == "canary c has no numbers"
