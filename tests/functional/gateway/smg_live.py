# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Helpers for the live tests of the sglang_gateway role: the REAL smg 1.13.0 on loopback in front of SGLang
stand-ins, started the way the role's unit starts it.

* The venv: ``LLMSERVE_SMG_VENV``, else ``$LLMSERVE_CACHE/venv-smg`` when it exists (built by
  ``tools/gateway/install_smg_venv.sh``, ``make gateway-assets``); otherwise the tests skip.
* The command line: the role's variables (its defaults and the test's, templated with Ansible) turned into the rules'
  input as the role's action llmserve.sglang.gateway_config does (``gateway_role.build_config``), then
  ``render_gateway``. The process gets ``ExecStart``'s argv (``python -I smg_launch.py ...``), the
  unit's ``Environment=`` and, as systemd's ``LoadCredential=smg-keys:...`` gives them, the keys in a credentials
  directory (``CREDENTIALS_DIRECTORY``), nothing else.
* Where this machine allows it, smg runs under what the unit enforces that can be had without systemd: a read-only
  file system (``unshare``), the service account's lack of privileges (``setpriv``: uid/gid 65534, no groups, no
  capabilities, no_new_privs) and ``MemoryDenyWriteExecute=`` (the kernel's ``PR_SET_MDWE``, kept across exec).
"""

from __future__ import annotations

import atexit
import ctypes
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "sglang_gateway")
# The launcher in the checkout; smg runs confined as uid 65534, which may not traverse the checkout's parents (a
# clone in root's home directory), so the process gets launcher_copy() instead.
LAUNCHER_SOURCE = os.path.join(ROLE, "files", "smg_launch.py")
STANDIN_SRC = os.path.join(ROOT, "tools", "standin", "src")
PR_SET_MDWE = 65
PR_MDWE_REFUSE_EXEC_GAIN = 1


def unreadable_by_others(path):
    """The first directory on the way to ``path`` (itself included) that an unprivileged account cannot pass
    (no o+x), or ``None``."""
    path = os.path.abspath(path)
    parts = path.split(os.sep)
    for depth in range(2, len(parts) + 1):
        current = os.sep.join(parts[:depth]) or os.sep
        try:
            mode = os.stat(current).st_mode
        except OSError:
            return current
        if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
            return current
    return None


_LAUNCHER_COPY = []


def launcher_copy():
    """The role's smg_launch.py copied into a directory made for the service account (0755 under the system's
    temporary directory, the file 0644), as the role installs it on a host. Made once per test process."""
    if not _LAUNCHER_COPY:
        directory = tempfile.mkdtemp(prefix="llmserve-smg-launch-", dir=tempfile.gettempdir())
        os.chmod(directory, 0o755)
        target = os.path.join(directory, "smg_launch.py")
        shutil.copyfile(LAUNCHER_SOURCE, target)
        os.chmod(target, 0o644)
        atexit.register(shutil.rmtree, directory, True)
        blocked = unreadable_by_others(directory)
        if blocked:
            raise RuntimeError("the launcher's copy %s is not reachable by the service account: %s has no o+x "
                               "(TMPDIR=%s)" % (target, blocked, tempfile.gettempdir()))
        _LAUNCHER_COPY.append(target)
    return _LAUNCHER_COPY[0]


def smg_venv():
    """(path, reason): the smg venv to use, or None and why the tests skip."""
    named = os.environ.get("LLMSERVE_SMG_VENV", "")
    if named:
        return named, None
    default = os.path.join(os.environ.get("LLMSERVE_CACHE", "/var/cache/llmserve"), "venv-smg")
    if os.path.exists(os.path.join(default, "bin", "python")):
        return default, None
    return None, ("no smg venv: LLMSERVE_SMG_VENV is unset and %s does not exist; build it with "
                  "tools/gateway/install_smg_venv.sh (make gateway-assets)" % default)


def free_port(family=socket.AF_INET, host="127.0.0.1"):
    with socket.socket(family) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def role_cfg(variables, workers, inventory_hostname="gateway-test", ansible_host="127.0.0.1"):
    """The gateway rules' input as the role's action builds it (``gateway_role.build_config``), from the role's
    variables (defaults + vars/main.yml + ``variables``, templated with Ansible) and the given workers."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.gateway_role import CONFIG_VARIABLES, build_config

    loader = DataLoader()
    values = dict(loader.load_from_file(os.path.join(ROLE, "defaults", "main.yml"), trusted_as_template=True))
    values.update(loader.load_from_file(os.path.join(ROLE, "vars", "main.yml"), trusted_as_template=True))
    values.update(variables)
    values.update({"inventory_hostname": inventory_hostname, "ansible_host": ansible_host})
    templar = Templar(loader=loader, variables=values)
    resolved = dict((name, templar.resolve_variable_expression(name)) for _key, name in CONFIG_VARIABLES)
    return build_config(resolved, workers, inventory_hostname, ansible_host)


