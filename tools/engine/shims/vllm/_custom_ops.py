# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Placeholder for ``vllm._custom_ops``: importable, never meant to run."""


def rotary_embedding(*args, **kwargs):
    """Fused rotary kernel placeholder; SGLang must use its native torch path instead."""
    raise NotImplementedError(
        "vllm._custom_ops.rotary_embedding is an import-only placeholder on this CPU-only SGLang install; "
        "the pure-torch forward_native path should have been used")
