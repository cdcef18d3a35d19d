# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``sglang_args``: what the unit and the role's probes are made of: the environment (and the log redaction hook
it must keep), P2P, ``/metrics``, the unit's names and paths, and the readiness probe's path, TLS and URL."""

from __future__ import annotations

import re

from ansible_collections.llmserve.sglang.plugins.plugin_utils.values import blank
from ansible_collections.llmserve.sglang.plugins.plugin_utils.systemd_unit import (
    ACCOUNT_NAME,
    ENV_NAME,
    UNIT_NAME,
    control_problem,
    printable,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_flags import SPELLINGS
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args_common import (
    _describe,
    no_control,
    normalise_flag_name,
    option_for,
    path_ok,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args_parallel import IFNAME_ENV
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_cache import CACHE_ENV_NAMES

# What sglang_server_p2p: off adds.
P2P_OFF_SWITCHES = ("disable_custom_all_reduce", "enforce_disable_flashinfer_allreduce_fusion")
P2P_OFF_ENV = {"NCCL_P2P_DISABLE": "1"}

# Environment names the role fills from dedicated variables.
HF_TOKEN_ENV_NAMES = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HUGGINGFACE_HUB_TOKEN")

# Names in the user's env that would switch the log redaction hook (a sitecustomize found through the
# role's PYTHONPATH) off, so that SGLang's log carries the API key again. PYTHONHOME swaps the library
# Python imports ``site`` from; the hook's own variable tells it where the --config file with the key is.
# (PYTHONNOUSERSITE, PYTHONSAFEPATH and PYTHONSTARTUP leave PYTHONPATH and sitecustomize alone.)
REDACTION_HOOK_ENV = {
    "PYTHONPATH": "replaces the path of the log redaction hook (sitecustomize), which masks the API key and "
                  "HF token in SGLang's log",
    "PYTHONHOME": "makes Python load its library, and so the code that runs the log redaction hook "
                  "(sitecustomize), from elsewhere",
    "LLMSERVE_REDACT_CONFIG": "tells the log redaction hook (sitecustomize) where to read the secrets it masks",
}

# Flags that switch SGLang's HTTP server to TLS (both are needed).
TLS_FLAGS = ("ssl_certfile", "ssl_keyfile")

# A readiness path: one leading '/', then RFC 3986 path characters or %XX, without '@' and '\'.
_URL_PATH = re.compile(r"/(?!/)(?:[A-Za-z0-9._~!$&'()*+,;=:/-]|%[0-9A-Fa-f]{2})*")


def check_metrics(cfg, problems):
    """``metrics: true`` mounts SGLang's Prometheus endpoint (``--enable-metrics``); ``args`` may not say no."""
    raw = cfg.raw.get("metrics")
    if raw is None:
        return
    if not isinstance(raw, bool):
        problems.add(cfg.var("metrics"), "must be a boolean, got %s" % _describe(raw),
                     "write true to serve /metrics, false to leave it to %s" % cfg.var("args"))
        return
    if not raw:
        return
    if cfg.args.get("enable_metrics") is False:
        problems.add(cfg.arg_var("enable_metrics"), "is false while %s is true" % cfg.var("metrics"),
                     "remove %s: %s turns the endpoint on" % (cfg.arg_var("enable_metrics"), cfg.var("metrics")))
        return
    cfg.args["enable_metrics"] = True
    cfg.rendered["enable_metrics"] = []

# -- env and p2p -----------------------------------------------------------------------------------


def check_env(cfg, problems):
    # The role's own environment first; the user's env adds to it and wins, except for the names that
    # would switch the log redaction hook off. Without base_env (older callers pass one merged dict)
    # those names cannot be told apart from the role's own and are not refused.
    base = cfg.raw.get("base_env")
    if base not in (None, {}):
        _env_entries(cfg, problems, base, "__%sbase_env" % cfg.prefix, protect=False)
    _env_entries(cfg, problems, cfg.raw.get("env"), cfg.var("env"), protect="base_env" in cfg.raw)


