# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``python -m sglang.launch_server ...`` for the llmserve stand-in (NOT SGLang)."""

from __future__ import annotations

import sys
import warnings


def main(argv=None):
    from sglang.srt.standin_server import launch  # pylint: disable=import-outside-toplevel

    warnings.warn("'python -m sglang.launch_server' still works, but 'sglang serve' is the recommended entrypoint"
                  " (llmserve stand-in)", UserWarning, stacklevel=1)
    launch(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
