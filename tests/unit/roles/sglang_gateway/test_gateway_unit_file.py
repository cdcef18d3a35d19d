# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The sglang_gateway role's unit and secret environment file, rendered by Ansible from an inventory and read back
like systemd.

One ansible-playbook run (every host local, no connection) renders every case: each case is a gateway host with a
workers group of its own in a generated inventory; its play runs the role's ``validate`` entry point (the action
llmserve.sglang.gateway_config: the real worker collection from hostvars, the rules and the rendering) and renders
the role's two templates, inside a block whose rescue records the failure message. The files are then parsed with ``systemd_syntax`` (systemd 252's
rules) and checked with ``systemd-analyze verify`` and ``systemd-analyze security --offline`` where available. The
run's own output (with -v) must not contain a key, and neither may the unit.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from ansible_collections.llmserve.sglang.tests.unit.roles.sglang_gateway import smg_stub
from ansible_collections.llmserve.sglang.tests.unit.roles.sglang_server import systemd_syntax as sd
from ansible_collections.llmserve.sglang.tests.unit.collection_tree import collections_path as _collections_path

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "sglang_gateway")
ADMIN_KEY = "adm-$ecret%key\"quote`tick\\back'single-0123"
WORKER_KEY = "sk-$worker%key\"q`t\\b"
TEMPLATES = ("sglang-gateway.service", "sglang-gateway.env")


def _w(address, **hostvars):
    values = {"ansible_host": address, "sglang_server_host": "0.0.0.0", "sglang_server_api_key": WORKER_KEY}
    values.update(hostvars)
    return values


# case: (gateway hostvars, workers {name: hostvars}, play vars)
CASES = {
    "plain": ({"ansible_host": "10.0.0.1"},
              {"w1": _w("10.0.0.11"), "w2": _w("gpu-2.example.internal", sglang_server_port=30001)},
              {"sglang_gateway_host": "0.0.0.0"}),
    "ipv6": ({"ansible_host": "fd00::1"},
             {"w6a": _w("", sglang_server_host="fd00::11"), "w6b": _w("fd00::12", sglang_server_host="::")},
             {"sglang_gateway_host": "::", "sglang_gateway_metrics_host": "::1"}),
    "privileged_tls": ({"ansible_host": "10.0.0.2"}, {"wt": _w("10.0.0.21", sglang_server_args={
        "ssl_certfile": "/etc/sglang/tls.crt", "ssl_keyfile": "/etc/sglang/tls.key"})},
        {"sglang_gateway_host": "10.0.0.2", "sglang_gateway_port": 443,
         "sglang_gateway_tls_cert_path": "/etc/sglang-gateway/tls.crt",
         "sglang_gateway_tls_key_path": "/etc/sglang-gateway/tls.key",
         "sglang_gateway_worker_ca_path": "/etc/sglang-gateway/workers-ca.pem"}),
    "hostile_args": ({"ansible_host": "10.0.0.3"}, {"wh": _w("10.0.0.31")},
                     {"sglang_gateway_args": {"cors_allowed_origins": ["$HOME=100%", "\"q\" \\b;x"],
                                              "model_alias": "-x=\"q\" %n \\b",
                                              "request_timeout_secs": 600, "dp_aware": True,
                                              "upstream_http2": False}}),
    # refusals: nothing may be written
    "no_workers": ({"ansible_host": "10.0.0.4"}, {}, {}),
    "duplicate_urls": ({"ansible_host": "10.0.0.5"}, {"wd1": _w("10.0.0.51"), "wd2": _w("10.0.0.51")}, {}),
    "loopback_elsewhere": ({"ansible_host": "10.0.0.6"}, {"wl": _w("10.0.0.61", sglang_server_host="127.0.0.1")}, {}),
    "port_clash": ({"ansible_host": "10.0.0.7"}, {"wp": _w("10.0.0.7", sglang_server_port=8000)}, {}),
    "no_admin_key": ({"ansible_host": "10.0.0.8"}, {"wn": _w("10.0.0.81")}, {"sglang_gateway_admin_api_key": ""}),
    "same_keys": ({"ansible_host": "10.0.0.9"}, {"ws": _w("10.0.0.91", sglang_server_api_key=ADMIN_KEY)}, {}),
    "bad_policy": ({"ansible_host": "10.0.0.10"}, {"wb": _w("10.0.0.101")}, {"sglang_gateway_policy": "fastest"}),
    "newline_in_admin_key": ({"ansible_host": "10.0.0.11"}, {"wk": _w("10.0.0.111")},
                             {"sglang_gateway_admin_api_key": "adm-0123456789abcdef\nExecStartPre=+/bin/true"}),
    "nul_in_arg": ({"ansible_host": "10.0.0.12"}, {"wa": _w("10.0.0.121")},
                   {"sglang_gateway_args": {"model_alias": "a=b\u0000ExecStartPre=+/bin/true"}}),
}
FAILING = {
    "no_workers": "sglang_gateway_workers_group: the inventory group 'workers_no_workers' has no hosts",
    "duplicate_urls": "hostvars['wd2']: reaches the same URL http://10.0.0.51:30000 as wd1",
    "loopback_elsewhere": "hostvars['wl'].sglang_server_host: wl is reached at the loopback address 127.0.0.1",
    "port_clash": "sglang_gateway_port: clashes with worker wp on the same host, which listens on port 8000",
    "no_admin_key": "sglang_gateway_admin_api_key: must be set",
    "same_keys": "sglang_gateway_admin_api_key: must differ from the workers' API key",
    "bad_policy": "sglang_gateway_policy",
    "newline_in_admin_key": "sglang_gateway_admin_api_key: contains a control character (LF at offset 20; value not "
                            "shown)",
    "nul_in_arg": "sglang_gateway_args.model_alias: contains a control character (NUL at offset 3)",
}


