# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The olah lock is an exact lock, and a venv built from it holds exactly the lock (when one is there)."""

from __future__ import annotations

import hashlib
import subprocess

import pytest

from model_mirror_helpers import OLAH_VENV, TOOLS

LOCK = TOOLS / "requirements-olah.lock.txt"


def _pins():
    pins = {}
    for number, line in enumerate(LOCK.read_text(encoding="utf-8").splitlines(), start=1):
        name, sep, version = line.partition("==")
        assert sep and name and version and line == line.strip(), "line %d is not NAME==VERSION: %r" % (number, line)
        assert not any(c in line for c in "<>~!;#@ [],"), "line %d is not an exact pin: %r" % (number, line)
        key = name.lower().replace("_", "-")
        assert key not in pins, "%s is pinned twice" % name
        pins[key] = version
    return pins


def test_lock_pins_olah_and_its_hub_client_exactly():
    pins = _pins()
    assert pins["olah"] == "0.5.4"
    assert pins["huggingface-hub"] == "2.4.0"
    assert not {"pip", "setuptools", "wheel"} & set(pins), "the venv's own tools are not part of the lock"


@pytest.mark.skipif(not (OLAH_VENV / "bin" / "olah-cli").exists(),
                    reason="no olah venv at %s: run tools/model/install_olah_venv.sh %s" % (OLAH_VENV, OLAH_VENV))
def test_venv_holds_exactly_the_lock_and_says_which():
    stamp = (OLAH_VENV / ".llmserve-olah-lock-sha256").read_text(encoding="ascii").strip()
    assert stamp == hashlib.sha256(LOCK.read_bytes()).hexdigest(), "venv built from another lock: rebuild it"
    frozen = subprocess.run([str(OLAH_VENV / "bin" / "python"), "-m", "pip", "freeze", "--all",
                             "--disable-pip-version-check"], check=True, stdout=subprocess.PIPE, text=True).stdout
    installed = {n.lower().replace("_", "-"): v for n, _s, v in (line.partition("==") for line in frozen.split())}
    for tool in ("pip", "setuptools", "wheel"):
        installed.pop(tool, None)
    assert installed == _pins()
    # a second run keeps the venv as it is
    run = subprocess.run(["bash", str(TOOLS / "install_olah_venv.sh"), str(OLAH_VENV)], check=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert "reusing %s" % OLAH_VENV in run.stdout