def render(variables, workers, **kwargs):
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.gateway_config import render_gateway

    return render_gateway(role_cfg(variables, workers, **kwargs))


def http(method, url, key=None, body=None, timeout=10):
    """(status, text) of one request; never raises for HTTP errors."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if key is not None:
        request.add_header("Authorization", "Bearer %s" % key)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, answer.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError) as exc:
        return -1, str(exc)


def stop_group(proc, timeout):
    """SIGTERM to the process group ``proc`` leads (started with start_new_session), SIGKILL what is left after
    ``timeout``. The group, not the pid: a wrapper such as strace detaches on SIGTERM and leaves its child running."""
    def signal_group(signum):
        try:
            os.killpg(proc.pid, signum)
            return True
        except ProcessLookupError:
            return False

    if not signal_group(signal.SIGTERM):
        proc.wait()
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None and not signal_group(0):
            return
        time.sleep(0.05)
    signal_group(signal.SIGKILL)
    proc.wait()


def wait_for(predicate, timeout, every=0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    return predicate()


class StandinWorker(object):
    """One SGLang stand-in (tools/standin), with an API key unless ``api_key`` is empty, ready at once; ``extra_env``
    adds stand-in settings (e.g. ``LLMSERVE_STANDIN_TOKEN_SECONDS``)."""

    def __init__(self, tmp, index, api_key, host="127.0.0.1", extra_env=None):
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.host = host
        self.port = free_port(family, host)
        self.events = os.path.join(str(tmp), "worker-%d.events.jsonl" % index)
        self.log = open(os.path.join(str(tmp), "worker-%d.log" % index), "w")
        env = dict(os.environ, PYTHONPATH=STANDIN_SRC, LLMSERVE_STANDIN_LOAD_SECONDS="0",
                   LLMSERVE_STANDIN_WARMUP_SECONDS="0", LLMSERVE_STANDIN_HEALTH_SECONDS="0.05",
                   LLMSERVE_STANDIN_EVENT_LOG=self.events)
        env.update(extra_env or {})
        env.pop("PYTHONHOME", None)
        argv = ["python3", "-m", "sglang.launch_server", "--model-path", "standin-model", "--host", host,
                "--port", str(self.port)] + (["--api-key", api_key] if api_key else [])
        self.proc = subprocess.Popen(argv, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        host_part = "[%s]" % host if ":" in host else host
        self.url = "http://%s:%d" % (host_part, self.port)

    def requests(self, path):
        if not os.path.exists(self.events):
            return []
        with open(self.events) as handle:
            events = [json.loads(line) for line in handle if line.strip()]
        return [e for e in events if e.get("event") == "request" and e.get("path", "").split("?")[0] == path]

    def stop(self):
        stop_group(self.proc, 10)
        if not self.log.closed:
            self.log.close()


def _mdwe_supported():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        pid = os.fork()
        if pid == 0:  # try it in a child: the setting cannot be undone
            os._exit(0 if libc.prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) == 0 else 1)
        return os.waitpid(pid, 0)[1] == 0
    except OSError:
        return False


def _set_mdwe():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_MDWE)")


def unit_like_wrapper():
    """(argv prefix, preexec_fn, applied): what of the unit's confinement this machine can apply without systemd.

    As root: a private mount namespace whose root file system and /dev/shm are read-only (ProtectSystem=strict; the
    unit gives smg no writable path), then uid/gid 65534 without groups, capabilities or new privileges (the service
    account, CapabilityBoundingSet=, NoNewPrivileges=). Anywhere the kernel has it: PR_SET_MDWE
    (MemoryDenyWriteExecute=), set before exec and kept across it.
    """
    prefix, applied = [], []
    if os.geteuid() == 0 and shutil.which("unshare"):
        prefix += ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                   "mount -o remount,bind,ro / && mount -t tmpfs -o ro,size=64k tmpfs /dev/shm && exec \"$@\"", "sh"]
        applied.append("read-only root and /dev/shm (unshare)")
    if os.geteuid() == 0 and shutil.which("setpriv"):
        prefix += ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--no-new-privs",
                   "--inh-caps=-all", "--bounding-set=-all", "--"]
        applied.append("uid 65534 without capabilities (setpriv)")
    preexec = None
    if _mdwe_supported():
        preexec = _set_mdwe
        applied.append("MemoryDenyWriteExecute (PR_SET_MDWE)")
    return prefix, preexec, applied


def credentials(keys):
    """A credentials directory as systemd's ``LoadCredential=smg-keys:<file>`` makes it: the file ``smg-keys`` with
    ``keys`` in the role's EnvironmentFile syntax, the directory and the file readable by the service account only
    (uid 65534 when this runs as root, else this user). Returns the directory."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.systemd_unit import unit_value

    directory = tempfile.mkdtemp(prefix="llmserve-smg-credentials-", dir=tempfile.gettempdir())
    atexit.register(shutil.rmtree, directory, True)
    path = os.path.join(directory, "smg-keys")
    with open(path, "w", encoding="utf-8") as handle:
        for name, value in keys.items():
            handle.write(unit_value("%s=%s" % (name, value), "env_file", name) + "\n")
    os.chmod(path, 0o400)
    os.chmod(directory, 0o500)
    if os.geteuid() == 0:
        for item in (path, directory):
            os.chown(item, 65534, 65534)
    return directory


