# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Keep SGLang's secrets out of its log (and so out of the journal).

SGLang logs its resolved server arguments at start-up, the API key included in clear text
(``server_args={... 'api_key': '...' ...}`` in 0.5.23). The sglang_server role puts this directory on
the unit's PYTHONPATH, so Python imports this module at start-up in the server and in every worker it
spawns. It installs a log-record factory that masks the values of the secret settings in each message
before any handler formats it, then hands over to the next ``sitecustomize`` on ``sys.path`` (the
distribution's own, if any), which this file shadows.
"""

import logging
import os
import re
import sys

_NAMES = r"(?:admin_api_key|api_key|ssl_keyfile_password)"
_OPTIONS = r"(?:--admin-api-key|--api-key|--ssl-keyfile-password)"
_MASK = "<redacted>"
_PATTERNS = (
    # 'api_key': 'x' / "api_key": "x" (dict repr, JSON) and api_key='x' (dataclass repr, keyword arguments)
    re.compile(r"""(?P<head>(?P<q>['"]?)%s(?P=q)\s*[:=]\s*)(?P<v>'[^']*'|"[^"]*")""" % _NAMES),
    # --api-key x, --api-key=x (command lines) and '--api-key', 'x' (argv lists)
    re.compile(r"""(?P<head>%s(?:=|\s+))(?P<v>'[^']*'|"[^"]*"|[^\s'",}\]]+)""" % _OPTIONS),
    re.compile(r"""(?P<head>(?P<q>['"])%s(?P=q),\s*)(?P<v>'[^']*'|"[^"]*")""" % _OPTIONS),
)


def redact(text):
    """Return ``text`` with the values of secret settings replaced."""
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: m.group("head") + _quoted_mask(m.group("v")), text)
    return text


def _quoted_mask(value):
    return value[0] + _MASK + value[0] if value[:1] in ("'", '"') else _MASK


def _install():
    previous = logging.getLogRecordFactory()

    def factory(*args, **kwargs):
        record = previous(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a broken format string is logging's problem to report, not ours
            return record
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return record

    logging.setLogRecordFactory(factory)


def _chain():
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        if not entry or os.path.abspath(entry) == here:
            continue
        candidate = os.path.join(entry, "sitecustomize.py")
        if os.path.isfile(candidate):
            with open(candidate) as handle:
                code = compile(handle.read(), candidate, "exec")
            exec(code, {"__name__": "sitecustomize", "__file__": candidate})
            return


_install()
try:
    _chain()
except Exception:  # the distribution's hook is optional; never stop the server for it
    pass
