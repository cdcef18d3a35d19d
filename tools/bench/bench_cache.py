# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Compile and JIT caches across restarts: two consecutive starts of the real SGLang CPU engine.

    python tools/bench/bench_cache.py --venv VENV --model MODEL [--json out.json] [--workdir DIR]
                                      [--starts 2] [--engine-arg=--flag ...] [--no-strace]

The engine runs with exactly the environment the sglang_server role gives its unit: the role's base environment
(roles/sglang_server/vars/main.yml ``__sglang_server_base_env``) and the cache variables of the declared cache
directory (plugins/plugin_utils/sglang_cache.py, ``<root>/<unit>/<version>/cpu-<machine>``), merged by the role's
own filter code (``sglang_render``); its command line is the one that filter renders for ``device: cpu``. HOME is a
fresh directory like the unit's (root-owned there; here only the cache root is meant to be written), TMPDIR a private
one (what PrivateTmp= gives the unit), the working directory HOME.

Each start: snapshot the watched directories, launch, wait for /health 200, send /generate requests (greedy and
sampled with a seed), SIGTERM the main process, wait, snapshot again. Two sources say what a start wrote:

* strace -ff of the whole process tree (every open for writing, mkdir, rename, link, symlink, unlink, truncate,
  failed ones too): only this engine's writes, wherever they are;
* the snapshot difference (created or modified regular files) of HOME, TMPDIR, the cache root, the model directory,
  /var/tmp, /dev/shm and the invoking user's ~/.cache. /tmp is shared with other work on the machine: it is covered
  by strace alone.

A written path is *declared* when it lies in the declared cache directory or HF_HOME, *runtime* when it lies in the
private TMPDIR (gone at every stop under PrivateTmp=) or is SGLang's /dev/shm/sglang_loads_* or a multiprocessing
semaphore /dev/shm/sem.* (RemoveIPC=), and
*outside* otherwise. Targets: no file outside, at every start; the second start adds or changes no file in the cache
directories (it compiles nothing new). The first start must have written cache entries, or the second check is
vacuous and says so.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "engine"))

import smoke_server  # noqa: E402  pylint: disable=wrong-import-position

UNIT = "sglang"
# The engine exactly as the unit runs it: no extra flags. Measured on SGLang 0.5.23 (docs/benchmarks.md): the CPU
# engine compiles nothing into any cache. Triton has no CPU driver; the seeded sampler that torch.compile would build
# needs --enable-deterministic-inference, which SGLang refuses with the CPU attention backends; and
# --enable-torch-compile (--engine-arg) captured no CPU graph for the tiny model either. The "second start compiles
# nothing new" check is then vacuous, and the report says so.
DEFAULT_ENGINE_ARGS = []
WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC")
MUTATING = ("mkdir", "mkdirat", "rename", "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat",
            "unlink", "unlinkat", "rmdir", "truncate", "creat")
TRACED = ("open", "openat", "openat2") + MUTATING
_CALL = re.compile(r'^(?P<call>\w+)\((?P<args>.*)\)\s+=\s+(?P<ret>-?\d+|\?)(?:<[^>]*>)?(?:\s+(?P<err>E[A-Z]+))?')
_STR = re.compile(r'(?:(?P<dirfd>AT_FDCWD|\d+<(?P<dirpath>[^>]*)>|\d+),\s*)?"(?P<path>(?:[^"\\]|\\.)*)"')


def collection_import_path():
    """A directory from which ``ansible_collections.llmserve.sglang`` imports this checkout."""
    for tree in os.environ.get("ANSIBLE_COLLECTIONS_PATH", "").split(os.pathsep):
        if tree and os.path.realpath(os.path.join(tree, "ansible_collections", "llmserve", "sglang")) == ROOT:
            return tree
    tree = tempfile.mkdtemp(prefix="llmserve-bench-coll.")
    os.makedirs(os.path.join(tree, "ansible_collections", "llmserve"))
    os.symlink(ROOT, os.path.join(tree, "ansible_collections", "llmserve", "sglang"))
    return tree


def role_base_env(home, pylib, config_path):
    """``__sglang_server_base_env`` of the role, its Jinja filled in with this run's paths."""
    import jinja2
    import yaml

    with open(os.path.join(ROOT, "roles", "sglang_server", "vars", "main.yml")) as handle:
        role_vars = yaml.safe_load(handle)
    values = {"sglang_server_home": home, "__sglang_server_pylib_dir": pylib,
              "__sglang_server_config_path": config_path}
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    return {name: env.from_string(str(value)).render(values) for name, value in role_vars["__sglang_server_base_env"].items()}


