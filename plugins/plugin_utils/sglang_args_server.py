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
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args_common import _DASH_SECRET, _describe


class _ServerRules(object):
    """The model, cache, address and authentication checks; a part of ``sglang_args._Config``."""

    # -- model and cache ---------------------------------------------------------------------------------

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

    # -- address and authentication ----------------------------------------------------------------------

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
