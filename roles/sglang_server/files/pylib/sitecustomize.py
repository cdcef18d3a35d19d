# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Keep SGLang's secrets out of its log (and so out of the journal).

SGLang logs its resolved server arguments at start-up, the API key included in clear text
(``server_args={... 'api_key': '...' ...}`` in 0.5.23), and any exception message or ``print`` may
carry a secret too. The sglang_server role puts this directory on the unit's PYTHONPATH, so Python
imports this module at start-up in the server and in every worker it spawns. It

* learns the literal secrets: the API key (and ``admin-api-key``, ``ssl-keyfile-password``) from the
  ``--config`` YAML file the server reads (its path comes from ``LLMSERVE_REDACT_CONFIG``, which the
  role sets, or from ``--config`` on the command line), the Hugging Face token from the environment
  (``HF_TOKEN`` ...); none of them is ever on the command line or in the unit;
* masks those values, and the values of ``api_key=``-shaped settings, in every log record (message,
  traceback, stack) before any handler sees it;
* wraps ``sys.stdout`` and ``sys.stderr`` so that ``print``, tracebacks of uncaught exceptions and
  warnings are masked as well; a write that ends in the first characters of a secret is held back
  until the next write or flush, so a secret split over two writes is still caught;
* then hands over to the next ``sitecustomize`` on ``sys.path`` (the distribution's own, if any),
  which this file shadows.

Not covered: bytes written to ``sys.stdout.buffer`` or straight to file descriptors 1 and 2 (C and CUDA
libraries, child programs), and a secret split by an explicit flush between its two halves.
"""

import logging
import os
import re
import sys
import threading

_MASK = "<redacted>"
_CONFIG_ENV = "LLMSERVE_REDACT_CONFIG"
_ENV_SECRETS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HUGGINGFACE_HUB_TOKEN")
_CONFIG_KEY = re.compile(
    r"""(?P<q>['"]?)(?:admin[-_]api[-_]key|api[-_]key|ssl[-_]keyfile[-_]password)(?P=q)\s*:(?:\s+(?P<v>.*?))?\s*""")
_MAX_CONFIG_BYTES = 1 << 20

_NAMES = r"(?:admin_api_key|api_key|ssl_keyfile_password)"
_OPTIONS = r"(?:--admin-api-key|--api-key|--ssl-keyfile-password)"
_PATTERNS = (
    # 'api_key': 'x' / "api_key": "x" (dict repr, JSON) and api_key='x' (dataclass repr, keyword arguments)
    re.compile(r"""(?P<head>(?P<q>['"]?)%s(?P=q)\s*[:=]\s*)(?P<v>'[^']*'|"[^"]*")""" % _NAMES),
    # --api-key x, --api-key=x (command lines) and '--api-key', 'x' (argv lists)
    re.compile(r"""(?P<head>%s(?:=|\s+))(?P<v>'[^']*'|"[^"]*"|[^\s'",}\]]+)""" % _OPTIONS),
    re.compile(r"""(?P<head>(?P<q>['"])%s(?P=q),\s*)(?P<v>'[^']*'|"[^"]*")""" % _OPTIONS),
)

# The literal secret values, longest first (one may contain another), and one pattern matching any of them
# (a single pass, so that a mask is never masked again).
_SECRETS = []
_LITERAL = [None]


def redact(text):
    """Return ``text`` with the known secret values and the values of secret settings replaced."""
    if _LITERAL[0] is not None:
        text = _LITERAL[0].sub(_MASK, text)
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: m.group("head") + _quoted_mask(m.group("v")), text)
    return text


def _quoted_mask(value):
    return value[0] + _MASK + value[0] if value[:1] in ("'", '"') else _MASK


# ---- learning the secrets ------------------------------------------------------------------------------


def _yaml_scalar(text):
    """The value of a one-line YAML scalar as the role writes it (plain, 'single' or "double" quoted)."""
    if text is None or text == "":
        return None
    if text[0] == "'":
        end = text.rfind("'")
        return text[1:end].replace("''", "'") if end > 0 else None
    if text[0] == '"':
        import json  # pylint: disable=import-outside-toplevel
        end = text.rfind('"')
        try:
            return json.loads(text[:end + 1]) if end > 0 else None
        except ValueError:
            return None
    value = re.split(r"\s+#", text, maxsplit=1)[0].strip()
    return None if value in ("", "~", "null", "Null", "NULL") else value


def _config_secrets(path):
    """Secret values from the --config YAML file (top-level keys only, as SGLang reads it)."""
    try:
        with open(path, "rb") as handle:
            text = handle.read(_MAX_CONFIG_BYTES).decode("utf-8", "replace")
    except (OSError, ValueError):
        return []
    found, unparsed = [], False
    for line in text.splitlines():
        match = _CONFIG_KEY.fullmatch(line)
        if match is None:
            continue
        value = _yaml_scalar(match.group("v"))
        if value is None:
            unparsed = unparsed or bool(match.group("v"))
        else:
            found.append(value)
    if unparsed:  # a layout the line reader does not know: let PyYAML (an SGLang dependency) read it
        try:
            import yaml  # pylint: disable=import-outside-toplevel
            data = yaml.safe_load(text)
        except Exception:  # never stop the server for the hook
            data = None
        if isinstance(data, dict):
            for key, value in data.items():
                if isinstance(key, str) and _CONFIG_KEY.fullmatch("%s: x" % key) and isinstance(value, str):
                    found.append(value)
    return found


def _config_path():
    path = os.environ.get(_CONFIG_ENV)
    if path:
        return path
    argv = list(getattr(sys, "argv", None) or [])
    for position, arg in enumerate(argv):
        if arg == "--config" and position + 1 < len(argv):
            path = argv[position + 1]
        elif arg.startswith("--config="):
            path = arg[len("--config="):]
    if path:
        # workers started with the spawn method do not see the server's argv; they read the variable
        os.environ[_CONFIG_ENV] = path
    return path


def _learn_secrets():
    secrets = set()
    path = _config_path()
    if path:
        secrets.update(_config_secrets(path))
    for name in _ENV_SECRETS:
        value = os.environ.get(name)
        if value:
            secrets.add(value)
    _SECRETS[:] = sorted((s for s in secrets if isinstance(s, str) and s), key=len, reverse=True)
    _LITERAL[0] = re.compile("|".join(re.escape(s) for s in _SECRETS)) if _SECRETS else None


# ---- log records ---------------------------------------------------------------------------------------


def _install_record_factory():
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
        try:
            if record.exc_info and not record.exc_text:
                # formatted now, masked, and kept: Formatter.format uses exc_text when it is set
                record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            if record.stack_info:
                record.stack_info = redact(record.stack_info)
        except Exception:
            pass
        return record

    logging.setLogRecordFactory(factory)


# ---- stdout / stderr -----------------------------------------------------------------------------------


def _held_back(text):
    """How many characters at the end of ``text`` could be the start of a secret."""
    longest = 0
    last = text[-1:]
    for secret in _SECRETS:
        for size in range(min(len(secret) - 1, len(text)), longest, -1):
            # the cheap test first: most writes end in a character the prefix does not end in
            if secret[size - 1] == last and text.endswith(secret[:size]):
                longest = size
                break
    return longest


class RedactingStream(object):
    """A text stream that masks the known secrets in what is written to it; all else is the wrapped stream's."""

    def __init__(self, stream):
        self._stream = stream
        self._pending = ""
        self._lock = threading.RLock()

    def write(self, text):
        if not isinstance(text, str):
            return self._stream.write(text)
        with self._lock:
            data = redact(self._pending + text)
            keep = _held_back(data)
            self._pending = data[len(data) - keep:] if keep else ""
            out = data[:len(data) - keep] if keep else data
            if out:
                self._stream.write(out)
        return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        with self._lock:
            if self._pending:
                pending, self._pending = self._pending, ""
                self._stream.write(pending)
        return self._stream.flush()

    def __getattr__(self, name):
        if name == "_stream":  # not yet set (copy, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self._stream, name)


def _wrap_std_streams():
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name, None)
        if stream is None or isinstance(stream, RedactingStream):
            continue
        wrapped = RedactingStream(stream)
        setattr(sys, name, wrapped)
        if getattr(sys, "__%s__" % name, None) is stream:
            setattr(sys, "__%s__" % name, wrapped)


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


try:
    _learn_secrets()
except Exception:  # without the literal values the pattern rules still apply
    pass
_install_record_factory()
if _SECRETS:
    _wrap_std_streams()
try:
    _chain()
except Exception:  # the distribution's hook is optional; never stop the server for it
    pass
