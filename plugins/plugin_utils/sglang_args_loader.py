# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``sglang_args``: how the weights are loaded (``model_loader_extra_config``, the checkpoint prefetch, the startup
overlap), checked as SGLang 0.5.23's loader reads these settings. A combination it would ignore, quietly load with
one thread, or refuse only once every GPU worker is up is reported here, before anything on the host changes.

Where the rules come from (``srt/`` of SGLang 0.5.23):

* ``configs/load_config.py``, ``LoadConfig.__post_init__``: the flag's text is parsed as JSON.
* ``model_loader/loader.py``: ``get_model_loader`` (which loader serves a load format),
  ``_validate_default_loader_extra_config`` (the keys the default loader accepts) and
  ``DefaultModelLoader._get_weights_iterator`` (multi-threaded loading, the prefetch, the fall-back to one thread).
* ``model_loader/weight_utils.py``: ``safetensors_weights_iterator``,
  ``buffered_multi_thread_safetensors_weights_iterator`` and ``_prefetch_all_checkpoints``.
* ``model_executor/model_runner_components/startup_weight_load.py``:
  ``StartupWeightLoadManager._get_unsupported_reason`` (what ``--startup-weight-load-mode overlap`` refuses).

With another SGLang version installed the loader may differ, so the rules about its behaviour only warn there;
the form of the JSON is checked as an error with any version.
"""

from __future__ import annotations

import json

from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_flags import SGLANG_VERSION
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args_common import _describe, _suggest

# The two keys the default loader's multi-threaded reader takes; either one in the extra config also keeps that
# reader when the prefetch is on (the loader reads their presence as the operator's choice).
THREAD_KEYS = ("enable_multithread_load", "num_threads")

# Load formats served by DefaultModelLoader or a subclass of it, which refuse (when the model loads) any key of the
# extra config outside this list. ``presharded`` takes its own keys out first; ``layered`` loads as ``auto``.
LOADER_KEYS = dict.fromkeys(("auto", "safetensors", "pt", "npcache", "mistral", "layered", "flash_rl"), THREAD_KEYS)
LOADER_KEYS["fastsafetensors"] = THREAD_KEYS + ("enable_gds",)
LOADER_KEYS["presharded"] = THREAD_KEYS + ("presharded_path", "draft_presharded_path", "max_file_bytes",
                                           "hash_num_threads", "verify_on_load")

# Load formats whose loading never reads --weight-loader-prefetch-checkpoints: the default loader only prefetches on
# its safetensors path over mmap (not for .pt/.bin files, fastsafetensors or InstantTensor); the others are
# loader classes of their own.
NO_PREFETCH_FORMATS = ("pt", "npcache", "fastsafetensors", "instanttensor", "dummy", "gguf", "bitsandbytes",
                       "sharded_state", "expert_pack", "remote", "runai_streamer")

# The load formats --startup-weight-load-mode overlap accepts.
OVERLAP_FORMATS = ("auto", "safetensors")
# Switches and lists that make SGLang refuse the overlap, with its reason.
_OVERLAP_SWITCHES = (
    ("weight_loader_disable_mmap", "safetensors mmap must stay on"),
    ("weight_loader_drop_cache_after_load", "dropping the page cache during the load is not supported"),
    ("enable_torch_compile", "torch.compile is not supported"),
    ("enable_memory_saver", "the memory saver is not supported"),
    ("enable_weights_cpu_backup", "a CPU copy of the weights is not supported"),
    ("enable_lora", "LoRA is not supported"),
    ("lora_paths", "LoRA is not supported"),
    ("custom_weight_loader", "custom weight loaders are not supported"),
)
# Parallel sizes that must be 1 for the overlap.
_OVERLAP_SIZES = (
    ("pp_size", "pipeline parallelism is not supported"),
    ("ep_size", "expert parallelism is not supported"),
    ("attn_cp_size", "attention context parallelism is not supported"),
    ("dcp_size", "decode context parallelism is not supported"),
    ("dp_size", "data parallelism is not supported"),
    ("attn_dp_size", "data parallelism is not supported"),
)
# Offload settings that must stay off (0 or below) for the overlap.
_OVERLAP_OFFLOADS = (
    ("cpu_offload_gb", "CPU offload is not supported"),
    ("offload_group_size", "layer-group offload is not supported"),
)

_EXTRA_HINT = "write a YAML dict, e.g. {enable_multithread_load: true, num_threads: 8}, and let the role encode it"
_SERIAL_HINT = "use startup_weight_load_mode: serial (the default)"


def _no_constant(name):
    # SGLang parses the text with orjson, which refuses NaN and Infinity
    raise ValueError("%s is not JSON" % name)


def _loader_problem(cfg, problems, variable, rule, fix):
    """A rule read from 0.5.23's loader: an error for that version, a warning for another one."""
    if cfg.other_version is None:
        problems.add(variable, rule, fix)
    else:
        problems.warn(variable, "%s; %s (as SGLang %s's loader does it; the installed %s may differ)"
                      % (rule, fix, SGLANG_VERSION, cfg.other_version))


