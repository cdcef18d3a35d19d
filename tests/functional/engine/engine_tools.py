# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the engine tests share: the scripts of tools/engine loaded as modules, and where the CPU SGLang venv is
(``LLMSERVE_SGLANG_VENV``, made by tools/engine/install_sglang_venv.sh; ``make engine-assets`` exports it). The
tests that need the venv take conftest's ``sglang_venv`` fixture, which skips them where it is not set."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

ENGINE_DIR = Path(__file__).resolve().parents[3] / "tools" / "engine"
VENV = os.environ.get("LLMSERVE_SGLANG_VENV", "")


def load_engine_tool(name):
    """The script ``tools/engine/<name>.py`` as a module of its own (the folder is no package)."""
    spec = importlib.util.spec_from_file_location("llmserve_engine_" + name, ENGINE_DIR / (name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
