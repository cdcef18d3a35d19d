# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Generate SGLang's flag table from the INSTALLED SGLang's own argument parser.

    python tools/gen_sglang_flags.py [--python PY | --dump FILE] [--check]

``--python`` is the interpreter of an SGLang venv (default: ``$LLMSERVE_SGLANG_VENV/bin/python``, the CPU SGLang
venv that ``make engine-assets`` builds); it runs ``tools/sglang_parser_dump.py``, which builds SGLang's parser
and prints its actions as JSON. ``--dump FILE`` reads such JSON instead. Two files are written from it:

``plugins/plugin_utils/sglang_flags.py``
    the collection's table: each option interpreted (switch, --x/--no-x, value, list; type; choices), one line a
    flag, plus the curated parts kept in this script (removed spellings, deprecations, value hints).
``tools/standin/src/sglang/srt/standin_parser_actions.py``
    the test stand-in's own copy of the parser: argparse's actions as they are, one line each, with no
    interpretation. The stand-in builds its parser from this and never from the collection's table, so a wrong
    table entry (or a bug here in interpreting an action) makes the stand-in and the collection disagree.

``--check`` writes nothing and exits 1 when either file differs from what the installed SGLang gives (the drift test
of ``make functional``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DUMPER = os.path.join(HERE, "sglang_parser_dump.py")
TABLE = os.path.join(ROOT, "plugins", "plugin_utils", "sglang_flags.py")
STANDIN = os.path.join(ROOT, "tools", "standin", "src", "sglang", "srt", "standin_parser_actions.py")
DEFAULT_VENV = "/var/cache/llmserve/venv-sglang-cpu"

# Spellings that SGLang rejects although older releases or third-party recipes use them.
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

# Flags that still parse but are deprecated: dest -> hint.
DEPRECATED_FLAGS = {
    "disable_cuda_graph": "deprecated; use disable_decode_cuda_graph and/or disable_prefill_cuda_graph",
    "enable_dp_attention": "deprecated; use attn_dp_size (SGLang rewrites it to attn_dp_size=dp_size, dp_size=1)",
    "monokernel_backend": "deprecated; use enable_amd_monokernel",
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

# argparse type names -> the table's names.
_TYPE_NAMES = {
    "loads": "json",
    "json_list_type": "json_list",
    "parse_cuda_graph_config_arg": "cuda_graph_config",
    "parse_cuda_graph_backend_arg": "cuda_graph_backend",
}
# Actions that take no value: store_true and its deprecated form.
_SWITCH_ACTIONS = ("_StoreTrueAction", "DeprecatedStoreTrueAction")
# Actions that store the value(s) they are given (LoRAPathAction parses "name=path" itself).
_VALUE_ACTIONS = ("_StoreAction", "LoRAPathAction", "DeprecatedStoreConstAction")

HEADER = '''# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# GENERATED FILE - do not edit by hand. Regenerate with: python tools/gen_sglang_flags.py
# (it reads the parser of the SGLang installed in $LLMSERVE_SGLANG_VENV; `make functional` fails on drift).
"""Command-line flags of SGLang %(version)s (``sglang serve``), as its own parser defines them.

Pure data, standard library only, Python 3.9+. ``FLAGS`` maps the name (the main spelling without
dashes, ``-`` -> ``_``) to a dict, in the order of SGLang's parser; see ``_flag`` for the keys.
"""

from __future__ import annotations

SGLANG_VERSION = "%(version)s"


def _flag(option, kind="value", typ=None, default=None, choices=None, nargs=None, aliases=(), required=False,
          deprecated=False):
    """One option. ``kind``: ``switch`` (no value), ``bool`` (``--x``/``--no-x``), ``value`` (one value; with
    ``nargs="?"`` it may be left out) or ``list`` (``nargs`` ``+``/``*``). ``typ``: the argparse type
    (``str``, ``int``, ``float``, ``human_readable_int``, ``nullable_str``, ``json``, ``json_list``,
    ``cuda_graph_config``, ``cuda_graph_backend``; by default ``bool`` for the two kinds without a value and
    ``str`` for the others)."""
    if typ is None:
        typ = "bool" if kind in ("switch", "bool") else "str"
    return {"option": option, "aliases": list(aliases), "negation": "--no-" + option[2:] if kind == "bool" else None,
            "kind": kind, "type": typ, "nargs": nargs, "required": required, "default": default,
            "choices": None if choices is None else list(choices), "deprecated": deprecated}

'''

STANDIN_HEADER = '''# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# GENERATED FILE - do not edit by hand. Regenerate with: python tools/gen_sglang_flags.py
"""SGLang %(version)s's argparse actions, as argparse holds them (the stand-in's parser is built from these).

One tuple an action: (option strings, dest, action class, type name, nargs, const, default, choices, required).
Deliberately NOT the collection's interpreted table (plugins/plugin_utils/sglang_flags.py): both come from the
real parser independently, so an error in one shows up as a disagreement with the other.
"""

SGLANG_VERSION = "%(version)s"

ACTIONS = [
'''


def _lit(value):
    if isinstance(value, str):
        return json.dumps(value)
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_lit(v) for v in value) + "]"
    if isinstance(value, dict) and set(value) == {"repr"}:
        raise ValueError("a default, const or choice that is not plain data: %s" % value["repr"])
    raise TypeError("cannot render %r" % (value,))


def _name(option):
    return option[2:].replace("-", "_")


def interpret(action):
    """``(name, entry)`` for one dumped argparse action; the entry has the keys of the table's ``_flag``."""
    options = list(action["options"])
    kind_of = action["action"]
    entry = {"kind": "value", "typ": "str", "default": action["default"], "choices": action["choices"],
             "nargs": None, "aliases": [], "required": action["required"], "deprecated": kind_of.startswith("Deprecated")}
    if kind_of in _SWITCH_ACTIONS:
        entry.update(kind="switch", typ="bool")
    elif kind_of == "BooleanOptionalAction":
        entry.update(kind="bool", typ="bool")
        options = [o for o in options if not o.startswith("--no-")]
    elif kind_of in _VALUE_ACTIONS:
        nargs = action["nargs"]
        if nargs not in (None, "?", "+", "*"):
            raise ValueError("%s: nargs %r is not handled" % (options[0], nargs))
        typ = action["type"] or "str"
        entry.update(kind="list" if nargs in ("+", "*") else "value", typ=_TYPE_NAMES.get(typ, typ), nargs=nargs)
    else:
        raise ValueError("%s: argparse action %s is not handled; teach gen_sglang_flags.py what it means"
                         % (options[0], kind_of))
    if not all(o.startswith("--") for o in options):
        raise ValueError("%s: only --long options are handled, got %s" % (action["dest"], options))
    name = _name(options[0])
    entry["aliases"] = options[1:]
    entry["deprecated"] = entry["deprecated"] or name in DEPRECATED_FLAGS
    return name, options[0], entry


def _flag_call(option, entry):
    """``_flag(...)`` naming only what differs from the defaults of ``_flag``."""
    parts = [_lit(option)]
    if entry["kind"] != "value":
        parts.append(_lit(entry["kind"]))
    if entry["typ"] != ("bool" if entry["kind"] in ("switch", "bool") else "str"):
        parts.append("typ=%s" % _lit(entry["typ"]))
    for key in ("default", "choices", "nargs"):
        if entry[key] is not None:
            parts.append("%s=%s" % (key, _lit(entry[key])))
    for key in ("aliases", "required", "deprecated"):
        if entry[key]:
            parts.append("%s=%s" % (key, _lit(entry[key])))
    return "_flag(%s)" % ", ".join(parts)


def _dict_block(name, mapping):
    out = ["%s = {" % name]
    for key, value in mapping.items():
        if isinstance(value, dict):
            out.append("    %s: {%s}," % (_lit(key), ", ".join("%s: %s" % (_lit(k), _lit(v)) for k, v in value.items())))
        else:
            out.append("    %s: %s," % (_lit(key), _lit(value)))
    out.append("}")
    return "\n".join(out)


def _noqa(line):
    """Keep one line a flag; mark what is longer than the sanity limit (long choice lists)."""
    return line + "  # noqa: E501" if len(line) > 160 else line


def render_table(dump):
    rows = [interpret(action) for action in dump["actions"]]
    names = [row[0] for row in rows]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError("duplicate option names in the parser: %s" % ", ".join(dupes))
    for name in list(REMOVED_FLAGS) + list(VALUE_HINTS) + list(DEPRECATED_FLAGS):
        if name in REMOVED_FLAGS and name in names:
            raise ValueError("%s is listed as removed but SGLang %s has it" % (name, dump["version"]))
        if name not in REMOVED_FLAGS and name not in names:
            raise ValueError("%s is curated here but SGLang %s does not have it" % (name, dump["version"]))
    out = [(HEADER % {"version": dump["version"]}).rstrip("\n"), "", ""]
    out.append("# %d options, in the order of SGLang's parser." % len(rows))
    out.append("FLAGS = {")
    for name, option, entry in rows:
        out.append(_noqa("    %s: %s," % (_lit(name), _flag_call(option, entry))))
    out.append("}")
    out.append("")
    out.append("# Spellings SGLang %s rejects (name form) -> hint." % dump["version"])
    out.append(_dict_block("REMOVED_FLAGS", REMOVED_FLAGS))
    out.append("")
    out.append("# Options that still parse but are deprecated -> hint.")
    out.append(_dict_block("DEPRECATED_FLAGS", DEPRECATED_FLAGS))
    out.append("")
    out.append("# Values SGLang rejects that recipes commonly use: name -> {wrong: right}.")
    out.append(_dict_block("VALUE_HINTS", VALUE_HINTS))
    out.append("")
    out.append("# Every spelling of every option in name form (leading dashes dropped, '-' -> '_') -> name.")
    out.append("SPELLINGS = {}")
    out.append("for _name, _entry in FLAGS.items():")
    out.append('    for _opt in [_entry["option"]] + _entry["aliases"]:')
    out.append('        SPELLINGS[_opt[2:].replace("-", "_")] = _name')
    out.append("del _name, _entry, _opt")
    out.append("")
    return "\n".join(out)


def render_standin(dump):
    out = [(STANDIN_HEADER % {"version": dump["version"]}).rstrip("\n")]
    for a in dump["actions"]:
        fields = (a["options"], a["dest"], a["action"], a["type"], a["nargs"], a["const"], a["default"], a["choices"],
                  a["required"])
        out.append(_noqa("    (%s)," % ", ".join(_lit(f) for f in fields)))
    out.append("]")
    out.append("")
    return "\n".join(out)


def read_dump(python):
    """Run the dumper with ``python`` (an SGLang venv's interpreter) and return its JSON."""
    if not os.path.isfile(python):
        raise SystemExit("no SGLang interpreter at %s (set LLMSERVE_SGLANG_VENV or pass --python; "
                         "`make engine-assets` builds the CPU SGLang venv)" % python)
    with tempfile.TemporaryDirectory(prefix="sglang-flags-") as work:
        env = dict(os.environ, HOME=work, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONPATH="")
        proc = subprocess.run([python, DUMPER], cwd=work, env=env, capture_output=True, text=True, check=False,
                              timeout=300)
    if proc.returncode != 0:
        raise SystemExit("%s %s failed (rc %d):\n%s" % (python, DUMPER, proc.returncode, proc.stderr[-3000:]))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    venv = os.environ.get("LLMSERVE_SGLANG_VENV") or DEFAULT_VENV
    parser.add_argument("--python", default=os.path.join(venv, "bin", "python"), help="python of an SGLang venv")
    parser.add_argument("--dump", help="read the parser's actions from this JSON file instead of running --python")
    parser.add_argument("--table", default=TABLE, help="collection table to write")
    parser.add_argument("--standin", default=STANDIN, help="stand-in actions module to write")
    parser.add_argument("--check", action="store_true", help="only compare, exit 1 on drift")
    args = parser.parse_args(argv)
    if args.dump:
        with open(args.dump, encoding="utf-8") as handle:
            dump = json.load(handle)
    else:
        dump = read_dump(args.python)
    outputs = ((args.table, render_table(dump)), (args.standin, render_standin(dump)))
    drift = []
    for path, text in outputs:
        if args.check:
            current = None
            if os.path.isfile(path):
                with open(path, encoding="utf-8") as handle:
                    current = handle.read()
            if current != text:
                drift.append(path)
            continue
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        print("wrote %s (SGLang %s, %d options)" % (path, dump["version"], len(dump["actions"])))
    if drift:
        print("out of date with the installed SGLang %s: %s; run python %s" % (
            dump["version"], ", ".join(os.path.relpath(p, ROOT) for p in drift), os.path.relpath(__file__, ROOT)),
            file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
