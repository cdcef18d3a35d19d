# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``sglang_args`` on the rule engine (``rules``) against its mixin implementation before the port (commit
``BASELINE``): the same errors, warnings and rendering, message for message and in the same order, for thousands of
configurations from a seeded generator (valid ones and ones with many broken fields).

The baseline is read with ``git show`` from the checkout's history into a package in a temporary directory; the test
is skipped where that history is not there (a shallow clone or an unpacked tarball)."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys

import pytest

from ansible_collections.llmserve.sglang.plugins.plugin_utils import sglang_args
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_flags import FLAGS, SGLANG_VERSION
from ansible_collections.llmserve.sglang.tests.unit.differential import COUNT, SEED, matching_cases, pick

BASELINE = "6e286f7"
MODULES = ("sglang_args", "sglang_args_common", "sglang_args_server", "sglang_args_parallel",
           "sglang_args_speculative", "sglang_args_values", "sglang_args_loader", "sglang_args_service")
PACKAGE = "llmserve_sglang_args_baseline"


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    root = os.path.dirname(os.path.abspath(__file__))
    folder = tmp_path_factory.mktemp("baseline") / PACKAGE
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    for name in MODULES:
        try:
            text = subprocess.run(["git", "show", "%s:plugins/plugin_utils/%s.py" % (BASELINE, name)], cwd=root,
                                  capture_output=True, text=True, check=True, timeout=60).stdout
        except (OSError, subprocess.SubprocessError) as exc:
            pytest.skip("the baseline %s is not in this checkout's history (%s)" % (BASELINE, exc))
        text = re.sub(r"ansible_collections\.llmserve\.sglang\.plugins\.plugin_utils\.(sglang_args\w*)",
                      PACKAGE + r".\1", text)
        (folder / ("%s.py" % name)).write_text(text)
    sys.path.insert(0, str(folder.parent))
    try:
        yield importlib.import_module(PACKAGE + ".sglang_args")
    finally:
        sys.path.remove(str(folder.parent))
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
            del sys.modules[name]


# -- the generator ---------------------------------------------------------------------------------------------

# dests the rules across variables read: drawn more often than the rest of the table
RULE_DESTS = (
    "pp_size", "dp_size", "attn_dp_size", "enable_dp_attention", "chunked_prefill_size", "page_size", "context_length",
    "mamba_radix_cache_strategy", "mamba_track_interval", "mamba_ssm_dtype", "enable_mamba_cache_stochastic_rounding",
    "enable_int8_mamba_checkpoint", "enable_hierarchical_cache", "attention_backend", "prefill_attention_backend",
    "decode_attention_backend", "tokenizer_worker_num", "max_running_requests", "enable_mixed_chunk",
    "speculative_adaptive", "speculative_adaptive_config", "speculative_use_rejection_sampling",
    "speculative_accept_threshold_single", "speculative_draft_window_size", "speculative_draft_sink_size",
    "speculative_ngram_external_corpus_path", "speculative_ngram_external_sam_budget", "enable_multi_layer_eagle",
    "load_format", "model_loader_extra_config", "weight_loader_prefetch_checkpoints", "weight_loader_disable_mmap",
    "weight_loader_prefetch_num_threads", "startup_weight_load_mode", "enable_torch_compile", "ep_size",
    "cpu_offload_gb", "ssl_certfile", "ssl_keyfile", "admin_api_key", "enable_metrics", "disable_custom_all_reduce",
    "log_level", "mem_fraction_static", "max_total_tokens", "lora_paths", "json_model_override_args",
    "nccl_port", "metrics_http_port", "model_path", "tp_size", "nnodes", "config",
)
RULE_DESTS = tuple(d for d in RULE_DESTS if d in FLAGS)
# the flags one family of rules across variables reads together: a configuration draws most of its args from one
THEMES = (
    ("mamba_radix_cache_strategy", "page_size", "mamba_track_interval", "mamba_ssm_dtype", "attention_backend",
     "enable_mamba_cache_stochastic_rounding", "enable_int8_mamba_checkpoint", "enable_hierarchical_cache",
     "chunked_prefill_size", "decode_attention_backend"),
    ("speculative_adaptive", "speculative_adaptive_config", "speculative_use_rejection_sampling", "attention_backend",
     "speculative_accept_threshold_single", "speculative_draft_window_size", "speculative_draft_sink_size",
     "speculative_ngram_external_corpus_path", "speculative_ngram_external_sam_budget", "enable_multi_layer_eagle",
     "enable_mixed_chunk", "max_running_requests", "page_size", "enable_dp_attention", "attn_dp_size"),
    ("load_format", "model_loader_extra_config", "weight_loader_prefetch_checkpoints", "weight_loader_disable_mmap",
     "weight_loader_prefetch_num_threads", "startup_weight_load_mode", "startup_weight_load_mode",
     "enable_torch_compile", "ep_size", "cpu_offload_gb", "lora_paths", "pp_size"),
    ("pp_size", "dp_size", "attn_dp_size", "tokenizer_worker_num", "nccl_port", "metrics_http_port", "ssl_certfile",
     "ssl_keyfile", "admin_api_key", "enable_metrics", "disable_custom_all_reduce", "context_length"),
)
THEMES = tuple(tuple(d for d in theme if d in FLAGS) for theme in THEMES)
ALL_DESTS = tuple(sorted(FLAGS))
# valid single values that meet the rules across variables from both sides
GOOD_ARGS = {
    "pp_size": (1, 2), "dp_size": (1, 2), "attn_dp_size": (1, 2, 3), "chunked_prefill_size": (-1, 8192, 100, 64),
    "page_size": (1, 16, 64, 3), "context_length": ("256k", "256Ki", 4096), "mamba_track_interval": (1, 4, 256, 3),
    "tokenizer_worker_num": (1, 2), "max_running_requests": (None, 64), "speculative_accept_threshold_single": (1.0, 0.5),
    "speculative_draft_window_size": (1, 8), "speculative_draft_sink_size": (0, 2),
    "speculative_ngram_external_sam_budget": (0, 3, 20), "speculative_ngram_external_corpus_path": ("/c",),
    "speculative_adaptive_config": ("/a.json",), "weight_loader_prefetch_num_threads": (4,), "ep_size": (1, 2),
    "cpu_offload_gb": (0, 4), "nccl_port": (30000, 5000, 5001), "metrics_http_port": (30000, 5000, 5002),
    "ssl_certfile": ("/etc/ssl/c.pem",), "ssl_keyfile": ("/etc/ssl/k.pem",), "admin_api_key": ("adm",),
    "lora_paths": (["/l"],), "mem_fraction_static": (0.85,), "log_level": ("info", "debug"),
    "load_format": ("auto", "safetensors", "fastsafetensors", "pt", "dummy", "presharded", "layered"),
}
WEIRD = (None, True, False, 0, -1, 1.5, "", " ", "x", "-x", "a\nb", "\x1b[31m", [], {}, [1, "a"], {"k": 1}, 10 ** 30)


