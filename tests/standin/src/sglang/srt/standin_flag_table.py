# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Where the stand-in gets SGLang's flag table from.

In the wheel, build_wheel.py copies the collection's ``plugins/plugin_utils/sglang_flags.py`` to
``sglang/srt/standin_flags.py``.  Run from the source tree (tests), the collection file is loaded
by path instead, so both always use the one table.
"""

from __future__ import annotations

import importlib.util
import os


def _load():
    try:
        from sglang.srt import standin_flags  # pylint: disable=import-outside-toplevel
        return standin_flags
    except ImportError:
        pass
    here = os.path.dirname(os.path.abspath(__file__))
    # tests/standin/src/sglang/srt -> repository root
    root = os.path.abspath(os.path.join(here, "..", "..", "..", "..", ".."))
    path = os.path.join(root, "plugins", "plugin_utils", "sglang_flags.py")
    if not os.path.isfile(path):
        raise ImportError("stand-in flag table not found: neither sglang.srt.standin_flags nor %s" % path)
    spec = importlib.util.spec_from_file_location("sglang.srt.standin_flags", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_table = _load()
FLAGS = _table.FLAGS
SGLANG_VERSION = _table.SGLANG_VERSION
