# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the model_revision module, with a stub interpreter in place of huggingface_hub."""

from __future__ import annotations

import json

import pytest

from ansible_collections.llmserve.sglang.plugins.modules import model_revision
from ansible_collections.llmserve.sglang.tests.unit.plugins.modules import module_exits
from ansible_collections.llmserve.sglang.tests.unit.plugins.modules.fake_hub import FakeHub
from ansible_collections.llmserve.sglang.tests.unit.plugins.modules.module_exits import ExitJson, FailJson

COMMIT = "0123456789abcdef0123456789abcdef01234567"
TOKEN = "hf_SecretToken123456"


def run_module(monkeypatch, args, check_mode=False):
    return module_exits.run_module(monkeypatch, model_revision, args, check_mode)


def args_for(hub, **extra):
    args = dict(repo="llmserve/tiny", revision=COMMIT, python=hub.python, endpoint="http://mirror.test:8090")
    args.update(extra)
    return args


def test_resolves_commit_to_manifest(monkeypatch, tmp_path):
    hub = FakeHub(tmp_path, commit=COMMIT)
    out = run_module(monkeypatch, args_for(hub, token=TOKEN))
    assert isinstance(out, ExitJson), out.result
    r = out.result
    assert r["changed"] is False and r["commit"] == COMMIT and r["floating"] is False
    assert r["manifest"] == hub.manifest()
    assert r["files"] == 3 and r["total_bytes"] == sum(e["size"] for e in hub.manifest())
    assert r["pickle_files"] == [] and r["remote_code_files"] == []
    # the LFS file is checked by sha256, the git files by blob id
    kinds = {e["path"]: ("sha256" in e, "blob" in e) for e in r["manifest"]}
    assert kinds == {"config.json": (False, True), "model.safetensors": (True, False),
                     "tokenizer.json": (False, True)}
    (call,) = hub.calls()
    assert call["argv"][1:3] == ["-I", "-c"] and call["argv"][3].startswith("\nimport json")
    assert call["request"]["op"] == "resolve" and call["request"]["token"] == TOKEN
    assert call["env"]["HF_ENDPOINT"] == "http://mirror.test:8090" and call["env"]["HF_HUB_DISABLE_TELEMETRY"] == "1"


