# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters that check and render an SGLang server configuration.

The logic lives in ``plugin_utils/sglang_args.py``, ``plugin_utils/addresses.py`` and ``plugin_utils/systemd_unit.py``; this file only
adapts it to Jinja. Documentation: one ``<filter name>.yml`` next to it per filter.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_native

# Helpers are imported inside the filters: Ansible imports every filter file of the collection to find any one
# filter, in each worker process, so an import up here would be paid by every task that uses any of them.

# sglang_args.DEFAULT_PREFIX, written out so that the signatures need no import (a unit test checks they agree)
DEFAULT_PREFIX = "sglang_server_"


def _check_input(name, cfg, prefix):
    if not isinstance(cfg, dict):
        raise AnsibleFilterError("%s: the input must be a dict of role variables, got %s" % (name, type(cfg).__name__))
    if not isinstance(prefix, str):
        raise AnsibleFilterError("%s: prefix must be a string, got %s" % (name, type(prefix).__name__))


def sglang_validate(cfg, prefix=DEFAULT_PREFIX):
    """Return the list of configuration errors (empty when valid)."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args import validate_server_config

    _check_input("sglang_validate", cfg, prefix)
    return validate_server_config(cfg, prefix=prefix)


def sglang_render(cfg, prefix=DEFAULT_PREFIX):
    """Return argv/config/env/env_file/p2p/warnings for the unit; fail on an invalid configuration."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args import (
        SGLangConfigError,
        render_server_argv,
    )

    _check_input("sglang_render", cfg, prefix)
    try:
        return render_server_argv(cfg, prefix=prefix)
    except SGLangConfigError as exc:
        raise AnsibleFilterError(to_native(exc))


def sglang_server_info_expected(speculative, args=None):
    """The speculative fields ``/server_info`` must report; the same as ``sglang_render``'s ``expected_server_info``,
    for the restart entry point, which renders nothing."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args import expected_server_info

    if speculative is not None and not isinstance(speculative, dict):
        raise AnsibleFilterError("sglang_server_info_expected: the input must be sglang_server_speculative (a dict), "
                                 "got %s" % type(speculative).__name__)
    if args is not None and not isinstance(args, dict):
        raise AnsibleFilterError("sglang_server_info_expected: args must be sglang_server_args (a dict), got %s"
                                 % type(args).__name__)
    return expected_server_info(speculative, args)


def sglang_unit_value(value, kind, variable="value"):
    """Return ``value`` written safely for one kind of unit-file position; fail naming ``variable``."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.systemd_unit import UnitValueError, unit_value

    try:
        return unit_value(value, kind, variable)
    except UnitValueError as exc:
        raise AnsibleFilterError(to_native(exc))


def sglang_base_url(args, host, port):
    """Return ``http(s)://address:port`` for probing the server configured by ``args``/``host``/``port``."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args import probe_base_url

    try:
        return probe_base_url(host, port, args)
    except ValueError as exc:
        raise AnsibleFilterError("sglang_base_url: %s" % to_native(exc))


def sglang_server_addresses(hostvars, name=None):
    """Return where one SGLang server host is reached: api, metrics, rendezvous, problems (plugin_utils/addresses)."""
    from collections.abc import Mapping

    from ansible_collections.llmserve.sglang.plugins.plugin_utils.addresses import HOSTVARS, server_addresses

    wrong = [problem % type(value).__name__ for problem, value, right in (
        ("the input must be the host's variables (a dict), got %s", hostvars, isinstance(hostvars, Mapping)),
        ("name must be the inventory name, got %s", name, name is None or isinstance(name, str))) if not right]
    if wrong:
        raise AnsibleFilterError("sglang_server_addresses: " + "; ".join(wrong))
    # only the variables the rules read: hostvars[host] templates each value it is asked for
    return server_addresses(dict((key, hostvars[key]) for key in HOSTVARS if key in hostvars), name)


def sglang_url_path(path, variable="sglang_server_ready_path"):
    """Return ``path`` when it is a plain absolute URL path; fail naming ``variable`` otherwise."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args import url_path_problem

    problem = url_path_problem(path)
    if problem:
        raise AnsibleFilterError("%s: %s" % (variable, problem))
    return path


