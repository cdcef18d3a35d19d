# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""sglang_model decides itself whether it has work: without sglang_model_repo its main entry point does nothing
(site.yml runs playbooks/plays/model.yml, which only calls the role, on every server), whatever else the inventory
sets for it; with the repository, bad variables are still refused before the host changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml
from ansible_collections.llmserve.sglang.tests.unit.collection_tree import collections_path

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
COMMIT = "0123456789abcdef0123456789abcdef01234567"
TAGS = ["sglang_model", "sglang", "sglang_validate", "sglang_install", "sglang_configure", "sglang_deploy"]


def _model_play(tmp_path, host_vars, *args):
    """plays/model.yml on one local server, then a play that shows whether the role published a revision."""
    inventory = {"all": {"vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
                         "children": {"sglang_servers": {"hosts": {"gpu-a": host_vars}}}}}
    (tmp_path / "inventory.json").write_text(json.dumps(inventory))
    (tmp_path / "play.yml").write_text(yaml.safe_dump([
        {"ansible.builtin.import_playbook": os.path.join(ROOT, "playbooks", "plays", "model.yml")},
        {"hosts": "sglang_servers", "gather_facts": False, "tasks": [{
            "ansible.builtin.debug": {"msg": "PUBLISHED {{ sglang_model_path is defined }}"}, "tags": ["always"]}]}]))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_HOME=str(tmp_path / "home"), ANSIBLE_CACHE_PLUGIN="memory")
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                           "-i", str(tmp_path / "inventory.json"), str(tmp_path / "play.yml")] + list(args),
                          capture_output=True, text=True, env=env, check=False, timeout=300)


def _tasks_run(stdout):
    """The names of the tasks that were not skipped on gpu-a (ok, changed or failed)."""
    names, task = [], None
    for line in stdout.splitlines():
        if line.startswith("TASK ["):
            task = line[len("TASK ["):line.rindex("]")]
        elif task and line.startswith(("ok: [gpu-a]", "changed: [gpu-a]", "fatal: [gpu-a]")):
            names.append(task)
    return names


def test_main_runs_the_revision_entry_point_and_has_no_argument_check_of_its_own():
    role = os.path.join(ROOT, "roles", "sglang_model")
    specs = yaml.safe_load(open(os.path.join(role, "meta", "argument_specs.yml"), encoding="utf-8"))["argument_specs"]
    # an argument check of main would run, and cost a task, on every host of site.yml, repository or not
    assert "main" not in specs
    assert set(specs) == {"revision", "validate", "resolve", "stage", "prewarm"}
    assert specs["revision"]["options"] == specs["validate"]["options"]
    (step,) = yaml.safe_load(open(os.path.join(role, "tasks", "main.yml"), encoding="utf-8"))
    assert step["ansible.builtin.import_role"] == {"name": "llmserve.sglang.sglang_model", "tasks_from": "revision"}


def test_the_play_only_calls_the_role():
    (play,) = yaml.safe_load(open(os.path.join(ROOT, "playbooks", "plays", "model.yml"), encoding="utf-8"))
    (task,) = play["tasks"]
    assert task["ansible.builtin.import_role"] == {"name": "llmserve.sglang.sglang_model"}
    assert task["tags"] == TAGS
    assert set(task) == {"name", "ansible.builtin.import_role", "tags"}, "the role decides whether it has work"


@pytest.mark.parametrize("args", [[], ["--check"], ["--tags", "sglang_model_validate"], ["--tags", "sglang"]])
@pytest.mark.parametrize("host_vars", [
    {},
    {"sglang_model_repo": ""},
    # the rest of the role's settings are not looked at without a repository: out of range, not a choice, missing
    # paths, a wrong type
    {"sglang_model_repo": "", "sglang_model_keep": 0, "sglang_model_dir": "/tmp/not-a-store",
     "sglang_model_source": "path", "sglang_model_revision": "main", "sglang_model_verify": "sometimes",
     "sglang_model_allow_pickle": "perhaps"},
])
def test_without_a_repository_the_role_does_nothing(tmp_path, host_vars, args):
    result = _model_play(tmp_path, host_vars, *args)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-4000:]
    # every task of the role skipped, its argument check too: only the later play's debug ran
    assert _tasks_run(result.stdout) == ["ansible.builtin.debug"], result.stdout[-4000:]
    assert "PUBLISHED False" in result.stdout
    assert "changed=0" in result.stdout and "failed=0" in result.stdout


@pytest.mark.parametrize("args", [[], ["--tags", "sglang_install"]])
def test_with_a_repository_a_bad_choice_is_refused_by_the_argument_spec(tmp_path, args):
    result = _model_play(tmp_path, {"sglang_model_repo": "llmserve/tiny", "sglang_model_revision": COMMIT,
                                    "sglang_model_verify": "sometimes"}, *args)
    out = result.stdout + result.stderr
    assert result.returncode == 2, out[-4000:]
    assert "sglang_model_verify" in out
    assert _tasks_run(result.stdout)[-1].startswith(
        "llmserve.sglang.sglang_model : Validating arguments against arg spec 'revision'")
    assert "PUBLISHED" not in out


def test_with_a_repository_the_validate_tag_refuses_bad_settings_on_the_controller(tmp_path):
    result = _model_play(tmp_path, {"sglang_model_repo": "llmserve/tiny", "sglang_model_revision": COMMIT,
                                    "sglang_model_keep": 0}, "--tags", "sglang_model_validate")
    out = result.stdout + result.stderr
    assert result.returncode == 2, out[-4000:]
    assert "sglang_model_keep: must be an integer from 1 to 1000, got 0" in out
    # the refusal is the validate step's, before the check in the store or anything on the host
    assert _tasks_run(result.stdout)[-1].endswith("Refuse a model configuration that breaks the store's rules")