def unit_environment(version, home, tmpdir, cache_root, model, port, engine_args):
    """(argv, env, cache dir) the role would render for a CPU unit with these settings."""
    sys.path.insert(0, collection_import_path())
    from ansible_collections.llmserve.sglang.plugins.plugin_utils import sglang_cache
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args import render_server_argv

    args = {"device": "cpu", "max_total_tokens": 8192}
    for flag in engine_args:
        name, _sep, value = flag.lstrip("-").partition("=")
        args[name.replace("-", "_")] = value if value else True
    base = role_base_env(home, os.path.join(ROOT, "roles", "sglang_server", "files", "pylib"),
                         os.path.join(home, "no-config.yaml"))
    cfg = {"version": version, "model_path": model, "host": "127.0.0.1", "port": port, "tp_size": 1, "gpus": [],
           "speculative": {}, "args": args, "env": {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
           "base_env": base, "unit_name": UNIT}
    rendered = render_server_argv(cfg)
    directory = sglang_cache.cache_dir(cache_root, UNIT, version,
                                       sglang_cache.arch_tag(rendered["argv"], {}, platform.machine()))
    env = dict(rendered["env"])
    env.update(sglang_cache.cache_env(directory))
    # what systemd gives the unit besides Environment=: PATH, LANG, the private /tmp
    env.update(PATH="/usr/local/bin:/usr/bin:/bin", LANG="C.UTF-8", TMPDIR=tmpdir)
    return rendered["argv"], env, directory


def snapshot(roots):
    """{path: (size, mtime_ns)} of every regular file below the roots (links not followed)."""
    files = {}
    for root in roots:
        for dirpath, _dirs, names in os.walk(root):
            for name in names:
                path = os.path.join(dirpath, name)
                try:
                    stat = os.lstat(path)
                except OSError:
                    continue
                files[path] = (stat.st_size, stat.st_mtime_ns)
    return files


def changed(before, after):
    """Paths created or modified between two snapshots, and paths removed."""
    touched = sorted(p for p, meta in after.items() if before.get(p) != meta)
    removed = sorted(set(before) - set(after))
    return touched, removed


def parse_trace(prefix, cwd):
    """Every path the traced processes wrote (or tried to): {path: sorted list of 'call' or 'call:ERRNO'}."""
    writes = {}
    for name in glob.glob(prefix + ".*"):
        with open(name, errors="replace") as handle:
            for line in handle:
                match = _CALL.match(line.strip())
                if not match or match.group("call") not in TRACED:
                    continue
                call, args = match.group("call"), match.group("args")
                if call.startswith("open") and not any(flag in args for flag in WRITE_FLAGS):
                    continue
                paths = []
                for found in _STR.finditer(args):
                    path = found.group("path").encode().decode("unicode_escape")
                    if not path.startswith("/"):
                        path = os.path.join(found.group("dirpath") or cwd, path)
                    paths.append(os.path.normpath(path))
                # rename/link: the destination is the write; the source only disappears
                if call.startswith(("rename", "link", "symlink")) and paths:
                    paths = paths[-1:]
                label = call + (":" + match.group("err") if match.group("err") else "")
                for path in paths:
                    # device nodes (/dev/null) and kernel interfaces are no files; /dev/shm is
                    if path.startswith(("/proc/", "/sys/")) or (path.startswith("/dev/")
                                                                and not path.startswith("/dev/shm/")):
                        continue
                    writes.setdefault(path, set()).add(label)
    return {path: sorted(labels) for path, labels in writes.items()}


def classify(path, declared, runtime):
    if any(path == d or path.startswith(d + "/") for d in declared):
        return "declared"
    # SGLang's load snapshot and multiprocessing's POSIX semaphores: removed by RemoveIPC= when the unit stops
    shm = ("/dev/shm/sglang_loads_", "/dev/shm/sem.")
    if any(path == d or path.startswith(d + "/") for d in runtime) or path.startswith(shm):
        return "runtime"
    return "outside"


def one_start(number, venv, argv, env, home, port, workdir, use_strace, watched, timeout):
    """Start, serve, stop; returns what the start wrote."""
    log_path = os.path.join(workdir, "start%d.log" % number)
    trace_prefix = os.path.join(workdir, "trace%d" % number)
    before = snapshot(watched)
    command = [os.path.join(venv, "bin", "python"), "-m", "sglang.launch_server"] + list(argv)
    if use_strace:
        command = ["strace", "-ff", "-qq", "-y", "--seccomp-bpf", "-e", "trace=" + ",".join(TRACED),
                   "-o", trace_prefix] + command
    shm_before = set(glob.glob(smoke_server.SHM_GLOB))
    start = time.monotonic()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=home,  # noqa: S603
                                   start_new_session=True)
    result = {"start": number, "log": log_path, "errors": []}
    try:
        deadline = start + timeout
        while True:
            status, _body = smoke_server.http("GET", "http://127.0.0.1:%d/health" % port, timeout=2.0)
            if status == 200:
                break
            if process.poll() is not None or time.monotonic() > deadline:
                result["errors"].append("/health never reached 200 (exit %s)" % process.poll())
                break
            time.sleep(0.2)
        result["ready_s"] = round(time.monotonic() - start, 1)
        if not result["errors"]:
            for params in ({"max_new_tokens": 8, "temperature": 0},
                           {"max_new_tokens": 8, "temperature": 0.8, "sampling_seed": 7}):
                status, body = smoke_server.http("POST", "http://127.0.0.1:%d/generate" % port,
                                                 {"text": "The capital of France is", "sampling_params": params},
                                                 timeout=300)
                ok = status == 200 and isinstance(body, dict) and body.get("text") is not None
                result.setdefault("generate", []).append({"params": params, "status": status, "ok": ok})
                if not ok:
                    result["errors"].append("/generate %r gave %s %r" % (params, status, body))
    finally:
        if process.poll() is None:
            # the server's main process, as systemd signals it (KillMode=mixed); under strace it is strace's child
            main_pid = process.pid
            if use_strace:
                try:
                    with open("/proc/%d/task/%d/children" % (process.pid, process.pid)) as handle:
                        main_pid = int(handle.read().split()[0])
                except (OSError, ValueError, IndexError):
                    pass
            os.kill(main_pid, signal.SIGTERM)
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
        result["exit_code"] = process.returncode
        result["total_s"] = round(time.monotonic() - start, 1)
    result["snapshot"] = changed(before, snapshot(watched))
    result["trace"] = parse_trace(trace_prefix, home) if use_strace else None
    shm_new = sorted(set(glob.glob(smoke_server.SHM_GLOB)) - shm_before)
    result["shm_left"] = shm_new
    smoke_server.remove_leftover_shm(shm_before)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--venv", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--json", help="write the report here")
    parser.add_argument("--workdir", help="keep logs and traces here (default: a fresh directory, removed)")
    parser.add_argument("--starts", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds from launch to /health 200")
    parser.add_argument("--engine-arg", action="append", default=None,
                        help="an SGLang flag the unit gets (sglang_server_args), repeatable; default: %s"
                             % " ".join(DEFAULT_ENGINE_ARGS))
    parser.add_argument("--no-strace", action="store_true", help="snapshots only (no per-process attribution)")
    args = parser.parse_args(argv)
    engine_args = args.engine_arg if args.engine_arg is not None else DEFAULT_ENGINE_ARGS
    use_strace = not args.no_strace and shutil.which("strace") is not None

    workdir = args.workdir or tempfile.mkdtemp(prefix="llmserve-bench-cache.")
    os.makedirs(workdir, exist_ok=True)
    base = tempfile.mkdtemp(prefix="bc.", dir="/tmp")  # short: AF_UNIX paths under TMPDIR are limited to 107 bytes
    home, tmpdir, cache_root = (os.path.join(base, d) for d in ("home", "tmp", "cache"))
    for directory in (home, tmpdir, cache_root):
        os.makedirs(directory, mode=0o700)
    version = subprocess.run([os.path.join(args.venv, "bin", "python"), "-c",  # noqa: S603
                              "import importlib.metadata as m; print(m.version('sglang'))"],
                             check=True, capture_output=True, text=True).stdout.strip()
    port = smoke_server_free_port()
    unit_argv, env, directory = unit_environment(version, home, tmpdir, cache_root, args.model, port, engine_args)
    os.makedirs(directory, mode=0o700)  # the role creates it (deploy_state), owned by the service account
    declared = [directory, env["HF_HOME"]]
    # snapshots only of directories nothing else on the machine writes to; /tmp, /var/tmp, /dev/shm and the invoking
    # user's ~/.cache are shared with other work here, so strace alone says what this engine wrote there
    watched = [p for p in (home, tmpdir, cache_root, args.model) if os.path.isdir(p)]
    print("bench_cache: SGLang %s, cache directory %s, engine flags %s, strace %s" % (
        version, directory, " ".join(engine_args) or "(none)", "on" if use_strace else "off"), flush=True)

    starts = []
    for number in range(1, args.starts + 1):
        print("bench_cache: start %d of the real CPU engine ..." % number, flush=True)
        result = one_start(number, args.venv, unit_argv, env, home, port, workdir, use_strace, watched, args.timeout)
        touched, removed = result["snapshot"]
        written = dict((p, ["snapshot"]) for p in touched)
        for path, labels in (result["trace"] or {}).items():
            written.setdefault(path, []).extend(labels)
        result["outside"] = sorted(p for p in written if classify(p, declared, [tmpdir]) == "outside")
        result["outside_detail"] = {p: written[p] for p in result["outside"]}
        result["runtime"] = sorted(p for p in written if classify(p, declared, [tmpdir]) == "runtime")
        result["cache_files_touched"] = sorted(p for p in touched if p.startswith(directory + "/"))
        result["cache_files_removed"] = sorted(p for p in removed if p.startswith(directory + "/"))
        del result["snapshot"]
        result["trace_paths"] = len(result.pop("trace") or {})
        starts.append(result)
        print("bench_cache: start %d ready after %s s, exit %s, %d cache files written, %d outside, %s" % (
            number, result.get("ready_s"), result["exit_code"], len(result["cache_files_touched"]),
            len(result["outside"]), "; ".join(result["errors"]) or "no errors"), flush=True)
        # PrivateTmp= gives every start an empty /tmp: so does the benchmark
        shutil.rmtree(tmpdir)
        os.makedirs(tmpdir, mode=0o700)

    cache_entries = sorted(os.path.relpath(os.path.join(d, f), directory)
                           for d, _s, files in os.walk(directory) for f in files)
    first_wrote = len(starts[0]["cache_files_touched"]) if starts else 0
    later_added = sorted(set(p for s in starts[1:] for p in s["cache_files_touched"] + s["cache_files_removed"]))
    checks = [
        ("every start served /generate and exited 0", all(not s["errors"] and s["exit_code"] == 0 for s in starts),
         [(s["errors"], s["exit_code"]) for s in starts]),
        ("files written outside the declared directories: none", all(not s["outside"] for s in starts),
         [s["outside"] for s in starts]),
        ("files the later starts added to or changed in the caches: none", not later_added, later_added),
    ]
    # informational: whether the check above had anything to reuse (the CPU engine compiles nothing, see the top)
    compiled = {"check": "the first start wrote cache entries", "files": first_wrote,
                "vacuous": first_wrote == 0}
    report = {"sglang_version": version, "cache_dir": directory, "engine_args": engine_args, "strace": use_strace,
              "watched": watched, "declared": declared, "runtime_dirs": [tmpdir, "/dev/shm/sglang_loads_*"],
              "starts": starts, "cache_entries": cache_entries,
              "checks": [{"check": c, "pass": bool(ok), "value": v} for c, ok, v in checks], "compiled": compiled}
    print("\n== compile/JIT caches: %d starts of the real CPU engine (SGLang %s)" % (len(starts), version))
    print("declared cache directory: %s (%d files after the last start)" % (directory, len(cache_entries)))
    for entry in cache_entries[:40]:
        print("  " + entry)
    for s in starts:
        print("start %d: ready %s s; outside the declared directories: %s" % (
            s["start"], s.get("ready_s"), ", ".join(s["outside"]) or "none"))
        print("         runtime files (private TMPDIR, /dev/shm, gone at stop under the unit): %d" % len(s["runtime"]))
        print("         cache files created or modified: %d" % len(s["cache_files_touched"]))
    print("second start, added to or changed in the caches: %s" % (", ".join(later_added) or "none"))
    failed = 0
    for check, ok, _value in checks:
        print("%s  %s" % ("PASS" if ok else "FAIL", check))
        failed += not ok
    if first_wrote == 0:
        print("VACUOUS  the first start compiled nothing into the caches, so 'the second start compiles nothing new' "
              "holds trivially on this engine (not counted as a failure; the GPU caches are not measured here)")
    else:
        print("INFO  the first start wrote %d cache files" % first_wrote)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as handle:
            json.dump(report, handle, indent=2)
    shutil.rmtree(base, ignore_errors=True)
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if failed else 0


def smoke_server_free_port():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


if __name__ == "__main__":
    sys.exit(main())
