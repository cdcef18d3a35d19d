# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Reader for SGLang ``--config`` files, for the llmserve SGLang stand-in.

PyYAML is used when it is importable (as the real SGLang does).  Hosts without it get this
small parser, which understands the subset a ``--config`` file needs:

* one top-level mapping of ``key: value`` lines (``---`` at the top is allowed);
* ``#`` comments (whole-line, or after a space outside quotes) and blank lines;
* plain scalars: ``true/false/yes/no/on/off`` (booleans, as YAML 1.1), ``null``/``~``/nothing,
  integers, floats, anything else is a string;
* ``'single'`` (``''`` for a quote) and ``"double"`` quoted strings (``\\" \\\\ \\n \\t \\uXXXX`` escapes);
* a scalar continued on more-indented lines (folded with single spaces, as YAML does for
  plain and quoted multi-line scalars - what ``to_nice_yaml`` writes for long values);
* lists: flow style ``[a, "b", 3]`` (flat) or block style (``- item`` lines below ``key:``).

Anything else (nested mappings, anchors, tags, ``|``/``>`` block scalars, flow mappings) is
rejected with a :class:`ConfigSyntaxError` naming the line, rather than being misread.
"""

from __future__ import annotations

import json
import os
import re


class ConfigSyntaxError(ValueError):
    """The file uses YAML outside the supported subset (or is not YAML at all)."""


_INT = re.compile(r"^[-+]?(0|[1-9][0-9_]*)$")
_FLOAT = re.compile(r"^[-+]?(\d[\d_]*)?\.\d*([eE][-+]?\d+)?$|^[-+]?\d[\d_]*[eE][-+]?\d+$")
_KEY = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_.\-]*)\s*:(?:\s+|$)(.*)$")
_TRUE = ("true", "yes", "on")
_FALSE = ("false", "no", "off")


def load(text):
    """Parse ``text`` into a dict (PyYAML when present, else the subset parser).

    ``LLMSERVE_STANDIN_YAML=subset`` forces the subset parser (used by the tests)."""
    if os.environ.get("LLMSERVE_STANDIN_YAML") == "subset":
        return parse_subset(text)
    try:
        import yaml  # noqa: F401  pylint: disable=import-outside-toplevel
    except ImportError:
        return parse_subset(text)
    data = yaml.safe_load(text)
    return {} if data is None else data


def _strip_comment(line):
    """Remove a trailing comment that is outside quotes."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip()
    return line.rstrip()


def _scalar(text, lineno):
    text = text.strip()
    if text == "" or text in ("~", "null", "Null", "NULL"):
        return None
    if text[0] in "&*!|>{" or text[0] == "%" or text[0] == "@" or text[0] == "`":
        raise ConfigSyntaxError("line %d: %r is outside the YAML subset the stand-in reads" % (lineno, text))
    if text[0] == "'":
        if len(text) < 2 or text[-1] != "'":
            raise ConfigSyntaxError("line %d: unterminated single-quoted string" % lineno)
        return text[1:-1].replace("''", "'")
    if text[0] == '"':
        try:
            value = json.loads(text, strict=False)
        except ValueError:
            raise ConfigSyntaxError("line %d: bad or unterminated double-quoted string %s" % (lineno, text))
        if not isinstance(value, str):
            raise ConfigSyntaxError("line %d: bad double-quoted string %s" % (lineno, text))
        return value
    if text[0] == "[":
        if text[-1] != "]":
            raise ConfigSyntaxError("line %d: unterminated flow list" % lineno)
        inner = text[1:-1].strip()
        if not inner:
            return []
        if "[" in inner or "{" in inner:
            raise ConfigSyntaxError("line %d: nested flow collections are not supported" % lineno)
        return [_scalar(part, lineno) for part in _split_flow(inner, lineno)]
    lowered = text.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    if _INT.match(text):
        return int(text.replace("_", ""))
    if _FLOAT.match(text):
        return float(text.replace("_", ""))
    if lowered in (".inf", "+.inf"):
        return float("inf")
    if lowered == "-.inf":
        return float("-inf")
    if ": " in text or text.endswith(":"):
        raise ConfigSyntaxError("line %d: nested mappings are not supported (%r)" % (lineno, text))
    return text


def _split_flow(inner, lineno):
    parts, buf, quote = [], "", None
    for ch in inner:
        if quote:
            buf += ch
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            buf += ch
        elif ch == ",":
            parts.append(buf)
            buf = ""
        else:
            buf += ch
    if quote:
        raise ConfigSyntaxError("line %d: unterminated string in flow list" % lineno)
    parts.append(buf)
    return [p for p in parts if p.strip() != ""] if parts[-1].strip() == "" else parts


def parse_subset(text):
    """The subset parser (see the module docstring)."""
    result = {}
    lines = text.splitlines()
    i = 0
    first_content = True
    while i < len(lines):
        raw = lines[i]
        lineno = i + 1
        i += 1
        if "\t" in raw[:len(raw) - len(raw.lstrip())]:
            raise ConfigSyntaxError("line %d: tabs are not allowed for indentation in YAML" % lineno)
        line = _strip_comment(raw)
        if not line.strip():
            continue
        if first_content and line.strip() in ("---",):
            first_content = False
            continue
        first_content = False
        if line.strip() == "...":
            break
        if line[0] == " ":
            raise ConfigSyntaxError("line %d: unexpected indentation (only a flat mapping is supported)" % lineno)
        m = _KEY.match(line)
        if not m:
            raise ConfigSyntaxError("line %d: expected 'key: value', got %r" % (lineno, raw))
        key, rest = m.group(1), m.group(2)
        if key in result:
            raise ConfigSyntaxError("line %d: duplicate key %r" % (lineno, key))
        # gather more-indented continuation lines (block list items or a folded scalar)
        cont = []
        while i < len(lines):
            nxt = lines[i]
            stripped = _strip_comment(nxt)
            if not stripped.strip():
                if nxt.strip() == "" and cont and not cont[-1][1].lstrip().startswith("-"):
                    cont.append((i + 1, ""))  # an empty line inside a folded scalar is a newline
                i += 1
                continue
            if stripped[0] != " " and not (stripped.startswith("- ") or stripped == "-") or \
                    (stripped[0] != " " and rest.strip() != ""):
                break
            cont.append((i + 1, stripped))
            i += 1
        while cont and cont[-1][1] == "":
            cont.pop()
        if not cont:
            result[key] = _scalar(rest, lineno)
            continue
        if rest.strip() == "" and cont[0][1].lstrip().startswith("-"):
            items = []
            for ln, item in cont:
                item = item.strip()
                if not item.startswith("-"):
                    raise ConfigSyntaxError("line %d: expected a '- item' line in the list under %r" % (ln, key))
                value = item[1:]
                if value and value[0] != " ":
                    raise ConfigSyntaxError("line %d: expected '- item'" % ln)
                items.append(_scalar(value, ln))
            result[key] = items
            continue
        if rest.strip()[:1] in ("|", ">"):
            raise ConfigSyntaxError("line %d: block scalars (| and >) are not supported" % lineno)
        pieces = [rest.strip()] + [c[1].strip() for c in cont]
        if any(p.startswith("- ") for p in pieces[1:]) and rest.strip() == "":
            raise ConfigSyntaxError("line %d: mixed list and scalar under %r" % (lineno, key))
        folded = ""
        for piece in pieces:
            if piece == "":
                folded += "\n"
            elif folded == "" or folded.endswith("\n"):
                folded += piece
            else:
                folded += " " + piece
        if pieces[0] == "" and cont and _KEY.match(cont[0][1].strip()):
            raise ConfigSyntaxError("line %d: nested mappings are not supported (under %r)" % (cont[0][0], key))
        result[key] = _scalar(folded, lineno)
    return result
