# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The roles and playbooks reach their own servers, gateways and workers directly: every request task they run
(llmserve.sglang.wait_for_endpoint, llmserve.sglang.gateway_worker, llmserve.sglang.speculative_check) says
use_proxy: false, so an http_proxy in the host's environment never sees a probe or its API key (issue 24 #2)."""

import glob
import os

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
REQUEST_MODULES = ("llmserve.sglang.wait_for_endpoint", "llmserve.sglang.gateway_worker",
                   "llmserve.sglang.speculative_check")


def _tasks(node):
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        if any(name in node for name in REQUEST_MODULES):
            yield node
        for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks", "handlers"):
            if key in node:
                yield from _tasks(node[key])


def request_tasks():
    found = []
    files = glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml"))
    files += glob.glob(os.path.join(ROOT, "roles", "*", "handlers", "*.yml"))
    files += glob.glob(os.path.join(ROOT, "playbooks", "**", "*.yml"), recursive=True)
    for path in sorted(files):
        with open(path) as f:
            for task in _tasks(yaml.safe_load(f)):
                found.append((os.path.relpath(path, ROOT), task))
    return found


def test_every_probe_of_the_roles_and_playbooks_skips_the_proxy():
    found = request_tasks()
    # the scan sees them: both roles' verify steps and the rollout's drain and return
    files = {path for path, task in found}
    assert {"roles/sglang_server/tasks/verify.yml", "roles/sglang_gateway/tasks/verify.yml",
            "roles/sglang_rollout/tasks/gateway_in.yml", "roles/sglang_rollout/tasks/gateway_out.yml"} <= files
    proxied = ["%s: %s" % (path, task.get("name")) for path, task in found
               if next(task[m] for m in REQUEST_MODULES if m in task).get("use_proxy") is not False]
    assert proxied == []
