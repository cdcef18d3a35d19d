# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""sglang_monitoring's node_exporter entry point, run by Ansible: bad settings fail naming the variable before the
package task; the exporter's environment file points at the textfile directory the collection writes into."""

from __future__ import annotations

import json
import os

from ansible_collections.llmserve.sglang.tests.unit.collection_tree import run_playbook

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "sglang_monitoring")


def _entry(tmp_path, settings):
    return run_playbook(tmp_path, [{"hosts": "localhost", "gather_facts": False, "vars": settings, "tasks": [
        {"ansible.builtin.include_role": {"name": "llmserve.sglang.sglang_monitoring", "tasks_from": "node_exporter"}}]}])


def test_bad_settings_fail_naming_each_variable_before_the_package_is_touched(tmp_path):
    result = _entry(tmp_path, {"sglang_monitoring_node_exporter_textfile_dir": "relative/dir",
                               "sglang_monitoring_node_exporter_package": "node exporter",
                               "sglang_monitoring_node_exporter_port": 70000})
    out = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 2, out[-3000:]
    assert "sglang_monitoring_node_exporter_textfile_dir: must be an absolute path" in out
    assert "sglang_monitoring_node_exporter_package: must be a package name" in out
    assert "sglang_monitoring_node_exporter_port" in out and "70000" in out
    assert "Install the node exporter from the distribution" not in out


def _render(tmp_path, settings):
    dest = tmp_path / "prometheus-node-exporter"
    # as extra vars: include_vars would win over play vars
    result = run_playbook(tmp_path, [{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"ansible.builtin.include_vars": {"dir": os.path.join(ROLE, "defaults")}},
        {"ansible.builtin.include_vars": {"dir": os.path.join(ROLE, "vars")}},
        {"ansible.builtin.template": {"src": os.path.join(ROLE, "templates", "prometheus-node-exporter.default.j2"),
                                      "dest": str(dest), "mode": "0644"}}]}], "-e", json.dumps(settings))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    return [line for line in dest.read_text().splitlines() if not line.startswith("#")]


def test_the_textfile_directory_follows_the_collections_textfile_setting(tmp_path):
    assert _render(tmp_path, {"sglang_rollout_metrics_textfile_dir": "/srv/textfiles"}) == [
        'ARGS="--collector.textfile.directory=/srv/textfiles --web.listen-address=:9100"']


def test_the_textfile_directory_follows_the_deprecated_name_too(tmp_path):
    # sglang_metrics_textfile_dir is the name of the rollout's setting before 0.1.0's rename (gone in 0.2.0)
    assert _render(tmp_path, {"sglang_metrics_textfile_dir": "/srv/old"}) == [
        'ARGS="--collector.textfile.directory=/srv/old --web.listen-address=:9100"']
    assert _render(tmp_path, {"sglang_metrics_textfile_dir": "/srv/old", "sglang_rollout_metrics_textfile_dir": "/srv/new"}) == [
        'ARGS="--collector.textfile.directory=/srv/new --web.listen-address=:9100"']


def test_without_a_textfile_setting_debians_directory_and_the_port_variable(tmp_path):
    assert _render(tmp_path, {"sglang_monitoring_node_exporter_port": 9101}) == [
        'ARGS="--collector.textfile.directory=/var/lib/prometheus/node-exporter --web.listen-address=:9101"']
