# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The sglang_server role's configuration, from its variables to what the unit reads (llmserve.sglang.server_config).

``server_config(variables, nodes=None, hostname=None, speculative_off=False)`` takes the role's variables by name
(``sglang_server_*`` and the few private ``__sglang_server_*`` the role derives: ``VARIABLES``), checks them with every
rule validate.yml used to check in Jinja (the shared SGLang rules of ``sglang_args``, the service account and
directory rules of ``service_host``, the install rule, the ranges, the speculative check settings, and where the
deployment state and the compile caches may live), and returns the rendered server: ``render_server_argv``'s
``argv``, ``config``, ``env``, ``env_file``, ``p2p``, ``expected_server_info``, ``requested_backend`` (its
``warnings`` as ``remarks``), with the multi-node plan of this node (``sglang_nodes``) and the configuration it was
rendered from. With ``speculative_off`` the server is rendered without speculative decoding
(``spec_policy.without_speculation``). Every broken rule is reported at once (``ServerConfigError.problems``), with
the messages the Jinja rules gave. ``host_addresses`` gives ``addresses.server_addresses`` of the host from the same
variables and the host's ``ansible_host`` and facts: the action adds it to a valid configuration's result
(``addresses``), which validate.yml publishes as ``sglang_server_addresses``. Controller only.
"""

from __future__ import annotations

import os.path
import re

from ansible_collections.llmserve.sglang.plugins.plugin_utils.addresses import HOSTVARS, server_addresses
from ansible_collections.llmserve.sglang.plugins.plugin_utils.ranges import range_problems
from ansible_collections.llmserve.sglang.plugins.plugin_utils.revision_swap import POLICIES as SWAP_POLICIES
from ansible_collections.llmserve.sglang.plugins.plugin_utils.revision_swap import weight_version_for
from ansible_collections.llmserve.sglang.plugins.plugin_utils.service_host import service_problems
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args import (
    SGLangConfigError,
    render_server_argv,
    validate_server_config,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_nodes import node_group_plan, node_group_problems
from ansible_collections.llmserve.sglang.plugins.plugin_utils.spec_policy import problems as spec_problems
from ansible_collections.llmserve.sglang.plugins.plugin_utils.spec_policy import without_speculation

# The configuration key -> the role variable it comes from (the SGLang rules' input, ``__sglang_server_cfg`` of old).
# Keys whose empty value means "not set" take None instead (the ``or None`` of the old set_fact).
CONFIG_VARIABLES = (
    # not the table's version (SGLang 0.5.23): unknown flags and choices are warnings, the installed parser decides
    ("version", "sglang_server_version"),
    ("model_path", "sglang_server_model_path"),
    ("served_model_name", "sglang_server_served_model_name"),
    ("host", "sglang_server_host"),
    ("port", "sglang_server_port"),
    ("tp_size", "sglang_server_tp_size"),
    ("gpus", "sglang_server_gpus"),
    ("speculative", "sglang_server_speculative"),
    ("args", "sglang_server_args"),
    ("metrics", "sglang_server_metrics"),
    # the role's own environment apart: sglang_server_env may not override it (PYTHONPATH carries the log hook)
    ("env", "sglang_server_env"),
    ("base_env", "__sglang_server_base_env"),
    ("api_key", "sglang_server_api_key"),
    ("hf_token", "sglang_server_hf_token"),
    ("p2p", "sglang_server_p2p"),
    ("p2p_ok", "sglang_server_p2p_ok"),
    ("allow_unauthenticated", "sglang_server_allow_unauthenticated"),
    ("config_path", "__sglang_server_config_path"),
    ("unit_name", "sglang_server_unit_name"),
    ("user", "sglang_server_user"),
    ("group", "sglang_server_group"),
    ("home", "sglang_server_home"),
    ("config_dir", "sglang_server_config_dir"),
    ("venv", "sglang_server_venv"),
    ("python", "sglang_server_python"),
    ("ready_path", "sglang_server_ready_path"),
    ("probe_ca_path", "sglang_server_probe_ca_path"),
    ("probe_validate_certs", "sglang_server_probe_validate_certs"),
)
EMPTY_IS_NONE = frozenset(("served_model_name", "api_key", "hf_token"))
# the role variables server_addresses reads besides the ones above (the multi-node rendezvous); a play outside the
# role may leave them undefined: server_addresses then takes the role's defaults
ADDRESS_VARIABLES = ("sglang_server_dist_init_host", "sglang_server_dist_init_port")
# may be left undefined (None then)
OPTIONAL_VARIABLES = frozenset(("sglang_server_p2p_ok", "sglang_server_weight_swap", "__sglang_server_model_link")
                               + ADDRESS_VARIABLES)
# one node of a multi-node server (None for a single-host server), from the group plan
MULTINODE_KEYS = ("nnodes", "node_rank", "dist_init_addr", "node_ifname")
# the variables the other rules read
RULE_VARIABLES = (
    "__sglang_server_service_spec", "__sglang_server_ranges",
    "sglang_server_install", "sglang_server_wheelhouse", "sglang_server_pip_no_deps", "sglang_server_pip_requirements",
    "sglang_server_speculative_min_accept_length", "sglang_server_speculative_check_prompts",
    "sglang_server_state_dir", "sglang_server_cache_root", "sglang_server_node_group",
    "sglang_server_weight_swap", "__sglang_server_model_link",
)
# every variable server_config reads (the action plugin resolves these for the host)
VARIABLES = tuple(name for _key, name in CONFIG_VARIABLES) + tuple(
    name for name in RULE_VARIABLES if name not in dict((v, k) for k, v in CONFIG_VARIABLES)) + ADDRESS_VARIABLES
# the host's own variables server_addresses reads, which are no role variables (the action reads ansible_host from the
# host's inventory only: in a task's variables Ansible always defines it, as the inventory name)
HOST_VARIABLES = ("ansible_host", "ansible_facts")

MSG_INSTALL = ("sglang_server_install=wheelhouse needs sglang_server_wheelhouse (a directory of wheels on the host); "
               "sglang_server_install=none needs sglang_server_python (the interpreter of an existing SGLang "
               "environment); sglang_server_pip_no_deps needs a complete lock in sglang_server_pip_requirements.")
MSG_CACHE = ("sglang_server_cache_root (%s) must be an absolute, normalised path other than /, and neither inside "
             "sglang_server_home, sglang_server_config_dir or sglang_server_state_dir nor above the state directory: "
             "root removes old compile caches below it.")
MSG_STATE = ("sglang_server_state_dir (%s) must be an absolute, normalised path other than /, and neither inside nor "
             "above sglang_server_home (%s) nor inside sglang_server_config_dir; sglang_server_home must be an "
             "absolute path other than /. Root restores the unit from the state directory, so the service account "
             "must have no way into it.")


MSG_SWAP_POLICY = "sglang_server_weight_swap must be one of %s, got %%r" % ", ".join(SWAP_POLICIES)
MSG_WEIGHT_VERSION = ("sglang_server_args.%s: the role sets --weight-version to the model revision's commit while "
                      "sglang_server_weight_swap is not never (it tells the revisions apart across in-place swaps); "
                      "remove it, or set sglang_server_weight_swap: never")


class ServerConfigError(ValueError):
    """The configuration breaks rules; ``problems`` lists every message."""

    def __init__(self, problems):
        super(ServerConfigError, self).__init__("; ".join(problems))
        self.problems = list(problems)


def _text(value):
    # Jinja's ``~`` and ``is match``: the value as text
    return "" if value is None else str(value)


def _length(value):
    return len(value) if value is not None else 0


def install_problems(install, wheelhouse, python, pip_no_deps, pip_requirements):
    """The install rule: wheelhouse needs a wheelhouse, none an interpreter, no-deps a complete lock."""
    if (install == "wheelhouse" and not _length(wheelhouse)) or (install == "none" and not _length(python)) \
            or (pip_no_deps and not _length(pip_requirements)):
        return [MSG_INSTALL]
    return []


def state_dir_problems(state_dir, home, config_dir):
    """Root restores the unit from the state directory: nothing the service account controls may hold it."""
    state_dir, home, config_dir = _text(state_dir), _text(home), _text(config_dir)
    state_norm = os.path.normpath(state_dir)
    home_norm = os.path.normpath(home)
    fine = (re.match("^/", state_dir) and state_norm == state_dir and state_dir != "/"
            and not (state_norm + "/").startswith(home_norm + "/")
            and not (home_norm + "/").startswith(state_norm + "/")
            and not (state_norm + "/").startswith(os.path.normpath(config_dir) + "/")
            and re.match("^/", home) and home_norm != "/")
    return [] if fine else [MSG_STATE % (state_dir, home)]


def cache_root_problems(cache_root, home, config_dir, state_dir):
    """Root removes old compile caches below the cache root: never a tree of the service's or the deployment's."""
    cache_root, home, config_dir = _text(cache_root), _text(home), _text(config_dir)
    state_norm = os.path.normpath(_text(state_dir))
    fine = (re.match("^/", cache_root) and os.path.normpath(cache_root) == cache_root and cache_root != "/"
            and not (cache_root + "/").startswith(os.path.normpath(home) + "/")
            and not (cache_root + "/").startswith(state_norm + "/")
            and not (state_norm + "/").startswith(cache_root + "/")
            and not (cache_root + "/").startswith(os.path.normpath(config_dir) + "/"))
    return [] if fine else [MSG_CACHE % cache_root]


def build_config(variables, multinode=None):
    """The SGLang rules' input from the role's variables and this node's plan (``__sglang_server_cfg`` of old)."""
    cfg = {}
    for key, name in CONFIG_VARIABLES:
        value = variables.get(name)
        cfg[key] = (value or None) if key in EMPTY_IS_NONE else value
    for key in MULTINODE_KEYS:
        cfg[key] = (multinode or {}).get(key)
    return cfg


