# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The sglang_gateway role's own checks (tasks/validate.yml, then tasks/verify.yml) run by ansible-playbook against
the REAL smg 1.13.0 on 127.0.0.1, in front of SGLang stand-ins from a generated inventory.

There is no systemd here, so ``systemctl`` is a stub on PATH that reports the unit as running (wait_for_endpoint
reads it between polls); everything else is real: the readiness wait, the unauthenticated control-plane call, the
worker listing with the control-plane key until every inventory worker is healthy, the metrics probe.

Proves: a good gateway passes; an inventory worker that is down fails the play naming its URL; a gateway whose
control plane is open (smg started without the role's launcher) fails the play; no key appears in Ansible's output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.llmserve.sglang.tests.integration.gateway import smg_live as live

VENV, SKIP_REASON = live.smg_venv()
pytestmark = pytest.mark.skipif(VENV is None, reason=SKIP_REASON or "")

WORKER_KEY = "sk-verify-worker-$key"
ADMIN_KEY = "adm-verify-0123456789%key"
SYSTEMCTL_STUB = """#!/bin/sh
# wait_for_endpoint's unit watch: the unit is up, in one invocation, never restarted
printf 'LoadState=loaded\\nActiveState=active\\nSubState=running\\nInvocationID=0123456789abcdef0123456789abcdef\\n'
printf 'NRestarts=0\\nExecMainStatus=0\\nExecMainStartTimestampMonotonic=0\\nExecMainExitTimestampMonotonic=0\\n'
printf 'Result=success\\n'
"""


def _collections_path():
    tree = os.environ.get("LLMSERVE_PYTEST_TREE")
    if not tree:
        pytest.skip("collection link tree not found (run from the repository root, which has the conftest)")
    return tree


def _inventory(path, workers, gateway_port, metrics_port, worker_key):
    hosts = {name: {"ansible_host": "127.0.0.1", "sglang_server_host": "127.0.0.1", "sglang_server_port": port,
                    "sglang_server_api_key": worker_key} for name, port in workers}
    inventory = {"all": {"vars": {"ansible_connection": "local"}, "children": {
        "sglang_servers": {"hosts": hosts},
        "sglang_gateways": {"hosts": {"gateway-test": {
            "ansible_host": "127.0.0.1", "sglang_gateway_port": gateway_port, "sglang_gateway_metrics_port": metrics_port,
            "sglang_gateway_admin_api_key": ADMIN_KEY, "sglang_gateway_health_check_interval": 1,
            "sglang_gateway_shutdown_grace_period": 1, "sglang_gateway_ready_timeout": 30,
            "sglang_gateway_workers_timeout": 6}}}}}}
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(inventory, handle)


def _playbook(path, out, verify):
    tasks = [{"ansible.builtin.include_role": {"name": "llmserve.sglang.sglang_gateway", "tasks_from": "validate",
                                               "public": True}},
             {"ansible.builtin.copy": {"content": "{{ __sglang_gateway_rendered | to_json }}",
                                       "dest": os.path.join(out, "rendered.json"), "mode": "0600"}}]
    if verify:
        tasks.append({"ansible.builtin.include_role": {"name": "llmserve.sglang.sglang_gateway",
                                                       "tasks_from": "verify"}})
        tasks.append({"ansible.builtin.copy": {"content": "{{ __sglang_gateway_workers_result | to_json }}",
                                               "dest": os.path.join(out, "workers_result.json"), "mode": "0600"}})
    with open(path, "w", encoding="utf-8") as handle:
        json.dump([{"hosts": "sglang_gateways", "gather_facts": False, "tasks": tasks}], handle)


def _ansible(tmp, inventory, playbook):
    bindir = tmp / "bin"
    bindir.mkdir(exist_ok=True)
    stub = bindir / "systemctl"
    stub.write_text(SYSTEMCTL_STUB)
    stub.chmod(0o755)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=_collections_path(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_HOME=str(tmp / "home"), ANSIBLE_INJECT_FACT_VARS="false",
               PATH=str(bindir) + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-v", "-i",
                           str(inventory), "-e", "ansible_python_interpreter=" + sys.executable, str(playbook)],
                          capture_output=True, text=True, env=env, check=False, timeout=600)


