# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The REAL SGLang model gateway (smg 1.13.0) on 127.0.0.1, started from the command line the sglang_gateway role
renders, in front of two SGLang stand-ins that require an API key.

Proves: a chat completion through the gateway reaches a worker (and needs the key); /readiness, /health and the
Prometheus endpoint answer; the control plane (worker registration, listing, removal, cache flush, loads,
profiling) refuses callers without the control-plane key, and the workers' key, while the control-plane key works;
neither key is ever in smg's /proc/<pid>/cmdline, its /proc/<pid>/environ or its log; the launcher refuses to start without the control-plane
key and refuses keys on the command line; the syscalls and socket families of a serving run fit the unit's
SystemCallFilter= and RestrictAddressFamilies=; an IPv6 gateway and worker work with the bracketed URLs.

Needs the smg venv (see smg_live.smg_venv); about 30 s.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess

import pytest

from ansible_collections.llmserve.sglang.tests.functional.gateway import smg_live as live

VENV, SKIP_REASON = live.smg_venv()
pytestmark = pytest.mark.skipif(VENV is None, reason=SKIP_REASON or "")

WORKER_KEY = "sk-worker-$shared%key\"quote`tick\\"
ADMIN_KEY = "adm-7f3c9a1e5b2d4c6e8a0f'$x%"
CHAT = {"model": "standin-model", "messages": [{"role": "user", "content": "The capital of France?"}],
        "max_tokens": 4}


def _worker_entry(name, worker):
    return {"name": name, "host": worker.host, "port": worker.port, "args": {}, "api_key": WORKER_KEY,
            "ansible_host": "::1" if ":" in worker.host else "127.0.0.1", "ipv4": "", "ipv6": ""}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gateway")
    workers = [live.StandinWorker(tmp, i, WORKER_KEY) for i in range(2)]
    gateway = None
    try:
        for worker in workers:
            assert live.wait_for(lambda w=worker: live.http("GET", w.url + "/health")[0] == 200, 20), \
                "stand-in on %s did not come up" % worker.url
        variables = {
            "sglang_gateway_host": "127.0.0.1",
            "sglang_gateway_port": live.free_port(),
            "sglang_gateway_metrics_port": live.free_port(),
            "sglang_gateway_health_check_interval": 1,
            "sglang_gateway_shutdown_grace_period": 2,
            "sglang_gateway_admin_api_key": ADMIN_KEY,
            # the workers' key comes from their sglang_server_api_key (the role's default "")
        }
        rendered = live.render(variables, [_worker_entry("w%d" % i, w) for i, w in enumerate(workers)])
        gateway = live.Gateway(tmp, VENV, rendered)
        ready = live.wait_for(lambda: live.http("GET", rendered["readiness_url"])[0] == 200
                              and json.loads(live.http("GET", rendered["readiness_url"])[1]).get("healthy_workers") == 2
                              or gateway.proc.poll() is not None, 60)
        assert ready and gateway.proc.poll() is None, "smg did not become ready:\n%s" % gateway.output()[-4000:]
        yield {"gateway": gateway, "workers": workers, "rendered": rendered, "tmp": tmp}
    finally:
        if gateway is not None:
            gateway.stop()
        for worker in workers:
            worker.stop()


def test_rendered_command_line_holds_no_secret(fleet):
    rendered = fleet["rendered"]
    joined = "\0".join(rendered["argv"])
    assert WORKER_KEY not in joined and ADMIN_KEY not in joined
    assert rendered["env_file"] == {"LLMSERVE_SMG_ADMIN_API_KEY": ADMIN_KEY, "LLMSERVE_SMG_API_KEY": WORKER_KEY}
    assert rendered["worker_urls"] == [w.url for w in fleet["workers"]]


def test_chat_completion_through_the_gateway_reaches_a_worker(fleet):
    base = fleet["rendered"]["base_url"]
    before = len([r for w in fleet["workers"] for r in w.requests("/v1/chat/completions") if r["status"] == 200])
    status, text = live.http("POST", base + "/v1/chat/completions", WORKER_KEY, CHAT)
    assert status == 200, text
    answer = json.loads(text)
    assert answer["choices"][0]["message"]["content"] == " Paris."
    # a stand-in records a request once its answer is written, which may be just after the client has read it
    assert live.wait_for(lambda: len([r for w in fleet["workers"] for r in w.requests("/v1/chat/completions")
                                      if r["status"] == 200]) == before + 1, 5), \
        "the stand-ins did not record the routed request"


