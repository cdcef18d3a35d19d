# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""plugin_utils/rollout_lease.py: every phase's lease outlasts the phase's own steps, read from the roles' tasks (their
timeouts rendered with the same variables), plus sglang_rollout_lock_lease. A longer wait added to a role's tasks fails here
until the phase's rule counts it."""

from __future__ import annotations

import math
import os

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.llmserve.sglang.plugins.plugin_utils.rollout_lease import (
    INPUTS,
    PHASES,
    LeaseError,
    phase_lease,
    role_defaults,
)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
GPUS = 8  # the P2P lease is sized for up to 8 GPUs
WAIT = "llmserve.sglang.wait_for_endpoint"
CHECK = "llmserve.sglang.speculative_check"
PER_CALL_OVERHEAD = 1.0  # Ansible's own time per module run, on top of the module's timeout


def load(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return yaml.safe_load(handle)


def render(expression, variables):
    trusted = {k: trust_as_template(v) if isinstance(v, str) else v for k, v in variables.items()}
    return float(Templar(loader=DataLoader(), variables=trusted).template(trust_as_template(str(expression))))


def all_defaults():
    values = {}
    for role in ("sglang_rollout", "iommu_preflight", "nvidia_driver", "sglang_server", "sglang_gateway"):
        values.update(load("roles", role, "defaults", "main.yml"))
    # the rollout's renamed settings read their deprecated names first ("{{ sglang_lock_lease | default(300) }}"):
    # without those, their own defaults, as the filter takes them
    values.update(role_defaults())
    return values


def timeouts(role, *files, variables, modules=(WAIT, CHECK)):
    """Sum of the timeouts of a role's task files' waits and speculative checks, rendered with the given variables."""
    total = 0.0
    for name in files:
        for task in load("roles", role, "tasks", name):
            for module in modules:
                if module in task:
                    total += render(task[module]["timeout"], variables)
    return total


SCENARIOS = {
    "defaults": {},
    "p2p and reboot": {"iommu_preflight_p2p_test": True, "nvidia_driver_apply": "reboot"},
    "reload, slow model": {"nvidia_driver_apply": "reload", "sglang_server_ready_timeout": 3600,
                           "sglang_server_timeout_stop_sec": 300, "iommu_preflight_p2p_timeout": 120,
                           "iommu_preflight_p2p_test": True},
    "short margin": {"sglang_rollout_lock_lease": 60, "sglang_rollout_lock_install_seconds": 600},
    # a low acceptance length deploys once more without speculation
    "speculation off when low": {"sglang_server_speculative_on_low": "disable",
                                 "sglang_server_speculative_check_timeout": 900},
    "multi-node server": {"sglang_server_node_group": "big"},
    # a slow disk: the pre-warm may read for two hours
    "slow pre-warm": {"sglang_rollout_prewarm_timeout": 7200},
    # as inventories and -e give them: strings
    "strings": {"sglang_rollout_lock_lease": "120", "sglang_server_ready_timeout": "600", "iommu_preflight_p2p_test": "yes"},
}


def variables_of(scenario):
    variables = all_defaults()
    variables.update(SCENARIOS[scenario])
    return variables


def number(variables, name):
    return float(variables[name])


def stop(variables):
    # a multi-node server stops rank 0, then the other nodes
    return number(variables, "sglang_server_timeout_stop_sec") * (2 if variables["sglang_server_node_group"] else 1)


def lease(phase, variables, gateways=0):
    return phase_lease(phase, variables, gateways)


TWO_GATEWAYS = {"sglang_rollout_drain_timeout": 900, "sglang_rollout_gateway_healthy_timeout": 400}


# --- one test per phase -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_plan_outlasts_the_p2p_test_and_the_probe(scenario):
    variables = variables_of(scenario)
    p2p = 0.0
    if str(variables["iommu_preflight_p2p_test"]).lower() in ("true", "yes"):
        task = [t for t in load("roles", "iommu_preflight", "tasks", "p2p.yml") if t["name"].startswith("Run the")][0]
        p2p = render(task["timeout"], dict(variables, __iommu_preflight_selected_addresses=["x"] * GPUS))
        assert p2p > 0
    probe = timeouts("sglang_server", "probe.yml", variables=variables)
    assert probe == number(variables, "sglang_server_ready_timeout")
    assert lease("plan", variables) >= p2p + probe + number(variables, "sglang_rollout_lock_lease")


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_driver_outlasts_a_reboot_or_a_reload(scenario):
    variables = variables_of(scenario)
    margin = number(variables, "sglang_rollout_lock_lease")
    driver = lease("driver", variables)
    if variables["nvidia_driver_apply"] == "reboot":
        reboot = [t for t in load("roles", "nvidia_driver", "tasks", "reboot.yml") if "ansible.builtin.reboot" in t][0]
        assert driver >= render(reboot["ansible.builtin.reboot"]["reboot_timeout"], variables) + margin
    if variables["nvidia_driver_apply"] == "reload":
        units = len(variables["nvidia_driver_gpu_services"])
        assert units > 0
        assert driver >= 2 * units * number(variables, "sglang_server_timeout_stop_sec") + margin
    assert driver >= margin


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_drain_covers_the_drain_in_each_gateway_and_the_driver_phase(scenario):
    variables = variables_of(scenario)
    assert lease("drain", variables) == lease("driver", variables), "without gateways there is no drain"
    two = dict(variables, **TWO_GATEWAYS)
    assert lease("drain", two, ["gw1", "gw2"]) >= lease("driver", two) + 2 * 900


def prewarm_timeout(variables):
    """The pre-warm's bound: the timeout drain.yml gives the tasks of sglang_server's prewarm entry point."""
    (task,) = [t for block in load("roles", "sglang_rollout", "tasks", "drain.yml") for t in block.get("block", [])
               if t.get("ansible.builtin.include_role", {}).get("tasks_from") == "prewarm"]
    return render(task["ansible.builtin.include_role"]["apply"]["timeout"], variables)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_prewarm_outlasts_the_read_then_the_drain_phase(scenario):
    """drain.yml renews with it right before the pre-warm: the read, then the drain in each gateway and (without
    gateways site.yml renews only after it) the driver role."""
    variables = variables_of(scenario)
    read = prewarm_timeout(variables)
    assert read == number(variables, "sglang_rollout_prewarm_timeout") > 0
    assert lease("prewarm", variables) >= read + lease("drain", variables)
    two = dict(variables, **TWO_GATEWAYS)
    assert lease("prewarm", two, 2) >= prewarm_timeout(two) + lease("drain", two, 2)
    # restart.yml renews for the restart after its drain: the pre-warm's lease covers what comes before that too
    assert lease("prewarm", two, 2) >= prewarm_timeout(two) + 2 * 900 + number(variables, "sglang_rollout_lock_lease")


def test_the_prewarm_lease_grows_with_the_prewarm_budget():
    base = lease("prewarm", {})
    assert lease("prewarm", {"sglang_rollout_prewarm_timeout": 7200}) == base - 1800 + 7200
    assert lease("prewarm", {"sglang_rollout_prewarm_timeout": "60"}) == base - 1800 + 60
    # the other leases do not read it
    for phase in set(PHASES) - {"prewarm"}:
        assert lease(phase, {"sglang_rollout_prewarm_timeout": 7200}) == lease(phase, {}), phase


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_deploy_outlasts_the_restart_the_verification_and_a_rollback(scenario):
    """The lease sglang_server renews with right before its swap and restart."""
    variables = variables_of(scenario)
    margin = number(variables, "sglang_rollout_lock_lease")
    deploy = lease("deploy", variables)
    waits = timeouts("sglang_server", "verify.yml", "restore.yml", variables=variables)
    assert deploy >= 2 * stop(variables) + waits + margin
    assert timeouts("sglang_server", "verify.yml", variables=variables, modules=(CHECK,)) \
        == number(variables, "sglang_server_speculative_check_timeout")
    if variables["sglang_server_speculative_on_low"] == "disable":
        # one more deployment without speculation (no check then), which may roll back in turn
        again = stop(variables) + timeouts("sglang_server", "verify.yml", variables=variables, modules=(WAIT,))
        assert deploy >= 2 * stop(variables) + waits + again + margin
    two = dict(variables, **TWO_GATEWAYS)
    assert lease("deploy", two, 2) >= lease("deploy", two) + 2 * 400, "then back into each gateway"


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_sglang_adds_the_install_and_the_late_drain(scenario):
    variables = variables_of(scenario)
    install = number(variables, "sglang_rollout_lock_install_seconds")
    assert lease("sglang", variables) >= install + lease("deploy", variables)
    # site.yml drains the host from inside the role, right before its swap or restart: in each gateway
    drain = number(variables, "sglang_rollout_drain_timeout")
    assert lease("sglang", variables, 2) >= install + 2 * drain + lease("deploy", variables, 2)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_rejoin_outlasts_the_wait_in_every_gateway(scenario):
    variables = variables_of(scenario)
    margin = number(variables, "sglang_rollout_lock_lease")
    assert lease("rejoin", variables) >= margin
    assert lease("rejoin", dict(variables, **TWO_GATEWAYS), 2) >= margin + 2 * 400


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_hold_lasts_until_the_end_of_the_batch(scenario):
    """A drained worker's hold on each gateway lock: the drain and driver phase, then the SGLang phase."""
    variables = dict(variables_of(scenario), **TWO_GATEWAYS)
    assert lease("hold", variables, 2) >= lease("drain", variables, 2) + lease("sglang", variables, 2)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_restart_outlasts_the_restart_and_its_verification(scenario):
    variables = variables_of(scenario)
    margin = number(variables, "sglang_rollout_lock_lease")
    restart = lease("restart", variables)
    assert restart >= stop(variables) + timeouts("sglang_server", "verify.yml", variables=variables) + margin
    two = dict(variables, **TWO_GATEWAYS)
    assert lease("restart", two, 2) >= lease("restart", two) + 2 * 400
    # the whole batch (the first lock and the drained worker's hold): each gateway's drain first
    assert lease("restart_batch", two, 2) >= lease("restart", two, 2) + 2 * 900
    assert lease("restart_batch", variables) >= restart


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_rollback_outlasts_the_restart_of_the_restored_configuration(scenario):
    variables = variables_of(scenario)
    assert lease("rollback", variables) >= (stop(variables) + timeouts("sglang_server", "restore.yml", variables=variables)
                                            + number(variables, "sglang_rollout_lock_lease"))


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_audit_outlasts_the_p2p_test_and_the_probe(scenario):
    variables = variables_of(scenario)
    p2p = 0.0
    if str(variables["iommu_preflight_p2p_test"]).lower() in ("true", "yes"):
        p2p = number(variables, "iommu_preflight_p2p_timeout") * GPUS ** 2 + 120
    assert lease("audit", variables) >= p2p + number(variables, "sglang_rollout_audit_probe_timeout") \
        + number(variables, "sglang_rollout_lock_lease")


def gateway_worst_case(variables):
    """Seconds the gateway role's verify.yml may wait at most: each wait_for_endpoint's timeout, the worker listing
    retried."""
    total = 0.0
    for task in load("roles", "sglang_gateway", "tasks", "verify.yml"):
        if WAIT not in task:
            continue
        timeout = render(task[WAIT]["timeout"], variables)
        if "until" in task:
            tries = render(task["vars"]["__sglang_gateway_workers_tries"], variables)
            total += tries * (timeout + PER_CALL_OVERHEAD) + (tries - 1) * float(task["delay"])
        else:
            total += timeout + PER_CALL_OVERHEAD
    return total


@pytest.mark.parametrize("overrides", [{}, {"sglang_gateway_workers_timeout": 600, "sglang_gateway_ready_timeout": 30},
                                       {"sglang_rollout_lock_lease": 60, "sglang_gateway_workers_timeout": 1}])
def test_gateway_outlasts_the_install_the_stop_and_the_roles_waits(overrides):
    variables = dict(all_defaults(), **overrides)
    gateway = lease("gateway", variables)
    stop_gateway = number(variables, "sglang_gateway_shutdown_grace_period") + 30  # TimeoutStopSec
    assert gateway >= (number(variables, "sglang_rollout_lock_install_seconds") + stop_gateway
                       + gateway_worst_case(variables) + number(variables, "sglang_rollout_lock_lease"))
    assert math.isfinite(gateway)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_canary_outlasts_the_gates_window_and_its_reads(scenario):
    """The gate's two reads of /metrics (the uri timeout of stage_canary.yml, for the canary and 7 pool workers each)
    and its wait; a longer sglang_rollout_canary_seconds gives a longer lease."""
    variables = variables_of(scenario)
    tasks = load("roles", "sglang_rollout", "tasks", "stage_canary.yml")
    gate = [t for t in tasks if "block" in t][0]["block"]
    reads = [t["ansible.builtin.uri"]["timeout"] for t in gate if "ansible.builtin.uri" in t]
    assert len(reads) == 2
    assert lease("canary", variables) >= (sum(reads) * 8 + number(variables, "sglang_rollout_canary_seconds")
                                          + number(variables, "sglang_rollout_lock_lease"))
    longer = dict(variables, sglang_rollout_canary_seconds=3600)
    assert lease("canary", longer) - lease("canary", variables) == 3600 - number(variables, "sglang_rollout_canary_seconds")


def test_every_phase_has_a_test_here():
    tested = {"plan", "prewarm", "driver", "drain", "deploy", "sglang", "rejoin", "hold", "restart", "restart_batch",
              "rollback", "audit", "gateway", "canary"}
    assert set(PHASES) == tested


# --- the documented numbers, the inputs, the errors ------------------------------------------------------------------

def test_the_documented_default_leases():
    """docs/awx.md's table: plan 1200 s, pre-warm 2100 s, start of a batch 300 s, SGLang 4680 s, the swap 2880 s,
    rejoin 300 s."""
    assert [lease(p, {}) for p in ("plan", "prewarm", "drain", "driver", "sglang", "deploy", "rejoin")] == \
        [1200, 2100, 300, 300, 4680, 2880, 300]
    assert [lease(p, {}) for p in ("restart", "rollback", "audit", "gateway", "canary")] == [1800, 1320, 330, 2910, 1080]


def test_missing_names_take_the_role_defaults():
    """restart.yml takes the lock before it includes sglang_server: its defaults come from the role's file."""
    defaults = role_defaults()
    assert set(defaults) == set(INPUTS), "every input has exactly one role default"
    assert lease("rollback", {}) == lease("rollback", dict((k, defaults[k]) for k in INPUTS))
    assert lease("rollback", {"sglang_server_ready_timeout": None}) == lease("rollback", {})
    # a given value wins
    assert lease("rollback", {"sglang_server_ready_timeout": 100}) == lease("rollback", {}) - 900 + 100


def test_each_role_owns_its_budget():
    """No scan of the play's variables: the rollout passes its own settings (roles/sglang_rollout/vars/main.yml) and each role
    publishes the ones it owns (its entry point budget, ROLE_budget), together exactly the names the rules read."""
    variables = load("roles", "sglang_rollout", "vars", "main.yml")
    given = set(variables["__sglang_rollout_budget"])
    for fqcn in variables["__sglang_rollout_budget_roles"]:
        role = fqcn.split(".")[-1]
        (task,) = load("roles", role, "tasks", "budget.yml")
        budget = task["ansible.builtin.set_fact"][role + "_budget"]
        assert all(name.startswith(role + "_") for name in budget), "a role publishes only its own settings"
        assert all(value == "{{ %s }}" % name for name, value in budget.items())
        assert not given & set(budget)
        given |= set(budget)
        assert role + "_budget" in variables["__sglang_rollout_all_budgets"]
        spec = load("roles", role, "meta", "argument_specs.yml")["argument_specs"]["budget"]["options"]
        assert set(spec) == set(budget), "the budget entry point's argument spec names what it publishes"
    assert given == set(INPUTS)
    assert "sglang_rollout_prewarm_timeout" in INPUTS, "the pre-warm's bound (drain.yml's task timeout)"
    for path in ("vars/main.yml", "tasks/begin.yml", "tasks/renew.yml"):
        with open(os.path.join(ROOT, "roles", "sglang_rollout", path)) as handle:
            assert "varnames" not in handle.read()


@pytest.mark.parametrize("phase, settings, gateways, message", [
    ("plan", {"sglang_rollout_lock_lease": "soon"}, 0, "sglang_rollout_lock_lease must be a whole number of seconds"),
    ("plan", {"sglang_rollout_lock_lease": -1}, 0, "sglang_rollout_lock_lease must not be negative"),
    ("plan", {"sglang_rollout_lock_lease": True}, 0, "sglang_rollout_lock_lease must be a whole number"),
    ("plan", {"iommu_preflight_p2p_test": "maybe"}, 0, "iommu_preflight_p2p_test must be a boolean"),
    ("prewarm", {"sglang_rollout_prewarm_timeout": "an hour"}, 0, "sglang_rollout_prewarm_timeout must be a whole number"),
    ("upgrade", {}, 0, "unknown phase 'upgrade'"),
    ("plan", [], 0, "the settings must be a dict"),
    ("rejoin", {}, -1, "gateways must be a count"),
])
def test_bad_input_names_the_variable(phase, settings, gateways, message):
    with pytest.raises(LeaseError, match=message):
        phase_lease(phase, settings, gateways)


def test_the_renamed_settings_defaults_are_their_own_without_an_inventory():
    """The rollout's renamed settings read their deprecated names first (defaults/main.yml); the filter, which never
    sees an inventory for a name no one gave it, takes the value after ``default(``."""
    defaults = role_defaults()
    assert defaults["sglang_rollout_lock_lease"] == 300
    assert defaults["sglang_rollout_lock_install_seconds"] == 1800
    assert defaults["sglang_rollout_prewarm_timeout"] == 1800
    assert defaults["sglang_rollout_drain_timeout"] == 600
    assert defaults["sglang_rollout_gateway_healthy_timeout"] == 300
    assert defaults["sglang_rollout_audit_probe_timeout"] == 30
    assert not any(isinstance(v, str) and "{{" in v for v in defaults.values())
    assert phase_lease("plan", {}) == phase_lease("plan", {"sglang_rollout_lock_lease": 300})