def _loader_keys(cfg):
    """The keys the default loader accepts for the configured load format, or None where another loader
    reads the extra config (or SGLang picks one from the model path: object storage and remote URLs)."""
    load_format = cfg.value("load_format", "auto")
    model_path = cfg.top.get("model_path") or ""
    if load_format == "auto" and "://" in model_path:
        return None
    return LOADER_KEYS.get(load_format)

# -- the extra config, one value at a time -------------------------------------------------------------


def check_loader_config(cfg, problems):
    cfg.loader_extra = {}
    if cfg.args.get("model_loader_extra_config") is None:
        return
    variable = cfg.where("model_loader_extra_config")
    try:
        extra = json.loads(cfg.args["model_loader_extra_config"], parse_constant=_no_constant)
    except ValueError as exc:
        problems.add(variable, "is JSON text that does not parse (%s)" % exc, _EXTRA_HINT)
        return
    if not isinstance(extra, dict):
        problems.add(variable, "must be a JSON object, SGLang's loaders read its keys; got %s" % _describe(extra),
                     _EXTRA_HINT)
        return
    cfg.loader_extra = extra
    load_format = cfg.value("load_format", "auto")
    if load_format == "dummy" and extra:
        _loader_problem(cfg, problems, variable, "must be empty with load_format dummy (SGLang refuses any extra config "
                        "for random weights)", "drop it")
        return
    keys = _loader_keys(cfg)
    if keys is None:
        return
    for key in sorted(extra):
        where = "%s.%s" % (variable, key)
        value = extra[key]
        if key not in keys:
            _loader_problem(cfg, problems, where, "is not read by the loader of load_format %s, which refuses keys other "
                            "than %s when the model loads%s" % (load_format, ", ".join(keys),
                                                                _suggest(key, keys)), "drop it")
        elif key in ("enable_multithread_load", "enable_gds") and not isinstance(value, bool):
            # SGLang tests the truth of enable_multithread_load: the text "false" would switch it on
            problems.add(where, "must be true or false, got %s" % _describe(value),
                         "write %s: true or %s: false (YAML booleans, not text)" % (key, key))
        elif key == "num_threads" and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            problems.add(where, "must be an integer >= 1 (the loading threads of each rank), got %s"
                         % _describe(value), "e.g. num_threads: 8, SGLang's default")

# -- the rules across settings -------------------------------------------------------------------------


