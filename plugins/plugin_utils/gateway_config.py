# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks and command-line rendering for the SGLang model gateway (``smg`` 1.13.0) of the
``sglang_gateway`` role.

The input ``cfg`` is the role's variables without their ``sglang_gateway_`` prefix, plus what the role
collects from the inventory::

    gateway_name, gateway_address, host, port, metrics_host, metrics_port, policy,
    health_check_interval, health_check_timeout, health_failure_threshold, health_success_threshold,
    health_check_endpoint, retry_max_retries, retry_initial_backoff_ms, retry_max_backoff_ms,
    shutdown_grace_period, log_level, log_json, audit, worker_api_key, admin_api_key,
    allow_unauthenticated, worker_ca_path, tls_cert_path, tls_key_path, args,
    workers_group, workers

and, checked when given (they name the unit, its account and its files): ``unit_name``, ``user``, ``group``,
``config_dir``, ``venv``.

``workers`` is one dict per host of the workers group: ``name`` (inventory name), ``host`` and ``port``
(its ``sglang_server_host``/``sglang_server_port``, None when the inventory does not set them: the
sglang_server role's defaults apply), ``args`` (``sglang_server_args``), ``api_key``
(``sglang_server_api_key``), ``ansible_host``, ``ipv4`` and ``ipv6`` (the default addresses from its
gathered facts, "" when not gathered). ``gateway_name``/``gateway_address`` are the gateway's own
inventory name and ``ansible_host``: two inventory hosts are the same machine when their names are equal
or when both have the same ``ansible_host``.

What smg 1.13.0 does that these rules follow (read from the wheel's launcher and tried on the real binary):

* ``--api-key`` is sent to the static ``--worker-urls`` and is also the key the gateway's own clients must
  present (``Authorization: Bearer``); the client's header is passed through to the worker, so one key
  serves both and every worker must accept it.
* the control plane (``/workers``, ``/flush_cache``, ``/get_loads``, ``/start_profile``, ...) takes the
  ``--control-plane-api-keys`` keys when any are given; otherwise it falls back to ``--api-key``, and with
  neither it is open to anyone who reaches the port (a worker added there receives the traffic).
* neither key can be given other than on the command line, which ``/proc/<pid>/cmdline`` shows to every
  local user. The role's launcher (``roles/sglang_gateway/files/smg_launch.py``) reads them from the
  environment instead, filled by systemd from a root-only EnvironmentFile; ``SECRET_ENV`` names them.

Public functions:

``validate_gateway_config(cfg) -> list[str]``
    every problem; each message names the variable and the rule.
``render_gateway(cfg) -> dict``
    ``argv`` (no secrets), ``env``, ``env_file`` (the secrets), ``workers``, ``worker_urls``, probe URLs,
    ``privileged_port``, ``warnings``; raises ``GatewayConfigError``.

Standard library only (also used on the controller by filters).
"""

from __future__ import annotations

import json
import re

from ansible_collections.llmserve.sglang.plugins.plugin_utils.addresses import (
    SERVER_DEFAULT_HOST,
    SERVER_DEFAULT_PORT,
    ip_literal,
    is_loopback_name as _is_loopback_name,
    probe_address,
    resolver_address,
    url_host,
    wildcard_address,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.systemd_unit import (
    ACCOUNT_NAME,
    UNIT_NAME,
    control_problem,
    path_problem,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args import (
    serves_tls,
    url_path_problem,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.rules import describe_shown as _describe
from ansible_collections.llmserve.sglang.plugins.plugin_utils.rules import shown as _shown
from ansible_collections.llmserve.sglang.plugins.plugin_utils.values import as_bool, as_int, blank

PREFIX = "sglang_gateway_"
SMG_VERSION = "1.13.0"

# smg 1.13.0 `--policy` choices (`smg launch --help`); cache_aware is smg's default.
POLICIES = ("random", "round_robin", "passthrough", "cache_aware", "power_of_two", "least_load", "manual",
            "consistent_hashing", "prefix_hash")
LOG_LEVELS = ("debug", "info", "warn", "error")

# The sglang_server role's defaults for a worker whose inventory does not set them
# (tests/unit/plugins/module_utils/test_gateway_config.py keeps them equal to roles/sglang_server/defaults).
WORKER_DEFAULT_HOST = SERVER_DEFAULT_HOST
WORKER_DEFAULT_PORT = SERVER_DEFAULT_PORT

# Environment variables the launcher reads the secrets from (and removes before smg starts).
SECRET_ENV = {"worker_api_key": "LLMSERVE_SMG_API_KEY", "admin_api_key": "LLMSERVE_SMG_ADMIN_API_KEY"}
ADMIN_KEY_MIN_LENGTH = 16

# smg flags the role writes itself; sglang_gateway_args may not set them (nor abbreviate them: smg's
# argparse accepts any unambiguous prefix of a flag).
MANAGED_FLAGS = (
    "host", "port", "worker-urls", "policy", "prometheus-host", "prometheus-port",
    "health-check-interval-secs", "health-check-timeout-secs", "health-failure-threshold",
    "health-success-threshold", "health-check-endpoint", "disable-health-check",
    "retry-max-retries", "retry-initial-backoff-ms", "retry-max-backoff-ms", "disable-retries",
    "shutdown-grace-period-secs", "log-level", "log-json", "log-dir", "control-plane-audit-enabled",
    "ca-cert-paths", "tls-cert-path", "tls-key-path",
)
# Flags that carry a secret (they would land in the world-readable command line) or that change who may
# use the control plane, add a listener or a worker source the role does not protect.
REFUSED_FLAGS = {
    "api-key": "the workers' API key is sglang_gateway_worker_api_key (kept off the command line)",
    "control-plane-api-keys": "the control-plane key is sglang_gateway_admin_api_key (kept off the command line)",
    "tenant-api-key": "a secret on the command line, which every local user can read",
    "oracle-password": "a secret on the command line, which every local user can read",
    "oracle-username": "a credential on the command line, which every local user can read",
    "postgres-db-url": "a secret on the command line, which every local user can read",
    "redis-url": "a secret on the command line, which every local user can read",
    "jwt-issuer": "changes the control plane's authentication, which the role owns",
    "jwt-audience": "changes the control plane's authentication, which the role owns",
    "jwt-jwks-uri": "changes the control plane's authentication, which the role owns",
    "jwt-role-mapping": "changes the control plane's authentication, which the role owns",
    "enable-mesh": "opens an unauthenticated cluster listener (mesh) the role does not protect",
    "mesh-host": "belongs to the mesh listener, which the role does not enable",
    "mesh-port": "belongs to the mesh listener, which the role does not enable",
    "mesh-peer-urls": "belongs to the mesh listener, which the role does not enable",
    "enable-rl": "mounts a second control plane (/v1/rl) the role does not protect",
    "health-check-port": "opens a second listener the role does not check",
    "enable-igw": "multi-model mode; the role deploys one static worker list",
    "service-discovery": "workers come from the inventory (sglang_gateway_workers_group)",
    "discovery-provider": "workers come from the inventory (sglang_gateway_workers_group)",
    "discovery-file": "workers come from the inventory (sglang_gateway_workers_group)",
    "pd-disaggregation": "the role deploys regular (not prefill/decode) workers",
    "epd-disaggregation": "the role deploys regular (not prefill/decode) workers",
    "prefill": "the role deploys regular (not prefill/decode) workers",
    "decode": "the role deploys regular (not prefill/decode) workers",
    "encode": "the role deploys regular (not prefill/decode) workers",
}
# smg flags sglang_gateway_args may set, but whose value the rules look at: a listener (refused on every interface)
# and destinations outside the gateway (warned about). An abbreviation of one is refused like the flags above.
CHECKED_FLAGS = ("rdma-listen-ip", "otlp-traces-endpoint", "mm-allow-private-media-hosts")
_FLAG_NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
_BEARER = re.compile(r"[\x21-\x7e]+")
_NEGATIVE_NUMBER = re.compile(r"-[0-9]+(?:\.[0-9]+)?")
_UNSET = object()


class GatewayConfigError(ValueError):
    """Raised by ``render_gateway`` when the configuration does not validate."""

    def __init__(self, errors):
        self.errors = list(errors)
        super(GatewayConfigError, self).__init__(
            "invalid SGLang gateway configuration:\n- " + "\n- ".join(self.errors))


def _as_int(value):
    # 18 digits: an integer smg's settings (u64/usize) can hold, whatever the digits
    return as_int(value, _UNSET, digits=18)


def _endpoint_host(endpoint):
    """The host part of ``host:port``, ``scheme://host:port/path`` or ``[v6]:port`` ('' when there is none)."""
    rest = endpoint.strip().split("://", 1)[-1]
    rest = rest.split("/", 1)[0].rsplit("@", 1)[-1]
    if rest.startswith("["):
        return rest[1:].split("]", 1)[0]
    if rest.count(":") == 1:
        return rest.split(":", 1)[0]
    return rest


class _Check(object):
    """One pass over ``cfg``: the errors, warnings and normalised values."""

    def __init__(self, cfg):
        if not isinstance(cfg, dict):
            raise TypeError("cfg must be a dict, got %s" % type(cfg).__name__)
        self.cfg = cfg
        self.errors = []
        self.warnings = []
        self.top = {}
        self.workers = []
        self._run()

    # -- helpers ------------------------------------------------------------------------------------

    def err(self, variable, rule):
        self.errors.append("%s: %s" % (variable, rule))

    def warn(self, variable, remark):
        self.warnings.append("%s: %s" % (variable, remark))

    def _text(self, key, required=True):
        value = self.cfg.get(key)
        variable = PREFIX + key
        if blank(value):
            if required:
                self.err(variable, "must be set")
            return None
        if not isinstance(value, str):
            self.err(variable, "must be a string, got %s" % _describe(value))
            return None
        problem = control_problem(value)
        if problem:
            self.err(variable, problem)
            return None
        return value.strip()

    def _int(self, key, low, high=None, default=_UNSET):
        value = self.cfg.get(key)
        variable = PREFIX + key
        if value is None and default is not _UNSET:
            return default
        number = _as_int(value)
        if number is _UNSET or number < low or (high is not None and number > high):
            span = ("between %d and %d" % (low, high)) if high is not None else (">= %d" % low)
            self.err(variable, "must be an integer %s, got %s" % (span, _describe(value)))
            return None
        return number

    def _bool(self, key, default):
        value = self.cfg.get(key)
        if value is None:
            return default
        parsed = as_bool(value, _UNSET)
        if parsed is _UNSET:
            self.err(PREFIX + key, "must be true or false, got %s" % _describe(value))
            return default
        return parsed

    def _address(self, key, required=True):
        text = self._text(key, required=required)
        if text is None:
            return None
        parsed = ip_literal(text)
        if parsed is None:
            self.err(PREFIX + key, "must be an IP address (smg binds it; no host name, brackets or zone), got %r"
                     % _shown(text))
            return None
        return parsed.compressed

    def _secret(self, key, min_length=1):
        value = self.cfg.get(key)
        variable = PREFIX + key
        if blank(value):
            return None
        if not isinstance(value, str):
            self.err(variable, "must be a string, got %s (value not shown)" % type(value).__name__)
            return None
        problem = control_problem(value, secret=True)
        if problem:
            self.err(variable, problem)
            return None
        if not _BEARER.fullmatch(value):
            self.err(variable, "must be printable ASCII without spaces: it is sent in an HTTP Authorization "
                     "header (value not shown)")
            return None
        if len(value) < min_length:
            self.err(variable, "must be at least %d characters long (value not shown); make one with "
                     "'openssl rand -hex 32'" % min_length)
            return None
        return value

    def _path(self, key):
        text = self._text(key, required=False)
        if text is None:
            return None
        problem = path_problem(text)
        if problem:
            self.err(PREFIX + key, problem)
            return None
        return text

    # -- the rules ----------------------------------------------------------------------------------

    def _run(self):
        top = self.top
        top["host"] = self._address("host")
        top["port"] = self._int("port", 1, 65535)
        metrics_host = self._address("metrics_host", required=False)
        top["metrics_host"] = metrics_host if metrics_host is not None else top["host"]
        top["metrics_port"] = self._int("metrics_port", 1, 65535)
        if top["port"] is not None and top["port"] == top["metrics_port"]:
            self.err(PREFIX + "metrics_port", "must differ from sglang_gateway_port (%d): both listen on this host"
                     % top["port"])
        policy = self._text("policy")
        if policy is not None and policy not in POLICIES:
            self.err(PREFIX + "policy", "must be one of smg %s's routing policies (%s), got %r"
                     % (SMG_VERSION, ", ".join(POLICIES), _shown(policy)))
            policy = None
        top["policy"] = policy
        top["health_check_interval"] = self._int("health_check_interval", 1)
        top["health_check_timeout"] = self._int("health_check_timeout", 1)
        top["health_failure_threshold"] = self._int("health_failure_threshold", 1)
        top["health_success_threshold"] = self._int("health_success_threshold", 1)
        endpoint = self._text("health_check_endpoint")
        if endpoint is not None and url_path_problem(endpoint):
            self.err(PREFIX + "health_check_endpoint", url_path_problem(endpoint))
            endpoint = None
        top["health_check_endpoint"] = endpoint
        top["retry_max_retries"] = self._int("retry_max_retries", 1, 100)
        top["retry_initial_backoff_ms"] = self._int("retry_initial_backoff_ms", 1)
        top["retry_max_backoff_ms"] = self._int("retry_max_backoff_ms", 1)
        if None not in (top["retry_initial_backoff_ms"], top["retry_max_backoff_ms"]) \
                and top["retry_max_backoff_ms"] < top["retry_initial_backoff_ms"]:
            self.err(PREFIX + "retry_max_backoff_ms", "must be >= sglang_gateway_retry_initial_backoff_ms (%d), got %d"
                     % (top["retry_initial_backoff_ms"], top["retry_max_backoff_ms"]))
        top["shutdown_grace_period"] = self._int("shutdown_grace_period", 0, 86400)
        level = self._text("log_level")
        if level is not None and level not in LOG_LEVELS:
            self.err(PREFIX + "log_level", "must be one of %s, got %r" % (", ".join(LOG_LEVELS), _shown(level)))
        top["log_level"] = level
        top["log_json"] = self._bool("log_json", True)
        top["audit"] = self._bool("audit", True)
        top["allow_unauthenticated"] = self._bool("allow_unauthenticated", False)
        top["worker_ca_path"] = self._path("worker_ca_path")
        top["tls_cert_path"] = self._path("tls_cert_path")
        top["tls_key_path"] = self._path("tls_key_path")
        if (top["tls_cert_path"] is None) != (top["tls_key_path"] is None) and not self._tls_paths_failed():
            self.err(PREFIX + "tls_cert_path", "and sglang_gateway_tls_key_path go together: set both (HTTPS) or "
                     "neither (HTTP)")
        self._check_service()
        self._check_args()
        self._check_workers()
        self._check_keys()

    def _check_service(self):
        """What names the unit, its account and its files: a plain unit name, account names, absolute paths."""
        for key, pattern, rule in (("unit_name", UNIT_NAME, "a plain systemd unit name (letters, digits, '_', '.', "
                                                            "':' and '-'; no '@', '/' or '.service')"),
                                   ("user", ACCOUNT_NAME, "a user name (letters, digits, '_', '.', '-')"),
                                   ("group", ACCOUNT_NAME, "a group name (letters, digits, '_', '.', '-')")):
            if key not in self.cfg:
                continue
            text = self._text(key)
            if text is not None and (not pattern.fullmatch(text) or text.endswith(".service")):
                self.err(PREFIX + key, "must be %s, got %r" % (rule, _shown(text)))
        for key in ("config_dir", "venv"):
            if key not in self.cfg:
                continue
            text = self._text(key)
            if text is None:
                continue
            problem = path_problem(text)
            if problem is None and (text.rstrip("/") in ("", "/") or "//" in text or text.endswith("/")):
                problem = "must be a normalised absolute path other than /, got %r" % _shown(text)
            if problem:
                self.err(PREFIX + key, problem)

    def _tls_paths_failed(self):
        return any(e.startswith((PREFIX + "tls_cert_path:", PREFIX + "tls_key_path:")) for e in self.errors)

    def _check_args(self):
        args = self.cfg.get("args")
        variable = PREFIX + "args"
        self.top["args"] = []
        if args is None:
            return
        if not isinstance(args, dict):
            self.err(variable, "must be a dict of smg flags (name: value), got %s" % _describe(args))
            return
        protected = tuple(MANAGED_FLAGS) + tuple(REFUSED_FLAGS)
        for raw in sorted(args, key=str):
            value = args[raw]
            where = "%s.%s" % (variable, _shown(raw, 60))
            name = str(raw).strip().lstrip("-").replace("_", "-") if isinstance(raw, str) else None
            if name is None or not _FLAG_NAME.fullmatch(name):
                self.err(where, "is not an smg flag name (lower-case words joined by '-' or '_')")
                continue
            if name in REFUSED_FLAGS:
                self.err(where, "is refused: %s" % REFUSED_FLAGS[name])
                continue
            if name in MANAGED_FLAGS:
                self.err(where, "is set by the role from its own variable (see the role README), not through "
                         "sglang_gateway_args")
                continue
            covered = [flag for flag in protected + CHECKED_FLAGS if flag.startswith(name) and flag != name]
            if covered and name not in CHECKED_FLAGS:
                self.err(where, "abbreviates --%s, which smg's parser would accept for it; spell out the flag"
                         % covered[0])
                continue
            tokens = self._arg_values(where, value)
            if tokens is None:
                continue
            if name in CHECKED_FLAGS:
                tokens = self._checked_flag(where, name, tokens)
                if tokens is None:
                    continue
            if tokens is True:
                self.top["args"].append(["--" + name])
            elif tokens:
                self.top["args"].append(["--" + name] + tokens)

    def _checked_flag(self, where, name, tokens):
        """The tokens of a flag whose value matters to the host's exposure (None when refused)."""
        if name == "rdma-listen-ip":
            if tokens is True or len(tokens) != 1:
                if tokens:
                    self.err(where, "must be one IP address (the RDMA pixel lane's metadata listener binds it)")
                    return None
                return tokens
            parsed = resolver_address(tokens[0])
            if parsed is None:
                self.err(where, "must be an IP address (the RDMA pixel lane's metadata listener binds it), got %r"
                         % _shown(tokens[0]))
                return None
            if parsed.is_unspecified:
                self.err(where, "binds every interface (%s): the RDMA lane's metadata listener is one more listener "
                         "the role neither checks nor protects, as the mesh and --health-check-port are; give the "
                         "gateway's RDMA address" % _shown(tokens[0]))
                return None
            return [parsed.compressed]
        if name == "mm-allow-private-media-hosts":
            if tokens:
                self.warn(where, "lets smg fetch the media URLs clients send from private, loopback and link-local "
                          "addresses (internal services, cloud metadata at 169.254.169.254): anyone who may call the "
                          "gateway can make it read those for them")
            return tokens
        if name == "otlp-traces-endpoint" and tokens and tokens is not True:
            host = _endpoint_host(tokens[0])
            if not (host and _is_loopback_name(host)):
                self.warn(where, "the request traces (models, routes, timings, request attributes) leave this host "
                          "for %s, over OTLP without authentication (and without encryption unless https): "
                          "point it at a collector on this host or keep it on a trusted network" % _shown(tokens[0]))
        return tokens

    def _arg_values(self, where, value):
        """True for a bare switch, [] to leave the flag out, else the value tokens (None on error)."""
        if value is True:
            return True
        if value is False or value is None:
            return []
        items = value if isinstance(value, (list, tuple)) else [value]
        if not items:
            return []
        tokens = []
        for item in items:
            if isinstance(item, bool) or isinstance(item, (dict, list, tuple)) or item is None:
                self.err(where, "values must be strings or numbers (a list for several), got %s" % _describe(item))
                return None
            text = item if isinstance(item, str) else json.dumps(item)
            problem = control_problem(text)
            if problem:
                self.err(where, problem)
                return None
            tokens.append(text)
        if len(tokens) > 1:
            dashed = [t for t in tokens if t.startswith("-") and not _NEGATIVE_NUMBER.fullmatch(t)]
            if dashed:
                self.err(where, "a value in a list must not start with '-' (smg's parser would read %r as a flag); "
                         "give such a value alone, it is then written --flag=value" % _shown(dashed[0]))
                return None
        return tokens

    # -- workers ------------------------------------------------------------------------------------

    def _same_machine(self, worker):
        if worker["name"] == self.cfg.get("gateway_name"):
            return True
        mine = self.cfg.get("gateway_address")
        theirs = worker.get("ansible_host")
        return not blank(mine) and not blank(theirs) and str(mine).strip() == str(theirs).strip()

    def _check_workers(self):
        group = self.cfg.get("workers_group")
        workers = self.cfg.get("workers")
        if not isinstance(workers, (list, tuple)):
            self.err(PREFIX + "workers_group", "the workers must be a list, got %s" % _describe(workers))
            return
        if not workers:
            self.err(PREFIX + "workers_group", "the inventory group %r has no hosts (or does not exist): the "
                     "gateway needs at least one SGLang server to route to" % _shown(group))
            return
        seen_urls = {}
        for position, worker in enumerate(workers):
            entry = self._worker(position, worker)
            if entry is None:
                continue
            other = seen_urls.get(entry["url"])
            if other is not None:
                self.err("hostvars['%s']" % entry["name"], "reaches the same URL %s as %s: every worker must be a "
                         "server of its own (duplicate sglang_server_host/sglang_server_port, or an ansible_host "
                         "shared by mistake)" % (entry["url"], other))
                continue
            seen_urls[entry["url"]] = entry["name"]
            self.workers.append(entry)

    def _worker(self, position, worker):
        if not isinstance(worker, dict) or blank(worker.get("name")) or not isinstance(worker.get("name"), str):
            self.err(PREFIX + "workers_group", "worker %d is not a dict with a 'name'" % position)
            return None
        name = _shown(worker["name"], 60)

        def var(field):
            return "hostvars['%s'].%s" % (name, field)

        host = worker.get("host")
        if blank(host):
            host = WORKER_DEFAULT_HOST
        if not isinstance(host, str) or ip_literal(host) is None:
            self.err(var("sglang_server_host"), "must be an IP address (the worker binds it), got %s"
                     % _describe(host))
            return None
        bind = ip_literal(host)
        port = worker.get("port")
        port = WORKER_DEFAULT_PORT if port is None or (isinstance(port, str) and not port.strip()) else _as_int(port)
        if port is _UNSET or not 1 <= port <= 65535:
            self.err(var("sglang_server_port"), "must be an integer between 1 and 65535, got %s"
                     % _describe(worker.get("port")))
            return None
        if bind.is_unspecified:
            address, source, problem = wildcard_address(
                name, bind, worker.get("ansible_host"), worker, "the gateway", "the gateway reaches")
            if problem:
                self.err(var(source or "sglang_server_host"), problem)
                return None
        else:
            address = bind.compressed
        same_machine = self._same_machine(worker)
        if _is_loopback_name(address) and not same_machine:
            source = "sglang_server_host" if not bind.is_unspecified else "ansible_host"
            resolved = resolver_address(address)
            shown = resolved.compressed if resolved is not None else address
            self.err(var(source), "%s is reached at the loopback address %s, which the gateway on %s (another host) "
                     "cannot reach; bind the worker to its network address" % (name, shown,
                                                                               _shown(self.cfg.get("gateway_name"), 60)))
            return None
        if same_machine:
            for key in ("port", "metrics_port"):
                if self.top.get(key) is not None and self.top[key] == port:
                    self.err(PREFIX + key, "clashes with worker %s on the same host, which listens on port %d "
                             "(hostvars['%s'].sglang_server_port)" % (name, port, name))
        args = worker.get("args")
        scheme = "https" if serves_tls(args if isinstance(args, dict) else {}) else "http"
        url = "%s://%s:%d" % (scheme, url_host(address), port)
        return {"name": worker["name"], "url": url, "tls": scheme == "https", "same_machine": same_machine,
                "api_key": worker.get("api_key")}

    # -- keys ---------------------------------------------------------------------------------------

    def _check_keys(self):
        admin = self._secret("admin_api_key", ADMIN_KEY_MIN_LENGTH)
        if admin is None and not any(e.startswith(PREFIX + "admin_api_key:") for e in self.errors):
            self.err(PREFIX + "admin_api_key", "must be set: without a control-plane key smg 1.13.0 lets anyone who "
                     "reaches the gateway (or holds the workers' API key) add, remove and flush workers; the role "
                     "refuses to deploy an open control plane")
        explicit = self._secret("worker_api_key")
        worker_keys = {}
        for worker in self.cfg.get("workers") or []:
            if not isinstance(worker, dict) or blank(worker.get("api_key")):
                continue
            name = _shown(worker.get("name"), 60)
            value = worker.get("api_key")
            if not isinstance(value, str) or control_problem(value) or not _BEARER.fullmatch(value):
                self.err("hostvars['%s'].sglang_server_api_key" % name, "must be printable ASCII without spaces to be "
                         "sent in an HTTP header (value not shown)")
                continue
            worker_keys.setdefault(value, []).append(name)
        key = explicit
        if explicit is not None:
            for value, names in sorted(worker_keys.items(), key=lambda kv: kv[1]):
                if value != explicit:
                    self.err(PREFIX + "worker_api_key", "differs from the sglang_server_api_key of %s (values not "
                             "shown): smg sends one API key to every worker" % ", ".join(names))
        elif len(worker_keys) > 1:
            groups = sorted(worker_keys.values())
            self.err(PREFIX + "worker_api_key", "the workers' sglang_server_api_key values differ (%s; values not "
                     "shown), but smg sends one API key to every worker: give them one key"
                     % " vs ".join(", ".join(g) for g in groups))
        elif worker_keys:
            key = next(iter(worker_keys))
            keyless = [_shown(w.get("name"), 60) for w in self.cfg.get("workers") or []
                       if isinstance(w, dict) and blank(w.get("api_key"))]
            if keyless:
                self.warn(PREFIX + "worker_api_key", "%s set no sglang_server_api_key; the gateway sends them the "
                          "other workers' key" % ", ".join(keyless))
        self.top["worker_api_key"] = key
        self.top["admin_api_key"] = admin
        if admin is not None and key is not None and admin == key:
            self.err(PREFIX + "admin_api_key", "must differ from the workers' API key (values not shown): every "
                     "client of the gateway holds that one, and the control plane would be theirs")
        host = ip_literal(self.top.get("host") or "")
        if key is None and host is not None and not host.is_loopback:
            if self.top.get("allow_unauthenticated"):
                self.warn(PREFIX + "host", "%s serves the models to anyone who reaches it, without an API key "
                          "(allowed by sglang_gateway_allow_unauthenticated)" % host.compressed)
            elif not any(e.startswith(PREFIX + "worker_api_key:") for e in self.errors):
                self.err(PREFIX + "host", "binds the non-loopback address %s without an API key, so anyone who can "
                         "reach the port can use the models: give the workers sglang_server_api_key (or set "
                         "sglang_gateway_worker_api_key), or set sglang_gateway_allow_unauthenticated: true"
                         % host.compressed)
        if host is not None and not host.is_loopback and self.top.get("tls_cert_path") is None:
            self.warn(PREFIX + "tls_cert_path", "clients send their API key to %s over plain HTTP; give the gateway a "
                      "certificate or keep it on a trusted network" % host.compressed)
        metrics = ip_literal(self.top.get("metrics_host") or "")
        if metrics is not None and not metrics.is_loopback:
            self.warn(PREFIX + "metrics_host", "the Prometheus endpoint on %s answers anyone without authentication "
                      "(worker URLs, request counts)" % metrics.compressed)
        if any(w["tls"] for w in self.workers) and self.top.get("worker_ca_path") is None:
            self.warn(PREFIX + "worker_ca_path", "HTTPS workers are verified against smg's built-in trust roots; "
                      "set a CA file for a private CA")


def validate_gateway_config(cfg):
    """Return every problem of ``cfg`` (empty when it is fine)."""
    return list(_Check(cfg).errors)


def _option(argv, option, value):
    """``--flag value``; ``--flag=value`` when the value starts with '-', so argparse cannot take it for a flag."""
    text = str(value)
    if text.startswith("-"):
        argv.append("%s=%s" % (option, text))
    else:
        argv.extend([option, text])


def render_gateway(cfg):
    """Turn a valid ``cfg`` into what the unit needs; raise ``GatewayConfigError`` listing every problem."""
    check = _Check(cfg)
    if check.errors:
        raise GatewayConfigError(check.errors)
    top = check.top
    urls = [w["url"] for w in check.workers]
    argv = ["--host", top["host"]]
    _option(argv, "--port", top["port"])
    argv.append("--worker-urls")
    argv.extend(urls)
    _option(argv, "--policy", top["policy"])
    _option(argv, "--prometheus-host", top["metrics_host"])
    _option(argv, "--prometheus-port", top["metrics_port"])
    for option, key in (("--health-check-interval-secs", "health_check_interval"),
                        ("--health-check-timeout-secs", "health_check_timeout"),
                        ("--health-failure-threshold", "health_failure_threshold"),
                        ("--health-success-threshold", "health_success_threshold"),
                        ("--health-check-endpoint", "health_check_endpoint"),
                        ("--retry-max-retries", "retry_max_retries"),
                        ("--retry-initial-backoff-ms", "retry_initial_backoff_ms"),
                        ("--retry-max-backoff-ms", "retry_max_backoff_ms"),
                        ("--shutdown-grace-period-secs", "shutdown_grace_period"),
                        ("--log-level", "log_level")):
        _option(argv, option, top[key])
    if top["log_json"]:
        argv.append("--log-json")
    if top["audit"]:
        argv.append("--control-plane-audit-enabled")
    if top["worker_ca_path"]:
        _option(argv, "--ca-cert-paths", top["worker_ca_path"])
    if top["tls_cert_path"]:
        _option(argv, "--tls-cert-path", top["tls_cert_path"])
        _option(argv, "--tls-key-path", top["tls_key_path"])
    for tokens in top["args"]:
        if len(tokens) == 2:
            _option(argv, tokens[0], tokens[1])
        else:
            argv.extend(tokens)
    env_file = {SECRET_ENV["admin_api_key"]: top["admin_api_key"]}
    if top["worker_api_key"] is not None:
        env_file[SECRET_ENV["worker_api_key"]] = top["worker_api_key"]
    scheme = "https" if top["tls_cert_path"] else "http"
    base = "%s://%s:%d" % (scheme, url_host(probe_address(top["host"])), top["port"])
    return {
        "argv": argv,
        "env": {"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"},
        "env_file": env_file,
        "workers": [{"name": w["name"], "url": w["url"]} for w in check.workers],
        "worker_urls": urls,
        "base_url": base,
        "readiness_url": base + "/readiness",
        "workers_url": base + "/workers",
        "metrics_url": "http://%s:%d/metrics" % (url_host(probe_address(top["metrics_host"])), top["metrics_port"]),
        "privileged_port": top["port"] < 1024 or top["metrics_port"] < 1024,
        "authenticated_data_plane": top["worker_api_key"] is not None,
        "warnings": list(check.warnings),
    }


def workers_check(listed, expected_urls):
    """Compare smg's ``GET /workers`` answer with the configured worker URLs.

    ``listed`` is the ``workers`` list of that answer (dicts with ``url``, ``is_healthy`` and ``status``).
    Returns ``{"missing": [url], "unhealthy": [url], "extra": [url], "states": {url: state}, "ok": bool}``:
    ``ok`` when every configured URL is registered and healthy. ``extra`` (registered through the control plane,
    not in the inventory) is reported but does not make ``ok`` false. ``states`` says, for every configured and
    every extra URL, ``healthy``, ``unhealthy (<status>)``, ``not registered`` or ``extra, healthy``/``extra,
    unhealthy (<status>)``: the workers' state in the gateway for the run report.
    """
    result = {"missing": [], "unhealthy": [], "extra": [], "states": {}, "ok": False}
    if not isinstance(listed, list) or not isinstance(expected_urls, (list, tuple)):
        result["missing"] = list(expected_urls) if isinstance(expected_urls, (list, tuple)) else []
        result["states"] = {url: "not registered" for url in result["missing"]}
        return result
    seen = {}
    for item in listed:
        if isinstance(item, dict) and isinstance(item.get("url"), str):
            seen[item["url"].rstrip("/")] = item
    expected = []
    for url in expected_urls:
        key = str(url).rstrip("/")
        expected.append(key)
        item = seen.get(key)
        if item is None:
            result["missing"].append(url)
            result["states"][url] = "not registered"
        elif item.get("is_healthy") is not True:
            result["unhealthy"].append(url)
            result["states"][url] = "unhealthy (%s)" % (item.get("status") or "no status")
        else:
            result["states"][url] = "healthy"
    result["extra"] = sorted(url for url in seen if url not in expected)
    for url in result["extra"]:
        item = seen[url]
        result["states"][url] = "extra, " + ("healthy" if item.get("is_healthy") is True
                                             else "unhealthy (%s)" % (item.get("status") or "no status"))
    result["ok"] = not result["missing"] and not result["unhealthy"]
    return result