def _spelling(rng, dest):
    options = [FLAGS[dest]["option"]] + list(FLAGS[dest]["aliases"] or [])
    option = rng.choice(options)
    return rng.choice((dest, dest, option, option[2:]))


def _flag_value(rng, dest, rate):
    flag = FLAGS[dest]
    bad = rng.random() < rate
    if bad and rng.random() < 0.3:
        return rng.choice(WEIRD)
    if not bad and dest in GOOD_ARGS:
        return rng.choice(GOOD_ARGS[dest])
    if flag["choices"]:
        choice = rng.choice(flag["choices"])
        return rng.choice((choice, choice, str(choice).upper(), "not-a-choice")) if bad else choice
    kind, typ = flag["kind"], flag["type"]
    if kind in ("switch", "bool"):
        return rng.choice((True, False, True, None, "yes")) if bad else rng.choice((True, False, None))
    if typ == "int":
        value = rng.choice((1, 2, 4, 8, 16, 64, 30000, 30001, 0, 0, -1, -2, 65536, "8", 4.0) if bad else (1, 2, 4, 64))
    elif typ == "float":
        value = rng.choice((0.5, 0.85, 1.0, 2, "0.7", -1.0, "x") if bad else (0.5, 0.85))
    elif typ == "human_readable_int":
        value = rng.choice((262144, "256k", "256Ki", "1.5Ki", "1.5k", -3, "12x") if bad else (262144, "256Ki"))
    elif typ in ("json", "json_list", "cuda_graph_config"):
        value = rng.choice(({"a": 1}, [1, 2], '{"a": 1}', "[1]", "{bad", 3) if bad else ([1, 2], "[1]"))
    else:
        value = rng.choice(("/models/draft", "qwen3-next", "auto", "-leading", "text with space", "/p", 7) if bad
                           else ("/models/draft", "auto", "/p"))
    if kind == "list" and rng.random() < 0.6:
        return [value] + ([value] if rng.random() < 0.5 else [])
    return value


