# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import builtins
import copy
import os

import pytest

from ansible_collections.llmserve.sglang.plugins.plugin_utils import sglang_args
from ansible_collections.llmserve.sglang.tests.unit.plugins.module_utils.source_imports import top_level_imports
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_flags import SGLANG_VERSION
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args import (
    SGLangConfigError,
    normalise_flag_name,
    render_server_argv,
    server_config_warnings,
    validate_server_config,
)

# A complete, valid MTP deployment: the baseline every test modifies.
BASE = {
    "model_path": "/models/Qwen3.5-122B-A10B",
    "served_model_name": "qwen3.5-122b",
    "host": "127.0.0.1",
    "port": 30000,
    "tp_size": 4,
    "gpus": [0, 1, 2, 3],
    "speculative": {"algorithm": "NEXTN", "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4},
    "args": {"max_running_requests": 64},
    "env": {},
    "api_key": None,
    "hf_token": None,
    "p2p": "auto",
    "allow_unauthenticated": False,
}


def cfg(**changes):
    """BASE with top-level changes; non-empty ``args``/``speculative``/``env`` dicts are merged (``_DROP`` deletes)."""
    out = copy.deepcopy(BASE)
    for key, value in changes.items():
        if key in ("args", "speculative", "env") and value and isinstance(value, dict) and isinstance(out.get(key), dict):
            for sub, subvalue in value.items():
                if subvalue is _DROP:
                    out[key].pop(sub, None)
                else:
                    out[key][sub] = subvalue
        else:
            out[key] = value
    return out


_DROP = object()


def errors_for(config):
    return validate_server_config(config)


def assert_error(config, *needles):
    """Exactly one error mentions all needles."""
    errors = errors_for(config)
    hits = [e for e in errors if all(n in e for n in needles)]
    assert hits, "no error containing %r in %r" % (needles, errors)
    return hits[0]


def test_baseline_is_valid():
    assert errors_for(BASE) == []


# ---------------------------------------------------------------------------------------------------------
# single variables: each rule a failing and a passing case
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad, good, needles", [
    ({"model_path": ""}, {"model_path": "Qwen/Qwen3-Next-80B-A3B-Instruct"}, ("sglang_server_model_path", "required")),
    ({"model_path": None}, {"model_path": "/m"}, ("sglang_server_model_path", "required")),
    ({"model_path": 12}, {"model_path": "/m"}, ("sglang_server_model_path", "must be a string")),
    ({"served_model_name": "qwen:122b"}, {"served_model_name": "qwen-122b"}, ("sglang_server_served_model_name", "':'", "'qwen-122b'")),
    ({"host": "example.com"}, {"host": "::1"}, ("sglang_server_host", "IP address")),
    ({"host": "127.1"}, {"host": "127.0.0.2"}, ("sglang_server_host", "IP address")),
    ({"port": 0}, {"port": 1}, ("sglang_server_port", "1 and 65535")),
    ({"port": 65536}, {"port": 65535}, ("sglang_server_port", "1 and 65535")),
    ({"port": "http"}, {"port": "8080"}, ("sglang_server_port", "--port takes an integer, got 'http'")),
    ({"port": True}, {"port": 30001}, ("sglang_server_port",)),
    ({"tp_size": 0}, {"tp_size": 4}, ("sglang_server_tp_size", ">= 1")),
    ({"tp_size": 2.0}, {"tp_size": 4}, ("sglang_server_tp_size", "--tp-size takes an integer, got float 2.0")),
    ({"gpus": "0,1,2,3"}, {"gpus": [3, 2, 1, 0]}, ("sglang_server_gpus", "list of GPU indexes")),
    ({"gpus": [0, 1, 2, -1]}, {"gpus": [0, 1, 2, 7]}, ("sglang_server_gpus[3]", "integer >= 0")),
    ({"gpus": [0, 1, 1, 2]}, {"gpus": [0, 1, 2, 5]}, ("sglang_server_gpus", "more than once")),
    ({"gpus": [0, 1]}, {"gpus": ["0", "1", "2", "3"]}, ("sglang_server_gpus", "2 GPU(s)", "tp_size (4)", "exactly 4")),
    ({"allow_unauthenticated": "yes"}, {"allow_unauthenticated": True}, ("sglang_server_allow_unauthenticated", "boolean")),
    ({"api_key": "two words"}, {"api_key": "k" * 32}, ("sglang_server_api_key", "whitespace")),
    ({"hf_token": ["x"]}, {"hf_token": "hf_abc"}, ("sglang_server_hf_token", "must be a string")),
    ({"p2p": "maybe"}, {"p2p": "off"}, ("sglang_server_p2p", "auto, on or off")),
    ({"p2p_ok": "no"}, {"p2p_ok": False}, ("sglang_server_p2p_ok", "boolean")),
    ({"config_path": "/etc/sglang/sglang.json"}, {"config_path": "/etc/sglang/sglang.yml"}, ("sglang_server_config_path", ".yaml")),
    ({"env": {"1BAD": "x"}}, {"env": {"GOOD_1": "x"}}, ("sglang_server_env.1BAD", "not a valid environment variable name")),
    ({"env": {"HF_TOKEN": "hf_x"}}, {"hf_token": "hf_x"}, ("sglang_server_env.HF_TOKEN", "sglang_server_hf_token")),
    ({"env": {"CUDA_VISIBLE_DEVICES": "0"}}, {"env": {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}}, ("sglang_server_env.CUDA_VISIBLE_DEVICES", "sglang_server_gpus")),
    ({"env": {"A": {"b": 1}}}, {"env": {"A": 1.5}}, ("sglang_server_env.A", "string or a number")),
    ({"env": {"A": "x\ny"}}, {"env": {"A": "x y"}}, ("sglang_server_env.A", "control character (LF at offset 1)")),
    ({"speculative": "NEXTN"}, {"speculative": {}}, ("sglang_server_speculative", "must be a dict")),
    ({"args": ["--enable-metrics"]}, {"args": {}}, ("sglang_server_args", "must be a dict")),
    ({"env": "A=1"}, {"env": None}, ("sglang_server_env", "must be a dict")),
])
def test_single_variable_rules(bad, good, needles):
    assert_error(cfg(**bad), *needles)
    assert errors_for(cfg(**good)) == []


def test_messages_name_variable_rule_and_fix():
    message = assert_error(cfg(served_model_name="a:b"), "sglang_server_served_model_name")
    variable, rest = message.split(": ", 1)
    assert variable == "sglang_server_served_model_name"
    assert "; " in rest  # rule; fix


def test_custom_prefix_is_used_in_messages():
    errors = validate_server_config(cfg(port=0), prefix="my_")
    assert errors and errors[0].startswith("my_port: ")


def test_non_dict_input():
    errors = validate_server_config(["model_path"])
    assert any("must be a dict" in e for e in errors)


def test_secrets_are_not_repeated_in_messages():
    errors = errors_for(cfg(api_key="sec ret", args={"admin_api_key": "adm in"}))
    assert len(errors) == 2
    assert not any("sec ret" in e or "adm in" in e for e in errors)


