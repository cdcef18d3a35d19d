# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Print the argparse options of the INSTALLED SGLang as JSON (run it with the python of an SGLang venv).

    $LLMSERVE_SGLANG_VENV/bin/python tools/sglang_parser_dump.py

The parser is built the way SGLang's ``prepare_server_args`` builds it (``ServerArgs.add_cli_args``); every
action but ``--help`` is printed as argparse holds it, without interpretation::

    {"version": "0.5.23", "actions": [{"options": [...], "dest": ..., "action": "_StoreAction",
      "type": "int", "nargs": null, "const": null, "default": 1, "choices": null, "required": false}, ...]}

``tools/gen_sglang_flags.py`` turns this into the collection's flag table and into the stand-in's
own copy of the parser (``tools/standin/src/sglang/srt/standin_parser_actions.py``).
"""

import argparse
import json
import sys


def _plain(value):
    """JSON-able form of a default/const/choice; anything else by its repr (reported as such)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return {"repr": repr(value)}


def _choices(choices):
    """A list in the parser's order; a set (no order of its own, e.g. --sampling-backend) sorted."""
    if choices is None:
        return None
    if isinstance(choices, (set, frozenset)):
        return _plain(sorted(choices, key=str))
    return _plain(list(choices))


def dump():
    import sglang  # pylint: disable=import-outside-toplevel
    from sglang.srt.server_args import ServerArgs  # pylint: disable=import-outside-toplevel

    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    actions = []
    for action in parser._actions:  # pylint: disable=protected-access
        if isinstance(action, argparse._HelpAction):  # pylint: disable=protected-access
            continue
        actions.append({
            "options": list(action.option_strings),
            "dest": action.dest,
            "action": type(action).__name__,
            "type": getattr(action.type, "__name__", repr(action.type)) if action.type is not None else None,
            "nargs": action.nargs,
            "const": _plain(action.const),
            "default": _plain(action.default),
            "choices": _choices(action.choices),
            "required": bool(action.required),
        })
    return {"version": sglang.__version__, "actions": actions}


if __name__ == "__main__":
    json.dump(dump(), sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