def _env_entries(cfg, problems, env, label, protect):
    if env is None or env == {}:
        return
    if not isinstance(env, dict):
        problems.add(label, "must be a dict of environment variable names to values, got %s" % _describe(env))
        return
    for name, raw in env.items():
        variable = "%s.%s" % (label, printable(str(name)))
        if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
            problems.add(variable, "is not a valid environment variable name",
                         "use letters, digits and '_' and do not start with a digit")
            continue
        if name in HF_TOKEN_ENV_NAMES:
            problems.add(variable, "would put the Hugging Face token into the unit file",
                         "set %s instead (kept in a 0600 EnvironmentFile)" % cfg.var("hf_token"))
            continue
        if protect and name in REDACTION_HOOK_ENV:
            problems.add(variable, "is refused: it %s" % REDACTION_HOOK_ENV[name],
                         "remove it (the role sets %s itself)" % name if name != "PYTHONPATH" else
                         "remove it; install extra modules into the server's virtualenv (or a .pth file there) "
                         "instead")
            continue
        if protect and name in CACHE_ENV_NAMES:
            problems.add(variable, "is refused: the unit points every compile and JIT cache at its own directory "
                                   "per SGLang version and architecture, and a value here would share kernels "
                                   "between versions",
                         "remove it; set %s to move the caches" % cfg.var("cache_root"))
            continue
        if name in IFNAME_ENV and cfg.top.get("node_ifname"):
            problems.add(variable, "conflicts with %s, which sets %s" % (cfg.var("node_ifname"), " and ".join(IFNAME_ENV)),
                         "remove it from %s and set %s instead" % (cfg.var("env"), cfg.var("node_ifname")))
            continue
        if name == "CUDA_VISIBLE_DEVICES" and cfg.top.get("gpus"):
            problems.add(variable, "conflicts with %s, which sets CUDA_VISIBLE_DEVICES" % cfg.var("gpus"),
                         "remove it from %s" % cfg.var("env"))
            continue
        if isinstance(raw, bool):
            text = "1" if raw else "0"
        elif isinstance(raw, (str, int, float)):
            text = str(raw)
        else:
            problems.add(variable, "must be a string or a number, got %s" % _describe(raw))
            continue
        if no_control(cfg, problems, variable, text):
            cfg.env[name] = text


def check_p2p(cfg, problems):
    raw = cfg.raw.get("p2p", "auto")
    variable = cfg.var("p2p")
    if raw is None:
        raw = "auto"
    if isinstance(raw, bool):  # YAML 1.1 reads unquoted on/off as booleans
        mode = "on" if raw else "off"
    elif isinstance(raw, str) and raw.strip().lower() in ("auto", "on", "off"):
        mode = raw.strip().lower()
    else:
        problems.add(variable, "must be auto, on or off, got %s" % _describe(raw),
                     "use off on hosts where GPU peer-to-peer transfers do not work")
        return
    if mode == "auto":
        ok = cfg.raw.get("p2p_ok")
        if ok is not None and not isinstance(ok, bool):
            problems.add(cfg.var("p2p_ok"), "must be a boolean or null (the IOMMU preflight result), got %s"
                         % _describe(ok))
            return
        mode = "off" if ok is False else "on"
    cfg.p2p = mode
    if mode != "off":
        return
    for dest in P2P_OFF_SWITCHES:
        if cfg.args.get(dest) is False:
            problems.add(cfg.arg_var(dest), "is false but %s is off, which needs %s" % (variable, option_for(dest)),
                         "remove the key (the role adds the flag)")
    for name, value in P2P_OFF_ENV.items():
        if name in cfg.env and cfg.env[name] != value:
            problems.add("%senv.%s" % (cfg.prefix, name), "is %r but %s is off, which needs %s=%s"
                         % (cfg.env[name], variable, name, value), "remove the key (the role sets it)")

# -- unit and readiness probe (optional keys) --------------------------------------------------------


def _given(cfg, problems, name):
    raw = cfg.raw.get(name)
    if blank(raw):
        return None
    if not isinstance(raw, str):
        problems.add(cfg.var(name), "must be a string, got %s" % _describe(raw))
        return None
    return raw


