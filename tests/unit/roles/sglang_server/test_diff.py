# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``--diff`` of a deployment whose speculative settings and keys changed: the role's own stage and swap tasks.

ansible-playbook (localhost, no connection) runs the role's ``validate`` entry point, the task of state.yml that
renders the deployment's files, and then the "Stage" task of configure.yml and the "Swap the staged files in" task
of deploy.yml, read from the role, on files below a temporary directory (the live paths moved there with extra
vars): once on a converged host with ``--check --diff``, once with ``--diff`` for real. The unit's ExecStart change
must show, and neither the old nor the new API key or HF token.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.llmserve.sglang.tests.unit.collection_tree import collections_path as _collections_path

# The role writes its unit and configuration as root:root (deploy_state chowns them), which only root can do.
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the role's files belong to root: writing them needs root")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "sglang_server")
OLD = {"sglang_server_api_key": "sk-old-diff-key-1111", "sglang_server_hf_token": "hf_old_diff_token_2222"}
NEW = {"sglang_server_api_key": "sk-new-diff-key-3333", "sglang_server_hf_token": "hf_new_diff_token_4444",
       "sglang_server_speculative": {"algorithm": "NEXTN", "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4}}


def _task(tasks, name):
    for task in tasks:
        if task.get("name") == name:
            return task
        found = _task(task.get("block", []), name)
        if found:
            return found
    return None


def _role_task(entry, name):
    with open(os.path.join(ROLE, "tasks", entry), encoding="utf-8") as handle:
        task = _task(yaml.safe_load(handle), name)
    assert task, "%s: no task %r" % (entry, name)
    return task


def _play(root, variables, tasks):
    return {"hosts": "localhost", "gather_facts": False,
            "vars": dict({"sglang_server_model_path": "/models/m", "sglang_server_install": "none",
                          "sglang_server_python": "/usr/bin/python3", "sglang_server_group": "nogroup"},
                         **variables),
            "tasks": [{"ansible.builtin.include_role": {"name": "llmserve.sglang.sglang_server",
                                                        "tasks_from": "validate", "public": True}},
                      # the files are rendered once, in state.yml, after the final render of the server
                      _role_task("state.yml", "Render the deployment's files")] + tasks}


def _run(root, name, play, *options):
    playbook = os.path.join(root, name + ".yml")
    with open(playbook, "w", encoding="utf-8") as handle:
        json.dump([play], handle)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=_collections_path(), ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="false", ANSIBLE_NOCOLOR="1", ANSIBLE_HOME=os.path.join(root, "home"),
               ANSIBLE_STDOUT_CALLBACK="default")
    # the live and staged paths move into the temporary directory (the validation keeps the public directories out
    # of /tmp, so the role's private paths move)
    extra = {"ansible_python_interpreter": sys.executable,
             "__sglang_server_unit_path": os.path.join(root, "system", "sglang.service"),
             "__sglang_server_config_path": os.path.join(root, "etc", "sglang.yaml"),
             "__sglang_server_env_path": os.path.join(root, "etc", "sglang.env"),
             "__sglang_server_args_path": os.path.join(root, "etc", "sglang.args.json"),
             "__sglang_server_pylib_dir": os.path.join(root, "etc", "pylib"),
             "__sglang_server_staging_dir": os.path.join(root, "staging")}
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,",
                             "-c", "local", "-e", json.dumps(extra), playbook] + list(options),
                            capture_output=True, text=True, env=env, check=False, timeout=600)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    return result.stdout


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("sglang-diff"))
    # the role's relative lookups (templates, files) from plays outside the role
    for entry in ("templates", "files"):
        os.symlink(os.path.join(ROLE, entry), os.path.join(root, entry))
    for entry in ("system", "etc/pylib", "staging"):
        os.makedirs(os.path.join(root, entry))
    # converged: the live files and their staged copies are what the old settings render
    write = {"llmserve.sglang.deploy_state": {"files": "{{ __converged | from_json }}"}, "no_log": True,
             "vars": {"__converged": (
                 "[{% for f in __sglang_server_managed_files %}{{ '' if loop.first else ',' }}"
                 "{{ {'path': f.path, 'content': __sglang_server_candidates[f.name]} | to_json }},"
                 "{{ {'path': __sglang_server_staging_dir ~ '/' ~ (f.path | basename),"
                 " 'content': __sglang_server_candidates[f.name]} | to_json }}{% endfor %}]")}}
    _run(root, "converge", _play(root, OLD, [write]))
    with open(os.path.join(root, "system", "sglang.service"), encoding="utf-8") as handle:
        old_unit = handle.read()
    stage = _role_task("configure.yml", "Stage the --config file, the environment file, the unit, the command line "
                                        "record and the log hook")
    swap = _role_task("deploy.yml", "Swap the staged files in")
    plan = {"sglang_server_plan": {"stage": "{{ __sglang_server_managed_files | map(attribute='path')"
                                            " | map('basename') | map('regex_replace', '^', __sglang_server_staging_dir"
                                            " ~ '/') | list }}"},
            "__sglang_server_swap_needed": True}
    change = _play(root, dict(NEW, **plan), [stage, swap])
    check = _run(root, "check", change, "--check", "--diff")
    with open(os.path.join(root, "system", "sglang.service"), encoding="utf-8") as handle:
        unchanged = handle.read() == old_unit
    real = _run(root, "real", change, "--diff")
    with open(os.path.join(root, "system", "sglang.service"), encoding="utf-8") as handle:
        new_unit = handle.read()
    return dict(root=root, check=check, real=real, old_unit=old_unit, new_unit=new_unit, unchanged=unchanged)


def _exec_start(unit):
    lines = unit.splitlines()
    start = [i for i, line in enumerate(lines) if line.startswith("ExecStart=")][0]
    # ExecStart= continues over the lines that end in a backslash
    end = start
    while lines[end].endswith("\\"):
        end += 1
    return lines[start:end + 1]


@pytest.mark.parametrize("mode", ["check", "real"])
def test_the_diff_shows_the_exec_start_change_and_masks_the_keys(runs, mode):
    out = runs[mode]
    old, new = _exec_start(runs["old_unit"]), _exec_start(runs["new_unit"])
    assert old != new and any("--speculative-algorithm" in line for line in new)
    changed = [line for line in new if line not in old]
    assert changed and all("+" + line in out.splitlines() for line in changed), out[-4000:]
    assert "+++ after: %s" % os.path.join(runs["root"], "system", "sglang.service") in out
    # the --config file and the environment file changed their keys: shown as changed lines, values masked
    assert "-api-key: ********" in out and "+api-key: ********" in out
    assert '-HF_TOKEN=********' in out and '+HF_TOKEN=********' in out
    for secret in list(OLD.values()) + [NEW["sglang_server_api_key"], NEW["sglang_server_hf_token"]]:
        assert secret not in out
    # --check left the live unit as it was; the real run swapped the new one in
    assert runs["unchanged"] and "--speculative-algorithm" not in runs["old_unit"]