def test_missing_netaddr_is_reported(monkeypatch):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "netaddr":
            raise ImportError("No module named 'netaddr'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    message = assert_error(cfg(), "sglang_server_host", "netaddr")
    assert "pip install netaddr" in message


# ---------------------------------------------------------------------------------------------------------
# host / API key
# ---------------------------------------------------------------------------------------------------------

def test_non_loopback_host_needs_api_key():
    message = assert_error(cfg(host="0.0.0.0"), "sglang_server_host", "without sglang_server_api_key")
    assert "sglang_server_allow_unauthenticated: true" in message
    assert errors_for(cfg(host="0.0.0.0", api_key="k" * 32)) == []
    assert errors_for(cfg(host="10.1.2.3", allow_unauthenticated=True)) == []
    assert any("without an API key" in w for w in server_config_warnings(cfg(host="10.1.2.3", allow_unauthenticated=True)))
    assert errors_for(cfg(host="::1")) == []


def test_api_key_with_several_tokenizer_workers():
    assert_error(cfg(api_key="k" * 32, args={"tokenizer_worker_num": 2}), "sglang_server_args.tokenizer_worker_num",
                 "API key")
    assert errors_for(cfg(api_key="k" * 32, args={"tokenizer_worker_num": 1})) == []
    assert errors_for(cfg(args={"tokenizer_worker_num": 2})) == []


# ---------------------------------------------------------------------------------------------------------
# speculative decoding
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["nextn", "NextN", "eagle", "EAGLE3", "standalone"])
def test_algorithm_names_are_case_insensitive(name):
    assert errors_for(cfg(speculative={"algorithm": name})) == []


def test_mtp_suggests_nextn():
    message = assert_error(cfg(speculative={"algorithm": "MTP"}), "sglang_server_speculative.algorithm", "'MTP'")
    assert "use NEXTN" in message
    assert_error(cfg(speculative={"algorithm": "mtp"}), "use NEXTN")


def test_unknown_algorithm_gets_close_match():
    assert_error(cfg(speculative={"algorithm": "EAGEL"}), "sglang_server_speculative.algorithm", "did you mean EAGLE")
    assert_error(cfg(speculative={"algorithm": "none"}), "sglang_server_speculative.algorithm", "empty")


def test_algorithm_required_when_other_keys_given():
    config = cfg(speculative={"algorithm": _DROP})
    assert_error(config, "sglang_server_speculative.algorithm", "required")
    assert errors_for(cfg(speculative={"algorithm": None, "num_steps": None, "eagle_topk": None,
                                       "num_draft_tokens": None})) == []


def test_unknown_speculative_key():
    assert_error(cfg(speculative={"num_step": 3}), "sglang_server_speculative.num_step", "did you mean num_steps")


@pytest.mark.parametrize("key", ["num_steps", "eagle_topk", "num_draft_tokens"])
def test_speculative_ints_at_least_one(key):
    assert_error(cfg(speculative={key: 0}), "sglang_server_speculative." + key, ">= 1")
    # the type comes from SGLang's flag table (--speculative-num-steps etc. are int there)
    assert_error(cfg(speculative={key: "three"}), "sglang_server_speculative." + key,
                 "--speculative-%s takes an integer, got 'three'" % key.replace("_", "-"))


def test_topk_and_draft_tokens_need_num_steps():
    assert_error(cfg(speculative={"num_steps": _DROP}), "sglang_server_speculative.eagle_topk", "num_steps")
    assert_error(cfg(speculative={"num_steps": _DROP, "eagle_topk": _DROP}),
                 "sglang_server_speculative.num_draft_tokens", "num_steps")
    # all three unset: SGLang chooses them
    assert errors_for(cfg(speculative={"algorithm": "NEXTN", "num_steps": _DROP, "eagle_topk": _DROP,
                                       "num_draft_tokens": _DROP})) == []
    # adaptive mode picks num_steps itself
    assert errors_for(cfg(speculative={"num_steps": _DROP}, args={"speculative_adaptive": True})) == []


def test_num_steps_needs_topk_for_eagle_family():
    assert_error(cfg(speculative={"eagle_topk": _DROP, "num_draft_tokens": _DROP}),
                 "sglang_server_speculative.eagle_topk", "required")


def test_topk_one_forces_draft_tokens():
    message = assert_error(cfg(speculative={"num_draft_tokens": 8}), "sglang_server_speculative.num_draft_tokens",
                           "num_steps + 1 (4)")
    assert "num_draft_tokens: 4" in message
    assert errors_for(cfg(speculative={"num_steps": 2, "num_draft_tokens": 3})) == []
    assert errors_for(cfg(speculative={"num_draft_tokens": _DROP})) == []


def test_topk_above_one_needs_draft_tokens_and_allows_any_count():
    assert_error(cfg(speculative={"eagle_topk": 4, "num_draft_tokens": _DROP}),
                 "sglang_server_speculative.num_draft_tokens", "required")
    assert errors_for(cfg(speculative={"algorithm": "EAGLE", "num_steps": 5, "eagle_topk": 4,
                                       "num_draft_tokens": 8})) == []


def test_topk_above_one_with_trtllm_mha():
    spec = {"eagle_topk": 2, "num_draft_tokens": 6}
    assert_error(cfg(speculative=spec, args={"decode_attention_backend": "trtllm_mha"}),
                 "sglang_server_speculative.eagle_topk", "trtllm_mha")
    assert errors_for(cfg(speculative=spec, args={"decode_attention_backend": "fa3"})) == []


def test_topk_above_one_with_pages_needs_tree_backend():
    spec = {"eagle_topk": 2, "num_draft_tokens": 6}
    assert_error(cfg(speculative=spec, args={"page_size": 16, "attention_backend": "flashmla"}),
                 "sglang_server_speculative.eagle_topk", "page_size > 1")
    assert errors_for(cfg(speculative=spec, args={"page_size": 16, "attention_backend": "flashinfer"})) == []


def test_ngram_computes_steps_and_topk():
    assert_error(cfg(speculative={"algorithm": "NGRAM", "num_draft_tokens": _DROP}),
                 "sglang_server_speculative.num_steps", "NGRAM")
    assert errors_for(cfg(speculative={"algorithm": "NGRAM", "num_steps": _DROP, "eagle_topk": _DROP,
                                       "num_draft_tokens": 12})) == []


def test_standalone_and_ngram_refuse_attention_dp():
    spec = {"algorithm": "STANDALONE", "draft_model_path": "/models/draft"}
    assert_error(cfg(speculative=spec, args={"attn_dp_size": 2}), "sglang_server_speculative.algorithm",
                 "data-parallel attention")
    assert errors_for(cfg(speculative=spec)) == []


def test_dflash_needs_draft_model():
    assert_error(cfg(speculative={"algorithm": "DFLASH"}), "sglang_server_speculative.draft_model_path", "DFLASH")
    assert errors_for(cfg(speculative={"algorithm": "DFLASH", "draft_model_path": "/d"})) == []


def test_uno_needs_single_gpu():
    assert_error(cfg(speculative={"algorithm": "UNO", "num_steps": _DROP, "eagle_topk": _DROP,
                                  "num_draft_tokens": _DROP}), "UNO needs tp_size 1")
    uno = {"algorithm": "UNO", "num_steps": _DROP, "eagle_topk": _DROP, "num_draft_tokens": _DROP}
    assert errors_for(cfg(tp_size=1, gpus=[0], speculative=uno)) == []


def test_flex_attention_refuses_speculative():
    assert_error(cfg(args={"attention_backend": "flex_attention"}), "attention_backend", "flex_attention")
    assert errors_for(cfg(speculative={}, args={"attention_backend": "flex_attention"})) == []