def sglang_device_problems(gpu_host, allowed_classes):
    """Return the NVIDIA device nodes that ``DeviceAllow=char-<class>`` lines would leave closed."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.systemd_unit import device_allow_problems

    if not isinstance(gpu_host, dict):
        raise AnsibleFilterError("sglang_device_problems: the input must be the gpu_host facts (a dict), got %s"
                                 % type(gpu_host).__name__)
    missing = [key for key in ("char_devices", "device_nodes") if key not in gpu_host]
    if missing:
        raise AnsibleFilterError("sglang_device_problems: the gpu_host facts have no %s; gather them with this "
                                 "collection's llmserve.sglang.gpu_host_facts" % " or ".join(missing))
    try:
        return device_allow_problems(gpu_host["char_devices"], gpu_host["device_nodes"], allowed_classes)
    except ValueError as exc:
        raise AnsibleFilterError("sglang_device_problems: %s" % to_native(exc))


def _check_group_input(name, group, prefix):
    if group is not None and not isinstance(group, str):
        raise AnsibleFilterError("%s: group must be the name of the inventory group, got %s" % (name, type(group).__name__))
    if not isinstance(prefix, str):
        raise AnsibleFilterError("%s: prefix must be a string, got %s" % (name, type(prefix).__name__))


def sglang_node_group_check(nodes, group=None, prefix=DEFAULT_PREFIX):
    """Return the rules the nodes of one multi-node server break (empty when the group is fine)."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_nodes import node_group_problems

    _check_group_input("sglang_node_group_check", group, prefix)
    return node_group_problems(nodes, group=group, prefix=prefix)


def sglang_node_group_plan(nodes, group=None, prefix=DEFAULT_PREFIX):
    """Return inventory name -> {nnodes, node_rank, dist_init_addr, node_ifname}; fail on a bad group."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args import SGLangConfigError
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_nodes import node_group_plan

    _check_group_input("sglang_node_group_plan", group, prefix)
    try:
        return node_group_plan(nodes, group=group, prefix=prefix)
    except SGLangConfigError as exc:
        raise AnsibleFilterError(to_native(exc))


def sglang_deploy_plan(state, managed, candidates, staging_dir, good_dir, extra=None, staged_attrs=None,
                       good_attrs=None, install=None, account=None, restart_policy="on_change"):
    """Return what a deployment changes (stage, swap, restart, last good copy, enable) from one deploy_state read."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.deploy_plan import PlanError, plan_server

    try:
        return plan_server(state, managed, candidates, staging_dir, good_dir, extra=extra, staged_attrs=staged_attrs,
                           good_attrs=good_attrs, install=install, account=account, restart_policy=restart_policy)
    except (PlanError, KeyError, TypeError) as exc:
        raise AnsibleFilterError("sglang_deploy_plan: %s" % to_native(exc))


def sglang_revision_swap(plan, state, managed, candidates, record, policy, model_dir, weight_version,
                         served_model_name="", draft_model_path="", multinode=False):
    """Return the plan with ``weight_swap``: whether this host loads the new revision in place or restarts, and why."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.revision_swap import RevisionSwapError, plan_host_swap

    try:
        return plan_host_swap(plan, state, managed, candidates, record, policy, model_dir, weight_version,
                              served_model_name, draft_model_path, multinode)
    except (RevisionSwapError, KeyError, TypeError) as exc:
        raise AnsibleFilterError("sglang_revision_swap: %s" % to_native(exc))


def sglang_revision_swap_group(plan, node_plans, policy):
    """Return a multi-node server node's plan with the swap decided for every node: all swap, or all restart."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.revision_swap import RevisionSwapError, plan_group_swap

    try:
        return plan_group_swap(plan, node_plans, policy)
    except (RevisionSwapError, KeyError, TypeError) as exc:
        raise AnsibleFilterError("sglang_revision_swap_group: %s" % to_native(exc))


