# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ``sglang`` console script of the llmserve stand-in (NOT SGLang).

``sglang serve [--model-type llm] [MODEL] [flags]`` runs the stand-in server; ``sglang version``
prints the version.  As in SGLang, a leading positional MODEL becomes ``--model-path MODEL`` and
``--model-type`` is understood by ``sglang serve`` only.
"""

from __future__ import annotations

import sys

from sglang._version import __version__

MODEL_TYPES = ("auto", "llm", "diffusion", "embedding", "reward", "multimodal")


def _usage(code, message=None):
    stream = sys.stderr if code else sys.stdout
    if message:
        stream.write("sglang: error: %s\n" % message)
    stream.write("usage: sglang {serve,version} ...\n")
    sys.exit(code)


def _strip_model_type(argv):
    model_type = "auto"
    out = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--model-type":
            if i + 1 >= len(argv):
                _usage(2, "argument --model-type: expected one argument")
            model_type = argv[i + 1]
            i += 2
            continue
        if arg.startswith("--model-type="):
            model_type = arg.split("=", 1)[1]
            i += 1
            continue
        out.append(arg)
        i += 1
    if model_type not in MODEL_TYPES:
        _usage(2, "argument --model-type: invalid choice: %r (choose from %s)"
               % (model_type, ", ".join(repr(m) for m in MODEL_TYPES)))
    if model_type not in ("auto", "llm"):
        sys.stderr.write("sglang: the llmserve stand-in only imitates LLM serving (--model-type %s)\n" % model_type)
        sys.exit(1)
    return out


def serve(argv):
    from sglang.srt.standin_server import launch  # pylint: disable=import-outside-toplevel

    argv = _strip_model_type(list(argv))
    if argv and not argv[0].startswith("-"):
        argv = ["--model-path", argv[0]] + argv[1:]
    launch(argv)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        _usage(0 if argv else 2, None if argv else "a command is required")
    command, rest = argv[0], argv[1:]
    if command == "serve":
        serve(rest)
    elif command == "version":
        sys.stdout.write("sglang %s\n" % __version__)
    else:
        _usage(2, "argument command: invalid choice: %r (choose from 'serve', 'version')" % command)


if __name__ == "__main__":
    main()
