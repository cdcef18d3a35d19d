# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Text the modules report: secrets masked, hostile characters made visible, ``systemctl show`` read.

Masking (a server's answers, command lines, the modules' own sentences):

``is_secret_key(name)``
    whether a dictionary key or ``--flag`` name holds a secret (``api_key``, ``hf_token``, ``password`` ...).
``redact(value, secrets=())`` / ``redact_text(text, secrets=())``
    a copy with the secret keys, secret ``--flag value`` and ``name=value`` pairs, URL logins and the literal
    ``secrets`` replaced by ``REDACTED``.
``mask_secrets(text, secrets)``
    only the literal secrets and URL logins: for sentences the modules write themselves, which the patterns of
    ``redact_text`` would garble.
``mask_userinfo(text)``
    ``scheme://user:pass@host`` -> ``scheme://********@host``.

Cleaning:

``clean_text(text, limit=300)``
    server-controlled text on one line: control characters escaped, line breaks flattened, length capped.
``printable(text, limit=None, escape=False)``
    a name for a message: every character Python does not count as printable (controls, line and paragraph
    separators, bidirectional overrides, unassigned code points) shown as ``?`` or, with ``escape``, as ``\\xNN``.
``safe_text(text, limit=TEXT_LIMIT)`` / ``safe_value(value, limit=TEXT_LIMIT)``
    server-controlled text (or every string of parsed JSON, a report) as printable, valid UTF-8: surrogates joined
    or replaced, what ``printable`` refuses escaped (newlines kept), length capped.

``parse_systemctl_show(text)``
    ``systemctl show`` output (``Key=Value`` lines) as a dict.

Standard library only; importable on Python 3.9+ managed hosts and on the controller.
"""

from __future__ import annotations

import re

REDACTED = "********"


# Secrets in answers.  SGLang's /server_info returns api_key, admin_api_key, ssl_keyfile_password
# and its launch_command in clear text.  A key name is secret when, written in snake case
# (camelCase split, lower case, every run of other characters turned into "_"):
#   - it contains one of _SECRET_PARTS (password, passwd, passphrase, secret, api_key, apikey,
#     private_key, privatekey, access_key, accesskey, credential, authorization), or
#   - its last word is "token" or ends in "token" (hf_token, access_token, hftoken), or
#   - it is exactly "key".
# So ssl_keyfile, ssl_certfile, client_key, key_value, tokenizer_path, max_total_tokens,
# token_capacity and eos_token_id stay readable.
_SECRET_PARTS = ("password", "passwd", "passphrase", "secret", "api_key", "apikey", "private_key", "privatekey",
                 "access_key", "accesskey", "credential", "authorization")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NON_WORD = re.compile(r"[^a-z0-9]+")


def _snake(name):
    return _NON_WORD.sub("_", _CAMEL.sub("_", name).lower()).strip("_")


def is_secret_key(name):
    """True for dictionary keys (and ``--flag`` names) whose value must never be returned."""
    if not isinstance(name, str):
        return False
    snake = _snake(name)
    if not snake:
        return False
    if snake == "key" or any(part in snake for part in _SECRET_PARTS):
        return True
    return snake.rsplit("_", 1)[-1].endswith("token")


# --name value / --name=value on command lines (SGLang's launch_command).
# Heads only match names with a secret-looking word in them (is_secret_key decides), so the scan
# stays in the regex engine for ordinary text.
_SECRETISH = r"""(?=[\w-]*(?i:pass|secret|key|token|credential|authori))"""
_FLAG_HEAD = re.compile(r"""(?<![\w-])--""" + _SECRETISH + r"""([A-Za-z0-9][\w-]*)(?:=|[ \t]+)""")
_FLAG_VALUE = re.compile(r"""(?!--)(?:"[^"]*"|'[^']*'|[^\s"']\S*)""")
# name=value / name: value / "name": "value" / Authorization: Bearer x in log lines, reprs and URLs.
# A name can only start where a run of [\w-] starts, so every character is scanned a bounded number
# of times (a "." in the class would make "a.a.a...:" quadratic).
_ASSIGNMENT_HEAD = re.compile(r"""(?<![\w-])(["']?)""" + _SECRETISH + r"""([A-Za-z_][\w-]*)\1[ \t]*[=:][ \t]*""")
_ASSIGNMENT_VALUE = re.compile(
    r"""(?:(?:Bearer|Basic|Token|Digest)[ \t]+)?(?:"[^"]*"|'[^']*'|[^\s,;&)}\]"']+)""")