def test_rejection_sampling_rules():
    assert_error(cfg(speculative={"eagle_topk": 2, "num_draft_tokens": 6},
                     args={"speculative_use_rejection_sampling": True}),
                 "sglang_server_args.speculative_use_rejection_sampling", "eagle_topk 1")
    assert_error(cfg(args={"speculative_use_rejection_sampling": True, "speculative_accept_threshold_acc": 0.5}),
                 "sglang_server_args.speculative_accept_threshold_acc", "1.0")
    assert errors_for(cfg(args={"speculative_use_rejection_sampling": True})) == []


def test_draft_window_and_sink():
    assert_error(cfg(args={"speculative_draft_window_size": 0}), "speculative_draft_window_size", "> 0")
    assert_error(cfg(args={"speculative_draft_sink_size": 4}), "speculative_draft_sink_size",
                 "needs speculative_draft_window_size")
    assert errors_for(cfg(args={"speculative_draft_window_size": 512, "speculative_draft_sink_size": 4})) == []


def test_ngram_external_corpus_budget():
    spec = {"algorithm": "NGRAM", "num_steps": _DROP, "eagle_topk": _DROP, "num_draft_tokens": 12}
    assert_error(cfg(speculative=spec, args={"speculative_ngram_external_corpus_path": "/c"}),
                 "speculative_ngram_external_sam_budget", "between 1 and num_draft_tokens - 1 (11)")
    assert errors_for(cfg(speculative=spec, args={"speculative_ngram_external_corpus_path": "/c",
                                                  "speculative_ngram_external_sam_budget": 8})) == []


def test_speculative_warnings():
    warnings = server_config_warnings(cfg(args={"max_running_requests": _DROP}))
    assert any("max_running_requests" in w and "48" in w for w in warnings)
    assert not any("48" in w for w in server_config_warnings(cfg()))
    warnings = server_config_warnings(cfg(speculative={}, args={"speculative_accept_threshold_acc": 0.9}))
    assert any("no effect" in w for w in warnings)


# ---------------------------------------------------------------------------------------------------------
# sglang_server_args: names
# ---------------------------------------------------------------------------------------------------------

def test_flag_name_normalisation():
    assert normalise_flag_name("--tp-size") == "tp_size"
    assert normalise_flag_name("mem-fraction-static") == "mem_fraction_static"
    assert normalise_flag_name("enable_metrics") == "enable_metrics"


@pytest.mark.parametrize("key", ["enable-metrics", "--enable-metrics", "enable_metrics"])
def test_dash_and_underscore_names_accepted(key):
    assert errors_for(cfg(args={key: True})) == []


def test_unknown_flag_with_suggestion():
    message = assert_error(cfg(args={"mem_fraction_statc": 0.8}), "sglang_server_args.mem_fraction_statc",
                           "not a flag of SGLang 0.5.23")
    assert "did you mean mem_fraction_static" in message
    assert_error(cfg(args={"frobnicate": 1}), "sglang_server_args.frobnicate", "sglang serve --help")


@pytest.mark.parametrize("key, hint", [
    ("cuda_graph_max_bs", "cuda_graph_max_bs_decode"),
    ("cuda-graph-bs", "cuda_graph_bs_decode"),
    ("mamba_scheduler_strategy", "mamba_radix_cache_strategy"),
    ("speculative_draft", "sglang_server_speculative.draft_model_path"),
    ("speculative_algo", "sglang_server_speculative.algorithm"),
    ("tp", "sglang_server_tp_size"),
])
def test_removed_flags_have_hints(key, hint):
    assert_error(cfg(args={key: 8}), "sglang_server_args." + key, hint)


@pytest.mark.parametrize("key, owner", [
    ("model_path", "sglang_server_model_path"),
    ("model", "sglang_server_model_path"),
    ("served-model-name", "sglang_server_served_model_name"),
    ("host", "sglang_server_host"),
    ("port", "sglang_server_port"),
    ("tp_size", "sglang_server_tp_size"),
    ("tensor_parallel_size", "sglang_server_tp_size"),
    ("speculative_algorithm", "sglang_server_speculative.algorithm"),
    ("speculative_num_steps", "sglang_server_speculative.num_steps"),
    ("speculative_eagle_topk", "sglang_server_speculative.eagle_topk"),
    ("speculative_num_draft_tokens", "sglang_server_speculative.num_draft_tokens"),
    ("speculative_draft_model", "sglang_server_speculative.draft_model_path"),
    ("api_key", "sglang_server_api_key"),
])
def test_dedicated_flags_refused_in_args(key, owner):
    assert_error(cfg(args={key: "1"}), "sglang_server_args." + key, "duplicates " + owner)


def test_config_flag_is_managed():
    assert_error(cfg(args={"config": "/x.yaml"}), "sglang_server_args.config", "--config")


def test_same_flag_twice():
    assert_error(cfg(args={"enable-metrics": True, "enable_metrics": True}), "sets --enable-metrics again")
    assert_error(cfg(args={"ep_size": 2, "expert_parallel_size": 2}), "sets --ep-size again")


def test_negative_spelling_of_bool_flag():
    assert_error(cfg(args={"no_enable_tf32_matmul": True}), "sglang_server_args.no_enable_tf32_matmul",
                 "enable_tf32_matmul: false")


# ---------------------------------------------------------------------------------------------------------
# sglang_server_args: values (types and choices from the table)
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("key, bad, good, needles", [
    ("dtype", "bf16", "bfloat16", ("use dtype: bfloat16",)),
    ("kv_cache_dtype", "fp8", "fp8_e4m3", ("use kv_cache_dtype: fp8_e4m3",)),
    ("mamba_ssm_dtype", "Float32", "float32", ("use mamba_ssm_dtype: float32",)),
    ("attention_backend", "flashinfr", "flashinfer", ("did you mean flashinfer",)),
    ("log_requests_level", 5, "2", ("choices: 0, 1, 2, 3",)),
    ("enable_metrics", "yes", True, ("takes true or false",)),
    ("enable_tf32_matmul", 1, False, ("takes true or false",)),
    ("max_running_requests", "many", "64", ("takes an integer",)),
    ("max_running_requests", 0, 1, (">= 1",)),
    ("max_running_requests", 1.5, 2, ("takes an integer",)),
    ("watchdog_timeout", "soon", 1200, ("takes a number",)),
    ("mem_fraction_static", 1.0, 0.85, ("between 0 and 1",)),
    ("mem_fraction_static", 0, "0.9", ("between 0 and 1",)),
    ("context_length", "256KB", "256Ki", ("SI suffix",)),
    ("context_length", "1.5Ki", "1.5k", ("whole numbers only",)),
    ("context_length", -1, 262144, ("must not be negative",)),
    ("nccl_port", 70000, 31000, ("between 1 and 65535",)),
    ("page_size", 0, 64, (">= 1",)),
    ("chunked_prefill_size", 0, -1, ("-1 (chunked prefill off) or >= 1",)),
    ("mamba_max_states_per_path", 0, -1, ("-1 (unlimited)",)),
    ("log_level", "verbose", "warning", ("logging level name",)),
    ("log_level_http", "loud", "ERROR", ("logging level name",)),
    ("revision", True, "main", ("takes a str value",)),
    ("log_requests_target", ["stdout", "-x"], ["stdout", "/var/log/x"], ("read as an option",)),
    ("tokenizer_path", "a\nb", "/tok", ("control character (LF at offset 1)",)),
    ("radix_eviction_policy_config", "{bad json", {"x": 1}, ("JSON text",)),
    ("sidecar_args", {"a": 1}, ["--x"], ("JSON list",)),
    ("cuda_graph_bs_decode", [1, "two"], [1, 2, 4], ("takes an integer",)),
    ("cuda_graph_bs_decode", [], 8, ("at least one value",)),
    ("lora_target_modules", ["q_proj", "nope"], ["q_proj", "v_proj"], ("not a valid value",)),
    ("cuda_graph_backend_decode", "graph", "full", ("not a valid value",)),
])
def test_value_rules(key, bad, good, needles):
    assert_error(cfg(args={key: bad}), "sglang_server_args." + key, *needles)
    assert errors_for(cfg(args={key: good})) == []


