# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Prometheus scrape targets of the fleet, from the inventory, for the ``sglang_monitoring`` role.

The input ``cfg`` is what the role collects on the controller::

    prometheus      {"name": <inventory name of the Prometheus host>, "ansible_host": <its ansible_host or "">}
    servers_group   inventory group of the SGLang servers (sglang_monitoring_servers_group)
    gateways_group  inventory group of the smg gateways (sglang_monitoring_gateways_group)
    node_exporters_group  inventory group of the hosts that get the role's node exporter
                    (sglang_monitoring_node_exporters_group; optional)
    jobs            {"sglang": <job name>, "gateway": <job name>, "node": <job name>}
    groups          the inventory's groups (name -> list of host names)
    hosts           inventory name -> that host's variables (only the ones below; a missing one takes the
                    owning role's default)

The host variables read: ``sglang_server_host``, ``sglang_server_port``, ``sglang_server_metrics``,
``sglang_server_args``, ``sglang_server_node_group``, ``sglang_server_node_rank``,
``sglang_server_served_model_name``, ``sglang_server_model_path``, ``sglang_model_repo``, ``sglang_model_revision``,
``sglang_model_dir``, ``sglang_model_path``, ``sglang_gateway_host``, ``sglang_gateway_metrics_host``,
``sglang_gateway_metrics_port``, ``sglang_gateway_workers_group``, ``sglang_monitoring_scrape``,
``sglang_monitoring_node_exporter``, ``sglang_monitoring_node_exporter_port``, ``ansible_host`` and the default
addresses of the gathered facts as ``ipv4``/``ipv6``. No API key is read: SGLang 0.5.23 serves ``/metrics`` without
one even when ``--api-key`` is set (``srt/utils/auth.py`` lets ``/health``, ``/ready`` and ``/metrics`` through), and
smg's and the node exporter's metrics ports take none, so Prometheus' configuration holds no secret.

What the targets are:

* job ``sglang``: every host of the servers group that is a server's API endpoint (a single-host server, or rank 0
  of a multi-node server: the other ranks serve only a dummy ``/health``), at ``sglang_server_host`` and
  ``sglang_server_port``, ``https`` (label ``__scheme__``) when ``sglang_server_args`` set ``ssl_certfile``. A server
  must serve ``/metrics`` (``sglang_server_metrics`` or ``enable_metrics`` in its args) unless the host says
  ``sglang_monitoring_scrape: false``.
* job ``sglang_gateway``: the metrics port of every host of the gateways group (``sglang_gateway_metrics_host``,
  else ``sglang_gateway_host``; ``sglang_gateway_metrics_port``).
* job ``node``: every inventory host with ``sglang_monitoring_node_exporter: true``, at its ``ansible_host`` (else
  its inventory name) and ``sglang_monitoring_node_exporter_port``. Unset, ``sglang_monitoring_node_exporter`` is
  true for the hosts of the node exporters group (the role installs a node exporter there).

A wildcard bind (``0.0.0.0``, ``::``) is reached at the host's ``ansible_host``, else at the default address of its
gathered facts; a loopback bind only from Prometheus on the same host. Labels (a label without a value is left out):
``host`` (inventory name), ``model`` (``sglang_model_repo``, else the model path), ``served_model_name`` (the name
SGLang serves: ``sglang_server_served_model_name``, else the model path SGLang loads), ``node_group`` and ``rank``
(SGLang hosts), ``gateway`` (the gateways that route to the host's server, comma-separated; a gateway's own
targets carry its name).

How it is checked: plain rule functions ``rule(cfg, problems)`` on the rule engine (``rules``) over one ``Inventory``
(the normalised ``cfg``, and the labels and targets the rules fill in), run in the order of ``RULES``. An SGLang
server's scrape address and port are ``addresses.server_addresses``' (SGLang serves ``/metrics`` on its API port);
the gateways' and node exporters' listeners use the same address helpers. What is Prometheus' own stays here: a
loopback address reached from another host, duplicate targets, jobs, labels and ranks.

Public function: ``build_targets(cfg) -> dict`` with ``targets`` (job name -> file_sd list, one entry per target,
sorted), ``errors`` and ``warnings`` (each message starts with the variable it is about) and ``counts``.