def _extra_config(rng, rate):
    pool = {"enable_multithread_load": (True, False, "false"), "num_threads": (8, 0, "8", True),
            "enable_gds": (True, 1), "presharded_path": ("/p",), "bogus_key": (1,)}
    if rng.random() >= rate:
        chosen = rng.sample(("enable_multithread_load", "num_threads"), rng.randint(0, 2))
        return {key: pool[key][0] if key == "num_threads" else rng.choice((True, False)) for key in chosen}
    chosen = rng.sample(sorted(pool), rng.randint(0, 3))
    extra = {key: rng.choice(pool[key]) for key in chosen}
    return rng.choice((extra, "{not json", "[1, 2]", '{"x": NaN}', ""))


def _args(rng, rate):
    args = {}
    theme = rng.choice(THEMES)
    for dummy in range(rng.choice((0, 1, 2, 3, 4, 5, 6, 8))):
        draw = rng.random()
        dest = rng.choice(theme) if draw < 0.75 else rng.choice(RULE_DESTS) if draw < 0.85 else rng.choice(ALL_DESTS)
        if dest == "model_loader_extra_config" and rng.random() < 0.8:
            args[_spelling(rng, dest)] = _extra_config(rng, rate)
        else:
            args[_spelling(rng, dest)] = _flag_value(rng, dest, rate)
    if rng.random() >= rate:
        return args
    if rng.random() < 0.3:
        args[rng.choice(("no_enable_metrics", "tp", "unknown_flag_x", "enable-metric", 3, "", "a\tb"))] = \
            rng.choice((True, 1, "v"))
    return rng.choice((args, args, args, args, None, {}, "not a dict", ["a"]))


def _speculative(rng, rate):
    spec = {"algorithm": rng.choice(("NEXTN", "eagle", "EAGLE3", "STANDALONE", "NGRAM", "DFLASH", "UNO"))}
    if rng.random() < rate:
        spec["algorithm"] = rng.choice(("MTP", "none", "FOO", 3, "", None))
    for key, bad, good in (("num_steps", (0, "x", True), (1, 2, 3, 4, 5)), ("eagle_topk", (0, "1.5"), (1, 1, 2, 4)),
                           ("num_draft_tokens", (-1, [4]), (2, 4, 6, 8, 16)), ("draft_model_path", (5, "/d\n"), ("/d",))):
        if rng.random() < 0.5:
            spec[key] = pick(rng, good, bad, rate)
    if rng.random() < rate / 4:
        spec["num_step"] = 3
    if rng.random() >= rate:
        return spec
    return rng.choice((spec, None, {}, "NEXTN"))


def _env(rng, rate):
    pool = {"FOO": ("bar", 1, True, ["x"]), "PYTHONPATH": ("/x",), "HF_TOKEN": ("t",),
            "CUDA_VISIBLE_DEVICES": ("0",), "NCCL_P2P_DISABLE": ("0", "1"), "NCCL_SOCKET_IFNAME": ("eth1",),
            "TRITON_CACHE_DIR": ("/c",), "1BAD": ("x",), "LLMSERVE_REDACT_CONFIG": ("/r",)}
    if rng.random() >= rate:
        return {"FOO": rng.choice(pool["FOO"][:2])}
    chosen = rng.sample(sorted(pool), rng.randint(0, 3))
    env = {key: rng.choice(pool[key]) for key in chosen}
    return rng.choice((env, env, env, None, "FOO=bar"))


# role variable -> (valid values, broken values)
TOP = {
    "model_path": (("/models/Qwen3.5-122B-A10B", "Qwen/Qwen3-Next-80B", "s3://bucket/model", "/models/llama"),
                   (None, "", 5, "/m\x00")),
    "served_model_name": ((None, "qwen3.5", "llama"), ("a:b", 3)),
    "host": (("127.0.0.1", "127.0.0.1", "0.0.0.0", "::1", "10.0.0.5"), ("localhost", 1, "")),
    "port": ((30000, 5000, "30000"), (0, 70000, True, "x")),
    "tp_size": ((1, 1, 2, 4, 8, None, "2", 3), (0, "x")),
    "gpus": ((None, [0], [0, 1], [0, 1, 2, 3], []), ([0, 0], [-1], "0,1")),
    "api_key": ((None, None, "sk-abc"), ("-dash", "has space", 123, "k\x7f")),
    "hf_token": ((None, "hf_abc"), (1, "a b")),
    "p2p": (("auto", "on", "off", True, False, None), ("maybe",)),
    "p2p_ok": ((None, True, False), ("yes",)),
    "allow_unauthenticated": ((False, True, None), ("yes",)),
    "config_path": ((None, "/etc/sglang/sglang.yaml"), ("/etc/sglang/s.json", "relative.yaml", 3)),
    "version": ((None, SGLANG_VERSION, SGLANG_VERSION + "+cu128", "0.5.9", ""), ()),
    "unit_name": ((None, "sglang"), ("sglang.service", "a/b", 3)),
    "user": ((None, "sglang", "root"), ("9bad",)),
    "group": ((None, "sglang"), ("-g",)),
    "home": ((None, "/var/lib/sglang"), ("relative", "/a/../b", "/with space")),
    "config_dir": ((None, "/etc/sglang"), ("etc",)),
    "venv": ((None, "/opt/sglang/venv"), ("/o'v",)),
    "python": ((None, "/usr/bin/python3"), (3,)),
    "ready_path": ((None, "/health"), ("//evil", "/h?x", "health", 5)),
    "probe_ca_path": ((None, "/etc/ssl/ca.pem"), ("ca.pem",)),
    "probe_validate_certs": ((None, True, False), ("no",)),
    "nnodes": ((None, None, None, 1, 2, 4, "2"), (0, True)),
    "node_rank": ((None, None, None, 0, 1, 3), (-1, "x")),
    "dist_init_addr": ((None, "10.0.0.1:5000", "[fe80::1]:5000", "10.0.0.1:30000"),
                       ("fe80::1:5000", "host:5000", "10.0.0.1:70000", 5)),
    "node_ifname": ((None, "eth0"), ("a/b", "x" * 16, "..")),
    "metrics": ((None, True, False), ("yes",)),
}


