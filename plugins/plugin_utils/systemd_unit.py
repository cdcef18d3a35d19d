# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Safe values for a systemd unit, and the NVIDIA device classes a hardened unit must allow.

A value written into a unit file has to survive systemd's parser unchanged, and each directive parses
differently (systemd.service(5), systemd.exec(5), systemd.unit(5)):

* every directive expands ``%`` specifiers, so a literal ``%`` is written ``%%``;
* ``ExecStart=`` splits words at whitespace, honours quotes and C escapes, expands ``$VAR``/``${VAR}``
  (a literal ``$`` is ``$$``) and reads prefixes such as ``+`` (run as root) and ``-`` off the executable
  *after* unquoting, so the executable must be an absolute path;
* ``Environment=`` honours quotes and C escapes but gives ``$`` no meaning (``$$`` would stay ``$$``);
* ``Description=``, ``User=``, ``WorkingDirectory=`` take the rest of the line as it is (no quoting);
* an ``EnvironmentFile=`` is read by a shell-like parser: inside double quotes a backslash escapes
  ``"``, ``\\``, `````` ` `````` and ``$``.

A control character is never allowed: systemd's parser stops a line at NUL and at a line break, so
either lets a value start a directive of its own (``ExecStartPre=+...`` runs as root). TAB is refused
too: no value the role writes has a use for it, and systemd treats it as a word separator outside
quotes and strips it at the ends of an EnvironmentFile value. C1 controls (U+0080..U+009F, NEL among
them) and the Unicode line/paragraph separators are refused with them, as YAML and Python read some of
them as line breaks.

``device_allow_problems`` compares the device nodes of a host with the names its ``/proc/devices``
gives their majors: ``DeviceAllow=char-NAME`` allows the majors listed under NAME in the
"Character devices" section (systemd matches NAME with ``fnmatch``), and with ``DevicePolicy=closed``
a node whose major no allowed name covers cannot be opened.