Standard library only (controller side).
"""

from __future__ import annotations

from ansible_collections.llmserve.sglang.plugins.plugin_utils.addresses import (
    ip_literal, is_loopback_name, named_address, server_addresses, url_host, wildcard_address)
# the sglang_server role's defaults, public here too (the tests compare them with the role's)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.addresses import (  # pylint: disable=unused-import
    SERVER_DEFAULT_HOST, SERVER_DEFAULT_PORT)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.rules import (
    UNSET, Problems, address_rule, describe_shown, read_bool, read_int, read_port, run_rules, shown)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.systemd_unit import control_problem
from ansible_collections.llmserve.sglang.plugins.plugin_utils.values import blank

# The owning roles' defaults for a host whose inventory does not set them
# (tests/unit/plugins/plugin_utils/test_monitoring_targets.py keeps them equal to the roles' defaults/main.yml).
GATEWAY_DEFAULT_HOST = "127.0.0.1"
GATEWAY_DEFAULT_METRICS_PORT = 29000
GATEWAY_DEFAULT_WORKERS_GROUP = "sglang_servers"
MODEL_DEFAULT_DIR = "/var/lib/llmserve-models"
NODE_EXPORTER_DEFAULT_PORT = 9100

LABELS = ("model", "served_model_name", "host", "node_group", "rank", "gateway")

# How the address messages name Prometheus (addresses.SERVER_WORDS' keys).
WORDS = {"binds": "the listener binds it", "who": "Prometheus", "reacher": "Prometheus scrapes",
         "hint": " (playbooks/monitoring.yml does)"}
# What server_addresses reads of a server's variables here (its rendezvous, sglang_server_node_group, is not
# Prometheus' business); the gathered facts come as ipv4/ipv6 and go back under ansible_facts.
SERVER_FIELDS = ("sglang_server_host", "sglang_server_port", "sglang_server_metrics", "sglang_server_args",
                 "ansible_host")


def _describe(value):
    """A wrong value as this module's messages have always shown it: cut after 80 characters, a dict or list too."""
    return describe_shown(value, limit=80, containers=False)


def _text(value):
    """A stripped string, or '' for blank and non-string values."""
    return value.strip() if isinstance(value, str) else ""


def _var(name, field):
    return "hostvars['%s'].%s" % (shown(name, 60), field)


class Inventory(object):
    """The normalised ``cfg`` the rules read: groups, host variables, Prometheus' host and the job names; and what
    they fill in: ``labels`` (server -> its labels, ``__rank`` among them), ``routed_by`` (server -> the gateways
    routing to it), ``targets`` (job -> file_sd entries), ``seen`` (target -> its first owner) and ``counts``."""

    def __init__(self, cfg):
        if not isinstance(cfg, dict):
            raise TypeError("cfg must be a dict, got %s" % type(cfg).__name__)
        self.cfg = cfg
        self.groups = cfg.get("groups") if isinstance(cfg.get("groups"), dict) else {}
        self.hosts = cfg.get("hosts") if isinstance(cfg.get("hosts"), dict) else {}
        prometheus = cfg.get("prometheus") if isinstance(cfg.get("prometheus"), dict) else {}
        self.prom_name = _text(prometheus.get("name"))
        self.prom_address = _text(prometheus.get("ansible_host"))
        self.jobs = cfg.get("jobs") if isinstance(cfg.get("jobs"), dict) else {}
        self.targets = dict((self.jobs.get(key, key), []) for key in ("sglang", "gateway", "node"))
        # "address:port" -> (job, host, variable) of its first owner, to refuse a second one
        self.seen = {}
        self.counts = {"servers": 0, "not_scraped": 0, "other_ranks": 0, "gateways": 0, "node_exporters": 0}
        self.servers = sorted(set(self.group(cfg.get("servers_group"))))
        self.gateways = sorted(set(self.group(cfg.get("gateways_group"))))
        self.routed_by = {}
        self.labels = {}

    def hv(self, name):
        found = self.hosts.get(name)
        return found if isinstance(found, dict) else {}

    def group(self, name):
        members = self.groups.get(name) if isinstance(name, str) else None
        return [m for m in members if isinstance(m, str)] if isinstance(members, (list, tuple)) else []


# -- readers and checks the rules share ---------------------------------------------------------------------------


def _port(problems, cfg, name, field, default):
    port = read_port(problems, _var(name, field), cfg.hv(name).get(field), default, show=_describe)
    return None if port is UNSET else port


