# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Generate ``plugins/plugin_utils/sglang_flags.py`` from the SGLang argparse table.

The input is the text table of the reference notes (``sglang.md``, "Appendix A"), produced by
building SGLang's real argument parser and listing ``parser._actions``. Every row has the form::

    --opt / --alias | type | default | choice,choice

Usage::

    python tests/tools/gen_sglang_flags.py [--reference PATH] [--output PATH] [--check]

``--check`` exits 1 when the module on disk differs from what the table produces (CI drift test).
The curated parts (removed spellings, value hints, deprecations) are kept in this script so a
regeneration never loses them.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_REFERENCE = "/work/shared/reference/sglang.md"
DEFAULT_OUTPUT = os.path.join(ROOT, "plugins", "plugin_utils", "sglang_flags.py")
SGLANG_VERSION = "0.5.23"

# Spellings that SGLang 0.5.23 rejects although older releases or third-party recipes use them.
# Key: dest form of the rejected spelling; value: hint shown to the user.
REMOVED_FLAGS = {
    "cuda_graph_max_bs": "removed in SGLang 0.5.20; use cuda_graph_max_bs_decode (and cuda_graph_max_bs_prefill)",
    "cuda_graph_bs": "removed in SGLang 0.5.20; use cuda_graph_bs_decode (and cuda_graph_bs_prefill)",
    "mamba_scheduler_strategy": "removed in SGLang 0.5.20; use mamba_radix_cache_strategy",
    "speculative_draft": "not a flag (an ambiguous prefix in SGLang); set sglang_server_speculative.draft_model_path",
    "speculative_algo": "an argparse abbreviation; set sglang_server_speculative.algorithm",
    "tp": "an argparse abbreviation; set sglang_server_tp_size",
    "dp": "an argparse abbreviation; use dp_size (or attn_dp_size for attention data parallelism)",
    "pp": "an argparse abbreviation; use pp_size",
}

# Flags that still parse in 0.5.23 but are deprecated: dest -> hint.
DEPRECATED_FLAGS = {
    "disable_cuda_graph": "deprecated; use disable_decode_cuda_graph and/or disable_prefill_cuda_graph",
    "enable_dp_attention": "deprecated; use attn_dp_size (SGLang rewrites it to attn_dp_size=dp_size, dp_size=1)",
    "monokernel_backend": "deprecated in SGLang 0.5.23",
    "enable_flashinfer_allreduce_fusion": "deprecated; use flashinfer_allreduce_fusion_backend",
}