def generate(rng):
    """One configuration: each key from its valid values, or, with the chance ``rate`` (drawn per configuration,
    from none to half), from its broken ones."""
    if rng.random() < 0.01:
        return rng.choice((None, "cfg", ["model_path"]))
    rate = rng.choice((0.0, 0.0, 0.0, 0.02, 0.1, 0.3, 0.5))
    cfg = {}
    for key, (good, bad) in TOP.items():
        if key == "model_path" or rng.random() < 0.5:
            cfg[key] = pick(rng, good, bad, rate)
    if rng.random() < 0.8 and cfg.get("tp_size") in (None, 1, 2, 4, 8) and isinstance(cfg.get("gpus"), list) \
            and rng.random() >= rate:
        # mostly a consistent layout, so that the rules behind the GPU count are reached
        cfg["gpus"] = list(range(cfg.get("tp_size") or 1))
        if rng.random() < 0.8:
            cfg.pop("nnodes", None)
            cfg.pop("node_rank", None)
        if rng.random() < 0.2:
            # one node of a consistent two-node server
            cfg.update(nnodes=2, node_rank=rng.choice((None, 0, 0, 1)), tp_size=rng.choice((2, 4)),
                       dist_init_addr=rng.choice(TOP["dist_init_addr"][0][1:]))
            cfg["gpus"] = list(range(cfg["tp_size"] // 2)) if rng.random() < 0.5 else None
    cfg["speculative"] = _speculative(rng, rate) if rng.random() < 0.6 else {}
    cfg["args"] = _args(rng, rate) if rng.random() < 0.85 else {}
    cfg["env"] = _env(rng, rate) if rng.random() < 0.4 else {}
    if rng.random() < 0.5:
        hook = {"PYTHONPATH": "/usr/lib/llmserve/hook"}
        cfg["base_env"] = hook if rng.random() >= rate else rng.choice((hook, {}, None, {"HOME": "/h"}, "x"))
    return cfg


def outcome(module, cfg):
    """What the public API says about ``cfg``: errors, warnings and the rendering (or the exception raised)."""
    result = []
    for call in (module.validate_server_config, module.server_config_warnings, module.render_server_argv):
        try:
            result.append(call(cfg))
        except ValueError as exc:
            result.append(("raised", type(exc).__name__, str(exc), getattr(exc, "errors", None)))
    spec = cfg.get("speculative") if isinstance(cfg, dict) else None
    args = cfg.get("args") if isinstance(cfg, dict) else None
    result.append(module.expected_server_info(spec, args))
    result.append(module.serves_tls(args))
    return result


def test_rule_engine_port_matches_the_baseline(baseline):
    valid = 0
    for dummy, new in matching_cases(generate, outcome, sglang_args, baseline):
        valid += not new[0]
    print("\n%d configurations (seed %d): %d valid, %d with errors" % (COUNT, SEED, valid, COUNT - valid))
    # the generator must reach both sides of the rules
    assert COUNT * 0.05 < valid < COUNT * 0.95, valid


def test_baseline_public_names_are_kept(baseline):
    assert sglang_args.__all__ == baseline.__all__
    for name in baseline.__all__:
        new, old = getattr(sglang_args, name), getattr(baseline, name)
        if callable(old) and not isinstance(old, type):
            assert new.__code__.co_varnames[:new.__code__.co_argcount] == \
                old.__code__.co_varnames[:old.__code__.co_argcount], name
            assert new.__defaults__ == old.__defaults__, name
        elif not isinstance(old, type):
            assert new == old, name
