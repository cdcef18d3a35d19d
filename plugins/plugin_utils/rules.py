# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rule engine of the configuration checks: a problem collector, typed readers, path, address and range rules.

A checked area is a list of rule functions ``rule(cfg, problems)`` over one normalised configuration object
``cfg`` (what the area reads and what it has normalised so far); ``run_rules(rules, cfg, problems)`` calls them in
order. A rule reports through ``problems`` and stores the values it normalised on ``cfg``; rules are composed by
listing them, not by mixing classes together.

``Problems``
    collects every problem at once: ``add(variable, rule, fix=None)`` -> ``"variable: rule; fix"`` (``"variable:
    rule"`` without a fix), ``warn(variable, text)`` -> ``"variable: text"`` in ``warnings``; ``check(variable,
    problem, fix=None)`` adds ``problem`` when it is not None (a hook for any ``*_problem`` function that returns the
    rule a value breaks, such as ``systemd_unit.path_problem`` or an address parser) and says whether the value passed.
Typed readers
    ``read_int``, ``read_float``, ``read_bool``, ``read_str``, ``read_list``, ``read_dict``: the value in its type,
    or ``UNSET`` after adding ``"must be ..., got <describe(value)>"``; a blank value gives the default.
``describe(value)``
    how a message shows a value of the wrong type: ``boolean true``, ``'text'``, ``a dict``, ``a list``,
    ``int 4``.
Paths
    ``path_problem(path, ...)``: absolute, normalised, not '/', inside or outside given directories;
    ``read_path`` reads and checks one.
Addresses
    ``address_rule(problems, variable, value, parse, template, fix)``: ``parse`` returns the parsed address or the
    rule it breaks (a string), which ``template`` turns into the message.
Ranges
    ``range_rule(problems, variable, value, minimum, maximum)``: ``ranges.range_problems``' message for one value.
Readers in the gateway's and the monitoring's wording
    ``read_text`` (a string without control characters, stripped; optionally required), ``read_int_between`` (null
    refused too, ``between 1 and 65535``/``>= 1``), ``read_port`` (blank gives the default): a wrong value shown
    with ``describe_shown``. ``read_bool(words=True, what="true or false")`` takes Ansible's words for a boolean.

