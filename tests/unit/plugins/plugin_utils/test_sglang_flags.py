# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

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
GENERATOR = os.path.join(ROOT, "tests", "tools", "gen_sglang_flags.py")
REFERENCE = "/work/shared/reference/sglang.md"
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


@pytest.mark.skipif(not os.path.exists(REFERENCE), reason="reference notes not available")
def test_generated_module_is_up_to_date():
    result = subprocess.run(
        [sys.executable, GENERATOR, "--reference", REFERENCE, "--output", sglang_flags.__file__, "--check"],
        capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stderr


def _load_generator():
    import importlib.util  # pylint: disable=import-outside-toplevel
    spec = importlib.util.spec_from_file_location("gen_sglang_flags", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SAMPLE = """# notes
## Appendix A. Full argparse table

```text
flag | type | default | choices
--model-path / --model | str REQUIRED | None |
--tp-size / --tensor-parallel-size | int | 1 |
--log-requests-level | int | 2 | 0,1,2,3
--enable-x / --no-enable-x | bool(--x/--no-x) | None |
--trust-remote-code | flag(store_true) | False |
--disable-cuda-graph | DeprecatedStoreTrueAction | False |
--lora-paths | LoRAPathAction:str nargs=* | None |
--cfg | loads | None |
--model-checksum | str nargs=? | None |
--dtype | str | 'auto' | auto,bfloat16
```
"""


def test_generator_parses_every_row_kind():
    gen = _load_generator()
    rows = dict(gen.parse_table(SAMPLE))
    assert list(rows) == ["model_path", "tp_size", "log_requests_level", "enable_x", "trust_remote_code",
                          "disable_cuda_graph", "lora_paths", "cfg", "model_checksum", "dtype"]
    assert rows["model_path"]["required"] is True and rows["model_path"]["aliases"] == ["--model"]
    assert rows["log_requests_level"]["choices"] == [0, 1, 2, 3]
    assert rows["enable_x"]["kind"] == "bool" and rows["enable_x"]["negation"] == "--no-enable-x"
    assert rows["enable_x"]["aliases"] == []
    assert rows["trust_remote_code"]["kind"] == "switch" and not rows["trust_remote_code"]["deprecated"]
    assert rows["disable_cuda_graph"]["kind"] == "switch" and rows["disable_cuda_graph"]["deprecated"]
    assert rows["lora_paths"]["kind"] == "list" and rows["lora_paths"]["nargs"] == "*"
    assert rows["cfg"]["type"] == "json"
    assert rows["model_checksum"]["kind"] == "value" and rows["model_checksum"]["nargs"] == "?"
    assert rows["dtype"]["default"] == "auto"


def test_generator_rejects_missing_table():
    gen = _load_generator()
    with pytest.raises(ValueError, match="Appendix A"):
        gen.parse_table("no table here")


def test_generator_rejects_duplicate_dest():
    gen = _load_generator()
    rows = gen.parse_table(SAMPLE)
    with pytest.raises(ValueError, match="duplicate"):
        gen.render_module(rows + rows[:1])
