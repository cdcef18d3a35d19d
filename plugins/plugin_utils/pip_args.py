# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Credentials in pip arguments: find them and mask them (controller side).

An index or proxy that needs a login is often given with the login in the URL: ``--index-url
https://user:token@pypi.internal/simple``, ``--extra-index-url https://token@host/simple``, ``--proxy
http://user:pass@proxy:3128`` (pip also takes the proxy without a scheme, ``user:pass@proxy:3128``), a direct
reference ``pkg @ https://user:token@host/pkg.whl``. The roles keep a record of what they installed and may
show a failed pip run; neither may carry such a login.

``redact_pip_args(args) -> list``
    ``args`` with every login (the user-info part before ``@`` of a URL, and of a ``--proxy`` value) replaced
    by ``***`` (the lone user of an ssh URL, ``git+ssh://git@host/...``, is an account name and stays).
    Anything without a login is returned unchanged, so a record without credentials keeps its form.
``pip_secrets(args) -> list``
    the logins found in ``args`` (the whole user-info, its password, its user when it has no password; also
    percent-decoded), longest first.
``redact_text(text, args) -> str``
    ``text`` (pip's output, an error message) with those logins and any URL user-info replaced by ``***``
    (a login shorter than 4 characters only where it stands alone).
"""

from __future__ import annotations

import re

MASK = "***"
# scheme://userinfo@ ; the user-info runs to the last '@' before the host part ends
_URL_LOGIN = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)([^/?#\s]*)@")
# a proxy without a scheme: userinfo@host[:port]
_BARE_LOGIN = re.compile(r"^([^/?#\s:@]+(?::[^/?#\s]*)?)@")


def _is_proxy_option(token):
    # optparse (pip's parser) takes any unambiguous prefix: --prox and --proxy
    name = token.split("=", 1)[0]
    return len(name) >= 6 and "--proxy".startswith(name)


def _unquote(text):
    try:
        from urllib.parse import unquote  # pylint: disable=import-outside-toplevel
    except ImportError:  # pragma: no cover - Python 2 is not supported on the controller
        return text
    return unquote(text)


def _secret_login(scheme, login):
    # the user of an ssh URL (git+ssh://git@host/...) names an account, not a secret; a password always is one
    return ":" in login or "ssh" not in scheme.lower()


def _mask_urls(text):
    return _URL_LOGIN.sub(lambda m: m.group(1) + (MASK if _secret_login(m.group(1), m.group(2)) else m.group(2))
                          + "@", text)


def _mask_value(value, proxy):
    masked = _mask_urls(value)
    if proxy and masked == value and "://" not in value:
        masked = _BARE_LOGIN.sub(MASK + "@", value)
    return masked


def _logins(value, proxy):
    found = [m.group(2) for m in _URL_LOGIN.finditer(value) if _secret_login(m.group(1), m.group(2))]
    if proxy and not found and "://" not in value:
        match = _BARE_LOGIN.match(value)
        if match:
            found.append(match.group(1))
    return found


def _walk(args):
    """(token, value part, is a proxy value) for every argument."""
    if not isinstance(args, (list, tuple)):
        raise TypeError("pip arguments must be a list, got %s" % type(args).__name__)
    proxy_next = False
    for token in args:
        text = "" if token is None else str(token)
        if proxy_next:
            yield text, True
            proxy_next = False
            continue
        if _is_proxy_option(text):
            if "=" in text:
                yield text, True
            else:
                proxy_next = True
                yield text, False
            continue
        yield text, False


def redact_pip_args(args):
    """``args`` with the logins masked (see the module documentation)."""
    result = []
    for text, proxy in _walk(args):
        if proxy and text.startswith("--") and "=" in text:
            option, value = text.split("=", 1)
            result.append(option + "=" + _mask_value(value, True))
        else:
            result.append(_mask_value(text, proxy))
    return result


def pip_secrets(args):
    """Every login in ``args`` (whole user-info, password, lone user; raw and percent-decoded), longest first."""
    secrets = set()
    for text, proxy in _walk(args):
        value = text.split("=", 1)[1] if proxy and text.startswith("--") and "=" in text else text
        for login in _logins(value, proxy):
            user, sep, password = login.partition(":")
            parts = [login, password] if sep else [login]
            if not sep or not password:
                parts.append(user)
            for part in parts:
                for form in (part, _unquote(part)):
                    if form:
                        secrets.add(form)
    return sorted(secrets, key=lambda s: (-len(s), s))


def redact_text(text, args=None):
    """``text`` with the logins of ``args`` and any URL user-info replaced by ``***``."""
    text = "" if text is None else str(text)
    for secret in pip_secrets(args or []):
        if len(secret) >= 4:
            text = text.replace(secret, MASK)
        else:
            # a very short one only where it stands alone: 'b' must not turn 'github' into 'githu***'
            text = re.sub(r"(?<![A-Za-z0-9])%s(?![A-Za-z0-9])" % re.escape(secret), MASK, text)
    return _mask_urls(text)