def test_null_and_false_leave_flags_out():
    result = render_server_argv(cfg(args={"quantization": None, "enable_metrics": False, "model_checksum": False}))
    assert "--quantization" not in result["argv"]
    assert "--enable-metrics" not in result["argv"]
    assert "--model-checksum" not in result["argv"]


# ---------------------------------------------------------------------------------------------------------
# rules across variables
# ---------------------------------------------------------------------------------------------------------

def test_chunked_prefill_divisible_by_page_size():
    assert_error(cfg(args={"chunked_prefill_size": 8100, "page_size": 64}),
                 "sglang_server_args.chunked_prefill_size", "divisible by page_size (64)")
    assert errors_for(cfg(args={"chunked_prefill_size": 8192, "page_size": 64})) == []
    assert errors_for(cfg(args={"chunked_prefill_size": -1, "page_size": 64})) == []


def test_tp_pp_divisible_by_nnodes():
    # multi-node settings are cfg keys computed from the node group (sglang_nodes), never args
    assert_error(cfg(tp_size=3, gpus=None, nnodes=2, node_rank=0, dist_init_addr="10.0.0.1:5000"),
                 "sglang_server_node_group", "divisible by nnodes")
    two_nodes = {"nnodes": 2, "node_rank": 1, "dist_init_addr": "10.0.0.1:5000"}
    assert errors_for(cfg(tp_size=4, gpus=[0, 1], **two_nodes)) == []


def test_multi_node_needs_address_and_rank():
    assert_error(cfg(gpus=None, nnodes=2), "sglang_server_dist_init_host", "nnodes > 1")
    assert_error(cfg(gpus=None, nnodes=2, node_rank=2, dist_init_addr="10.0.0.1:1"),
                 "sglang_server_node_rank", "below nnodes")
    assert_error(cfg(gpus=None, nnodes=2, node_rank=-1, dist_init_addr="10.0.0.1:1"),
                 "sglang_server_node_rank", ">= 0")


def test_dp_needs_single_node():
    assert_error(cfg(gpus=None, args={"dp_size": 2}, nnodes=2, dist_init_addr="10.0.0.1:1"),
                 "sglang_server_args.dp_size", "nnodes == 1")
    assert errors_for(cfg(gpus=[0, 1, 2, 3, 4, 5, 6, 7], args={"dp_size": 2})) == []


def test_attn_dp_divides_tp():
    assert_error(cfg(args={"attn_dp_size": 3}), "sglang_server_args.attn_dp_size", "divisible")
    assert errors_for(cfg(speculative={}, args={"attn_dp_size": 2})) == []


def test_gpu_count_follows_pipeline_stages():
    assert_error(cfg(args={"pp_size": 2}), "sglang_server_gpus", "tp_size x pp_size x dp_size / nnodes", "= 8")
    assert errors_for(cfg(gpus=list(range(8)), args={"pp_size": 2})) == []


def test_extra_port_must_not_be_the_http_port():
    assert_error(cfg(args={"nccl_port": 30000}), "sglang_server_args.nccl_port", "HTTP port")
    assert errors_for(cfg(args={"nccl_port": 30001})) == []


def test_p2p_off_conflicts_with_explicit_false():
    assert_error(cfg(p2p="off", args={"disable_custom_all_reduce": False}),
                 "sglang_server_args.disable_custom_all_reduce", "sglang_server_p2p is off")
    assert_error(cfg(p2p="off", env={"NCCL_P2P_DISABLE": "0"}), "sglang_server_env.NCCL_P2P_DISABLE")
    assert errors_for(cfg(p2p="on", args={"disable_custom_all_reduce": False})) == []


def test_mamba_rules():
    assert_error(cfg(args={"mamba_radix_cache_strategy": "no_buffer", "page_size": 64}),
                 "sglang_server_args.page_size", "no_buffer")
    assert errors_for(cfg(args={"mamba_radix_cache_strategy": "no_buffer", "page_size": 1})) == []
    assert_error(cfg(args={"mamba_radix_cache_strategy": "no_buffer", "attention_backend": "trtllm_mha",
                           "page_size": 1}), "no_buffer does not work with trtllm_mha")
    assert_error(cfg(args={"mamba_track_interval": 2}), "sglang_server_args.mamba_track_interval",
                 "num_draft_tokens (4)")
    assert_error(cfg(args={"mamba_track_interval": 100, "page_size": 64}), "sglang_server_args.mamba_track_interval",
                 "divisible by page_size (64)")
    assert errors_for(cfg(args={"mamba_track_interval": 128, "page_size": 64})) == []
    assert_error(cfg(args={"enable_mamba_cache_stochastic_rounding": True}), "mamba_ssm_dtype float16")
    assert errors_for(cfg(args={"enable_mamba_cache_stochastic_rounding": True, "mamba_ssm_dtype": "float16"})) == []
    assert_error(cfg(args={"enable_int8_mamba_checkpoint": True, "enable_hierarchical_cache": True}),
                 "cannot be combined with enable_hierarchical_cache")
    assert errors_for(cfg(args={"enable_int8_mamba_checkpoint": True})) == []


def test_deprecated_flags_warn():
    config = cfg(args={"enable_dp_attention": True})
    assert errors_for(config) == []
    assert any("attn_dp_size" in w for w in server_config_warnings(config))


def test_context_length_si_suffix_warns():
    warnings = server_config_warnings(cfg(args={"context_length": "256k"}))
    assert any("'256ki'" in w.lower() and "x1000" in w for w in warnings)
    assert not any("context_length" in w for w in server_config_warnings(cfg(args={"context_length": "256Ki"})))


# ---------------------------------------------------------------------------------------------------------
# rendering
# ---------------------------------------------------------------------------------------------------------

def test_render_mtp_deployment():
    result = render_server_argv(cfg(args={"mem_fraction_static": 0.85, "enable_metrics": True,
                                          "trust_remote_code": False, "watchdog_timeout": 1200}))
    assert result["argv"] == [
        "--model-path", "/models/Qwen3.5-122B-A10B",
        "--served-model-name", "qwen3.5-122b",
        "--host", "127.0.0.1",
        "--port", "30000",
        "--tp-size", "4",
        "--speculative-algorithm", "NEXTN",
        "--speculative-num-steps", "3",
        "--speculative-eagle-topk", "1",
        "--speculative-num-draft-tokens", "4",
        "--enable-metrics",
        "--max-running-requests", "64",
        "--mem-fraction-static", "0.85",
        "--watchdog-timeout", "1200",
    ]
    assert result["config"] == {}
    assert result["env"] == {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}
    assert result["env_file"] == {}
    assert result["p2p"] == "on"
    assert all(isinstance(item, str) for item in result["argv"])


def test_render_order_is_stable():
    args_a = {"enable_metrics": True, "page_size": 1, "dtype": "bfloat16", "chunked_prefill_size": 8192}
    args_b = dict(reversed(list(args_a.items())))
    argv_a = render_server_argv(cfg(args=args_a))["argv"]
    argv_b = render_server_argv(cfg(args=args_b))["argv"]
    assert argv_a == argv_b
    tail = argv_a[argv_a.index("--speculative-num-draft-tokens") + 2:]
    options = [t for t in tail if t.startswith("--")]
    assert options == sorted(options, key=lambda o: o[2:].replace("-", "_"))


