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

``expected_server_info``, ``url_path_problem``, ``serves_tls`` and ``probe_base_url`` are there too.

The checks run on the rule engine (``rules``): ``_analyse`` builds one normalised configuration
(``sglang_args_common.ServerConfig``: the raw variables, and what the rules normalised so far) and one ``Problems``
collector, then runs two ordered lists of plain rule functions ``rule(cfg, problems)``: ``SINGLE_RULES`` (each
variable on its own; each stores its normalised values on ``cfg``) and, only when those found no error,
``CROSS_RULES`` (rules across variables); the deprecation warnings come last. The functions live in one module per
area: ``sglang_args_server`` (model, cache, address, authentication), ``sglang_args_parallel`` (GPUs, parallelism,
multi-node), ``sglang_args_speculative``, ``sglang_args_values`` (the values of ``args`` against the flag table),
``sglang_args_loader`` (how the weights are loaded: the loader's extra config, the checkpoint prefetch, the startup
overlap), ``sglang_args_service`` (environment, P2P, metrics, unit, probe) and ``sglang_args_common`` (what they
share: ``ServerConfig``, the flag ownership tables, ``no_control``/``path_ok``). The lists fix the order of the
messages; a new rule is a function added to the list where its messages belong.
Import from this module: it re-exports the public names of the area modules.

Standard library only, except ``netaddr`` (controller side) which is imported lazily for the host
check and reported as a clear error when missing.
"""

from __future__ import annotations

from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_flags import (
    DEPRECATED_FLAGS,
    FLAGS,
    SGLANG_VERSION,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args_common import (
    DEDICATED_FLAGS,
    DEFAULT_PREFIX,
    MANAGED_FLAGS,
    MULTINODE_FLAGS,
    SECRET_FLAGS,
    SPECULATIVE_KEYS,
    SGLangConfigError,
    _describe,
    normalise_flag_name,
    option_for,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.rules import Problems, run_rules
from ansible_collections.llmserve.sglang.plugins.plugin_utils import (
    sglang_args_loader as loader,
    sglang_args_parallel as parallel,
    sglang_args_server as server,
    sglang_args_service as service,
    sglang_args_speculative as speculative,
    sglang_args_values as values,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args_common import ServerConfig
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args_parallel import IFNAME_ENV
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args_service import (
    HF_TOKEN_ENV_NAMES,
    P2P_OFF_ENV,
    P2P_OFF_SWITCHES,
    REDACTION_HOOK_ENV,
    TLS_FLAGS,
    probe_base_url,
    serves_tls,
    url_path_problem,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args_speculative import (
    ADAPTIVE_ALGORITHMS,
    ADAPTIVE_DEFAULT_STEPS,
    ALGORITHM_HINTS,
    EAGLE_FAMILY,
    HYBRID_QWEN_MODEL,
    MIXED_CHUNK_ALGORITHMS,
    REPORTED_ALGORITHMS,
    SPECULATIVE_ALGORITHMS,
    expected_server_info,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args_values import (
    LOG_LEVELS,
    NON_NEGATIVE_INT_FLAGS,
    POSITIVE_INT_FLAGS,
)

# the names importers used when all of this was one module
__all__ = [
    "ADAPTIVE_ALGORITHMS", "ADAPTIVE_DEFAULT_STEPS", "ALGORITHM_HINTS", "DEDICATED_FLAGS", "DEFAULT_PREFIX",
    "EAGLE_FAMILY", "FLAGS", "HF_TOKEN_ENV_NAMES", "HYBRID_QWEN_MODEL", "IFNAME_ENV", "LOG_LEVELS", "MANAGED_FLAGS",
    "MIXED_CHUNK_ALGORITHMS", "MULTINODE_FLAGS", "NON_NEGATIVE_INT_FLAGS", "P2P_OFF_ENV", "P2P_OFF_SWITCHES",
    "POSITIVE_INT_FLAGS", "REDACTION_HOOK_ENV", "REPORTED_ALGORITHMS", "SECRET_FLAGS", "SGLANG_VERSION",
    "SPECULATIVE_ALGORITHMS", "SPECULATIVE_KEYS", "SGLangConfigError", "TLS_FLAGS", "expected_server_info",
    "normalise_flag_name", "option_for", "probe_base_url", "render_server_argv", "server_config_warnings",
    "serves_tls", "url_path_problem", "validate_server_config",
]


# The checks of single values, in the order they run; each stores what it normalised on the ServerConfig.
# (Later checks read earlier results: args before the loader's extra config, env before P2P, args before the probe.)
SINGLE_RULES = (
    server.check_model,          # model path, served name, --config path
    server.check_network,        # host, port, allow_unauthenticated
    parallel.check_parallel,     # tp_size, gpus
    parallel.check_multinode,    # nnodes, node_rank, dist_init_addr, node_ifname
    server.check_secrets,        # api_key, hf_token
    speculative.check_speculative,
    values.check_args,           # every flag of args against the flag table
    loader.check_loader_config,  # model_loader_extra_config, key by key
    service.check_metrics,
    service.check_env,
    service.check_p2p,
    service.check_unit,
    service.check_probe,
)

# The rules across variables: they run once every single value is valid, so that one typo does not cause a cascade.
CROSS_RULES = (
    parallel.rule_parallel,
    server.rule_auth,
    server.rule_scheduling,
    speculative.rule_speculative,
    server.rule_mamba,
    loader.rule_loader,
    parallel.rule_ports,
)


def deprecation_warnings(cfg, problems):
    """Flags of ``args`` the table marks deprecated (warnings only)."""
    for dest in sorted(cfg.args):
        if dest in DEPRECATED_FLAGS and cfg.args[dest] not in (None, False):
            problems.warn(cfg.arg_var(dest), DEPRECATED_FLAGS[dest])


def _analyse(raw, prefix):
    """One pass over the role's variables: the normalised ServerConfig and every problem and warning."""
    problems = Problems()
    if not isinstance(raw, dict):
        problems.add("%s*" % prefix, "the server configuration must be a dict of role variables, got %s"
                     % _describe(raw))
    cfg = ServerConfig(raw, prefix)
    run_rules(SINGLE_RULES, cfg, problems)
    if not problems.errors:
        run_rules(CROSS_RULES, cfg, problems)
    deprecation_warnings(cfg, problems)
    return cfg, problems


def validate_server_config(cfg, prefix=DEFAULT_PREFIX):
    """Return the list of problems in ``cfg`` (empty when it is fine).

    Every message starts with the variable (``sglang_server_speculative.eagle_topk``), then states the rule
    and, where there is one, the fix. Rules that combine several variables (GPU count, divisibility, the
    speculative parameter combinations, API key and host) run once every single value is valid, so that
    one typo does not cause a cascade of follow-up messages.
    """
    return list(_analyse(cfg, prefix)[1].errors)


def server_config_warnings(cfg, prefix=DEFAULT_PREFIX):
    """Return remarks about settings that are legal but probably not what was meant."""
    return list(_analyse(cfg, prefix)[1].warnings)


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
    config, problems = _analyse(cfg, prefix)
    if problems.errors:
        raise SGLangConfigError(problems.errors)

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
        "warnings": list(problems.warnings),
        # what the inventory asked for (None: left to SGLang), for the report next to what SGLang chose
        "requested_backend": {dest: config.value(dest) for dest in (
            "attention_backend", "prefill_attention_backend", "decode_attention_backend", "page_size")},
        # what the role's verification compares with /server_info once the server runs
        "expected_server_info": expected_server_info(config.spec, config.args),
    }