def config_problems(variables, cfg):
    """Every rule of validate.yml but the multi-node group's, in the order the Jinja assert listed them."""
    v = variables.get
    return (validate_server_config(cfg)
            + service_problems(v("__sglang_server_service_spec"), None)
            + install_problems(v("sglang_server_install"), v("sglang_server_wheelhouse"), v("sglang_server_python"),
                               v("sglang_server_pip_no_deps"), v("sglang_server_pip_requirements"))
            + range_problems(v("__sglang_server_ranges"))
            + spec_problems(v("sglang_server_speculative_min_accept_length"),
                            v("sglang_server_speculative_check_prompts"))
            + state_dir_problems(v("sglang_server_state_dir"), v("sglang_server_home"), v("sglang_server_config_dir"))
            + cache_root_problems(v("sglang_server_cache_root"), v("sglang_server_home"), v("sglang_server_config_dir"),
                                  v("sglang_server_state_dir")))


def model_link(variables, cfg):
    """(link, weight_version) the unit loads the model through: a revision directory of the model store is loaded
    through the link ``__sglang_server_model_link`` (the role moves it; the unit, and so the served name, stay the same
    across revisions) and reported as its commit; ("", "") for any other model path or with the policy never."""
    link = variables.get("__sglang_server_model_link") or ""
    version = weight_version_for(cfg.get("model_path"))
    if variables.get("sglang_server_weight_swap") in (None, "never") or not link or not version:
        return "", ""
    return link, version