def test_render_algorithm_upper_cased_and_draft_path():
    result = render_server_argv(cfg(speculative={"algorithm": "eagle3", "draft_model_path": "/models/draft"}))
    argv = result["argv"]
    assert argv[argv.index("--speculative-algorithm") + 1] == "EAGLE3"
    assert argv[argv.index("--speculative-draft-model-path") + 1] == "/models/draft"


def test_render_without_speculative():
    argv = render_server_argv(cfg(speculative={}, args={}))["argv"]
    assert not any(t.startswith("--speculative") for t in argv)


def test_render_switch_kinds():
    argv = render_server_argv(cfg(args={"enable_tf32_matmul": False, "dllm_fdfo": True, "disable_radix_cache": True,
                                        "model_checksum": True}))["argv"]
    assert "--no-enable-tf32-matmul" in argv
    assert "--dllm-fdfo" in argv
    assert "--disable-radix-cache" in argv
    position = argv.index("--model-checksum")
    assert position == len(argv) - 1 or argv[position + 1].startswith("--")


def test_render_values():
    argv = render_server_argv(cfg(args={
        "cuda_graph_bs_decode": [1, 2, 4, 8],
        "model_loader_extra_config": {"enable_multithread_load": True},
        "json_model_override_args": '{"a": 1}',
        "context_length": "256Ki",
        "log_requests_level": "1",
        "kv_cache_dtype": "fp8_e4m3",
        "--tool-call-parser": "qwen3_coder",
    }))["argv"]
    joined = " ".join(argv)
    assert "--cuda-graph-bs-decode 1 2 4 8 " in joined + " "
    assert argv[argv.index("--model-loader-extra-config") + 1] == '{"enable_multithread_load":true}'
    assert argv[argv.index("--json-model-override-args") + 1] == '{"a": 1}'
    assert argv[argv.index("--context-length") + 1] == "256Ki"
    assert argv[argv.index("--log-requests-level") + 1] == "1"
    assert argv[argv.index("--tool-call-parser") + 1] == "qwen3_coder"


def test_render_aliases_use_main_spelling():
    argv = render_server_argv(cfg(args={"expert_parallel_size": 4, "enable_hicache": True}))["argv"]
    assert "--ep-size" in argv and "--expert-parallel-size" not in argv
    assert "--enable-hierarchical-cache" in argv


def test_render_p2p_off():
    for value in ("off", "OFF", False):
        result = render_server_argv(cfg(p2p=value))
        assert "--disable-custom-all-reduce" in result["argv"]
        assert "--enforce-disable-flashinfer-allreduce-fusion" in result["argv"]
        assert result["env"]["NCCL_P2P_DISABLE"] == "1"
        assert result["p2p"] == "off"
    # the switch given explicitly as well is rendered once
    argv = render_server_argv(cfg(p2p="off", args={"disable_custom_all_reduce": True}))["argv"]
    assert argv.count("--disable-custom-all-reduce") == 1


@pytest.mark.parametrize("p2p, p2p_ok, expected", [
    ("auto", False, "off"),
    ("auto", True, "on"),
    ("auto", None, "on"),
    (None, False, "off"),
    ("on", False, "on"),
    (True, None, "on"),
])
def test_render_p2p_auto(p2p, p2p_ok, expected):
    result = render_server_argv(cfg(p2p=p2p, p2p_ok=p2p_ok))
    assert result["p2p"] == expected
    assert ("--disable-custom-all-reduce" in result["argv"]) == (expected == "off")
    assert ("NCCL_P2P_DISABLE" in result["env"]) == (expected == "off")


def test_render_secrets_never_in_argv():
    api_key = "sk-THE-API-KEY-0123456789"
    admin_key = "sk-ADMIN-KEY-0123456789"
    token = "hf_THE_TOKEN_0123456789"
    result = render_server_argv(cfg(host="0.0.0.0", api_key=api_key, hf_token=token,
                                    args={"admin-api-key": admin_key, "enable_metrics": True},
                                    config_path="/etc/sglang/sglang.yaml"))
    flat = " ".join(result["argv"])
    for secret in (api_key, admin_key, token):
        assert secret not in flat
        assert secret not in str(result["env"])
    assert "--api-key" not in result["argv"]
    assert "--admin-api-key" not in result["argv"]
    assert result["config"] == {"api-key": api_key, "admin-api-key": admin_key}
    assert result["env_file"] == {"HF_TOKEN": token}
    assert result["argv"][-2:] == ["--config", "/etc/sglang/sglang.yaml"]


def test_render_no_config_flag_without_secret():
    result = render_server_argv(cfg(config_path="/etc/sglang/sglang.yaml"))
    assert "--config" not in result["argv"]
    assert result["config"] == {}


def test_render_env():
    result = render_server_argv(cfg(gpus=[3, 1, 2, 0], env={"SGLANG_X": True, "B_VAR": 2, "A_VAR": "x"}))
    assert list(result["env"]) == sorted(result["env"])
    assert result["env"] == {"A_VAR": "x", "B_VAR": "2", "CUDA_VISIBLE_DEVICES": "3,1,2,0", "SGLANG_X": "1"}
    assert "CUDA_VISIBLE_DEVICES" not in render_server_argv(cfg(gpus=None))["env"]


def test_render_raises_with_all_errors():
    with pytest.raises(SGLangConfigError) as info:
        render_server_argv(cfg(port=0, served_model_name="a:b"))
    assert len(info.value.errors) == 2
    assert "sglang_server_port" in str(info.value) and "sglang_server_served_model_name" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_render_returns_warnings():
    result = render_server_argv(cfg(args={"max_running_requests": _DROP}))
    assert any("48" in w for w in result["warnings"])


def test_module_constants_consistent_with_table():
    for dest in sglang_args.DEDICATED_FLAGS:
        assert dest in sglang_args.FLAGS
    for dest in sglang_args.P2P_OFF_SWITCHES + sglang_args.SECRET_FLAGS:
        assert sglang_args.FLAGS[dest]["kind"] in ("switch", "value")
    for dest in sglang_args.POSITIVE_INT_FLAGS + sglang_args.NON_NEGATIVE_INT_FLAGS:
        assert sglang_args.FLAGS[dest]["type"] == "int", dest


def test_module_is_py39_and_stdlib_plus_netaddr():
    # sglang_args and its rule family modules (sglang_args_*.py) together
    folder = os.path.dirname(sglang_args.__file__)
    imports = set()
    for name in sorted(os.listdir(folder)):
        if name.startswith("sglang_args") and name.endswith(".py"):
            imports |= top_level_imports(os.path.join(folder, name))
    assert imports == {"__future__", "difflib", "json", "re", "netaddr", "ansible_collections"}


# ---------------------------------------------------------------------------------------------------------
# control characters, '-' values, the hook's environment, the unit's own settings, the readiness probe
# ---------------------------------------------------------------------------------------------------------

CONTROL_CASES = [
    ("\0", "NUL"), ("\t", "TAB"), ("\n", "LF"), ("\r", "CR"), ("\x1b", "ESC"), ("\x7f", "DEL"), ("\x85", "NEL"),
    ("\x9b", "U+009B"), ("\u2028", "LINE SEPARATOR"),
]