def _inventory():
    groups = {}
    for name, case in CASES.items():
        groups["gateways_" + name] = {"hosts": {"gw_" + name: case[0]}}
        groups["workers_" + name] = {"hosts": case[1]}
    return {"all": {"vars": {"ansible_connection": "local"}, "children": groups}}


def _play(name, play_vars, out, venv):
    variables = {"sglang_gateway_admin_api_key": ADMIN_KEY, "sglang_gateway_workers_group": "workers_" + name,
                 "sglang_gateway_venv": venv}
    variables.update(play_vars)
    tasks = [{"ansible.builtin.include_role": {"name": "llmserve.sglang.sglang_gateway", "tasks_from": "validate",
                                               "public": True}}]
    for template in TEMPLATES:
        tasks.append({"ansible.builtin.template": {"src": os.path.join(ROLE, "templates", template + ".j2"),
                                                   "dest": os.path.join(out, name, template), "mode": "0600"},
                      "no_log": template.endswith(".env")})
    tasks.append({"ansible.builtin.copy": {"content": "{{ __sglang_gateway_rendered | to_json }}",
                                           "dest": os.path.join(out, name, "rendered.json"), "mode": "0600"}})
    return {
        "name": name, "hosts": "gw_" + name, "gather_facts": False, "vars": variables,
        "tasks": [
            {"ansible.builtin.file": {"path": os.path.join(out, name), "state": "directory", "mode": "0700"}},
            {"block": tasks, "rescue": [{"ansible.builtin.copy": {
                "content": "{{ ansible_failed_result.msg | default(ansible_failed_result) | string }}",
                "dest": os.path.join(out, name, "error.txt"), "mode": "0600"}}]},
        ],
    }


def _run_playbook(out, inventory, plays, extra=()):
    playbook = os.path.join(out, "render.yml")
    with open(playbook, "w", encoding="utf-8") as handle:
        json.dump(plays, handle)  # JSON is YAML; NUL and LF stay \\u escapes
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=_collections_path(), ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_NOCOLOR="1", ANSIBLE_HOME=os.path.join(out, "home"), ANSIBLE_INJECT_FACT_VARS="false",
               ANSIBLE_ROLES_PATH=os.path.join(out, "roles"))
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-v", "-i", inventory,
                           "-e", "ansible_python_interpreter=" + sys.executable] + list(extra) + [playbook],
                          capture_output=True, text=True, env=env, check=False, timeout=600)