def _flag(problems, cfg, name, field, default):
    """A true/false host variable; ``default`` when unset or after its error."""
    value = read_bool(problems, _var(name, field), cfg.hv(name).get(field), default, what="true or false",
                      show=_describe, words=True)
    return default if value is UNSET else value


def _same_machine(cfg, name):
    if name == cfg.prom_name:
        return True
    theirs = _text(cfg.hv(name).get("ansible_host"))
    return bool(cfg.prom_address) and theirs == cfg.prom_address


def _loopback_problem(cfg, name, address, listener=True):
    """Why Prometheus cannot scrape ``name`` at ``address`` (a loopback address, Prometheus on another host), or
    None; ``listener``: the remedy of a listener (bind another address) follows."""
    if not is_loopback_name(address) or _same_machine(cfg, name):
        return None
    problem = "%s is reached at the loopback address %s, which Prometheus on %s (another host) cannot reach" % (
        shown(name, 60), address, shown((cfg.prom_name or "?") if listener else cfg.prom_name, 60))
    if listener:
        problem += "; bind it to the host's network address, or run Prometheus on %s" % shown(name, 60)
    return problem


def _bind_address(text):
    """The IP address a listener binds, or the rule ``text`` breaks."""
    bind = ip_literal(text)
    return bind if bind is not None else "must be an IP address (%s), got %s" % (WORDS["binds"], _describe(text))


def _reach(problems, cfg, name, field, bind_text):
    """The address at which Prometheus reaches a listener of ``name`` bound to ``bind_text``, or None."""
    bind = address_rule(problems, _var(name, field), bind_text, _bind_address)
    if bind is UNSET:
        return None
    if bind.is_unspecified:
        hv = cfg.hv(name)
        address, source, problem = wildcard_address(name, bind, hv.get("ansible_host"), hv, WORDS["who"],
                                                    WORDS["reacher"], WORDS["hint"])
        if not problems.check(_var(name, source or field), problem):
            return None
    else:
        address, source = bind.compressed, field
    return address if problems.check(_var(name, source), _loopback_problem(cfg, name, address)) else None


def _server_hostvars(hv):
    """A server's variables in the shape addresses.server_addresses reads."""
    found = dict((key, hv[key]) for key in SERVER_FIELDS if key in hv)
    found["ansible_facts"] = {"default_ipv4": {"address": hv.get("ipv4")}, "default_ipv6": {"address": hv.get("ipv6")}}
    return found


def _scrape_address(problems, cfg, name, found):
    """The address of ``found`` (server_addresses of ``name``) Prometheus scrapes, or None, with its problems in the
    order Prometheus' checks always gave them: the address (the bind, ansible_host or the facts), the loopback rule,
    then the port."""
    port_variable = _var(name, "sglang_server_port") + ":"
    problems.extend([problem for problem in found["problems"] if not problem.startswith(port_variable)])
    address = found["metrics"]["address"]
    if address is not None:
        # a wildcard bind is reached at ansible_host or the facts' address; the loopback rule names ansible_host
        source = "ansible_host" if found["api"]["wildcard"] else "sglang_server_host"
        if not problems.check(_var(name, source), _loopback_problem(cfg, name, address)):
            address = None
    problems.extend([problem for problem in found["problems"] if problem.startswith(port_variable)])
    return address


def _add(problems, cfg, job, name, variable, address, port, labels, scheme="http"):
    target = "%s:%d" % (url_host(address), port)
    owner = cfg.seen.get(target)
    if owner is not None:
        problems.add(variable, "%s of %s (job %s) is the same target as %s of %s (job %s): each target must be "
                     "scraped once; give them different addresses or ports" % (
                         target, shown(name, 60), job, owner[2], shown(owner[1], 60), owner[0]))
        return
    cfg.seen[target] = (job, name, variable)
    entry_labels = dict((key, value) for key, value in labels.items() if value not in (None, ""))
    if scheme != "http":
        entry_labels["__scheme__"] = scheme
    cfg.targets[job].append({"targets": [target], "labels": entry_labels})


def _public(labels):
    return dict((key, value) for key, value in labels.items() if not key.startswith("__"))


