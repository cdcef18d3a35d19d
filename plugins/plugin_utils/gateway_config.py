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

The checks run on the rule engine (``rules``): one normalised ``GatewayConfig`` (the raw ``cfg`` and what the rules
normalised so far) and one ``Problems`` collector go through ``RULES``, an ordered list of plain functions
``rule(cfg, problems)``; the list fixes the order of the messages. A worker's address is the one
``addresses.server_addresses`` gives its host (the wildcard rule, its defaults); what only the gateway decides (a
loopback worker on another host, one port on one machine, one URL per worker) is checked here.

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
    server_addresses,
    url_host,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.systemd_unit import (
    ACCOUNT_NAME,
    UNIT_NAME,
    control_problem,
    path_problem,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args import url_path_problem
from ansible_collections.llmserve.sglang.plugins.plugin_utils.rules import (
    UNSET,
    Problems,
    address_rule,
    read_bool,
    read_int_between,
    read_text,
    run_rules,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.rules import describe_shown as _describe
from ansible_collections.llmserve.sglang.plugins.plugin_utils.rules import shown as _shown
from ansible_collections.llmserve.sglang.plugins.plugin_utils.values import as_int, blank

PREFIX = "sglang_gateway_"
SMG_VERSION = "1.13.0"

# smg 1.13.0 `--policy` choices (`smg launch --help`); cache_aware is smg's default.
POLICIES = ("random", "round_robin", "passthrough", "cache_aware", "power_of_two", "least_load", "manual",
            "consistent_hashing", "prefix_hash")
LOG_LEVELS = ("debug", "info", "warn", "error")

# The sglang_server role's defaults for a worker whose inventory does not set them
# (tests/unit/plugins/plugin_utils/test_gateway_config.py keeps them equal to roles/sglang_server/defaults).
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
_UNSET = UNSET
# 18 digits: an integer smg's settings (u64/usize) can hold, whatever the digits
_DIGITS = 18
# How server_addresses words a worker's address problems for the gateway.
WORKER_WORDS = {"binds": "the worker binds it", "who": "the gateway", "reacher": "the gateway reaches", "hint": ""}


class GatewayConfigError(ValueError):
    """Raised by ``render_gateway`` when the configuration does not validate."""

    def __init__(self, errors):
        self.errors = list(errors)
        super(GatewayConfigError, self).__init__(
            "invalid SGLang gateway configuration:\n- " + "\n- ".join(self.errors))


def _as_int(value):
    return as_int(value, _UNSET, digits=_DIGITS)


def _endpoint_host(endpoint):
    """The host part of ``host:port``, ``scheme://host:port/path`` or ``[v6]:port`` ('' when there is none)."""
    rest = endpoint.strip().split("://", 1)[-1]
    rest = rest.split("/", 1)[0].rsplit("@", 1)[-1]
    if rest.startswith("["):
        return rest[1:].split("]", 1)[0]
    if rest.count(":") == 1:
        return rest.split(":", 1)[0]
    return rest


def _var(key):
    return PREFIX + key


class GatewayConfig(object):
    """The normalised configuration the rules read and fill, one per check.

    ``raw`` is ``cfg`` as given; the rules store in ``top`` (key without the prefix -> value) what they normalised,
    None where a value is unset or was refused, ``refused`` holds the keys a rule refused (later rules leave those
    alone), ``workers`` the worker entries the gateway routes to, in inventory order.
    """

    def __init__(self, raw):
        if not isinstance(raw, dict):
            raise TypeError("cfg must be a dict, got %s" % type(raw).__name__)
        self.raw = raw
        self.top = {}
        self.refused = set()
        self.workers = []

    def keep(self, key, value, fallback=None):
        """Store a reader's result under ``key``; ``UNSET`` (refused) becomes ``fallback``."""
        if value is UNSET:
            self.refused.add(key)
            value = fallback
        self.top[key] = value
        return value


# -- readers in the gateway's words ---------------------------------------------------------------------------------


def _bound_address(text):
    """What smg binds: an IP address (``address_rule``'s parse: the address, or the rule the text breaks)."""
    parsed = ip_literal(text)
    if parsed is None:
        return "must be an IP address (smg binds it; no host name, brackets or zone), got %r" % _shown(text)
    return parsed


def _read_address(cfg, problems, key, required=True):
    text = read_text(problems, _var(key), cfg.raw.get(key), required)
    if text is None or text is UNSET:
        return text
    parsed = address_rule(problems, _var(key), text, _bound_address)
    return parsed if parsed is UNSET else parsed.compressed


def _read_int(cfg, problems, key, minimum, maximum=None):
    return read_int_between(problems, _var(key), cfg.raw.get(key), minimum, maximum, digits=_DIGITS)


def _read_bool(problems, key, raw, default):
    """A boolean or one of Ansible's words for one ("yes", "off"): ``must be true or false, got 'maybe'``."""
    return read_bool(problems, _var(key), raw, default, what="true or false", show=_describe, words=True)


def _read_choice(cfg, problems, key, choices, template):
    """A required text among ``choices``; ``template`` words the refusal of another one (``%r`` of the text)."""
    text = read_text(problems, _var(key), cfg.raw.get(key), required=True)
    if isinstance(text, str) and text not in choices:
        problems.add(_var(key), template % _shown(text))
        return UNSET
    return text


def _read_path(cfg, problems, key):
    """An optional path for the unit (``systemd_unit.path_problem``)."""
    text = read_text(problems, _var(key), cfg.raw.get(key))
    if isinstance(text, str) and not problems.check(_var(key), path_problem(text)):
        return UNSET
    return text


def _secret_problem(value, min_length):
    """The rule a secret (a string) breaks, or None; no rule shows the value."""
    problem = control_problem(value, secret=True)
    if problem:
        return problem
    if not _BEARER.fullmatch(value):
        return "must be printable ASCII without spaces: it is sent in an HTTP Authorization header (value not shown)"
    if len(value) < min_length:
        return ("must be at least %d characters long (value not shown); make one with 'openssl rand -hex 32'"
                % min_length)
    return None


def _read_secret(cfg, problems, key, min_length=1):
    """An optional bearer token: None when blank, ``UNSET`` after a problem."""
    value = cfg.raw.get(key)
    if blank(value):
        return None
    if not isinstance(value, str):
        problems.add(_var(key), "must be a string, got %s (value not shown)" % type(value).__name__)
        return UNSET
    return value if problems.check(_var(key), _secret_problem(value, min_length)) else UNSET


# -- the gateway's own settings --------------------------------------------------------------------------------------


def check_listeners(cfg, problems):
    """The API and the Prometheus listener: addresses, ports, and one port each."""
    cfg.keep("host", _read_address(cfg, problems, "host"))
    cfg.keep("port", _read_int(cfg, problems, "port", 1, 65535))
    metrics_host = cfg.keep("metrics_host", _read_address(cfg, problems, "metrics_host", required=False))
    if metrics_host is None:
        cfg.top["metrics_host"] = cfg.top["host"]
    cfg.keep("metrics_port", _read_int(cfg, problems, "metrics_port", 1, 65535))
    if cfg.top["port"] is not None and cfg.top["port"] == cfg.top["metrics_port"]:
        problems.add(_var("metrics_port"), "must differ from sglang_gateway_port (%d): both listen on this host"
                     % cfg.top["port"])


def check_policy(cfg, problems):
    cfg.keep("policy", _read_choice(cfg, problems, "policy", POLICIES, "must be one of smg %s's routing policies "
                                    "(%s), got %%r" % (SMG_VERSION, ", ".join(POLICIES))))


def check_health(cfg, problems):
    for key in ("health_check_interval", "health_check_timeout", "health_failure_threshold",
                "health_success_threshold"):
        cfg.keep(key, _read_int(cfg, problems, key, 1))
    endpoint = read_text(problems, _var("health_check_endpoint"), cfg.raw.get("health_check_endpoint"), True)
    if isinstance(endpoint, str) and not problems.check(_var("health_check_endpoint"), url_path_problem(endpoint)):
        endpoint = UNSET
    cfg.keep("health_check_endpoint", endpoint)


def check_retries(cfg, problems):
    cfg.keep("retry_max_retries", _read_int(cfg, problems, "retry_max_retries", 1, 100))
    initial = cfg.keep("retry_initial_backoff_ms", _read_int(cfg, problems, "retry_initial_backoff_ms", 1))
    longest = cfg.keep("retry_max_backoff_ms", _read_int(cfg, problems, "retry_max_backoff_ms", 1))
    if None not in (initial, longest) and longest < initial:
        problems.add(_var("retry_max_backoff_ms"), "must be >= sglang_gateway_retry_initial_backoff_ms (%d), got %d"
                     % (initial, longest))


def check_shutdown(cfg, problems):
    cfg.keep("shutdown_grace_period", _read_int(cfg, problems, "shutdown_grace_period", 0, 86400))


def check_logging(cfg, problems):
    cfg.keep("log_level", _read_choice(cfg, problems, "log_level", LOG_LEVELS,
                                       "must be one of %s, got %%r" % ", ".join(LOG_LEVELS)))
    for key in ("log_json", "audit"):
        cfg.keep(key, _read_bool(problems, key, cfg.raw.get(key), True), fallback=True)


def check_open_access(cfg, problems):
    """sglang_gateway_allow_unauthenticated (an error in it counts as false: the open data plane stays refused)."""
    key = "allow_unauthenticated"
    cfg.keep(key, _read_bool(problems, key, cfg.raw.get(key), False), fallback=False)


def check_tls_files(cfg, problems):
    for key in ("worker_ca_path", "tls_cert_path", "tls_key_path"):
        cfg.keep(key, _read_path(cfg, problems, key))
    if (cfg.top["tls_cert_path"] is None) != (cfg.top["tls_key_path"] is None) \
            and not cfg.refused & {"tls_cert_path", "tls_key_path"}:
        problems.add(_var("tls_cert_path"), "and sglang_gateway_tls_key_path go together: set both (HTTPS) or "
                     "neither (HTTP)")


def check_service(cfg, problems):
    """What names the unit, its account and its files (checked when given): a plain unit name, account names,
    normalised absolute paths."""
    for key, pattern, rule in (("unit_name", UNIT_NAME, "a plain systemd unit name (letters, digits, '_', '.', "
                                                        "':' and '-'; no '@', '/' or '.service')"),
                               ("user", ACCOUNT_NAME, "a user name (letters, digits, '_', '.', '-')"),
                               ("group", ACCOUNT_NAME, "a group name (letters, digits, '_', '.', '-')")):
        if key not in cfg.raw:
            continue
        text = read_text(problems, _var(key), cfg.raw[key], required=True)
        if isinstance(text, str) and (not pattern.fullmatch(text) or text.endswith(".service")):
            problems.add(_var(key), "must be %s, got %r" % (rule, _shown(text)))
    for key in ("config_dir", "venv"):
        if key not in cfg.raw:
            continue
        text = read_text(problems, _var(key), cfg.raw[key], required=True)
        if not isinstance(text, str):
            continue
        problem = path_problem(text)
        if problem is None and (text.rstrip("/") in ("", "/") or "//" in text or text.endswith("/")):
            problem = "must be a normalised absolute path other than /, got %r" % _shown(text)
        problems.check(_var(key), problem)


# -- sglang_gateway_args ---------------------------------------------------------------------------------------------


def check_args(cfg, problems):
    """Each extra smg flag: a flag name the role neither writes nor refuses, spelled out, with plain values."""
    args = cfg.raw.get("args")
    variable = _var("args")
    cfg.top["args"] = []
    if args is None:
        return
    if not isinstance(args, dict):
        problems.add(variable, "must be a dict of smg flags (name: value), got %s" % _describe(args))
        return
    protected = tuple(MANAGED_FLAGS) + tuple(REFUSED_FLAGS)
    for raw in sorted(args, key=str):
        where = "%s.%s" % (variable, _shown(raw, 60))
        name = str(raw).strip().lstrip("-").replace("_", "-") if isinstance(raw, str) else None
        if name is None or not _FLAG_NAME.fullmatch(name):
            problems.add(where, "is not an smg flag name (lower-case words joined by '-' or '_')")
            continue
        if name in REFUSED_FLAGS:
            problems.add(where, "is refused: %s" % REFUSED_FLAGS[name])
            continue
        if name in MANAGED_FLAGS:
            problems.add(where, "is set by the role from its own variable (see the role README), not through "
                         "sglang_gateway_args")
            continue
        covered = [flag for flag in protected + CHECKED_FLAGS if flag.startswith(name) and flag != name]
        if covered and name not in CHECKED_FLAGS:
            problems.add(where, "abbreviates --%s, which smg's parser would accept for it; spell out the flag"
                         % covered[0])
            continue
        tokens = _arg_values(problems, where, args[raw])
        if tokens is not None and name in CHECKED_FLAGS:
            tokens = _checked_flag(problems, where, name, tokens)
        if tokens is True:
            cfg.top["args"].append(["--" + name])
        elif tokens:
            cfg.top["args"].append(["--" + name] + tokens)


def _arg_values(problems, where, value):
    """True for a bare switch, [] to leave the flag out, else the value tokens (None when refused)."""
    if value is True:
        return True
    if value is False or value is None:
        return []
    items = value if isinstance(value, (list, tuple)) else [value]
    tokens = []
    for item in items:
        if isinstance(item, bool) or isinstance(item, (dict, list, tuple)) or item is None:
            problems.add(where, "values must be strings or numbers (a list for several), got %s" % _describe(item))
            return None
        text = item if isinstance(item, str) else json.dumps(item)
        if not problems.check(where, control_problem(text)):
            return None
        tokens.append(text)
    if len(tokens) > 1:
        dashed = [t for t in tokens if t.startswith("-") and not _NEGATIVE_NUMBER.fullmatch(t)]
        if dashed:
            problems.add(where, "a value in a list must not start with '-' (smg's parser would read %r as a flag); "
                         "give such a value alone, it is then written --flag=value" % _shown(dashed[0]))
            return None
    return tokens


def _checked_flag(problems, where, name, tokens):
    """The tokens of a flag whose value matters to the host's exposure (None when refused)."""
    if name == "rdma-listen-ip":
        return _rdma_listener(problems, where, tokens)
    if name == "mm-allow-private-media-hosts":
        if tokens:
            problems.warn(where, "lets smg fetch the media URLs clients send from private, loopback and link-local "
                          "addresses (internal services, cloud metadata at 169.254.169.254): anyone who may call the "
                          "gateway can make it read those for them")
        return tokens
    if name == "otlp-traces-endpoint" and tokens and tokens is not True:
        host = _endpoint_host(tokens[0])
        if not (host and _is_loopback_name(host)):
            problems.warn(where, "the request traces (models, routes, timings, request attributes) leave this host "
                          "for %s, over OTLP without authentication (and without encryption unless https): "
                          "point it at a collector on this host or keep it on a trusted network" % _shown(tokens[0]))
    return tokens


def _rdma_listener(problems, where, tokens):
    """--rdma-listen-ip: one specific address (a listener on every interface is one the role does not protect)."""
    if tokens is True or len(tokens) != 1:
        if tokens:
            problems.add(where, "must be one IP address (the RDMA pixel lane's metadata listener binds it)")
            return None
        return tokens
    parsed = resolver_address(tokens[0])
    if parsed is None:
        problems.add(where, "must be an IP address (the RDMA pixel lane's metadata listener binds it), got %r"
                     % _shown(tokens[0]))
        return None
    if parsed.is_unspecified:
        problems.add(where, "binds every interface (%s): the RDMA lane's metadata listener is one more listener the "
                     "role neither checks nor protects, as the mesh and --health-check-port are; give the gateway's "
                     "RDMA address" % _shown(tokens[0]))
        return None
    return [parsed.compressed]


# -- workers -----------------------------------------------------------------------------------------------------


def check_workers(cfg, problems):
    """Each worker of the group: reachable from the gateway (addresses.server_addresses), one URL each."""
    workers = cfg.raw.get("workers")
    if not isinstance(workers, (list, tuple)):
        problems.add(_var("workers_group"), "the workers must be a list, got %s" % _describe(workers))
        return
    if not workers:
        problems.add(_var("workers_group"), "the inventory group %r has no hosts (or does not exist): the gateway "
                     "needs at least one SGLang server to route to" % _shown(cfg.raw.get("workers_group")))
        return
    seen_urls = {}
    for position, worker in enumerate(workers):
        entry = _worker_entry(cfg, problems, position, worker)
        if entry is None:
            continue
        other = seen_urls.get(entry["url"])
        if other is not None:
            problems.add("hostvars['%s']" % entry["name"], "reaches the same URL %s as %s: every worker must be a "
                         "server of its own (duplicate sglang_server_host/sglang_server_port, or an ansible_host "
                         "shared by mistake)" % (entry["url"], other))
            continue
        seen_urls[entry["url"]] = entry["name"]
        cfg.workers.append(entry)


def _worker_hostvars(worker):
    """A worker as the host variables ``server_addresses`` reads (the role collected them from hostvars)."""
    port = _as_int(worker.get("port"))
    return {
        "sglang_server_host": worker.get("host"),
        # the gateway reads up to 18 digits ("0030000" is 30000), server_addresses 5: a port the gateway takes goes
        # over as the number, anything else as written (the message shows it)
        "sglang_server_port": port if port is not _UNSET and 1 <= port <= 65535 else worker.get("port"),
        "sglang_server_args": worker.get("args"),
        "ansible_host": worker.get("ansible_host"),
        "ansible_facts": {"default_ipv4": {"address": worker.get("ipv4")},
                          "default_ipv6": {"address": worker.get("ipv6")}},
    }


def _worker_api(problems, name, worker):
    """The worker's API listener as ``server_addresses`` finds it, or None after its first problem.

    ``name`` is the worker's name as the messages show it. The gateway reports one problem per worker, the bind
    address before the port before the wildcard rule (server_addresses finds the port's first). It always named the
    worker once shown in the variable and shown again in the wildcard rule's text (which only a name of more than 60
    characters notices): ``name`` goes in shown, and the variable is written here.
    """
    found = server_addresses(_worker_hostvars(worker), name, WORKER_WORDS)
    api = found["api"]
    if not found["problems"]:
        return api
    problem = found["problems"][0 if api["bind"] is not None and api["port"] is None else -1]
    given = "hostvars['%s']." % _shown(name, 60)
    if problem.startswith(given):
        problem = "hostvars['%s']." % name + problem[len(given):]
    problems.extend([problem])
    return None


def _same_machine(cfg, worker):
    """Two inventory hosts are one machine when their names are equal or both have the same ansible_host."""
    if worker["name"] == cfg.raw.get("gateway_name"):
        return True
    mine = cfg.raw.get("gateway_address")
    theirs = worker.get("ansible_host")
    return not blank(mine) and not blank(theirs) and str(mine).strip() == str(theirs).strip()


def _worker_entry(cfg, problems, position, worker):
    """``{name, url, tls, same_machine, api_key}`` of one worker, or None after reporting why it cannot be one."""
    if not isinstance(worker, dict) or blank(worker.get("name")) or not isinstance(worker.get("name"), str):
        problems.add(_var("workers_group"), "worker %d is not a dict with a 'name'" % position)
        return None
    name = _shown(worker["name"], 60)
    api = _worker_api(problems, name, worker)
    if api is None:
        return None
    same_machine = _same_machine(cfg, worker)
    if _is_loopback_name(api["address"]) and not same_machine:
        source = "ansible_host" if api["wildcard"] else "sglang_server_host"
        resolved = resolver_address(api["address"])
        shown = resolved.compressed if resolved is not None else api["address"]
        problems.add("hostvars['%s'].%s" % (name, source), "%s is reached at the loopback address %s, which the "
                     "gateway on %s (another host) cannot reach; bind the worker to its network address"
                     % (name, shown, _shown(cfg.raw.get("gateway_name"), 60)))
        return None
    if same_machine:
        for key in ("port", "metrics_port"):
            if cfg.top.get(key) is not None and cfg.top[key] == api["port"]:
                problems.add(_var(key), "clashes with worker %s on the same host, which listens on port %d "
                             "(hostvars['%s'].sglang_server_port)" % (name, api["port"], name))
    return {"name": worker["name"], "url": api["url"], "tls": api["scheme"] == "https", "same_machine": same_machine,
            "api_key": worker.get("api_key")}


# -- keys and exposure -------------------------------------------------------------------------------------------


def check_admin_key(cfg, problems):
    admin = cfg.keep("admin_api_key", _read_secret(cfg, problems, "admin_api_key", ADMIN_KEY_MIN_LENGTH))
    if admin is None and "admin_api_key" not in cfg.refused:
        problems.add(_var("admin_api_key"), "must be set: without a control-plane key smg 1.13.0 lets anyone who "
                     "reaches the gateway (or holds the workers' API key) add, remove and flush workers; the role "
                     "refuses to deploy an open control plane")


def _worker_keys(cfg, problems):
    """``{key: [worker names]}`` of the workers' own sglang_server_api_key."""
    found = {}
    for worker in cfg.raw.get("workers") or []:
        if not isinstance(worker, dict) or blank(worker.get("api_key")):
            continue
        name = _shown(worker.get("name"), 60)
        value = worker.get("api_key")
        if not isinstance(value, str) or control_problem(value) or not _BEARER.fullmatch(value):
            problems.add("hostvars['%s'].sglang_server_api_key" % name, "must be printable ASCII without spaces to "
                         "be sent in an HTTP header (value not shown)")
            continue
        found.setdefault(value, []).append(name)
    return found


def check_worker_key(cfg, problems):
    """The one key smg sends to every worker (and its clients present): the variable's, else the workers' own."""
    explicit = cfg.keep("worker_api_key", _read_secret(cfg, problems, "worker_api_key"))
    worker_keys = _worker_keys(cfg, problems)
    key = explicit
    if explicit is not None:
        for value, names in sorted(worker_keys.items(), key=lambda kv: kv[1]):
            if value != explicit:
                cfg.refused.add("worker_api_key")
                problems.add(_var("worker_api_key"), "differs from the sglang_server_api_key of %s (values not "
                             "shown): smg sends one API key to every worker" % ", ".join(names))
    elif len(worker_keys) > 1:
        cfg.refused.add("worker_api_key")
        groups = sorted(worker_keys.values())
        problems.add(_var("worker_api_key"), "the workers' sglang_server_api_key values differ (%s; values not "
                     "shown), but smg sends one API key to every worker: give them one key"
                     % " vs ".join(", ".join(g) for g in groups))
    elif worker_keys:
        key = next(iter(worker_keys))
        keyless = [_shown(w.get("name"), 60) for w in cfg.raw.get("workers") or []
                   if isinstance(w, dict) and blank(w.get("api_key"))]
        if keyless:
            problems.warn(_var("worker_api_key"), "%s set no sglang_server_api_key; the gateway sends them the "
                          "other workers' key" % ", ".join(keyless))
    cfg.top["worker_api_key"] = key


def rule_distinct_keys(cfg, problems):
    admin, key = cfg.top["admin_api_key"], cfg.top["worker_api_key"]
    if admin is not None and key is not None and admin == key:
        problems.add(_var("admin_api_key"), "must differ from the workers' API key (values not shown): every "
                     "client of the gateway holds that one, and the control plane would be theirs")


def rule_exposure(cfg, problems):
    """Who can reach what: an open data plane (refused unless allowed), plain HTTP, the open /metrics, HTTPS workers
    without a CA."""
    host = ip_literal(cfg.top.get("host") or "")
    if cfg.top["worker_api_key"] is None and host is not None and not host.is_loopback:
        if cfg.top.get("allow_unauthenticated"):
            problems.warn(_var("host"), "%s serves the models to anyone who reaches it, without an API key "
                          "(allowed by sglang_gateway_allow_unauthenticated)" % host.compressed)
        elif "worker_api_key" not in cfg.refused:
            problems.add(_var("host"), "binds the non-loopback address %s without an API key, so anyone who can "
                         "reach the port can use the models: give the workers sglang_server_api_key (or set "
                         "sglang_gateway_worker_api_key), or set sglang_gateway_allow_unauthenticated: true"
                         % host.compressed)
    if host is not None and not host.is_loopback and cfg.top.get("tls_cert_path") is None:
        problems.warn(_var("tls_cert_path"), "clients send their API key to %s over plain HTTP; give the gateway a "
                      "certificate or keep it on a trusted network" % host.compressed)
    metrics = ip_literal(cfg.top.get("metrics_host") or "")
    if metrics is not None and not metrics.is_loopback:
        problems.warn(_var("metrics_host"), "the Prometheus endpoint on %s answers anyone without authentication "
                      "(worker URLs, request counts)" % metrics.compressed)
    if any(w["tls"] for w in cfg.workers) and cfg.top.get("worker_ca_path") is None:
        problems.warn(_var("worker_ca_path"), "HTTPS workers are verified against smg's built-in trust roots; set a "
                      "CA file for a private CA")


# The rules in the order their messages come; each stores what it normalised on the GatewayConfig, and later ones
# read it (the keys read the workers, the exposure rule the keys and the listeners).
RULES = (
    check_listeners,     # host, port, metrics_host, metrics_port
    check_policy,
    check_health,        # health_check_*, health_*_threshold
    check_retries,       # retry_*
    check_shutdown,
    check_logging,       # log_level, log_json, audit
    check_open_access,   # allow_unauthenticated
    check_tls_files,     # worker_ca_path, tls_cert_path, tls_key_path
    check_service,       # unit_name, user, group, config_dir, venv
    check_args,
    check_workers,
    check_admin_key,
    check_worker_key,
    rule_distinct_keys,
    rule_exposure,
)


def _analyse(raw):
    """One pass over ``raw``: the normalised GatewayConfig and its problems and warnings."""
    cfg = GatewayConfig(raw)
    problems = Problems()
    run_rules(RULES, cfg, problems)
    return cfg, problems


def _check(raw):
    """The problems and warnings of ``raw`` (``errors``, ``warnings``)."""
    return _analyse(raw)[1]


# the name the one pass had as a class (the tests read its errors and warnings)
_Check = _check


def validate_gateway_config(cfg):
    """Return every problem of ``cfg`` (empty when it is fine)."""
    return list(_check(cfg).errors)


def _option(argv, option, value):
    """``--flag value``; ``--flag=value`` when the value starts with '-', so argparse cannot take it for a flag."""
    text = str(value)
    if text.startswith("-"):
        argv.append("%s=%s" % (option, text))
    else:
        argv.extend([option, text])


def render_gateway(cfg):
    """Turn a valid ``cfg`` into what the unit needs; raise ``GatewayConfigError`` listing every problem."""
    config, problems = _analyse(cfg)
    if problems.errors:
        raise GatewayConfigError(problems.errors)
    top = config.top
    urls = [w["url"] for w in config.workers]
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
        "workers": [{"name": w["name"], "url": w["url"]} for w in config.workers],
        "worker_urls": urls,
        "base_url": base,
        "readiness_url": base + "/readiness",
        "workers_url": base + "/workers",
        "metrics_url": "http://%s:%d/metrics" % (url_host(probe_address(top["metrics_host"])), top["metrics_port"]),
        "privileged_port": top["port"] < 1024 or top["metrics_port"] < 1024,
        "authenticated_data_plane": top["worker_api_key"] is not None,
        "warnings": list(problems.warnings),
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
