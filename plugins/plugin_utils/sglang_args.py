# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Static checks and command-line rendering for an SGLang server configuration.

The input ``cfg`` is the ``sglang_server`` role's variables without their prefix::

    model_path, served_model_name, host, port, tp_size, gpus, speculative, args, env, base_env,
    api_key, hf_token, p2p, p2p_ok, allow_unauthenticated, config_path, version,
    unit_name, user, group, home, config_dir, venv, python,
    ready_path, probe_ca_path, probe_validate_certs,
    nnodes, node_rank, dist_init_addr, node_ifname

``env`` is the user's environment (``sglang_server_env``); ``base_env`` the role's own
(``__sglang_server_base_env``, which puts the log redaction hook on ``PYTHONPATH``): the user's values
win, except for the names that would switch the hook off, which are refused in ``env``. The keys of
the second and third line are optional and only checked when given (they reach the unit file or the
readiness probe, not SGLang's command line). The keys of the last line describe one node of a multi-node
server; the controller computes them from the node group (``sglang_nodes.node_group_plan``) and they
render ``--nnodes``/``--node-rank``/``--dist-init-addr`` and ``NCCL_SOCKET_IFNAME``/``GLOO_SOCKET_IFNAME``.

Every text that reaches the unit, the ``--config`` file, the environment file or the command line is
refused when it holds a control character (see ``systemd_unit``).

Everything here works without the model, without a GPU and without SGLang installed: the flag
table of the pinned release lives in ``sglang_flags`` (generated from that release's own parser).
``version`` is the SGLang version the role installs. When it is not the table's, the table cannot say
which flags exist: a flag the table does not know, or a value outside the table's choices, is a
warning and goes to the command line as written; the installed SGLang's own parser, which the role
runs on the rendered command line before anything live changes, decides. The rules follow what SGLang's own
resolution pipeline enforces (or silently rewrites), so a bad setting is reported by Ansible
before a unit is changed instead of by a crash-looping service.

Public functions:

``validate_server_config(cfg, prefix="sglang_server_") -> list[str]``
    every problem found; each message names the variable, the rule and the fix.
``server_config_warnings(cfg, prefix="sglang_server_") -> list[str]``
    legal but surprising settings (SGLang rewrites them or they are deprecated).
``render_server_argv(cfg, prefix="sglang_server_") -> dict``
    ``argv``/``config``/``env``/``env_file``/``p2p``/``warnings``/``requested_backend``/``expected_server_info``;
    raises ``SGLangConfigError``.
``expected_server_info(speculative, args=None) -> dict``
    the speculative fields ``/server_info`` must report for ``sglang_server_speculative`` (and ``args``).

Standard library only, except ``netaddr`` (controller side) which is imported lazily for the host
check and reported as a clear error when missing.
"""

from __future__ import annotations

import difflib
import json
import re

from ansible_collections.llmserve.sglang.plugins.plugin_utils.values import as_int, blank
from ansible_collections.llmserve.sglang.plugins.plugin_utils.systemd_unit import (
    ACCOUNT_NAME,
    ENV_NAME,
    UNIT_NAME,
    control_problem,
    path_problem,
    printable,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_flags import (
    DEPRECATED_FLAGS,
    FLAGS,
    REMOVED_FLAGS,
    SGLANG_VERSION,
    SPELLINGS,
    VALUE_HINTS,
)

DEFAULT_PREFIX = "sglang_server_"

# Names SpeculativeAlgorithm.from_string accepts in SGLang 0.5.23 (NEXTN is an alias of EAGLE).
SPECULATIVE_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH", "DSPARK", "UNO", "FROZEN_KV_MTP")
# Algorithms handled by SGLang's EAGLE-family code path (steps/topk/draft-token rules apply).
EAGLE_FAMILY = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE")
# Algorithms that keep --enable-mixed-chunk (SGLang turns it off for the others).
MIXED_CHUNK_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN", "DFLASH", "DSPARK")
# --speculative-adaptive: the algorithms that adapt (NEXTN resolves to EAGLE first) and the union of the candidate
# steps of SGLang 0.5.23's DEFAULT_ADAPTIVE_CONFIG (srt/speculative/adaptive_spec_params.py)
ADAPTIVE_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN")
ADAPTIVE_DEFAULT_STEPS = (0, 1, 3, 5, 7)
# model paths or names of the hybrid Qwen3.5 / Qwen3-Next architectures (Qwen3NextForCausalLM,
# Qwen3_5ForConditionalGeneration, Qwen3_5MoeForConditionalGeneration) that SGLang's qwen3_5 override covers
HYBRID_QWEN_MODEL = re.compile(r"qwen3(?:[._-]?5|[._-]?next)", re.IGNORECASE)
# speculative_algorithm as /server_info reports it where SGLang 0.5.23 renames it at start
# (srt/arg_groups/speculative_hook.py, _resolve_speculative_algorithm_alias): NEXTN (MTP heads) runs on the EAGLE worker.
REPORTED_ALGORITHMS = {"NEXTN": "EAGLE"}
# Common names for an algorithm that SGLang does not know under that name.
ALGORITHM_HINTS = {
    "MTP": "NEXTN",
    "NEXT_N": "NEXTN",
    "NEXT-N": "NEXTN",
    "EAGLE-3": "EAGLE3",
    "EAGLE_3": "EAGLE3",
    "EAGLE2": "EAGLE",
    "N-GRAM": "NGRAM",
    "LOOKAHEAD": "NGRAM",
    "DRAFT_MODEL": "STANDALONE",
}

# sglang_server_speculative keys -> SGLang dest, in rendering order.
SPECULATIVE_KEYS = (
    ("algorithm", "speculative_algorithm"),
    ("num_steps", "speculative_num_steps"),
    ("eagle_topk", "speculative_eagle_topk"),
    ("num_draft_tokens", "speculative_num_draft_tokens"),
    ("draft_model_path", "speculative_draft_model_path"),
)

# SGLang dest -> role variable (without prefix) that owns it; such flags are refused in ``args``.
DEDICATED_FLAGS = {
    "model_path": "model_path",
    "served_model_name": "served_model_name",
    "host": "host",
    "port": "port",
    "tp_size": "tp_size",
    "api_key": "api_key",
}
DEDICATED_FLAGS.update((dest, "speculative." + key) for key, dest in SPECULATIVE_KEYS)

# Multi-node flags: computed from the inventory's node group (cfg keys of the same name); dest -> the role
# variable that decides it. Refused in ``args``.
MULTINODE_FLAGS = {
    "nnodes": "node_group",
    "node_rank": "node_rank",
    "dist_init_addr": "dist_init_host",
}
# Environment the node's interface (cfg key node_ifname) sets; refused in ``env`` on a multi-node server.
IFNAME_ENV = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")
# What the multi-node settings are made of (for the messages).
_MULTINODE_HINT = ("the role derives --nnodes, --node-rank and --dist-init-addr from the inventory: put the hosts "
                   "in one group, set sglang_server_node_group to its name on them and, where needed, "
                   "sglang_server_node_rank, sglang_server_dist_init_host and sglang_server_dist_init_port")

# Flags the role manages itself and that make no sense in ``args``.
MANAGED_FLAGS = {
    "config": "the role writes its own --config file (it carries the API key); put the settings in this dict instead",
}

# Secrets: never on the command line, written to the --config YAML (dash-form keys) instead.
SECRET_FLAGS = ("api_key", "admin_api_key", "ssl_keyfile_password")

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

# Integer flags that must be at least 1 (resp. 0) when given.
POSITIVE_INT_FLAGS = (
    "tp_size", "pp_size", "dp_size", "attn_dp_size", "attn_cp_size", "moe_dp_size", "dcp_size", "ep_size",
    "nnodes", "tokenizer_worker_num", "detokenizer_worker_num", "page_size", "max_running_requests",
    "gpu_id_step", "mamba_track_interval",
    "speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens",
)
NON_NEGATIVE_INT_FLAGS = ("node_rank", "base_gpu_id", "mamba_cache_philox_rounds")

LOG_LEVELS = ("CRITICAL", "FATAL", "ERROR", "WARN", "WARNING", "INFO", "DEBUG", "NOTSET")

# All patterns are used with fullmatch: '$' would also match before a trailing newline.
_HUMAN_INT = re.compile(r"([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?")
# What argparse reads as a negative number (and so as a value, not an option) in a list of values.
_NEGATIVE_NUMBER = re.compile(r"-[0-9]+|-[0-9]*\.[0-9]+")
# A readiness path: one leading '/', then RFC 3986 path characters or %XX, without '@' and '\'.
_URL_PATH = re.compile(r"/(?!/)(?:[A-Za-z0-9._~!$&'()*+,;=:/-]|%[0-9A-Fa-f]{2})*")
# Linux network interface names: at most 15 bytes, no '/' or whitespace.
_IFNAME = re.compile(r"[A-Za-z0-9_.:@-]{1,15}")

_UNSET = object()

# SGLang turns each --config key into '--key' followed by the value as a separate argument.
_DASH_SECRET = ("must not start with '-' (value not shown): SGLang passes the --config file's values to its parser as "
                "separate arguments, which reads such a value as an option and does not start")


def _parse_host_port(text):
    """``(host, port)`` from ``IPv4:PORT`` or ``[IPv6]:PORT``, or the rule it breaks (a string)."""
    if not isinstance(text, str):
        return "it must be a string HOST:PORT"
    problem = control_problem(text)
    if problem:
        return problem
    text = text.strip()
    match = re.fullmatch(r"\[([^\]]+)\]:([0-9]+)", text) or re.fullmatch(r"([^:\[\]]+):([0-9]+)", text)
    if not match:
        return "it must be IPv4:PORT or [IPv6]:PORT (SGLang needs IPv6 addresses in brackets)"
    host, port = match.group(1), int(match.group(2))
    try:
        import netaddr  # pylint: disable=import-outside-toplevel
    except ImportError:
        return "it cannot be checked because the Python package 'netaddr' is missing on the controller"
    try:
        address = netaddr.IPAddress(host)
    except (netaddr.AddrFormatError, ValueError, TypeError):
        return "the host part %r is not an IP address" % host
    if address.version == 6 and not text.startswith("["):
        return "an IPv6 address must be in brackets"
    if not 1 <= port <= 65535:
        return "the port %d is not between 1 and 65535" % port
    return host, port


class SGLangConfigError(ValueError):
    """Raised by ``render_server_argv`` when the configuration does not validate."""

    def __init__(self, errors):
        self.errors = list(errors)
        super(SGLangConfigError, self).__init__(
            "invalid SGLang server configuration:\n- " + "\n- ".join(self.errors)
        )


def normalise_flag_name(name):
    """``--tp-size``, ``tp-size`` and ``tp_size`` all become ``tp_size``."""
    return str(name).strip().lstrip("-").replace("-", "_")


def option_for(dest):
    """Main command-line spelling of a dest (``tp_size`` -> ``--tp-size``)."""
    return FLAGS[dest]["option"]


def _suggest(word, candidates, n=3):
    matches = difflib.get_close_matches(word, list(candidates), n=n, cutoff=0.75)
    if not matches:
        return ""
    return " (did you mean %s?)" % " or ".join(matches)


def _as_int(value):
    """``value`` as an int, or ``_UNSET`` when it is not an integer (booleans are not; 4.0 is most likely a typo)."""
    return as_int(value, _UNSET)


def _as_float(value):
    if isinstance(value, bool):
        return _UNSET
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return _UNSET
    return _UNSET


def _describe(value):
    if isinstance(value, bool):
        return "boolean %s" % ("true" if value else "false")
    if isinstance(value, str):
        return "%r" % (value,)
    if isinstance(value, dict):
        return "a dict"
    if isinstance(value, (list, tuple)):
        return "a list"
    return "%s %r" % (type(value).__name__, value)


def _json_text(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


class _Config(object):
    """One pass over ``cfg``: collects errors/warnings and the normalised values."""

    def __init__(self, cfg, prefix):
        self.prefix = prefix
        self.errors = []
        self.warnings = []
        self.cfg = cfg if isinstance(cfg, dict) else {}
        if not isinstance(cfg, dict):
            self.errors.append("%s*: the server configuration must be a dict of role variables, got %s"
                               % (prefix, _describe(cfg)))
        self.top = {}       # role variable -> normalised value (None = unset)
        self.spec = {}      # speculative key -> normalised value
        self.args = {}      # dest -> normalised value (None/False dropped later)
        self.arg_keys = {}  # dest -> key as the user wrote it
        self.rendered = {}  # dest -> list of argv tokens after the option (None = bare switch)
        self.options = {}   # name -> option, for flags the table does not know (other SGLang version)
        version = self.cfg.get("version")
        version = "" if blank(version) else str(version).strip()
        # None: the table is the pinned release's (or no version was given), so it is the authority
        self.other_version = version if version and version.split("+", maxsplit=1)[0] != SGLANG_VERSION else None
        self.env = {}
        self.p2p = "on"
        self._run()

    # -- helpers ---------------------------------------------------------------------------------------

    def var(self, name):
        return self.prefix + name

    def arg_var(self, dest):
        return "%sargs.%s" % (self.prefix, self.arg_keys.get(dest, dest))

    def err(self, variable, rule, fix=None):
        self.errors.append("%s: %s%s" % (variable, rule, "; " + fix if fix else ""))

    def warn(self, variable, text):
        self.warnings.append("%s: %s" % (variable, text))

    def value(self, dest, default=None):
        """Effective normalised value of a SGLang dest, from a dedicated variable or ``args``."""
        if dest in MULTINODE_FLAGS:
            got = self.top.get(dest)
            return default if got is None else got
        owner = DEDICATED_FLAGS.get(dest)
        if owner is not None:
            if owner.startswith("speculative."):
                got = self.spec.get(owner.split(".", 1)[1])
            else:
                got = self.top.get(owner)
            return default if got is None else got
        got = self.args.get(dest)
        return default if got is None else got

    def where(self, dest):
        if dest in MULTINODE_FLAGS:
            return self.var(MULTINODE_FLAGS[dest])
        owner = DEDICATED_FLAGS.get(dest)
        if owner is not None:
            return self.var(owner)
        if dest in self.args:
            return self.arg_var(dest)
        return "%sargs.%s" % (self.prefix, dest)

    # -- top-level variables -----------------------------------------------------------------------------

    def _run(self):
        self._check_model()
        self._check_network()
        self._check_parallel()
        self._check_multinode()
        self._check_secrets()
        self._check_speculative()
        self._check_args()
        self._check_metrics()
        self._check_env()
        self._check_p2p()
        self._check_unit()
        self._check_probe()
        if not self.errors:
            self._check_cross_rules()

    def _check_model(self):
        model_path = self.cfg.get("model_path")
        if blank(model_path):
            self.err(self.var("model_path"), "is required (SGLang's --model-path)",
                     "set it to a local checkpoint directory or a Hugging Face repository id")
        elif not isinstance(model_path, str):
            self.err(self.var("model_path"), "must be a string, got %s" % _describe(model_path))
        elif self._no_control(self.var("model_path"), model_path):
            self.top["model_path"] = model_path.strip()

        name = self.cfg.get("served_model_name")
        if not blank(name):
            if not isinstance(name, str):
                self.err(self.var("served_model_name"), "must be a string, got %s" % _describe(name))
            elif ":" in name:
                self.err(self.var("served_model_name"),
                         "must not contain ':' (SGLang rejects it at startup), got %r" % name,
                         "use another separator, e.g. %r" % name.replace(":", "-"))
            elif self._no_control(self.var("served_model_name"), name):
                self.top["served_model_name"] = name.strip()

        config_path = self.cfg.get("config_path")
        if not blank(config_path):
            if not isinstance(config_path, str) or not config_path.lower().endswith((".yaml", ".yml")):
                self.err(self.var("config_path"), "SGLang only reads a --config file ending in .yaml or .yml, got %s"
                         % _describe(config_path), "use a path like /etc/sglang/sglang.yaml")
            elif self._path_ok(self.var("config_path"), config_path):
                self.top["config_path"] = config_path

    def _check_network(self):
        host = self.cfg.get("host")
        self.top["host_loopback"] = True
        if not blank(host):
            if not isinstance(host, str):
                self.err(self.var("host"), "must be an IP address string, got %s" % _describe(host))
            else:
                self._check_host(host.strip())
        self._dedicated_value("port", self.var("port"), self.cfg.get("port"), "top")

        allow = self.cfg.get("allow_unauthenticated", False)
        if allow is None:
            allow = False
        if not isinstance(allow, bool):
            self.err(self.var("allow_unauthenticated"), "must be a boolean, got %s" % _describe(allow),
                     "use true or false")
            allow = False
        self.top["allow_unauthenticated"] = allow

    def _check_host(self, host):
        try:
            import netaddr  # pylint: disable=import-outside-toplevel
        except ImportError:
            self.err(self.var("host"), "cannot be checked because the Python package 'netaddr' is missing on the "
                     "controller", "install it into Ansible's Python (pip install netaddr)")
            return
        try:
            address = netaddr.IPAddress(host)
        except (netaddr.AddrFormatError, ValueError, TypeError):
            self.err(self.var("host"), "must be an IP address (SGLang binds it), got %r" % host,
                     "use 127.0.0.1 for local clients only, or the address of the interface to listen on "
                     "(0.0.0.0 for all)")
            return
        self.top["host"] = host
        self.top["host_loopback"] = bool(address.is_loopback())

    def _check_parallel(self):
        self._dedicated_value("tp_size", self.var("tp_size"), self.cfg.get("tp_size"), "top")

        gpus = self.cfg.get("gpus")
        if gpus is None or gpus == []:
            return
        if not isinstance(gpus, (list, tuple)):
            fix = "write a YAML list such as [0, 1, 2, 3]"
            self.err(self.var("gpus"), "must be a list of GPU indexes, got %s" % _describe(gpus), fix)
            return
        indexes = []
        for position, item in enumerate(gpus):
            number = _as_int(item)
            if number is _UNSET or number < 0:
                self.err("%s[%d]" % (self.var("gpus"), position),
                         "must be a GPU index (integer >= 0), got %s" % _describe(item),
                         "list indexes as shown by nvidia-smi, e.g. [0, 1]")
                return
            indexes.append(number)
        duplicates = sorted({i for i in indexes if indexes.count(i) > 1})
        if duplicates:
            self.err(self.var("gpus"), "lists GPU %s more than once" % ", ".join(str(d) for d in duplicates),
                     "list every GPU once")
            return
        self.top["gpus"] = indexes

    def _dedicated_value(self, dest, variable, raw, store, key=None):
        """A role variable that stands for one SGLang flag: its type, choices and range come from the flag table."""
        if raw is None:
            return
        token = self._scalar(dest, variable, raw)
        if token is not _UNSET:
            getattr(self, store)[key or dest] = token[1]

    def _check_multinode(self):
        """One node of a multi-node server: nnodes, node_rank, dist_init_addr and node_ifname (all optional)."""
        nnodes = self.cfg.get("nnodes")
        if nnodes is not None:
            number = _as_int(nnodes)
            if number is _UNSET or number < 1:
                self.err(self.var("node_group"), "gives a number of nodes (nnodes) that is not an integer >= 1: %s"
                         % _describe(nnodes), _MULTINODE_HINT)
            else:
                self.top["nnodes"] = number
        rank = self.cfg.get("node_rank")
        if rank is not None:
            number = _as_int(rank)
            if number is _UNSET or number < 0:
                self.err(self.var("node_rank"), "must be an integer >= 0, got %s" % _describe(rank),
                         "number the nodes of the group 0..n-1, or leave it unset to rank them by inventory name")
            else:
                self.top["node_rank"] = number
        addr = self.cfg.get("dist_init_addr")
        if not blank(addr):
            parsed = _parse_host_port(addr)
            if isinstance(parsed, str):
                self.err(self.var("dist_init_host"), "gives the rendezvous address (--dist-init-addr) %s: %s"
                         % (_describe(addr), parsed),
                         "set sglang_server_dist_init_host to an IP address and sglang_server_dist_init_port to a port")
            else:
                self.top["dist_init_addr"] = addr.strip()
                self.top["dist_init_port"] = parsed[1]
        ifname = self.cfg.get("node_ifname")
        if not blank(ifname):
            if not isinstance(ifname, str) or not _IFNAME.fullmatch(ifname.strip()) or ifname.strip() in (".", ".."):
                self.err(self.var("node_ifname"), "must be a network interface name (at most 15 letters, digits or "
                         "_.:@-), got %s" % _describe(ifname), "e.g. eth0 or ens5f0")
            else:
                self.top["node_ifname"] = ifname.strip()

    def _check_secrets(self):
        for name in ("api_key", "hf_token"):
            secret = self.cfg.get(name)
            if blank(secret):
                continue
            if not isinstance(secret, str):
                self.err(self.var(name), "must be a string, got %s" % type(secret).__name__,
                         "quote it in YAML or load it from a vault")
            elif control_problem(secret):
                self.err(self.var(name), control_problem(secret, secret=True), "strip the value (e.g. | trim)")
            elif re.search(r"\s", secret):
                self.err(self.var(name), "must not contain whitespace or line breaks (value not shown)",
                         "strip the value (e.g. | trim)")
            elif name == "api_key" and secret.startswith("-"):
                self.err(self.var(name), _DASH_SECRET)
            else:
                self.top[name] = secret

    # -- speculative -----------------------------------------------------------------------------------

    def _check_speculative(self):
        spec = self.cfg.get("speculative")
        variable = self.var("speculative")
        if spec is None or spec == {}:
            return
        if not isinstance(spec, dict):
            self.err(variable, "must be a dict (algorithm, num_steps, eagle_topk, num_draft_tokens, "
                     "draft_model_path) or empty, got %s" % _describe(spec), "use {} to turn speculative decoding off")
            return
        known = [pair[0] for pair in SPECULATIVE_KEYS]
        for key in spec:
            if key not in known:
                hint = _suggest(str(key), known)
                self.err("%s.%s" % (variable, key), "is not a known key (%s)%s" % (", ".join(known), hint),
                         "put other speculative_* flags into %s" % self.var("args"))
        if all(spec.get(key) is None for key in known):
            return
        algorithm = spec.get("algorithm")
        if blank(algorithm):
            self.err(variable + ".algorithm", "is required when other speculative settings are given",
                     "set algorithm: NEXTN for MTP, or empty the dict to turn speculative decoding off")
        elif not isinstance(algorithm, str):
            self.err(variable + ".algorithm", "must be a string, got %s" % _describe(algorithm))
        else:
            upper = algorithm.strip().upper()
            if upper in SPECULATIVE_ALGORITHMS:
                self.spec["algorithm"] = upper
            elif upper == "NONE":
                self.err(variable + ".algorithm", "NONE is not an algorithm",
                         "empty %s to turn speculative decoding off" % variable)
            elif upper in ALGORITHM_HINTS:
                self.err(variable + ".algorithm", "%r is not a name SGLang %s knows" % (algorithm, SGLANG_VERSION),
                         "use %s (names are case-insensitive: %s)"
                         % (ALGORITHM_HINTS[upper], ", ".join(SPECULATIVE_ALGORITHMS)))
            else:
                self.err(variable + ".algorithm", "%r is not one of %s%s" % (
                    algorithm, ", ".join(SPECULATIVE_ALGORITHMS), _suggest(upper, SPECULATIVE_ALGORITHMS)),
                    "names are case-insensitive; MTP models use NEXTN")
        for key in ("num_steps", "eagle_topk", "num_draft_tokens"):
            self._dedicated_value("speculative_" + key, "%s.%s" % (variable, key), spec.get(key), "spec", key)
        draft = spec.get("draft_model_path")
        if not blank(draft):
            if not isinstance(draft, str):
                self.err(variable + ".draft_model_path", "must be a string, got %s" % _describe(draft))
            elif self._no_control(variable + ".draft_model_path", draft):
                self.spec["draft_model_path"] = draft.strip()

    # -- args ------------------------------------------------------------------------------------------

    def _check_args(self):
        args = self.cfg.get("args")
        if args is None or args == {}:
            return
        if not isinstance(args, dict):
            self.err(self.var("args"), "must be a dict of SGLang flag names to values, got %s" % _describe(args),
                     "write e.g. {mem_fraction_static: 0.85, enable_metrics: true}")
            return
        for key, raw in args.items():
            variable = "%sargs.%s" % (self.prefix, printable(str(key)))
            if not isinstance(key, str) or not key.strip():
                self.err(variable, "flag names must be non-empty strings")
                continue
            if control_problem(key):
                self.err(variable, "the flag name %s" % control_problem(key))
                continue
            name = normalise_flag_name(key)
            dest = SPELLINGS.get(name)
            if dest is None:
                self._unknown_flag(variable, name, raw)
                continue
            if dest in self.arg_keys:
                self.err(variable, "sets %s again (already given as %r)" % (option_for(dest), self.arg_keys[dest]),
                         "keep one spelling")
                continue
            self.arg_keys[dest] = key
            if dest in DEDICATED_FLAGS:
                owner = self.var(DEDICATED_FLAGS[dest])
                self.err(variable, "duplicates %s, which is the only place to set %s" % (owner, option_for(dest)),
                         "move the value to %s" % owner)
                continue
            if dest in MANAGED_FLAGS:
                self.err(variable, "cannot be set here", MANAGED_FLAGS[dest])
                continue
            if dest in MULTINODE_FLAGS:
                self.err(variable, "cannot be set here: %s is owned by the role (multi-node servers)"
                         % option_for(dest), _MULTINODE_HINT)
                continue
            if dest in SECRET_FLAGS:
                self._check_secret_arg(dest, variable, raw)
                continue
            self._check_arg_value(dest, variable, raw)

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

    def _check_secret_arg(self, dest, variable, raw):
        """Secrets go to the --config file; their value is never repeated in a message."""
        if blank(raw):
            return
        if isinstance(raw, str) and control_problem(raw):
            self.err(variable, control_problem(raw, secret=True), "strip the value (e.g. | trim)")
            return
        if not isinstance(raw, str) or re.search(r"\s", raw):
            self.err(variable, "must be a string without whitespace or line breaks (value not shown)",
                     "quote it in YAML or load it from a vault")
            return
        if raw.startswith("-"):
            self.err(variable, _DASH_SECRET)
            return
        self.args[dest] = raw
        self.rendered[dest] = [raw]

    def _unknown_flag(self, variable, name, raw):
        if self.other_version is not None:
            self._unchecked_flag(variable, name, raw)
            return
        if name in REMOVED_FLAGS:
            self.err(variable, "is not accepted by SGLang %s" % SGLANG_VERSION, REMOVED_FLAGS[name])
            return
        if name.startswith("no_") and name[3:] in FLAGS and FLAGS[name[3:]]["kind"] == "bool":
            self.err(variable, "is the negative spelling of %s" % option_for(name[3:]),
                     "write %s: false instead" % name[3:])
            return
        hint = _suggest(name, FLAGS)
        self.err(variable, "is not a flag of SGLang %s%s" % (SGLANG_VERSION, hint),
                 None if hint else "see 'sglang serve --help' of that version for the flag names")

    def _unchecked_flag(self, variable, name, raw):
        """A flag the table does not know, with another SGLang version installed: passed on as written."""
        note = REMOVED_FLAGS.get(name)
        self.warn(variable, "is not a flag of SGLang %s, whose table the collection has%s; it is passed on unchecked "
                  "and the parser of the installed SGLang %s decides before anything live changes"
                  % (SGLANG_VERSION, " (%s)" % note if note else "", self.other_version))
        if name in self.rendered:
            self.err(variable, "sets --%s again" % name.replace("_", "-"), "keep one spelling")
            return
        if raw is None or raw is False:  # without the table a false value cannot be told from --no-x: left out
            return
        items = [] if raw is True else list(raw) if isinstance(raw, (list, tuple)) else [raw]
        tokens = []
        for item in items:
            if isinstance(item, bool) or not isinstance(item, (str, int, float, dict, list)):
                self.err(variable, "takes text, numbers or a JSON dict/list for a flag the collection does not know, "
                         "got %s" % _describe(item))
                return
            text = _json_text(item) if isinstance(item, (dict, list)) else str(item)
            if not self._no_control(variable, text):
                return
            tokens.append(text)
        self.rendered[name] = tokens
        self.options[name] = "--" + name.replace("_", "-")

    def _check_arg_value(self, dest, variable, raw):
        flag = FLAGS[dest]
        kind = flag["kind"]
        if raw is None:
            return
        if kind in ("switch", "bool"):
            if not isinstance(raw, bool):
                self.err(variable, "%s is a switch and takes true or false, got %s" % (flag["option"], _describe(raw)),
                         "write %s: true (false or null leaves it out)" % dest if kind == "switch"
                         else "write %s: true or false (null leaves SGLang's default)" % dest)
                return
            self.args[dest] = raw
            if kind == "switch":
                self.rendered[dest] = [] if raw else None
            else:
                self.rendered[dest] = [] if raw else False
            return
        if flag["nargs"] == "?" and isinstance(raw, bool):
            self.args[dest] = raw
            self.rendered[dest] = [] if raw else None
            return
        if kind == "list":
            items = list(raw) if isinstance(raw, (list, tuple)) else [raw]
            if not items and flag["nargs"] == "+":
                self.err(variable, "%s needs at least one value" % flag["option"], "give a list or leave it out")
                return
            tokens, values = [], []
            for position, item in enumerate(items):
                token = self._scalar(dest, "%s[%d]" % (variable, position) if isinstance(raw, (list, tuple))
                                     else variable, item, in_list=len(items) > 1)
                if token is _UNSET:
                    return
                tokens.append(token[0])
                values.append(token[1])
            self.args[dest] = values
            self.rendered[dest] = tokens
            return
        token = self._scalar(dest, variable, raw)
        if token is _UNSET:
            return
        self.args[dest] = token[1]
        self.rendered[dest] = [token[0]]

    def _scalar(self, dest, variable, raw, in_list=False):
        """Check one value against the flag's type and choices: ``(argv text, normalised value)`` or ``_UNSET``.

        A single value that starts with '-' is rendered as ``--flag=value`` (argparse then never reads it as
        an option); in a list of two or more values only what argparse reads as a negative number may
        start with '-'.
        """
        flag = FLAGS[dest]
        typ = flag["type"]
        if isinstance(raw, str) and not self._no_control(variable, raw):
            return _UNSET
        if isinstance(raw, bool):
            self.err(variable, "%s takes a %s value, not %s" % (flag["option"], typ, _describe(raw)),
                     "give a value, or null to leave the flag out")
            return _UNSET
        if typ == "int":
            value = _as_int(raw)
            if value is _UNSET:
                self.err(variable, "%s takes an integer, got %s" % (flag["option"], _describe(raw)))
                return _UNSET
            if not self._int_range(dest, variable, value):
                return _UNSET
            text = str(value)
        elif typ == "float":
            value = _as_float(raw)
            if value is _UNSET:
                self.err(variable, "%s takes a number, got %s" % (flag["option"], _describe(raw)))
                return _UNSET
            if dest == "mem_fraction_static" and not 0 < value < 1:
                self.err(variable, "must be between 0 and 1 (exclusive), got %s" % value,
                         "it is the fraction of GPU memory for weights and KV cache, e.g. 0.85")
                return _UNSET
            text = str(value)
        elif typ == "human_readable_int":
            value = self._human_int(variable, flag, raw)
            if value is _UNSET:
                return _UNSET
            text = str(raw).strip()
        elif typ in ("json", "json_list", "cuda_graph_config"):
            value = self._json(variable, flag, raw)
            if value is _UNSET:
                return _UNSET
            text = raw if isinstance(raw, str) else _json_text(raw)
        else:  # str, nullable_str, cuda_graph_backend
            if isinstance(raw, (dict, list, tuple)):
                text = _json_text(raw)
            elif isinstance(raw, (str, int, float)):
                text = str(raw)
            else:
                self.err(variable, "%s takes a string, got %s" % (flag["option"], _describe(raw)))
                return _UNSET
            value = text
        if not self._no_control(variable, text):
            return _UNSET
        if in_list and text.startswith("-") and not _NEGATIVE_NUMBER.fullmatch(text):
            self.err(variable, "%s takes a list, and a list item starting with '-' is read as an option by SGLang's "
                     "parser, got %r" % (flag["option"], text), "give a single value or drop the '-'")
            return _UNSET
        if flag["choices"] is not None and value not in flag["choices"]:
            if self.other_version is None:
                self._bad_choice(dest, variable, raw, value)
                return _UNSET
            self.warn(variable, "%r is not one of the choices of %s in SGLang %s; it is passed on and the parser of "
                      "the installed SGLang %s decides" % (raw, flag["option"], SGLANG_VERSION, self.other_version))
        if dest in ("log_level", "log_level_http") and text.upper() not in LOG_LEVELS:
            self.err(variable, "must be a Python logging level name, got %r" % text,
                     "use one of %s" % ", ".join(n.lower() for n in LOG_LEVELS))
            return _UNSET
        return text, value

    def _int_range(self, dest, variable, value):
        if (dest == "port" or dest.endswith("_port")) and not 1 <= value <= 65535:
            self.err(variable, "must be a TCP port number between 1 and 65535, got %d" % value)
            return False
        if dest in POSITIVE_INT_FLAGS and value < 1:
            self.err(variable, "must be an integer >= 1, got %d" % value)
            return False
        if dest in NON_NEGATIVE_INT_FLAGS and value < 0:
            self.err(variable, "must be an integer >= 0, got %d" % value)
            return False
        if dest == "mamba_max_states_per_path" and value != -1 and value < 1:
            self.err(variable, "must be -1 (unlimited) or >= 1, got %d" % value)
            return False
        if dest == "chunked_prefill_size" and value != -1 and value < 1:
            self.err(variable, "must be -1 (chunked prefill off) or >= 1, got %d" % value)
            return False
        return True

    def _human_int(self, variable, flag, raw):
        if isinstance(raw, int):
            if raw < 0:
                self.err(variable, "%s must not be negative, got %d" % (flag["option"], raw))
                return _UNSET
            return raw
        match = _HUMAN_INT.fullmatch(raw.strip()) if isinstance(raw, str) else None
        if not match or (match.group(2) and match.group(2).endswith("i") and "." in match.group(1)) \
                or (not match.group(2) and "." in match.group(1)):
            self.err(variable, "%s takes an integer with an optional SI suffix (k, M, G, T: x1000) or IEC suffix "
                     "(Ki, Mi, Gi, Ti: x1024, whole numbers only), got %s" % (flag["option"], _describe(raw)),
                     "write e.g. 262144, 256Ki or 256k (suffixes are case-sensitive)")
            return _UNSET
        return raw.strip()

    def _json(self, variable, flag, raw):
        if isinstance(raw, str):
            try:
                value = json.loads(raw)
            except ValueError as exc:
                self.err(variable, "%s takes JSON text, which does not parse (%s)" % (flag["option"], exc),
                         "give a YAML dict/list instead and let the role encode it")
                return _UNSET
        elif isinstance(raw, (dict, list, tuple)):
            value = raw
        else:
            self.err(variable, "%s takes JSON (a dict, a list or JSON text), got %s" % (flag["option"], _describe(raw)))
            return _UNSET
        if flag["type"] == "json_list" and not isinstance(value, (list, tuple)):
            self.err(variable, "%s takes a JSON list, got %s" % (flag["option"], _describe(value)))
            return _UNSET
        return value

    def _bad_choice(self, dest, variable, raw, value):
        choices = FLAGS[dest]["choices"]
        listing = ", ".join(str(c) for c in choices)
        hint = VALUE_HINTS.get(dest, {}).get(str(value))
        if hint is None:
            lowered = [c for c in choices if str(c).lower() == str(value).lower()]
            hint = lowered[0] if lowered else None
        if hint is not None:
            fix = "use %s: %s" % (dest, hint)
        else:
            close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=3, cutoff=0.6)
            fix = "did you mean %s?" % " or ".join(close) if close else None
        if len(listing) > 300:
            listing = listing[:300] + ", ..."
        self.err(variable, "%r is not a valid value for %s (choices: %s)" % (raw, FLAGS[dest]["option"], listing), fix)

    def _no_control(self, variable, text, secret=False):
        """Control characters end a unit line (NUL, line breaks) or split a value; none is allowed."""
        problem = control_problem(text, secret=secret)
        if problem:
            self.err(variable, problem, "remove it; values must be plain text")
            return False
        return True

    def _path_ok(self, variable, text):
        problem = path_problem(text)
        if problem:
            self.err(variable, problem)
            return False
        return True

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

    # -- rules across variables ------------------------------------------------------------------------

    def _check_cross_rules(self):
        self._rule_parallel()
        self._rule_auth()
        self._rule_scheduling()
        self._rule_speculative()
        self._rule_mamba()
        self._rule_ports()

    def _rule_parallel(self):
        tp = self.value("tp_size", 1)
        pp = self.value("pp_size", 1)
        dp = self.value("dp_size", 1)
        nnodes = self.value("nnodes", 1)
        if (tp * pp) % nnodes:
            self.err(self.where("nnodes"), "tp_size x pp_size (%d x %d) must be divisible by nnodes (%d)"
                     % (tp, pp, nnodes), "adjust %s, pp_size or nnodes" % self.var("tp_size"))
        if dp > 1 and nnodes > 1:
            self.err(self.where("dp_size"), "dp_size > 1 needs nnodes == 1 (got %d nodes)" % nnodes,
                     "use attn_dp_size for multi-node data parallel attention")
        attn_dp = self.value("attn_dp_size", 1)
        if tp % attn_dp:
            self.err(self.where("attn_dp_size"), "tp_size (%d) must be divisible by attn_dp_size (%d)" % (tp, attn_dp),
                     "choose an attn_dp_size that divides %s" % self.var("tp_size"))
        node_rank = self.value("node_rank", 0)
        if node_rank >= nnodes:
            self.err(self.where("node_rank"), "must be below nnodes (%d), got %d" % (nnodes, node_rank))
        if nnodes > 1 and self.value("dist_init_addr") is None:
            self.err(self.where("dist_init_addr"), "is required when nnodes > 1",
                     "set it to host:port of node 0 on every node")
        gpus = self.top.get("gpus")
        if gpus:
            needed = tp * pp * dp // nnodes if (tp * pp * dp) % nnodes == 0 else None
            if needed is not None and len(gpus) != needed:
                detail = "tp_size (%d)" % tp if (pp, dp, nnodes) == (1, 1, 1) else \
                    "tp_size x pp_size x dp_size / nnodes (%d x %d x %d / %d = %d)" % (tp, pp, dp, nnodes, needed)
                self.err(self.var("gpus"), "lists %d GPU(s) but the server uses %s" % (len(gpus), detail),
                         "list exactly %d GPU index(es) or change %s" % (needed, self.var("tp_size")))

    def _rule_auth(self):
        api_key = self.top.get("api_key")
        workers = self.value("tokenizer_worker_num", 1)
        if api_key is not None and workers > 1:
            self.err(self.where("tokenizer_worker_num"), "SGLang does not support an API key with "
                     "tokenizer_worker_num > 1 (got %d)" % workers,
                     "set tokenizer_worker_num: 1 or drop %s" % self.var("api_key"))
        if not self.top["host_loopback"] and api_key is None:
            if self.top["allow_unauthenticated"]:
                self.warn(self.var("host"), "%s is reachable from the network without an API key "
                          "(allowed by %s)" % (self.top.get("host"), self.var("allow_unauthenticated")))
            else:
                self.err(self.var("host"), "binds the non-loopback address %s without %s, so anyone who can reach "
                         "the port can use the model" % (self.top.get("host"), self.var("api_key")),
                         "set %s, bind 127.0.0.1, or set %s: true"
                         % (self.var("api_key"), self.var("allow_unauthenticated")))

    def _rule_scheduling(self):
        chunked = self.value("chunked_prefill_size")
        page = self.value("page_size")
        if chunked is not None and page is not None and chunked > 0 and chunked % page:
            self.err(self.where("chunked_prefill_size"), "must be divisible by page_size (%d), got %d" % (page, chunked),
                     "use a multiple of %d, e.g. %d" % (page, max(page, chunked - chunked % page)))
        context = self.value("context_length")
        if isinstance(context, str) and re.search(r"[0-9][kMGT]\Z", context):
            self.warn(self.where("context_length"), "%r uses an SI suffix (x1000); write %r for the power-of-two "
                      "length" % (context, context + "i"))

    def _rule_speculative(self):
        algorithm = self.spec.get("algorithm")
        spec_var = self.var("speculative")
        spec_flags = sorted(d for d in self.args if d.startswith("speculative_") and self.args[d] not in (None, False))
        if algorithm is None:
            if spec_flags:
                self.warn(self.arg_var(spec_flags[0]), "has no effect while %s is empty" % spec_var)
            return
        steps = self.spec.get("num_steps")
        topk = self.spec.get("eagle_topk")
        draft = self.spec.get("num_draft_tokens")
        adaptive = self.value("speculative_adaptive", False)
        if algorithm == "NGRAM":
            for key in ("num_steps", "eagle_topk"):
                if self.spec.get(key) is not None:
                    self.err("%s.%s" % (spec_var, key), "is computed by SGLang for NGRAM",
                             "remove it; tune speculative_ngram_max_bfs_breadth and num_draft_tokens instead")
        elif steps is None and not adaptive:
            for key, got in (("eagle_topk", topk), ("num_draft_tokens", draft)):
                if got is not None:
                    self.err("%s.%s" % (spec_var, key), "is only allowed together with num_steps (SGLang picks all "
                             "three itself when num_steps is unset and fails if only some are given)",
                             "set %s.num_steps as well, or remove %s" % (spec_var, key))
        elif steps is not None and algorithm in EAGLE_FAMILY and topk is None and not adaptive:
            self.err(spec_var + ".eagle_topk", "is required when num_steps is set for %s" % algorithm,
                     "add eagle_topk (1 for MTP) or remove num_steps to let SGLang choose")
        if algorithm in EAGLE_FAMILY and steps is not None and topk is not None:
            if topk == 1 and draft is not None and draft != steps + 1:
                self.err(spec_var + ".num_draft_tokens", "must be num_steps + 1 (%d) when eagle_topk is 1; SGLang "
                         "would silently change %d to %d" % (steps + 1, draft, steps + 1),
                         "set num_draft_tokens: %d" % (steps + 1))
            if topk > 1 and draft is None:
                self.err(spec_var + ".num_draft_tokens", "is required when eagle_topk > 1",
                         "set it, e.g. num_draft_tokens: %d" % (steps * topk))
        backends = [self.value(d) for d in ("attention_backend", "prefill_attention_backend", "decode_attention_backend")]
        if topk is not None and topk > 1:
            if "trtllm_mha" in backends:
                self.err(spec_var + ".eagle_topk", "must be 1 with the trtllm_mha attention backend, got %d" % topk,
                         "set eagle_topk: 1 or pick another attention backend")
            page = self.value("page_size", 1)
            attention = self.value("attention_backend")
            if page > 1 and attention is not None and attention not in ("flashinfer", "fa3", "triton"):
                self.err(spec_var + ".eagle_topk", "> 1 with page_size > 1 needs attention_backend flashinfer, fa3 "
                         "or triton, got %s" % attention, "set eagle_topk: 1, page_size: 1 or another backend")
        if "flex_attention" in backends:
            self.err(self.where("attention_backend"), "flex_attention does not support speculative decoding",
                     "pick another attention backend or empty %s" % spec_var)
        attn_dp = self.value("attn_dp_size", 1) > 1 or self.value("enable_dp_attention", False)
        if algorithm in ("STANDALONE", "NGRAM") and attn_dp:
            self.err(spec_var + ".algorithm", "%s does not support data-parallel attention" % algorithm,
                     "remove attn_dp_size/enable_dp_attention or use another algorithm")
        if algorithm == "DFLASH":
            if self.spec.get("draft_model_path") is None:
                self.err(spec_var + ".draft_model_path", "is required for DFLASH", "set the draft model path")
            if self.value("pp_size", 1) != 1:
                self.err(self.where("pp_size"), "DFLASH needs pp_size 1")
        if algorithm == "UNO" and (self.value("tp_size", 1) != 1 or self.value("pp_size", 1) != 1):
            self.err(spec_var + ".algorithm", "UNO needs tp_size 1 and pp_size 1")
        if self.value("speculative_use_rejection_sampling", False):
            variable = self.where("speculative_use_rejection_sampling")
            if algorithm not in ("EAGLE", "EAGLE3", "NEXTN"):
                self.err(variable, "only works with EAGLE, EAGLE3 or NEXTN, not %s" % algorithm)
            if topk not in (None, 1):
                self.err(variable, "needs eagle_topk 1, got %d" % topk, "set %s.eagle_topk: 1" % spec_var)
            for dest in ("speculative_accept_threshold_single", "speculative_accept_threshold_acc"):
                if self.value(dest, 1.0) != 1.0:
                    self.err(self.where(dest), "must stay 1.0 with rejection sampling")
        window = self.value("speculative_draft_window_size")
        if window is not None and window <= 0:
            self.err(self.where("speculative_draft_window_size"), "must be > 0, got %d" % window)
        sink = self.value("speculative_draft_sink_size")
        if sink is not None:
            if sink < 0:
                self.err(self.where("speculative_draft_sink_size"), "must be >= 0, got %d" % sink)
            if window is None:
                self.err(self.where("speculative_draft_sink_size"), "needs speculative_draft_window_size",
                         "set speculative_draft_window_size too")
        if algorithm == "NGRAM" and self.value("speculative_ngram_external_corpus_path") is not None:
            budget = self.value("speculative_ngram_external_sam_budget", 0)
            tokens = draft if draft is not None else 12
            if not 0 < budget <= tokens - 1:
                self.err(self.where("speculative_ngram_external_sam_budget"), "must be between 1 and num_draft_tokens "
                         "- 1 (%d) when an external corpus is set, got %d" % (tokens - 1, budget))
        if adaptive:
            self._rule_adaptive(algorithm, steps, topk, draft)
        self._rule_hybrid_backend(algorithm)
        if self.value("max_running_requests") is None:
            self.warn(self.where("max_running_requests"), "is unset, so SGLang caps it at 48 with speculative "
                      "decoding; set it explicitly to choose")
        if self.value("enable_mixed_chunk", False) and algorithm not in MIXED_CHUNK_ALGORITHMS:
            self.warn(self.where("enable_mixed_chunk"), "SGLang turns it off for %s" % algorithm)

    def _rule_adaptive(self, algorithm, steps, topk, draft):
        """--speculative-adaptive as SGLang 0.5.23 resolves it (srt/arg_groups/speculative_hook.py,
        _maybe_disable_adaptive and _init_adaptive_speculative_params; srt/speculative/adaptive_spec_params.py,
        adaptive_unsupported_reason): some combinations turn it off with only a log warning, a step count outside
        the candidate steps stops the server, and the draft tokens become num_steps + 1 whatever was set."""
        variable = self.where("speculative_adaptive")
        spec_var = self.var("speculative")
        reasons = []
        if algorithm not in ADAPTIVE_ALGORITHMS:
            reasons.append("%s.algorithm is %s (only EAGLE, EAGLE3 and NEXTN adapt)" % (spec_var, algorithm))
        if topk not in (None, 1):
            reasons.append("%s.eagle_topk is %d (only 1 adapts)" % (spec_var, topk))
        if self.value("attn_dp_size", 1) > 1 or self.value("enable_dp_attention", False):
            reasons.append("data-parallel attention is on")
        for dest in ("enable_multi_layer_eagle", "enable_two_batch_overlap", "enable_pdmux"):
            if self.value(dest, False):
                reasons.append("%s is on" % self.where(dest))
        if reasons:
            self.warn(variable, "SGLang 0.5.23 turns adaptive speculation off (a log warning only) because %s; the "
                      "server then runs the static steps" % "; ".join(reasons))
            return
        if self.value("speculative_adaptive_config") is not None:
            return  # the candidate steps are in that file, on the host
        if steps is not None and steps not in ADAPTIVE_DEFAULT_STEPS:
            self.err(spec_var + ".num_steps", "must be one of the adaptive candidate steps %s with "
                     "speculative_adaptive (SGLang refuses to start otherwise), got %d"
                     % (list(ADAPTIVE_DEFAULT_STEPS), steps),
                     "set num_steps to one of them, leave it unset (SGLang starts at 3) or give "
                     "speculative_adaptive_config")
            return
        start = 3 if steps is None else steps
        if draft is not None and draft != start + 1:
            self.err(spec_var + ".num_draft_tokens", "becomes num_steps + 1 (%d) with speculative_adaptive; SGLang "
                     "would silently change %d to %d" % (start + 1, draft, start + 1),
                     "set num_draft_tokens: %d or leave it unset" % (start + 1))

    def _rule_hybrid_backend(self, algorithm):
        """Hybrid (linear attention) Qwen3.5 / Qwen3-Next models: with no attention backend given, SGLang 0.5.23 picks
        one per GPU and per speculative setting (srt/arg_groups/model_overrides/qwen3_5.py,
        _qwen3_5_hybrid_overrides): on Blackwell (SM100) triton with page size 1 without speculation, trtllm_mha with
        page size 64 with it (where its general default is trtllm_mha). The model's architecture is not known on the
        controller, so its path or served name decides."""
        if self.value("attention_backend") is not None:
            return
        names = " ".join(str(self.top.get(k) or "") for k in ("model_path", "served_model_name"))
        if not HYBRID_QWEN_MODEL.search(names):
            return
        self.warn(self.arg_var("attention_backend"), "is unset for what looks like a hybrid Qwen3.5/Qwen3-Next model "
                  "with %s speculation: SGLang 0.5.23 then picks the attention backend and page size itself, and "
                  "differently with and without speculation (on Blackwell: triton, page size 1 without it, "
                  "trtllm_mha, page size 64 with it; model_overrides/qwen3_5.py). One such silent switch halved the "
                  "throughput of Qwen3.5-122B FP8 on B200 with MTP. Set attention_backend (and page_size) in %s, "
                  "and compare the report's chosen backend" % (algorithm, self.var("args")))

    def _rule_mamba(self):
        strategy = self.value("mamba_radix_cache_strategy")
        page = self.value("page_size")
        backends = [self.value(d) for d in ("attention_backend", "prefill_attention_backend", "decode_attention_backend")]
        if strategy == "no_buffer":
            if page not in (None, 1):
                self.err(self.where("page_size"), "must be 1 with mamba_radix_cache_strategy no_buffer, got %d" % page)
            if "trtllm_mha" in backends:
                self.err(self.where("mamba_radix_cache_strategy"), "no_buffer does not work with trtllm_mha",
                         "use extra_buffer or another attention backend")
        interval_set = "mamba_track_interval" in self.args
        if interval_set or (strategy or "").startswith("extra_buffer"):
            interval = self.value("mamba_track_interval", FLAGS["mamba_track_interval"]["default"])
            draft = self.spec.get("num_draft_tokens")
            if self.spec.get("algorithm") and draft is not None and interval < draft:
                self.err(self.where("mamba_track_interval"), "must be >= num_draft_tokens (%d), got %d"
                         % (draft, interval))
            if page is not None and interval % page:
                self.err(self.where("mamba_track_interval"), "must be divisible by page_size (%d), got %d"
                         % (page, interval))
        if self.value("enable_mamba_cache_stochastic_rounding", False) and self.value("mamba_ssm_dtype") != "float16":
            self.err(self.where("enable_mamba_cache_stochastic_rounding"), "needs mamba_ssm_dtype float16",
                     "set mamba_ssm_dtype: float16")
        if self.value("enable_int8_mamba_checkpoint", False):
            for dest in ("enable_hierarchical_cache", "enable_lmcache", "radix_cache_backend"):
                if dest in FLAGS and self.value(dest) not in (None, False):
                    self.err(self.where("enable_int8_mamba_checkpoint"), "cannot be combined with %s" % dest)

    def _rule_ports(self):
        port = self.top.get("port", FLAGS["port"]["default"])
        for dest in sorted(self.args):
            if dest.endswith("_port") and FLAGS[dest]["type"] == "int" and self.args[dest] == port:
                self.err(self.arg_var(dest), "uses %d, the HTTP port of %s" % (port, self.var("port")),
                         "pick another port")
        rendezvous = self.top.get("dist_init_port")
        if rendezvous is None or self.value("nnodes", 1) < 2 or self.value("node_rank", 0) != 0:
            return
        # Rank 0 binds the rendezvous port (torch's TCPStore) next to its HTTP port.
        variable = self.var("dist_init_port")
        if rendezvous == port:
            self.err(variable, "is %d, the HTTP port of %s; the rendezvous (--dist-init-addr) needs a port of its own"
                     % (port, self.var("port")), "pick another port")
        for dest in sorted(self.args):
            if dest.endswith("_port") and FLAGS[dest]["type"] == "int" and self.args[dest] == rendezvous:
                self.err(variable, "is %d, which %s already uses" % (rendezvous, self.arg_var(dest)),
                         "pick another port")

    # -- deprecations (warnings only) ------------------------------------------------------------------

    def deprecation_warnings(self):
        for dest in sorted(self.args):
            if dest in DEPRECATED_FLAGS and self.args[dest] not in (None, False):
                self.warn(self.arg_var(dest), DEPRECATED_FLAGS[dest])


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


def _analyse(cfg, prefix):
    config = _Config(cfg, prefix)
    config.deprecation_warnings()
    return config


def validate_server_config(cfg, prefix=DEFAULT_PREFIX):
    """Return the list of problems in ``cfg`` (empty when it is fine).

    Every message starts with the variable (``sglang_server_speculative.eagle_topk``), then states the rule
    and, where there is one, the fix. Rules that combine several variables (GPU count, divisibility, the
    speculative parameter combinations, API key and host) run once every single value is valid, so that
    one typo does not cause a cascade of follow-up messages.
    """
    return list(_analyse(cfg, prefix).errors)


def server_config_warnings(cfg, prefix=DEFAULT_PREFIX):
    """Return remarks about settings that are legal but probably not what was meant."""
    return list(_analyse(cfg, prefix).warnings)


def _append_option(argv, option, values):
    """``--flag value``; ``--flag=value`` when the value starts with '-', so argparse cannot take it for an option."""
    if len(values) == 1 and values[0].startswith("-"):
        argv.append("%s=%s" % (option, values[0]))
    else:
        argv.append(option)
        argv.extend(values)


def render_server_argv(cfg, prefix=DEFAULT_PREFIX):
    """Turn a validated ``cfg`` into what the unit needs.

    Returns a dict:

    ``argv``
        list of strings, one option followed by its value(s); dedicated settings first (model path, served
        name, host, port, tp size, speculative), then ``args`` sorted by dest, then ``--config <config_path>``
        when ``config_path`` is given and there is something to put in the file. A single value that starts
        with '-' is joined to its option (``--chunked-prefill-size=-1``). Secrets never appear here.
    ``config``
        dict for the ``--config`` YAML file, dash-form keys (``api-key``, ``admin-api-key``, ...).
    ``env``
        dict of environment variables for the unit (``base_env`` overlaid with the user's ``env``,
        ``CUDA_VISIBLE_DEVICES`` from ``gpus``, ``NCCL_P2P_DISABLE=1`` when P2P is off), sorted by name.
    ``env_file``
        secret environment for a 0600 EnvironmentFile (``HF_TOKEN``).
    ``p2p``
        the resolved P2P mode, ``on`` or ``off``.
    ``warnings``
        as ``server_config_warnings``.
    ``requested_backend``
        ``attention_backend``, ``prefill_attention_backend``, ``decode_attention_backend`` and ``page_size`` as
        configured, None where SGLang is left to choose.
    ``expected_server_info``
        as ``expected_server_info``: what ``/server_info`` must report for the speculative settings.

    Raises ``SGLangConfigError`` (a ``ValueError``) listing every problem when ``cfg`` does not validate.
    """
    config = _analyse(cfg, prefix)
    if config.errors:
        raise SGLangConfigError(config.errors)

    argv = []
    for name in ("model_path", "served_model_name", "host", "port", "tp_size"):
        value = config.top.get(name)
        if value is not None:
            _append_option(argv, option_for(name), [str(value)])
    if config.value("nnodes", 1) > 1:
        for dest in ("nnodes", "node_rank", "dist_init_addr"):
            _append_option(argv, option_for(dest), [str(config.value(dest, 0))])
    for key, dest in SPECULATIVE_KEYS:
        value = config.spec.get(key)
        if value is not None:
            _append_option(argv, option_for(dest), [str(value)])

    rendered = dict(config.rendered)
    if config.p2p == "off":
        for dest in P2P_OFF_SWITCHES:
            rendered[dest] = []
    secrets = {}
    if config.top.get("api_key") is not None:
        secrets["api-key"] = config.top["api_key"]
    for dest in sorted(rendered):
        tokens = rendered[dest]
        if dest in SECRET_FLAGS:
            if tokens:
                secrets[FLAGS[dest]["option"][2:]] = tokens[0] if len(tokens) == 1 else tokens
            continue
        if tokens is None:
            continue
        if tokens is False:
            argv.append(FLAGS[dest]["negation"])
            continue
        _append_option(argv, config.options.get(dest) or FLAGS[dest]["option"], tokens)
    if secrets and config.top.get("config_path"):
        argv.extend(["--config", config.top["config_path"]])

    env = dict(config.env)
    if config.top.get("gpus"):
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in config.top["gpus"])
    if config.p2p == "off":
        env.update(P2P_OFF_ENV)
    if config.top.get("node_ifname") and config.value("nnodes", 1) > 1:
        for name in IFNAME_ENV:
            env[name] = config.top["node_ifname"]
    env_file = {}
    if config.top.get("hf_token") is not None:
        env_file["HF_TOKEN"] = config.top["hf_token"]

    return {
        "argv": argv,
        "config": secrets,
        "env": dict(sorted(env.items())),
        "env_file": env_file,
        "p2p": config.p2p,
        "warnings": list(config.warnings),
        # what the inventory asked for (None: left to SGLang), for the report next to what SGLang chose
        "requested_backend": {dest: config.value(dest) for dest in (
            "attention_backend", "prefill_attention_backend", "decode_attention_backend", "page_size")},
        # what the role's verification compares with /server_info once the server runs
        "expected_server_info": expected_server_info(config.spec, config.args),
    }


def expected_server_info(speculative, args=None):
    """The speculative fields SGLang's ``/server_info`` must report for ``speculative`` (``sglang_server_speculative``,
    validated) and ``args`` (``sglang_server_args``, any flag spelling).

    ``speculative_algorithm`` is always there (None without speculation), under the name SGLang reports (NEXTN shows
    as EAGLE). The step count, top-k and draft tokens are expected only where SGLang keeps what was set: for the
    EAGLE family with ``num_steps`` given (without it SGLang picks all three) and without
    ``--speculative-adaptive`` (which picks the steps and draft tokens at run time).
    """
    speculative = speculative if isinstance(speculative, dict) else {}
    algorithm = speculative.get("algorithm")
    if blank(algorithm):
        return {"speculative_algorithm": None}
    algorithm = str(algorithm).strip().upper()
    expected = {"speculative_algorithm": REPORTED_ALGORITHMS.get(algorithm, algorithm)}
    adaptive = any(SPELLINGS.get(normalise_flag_name(key)) == "speculative_adaptive" and value is True
                   for key, value in (args.items() if isinstance(args, dict) else ()))
    numbers = {key: _as_int(speculative.get(key)) for key in ("num_steps", "eagle_topk", "num_draft_tokens")}
    if algorithm not in EAGLE_FAMILY or adaptive or numbers["num_steps"] in (None, _UNSET):
        return expected
    for key, number in numbers.items():
        if number not in (None, _UNSET):
            expected["speculative_" + key] = number
    return expected


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
    """``scheme://address:port`` at which the role probes its own server.

    https when ``args`` set ``ssl_certfile`` (SGLang then serves TLS only); a wildcard bind address is
    probed on 127.0.0.1; an IPv6 address is bracketed. Raises ``ValueError`` for an address or port that
    could not be part of a URL (the full rules are ``validate_server_config``'s).
    """
    for name, value in (("host", host), ("port", port)):
        if isinstance(value, str) and control_problem(value):
            raise ValueError("%s: %s" % (name, control_problem(value)))
    host = "" if host is None else str(host).strip()
    if not host or host in ("0.0.0.0", "::"):
        host = "127.0.0.1"
    if not re.fullmatch(r"[0-9A-Fa-f:.]+", host):
        raise ValueError("host: must be an IP address, got %r" % printable(host))
    number = _as_int(port)
    if number is _UNSET or not 1 <= number <= 65535:
        raise ValueError("port: must be a TCP port number between 1 and 65535, got %s" % _describe(port))
    if ":" in host:
        host = "[%s]" % host
    return "%s://%s:%d" % ("https" if serves_tls(args) else "http", host, number)