@pytest.mark.parametrize("char, name", CONTROL_CASES)
@pytest.mark.parametrize("changes, variable", [
    (lambda c: {"env": {"FOO": "x" + c + "ExecStartPre=+/usr/bin/touch /var/pwned" + c + "#"}}, "sglang_server_env.FOO"),
    (lambda c: {"model_path": "/m" + c + "x"}, "sglang_server_model_path"),
    (lambda c: {"served_model_name": "q" + c + "x"}, "sglang_server_served_model_name"),
    (lambda c: {"speculative": {"draft_model_path": "/d" + c}}, "sglang_server_speculative.draft_model_path"),
    (lambda c: {"args": {"tokenizer_path": "/t" + c}}, "sglang_server_args.tokenizer_path"),
    (lambda c: {"args": {"context_length": "256k" + c + "x"}}, "sglang_server_args.context_length"),
    (lambda c: {"args": {"log_requests_target": ["stdout", "/l" + c]}}, "sglang_server_args.log_requests_target[1]"),
    (lambda c: {"config_path": "/etc/sglang/s" + c + ".yaml"}, "sglang_server_config_path"),
    (lambda c: {"base_env": {"HOME": "/var/lib/s" + c}}, "__sglang_server_base_env.HOME"),
    (lambda c: {"home": "/var/lib/s" + c}, "sglang_server_home"),
    (lambda c: {"config_dir": "/etc/s" + c}, "sglang_server_config_dir"),
    (lambda c: {"venv": "/opt/v" + c}, "sglang_server_venv"),
    (lambda c: {"python": "/usr/bin/p" + c}, "sglang_server_python"),
    (lambda c: {"unit_name": "s" + c}, "sglang_server_unit_name"),
    (lambda c: {"user": "s" + c}, "sglang_server_user"),
    (lambda c: {"ready_path": "/health" + c}, "sglang_server_ready_path"),
    (lambda c: {"probe_ca_path": "/etc/ca" + c}, "sglang_server_probe_ca_path"),
])
def test_control_characters_are_refused_everywhere(changes, variable, char, name):
    bad = cfg(**changes(char))
    message = assert_error(bad, variable + ": contains a control character (%s at offset " % name)
    assert "pwned" not in message.split(":", 1)[0]
    with pytest.raises(SGLangConfigError):
        render_server_argv(bad)


@pytest.mark.parametrize("char, name", CONTROL_CASES)
@pytest.mark.parametrize("changes, variable", [
    (lambda c: {"api_key": "sk-1" + c + "2"}, "sglang_server_api_key"),
    (lambda c: {"hf_token": "hf_1" + c + "2"}, "sglang_server_hf_token"),
    (lambda c: {"args": {"admin_api_key": "sk-1" + c + "2"}}, "sglang_server_args.admin_api_key"),
])
def test_control_characters_in_secrets_are_refused_without_the_value(changes, variable, char, name):
    message = assert_error(cfg(**changes(char)), variable + ": contains a control character (%s at offset 4; value "
                           "not shown)" % name)
    assert "sk-1" not in message and "hf_1" not in message


def test_nul_injection_of_the_review_is_named_exactly():
    assert errors_for(cfg(env={"FOO": "x\0ExecStartPre=+/usr/bin/touch /var/pwned\0#"})) == [
        "sglang_server_env.FOO: contains a control character (NUL at offset 1); remove it; values must be plain text"]


@pytest.mark.parametrize("name", ["FOO\n", "FOO\r\n", "FOO\0", "FO O", "FOO="])
def test_env_names_are_matched_in_full(name):
    """'^...$' accepts 'FOO\\n' ('$' matches before a final newline); the rule uses full-match semantics."""
    message = assert_error(cfg(env={name: "1"}), "not a valid environment variable name")
    assert "\n" not in message and "\0" not in message


@pytest.mark.parametrize("key", ["enable_metrics\x00", "enable\x1bmetrics"])
def test_flag_names_with_control_characters_are_refused(key):
    message = assert_error(cfg(args={key: True}), "control character")
    assert "\x00" not in message and "\x1b" not in message


@pytest.mark.parametrize("raw", ["5\n", " 5\t"])
def test_numbers_with_a_trailing_control_character_are_refused(raw):
    assert_error(cfg(args={"max_running_requests": raw}), "sglang_server_args.max_running_requests: contains a "
                 "control character")


@pytest.mark.parametrize("changes, option, value", [
    ({"args": {"chunked_prefill_size": -1}}, "--chunked-prefill-size", "-1"),
    ({"args": {"tokenizer_path": "-x"}}, "--tokenizer-path", "-x"),
    ({"args": {"tokenizer_path": "--help"}}, "--tokenizer-path", "--help"),
    ({"args": {"log_requests_target": ["-x"]}}, "--log-requests-target", "-x"),
    ({"served_model_name": "-served"}, "--served-model-name", "-served"),
    ({"model_path": "-m"}, "--model-path", "-m"),
    ({"speculative": {"draft_model_path": "-d"}}, "--speculative-draft-model-path", "-d"),
])
def test_values_starting_with_a_dash_are_joined_to_their_option(changes, option, value):
    argv = render_server_argv(cfg(**changes))["argv"]
    assert option + "=" + value in argv
    assert value not in argv and option not in argv


def test_negative_numbers_in_lists_stay_separate_values():
    argv = render_server_argv(cfg(args={"gc_threshold": [700, -1, 10]}))["argv"]
    assert argv[argv.index("--gc-threshold"):][:4] == ["--gc-threshold", "700", "-1", "10"]


@pytest.mark.parametrize("name", ["PYTHONPATH", "PYTHONHOME", "LLMSERVE_REDACT_CONFIG"])
def test_env_that_switches_the_redaction_hook_off_is_refused(name):
    base = {"PYTHONPATH": "/etc/sglang/pylib", "LLMSERVE_REDACT_CONFIG": "/etc/sglang/sglang.yaml"}
    message = assert_error(cfg(base_env=base, env={name: "/elsewhere"}), "sglang_server_env.%s: is refused" % name,
                           "log redaction hook")
    assert "sitecustomize" in message


def test_base_env_is_kept_and_user_env_adds_to_it():
    base = {"PYTHONPATH": "/etc/sglang/pylib", "HOME": "/var/lib/sglang", "PYTHONNOUSERSITE": "1"}
    result = render_server_argv(cfg(base_env=base, env={"HOME": "/srv/sglang", "PYTHONSAFEPATH": "1"}))
    assert result["env"]["PYTHONPATH"] == "/etc/sglang/pylib"
    assert result["env"]["HOME"] == "/srv/sglang"
    assert result["env"]["PYTHONSAFEPATH"] == "1" and result["env"]["PYTHONNOUSERSITE"] == "1"


def test_merged_env_without_base_env_is_still_accepted():
    """Callers that merge the role's environment into env (one dict) keep working."""
    assert errors_for(cfg(env={"PYTHONPATH": "/etc/sglang/pylib"})) == []


