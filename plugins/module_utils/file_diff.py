# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What ``--diff`` shows of a file a deployment writes: a unified diff with every secret masked.

The files hold secrets (the API key in SGLang's ``--config`` YAML, the HF token and the gateway keys in environment
files), and Ansible output must never show one, so every line of both sides is masked before it is shown:

* the value of a ``NAME=value`` or ``name: value`` line whose name is secret (``is_secret_key``: api-key, HF_TOKEN,
  LLMSERVE_SMG_ADMIN_API_KEY, ...), including the lines that continue it (a YAML list or block under the key, a
  trailing backslash in an environment file): an old key that is being replaced is masked as well as the new one;
* every literal secret the caller names, wherever it appears;
* what ``redact_text`` masks in any text (secret ``--flags``, ``name=value`` inside a line, URL logins).

The lines are compared unmasked and shown masked, so a changed key still shows as a changed line
(``-api-key: ********`` / ``+api-key: ********``) without its value. The diff is returned ready to print
(``prepared``): the module's content parameter is no_log, and Ansible would replace a plain ``after`` equal to it
by a placeholder.

Standard library only: this runs on the managed hosts.
"""

from __future__ import annotations

import difflib
import re

from ansible_collections.llmserve.sglang.plugins.module_utils.text import (
    REDACTED,
    is_secret_key,
    redact_text,
)

# Ansible's own limit for file diffs (MAX_FILE_SIZE_FOR_DIFF); a bigger file is reported, not shown.
MAX_DIFF_SIZE = 104448
CONTEXT = 3
# [export ]["]name["] = or : value   (environment files, YAML, JSON, INI-style unit lines)
_NAMED_LINE = re.compile(r"""^(\s*(?:export\s+)?)(["']?)([A-Za-z_][\w.-]*)\2([ \t]*[=:])(.*)$""")


def _indent(line):
    return len(line) - len(line.lstrip(" \t"))


def _literal_pieces(secrets):
    """The literal secrets to cut out of single lines, longest first (a secret with a line break in it is cut out
    line by line)."""
    pieces = set()
    for secret in secrets or ():
        if isinstance(secret, str):
            pieces.update(part.strip() for part in secret.splitlines() if part.strip())
    return sorted(pieces, key=len, reverse=True)


def mask_lines(lines, secrets=()):
    """``lines`` (text without line ends) with every secret masked, one output line per input line."""
    pieces = _literal_pieces(secrets)
    out = []
    # the indentation of the secret key whose continuation lines are being masked, None when none is
    within = None
    continued = False
    for line in lines:
        if continued:
            # the previous line of a secret value ended in a backslash: this line is still the value
            continued = line.endswith("\\")
            out.append(REDACTED)
            continue
        if within is not None:
            stripped = line.lstrip(" \t")
            if stripped and (_indent(line) > within or (_indent(line) == within and stripped.startswith("-"))):
                out.append(line[:_indent(line)] + REDACTED)
                continue
            within = None
        match = _NAMED_LINE.match(line)
        if match and is_secret_key(match.group(3)):
            value = match.group(5)
            if value.strip():
                line = line[:match.start(5)] + (" " if value.startswith((" ", "\t")) else "") + REDACTED
                continued = value.endswith("\\")
            # an empty value or a YAML block indicator: the value follows on the lines indented below the key
            if not value.strip() or value.strip() in ("|", ">", "|-", ">-", "|+", ">+"):
                within = _indent(line)
            out.append(line)
            continue
        out.append(redact_text(line, pieces))
    return out


def mask_text(text, secrets=()):
    """``text`` with every secret masked (``mask_lines`` line by line; line ends kept)."""
    raw = text.splitlines(True)
    bodies = [line.rstrip("\r\n") for line in raw]
    masked = mask_lines(bodies, secrets)
    return "".join(m + line[len(body):] for m, line, body in zip(masked, raw, bodies))


def _decode(data):
    if data is None:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _attributes(attrs, kind=None):
    parts = ([kind] if kind else []) + ["%s %s" % (key, attrs[key]) for key in ("owner", "group", "mode")
                                        if attrs.get(key) is not None]
    return " (%s)" % ", ".join(parts) if parts else ""


def _range(start, length):
    # the unified diff format numbers lines from 1 and names an empty range by the line before it
    if length == 1:
        return "%d" % (start + 1)
    if not length:
        start -= 1
    return "%d,%d" % (start + 1, length)


def _hunks(before, after, shown_before, shown_after):
    """Unified diff hunks comparing ``before`` with ``after`` (lines with their ends) and showing the
    ``shown_*`` lines at the same places (the masked copies)."""
    out = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for group in matcher.get_grouped_opcodes(CONTEXT):
        first, last = group[0], group[-1]
        out.append("@@ -%s +%s @@\n" % (_range(first[1], last[2] - first[1]), _range(first[3], last[4] - first[3])))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(" " + line for line in shown_before[i1:i2])
                continue
            if tag in ("replace", "delete"):
                out.extend("-" + line for line in shown_before[i1:i2])
            if tag in ("replace", "insert"):
                out.extend("+" + line for line in shown_after[j1:j2])
    return out


def _lines(text):
    lines = text.splitlines(True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


def file_diff(path, before, after, before_attrs=None, after_attrs=None, secrets=()):
    """One entry of a module's ``diff``: ``{before_header, after_header, prepared}`` for the file ``path`` going from
    ``before`` to ``after`` (bytes; ``before`` None when the file does not exist yet).

    ``before_attrs``/``after_attrs``: ``{owner, group, mode}`` shown in the headers when they differ. ``prepared`` is
    the unified diff with every secret masked (``mask_lines``); a binary or large file is named, never shown.
    """
    before_attrs = before_attrs or {}
    after_attrs = after_attrs or {}
    attrs_differ = before is not None and before_attrs != after_attrs
    if before is None:
        before_header = "%s (absent)" % path
    else:
        before_header = path + (_attributes(before_attrs) if attrs_differ else "")
    after_header = "%s%s" % (path, _attributes(after_attrs) if before is None or attrs_differ else "")
    head = ["--- before: %s\n" % before_header, "+++ after: %s\n" % after_header]
    entry = dict(before_header=before_header, after_header=after_header)
    if before == after:
        body = []
    elif max(len(before or b""), len(after)) > MAX_DIFF_SIZE:
        body = ["content differs; diff skipped: the file is larger than %d bytes\n" % MAX_DIFF_SIZE]
    else:
        old, new = _decode(before), _decode(after)
        if old is None or new is None:
            body = ["content differs; diff skipped: the file is not UTF-8 text\n"]
        else:
            body = _hunks(_lines(old), _lines(new), _lines(mask_text(old, secrets)), _lines(mask_text(new, secrets)))
    entry["prepared"] = "".join(head + body)
    return entry


def directory_diff(path, exists, before_attrs=None, after_attrs=None):
    """The ``diff`` entry of a directory that is created or whose owner, group or mode change (headers only)."""
    before_header = "%s%s" % (path, _attributes(before_attrs or {}) if exists else " (absent)")
    after_header = "%s%s" % (path, _attributes(after_attrs or {}, "directory"))
    return dict(before_header=before_header, after_header=after_header,
                prepared="--- before: %s\n+++ after: %s\n" % (before_header, after_header))