def _read(directory):
    files = {}
    for entry in TEMPLATES + ("rendered.json", "error.txt"):
        path = os.path.join(directory, entry)
        if os.path.exists(path):
            with open(path, encoding="utf-8", newline="") as handle:
                files[entry] = handle.read()
    return files


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("gateway-unit"))
    # a venv whose python exists, so that systemd-analyze verify finds the ExecStart= program
    venv = os.path.join(out, "venv")
    os.makedirs(os.path.join(venv, "bin"))
    os.symlink(shutil.which("python3") or sys.executable, os.path.join(venv, "bin", "python"))
    inventory = os.path.join(out, "inventory.json")
    with open(inventory, "w", encoding="utf-8") as handle:
        json.dump(_inventory(), handle)
    result = _run_playbook(out, inventory, [_play(name, case[2], out, venv) for name, case in CASES.items()])
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    cases = {name: _read(os.path.join(out, name)) for name in CASES}
    return {"cases": cases, "output": result.stdout + result.stderr, "venv": venv}


def _ok(rendered, name):
    case = rendered["cases"][name]
    assert "error.txt" not in case, case.get("error.txt")
    return case, json.loads(case["rendered.json"])


def _environment(unit):
    env = {}
    for value in sd.values(unit, "Environment"):
        env.update(sd.environment(value))
    return env


