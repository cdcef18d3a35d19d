# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Import-only placeholder for ``vllm`` (llmserve CPU test installs).

On ``--device cpu`` without SGLang's CPU engine, SGLang's rotary embedding layer
imports ``vllm._custom_ops.rotary_embedding`` as its fused-kernel fallback, then
dispatches to the pure-torch ``forward_native`` and never calls it.  Only that
one module exists here; any other ``vllm`` import fails as if vllm were absent.
"""

__version__ = "0.0.0+llmserve.importshim"
