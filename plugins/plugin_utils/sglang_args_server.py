# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``sglang_args``: the model and its cache (model path, served name, ``--config`` path, chunked prefill, page
size, the mamba cache of hybrid models), the listening address and who may use it (host, API key, HF token)."""

from __future__ import annotations

import re

from ansible_collections.llmserve.sglang.plugins.plugin_utils.values import blank
from ansible_collections.llmserve.sglang.plugins.plugin_utils.systemd_unit import control_problem
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_flags import FLAGS
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args_common import _DASH_SECRET, _describe, no_control, path_ok
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args_values import dedicated_value
# -- model and cache ---------------------------------------------------------------------------------


def check_model(cfg, problems):
    model_path = cfg.raw.get("model_path")
    if blank(model_path):
        problems.add(cfg.var("model_path"), "is required (SGLang's --model-path)",
                     "set it to a local checkpoint directory or a Hugging Face repository id")
    elif not isinstance(model_path, str):
        problems.add(cfg.var("model_path"), "must be a string, got %s" % _describe(model_path))
    elif no_control(cfg, problems, cfg.var("model_path"), model_path):
        cfg.top["model_path"] = model_path.strip()

    name = cfg.raw.get("served_model_name")
    if not blank(name):
        if not isinstance(name, str):
            problems.add(cfg.var("served_model_name"), "must be a string, got %s" % _describe(name))
        elif ":" in name:
            problems.add(cfg.var("served_model_name"),
                         "must not contain ':' (SGLang rejects it at startup), got %r" % name,
                         "use another separator, e.g. %r" % name.replace(":", "-"))
        elif no_control(cfg, problems, cfg.var("served_model_name"), name):
            cfg.top["served_model_name"] = name.strip()

    config_path = cfg.raw.get("config_path")
    if not blank(config_path):
        if not isinstance(config_path, str) or not config_path.lower().endswith((".yaml", ".yml")):
            problems.add(cfg.var("config_path"), "SGLang only reads a --config file ending in .yaml or .yml, got %s"
                         % _describe(config_path), "use a path like /etc/sglang/sglang.yaml")
        elif path_ok(cfg, problems, cfg.var("config_path"), config_path):
            cfg.top["config_path"] = config_path


def rule_scheduling(cfg, problems):
    chunked = cfg.value("chunked_prefill_size")
    page = cfg.value("page_size")
    if chunked is not None and page is not None and chunked > 0 and chunked % page:
        problems.add(cfg.where("chunked_prefill_size"), "must be divisible by page_size (%d), got %d" % (page, chunked),
                     "use a multiple of %d, e.g. %d" % (page, max(page, chunked - chunked % page)))
    context = cfg.value("context_length")
    if isinstance(context, str) and re.search(r"[0-9][kMGT]\Z", context):
        problems.warn(cfg.where("context_length"), "%r uses an SI suffix (x1000); write %r for the power-of-two "
                      "length" % (context, context + "i"))


def rule_mamba(cfg, problems):
    strategy = cfg.value("mamba_radix_cache_strategy")
    page = cfg.value("page_size")
    backends = [cfg.value(d) for d in ("attention_backend", "prefill_attention_backend", "decode_attention_backend")]
    if strategy == "no_buffer":
        if page not in (None, 1):
            problems.add(cfg.where("page_size"), "must be 1 with mamba_radix_cache_strategy no_buffer, got %d" % page)
        if "trtllm_mha" in backends:
            problems.add(cfg.where("mamba_radix_cache_strategy"), "no_buffer does not work with trtllm_mha",
                         "use extra_buffer or another attention backend")
    interval_set = "mamba_track_interval" in cfg.args
    if interval_set or (strategy or "").startswith("extra_buffer"):
        interval = cfg.value("mamba_track_interval", FLAGS["mamba_track_interval"]["default"])
        draft = cfg.spec.get("num_draft_tokens")
        if cfg.spec.get("algorithm") and draft is not None and interval < draft:
            problems.add(cfg.where("mamba_track_interval"), "must be >= num_draft_tokens (%d), got %d"
                         % (draft, interval))
        if page is not None and interval % page:
            problems.add(cfg.where("mamba_track_interval"), "must be divisible by page_size (%d), got %d"
                         % (page, interval))
    if cfg.value("enable_mamba_cache_stochastic_rounding", False) and cfg.value("mamba_ssm_dtype") != "float16":
        problems.add(cfg.where("enable_mamba_cache_stochastic_rounding"), "needs mamba_ssm_dtype float16",
                     "set mamba_ssm_dtype: float16")
    if cfg.value("enable_int8_mamba_checkpoint", False):
        for dest in ("enable_hierarchical_cache", "enable_lmcache", "radix_cache_backend"):
            if dest in FLAGS and cfg.value(dest) not in (None, False):
                problems.add(cfg.where("enable_int8_mamba_checkpoint"), "cannot be combined with %s" % dest)

# -- address and authentication ----------------------------------------------------------------------


def check_network(cfg, problems):
    host = cfg.raw.get("host")
    cfg.top["host_loopback"] = True
    if not blank(host):
        if not isinstance(host, str):
            problems.add(cfg.var("host"), "must be an IP address string, got %s" % _describe(host))
        else:
            _check_host(cfg, problems, host.strip())
    dedicated_value(cfg, problems, "port", cfg.var("port"), cfg.raw.get("port"), "top")

    allow = cfg.raw.get("allow_unauthenticated", False)
    if allow is None:
        allow = False
    if not isinstance(allow, bool):
        problems.add(cfg.var("allow_unauthenticated"), "must be a boolean, got %s" % _describe(allow),
                     "use true or false")
        allow = False
    cfg.top["allow_unauthenticated"] = allow


def _check_host(cfg, problems, host):
    try:
        import netaddr  # pylint: disable=import-outside-toplevel
    except ImportError:
        problems.add(cfg.var("host"), "cannot be checked because the Python package 'netaddr' is missing on the "
                     "controller", "install it into Ansible's Python (pip install netaddr)")
        return
    try:
        address = netaddr.IPAddress(host)
    except (netaddr.AddrFormatError, ValueError, TypeError):
        problems.add(cfg.var("host"), "must be an IP address (SGLang binds it), got %r" % host,
                     "use 127.0.0.1 for local clients only, or the address of the interface to listen on "
                     "(0.0.0.0 for all)")
        return
    cfg.top["host"] = host
    cfg.top["host_loopback"] = bool(address.is_loopback())


def check_secrets(cfg, problems):
    for name in ("api_key", "hf_token"):
        secret = cfg.raw.get(name)
        if blank(secret):
            continue
        if not isinstance(secret, str):
            problems.add(cfg.var(name), "must be a string, got %s" % type(secret).__name__,
                         "quote it in YAML or load it from a vault")
        elif control_problem(secret):
            problems.add(cfg.var(name), control_problem(secret, secret=True), "strip the value (e.g. | trim)")
        elif re.search(r"\s", secret):
            problems.add(cfg.var(name), "must not contain whitespace or line breaks (value not shown)",
                         "strip the value (e.g. | trim)")
        elif name == "api_key" and secret.startswith("-"):
            problems.add(cfg.var(name), _DASH_SECRET)
        else:
            cfg.top[name] = secret


def rule_auth(cfg, problems):
    api_key = cfg.top.get("api_key")
    workers = cfg.value("tokenizer_worker_num", 1)
    if api_key is not None and workers > 1:
        problems.add(cfg.where("tokenizer_worker_num"), "SGLang does not support an API key with "
                     "tokenizer_worker_num > 1 (got %d)" % workers,
                     "set tokenizer_worker_num: 1 or drop %s" % cfg.var("api_key"))
    if not cfg.top["host_loopback"] and api_key is None:
        if cfg.top["allow_unauthenticated"]:
            problems.warn(cfg.var("host"), "%s is reachable from the network without an API key "
                          "(allowed by %s)" % (cfg.top.get("host"), cfg.var("allow_unauthenticated")))
        else:
            problems.add(cfg.var("host"), "binds the non-loopback address %s without %s, so anyone who can reach "
                         "the port can use the model" % (cfg.top.get("host"), cfg.var("api_key")),
                         "set %s, bind 127.0.0.1, or set %s: true"
                         % (cfg.var("api_key"), cfg.var("allow_unauthenticated")))
