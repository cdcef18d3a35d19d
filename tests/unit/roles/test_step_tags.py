# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The step tags of sglang_server and sglang_gateway work on their own: every step tag brings the validation and the
read of the host with it, deploy stages what it swaps in, and only the install step (or the whole role) installs."""

import os
import subprocess
import sys

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BIN = os.path.dirname(sys.executable)

ROLES = {
    # role: (tag prefix, a validation task, a task of the host read, a staging task, the install task, a deploy task)
    "sglang_server": ("sglang", "Check and render the SGLang server configuration", "Read the deployment's state on the host",
                      "Stage the --config file, the environment file", "Install SGLang into the virtualenv",
                      "Decide whether to swap and restart"),
    "sglang_gateway": ("sglang_gateway", "Check and render the gateway configuration", "Read the installed smg version",
                       "Write the systemd unit", "Install smg into the virtualenv", "Decide whether to restart"),
}


def listed_tasks(tmp_path, role, tags):
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False,
                                         "roles": [{"role": "llmserve.sglang." + role}]}]))
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", "--list-tasks", "--tags", tags,
                           str(playbook)], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.parametrize("role", sorted(ROLES))
@pytest.mark.parametrize("step", ["validate", "install", "configure", "deploy"])
def test_each_step_tag_brings_what_it_needs(tmp_path, role, step):
    prefix, validation, host_read, staging, install, deploy = ROLES[role]
    tasks = listed_tasks(tmp_path, role, "%s_%s" % (prefix, step))
    assert validation in tasks
    assert (host_read in tasks) == (step != "validate")
    assert (install in tasks) == (step != "validate")  # listed; its `when` decides (next test)
    assert (staging in tasks) == (step in ("configure", "deploy"))
    assert (deploy in tasks) == (step == "deploy")


def install_selected(role, run_tags):
    defaults = yaml.safe_load(open(os.path.join(ROOT, "roles", role, "vars", "main.yml")))
    expression = defaults["__%s_install_selected" % role]
    templar = Templar(loader=DataLoader(), variables={"ansible_run_tags": run_tags})
    return templar.template(trust_as_template(expression))


@pytest.mark.parametrize("role", sorted(ROLES))
@pytest.mark.parametrize("run_tags, expected", [
    (["all"], True),
    (["{p}"], True),
    (["{p}_install"], True),
    (["{p}_deploy", "{p}_install"], True),
    (["{p}_deploy"], False),
    (["{p}_configure"], False),
    (["{p}_validate"], False),
    # a tag of the user's own on the role (`roles: [{role: ..., tags: llm}]`) selects the whole role
    (["llm"], True),
])
def test_only_the_install_step_installs(role, run_tags, expected):
    prefix = ROLES[role][0]
    assert install_selected(role, [tag.format(p=prefix) for tag in run_tags]) is expected
