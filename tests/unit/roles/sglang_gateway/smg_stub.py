# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A stand-in for the installed ``smg`` package, enough to run the role's ``files/smg_launch.py`` without smg.

``parse_router_args`` knows the flags the launcher reads or refuses and ignores the rest (as smg's own parser
would accept them); ``launch_router`` writes what it was given to ``$SMG_STUB_REPORT`` (JSON: the workers' key and
the control-plane keys) and then sleeps, so that a test can look at the running process's ``/proc/<pid>``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
LAUNCHER = os.path.join(ROOT, "roles", "sglang_gateway", "files", "smg_launch.py")

_LAUNCH_ROUTER = '''
import argparse
import json
import os
import time


def parse_router_args(argv):
    parser = argparse.ArgumentParser(prog="smg launch")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=30000)
    parser.add_argument("--policy", default="cache_aware")
    parser.add_argument("--worker-urls", nargs="*", default=[])
    for flag in ("--api-key", "--tenant-api-keys", "--oracle-password", "--postgres-db-url", "--redis-url"):
        parser.add_argument(flag)
    parser.add_argument("--control-plane-api-keys", nargs="*")
    args, _ = parser.parse_known_args(argv)
    return args


def launch_router(args):
    with open(os.environ["SMG_STUB_REPORT"] + ".tmp", "w") as handle:
        json.dump({"api_key": args.api_key, "control_plane_api_keys": args.control_plane_api_keys}, handle)
    os.rename(os.environ["SMG_STUB_REPORT"] + ".tmp", os.environ["SMG_STUB_REPORT"])
    time.sleep(120)
'''


def make_stub(directory):
    """Write the stand-in package under ``directory`` (put it on PYTHONPATH); return ``directory``."""
    package = os.path.join(str(directory), "smg")
    os.makedirs(package, exist_ok=True)
    with open(os.path.join(package, "__init__.py"), "w", encoding="utf-8") as handle:
        handle.write("")
    with open(os.path.join(package, "launch_router.py"), "w", encoding="utf-8") as handle:
        handle.write(_LAUNCH_ROUTER)
    return str(directory)


def start(argv, env, report):
    """Start the launcher (``argv`` after the script) with ``env``; return the process once the stand-in's
    ``launch_router`` reported (or the process ended)."""
    proc = subprocess.Popen([sys.executable, LAUNCHER] + list(argv), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None and not os.path.exists(report):
        time.sleep(0.02)
    return proc


def proc_file(pid, name):
    with open("/proc/%d/%s" % (pid, name), "rb") as handle:
        return handle.read()
