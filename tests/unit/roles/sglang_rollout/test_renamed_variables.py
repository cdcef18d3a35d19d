# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rollout's settings were renamed with the role (rollout -> sglang_rollout): sglang_lock_wait became
sglang_rollout_lock_wait, and so on (vars/main.yml __sglang_rollout_renamed). Until 0.2.0 an inventory or -e that
still sets an old name keeps working: the new name's default reads it, and the main entry point warns once per run,
naming every old name that is set and its new name. The mapping is checked against the role's files, and a real run
on localhost (in the style of test_pipeline.py) shows the old names taking effect and the warning."""

from __future__ import annotations

import glob
import json
import os
import re

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.llmserve.sglang.plugins.plugin_utils.rollout_lease import phase_lease
from ansible_collections.llmserve.sglang.tests.unit.collection_tree import run_playbook

ROLE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles", "sglang_rollout"))
LOCK = "llmserve.sglang.run_lock"
WARNING = "[DEPRECATED] llmserve.sglang.sglang_rollout: these variables were renamed"
RENAMES = {
    "sglang_lock_wait": "sglang_rollout_lock_wait",
    "sglang_lock_lease": "sglang_rollout_lock_lease",
    "sglang_lock_install_seconds": "sglang_rollout_lock_install_seconds",
    "sglang_prewarm_timeout": "sglang_rollout_prewarm_timeout",
    "sglang_gateway_drain_timeout": "sglang_rollout_drain_timeout",
    "sglang_gateway_healthy_timeout": "sglang_rollout_gateway_healthy_timeout",
    "sglang_audit_probe": "sglang_rollout_audit_probe",
    "sglang_audit_probe_timeout": "sglang_rollout_audit_probe_timeout",
    "sglang_report_dir": "sglang_rollout_report_dir",
    "sglang_metrics_textfile_dir": "sglang_rollout_metrics_textfile_dir",
}


def load(*parts):
    with open(os.path.join(ROLE, *parts)) as handle:
        return yaml.safe_load(handle)


def render(expression, variables):
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(expression))


# --- the mapping ------------------------------------------------------------------------------------------------------

def test_the_mapping_is_the_list_of_renames():
    assert load("vars", "main.yml")["__sglang_rollout_renamed"] == RENAMES


@pytest.mark.parametrize("old, new", sorted(RENAMES.items()))
def test_each_new_default_reads_its_old_name_first(old, new):
    default = load("defaults", "main.yml")[new]
    assert isinstance(default, str) and re.match(r"^\{\{ %s \| default\(" % old, default), default
    # (the report directory's default is below the controller's working directory; no lookup plugins here)
    default = default.replace("lookup('ansible.builtin.env', 'PWD')", "'/cwd'")
    # an old name that is set is taken as it is; without it the setting has its own default
    assert render(default, {old: "from-the-old-name"}) == "from-the-old-name"
    assert render(default, {}) != "from-the-old-name"
    assert old not in str(render(default, {}))


def test_the_argument_specs_and_the_role_use_only_the_new_names():
    specs = load("meta", "argument_specs.yml")["argument_specs"]
    for entry, spec in specs.items():
        options = spec.get("options") or {}
        assert not set(options) & set(RENAMES), entry
    assert set(RENAMES.values()) <= {name for spec in specs.values() for name in spec.get("options") or {}}
    # the old names appear only in the defaults (read first) and in the mapping (and the README's table of them)
    for path in glob.glob(os.path.join(ROLE, "**", "*"), recursive=True):
        if not os.path.isfile(path) or path.endswith((os.path.join("defaults", "main.yml"), "README.md")):
            continue
        with open(path) as handle:
            text = handle.read()
        if path.endswith(os.path.join("vars", "main.yml")):
            text = text.split("__sglang_rollout_renamed:", 1)[0] + text.split("__sglang_rollout_renamed_set:", 1)[1]
        for old in RENAMES:
            assert not re.search(r"(?<![\w.])%s(?!\w)" % old, text), (path, old)


# --- a real run -------------------------------------------------------------------------------------------------------

@pytest.fixture
def work(tmp_path):
    # a step role no role of the collection is named like
    tasks = tmp_path / "roles" / "auditstep" / "tasks"
    tasks.mkdir(parents=True)
    # it notes that it ran and the lock record it ran under (the lease the audit took)
    (tasks / "main.yml").write_text(
        "- name: Note the step and the lock\n"
        "  ansible.builtin.shell: >-\n"
        "    echo step >> {{ journal }};\n"
        "    cat {{ locks }}/sglang.lock/owner.json > {{ journal }}.lock\n"
        "  changed_when: false\n")
    (tmp_path / "locks").mkdir(mode=0o700)
    return tmp_path


def _run(work, variables, plays=1):
    (work / "vars.json").write_text(json.dumps(dict(variables, journal=str(work / "journal"))))
    play = {"hosts": "localhost", "gather_facts": False,
            "module_defaults": {LOCK: {"path": str(work / "locks" / "sglang.lock")}},
            "tasks": [
                {"name": "The rollout", "ansible.builtin.import_role": {"name": "llmserve.sglang.sglang_rollout"},
                 "vars": {"sglang_rollout_stage": "audit", "sglang_rollout_steps": [{"role": "auditstep"}]}}]}
    proc = run_playbook(work, [play] * plays, "-e", "@" + str(work / "vars.json"), "-e", "locks=" + str(work / "locks"))
    return proc.returncode, proc.stdout + proc.stderr


def test_old_names_still_take_effect_and_one_warning_names_them(work):
    old = {"sglang_lock_lease": 120, "sglang_audit_probe": False, "sglang_audit_probe_timeout": 7,
           "sglang_report_dir": str(work / "old-reports")}
    rc, out = _run(work, old, plays=2)
    # sglang_audit_probe: false skips the probe of a server localhost does not run (it would fail the audit)
    assert rc == 0, out
    assert (work / "journal").read_text().splitlines() == ["step", "step"]
    # the reports go below the old name's directory
    assert (work / "old-reports").is_dir() and os.listdir(work / "old-reports"), out
    assert not (work / "reports").exists()
    # the lease: the audit's, with the old names' margin and probe timeout
    (holder,) = json.loads((work / "journal.lock").read_text())["holders"]
    assert holder["lease"] == phase_lease("audit", {"sglang_rollout_lock_lease": 120,
                                                    "sglang_rollout_audit_probe_timeout": 7})
    assert holder["lease"] != phase_lease("audit", {})
    # one warning in a run of two plays, naming every old name set (in the mapping's order) and nothing else
    assert out.count(WARNING) == 1, out
    # (the callback may wrap the message; compare it with its whitespace folded)
    line = " ".join(out[out.index(WARNING):].split("\n\n", 1)[0].split())
    assert ("sglang_lock_lease -> sglang_rollout_lock_lease, sglang_audit_probe -> sglang_rollout_audit_probe, "
            "sglang_audit_probe_timeout -> sglang_rollout_audit_probe_timeout, "
            "sglang_report_dir -> sglang_rollout_report_dir.") in line, line
    assert "sglang_lock_wait" not in line and "stop working in llmserve.sglang 0.2.0" in line


def test_new_names_win_and_do_not_warn(work):
    new = {"sglang_rollout_lock_lease": 90, "sglang_rollout_audit_probe": False,
           "sglang_rollout_report_dir": str(work / "new-reports")}
    rc, out = _run(work, new)
    assert rc == 0, out
    assert "DEPRECATED" not in out, out
    assert os.listdir(work / "new-reports")
    (holder,) = json.loads((work / "journal.lock").read_text())["holders"]
    assert holder["lease"] == phase_lease("audit", {"sglang_rollout_lock_lease": 90})
    # both set: the new name is the one that counts (the warning still names the old one)
    rc, out = _run(work, dict(new, sglang_lock_lease=600))
    assert rc == 0, out
    (holder,) = json.loads((work / "journal.lock").read_text())["holders"]
    assert holder["lease"] == phase_lease("audit", {"sglang_rollout_lock_lease": 90})
    assert out.count(WARNING) == 1 and "sglang_lock_lease -> sglang_rollout_lock_lease." in out, out