class _SmgLaunch(live.Gateway):
    """``smg launch`` itself (smg's console script) with the role's flags plus ``extra``, not the role's launcher:
    a gateway the role would never start, to show that its checks catch it."""

    def __init__(self, tmp, rendered, extra):  # pylint: disable=super-init-not-called
        self.rendered = rendered
        self.log_path = os.path.join(str(tmp), "smg-launch.log")
        self.log = open(self.log_path, "w")
        self.command = [os.path.join(VENV, "bin", "smg"), "launch"] + rendered["argv"] + list(extra)
        self.confinement, self.cmdlines = [], set()
        self.proc = subprocess.Popen(self.command, env={"PATH": "/usr/bin:/bin"}, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)


def _run_case(tmp, worker_ports, live_workers, worker_key=WORKER_KEY, smg_launch_extra=None):
    """Inventory with ``worker_ports``; smg from the role's rendering; the role's verify tasks against it."""
    gateway_port, metrics_port = live.free_port(), live.free_port()
    inventory, render_play, verify_play = tmp / "inventory.json", tmp / "render.json", tmp / "verify.json"
    _inventory(inventory, [("worker-%d" % i, port) for i, port in enumerate(worker_ports)], gateway_port,
               metrics_port, worker_key)
    _playbook(render_play, str(tmp), verify=False)
    result = _ansible(tmp, inventory, render_play)
    assert result.returncode == 0, result.stdout[-4000:]
    with open(str(tmp / "rendered.json")) as handle:
        rendered = json.load(handle)
    if smg_launch_extra is None:
        gateway = live.Gateway(tmp, VENV, rendered, watch_cmdline=False)
    else:
        gateway = _SmgLaunch(tmp, rendered, smg_launch_extra)
    try:
        assert live.wait_for(lambda: live.http("GET", rendered["readiness_url"])[0] == 200
                             or gateway.proc.poll() is not None, 60), gateway.output()[-3000:]
        _playbook(verify_play, str(tmp), verify=True)
        return _ansible(tmp, inventory, verify_play), rendered
    finally:
        gateway.stop()
        for worker in live_workers:
            worker.stop()


def _workers(tmp, count, key=WORKER_KEY):
    workers = [live.StandinWorker(tmp, i, key) for i in range(count)]
    for worker in workers:
        assert live.wait_for(lambda w=worker: live.http("GET", w.url + "/health")[0] == 200, 20)
    return workers


def test_the_roles_checks_pass_for_a_good_gateway(tmp_path):
    workers = _workers(tmp_path, 2)
    result, rendered = _run_case(tmp_path, [w.port for w in workers], workers)
    assert result.returncode == 0, result.stdout[-6000:]
    with open(str(tmp_path / "workers_result.json")) as handle:
        assert json.load(handle) == {"missing": [], "unhealthy": [], "extra": [], "ok": True,
                                     "states": {url: "healthy" for url in rendered["worker_urls"]}}
    assert "Check that the control plane refused the call" in result.stdout
    for key in (WORKER_KEY, ADMIN_KEY):
        assert key not in result.stdout + result.stderr
    assert rendered["worker_urls"] == [w.url for w in workers]


def test_an_inventory_worker_that_is_down_fails_the_play_with_its_url(tmp_path):
    workers = _workers(tmp_path, 1)
    down = live.free_port()
    result = _run_case(tmp_path, [workers[0].port, down], workers)[0]
    assert result.returncode != 0
    assert "not registered: http://127.0.0.1:%d" % down in result.stdout, result.stdout[-4000:]
    for key in (WORKER_KEY, ADMIN_KEY):
        assert key not in result.stdout + result.stderr


def test_an_open_control_plane_fails_the_play(tmp_path):
    """smg without any key (workers without one either): anyone may call the control plane."""
    workers = _workers(tmp_path, 1, key="")
    result = _run_case(tmp_path, [workers[0].port], workers, worker_key="", smg_launch_extra=[])[0]
    assert result.returncode != 0
    assert "without a key answered 200" in result.stdout and "the control plane is open" in result.stdout, \
        result.stdout[-4000:]


def test_a_control_plane_guarded_only_by_the_workers_key_fails_the_play(tmp_path):
    """smg with --api-key but without control-plane keys: the control plane takes the workers' key, so the role's
    control-plane key is refused when it lists the workers."""
    workers = _workers(tmp_path, 1)
    result = _run_case(tmp_path, [workers[0].port], workers, smg_launch_extra=["--api-key", WORKER_KEY])[0]
    assert result.returncode != 0
    assert "List the registered workers with the control-plane key" in result.stdout
    assert "401" in result.stdout, result.stdout[-4000:]
    assert ADMIN_KEY not in result.stdout + result.stderr