@pytest.mark.parametrize("name", ["plain", "ipv6", "privileged_tls", "hostile_args"])
def test_execstart_is_the_launcher_with_the_rendered_flags(rendered, name):
    case, data = _ok(rendered, name)
    unit = case["sglang-gateway.service"]
    (exec_start,) = sd.values(unit, "ExecStart")
    assert sd.exec_argv(exec_start) == [rendered["venv"] + "/bin/python", "-I", "/etc/sglang-gateway/smg_launch.py"] \
        + data["argv"]
    assert _environment(unit) == data["env"] == {"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    # the keys reach the service as a credential, not as environment variables
    assert sd.values(unit, "EnvironmentFile") == []
    assert sd.values(unit, "LoadCredential") == ["smg-keys:/etc/sglang-gateway/sglang-gateway.env"]
    assert sd.values(unit, "User") == ["sglang-gateway"] and sd.values(unit, "NoNewPrivileges") == ["yes"]


def test_workers_come_from_the_inventory(rendered):
    assert _ok(rendered, "plain")[1]["worker_urls"] == ["http://10.0.0.11:30000", "http://gpu-2.example.internal:30001"]
    data = _ok(rendered, "ipv6")[1]
    assert data["worker_urls"] == ["http://[fd00::11]:30000", "http://[fd00::12]:30000"]
    assert data["base_url"] == "http://[::1]:8000" and data["metrics_url"] == "http://[::1]:29000/metrics"
    data = _ok(rendered, "privileged_tls")[1]
    assert data["worker_urls"] == ["https://10.0.0.21:30000"] and data["base_url"] == "https://10.0.0.2:443"


def test_hostile_values_reach_smg_unchanged(rendered):
    case, data = _ok(rendered, "hostile_args")
    argv = sd.exec_argv(sd.values(case["sglang-gateway.service"], "ExecStart")[0])
    at = argv.index("--cors-allowed-origins")
    assert argv[at + 1:at + 3] == ["$HOME=100%", "\"q\" \\b;x"]
    assert "--model-alias=-x=\"q\" %n \\b" in argv
    assert "--dp-aware" in argv and "--upstream-http2" not in argv
    assert argv[argv.index("--request-timeout-secs") + 1] == "600"


def test_the_keys_are_only_in_the_root_only_environment_file(rendered):
    for name in ("plain", "ipv6", "privileged_tls", "hostile_args"):
        case, data = _ok(rendered, name)
        assert sd.env_file(case["sglang-gateway.env"]) == {"LLMSERVE_SMG_ADMIN_API_KEY": ADMIN_KEY,
                                                           "LLMSERVE_SMG_API_KEY": WORKER_KEY}
        unit = case["sglang-gateway.service"]
        for key in (ADMIN_KEY, WORKER_KEY):
            assert key not in unit and key not in " ".join(data["argv"])
    # nothing Ansible printed holds a key: the collection of the workers, the cfg and the render are no_log
    output = rendered["output"]
    for key in (ADMIN_KEY, WORKER_KEY, "0123456789abcdef\\nExecStartPre"):
        assert key not in output and json.dumps(key)[1:-1] not in output


def _start_like_the_unit(case, tmp_path):
    """The launcher started as systemd starts the rendered unit (ExecStart='s flags, Environment=, and the key file
    as an EnvironmentFile= or a LoadCredential=, whichever the unit names), with the smg stand-in; the python and
    the launcher are this checkout's. Returns (process, report path)."""
    unit = case["sglang-gateway.service"]
    files = {"/etc/sglang-gateway/sglang-gateway.env": case["sglang-gateway.env"]}
    report = str(tmp_path / "launched.json")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": smg_stub.make_stub(tmp_path / "stub"), "SMG_STUB_REPORT": report}
    env.update(_environment(unit))
    for path in sd.values(unit, "EnvironmentFile"):
        env.update(sd.env_file(files[path.lstrip("-")]))
    credentials = tmp_path / "credentials"
    for value in sd.values(unit, "LoadCredential"):
        name, path = value.split(":", 1)
        credentials.mkdir(mode=0o700, exist_ok=True)
        (credentials / name).write_text(files[path], encoding="utf-8")
        env["CREDENTIALS_DIRECTORY"] = str(credentials)
    argv = sd.exec_argv(sd.values(unit, "ExecStart")[0])
    assert argv[1:3] == ["-I", "/etc/sglang-gateway/smg_launch.py"]
    return smg_stub.start(argv[3:], env, report), report


def test_the_keys_are_not_in_the_running_launchers_environ_or_cmdline(rendered, tmp_path):
    """/proc/<pid>/environ keeps the environment a process started with, even after it removed a variable: the keys
    must never be in it (nor in the command line), and smg must still receive both."""
    case = _ok(rendered, "hostile_args")[0]
    proc, report = _start_like_the_unit(case, tmp_path)
    try:
        assert os.path.exists(report), "the launcher did not start smg: %s" % proc.communicate(timeout=30)[1]
        environ = smg_stub.proc_file(proc.pid, "environ")
        cmdline = smg_stub.proc_file(proc.pid, "cmdline")
        assert b"SMG_STUB_REPORT=" in environ  # the right process, and its environ is readable
        for key in (ADMIN_KEY, WORKER_KEY):
            assert key.encode() not in environ, "a key is in /proc/%d/environ" % proc.pid
            assert key.encode() not in cmdline, "a key is in /proc/%d/cmdline" % proc.pid
        with open(report, encoding="utf-8") as handle:
            received = json.load(handle)
        assert received["api_key"] == WORKER_KEY
        expected = [["llmserve-admin", "llmserve.sglang gateway role", ADMIN_KEY, "admin"]]
        assert received["control_plane_api_keys"] == expected
    finally:
        proc.kill()
        proc.communicate(timeout=30)


def test_privileged_port_keeps_only_net_bind_service(rendered):
    unit = _ok(rendered, "privileged_tls")[0]["sglang-gateway.service"]
    assert sd.values(unit, "CapabilityBoundingSet") == ["CAP_NET_BIND_SERVICE"]
    assert sd.values(unit, "AmbientCapabilities") == ["CAP_NET_BIND_SERVICE"]
    plain = _ok(rendered, "plain")[0]["sglang-gateway.service"]
    assert sd.values(plain, "CapabilityBoundingSet") == [""] and sd.values(plain, "AmbientCapabilities") == [""]


@pytest.mark.parametrize("name", sorted(FAILING))
def test_refusals_happen_before_anything_is_written(rendered, name):
    case = rendered["cases"][name]
    assert "error.txt" in case, "rendered although it must fail: %r" % case.get("sglang-gateway.service")
    assert FAILING[name] in case["error.txt"], case["error.txt"]
    assert not [t for t in TEMPLATES if t in case], "a file was written before the failure"
    for key in (ADMIN_KEY, WORKER_KEY, "0123456789abcdef"):
        assert key not in case["error.txt"]


needs_systemd_analyze = pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                                           reason="systemd-analyze is not installed here")


