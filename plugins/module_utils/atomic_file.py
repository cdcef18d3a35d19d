# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Replacing a small file (JSON, or any text) so that a reader sees the old content or the new one, never half of
either."""

from __future__ import annotations

import json
import os
import tempfile


def write_json_atomic(path, data, prefix, mode=0o600, durable=False, **dump_options):
    """Write ``data`` as JSON to a new file beside ``path`` (named ``prefix`` + random, created exclusively, so a
    link planted there is never followed), give it ``mode``, flush it to disk when ``durable``, and rename it over
    ``path``. On any error the new file is removed and the old ``path`` is left as it was."""
    _replace(path, prefix, mode, durable, lambda handle: json.dump(data, handle, **dump_options))


def write_text_atomic(path, text, prefix, mode=0o600, durable=False):
    """Write ``text`` (UTF-8) the same way as :func:`write_json_atomic`. The new file's name is ``prefix`` and random
    characters only, so a reader that picks files by their suffix (node exporter's ``*.prom``) never sees it."""
    _replace(path, prefix, mode, durable, lambda handle: handle.write(text))


def _replace(path, prefix, mode, durable, write):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=prefix)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            write(handle)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
            os.fchmod(handle.fileno(), mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