def _rank(problems, cfg, name):
    """``(node group, rank)`` as the sglang_server role gives them; rank None after an error."""
    hv = cfg.hv(name)
    group = hv.get("sglang_server_node_group")
    if blank(group):
        return "", 0
    if not isinstance(group, str):
        problems.add(_var(name, "sglang_server_node_group"), "must be an inventory group name, got %s"
                     % _describe(group))
        return "", None
    group = group.strip()
    explicit = hv.get("sglang_server_node_rank")
    if not blank(explicit):
        rank = read_int(problems, _var(name, "sglang_server_node_rank"), explicit, minimum=0, digits=4,
                        show=_describe)
        return group, (None if rank is UNSET else rank)
    members = sorted(cfg.group(group)) or [name]
    return group, (members.index(name) if name in members else 0)


def _server_labels(problems, cfg, name):
    hv = cfg.hv(name)
    group, rank = _rank(problems, cfg, name)
    repo = _text(hv.get("sglang_model_repo"))
    path = _text(hv.get("sglang_server_model_path"))
    if not path and repo:
        # the sglang_server role's default: the revision directory the sglang_model role verified
        path = _text(hv.get("sglang_model_path"))
        if not path:
            model_dir = _text(hv.get("sglang_model_dir")) or MODEL_DEFAULT_DIR
            path = "%s/%s/%s" % (model_dir, repo.replace("/", "--"), _text(hv.get("sglang_model_revision")))
    served = _text(hv.get("sglang_server_served_model_name")) or path
    labels = {"host": name, "model": repo or path, "served_model_name": served, "node_group": group,
              "rank": "" if rank is None else str(rank), "gateway": ",".join(sorted(cfg.routed_by.get(name, ())))}
    for key, value in labels.items():
        problem = control_problem(value)
        if problem:
            problems.add(_var(name, "sglang_server_" + key if key != "model" else "sglang_model_repo"),
                         "%s (it becomes the Prometheus label %s)" % (problem, key))
            labels[key] = ""
    labels["__rank"] = rank
    return labels


# -- the rules, in the order they report --------------------------------------------------------------------------


def check_jobs(cfg, problems):
    names = [cfg.jobs.get(key, key) for key in ("sglang", "gateway", "node")]
    variables = ["sglang_monitoring_sglang_job", "sglang_monitoring_gateway_job", "sglang_monitoring_node_job"]
    for position, name in enumerate(names):
        if name in names[:position]:
            problems.add(variables[position], "must differ from %s (both are %s): each job has a target file of its "
                         "own" % (variables[names.index(name)], _describe(name)))


def route_workers(cfg, problems):
    for gateway in cfg.gateways:
        workers_group = cfg.hv(gateway).get("sglang_gateway_workers_group")
        workers_group = GATEWAY_DEFAULT_WORKERS_GROUP if blank(workers_group) else workers_group
        for worker in cfg.group(workers_group):
            cfg.routed_by.setdefault(worker, set()).add(gateway)


def label_servers(cfg, problems):
    for name in cfg.servers:
        cfg.labels[name] = _server_labels(problems, cfg, name)


def require_servers(cfg, problems):
    if not cfg.servers:
        problems.add("sglang_monitoring_servers_group", "the inventory group %s has no hosts (or does not exist): "
                     "there is no SGLang server to monitor" % _describe(cfg.cfg.get("servers_group")))


def scrape_servers(cfg, problems):
    job = cfg.jobs.get("sglang", "sglang")
    for name in cfg.servers:
        rank = cfg.labels[name]["__rank"]
        if rank is None:
            continue
        if rank != 0:
            # only rank 0 serves the API and /metrics of a multi-node server; its node exporter is scraped below
            cfg.counts["other_ranks"] += 1
            continue
        if not _flag(problems, cfg, name, "sglang_monitoring_scrape", True):
            cfg.counts["not_scraped"] += 1
            continue
        # an unreadable sglang_server_metrics is an error of its own (the rule is addresses.serves_metrics')
        _flag(problems, cfg, name, "sglang_server_metrics", False)
        found = server_addresses(_server_hostvars(cfg.hv(name)), name, words=WORDS, describe=_describe)
        if not found["metrics"]["enabled"]:
            problems.add(_var(name, "sglang_server_metrics"), "is false, so SGLang on %s serves no /metrics (404) "
                         "and SGLangWorkerDown would fire for it: set it to true (the sglang_server role adds "
                         "--enable-metrics), or set sglang_monitoring_scrape: false on the host to leave it "
                         "unmonitored" % shown(name, 60))
            continue
        address = _scrape_address(problems, cfg, name, found)
        port = found["metrics"]["port"]
        if address is None or port is None:
            continue
        _add(problems, cfg, job, name, _var(name, "sglang_server_port"), address, port, _public(cfg.labels[name]),
             found["api"]["scheme"])
        cfg.counts["servers"] += 1


