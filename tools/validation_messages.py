# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The validation messages of the collection for a corpus of bad inputs, as a table (docs/validation-messages.md).

Issue 47: refactors of the validation code must keep the same messages for the same bad inputs. This tool feeds
one or more bad inputs per rule to every user-facing validation entry point and writes the messages as a markdown
table (--write FILE), or compares them with the committed table and exits 1 with a diff (--check [FILE]).

Python entry points (the filters of plugins/filter/ that return problems, and the action plugin model_check's check)
are called directly from this checkout (its collections/ link makes it ansible_collections.llmserve.sglang). The
roles' messages written in YAML come from one generated playbook per role (ROLE_CASES), run with ansible-playbook on
localhost (connection local, check mode, no facts): each case includes the role's validation entry point with the
bad variables in a block whose rescue records ansible_failed_result.msg. Nothing is written outside a temporary
directory, which is removed.

A case starts from a valid configuration and breaks one rule. Run it with the controller venv's Python (ansible-core,
PyYAML, netaddr, jmespath); `make validation-messages` does.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DOC = os.path.join(ROOT, "docs", "validation-messages.md")
_DEL = object()


def _merge(base, overrides):
    cfg = copy.deepcopy(base)
    for key, value in overrides.items():
        if value is _DEL:
            cfg.pop(key, None)
        else:
            cfg[key] = value
    return cfg


def _short(overrides, limit=110):
    parts = []
    for key, value in overrides.items():
        parts.append("%s=%s" % (key, "(unset)" if value is _DEL else repr(value)))
    text = ", ".join(parts) or "(valid base)"
    return text if len(text) <= limit else text[:limit - 3] + "..."


# ---------------------------------------------------------------------------------------------------- sglang_validate

