# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The gateway role's entry points for the playbooks that roll changes through the gateways: `view`
(playbooks/plays/gateway_view.yml), run for real with a stand-in systemctl, publishes each gateway's workers, whether
it runs (sglang_gateway_active) and, on localhost, the gateways the rollout goes through (sglang_gateways_live), in
check mode too, and nothing under --tags (as the plain tasks the play held before). Every entry point has its
argument spec. worker_addresses is run in tests/unit/playbooks/test_gateway_playbook.py."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import pytest
import yaml
from ansible_collections.llmserve.sglang.tests.unit.collection_tree import collections_path

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "sglang_gateway")

# systemctl is-active UNIT: active (0) for gw-up's unit, inactive (3) for gw-down's, no such unit (4) otherwise
SYSTEMCTL = """#!/bin/sh
[ "$1" = is-active ] || exit 64
case "$2" in
  up.service) echo active; exit 0 ;;
  down.service) echo inactive; exit 3 ;;
  *) echo inactive; exit 4 ;;
esac
"""

KEYS = {"sglang_gateway_admin_api_key": "adm-0123456789abcdef", "sglang_gateway_worker_api_key": "wk-0123456789abcdef"}


def _load(*parts):
    with open(os.path.join(*parts), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _run_view(tmp_path, *args):
    """plays/gateway_view.yml on three local gateways (running, stopped, no unit) and one worker, then a play on
    localhost that shows what it published."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "systemctl").write_text(SYSTEMCTL)
    (bindir / "systemctl").chmod(0o755)
    inventory = {"all": {"vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
                         "children": {
        "sglang_gateways": {"hosts": {"gw-up": {"sglang_gateway_unit_name": "up"},
                                      "gw-down": {"sglang_gateway_unit_name": "down"},
                                      "gw-none": {}},
                            "vars": KEYS},
        "sglang_servers": {"hosts": {"worker": {"ansible_host": "10.0.0.1", "sglang_server_host": "0.0.0.0",
                                                "sglang_server_api_key": KEYS["sglang_gateway_worker_api_key"]}}}}}}
    (tmp_path / "inventory.json").write_text(json.dumps(inventory))
    shown = tmp_path / "shown.json"
    (tmp_path / "play.yml").write_text(yaml.safe_dump([
        {"ansible.builtin.import_playbook": os.path.join(ROOT, "playbooks", "plays", "gateway_view.yml")},
        {"hosts": "localhost", "gather_facts": False, "tasks": [{
            "ansible.builtin.copy": {"dest": str(shown), "mode": "0644", "content": (
                "{% set out = {} %}{% for name in groups['sglang_gateways'] %}{% set _ = out.update({name: {"
                "'active': hostvars[name]['sglang_gateway_active'] | default(None),"
                " 'url': hostvars[name]['sglang_gateway_url'] | default(None),"
                " 'workers': hostvars[name]['sglang_gateway_workers'] | default(None)}}) %}{% endfor %}"
                "{{ {'live': sglang_gateways_live | default(None), 'gateways': out} | to_json }}")},
            # check mode must not keep the test from seeing what was published
            "check_mode": False, "tags": ["always"]}]}]))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_HOME=str(tmp_path / "home"), ANSIBLE_CACHE_PLUGIN="memory",
               ANSIBLE_LOCALHOST_WARNING="false", PATH=str(bindir) + os.pathsep + os.environ["PATH"])
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                             "-i", str(tmp_path / "inventory.json"), str(tmp_path / "play.yml")] + list(args),
                            capture_output=True, text=True, env=env, check=False, timeout=300)
    return result, (json.loads(shown.read_text()) if shown.exists() else None)


@pytest.mark.parametrize("args", [[], ["--check"]])
def test_the_view_publishes_the_workers_and_the_gateways_that_run(tmp_path, args):
    result, shown = _run_view(tmp_path, *args)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    # a gateway read as not running (inactive, or no such unit) is left out of the rollout
    assert shown["live"] == ["gw-up"]
    assert {name: gateway["active"] for name, gateway in shown["gateways"].items()} == {
        "gw-up": True, "gw-down": False, "gw-none": False}
    for gateway in shown["gateways"].values():
        assert gateway["url"] == "http://127.0.0.1:8000"
        assert gateway["workers"] == [{"name": "worker", "url": "http://10.0.0.1:30000"}]
    assert "changed=0" in result.stdout and "failed=0" in result.stdout
    assert KEYS["sglang_gateway_admin_api_key"] not in result.stdout + result.stderr


def test_a_bad_gateway_configuration_stops_the_view(tmp_path):
    result, shown = _run_view(tmp_path, "-e", "sglang_gateway_admin_api_key=short")
    assert result.returncode == 2, result.stdout[-4000:] + result.stderr[-2000:]
    assert "sglang_gateway_admin_api_key" in result.stdout
    assert shown is None


def test_a_run_limited_by_tags_leaves_the_view_out(tmp_path):
    """Untagged, as the plain tasks the play held before: `--tags` skips the validation, the read of the unit and
    the argument check alike, and the rollout goes through every gateway."""
    result, shown = _run_view(tmp_path, "--tags", "sglang_install")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    unread = {"active": None, "url": None, "workers": None}
    assert shown == {"live": None, "gateways": {name: unread for name in ("gw-up", "gw-down", "gw-none")}}
    assert "Validating arguments" not in result.stdout


def test_the_plays_only_call_the_entry_points():
    worker_play, view_play = (_load(ROOT, "playbooks", "plays", "worker_addresses.yml")
                              + _load(ROOT, "playbooks", "plays", "gateway_view.yml")[1:])
    for play, entry in ((worker_play, "worker_addresses"), (view_play, "view")):
        assert "vars" not in play
        (task,) = play["tasks"]
        assert task["ansible.builtin.include_role"] == {"name": "llmserve.sglang.sglang_gateway", "tasks_from": entry}
        assert set(task) == {"name", "ansible.builtin.include_role"}, "no when, tags or vars"
    view = _load(ROLE, "tasks", "view.yml")
    assert view[0]["ansible.builtin.import_tasks"] == "validate.yml"
    (publish,) = [t for t in view if "sglang_gateways_live" in t.get("ansible.builtin.set_fact", {})]
    assert publish["delegate_to"] == "localhost" and publish["delegate_facts"] is True and publish["run_once"] is True
    (read,) = [t for t in view if "ansible.builtin.command" in t]
    assert read["check_mode"] is False and read["changed_when"] is False


def test_every_entry_point_has_its_argument_spec():
    specs = _load(ROLE, "meta", "argument_specs.yml")["argument_specs"]
    entry_points = {os.path.basename(p)[:-4] for p in glob.glob(os.path.join(ROLE, "tasks", "*.yml"))}
    assert {"main", "validate", "view", "worker_addresses"} <= set(specs) <= entry_points
    # view runs the validate step: the same options
    assert specs["view"]["options"] == specs["validate"]["options"] == specs["main"]["options"]
    assert specs["worker_addresses"]["options"] == {
        "sglang_gateway_workers_group": specs["main"]["options"]["sglang_gateway_workers_group"]}