def rule_loader(cfg, problems):
    extra = cfg.loader_extra
    extra_var = cfg.where("model_loader_extra_config")
    load_format = cfg.value("load_format", "auto")
    keys = _loader_keys(cfg)
    prefetch = cfg.value("weight_loader_prefetch_checkpoints", False)
    prefetch_var = cfg.where("weight_loader_prefetch_checkpoints")
    overlap = cfg.value("startup_weight_load_mode") == "overlap"
    no_mmap = cfg.value("weight_loader_disable_mmap", False)

    if keys is not None and extra.get("enable_multithread_load") is False and "num_threads" in extra:
        _loader_problem(cfg, problems, extra_var + ".num_threads", "is only read by the multi-threaded loader, which "
                        "enable_multithread_load: false switches off",
                        "drop num_threads, or set enable_multithread_load: true")
    if load_format == "fastsafetensors":
        for key in THREAD_KEYS:
            if key in extra:
                _loader_problem(cfg, problems, "%s.%s" % (extra_var, key), "is not read with load_format fastsafetensors, "
                                "which loads through its own reader", "drop it")
    if prefetch and load_format in NO_PREFETCH_FORMATS:
        _loader_problem(cfg, problems, prefetch_var, "does nothing with load_format %s: only the safetensors loader over "
                        "mmap prefetches" % load_format, "use load_format auto or safetensors, or drop it")
    elif prefetch and no_mmap:
        _loader_problem(cfg, problems, prefetch_var, "does nothing with weight_loader_disable_mmap: true, the loader "
                        "only prefetches files it maps", "drop one of the two")
    if cfg.args.get("weight_loader_prefetch_num_threads") is not None and not prefetch and not overlap:
        _loader_problem(cfg, problems, cfg.where("weight_loader_prefetch_num_threads"), "is only used by the checkpoint "
                        "prefetch, which is off", "set weight_loader_prefetch_checkpoints: true, or drop it")

    staging = (prefetch and load_format not in NO_PREFETCH_FORMATS) or (overlap and load_format in OVERLAP_FORMATS)
    if staging and not no_mmap and keys is not None and not set(THREAD_KEYS) & set(extra):
        _warn_single_thread(cfg, problems, prefetch_var if prefetch else cfg.where("startup_weight_load_mode"), prefetch)
    if overlap:
        _rule_overlap(cfg, problems, load_format)


def _warn_single_thread(cfg, problems, variable, prefetch):
    """A warning, not an error: on shared storage the single thread is what SGLang means to do."""
    when = "is on" if prefetch else "is overlap, which stages the checkpoint with the same prefetch"
    problems.warn(variable, "%s while %s names neither enable_multithread_load nor num_threads: SGLang %s then loads "
                  "the weights with one thread per rank%s and says so only in a debug log line (meant for network "
                  "storage, where the prefetch and the loading threads compete for reads); set "
                  "model_loader_extra_config: {enable_multithread_load: true} to keep the multi-threaded load (local "
                  "disk), or {enable_multithread_load: false} to choose the single thread"
                  % (when, cfg.where("model_loader_extra_config"), SGLANG_VERSION,
                     "" if prefetch else " (if that prefetch still runs when the weights are committed)"))


def _rule_overlap(cfg, problems, load_format):
    variable = cfg.where("startup_weight_load_mode")

    def refused(setting, reason):
        _loader_problem(cfg, problems, variable, "overlap is refused by SGLang %s when the model loads: %s (%s)"
                        % (SGLANG_VERSION, reason, setting), _SERIAL_HINT)

    tp = cfg.value("tp_size", 1)
    if tp not in (1, 2):
        refused("tp_size %d" % tp, "only tensor parallel 1 or 2 is supported")
    algorithm = cfg.spec.get("algorithm")
    if algorithm is not None:
        refused("%s.algorithm %s" % (cfg.var("speculative"), algorithm), "speculative decoding is not supported")
    if load_format not in OVERLAP_FORMATS:
        refused("load_format %s" % load_format, "the load format must be auto or safetensors")
    for dest, reason in _OVERLAP_SWITCHES:
        if cfg.value(dest):
            refused(dest, reason)
    for dest, reason in _OVERLAP_SIZES:
        if cfg.value(dest, 1) != 1:
            refused("%s %d" % (dest, cfg.value(dest)), reason)
    for dest, reason in _OVERLAP_OFFLOADS:
        if cfg.value(dest, 0) > 0:
            refused("%s %d" % (dest, cfg.value(dest)), reason)