def check_unit(cfg, problems):
    """The service settings that the unit file and the role's file names are built from."""
    unit_name = _given(cfg, problems, "unit_name")
    if unit_name is not None and no_control(cfg, problems, cfg.var("unit_name"), unit_name) \
            and not UNIT_NAME.fullmatch(unit_name):
        problems.add(cfg.var("unit_name"), "must be a plain systemd unit name (letters, digits, '_', '.', ':' "
                     "and '-'; no '/', '@' or '.service'), got %r" % unit_name, "e.g. sglang or sglang-qwen")
    for name in ("user", "group"):
        account = _given(cfg, problems, name)
        if account is not None and no_control(cfg, problems, cfg.var(name), account) \
                and not ACCOUNT_NAME.fullmatch(account):
            problems.add(cfg.var(name), "must be a user or group name (letters, digits, '_', '.' and '-', not "
                         "starting with a digit, '.' or '-', at most 32 characters), got %r" % account)
    for name in ("home", "config_dir", "venv", "python"):
        path = _given(cfg, problems, name)
        if path is not None:
            path_ok(cfg, problems, cfg.var(name), path)


def check_probe(cfg, problems):
    """How the role probes readiness: a plain path on this server, over TLS when SGLang serves TLS."""
    ready_path = cfg.raw.get("ready_path")
    if ready_path is not None:
        problem = url_path_problem(ready_path)
        if problem:
            problems.add(cfg.var("ready_path"), problem, "use a path such as /health")
    ca_path = _given(cfg, problems, "probe_ca_path")
    if ca_path is not None:
        path_ok(cfg, problems, cfg.var("probe_ca_path"), ca_path)
    validate = cfg.raw.get("probe_validate_certs", True)
    if validate is None:
        validate = True
    if not isinstance(validate, bool):
        problems.add(cfg.var("probe_validate_certs"), "must be a boolean, got %s" % _describe(validate))
        validate = True
    tls = [dest for dest in TLS_FLAGS if not blank(cfg.args.get(dest))]
    if len(tls) == 1:
        missing = [dest for dest in TLS_FLAGS if dest not in tls][0]
        problems.add(cfg.arg_var(tls[0]), "SGLang serves TLS only with both %s and %s"
                     % (option_for("ssl_certfile"), option_for("ssl_keyfile")),
                     "set %s as well, or remove %s" % (cfg.arg_var(missing), cfg.arg_var(tls[0])))
    if not tls:
        if ca_path is not None:
            problems.warn(cfg.var("probe_ca_path"), "has no effect: SGLang serves plain HTTP (no ssl_certfile "
                          "in %s)" % cfg.var("args"))
    elif not validate:
        problems.warn(cfg.var("probe_validate_certs"), "is false: the readiness probe sends the API key over "
                      "TLS without checking the server's certificate (no safer than plain HTTP on this host)")


def url_path_problem(path):
    """The rule a readiness path breaks, or None.

    It is appended to ``scheme://host:port``, so anything but a plain absolute path could point the probe
    (and the API key it sends) elsewhere: ``@evil/`` makes the host part user info, ``//evil`` and ``\\``
    look like a host to some parsers, and ``?``/``#`` would cut the path. Allowed: one leading ``/``, then
    letters, digits, ``-._~!$&'()*+,;=:/`` and ``%XX`` escapes.
    """
    if not isinstance(path, str):
        return "must be a string, got %s" % _describe(path)
    problem = control_problem(path)
    if problem:
        return problem
    if not _URL_PATH.fullmatch(path):
        return ("must be a plain absolute URL path (one leading '/', then letters, digits, -._~!$&'()*+,;=:/ or "
                "%%XX; no '@', '\\', '?', '#', whitespace or scheme), got %r" % path)
    return None


def serves_tls(args):
    """True when ``args`` (``sglang_server_args``, any flag spelling) makes SGLang serve HTTPS."""
    if not isinstance(args, dict):
        return False
    for key, value in args.items():
        if isinstance(key, str) and SPELLINGS.get(normalise_flag_name(key)) == "ssl_certfile" \
                and not blank(value) and value is not False:
            return True
    return False


def probe_base_url(host, port, args=None):
    """``scheme://address:port`` at which the role probes its own server: ``addresses.probe_url`` (the probe rule,
    one place for every address of the fleet; imported here lazily, addresses imports this module)."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.addresses import (  # pylint: disable=import-outside-toplevel
        probe_url,
    )

    return probe_url(host, port, args)