def unit_command(venv, rendered):
    """(argv, env) as the unit gives them: ExecStart=, Environment= and the keys as the credential smg-keys."""
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    env.update(rendered["env"])
    env["CREDENTIALS_DIRECTORY"] = credentials(rendered["env_file"])
    return [os.path.join(venv, "bin", "python"), "-I", launcher_copy()] + rendered["argv"], env


class Gateway(object):
    """smg started like the role's unit starts it: ``python -I smg_launch.py <argv>`` with the unit's environment."""

    def __init__(self, tmp, venv, rendered, name="smg", confine=True, wrapper=(), watch_cmdline=True):
        self.rendered = rendered
        self.log_path = os.path.join(str(tmp), "%s.log" % name)
        self.log = open(self.log_path, "w")
        self.command, env = unit_command(venv, rendered)
        prefix, preexec, self.confinement = unit_like_wrapper() if confine else ([], None, [])
        blocked = unreadable_by_others(venv) if "setpriv" in prefix else None
        if blocked:
            raise RuntimeError("the smg venv %s cannot be run as uid 65534: %s has no o+x; build it under a directory "
                               "others may traverse (LLMSERVE_SMG_VENV, LLMSERVE_CACHE)" % (venv, blocked))
        self.proc = subprocess.Popen(list(wrapper) + prefix + self.command, env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT, cwd="/", preexec_fn=preexec, start_new_session=True)
        # /proc/<pid>/cmdline from the first moment on (before smg renames its process title)
        self.cmdlines = set()
        # /proc/<pid>/environ too: smg's process title later overwrites that memory (it then reads as NULs)
        self.environs = set()
        if watch_cmdline:
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline and self.proc.poll() is None:
                self.cmdlines.update(self._cmdlines())
                self.environs.add(self.environ())
                time.sleep(0.005)

    def environ(self):
        try:
            with open("/proc/%d/environ" % self.proc.pid, "rb") as handle:
                return handle.read()
        except OSError:
            return b""

    def _cmdlines(self):
        found = []
        for path in (["/proc/%d/cmdline" % self.proc.pid]
                     + ["/proc/%d/task/%s/cmdline" % (self.proc.pid, t) for t in self._tasks()]):
            try:
                with open(path, "rb") as handle:
                    found.append(handle.read())
            except OSError:
                pass
        return found

    def _tasks(self):
        try:
            return os.listdir("/proc/%d/task" % self.proc.pid)
        except OSError:
            return []

    def output(self):
        self.log.flush()
        with open(self.log_path, encoding="utf-8", errors="replace") as handle:
            return handle.read()

    def stop(self):
        stop_group(self.proc, 30)
        if not self.log.closed:
            self.log.close()
