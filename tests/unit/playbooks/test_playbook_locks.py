"""The playbooks hold the per-host lock the way docs/awx.md says: exclusive for site/restart/rollback, shared for the
audit, renewed before each phase of site.yml with a lease that outlasts the phase's own timeouts (read from the
roles' tasks, so a longer wait added there fails here), and taken again after the driver role (a reboot empties
/run). site.yml plans every host at once under the lock (and proves the unchanged ones serve), gives it back,
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
# drains hold it shared on each gateway host, gateway.yml exclusively (issue 24 #11)
GATEWAY_LOCK = "/run/llmserve/sglang-gateway.lock"
GPUS = 8  # the playbooks size the P2P lease for up to 8 GPUs


def load(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return yaml.safe_load(handle)


def role_defaults():
    values = {}
    for role in ("iommu_preflight", "nvidia_driver", "sglang_server"):
        values.update(load("roles", role, "defaults", "main.yml"))
    return values


def render_text(expression, variables):
    trusted = {k: trust_as_template(v) if isinstance(v, str) else v for k, v in variables.items()}
    return Templar(loader=DataLoader(), variables=trusted).template(trust_as_template(expression))


def render(expression, variables):
    return float(render_text(expression, variables))


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


WAIT = "llmserve.sglang.wait_for_endpoint"
# the speculative check after the smoke test (issue 25)
CHECK = "llmserve.sglang.speculative_check"


def timeouts(role, *files, variables, modules=(WAIT, CHECK)):
    """Sum of the timeouts of a role's task files' waits and speculative checks, rendered with the given variables."""
    total = 0.0
    for name in files:
        for task in load("roles", role, "tasks", name):
            for module in modules:
                if module in task:
                    total += render(str(task[module]["timeout"]), variables)
    return total


SCENARIOS = {
    "defaults": {},
    "p2p and reboot": {"iommu_preflight_p2p_test": True, "nvidia_driver_apply": "reboot"},
    "reload, slow model": {"nvidia_driver_apply": "reload", "sglang_server_ready_timeout": 3600,
                           "sglang_server_timeout_stop_sec": 300, "iommu_preflight_p2p_timeout": 120,
                           "iommu_preflight_p2p_test": True},
    "short margin": {"sglang_lock_lease": 60, "sglang_lock_install_seconds": 600},
    # a low acceptance length deploys once more without speculation
    "speculation off when low": {"sglang_server_speculative_on_low": "disable",
                                 "sglang_server_speculative_check_timeout": 900},
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
    first, after_driver = [t[LOCK]["state"] for t in lock_tasks(change)[:3:2]]
    assert lock_steps(change) == ["lock:" + first, "lock:renewed", "nvidia_driver", "lock:" + after_driver,
                                  "sglang_server", "lock:renewed", "lock:released"]
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
    assert steps == ["lock", "assert", "tasks/gateway_out.yml", "lock", "nvidia_driver", "lock", "sglang_server",
                     "lock", "tasks/gateway_in.yml"]
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
    drain, driver, retake, rejoin = [lease(t, change_vars) for t in lock_tasks(change)[:4]]
    deploy = render("{{ __sglang_lock_lease_deploy }}", change_vars)
    assert drain >= driver, "the start of a batch covers the driver phase too (without gateways there is no drain)"
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
    # renewed right before the swap and the restart (after the install): the restart, the verification (with the
    # speculative check), a rollback
    assert deploy >= 2 * change_vars["sglang_server_timeout_stop_sec"] + waits + margin
    assert timeouts("sglang_server", "verify.yml", variables=change_vars, modules=(CHECK,)) \
        == change_vars["sglang_server_speculative_check_timeout"]
    if change_vars["sglang_server_speculative_on_low"] == "disable":
        # and one more deployment without speculation (no check then), which may roll back in turn
        again = change_vars["sglang_server_timeout_stop_sec"] + timeouts(
            "sglang_server", "verify.yml", variables=change_vars, modules=(WAIT,))
        assert deploy >= 2 * change_vars["sglang_server_timeout_stop_sec"] + waits + again + margin
    assert rejoin >= margin
    if scenario == "defaults":
        assert (take, drain, driver, retake, deploy, rejoin) == (1200, 300, 300, 4680, 2880, 300), \
            "the documented default leases"
    # with two gateways: each one's drain before the driver phase, each one's wait for the host after SGLang
    gateways = dict(change_vars, groups={"sglang_gateways": ["gw1", "gw2"]}, sglang_gateway_drain_timeout=900,
                    sglang_gateway_healthy_timeout=400)
    gw_drain, gw_driver, gw_retake, gw_rejoin = [lease(t, gateways) for t in lock_tasks(change)[:4]]
    assert gw_drain >= driver + 2 * 900 and gw_driver >= driver and gw_retake >= retake + 2 * 400
    assert gw_rejoin >= margin + 2 * 400
    assert render("{{ __sglang_lock_lease_deploy }}", gateways) >= deploy + 2 * 400


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
    states = [(t[LOCK].get("state", "acquired"), t[LOCK].get("mode", "exclusive")) for t in lock_tasks(play)
              if t[LOCK].get("path") is None]
    renewals = [("renewed", "exclusive")] * 2 if playbook == "restart.yml" else []
    assert states == [("acquired", "exclusive")] + renewals + [("released", "exclusive")]
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


# --- a run that lost its lock stops before changing anything (issue 24 #1) ----------------------------------------

def block_steps(tasks):
    """(kind, task) for the tasks of a block, in order: lock calls, roles, included task files, controller checks."""
    steps = []
    for task in tasks:
        if LOCK in task:
            steps.append(("lock:" + task[LOCK].get("state", "acquired"), task))
        elif role_of(task):
            steps.append((role_of(task), task))
        elif "ansible.builtin.include_tasks" in task:
            include = task["ansible.builtin.include_tasks"]
            steps.append((include["file"] if isinstance(include, dict) else include, task))
        elif "ansible.builtin.assert" in task:
            steps.append(("assert", task))
        else:
            raise AssertionError("unexpected step %s" % task.get("name"))
    return steps


def test_site_renews_the_lock_it_kept_and_takes_again_only_the_lock_it_gave_back():
    change = site_plays()[2]
    first, after_driver = [t[LOCK]["state"] for t in lock_tasks(change)[:3:2]]
    keep = {"__sglang_keep_lock": ["h1"]}
    # the first batch kept the lock from the plan: a renewal, which fails when another run took it over meanwhile
    assert render_text(first, dict(keep, inventory_hostname="h1")) == "renewed"
    # a later batch gave it back after the plan: it takes it again (waiting for a run that got in meanwhile)
    assert render_text(first, dict(keep, inventory_hostname="h2")) == "acquired"
    # after the driver role: taken again only when the plan said it reboots the host (/run is emptied)
    assert render_text(after_driver, {"nvidia_driver_plan": {"apply": "reboot"}}) == "acquired"
    for plan in ({"apply": "none"}, {"apply": "reload"}):
        assert render_text(after_driver, {"nvidia_driver_plan": plan}) == "renewed"
    assert render_text(after_driver, {}) == "renewed", "a run without the driver tag renews"


def test_site_renews_the_lock_at_every_phase_boundary_of_the_change_play():
    change = site_plays()[2]
    block = [t for t in change["tasks"] if "block" in t][0]
    steps = block_steps(block["block"])
    kinds = [step[0] for step in steps]
    assert kinds[0].startswith("lock:") and kinds[1] == "assert"
    out, renew_driver, driver, retake, role, renew_in, back = [step[1] for step in steps[2:]]
    assert renew_driver[LOCK]["state"] == "renewed" and role_of(driver) == "nvidia_driver"
    assert renew_driver[LOCK]["lease"] == "{{ __sglang_lock_lease_driver }}"
    assert retake[LOCK]["lease"] == "{{ __sglang_lock_lease_sglang }}" and role_of(role) == "sglang_server"
    assert renew_in[LOCK]["state"] == "renewed" and renew_in[LOCK]["lease"] == "{{ __sglang_lock_lease_rejoin }}"
    assert back["ansible.builtin.include_tasks"]["file"] == "tasks/gateway_in.yml"
    # a renewal after the drain and before the way back in: whenever the gateway step runs, so does the renewal
    assert out["when"] == renew_driver["when"] == renew_in["when"] == back["when"] == "__sglang_gateway_roll | bool"
    for task in (renew_driver, renew_in):
        assert "always" in task["tags"] and "register" not in task
    # the role renews the lock right before its swap and restart, with the lease of what follows them
    assert role["vars"]["sglang_server_lock_owner"] == "{{ __sglang_lock_owner }}"
    assert role["vars"]["sglang_server_lock_lease"] == "{{ __sglang_lock_lease_deploy }}"


def test_the_role_renews_the_lock_right_before_the_swap_and_the_restart():
    tasks = load("roles", "sglang_server", "tasks", "deploy.yml")
    index = [i for i, t in enumerate(tasks) if "block" in t][0]
    renew, block = tasks[index - 1], tasks[index]
    # outside the block: a lost lock must not start the rollback (which changes the host too)
    assert renew[LOCK] == {"owner": "{{ sglang_server_lock_owner }}", "state": "renewed",
                           "lease": "{{ sglang_server_lock_lease }}"}
    # '| string' first: an AWX job id arrives as an int, and '| length' of an int fails
    assert renew["when"] == "sglang_server_lock_owner | string | length > 0"
    assert not any(LOCK in t for t in flatten(block.get("rescue", [])))
    swap, restart = block["block"][:2]
    assert "llmserve.sglang.deploy_state" in swap and swap["name"] == "Swap the staged files in"
    assert restart["ansible.builtin.include_tasks"] == "group_restart.yml"
    defaults = load("roles", "sglang_server", "defaults", "main.yml")
    assert defaults["sglang_server_lock_owner"] == "", "the role on its own (no playbook lock) renews nothing"
    specs = load("roles", "sglang_server", "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert {"sglang_server_lock_owner", "sglang_server_lock_lease"} <= set(specs)


def test_restart_renews_the_lock_right_before_the_restart_and_the_way_back_in():
    play, variables = play_vars("restart.yml", {})
    block = [t for t in play["tasks"] if "block" in t][0]
    steps = block_steps(block["block"])
    assert [step[0] for step in steps] == ["assert", "tasks/gateway_out.yml", "lock:renewed",
                                           "sglang_server:restart", "lock:renewed", "tasks/gateway_in.yml"]
    out, renew, renew_in, back = [steps[i][1] for i in (1, 2, 4, 5)]
    assert "when" not in renew, "the restart always comes right after a renewal"
    assert renew_in["when"] == back["when"] == out["when"]
    margin = float(variables.get("sglang_lock_lease", 300))
    assert lease(renew, variables) >= (variables["sglang_server_timeout_stop_sec"]
                                       + timeouts("sglang_server", "verify.yml", variables=variables) + margin)
    gateways = dict(variables, groups={"sglang_gateways": ["gw1", "gw2"]}, sglang_gateway_healthy_timeout=400)
    assert lease(renew_in, gateways) >= margin + 2 * 400
    assert lease(renew, gateways) >= lease(renew, variables) + 2 * 400


@pytest.mark.parametrize("playbook, role", [("rollback.yml", "sglang_server:rollback"),
                                            ("plays/gateway_rejoin.yml", "tasks/gateway_in.yml")])
def test_the_other_changing_plays_change_right_after_taking_the_lock(playbook, role):
    play = play_vars(playbook, {})[0]
    tasks = list(flatten(play["tasks"]))
    take = [i for i, t in enumerate(tasks) if LOCK in t][0]
    nxt = tasks[take + 1]
    assert role_of(nxt) == role or nxt.get("ansible.builtin.include_tasks", "").endswith(role.split("/")[-1])


# --- no gateway restart during a drain (issue 24 #11) ----------------------------------------------------------------

def test_a_drain_holds_each_gateway_lock_shared_before_it_takes_the_worker_out():
    hold, drain = load("playbooks", "tasks", "gateway_out.yml")[:2]
    assert hold[LOCK]["path"] == GATEWAY_LOCK and hold[LOCK]["mode"] == "shared"
    # one holder per worker: workers of several runs drain at once, each releases only its own hold
    assert hold[LOCK]["owner"] == "{{ hostvars['localhost']['sglang_run_id'] }} drain {{ inventory_hostname }}"
    assert hold[LOCK]["wait"] == "{{ sglang_lock_wait | default(1800) }}"
    assert hold["delegate_to"] == drain["delegate_to"] == "{{ __sglang_gw }}"
    assert hold["loop"] == drain["loop"] and hold["vars"] == drain["vars"], "a hold in every gateway it drains from"
    assert drain["llmserve.sglang.gateway_worker"]["state"] == "absent"
    release = load("playbooks", "tasks", "gateway_release.yml")
    assert len(release) == 1
    (release,) = release
    assert release[LOCK] == {"path": GATEWAY_LOCK, "owner": hold[LOCK]["owner"], "state": "released"}
    assert release["delegate_to"] == "{{ __sglang_hold.__sglang_gw }}"
    assert hold["register"] in release["loop"] and "'shared'" in release["loop"], "only the holds that were taken"


@pytest.mark.parametrize("playbook", ["site.yml", "restart.yml"])
def test_the_drain_hold_lasts_until_the_end_of_the_batch(playbook):
    index = 1 if playbook == "site.yml" else 0
    play, variables = play_vars(playbook, {}, index)
    block = [t for t in play["tasks"] if "block" in t][0]
    (out,) = [t for t in block["block"] if "gateway_out.yml" in str(t.get("ansible.builtin.include_tasks"))]
    always = [t.get("ansible.builtin.import_tasks") for t in block["always"]]
    assert "tasks/gateway_release.yml" in always and LOCK in block["always"][-1]
    assert always.index("tasks/gateway_release.yml") == len(always) - 2, "released before the host's own lock"
    gateways = dict(variables, groups={"sglang_gateways": ["gw1", "gw2"]}, sglang_gateway_drain_timeout=900,
                    sglang_gateway_healthy_timeout=400)
    hold = render(out["vars"]["__sglang_gateway_hold_lease"], gateways)
    # the hold must outlast every lease of the batch that follows the drain, taken one after another
    leases = [lease(t, gateways) for t in lock_tasks(play) if t[LOCK].get("state") != "released"]
    if playbook == "site.yml":
        assert hold >= leases[0] + leases[2]  # the drain and driver phase, then the SGLang phase
    else:
        assert hold >= leases[0]  # the whole batch


def test_gateway_lock_paths_are_private():
    assert os.path.dirname(GATEWAY_LOCK) == "/run/llmserve"
    for name in ("gateway.yml", os.path.join("tasks", "gateway_out.yml"), os.path.join("tasks", "gateway_release.yml")):
        with open(os.path.join(ROOT, "playbooks", name)) as handle:
            paths = set(re.findall(r"path: (/run/\S+)", handle.read()))
        assert paths == {GATEWAY_LOCK}, (name, paths)