def test_token_only_on_stdin(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_TOKEN", "hf_stray_host_token")
    hub = FakeHub(tmp_path, commit=COMMIT)
    out = run_module(monkeypatch, args_for(hub, token=TOKEN))
    assert isinstance(out, ExitJson)
    (call,) = hub.calls()
    assert all(TOKEN not in arg for arg in call["argv"])
    assert TOKEN not in json.dumps(call["env"]) and "HF_TOKEN" not in call["env"]
    assert TOKEN not in json.dumps(out.result)


@pytest.mark.parametrize("revision,word", [
    ("main", "sglang_model_allow_floating_revision"),
    ("v1.0", "sglang_model_allow_floating_revision"),
    ("0123456", "abbreviated"),
    ("../x", "neither"),
])
def test_refused_revision_makes_no_request(monkeypatch, tmp_path, revision, word):
    hub = FakeHub(tmp_path, commit=COMMIT)
    out = run_module(monkeypatch, args_for(hub, revision=revision))
    assert isinstance(out, FailJson)
    assert "sglang_model_revision" in out.result["msg"] and word in out.result["msg"]
    assert hub.calls() == []


def test_refused_repo_makes_no_request(monkeypatch, tmp_path):
    hub = FakeHub(tmp_path, commit=COMMIT)
    out = run_module(monkeypatch, args_for(hub, repo="../etc"))
    assert isinstance(out, FailJson) and out.result["msg"].startswith("sglang_model_repo:")
    assert hub.calls() == []


def test_floating_allowed_is_resolved(monkeypatch, tmp_path):
    hub = FakeHub(tmp_path, commit=COMMIT)
    out = run_module(monkeypatch, args_for(hub, revision="main", allow_floating=True))
    assert isinstance(out, ExitJson)
    assert out.result["commit"] == COMMIT and out.result["floating"] is True
    assert hub.calls()[0]["request"]["revision"] == "main"


def test_commit_answered_differently_fails(monkeypatch, tmp_path):
    hub = FakeHub(tmp_path, commit="f" * 40)
    out = run_module(monkeypatch, args_for(hub))
    assert isinstance(out, FailJson) and "another commit, " + "f" * 40 in out.result["msg"]


def test_pickle_refused_naming_files(monkeypatch, tmp_path):
    hub = FakeHub(tmp_path, commit=COMMIT, files={"config.json": "{}", "pytorch_model.bin": "x",
                                                  "sub/optimizer.pt": "y", "model.safetensors": "z"})
    out = run_module(monkeypatch, args_for(hub))
    assert isinstance(out, FailJson)
    msg = out.result["msg"]
    assert "sglang_model_allow_pickle" in msg and "pytorch_model.bin" in msg and "sub/optimizer.pt" in msg
    assert "model.safetensors" not in msg
    allowed = run_module(monkeypatch, args_for(hub, allow_pickle=True))
    assert isinstance(allowed, ExitJson)
    assert allowed.result["pickle_files"] == ["pytorch_model.bin", "sub/optimizer.pt"]


def test_remote_code_refused_naming_python_files(monkeypatch, tmp_path):
    config = {"auto_map": {"AutoModelForCausalLM": "modeling_x.XForCausalLM",
                           "AutoConfig": "configuration_x.XConfig"}}
    hub = FakeHub(tmp_path, commit=COMMIT, config=config,
                  files={"config.json": json.dumps(config), "modeling_x.py": "code", "configuration_x.py": "code",
                         "model.safetensors": "w"})
    out = run_module(monkeypatch, args_for(hub))
    assert isinstance(out, FailJson)
    msg = out.result["msg"]
    assert "trust_remote_code" in msg and "modeling_x.py" in msg and "configuration_x.py" in msg
    allowed = run_module(monkeypatch, args_for(hub, allow_remote_code=True))
    assert isinstance(allowed, ExitJson)
    assert allowed.result["remote_code_files"] == ["configuration_x.py", "modeling_x.py"]


def test_unreadable_config_refused_unless_remote_code_allowed(monkeypatch, tmp_path):
    hub = FakeHub(tmp_path, commit=COMMIT, config_error="config.json is not readable JSON: Expecting value")
    out = run_module(monkeypatch, args_for(hub))
    assert isinstance(out, FailJson) and "config.json is not readable JSON" in out.result["msg"]
    assert isinstance(run_module(monkeypatch, args_for(hub, allow_remote_code=True)), ExitJson)


@pytest.mark.parametrize("name", ["../escape.safetensors", "/etc/passwd", ".git/config", "a//b", "x\x1by"])
def test_hostile_file_names_refused(monkeypatch, tmp_path, name):
    hub = FakeHub(tmp_path, commit=COMMIT, files={"config.json": "{}", name: "x"})
    out = run_module(monkeypatch, args_for(hub))
    assert isinstance(out, FailJson)
    assert "refused" in out.result["msg"] and "sglang_model_repo llmserve/tiny" in out.result["msg"]


def test_hub_error_names_repo_revision_endpoint_not_token(monkeypatch, tmp_path):
    hub = FakeHub(tmp_path, commit=COMMIT, error={
        "error": "RepositoryNotFoundError", "status": 401,
        "message": "401 Client Error. Repository Not Found for url: http://mirror.test:8090/api/models/llmserve/"
                   "tiny/revision/%s (sent Bearer %s)" % (COMMIT, TOKEN)})
    out = run_module(monkeypatch, args_for(hub, token=TOKEN))
    assert isinstance(out, FailJson)
    msg = out.result["msg"]
    assert "llmserve/tiny" in msg and COMMIT in msg and "http://mirror.test:8090" in msg and "HTTP 401" in msg
    assert "RepositoryNotFoundError" in msg and "sglang_model_hub_token" in msg
    assert TOKEN not in json.dumps(out.result)


def test_child_without_answer_quotes_stderr_masked(monkeypatch, tmp_path):
    # the token is masked by the module itself, not only by Ansible's no_log: check the module_utils text
    hub = FakeHub(tmp_path, commit=COMMIT, noise="Traceback: boom with %(token)s\n")
    from ansible_collections.llmserve.sglang.plugins.module_utils.model_hub import HubError, run_child
    with pytest.raises(HubError) as exc:
        run_child(hub.python, {"op": "resolve", "token": TOKEN}, 30)
    assert "boom with ********" in str(exc.value) and TOKEN not in str(exc.value)
    assert "exit status 2" in str(exc.value)


def test_empty_endpoint_names_huggingface_co(monkeypatch, tmp_path):
    hub = FakeHub(tmp_path, commit=COMMIT, error={"error": "ReadTimeout", "message": "timed out", "status": None})
    out = run_module(monkeypatch, args_for(hub, endpoint=""))
    assert isinstance(out, FailJson) and "on https://huggingface.co" in out.result["msg"]
    assert "HF_ENDPOINT" not in hub.calls()[0]["env"]


def test_check_mode_resolves_too(monkeypatch, tmp_path):
    hub = FakeHub(tmp_path, commit=COMMIT)
    out = run_module(monkeypatch, args_for(hub), check_mode=True)
    assert isinstance(out, ExitJson) and out.result["commit"] == COMMIT and len(hub.calls()) == 1