@pytest.mark.parametrize("changes, needles", [
    ({"unit_name": "../../tmp/x"}, ("sglang_server_unit_name", "plain systemd unit name")),
    ({"unit_name": "sglang@1"}, ("sglang_server_unit_name",)),
    ({"unit_name": "-sglang"}, ("sglang_server_unit_name",)),
    ({"user": "root\n"}, ("sglang_server_user", "control character")),
    ({"user": "bad user"}, ("sglang_server_user", "user or group name")),
    ({"group": "-g"}, ("sglang_server_group", "user or group name")),
    ({"home": "var/lib/sglang"}, ("sglang_server_home", "absolute path")),
    ({"home": "/var/lib/my sglang"}, ("sglang_server_home", "whitespace")),
    ({"config_dir": "/etc/\"x"}, ("sglang_server_config_dir", "must not contain \"")),
    ({"venv": "/opt/../etc"}, ("sglang_server_venv", "'..'")),
    ({"python": "+/usr/bin/python3"}, ("sglang_server_python", "absolute path")),
    ({"config_path": "/etc/sglang/my config.yaml"}, ("sglang_server_config_path", "whitespace")),
])
def test_unit_settings_rules(changes, needles):
    assert_error(cfg(**changes), *needles)


def test_unit_settings_accept_the_defaults():
    assert errors_for(cfg(unit_name="sglang", user="sglang", group="sglang", home="/var/lib/sglang",
                          config_dir="/etc/sglang", venv="/opt/sglang/venv", python="", ready_path="/health",
                          probe_ca_path="", probe_validate_certs=True)) == []


@pytest.mark.parametrize("path", [
    "@evil.example/x", "/@evil.example", "//evil.example/x", "/\\evil.example", "health", "http://evil/x",
    "/health?x=1", "/health#x", "/he alth", "/%zz", "", 5,
])
def test_ready_path_must_be_a_plain_absolute_path(path):
    assert_error(cfg(ready_path=path), "sglang_server_ready_path")


@pytest.mark.parametrize("path", ["/health", "/v1/models", "/health_generate", "/a/b-c.d~e:f", "/x%2Fy"])
def test_ready_path_accepts_plain_paths(path):
    assert errors_for(cfg(ready_path=path)) == []
    assert sglang_args.url_path_problem(path) is None


def test_tls_needs_both_files_like_sglang():
    assert_error(cfg(args={"ssl_certfile": "/etc/sglang/tls.crt"}), "sglang_server_args.ssl_certfile",
                 "--ssl-keyfile", "sglang_server_args.ssl_keyfile")
    assert_error(cfg(args={"ssl-keyfile": "/etc/sglang/tls.key"}), "sglang_server_args.ssl-keyfile",
                 "--ssl-certfile")
    assert errors_for(cfg(args={"ssl_certfile": "/c", "ssl_keyfile": "/k"})) == []


def test_probe_settings_rules_and_warnings():
    tls = {"ssl_certfile": "/c", "ssl_keyfile": "/k"}
    assert_error(cfg(probe_ca_path="ca.pem"), "sglang_server_probe_ca_path", "absolute path")
    assert_error(cfg(probe_validate_certs="no"), "sglang_server_probe_validate_certs", "boolean")
    assert any(w.startswith("sglang_server_probe_validate_certs: is false")
               for w in server_config_warnings(cfg(args=tls, probe_validate_certs=False)))
    assert any(w.startswith("sglang_server_probe_ca_path: has no effect")
               for w in server_config_warnings(cfg(probe_ca_path="/etc/ca.pem")))


@pytest.mark.parametrize("host, port, args, url", [
    ("127.0.0.1", 30000, {}, "http://127.0.0.1:30000"),
    ("0.0.0.0", "30001", None, "http://127.0.0.1:30001"),
    ("::", 30000, {}, "http://127.0.0.1:30000"),
    ("::1", 30000, {}, "http://[::1]:30000"),
    ("10.0.0.5", 30000, {"ssl_certfile": "/c", "ssl_keyfile": "/k"}, "https://10.0.0.5:30000"),
    ("127.0.0.1", 30000, {"--ssl-certfile": "/c"}, "https://127.0.0.1:30000"),
    ("127.0.0.1", 30000, {"ssl-certfile": ""}, "http://127.0.0.1:30000"),
    ("127.0.0.1", 30000, {"ssl_certfile": None}, "http://127.0.0.1:30000"),
])
def test_probe_base_url(host, port, args, url):
    assert sglang_args.probe_base_url(host, port, args) == url


@pytest.mark.parametrize("host, port", [("evil.example", 1), ("127.0.0.1@evil", 1), ("127.0.0.1", 0),
                                        ("127.0.0.1", "1\n"), ("127.0.0.1\n", 1)])
def test_probe_base_url_refuses_what_is_not_an_address(host, port):
    with pytest.raises(ValueError):
        sglang_args.probe_base_url(host, port, {})


@pytest.mark.parametrize("changes, variable", [
    ({"api_key": "-sk-123"}, "sglang_server_api_key"),
    ({"args": {"admin_api_key": "--enable-metrics"}}, "sglang_server_args.admin_api_key"),
    ({"args": {"ssl_keyfile_password": "-pw"}}, "sglang_server_args.ssl_keyfile_password"),
])
def test_config_file_secrets_must_not_look_like_options(changes, variable):
    message = assert_error(cfg(**changes), variable + ": must not start with '-' (value not shown)")
    assert "sk-123" not in message and "enable-metrics" not in message


def test_hf_token_may_start_with_a_dash():
    """It goes to the environment, not through SGLang's parser."""
    assert render_server_argv(cfg(hf_token="-hf_x"))["env_file"] == {"HF_TOKEN": "-hf_x"}


# -- sglang_server_metrics -----------------------------------------------------------------------------


def test_metrics_true_adds_enable_metrics_once():
    argv = render_server_argv(cfg(metrics=True))["argv"]
    assert argv.count("--enable-metrics") == 1
    # the same flag given in args as well is not repeated
    argv = render_server_argv(cfg(metrics=True, args={"enable_metrics": True}))["argv"]
    assert argv.count("--enable-metrics") == 1


@pytest.mark.parametrize("metrics", [False, None])
def test_metrics_off_or_unset_leaves_args_alone(metrics):
    assert "--enable-metrics" not in render_server_argv(cfg(metrics=metrics))["argv"]
    assert "--enable-metrics" in render_server_argv(cfg(metrics=metrics, args={"enable_metrics": True}))["argv"]


def test_metrics_refuses_a_contradicting_arg():
    message = assert_error(cfg(metrics=True, args={"enable-metrics": False}),
                           "sglang_server_args.enable-metrics", "sglang_server_metrics")
    assert "remove" in message
    with pytest.raises(SGLangConfigError):
        render_server_argv(cfg(metrics=True, args={"enable_metrics": False}))


@pytest.mark.parametrize("bad", ["yes", 1, [True]])
def test_metrics_must_be_a_boolean(bad):
    assert_error(cfg(metrics=bad), "sglang_server_metrics", "boolean")


# ---------------------------------------------------------------------------------------------------------
# the table's version against sglang_server_version
# ---------------------------------------------------------------------------------------------------------

def test_unknown_flag_is_an_error_for_the_tables_version():
    for version in (SGLANG_VERSION, SGLANG_VERSION + "+local", None):
        assert_error(cfg(version=version, args={"enable_shiny_new_thing": True}),
                     "sglang_server_args.enable_shiny_new_thing", "is not a flag of SGLang %s" % SGLANG_VERSION)
        assert_error(cfg(version=version, args={"dtype": "bf16"}), "sglang_server_args.dtype", "use dtype: bfloat16")