def swap_problems(variables, cfg):
    """The swap policy's value, and no --weight-version of the user's where the role sets one."""
    policy = variables.get("sglang_server_weight_swap")
    if policy is not None and policy not in SWAP_POLICIES:
        return [MSG_SWAP_POLICY % (policy,)]
    if not model_link(variables, cfg)[0] or not isinstance(cfg.get("args"), dict):
        return []
    return [MSG_WEIGHT_VERSION % key for key in sorted(cfg["args"], key=str)
            if str(key).lstrip("-").replace("-", "_") == "weight_version"]


def with_model_link(rendered, link, version):
    """``rendered`` with the unit's --model-path pointed at ``link`` and --weight-version set to ``version``."""
    argv = list(rendered["argv"])
    for index, arg in enumerate(argv[:-1]):
        if arg == "--model-path":
            argv[index + 1] = link
            break
    else:
        raise ServerConfigError(["the rendered command line has no --model-path to point at %s" % link])
    # right after the model path: the flags the role sets come before the user's (render_server_argv's order)
    argv[index + 2:index + 2] = ["--weight-version", version]
    return dict(rendered, argv=argv)


def node_plan(group, nodes, hostname):
    """(problems, multinode, rank0, node) of this host in its multi-node group; a single-host server has no group."""
    if not group:
        return [], {}, hostname, {"group": group or "", "rank": 0, "nnodes": 1}
    problems = node_group_problems(nodes, group=group)
    if problems:
        return problems, {}, hostname, {"group": group, "rank": 0, "nnodes": 1}
    plan = node_group_plan(nodes, group=group)
    multinode = plan[hostname]
    rank0 = next(name for name, node in plan.items() if node.get("node_rank") == 0)
    return [], multinode, rank0, {"group": group, "rank": multinode["node_rank"], "nnodes": multinode["nnodes"]}


