# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""sglang_model's validation, run by Ansible itself: bad variables fail naming them before the host changes, and
sglang_server serves the verified revision by default."""

from __future__ import annotations

import os
import re

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from ansible_collections.llmserve.sglang.tests.unit.collection_tree import run_playbook

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
COMMIT = "0123456789abcdef0123456789abcdef01234567"
TOKEN = "hf_T0KEN-never-shown-5d1e"


def _play(tmp_path, settings, tasks_from=None):
    role = {"name": "llmserve.sglang.sglang_model"}
    if tasks_from:
        role["tasks_from"] = tasks_from
    return run_playbook(tmp_path, [{"hosts": "localhost", "gather_facts": False, "vars": settings,
                                    "tasks": [{"ansible.builtin.include_role": role}]}])


def _settings(tmp_path, store_dir, **overrides):
    settings = {"sglang_model_repo": "llmserve/tiny-llama", "sglang_model_revision": COMMIT,
                "sglang_model_hub_token": TOKEN, "sglang_model_dir": os.path.join(store_dir, "store"),
                "sglang_model_venv": str(tmp_path / "venv"), "sglang_model_group": "root"}
    settings.update(overrides)
    return settings


def test_the_validate_entry_point_passes_a_good_configuration(store_dir, tmp_path):
    result = _play(tmp_path, _settings(tmp_path, store_dir), "validate")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "failed=0" in result.stdout and "changed=0" in result.stdout
    # the refusal is a fail with a condition: skipped means no rule broke
    assert re.search(r"Refuse a model configuration that breaks the store's rules\] \**\nskipping: ", result.stdout)
    assert TOKEN not in result.stdout + result.stderr


def test_bad_variables_fail_naming_each_one_before_the_host_changes(store_dir, tmp_path):
    settings = _settings(tmp_path, store_dir, sglang_model_revision="main",
                         sglang_model_hub_endpoint="https://u:pw@mirror",
                         sglang_model_keep=0, sglang_model_stage_timeout=5)
    result = _play(tmp_path, settings)
    out = result.stdout + result.stderr
    assert result.returncode == 2, out[-3000:]
    for name in ("sglang_model_revision", "sglang_model_allow_floating_revision", "sglang_model_hub_endpoint",
                 "sglang_model_keep: must be an integer from 1 to 1000, got 0",
                 "sglang_model_stage_timeout: must be an integer from 60 to 31536000, got 5"):
        assert name in out, name
    # the check in the store refused it on the controller: no virtualenv, no store, no group task ran
    assert "Check the configuration, then the revision in the model store" in out
    assert "nothing on the host was changed" in out
    assert not (tmp_path / "venv").exists() and not os.path.exists(os.path.join(store_dir, "store"))
    assert "Install huggingface_hub" not in out
    assert TOKEN not in out


def test_a_control_character_in_the_store_path_fails_on_the_controller(store_dir, tmp_path):
    # a NUL would only fail on the host, an escape sequence would reach the terminal: refused before any host task
    store = os.path.join(store_dir, "store")
    result = _play(tmp_path, _settings(tmp_path, store_dir, sglang_model_dir=store + "\x00x"))
    out = result.stdout + result.stderr
    assert result.returncode == 2, out[-3000:]
    assert "sglang_model_dir: contains a control character (NUL at offset %d)" % len(store) in out
    assert "nothing on the host was changed" in out
    assert not os.path.exists(os.path.join(store_dir, "store")) and not (tmp_path / "venv").exists()


def test_a_floating_revision_is_refused_by_default_and_accepted_when_allowed(store_dir, tmp_path):
    refused = _play(tmp_path, _settings(tmp_path, store_dir, sglang_model_revision="v1.0"), "validate")
    assert refused.returncode == 2
    assert "sglang_model_revision: v1.0 is a branch or tag name" in refused.stdout
    allowed = _play(tmp_path, _settings(tmp_path, store_dir, sglang_model_revision="v1.0",
                                        sglang_model_allow_floating_revision=True), "validate")
    assert allowed.returncode == 0, allowed.stdout[-3000:]


def test_stage_without_resolve_says_which_entry_point_to_run(store_dir, tmp_path):
    result = _play(tmp_path, _settings(tmp_path, store_dir), "stage")
    assert result.returncode == 2
    assert "run the role's resolve entry point" in result.stdout
    assert not os.path.exists(os.path.join(store_dir, "store"))


def _server_model_path(variables):
    defaults = yaml.safe_load(open(os.path.join(ROOT, "roles", "sglang_server", "defaults", "main.yml")))
    templar = Templar(loader=DataLoader(), variables=variables)
    return templar.template(trust_as_template(defaults["sglang_server_model_path"])).strip()


@pytest.mark.parametrize("variables, expected", [
    # without the model role: the old default, which validation then asks to set
    ({}, ""),
    ({"sglang_model_repo": ""}, ""),
    # the verified revision the role published in this run
    ({"sglang_model_repo": "org/name", "sglang_model_revision": "main", "sglang_model_path": "/m/org--name/" + COMMIT},
     "/m/org--name/" + COMMIT),
    # a play without the role (restart.yml, rollback.yml): where the pinned commit lives
    ({"sglang_model_repo": "org/name", "sglang_model_revision": COMMIT},
     "/var/lib/llmserve-models/org--name/" + COMMIT),
    ({"sglang_model_repo": "org/name", "sglang_model_revision": COMMIT, "sglang_model_dir": "/srv/models"},
     "/srv/models/org--name/" + COMMIT),
])
def test_sglang_server_serves_the_verified_revision_by_default(variables, expected):
    assert _server_model_path(variables) == expected