def test_other_version_turns_flag_existence_and_choices_into_warnings():
    config = cfg(version="0.5.24", args={"enable_shiny_new_thing": True, "shiny_level": 3, "shiny_list": ["a", "b"],
                                         "shiny_off": False, "cuda_graph_max_bs": 64, "dtype": "bf16"})
    assert errors_for(config) == []
    warnings = server_config_warnings(config)
    for key in ("enable_shiny_new_thing", "shiny_level", "shiny_list", "shiny_off", "cuda_graph_max_bs", "dtype"):
        hits = [w for w in warnings if w.startswith("sglang_server_args.%s: " % key)]
        assert len(hits) == 1, (key, warnings)
        assert "installed SGLang 0.5.24" in hits[0]
    assert any("removed in SGLang 0.5.20" in w for w in warnings)  # the table's hint goes along
    argv = render_server_argv(config)["argv"]
    assert argv[argv.index("--enable-shiny-new-thing") + 1].startswith("--")  # a bare switch
    assert argv[argv.index("--shiny-level") + 1] == "3"
    assert argv[argv.index("--shiny-list") + 1:argv.index("--shiny-list") + 3] == ["a", "b"]
    assert argv[argv.index("--cuda-graph-max-bs") + 1] == "64"
    assert argv[argv.index("--dtype") + 1] == "bf16"
    assert "--shiny-off" not in argv


def test_other_version_still_checks_types_and_values_it_knows():
    # a known flag keeps its type from the table, and control characters stay refused
    assert_error(cfg(version="0.5.24", args={"tp_size": 2}), "sglang_server_args.tp_size", "duplicates")
    assert_error(cfg(version="0.5.24", args={"mem_fraction_static": "most"}), "sglang_server_args.mem_fraction_static",
                 "takes a number")
    assert_error(cfg(version="0.5.24", args={"shiny": "a\nb"}), "sglang_server_args.shiny", "control character")
    assert_error(cfg(version="0.5.24", args={"shiny": {"a": 1}, "--shiny": 1}), "sglang_server_args.--shiny", "again")


def test_dedicated_variables_take_their_type_from_the_table(monkeypatch):
    """sglang_server_port/tp_size and the speculative integers are checked by the table's entry of their flag."""
    # the table is shared by the rule family modules: change its entry in place
    monkeypatch.setitem(sglang_args.FLAGS, "tp_size", dict(sglang_args.FLAGS["tp_size"], choices=[1, 2, 4]))
    assert errors_for(cfg(tp_size=4)) == []
    assert_error(cfg(tp_size=8, gpus=[0, 1, 2, 3, 4, 5, 6, 7]), "sglang_server_tp_size", "not a valid value for --tp-size")


# ---- speculative decoding that SGLang 0.5.23 quietly changes: the hybrid Qwen3.5 backend, adaptive speculation ----

def test_hybrid_qwen_with_speculation_and_no_attention_backend_warns():
    # srt/arg_groups/model_overrides/qwen3_5.py picks the backend per speculative setting when none is given
    warnings = server_config_warnings(cfg())
    hits = [w for w in warnings if "hybrid Qwen3.5/Qwen3-Next" in w]
    assert len(hits) == 1 and hits[0].startswith("sglang_server_args.attention_backend: is unset")
    assert "model_overrides/qwen3_5.py" in hits[0]
    for name in ("/models/Qwen3-Next-80B-A3B-Instruct", "Qwen/Qwen3_5-27B", "qwen3.5-moe"):
        assert any("hybrid Qwen3.5" in w for w in server_config_warnings(cfg(model_path=name, served_model_name=None)))


@pytest.mark.parametrize("changes", [
    {"args": {"max_running_requests": 64, "attention_backend": "triton"}},
    {"speculative": {}},
    {"model_path": "/models/Qwen3-32B", "served_model_name": "qwen3-32b"},
])
def test_no_hybrid_warning_with_a_backend_without_speculation_or_for_other_models(changes):
    assert not any("hybrid Qwen3.5" in w for w in server_config_warnings(cfg(**changes)))


def _adaptive(spec=None, **args):
    # the whole speculative dict is replaced, not merged into BASE's
    spec = dict({key: _DROP for key in BASE["speculative"]}, **(spec or {"algorithm": "NEXTN", "num_steps": 3}))
    return cfg(speculative=spec,
               args=dict({"max_running_requests": 64, "attention_backend": "fa3", "speculative_adaptive": True}, **args))


def test_adaptive_nextn_with_steps_and_no_topk_is_valid():
    # SGLang sets eagle_topk 1 and num_draft_tokens num_steps + 1 itself under --speculative-adaptive
    assert validate_server_config(_adaptive()) == []
    assert validate_server_config(_adaptive({"algorithm": "NEXTN"})) == []
    assert not any("adaptive" in w for w in server_config_warnings(_adaptive()))


def test_adaptive_steps_must_be_a_candidate_step():
    errors = validate_server_config(_adaptive({"algorithm": "NEXTN", "num_steps": 4}))
    assert len(errors) == 1 and errors[0].startswith(
        "sglang_server_speculative.num_steps: must be one of the adaptive candidate steps [0, 1, 3, 5, 7] with "
        "speculative_adaptive (SGLang refuses to start otherwise), got 4")
    # a config file of its own names other candidates, on the host: not judged here
    assert validate_server_config(_adaptive({"algorithm": "NEXTN", "num_steps": 4},
                                            speculative_adaptive_config="/etc/sglang/adaptive.json")) == []


def test_adaptive_draft_tokens_become_steps_plus_one():
    errors = validate_server_config(_adaptive({"algorithm": "NEXTN", "num_steps": 5, "num_draft_tokens": 4}))
    assert len(errors) == 1 and "becomes num_steps + 1 (6) with speculative_adaptive" in errors[0]
    errors = validate_server_config(_adaptive({"algorithm": "NEXTN", "num_draft_tokens": 6}))
    assert len(errors) == 1 and "becomes num_steps + 1 (4)" in errors[0]


@pytest.mark.parametrize("spec, args, why", [
    ({"algorithm": "NGRAM"}, {}, "algorithm is NGRAM (only EAGLE, EAGLE3 and NEXTN adapt)"),
    ({"algorithm": "EAGLE", "num_steps": 3, "eagle_topk": 2, "num_draft_tokens": 6,
      "draft_model_path": "/models/draft"}, {}, "eagle_topk is 2 (only 1 adapts)"),
    ({"algorithm": "NEXTN", "num_steps": 3}, {"attn_dp_size": 2, "dp_size": 2}, "data-parallel attention is on"),
    ({"algorithm": "NEXTN", "num_steps": 3}, {"enable_multi_layer_eagle": True}, "enable_multi_layer_eagle is on"),
    ({"algorithm": "NEXTN", "num_steps": 3}, {"enable_two_batch_overlap": True}, "enable_two_batch_overlap is on"),
    ({"algorithm": "NEXTN", "num_steps": 3}, {"enable_pdmux": True}, "enable_pdmux is on"),
])
def test_adaptive_combinations_sglang_switches_off_warn(spec, args, why):
    warnings = [w for w in server_config_warnings(_adaptive(spec, **args)) if "adaptive speculation off" in w]
    assert len(warnings) == 1 and why in warnings[0], server_config_warnings(_adaptive(spec, **args))
    assert warnings[0].startswith("sglang_server_args.speculative_adaptive: SGLang 0.5.23 turns")


def test_render_reports_the_backend_asked_for():
    out = render_server_argv(cfg(args={"max_running_requests": 64, "attention-backend": "fa3", "page_size": 16}))
    assert out["requested_backend"] == {"attention_backend": "fa3", "prefill_attention_backend": None,
                                        "decode_attention_backend": None, "page_size": 16}
    assert render_server_argv(cfg())["requested_backend"]["attention_backend"] is None
