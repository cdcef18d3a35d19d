# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The lease of the per-host lock (``llmserve.sglang.run_lock``) for each phase of the operator playbooks.

One rule for every phase: the lease is the phase's worst case (the timeouts of its steps added up) plus
``sglang_rollout_lock_lease``. A run that dies frees the host when the lease of its current phase ends; a live run never
loses the lock in the middle of a phase, because it renews the lock at every phase boundary with the next phase's
lease. A phase that gets a new long step must have it added here (tests/unit/plugins/plugin_utils/
test_rollout_lease.py reads the roles' task timeouts and fails when a lease no longer covers them).

The inputs are role variables by name: the sglang_rollout role's own, and the budgets the roles of a play's steps publish
before the lock is taken (their entry point ``budget``, ``ROLE_budget``; roles/sglang_rollout/tasks/budgets.yml). A name no
budget gave (a role that is not a step of the play) is read from the collection's own
``roles/*/defaults/main.yml``: there is one default per variable, never a copy.
"""

from __future__ import annotations

import os

import yaml
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.template import Templar, trust_as_template

# The variables the rules below read: the rollout's own and the roles' budgets (tests/unit/plugins/plugin_utils/
# test_rollout_lease.py checks that together they publish exactly these).
INPUTS = (
    "sglang_rollout_lock_lease",
    "sglang_rollout_lock_install_seconds",
    "sglang_rollout_drain_timeout",
    "sglang_rollout_gateway_healthy_timeout",
    "sglang_rollout_audit_probe_timeout",
    "sglang_rollout_prewarm_timeout",
    "sglang_rollout_canary_seconds",
    "iommu_preflight_p2p_test",
    "iommu_preflight_p2p_timeout",
    "nvidia_driver_apply",
    "nvidia_driver_reboot_timeout",
    "nvidia_driver_gpu_services",
    "sglang_server_node_group",
    "sglang_server_timeout_stop_sec",
    "sglang_server_ready_timeout",
    "sglang_server_smoke_timeout",
    "sglang_server_speculative_check_timeout",
    "sglang_server_speculative_on_low",
    "sglang_gateway_shutdown_grace_period",
    "sglang_gateway_ready_timeout",
    "sglang_gateway_workers_timeout",
)

# iommu_preflight's P2P test may take iommu_preflight_p2p_timeout per ordered GPU pair, plus its start-up; counted
# for 8 GPUs like the role's own task timeout (hosts with more GPUs raise sglang_rollout_lock_lease)
P2P_GPUS = 8
P2P_STARTUP = 120
# restart.yml: the two 30 s probes after the readiness wait (/metrics, /server_info)
RESTART_PROBES = 60
# gateway.yml: the old gateway's stop (grace period + 30 s), the two 30 s probes, the worker listing's per-call slack
GATEWAY_STOP_SLACK = 30
GATEWAY_PROBES = 60
GATEWAY_LISTING_SLACK = 60
# site.yml's canary gate: its two reads of /metrics on the canary and each worker of its pool (30 s each), counted for
# a pool of 8 workers each time (larger pools raise sglang_rollout_lock_lease)
CANARY_SCRAPES = 2 * 8 * 30

_ROLES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "roles")
_DEFAULTS = {}


class LeaseError(ValueError):
    """A phase that does not exist, or a variable that is not a number of seconds."""


def role_defaults():
    """The collection's role defaults for the names in ``INPUTS`` (read once)."""
    if not _DEFAULTS:
        for role in sorted(os.listdir(_ROLES_DIR)):
            path = os.path.join(_ROLES_DIR, role, "defaults", "main.yml")
            if os.path.isfile(path):
                with open(path) as handle:
                    values = yaml.safe_load(handle) or {}
                _DEFAULTS.update({k: _own_default(v) for k, v in values.items() if k in INPUTS})
    return _DEFAULTS


def _own_default(value):
    """A default as it is without an inventory: a renamed setting's default reads its deprecated name first
    (``"{{ sglang_lock_lease | default(300) }}"``), and that is its own default when nothing sets the old name."""
    if not isinstance(value, str) or "{{" not in value:
        return value
    try:
        return Templar(loader=None, variables={}).template(trust_as_template(value))
    except Exception:
        return value


class _Settings(object):
    """The inputs by name: the given ones first, the roles' defaults for the others."""

    def __init__(self, given):
        if given is None:
            given = {}
        if not isinstance(given, dict):
            raise LeaseError("the settings must be a dict of role variables, got %s" % type(given).__name__)
        self._given = given

    def raw(self, name):
        if name in self._given and self._given[name] is not None:
            return self._given[name]
        defaults = role_defaults()
        if name not in defaults:
            raise LeaseError("%s is not set and no role of the collection has a default for it" % name)
        return defaults[name]

    def seconds(self, name):
        value = self.raw(name)
        if isinstance(value, bool):
            raise LeaseError("%s must be a whole number of seconds, got %r" % (name, value))
        try:
            number = int(str(value).strip()) if not isinstance(value, int) else value
        except ValueError:
            raise LeaseError("%s must be a whole number of seconds, got %r" % (name, value))
        if number < 0:
            raise LeaseError("%s must not be negative, got %d" % (name, number))
        return number

    def flag(self, name):
        try:
            return boolean(self.raw(name), strict=True)
        except TypeError:
            raise LeaseError("%s must be a boolean, got %r" % (name, self.raw(name)))

    def text(self, name):
        value = self.raw(name)
        return "" if value is None else str(value)


def _stop(s):
    # a multi-node server stops rank 0, then the other nodes: twice the stop
    return s.seconds("sglang_server_timeout_stop_sec") * (2 if s.text("sglang_server_node_group") else 1)


def _p2p(s):
    if not s.flag("iommu_preflight_p2p_test"):
        return 0
    return s.seconds("iommu_preflight_p2p_timeout") * P2P_GPUS * P2P_GPUS + P2P_STARTUP


def _restart_and_verify(s):
    # a restart, the readiness wait and the smoke test
    return _stop(s) + s.seconds("sglang_server_ready_timeout") + s.seconds("sglang_server_smoke_timeout")


def _plan(s, gateways):
    # the preflight's P2P test, then the readiness wait of a host whose plan is empty
    return s.seconds("sglang_rollout_lock_lease") + _p2p(s) + s.seconds("sglang_server_ready_timeout")


def _driver(s, gateways):
    # a reboot may take nvidia_driver_reboot_timeout; a reload stops and starts each GPU service
    apply = s.text("nvidia_driver_apply")
    lease = s.seconds("sglang_rollout_lock_lease")
    if apply == "reboot":
        lease += s.seconds("nvidia_driver_reboot_timeout")
    elif apply == "reload":
        services = s.raw("nvidia_driver_gpu_services") or []
        lease += len(services) * 2 * s.seconds("sglang_server_timeout_stop_sec")
    return lease


def _drain(s, gateways):
    # the start of a batch: the drain in each gateway, then the driver phase
    return _driver(s, gateways) + s.seconds("sglang_rollout_drain_timeout") * gateways


def _prewarm(s, gateways):
    # drain.yml renews right before the pre-warm (the weights read into the page cache, at most
    # sglang_rollout_prewarm_timeout, the task's timeout), then the drain phase: the next renewal comes after the drain, or
    # after the driver role where nothing is drained
    return s.seconds("sglang_rollout_prewarm_timeout") + _drain(s, gateways)


def _rejoin(s, gateways):
    # back into the gateways: the wait until each one routes to the host again
    return s.seconds("sglang_rollout_lock_lease") + s.seconds("sglang_rollout_gateway_healthy_timeout") * gateways


def _deploy(s, gateways):
    # sglang_server from its swap on: restart and verify, on failure the same again for the rollback, the speculative
    # check, with sglang_server_speculative_on_low=disable one more deployment without speculation; then the rejoin
    lease = _rejoin(s, gateways) + 2 * _restart_and_verify(s) + s.seconds("sglang_server_speculative_check_timeout")
    if s.text("sglang_server_speculative_on_low") == "disable":
        lease += _restart_and_verify(s)
    return lease


def _sglang(s, gateways):
    # sglang_server as a whole: the install first (pip has no timeout of its own: sglang_rollout_lock_install_seconds),
    # then, under site.yml (its step drains late), the drain in each gateway right before the swap or restart
    return (s.seconds("sglang_rollout_lock_install_seconds") + s.seconds("sglang_rollout_drain_timeout") * gateways
            + _deploy(s, gateways))


def _hold(s, gateways):
    # a drained worker's hold on each gateway's gateway lock: the rest of its batch after the drain
    return _drain(s, gateways) + _sglang(s, gateways)


def _restart(s, gateways):
    # restart.yml from its renewal on: the restart, the readiness wait, the smoke test, the probes, the speculative
    # check (a low acceptance length only writes the host's marker here), then back into the gateways
    return (_rejoin(s, gateways) + _restart_and_verify(s) + s.seconds("sglang_server_speculative_check_timeout")
            + RESTART_PROBES)


def _restart_batch(s, gateways):
    # restart.yml's whole batch: the drain in each gateway first
    return _restart(s, gateways) + s.seconds("sglang_rollout_drain_timeout") * gateways


def _rollback(s, gateways):
    # the restart (stop) and the readiness wait of the restored configuration
    return s.seconds("sglang_rollout_lock_lease") + _stop(s) + s.seconds("sglang_server_ready_timeout")


def _canary(s, gateways):
    # site.yml's canary gate: the reads of /metrics at its start and end, the wait between them; the promotion of the
    # canary's configuration (a copy of a few files), or the drain phase of its rollback, which renews the lock
    return s.seconds("sglang_rollout_lock_lease") + s.seconds("sglang_rollout_canary_seconds") + CANARY_SCRAPES


def _audit(s, gateways):
    # preflight.yml: the P2P test when it is on, the endpoint probe
    return s.seconds("sglang_rollout_lock_lease") + s.seconds("sglang_rollout_audit_probe_timeout") + _p2p(s)


def _gateway(s, gateways):
    # gateway.yml: the install, the old gateway's stop, the role's waits (readiness, two probes, the worker listing:
    # up to 3 x sglang_gateway_workers_timeout with its per-call timeouts)
    return (s.seconds("sglang_rollout_lock_lease") + s.seconds("sglang_rollout_lock_install_seconds")
            + s.seconds("sglang_gateway_shutdown_grace_period") + GATEWAY_STOP_SLACK
            + s.seconds("sglang_gateway_ready_timeout") + GATEWAY_PROBES
            + 3 * s.seconds("sglang_gateway_workers_timeout") + GATEWAY_LISTING_SLACK)


PHASES = {
    "plan": _plan,
    "prewarm": _prewarm,
    "drain": _drain,
    "driver": _driver,
    "sglang": _sglang,
    "deploy": _deploy,
    "rejoin": _rejoin,
    "hold": _hold,
    "restart": _restart,
    "restart_batch": _restart_batch,
    "rollback": _rollback,
    "canary": _canary,
    "audit": _audit,
    "gateway": _gateway,
}


def phase_lease(phase, settings=None, gateways=0):
    """Seconds of lease for ``phase`` (one of ``PHASES``), from the role variables in ``settings`` (a dict by name;
    a missing name takes its role default) and the number of gateways the host goes through."""
    if phase not in PHASES:
        raise LeaseError("unknown phase %r (one of %s)" % (phase, ", ".join(sorted(PHASES))))
    if isinstance(gateways, (list, tuple)):
        gateways = len(gateways)
    if isinstance(gateways, bool) or not isinstance(gateways, int) or gateways < 0:
        raise LeaseError("gateways must be a count of gateways or their list, got %r" % (gateways,))
    return PHASES[phase](_Settings(settings), gateways)