def test_gateway_clients_need_the_key(fleet):
    base = fleet["rendered"]["base_url"]
    assert live.http("POST", base + "/v1/chat/completions", None, CHAT)[0] == 401
    assert live.http("POST", base + "/v1/chat/completions", ADMIN_KEY, CHAT)[0] == 401


def test_readiness_health_and_metrics_answer(fleet):
    rendered = fleet["rendered"]
    status, text = live.http("GET", rendered["readiness_url"])
    assert status == 200 and json.loads(text) == {"status": "ready", "healthy_workers": 2, "total_workers": 2}
    assert live.http("GET", rendered["base_url"] + "/health")[0] == 200
    assert live.http("GET", rendered["base_url"] + "/liveness")[0] == 200
    status, text = live.http("GET", rendered["metrics_url"])
    assert status == 200 and "smg_http_responses_total" in text
    # the workers are probed on the configured endpoint at the configured interval (1 s here)
    assert all(len(w.requests("/health")) >= 2 for w in fleet["workers"])


def test_the_workers_are_registered_and_healthy(fleet):
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.gateway_config import workers_check

    status, text = live.http("GET", fleet["rendered"]["workers_url"], ADMIN_KEY)
    assert status == 200, text
    urls = fleet["rendered"]["worker_urls"]
    assert workers_check(json.loads(text)["workers"], urls) == {
        "missing": [], "unhealthy": [], "extra": [], "ok": True, "states": {url: "healthy" for url in urls}}
    assert WORKER_KEY not in text and ADMIN_KEY not in text


CONTROL_CALLS = [("GET", "/workers", None), ("GET", "/get_loads", None), ("POST", "/flush_cache", None),
                 ("POST", "/start_profile", {}), ("GET", "/wasm", None)]


@pytest.mark.parametrize("method,path,body", CONTROL_CALLS)
@pytest.mark.parametrize("key", [None, "worker", "wrong"])
def test_control_plane_refuses_calls_without_the_control_plane_key(fleet, method, path, body, key):
    token = {None: None, "worker": WORKER_KEY, "wrong": ADMIN_KEY + "x"}[key]
    status, text = live.http(method, fleet["rendered"]["base_url"] + path, token, body)
    assert status == 401, "%s %s with key=%s answered %s: %s" % (method, path, key, status, text[:300])


@pytest.mark.parametrize("method,path,body", CONTROL_CALLS[:4])
def test_control_plane_accepts_the_control_plane_key(fleet, method, path, body):
    status, text = live.http(method, fleet["rendered"]["base_url"] + path, ADMIN_KEY, body)
    # flush_cache/start_profile answer 206 (the stand-ins do not implement them): the call got past the auth
    assert status in (200, 206), "%s %s: %s %s" % (method, path, status, text[:300])


def test_worker_registration_needs_the_control_plane_key(fleet):
    """A third worker: refused without the key and with the workers' key, registered and removed with it."""
    base = fleet["rendered"]["base_url"]
    extra = live.StandinWorker(fleet["tmp"], 9, WORKER_KEY)
    try:
        assert live.wait_for(lambda: live.http("GET", extra.url + "/health")[0] == 200, 20)
        body = {"url": extra.url, "api_key": WORKER_KEY}
        assert live.http("POST", base + "/workers", None, body)[0] == 401
        assert live.http("POST", base + "/workers", WORKER_KEY, body)[0] == 401

        def listed():
            return [w for w in json.loads(live.http("GET", base + "/workers", ADMIN_KEY)[1])["workers"]
                    if w["url"] == extra.url]

        assert not listed() and not extra.requests("/v1/models"), "an unauthenticated registration reached the worker"
        status, text = live.http("POST", base + "/workers", ADMIN_KEY, body)
        assert status == 202, text
        found = live.wait_for(lambda: [w for w in listed() if w["is_healthy"]], 30)
        assert found, "the registered worker did not become healthy: %s" % listed()
        worker_id = found[0]["id"]
        assert live.http("DELETE", base + "/workers/" + worker_id, None)[0] == 401
        assert live.http("DELETE", base + "/workers/" + worker_id, WORKER_KEY)[0] == 401
        assert live.http("DELETE", base + "/workers/" + worker_id, ADMIN_KEY)[0] == 202
        assert live.wait_for(lambda: not listed(), 30), "the worker was not removed"
    finally:
        extra.stop()


def test_secrets_are_not_in_the_command_line_or_the_log(fleet):
    gateway = fleet["gateway"]
    current = set(gateway._cmdlines())
    seen = gateway.cmdlines | current
    assert current, "could not read /proc/%d/cmdline" % gateway.proc.pid
    # sampled from the spawn on: the launcher's own argv before smg renames the process, then smg's title
    assert any(b"smg_launch.py" in c for c in gateway.cmdlines), gateway.cmdlines
    for cmdline in seen:
        assert WORKER_KEY.encode() not in cmdline and ADMIN_KEY.encode() not in cmdline, cmdline
    # /proc/<pid>/environ, sampled from the spawn on (before smg's process title overwrites it) and now: the keys
    # came as a credential, never through the environment
    environs = gateway.environs | {gateway.environ()}
    assert any(b"CREDENTIALS_DIRECTORY=" in environ for environ in environs), environs
    for environ in environs:
        assert WORKER_KEY.encode() not in environ and ADMIN_KEY.encode() not in environ
    output = gateway.output()
    assert "control_plane_audit" in output  # the audit log is on, and it names the key's id, not the key
    assert WORKER_KEY not in output and ADMIN_KEY not in output


def test_the_gateway_ran_confined_like_the_unit(fleet):
    gateway = fleet["gateway"]
    if not gateway.confinement:
        pytest.skip("neither unshare/setpriv (as root) nor PR_SET_MDWE is available here")
    pid = gateway.proc.pid
    with open("/proc/%d/status" % pid) as handle:
        status = dict(line.split(":", 1) for line in handle if ":" in line)
    if any("setpriv" in c for c in gateway.confinement):
        assert status["Uid"].split()[0] == "65534" and status["CapEff"].strip() == "0000000000000000"
        assert status["CapBnd"].strip() == "0000000000000000" and status["NoNewPrivs"].strip() == "1"
    if any("unshare" in c for c in gateway.confinement):
        with open("/proc/%d/mountinfo" % pid) as handle:
            mounts = {fields[4]: fields[5].split(",") for fields in (line.split() for line in handle)}
        assert "ro" in mounts["/"] and "ro" in mounts["/dev/shm"], mounts
        assert "/dev/shm is not writable" in gateway.output()  # smg noticed, and serves all the same


def _launch(keys, argv, timeout=60):
    """The launcher with ``keys`` (None: no credential at all) as the credential smg-keys."""
    env = {"PATH": "/usr/bin:/bin"}
    if keys is not None:
        env["CREDENTIALS_DIRECTORY"] = live.credentials(keys)
    return subprocess.run([os.path.join(VENV, "bin", "python"), "-I", live.launcher_copy()] + argv,
                          env=env, capture_output=True, text=True, timeout=timeout, check=False)


def test_launcher_check_accepts_the_rendered_command_line(fleet):
    result = _launch(None, ["--check"] + fleet["rendered"]["argv"])
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.strip().splitlines()[-1])["worker_urls"] == fleet["rendered"]["worker_urls"]
    result = _launch(None, ["--check"] + fleet["rendered"]["argv"] + ["--polcy", "random"])
    assert result.returncode == 2 and "unrecognized arguments: --polcy random" in result.stderr


@pytest.mark.parametrize("secret_args", [["--api-key", "x"], ["--api-k", "x"],
                                         ["--control-plane-api-keys", "a:b:admin:x"], ["--tenant-api-key", "t:x"]])
def test_launcher_refuses_secrets_on_the_command_line(secret_args):
    port = live.free_port()
    argv = ["--host", "127.0.0.1", "--port", str(port), "--prometheus-port", str(live.free_port())] + secret_args
    result = _launch({"LLMSERVE_SMG_ADMIN_API_KEY": ADMIN_KEY}, argv)
    assert result.returncode == 2 and "refusing secrets on the command line" in result.stderr, result.stderr[-1000:]
    assert ADMIN_KEY not in result.stderr + result.stdout


