# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The sglang_gateway role's configuration, from its variables and the inventory to what the unit reads
(llmserve.sglang.gateway_config).

``collect_workers(hostvars, groups, group)`` lists the workers of the inventory group ``group`` as the role's Jinja
loop did (validate.yml before the action): one dict per host of the group, in inventory order, with what the gateway
needs of it (``WORKER_VARIABLES``, sglang_server's defaults applying where the inventory sets nothing); of a multi-node
server (``sglang_server_node_group``, docs/multinode.md) only rank 0, which alone serves the API. Its rank is the one
the sglang_server role gives the node: ``sglang_server_node_rank``, else its position in the group sorted by name.
The Jinja's quirks are kept on purpose, so that no inventory changes its workers: the rank goes through Jinja's
``int`` filter (``'abc'`` and ``'0.5'`` are 0), the group is sorted as Jinja's ``sort`` sorts (case-insensitive), a
group that is no inventory group gives rank 0, and a value the Jinja could not template (a node group without a
length, a host missing from its own node group) stops the collection (``WorkerCollectionError``).

``gateway_config(variables, workers, gateway_name, gateway_address)`` takes the role's variables by name
(``VARIABLES``), checks them with every rule validate.yml checked (the gateway's rules of ``gateway_config``, the
service account and directory rules of ``service_host``, the install and version rule, the ranges), in the order its
asserts ran, every broken one at once (``GatewayRoleError.problems``, the messages the Jinja gave), and returns
``render_gateway``'s result, its ``warnings`` as ``gateway_warnings``, with the ``remarks`` the role shows (those, and
a note on a version other than the one the role was written for). ``build_config`` is the rules' input (``__sglang_gateway_cfg`` of old).
Controller only.
"""

from __future__ import annotations

import re

from jinja2.filters import do_int

from ansible_collections.llmserve.sglang.plugins.plugin_utils.gateway_config import (
    SMG_VERSION,
    GatewayConfigError,
    render_gateway,
    validate_gateway_config,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.ranges import range_problems
from ansible_collections.llmserve.sglang.plugins.plugin_utils.service_host import service_problems

# The rules' input key -> the role variable it comes from (the Assemble task of old); gateway_name, gateway_address,
# workers come from the inventory.
CONFIG_VARIABLES = (
    ("host", "sglang_gateway_host"),
    ("port", "sglang_gateway_port"),
    ("metrics_host", "sglang_gateway_metrics_host"),
    ("metrics_port", "sglang_gateway_metrics_port"),
    ("policy", "sglang_gateway_policy"),
    ("health_check_interval", "sglang_gateway_health_check_interval"),
    ("health_check_timeout", "sglang_gateway_health_check_timeout"),
    ("health_failure_threshold", "sglang_gateway_health_failure_threshold"),
    ("health_success_threshold", "sglang_gateway_health_success_threshold"),
    ("health_check_endpoint", "sglang_gateway_health_check_endpoint"),
    ("retry_max_retries", "sglang_gateway_retry_max_retries"),
    ("retry_initial_backoff_ms", "sglang_gateway_retry_initial_backoff_ms"),
    ("retry_max_backoff_ms", "sglang_gateway_retry_max_backoff_ms"),
    ("shutdown_grace_period", "sglang_gateway_shutdown_grace_period"),
    ("log_level", "sglang_gateway_log_level"),
    ("log_json", "sglang_gateway_log_json"),
    ("audit", "sglang_gateway_audit"),
    ("worker_api_key", "sglang_gateway_worker_api_key"),
    ("admin_api_key", "sglang_gateway_admin_api_key"),
    ("allow_unauthenticated", "sglang_gateway_allow_unauthenticated"),
    ("worker_ca_path", "sglang_gateway_worker_ca_path"),
    ("tls_cert_path", "sglang_gateway_tls_cert_path"),
    ("tls_key_path", "sglang_gateway_tls_key_path"),
    ("args", "sglang_gateway_args"),
    ("workers_group", "sglang_gateway_workers_group"),
    ("unit_name", "sglang_gateway_unit_name"),
    ("user", "sglang_gateway_user"),
    ("group", "sglang_gateway_group"),
    ("config_dir", "sglang_gateway_config_dir"),
    ("venv", "sglang_gateway_venv"),
)
# the variables the other rules read (the role's vars/main.yml derives the first two)
RULE_VARIABLES = ("__sglang_gateway_service_spec", "__sglang_gateway_ranges", "sglang_gateway_install",
                  "sglang_gateway_wheelhouse", "sglang_gateway_version")
# every variable gateway_config reads (the action plugin resolves these for the host)
VARIABLES = tuple(name for _key, name in CONFIG_VARIABLES) + RULE_VARIABLES

# A worker's entry -> the host variable it comes from and its value where the host has none (the Jinja's default).
WORKER_VARIABLES = (
    ("host", "sglang_server_host", ""),
    ("port", "sglang_server_port", ""),
    ("args", "sglang_server_args", {}),
    ("api_key", "sglang_server_api_key", ""),
    ("ansible_host", "ansible_host", ""),
)

MSG_INSTALL = ("sglang_gateway_install=wheelhouse needs sglang_gateway_wheelhouse (a directory of wheels on the host); "
               "sglang_gateway_version must be a release number such as 1.13.0.")
MSG_VERSION = ("sglang_gateway_version: the role was written for smg 1.13.0 (its flags and its authentication); "
               "%s is checked by its own parser on the host, but not otherwise")
_RELEASE = re.compile(r"^[0-9]+(\.[0-9]+)*$")
# a value Jinja would find undefined
_UNDEFINED = object()


class GatewayRoleError(ValueError):
    """The configuration breaks rules; ``problems`` lists every message."""

    def __init__(self, problems):
        super(GatewayRoleError, self).__init__("; ".join(problems))
        self.problems = list(problems)


class WorkerCollectionError(ValueError):
    """The workers group holds a value the role's Jinja loop could not template (it failed the task)."""


