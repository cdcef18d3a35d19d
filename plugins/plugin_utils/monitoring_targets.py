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

Public function: ``build_targets(cfg) -> dict`` with ``targets`` (job name -> file_sd list, one entry per target,
sorted), ``errors`` and ``warnings`` (each message starts with the variable it is about) and ``counts``.

Standard library only (controller side).
"""

from __future__ import annotations

from ansible_collections.llmserve.sglang.plugins.plugin_utils.addresses import (
    SERVER_DEFAULT_HOST, SERVER_DEFAULT_PORT, ip_literal, is_loopback_name, named_address, serves_metrics,
    serves_tls, url_host, wildcard_address)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.systemd_unit import control_problem, printable
from ansible_collections.llmserve.sglang.plugins.plugin_utils.values import as_bool, as_int, blank

# The owning roles' defaults for a host whose inventory does not set them
# (tests/unit/plugins/plugin_utils/test_monitoring_targets.py keeps them equal to the roles' defaults/main.yml).
GATEWAY_DEFAULT_HOST = "127.0.0.1"
GATEWAY_DEFAULT_METRICS_PORT = 29000
GATEWAY_DEFAULT_WORKERS_GROUP = "sglang_servers"
MODEL_DEFAULT_DIR = "/var/lib/llmserve-models"
NODE_EXPORTER_DEFAULT_PORT = 9100

LABELS = ("model", "served_model_name", "host", "node_group", "rank", "gateway")
_UNSET = object()


def _shown(value, limit=80):
    text = printable(str(value))
    return text if len(text) <= limit else "%s... (%d characters)" % (text[:limit], len(text))


def _describe(value):
    if isinstance(value, bool):
        return "boolean %s" % ("true" if value else "false")
    if isinstance(value, str):
        return repr(_shown(value))
    if value is None:
        return "null"
    return "%s %s" % (type(value).__name__, _shown(repr(value)))


def _text(value):
    """A stripped string, or '' for blank and non-string values."""
    return value.strip() if isinstance(value, str) else ""


class _Build(object):
    """One pass over ``cfg``: errors, warnings and the targets per job."""

    def __init__(self, cfg):
        if not isinstance(cfg, dict):
            raise TypeError("cfg must be a dict, got %s" % type(cfg).__name__)
        self.cfg = cfg
        self.errors = []
        self.warnings = []
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
        self._run()

    # -- helpers ----------------------------------------------------------------------------------------

    def err(self, variable, rule):
        self.errors.append("%s: %s" % (variable, rule))

    def warn(self, variable, remark):
        self.warnings.append("%s: %s" % (variable, remark))

    def hv(self, name):
        found = self.hosts.get(name)
        return found if isinstance(found, dict) else {}

    def group(self, name):
        members = self.groups.get(name) if isinstance(name, str) else None
        return [m for m in members if isinstance(m, str)] if isinstance(members, (list, tuple)) else []

    @staticmethod
    def var(name, field):
        return "hostvars['%s'].%s" % (_shown(name, 60), field)

    def _port(self, name, field, default):
        value = self.hv(name).get(field)
        if blank(value):
            return default
        port = as_int(value, _UNSET, digits=5)
        if port is _UNSET or not 1 <= port <= 65535:
            self.err(self.var(name, field), "must be an integer between 1 and 65535, got %s" % _describe(value))
            return None
        return port

    def _bool(self, name, field, default):
        value = self.hv(name).get(field)
        if value is None:
            return default
        parsed = as_bool(value, _UNSET)
        if parsed is _UNSET:
            self.err(self.var(name, field), "must be true or false, got %s" % _describe(value))
            return default
        return parsed

    def _same_machine(self, name):
        if name == self.prom_name:
            return True
        theirs = _text(self.hv(name).get("ansible_host"))
        return bool(self.prom_address) and theirs == self.prom_address

    def _named_address(self, name, field, value):
        """``value`` (an ``ansible_host``) checked as a host name or IP address; None after an error."""
        address, problem = named_address(value, name, "Prometheus scrapes")
        if problem:
            self.err(self.var(name, field), problem)
        return address

    def _reach(self, name, field, bind_text):
        """The address at which Prometheus reaches a listener of ``name`` bound to ``bind_text``, or None."""
        bind = ip_literal(bind_text)
        if bind is None:
            self.err(self.var(name, field), "must be an IP address (the listener binds it), got %s"
                     % _describe(bind_text))
            return None
        hv = self.hv(name)
        if bind.is_unspecified:
            address, source, problem = wildcard_address(
                name, bind, hv.get("ansible_host"), hv, "Prometheus", "Prometheus scrapes",
                " (playbooks/monitoring.yml does)")
            if problem:
                self.err(self.var(name, source or field), problem)
                return None
        else:
            address, source = bind.compressed, field
        if self._loopback(address) and not self._same_machine(name):
            self.err(self.var(name, source), "%s is reached at the loopback address %s, which Prometheus on %s "
                     "(another host) cannot reach; bind it to the host's network address, or run Prometheus on %s"
                     % (_shown(name, 60), address, _shown(self.prom_name or "?", 60), _shown(name, 60)))
            return None
        return address

    @staticmethod
    def _loopback(address):
        return is_loopback_name(address)

    def _add(self, job, name, variable, address, port, labels, scheme="http"):
        target = "%s:%d" % (url_host(address), port)
        owner = self.seen.get(target)
        if owner is not None:
            self.err(variable, "%s of %s (job %s) is the same target as %s of %s (job %s): each target must be "
                     "scraped once; give them different addresses or ports" % (
                         target, _shown(name, 60), job, owner[2], _shown(owner[1], 60), owner[0]))
            return
        self.seen[target] = (job, name, variable)
        entry_labels = dict((key, value) for key, value in labels.items() if value not in (None, ""))
        if scheme != "http":
            entry_labels["__scheme__"] = scheme
        self.targets[job].append({"targets": [target], "labels": entry_labels})

    # -- the inventory ------------------------------------------------------------------------------------

    def _run(self):
        self._check_jobs()
        servers_group = self.cfg.get("servers_group")
        gateways_group = self.cfg.get("gateways_group")
        servers = self.group(servers_group)
        gateways = self.group(gateways_group)
        routed_by = {}
        for gateway in gateways:
            workers_group = self.hv(gateway).get("sglang_gateway_workers_group")
            workers_group = GATEWAY_DEFAULT_WORKERS_GROUP if blank(workers_group) else workers_group
            for worker in self.group(workers_group):
                routed_by.setdefault(worker, set()).add(gateway)
        self.labels = {}
        for name in sorted(set(servers)):
            self.labels[name] = self._server_labels(name, routed_by)
        if not servers:
            self.err("sglang_monitoring_servers_group", "the inventory group %s has no hosts (or does not exist): "
                     "there is no SGLang server to monitor" % _describe(servers_group))
        else:
            self._servers(sorted(set(servers)))
        self._gateways(sorted(set(gateways)), routed_by)
        self._node_exporters(routed_by, set(gateways), set(self.group(self.cfg.get("node_exporters_group"))))
        for job in self.targets:
            self.targets[job].sort(key=lambda entry: (entry["labels"].get("host", ""), entry["targets"][0]))

    def _check_jobs(self):
        names = [self.jobs.get(key, key) for key in ("sglang", "gateway", "node")]
        variables = ["sglang_monitoring_sglang_job", "sglang_monitoring_gateway_job", "sglang_monitoring_node_job"]
        for position, name in enumerate(names):
            if name in names[:position]:
                self.err(variables[position], "must differ from %s (both are %s): each job has a target file of "
                         "its own" % (variables[names.index(name)], _describe(name)))

    def _rank(self, name):
        """``(node group, rank)`` as the sglang_server role gives them; rank None after an error."""
        hv = self.hv(name)
        group = hv.get("sglang_server_node_group")
        if blank(group):
            return "", 0
        if not isinstance(group, str):
            self.err(self.var(name, "sglang_server_node_group"), "must be an inventory group name, got %s"
                     % _describe(group))
            return "", None
        group = group.strip()
        explicit = hv.get("sglang_server_node_rank")
        if not blank(explicit):
            rank = as_int(explicit, _UNSET, digits=4)
            if rank is _UNSET or rank < 0:
                self.err(self.var(name, "sglang_server_node_rank"), "must be an integer >= 0, got %s"
                         % _describe(explicit))
                return group, None
            return group, rank
        members = sorted(self.group(group)) or [name]
        return group, (members.index(name) if name in members else 0)

    def _server_labels(self, name, routed_by):
        hv = self.hv(name)
        group, rank = self._rank(name)
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
                  "rank": "" if rank is None else str(rank), "gateway": ",".join(sorted(routed_by.get(name, ())))}
        for key, value in labels.items():
            problem = control_problem(value)
            if problem:
                self.err(self.var(name, "sglang_server_" + key if key != "model" else "sglang_model_repo"),
                         "%s (it becomes the Prometheus label %s)" % (problem, key))
                labels[key] = ""
        labels["__rank"] = rank
        return labels

    def _serves_metrics(self, name):
        # an unreadable sglang_server_metrics is an error of its own (the rule is addresses.serves_metrics')
        self._bool(name, "sglang_server_metrics", False)
        return serves_metrics(self.hv(name))

    def _servers(self, servers):
        job = self.jobs.get("sglang", "sglang")
        ranked = {}
        for name in servers:
            labels = self.labels[name]
            if labels["node_group"]:
                ranked.setdefault(labels["node_group"], []).append((labels["__rank"], name))
            if labels["__rank"] is None:
                continue
            if labels["__rank"] != 0:
                # only rank 0 serves the API and /metrics of a multi-node server; its node exporter is scraped below
                self.counts["other_ranks"] += 1
                continue
            if not self._bool(name, "sglang_monitoring_scrape", True):
                self.counts["not_scraped"] += 1
                continue
            if not self._serves_metrics(name):
                self.err(self.var(name, "sglang_server_metrics"), "is false, so SGLang on %s serves no /metrics "
                         "(404) and SGLangWorkerDown would fire for it: set it to true (the sglang_server role adds "
                         "--enable-metrics), or set sglang_monitoring_scrape: false on the host to leave it "
                         "unmonitored" % _shown(name, 60))
                continue
            hv = self.hv(name)
            host = hv.get("sglang_server_host")
            address = self._reach(name, "sglang_server_host", SERVER_DEFAULT_HOST if blank(host) else host)
            port = self._port(name, "sglang_server_port", SERVER_DEFAULT_PORT)
            if address is None or port is None:
                continue
            args = hv.get("sglang_server_args")
            scheme = "https" if serves_tls(args if isinstance(args, dict) else {}) else "http"
            self._add(job, name, self.var(name, "sglang_server_port"), address, port, self._public(labels), scheme)
            self.counts["servers"] += 1
        for group, members in sorted(ranked.items()):
            zeros = [name for rank, name in members if rank == 0]
            if not zeros and all(rank is not None for rank, _name in members):
                self.err(self.var(members[0][1], "sglang_server_node_rank"), "no node of the multi-node server %s "
                         "(%s) has rank 0, so the server's /metrics is not scraped" % (
                             _describe(group), ", ".join(_shown(name, 60) for _rank, name in members)))
        if servers and self.counts["servers"] == 0 and self.counts["not_scraped"] and not self.errors:
            self.warn("sglang_monitoring_scrape", "every SGLang server of %s is left out (sglang_monitoring_scrape: "
                      "false): Prometheus scrapes none" % _describe(self.cfg.get("servers_group")))

    @staticmethod
    def _public(labels):
        return dict((key, value) for key, value in labels.items() if not key.startswith("__"))

    def _gateways(self, gateways, routed_by):
        job = self.jobs.get("gateway", "sglang_gateway")
        for name in gateways:
            hv = self.hv(name)
            field, bind = "sglang_gateway_metrics_host", hv.get("sglang_gateway_metrics_host")
            if blank(bind):
                field, bind = "sglang_gateway_host", hv.get("sglang_gateway_host")
                bind = GATEWAY_DEFAULT_HOST if blank(bind) else bind
            address = self._reach(name, field, bind)
            port = self._port(name, "sglang_gateway_metrics_port", GATEWAY_DEFAULT_METRICS_PORT)
            if address is None or port is None:
                continue
            self._add(job, name, self.var(name, "sglang_gateway_metrics_port"), address, port,
                      {"host": name, "gateway": name})
            self.counts["gateways"] += 1

    def _node_exporters(self, routed_by, gateways, installed):
        job = self.jobs.get("node", "node")
        for name in sorted(self.hosts):
            if not isinstance(name, str):
                continue
            if not self._bool(name, "sglang_monitoring_node_exporter", name in installed):
                continue
            hv = self.hv(name)
            field = "ansible_host" if not blank(hv.get("ansible_host")) else "inventory_hostname"
            address = self._named_address(name, field, hv.get("ansible_host") if field == "ansible_host" else name)
            port = self._port(name, "sglang_monitoring_node_exporter_port", NODE_EXPORTER_DEFAULT_PORT)
            if address is None or port is None:
                continue
            if self._loopback(address) and not self._same_machine(name):
                self.err(self.var(name, field), "%s is reached at the loopback address %s, which Prometheus on %s "
                         "(another host) cannot reach" % (_shown(name, 60), address, _shown(self.prom_name, 60)))
                continue
            labels = dict(self._public(self.labels.get(name, {"host": name})))
            if name in gateways:
                labels["gateway"] = ",".join(sorted(routed_by.get(name, set()) | {name}))
            self._add(job, name, self.var(name, "sglang_monitoring_node_exporter_port"), address, port, labels)
            self.counts["node_exporters"] += 1


def build_targets(cfg):
    """Targets per job (file_sd lists), errors, warnings and counts; see the module's docstring."""
    build = _Build(cfg)
    return {"targets": build.targets, "errors": list(build.errors), "warnings": list(build.warnings),
            "counts": dict(build.counts)}
