# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for model_hub: the child's environment, its answer, its deadline, and the script it runs."""

from __future__ import annotations

import fnmatch
import os
import sys
import time
from pathlib import Path

import pytest

from ansible_collections.llmserve.sglang.plugins.module_utils import model_hub
from ansible_collections.llmserve.sglang.tests.unit.plugins.module_utils.source_imports import top_level_imports

ROOT = Path(__file__).resolve().parents[4]


def test_module_utils_imports_stdlib_only():
    imported = top_level_imports(ROOT / "plugins" / "module_utils" / "model_hub.py", feature_version=(3, 8))
    assert imported <= {"__future__", "json", "os", "shutil", "signal", "subprocess", "tempfile",
                        "ansible_collections"}


def test_child_script_compiles_for_python_38():
    import ast
    ast.parse(model_hub.CHILD_SCRIPT, feature_version=(3, 8))


def test_real_child_without_huggingface_hub_says_so(tmp_path):
    # the controller venv has no huggingface_hub: the real script runs and answers with an ImportError
    pytest.importorskip("json")
    if any(os.path.isdir(os.path.join(p, "huggingface_hub")) for p in sys.path if p):
        pytest.skip("this interpreter has huggingface_hub")
    with pytest.raises(model_hub.HubError) as exc:
        model_hub.run_child(sys.executable, {"op": "resolve", "repo": "a/b", "revision": "main", "token": "t0k3n"},
                            60, tmp_root=str(tmp_path))
    assert exc.value.error == "ImportError" and "huggingface_hub cannot be imported" in str(exc.value)
    assert os.listdir(tmp_path) == [], "the child's HF_HOME is removed"


def test_child_env_drops_hf_variables_and_sets_its_own():
    base = {"PATH": "/bin", "HF_TOKEN": "x", "HF_HUB_OFFLINE": "1", "HUGGING_FACE_HUB_TOKEN": "y", "HTTPS_PROXY": "p"}
    env = model_hub.child_env("http://m:1", "/tmp/h", base=base)
    assert env["PATH"] == "/bin" and env["HTTPS_PROXY"] == "p"
    assert "HF_TOKEN" not in env and "HUGGING_FACE_HUB_TOKEN" not in env and "HF_HUB_OFFLINE" not in env
    assert env["HF_HOME"] == "/tmp/h" and env["HF_ENDPOINT"] == "http://m:1"
    assert env["HF_HUB_DISABLE_TELEMETRY"] == "1" and env["HF_HUB_DISABLE_IMPLICIT_TOKEN"] == "1"
    assert "HF_ENDPOINT" not in model_hub.child_env("", "/tmp/h", base={})


@pytest.mark.parametrize("name", ["model.safetensors", "a[1].bin", "what?.json", "star*.txt", "dir/x[ab].py"])
def test_allow_pattern_matches_only_that_name(name):
    pattern = model_hub.allow_pattern(name)
    assert fnmatch.fnmatch(name, pattern)
    others = [name + "x", name.replace("[", "a", 1), name.replace("?", "Z"), name.replace("*", "long")]
    assert not any(fnmatch.fnmatch(other, pattern) for other in others if other != name)


def test_deadline_kills_the_child(tmp_path):
    slow = tmp_path / "python"
    slow.write_text("#!/bin/sh\nexec sleep 30\n", encoding="utf-8")
    slow.chmod(0o755)
    start = time.monotonic()
    with pytest.raises(model_hub.HubError) as exc:
        model_hub.run_child(str(slow), {"op": "resolve"}, 1)
    assert "did not finish within 1 s" in str(exc.value) and time.monotonic() - start < 10


def test_missing_interpreter(tmp_path):
    with pytest.raises(model_hub.HubError) as exc:
        model_hub.run_child(str(tmp_path / "nope"), {"op": "resolve"}, 5)
    assert "cannot run" in str(exc.value)


def test_hub_name_masks_login():
    assert model_hub.hub_name("") == "https://huggingface.co"
    assert model_hub.hub_name("https://u:pw@m.example/") == "https://********@m.example/"