def _item(container, key):
    """``container[key]`` as Jinja looks it up (an item, else an attribute): ``_UNDEFINED`` where there is none."""
    if container is _UNDEFINED:
        return _UNDEFINED
    try:
        return container[key]
    except (AttributeError, TypeError, LookupError):
        if isinstance(key, str):
            try:
                return getattr(container, key)
            except AttributeError:
                pass
    return _UNDEFINED


def _default(value, default):
    """Jinja's ``default``: only an undefined value is replaced (None and "" are kept)."""
    return default if value is _UNDEFINED else value


def _sort_key(value):
    # Jinja's ``sort`` compares case-insensitively unless told otherwise (jinja2.filters.ignore_case)
    return value.lower() if isinstance(value, str) else value


def worker_rank(hostvars, groups, name):
    """The rank the role's loop gave the host ``name`` of the workers group (before Jinja's ``int``)."""
    own = _item(hostvars, name)
    node_group = _default(_item(own, "sglang_server_node_group"), "")
    try:
        single = len(node_group) == 0
    except TypeError:
        raise WorkerCollectionError("hostvars['%s'].sglang_server_node_group: must be a string (the name of the "
                                    "multi-node server's inventory group, or empty)" % name)
    if single:
        return 0
    rank = _default(_item(own, "sglang_server_node_rank"), None)
    if rank is not None and len(str(rank)) > 0:
        return rank
    members = sorted(_default(_item(groups, node_group), [name]), key=_sort_key)
    try:
        return members.index(name)
    except ValueError:
        raise WorkerCollectionError("hostvars['%s'].sglang_server_node_group: %s is not a host of its node group %r"
                                    % (name, name, node_group))


def _worker(own, name):
    """What the gateway needs of one worker (the Jinja loop's ``__sglang_gateway_worker``)."""
    worker = {"name": name}
    for key, variable, default in WORKER_VARIABLES:
        worker[key] = _default(_item(own, variable), default)
    facts = _item(own, "ansible_facts")
    for key, fact in (("ipv4", "default_ipv4"), ("ipv6", "default_ipv6")):
        worker[key] = _default(_item(_default(_item(facts, fact), {}), "address"), "")
    return worker


def collect_workers(hostvars, groups, group):
    """The workers of the inventory group ``group``: each host, of a multi-node server rank 0 only (module docstring).

    ``hostvars``: inventory name -> that host's variables (Ansible's ``hostvars``), ``groups``: group -> its hosts in
    inventory order (Ansible's ``groups``). Raises ``WorkerCollectionError`` where the Jinja failed.
    """
    workers = []
    for name in _default(_item(groups, group), []):
        rank = worker_rank(hostvars, groups, name)
        try:
            rank = do_int(rank)
        except OverflowError:
            raise WorkerCollectionError("hostvars['%s'].sglang_server_node_rank: must be an integer" % name)
        if rank == 0:
            workers.append(_worker(_item(hostvars, name), name))
    return workers


def build_config(variables, workers, gateway_name, gateway_address):
    """The gateway rules' input (``__sglang_gateway_cfg`` of old) from the role's variables and the inventory."""
    cfg = {"gateway_name": gateway_name, "gateway_address": gateway_address}
    for key, name in CONFIG_VARIABLES:
        cfg[key] = variables.get(name)
    cfg["workers"] = workers
    return cfg


def _length(value):
    return len(value) if value is not None else 0


def install_problems(install, wheelhouse, version):
    """The install and version rule: a wheelhouse install needs the wheelhouse, the version is a release number."""
    released = version is not None and _RELEASE.match(str(version))
    if (install == "wheelhouse" and not _length(wheelhouse)) or not released:
        return [MSG_INSTALL]
    return []


def version_remarks(version):
    """The remark on a version other than the one the role was written for."""
    return [] if version == SMG_VERSION else [MSG_VERSION % version]


def config_problems(variables, cfg):
    """Every rule of validate.yml, in the order its asserts ran."""
    v = variables.get
    return (validate_gateway_config(cfg)
            + service_problems(v("__sglang_gateway_service_spec"), None)
            + install_problems(v("sglang_gateway_install"), v("sglang_gateway_wheelhouse"), v("sglang_gateway_version"))
            + range_problems(v("__sglang_gateway_ranges")))


def gateway_config(variables, workers, gateway_name, gateway_address):
    """The rendered gateway (module docstring); raises GatewayRoleError listing every problem."""
    cfg = build_config(variables, workers, gateway_name, gateway_address)
    problems = config_problems(variables, cfg)
    if problems:
        raise GatewayRoleError(problems)
    try:
        rendered = render_gateway(cfg)
    except GatewayConfigError as exc:
        raise GatewayRoleError(exc.errors)
    # an action's result named ``warnings`` would be shown as Ansible's warnings: the rules' own go by another name
    rendered["gateway_warnings"] = rendered.pop("warnings")
    rendered["remarks"] = rendered["gateway_warnings"] + version_remarks(variables.get("sglang_gateway_version"))
    return rendered
