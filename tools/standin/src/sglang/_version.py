# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# The local version label marks this package as the llmserve stand-in; "sglang==0.5.23" still matches it.
__version__ = "0.5.23+llmserve.standin"
commit_id = None