def check_ranks(cfg, problems):
    ranked = {}
    for name in cfg.servers:
        labels = cfg.labels[name]
        if labels["node_group"]:
            ranked.setdefault(labels["node_group"], []).append((labels["__rank"], name))
    for group, members in sorted(ranked.items()):
        if all(rank is not None and rank != 0 for rank, _name in members):
            problems.add(_var(members[0][1], "sglang_server_node_rank"), "no node of the multi-node server %s (%s) "
                         "has rank 0, so the server's /metrics is not scraped" % (
                             _describe(group), ", ".join(shown(name, 60) for _rank, name in members)))


def warn_unscraped(cfg, problems):
    if cfg.servers and cfg.counts["servers"] == 0 and cfg.counts["not_scraped"] and not problems.errors:
        problems.warn("sglang_monitoring_scrape", "every SGLang server of %s is left out (sglang_monitoring_scrape: "
                      "false): Prometheus scrapes none" % _describe(cfg.cfg.get("servers_group")))


def scrape_gateways(cfg, problems):
    job = cfg.jobs.get("gateway", "sglang_gateway")
    for name in cfg.gateways:
        hv = cfg.hv(name)
        field, bind = "sglang_gateway_metrics_host", hv.get("sglang_gateway_metrics_host")
        if blank(bind):
            field, bind = "sglang_gateway_host", hv.get("sglang_gateway_host")
            bind = GATEWAY_DEFAULT_HOST if blank(bind) else bind
        address = _reach(problems, cfg, name, field, bind)
        port = _port(problems, cfg, name, "sglang_gateway_metrics_port", GATEWAY_DEFAULT_METRICS_PORT)
        if address is None or port is None:
            continue
        _add(problems, cfg, job, name, _var(name, "sglang_gateway_metrics_port"), address, port,
             {"host": name, "gateway": name})
        cfg.counts["gateways"] += 1


def scrape_node_exporters(cfg, problems):
    job = cfg.jobs.get("node", "node")
    gateways = set(cfg.gateways)
    installed = set(cfg.group(cfg.cfg.get("node_exporters_group")))
    for name in sorted(cfg.hosts):
        if not isinstance(name, str):
            continue
        if not _flag(problems, cfg, name, "sglang_monitoring_node_exporter", name in installed):
            continue
        hv = cfg.hv(name)
        field = "ansible_host" if not blank(hv.get("ansible_host")) else "inventory_hostname"
        address, problem = named_address(hv.get("ansible_host") if field == "ansible_host" else name, name,
                                         WORDS["reacher"])
        problems.check(_var(name, field), problem)
        port = _port(problems, cfg, name, "sglang_monitoring_node_exporter_port", NODE_EXPORTER_DEFAULT_PORT)
        if address is None or port is None:
            continue
        if not problems.check(_var(name, field), _loopback_problem(cfg, name, address, listener=False)):
            continue
        labels = dict(_public(cfg.labels.get(name, {"host": name})))
        if name in gateways:
            labels["gateway"] = ",".join(sorted(cfg.routed_by.get(name, set()) | {name}))
        _add(problems, cfg, job, name, _var(name, "sglang_monitoring_node_exporter_port"), address, port, labels)
        cfg.counts["node_exporters"] += 1


def sort_targets(cfg, problems):
    for job in cfg.targets:
        cfg.targets[job].sort(key=lambda entry: (entry["labels"].get("host", ""), entry["targets"][0]))


RULES = (check_jobs, route_workers, label_servers, require_servers, scrape_servers, check_ranks, warn_unscraped,
         scrape_gateways, scrape_node_exporters, sort_targets)


def build_targets(cfg):
    """Targets per job (file_sd lists), errors, warnings and counts; see the module's docstring."""
    inventory = Inventory(cfg)
    problems = Problems()
    run_rules(RULES, inventory, problems)
    return {"targets": inventory.targets, "errors": list(problems.errors), "warnings": list(problems.warnings),
            "counts": dict(inventory.counts)}
