"""The playbooks hold the per-host lock the way docs/awx.md says, through the sglang_rollout role's entry points: exclusive for
site/restart/rollback/gateway, shared for the audit, renewed at every phase boundary of site.yml and taken again
after the driver role (a reboot empties /run). site.yml plans every host at once under the lock, gives it back
except on the first batch of the rollout, and takes it again per batch of its change play. The leases themselves
are one Python function (tests/unit/plugins/plugin_utils/test_rollout_lease.py); no playbook or task file holds a
lease formula."""

import glob
import os
import re

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.llmserve.sglang.plugins.plugin_utils.rollout_lease import role_defaults
from ansible_collections.llmserve.sglang.plugins.plugin_utils.rollout_window import host_pools

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
LOCK = "llmserve.sglang.run_lock"
ROLLOUT = "llmserve.sglang.sglang_rollout"
# drains hold it shared on each gateway host, gateway.yml exclusively (issue 24 #11)
GATEWAY_LOCK = "/run/llmserve/sglang-gateway.lock"
PHASE_LEASE = "{{ lookup('ansible.builtin.vars', '__sglang_rollout_lease_' ~ sglang_rollout_phase) }}"


def load(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return yaml.safe_load(handle)


def render_text(expression, variables):
    trusted = {k: trust_as_template(v) if isinstance(v, str) else v for k, v in variables.items()}
    return Templar(loader=DataLoader(), variables=trusted).template(trust_as_template(expression))


def render(expression, variables):
    return float(render_text(expression, variables))


def flatten(tasks):
    """Tasks in order, blocks opened (block, then always)."""
    for task in tasks:
        if "block" in task:
            for part in ("block", "rescue", "always"):
                yield from flatten(task.get(part, []))
        else:
            yield task


def role_of(task):
    """``role`` or ``role:tasks_from`` of an import_role/include_role task."""
    for key in ("ansible.builtin.import_role", "ansible.builtin.include_role"):
        if key in task:
            name = task[key]["name"].split(".")[-1]
            return name + (":" + task[key]["tasks_from"] if "tasks_from" in task[key] else "")
    return None


def steps(tasks):
    """The roles and entry points of a list of tasks (blocks opened), with the rollout's lease phase where it has one."""
    found = []
    for task in flatten(tasks):
        step = role_of(task) or (LOCK + (":" + task[LOCK].get("state", "acquired")) if LOCK in task else None)
        step = step or ("fail" if "ansible.builtin.fail" in task else None)
        step = step or ("set_fact" if "ansible.builtin.set_fact" in task else None)
        assert step, "unexpected step %s" % task.get("name")
        phase = task.get("vars", {}).get("sglang_rollout_phase")
        found.append(step + ("(%s)" % phase if phase else ""))
    return found


def site_plays(window=False):
    """site.yml's imported model staging, plan play, the imported gateway view, the window play, the change play in
    batches, the imported rejoin play and the imported monitoring: (plan, change) or with ``window`` (plan, window,
    change)."""
    plays = load("playbooks", "site.yml")
    assert len(plays) == 9
    # first the refusal of a sliced AWX run (tests/unit/playbooks/test_unsliced.py)
    assert plays[0]["ansible.builtin.import_playbook"] == "plays/unsliced.yml"
    plays = plays[1:]
    assert plays[0]["ansible.builtin.import_playbook"] == "plays/model.yml"
    assert plays[2]["ansible.builtin.import_playbook"] == "plays/gateway_view.yml"
    # the canary gate before any other change (canary_plays)
    assert plays[3]["ansible.builtin.import_playbook"] == "plays/canary.yml"
    assert plays[6]["ansible.builtin.import_playbook"] == "plays/gateway_rejoin.yml"
    assert plays[7]["ansible.builtin.import_playbook"] == "monitoring.yml"
    return (plays[1], plays[4], plays[5]) if window else (plays[1], plays[5])


def canary_plays():
    """plays/canary.yml: the canaries' change play, then their gate play."""
    change, gate = load("playbooks", "plays", "canary.yml")
    return change, gate


def rollout_of(play):
    """The one task of a play that runs the rollout: (its stage, its declared steps as role[:entry](phase))."""
    (task,) = play["tasks"]
    assert task["ansible.builtin.import_role"] == {"name": ROLLOUT}
    assert set(task["vars"]) <= {"sglang_rollout_stage", "sglang_rollout_steps", "sglang_rollout_windowed"}
    declared = []
    for step in task["vars"].get("sglang_rollout_steps", []):
        name = step["role"].split(".")[-1] + (":" + step["entry"] if "entry" in step else "")
        declared.append(name + ("(%s)" % step["phase"] if "phase" in step else ""))
    return task["vars"]["sglang_rollout_stage"], declared


def stage_steps(stage):
    """The task file of a stage, as steps() lists them (the declared steps as ``steps``)."""
    found = []
    for task in flatten(rollout_tasks("stage_" + stage)):
        name = task.get("ansible.builtin.import_tasks") or task.get("ansible.builtin.include_tasks")
        if isinstance(name, dict):
            name = name["file"]
        if name:
            phase = task.get("vars", {}).get("sglang_rollout_phase")
            # a stage's own lease phase (__sglang_rollout_stages) is checked on its own
            phase = None if phase and "{{" in phase else phase
            found.append("rollout:" + name[:-4] + ("(%s)" % phase if phase else ""))
        else:
            found.extend(steps([task]))
    return found


def test_site_stages_the_model_on_every_host_at_once_before_the_plan():
    (play,) = load("playbooks", "plays", "model.yml")
    assert play["hosts"] == "sglang_servers" and "serial" not in play, "every host stages at once (throttled)"
    # the fleet loads one revision: a host that cannot stage it stops the run before any host is planned or changed
    assert play["any_errors_fatal"] is True
    (task,) = play["tasks"]
    assert task["ansible.builtin.import_role"] == {"name": "llmserve.sglang.sglang_model"}
    # the role decides: without sglang_model_repo it does nothing (tests/unit/roles/sglang_model/test_role_without_repo.py)
    assert "when" not in task
    # the download (included only on the hosts that lack the revision) is throttled; the check in the store is not
    (stage,) = [t for t in load("roles", "sglang_model", "tasks", "fetch.yml") if "llmserve.sglang.model_stage" in t]
    assert stage["throttle"] == "{{ sglang_model_stage_throttle | int }}"
    (check,) = [t for t in load("roles", "sglang_model", "tasks", "check.yml") if "llmserve.sglang.model_check" in t]
    assert "throttle" not in check


def rollout_tasks(entry):
    return load("roles", "sglang_rollout", "tasks", entry + ".yml")


# --- site.yml ----------------------------------------------------------------------------------------------------------

def test_site_plans_every_host_at_once_then_changes_the_planned_hosts_in_batches():
    plan, change = site_plays()
    assert plan["hosts"] == "sglang_servers" and "serial" not in plan, "the plan play runs on every host at once"
    # the sglang_rollout role's default, visible to the play keyword because the play imports the role
    assert plan["max_fail_percentage"] == change["max_fail_percentage"] == "{{ sglang_rollout_max_fail_percentage }}"
    assert change["serial"] == "{{ hostvars['localhost']['sglang_rollout_order']['sizes'] | default(1) }}"
    assert change["hosts"] == "{{ hostvars['localhost']['sglang_rollout_order']['hosts'] | default([]) }}"
    (block,) = [t for t in rollout_tasks("stage_plan") if "block" in t]
    (order,) = [t for t in block["always"] if t.get("ansible.builtin.import_tasks") == "order.yml"]
    assert order["vars"] == {"sglang_rollout_planned": True}, "only the hosts whose plan has changes"
    (group_by,) = [t for t in rollout_tasks("plan") if "ansible.builtin.group_by" in t]
    assert group_by["ansible.builtin.group_by"]["key"] == "sglang_plan_change"
    assert group_by["when"] == "sglang_rollout_plan.changes | length > 0" and group_by["changed_when"] is False


def test_site_rolls_the_window_play_first_with_the_change_plays_steps():
    plan, window, change = site_plays(window=True)
    assert window["strategy"] == "ansible.builtin.host_pinned" and "serial" not in window
    assert window["hosts"] == "{{ hostvars['localhost']['sglang_rollout_order']['window'] | default([]) }}"
    # the strategy ignores max_fail_percentage (with a warning): the role counts the failures (vars/main.yml)
    assert "max_fail_percentage" not in window
    (task,) = window["tasks"]
    assert task["vars"]["sglang_rollout_windowed"] is True
    assert rollout_of(window) == rollout_of(change) == ("change", ["nvidia_driver(driver)", "sglang_server(sglang)"])
    assert task["vars"]["sglang_rollout_steps"] == change["tasks"][0]["vars"]["sglang_rollout_steps"]
    # no run_once in what the window play runs: host_pinned would run it on every host and hand its result to all
    for entry in ("stage_change", "begin", "drain", "drain_late", "gateway_out", "gateway_in", "rejoin", "end", "report",
                  "window_stop", "steps", "step", "budgets", "renew", "main"):
        for task in flatten(rollout_tasks(entry)):
            assert "run_once" not in task, (entry, task.get("name"))
    order_vars = rollout_tasks("order")[0]["vars"]
    order = order_vars["__sglang_rollout_window_hosts"]
    hostvars = {"a": {}, "n0": {"sglang_server_node_group": "big"}, "n1": {"sglang_server_node_group": "big"}, "b": {}}
    common = {"__sglang_rollout_all_candidates": ["a", "n0", "n1", "b"], "hostvars": hostvars,
              "sglang_rollout_planned": True,
              "__sglang_rollout_single_candidates": order_vars["__sglang_rollout_single_candidates"]}
    # the single-host servers roll in the window, the multi-node ones in batches after it; only from site.yml's plan
    assert render_text(order, dict(common, sglang_rollout_window=True)) == ["a", "b"]
    assert render_text(order, dict(common, sglang_rollout_window=False)) == []
    assert render_text(order, dict(common, sglang_rollout_window=True, sglang_rollout_planned=False)) == []


def test_the_window_play_stops_starting_hosts_once_too_many_failed():
    variables = load("roles", "sglang_rollout", "vars", "main.yml")
    names = ("__sglang_rollout_window_failed", "__sglang_rollout_window_stops")
    hosts = ["a1", "a2", "b1", "b2"]

    def stops(hostvars, percentage=0):
        context = dict((name, variables[name]) for name in names)
        context.update(ansible_play_hosts_all=hosts, sglang_rollout_max_fail_percentage=percentage,
                       hostvars=dict({h: {"inventory_hostname": h} for h in hosts}, **{
                           h: dict(v, inventory_hostname=h) for h, v in hostvars.items()}))
        return render_text("{{ __sglang_rollout_window_stops }}", context), \
            render_text("{{ __sglang_rollout_window_failed }}", context)

    ended, ok = {"sglang_rollout_change_ended": True}, {"sglang_rollout_changed_ok": True}
    # nothing ended yet, or what ended succeeded: go on
    assert stops({}) == (False, [])
    assert stops({"a1": dict(ended, **ok), "b1": dict(ended, **ok)}) == (False, [])
    # a host in flight (started, not ended) is no failure
    assert stops({"a1": {"sglang_rollout_changed_ok": True}}) == (False, [])
    # one ended without succeeding: the default 0 % stops the rest
    assert stops({"a1": ended, "b1": dict(ended, **ok)}) == (True, ["a1"])
    # 25 % of 4 lets one through, not two
    assert stops({"a1": ended}, 25) == (False, ["a1"])
    assert stops({"a1": ended, "a2": ended}, 25) == (True, ["a1", "a2"])


def test_a_worker_goes_out_of_and_back_into_the_gateways_of_its_pools():
    variables = load("roles", "sglang_rollout", "vars", "main.yml")
    # the two expressions that call the collection's filter (plugin_utils/rollout_window.py, tested on its own) are
    # read here; this test renders them with that function in place of the filter
    assert variables["__sglang_rollout_host_pools"].strip() == (
        "{{ inventory_hostname | llmserve.sglang.sglang_rollout_pools(__sglang_rollout_pool_map, "
        "sglang_rollout_max_unavailable) }}")
    assert "__sglang_rollout_unpooled_lock_host | llmserve.sglang.sglang_rollout_pools(" in \
        variables["__sglang_rollout_unpooled_window"]
    names = ("__sglang_rollout_gateways", "__sglang_rollout_live_gateways", "__sglang_rollout_pool_map",
             "__sglang_rollout_host_gateways", "__sglang_rollout_pooled_hosts",
             "__sglang_rollout_unpooled_hosts", "__sglang_rollout_unpooled_lock_host")

    def worker(name):
        return {"name": name, "url": "http://%s:30000" % name}

    hostvars = {"gw-b": {"inventory_hostname": "gw-b", "sglang_gateway_workers": [worker("b1"), worker("b2")]},
                "gw-a": {"inventory_hostname": "gw-a", "sglang_gateway_workers": [worker(n) for n in ("a1", "a2", "s")]},
                "gw-c": {"inventory_hostname": "gw-c", "sglang_gateway_workers": [worker("s"), worker("c1")]},
                "gw-x": {"inventory_hostname": "gw-x"},
                "localhost": {"sglang_gateways_live": ["gw-b", "gw-a", "gw-c"]}}

    def render_for(host, **extra):
        context = dict((name, variables[name]) for name in names)
        context.update(inventory_hostname=host, hostvars=hostvars, sglang_rollout_max_unavailable=1,
                       groups={"sglang_gateways": ["gw-a", "gw-b", "gw-c", "gw-x"]},
                       ansible_play_hosts_all=["a1", "a2", "b1", "b2", "s", "c1", "lone2", "lone1"])
        context.update(extra)
        pools = host_pools(host, render_text("{{ __sglang_rollout_pool_map }}", context),
                           context["sglang_rollout_max_unavailable"])
        context["__sglang_rollout_host_pools"] = pools
        rendered = {name: render_text("{{ %s }}" % name, context) for name in names}
        rendered["__sglang_rollout_host_pools"] = pools
        return rendered

    a1 = render_for("a1")
    assert a1["__sglang_rollout_pool_map"] == {"gw-b": ["b1", "b2"], "gw-a": ["a1", "a2", "s"], "gw-c": ["s", "c1"]}
    assert a1["__sglang_rollout_host_gateways"] == ["gw-a"]
    assert a1["__sglang_rollout_host_pools"] == [{"gateway": "gw-a", "size": 3, "window": 1, "min_healthy": 2}]
    # a worker of two pools: both, in gateway order (the order its window slots are taken in)
    assert render_for("s")["__sglang_rollout_host_gateways"] == ["gw-a", "gw-c"]
    # a worker no gateway routes to drains nowhere, and shares the window of the servers behind no gateway
    lone = render_for("lone2", sglang_rollout_max_unavailable="50%")
    assert lone["__sglang_rollout_host_gateways"] == [] and lone["__sglang_rollout_host_pools"] == []
    assert lone["__sglang_rollout_unpooled_hosts"] == ["lone1", "lone2"]
    assert lone["__sglang_rollout_unpooled_lock_host"] == "lone1"
    assert host_pools("lone1", {"servers behind no gateway": lone["__sglang_rollout_unpooled_hosts"]}, "50%")[0]["window"] == 1
    # a live gateway whose workers were not read is kept: its drain fails loudly instead of being skipped
    hostvars["localhost"]["sglang_gateways_live"] = ["gw-a", "gw-x"]
    assert render_for("a1")["__sglang_rollout_host_gateways"] == ["gw-a", "gw-x"]
    # without the gateway view's list, every gateway of the group
    del hostvars["localhost"]["sglang_gateways_live"]
    assert render_for("b1")["__sglang_rollout_host_gateways"] == ["gw-b", "gw-x"]


def test_site_reads_top_down():
    with open(os.path.join(ROOT, "playbooks", "site.yml")) as handle:
        text = handle.read()
    assert len(text.splitlines()) <= 125
    assert "| int" not in text and not re.search(r"^\s*lease:", text, re.M), "no arithmetic, no lease of its own"


def test_site_takes_renews_and_retakes_the_lock_around_each_phase():
    plan, change = site_plays()
    assert rollout_of(plan) == ("plan", ["iommu_preflight", "nvidia_driver:plan", "sglang_server:plan"])
    assert stage_steps("plan") == ["rollout:nodes", "rollout:budgets", "rollout:begin(plan)", "rollout:steps", "sglang_server:probe",
                                   "rollout:plan", "rollout:report", "rollout:order"]
    assert rollout_of(change) == ("change", ["nvidia_driver(driver)", "sglang_server(sglang)"])
    assert stage_steps("change") == ["rollout:window_stop", "rollout:budgets", "rollout:begin", LOCK + ":acquired",
                                     "rollout:window_stop", "rollout:drain", "rollout:steps", "rollout:rejoin",
                                     LOCK + ":released", "set_fact", "rollout:end"]
    stages = load("roles", "sglang_rollout", "vars", "main.yml")["__sglang_rollout_stages"]
    assert stages["plan"]["lease"] == "plan" and stages["change"] == {"lease": "drain", "hold": "hold"}
    # the probe proves only a server whose plan is empty
    (probe,) = [t for t in flatten(rollout_tasks("stage_plan")) if role_of(t) == "sglang_server:probe"]
    assert probe["when"][0] == "sglang_server_plan is defined"
    # the role renews the lock right before its swap and restart, with the lease of what follows them
    (deploy,) = [s for s in change["tasks"][0]["vars"]["sglang_rollout_steps"] if s["role"].endswith("sglang_server")]
    assert deploy["lock"] == "deploy"
    for stage in ("plan", "change", "audit", "rollback", "gateway", "rejoin"):
        tasks = rollout_tasks("stage_" + stage)
        (block,) = [t for t in tasks if "block" in t]
        assert block["block"][0]["ansible.builtin.import_tasks"] == "begin.yml", "the lock is the block's first step"
        # every task of the rollout runs whatever tags are chosen; the declared steps carry their own tags
        for task in flatten(tasks):
            if task.get("ansible.builtin.import_tasks") == "steps.yml":
                assert "tags" not in task, "tags on the import would reach the steps"
            elif role_of(task) is None and "ansible.builtin.fail" not in task:
                assert "always" in task["tags"], (stage, task["name"])
            else:  # the probes and the audit's verdict: with the SGLang tags, as the playbooks had them
                assert "always" not in task["tags"] and "sglang" in task["tags"], (stage, task["name"])
    (loop,) = rollout_tasks("steps")
    assert loop["tags"] == ["always"] and loop["ansible.builtin.include_tasks"] == {"file": "step.yml"}


def test_site_renews_the_lock_it_kept_and_takes_again_only_the_lock_it_gave_back():
    (block,) = [t for t in rollout_tasks("stage_change") if "block" in t]
    begin = block["block"][0]
    assert begin["vars"]["sglang_rollout_keep_lock"] == \
        "{{ hostvars['localhost']['sglang_rollout_order']['keep'] | default([]) }}"
    (take,) = [t for t in rollout_tasks("begin") if LOCK in t]
    state = take[LOCK]["state"]
    keep = {"sglang_rollout_keep_lock": ["h1"]}
    # the first batch kept the lock from the plan: a renewal, which fails when another run took it over meanwhile
    assert render_text(state, dict(keep, inventory_hostname="h1")) == "renewed"
    # a later batch gave it back after the plan: it takes it again (waiting for a run that got in meanwhile)
    assert render_text(state, dict(keep, inventory_hostname="h2")) == "acquired"
    # after the driver role: taken again only when the plan said it reboots the host (/run is emptied);
    # tests/unit/roles/sglang_rollout/test_pipeline.py runs it
    variables = load("roles", "sglang_rollout", "vars", "main.yml")
    retake = variables["__sglang_rollout_step_after_reboot"]
    steps_ = [{"role": "llmserve.sglang.nvidia_driver"}, {"role": "llmserve.sglang.sglang_server"}]
    common = {"sglang_rollout_steps": steps_, "__sglang_rollout_reboot_roles": variables["__sglang_rollout_reboot_roles"]}
    assert render_text(retake, dict(common, sglang_rollout_step_index=1, nvidia_driver_plan={"apply": "reboot"})) is True
    assert render_text(retake, dict(common, sglang_rollout_step_index=0, nvidia_driver_plan={"apply": "reboot"})) is False
    for plan in ({"apply": "none"}, {"apply": "reload"}):
        assert render_text(retake, dict(common, sglang_rollout_step_index=1, nvidia_driver_plan=plan)) is False
    assert render_text(retake, dict(common, sglang_rollout_step_index=1)) is False, "a run without the driver tag renews"
    (again,) = [t for t in rollout_tasks("renew") if LOCK in t]
    assert render_text(again[LOCK]["state"], {"sglang_rollout_retake": True}) == "acquired"
    assert render_text(again[LOCK]["state"], {"sglang_rollout_retake": False}) == "renewed"


def test_site_keeps_the_lock_only_for_the_first_batch_of_the_rollout():
    order, refuse, say_why, release = rollout_tasks("order")
    assert "ansible.builtin.assert" in refuse and "ansible.builtin.debug" in say_why
    assert order["run_once"] is True and order["delegate_to"] == "localhost" and order["delegate_facts"] is True
    keep = order["ansible.builtin.set_fact"]["sglang_rollout_order"]["keep"]
    none = {"__sglang_rollout_canaries": []}
    # with sglang_rollout_window the window play runs first: its hosts keep the lock instead
    assert render_text(keep, dict(none, __sglang_rollout_stops=False, __sglang_rollout_window_hosts=[],
                                  __sglang_rollout_batches=[["a", "b"], ["c"]])) == ["a", "b"]
    assert render_text(keep, dict(none, __sglang_rollout_stops=False, __sglang_rollout_window_hosts=["a", "c"],
                                  __sglang_rollout_batches=[["n0", "n1"]])) == ["a", "c"]
    assert render_text(keep, dict(none, __sglang_rollout_stops=True, __sglang_rollout_window_hosts=["a"],
                                  __sglang_rollout_batches=[["a"]])) == []
    # with the canary gate the canaries change first: they keep it
    assert render_text(keep, {"__sglang_rollout_stops": False, "__sglang_rollout_window_hosts": ["a", "c"],
                              "__sglang_rollout_canaries": ["c"], "__sglang_rollout_batches": []}) == ["c"]
    assert "not sglang_rollout_planned | bool" in order["vars"]["__sglang_rollout_stops"], "only after a plan"
    assert "sglang_rollout_batches(sglang_rollout_serial" in order["vars"]["__sglang_rollout_batches"]
    assert "sglang_server_node_group" in order["vars"]["__sglang_rollout_batches"]
    assert release[LOCK] == {"owner": "{{ __sglang_rollout_owner }}", "state": "released"}
    assert release["when"] == ["sglang_rollout_planned | bool", "sglang_rollout_lock is defined",
                               "sglang_rollout_lock is succeeded",
                               "inventory_hostname not in hostvars['localhost']['sglang_rollout_order']['keep']"]


def test_site_drains_through_the_gateways_only_around_a_restart():
    assert_, warm, out, renew = rollout_tasks("drain")
    # then, while the host still serves: the weights into the page cache (not before a planned reboot)
    prewarm = warm["block"][-1]
    assert prewarm["ansible.builtin.include_role"] == {
        "name": "llmserve.sglang.sglang_server", "tasks_from": "prewarm",
        "apply": {"tags": ["always"], "timeout": "{{ sglang_rollout_prewarm_timeout }}"}}
    assert warm["when"] == ["sglang_rollout_restarts | bool", "(nvidia_driver_plan.apply | default('none')) != 'reboot'"]
    assert assert_["ansible.builtin.assert"]["that"] == "__sglang_rollout_batch_problems | length == 0"
    problems = assert_["vars"]["__sglang_rollout_batch_problems"]
    assert "sglang_rollout_max_unavailable | llmserve.sglang.sglang_rollout_window_problems(" in problems
    assert "__sglang_rollout_batch_hosts, __sglang_rollout_pool_map" in problems
    # the window play has no batches: each host takes a slot of its pools instead (tasks/gateway_out.yml)
    assert assert_["when"] == ["__sglang_rollout_gateways | length > 0", "not sglang_rollout_windowed | bool"]
    assert out["ansible.builtin.include_tasks"] == {"file": "gateway_out.yml", "apply": {"tags": ["always"]}}
    # not when a step drains the host itself (site.yml: sglang_server, right before its swap or restart)
    assert out["when"] == ["__sglang_rollout_drains | bool", "not __sglang_rollout_drain_late | bool"]
    assert renew["ansible.builtin.import_tasks"] == "renew.yml" and "__sglang_rollout_drains | bool" in renew["when"]
    assert "not __sglang_rollout_drain_late | bool" in renew["when"]
    renew_in, back = rollout_tasks("rejoin")
    assert renew_in["ansible.builtin.import_tasks"] == "renew.yml" and renew_in["vars"]["sglang_rollout_phase"] == "rejoin"
    assert back["ansible.builtin.include_tasks"]["file"] == "gateway_in.yml"
    # a renewal after the drain and before the way back in: whenever the gateway step runs, early or late, so does the
    # renewal
    (late,) = rollout_tasks("drain_late")
    assert late["ansible.builtin.include_tasks"] == {"file": "gateway_out.yml", "apply": {"tags": ["always"]}}
    assert out["when"][0] == late["when"] == renew_in["when"] == back["when"]
    drains = load("roles", "sglang_rollout", "vars", "main.yml")["__sglang_rollout_drains"]
    variables = {"__sglang_rollout_gateways": ["gw"], "__sglang_rollout_rank0": True}
    serving = {"restart_needed": True, "serving": True}
    assert render_text(drains, dict(variables, sglang_rollout_plan=serving)) is True
    # a server that does not run yet (first deployment) or is not restarted is not drained
    assert render_text(drains, dict(variables, sglang_rollout_plan=dict(serving, serving=False))) is False
    assert render_text(drains, dict(variables, sglang_rollout_plan=dict(serving, restart_needed=False))) is False
    # restart.yml has no plan: every rank 0 is drained; without gateways nothing; the other nodes never
    assert render_text(drains, variables) is True
    assert render_text(drains, dict(variables, __sglang_rollout_gateways=[])) is False
    assert render_text(drains, dict(variables, __sglang_rollout_rank0=False)) is False


def test_site_drains_from_inside_the_server_role_right_before_its_swap_or_restart():
    change = site_plays()[1]
    (task,) = change["tasks"]
    drains = [step for step in task["vars"]["sglang_rollout_steps"] if "drain" in step]
    assert [(step["role"], step["drain"]) for step in drains] == [("llmserve.sglang.sglang_server", "late")]
    variables = load("roles", "sglang_rollout", "vars", "main.yml")
    late = variables["__sglang_rollout_drain_late"]
    steps_ = task["vars"]["sglang_rollout_steps"]
    assert render_text(late, {"sglang_rollout_steps": steps_}) is True
    assert render_text(late, {"sglang_rollout_steps": steps_, "nvidia_driver_plan": {"apply": "none"}}) is True
    # a driver reload or reboot takes the server down before the server's step: the host drains before the steps
    for apply in ("reload", "reboot"):
        assert render_text(late, {"sglang_rollout_steps": steps_, "nvidia_driver_plan": {"apply": apply}}) is False
    assert render_text(late, {"sglang_rollout_steps": [dict(s, drain="x") if "drain" in s else s for s in steps_]}) is False
    # the step gets the hook only when the rollout drains late (its lock, a lease lookup, is left out here)
    hook = {"role": "llmserve.sglang.sglang_rollout", "tasks_from": "drain_late"}
    step_vars = {k: trust_as_template(v) if isinstance(v, str) else v for k, v in variables.items()
                 if k in ("__sglang_rollout_step_role_name", "__sglang_rollout_step_vars", "__sglang_rollout_drain_late")}
    step = {k: v for k, v in drains[0].items() if k != "lock"}
    base = dict(step_vars, sglang_rollout_steps=steps_, sglang_rollout_step=step)
    rendered = render_text("{{ __sglang_rollout_step_vars }}", base)
    assert rendered["sglang_server_drain_hook"] == hook
    rendered = render_text("{{ __sglang_rollout_step_vars }}", dict(base, nvidia_driver_plan={"apply": "reboot"}))
    assert "sglang_server_drain_hook" not in rendered
    # in the role: after the install and the staging, before the renewal right before the swap and the restart
    deploy = load("roles", "sglang_server", "tasks", "deploy.yml")
    names = [t.get("name") for t in deploy]
    (hook_task,) = [t for t in deploy if "ansible.builtin.include_role" in t]
    index = deploy.index(hook_task)
    assert names[index + 1] == "Renew the run's lock on this host right before the swap and the restart"
    assert "block" in deploy[index + 2] and "rescue" in deploy[index + 2], "before everything the rollback undoes"
    assert hook_task["ansible.builtin.include_role"] == {
        "name": "{{ sglang_server_drain_hook.role }}", "tasks_from": "{{ sglang_server_drain_hook.tasks_from }}",
        "apply": {"tags": ["always"]}}
    when = hook_task["when"]
    check = "{{ %s }}" % " and ".join("(%s)" % " ".join(w.split()) for w in when)
    server = {"sglang_server_drain_hook": hook, "__sglang_server_swap_in_place": False,
              "__sglang_server_restart_needed": True, "sglang_server_restart_policy": "on_change"}
    assert render_text(check, server) is True
    assert render_text(check, dict(server, __sglang_server_restart_needed=False)) is False
    assert render_text(check, dict(server, __sglang_server_restart_needed=False, __sglang_server_swap_in_place=True))
    assert render_text(check, dict(server, __sglang_server_restart_needed=False, sglang_server_probe_failed=True))
    # restart policy never: the files change, the server runs on; nothing to drain for
    assert render_text(check, dict(server, sglang_server_restart_policy="never")) is False
    assert render_text(check, dict(server, sglang_server_drain_hook={})) is False


def test_the_lock_is_renewed_for_the_prewarm_right_before_it_reads():
    """Issue 45 #7: reading a large model takes minutes; the lease begin took for the drain phase must not run out
    under it. tests/unit/roles/sglang_rollout/test_prewarm_lease.py runs it."""
    tasks = list(flatten(rollout_tasks("drain")))
    (warm,) = [t for t in rollout_tasks("drain")
               if any(role_of(x) == "sglang_server:prewarm" for x in t.get("block", []))]
    renew, prewarm = warm["block"]
    assert renew["ansible.builtin.import_tasks"] == "renew.yml"
    assert renew["vars"] == {"sglang_rollout_phase": "prewarm", "sglang_rollout_retake": False}
    assert role_of(prewarm) == "sglang_server:prewarm"
    assert tasks.index(renew) + 1 == tasks.index(prewarm), "nothing between the renewal and the read"
    # both under the block's condition: a renewal exactly when the pre-warm runs, only where this play took the lock
    assert "when" not in prewarm
    variables = {"sglang_rollout_lock": {"failed": False, "changed": False}}
    assert render_text("{{ %s }}" % renew["when"], variables) is True
    assert render_text("{{ %s }}" % renew["when"], {}) is False, "the drain entry point on its own renews nothing"
    assert render_text("{{ %s }}" % renew["when"], {"sglang_rollout_lock": {"failed": True}}) is False
    # the drain's own renewal (the phase its caller names) still comes after the drain
    after = tasks[-1]
    assert after["ansible.builtin.import_tasks"] == "renew.yml" and "sglang_rollout_phase" not in after["vars"]
    assert "sglang_rollout_phase | length > 0" in after["when"]
    # only a timeout is forgiven: every other failure, a lost lock among them, fails the host again
    stop, go_on = warm["rescue"]
    assert "ansible.builtin.fail" in stop and stop["when"] == "ansible_failed_result.timedout is not defined"
    assert "ansible.builtin.debug" in go_on and "when" not in go_on
    specs = load("roles", "sglang_rollout", "meta", "argument_specs.yml")["argument_specs"]
    assert "prewarm" in specs["renew"]["options"]["sglang_rollout_phase"]["choices"]
    # the default reads the deprecated sglang_prewarm_timeout first; without it, the spec's default
    assert load("roles", "sglang_rollout", "defaults", "main.yml")["sglang_rollout_prewarm_timeout"] == \
        "{{ sglang_prewarm_timeout | default(1800) }}"
    assert specs["drain"]["options"]["sglang_rollout_prewarm_timeout"]["default"] == \
        role_defaults()["sglang_rollout_prewarm_timeout"] == 1800


def test_rank_zero_comes_from_sglang_servers_public_fact():
    rank0 = load("roles", "sglang_rollout", "vars", "main.yml")["__sglang_rollout_rank0"]
    assert render_text(rank0, {}) is True, "a host sglang_server did not validate is a single-host server"
    assert render_text(rank0, {"sglang_server_node": {"group": "big", "rank": 1, "nnodes": 2}}) is False
    assert render_text(rank0, {"sglang_server_node": {"group": "big", "rank": 0, "nnodes": 2}}) is True
    for path in glob.glob(os.path.join(ROOT, "playbooks", "**", "*.yml"), recursive=True) + \
            glob.glob(os.path.join(ROOT, "roles", "sglang_rollout", "**", "*.yml"), recursive=True):
        with open(path) as handle:
            assert "__sglang_server_" not in handle.read(), "%s reads sglang_server's private variables" % path


# --- the sglang_rollout role's lock steps ------------------------------------------------------------------------------------

def test_begin_names_the_run_and_takes_the_lock_with_the_phases_lease():
    naming, ranges, take = rollout_tasks("begin")
    # included only while a name is missing: the window play (host_pinned, where run_once runs on every host) never
    # gets there
    assert naming["ansible.builtin.include_tasks"] == {"file": "run_name.yml", "apply": {"tags": ["always"]}}
    assert "sglang_rollout_run_id'] is not defined" in naming["when"]
    assert "sglang_rollout_report_run_dir'] is not defined" in naming["when"]
    name, directory = rollout_tasks("run_name")
    assert ranges["vars"]["__sglang_rollout_range_problems"] == \
        "{{ __sglang_rollout_ranges | llmserve.sglang.range_problems\n   + sglang_rollout_max_unavailable | " \
        "llmserve.sglang.sglang_rollout_window_problems }}", "bad settings stop before the lock"
    for task in (name, directory):
        assert task["run_once"] is True and task["delegate_to"] == "localhost" and task["delegate_facts"] is True
    assert name["when"] == "hostvars['localhost']['sglang_rollout_run_id'] is not defined"
    assert directory["when"] == "hostvars['localhost']['sglang_rollout_report_run_dir'] is not defined"
    # runs that start in the same second (the slices of a sliced job) get directories of their own: the run's name
    # is part of it, read back from the fact (not drawn again)
    assert "hostvars['localhost']['sglang_rollout_run_id'] | llmserve.sglang.sglang_report_file_name" in \
        directory["ansible.builtin.set_fact"]["sglang_rollout_report_run_dir"]
    assert take[LOCK]["owner"] == "{{ __sglang_rollout_owner }}"
    assert take[LOCK]["wait"] == "{{ sglang_rollout_lock_wait }}" and take[LOCK]["lease"] == PHASE_LEASE
    assert take[LOCK]["mode"] == "{{ sglang_rollout_lock_mode }}"
    assert take["register"] == "sglang_rollout_lock"
    (renew,) = rollout_tasks("renew")
    assert renew[LOCK]["lease"] == PHASE_LEASE and "register" not in renew, "a renewal never hides the first take"


def test_end_releases_only_a_lock_this_play_took():
    # the releases are the report's `always`: a failed report keeps nothing locked (issue 45 #6;
    # tests/unit/playbooks/test_report_server_text.py runs it)
    ended, end = rollout_tasks("end")
    # the window play counts a host whose change ended without succeeding as failed (vars/main.yml)
    assert ended["ansible.builtin.set_fact"] == {"sglang_rollout_change_ended": True}
    assert ended["when"] == "sglang_rollout_windowed | bool"
    (report,) = end["block"]
    holds, slot, release = end["always"]
    assert slot[LOCK]["path"] == "{{ __sglang_rollout_window_lock }}" and slot[LOCK]["state"] == "released"
    assert "__sglang_rollout_unpooled_slot is succeeded" in slot["when"]
    assert report["ansible.builtin.import_tasks"] == "report.yml" and report["when"] == "sglang_rollout_report | bool"
    assert holds[LOCK]["path"] == GATEWAY_LOCK and holds[LOCK]["state"] == "released"
    assert release[LOCK] == {"owner": "{{ __sglang_rollout_owner }}", "state": "released"}
    assert release["when"] == "sglang_rollout_lock is defined and sglang_rollout_lock is succeeded"


def test_every_lease_comes_from_the_lease_filter():
    """No lease arithmetic in YAML: the role's per-phase leases are filter calls, and every lock takes one of them."""
    variables = load("roles", "sglang_rollout", "vars", "main.yml")
    leases = {k: v for k, v in variables.items() if k.startswith("__sglang_rollout_lease_")}
    assert len(leases) == 14
    for name, expression in leases.items():
        phase = name[len("__sglang_rollout_lease_"):]
        assert expression.strip() == ("{{ '%s' | llmserve.sglang.sglang_rollout_lease(__sglang_rollout_all_budgets, "
                                      "__sglang_rollout_gateways) }}" % phase), name
    allowed = (PHASE_LEASE, "{{ __sglang_rollout_lease_gateway }}",
               "{{ lookup('ansible.builtin.vars', '__sglang_rollout_lease_' ~ sglang_rollout_hold_phase) }}")
    locks = 0
    for path in glob.glob(os.path.join(ROOT, "playbooks", "**", "*.yml"), recursive=True):
        for play in load(path):
            for task in flatten(play.get("tasks", [])):
                if LOCK in task and "lease" in task[LOCK]:
                    locks += 1
                    assert task[LOCK]["lease"] in allowed, (path, task["name"])
    for path in glob.glob(os.path.join(ROOT, "roles", "sglang_rollout", "tasks", "*.yml")):
        for task in flatten(load(path)):
            if LOCK in task and "lease" in task[LOCK]:
                locks += 1
                assert task[LOCK]["lease"] in allowed, (path, task["name"])
    assert locks == 5, "begin, renew, the drain's hold, the window slot of the unpooled servers and gateway.yml's gateway lock"
    for path in glob.glob(os.path.join(ROOT, "playbooks", "**", "*.yml"), recursive=True) + \
            glob.glob(os.path.join(ROOT, "roles", "sglang_rollout", "**", "*.yml"), recursive=True):
        with open(path) as handle:
            assert not re.search(r"lease.*\|\s*int", handle.read()), path


def test_the_batch_check_counts_the_servers_of_the_batch_the_order_cut():
    """A percentage or a list as sglang_rollout_serial reads as 0 through `int`: the check counts the batch itself."""
    rollout_vars = load("roles", "sglang_rollout", "vars", "main.yml")
    names = ("__sglang_rollout_batch_hosts", "__sglang_rollout_batch_groups", "__sglang_rollout_batch_servers")
    hostvars = {"a": {}, "b": {"sglang_server_node_group": None}, "n1": {"sglang_server_node_group": "big"},
                "n2": {"sglang_server_node_group": "big"}, "c": {}}

    def servers(batches, host, play_batch=()):
        variables = dict((name, rollout_vars[name]) for name in names)
        variables.update(inventory_hostname=host, ansible_play_batch=list(play_batch), hostvars=dict(
            hostvars, localhost={"sglang_rollout_order": {"batches": batches}} if batches is not None else {}))
        return int(render_text("{{ __sglang_rollout_batch_servers }}", variables))

    # sglang_rollout_serial "50%" of four servers: batches of two, and the check sees 2 (the old one saw "50%" | int = 0)
    assert servers([["a", "b"], ["n1", "n2", "c"]], "a") == 2
    # the two nodes of a multi-node server are one server
    assert servers([["a", "b"], ["n1", "n2", "c"]], "n2") == 2
    assert servers([["n1", "n2"]], "n1") == 1
    # without an order (restart.yml's own play), the play's batch
    assert servers(None, "c", play_batch=["a", "c", "n1", "n2"]) == 3


def test_no_inline_defaults_for_the_rollout_variables():
    """The sglang_rollout role's defaults (and argument specs) are the only defaults of the playbooks' variables."""
    defaults = load("roles", "sglang_rollout", "defaults", "main.yml")
    public = [n for n in defaults if not n.startswith("sglang_rollout_") or n in (
        "sglang_rollout_serial", "sglang_rollout_max_unavailable", "sglang_rollout_max_fail_percentage")]
    files = glob.glob(os.path.join(ROOT, "playbooks", "**", "*.yml"), recursive=True) + \
        glob.glob(os.path.join(ROOT, "roles", "sglang_rollout", "**", "*.yml"), recursive=True)
    for path in files:
        with open(path) as handle:
            text = handle.read()
        for name in public:
            assert not re.search(r"\b%s \| default\(" % name, text), (path, name)
    specs = load("roles", "sglang_rollout", "meta", "argument_specs.yml")["argument_specs"]
    entry_points = {os.path.basename(p)[:-4] for p in glob.glob(os.path.join(ROOT, "roles", "sglang_rollout", "tasks", "*.yml"))}
    # the task files the stages put together are not entry points of their own
    internal = {"gateway_out", "step", "steps", "budgets", "run_name", "renames", "report_write", "window_stop"} | \
        {e for e in entry_points if e.startswith("stage_")}
    assert set(specs) == entry_points - internal, "every entry point has its argument spec"
    for entry, spec in specs.items():
        for name, option in spec["options"].items():
            if name in defaults and "default" in option:
                # a renamed setting's default reads its deprecated name first: "{{ OLD | default(VALUE) }}"
                renamed = re.match(r"^\{\{ \w+ \| default\((.*)\) \}\}$", str(defaults[name]))
                expected = yaml.safe_load(renamed.group(1)) if renamed else defaults[name]
                assert option["default"] == expected, (entry, name)


# --- restart.yml, rollback.yml, the audit, the rejoin play -------------------------------------------------------------

def test_restart_drains_renews_restarts_and_puts_back():
    imported = [p["ansible.builtin.import_playbook"] for p in load("playbooks", "restart.yml") if "tasks" not in p]
    assert imported == ["plays/unsliced.yml", "plays/gateway_view.yml", "plays/rollout_order.yml"]
    (restart,) = [p for p in load("playbooks", "restart.yml") if "tasks" in p]
    # the restart stage is the change stage's task file: drain, the steps (a renewal right before each), rejoin, end
    assert rollout_of(restart) == ("restart", ["sglang_server:restart(restart)"])
    stages = load("roles", "sglang_rollout", "vars", "main.yml")["__sglang_rollout_stages"]
    # the hold lasts the whole batch; the weights are read into the page cache before the drain (no plan: restarts)
    assert stages["restart"] == {"lease": "restart_batch", "hold": "restart_batch", "tasks": "change"}
    (drain,) = [t for t in flatten(rollout_tasks("stage_change")) if t.get("ansible.builtin.import_tasks") == "drain.yml"]
    restarts = drain["vars"]["sglang_rollout_restarts"]
    assert render_text(restarts, {}) is True
    assert render_text(restarts, {"sglang_rollout_plan": {"restart_needed": False}}) is False
    assert restart["max_fail_percentage"] == "{{ sglang_rollout_max_fail_percentage }}"
    # the host report (its time out of rotation) is written, for a host that did not come back too
    (end,) = [t for t in flatten(rollout_tasks("stage_change")) if t.get("ansible.builtin.import_tasks") == "end.yml"]
    assert "sglang_rollout_report" not in end.get("vars", {})


def test_the_restart_entry_point_reports_success_and_failure():
    (block,) = [t for t in load("roles", "sglang_server", "tasks", "restart.yml") if "block" in t]
    for tasks, state in ((block["block"], "serving"), (block["rescue"], "did not come back after the restart")):
        (record,) = [t for t in tasks if "sglang_server_report" in t.get("ansible.builtin.set_fact", {})]
        assert record["ansible.builtin.set_fact"]["sglang_server_report"] == (
            "{{ __sglang_server_restart_report | llmserve.sglang.sglang_server_report }}")
        assert record["vars"] == {"__sglang_server_restart_state": state}
    # recorded after the verification and after the journal was read
    assert "verify.yml" in str(block["block"][-2]) and "journal.yml" in str(block["rescue"][-3])
    fields = load("roles", "sglang_server", "vars", "main.yml")["__sglang_server_restart_report"]
    assert {"state", "restarted", "ready", "unit_times", "startup_metrics", "journal", "error"} <= set(fields)


def test_restart_and_rollback_order_every_server_of_the_run():
    (order,) = load("playbooks", "plays", "rollout_order.yml")
    assert order["hosts"] == "sglang_servers"
    assert rollout_of(order) == ("order", [])
    assert stage_steps("order") == ["rollout:nodes", "rollout:order"]
    nodes, ordered = rollout_tasks("stage_order")
    assert nodes["vars"] == {"sglang_rollout_resolve_nodes": True}
    assert "vars" not in ordered, "not planned: every server of the run"


def test_rollback_restores_right_after_taking_the_lock():
    assert [p["ansible.builtin.import_playbook"] for p in load("playbooks", "rollback.yml")[:2]] == [
        "plays/unsliced.yml", "plays/rollout_order.yml"]
    (rollback,) = [p for p in load("playbooks", "rollback.yml") if "tasks" in p]
    assert rollout_of(rollback) == ("rollback", ["sglang_server:rollback"])
    assert stage_steps("rollback") == ["rollout:budgets", "rollout:begin(rollback)", "rollout:steps", "rollout:end"]


@pytest.mark.parametrize("playbook", ["restart.yml", "rollback.yml", "gateway.yml", "preflight.yml",
                                      "plays/gateway_rejoin.yml"])
def test_every_changing_play_releases_the_lock_whatever_happens(playbook):
    play = [p for p in load("playbooks", playbook) if "tasks" in p][-1]
    stage, _declared = rollout_of(play)
    tasks = rollout_tasks("stage_" + load("roles", "sglang_rollout", "vars", "main.yml")["__sglang_rollout_stages"][stage]
                          .get("tasks", stage))
    (block,) = [t for t in tasks if "block" in t]
    assert block["always"][-1]["ansible.builtin.import_tasks"] == "end.yml"
    mode = "shared" if playbook == "preflight.yml" else None
    assert block["block"][0]["vars"].get("sglang_rollout_lock_mode") == mode


def test_audit_holds_the_lock_shared_for_its_whole_run():
    (play,) = load("playbooks", "preflight.yml")
    assert rollout_of(play) == ("audit", ["iommu_preflight", "nvidia_driver:verify"])
    assert stage_steps("audit") == ["rollout:budgets", "rollout:begin(audit)", "rollout:steps", "sglang_server:probe", "fail",
                                    "rollout:end"]


def test_the_rejoin_play_takes_the_lock_for_the_wait_in_each_gateway():
    (play,) = load("playbooks", "plays", "gateway_rejoin.yml")
    assert rollout_of(play) == ("rejoin", [])
    assert stage_steps("rejoin") == ["rollout:begin(rejoin)", "rollout:gateway_in", "rollout:end"]


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
    # the first live changes of the block: the in-place load of a new model revision, the files, the model link, the
    # restart; nothing else comes between the renewal and them
    weights, swap, link, restart = block["block"][:4]
    assert weights["ansible.builtin.include_tasks"] == "swap_weights.yml"
    assert "llmserve.sglang.deploy_state" in swap and swap["name"] == "Swap the staged files in"
    assert link["ansible.builtin.file"]["state"] == "link"
    assert restart["ansible.builtin.include_tasks"] == "group_restart.yml"
    defaults = load("roles", "sglang_server", "defaults", "main.yml")
    assert defaults["sglang_server_lock_owner"] == "", "the role on its own (no playbook lock) renews nothing"
    specs = load("roles", "sglang_server", "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert {"sglang_server_lock_owner", "sglang_server_lock_lease"} <= set(specs)


# --- no gateway restart during a drain (issue 24 #11) ----------------------------------------------------------------

def test_a_drain_holds_each_gateway_lock_shared_before_it_takes_the_worker_out():
    hold, stop, drain = rollout_tasks("gateway_out")[:3]
    assert hold[LOCK]["path"] == GATEWAY_LOCK and hold[LOCK]["mode"] == "shared"
    # one holder per worker: workers of several runs drain at once, each releases only its own hold
    assert hold[LOCK]["owner"] == "{{ hostvars['localhost']['sglang_rollout_run_id'] }} drain {{ inventory_hostname }}"
    # in the window play the hold is the pool's window slot: a counting semaphore of the pool's window
    pools = [{"gateway": "gw-a", "window": 2}, {"gateway": "gw-b", "window": 3}]
    for windowed, gateway, most in ((False, "gw-a", 0), (True, "gw-a", 2), (True, "gw-b", 3), (True, "gw-x", 0)):
        variables = {"__sglang_rollout_host_pools": pools, "__sglang_rollout_gw": gateway, "sglang_rollout_windowed": windowed}
        assert int(render_text(hold[LOCK]["max_holders"], variables)) == most
    assert render_text(hold[LOCK]["wait"], {"sglang_rollout_windowed": False, "sglang_rollout_lock_wait": 1800,
                                            "sglang_rollout_window_wait": 86400}) == 1800
    assert render_text(hold[LOCK]["wait"], {"sglang_rollout_windowed": True, "sglang_rollout_lock_wait": 1800,
                                            "sglang_rollout_window_wait": 86400}) == 86400
    # a host that got its slots after the rollout stopped gives them back and ends, unchanged
    assert stop["ansible.builtin.include_tasks"]["file"] == "window_stop.yml"
    assert stop["when"] == ["sglang_rollout_windowed | bool", "__sglang_rollout_window_stops | bool"]
    assert hold[LOCK]["lease"] == "{{ lookup('ansible.builtin.vars', '__sglang_rollout_lease_' ~ sglang_rollout_hold_phase) }}"
    assert hold["delegate_to"] == drain["delegate_to"] == "{{ __sglang_rollout_gw }}"
    assert hold["loop"] == drain["loop"] == "{{ __sglang_rollout_host_gateways }}", "a hold in every gateway it drains from"
    assert drain["llmserve.sglang.gateway_worker"]["state"] == "absent"
    release = rollout_tasks("end")[1]["always"][0]
    assert release[LOCK] == {"path": GATEWAY_LOCK, "owner": "{{ __sglang_rollout_owner }} drain {{ inventory_hostname }}",
                             "state": "released"}
    assert render_text(release[LOCK]["owner"], {"__sglang_rollout_owner": "r1", "inventory_hostname": "h"}) == \
        render_text(hold[LOCK]["owner"], {"hostvars": {"localhost": {"sglang_rollout_run_id": "r1"}}, "inventory_hostname": "h"})
    assert release["delegate_to"] == "{{ __sglang_rollout_hold.__sglang_rollout_gw }}"
    assert hold["register"] in release["loop"] and "'shared'" in release["loop"], "only the holds that were taken"
    # released before the host's own lock, at the end of the batch
    assert [LOCK in t for t in flatten(rollout_tasks("end"))] == [False, False, True, True, True]


def test_gateway_lock_paths_are_private():
    assert os.path.dirname(GATEWAY_LOCK) == "/run/llmserve"
    for name in (os.path.join("roles", "sglang_rollout", "tasks", "stage_gateway.yml"),
                 os.path.join("roles", "sglang_rollout", "tasks", "gateway_out.yml"),
                 os.path.join("roles", "sglang_rollout", "tasks", "end.yml")):
        with open(os.path.join(ROOT, name)) as handle:
            paths = set(re.findall(r"path: (/run/\S+)", handle.read()))
        assert paths == {GATEWAY_LOCK}, (name, paths)


# --- the canary gate (plays/canary.yml, tasks/stage_canary.yml) ----------------------------------------------------

def test_site_changes_and_judges_the_canaries_before_any_other_server():
    change, gate = canary_plays()
    plan, window, batches = site_plays(window=True)
    order = "{{ hostvars['localhost']['sglang_rollout_order']['canary'] | default([]) }}"
    assert change["hosts"] == gate["hosts"] == order
    # the canaries change as the window play's hosts do, with its steps, and keep the configuration before as the
    # last good one
    assert change["strategy"] == "ansible.builtin.host_pinned" and change["tasks"][0]["vars"]["sglang_rollout_windowed"]
    assert rollout_of(change) == rollout_of(window)
    canary_steps = change["tasks"][0]["vars"]["sglang_rollout_steps"]
    window_steps = window["tasks"][0]["vars"]["sglang_rollout_steps"]
    assert canary_steps[0] == window_steps[0]
    assert canary_steps[1]["vars"] == dict(window_steps[1]["vars"], sglang_server_last_good_deferred=True)
    assert dict(canary_steps[1], vars=None) == dict(window_steps[1], vars=None)
    # a failed gate (or a failed canary) ends the playbook: no other play runs
    assert gate["any_errors_fatal"] is True and "strategy" not in gate
    assert rollout_of(gate) == ("canary", ["sglang_server:rollback(rollback)"])


def test_the_gate_keeps_the_change_or_rolls_back_under_the_lock():
    tasks = rollout_tasks("stage_canary")
    (block,) = [t for t in tasks if "block" in t]
    names = [role_of(t) or ("block" if "block" in t else next(k for k in t if k.startswith("ansible.builtin.")))
             for t in block["block"]]
    assert names == ["ansible.builtin.import_tasks", "ansible.builtin.uri", "ansible.builtin.wait_for",
                     "ansible.builtin.uri", "ansible.builtin.set_fact", "ansible.builtin.debug", "sglang_server:promote",
                     "block"]
    assert block["block"][0]["vars"] == {"sglang_rollout_phase": "canary"}
    # each worker is read on itself, at the address its own probes use; a failed read leaves it out of the judgement
    for read in (block["block"][1], block["block"][3]):
        assert read["delegate_to"] == "{{ __sglang_rollout_peer }}" and read["failed_when"] is False
        assert read["ansible.builtin.uri"]["url"] == "{{ hostvars[__sglang_rollout_peer].sglang_server_plan.metrics_url }}"
        assert read["loop"] == "{{ [inventory_hostname] + __sglang_rollout_canary_pool }}"
    assert block["block"][6]["when"] == "__sglang_rollout_canary_keeps | bool"
    rollback = block["block"][7]
    assert rollback["when"] == "not __sglang_rollout_canary_keeps | bool"
    assert [t.get("ansible.builtin.import_tasks") for t in rollback["block"]] == ["renew.yml", "drain.yml", "steps.yml",
                                                                                  "rejoin.yml", None]
    assert rollback["block"][1]["vars"]["sglang_rollout_restarts"] is False
    # the window slots the rollback's drain took go back once the canary serves again; a failure leaves them to end.yml,
    # which must not take the change play's registered results for them
    give_back = rollback["block"][4]
    assert give_back[LOCK]["state"] == "released" and give_back["register"] == "__sglang_rollout_slots_back"
    (forget,) = [t for t in tasks if t["name"] == "Forget the change play's gateway holds"]
    assert forget["ansible.builtin.set_fact"] == {"__sglang_rollout_gateway_hold": {},
                                                  "__sglang_rollout_slots_back": {"skipped": True}}
    assert [t.get("ansible.builtin.import_tasks") for t in block["always"]] == ["end.yml"]
    stop = tasks[-1]
    assert "ansible.builtin.fail" in stop
    # a dry run changed nothing: no gate, no failure
    assert block["when"] == "not ansible_check_mode"
    assert stop["when"] == ["not ansible_check_mode", "not __sglang_rollout_canary_keeps | bool"]
    (dry,) = [t for t in tasks if t.get("when") == "ansible_check_mode"]
    assert "ansible.builtin.debug" in dry


def _order_context(hostvars, **settings):
    order = rollout_tasks("order")[0]
    context = dict(order["vars"])
    context["__sglang_rollout_node_group_hosts"] = load("roles", "sglang_rollout", "vars", "main.yml")[
        "__sglang_rollout_node_group_hosts"]
    context.update(dict(sglang_rollout_planned=True, sglang_rollout_window=True, sglang_rollout_serial=1,
                        sglang_rollout_max_fail_percentage=0, sglang_rollout_canary="auto",
                        __sglang_rollout_play_servers=list(hostvars), groups={"sglang_servers": list(hostvars)},
                        hostvars={h: dict(v, inventory_hostname=h) for h, v in hostvars.items()}), **settings)
    return order, context


def _server(restart=True, serving=True, metrics=True, group=""):
    return {"sglang_rollout_plan": {"changes": ["sglang: x"], "restart_needed": restart, "serving": serving},
            "sglang_server_plan": {"metrics_url": "http://127.0.0.1:30000/metrics" if metrics else None},
            "sglang_server_node_group": group}


def test_the_canaries_are_the_first_serving_single_host_servers_that_restart_and_serve_metrics():
    fleet = {"a": _server(metrics=False), "b": _server(serving=False), "n0": _server(group="big"),
             "n1": _server(group="big"), "c": _server(), "d": _server()}
    order, context = _order_context(fleet)
    fact = order["ansible.builtin.set_fact"]["sglang_rollout_order"]

    def rendered(key, **settings):
        return render_text(fact[key], dict(context, __sglang_rollout_batches=[], **settings))

    # auto: one, the first that serves /metrics (a does not, b serves nothing yet, n0/n1 are one multi-node server)
    assert rendered("canary") == ["c"]
    assert rendered("window") == ["a", "b", "d"], "the canary is not in the window again"
    assert rendered("canary", sglang_rollout_canary=2) == ["c", "d"]
    assert rendered("canary", sglang_rollout_canary=0) == []
    assert rendered("canary", sglang_rollout_canary=2, sglang_rollout_window=False) == ["c", "d"]
    # the batches (the collection's filter, not loaded here) cut what the canaries and the window leave
    candidates = render_text("{{ __sglang_rollout_candidates }}", dict(context, sglang_rollout_window=False))
    assert candidates == ["a", "b", "n0", "n1", "d"]
    assert rendered("canary_note") == "" and rendered("canary_refused") == ""
    # restart.yml / rollback.yml order without a plan: never a canary
    assert rendered("canary", sglang_rollout_planned=False) == []


def test_no_canary_without_metrics_or_with_one_server_and_a_refusal_when_one_was_asked_for():
    order, context = _order_context({"a": _server(metrics=False), "b": _server(metrics=False)})
    fact = order["ansible.builtin.set_fact"]["sglang_rollout_order"]
    assert render_text(fact["canary"], context) == []
    assert "fewer than two of them serve /metrics (sglang_server_metrics: true)" in render_text(fact["canary_note"], context)
    assert render_text(fact["canary_refused"], context) == ""
    refused = render_text(fact["canary_refused"], dict(context, sglang_rollout_canary=1))
    assert refused.startswith("sglang_rollout_canary is 1, but none of the servers") and "sglang_server_metrics: true" in refused
    # one server of the run serves /metrics (or the run is limited to it): nothing to compare it with
    order, context = _order_context({"a": _server(), "b": _server(metrics=False)})
    assert render_text(fact["canary"], context) == []
    assert "fewer than two of them serve /metrics" in render_text(fact["canary_note"], context)
    refused = render_text(fact["canary_refused"], dict(context, sglang_rollout_canary=1))
    assert "(a run limited to one server has none to compare with)" in refused and "\n" not in refused
    order, context = _order_context({"a": _server(), "b": _server(metrics=False)},
                                    __sglang_rollout_play_servers=["a"])
    assert render_text(fact["canary"], context) == []
    # one server: nothing to compare with
    order, context = _order_context({"a": _server()})
    assert render_text(fact["canary"], context) == []
    assert render_text(fact["canary_note"], context) == "no canary gate: the fleet has one server"
    # a first deployment (nothing serves yet): no candidate, no gate, nothing to say
    order, context = _order_context({"a": _server(serving=False), "b": _server(serving=False)})
    assert render_text(fact["canary"], context) == [] and render_text(fact["canary_note"], context) == ""


def test_a_canary_is_judged_against_the_other_workers_of_its_pools():
    variables = load("roles", "sglang_rollout", "vars", "main.yml")
    names = ("__sglang_rollout_canary_pool", "__sglang_rollout_host_pools", "__sglang_rollout_pooled_hosts",
             "__sglang_rollout_node_group_hosts")
    servers = {"a1": _server(), "a2": _server(), "a3": _server(metrics=False), "b1": _server(), "b2": _server(),
               "x1": _server(), "x2": _server(), "n0": _server(group="big")}

    def pool(host, canaries):
        context = dict((name, variables[name]) for name in names)
        pools = {"gw-a": ["a1", "a2", "a3"], "gw-b": ["b1", "b2", "a2"]}
        # the filter sglang_rollout_pools, which the collection loader would find
        context.update(inventory_hostname=host, __sglang_rollout_pool_map=pools,
                       __sglang_rollout_host_pools=host_pools(host, pools, 1),
                       groups={"sglang_servers": list(servers)},
                       hostvars=dict({h: dict(v, inventory_hostname=h) for h, v in servers.items()},
                                     localhost={"sglang_rollout_order": {"canary": canaries}}))
        return render_text("{{ __sglang_rollout_canary_pool }}", context)

    # a1 is behind gw-a: a2 (a3 serves no /metrics)
    assert pool("a1", ["a1"]) == ["a2"]
    # a2 is behind both gateways: the workers of both, not the other canary b1
    assert pool("a2", ["a2", "b1"]) == ["a1", "b2"]
    # behind no gateway: the other servers behind no gateway, not a multi-node server's node
    assert pool("x1", ["x1"]) == ["x2"]
