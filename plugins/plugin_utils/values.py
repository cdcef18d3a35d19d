# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How the controller-side rules read inventory values: blank, integer, boolean.

Inventory values arrive as YAML scalars or as strings from ``-e`` and templating, so ``4`` and ``"4"`` are the same
integer and ``true``, ``"yes"`` and ``"on"`` the same boolean. Booleans are never integers here (``True`` is not 1):
a ``true`` where a count belongs is a mistake to report, not a value to use.

``blank(value)``
    None, or a string of white space only.
``as_int(value, default=None, floats=False, digits=None)``
    an ``int`` from an integer or a decimal string (optional sign, white space around it ignored), else ``default``;
    ``floats`` admits integral floats (``4.0``); ``digits`` caps the length of a string.
``as_bool(value, default=None)``
    a ``bool`` from a boolean or one of the words Ansible reads as one, else ``default``.
``finite_number(value)``
    a finite ``float`` from a number or a numeric string, else ``None`` (booleans, NaN and infinities are not).

Callers that must tell "no answer" from None pass a sentinel of their own as ``default``. Controller only.
"""

from __future__ import annotations

import math
import re

_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_BOOL_WORDS = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False, "0": False}


def blank(value):
    """True for None and for a string with nothing but white space."""
    return value is None or (isinstance(value, str) and not value.strip())


def as_int(value, default=None, floats=False, digits=None):
    """``value`` as an int when it is an integer (not a boolean) or a decimal string, else ``default``.

    ``floats``: also take a float without a fractional part (``4.0``). ``digits``: refuse a string with more
    digits than that (a value no setting can hold; int() of thousands of digits is refused by Python anyway).
    """
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return int(value) if floats and value.is_integer() else default
    if not isinstance(value, str):
        return default
    text = value.strip()
    if not _INT_TEXT.fullmatch(text) or (digits is not None and len(text.lstrip("+-")) > digits):
        return default
    try:
        return int(text)
    except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
        return default


def as_bool(value, default=None):
    """``value`` as a bool when it is one or one of true/yes/on/1, false/no/off/0 (any case), else ``default``."""
    if isinstance(value, bool):
        return value
    return _BOOL_WORDS.get(value.strip().lower(), default) if isinstance(value, str) else default


def finite_number(value):
    """``value`` as a finite ``float`` when it is a number or a numeric string, else ``None`` (never text)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None