SERVER_GOOD = {
    "version": "0.5.23",
    "model_path": "/models/m",
    "tp_size": 2,
    "gpus": [0, 1],
    "speculative": {"algorithm": "nextn", "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4},
    "args": {"max_running_requests": 64},
    "p2p": "off",
    "api_key": "sk-filter-test-key",
    "config_path": "/etc/sglang/sglang.yaml",
}

_SPEC = SERVER_GOOD["speculative"]

SERVER_CASES = [
    ("not-a-dict-input", None),
    ("model-path-missing", {"model_path": _DEL}),
    ("args-flag-abbreviation", {"args": {"tp": 2}}),
    ("model-path-not-string", {"model_path": 5}),
    ("model-path-control", {"model_path": "/models/m\n"}),
    ("served-name-not-string", {"served_model_name": 5}),
    ("served-name-control", {"served_model_name": "m\tx"}),
    ("config-path-suffix", {"config_path": "/etc/sglang/sglang.json"}),
    ("host-not-string", {"host": 10}),
    ("host-not-ip", {"host": "example.org"}),
    ("host-public-no-key", {"host": "10.0.0.5", "api_key": None}),
    ("allow-unauth-not-bool", {"allow_unauthenticated": "maybe"}),
    ("api-key-not-string", {"api_key": 1234}),
    ("api-key-control", {"api_key": "sk-a\x07b"}),
    ("api-key-whitespace", {"api_key": "sk a b"}),
    ("api-key-dash", {"api_key": "-sk-abc"}),
    ("hf-token-whitespace", {"hf_token": "hf_ a"}),
    ("tokenizer-workers-with-key", {"args": {"tokenizer_worker_num": 2}}),
    ("port-range", {"port": 70000}),
    ("tp-size-zero", {"tp_size": 0, "gpus": []}),
    ("gpus-not-list", {"gpus": "0,1"}),
    ("gpus-bad-entry", {"gpus": [0, "x"]}),
    ("gpus-duplicate", {"gpus": [0, 0]}),
    ("gpus-count", {"gpus": [0, 1, 2]}),
    ("nnodes-not-int", {"nnodes": "two", "node_rank": 0, "dist_init_addr": "10.0.0.1:5000"}),
    ("node-rank-negative", {"nnodes": 2, "node_rank": -1, "dist_init_addr": "10.0.0.1:5000"}),
    ("node-rank-above", {"nnodes": 2, "node_rank": 3, "dist_init_addr": "10.0.0.1:5000"}),
    ("dist-init-missing", {"nnodes": 2, "node_rank": 0}),
    ("dist-init-bad", {"nnodes": 2, "node_rank": 0, "dist_init_addr": "nohostport"}),
    ("dist-init-port-http", {"nnodes": 2, "node_rank": 0, "dist_init_addr": "10.0.0.1:30000", "port": 30000}),
    ("node-ifname-bad", {"nnodes": 2, "node_rank": 0, "dist_init_addr": "10.0.0.1:5000",
                         "node_ifname": "a-very-long-interface-name"}),
    ("nnodes-divisible", {"nnodes": 3, "node_rank": 0, "dist_init_addr": "10.0.0.1:5000"}),
    ("dp-size-multinode", {"nnodes": 2, "node_rank": 0, "dist_init_addr": "10.0.0.1:5000",
                           "args": {"dp_size": 2}}),
    ("attn-dp-divisible", {"args": {"enable_dp_attention": True, "dp_size": 3}}),
    ("env-ifname-conflict", {"nnodes": 2, "node_rank": 0, "dist_init_addr": "10.0.0.1:5000", "node_ifname": "eth0",
                             "env": {"NCCL_SOCKET_IFNAME": "eth1"}}),
    ("arg-port-http", {"args": {"nccl_port": 30000}, "port": 30000}),
    ("args-not-dict", {"args": ["--foo"]}),
    ("args-empty-name", {"args": {"": 1}}),
    ("args-control-name", {"args": {"mem\nfraction": 1}}),
    ("args-dash-duplicate", {"args": {"max_running_requests": 64, "max-running-requests": 32}}),
    ("args-dedicated", {"args": {"model_path": "/x"}}),
    ("args-dedicated-spec", {"args": {"speculative_num_steps": 2}}),
    ("args-managed", {"args": {"config": "/x.yaml"}}),
    ("args-multinode", {"args": {"nnodes": 2}}),
    ("args-secret-control", {"args": {"admin_api_key": "adm\x01"}}),
    ("args-secret-space", {"args": {"admin_api_key": "adm key"}}),
    ("args-secret-dash", {"args": {"admin_api_key": "-adm"}}),
    ("args-removed", {"args": {"cuda_graph_max_bs": 8}}),
    ("args-negative-spelling", {"args": {"no_enable_metrics": True}}),
    ("args-unknown", {"args": {"max_runing_requests": 8}}),
    ("args-unknown-other-version", {"version": "0.5.99", "args": {"brand_new_flag": [True]}}),
    ("args-unknown-other-version-dup", {"version": "0.5.99", "args": {"brand_new": 1, "brand-new": 2}}),
    ("args-switch-not-bool", {"args": {"enable_metrics": "yes please"}}),
    ("args-list-empty", {"args": {"cuda_graph_bs_decode": []}}),
    ("args-type", {"args": {"max_running_requests": [1, 2]}}),
    ("args-int", {"args": {"max_running_requests": "many"}}),
    ("args-float", {"args": {"mem_fraction_static": "lots"}}),
    ("args-fraction-range", {"args": {"mem_fraction_static": 1.5}}),
    ("args-string", {"args": {"tool_call_parser": 5}}),
    ("args-list-dash", {"args": {"log_requests_target": ["stdout", "-x"]}}),
    ("args-log-level", {"args": {"log_level": "loud"}}),
    ("args-port-range", {"args": {"metrics_port": 0}}),
    ("args-positive", {"args": {"max_running_requests": 0}}),
    ("args-non-negative", {"args": {"base_gpu_id": -1}}),
    ("args-unlimited", {"args": {"max_total_tokens": -5}}),
    ("args-chunked", {"args": {"chunked_prefill_size": -5}}),
    ("args-human-negative", {"args": {"max_prefill_tokens": -3}}),
    ("args-human-suffix", {"args": {"hicache_size": "12X"}}),
    ("args-json-parse", {"args": {"extra_metric_labels": "{bad"}}),
    ("args-json-type", {"args": {"extra_metric_labels": 5}}),
    ("args-json-list", {"args": {"sidecar_args": {"a": 1}}}),
    ("args-choice", {"args": {"attention_backend": "fastest"}}),
    ("args-control-value", {"args": {"tool_call_parser": "qwen\n"}}),
    ("args-path", {"args": {"tokenizer_path": "/models/tok\x00"}}),
    ("chunked-page", {"args": {"chunked_prefill_size": 100, "page_size": 16}}),
    ("mamba-no-buffer-page", {"args": {"mamba_radix_cache_strategy": "no_buffer", "page_size": 16}}),
    ("mamba-no-buffer-trtllm", {"args": {"mamba_radix_cache_strategy": "no_buffer", "attention_backend": "trtllm_mha"}}),
    ("mamba-track-draft", {"args": {"mamba_radix_cache_strategy": "extra_buffer", "mamba_track_interval": 2}}),
    ("mamba-track-page", {"args": {"mamba_radix_cache_strategy": "extra_buffer", "mamba_track_interval": 33,
                                   "page_size": 16}}),
    ("mamba-stochastic", {"args": {"enable_mamba_cache_stochastic_rounding": True}}),
    ("mamba-int8", {"args": {"enable_int8_mamba_checkpoint": True, "enable_hierarchical_cache": True}}),
    ("loader-extra-parse", {"args": {"model_loader_extra_config": "{bad"}}),
    ("loader-extra-type", {"args": {"model_loader_extra_config": [1]}}),
    ("loader-extra-dummy", {"args": {"load_format": "dummy", "model_loader_extra_config": {"num_threads": 2}}}),
    ("loader-extra-unknown-key", {"args": {"load_format": "safetensors", "model_loader_extra_config": {"x": 1}}}),
    ("loader-extra-bool", {"args": {"model_loader_extra_config": {"enable_multithread_load": "yes"}}}),
    ("loader-extra-threads", {"args": {"model_loader_extra_config": {"enable_multithread_load": True,
                                                                     "num_threads": 0}}}),
    ("loader-threads-single", {"args": {"model_loader_extra_config": {"enable_multithread_load": False, "num_threads": 8}}}),
    ("loader-fastsafetensors", {"args": {"load_format": "fastsafetensors",
                                         "model_loader_extra_config": {"enable_multithread_load": True}}}),
    ("loader-prefetch-format", {"args": {"load_format": "pt", "weight_loader_prefetch_checkpoints": True}}),
    ("loader-prefetch-mmap", {"args": {"weight_loader_disable_mmap": True,
                                       "weight_loader_prefetch_checkpoints": True}}),
    ("loader-prefetch-threads", {"args": {"weight_loader_prefetch_num_threads": 4}}),
    ("loader-overlap", {"speculative": {}, "args": {"startup_weight_load_mode": "overlap",
                                                    "enable_torch_compile": True}}),
    ("loader-overlap-format", {"args": {"startup_weight_load_mode": "overlap", "load_format": "pt"}}),
    ("metrics-not-bool", {"metrics": "often"}),
    ("metrics-arg-false", {"metrics": True, "args": {"enable_metrics": False}}),
    ("env-not-dict", {"env": ["A=1"]}),
    ("env-bad-name", {"env": {"1BAD": "x"}}),
    ("env-hf-token", {"env": {"HF_TOKEN": "hf_x"}}),
    ("env-redaction-hook", {"env": {"PYTHONPATH": "/x"}, "base_env": {"PYTHONPATH": "/opt/hook"}}),
    ("env-redaction-hook-home", {"env": {"PYTHONHOME": "/x"}, "base_env": {}}),
    ("env-cache", {"env": {"TRITON_CACHE_DIR": "/tmp/t"}, "base_env": {}}),
    ("base-env-not-dict", {"base_env": ["A=1"]}),
    ("env-gpus", {"env": {"CUDA_VISIBLE_DEVICES": "0"}}),
    ("env-value-type", {"env": {"A": [1]}}),
    ("env-value-control", {"env": {"A": "x\ny"}}),
    ("p2p-choice", {"p2p": "sometimes"}),
    ("p2p-ok-type", {"p2p": "auto", "p2p_ok": "yes"}),
    ("p2p-off-arg", {"args": {"disable_custom_all_reduce": False}}),
    ("p2p-off-env", {"env": {"NCCL_P2P_DISABLE": "0"}}),
    ("unit-name-bad", {"unit_name": "sglang server"}),
    ("unit-name-not-string", {"unit_name": 5}),
    ("user-bad", {"user": "bad user"}),
    ("group-bad", {"group": "-grp"}),
    ("ready-path-bad", {"ready_path": "health"}),
    ("ready-path-control", {"ready_path": "/health\n"}),
    ("probe-certs-not-bool", {"probe_validate_certs": "sure"}),
    ("tls-one-flag", {"args": {"ssl_certfile": "/etc/sglang/cert.pem"}}),
    ("spec-not-dict", {"speculative": "nextn"}),
    ("spec-unknown-key", {"speculative": dict(_SPEC, num_step=3)}),
    ("spec-algorithm-missing", {"speculative": {"num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4}}),
    ("spec-algorithm-not-string", {"speculative": dict(_SPEC, algorithm=5)}),
    ("spec-algorithm-none", {"speculative": dict(_SPEC, algorithm="none")}),
    ("spec-algorithm-unknown", {"speculative": dict(_SPEC, algorithm="medusa")}),
    ("spec-algorithm-hint", {"speculative": dict(_SPEC, algorithm="mtp")}),
    ("spec-draft-not-string", {"speculative": dict(_SPEC, algorithm="eagle", draft_model_path=5)}),
    ("spec-ngram-computed", {"speculative": {"algorithm": "ngram", "eagle_topk": 1}}),
    ("spec-topk-without-steps", {"speculative": {"algorithm": "nextn", "eagle_topk": 1}}),
    ("spec-topk-missing", {"speculative": {"algorithm": "nextn", "num_steps": 3}}),
    ("spec-draft-tokens", {"speculative": dict(_SPEC, num_draft_tokens=6)}),
    ("spec-draft-tokens-missing", {"speculative": {"algorithm": "nextn", "num_steps": 3, "eagle_topk": 2}}),
    ("spec-topk-trtllm", {"speculative": dict(_SPEC, eagle_topk=2, num_draft_tokens=8),
                          "args": {"attention_backend": "trtllm_mha"}}),
    ("spec-topk-page", {"speculative": dict(_SPEC, eagle_topk=2, num_draft_tokens=8),
                        "args": {"page_size": 16, "attention_backend": "torch_native"}}),
    ("spec-flex", {"args": {"attention_backend": "flex_attention"}}),
    ("spec-dp-attention", {"speculative": {"algorithm": "ngram"}, "args": {"enable_dp_attention": True,
                                                                           "dp_size": 2}}),
    ("spec-dflash-draft", {"speculative": {"algorithm": "dflash"}}),
    ("spec-dflash-pp", {"speculative": {"algorithm": "dflash", "draft_model_path": "/models/d"},
                        "args": {"pp_size": 2}}),
    ("spec-uno", {"speculative": {"algorithm": "uno"}}),
    ("spec-adaptive-steps", {"speculative": dict(_SPEC, num_steps=4, num_draft_tokens=5),
                             "args": {"speculative_adaptive": True}}),
    ("spec-adaptive-draft", {"speculative": dict(_SPEC, num_draft_tokens=6),
                             "args": {"speculative_adaptive": True}}),
    ("spec-rejection-topk", {"speculative": dict(_SPEC, eagle_topk=2, num_draft_tokens=8),
                             "args": {"speculative_use_rejection_sampling": True,
                                      "speculative_accept_threshold_single": 0.5}}),
    ("spec-rejection-algorithm", {"speculative": {"algorithm": "ngram"},
                                  "args": {"speculative_use_rejection_sampling": True}}),
    ("spec-window", {"args": {"speculative_draft_window_size": 0}}),
    ("spec-sink-negative", {"args": {"speculative_draft_window_size": 8, "speculative_draft_sink_size": -1}}),
    ("spec-sink-needs-window", {"args": {"speculative_draft_sink_size": 2}}),
    ("spec-sam-budget", {"speculative": {"algorithm": "ngram"},
                         "args": {"speculative_ngram_external_corpus_path": "/data/corpus.txt",
                                  "speculative_ngram_external_sam_budget": 0}}),
]


def _server_case(cid, overrides):
    from ansible_collections.llmserve.sglang.plugins.filter.sglang import sglang_validate

    if overrides is None:
        return cid, "['not', 'a', 'dict']", lambda: sglang_validate(["not", "a", "dict"])
    cfg = _merge(SERVER_GOOD, overrides)
    return cid, _short(overrides), lambda: sglang_validate(cfg)


# ---------------------------------------------------------------------------------------- sglang_service_problems

SERVICE_GOOD = {"prefix": "sglang_server_", "user": "sglang", "group": "sglang", "user_create": True,
                "account_home": "/var/lib/sglang", "deploy_users": ["ops", ""],
                "directories": {"sglang_server_home": "/var/lib/sglang", "sglang_server_config_dir": "/etc/sglang",
                                "sglang_server_state_dir": "/var/lib/llmserve-sglang"},
                "venvs": {"sglang_server_venv": "/opt/sglang/venv"},
                "unit_name": "sglang", "trust": {"sglang_server_venv": ["/opt/sglang"]}}


def _own_account(**overrides):
    from ansible_collections.llmserve.sglang.plugins.plugin_utils import service_host as sh

    user = {"exists": True, "name": "sglang", "uid": 998, "gid": 998, "primary_group": "sglang",
            "home": "/var/lib/sglang", "shell": "/usr/sbin/nologin", "comment": sh.ACCOUNT_COMMENT, "groups": []}
    user.update(overrides)
    return user


def _state(**parts):
    from ansible_collections.llmserve.sglang.plugins.plugin_utils import service_host as sh

    state = {
        "accounts": {"user": _own_account(),
                     "group": {"exists": True, "name": "sglang", "gid": 998, "members": [], "primary_of": ["sglang"]},
                     "deployer": {"login_uid": 1000, "login_user": "ops", "sudo_user": "ops"}},
        "unit": {"LoadState": "loaded", "FragmentPath": "/etc/systemd/system/sglang.service", "Id": "sglang.service"},
        "paths": {"/etc/systemd/system/sglang.service": {"exists": True, "type": "file"},
                  "/lib/systemd/system/sglang.service": {"exists": False, "type": None},
                  "/usr/lib/systemd/system/sglang.service": {"exists": False, "type": None}},
        "heads": {"/etc/systemd/system/sglang.service": "# Ansible managed\n[Unit]\n%s\n" % sh.UNIT_MARKER},
        "trust": {"/opt/sglang": []},
    }
    for key, value in parts.items():
        if key in ("user", "group", "deployer"):
            state["accounts"][key] = value
        else:
            state[key] = value
    return state


def _service_cases():
    from ansible_collections.llmserve.sglang.plugins.filter.sglang import sglang_service_problems

    def static(cid, overrides):
        spec = _merge(SERVICE_GOOD, overrides)
        return cid, _short(overrides), lambda: sglang_service_problems(spec)

    def on_host(cid, text, spec_overrides=None, **state_parts):
        spec = _merge(SERVICE_GOOD, spec_overrides or {})
        return cid, text, lambda: sglang_service_problems(spec, _state(**state_parts))

    return [
        ("input-not-dict", "'sglang'", lambda: sglang_service_problems("sglang")),
        ("state-not-dict", "state='x'", lambda: sglang_service_problems(dict(SERVICE_GOOD), "x")),
        static("user-create-not-bool", {"user_create": "maybe"}),
        static("user-root", {"user": "root"}),
        static("user-deployer", {"user": "ops"}),
        static("group-privileged", {"group": "sudo"}),
        static("directory-volatile", {"directories": {"sglang_server_home": "/tmp/sglang"}}),
        static("directory-system", {"directories": {"sglang_server_config_dir": "/etc"}}),
        static("directory-home", {"directories": {"sglang_server_home": "/home/ops"}}),
        static("venv-system", {"venvs": {"sglang_server_venv": "/usr/local"}}),
        on_host("account-missing-no-create", "user_create=False, account missing",
                {"user_create": False}, user={"exists": False, "name": "sglang"}),
        on_host("account-uid-0", "account uid 0", None, user=_own_account(uid=0)),
        on_host("account-is-deployer", "account uid = login uid", None, user=_own_account(uid=1000)),
        on_host("account-privileged-group", "account in group sudo", None,
                user=_own_account(groups=["sudo"])),
        on_host("account-not-ours", "account with another comment", None, user=_own_account(comment="someone")),
        on_host("group-missing-no-create", "user_create=False, group missing", {"user_create": False},
                group={"exists": False, "name": "sglang"}),
        on_host("group-gid-0", "group gid 0", None,
                group={"exists": True, "name": "sglang", "gid": 0, "members": [], "primary_of": ["sglang"]}),
        on_host("group-other-members", "group holds alice", None,
                group={"exists": True, "name": "sglang", "gid": 998, "members": ["alice"],
                       "primary_of": ["sglang"]}),
        on_host("unit-package", "/lib/systemd/system/sglang.service exists", None,
                paths={"/etc/systemd/system/sglang.service": {"exists": True, "type": "file"},
                       "/lib/systemd/system/sglang.service": {"exists": True, "type": "file"},
                       "/usr/lib/systemd/system/sglang.service": {"exists": False, "type": None}}),
        on_host("unit-link", "/etc/systemd/system/sglang.service is a link", None,
                paths={"/etc/systemd/system/sglang.service": {"exists": True, "type": "link"},
                       "/lib/systemd/system/sglang.service": {"exists": False, "type": None},
                       "/usr/lib/systemd/system/sglang.service": {"exists": False, "type": None}}),
        on_host("unit-not-ours", "unit file without the marker", None,
                heads={"/etc/systemd/system/sglang.service": "[Unit]\n"}),
        on_host("unit-known-elsewhere", "systemd loads sglang.service from /run", None,
                unit={"LoadState": "loaded", "FragmentPath": "/run/systemd/system/sglang.service",
                      "Id": "sglang.service"}),
        on_host("trust-writable", "/opt/sglang writable by others", None,
                trust={"/opt/sglang": [{"path": "/opt", "found": "owner uid 1000, mode 0775"}]}),
    ]


# ------------------------------------------------------------------------------------------------- range_problems

def _range_cases():
    from ansible_collections.llmserve.sglang.plugins.filter.checks import range_problems

    def case(cid, rules):
        return cid, _short(rules), lambda: range_problems(rules)

    return [
        case("below", {"sglang_server_ready_timeout": [0, 1, 86400]}),
        case("above", {"sglang_server_journal_lines": [10 ** 9, 1, 100000]}),
        case("not-integer", {"sglang_server_timeout_stop_sec": ["soon", 1, 3600]}),
        case("long-value", {"sglang_server_ready_timeout": ["x" * 200, 1, 86400]}),
        ("rules-not-dict", "['x']", lambda: range_problems(["x"])),
        case("rule-shape", {"sglang_server_ready_timeout": [5, 1]}),
    ]


# ------------------------------------------------------------------------------------------ sglang_spec_problems

def _spec_cases():
    from ansible_collections.llmserve.sglang.plugins.filter.sglang_spec import sglang_spec_problems

    def case(cid, setting, prompts):
        return cid, "setting=%r, prompts=%r" % (setting, prompts), lambda: sglang_spec_problems(setting, prompts)

    return [
        case("setting-word", "sometimes", ["Hello"]),
        case("setting-negative", -1, ["Hello"]),
        case("setting-list", [2], ["Hello"]),
        case("prompts-empty", "auto", []),
        case("prompts-not-list", "auto", "Hello"),
        case("prompts-blank-entry", "auto", ["Hello", ""]),
    ]


# -------------------------------------------------------------------------------------- sglang_gateway_validate

def _gateway_base():
    import os

    import yaml

    root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    with open(os.path.join(root, "roles", "sglang_gateway", "defaults", "main.yml"), encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)
    cfg = {key[len("sglang_gateway_"):]: value for key, value in defaults.items()}
    cfg.update({"gateway_name": "gw", "gateway_address": "10.0.0.1", "host": "10.0.0.1",
                "admin_api_key": "adm-0123456789abcdef",
                "workers": [_worker("w1", ansible_host="10.0.0.11"), _worker("w2", ansible_host="10.0.0.12")]})
    return cfg


def _worker(name, host="0.0.0.0", port=30000, ansible_host="", ipv4="", ipv6="", api_key="sk-worker-key",
            args=None):
    return {"name": name, "host": host, "port": port, "args": args or {}, "api_key": api_key,
            "ansible_host": ansible_host, "ipv4": ipv4, "ipv6": ipv6}


GATEWAY_CASES = [
    ("host-not-ip", {"host": "gateway.example"}),
    ("port-range", {"port": 0}),
    ("port-clash-metrics", {"metrics_port": 30000, "port": 30000}),
    ("metrics-host-bad", {"metrics_host": "somewhere"}),
    ("policy-unknown", {"policy": "fastest"}),
    ("health-interval-zero", {"health_check_interval": 0}),
    ("health-timeout-text", {"health_check_timeout": "soon"}),
    ("health-endpoint-bad", {"health_check_endpoint": "health"}),
    ("retry-backoff-order", {"retry_initial_backoff_ms": 5000, "retry_max_backoff_ms": 100}),
    ("log-level-bad", {"log_level": "loud"}),
    ("log-json-not-bool", {"log_json": "maybe"}),
    ("audit-not-bool", {"audit": "maybe"}),
    ("admin-key-missing", {"admin_api_key": ""}),
    ("admin-key-space", {"admin_api_key": "adm key"}),
    ("admin-key-short", {"admin_api_key": "adm"}),
    ("worker-key-control", {"worker_api_key": "sk\n"}),
    ("allow-unauth-not-bool", {"allow_unauthenticated": "maybe"}),
    ("tls-cert-only", {"tls_cert_path": "/etc/smg/cert.pem"}),
    ("tls-relative", {"tls_cert_path": "cert.pem", "tls_key_path": "key.pem"}),
    ("worker-ca-relative", {"worker_ca_path": "ca.pem"}),
    ("args-not-dict", {"args": ["--x"]}),
    ("args-name-bad", {"args": {"Bad Flag": 1}}),
    ("args-refused", {"args": {"api-key": "x"}}),
    ("args-owned", {"args": {"port": 1}}),
    ("args-abbreviation", {"args": {"health-check-int": 5}}),
    ("args-value-type", {"args": {"request-id-headers": {"a": 1}}}),
    ("args-value-control", {"args": {"request-id-headers": "x\n"}}),
    ("args-list-dash", {"args": {"request-id-headers": ["a", "-x"]}}),
    ("args-rdma-not-ip", {"args": {"rdma-listen-ip": "somewhere"}}),
    ("args-rdma-two", {"args": {"rdma-listen-ip": ["10.0.0.1", "10.0.0.2"]}}),
    ("args-rdma-any", {"args": {"rdma-listen-ip": "0.0.0.0"}}),
    ("workers-none", {"workers": []}),
    ("workers-not-list", {"workers": "w1"}),
    ("worker-no-address", {"workers": [_worker("w1")]}),
    ("worker-port-bad", {"workers": [_worker("w1", ansible_host="10.0.0.11", port="http")]}),
    ("worker-duplicate-url", {"workers": [_worker("w1", ansible_host="10.0.0.11"),
                                          _worker("w2", ansible_host="10.0.0.11")]}),
    ("worker-loopback", {"workers": [_worker("w1", host="127.0.0.1")]}),
    ("worker-key-mismatch", {"workers": [_worker("w1", ansible_host="10.0.0.11", api_key="a"),
                                         _worker("w2", ansible_host="10.0.0.12", api_key="b")]}),
    ("worker-not-dict", {"workers": ["w1"]}),
    ("worker-host-bad", {"workers": [_worker("w1", host="somewhere", ansible_host="10.0.0.11")]}),
    ("worker-key-space", {"workers": [_worker("w1", ansible_host="10.0.0.11", api_key="a b")]}),
    ("worker-same-port-as-gateway", {"host": "10.0.0.11", "gateway_address": "10.0.0.11", "port": 30000, "workers": [_worker("w1", ansible_host="10.0.0.11")]}),
    ("admin-key-equals-worker-key", {"admin_api_key": "sk-worker-key"}),
    ("host-public-no-key", {"worker_api_key": "", "workers": [_worker("w1", ansible_host="10.0.0.11", api_key="")],
                            "allow_unauthenticated": False}),
    ("unit-name-bad", {"unit_name": "smg gateway"}),
    ("user-bad", {"user": "bad user"}),
    ("config-dir-relative", {"config_dir": "etc/smg"}),
    ("venv-relative", {"venv": "opt/smg"}),
]


def _gateway_cases():
    from ansible_collections.llmserve.sglang.plugins.filter.sglang_gateway import sglang_gateway_validate

    base = _gateway_base()
    cases = [("input-not-dict", "'gw'", lambda: sglang_gateway_validate("gw"))]
    for cid, overrides in GATEWAY_CASES:
        cfg = _merge(base, overrides)
        cases.append((cid, _short(overrides), (lambda cfg=cfg: sglang_gateway_validate(cfg))))
    return cases


# ----------------------------------------------------------------------------------- sglang_monitoring_problems

def _monitoring_settings(**changes):
    settings = {
        "for_durations": {"sglang_monitoring_worker_down_for": "2m"},
        "windows": {"sglang_monitoring_ttft_window": "5m"},
        "numbers": {"sglang_monitoring_ttft_p99_seconds": ["5", 0, 86400]},
        "names": {"sglang_monitoring_sglang_job": "sglang"},
        "paths": {"sglang_monitoring_rules_dir": "/etc/prometheus/rules"},
        "prometheus": "existing",
        "write_targets": True,
        "prometheus_version": "",
        "alertmanagers": [],
        "tls_ca_file": "",
        "ranges": {"sglang_monitoring_queue_backlog_threshold": [50, 1, 1000000]},
    }
    settings.update(changes)
    return settings


def _monitoring_cases():
    from ansible_collections.llmserve.sglang.plugins.filter.sglang_monitoring import sglang_monitoring_problems

    def case(cid, changes, entry="main"):
        settings = _monitoring_settings(**changes)
        text = _short(changes) + ("" if entry == "main" else " (node_exporter)")
        return cid, text, lambda: sglang_monitoring_problems(settings, entry)

    node = {"textfile_dir": "/var/lib/prometheus/node-exporter", "package": "prometheus-node-exporter"}

    def node_case(cid, changes):
        settings = dict(node, **changes)
        return cid, _short(changes) + " (node_exporter)", lambda: sglang_monitoring_problems(settings,
                                                                                             "node_exporter")

    return [
        ("input-not-dict", "'x'", lambda: sglang_monitoring_problems("x")),
        ("entry-point-unknown", "entry_point='rules'", lambda: sglang_monitoring_problems({}, "rules")),
        case("for-duration-bad", {"for_durations": {"sglang_monitoring_worker_down_for": "2 minutes"}}),
        case("window-zero", {"windows": {"sglang_monitoring_ttft_window": "0s"}}),
        case("number-bad", {"numbers": {"sglang_monitoring_ttft_p99_seconds": ["fast", 0, 86400]}}),
        case("number-rule-shape", {"numbers": {"sglang_monitoring_ttft_p99_seconds": ["5"]}}),
        case("name-bad", {"names": {"sglang_monitoring_sglang_job": "sglang job\""}}),
        case("prometheus-choice", {"prometheus": "docker"}),
        case("write-targets-off", {"prometheus": "distribution", "write_targets": False}),
        case("path-relative", {"paths": {"sglang_monitoring_rules_dir": "rules"}}),
        case("version-bad", {"prometheus_version": "latest!"}),
        case("alertmanagers-not-list", {"alertmanagers": "am:9093"}),
        case("alertmanagers-entry", {"alertmanagers": ["am"]}),
        case("tls-ca-relative", {"tls_ca_file": "ca.pem"}),
        case("range-above", {"ranges": {"sglang_monitoring_queue_backlog_threshold": [0, 1, 1000000]}}),
        node_case("textfile-dir-relative", {"textfile_dir": "textfiles"}),
        node_case("package-bad", {"package": "node exporter"}),
    ]


# --------------------------------------------------------------------------------------- sglang_node_group_check

def _mn_node(name, address, **extra):
    node = {"inventory_hostname": name, "ansible_host": address,
            "ansible_facts": {"default_ipv4": {"address": address, "interface": "eth0"},
                              "interfaces": ["lo", "eth0"],
                              "eth0": {"device": "eth0", "ipv4": {"address": address}}},
            "sglang_server_node_group": "big", "sglang_server_node_rank": "", "sglang_server_dist_init_host": "",
            "sglang_server_dist_init_port": 5000, "sglang_server_node_ifname": "",
            "sglang_server_node_firewall": True, "sglang_server_node_firewall_sources": [],
            "sglang_server_version": "0.5.23", "sglang_server_model_path": "/models/m", "sglang_server_tp_size": 2,
            "sglang_server_speculative": {}, "sglang_server_args": {}, "sglang_server_gpus": [0],
            "sglang_server_port": 30000}
    node.update(extra)
    return node


def _node_group_cases():
    from ansible_collections.llmserve.sglang.plugins.filter.sglang import sglang_node_group_check

    def case(cid, text, nodes, group="big"):
        return cid, text, lambda: sglang_node_group_check(nodes, group)

    a, b = "10.0.0.1", "10.0.0.2"
    return [
        ("group-not-string", "group=5", lambda: sglang_node_group_check([], 5)),
        case("nodes-not-list", "nodes='x'", "x"),
        case("one-node", "one node", [_mn_node("n1", a)]),
        case("versions-differ", "sglang_server_version 0.5.23 / 0.5.22",
             [_mn_node("n1", a), _mn_node("n2", b, sglang_server_version="0.5.22")]),
        case("model-differs", "model_path differs",
             [_mn_node("n1", a), _mn_node("n2", b, sglang_server_model_path="/models/other")]),
        case("args-differ", "args differ",
             [_mn_node("n1", a), _mn_node("n2", b, sglang_server_args={"max_running_requests": 8})]),
        case("rank-duplicate", "both rank 0",
             [_mn_node("n1", a, sglang_server_node_rank=0), _mn_node("n2", b, sglang_server_node_rank=0)]),
        case("rank-bad", "rank 'x'",
             [_mn_node("n1", a, sglang_server_node_rank="x"), _mn_node("n2", b)]),
        case("rank-gap", "ranks 0 and 5",
             [_mn_node("n1", a, sglang_server_node_rank=0), _mn_node("n2", b, sglang_server_node_rank=5)]),
        case("address-missing", "node without address",
             [_mn_node("n1", a), _mn_node("n2", "", ansible_facts={})]),
        case("dist-init-host-bad", "dist_init_host 'not an address'",
             [_mn_node("n1", a, sglang_server_dist_init_host="not an address"), _mn_node("n2", b)]),
        case("dist-init-port-range", "dist_init_port 0",
             [_mn_node("n1", a, sglang_server_dist_init_port=0), _mn_node("n2", b, sglang_server_dist_init_port=0)]),
        case("firewall-not-bool", "node_firewall 'maybe'",
             [_mn_node("n1", a, sglang_server_node_firewall="maybe"),
              _mn_node("n2", b, sglang_server_node_firewall="maybe")]),
        case("firewall-sources-bad", "firewall_sources ['nowhere']",
             [_mn_node("n1", a, sglang_server_node_firewall_sources=["nowhere"]),
              _mn_node("n2", b, sglang_server_node_firewall_sources=["nowhere"])]),
    ]


# ----------------------------------------------------------------------------------------- sglang_model_validate

MODEL_GOOD = dict(repo="Qwen/Qwen3.5-122B-A10B", revision="0123456789abcdef0123456789abcdef01234567", hub_endpoint="",
                  source="hub", source_path="", dir="/var/lib/llmserve-models", allow_floating_revision=False,
                  allow_pickle=False, verify="changed", python="/opt/llmserve-model-venv/bin/python", venv=True,
                  venv_path="/opt/llmserve-model-venv", install="pip", wheelhouse="", hub_version="1.33.0",
                  prewarm="auto", prewarm_margin=0.2, group="sglang")

MODEL_CASES = [
    ("floating-not-bool", {"allow_floating_revision": "maybe"}),
    ("pickle-not-bool", {"allow_pickle": "maybe"}),
    ("source-choice", {"source": "s3"}),
    ("verify-choice", {"verify": "sometimes"}),
    ("install-choice", {"install": "conda"}),
    ("prewarm-choice", {"prewarm": "always-maybe"}),
    ("repo-missing", {"repo": ""}),
    ("repo-shape", {"repo": "just-a-name"}),
    ("repo-traversal", {"repo": "org/../name"}),
    ("revision-branch", {"revision": "main"}),
    ("revision-short", {"revision": "0123abc"}),
    ("revision-empty", {"revision": ""}),
    ("revision-path-floating", {"source": "path", "source_path": "/srv/m", "allow_floating_revision": True,
                                "revision": "main"}),
    ("endpoint-not-string", {"hub_endpoint": 5}),
    ("endpoint-login", {"hub_endpoint": "https://u:p@hub.example"}),
    ("endpoint-shape", {"hub_endpoint": "hub.example?x=1"}),
    ("source-path-control", {"source": "path", "source_path": "/srv/m\n"}),
    ("source-path-relative", {"source": "path", "source_path": "srv/m"}),
    ("source-path-in-store", {"source": "path", "source_path": "/var/lib/llmserve-models/x"}),
    ("dir-relative", {"dir": "models"}),
    ("dir-root", {"dir": "/"}),
    ("dir-system", {"dir": "/var/lib"}),
    ("dir-tmp", {"dir": "/tmp/models"}),
    ("dir-in-home", {"dir": "/var/lib/sglang/models", "service_home": "/var/lib/sglang"}),
    ("dir-control", {"dir": "/var/lib/m\x1b"}),
    ("prewarm-margin-bad", {"prewarm_margin": "lots"}),
    ("prewarm-margin-negative", {"prewarm_margin": -1}),
    ("python-missing-none", {"install": "none", "python": "", "venv": False}),
    ("python-relative", {"python": "bin/python"}),
    ("wheelhouse-missing", {"install": "wheelhouse", "wheelhouse": ""}),
    ("venv-relative", {"venv_path": "venv"}),
    ("venv-system", {"venv_path": "/usr"}),
    ("hub-version-bad", {"hub_version": "latest"}),
    ("group-bad", {"group": "Bad Group"}),
]


def _model_cases():
    from ansible_collections.llmserve.sglang.plugins.filter.sglang_model import sglang_model_validate

    cases = [("input-not-dict", "'x'", lambda: sglang_model_validate("x"))]
    for cid, overrides in MODEL_CASES:
        cfg = _merge(MODEL_GOOD, overrides)
        cases.append((cid, _short(overrides), (lambda cfg=cfg: sglang_model_validate(cfg))))
    return cases


# ----------------------------------------------------------------------------------- sglang_rollout_step_problems

def _rollout_cases():
    from ansible_collections.llmserve.sglang.plugins.filter.sglang import sglang_rollout_step_problems

    good = {"role": "llmserve.sglang.sglang_server", "entry": "deploy", "vars": {}, "tags": []}

    def case(cid, steps):
        return cid, repr(steps)[:110], lambda: sglang_rollout_step_problems(steps)

    return [
        case("not-list", "deploy"),
        case("step-not-dict", ["deploy"]),
        case("unknown-key", [dict(good, when="x")]),
        case("role-bad", [dict(good, role="")]),
        case("role-newline", [dict(good, role="llmserve.sglang.sglang_server\n")]),
        case("entry-bad", [dict(good, entry="")]),
        case("vars-not-dict", [dict(good, vars=["a"])]),
        case("tags-not-list", [dict(good, tags="x")]),
        case("lease-unknown", [dict(good, lease="forever")]),
        case("drain-not-late", [dict(good, entry="main", drain="early")]),
        case("drain-late-entry", [dict(good, drain="late")]),
        case("drain-late-after", [{"role": "local_role"}, dict(good, entry="main", drain="late")]),
    ]


# ---------------------------------------------------------------------------------------- sglang_device_problems

def _device_cases():
    from ansible_collections.llmserve.sglang.plugins.filter.sglang import sglang_device_problems

    facts = {"char_devices": [{"major": 195, "name": "nvidia-frontend"}, {"major": 509, "name": "nvidia-uvm"},
                              {"major": 237, "name": "nvidia-caps"}],
             "device_nodes": [{"path": "/dev/nvidia0", "type": "char", "major": 195, "minor": 0},
                              {"path": "/dev/nvidia-uvm", "type": "char", "major": 509, "minor": 0},
                              {"path": "/dev/nvidia-caps/nvidia-cap1", "type": "char", "major": 237, "minor": 1}]}

    def case(cid, text, gpu_host, allowed):
        return cid, text, lambda: sglang_device_problems(gpu_host, allowed)

    return [
        case("input-not-dict", "gpu_host='x'", "x", ["nvidia-frontend"]),
        case("facts-missing", "gpu_host={}", {}, ["nvidia-frontend"]),
        case("uvm-closed", "allowed=['nvidia-frontend', 'nvidia-caps']", facts, ["nvidia-frontend", "nvidia-caps"]),
        case("class-empty", "allowed=['']", facts, [""]),
        case("char-devices-not-list", "char_devices={}", dict(facts, char_devices={}), ["nvidia-frontend"]),
        case("unknown-major", "a node of major 300",
             dict(facts, device_nodes=facts["device_nodes"] + [{"path": "/dev/nvidia-x", "type": "char", "major": 300,
                                                                "minor": 0}]),
             ["nvidia-frontend", "nvidia-uvm", "nvidia-caps"]),
    ]


# ------------------------------------------------------------------------------------ nvidia_driver_param_errors

def _nvidia_cases():
    from ansible_collections.llmserve.sglang.plugins.filter.nvidia import nvidia_driver_param_errors

    def case(cid, registry, params=None):
        text = "registry=%r" % (registry,) + (", params=%r" % (params,) if params is not None else "")
        return cid, text[:110], lambda: nvidia_driver_param_errors(registry, params)

    return [
        case("registry-not-dict", ["DmaRemapPeerMmio=1"]),
        case("registry-key-bad", {"Dma Remap": 1}),
        case("registry-key-separator", {"DmaRemapPeerMmio;x": 1}),
        case("registry-value-negative", {"DmaRemapPeerMmio": -1}),
        case("registry-value-large", {"DmaRemapPeerMmio": 2 ** 33}),
        case("registry-value-text", {"DmaRemapPeerMmio": "on"}),
        case("registry-value-bool", {"DmaRemapPeerMmio": True}),
        case("registry-key-empty", {"": 1}),
        case("registry-key-prefixed", {"NVreg_DmaRemapPeerMmio": 1}),
        case("registry-key-type", {5: 1}),
        case("params-prefix-case", {}, {"nvreg_EnableGpuFirmware": 1}),
        case("params-prefix-missing", {}, {"EnableGpuFirmware": 1}),
        case("params-string-param", {}, {"NVreg_RmMsg": "x"}),
        case("params-also-registry", {"RmProfilingAdminOnly": 0}, {"NVreg_RestrictProfilingToAdminUsers": 0}),
        case("params-not-dict", {}, ["NVreg_X=1"]),
        case("params-name-bad", {}, {"bad name": 1}),
        case("params-registry-dwords", {}, {"NVreg_RegistryDwords": "A=1"}),
        case("params-value-control", {}, {"NVreg_EnableGpuFirmware": "1\n"}),
        case("params-value-space", {}, {"NVreg_EnableGpuFirmware": "1 2"}),
        case("params-value-type", {}, {"NVreg_EnableGpuFirmware": [1]}),
        case("params-value-bool", {}, {"NVreg_EnableGpuFirmware": True}),
    ]


# ---------------------------------------------------------------------------------------- iommu_preflight_evaluate

def _preflight_cases():
    from ansible_collections.llmserve.sglang.plugins.filter.iommu_preflight import iommu_preflight_evaluate

    def gpu(address, arch="blackwell", group=10, domain="DMA-FQ"):
        return {"pci_address": address, "index": int(address[5:7], 16) - 0x41, "architecture": arch,
                "iommu_group": group, "iommu_domain_type": domain, "name": "NVIDIA RTX PRO 6000", "driver": "nvidia"}

    def host(**changes):
        facts = {"gpus": [gpu("0000:41:00.0", group=10), gpu("0000:42:00.0", group=11)],
                 "iommu": {"enabled": True, "mode": "translated", "cmdline": "amd_iommu=on iommu=nopt"},
                 "sev_snp": {"enabled": False}, "vm_guest": False, "dma_faults": [], "xid_events": [],
                 "identity_units": [], "char_devices": {}, "device_nodes": []}
        facts.update(changes)
        return facts

    def case(cid, text, gpu_host, **kwargs):
        return cid, text, lambda: _errors(iommu_preflight_evaluate(gpu_host, **kwargs))

    def _errors(result):
        return list(result.get("errors", [])) if isinstance(result, dict) else result

    return [
        ("input-not-dict", "gpu_host='x'", lambda: iommu_preflight_evaluate("x")),
        case("gpus-not-list", "gpus='0'", host(), gpus="0"),
        case("xids-not-list", "fatal_xids='79'", host(), fatal_xids="79"),
        case("no-gpu", "no GPUs, require_gpu", host(gpus=[])),
        case("gpu-not-found", "gpus=[7]", host(), gpus=[7]),
        case("identity-blackwell", "identity domain on a Blackwell GPU",
             host(gpus=[gpu("0000:41:00.0", domain="identity")])),
        case("iommu-required", "require_iommu, IOMMU off", host(iommu={"enabled": False}), require_iommu=True),
        case("fatal-xid", "Xid 79 on GPU 0000:41:00.0",
             host(xid_events=[{"pci_address": "0000:41:00.0", "xid": 79, "line": "NVRM: Xid (PCI:0000:41:00): 79"}])),
        case("identity-unit", "an identity boot unit",
             host(identity_units=[{"unit": "iommu-identity.service", "enabled": True}])),
        case("dma-faults-mode", "dma_faults='ignore'", host(), dma_faults="ignore"),
        case("next-boot-mode", "next_boot='sometimes'", host(), next_boot="sometimes"),
    ]


# -------------------------------------------------------------------------------------- sglang_monitoring_targets

def _targets_cases():
    from ansible_collections.llmserve.sglang.plugins.filter.sglang_monitoring import sglang_monitoring_targets

    def cfg(hosts, groups, jobs=None):
        return {"prometheus": {"name": "prom-01", "ansible_host": "10.0.9.1"},
                "servers_group": "sglang_servers", "gateways_group": "sglang_gateways",
                "jobs": jobs or {"sglang": "sglang", "gateway": "sglang_gateway", "node": "node"},
                "groups": groups, "hosts": hosts}

    def server(address, **extra):
        return dict({"sglang_server_host": address, "sglang_server_metrics": True,
                     "sglang_model_repo": "Qwen/Qwen3.5-122B-A10B", "sglang_model_revision": "a" * 40,
                     "sglang_server_served_model_name": "qwen"}, **extra)

    def case(cid, text, hosts, groups=None, jobs=None):
        value = cfg(hosts, groups if groups is not None else {"sglang_servers": sorted(hosts)}, jobs)
        return cid, text, lambda: list(sglang_monitoring_targets(value)["errors"])

    return [
        ("input-not-dict", "'x'", lambda: sglang_monitoring_targets("x")),
        case("no-servers", "group sglang_servers empty", {}, {"sglang_servers": []}),
        case("rank-0-missing", "multi-node group g with ranks 1, 2",
             {"n1": server("10.0.0.1", sglang_server_node_group="g", sglang_server_node_rank=1),
              "n2": server("10.0.0.2", sglang_server_node_group="g", sglang_server_node_rank=2)},
             {"sglang_servers": ["n1", "n2"], "g": ["n1", "n2"]}),
        case("metrics-off", "sglang_server_metrics=False", {"w1": server("10.0.0.1", sglang_server_metrics=False)}),
        case("duplicate-target", "w1 and w2 at 10.0.0.1:30000",
             {"w1": server("10.0.0.1"), "w2": server("0.0.0.0", ansible_host="10.0.0.1")}),
        case("loopback", "server on 127.0.0.1, Prometheus elsewhere", {"w1": {"sglang_server_metrics": True}}),
        case("jobs-equal", "gateway job = sglang job", {"w1": server("10.0.0.1")}, None,
             {"sglang": "sglang", "gateway": "sglang", "node": "node"}),
        case("host-not-ip", "sglang_server_host='gpu-node-01'", {"w1": server("gpu-node-01")}),
        case("port-range", "sglang_server_port=70000", {"w1": server("10.0.0.1", sglang_server_port=70000)}),
        case("metrics-not-bool", "sglang_server_metrics='maybe'",
             {"w1": server("10.0.0.1", sglang_server_metrics="maybe")}),
        case("ansible-host-bad", "ansible_host='bad host', node exporter on",
             {"w1": server("10.0.0.1", ansible_host="bad host", sglang_monitoring_node_exporter=True)}),
        case("rank-negative", "sglang_server_node_rank=-1",
             {"w1": server("10.0.0.1", sglang_server_node_group="g", sglang_server_node_rank=-1)}),
        case("served-name-control", "served_model_name='a\\nb'",
             {"w1": server("10.0.0.1", sglang_server_served_model_name="a\nb")}),
    ]


# ------------------------------------------------------------------------------------ filters that raise on input

def _raising_cases():
    """Filters whose only messages are the errors they raise on a bad value (the task fails with that text)."""
    from ansible_collections.llmserve.sglang.plugins.filter import nvidia, sglang, sglang_spec

    return [
        ("sglang_url_path", "relative", "'health'", lambda: sglang.sglang_url_path("health")),
        ("sglang_url_path", "query", "'/health?x=1'", lambda: sglang.sglang_url_path("/health?x=1")),
        ("sglang_unit_value", "text-control", "'a\\nb', 'text'", lambda: sglang.sglang_unit_value("a\nb", "text")),
        ("sglang_unit_value", "path-relative", "'etc/x', 'path'", lambda: sglang.sglang_unit_value("etc/x", "path")),
        ("sglang_unit_value", "kind-unknown", "'x', 'colour'", lambda: sglang.sglang_unit_value("x", "colour")),
        ("sglang_base_url", "host-control", "host='10.0.0.1\\n'",
         lambda: sglang.sglang_base_url({}, "10.0.0.1\n", 30000)),
        ("sglang_spec_verdict", "on-low-choice", "on_low='panic'",
         lambda: sglang_spec.sglang_spec_verdict({}, "auto", "panic")),
        ("sglang_rollout_lease", "phase-unknown", "phase='forever'", lambda: sglang.sglang_rollout_lease("forever")),
        ("sglang_node_group_plan", "one-node", "one node of group 'big'",
         lambda: sglang.sglang_node_group_plan([_mn_node("n1", "10.0.0.1")], "big")),
        ("nvidia_modprobe_options", "registry-value-bad", "registry={'DmaRemapPeerMmio': 'on'}",
         lambda: nvidia.nvidia_modprobe_options({"DmaRemapPeerMmio": "on"})),
        ("sglang_render", "invalid", "model_path unset, p2p='sometimes'",
         lambda: sglang.sglang_render(_merge(SERVER_GOOD, {"model_path": _DEL, "p2p": "sometimes"}))),
    ]


def _window_cases():
    from ansible_collections.llmserve.sglang.plugins.filter.sglang import sglang_rollout_window_problems

    pools = {"gw-a": ["a1", "a2", "a3", "a4"], "gw-b": ["b1", "b2"]}

    def case(cid, value, batch=None):
        text = "max_unavailable=%r" % (value,) + (", batch=%r" % (batch,) if batch else "")
        return cid, text, lambda: sglang_rollout_window_problems(value, batch, pools)

    return [
        case("zero", 0),
        case("text", "two"),
        case("percent-zero", "0%"),
        case("percent-over", "150%"),
        case("bool", True),
        case("batch-over-window", 1, ["a1", "b1", "a2"]),
        case("batch-over-percent", "50%", ["a1", "a2", "a3", "b1", "b2"]),
    ]


def _canary_cases():
    from ansible_collections.llmserve.sglang.plugins.filter.sglang import sglang_canary_problems

    def case(cid, canary="auto", seconds=300, thresholds=None, inconclusive="rollback"):
        text = "canary=%r, seconds=%r, thresholds=%r, inconclusive=%r" % (canary, seconds, thresholds, inconclusive)
        return cid, text, lambda: sglang_canary_problems(canary, seconds, thresholds, inconclusive)

    return [
        case("count-text", canary="some"),
        case("count-negative", canary=-1),
        case("count-bool", canary=True),
        case("seconds-zero", seconds=0),
        case("seconds-over", seconds=86401),
        case("threshold-unknown", thresholds={"max_latency": 2}),
        case("threshold-ratio-negative", thresholds={"max_tpot_ratio": -1}),
        case("threshold-min-requests", thresholds={"min_requests": 0}),
        case("threshold-statuses", thresholds={"error_statuses": ["server errors"]}),
        case("thresholds-not-dict", thresholds="strict"),
        case("inconclusive-choice", inconclusive="ignore"),
    ]


def cases():
    """Every Python case: [(entry point, case id, input text, callable)]."""
    result = []
    for cid, overrides in SERVER_CASES:
        result.append(("sglang_validate",) + _server_case(cid, overrides))
    groups = (
        ("sglang_service_problems", _service_cases),
        ("range_problems", _range_cases),
        ("sglang_spec_problems", _spec_cases),
        ("sglang_gateway_validate", _gateway_cases),
        ("sglang_monitoring_problems", _monitoring_cases),
        ("sglang_node_group_check", _node_group_cases),
        ("sglang_model_validate", _model_cases),
        ("sglang_rollout_step_problems", _rollout_cases),
        ("sglang_rollout_window_problems", _window_cases),
        ("sglang_canary_problems", _canary_cases),
        ("sglang_device_problems", _device_cases),
        ("nvidia_driver_param_errors", _nvidia_cases),
        ("iommu_preflight_evaluate", _preflight_cases),
        ("sglang_monitoring_targets", _targets_cases),
    )
    for entry, make in groups:
        for case in make():
            result.append((entry,) + tuple(case))
    result.extend(_raising_cases())
    return result


# ------------------------------------------------------------------------------------------- role-level YAML cases


# role (or role:label) -> (entry point (tasks_from), [(case id, variables[, input text])]). Each case runs in a block of its own in
# one generated playbook per role (localhost, connection local, check mode, no facts); its rescue records
# ansible_failed_result.msg. Every case must fail in the validation entry point: nothing after it may run.
ROLE_CASES = {
    "iommu_preflight": ("validate", [
        ("gpus-bad", {"iommu_preflight_gpus": ["gpu0", -1]}),
        ("gpus-duplicate", {"iommu_preflight_gpus": [0, 0]}),
        ("root-relative", {"iommu_preflight_root": "fixture"}),
        ("kernel-log-relative", {"iommu_preflight_kernel_log": "dmesg.txt"}),
        ("dma-faults-choice", {"iommu_preflight_dma_faults": "ignore"}),
        ("next-boot-choice", {"iommu_preflight_next_boot": "sometimes"}),
        ("options-file-relative", {"iommu_preflight_next_boot_options_file": "90-llmserve-nvidia.conf"}),
        ("fatal-xids-bad", {"iommu_preflight_fatal_xids": [79, 0, 79]}),
        ("architectures-without-blackwell", {"iommu_preflight_identity_forbidden_architectures": ["hopper"]}),
        ("architectures-unknown", {"iommu_preflight_identity_forbidden_architectures": ["blackwell", "volta2"]}),
        ("p2p-timeout-low", {"iommu_preflight_p2p_timeout": 1}),
        ("p2p-buffer-range", {"iommu_preflight_p2p_buffer_mib": 8192}),
        ("p2p-python-relative", {"iommu_preflight_p2p_python": "python3"}),
        ("p2p-cudart-relative", {"iommu_preflight_p2p_cudart": "libcudart.so"}),
        ("p2p-required-without-test", {"iommu_preflight_p2p_required": True, "iommu_preflight_p2p_test": False}),
    ]),
    "nvidia_driver": ("validate", [
        ("registry-value-bad", {"nvidia_driver_registry_dwords": {"DmaRemapPeerMmio": "on"}}),
        ("modprobe-file-elsewhere", {"nvidia_driver_modprobe_file": "/etc/nvidia.conf"}),
        ("apply-reboot-not-ok", {"nvidia_driver_apply": "reboot", "nvidia_driver_reboot_ok": False}),
        ("gpu-services-not-list", {"nvidia_driver_gpu_services": "sglang.service"}),
        ("hold-file-elsewhere", {"nvidia_driver_hold_file": "/etc/apt/holds"}),
        ("reboot-timeout-range", {"nvidia_driver_reboot_timeout": 5}),
        ("apply-choice", {"nvidia_driver_apply": "now"}),
    ]),
    "sglang_server": ("validate", [
        ("model-path-missing", {"sglang_server_model_path": ""}),
        ("install-wheelhouse-without-dir", {"sglang_server_model_path": "/models/m",
                                            "sglang_server_install": "wheelhouse", "sglang_server_wheelhouse": ""}),
        ("install-none-without-python", {"sglang_server_model_path": "/models/m", "sglang_server_install": "none",
                                         "sglang_server_python": ""}),
        ("state-dir-in-home", {"sglang_server_model_path": "/models/m",
                               "sglang_server_state_dir": "/var/lib/sglang/state"}),
        ("cache-root-relative", {"sglang_server_model_path": "/models/m", "sglang_server_cache_root": "cache"}),
        ("ready-timeout-range", {"sglang_server_model_path": "/models/m", "sglang_server_ready_timeout": 0}),
        ("spec-min-accept-bad", {"sglang_server_model_path": "/models/m",
                                 "sglang_server_speculative_min_accept_length": "sometimes"}),
        ("user-root", {"sglang_server_model_path": "/models/m", "sglang_server_user": "root"}),
        ("node-group-alone", {"sglang_server_model_path": "/models/m", "sglang_server_node_group": "nogroup"}),
    ]),
    "sglang_gateway": ("validate", [
        ("no-workers", {"sglang_gateway_workers_group": "nosuchgroup"}),
        ("install-wheelhouse-without-dir", {"sglang_gateway_install": "wheelhouse", "sglang_gateway_wheelhouse": "",
                                            "sglang_gateway_workers_group": "vm_workers",
                                            "sglang_gateway_admin_api_key": "adm-0123456789abcdef"}),
        ("version-bad", {"sglang_gateway_version": "latest", "sglang_gateway_workers_group": "vm_workers",
                         "sglang_gateway_admin_api_key": "adm-0123456789abcdef"}),
        ("range", {"sglang_gateway_health_check_interval": 0, "sglang_gateway_workers_group": "vm_workers",
                   "sglang_gateway_admin_api_key": "adm-0123456789abcdef"}),
    ]),
    "sglang_model": ("validate", [
        ("repo-missing", {"sglang_model_repo": ""}),
        ("revision-branch", {"sglang_model_repo": "Qwen/Qwen3.5-122B-A10B", "sglang_model_revision": "main"}),
    ]),
    "sglang_monitoring": ("validate", [
        ("duration-bad", {"sglang_monitoring_worker_down_for": "2 minutes"}),
        ("distribution-without-targets", {"sglang_monitoring_prometheus": "distribution",
                                          "sglang_monitoring_write_targets": False}),
    ]),
    # the action plugin itself, as a task of its own: a broken rule fails on the controller before the host is
    # contacted (the variables are model_check's arguments)
    "action:model_check": ("model_check", [
        ("two-rules", {"config": dict(MODEL_GOOD, repo="", hub_version="latest"), "ranges": {},
                       "store": {"keep": 2}}, "config: repo='', hub_version='latest'"),
        ("range", {"config": dict(MODEL_GOOD), "ranges": {"sglang_model_keep": [0, 1, 1000]}, "store": {"keep": 2}},
         "ranges={'sglang_model_keep': [0, 1, 1000]}"),
        ("ranges-rule-shape", {"config": dict(MODEL_GOOD), "ranges": {"sglang_model_keep": [0, 1]},
                               "store": {"keep": 2}}, "ranges={'sglang_model_keep': [0, 1]}"),
        ("config-not-dict", {"config": "x", "ranges": {}, "store": {}}, "config='x'"),
        ("publish-not-bool", {"config": dict(MODEL_GOOD), "publish": "yes", "ranges": {}, "store": {}},
         "publish='yes'"),
    ]),
    "sglang_rollout": ("main", [
        ("steps-not-list", {"sglang_rollout_stage": "plan", "sglang_rollout_steps": "deploy"}),
        ("step-role-blank", {"sglang_rollout_stage": "plan", "sglang_rollout_steps": [{"role": "", "entry": "x"}]}),
    ]),
    # begin.yml's first check fails before the lock is taken (its first task only names the run); the settings'
    # names before the role's rename (sglang_lock_wait, ...) still take effect until 0.2.0, under the new names
    "sglang_rollout:begin": ("begin", [
        ("range", {"sglang_rollout_phase": "plan", "sglang_rollout_lock_wait": -1}),
        ("max-unavailable", {"sglang_rollout_phase": "plan", "sglang_rollout_max_unavailable": "0%"}),
        ("range-old-name", {"sglang_rollout_phase": "plan", "sglang_lock_wait": -1}),
        ("metrics-dir-relative", {"sglang_rollout_phase": "plan", "sglang_rollout_metrics_textfile_dir": "textfiles"}),
        ("metrics-dir-relative-old-name", {"sglang_rollout_phase": "plan", "sglang_metrics_textfile_dir": "textfiles"}),
    ]),
}


def _role_playbook(role, entry, role_cases):
    plays = []
    action = role == "action"
    tasks = [{"name": "Start with no results", "ansible.builtin.set_fact": {"__vm_results": {}}}]
    for cid, variables, *_text in role_cases:
        tasks.append({
            "name": "Case %s" % cid,
            "block": [
                {"name": "Run %s" % entry, "llmserve.sglang.%s" % entry: variables} if action else
                {"name": "Run %s" % entry, "ansible.builtin.include_role": {
                    "name": "llmserve.sglang.%s" % role, "tasks_from": entry}, "vars": variables},
                {"name": "Record that it passed", "ansible.builtin.set_fact": {
                    "__vm_results": "{{ __vm_results | combine({%s: '(passed)'}) }}" % json.dumps(cid)}},
            ],
            "rescue": [
                {"name": "Record the message", "ansible.builtin.set_fact": {
                    "__vm_results": "{{ __vm_results | combine({%s: ansible_failed_result.msg | default('(no msg)')}) }}"
                    % json.dumps(cid)}},
            ],
        })
    tasks.append({"name": "VALIDATION_MESSAGES", "ansible.builtin.debug": {"var": "__vm_results"}})
    plays.append({"name": "Validation messages of %s" % role, "hosts": "localhost", "gather_facts": False,
                  "connection": "local", "check_mode": True,
                  "vars": {"ansible_python_interpreter": sys.executable},
                  "tasks": tasks})
    return plays


# A small inventory: localhost plus two stand-in workers for the gateway (never contacted: validate.yml only reads
# their variables).
INVENTORY = {"all": {"hosts": {"localhost": {"ansible_connection": "local"}},
                     "children": {"vm_workers": {"hosts": {
                         "vm-w1": {"ansible_host": "10.0.0.11", "sglang_server_host": "0.0.0.0",
                                   "sglang_server_api_key": "sk-worker-key"},
                         "vm-w2": {"ansible_host": "10.0.0.12", "sglang_server_host": "0.0.0.0",
                                   "sglang_server_api_key": "sk-worker-key"}}}}}}


def role_messages(roles=None):
    """{(role, case id): [messages]} from one ansible-playbook run per role; nothing is written outside a temporary
    directory (removed afterwards): private ANSIBLE_HOME and local temp, facts in memory, no retry files."""
    results = {}
    with tempfile.TemporaryDirectory(prefix="llmserve-validation-messages-") as tmp:
        env = dict(os.environ, ANSIBLE_HOME=os.path.join(tmp, "home"), ANSIBLE_LOCAL_TEMP=os.path.join(tmp, "tmp"),
                   ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"), ANSIBLE_FACT_CACHING="memory",
                   ANSIBLE_RETRY_FILES_ENABLED="false", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
                   ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
                   ANSIBLE_NOCOLOR="1", ANSIBLE_DEPRECATION_WARNINGS="false",
                   ANSIBLE_CONFIG=os.path.join(tmp, "ansible.cfg"),
                   ANSIBLE_LOG_PATH="")
        env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
        with open(os.path.join(tmp, "ansible.cfg"), "w", encoding="utf-8") as handle:
            handle.write("[defaults]\n")
        inventory = os.path.join(tmp, "inventory.json")
        with open(inventory, "w", encoding="utf-8") as handle:
            json.dump(INVENTORY, handle)
        for label in sorted(ROLE_CASES):
            role = label.split(":")[0]
            if roles and label not in roles and role not in roles:
                continue
            entry, role_cases = ROLE_CASES[label]
            playbook = os.path.join(tmp, "%s.yml" % label.replace(":", "-"))
            with open(playbook, "w", encoding="utf-8") as handle:
                json.dump(_role_playbook(role, entry, role_cases), handle)
            proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory,
                                   playbook], env=env, cwd=tmp, capture_output=True, text=True, timeout=600,
                                  check=False)
            recorded = _recorded(proc)
            if recorded is None:
                raise SystemExit("ansible-playbook for %s failed (rc %d):\n%s\n%s"
                                 % (role, proc.returncode, proc.stdout[-4000:], proc.stderr[-4000:]))
            for cid, variables, *text in role_cases:
                msg = recorded.get(cid, "(not run)")
                where = ("plugins/action/%s.py" % entry if role == "action" else "%s/tasks/%s.yml" % (role, entry))
                results[(where, cid, text[0] if text else _short_vars(variables))] = _as_list(msg)
    return results


def _recorded(proc):
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        return None
    for play in doc.get("plays", []):
        for task in play.get("tasks", []):
            if task.get("task", {}).get("name") == "VALIDATION_MESSAGES":
                return task["hosts"]["localhost"].get("__vm_results")
    return None


def _short_vars(variables, limit=110):
    text = ", ".join("%s=%r" % item for item in variables.items())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _as_list(msg):
    if isinstance(msg, (list, tuple)):
        return [str(item) for item in msg] or ["(empty message)"]
    return [str(msg)]


# ----------------------------------------------------------------------------------------------- Python cases

def python_messages():
    """{(entry point, case id, input): [messages]} of every Python case."""
    if os.path.join(ROOT, "collections") not in sys.path:
        sys.path.insert(0, os.path.join(ROOT, "collections"))
    results = {}
    for entry, cid, text, call in cases():
        try:
            value = call()
        except Exception as exc:  # the user sees a filter's error as the task's message
            value = ["(error) %s" % exc]
        results[(entry, cid, text)] = _as_list(value) if value else ["(no message)"]
    return results


# ----------------------------------------------------------------------------------------------- the document

HEADER = """# Validation messages

Generated by `tools/validation_messages.py` -- do not edit by hand. It feeds a corpus of bad inputs (one or more per
rule) to every user-facing validation entry point of the collection and records the messages users see: the filters
of `plugins/filter/` that return problems (called directly, from this checkout), the action plugin `model_check`'s
check, and the roles' validation tasks written in YAML (one generated playbook per role on localhost, connection
local, check mode, each case a block whose rescue records `ansible_failed_result.msg`; nothing is written outside a
temporary directory).

Regenerate after an intended change of a message, and commit the result:

```bash
make validation-messages                                      # --check: exits 1 with a diff when a message changed
python tools/validation_messages.py --write docs/validation-messages.md    # regenerate (the controller venv's python)
```

Validation messages must stay word for word the same unless a change means to alter them: any change to a message
shows as a diff of this file in review, and `tests/unit/test_validation_messages.py` (and `make validation-messages`)
fail until the file is regenerated. `(no message)` marks a case whose input the entry point accepts, `(passed)` a
role case that did not fail; `(error) ...` is a filter's error, which fails the task with that text.

"""


def _cell(text):
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", "\\n").replace("\r", "\\r").replace("`", "'")


def render(results):
    entries = sorted(set(key[0] for key in results))
    messages = set(msg for value in results.values() for msg in value)
    lines = [HEADER, "%d entry points, %d cases, %d distinct messages; the roles' messages from ansible-core %s.\n"
             % (len(entries), len(results), len(messages), ansible_core_version()),
             "| entry point | case | input | message |", "| --- | --- | --- | --- |"]
    for key in sorted(results):
        entry, cid, text = key
        for index, msg in enumerate(results[key]):
            case = cid if len(results[key]) == 1 else "%s [%d]" % (cid, index + 1)
            lines.append("| %s | %s | %s | %s |" % (_cell(entry), _cell(case), _cell(text), _cell(msg)))
    return "\n".join(lines) + "\n"


def ansible_core_version():
    from ansible.release import __version__

    return __version__


def documented_core_version(text):
    """The ansible-core version that generated the roles' rows of a table (None when it does not say)."""
    for line in text.splitlines():
        marker = "the roles' messages from ansible-core "
        if marker in line:
            return line.split(marker, 1)[1].rstrip(".\n ")
    return None


def collect(roles=True):
    results = python_messages()
    if roles:
        results.update(role_messages())
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", metavar="FILE", help="write the table to FILE")
    group.add_argument("--check", metavar="FILE", nargs="?", const=DEFAULT_DOC,
                       help="compare with FILE (default %(const)s); exit 1 with a diff when it differs")
    group.add_argument("--print", action="store_true", help="print the table")
    parser.add_argument("--python-only", action="store_true",
                        help="only the Python entry points; --check then compares the rows of those only")
    args = parser.parse_args(argv)
    results = collect(roles=not args.python_only)
    if args.write:
        if args.python_only:
            parser.error("--write needs every entry point (leave out --python-only)")
        with open(args.write, "w", encoding="utf-8") as handle:
            handle.write(render(results))
        return 0
    if args.print:
        sys.stdout.write(render(results))
        return 0
    with open(args.check, encoding="utf-8") as handle:
        want = handle.read()
    have = render(results)
    if args.python_only:
        # compare the rows of the Python entry points only (not those of the generated playbooks)
        want = _python_rows(want)
        have = _python_rows(have)
    if want == have:
        print("%s: the validation messages are unchanged" % args.check)
        return 0
    sys.stdout.writelines(difflib.unified_diff(want.splitlines(True), have.splitlines(True), args.check,
                                               "generated now"))
    print("\nThe validation messages changed: if the change is intended, run "
          "tools/validation_messages.py --write %s and commit the file." % args.check)
    return 1


def _python_rows(text):
    return "".join(line for line in text.splitlines(True) if line.startswith("| ")
                   and "/tasks/" not in line.split(" | ")[0] and not line.startswith("| plugins/action/")
                   and not line.startswith("| entry point") and not line.startswith("| ---"))


if __name__ == "__main__":
    sys.exit(main())