def host_addresses(variables, hostname=None, host=None):
    """``addresses.server_addresses`` of this host: the role's variables it reads (``addresses.HOSTVARS``) from
    ``variables``, ``ansible_host`` and ``ansible_facts`` from ``host`` (ansible_host only where the inventory sets
    it), the inventory name ``hostname``. The sglang_server role's ``addresses`` entry point gives the filter the same."""
    hostvars = dict((name, variables[name]) for name in HOSTVARS if name in variables and name not in HOST_VARIABLES)
    hostvars.update((name, value) for name, value in (host or {}).items() if name in HOST_VARIABLES)
    hostvars["inventory_hostname"] = hostname
    return server_addresses(hostvars)


def server_config(variables, nodes=None, hostname=None, speculative_off=False):
    """The rendered server for this host (see the module docstring); raises ServerConfigError listing every problem.

    ``nodes``: inventory name -> the settings each node of this host's group recorded (``__sglang_server_group_nodes``),
    read only when ``sglang_server_node_group`` is set. A bad group is reported together with the other rules (those
    are then checked as for a single-host server: there is no plan to take the node's rank from).
    """
    group = variables.get("sglang_server_node_group") or ""
    group_problems, multinode, rank0, node = node_plan(group, nodes or {}, hostname)
    cfg = build_config(variables, multinode)
    problems = group_problems + config_problems(variables, cfg) + swap_problems(variables, cfg)
    if problems:
        raise ServerConfigError(problems)
    spec_disabled = bool(speculative_off)
    rendered_from = without_speculation(cfg) if spec_disabled else cfg
    try:
        rendered = render_server_argv(rendered_from)
    except SGLangConfigError as exc:
        raise ServerConfigError([str(exc)])
    link, version = model_link(variables, cfg)
    if link:
        rendered = with_model_link(rendered, link, version)
    out = dict(rendered)
    out["remarks"] = out.pop("warnings", [])
    # the model directory the link points at (the record's model_dir), and the version the server reports
    out.update(model_link=link, model_dir=cfg.get("model_path") if link else "", weight_version=version)
    out.update(cfg=rendered_from, speculative_off=spec_disabled, multinode=multinode, group_rank0=rank0, node=node)
    return out