def sglang_swap_verdict(server_result, prepared=None, loaded=None):
    """Return the verdict on an in-place swap for the whole server (every node of a multi-node one)."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.revision_swap import swap_verdict

    return swap_verdict(server_result, prepared, loaded)


def sglang_serving_record(candidates, names, model_dir, weight_version):
    """Return the serving record's JSON text: what the verified server serves, as checksums (no file content)."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.revision_swap import (
        RevisionSwapError,
        serving_record_text,
    )

    try:
        return serving_record_text(candidates, names, model_dir, weight_version)
    except (RevisionSwapError, KeyError, TypeError) as exc:
        raise AnsibleFilterError("sglang_serving_record: %s" % to_native(exc))


def sglang_rollout_batches(hosts, serial=1, groups=None):
    """Return the batches a play with ``serial`` makes of ``hosts`` (Ansible's own rules); with ``groups`` (host ->
    multi-node server group) ``serial`` counts servers and a group's nodes stay together in one batch."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.deploy_plan import PlanError, rollout_batches

    try:
        return rollout_batches(hosts, serial, groups)
    except PlanError as exc:
        raise AnsibleFilterError("sglang_rollout_batches: %s" % to_native(exc))


def sglang_rollout_pools(host, pools, max_unavailable=1):
    """Return the gateway pools ``host`` is a worker of, sorted by gateway, each with its window."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.rollout_window import WindowError, host_pools

    try:
        return host_pools(host, pools, max_unavailable)
    except WindowError as exc:
        raise AnsibleFilterError("sglang_rollout_pools: %s" % to_native(exc))


def sglang_canary_gate(canary, start=None, end=None, thresholds=None, window_seconds=None, loop_var="item"):
    """The canary gate's verdict on ``canary`` from the two looped reads of /metrics (``start``, ``end``: registered
    ``ansible.builtin.uri`` results, the worker named by ``loop_var``)."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils import canary_gate

    scrapes = canary_gate.scrapes_from_results(start, end, loop_var)
    return canary_gate.gate_from_scrapes(canary, scrapes, thresholds or None, window_seconds)


def sglang_canary_problems(canary, seconds=300, thresholds=None, inconclusive="rollback"):
    """What is wrong with the canary gate's settings (sglang_rollout_canary, _seconds, _thresholds, _inconclusive)."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.canary_gate import settings_problems

    return settings_problems(canary, seconds, thresholds, inconclusive)


def sglang_rollout_window_problems(max_unavailable, batch=None, pools=None):
    """Return what is wrong with sglang_rollout_max_unavailable, then with a lockstep batch in the pools (a list)."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.rollout_window import (
        WindowError,
        batch_problems,
        max_unavailable_problem,
    )

    problem = max_unavailable_problem(max_unavailable)
    if problem:
        return [problem]
    try:
        return batch_problems(batch, pools, max_unavailable) if batch else []
    except WindowError as exc:
        raise AnsibleFilterError("sglang_rollout_window_problems: %s" % to_native(exc))


def sglang_rollout_lease(phase, settings=None, gateways=0):
    """Return the seconds of lease of the per-host lock for a phase of the operator playbooks."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.rollout_lease import LeaseError, phase_lease

    try:
        return phase_lease(phase, settings, gateways)
    except LeaseError as exc:
        raise AnsibleFilterError("sglang_rollout_lease: %s" % to_native(exc))


