# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The weight-loading rules (``sglang_args_loader``): ``model_loader_extra_config``, checkpoint prefetch and the
startup overlap, as SGLang 0.5.23's loader reads them."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args import (
    render_server_argv,
    server_config_warnings,
    validate_server_config,
)

# The story host: Qwen3.5-122B-A10B, TP 4 with MTP.
BASE = {
    "model_path": "/var/lib/llmserve-models/Qwen3.5-122B-A10B",
    "host": "127.0.0.1",
    "port": 30000,
    "tp_size": 4,
    "gpus": [0, 1, 2, 3],
    "speculative": {"algorithm": "NEXTN", "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4},
    "args": {"max_running_requests": 64},
}
# A host startup overlap can take (TP 2, no speculation); the model is SGLang's business, not checked here.
OVERLAP_OK = dict(BASE, model_path="/models/Qwen3-8B", tp_size=2, gpus=[0, 1], speculative={})
PREFETCH = "sglang_server_args.weight_loader_prefetch_checkpoints"
EXTRA = "sglang_server_args.model_loader_extra_config"


def cfg(base=None, **args):
    out = copy.deepcopy(BASE if base is None else base)
    out["args"].update(args)
    return out


def errors_with(config, *needles):
    errors = validate_server_config(config)
    return [e for e in errors if all(n in e for n in needles)]


def assert_error(config, *needles):
    hits = errors_with(config, *needles)
    assert hits, "no error containing %r in %r" % (needles, validate_server_config(config))
    return hits[0]


def assert_clean(config):
    assert validate_server_config(config) == []
    assert not [w for w in server_config_warnings(config) if "loader" in w or "prefetch" in w or "overlap" in w]


# -- model_loader_extra_config: its form --------------------------------------------------------------------

@pytest.mark.parametrize("extra", [
    {"enable_multithread_load": True, "num_threads": 16},
    {"enable_multithread_load": False},
    {"num_threads": 1},
    '{"enable_multithread_load": true, "num_threads": 8}',
    "{}",
    {},
])
def test_well_formed_extra_config_passes(extra):
    assert_clean(cfg(model_loader_extra_config=extra))


@pytest.mark.parametrize("extra, needle", [
    ("{enable_multithread_load: true}", "does not parse"),
    ("", "does not parse"),
    ('{"num_threads": NaN}', "does not parse"),
    ("[1, 2]", "must be a JSON object"),
    ([{"enable_multithread_load": True}], "must be a JSON object"),
    ("null", "must be a JSON object"),
    ("8", "must be a JSON object"),
])
def test_extra_config_must_be_a_json_object(extra, needle):
    message = assert_error(cfg(model_loader_extra_config=extra), EXTRA + ":", needle)
    assert "enable_multithread_load" in message  # the hint shows the form


@pytest.mark.parametrize("value", ["false", "true", 0, 1, None])
def test_enable_multithread_load_must_be_a_boolean(value):
    # SGLang tests its truth value: the text "false" would switch multi-threaded loading on
    assert_error(cfg(model_loader_extra_config={"enable_multithread_load": value}),
                 EXTRA + ".enable_multithread_load:", "true or false")


@pytest.mark.parametrize("value", [0, -4, "8", 8.5, True, None])
def test_num_threads_must_be_a_positive_integer(value):
    assert_error(cfg(model_loader_extra_config={"num_threads": value}), EXTRA + ".num_threads:", ">= 1")


def test_enable_gds_must_be_a_boolean():
    assert_error(cfg(load_format="fastsafetensors", model_loader_extra_config={"enable_gds": "yes"}),
                 EXTRA + ".enable_gds:", "true or false")
    assert validate_server_config(cfg(load_format="fastsafetensors", model_loader_extra_config={"enable_gds": False})) \
        == []


def test_unknown_key_is_refused_for_the_default_loader():
    message = assert_error(cfg(model_loader_extra_config={"num_thread": 8}), EXTRA + ".num_thread:", "auto")
    assert "num_threads" in message
    assert_error(cfg(load_format="safetensors", model_loader_extra_config={"enable_gds": True}),
                 EXTRA + ".enable_gds:", "safetensors")


@pytest.mark.parametrize("load_format, extra", [
    ("fastsafetensors", {"enable_gds": True}),
    ("presharded", {"presharded_path": "/srv/presharded", "hash_num_threads": 4}),
    # other loaders read other keys (or hand them on): not checked here
    ("runai_streamer", {"concurrency": 16}),
    ("instanttensor", {"backend": "auto"}),
    ("sharded_state", {"pattern": "model-rank-{rank}-part-{part}.safetensors"}),
])
def test_keys_of_other_loaders_pass(load_format, extra):
    assert validate_server_config(cfg(load_format=load_format, model_loader_extra_config=extra)) == []


def test_a_remote_model_path_leaves_the_keys_to_sglang():
    # SGLang turns load_format auto into runai_streamer or remote for such a path
    config = cfg(model_loader_extra_config={"concurrency": 16})
    config["model_path"] = "s3://bucket/Qwen3.5-122B-A10B"
    assert validate_server_config(config) == []


def test_dummy_weights_take_no_extra_config():
    assert_error(cfg(load_format="dummy", model_loader_extra_config={"num_threads": 4}), EXTRA + ":", "dummy")
    assert validate_server_config(cfg(load_format="dummy")) == []


def test_dict_and_text_render_as_json():
    argv = render_server_argv(cfg(model_loader_extra_config={"num_threads": 16, "enable_multithread_load": True}))["argv"]
    assert argv[argv.index("--model-loader-extra-config") + 1] == '{"enable_multithread_load":true,"num_threads":16}'
    argv = render_server_argv(cfg(model_loader_extra_config='{"num_threads": 16}'))["argv"]
    assert argv[argv.index("--model-loader-extra-config") + 1] == '{"num_threads": 16}'


# -- the prefetch and the single-threaded fallback ----------------------------------------------------------

def test_prefetch_without_a_loader_choice_warns_of_the_single_threaded_load():
    config = cfg(weight_loader_prefetch_checkpoints=True)
    assert validate_server_config(config) == []
    warnings = [w for w in server_config_warnings(config) if w.startswith(PREFETCH + ":")]
    assert len(warnings) == 1
    assert "one thread" in warnings[0] and "enable_multithread_load" in warnings[0]


@pytest.mark.parametrize("extra", [
    {"enable_multithread_load": True},
    {"enable_multithread_load": False},
    {"num_threads": 16},
])
def test_an_explicit_loader_choice_silences_the_fallback_warning(extra):
    assert_clean(cfg(weight_loader_prefetch_checkpoints=True, model_loader_extra_config=extra))


def test_overlap_prefetch_warns_of_the_fallback_too():
    config = cfg(OVERLAP_OK, startup_weight_load_mode="overlap")
    assert validate_server_config(config) == []
    assert [w for w in server_config_warnings(config)
            if w.startswith("sglang_server_args.startup_weight_load_mode:") and "one thread" in w]
    assert_clean(cfg(OVERLAP_OK, startup_weight_load_mode="overlap",
                     model_loader_extra_config={"enable_multithread_load": True}))


def test_num_threads_with_multithread_load_off_is_refused():
    assert_error(cfg(model_loader_extra_config={"enable_multithread_load": False, "num_threads": 8}),
                 EXTRA + ".num_threads:", "enable_multithread_load")


@pytest.mark.parametrize("load_format", ["pt", "npcache", "fastsafetensors", "instanttensor", "gguf", "bitsandbytes",
                                         "sharded_state", "runai_streamer", "dummy"])
def test_prefetch_with_a_load_format_that_never_prefetches_is_refused(load_format):
    assert_error(cfg(weight_loader_prefetch_checkpoints=True, load_format=load_format,
                     model_loader_extra_config={"enable_multithread_load": True} if load_format != "dummy" else {}),
                 PREFETCH + ":", load_format)


@pytest.mark.parametrize("load_format", ["auto", "safetensors"])
def test_prefetch_with_safetensors_loading_passes(load_format):
    assert_clean(cfg(weight_loader_prefetch_checkpoints=True, load_format=load_format,
                     model_loader_extra_config={"enable_multithread_load": True}))


def test_prefetch_without_mmap_is_refused():
    assert_error(cfg(weight_loader_prefetch_checkpoints=True, weight_loader_disable_mmap=True), PREFETCH + ":",
                 "weight_loader_disable_mmap")
    # no fallback warning on top: without mmap the loader does not fall back
    config = cfg(weight_loader_prefetch_checkpoints=True, weight_loader_disable_mmap=True)
    assert not [w for w in server_config_warnings(config) if "one thread" in w]


def test_prefetch_threads_without_prefetch_are_refused():
    assert_error(cfg(weight_loader_prefetch_num_threads=8), "sglang_server_args.weight_loader_prefetch_num_threads:",
                 "weight_loader_prefetch_checkpoints")
    assert_clean(cfg(weight_loader_prefetch_num_threads=8, weight_loader_prefetch_checkpoints=True,
                     model_loader_extra_config={"enable_multithread_load": True}))
    assert_clean(cfg(OVERLAP_OK, weight_loader_prefetch_num_threads=8, startup_weight_load_mode="overlap",
                     model_loader_extra_config={"enable_multithread_load": True}))


@pytest.mark.parametrize("value", [0, -1])
def test_prefetch_threads_must_be_positive(value):
    assert_error(cfg(weight_loader_prefetch_num_threads=value, weight_loader_prefetch_checkpoints=True),
                 "sglang_server_args.weight_loader_prefetch_num_threads:", ">= 1")


@pytest.mark.parametrize("extra", [{"enable_multithread_load": True}, {"num_threads": 8}])
def test_thread_settings_with_fastsafetensors_are_refused(extra):
    key = sorted(extra)[0]
    assert_error(cfg(load_format="fastsafetensors", model_loader_extra_config=extra), EXTRA + "." + key + ":",
                 "fastsafetensors")


# -- startup overlap: what SGLang refuses when the model loads ----------------------------------------------

def test_overlap_on_the_story_host_is_refused():
    config = cfg(startup_weight_load_mode="overlap", model_loader_extra_config={"enable_multithread_load": True})
    assert_error(config, "sglang_server_args.startup_weight_load_mode:", "tp_size 4")
    assert_error(config, "sglang_server_args.startup_weight_load_mode:", "speculative")


@pytest.mark.parametrize("args, needle", [
    ({"load_format": "pt"}, "load_format pt"),
    ({"weight_loader_disable_mmap": True}, "weight_loader_disable_mmap"),
    ({"weight_loader_drop_cache_after_load": True}, "weight_loader_drop_cache_after_load"),
    ({"enable_torch_compile": True}, "enable_torch_compile"),
    ({"cpu_offload_gb": 4}, "cpu_offload_gb"),
    ({"enable_memory_saver": True}, "enable_memory_saver"),
    ({"enable_weights_cpu_backup": True}, "enable_weights_cpu_backup"),
    ({"enable_lora": True}, "enable_lora"),
    ({"custom_weight_loader": ["my_pkg.load"]}, "custom_weight_loader"),
    ({"ep_size": 2}, "ep_size"),
    ({"attn_dp_size": 2}, "attn_dp_size"),
])
def test_overlap_conflicts_are_refused(args, needle):
    args = dict(args, startup_weight_load_mode="overlap", model_loader_extra_config={"enable_multithread_load": True})
    assert_error(cfg(OVERLAP_OK, **args), "sglang_server_args.startup_weight_load_mode:", needle)


def test_overlap_where_sglang_takes_it_passes():
    assert_clean(cfg(OVERLAP_OK, startup_weight_load_mode="overlap", load_format="safetensors",
                     model_loader_extra_config={"enable_multithread_load": True}))
    assert_clean(cfg(startup_weight_load_mode="serial"))


# -- another SGLang version: the loader rules are 0.5.23's, so they only warn -------------------------------

def test_other_version_turns_loader_behaviour_rules_into_warnings():
    config = cfg(weight_loader_prefetch_checkpoints=True, weight_loader_disable_mmap=True)
    config["version"] = "0.5.24"
    assert validate_server_config(config) == []
    assert [w for w in server_config_warnings(config) if w.startswith(PREFETCH + ":") and "0.5.23" in w]
    # the form of the JSON is still an error
    config = cfg(model_loader_extra_config="{nope")
    config["version"] = "0.5.24"
    assert_error(config, EXTRA + ":", "does not parse")
