# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures for the wait_for_endpoint integration tests (helpers live in wfe_live_helpers.py)."""

from __future__ import annotations

import json
import sys

import pytest

from wfe_live_helpers import (
    MODULE,
    ModuleRun,
    RawServer,
    ScriptedServer,
    Standin,
    _module_env,
    _tls_with_cryptography,
    _tls_with_openssl,
    free_port,
    run_child,
    standin_env,
)


@pytest.fixture
def server():
    made = []

    def make(script, closed_for=0.0, tls=None, host="127.0.0.1"):
        srv = ScriptedServer(script, closed_for=closed_for, tls=tls, host=host).start()
        made.append(srv)
        return srv

    yield make
    for srv in made:
        srv.stop()


@pytest.fixture
def raw_server():
    made = []

    def make(behaviour):
        srv = RawServer(behaviour).start()
        made.append(srv)
        return srv

    yield make
    for srv in made:
        srv.stop()


@pytest.fixture
def run_module(tmp_path):
    """Run the module file for real in a child Python, the way Ansible's module runner does."""
    counter = [0]

    def run(args, check_mode=False, env=None, limit=120):
        """``env``: variables to set (None removes one); ``limit``: seconds before the child is killed."""
        counter[0] += 1
        args = dict(args)
        if check_mode:
            args["_ansible_check_mode"] = True
        args.setdefault("_ansible_tmpdir", str(tmp_path))
        path = tmp_path / ("args-%d.json" % counter[0])
        path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        rc, stdout, stderr, wall, maxrss, killed = run_child([sys.executable, "-m", MODULE, str(path)],
                                                             _module_env(env), str(tmp_path), limit)
        lines = [line for line in stdout.splitlines() if line.startswith("{")]
        assert lines, "module printed no JSON%s: rc=%s wall=%.1f s stdout=%r stderr=%r" % (
            " (killed after %s s)" % limit if killed else "", rc, wall, stdout[-2000:], stderr[-2000:])
        return ModuleRun(rc, json.loads(lines[-1]), wall, stderr, maxrss)

    return run


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tls")
    try:
        import cryptography  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    except ImportError:
        return _tls_with_openssl(directory)
    return _tls_with_cryptography(directory)


@pytest.fixture
def standin(tmp_path):
    made = []

    def make(args, python=sys.executable, entry=("-m", "sglang.launch_server"), **env):
        port = free_port()
        log = str(tmp_path / ("events-%d.jsonl" % len(made)))
        argv = [python] + list(entry) + list(args)
        if "--port" not in args:
            argv += ["--port", str(port)]
        else:
            port = int(args[list(args).index("--port") + 1])
        proc = Standin(argv, standin_env(LLMSERVE_STANDIN_EVENT_LOG=log, **env), log).start()
        proc.port = port
        proc.url = "http://127.0.0.1:%d" % port
        made.append(proc)
        return proc

    yield make
    for proc in made:
        proc.stop()
