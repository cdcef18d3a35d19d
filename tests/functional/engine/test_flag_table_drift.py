# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection's flag table and the stand-in's parser are what the installed SGLang's own parser says.

``make functional`` builds the CPU SGLang venv first (``make engine-assets``) and exports LLMSERVE_SGLANG_VENV, so a
table that drifted from the real SGLang fails the run; it never skips.
"""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
GENERATOR = os.path.join(ROOT, "tools", "gen_sglang_flags.py")
SGLANG_VENV = os.environ.get("LLMSERVE_SGLANG_VENV", "/var/cache/llmserve/venv-sglang-cpu")


def test_generated_files_match_the_installed_sglang():
    python = os.path.join(SGLANG_VENV, "bin", "python")
    assert os.path.exists(python), "%s is missing: run make engine-assets (make functional does)" % python
    result = subprocess.run([sys.executable, GENERATOR, "--python", python, "--check"],
                            capture_output=True, text=True, check=False, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
