# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""llmserve SGLang STAND-IN - not SGLang.

A tiny, dependency-free HTTP server that imitates how SGLang 0.5.23 starts up (closed port while
"loading", 503 on /health and /ready during "warm-up", then 200), for tests and demos on machines
without a GPU. It accepts SGLang's command line (same flag table) and rejects unknown flags.
See tools/standin/README.md in the llmserve.sglang collection.
"""

from sglang._version import __version__

STANDIN = True
__all__ = ["__version__", "STANDIN"]
