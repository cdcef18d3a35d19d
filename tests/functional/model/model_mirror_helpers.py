# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the model tests share: where the olah venv, the huggingface_hub interpreter and the tiny model are, the
repositories the test mirror publishes, the skip marks without them, and the Mirror the fixtures hand out
(conftest.py: ``mirror`` per test module, ``hostile`` per test).

The mirror publishes, over local git repositories served by olah (offline) behind the hostile proxy:

* ``REPO``: the tiny model twice (commits ``first`` and ``second``, the second adds README.md);
* ``PICKLE_REPO``: the tiny model plus a ``pytorch_model.bin``;
* ``BIG_REPO``: the tiny model with random weights of the test module's ``BIG_SIZE`` bytes.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
TOOLS = ROOT / "tools" / "model"
sys.path.insert(0, str(TOOLS))

# pylint: disable=wrong-import-position
from hostile_proxy import HostileProxy, Rules  # noqa: E402
from make_mirror_repo import publish  # noqa: E402
from olah_server import OlahServer, free_port  # noqa: E402

OLAH_VENV = Path(os.environ.get("LLMSERVE_OLAH_VENV", "/var/cache/llmserve/venv-olah"))
HUB_PYTHON = Path(os.environ.get("LLMSERVE_HF_CLIENT_PYTHON", "/var/cache/llmserve/venv-sglang-cpu/bin/python"))
TINY_MODEL = Path(os.environ.get("LLMSERVE_TINY_MODEL", "/var/cache/llmserve/models/tiny-llama"))
REPO = "llmserve/tiny-llama"
PICKLE_REPO = "llmserve/pickled"
BIG_REPO = "llmserve/big"
LFS_MIN = 100 * 1000  # model.safetensors (281 kB) becomes an LFS object, as on the real hub
WEIGHTS = "model.safetensors"

NEEDS_MIRROR = [
    pytest.mark.skipif(not (OLAH_VENV / "bin" / "olah-cli").exists(),
                       reason="no olah venv at %s: run tools/model/install_olah_venv.sh %s" % (OLAH_VENV, OLAH_VENV)),
    pytest.mark.skipif(not HUB_PYTHON.exists(),
                       reason="no client interpreter %s (set LLMSERVE_HF_CLIENT_PYTHON to a python with "
                              "huggingface_hub)" % HUB_PYTHON),
    pytest.mark.skipif(not (TINY_MODEL / "config.json").exists(),
                       reason="no tiny model at %s (set LLMSERVE_TINY_MODEL)" % TINY_MODEL),
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
]


class Mirror(object):
    """olah and the proxy in front of it."""

    def __init__(self, root, olah, proxy, commits, big_source):
        self.root = root
        self.olah = olah
        self.proxy = proxy
        self.commits = commits  # repo -> [commit ids, oldest first]
        self.big_source = big_source
        self.rules_path = None

    def watch(self, log_path, rules_path):
        """Log the proxy's requests to ``log_path`` and take its rules from ``rules_path`` (none yet)."""
        self.proxy.log_path = str(log_path)
        self.rules_path = rules_path
        self.proxy.rules = Rules(path=str(rules_path))

    def unwatch(self):
        self.proxy.log_path = None
        self.rules_path = None
        self.proxy.rules = Rules()

    def set_rules(self, *rules):
        """What the proxy does from now on (hostile_proxy's rules; none: pass everything)."""
        self.rules_path.write_text(json.dumps(list(rules)), encoding="utf-8")

    def requests(self):
        path = self.proxy.log_path
        if not path or not os.path.exists(path):
            return []
        with open(path, encoding="utf-8") as handle:
            return [json.loads(line) for line in handle]

    def gets(self, name=""):
        """The file downloads (GET .../resolve/...) the proxy saw, of the file ``name`` or of all."""
        return [r for r in self.requests() if r["method"] == "GET" and "/resolve/" in r["path"]
                and (not name or r["path"].endswith("/" + name))]


def start_mirror(base, big_size):
    """Publish the repositories under ``base`` and start olah and the proxy; the caller stops both."""
    root = base / "root"
    commits = {REPO: [publish(TINY_MODEL, root, REPO, "first", lfs_min_size=LFS_MIN)]}
    commits[REPO].append(publish(TINY_MODEL, root, REPO, "second", touch="README.md", lfs_min_size=LFS_MIN))
    pickled = base / "pickled"
    shutil.copytree(TINY_MODEL, pickled)
    (pickled / "pytorch_model.bin").write_bytes(b"\x80\x04K\x01.")
    commits[PICKLE_REPO] = [publish(pickled, root, PICKLE_REPO, "pickle", lfs_min_size=LFS_MIN)]
    big_source = base / "big-source"
    shutil.copytree(TINY_MODEL, big_source)
    (big_source / WEIGHTS).write_bytes(random.Random(29).randbytes(big_size))
    commits[BIG_REPO] = [publish(big_source, root, BIG_REPO, "big", lfs_min_size=LFS_MIN)]
    port = free_port()
    olah = OlahServer(root, base / "olah", venv=OLAH_VENV, public_netloc="127.0.0.1:%d" % port).start()
    proxy = HostileProxy(olah.url, port=port).start()
    return Mirror(root, olah, proxy, commits, big_source)


def communicate(proc, timeout):
    """(stdout, stderr) of a process started in a session of its own; past ``timeout`` the whole session is
    killed and TimeoutExpired raised."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
