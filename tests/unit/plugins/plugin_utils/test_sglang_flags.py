# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.llmserve.sglang.plugins.plugin_utils import sglang_flags
from ansible_collections.llmserve.sglang.tests.unit.plugins.module_utils.source_imports import top_level_imports
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_flags import (
    DEPRECATED_FLAGS,
    FLAGS,
    REMOVED_FLAGS,
    SGLANG_VERSION,
    SPELLINGS,
    VALUE_HINTS,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
GENERATOR = os.path.join(ROOT, "tools", "gen_sglang_flags.py")
STANDIN_SRC = os.path.join(ROOT, "tools", "standin", "src")
KEYS = {"option", "aliases", "negation", "kind", "type", "nargs", "required", "default", "choices", "deprecated"}


def test_version_and_count():
    assert SGLANG_VERSION == "0.5.23"
    assert len(FLAGS) == 531


def test_every_entry_has_the_same_shape():
    for dest, flag in FLAGS.items():
        assert set(flag) == KEYS, dest
        assert flag["option"] == "--" + dest.replace("_", "-"), dest
        assert flag["kind"] in ("switch", "bool", "value", "list"), dest
        assert flag["choices"] is None or (isinstance(flag["choices"], list) and flag["choices"]), dest
        if flag["kind"] == "list":
            assert flag["nargs"] in ("+", "*"), dest
        if flag["kind"] == "bool":
            assert flag["negation"] == "--no-" + flag["option"][2:], dest
        else:
            assert flag["negation"] is None, dest


def test_spot_checks():
    assert FLAGS["model_path"] == {
        "option": "--model-path", "aliases": ["--model"], "negation": None, "kind": "value", "type": "str",
        "nargs": None, "required": True, "default": None, "choices": None, "deprecated": False,
    }
    assert FLAGS["trust_remote_code"]["kind"] == "switch"
    assert FLAGS["trust_remote_code"]["default"] is False
    assert FLAGS["tp_size"]["aliases"] == ["--tensor-parallel-size"]
    assert FLAGS["tp_size"]["type"] == "int" and FLAGS["tp_size"]["default"] == 1
    assert FLAGS["port"]["default"] == 30000
    assert FLAGS["host"]["default"] == "127.0.0.1"
    assert FLAGS["mem_fraction_static"]["type"] == "float"
    assert FLAGS["context_length"]["type"] == "human_readable_int"
    assert FLAGS["dtype"]["choices"] == ["auto", "half", "float16", "bfloat16", "float", "float32"]
    assert "fp8_e4m3" in FLAGS["kv_cache_dtype"]["choices"] and "fp8" not in FLAGS["kv_cache_dtype"]["choices"]
    assert FLAGS["log_requests_level"]["choices"] == [0, 1, 2, 3]
    assert FLAGS["enable_tf32_matmul"]["kind"] == "bool"
    assert FLAGS["enable_tf32_matmul"]["negation"] == "--no-enable-tf32-matmul"
    assert FLAGS["cuda_graph_bs_decode"]["kind"] == "list" and FLAGS["cuda_graph_bs_decode"]["type"] == "int"
    assert FLAGS["lora_paths"]["nargs"] == "*"
    assert FLAGS["model_checksum"]["nargs"] == "?" and FLAGS["model_checksum"]["kind"] == "value"
    assert FLAGS["json_model_override_args"]["default"] == "{}"
    assert FLAGS["radix_eviction_policy_config"]["type"] == "json"
    assert FLAGS["ep_size"]["aliases"] == ["--expert-parallel-size", "--ep"]
    assert FLAGS["speculative_algorithm"]["choices"] is None  # free string in 0.5.23
    assert FLAGS["disable_cuda_graph"]["deprecated"] is True
    assert FLAGS["monokernel_backend"]["kind"] == "value" and FLAGS["monokernel_backend"]["choices"] == ["amd"]
    assert FLAGS["enable_flashinfer_allreduce_fusion"]["deprecated"] is True
    assert FLAGS["disable_custom_all_reduce"]["deprecated"] is False


def test_table_order_is_kept():
    dests = list(FLAGS)
    assert dests[0] == "model_path"
    assert dests[-1] == "enable_flashinfer_allreduce_fusion"
    assert dests.index("tokenizer_path") == 1


def test_spellings_cover_aliases():
    assert SPELLINGS["model"] == "model_path"
    assert SPELLINGS["tensor_parallel_size"] == "tp_size"
    assert SPELLINGS["ep"] == "ep_size"
    assert SPELLINGS["speculative_draft_model"] == "speculative_draft_model_path"
    assert "no_enable_tf32_matmul" not in SPELLINGS
    assert all(dest in FLAGS for dest in SPELLINGS.values())


def test_curated_tables_are_consistent():
    assert REMOVED_FLAGS["cuda_graph_max_bs"].endswith("use cuda_graph_max_bs_decode (and cuda_graph_max_bs_prefill)")
    assert "mamba_radix_cache_strategy" in REMOVED_FLAGS["mamba_scheduler_strategy"]
    assert not set(REMOVED_FLAGS) & set(SPELLINGS)
    assert set(DEPRECATED_FLAGS) <= set(FLAGS)
    assert VALUE_HINTS["dtype"]["bf16"] == "bfloat16"
    assert VALUE_HINTS["kv_cache_dtype"]["fp8"] == "fp8_e4m3"
    for dest, hints in VALUE_HINTS.items():
        for wrong, right in hints.items():
            assert wrong not in FLAGS[dest]["choices"], (dest, wrong)
            assert right in FLAGS[dest]["choices"], (dest, right)


def test_module_is_stdlib_only_and_py39_syntax():
    assert top_level_imports(sglang_flags.__file__) <= {"__future__"}


def _load_generator():
    import importlib.util  # pylint: disable=import-outside-toplevel
    spec = importlib.util.spec_from_file_location("gen_sglang_flags", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _action(options, dest=None, action="_StoreAction", typ="str", nargs=None, const=None, default=None, choices=None,
            required=False):
    return {"options": options, "dest": dest or options[0][2:].replace("-", "_"), "action": action, "type": typ,
            "nargs": nargs, "const": const, "default": default, "choices": choices, "required": required}


SAMPLE = {"version": "9.9.9", "actions": [
    _action(["--model-path", "--model"], required=True),
    _action(["--tp-size", "--tensor-parallel-size"], typ="int", default=1),
    _action(["--log-requests-level"], typ="int", default=2, choices=[0, 1, 2, 3]),
    _action(["--enable-x", "--no-enable-x"], action="BooleanOptionalAction", typ=None, nargs=0),
    _action(["--trust-remote-code"], action="_StoreTrueAction", typ=None, nargs=0, const=True, default=False),
    _action(["--disable-cuda-graph"], action="DeprecatedStoreTrueAction", typ=None, nargs=0, const=True, default=False),
    _action(["--lora-paths"], action="LoRAPathAction", nargs="*"),
    _action(["--cfg"], typ="loads"),
    _action(["--model-checksum"], nargs="?", const=""),
    _action(["--monokernel-backend"], dest="enable_amd_monokernel", action="DeprecatedStoreConstAction", typ=None,
            default=False, choices=["amd"]),
    _action(["--dtype"], default="auto", choices=["auto", "bfloat16"]),
]}


def _sample_rows(actions):
    gen = _load_generator()
    return gen, {name: entry for name, _option, entry in (gen.interpret(a) for a in actions)}


def test_generator_interprets_every_action_kind():
    _gen, rows = _sample_rows(SAMPLE["actions"])
    assert list(rows) == ["model_path", "tp_size", "log_requests_level", "enable_x", "trust_remote_code",
                          "disable_cuda_graph", "lora_paths", "cfg", "model_checksum", "monokernel_backend", "dtype"]
    assert rows["model_path"]["required"] is True and rows["model_path"]["aliases"] == ["--model"]
    assert rows["tp_size"]["typ"] == "int" and rows["tp_size"]["default"] == 1
    assert rows["log_requests_level"]["choices"] == [0, 1, 2, 3]
    assert rows["enable_x"]["kind"] == "bool" and rows["enable_x"]["aliases"] == []
    assert rows["trust_remote_code"]["kind"] == "switch" and not rows["trust_remote_code"]["deprecated"]
    assert rows["disable_cuda_graph"]["kind"] == "switch" and rows["disable_cuda_graph"]["deprecated"]
    assert rows["lora_paths"]["kind"] == "list" and rows["lora_paths"]["nargs"] == "*"
    assert rows["cfg"]["typ"] == "json"
    assert rows["model_checksum"]["kind"] == "value" and rows["model_checksum"]["nargs"] == "?"
    # a deprecated option that takes a value (named by its spelling, not by the dest it shares)
    assert rows["monokernel_backend"]["kind"] == "value" and rows["monokernel_backend"]["choices"] == ["amd"]
    assert rows["monokernel_backend"]["deprecated"] is True
    assert rows["dtype"]["default"] == "auto"


def test_generator_renders_a_table_that_loads_back(tmp_path):
    gen = _load_generator()
    dump = dict(SAMPLE, actions=list(SAMPLE["actions"]))
    for name in list(gen.VALUE_HINTS) + list(gen.DEPRECATED_FLAGS):
        if name not in ("dtype", "disable_cuda_graph", "monokernel_backend"):
            dump["actions"].append(_action(["--" + name.replace("_", "-")], choices=["fp8_e4m3", "fp8_e5m2", "bfloat16",
                                                                                     "float16", "float32", "nvfp4"]))
    text = gen.render_table(dump)
    assert all(len(line) <= 160 or line.endswith("# noqa: E501") for line in text.splitlines())
    path = tmp_path / "table.py"
    path.write_text(text)
    import importlib.util  # pylint: disable=import-outside-toplevel
    spec = importlib.util.spec_from_file_location("sample_table", str(path))
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    assert table.SGLANG_VERSION == "9.9.9"
    assert table.FLAGS["enable_x"]["negation"] == "--no-enable-x"
    assert table.FLAGS["trust_remote_code"] == {
        "option": "--trust-remote-code", "aliases": [], "negation": None, "kind": "switch", "type": "bool",
        "nargs": None, "required": False, "default": False, "choices": None, "deprecated": False}
    assert table.SPELLINGS["tensor_parallel_size"] == "tp_size"
    # one line a flag
    assert sum(1 for line in text.splitlines() if line.startswith('    "') and "_flag(" in line) == len(dump["actions"])


def test_generator_refuses_what_it_cannot_interpret():
    gen = _load_generator()
    with pytest.raises(ValueError, match="not handled"):
        gen.interpret(_action(["--x"], action="_AppendAction"))
    with pytest.raises(ValueError, match="not plain data"):
        gen.render_standin({"version": "1", "actions": [_action(["--x"], default={"repr": "<object>"})]})
    gen_rows = SAMPLE["actions"] + SAMPLE["actions"][:1]
    with pytest.raises(ValueError, match="duplicate"):
        gen.render_table({"version": "1", "actions": gen_rows})


def test_generator_refuses_a_removed_flag_that_is_back():
    gen = _load_generator()
    with pytest.raises(ValueError, match="listed as removed"):
        gen.render_table({"version": "1", "actions": SAMPLE["actions"] + [_action(["--cuda-graph-max-bs"], typ="int")]})


def test_table_and_standin_parser_agree_on_every_flag():
    """The stand-in parses with SGLang's raw argparse actions, the collection with its interpreted table: each of the
    table's entries must behave in the stand-in's parser as the table says (takes a value or not, every choice, the
    --no- form, aliases). An entry the generator misread (a deprecated value option taken for a switch) fails here."""
    script = r"""
import argparse, json, sys, importlib.util
spec = importlib.util.spec_from_file_location("table", sys.argv[1])
table = importlib.util.module_from_spec(spec); spec.loader.exec_module(table)
from sglang.srt.server_args import ServerArgs
parser = argparse.ArgumentParser(prog="x", exit_on_error=False)
ServerArgs.add_cli_args(parser)
parser.error = lambda message: (_ for _ in ()).throw(ValueError(message))
def ok(argv):
    try:
        parser.parse_args(["--model-path", "m"] + argv)
        return True
    except (ValueError, argparse.ArgumentError):
        return False
problems = []
sample = {"int": "1", "float": "0.5", "human_readable_int": "4k", "json": "{}", "json_list": "[]",
          "cuda_graph_config": "{}", "nullable_str": "x", "str": "x", "cuda_graph_backend": "x"}
for name, flag in table.FLAGS.items():
    if name == "model_path":
        continue
    value = str(flag["choices"][0]) if flag["choices"] else sample.get(flag["type"])
    for spelling in [flag["option"]] + flag["aliases"]:
        if flag["kind"] in ("switch", "bool"):
            expect = {(spelling,): True, (spelling, "stray"): False}
        elif flag["kind"] == "list":
            expect = {(spelling, value, value): True}
        else:
            expect = {(spelling, value): True, (spelling,): flag["nargs"] == "?"}
        for choice in flag["choices"] or ():
            expect[(spelling, str(choice)) + ((str(choice),) if flag["kind"] == "list" else ())] = True
        for argv, wanted in expect.items():
            if ok(list(argv)) != wanted:
                problems.append("%s: %s %s in the stand-in's parser" % (name, list(argv), "fails" if wanted else "parses"))
    if flag["negation"] and not ok([flag["negation"]]):
        problems.append("%s: %s fails in the stand-in's parser" % (name, flag["negation"]))
print(json.dumps(problems))
"""
    env = dict(os.environ, PYTHONPATH=STANDIN_SRC)
    proc = subprocess.run([sys.executable, "-c", script, sglang_flags.__file__], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []
