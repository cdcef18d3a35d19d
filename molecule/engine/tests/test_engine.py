"""The REAL SGLang 0.5.23 (CPU) deployed by sglang_server: unprivileged, hardened, gated, secrets kept secret."""

import json
import os
import pathlib
import re

API_KEY = "engine-secret-key-7c3a90"

# Runs inside the container; the key is read from the role's --config file, so it never shows up in
# the argv of this probe either.
PROBE = r"""python3 - <<'EOF'
import urllib.request, urllib.error
key = None
if %(auth)r:
    for line in open('/etc/sglang/sglang.yaml'):
        if line.startswith('api-key:'):
            value = line.split(':', 1)[1].strip()
            key = value[1:-1] if value[:1] in ('"', "'") else value
req = urllib.request.Request('http://127.0.0.1:30000%(path)s')
if key:
    req.add_header('Authorization', 'Bearer ' + key)
try:
    r = urllib.request.urlopen(req, timeout=20)
    print(r.status)
    print(r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code)
EOF"""


def assert_key_absent(text, where):
    # a boolean, so that a failure does not print the text (and with it the key) into the log
    leaked = API_KEY in text
    assert not leaked, "the API key is in %s" % where


def get(host, path, auth=False):
    lines = host.check_output(PROBE % {"path": path, "auth": auth}).splitlines()
    return int(lines[0]), "\n".join(lines[1:])


def unit_pids(host):
    main = host.check_output("systemctl show -p MainPID --value sglang")
    pids = host.check_output("pgrep -u sglang || true").split()
    return main, pids


def test_real_server_runs_unprivileged_under_systemd(host):
    svc = host.service("sglang")
    assert svc.is_running and svc.is_enabled
    main, pids = unit_pids(host)
    assert main != "0" and main in pids
    uid = host.check_output("awk '/^Uid:/ {print $2}' /proc/%s/status" % main)
    assert uid != "0" and uid == host.check_output("id -u sglang")
    # the real engine's worker processes, named by setproctitle
    names = host.check_output("ps -o args= -u sglang")
    assert "sglang::scheduler" in names and "sglang::detokenizer" in names
    cmdline = host.file("/proc/%s/cmdline" % main).content_string.replace("\0", " ")
    # the virtualenv of this install spec (one per spec, so a rollback restores the code with the unit)
    assert re.search(r"/opt/sglang/venv-0\.5\.23-[0-9a-f]{12}/bin/python -m sglang\.launch_server", cmdline), cmdline
    assert host.file("/opt/sglang/venv").is_symlink
    assert "--device cpu" in cmdline and "--max-total-tokens 8192" in cmdline


def test_hardened_unit_in_force(host):
    unit = host.file("/etc/systemd/system/sglang.service").content_string
    for line in ("NoNewPrivileges=yes", "ProtectSystem=strict", "CapabilityBoundingSet=", "PrivateTmp=yes",
                 "SystemCallFilter=@system-service", "DevicePolicy=closed"):
        assert line in unit
    props = host.check_output("systemctl show -p NoNewPrivileges -p ProtectSystem -p PrivateTmp sglang")
    assert "NoNewPrivileges=yes" in props and "ProtectSystem=strict" in props and "PrivateTmp=yes" in props
    out = host.check_output("systemd-analyze security --no-pager sglang.service | tail -n 1")
    assert float(out.split(":")[1].split()[0]) <= 2.0, out


def test_api_key_absent_from_cmdline_unit_and_journal(host):
    main, pids = unit_pids(host)
    for pid in pids:
        cmdline = host.run("cat /proc/%s/cmdline" % pid).stdout
        assert_key_absent(cmdline, "/proc/%s/cmdline" % pid)
    assert "--config /etc/sglang/sglang.yaml" in host.file("/proc/%s/cmdline" % main).content_string.replace("\0", " ")
    everything = host.run("cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '").stdout
    assert "sglang.launch_server" in everything
    assert_key_absent(everything, "a process command line")
    assert_key_absent(host.file("/etc/systemd/system/sglang.service").content_string, "the unit file")
    journal = host.check_output("journalctl --no-pager -o cat")
    assert "The server is fired up and ready to roll" in journal  # the real engine's log is there
    assert_key_absent(journal, "the journal")
    # SGLang logs its arguments with the key; the role's log hook masked it in every invocation
    starts = journal.count("server_args={")
    assert starts >= 3 and journal.count("'api_key': '<redacted>'") == starts
    assert API_KEY in host.file("/etc/sglang/sglang.yaml").content_string


def test_api_key_absent_from_verbose_ansible_output():
    log = pathlib.Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "ansible-vvv.log"
    text = log.read_text()
    assert "llmserve.sglang.sglang_server : Stage the --config file" in text
    assert "PODMAN EXEC" in text and "Rolled back" in text
    assert_key_absent(text, "the -vvv Ansible log")


def test_health_and_ready_open_everything_else_gated(host):
    assert get(host, "/health")[0] == 200
    assert get(host, "/ready")[0] == 200
    assert get(host, "/v1/models")[0] == 401
    status, body = get(host, "/v1/models", auth=True)
    assert status == 200
    assert [m["id"] for m in json.loads(body)["data"]] == ["tiny-llama"]


def test_it_is_the_real_engine(host):
    status, body = get(host, "/server_info", auth=True)
    assert status == 200
    info = json.loads(body)
    assert info["version"] == "0.5.23"
    assert info["device"] == "cpu"
    assert info["max_total_tokens"] == 8192
    assert info["speculative_algorithm"] is None  # the rolled-back (good) configuration


def test_only_the_live_servers_shm_file_is_left(host):
    # Every SGLang start creates /dev/shm/sglang_loads_*.shm and never removes it; the unit's
    # RemoveIPC=yes drops the service user's IPC objects at each stop. Three invocations ran here
    # (converge, the crashed one, the rollback): only the live server's file may remain.
    owners = host.check_output("find /dev/shm -maxdepth 1 -name 'sglang_loads_*' -printf '%u\\n'").split()
    assert owners == ["sglang"]
