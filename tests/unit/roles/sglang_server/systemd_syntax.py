# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Read unit files and EnvironmentFiles back the way systemd 252 does, for the tests of the rendered unit.

Follows src/shared/conf-parser.c (lines end at LF, CR or NUL; a trailing backslash continues a line;
'#' and ';' start comments), src/basic/extract-word.c (quotes, C escapes), the specifier expansion of
src/shared/specifier.c ('%%' -> '%'; any other specifier is reported, the role's unit uses none), the
$-expansion of ExecStart= at exec time ('$$' -> '$'; a real variable reference is reported) and the
double-quoted values of src/basic/env-file.c. Only what the role's files can contain is implemented;
anything else raises ``SyntaxError`` so that a test fails instead of guessing.
"""

from __future__ import annotations

import re

_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\",
            '"': '"', "'": "'", "s": " "}


def directives(text):
    """``[(section, key, value)]`` of a unit file, in file order."""
    lines = re.split(r"\r\n|\n|\r|\x00", text)
    result, section, pending = [], None, None
    for line in lines:
        stripped = line.strip()
        if pending is not None:
            if stripped.startswith(("#", ";")):
                continue
            line = pending + " " + line
            pending = None
            stripped = line.strip()
        if stripped.endswith("\\") and not stripped.endswith("\\\\"):
            pending = stripped[:-1]
            continue
        if not stripped or stripped.startswith(("#", ";")):
            continue
        if stripped.startswith("[") and stripped.endswith("]"):
            section = stripped[1:-1]
            continue
        key, sep, value = stripped.partition("=")
        if not sep:
            raise SyntaxError("not an assignment: %r" % stripped)
        result.append((section, key.strip(), value.strip()))
    return result


def values(text, key, section="Service"):
    return [v for s, k, v in directives(text) if s == section and k == key]


def words(text):
    """extract_first_word(EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE) repeated over ``text``."""
    out, i, n = [], 0, len(text)
    while True:
        while i < n and text[i] in " \t\n\r":
            i += 1
        if i >= n:
            return out
        word, quote = [], None
        while i < n:
            char = text[i]
            if char == "\\":
                i += 1
                if i >= n:
                    raise SyntaxError("trailing backslash in %r" % text)
                escaped = text[i]
                if escaped == "x":
                    word.append(chr(int(text[i + 1:i + 3], 16)))
                    i += 3
                    continue
                if escaped not in _ESCAPES:
                    raise SyntaxError("escape \\%s in %r is not implemented here" % (escaped, text))
                word.append(_ESCAPES[escaped])
                i += 1
                continue
            if quote:
                if char == quote:
                    quote = None
                else:
                    word.append(char)
            elif char in "\"'":
                quote = char
            elif char in " \t\n\r":
                break
            else:
                word.append(char)
            i += 1
        if quote:
            raise SyntaxError("unterminated quote in %r" % text)
        out.append("".join(word))


def specifiers(text):
    """Resolve '%%'; any other specifier is an error (the role's unit must not use one by accident)."""
    def one(match):
        if match.group(1) == "%":
            return "%"
        raise SyntaxError("specifier %%%s in %r" % (match.group(1) or "(end)", text))
    return re.sub(r"%(.|\Z)", one, text, flags=re.S)


def exec_argv(value):
    """ExecStart= value -> the argv the process receives (prefix characters are reported)."""
    argv = [specifiers(w) for w in words(value)]
    if argv and argv[0][:1] in "-@:+!|":
        raise SyntaxError("ExecStart prefix %r in %r" % (argv[0][0], argv[0]))

    def dollar(word):
        def one(match):
            if match.group(0) == "$$":
                return "$"
            raise SyntaxError("variable reference %s in %r" % (match.group(0), word))
        return re.sub(r"\$\$|\$\{?[A-Za-z_]", one, word)
    return [dollar(w) for w in argv]


def environment(value):
    """Environment= value -> dict (specifiers first, then words, as config_parse_environ)."""
    env = {}
    for word in words(specifiers(value)):
        name, sep, val = word.partition("=")
        if not sep:
            raise SyntaxError("not NAME=value: %r" % word)
        env[name] = val
    return env


def env_file(text):
    """The assignments of an EnvironmentFile whose values are double-quoted (what the role writes)."""
    env = {}
    for line in re.split(r"\r\n|\n|\r", text):
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", ";")):
            continue
        match = re.fullmatch(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"', stripped)
        if match is None:
            raise SyntaxError("not NAME=\"value\": %r" % stripped)
        env[match.group(1)] = re.sub(r'\\(.)', lambda m: m.group(1) if m.group(1) in '"\\`$' else m.group(0),
                                     match.group(2))
    return env