@needs_systemd_analyze
@pytest.mark.parametrize("name", ["plain", "ipv6", "privileged_tls", "hostile_args"])
def test_systemd_analyze_verify_accepts_the_unit(rendered, tmp_path, name):
    unit = tmp_path / "sglang-gateway.service"
    unit.write_text(_ok(rendered, name)[0]["sglang-gateway.service"], encoding="utf-8")
    result = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, check=False,
                            timeout=120)
    assert result.returncode == 0 and not (result.stdout + result.stderr).strip(), result.stdout + result.stderr


@needs_systemd_analyze
@pytest.mark.parametrize("name", ["plain", "privileged_tls"])
def test_exposure_level_at_most_2_5(rendered, tmp_path, name):
    unit = tmp_path / "sglang-gateway.service"
    unit.write_text(_ok(rendered, name)[0]["sglang-gateway.service"], encoding="utf-8")
    result = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--no-pager", str(unit)],
                            capture_output=True, text=True, check=False, timeout=120)
    match = re.search(r"Overall exposure level for \S+: ([0-9.]+)", result.stdout)
    if match is None:
        pytest.skip("systemd-analyze security --offline is not supported here: %s" % result.stderr.strip()[-300:])
    assert float(match.group(1)) <= 2.5, result.stdout[-4000:]


def test_example_inventory_gateway(tmp_path):
    """inventories/example: the gateway host in front of gpu-node-01, its keys from the two vaults."""
    inventory = os.path.join(ROOT, "inventories", "example")
    out = str(tmp_path)
    play = _play("example", {}, out, "/opt/sglang-gateway/venv")
    play["hosts"] = "sglang_gateways"
    del play["vars"]["sglang_gateway_admin_api_key"], play["vars"]["sglang_gateway_workers_group"]
    result = _run_playbook(out, inventory, [play], ["--vault-password-file",
                                                    os.path.join(inventory, "vault-password.example.txt"),
                                                    # rendered here, as whoever runs the tests (make check: any
                                                    # user), not through the inventory's sudo
                                                    "-e", "ansible_connection=local", "-e", "ansible_become=false"])
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    case = _read(os.path.join(out, "example"))
    assert "error.txt" not in case, case.get("error.txt")
    data = json.loads(case["rendered.json"])
    # gpu-node-01 serves alone; gpu-node-02 is rank 0 of the two-node server (gpu-node-03, rank 1, serves no API)
    assert data["worker_urls"] == ["http://gpu-node-01.example.internal:30000",
                                   "http://gpu-node-02.example.internal:30000"]
    secrets = sd.env_file(case["sglang-gateway.env"])
    assert set(secrets) == {"LLMSERVE_SMG_ADMIN_API_KEY", "LLMSERVE_SMG_API_KEY"}
    assert all(value and not value.startswith("{{") for value in secrets.values())
    for value in secrets.values():
        assert value not in case["sglang-gateway.service"] and value not in result.stdout
    with open(os.path.join(inventory, "group_vars", "sglang_gateways", "main.yml"), encoding="utf-8") as handle:
        assert yaml.safe_load(handle)["sglang_gateway_host"] in data["argv"]