# scheme://userinfo@host
_USERINFO = re.compile(r"(//)[^/?#\s]*@")


def mask_userinfo(text):
    """``http://user:pass@host/`` -> ``http://********@host/`` wherever a URL appears in ``text``."""
    if not isinstance(text, str) or "@" not in text:
        return text
    return _USERINFO.sub(lambda m: m.group(1) + REDACTED + "@", text)


def _mask_values(text, head, value, name_group):
    """Replace the value after every ``head`` whose name is secret. Only masked values are consumed,
    so a harmless ``name=`` or ``--flag`` never hides the secret that follows it."""
    out = []
    pos = 0
    while True:
        match = head.search(text, pos)
        if match is None:
            break
        found = value.match(text, match.end()) if is_secret_key(match.group(name_group)) else None
        if found is not None and found.end() > match.end():
            out.append(text[pos:match.end()])
            out.append(REDACTED)
            pos = found.end()
        else:
            out.append(text[pos:match.end()])
            pos = match.end()
    out.append(text[pos:])
    return "".join(out)


def _longest_first(secrets):
    return sorted(set(s for s in secrets if s), key=len, reverse=True)


def redact_text(text, secrets=()):
    """Mask known secret strings, secret ``--flags`` and ``name=value`` pairs, and URL userinfo in ``text``."""
    return _redact_text(text, _longest_first(secrets))


def _redact_text(text, secrets):
    if not isinstance(text, str):
        return text
    for secret in secrets:  # longest first, so a secret that contains another is masked whole
        text = text.replace(secret, REDACTED)
    if "--" in text:
        text = _mask_values(text, _FLAG_HEAD, _FLAG_VALUE, 1)
    if "=" in text or ":" in text:
        text = _mask_values(text, _ASSIGNMENT_HEAD, _ASSIGNMENT_VALUE, 2)
    return mask_userinfo(text)


_BARE_FLAG = re.compile(r"^--([A-Za-z0-9][\w-]*)$")


def redact(value, secrets=()):
    """Copy of ``value`` with secret keys masked and secret strings cut out.

    ``secrets`` are literal strings (the API key the module sent, the password of the URL, the
    ``secrets`` option) that are replaced wherever they appear inside other strings.  In lists,
    an element after a bare secret flag (``["--api-key", "sk-1"]``) is masked as well.
    Recursion is bounded by the caller: JSON is only accepted up to MAX_JSON_DEPTH levels.
    """
    return _redact(value, _longest_first(secrets))


def _redact(value, secrets):
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if is_secret_key(key) and item not in (None, "", [], {}):
                out[key] = REDACTED
            else:
                out[key] = _redact(item, secrets)
        return out
    if isinstance(value, (list, tuple)):
        out = []
        hide_next = False
        for item in value:
            if hide_next and isinstance(item, str) and not item.startswith("--"):
                out.append(REDACTED)
                hide_next = False
                continue
            match = _BARE_FLAG.match(item) if isinstance(item, str) else None
            hide_next = bool(match and is_secret_key(match.group(1)))
            out.append(_redact(item, secrets))
        return out
    if isinstance(value, str):
        return _redact_text(value, secrets)
    return value


