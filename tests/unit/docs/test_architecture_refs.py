# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""docs/architecture.md names files with line numbers (`path:N`); code moves, so each reference is checked here:
the file exists, the line exists, and for the speculative variable's hops the line holds what the text says."""

from __future__ import annotations

import os
import re

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
DOC = os.path.join(ROOT, "docs", "architecture.md")
REFERENCE = re.compile(r"`((?:roles|plugins|inventories|playbooks|tools)/[^`:\s]+):(\d+)`")

# what the line of each hop must hold (the section "One variable, inventory to /server_info")
HOPS = {
    "inventories/example/host_vars/gpu-node-01/main.yml": "sglang_server_speculative:",
    "roles/sglang_server/defaults/main.yml": "sglang_server_speculative:",
    "roles/sglang_server/tasks/validate.yml": "- name: Check and render the SGLang server configuration",
    "roles/sglang_server/tasks/state.yml": "- name: Render the SGLang server with this host's state",
    "plugins/action/server_config.py": "VARIABLES",
    "plugins/plugin_utils/server_config.py": '"sglang_server_speculative"',
    "plugins/plugin_utils/sglang_args.py": "SPECULATIVE_KEYS",
    # the section "Addresses": who publishes sglang_server_addresses and who reads it
    "plugins/plugin_utils/addresses.py": "def server_addresses(",
    "roles/sglang_server/tasks/addresses.yml": "sglang_server_addresses:",
    "roles/sglang_server/vars/main.yml": "__sglang_server_",
    "roles/sglang_server/tasks/verify.yml": "__sglang_server_ready_url",
    "roles/sglang_server/tasks/probe.yml": "__sglang_server_ready_url",
    "roles/sglang_server/tasks/restore.yml": "__sglang_server_ready_url",
    "roles/sglang_server/tasks/deploy.yml": "__sglang_server_base_url",
    # the gateway's workers: the sglang_gateway role's action and the functions it runs
    "roles/sglang_gateway/tasks/validate.yml": "- name: Check and render the gateway configuration",
    "plugins/plugin_utils/gateway_role.py": "def ",
}
TEMPLATE_LINES = {"ExecStart=", "__sglang_server_rendered.argv"}


def _references():
    with open(DOC) as handle:
        text = handle.read()
    return [(path, int(number)) for path, number in REFERENCE.findall(text)]


def test_the_document_names_lines():
    paths = set(reference[0] for reference in _references())
    assert set(HOPS) <= paths
    assert "roles/sglang_server/templates/sglang.service.j2" in paths


@pytest.mark.parametrize("path,number", _references())
def test_each_reference_points_at_a_line(path, number):
    with open(os.path.join(ROOT, path)) as handle:
        lines = handle.read().splitlines()
    assert 1 <= number <= len(lines), "%s has %d lines, the document names line %d" % (path, len(lines), number)
    line = lines[number - 1]
    if path in HOPS:
        assert HOPS[path] in line, "%s:%d is %r" % (path, number, line)
    elif path.endswith("sglang.service.j2"):
        assert any(token in line for token in TEMPLATE_LINES), "%s:%d is %r" % (path, number, line)