def test_launcher_refuses_to_start_without_the_control_plane_key():
    port = live.free_port()
    result = _launch({"LLMSERVE_SMG_API_KEY": WORKER_KEY},
                     ["--host", "127.0.0.1", "--port", str(port), "--prometheus-port", str(live.free_port())])
    assert result.returncode == 2 and "control plane open" in result.stderr
    assert live.http("GET", "http://127.0.0.1:%d/readiness" % port)[0] == -1
    result = _launch({"LLMSERVE_SMG_API_KEY": ADMIN_KEY, "LLMSERVE_SMG_ADMIN_API_KEY": ADMIN_KEY},
                     ["--host", "127.0.0.1", "--port", str(port), "--prometheus-port", str(live.free_port())])
    assert result.returncode == 2 and "are the same key" in result.stderr
    # the keys in the environment (the EnvironmentFile of before) are not taken: they would stay in
    # /proc/<pid>/environ
    result = subprocess.run([os.path.join(VENV, "bin", "python"), "-I", live.launcher_copy(), "--host", "127.0.0.1",
                             "--port", str(port), "--prometheus-port", str(live.free_port())],
                            env={"PATH": "/usr/bin:/bin", "LLMSERVE_SMG_ADMIN_API_KEY": ADMIN_KEY},
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2 and "CREDENTIALS_DIRECTORY is not set" in result.stderr
    assert live.http("GET", "http://127.0.0.1:%d/readiness" % port)[0] == -1


def _in_group(pid, pgid):
    try:
        return os.getpgid(pid) == pgid
    except OSError:
        return False


def _syscall_set(group):
    """The syscalls of a systemd syscall group, nested groups expanded (systemd-analyze syscall-filter)."""
    out = subprocess.run(["systemd-analyze", "syscall-filter", group], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    names = set()
    for line in out.splitlines()[1:]:
        word = line.strip()
        if word.startswith("@"):
            names |= _syscall_set(word)
        elif word and not word.startswith("#"):
            names.add(word)
    return names


def _unit_filter():
    """The allowed syscalls and address families of the role's unit template (its SystemCallFilter= lines)."""
    with open(os.path.join(live.ROLE, "templates", "sglang-gateway.service.j2")) as handle:
        template = handle.read()
    allowed, denied = set(), set()
    for line in re.findall(r"^SystemCallFilter=(.*)$", template, re.M):
        negative = line.startswith("~")
        for group in line.lstrip("~").split():
            (denied if negative else allowed).update(_syscall_set(group))
    (families,) = re.findall(r"^RestrictAddressFamilies=(.*)$", template, re.M)
    return allowed - denied, set(families.split())


@pytest.mark.skipif(not shutil.which("strace") or not shutil.which("systemd-analyze"),
                    reason="needs strace and systemd-analyze")
def test_a_serving_run_stays_inside_the_units_syscall_filter(tmp_path):
    """smg under strace: start, register two workers, serve a chat completion, answer metrics, stop."""
    allowed, families = _unit_filter()
    workers = [live.StandinWorker(tmp_path, i, WORKER_KEY) for i in range(2)]
    gateway = None
    trace = tmp_path / "trace"
    try:
        for worker in workers:
            assert live.wait_for(lambda w=worker: live.http("GET", w.url + "/health")[0] == 200, 20)
        rendered = live.render({"sglang_gateway_port": live.free_port(), "sglang_gateway_metrics_port": live.free_port(),
                                "sglang_gateway_health_check_interval": 1, "sglang_gateway_shutdown_grace_period": 1,
                                "sglang_gateway_admin_api_key": ADMIN_KEY},
                               [_worker_entry("w%d" % i, w) for i, w in enumerate(workers)])
        probe = subprocess.run(["strace", "-o", os.devnull, "true"], capture_output=True, check=False, timeout=30)
        if probe.returncode != 0:
            pytest.skip("strace cannot trace here: %s" % probe.stderr.decode(errors="replace")[-300:])
        gateway = live.Gateway(tmp_path, VENV, rendered, name="smg-traced", confine=False,
                               wrapper=["strace", "-f", "-qq", "-o", str(trace)], watch_cmdline=False)
        assert live.wait_for(lambda: '"healthy_workers":2' in live.http("GET", rendered["readiness_url"])[1]
                             or gateway.proc.poll() is not None, 90), gateway.output()[-3000:]
        assert live.http("POST", rendered["base_url"] + "/v1/chat/completions", WORKER_KEY, CHAT)[0] == 200
        assert live.http("GET", rendered["metrics_url"])[0] == 200
        assert live.http("GET", rendered["workers_url"], ADMIN_KEY)[0] == 200
    finally:
        if gateway is not None:
            gateway.stop()
        for worker in workers:
            worker.stop()
    # strace detaches on SIGTERM; the whole process group was stopped, so smg is gone too
    assert not [pid for pid in os.listdir("/proc") if pid.isdigit() and _in_group(int(pid), gateway.proc.pid)]
    with open(str(trace), errors="replace") as handle:
        text = handle.read()
    used = set(re.findall(r"^\d+\s+([a-z0-9_]+)\(", text, re.M))
    assert {"bind", "listen", "accept4", "connect"} <= used, sorted(used)
    assert used <= allowed, "syscalls outside SystemCallFilter=: %s" % sorted(used - allowed)
    opened = set(re.findall(r"\bsocket(?:pair)?\((AF_[A-Z0-9]+)", text))
    assert opened and opened <= families, "address families outside RestrictAddressFamilies=: %s" % sorted(opened - families)


def _ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6) as sock:
            sock.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback here")
def test_ipv6_gateway_and_worker(tmp_path):
    worker = live.StandinWorker(tmp_path, 0, WORKER_KEY, host="::1")
    gateway = None
    try:
        assert live.wait_for(lambda: live.http("GET", worker.url + "/health")[0] == 200, 20)
        rendered = live.render({"sglang_gateway_host": "::1",
                                "sglang_gateway_port": live.free_port(socket.AF_INET6, "::1"),
                                "sglang_gateway_metrics_port": live.free_port(socket.AF_INET6, "::1"),
                                "sglang_gateway_shutdown_grace_period": 1,
                                "sglang_gateway_admin_api_key": ADMIN_KEY},
                               [_worker_entry("w6", worker)], ansible_host="::1")
        assert rendered["worker_urls"] == ["http://[::1]:%d" % worker.port]
        assert rendered["base_url"].startswith("http://[::1]:")
        gateway = live.Gateway(tmp_path, VENV, rendered, name="smg6", watch_cmdline=False)
        assert live.wait_for(lambda: live.http("GET", rendered["readiness_url"])[0] == 200
                             or gateway.proc.poll() is not None, 60) and gateway.proc.poll() is None, gateway.output()[-3000:]
        status, text = live.http("POST", rendered["base_url"] + "/v1/chat/completions", WORKER_KEY, CHAT)
        assert status == 200, text
        assert live.http("GET", rendered["metrics_url"])[0] == 200
    finally:
        if gateway is not None:
            gateway.stop()
        worker.stop()


def test_a_dead_worker_is_retried_around_and_marked_unhealthy(tmp_path):
    """One of two workers dies: every request still answers 200 (smg retries elsewhere), and after the failure
    threshold of health checks /readiness counts one healthy worker."""
    workers = [live.StandinWorker(tmp_path, i, WORKER_KEY) for i in range(2)]
    gateway = None
    try:
        for worker in workers:
            assert live.wait_for(lambda w=worker: live.http("GET", w.url + "/health")[0] == 200, 20)
        rendered = live.render({"sglang_gateway_port": live.free_port(), "sglang_gateway_metrics_port": live.free_port(),
                                "sglang_gateway_health_check_interval": 1, "sglang_gateway_health_check_timeout": 1,
                                "sglang_gateway_health_failure_threshold": 2, "sglang_gateway_policy": "round_robin",
                                "sglang_gateway_shutdown_grace_period": 1, "sglang_gateway_admin_api_key": ADMIN_KEY},
                               [_worker_entry("w%d" % i, w) for i, w in enumerate(workers)])
        gateway = live.Gateway(tmp_path, VENV, rendered, name="smg-failover", watch_cmdline=False)
        assert live.wait_for(lambda: '"healthy_workers":2' in live.http("GET", rendered["readiness_url"])[1]
                             or gateway.proc.poll() is not None, 60), gateway.output()[-3000:]
        workers[1].stop()
        statuses = [live.http("POST", rendered["base_url"] + "/v1/chat/completions", WORKER_KEY, CHAT)[0]
                    for attempt in range(6)]
        assert statuses == [200] * 6, statuses
        assert live.wait_for(lambda: '"healthy_workers":1' in live.http("GET", rendered["readiness_url"])[1], 30), \
            live.http("GET", rendered["readiness_url"])
        assert len([r for r in workers[0].requests("/v1/chat/completions") if r["status"] == 200]) == 6
    finally:
        if gateway is not None:
            gateway.stop()
        for worker in workers:
            worker.stop()
