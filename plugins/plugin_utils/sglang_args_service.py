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
    normalise_flag_name,
    option_for,
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


class _ServiceRules(object):
    """The environment, P2P, metrics, unit and probe checks; a part of ``sglang_args._Config``."""

    def _check_metrics(self):
        """``metrics: true`` mounts SGLang's Prometheus endpoint (``--enable-metrics``); ``args`` may not say no."""
        raw = self.cfg.get("metrics")
        if raw is None:
            return
        if not isinstance(raw, bool):
            self.err(self.var("metrics"), "must be a boolean, got %s" % _describe(raw),
                     "write true to serve /metrics, false to leave it to %s" % self.var("args"))
            return
        if not raw:
            return
        if self.args.get("enable_metrics") is False:
            self.err(self.arg_var("enable_metrics"), "is false while %s is true" % self.var("metrics"),
                     "remove %s: %s turns the endpoint on" % (self.arg_var("enable_metrics"), self.var("metrics")))
            return
        self.args["enable_metrics"] = True
        self.rendered["enable_metrics"] = []

    # -- env and p2p -----------------------------------------------------------------------------------

    def _check_env(self):
        # The role's own environment first; the user's env adds to it and wins, except for the names that
        # would switch the log redaction hook off. Without base_env (older callers pass one merged dict)
        # those names cannot be told apart from the role's own and are not refused.
        base = self.cfg.get("base_env")
        if base not in (None, {}):
            self._env_entries(base, "__%sbase_env" % self.prefix, protect=False)
        self._env_entries(self.cfg.get("env"), self.var("env"), protect="base_env" in self.cfg)

    def _env_entries(self, env, label, protect):
        if env is None or env == {}:
            return
        if not isinstance(env, dict):
            self.err(label, "must be a dict of environment variable names to values, got %s" % _describe(env))
            return
        for name, raw in env.items():
            variable = "%s.%s" % (label, printable(str(name)))
            if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
                self.err(variable, "is not a valid environment variable name",
                         "use letters, digits and '_' and do not start with a digit")
                continue
            if name in HF_TOKEN_ENV_NAMES:
                self.err(variable, "would put the Hugging Face token into the unit file",
                         "set %s instead (kept in a 0600 EnvironmentFile)" % self.var("hf_token"))
                continue
            if protect and name in REDACTION_HOOK_ENV:
                self.err(variable, "is refused: it %s" % REDACTION_HOOK_ENV[name],
                         "remove it (the role sets %s itself)" % name if name != "PYTHONPATH" else
                         "remove it; install extra modules into the server's virtualenv (or a .pth file there) "
                         "instead")
                continue
            if protect and name in CACHE_ENV_NAMES:
                self.err(variable, "is refused: the unit points every compile and JIT cache at its own directory "
                                   "per SGLang version and architecture, and a value here would share kernels "
                                   "between versions",
                         "remove it; set %s to move the caches" % self.var("cache_root"))
                continue
            if name in IFNAME_ENV and self.top.get("node_ifname"):
                self.err(variable, "conflicts with %s, which sets %s" % (self.var("node_ifname"), " and ".join(IFNAME_ENV)),
                         "remove it from %s and set %s instead" % (self.var("env"), self.var("node_ifname")))
                continue
            if name == "CUDA_VISIBLE_DEVICES" and self.top.get("gpus"):
                self.err(variable, "conflicts with %s, which sets CUDA_VISIBLE_DEVICES" % self.var("gpus"),
                         "remove it from %s" % self.var("env"))
                continue
            if isinstance(raw, bool):
                text = "1" if raw else "0"
            elif isinstance(raw, (str, int, float)):
                text = str(raw)
            else:
                self.err(variable, "must be a string or a number, got %s" % _describe(raw))
                continue
            if self._no_control(variable, text):
                self.env[name] = text

    def _check_p2p(self):
        raw = self.cfg.get("p2p", "auto")
        variable = self.var("p2p")
        if raw is None:
            raw = "auto"
        if isinstance(raw, bool):  # YAML 1.1 reads unquoted on/off as booleans
            mode = "on" if raw else "off"
        elif isinstance(raw, str) and raw.strip().lower() in ("auto", "on", "off"):
            mode = raw.strip().lower()
        else:
            self.err(variable, "must be auto, on or off, got %s" % _describe(raw),
                     "use off on hosts where GPU peer-to-peer transfers do not work")
            return
        if mode == "auto":
            ok = self.cfg.get("p2p_ok")
            if ok is not None and not isinstance(ok, bool):
                self.err(self.var("p2p_ok"), "must be a boolean or null (the IOMMU preflight result), got %s"
                         % _describe(ok))
                return
            mode = "off" if ok is False else "on"
        self.p2p = mode
        if mode != "off":
            return
        for dest in P2P_OFF_SWITCHES:
            if self.args.get(dest) is False:
                self.err(self.arg_var(dest), "is false but %s is off, which needs %s" % (variable, option_for(dest)),
                         "remove the key (the role adds the flag)")
        for name, value in P2P_OFF_ENV.items():
            if name in self.env and self.env[name] != value:
                self.err("%senv.%s" % (self.prefix, name), "is %r but %s is off, which needs %s=%s"
                         % (self.env[name], variable, name, value), "remove the key (the role sets it)")

    # -- unit and readiness probe (optional keys) --------------------------------------------------------

    def _given(self, name):
        raw = self.cfg.get(name)
        if blank(raw):
            return None
        if not isinstance(raw, str):
            self.err(self.var(name), "must be a string, got %s" % _describe(raw))
            return None
        return raw

    def _check_unit(self):
        """The service settings that the unit file and the role's file names are built from."""
        unit_name = self._given("unit_name")
        if unit_name is not None and self._no_control(self.var("unit_name"), unit_name) \
                and not UNIT_NAME.fullmatch(unit_name):
            self.err(self.var("unit_name"), "must be a plain systemd unit name (letters, digits, '_', '.', ':' "
                     "and '-'; no '/', '@' or '.service'), got %r" % unit_name, "e.g. sglang or sglang-qwen")
        for name in ("user", "group"):
            account = self._given(name)
            if account is not None and self._no_control(self.var(name), account) \
                    and not ACCOUNT_NAME.fullmatch(account):
                self.err(self.var(name), "must be a user or group name (letters, digits, '_', '.' and '-', not "
                         "starting with a digit, '.' or '-', at most 32 characters), got %r" % account)
        for name in ("home", "config_dir", "venv", "python"):
            path = self._given(name)
            if path is not None:
                self._path_ok(self.var(name), path)

    def _check_probe(self):
        """How the role probes readiness: a plain path on this server, over TLS when SGLang serves TLS."""
        ready_path = self.cfg.get("ready_path")
        if ready_path is not None:
            problem = url_path_problem(ready_path)
            if problem:
                self.err(self.var("ready_path"), problem, "use a path such as /health")
        ca_path = self._given("probe_ca_path")
        if ca_path is not None:
            self._path_ok(self.var("probe_ca_path"), ca_path)
        validate = self.cfg.get("probe_validate_certs", True)
        if validate is None:
            validate = True
        if not isinstance(validate, bool):
            self.err(self.var("probe_validate_certs"), "must be a boolean, got %s" % _describe(validate))
            validate = True
        tls = [dest for dest in TLS_FLAGS if not blank(self.args.get(dest))]
        if len(tls) == 1:
            missing = [dest for dest in TLS_FLAGS if dest not in tls][0]
            self.err(self.arg_var(tls[0]), "SGLang serves TLS only with both %s and %s"
                     % (option_for("ssl_certfile"), option_for("ssl_keyfile")),
                     "set %s as well, or remove %s" % (self.arg_var(missing), self.arg_var(tls[0])))
        if not tls:
            if ca_path is not None:
                self.warn(self.var("probe_ca_path"), "has no effect: SGLang serves plain HTTP (no ssl_certfile "
                          "in %s)" % self.var("args"))
        elif not validate:
            self.warn(self.var("probe_validate_certs"), "is false: the readiness probe sends the API key over "
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