# Values that SGLang rejects but that recipes often use: dest -> {wrong value: right value}.
_DTYPE_HINTS = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "f16": "float16", "f32": "float32"}
_KV_HINTS = {"fp8": "fp8_e4m3", "fp8_e4m3fn": "fp8_e4m3", "e4m3": "fp8_e4m3", "e5m2": "fp8_e5m2", "fp4": "nvfp4"}
VALUE_HINTS = {
    "dtype": _DTYPE_HINTS,
    "kv_cache_dtype": _KV_HINTS,
    "speculative_draft_kv_cache_dtype": {"fp8": "fp8_e4m3", "fp8_e4m3fn": "fp8_e4m3", "e4m3": "fp8_e4m3", "e5m2": "fp8_e5m2"},
    "mamba_ssm_dtype": {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"},
}

_TYPE_NAMES = {
    "loads": "json",
    "json_list_type": "json_list",
    "parse_cuda_graph_config_arg": "cuda_graph_config",
    "parse_cuda_graph_backend_arg": "cuda_graph_backend",
}

HEADER = '''# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# GENERATED FILE - do not edit by hand.
# Regenerate with: python tests/tools/gen_sglang_flags.py
"""Command-line flags of the pinned SGLang server (``sglang serve`` / ``python -m sglang.launch_server``).

Pure data, standard library only, importable on Python 3.9+ (it is also vendored into the test
stand-in server).

``FLAGS`` maps the argparse ``dest`` (underscores) to a description of the option, in the order of
SGLang's own parser:

``option``
    main spelling (``--tp-size``).
``aliases``
    other spellings of the same option (``--tensor-parallel-size``); never the ``--no-`` form.
``negation``
    the ``--no-x`` spelling for ``kind == "bool"``, else ``None``.
``kind``
    ``switch`` (store_true style, no value), ``bool`` (``--x``/``--no-x``), ``value`` (one value;
    ``nargs == "?"`` means the value may be left out) or ``list`` (``nargs`` ``+`` or ``*``).
``type``
    argparse type: ``str``, ``int``, ``float``, ``human_readable_int`` (``256k``, ``256Ki``),
    ``nullable_str``, ``json`` (a JSON text), ``json_list`` (a JSON list), ``cuda_graph_config``
    (JSON), ``cuda_graph_backend`` (a choice), or ``bool`` for switches.
``nargs``
    ``None``, ``"+"``, ``"*"`` or ``"?"``.
``required``, ``default``, ``choices``
    as in argparse (``choices`` is a list or ``None``).
``deprecated``
    ``True`` when SGLang marks the option deprecated.
"""

from __future__ import annotations

'''


def parse_table(text):
    """Return the list of rows of the appendix table as dicts (in table order)."""
    match = re.search(r"^## Appendix A\..*?^```text\n(.*?)^```", text, re.S | re.M)
    if not match:
        raise ValueError("Appendix A flag table not found in the reference file")
    lines = match.group(1).splitlines()
    if not lines or not lines[0].startswith("flag | type"):
        raise ValueError("unexpected table header: %r" % (lines[:1],))
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        parts = line.split(" | ")
        if len(parts) != 4:
            parts = line.rstrip().split(" |")
            parts = [p.strip() for p in parts] + [""] * (4 - len(parts))
        spelling, typ, default, choices = (p.strip() for p in parts[:4])
        rows.append(_row(number, spelling, typ, default, choices))
    return rows


def _row(number, spelling, typ, default, choices):
    options = [o.strip() for o in spelling.split(" / ")]
    if not all(o.startswith("--") for o in options):
        raise ValueError("table line %d: bad option spelling %r" % (number, spelling))
    entry = {
        "option": options[0],
        "aliases": [],
        "negation": None,
        "kind": "value",
        "type": "str",
        "nargs": None,
        "required": False,
        "default": ast.literal_eval(default) if default else None,
        "choices": None,
        "deprecated": False,
    }
    if typ.endswith(" REQUIRED"):
        entry["required"] = True
        typ = typ[: -len(" REQUIRED")]
    if typ in ("flag(store_true)", "DeprecatedStoreTrueAction", "DeprecatedStoreConstAction"):
        entry["kind"] = "switch"
        entry["type"] = "bool"
        entry["deprecated"] = typ.startswith("Deprecated")
    elif typ == "bool(--x/--no-x)":
        entry["kind"] = "bool"
        entry["type"] = "bool"
    else:
        if ":" in typ:  # custom action with a type, e.g. "LoRAPathAction:str nargs=*"
            typ = typ.split(":", 1)[1]
        nargs = None
        m = re.match(r"^(\S+) nargs=([+*?])$", typ)
        if m:
            typ, nargs = m.group(1), m.group(2)
        entry["type"] = _TYPE_NAMES.get(typ, typ)
        entry["nargs"] = nargs
        entry["kind"] = "list" if nargs in ("+", "*") else "value"
    if entry["kind"] == "bool":
        negations = [o for o in options[1:] if o.startswith("--no-")]
        entry["negation"] = negations[0] if negations else None
        options = [o for o in options if o not in negations]
    entry["aliases"] = options[1:]
    if choices:
        values = choices.split(",")
        if entry["type"] == "int":
            values = [int(v) for v in values]
        entry["choices"] = values
    dest = options[0][2:].replace("-", "_")
    if dest in DEPRECATED_FLAGS:
        entry["deprecated"] = True
    return dest, entry


def _lit(value):
    if isinstance(value, str):
        return json.dumps(value)
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_lit(v) for v in value) + "]"
    raise TypeError("cannot render %r" % (value,))


