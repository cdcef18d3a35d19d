"""The playbooks hold the per-host lock the way docs/awx.md says: exclusive for site/restart/rollback, shared for the
audit, renewed before each phase of site.yml with a lease that outlasts the phase's own timeouts (read from the
roles' tasks, so a longer wait added there fails here), and taken again after the driver role (a reboot empties
/run/lock). site.yml plans every host at once under the lock (and proves the unchanged ones serve), gives it back,
except on the first batch of the rollout, and takes it again per batch of its change play, whose leases cover the
gateways' drain and re-registration."""

import os
import re

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
LOCK = "llmserve.sglang.run_lock"
GPUS = 8  # the playbooks size the P2P lease for up to 8 GPUs


def load(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return yaml.safe_load(handle)


def role_defaults():
    values = {}
    for role in ("iommu_preflight", "nvidia_driver", "sglang_server"):
        values.update(load("roles", role, "defaults", "main.yml"))
    return values


def render(expression, variables):
    trusted = {k: trust_as_template(v) if isinstance(v, str) else v for k, v in variables.items()}
    value = Templar(loader=DataLoader(), variables=trusted).template(trust_as_template(expression))
    return float(value)


def flatten(tasks):
    """Tasks in order, blocks opened (block, then always), with the block's tags passed down."""
    for task in tasks:
        if "block" in task:
            for part in ("block", "rescue", "always"):
                yield from flatten(task.get(part, []))
        else:
            yield task


def lock_tasks(play):
    return [t for t in flatten(play["tasks"]) if LOCK in t]


def role_of(task):
    """``role`` or ``role:tasks_from`` of an import_role/include_role task."""
    for key in ("ansible.builtin.import_role", "ansible.builtin.include_role"):
        if key in task:
            name = task[key]["name"].split(".")[-1]
            return name + (":" + task[key]["tasks_from"] if "tasks_from" in task[key] else "")
    return None


def timeouts(role, *files, variables):
    """Sum of the wait_for_endpoint timeouts of a role's task files, rendered with the given variables."""
    total = 0.0
    for name in files:
        for task in load("roles", role, "tasks", name):
            if "llmserve.sglang.wait_for_endpoint" in task:
                total += render(str(task["llmserve.sglang.wait_for_endpoint"]["timeout"]), variables)
    return total


SCENARIOS = {
    "defaults": {},
    "p2p and reboot": {"iommu_preflight_p2p_test": True, "nvidia_driver_apply": "reboot"},
    "reload, slow model": {"nvidia_driver_apply": "reload", "sglang_server_ready_timeout": 3600,
                           "sglang_server_timeout_stop_sec": 300, "iommu_preflight_p2p_timeout": 120,
                           "iommu_preflight_p2p_test": True},
    "short margin": {"sglang_lock_lease": 60, "sglang_lock_install_seconds": 600},
}


def play_vars(playbook, overrides, index=0):
    """The ``index``-th play of ``playbook`` that takes the lock (imported plays have no tasks of their own)."""
    play = [p for p in load("playbooks", playbook) if any(LOCK in t for t in flatten(p.get("tasks", [])))][index]
    variables = {"groups": {"sglang_gateways": []}}
    variables.update(role_defaults())
    variables.update(play.get("vars", {}))
    variables.update(overrides)
    return play, variables


def lease(task, variables):
    return render(str(task[LOCK]["lease"]), variables)


def lock_steps(play):
    steps = []
    for task in flatten(play["tasks"]):
        if LOCK in task:
            steps.append("lock:" + task[LOCK].get("state", "acquired"))
            assert "always" in task.get("tags", []), "%s must run whatever tags are chosen" % task["name"]
            assert task[LOCK].get("mode", "exclusive") == "exclusive"
        elif role_of(task):
            steps.append(role_of(task))
    return steps


def site_plays():
    """site.yml's plan play, the imported gateway view, the change play, and the imported rejoin play."""
    plays = load("playbooks", "site.yml")
    assert len(plays) == 4
    assert plays[3]["ansible.builtin.import_playbook"] == "plays/gateway_rejoin.yml"
    return plays[:3]


def test_site_plans_every_host_at_once_then_changes_the_planned_hosts_in_batches():
    plan, view, change = site_plays()
    assert plan["hosts"] == "sglang_servers" and "serial" not in plan, "the plan play runs on every host at once"
    assert plan["max_fail_percentage"] == change["max_fail_percentage"] == \
        "{{ sglang_rollout_max_fail_percentage | default(0) }}"
    # the hosts whose plan has changes and the batch sizes, from the plan (tasks/rollout_order.yml): serial counts
    # servers, the nodes of a multi-node server are adjacent and in one batch
    assert change["serial"] == "{{ hostvars['localhost']['sglang_rollout']['sizes'] | default(1) }}"
    assert change["hosts"] == "{{ hostvars['localhost']['sglang_rollout']['hosts'] | default([]) }}"
    order = [t for t in flatten(plan["tasks"]) if t.get("ansible.builtin.import_tasks") == "tasks/rollout_order.yml"]
    assert len(order) == 1 and "selectattr('sglang_plan.changes')" in order[0]["vars"]["__sglang_rollout_candidates"]
    rollout = load("playbooks", "tasks", "rollout_order.yml")[0]
    assert rollout["run_once"] is True and rollout["delegate_to"] == "localhost" and rollout["delegate_facts"] is True
    expression = rollout["vars"]["__sglang_rollout_batches"]
    assert "sglang_rollout_batches(sglang_rollout_serial | default(1)" in expression
    assert "sglang_server_node_group" in expression
    group_by = [t for t in flatten(plan["tasks"]) if "ansible.builtin.group_by" in t]
    assert len(group_by) == 1 and group_by[0]["ansible.builtin.group_by"]["key"] == "sglang_plan_change"
    assert group_by[0]["when"] == "sglang_plan.changes | length > 0" and group_by[0]["changed_when"] is False
    # the gateways' view is known before the change play (like restart.yml)
    assert view["ansible.builtin.import_playbook"] == "plays/gateway_view.yml"


def test_site_takes_renews_and_retakes_the_lock_around_each_phase():
    plan, change = [play_vars("site.yml", {}, i)[0] for i in (0, 1)]
    assert lock_steps(plan) == ["lock:acquired", "iommu_preflight", "nvidia_driver:plan", "sglang_server:plan",
                                "sglang_server:probe", "lock:released"]
    assert lock_steps(change) == ["lock:acquired", "nvidia_driver", "lock:acquired", "sglang_server", "lock:released"]
    # a lock that was not taken is not released (it is another run's); every batch waits for the lock like the start
    for play, register in ((plan, "__sglang_lock_plan"), (change, "__sglang_lock_change")):
        tasks = list(flatten(play["tasks"]))
        take = [t for t in tasks if LOCK in t][0]
        release = [t for t in tasks if LOCK in t and t[LOCK].get("state") == "released"][0]
        assert take["register"] == register and take[LOCK]["wait"] == "{{ sglang_lock_wait | default(1800) }}"
        assert "%s is succeeded" % register in release["when"]
        block = [t for t in play["tasks"] if "block" in t][0]
        assert block["always"][-1] is release, "the release runs whatever happens in the block"


def test_site_keeps_the_lock_only_for_the_first_batch_of_the_rollout():
    plan, _view, change = site_plays()
    tasks = list(flatten(plan["tasks"]))
    choose = [t for t in tasks if "__sglang_keep_lock" in t.get("ansible.builtin.set_fact", {})][0]
    release = [t for t in tasks if LOCK in t and t[LOCK].get("state") == "released"][0]
    assert choose["run_once"] is True and tasks.index(choose) < tasks.index(release)
    assert "inventory_hostname not in __sglang_keep_lock" in release["when"]
    assert "__sglang_lock_plan is succeeded" in release["when"]
    expression = choose["ansible.builtin.set_fact"]["__sglang_keep_lock"]
    # the first of the change play's batches (tasks/rollout_order.yml, which also gives the play its serial)
    assert "hostvars['localhost']['sglang_rollout']['batches'] | first" in expression
    assert "sglang_rollout" in change["serial"]
    assert "[] if __sglang_rollout_stops" in expression


def test_site_drains_through_the_gateways_only_around_a_restart():
    change = site_plays()[2]
    block = [t for t in change["tasks"] if "block" in t][0]
    steps = []
    for task in block["block"]:
        include = task.get("ansible.builtin.include_tasks", {})
        if LOCK in task:
            steps.append("lock")
        elif "ansible.builtin.assert" in task:
            steps.append("assert")
            assert "sglang_rollout_max_unavailable" in task["ansible.builtin.assert"]["that"]
            assert "sglang_rollout_serial" in task["ansible.builtin.assert"]["that"]
            assert task["when"] == "__sglang_gateways | length > 0"
        elif include:
            steps.append(include["file"])
            assert task["when"] == "__sglang_gateway_roll | bool"
        else:
            steps.append(role_of(task))
    # out of the gateways before either role touches the host, back in only after the role proved the server
    assert steps == ["lock", "assert", "tasks/gateway_out.yml", "nvidia_driver", "lock", "sglang_server",
                     "tasks/gateway_in.yml"]
    assert not any("gateway" in str(t) for t in block["always"][:-1] if "ansible.builtin.include_tasks" in t)
    roll = change["vars"]["__sglang_gateway_roll"]
    assert "sglang_plan.restart_needed" in roll and "__sglang_gateways | length > 0" in roll
    assert "sglang_plan.serving" in roll, "a server that does not run yet (first deployment) is not drained"
    assert change["vars"]["__sglang_gateways"] == "{{ groups['sglang_gateways'] | default([]) }}"


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_site_leases_outlast_each_phase(scenario):
    plan, plan_vars = play_vars("site.yml", SCENARIOS[scenario], 0)
    change, change_vars = play_vars("site.yml", SCENARIOS[scenario], 1)
    margin = float(plan_vars.get("sglang_lock_lease", 300))
    take = lease(lock_tasks(plan)[0], plan_vars)
    driver, retake = [lease(t, change_vars) for t in lock_tasks(change)[:2]]
    # plan: the role's own P2P task timeout for GPUS GPUs, then the readiness wait of an unchanged server
    p2p = 0.0
    if plan_vars["iommu_preflight_p2p_test"]:
        p2p_task = [t for t in load("roles", "iommu_preflight", "tasks", "p2p.yml") if t["name"].startswith("Run the")][0]
        p2p = render(str(p2p_task["timeout"]), dict(plan_vars, __iommu_preflight_selected_addresses=["x"] * GPUS))
    probe = timeouts("sglang_server", "probe.yml", variables=plan_vars)
    assert probe == plan_vars["sglang_server_ready_timeout"]
    assert take >= p2p + probe + margin
    # driver: the reboot's own timeout, or stopping and starting every GPU service
    if change_vars["nvidia_driver_apply"] == "reboot":
        reboot = [t for t in load("roles", "nvidia_driver", "tasks", "reboot.yml") if "ansible.builtin.reboot" in t][0]
        assert driver >= render(str(reboot["ansible.builtin.reboot"]["reboot_timeout"]), change_vars) + margin
    if change_vars["nvidia_driver_apply"] == "reload":
        units = len(change_vars["nvidia_driver_gpu_services"])
        assert driver >= 2 * units * change_vars["sglang_server_timeout_stop_sec"] + margin
    assert driver >= margin
    # SGLang: install, restart + verify, and on failure restart + restore wait
    waits = timeouts("sglang_server", "verify.yml", "restore.yml", variables=change_vars)
    install = float(change_vars.get("sglang_lock_install_seconds", 1800))
    assert retake >= install + 2 * change_vars["sglang_server_timeout_stop_sec"] + waits + margin
    if scenario == "defaults":
        assert (take, driver, retake) == (1200, 300, 4680), "the documented default leases"
    # with two gateways: each one's drain before the driver phase, each one's wait for the host after SGLang
    gateways = dict(change_vars, groups={"sglang_gateways": ["gw1", "gw2"]}, sglang_gateway_drain_timeout=900,
                    sglang_gateway_healthy_timeout=400)
    gw_driver, gw_retake = [lease(t, gateways) for t in lock_tasks(change)[:2]]
    assert gw_driver >= driver + 2 * 900 and gw_retake >= retake + 2 * 400


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_restart_and_rollback_leases_outlast_their_waits(scenario):
    play, variables = play_vars("restart.yml", SCENARIOS[scenario])
    margin = float(variables.get("sglang_lock_lease", 300))
    take = lock_tasks(play)[0]
    assert lease(take, variables) >= (variables["sglang_server_timeout_stop_sec"]
                                      + timeouts("sglang_server", "verify.yml", variables=variables) + margin)
    # with two gateways, each one's drain and re-registration wait comes on top
    gateways = dict(variables, groups={"sglang_gateways": ["gw1", "gw2"]}, sglang_gateway_drain_timeout=900,
                    sglang_gateway_healthy_timeout=400)
    assert lease(take, gateways) >= lease(take, variables) + 2 * (900 + 400)
    play, variables = play_vars("rollback.yml", SCENARIOS[scenario])
    take = lock_tasks(play)[0]
    assert lease(take, variables) >= (variables["sglang_server_timeout_stop_sec"]
                                      + timeouts("sglang_server", "restore.yml", variables=variables) + margin)


@pytest.mark.parametrize("playbook", ["restart.yml", "rollback.yml", "plays/gateway_rejoin.yml"])
def test_changing_playbooks_hold_the_lock_exclusively_and_release_it(playbook):
    play = play_vars(playbook, {})[0]
    states = [(t[LOCK].get("state", "acquired"), t[LOCK].get("mode", "exclusive")) for t in lock_tasks(play)]
    assert states == [("acquired", "exclusive"), ("released", "exclusive")]
    block = [t for t in play["tasks"] if "block" in t][0]
    assert LOCK in block["always"][-1], "the release runs whatever happens in the block"


def test_rejoin_lease_covers_the_wait_in_every_gateway():
    """site.yml's last play puts serving workers back under the lock: another run's restart is never joined."""
    gateways = {"groups": {"sglang_gateways": ["gw1", "gw2"]}}
    play, variables = play_vars("plays/gateway_rejoin.yml", gateways)
    assert lease(lock_tasks(play)[0], variables) >= 2 * 300 + 300  # the playbook defaults
    play, variables = play_vars("plays/gateway_rejoin.yml",
                                dict(gateways, sglang_gateway_healthy_timeout=900, sglang_lock_lease=60))
    assert lease(lock_tasks(play)[0], variables) >= 2 * 900 + 60


def test_audit_holds_the_lock_shared_for_its_whole_run():
    play, variables = play_vars("preflight.yml", {"iommu_preflight_p2p_test": True})
    tasks = play["tasks"]
    take = [i for i, t in enumerate(tasks) if LOCK in t][0]
    audit = [i for i, t in enumerate(tasks) if "block" in t][0]
    assert take < audit and tasks[take][LOCK]["mode"] == "shared" and "always" in tasks[take]["tags"]
    assert tasks[audit]["always"][-1][LOCK]["state"] == "released"
    assert lease(tasks[take], variables) >= 60 * GPUS ** 2 + 120 + 300


def test_lease_fallbacks_match_the_role_defaults():
    """The playbooks' default() fallbacks (for include_role, whose defaults come late) must not drift."""
    defaults = role_defaults()
    for playbook in ("site.yml", "restart.yml", "rollback.yml", "preflight.yml", "plays/gateway_rejoin.yml"):
        with open(os.path.join(ROOT, "playbooks", playbook)) as handle:
            text = handle.read()
        for name, fallback in re.findall(r"\b(\w+) \| default\(([^()]*)\)", text):
            if name in defaults:
                value = yaml.safe_load(fallback)
                expected = defaults[name]
                if isinstance(expected, list):
                    assert len(value) == len(expected), (playbook, name)
                else:
                    assert value == expected, "%s: %s | default(%s), role default %r" % (
                        playbook, name, fallback, expected)