Standard library and module_utils/text.py only (also used on the controller by filters).
"""

from __future__ import annotations

import fnmatch
import re

from ansible_collections.llmserve.sglang.plugins.module_utils.text import printable as _printable

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_C0_NAMES = (
    "NUL", "SOH", "STX", "ETX", "EOT", "ENQ", "ACK", "BEL", "BS", "TAB", "LF", "VT", "FF", "CR", "SO", "SI",
    "DLE", "DC1", "DC2", "DC3", "DC4", "NAK", "SYN", "ETB", "CAN", "EM", "SUB", "ESC", "FS", "GS", "RS", "US",
)
_OTHER_NAMES = {0x7F: "DEL", 0x85: "NEL", 0x2028: "LINE SEPARATOR", 0x2029: "PARAGRAPH SEPARATOR"}

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# a portable user/group name (letters, digits, '_', '.', '-'; optional trailing '$' of machine accounts)
ACCOUNT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,30}\$?")
# systemd unit name characters, without '@' (no template instances) and without '\'
UNIT_NAME = re.compile(r"[A-Za-z0-9_:][A-Za-z0-9_.:-]{0,200}")
DEVICE_CLASS = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
INTEGER = re.compile(r"[0-9]+")

# Kinds of unit value ``unit_value`` knows.
KINDS = ("text", "account", "path", "executable", "argument", "environment", "env_file", "integer",
         "device_class")


class UnitValueError(ValueError):
    """A value that must not be written into a unit; the message names the variable and the rule."""


def char_name(char):
    """Short name of a control character: ``NUL``, ``TAB``, ``DEL``, ``NEL``, else ``U+0080``."""
    code = ord(char)
    if code < 0x20:
        return _C0_NAMES[code]
    return _OTHER_NAMES.get(code, "U+%04X" % code)


def find_control(text):
    """``(name, offset)`` of the first control character in ``text``, or None."""
    match = _CONTROL.search(text)
    if match is None:
        return None
    return char_name(match.group()), match.start()


def control_problem(text, secret=False):
    """The rule text for a value with a control character (``None`` when it has none)."""
    found = find_control(text)
    if found is None:
        return None
    note = "; value not shown" if secret else ""
    return "contains a control character (%s at offset %d%s)" % (found[0], found[1], note)


def printable(text):
    """``text`` with control (and other non-printable) characters written as escapes, for messages that quote a
    name."""
    return _printable(text, escape=True)


def path_problem(text):
    """The rule a path for the unit breaks, or None: absolute, and nothing systemd would split or expand."""
    problem = control_problem(text)
    if problem:
        return problem
    if not text.startswith("/"):
        return "must be an absolute path, got %r" % text
    if re.search(r"\s", text):
        return "must not contain whitespace, got %r" % text
    for char in "\"'\\":
        if char in text:
            return "must not contain %s, got %r" % (char, text)
    if "/../" in text + "/" or text.endswith("/.."):
        return "must not contain '..' components, got %r" % text
    return None


def _percent(text):
    return text.replace("%", "%%")


def _c_quote(text):
    return '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"')


def unit_value(value, kind, variable):
    """Return ``value`` written for a unit line of the given kind; raise ``UnitValueError`` when it cannot be.

    ``text``          free text (``Description=``): specifiers escaped.
    ``account``       a user or group name (``User=``, ``Group=``).
    ``path``          an absolute path (``WorkingDirectory=``, ``ReadWritePaths=``, ``EnvironmentFile=``).
    ``executable``    the absolute program path of ``ExecStart=``, quoted.
    ``argument``      one ``ExecStart=`` argument, quoted (``$`` doubled, so it reaches the program as is).
    ``environment``   ``NAME=value`` for ``Environment=``, quoted (``$`` kept as is).
    ``env_file``      ``NAME=value`` line of an ``EnvironmentFile``, value double-quoted.
    ``integer``       a non-negative integer (``RestartSec=`` ...).
    ``device_class``  a ``/proc/devices`` name for ``DeviceAllow=char-NAME``.
    """
    if kind not in KINDS:
        raise UnitValueError("%s: unknown unit value kind %r (one of %s)" % (variable, kind, ", ".join(KINDS)))
    if isinstance(value, bool) or value is None or isinstance(value, (dict, list, tuple)):
        wanted = "number" if kind == "integer" else "string"
        got = "null" if value is None else type(value).__name__
        raise UnitValueError("%s: must be a %s, got %s" % (variable, wanted, got))
    text = str(value)
    secret = kind == "env_file"
    problem = control_problem(text, secret=secret)
    if problem is not None:
        raise UnitValueError("%s: %s" % (variable, problem))
    if kind == "text":
        return _percent(text)
    if kind == "integer":
        if not INTEGER.fullmatch(text):
            raise UnitValueError("%s: must be a whole number of at least 0, got %r" % (variable, text))
        return text
    if kind == "account":
        if not ACCOUNT_NAME.fullmatch(text):
            raise UnitValueError("%s: must be a user or group name (letters, digits, '_', '.' and '-', not "
                                 "starting with a digit, '.' or '-', at most 32 characters), got %r" % (variable, text))
        return text
    if kind == "device_class":
        if not DEVICE_CLASS.fullmatch(text):
            raise UnitValueError("%s: must be a device name as /proc/devices lists it, got %r" % (variable, text))
        return text
    if kind in ("path", "executable"):
        problem = path_problem(text)
        if problem is not None:
            raise UnitValueError("%s: %s" % (variable, problem))
        return _percent(text) if kind == "path" else _c_quote(_percent(text))
    if kind == "argument":
        return _c_quote(_percent(text).replace("$", "$$"))
    name, sep, rest = text.partition("=")
    if not sep or not ENV_NAME.fullmatch(name):
        raise UnitValueError("%s: %r is not a valid environment variable name (letters, digits and '_', not "
                             "starting with a digit)" % (variable, name))
    if kind == "environment":
        return _c_quote(_percent(text))
    # env_file: systemd's reader keeps everything between double quotes, with \ escaping only " \ ` $
    escaped = rest
    for char in ("\\", '"', "`", "$"):
        escaped = escaped.replace(char, "\\" + char)
    return '%s="%s"' % (name, escaped)


# ---- NVIDIA device classes -------------------------------------------------------------------------------


def _int_field(item, key, where):
    value = item.get(key) if isinstance(item, dict) else None
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.strip().isdigit():
            return int(value.strip())
        raise ValueError("%s: %r must be an integer, got %r" % (where, key, value))
    return value


def device_allow_problems(char_devices, device_nodes, allowed_classes):
    """Every device node that ``DeviceAllow=char-<class>`` lines for ``allowed_classes`` would not open.

    ``char_devices``: ``[{'major': int, 'name': str}]`` from the "Character devices:" section of
    ``/proc/devices``. ``device_nodes``: ``[{'path': str, 'major': int, 'minor': int}]`` of the NVIDIA
    nodes (``/dev/nvidia*``, ``/dev/nvidia-caps/*``). ``allowed_classes``: the names written after
    ``char-`` (matched like systemd does, with ``fnmatch``). Returns one message per node whose major
    no allowed class covers, naming the node, its major and the names ``/proc/devices`` gives it.
    Raises ``ValueError`` for input of the wrong shape.
    """
    for name, value in (("char_devices", char_devices), ("device_nodes", device_nodes),
                        ("allowed_classes", allowed_classes)):
        if not isinstance(value, (list, tuple)):
            raise ValueError("%s must be a list, got %s" % (name, type(value).__name__))
    names_by_major = {}
    for position, item in enumerate(char_devices):
        where = "char_devices[%d]" % position
        major = _int_field(item, "major", where)
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError("%s: 'name' must be a non-empty string, got %r" % (where, name))
        names_by_major.setdefault(major, []).append(name)
    classes = []
    for position, pattern in enumerate(allowed_classes):
        if not isinstance(pattern, str) or not pattern:
            raise ValueError("allowed_classes[%d] must be a non-empty string, got %r" % (position, pattern))
        classes.append(pattern)
    allowed_majors = {major for major, names in names_by_major.items()
                      if any(fnmatch.fnmatchcase(name, pattern) for name in names for pattern in classes)}
    problems = []
    for position, node in enumerate(device_nodes):
        where = "device_nodes[%d]" % position
        major = _int_field(node, "major", where)
        minor = _int_field(node, "minor", where)
        path = node.get("path")
        if not isinstance(path, str) or not path:
            raise ValueError("%s: 'path' must be a non-empty string, got %r" % (where, path))
        if major in allowed_majors:
            continue
        names = names_by_major.get(major)
        if names:
            known = "/proc/devices names major %d %s" % (major, ", ".join(repr(n) for n in names))
        else:
            known = "/proc/devices does not list major %d" % major
        problems.append("%s (char %d:%d): the unit's DeviceAllow= classes (%s) do not cover major %d; %s, so "
                        "with DevicePolicy=closed SGLang could not open it" % (
                            printable(path), major, minor, ", ".join(classes) or "none", major, known))
    return problems