def _wrapped_list(values, indent, width=150):
    """Render a list literal, wrapped to lines of at most ``width`` characters."""
    one_line = _lit(values)
    if len(one_line) + indent <= width:
        return one_line
    pad = " " * (indent + 4)
    out, line = ["["], pad
    for item in (_lit(v) + "," for v in values):
        if len(line) + len(item) + 1 > width and line.strip():
            out.append(line.rstrip())
            line = pad
        line += item + " "
    out.append(line.rstrip())
    out.append(" " * indent + "]")
    return "\n".join(out)


def _dict_block(name, mapping, indent=0):
    pad = " " * indent
    out = ["%s%s = {" % (pad, name)]
    for key, value in mapping.items():
        if isinstance(value, dict):
            out.append("%s    %s: {" % (pad, _lit(key)))
            for k2, v2 in value.items():
                out.append("%s        %s: %s," % (pad, _lit(k2), _lit(v2)))
            out.append("%s    }," % pad)
        else:
            out.append("%s    %s: %s," % (pad, _lit(key), _lit(value)))
    out.append(pad + "}")
    return "\n".join(out)


def render_module(rows):
    dests = [row[0] for row in rows]
    dupes = sorted({d for d in dests if dests.count(d) > 1})
    if dupes:
        raise ValueError("duplicate dest names in the table: %s" % ", ".join(dupes))
    for dest in list(REMOVED_FLAGS) + list(VALUE_HINTS) + list(DEPRECATED_FLAGS):
        known = dest in dests
        if dest in REMOVED_FLAGS and known:
            raise ValueError("%s is listed as removed but exists in the table" % dest)
        if dest not in REMOVED_FLAGS and not known:
            raise ValueError("%s is curated but missing from the table" % dest)
    out = [HEADER.rstrip("\n"), "", 'SGLANG_VERSION = "%s"' % SGLANG_VERSION, ""]
    out.append("# %d options, in the order of SGLang's parser." % len(rows))
    out.append("FLAGS = {")
    for dest, entry in rows:
        one_line = "    %s: {%s}," % (_lit(dest), ", ".join("%s: %s" % (_lit(k), _lit(v)) for k, v in entry.items()))
        if len(one_line) <= 159:
            out.append(one_line)
            continue
        out.append("    %s: {" % _lit(dest))
        for key, value in entry.items():
            if isinstance(value, list):
                out.append("        %s: %s," % (_lit(key), _wrapped_list(value, 8)))
            else:
                out.append("        %s: %s," % (_lit(key), _lit(value)))
        out.append("    },")
    out.append("}")
    out.append("")
    out.append("# Spellings SGLang %s rejects (dest form) -> hint." % SGLANG_VERSION)
    out.append(_dict_block("REMOVED_FLAGS", REMOVED_FLAGS))
    out.append("")
    out.append("# Options that still parse but are deprecated (dest form) -> hint.")
    out.append(_dict_block("DEPRECATED_FLAGS", DEPRECATED_FLAGS))
    out.append("")
    out.append("# Values SGLang rejects that recipes commonly use: dest -> {wrong: right}.")
    out.append(_dict_block("VALUE_HINTS", VALUE_HINTS))
    out.append("")
    out.append("# Every spelling of every option in dest form (leading dashes dropped, '-' -> '_') -> dest.")
    out.append("SPELLINGS = {}")
    out.append("for _dest, _flag in FLAGS.items():")
    out.append('    for _opt in [_flag["option"]] + _flag["aliases"]:')
    out.append('        SPELLINGS[_opt[2:].replace("-", "_")] = _dest')
    out.append("del _dest, _flag, _opt")
    out.append("")
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", default=DEFAULT_REFERENCE, help="sglang.md holding Appendix A")
    parser.add_argument("--output", default=DEFAULT_OUTPUT, help="module to write")
    parser.add_argument("--check", action="store_true", help="only compare, exit 1 on drift")
    args = parser.parse_args(argv)
    with open(args.reference, encoding="utf-8") as handle:
        text = render_module(parse_table(handle.read()))
    if args.check:
        with open(args.output, encoding="utf-8") as handle:
            if handle.read() != text:
                print("%s is out of date; run %s" % (args.output, sys.argv[0]), file=sys.stderr)
                return 1
        return 0
    with open(args.output, "w", encoding="utf-8") as handle:
        handle.write(text)
    print("wrote %s" % args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
