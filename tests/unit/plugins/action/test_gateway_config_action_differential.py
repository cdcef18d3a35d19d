# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The gateway_config action's Python (plugin_utils/gateway_role.py) against the Jinja path it replaced, over many
generated inventories.

The old path is files/jinja_gateway_validate.yml (the role's validate.yml of commit 3e44798), emulated here task by
task in one process: Ansible's own Templar templates its loop, ``when``, ``vars`` and set_fact expressions exactly as
written there (so Jinja's ``int``, ``sort``, ``length`` and ``default`` behave as they did), and the collection's
filters are called the way its tasks called them (``sglang_gateway_validate`` and ``sglang_service_problems`` for the
first assert, the install and version conditions for the second, ``range_problems`` for the third, then
``sglang_gateway_render`` and the remarks expression). The old asserts stopped at the first that failed; the action
reports every problem at once, so the old messages are the three asserts' messages in their order.

For every inventory both must give the same outcome: the same workers from the loop; the same problems, or the same
rendered gateway (its ``warnings`` are the action's ``gateway_warnings``), workers, URL and remarks; or both fail
where the Jinja could not template the inventory (a node group without a length, a host missing from its own node
group). tests/unit/plugins/action/test_gateway_config_action.py runs both through ansible-playbook for a few of them.
"""

from __future__ import annotations

import json
import os
import random

import pytest
from ansible.errors import AnsibleError
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.llmserve.sglang.plugins.filter.checks import range_problems as range_filter
from ansible_collections.llmserve.sglang.plugins.filter.sglang import sglang_service_problems
from ansible_collections.llmserve.sglang.plugins.filter.sglang_gateway import (
    sglang_gateway_render,
    sglang_gateway_validate,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils import gateway_role

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "sglang_gateway")
OLD = os.path.join(HERE, "files", "jinja_gateway_validate.yml")
LOADER = DataLoader()
ADMIN_KEY = "adm-0123456789abcdef-secret"
CASES = 240
# the old assert's regular expression as its YAML wrote it ("\." in a Jinja string)
pytestmark = pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")


def _role_variables():
    values = dict(LOADER.load_from_file(os.path.join(ROLE, "defaults", "main.yml"), trusted_as_template=True))
    values.update(LOADER.load_from_file(os.path.join(ROLE, "vars", "main.yml"), trusted_as_template=True))
    return values


ROLE_VARIABLES = _role_variables()
OLD_TASKS = LOADER.load_from_file(OLD, trusted_as_template=True)


def _task(predicate):
    (task,) = [task for task in OLD_TASKS if predicate(task)]
    return task


COLLECT = _task(lambda task: "loop" in task)
ASSEMBLE = _task(lambda task: "__old_gateway_cfg" in task.get("ansible.builtin.set_fact", {}))
INSTALL = _task(lambda task: task.get("name") == "Check the install, service and readiness settings")
REMARKS = _task(lambda task: task.get("name") == "Record the configuration remarks")


def _templar(variables):
    return Templar(loader=LOADER, variables=variables)


def old_path(variables):
    """(outcome, workers of the loop, value) of the old validate.yml: ("problems", workers, [messages]),
    ("ok", workers, {rendered, workers, url, remarks}) or ("error", workers or None, text)."""
    workers = []
    try:
        for item in _templar(variables).template(COLLECT["loop"]):
            local = dict(variables, item=item, __old_gateway_workers=workers, **COLLECT["vars"])
            templar = _templar(local)
            if templar.evaluate_conditional(COLLECT["when"]):
                workers = templar.template(COLLECT["ansible.builtin.set_fact"]["__old_gateway_workers"])
    except AnsibleError as exc:
        return "error", None, str(exc)
    templar = _templar(dict(variables, __old_gateway_workers=workers))
    try:
        cfg = templar.template(ASSEMBLE["ansible.builtin.set_fact"]["__old_gateway_cfg"])
        spec = templar.resolve_variable_expression("__sglang_gateway_service_spec")
        # the three asserts, in their order
        problems = sglang_gateway_validate(cfg) + sglang_service_problems(spec)
        if not all(templar.evaluate_conditional(condition) for condition in INSTALL["ansible.builtin.assert"]["that"]):
            problems.append(templar.template(INSTALL["ansible.builtin.assert"]["fail_msg"]))
        problems += range_filter(templar.resolve_variable_expression("__sglang_gateway_ranges"))
    except AnsibleError as exc:
        return "error", workers, str(exc)
    if problems:
        return "problems", workers, problems
    rendered = sglang_gateway_render(cfg)
    remarks = _templar(dict(variables, __old_gateway_rendered=rendered)).template(
        REMARKS["vars"]["__sglang_gateway_remarks"])
    return "ok", workers, {"rendered": rendered, "workers": rendered["workers"], "url": rendered["base_url"],
                           "remarks": remarks}


def new_path(variables):
    """(outcome, workers, value) of collect_workers and gateway_config over the same variables."""
    templar = _templar(variables)
    role = dict((name, templar.resolve_variable_expression(name)) for name in gateway_role.VARIABLES)
    try:
        workers = gateway_role.collect_workers(variables["hostvars"], variables["groups"],
                                               role["sglang_gateway_workers_group"])
    except gateway_role.WorkerCollectionError as exc:
        return "error", None, str(exc)
    try:
        rendered = gateway_role.gateway_config(role, workers, variables["inventory_hostname"],
                                               variables["ansible_host"])
    except gateway_role.GatewayRoleError as exc:
        return "problems", workers, exc.problems
    except (TypeError, ValueError) as exc:
        return "error", workers, str(exc)
    return "ok", workers, {"rendered": rendered, "workers": rendered["workers"], "url": rendered["base_url"],
                           "remarks": rendered["remarks"]}


# ---- generated inventories ------------------------------------------------------------------------------------------

NAMES = ("gpu-a", "GPU-B", "gpu-c", "Gpu-d", "gpu-e", "gw", "node-1", "Node-0")
HOSTS = ("0.0.0.0", "10.0.0.%d", "127.0.0.1", "::", "fd00::%d", "", None, 5)
PORTS = (30000, "30001", "", "abc", 0, None, 8000, "0030002")
RANKS = (0, 1, "0", "1", "", None, "abc", " 1", "1.5", "0.5", True, False, 2.0, "0x1", [], {"r": 1}, -0.5)
NODE_GROUPS = ("big", "small", "nogroup", "", None, 5, ["big"], "BIG")
FACTS = ({}, {"default_ipv4": {"address": "10.9.0.%d"}}, {"default_ipv4": None}, {"default_ipv4": "10.9.0.1"},
         {"default_ipv4": {}}, {"default_ipv6": {"address": "fd09::%d"}}, None, {"default_ipv4": {"address": None}})
KEYS = ("sk-shared-key", "sk-other-key", "", None, 5, "sk bad")


def _pick(rng, values, number):
    value = rng.choice(values)
    if isinstance(value, str) and "%d" in value:
        return value % number
    if isinstance(value, dict):
        return dict((key, (dict((k, v % number if isinstance(v, str) and "%d" in v else v)
                                for k, v in inner.items()) if isinstance(inner, dict) else inner))
                    for key, inner in value.items())
    return value


def _clean_worker_vars(rng, number):
    own = {"sglang_server_api_key": "sk-shared-key"}
    if rng.random() < 0.5:
        own.update(sglang_server_host="0.0.0.0", ansible_host="10.0.0.%d" % number)
    else:
        own.update(sglang_server_host="10.0.0.%d" % number, sglang_server_port=rng.choice((30000, "30001")))
    if rng.random() < 0.5:
        own["sglang_server_node_group"] = rng.choice(("big", "small", ""))
        if rng.random() < 0.5:
            own["sglang_server_node_rank"] = rng.choice((0, 1, "0", "1", "", None))
    return own


def _worker_vars(rng, number, node_groups, clean):
    if clean:
        return _clean_worker_vars(rng, number)
    own = {}
    for variable, values, chance in (("sglang_server_host", HOSTS, 0.8), ("sglang_server_port", PORTS, 0.4),
                                     ("ansible_host", ("10.0.0.%d", "", "gw-host", "10.0.0.1"), 0.7),
                                     ("ansible_facts", FACTS, 0.5), ("sglang_server_api_key", KEYS, 0.7)):
        if rng.random() < chance:
            own[variable] = _pick(rng, values, number)
    if rng.random() < 0.2:
        own["sglang_server_args"] = rng.choice(({}, {"ssl_certfile": "/etc/s.pem", "ssl_keyfile": "/etc/s.key"},
                                                {"root_path": "/api"}, "bad"))
    if rng.random() < 0.5:
        own["sglang_server_node_group"] = rng.choice(node_groups)
        if rng.random() < 0.5:
            own["sglang_server_node_rank"] = rng.choice(RANKS)
    return own


def generate(seed):
    """The variables a gateway host's task sees, for one generated inventory."""
    rng = random.Random(seed)
    # a third of the inventories are fine but for what the gateway's own variables may break
    clean = rng.random() < 0.35
    names = rng.sample(NAMES, rng.randint(1 if clean else 0, 5))
    node_groups = NODE_GROUPS if rng.random() < 0.3 else ("big", "small", "", "nogroup")
    hostvars = {}
    for number, name in enumerate(names, 11):
        if clean or rng.random() < 0.9:  # else: no hostvars at all
            hostvars[name] = _worker_vars(rng, number, node_groups, clean)
    groups = {"all": list(names) + ["gw"], "ungrouped": []}
    if clean or rng.random() < 0.9:
        groups["workers"] = list(names)
    for group in ("big", "small", "BIG"):
        members = [name for name in names if hostvars.get(name, {}).get("sglang_server_node_group") == group]
        if not clean and rng.random() < 0.15 and members:
            members = members[1:]  # a host missing from its own node group
        if rng.random() < 0.3:
            members.append("outside")
        if members or rng.random() < 0.5:
            groups[group] = rng.sample(members, len(members))
    gateway = {"sglang_gateway_workers_group": "workers", "sglang_gateway_admin_api_key": ADMIN_KEY}
    for variable, values, chance in (
            ("sglang_gateway_host", ("127.0.0.1", "0.0.0.0", "10.0.0.1", "gw.example"), 0.4),
            ("sglang_gateway_worker_api_key", ("sk-shared-key", "sk-gw-key", ""), 0.3),
            ("sglang_gateway_allow_unauthenticated", (True, False, "yes"), 0.2),
            ("sglang_gateway_version", ("1.13.0", "1.14.0", "latest", 1.13, "1.13.0\n"), 0.25),
            ("sglang_gateway_install", ("pip", "wheelhouse"), 0.2),
            ("sglang_gateway_restart_sec", (5, 0, "x", 4000), 0.15),
            ("sglang_gateway_policy", ("round_robin", "fastest"), 0.1),
            ("sglang_gateway_admin_api_key", ("", "short", ADMIN_KEY), 0.1),
            ("sglang_gateway_workers_group", ("workers", "nosuchgroup", "big"), 0.1),
            ("sglang_gateway_user", ("root", "sglang-gateway"), 0.05)):
        if rng.random() < chance / (3 if clean else 1):
            gateway[variable] = rng.choice(values)
    inventory_hostname = rng.choice(("gw", "gw", "gpu-a"))
    # read as an inventory file is read: the values carry their origin, as every variable of a real run does (the
    # rules name the type of a wrong number, and Ansible's tagged int is no int there)
    gateway, hostvars = _as_inventory([gateway, hostvars])
    variables = dict(ROLE_VARIABLES, **gateway)
    variables.update(hostvars=hostvars, groups=groups, inventory_hostname=inventory_hostname,
                     # the task's own ansible_host: the inventory's, else the inventory name
                     ansible_host=rng.choice(("10.0.0.1", "gw-host", inventory_hostname)))
    return variables


def _as_inventory(values):
    return LOADER.load(json.dumps(values), file_name="/inventories/generated/hosts.json")


def _outcomes():
    found = []
    for seed in range(CASES):
        variables = generate(seed)
        found.append((seed, old_path(variables), new_path(variables)))
    return found


@pytest.fixture(scope="module")
def outcomes():
    return _outcomes()


def test_the_action_agrees_with_the_jinja_path(outcomes):
    for seed, old, new in outcomes:
        (old_kind, old_workers, old_value), (new_kind, new_workers, new_value) = old, new
        # the loop's workers, whatever came after them
        assert old_workers == new_workers, seed
        assert old_kind == new_kind, (seed, old_value, new_value)
        if old_kind == "problems":
            assert new_value == old_value, seed
        elif old_kind == "ok":
            rendered = dict(new_value["rendered"])
            assert rendered.pop("gateway_warnings") == old_value["rendered"]["warnings"], seed
            assert rendered.pop("remarks") == new_value["remarks"] == old_value["remarks"], seed
            assert dict(rendered, warnings=old_value["rendered"]["warnings"]) == old_value["rendered"], seed
            assert new_value["workers"] == old_value["workers"] and new_value["url"] == old_value["url"], seed


def test_the_inventories_cover_every_outcome(outcomes):
    kinds = [old[0] for _seed, old, _new in outcomes]
    # every outcome, often enough to mean something
    assert kinds.count("ok") >= 20 and kinds.count("problems") >= 60 and kinds.count("error") >= 3, kinds
    collected = [old[1] for _seed, old, _new in outcomes if old[1] is not None]
    # some rank-1 nodes were left out, some workers came from hosts without hostvars, some had facts
    assert any(len(workers) >= 3 for workers in collected)
    assert any(worker["ipv4"] for workers in collected for worker in workers)
    # several problems at once, across the old asserts (the install/version message after the gateway's rules)
    assert any(len(old[2]) > 1 and gateway_role.MSG_INSTALL in old[2][1:] for _seed, old, _new in outcomes
               if old[0] == "problems")
    assert any(old[2]["remarks"] for _seed, old, _new in outcomes if old[0] == "ok")


@pytest.mark.parametrize("rank, kept", [
    (0, True), ("0", True), (1, False), ("1", False), ("abc", True), ("0.5", True), ("1.5", False), (" 1", False),
    (True, False), (False, True), ([], True), ("0x1", True), (2.0, False),
])
def test_the_rank_goes_through_jinjas_int(rank, kept):
    hostvars = {"a": {"sglang_server_node_group": "g", "sglang_server_node_rank": rank}}
    assert [w["name"] for w in gateway_role.collect_workers(hostvars, {"w": ["a"], "g": ["a", "b"]}, "w")] == (
        ["a"] if kept else [])


def test_without_a_rank_the_group_is_sorted_as_jinja_sorts():
    # case-insensitive: Node-0 < node-1 < NODE-2 whatever the inventory order
    hostvars = dict((name, {"sglang_server_node_group": "g"}) for name in ("node-1", "NODE-2", "Node-0"))
    groups = {"w": ["node-1", "NODE-2", "Node-0"], "g": ["NODE-2", "node-1", "Node-0"]}
    assert [w["name"] for w in gateway_role.collect_workers(hostvars, groups, "w")] == ["Node-0"]
    # a node group that is no inventory group: rank 0; "" or none: a single-host server
    hostvars = {"a": {"sglang_server_node_group": "nogroup"}, "b": {"sglang_server_node_group": ""}, "c": {}}
    assert [w["name"] for w in gateway_role.collect_workers(hostvars, {"w": ["a", "b", "c"]}, "w")] == ["a", "b", "c"]


def test_a_worker_takes_the_jinjas_defaults():
    found = gateway_role.collect_workers({"b": {"ansible_facts": {"default_ipv4": "x", "default_ipv6": {
        "address": "fd00::2"}}, "sglang_server_port": None}}, {"w": ["a", "b"]}, "w")
    assert found == [
        {"name": "a", "host": "", "port": "", "args": {}, "api_key": "", "ansible_host": "", "ipv4": "", "ipv6": ""},
        {"name": "b", "host": "", "port": None, "args": {}, "api_key": "", "ansible_host": "", "ipv4": "",
         "ipv6": "fd00::2"}]
    assert gateway_role.collect_workers({}, {}, "w") == [] == gateway_role.collect_workers({}, {"w": []}, ["w"])


@pytest.mark.parametrize("hostvars, groups", [
    ({"a": {"sglang_server_node_group": None}}, {"w": ["a"]}),
    ({"a": {"sglang_server_node_group": 5}}, {"w": ["a"]}),
    ({"a": {"sglang_server_node_group": "g"}}, {"w": ["a"], "g": ["b"]}),
    ({"a": {"sglang_server_node_group": "g", "sglang_server_node_rank": float("inf")}}, {"w": ["a"]}),
])
def test_what_the_jinja_could_not_template_stops_the_collection(hostvars, groups):
    with pytest.raises(gateway_role.WorkerCollectionError) as caught:
        gateway_role.collect_workers(hostvars, groups, "w")
    assert str(caught.value).startswith("hostvars['a'].sglang_server_node_")
    variables = dict(ROLE_VARIABLES, hostvars=hostvars, groups=groups, inventory_hostname="gw", ansible_host="gw",
                     sglang_gateway_workers_group="w")
    assert old_path(variables)[0] == "error"