def mask_secrets(text, secrets):
    """``text`` with every literal secret (longest first) and URL userinfo masked; for the module's own sentences,
    which the pattern-based masking of redact_text would garble (it masks the word after "token:")."""
    if not isinstance(text, str):
        return text
    for secret in _longest_first(secrets):
        text = text.replace(secret, REDACTED)
    return mask_userinfo(text)


# --- cleaning ---------------------------------------------------------------------------------------

_CLEAN_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def clean_text(text, limit=300):
    """Server-controlled text (reason phrases, Location headers) made safe to return: control
    characters escaped, newlines flattened, length capped."""
    if text is None:
        return ""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = str(text).replace("\r", " ").replace("\n", " ")
    text = _CLEAN_CONTROL.sub(lambda m: "\\x%02x" % ord(m.group(0)), text)
    if len(text) > limit:
        text = text[:limit] + "...(%d characters cut)" % (len(text) - limit)
    return text


def _escaped(char):
    code = ord(char)
    if code < 0x100:
        return "\\x%02x" % code
    return "\\u%04x" % code if code < 0x10000 else "\\U%08x" % code


def printable(text, limit=None, escape=False):
    """``text`` (None is ``""``) cut to ``limit`` characters, each character that is not printable for Python
    (``str.isprintable``: C0/C1 controls, DEL, line/paragraph separators, format characters such as the bidi
    overrides, unassigned code points) written as ``?``, or with ``escape`` as ``\\xNN``/``\\uNNNN``/``\\UNNNNNNNN``.

    For messages that quote a name taken from a host, a file or the inventory: nothing in it can start a new line,
    move the cursor or reorder what the reader sees. The space is printable and stays."""
    text = "" if text is None else str(text)
    if limit is not None:
        text = text[:limit]
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else (_escaped(c) if escape else "?") for c in text)


# Server text: long enough for an error that quotes a journal tail, short enough that one answer cannot bloat the
# report, the job's artifacts and every place they are copied to.
TEXT_LIMIT = 10000
_SURROGATE = re.compile("[\ud800-\udfff]")


def safe_text(text, limit=TEXT_LIMIT):
    """Text a server chose (``None`` is ``""``) as printable, valid UTF-8: a surrogate pair (JSON ``"\\ud83d\\ude80"``
    decoded code unit by code unit) joined into the character it encodes, a lone surrogate replaced by U+FFFD, every
    other character :func:`printable` does not let through escaped as it escapes them (newlines are kept: an error
    quoting a journal has several lines), and at most ``limit`` characters, the cut said at the end.

    Idempotent, so a value may pass more than once. Python writes a lone surrogate into no file, and ansible-core
    refuses it in a module's result."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = "" if text is None else str(text)
    if _SURROGATE.search(text):
        # UTF-16 pairs what it can; the decoder replaces the rest
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if not text.isprintable():
        text = "\n".join(printable(line, escape=True) for line in text.split("\n"))
    if limit is not None and len(text) > limit:
        # the result is exactly ``limit`` long, so a second pass leaves it alone
        marker = "...(cut, %d characters)" % len(text)
        text = text[:max(0, limit - len(marker))] + marker
    return text


def safe_value(value, limit=TEXT_LIMIT):
    """A copy of ``value`` (parsed JSON, a report) with every string, dict keys too, made :func:`safe_text`; other
    values as they are. Recursion is bounded by the caller (JSON is only accepted up to MAX_JSON_DEPTH levels)."""
    if isinstance(value, str):
        return safe_text(value, limit)
    if isinstance(value, dict):
        return {(safe_text(key, limit) if isinstance(key, str) else key): safe_value(item, limit)
                for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [safe_value(item, limit) for item in value]
    return value


# --- systemd ----------------------------------------------------------------------------------------

def parse_systemctl_show(text):
    """``Key=Value`` lines from ``systemctl show`` into a dict."""
    props = {}
    for line in (text or "").splitlines():
        key, sep, val = line.partition("=")
        if sep:
            props[key.strip()] = val.strip()
    return props