def sglang_rollout_step_problems(steps):
    """Return the problems of the steps an operator playbook declares for the rollout (empty when none)."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.rollout_steps import step_problems

    return step_problems(steps)


def sglang_service_problems(spec, state=None):
    """Return the rules a role's service account, group, unit name and directories break (empty when none)."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.service_host import service_problems

    if not isinstance(spec, dict):
        raise AnsibleFilterError("sglang_service_problems: the input must be a dict, got %s" % type(spec).__name__)
    if state is not None and not isinstance(state, dict):
        raise AnsibleFilterError("sglang_service_problems: state must be a deploy_state result (a dict), got %s"
                                 % type(state).__name__)
    return service_problems(spec, state)


def sglang_pip_redact(value, args=None):
    """A list of pip arguments with their logins masked, or a text with the logins of ``args`` masked."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.pip_args import redact_pip_args, redact_text

    if isinstance(value, (list, tuple)):
        try:
            return redact_pip_args(value)
        except TypeError as exc:
            raise AnsibleFilterError("sglang_pip_redact: %s" % to_native(exc))
    if args is not None and not isinstance(args, (list, tuple)):
        raise AnsibleFilterError("sglang_pip_redact: args must be the list of pip arguments, got %s"
                                 % type(args).__name__)
    return redact_text(value, args)


def sglang_cache_layout(root, unit, version, argv, gpu_host=None, machine=None):
    """The unit's compile cache directory, its architecture tag, the host's tags and the cache environment."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils import sglang_cache

    try:
        arch = sglang_cache.arch_tag(argv, gpu_host, machine)
        directory = sglang_cache.cache_dir(root, unit, version, arch)
        host = sglang_cache.host_tags(gpu_host, machine)
    except sglang_cache.CacheLayoutError as exc:
        raise AnsibleFilterError("sglang_cache_layout: %s" % to_native(exc))
    return {"dir": directory, "unit_dir": directory.rsplit("/", 2)[0], "version": str(version), "arch": arch,
            "host_arches": host, "env": sglang_cache.cache_env(directory)}


def sglang_node_firewall(node_firewall, unit_name):
    """The nftables scripts a multi-node server's unit runs: {table, load (None when switched off), remove}."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.node_firewall import FirewallError, firewall_lines

    try:
        return firewall_lines(node_firewall, unit_name)
    except FirewallError as exc:
        raise AnsibleFilterError("sglang_node_firewall: %s" % to_native(exc))


class FilterModule(object):
    """SGLang server configuration filters."""

    def filters(self):
        return {
            "sglang_validate": sglang_validate,
            "sglang_render": sglang_render,
            "sglang_server_info_expected": sglang_server_info_expected,
            "sglang_unit_value": sglang_unit_value,
            "sglang_base_url": sglang_base_url,
            "sglang_server_addresses": sglang_server_addresses,
            "sglang_url_path": sglang_url_path,
            "sglang_device_problems": sglang_device_problems,
            "sglang_node_group_check": sglang_node_group_check,
            "sglang_node_group_plan": sglang_node_group_plan,
            "sglang_deploy_plan": sglang_deploy_plan,
            "sglang_revision_swap": sglang_revision_swap,
            "sglang_revision_swap_group": sglang_revision_swap_group,
            "sglang_swap_verdict": sglang_swap_verdict,
            "sglang_serving_record": sglang_serving_record,
            "sglang_rollout_batches": sglang_rollout_batches,
            "sglang_rollout_lease": sglang_rollout_lease,
            "sglang_rollout_pools": sglang_rollout_pools,
            "sglang_rollout_window_problems": sglang_rollout_window_problems,
            "sglang_canary_gate": sglang_canary_gate,
            "sglang_canary_problems": sglang_canary_problems,
            "sglang_rollout_step_problems": sglang_rollout_step_problems,
            "sglang_service_problems": sglang_service_problems,
            "sglang_pip_redact": sglang_pip_redact,
            "sglang_node_firewall": sglang_node_firewall,
            "sglang_cache_layout": sglang_cache_layout,
        }
