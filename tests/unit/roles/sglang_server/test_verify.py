# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""verify.yml compares what the server reports with what the render step decided; it knows no algorithm itself."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import yaml

from ansible_collections.llmserve.sglang.plugins.plugin_utils import sglang_args
from ansible_collections.llmserve.sglang.tests.unit.collection_tree import collections_path

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
VERIFY = os.path.join(ROOT, "roles", "sglang_server", "tasks", "verify.yml")


def _text():
    with open(VERIFY, encoding="utf-8") as handle:
        return handle.read()


def test_verify_names_no_speculative_algorithm():
    # a rule such as "NEXTN is reported as EAGLE" belongs to sglang_args, not to the YAML
    found = sorted({name for name in sglang_args.SPECULATIVE_ALGORITHMS
                    if re.search(r"(?<![A-Za-z0-9_])%s(?![A-Za-z0-9_])" % name, _text(), re.IGNORECASE)})
    assert found == []


def test_verify_checks_against_the_rendered_expectation():
    tasks = {task["name"]: task for task in yaml.safe_load(_text())}
    check = tasks["Check that the requested speculative decoding is active"]
    assert "expected_server_info" in yaml.safe_dump(check)
    read = tasks["Read what the server reports about itself"]
    assert {"speculative_algorithm", "speculative_num_steps", "speculative_eagle_topk",
            "speculative_num_draft_tokens"} <= set(read["llmserve.sglang.wait_for_endpoint"]["json_keys"])


def _run_check(tmp_path, facts):
    """Run verify.yml's own speculative check task on localhost with ``facts``; (rc, output)."""
    tasks = [task for task in yaml.safe_load(_text())
             if task["name"] == "Check that the requested speculative decoding is active"]
    (tmp_path / "check.yml").write_text(yaml.safe_dump(tasks))
    play = [{"hosts": "localhost", "gather_facts": False, "vars": facts,
             "tasks": [{"ansible.builtin.include_tasks": str(tmp_path / "check.yml")}]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,",
                           "-c", "local", str(tmp_path / "play.yml")],
                          capture_output=True, text=True, env=env, check=False, timeout=120)
    return proc.returncode, proc.stdout + proc.stderr


NEXTN = {"algorithm": "nextn", "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4}
REPORTED = {"speculative_algorithm": "EAGLE", "speculative_num_steps": 3, "speculative_eagle_topk": 1,
            "speculative_num_draft_tokens": 4, "version": "0.5.23"}
FACTS = {"sglang_server_verify_speculative": True, "__sglang_server_serves_api": True,
         "sglang_server_speculative": NEXTN, "__sglang_server_spec_active": NEXTN, "sglang_server_args": {}}


@pytest.mark.parametrize("rendered", [True, False], ids=["deploy", "restart"])
def test_the_check_passes_on_what_sglang_reports(tmp_path, rendered):
    facts = dict(FACTS, __sglang_server_info={"json": REPORTED})
    if rendered:
        facts["__sglang_server_rendered"] = {"expected_server_info": sglang_args.expected_server_info(NEXTN)}
    rc, out = _run_check(tmp_path, facts)
    assert rc == 0, out


@pytest.mark.parametrize("rendered", [True, False], ids=["deploy", "restart"])
@pytest.mark.parametrize("change", [{"speculative_algorithm": None}, {"speculative_num_steps": 2}])
def test_the_check_fails_on_another_setting(tmp_path, rendered, change):
    facts = dict(FACTS, __sglang_server_info={"json": dict(REPORTED, **change)})
    if rendered:
        facts["__sglang_server_rendered"] = {"expected_server_info": sglang_args.expected_server_info(NEXTN)}
    rc, out = _run_check(tmp_path, facts)
    assert rc != 0
    assert "sglang_server_speculative.algorithm=nextn was requested, but the server reports" in out