Controller only; standard library only.
"""

from __future__ import annotations

import posixpath

from ansible_collections.llmserve.sglang.plugins.plugin_utils.values import as_bool, as_int, blank
from ansible_collections.llmserve.sglang.plugins.plugin_utils.ranges import range_problems
from ansible_collections.llmserve.sglang.plugins.plugin_utils.systemd_unit import control_problem, printable

# what a reader returns for a value that broke its rule (None is a legitimate "unset")
UNSET = object()


def message(variable, rule, fix=None):
    """``variable: rule; fix`` (the fix only where there is one): the form of every problem the roles report."""
    return "%s: %s%s" % (variable, rule, "; " + fix if fix else "")


class Problems(object):
    """Every problem and warning of one check, in the order the rules found them."""

    def __init__(self):
        self.errors = []
        self.warnings = []

    def add(self, variable, rule, fix=None):
        self.errors.append(message(variable, rule, fix))

    def warn(self, variable, text):
        self.warnings.append("%s: %s" % (variable, text))

    def extend(self, messages):
        """Messages already in the ``variable: rule`` form (``ranges.range_problems``)."""
        self.errors.extend(messages)

    def check(self, variable, problem, fix=None):
        """Add ``problem`` (a rule text from a ``*_problem`` function) unless it is None; True when it is None."""
        if problem:
            self.add(variable, problem, fix)
            return False
        return True


def run_rules(rules, cfg, problems):
    """Call each ``rule(cfg, problems)`` in order."""
    for rule in rules:
        rule(cfg, problems)


def describe(value):
    """A value of the wrong type, for a message."""
    if isinstance(value, bool):
        return "boolean %s" % ("true" if value else "false")
    if isinstance(value, str):
        return "%r" % (value,)
    if isinstance(value, dict):
        return "a dict"
    if isinstance(value, (list, tuple)):
        return "a list"
    return "%s %r" % (type(value).__name__, value)


def shown(text, limit=100):
    """``text`` for a message: control characters escaped, cut after ``limit`` characters."""
    text = printable(str(text))
    if len(text) > limit:
        return "%s... (%d characters)" % (text[:limit], len(text))
    return text


def describe_shown(value, limit=100, containers=True):
    """``describe`` for values a user may have pasted anything into: texts escaped and cut (``shown`` after
    ``limit`` characters), None named. ``containers=False`` shows a dict or list like any other value (its type and
    its cut ``repr``) instead of just ``a dict``/``a list``."""
    if isinstance(value, bool):
        return "boolean %s" % ("true" if value else "false")
    if isinstance(value, str):
        return "%r" % (shown(value, limit),)
    if value is None:
        return "null"
    if containers and isinstance(value, dict):
        return "a dict"
    if containers and isinstance(value, (list, tuple)):
        return "a list"
    return "%s %s" % (type(value).__name__, shown(repr(value), limit))


# -- typed readers -------------------------------------------------------------------------------------------


def as_float(value):
    """``value`` as a number (int, float or decimal text), or ``UNSET`` (booleans are not numbers)."""
    if isinstance(value, bool):
        return UNSET
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return UNSET
    return UNSET


def _bounds(minimum, maximum):
    if minimum is not None and maximum is not None:
        return "from %s to %s" % (minimum, maximum)
    if minimum is not None:
        return ">= %s" % minimum
    if maximum is not None:
        return "<= %s" % maximum
    return ""


def read_int(problems, variable, raw, minimum=None, maximum=None, default=None, fix=None, digits=None, show=describe):
    """An integer (decimal text too; not a boolean) within the bounds: ``must be an integer >= 1, got 'x'``.

    ``digits``: refuse a text of more digits (``values.as_int``); ``show`` writes the refused value into the message
    (``describe``, ``describe_shown``, or ``repr`` where a message always showed the value that way)."""
    if raw is None:
        return default
    number = as_int(raw, UNSET, digits=digits)
    if number is UNSET or (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        span = _bounds(minimum, maximum)
        problems.add(variable, "must be an integer%s, got %s" % (" " + span if span else "", show(raw)), fix)
        return UNSET
    return number


def read_float(problems, variable, raw, default=None, fix=None):
    if raw is None:
        return default
    number = as_float(raw)
    if number is UNSET:
        problems.add(variable, "must be a number, got %s" % describe(raw), fix)
    return number


def read_bool(problems, variable, raw, default=None, fix=None, what="a boolean", show=describe, words=False):
    """A YAML boolean (text such as "yes" is not one): ``must be a boolean, got 'yes'``; None gives ``default``.

    ``words``: also the words Ansible reads as a boolean (``values.as_bool``: yes/no, on/off, 1/0 as text);
    ``what`` names the type in the message (``true or false``), ``show`` writes the value (as in ``read_int``)."""
    if raw is None:
        return default
    parsed = as_bool(raw, UNSET) if words else (raw if isinstance(raw, bool) else UNSET)
    if parsed is UNSET:
        problems.add(variable, "must be %s, got %s" % (what, show(raw)), fix)
    return parsed


def read_str(problems, variable, raw, default=None, fix=None):
    """A string; a blank value (None, empty or whitespace) gives ``default``."""
    if blank(raw):
        return default
    if not isinstance(raw, str):
        problems.add(variable, "must be a string, got %s" % describe(raw), fix)
        return UNSET
    return raw


def read_list(problems, variable, raw, what="a list", default=None, fix=None, show=describe):
    """A list (or tuple, returned as a list); ``show`` writes a refused value into the message (as in ``read_int``)."""
    if raw is None:
        return default
    if not isinstance(raw, (list, tuple)):
        problems.add(variable, "must be %s, got %s" % (what, show(raw)), fix)
        return UNSET
    return list(raw)


def read_dict(problems, variable, raw, what="a dict", default=None, fix=None):
    if raw is None:
        return default
    if not isinstance(raw, dict):
        problems.add(variable, "must be %s, got %s" % (what, describe(raw)), fix)
        return UNSET
    return raw


# -- paths ---------------------------------------------------------------------------------------------------


def _inside(path, folder):
    folder = folder.rstrip("/") or "/"
    return path == folder or path.startswith(folder if folder.endswith("/") else folder + "/")


def path_problem(path, normalised=False, not_root=False, inside=(), outside=()):
    """The rule an absolute POSIX path breaks, or None.

    ``normalised``: no '.', '..', '//' or trailing '/' (the path is what ``posixpath.normpath`` makes of it);
    ``not_root``: not '/' itself; ``inside``: within one of these directories; ``outside``: within none of them
    (nor one of them itself).
    """
    if not isinstance(path, str):
        return "must be a string, got %s" % describe(path)
    if not path.startswith("/"):
        return "must be an absolute path, got %r" % path
    norm = posixpath.normpath(path)
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    if normalised and norm != path:
        return "must be a normalised path (%r), got %r" % (norm, path)
    if not_root and norm == "/":
        return "must not be '/'"
    if inside and not any(_inside(norm, folder) for folder in inside):
        return "must be inside %s, got %r" % (" or ".join(inside), path)
    for folder in outside:
        if _inside(norm, folder):
            return "must not be inside %s, got %r" % (folder, path)
    return None


def read_path(problems, variable, raw, fix=None, **rules):
    """A string that is an absolute path keeping ``rules`` (see ``path_problem``), or ``UNSET``; blank: None."""
    text = read_str(problems, variable, raw, fix=fix)
    if text is None or text is UNSET:
        return text
    return text if problems.check(variable, path_problem(text, **rules), fix) else UNSET


# -- addresses and ranges ------------------------------------------------------------------------------------


def address_rule(problems, variable, value, parse, template="%s", fix=None):
    """``parse(value)`` returns the parsed address or the rule it breaks (a string); the rule goes through
    ``template`` (one ``%s``) into the message. Returns the parsed address or ``UNSET``."""
    parsed = parse(value)
    if isinstance(parsed, str):
        problems.add(variable, template % parsed, fix)
        return UNSET
    return parsed


def range_rule(problems, variable, value, minimum, maximum):
    """An integer from ``minimum`` to ``maximum`` (``ranges.range_problems``' rule and message); True when it is."""
    found = range_problems({variable: [value, minimum, maximum]})
    problems.extend(found)
    return not found


# -- readers in the words of the gateway's and the monitoring's messages -----------------------------------------
# A value a user may have pasted anything into is shown escaped and cut (describe_shown), bounds read "between 1 and
# 65535" or ">= 1".


def read_text(problems, variable, raw, required=False):
    """A string without control characters, stripped. A blank value is None, or ``must be set`` when ``required``;
    else ``must be a string, got <describe_shown(value)>`` or ``systemd_unit.control_problem``'s rule. ``UNSET``
    after a problem."""
    if blank(raw):
        if required:
            problems.add(variable, "must be set")
            return UNSET
        return None
    if not isinstance(raw, str):
        problems.add(variable, "must be a string, got %s" % describe_shown(raw))
        return UNSET
    if not problems.check(variable, control_problem(raw)):
        return UNSET
    return raw.strip()


def read_int_between(problems, variable, raw, minimum, maximum=None, digits=None, show=describe_shown):
    """An integer (decimal text too, at most ``digits`` digits; not a boolean) from ``minimum`` to ``maximum`` (no
    upper bound when None): ``must be an integer between 1 and 65535, got 'x'``, ``must be an integer >= 1, got
    null``. Unlike ``read_int``, null is refused: the callers' variables all have a default of their own. ``UNSET``
    after a problem."""
    number = as_int(raw, UNSET, digits=digits)
    if number is UNSET or number < minimum or (maximum is not None and number > maximum):
        span = ("between %d and %d" % (minimum, maximum)) if maximum is not None else (">= %d" % minimum)
        problems.add(variable, "must be an integer %s, got %s" % (span, show(raw)))
        return UNSET
    return number


def read_port(problems, variable, raw, default=None, show=describe_shown):
    """A TCP port (decimal text of at most five digits too); a blank value gives ``default``: ``read_int_between``'s
    ``must be an integer between 1 and 65535, got 'x'``, then ``UNSET``."""
    if blank(raw):
        return default
    return read_int_between(problems, variable, raw, 1, 65535, digits=5, show=show)
