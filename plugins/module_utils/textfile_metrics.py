# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Metrics in the Prometheus text exposition format (0.0.4), as node exporter's textfile collector reads them.

A metric is given as a list of samples, each a dict ``{name, value, labels, help, type}``; the samples of one metric
share its ``help`` (given on at least one of them) and ``type`` (``gauge`` when not given). :func:`render` checks every name, label and value
and writes each metric once, ``# HELP`` and ``# TYPE`` first, then its samples:

* metric names ``[a-zA-Z_:][a-zA-Z0-9_:]*`` (with ``prefix``: starting with it), label names
  ``[a-zA-Z_][a-zA-Z0-9_]*`` and not ``__``-reserved, no label twice, no sample twice;
* label values escaped (backslash, double quote, line feed), help text escaped (backslash, line feed);
* values finite numbers (NaN and infinities are refused: a textfile says what was seen, never "unknown");
* no timestamps: the textfile collector refuses samples that carry one;
* sorted by metric name, then by labels, with values written one way (``2.0`` and ``2`` both as ``2``), so the same
  state always gives the same bytes and a writer can compare before it replaces the file.

Every error names the metric (and the sample's labels) it is about. Standard library only: this runs on the managed
hosts.
"""

from __future__ import annotations

import math
import re

METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
TYPES = ("gauge", "counter", "untyped")
SAMPLE_KEYS = ("name", "value", "labels", "help", "type")
# Integers up to 2**53 are exact as floats; a float beyond that is written in exponent form.
_EXACT = 2 ** 53


class MetricError(ValueError):
    """A sample that cannot be written (the message names the metric)."""


def escape_label_value(value):
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def escape_help(text):
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _where(name, labels=None):
    if not labels:
        return "metric %s" % name
    return "metric %s{%s}" % (name, ",".join('%s="%s"' % (k, escape_label_value(v)) for k, v in labels))


def format_value(value, where="value"):
    """``value`` as the text a sample carries: an integer without a decimal point, any other number in the shortest
    form that reads back exactly. Refuses booleans, text that is no number, NaN and infinities."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise MetricError("%s: the value must be a finite number, got %r" % (where, value))
    if isinstance(value, int):
        return str(value)
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise MetricError("%s: the value must be a finite number, got %r" % (where, value))
    if not math.isfinite(number):
        raise MetricError("%s: the value must be a finite number, got %r" % (where, value))
    if number.is_integer() and abs(number) <= _EXACT:
        return "%d" % number
    return repr(number)


def _labels(name, labels):
    if labels is None:
        return ()
    if not isinstance(labels, dict):
        raise MetricError("%s: labels must be a mapping of label names to values, got %r" % (_where(name), labels))
    items = []
    for key, value in labels.items():
        if not isinstance(key, str) or not LABEL_NAME.match(key) or key.startswith("__"):
            raise MetricError("%s: %r is no label name (letters, digits and _, not starting with a digit or __)"
                              % (_where(name), key))
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif value is None:
            value = ""
        elif isinstance(value, (int, float, str)):
            value = str(value)
        else:
            raise MetricError("%s: the value of label %s must be text or a number, got %r" % (_where(name), key, value))
        items.append((key, value))
    return tuple(sorted(items))


def collect(samples, prefix=None):
    """Check ``samples`` and group them: ``{name: {"help", "type", "samples": {labels: value text}}}``.

    ``labels`` is a sorted tuple of ``(name, value)``. Raises :class:`MetricError` naming the metric at fault.
    """
    families = {}
    if not isinstance(samples, (list, tuple)):
        raise MetricError("metrics must be a list of samples, got %r" % (samples,))
    for sample in samples:
        if not isinstance(sample, dict):
            raise MetricError("each metric sample must be a mapping with name and value, got %r" % (sample,))
        name = sample.get("name")
        if not isinstance(name, str) or not METRIC_NAME.match(name):
            raise MetricError("%r is no metric name (letters, digits, _ and :, not starting with a digit)" % (name,))
        if prefix and not name.startswith(prefix):
            raise MetricError("%s: the name must start with %s" % (_where(name), prefix))
        unknown = sorted(str(key) for key in sample if key not in SAMPLE_KEYS)
        if unknown:
            raise MetricError("%s: unknown key(s) %s (a sample has %s)"
                              % (_where(name), ", ".join(unknown), ", ".join(SAMPLE_KEYS)))
        labels = _labels(name, sample.get("labels"))
        if "value" not in sample:
            raise MetricError("%s: the sample has no value" % _where(name, labels))
        value = format_value(sample["value"], _where(name, labels))
        family = families.setdefault(name, {"help": None, "type": None, "samples": {}})
        # a sample without a type is a gauge; one without help text takes the metric's (another sample gives it)
        for key, given in (("help", sample.get("help")), ("type", sample.get("type") or "gauge")):
            if given is None:
                continue
            if not isinstance(given, str) or (key == "type" and given not in TYPES):
                raise MetricError("%s: %s must be %s, got %r" % (
                    _where(name), key, "one of " + ", ".join(TYPES) if key == "type" else "text", given))
            if family[key] is not None and family[key] != given:
                raise MetricError("%s: two different %s values (%r and %r); the samples of a metric share one"
                                  % (_where(name), key, family[key], given))
            family[key] = given
        if labels in family["samples"]:
            raise MetricError("%s: the same sample is given twice" % _where(name, labels))
        family["samples"][labels] = value
    for name, family in families.items():
        if not family["help"]:
            raise MetricError("%s: no sample gives its help text" % _where(name))
    return families


def render(samples, prefix=None):
    """The exposition text of ``samples`` (see the module docstring); ``""`` for no sample."""
    families = collect(samples, prefix)
    lines = []
    for name in sorted(families):
        family = families[name]
        lines.append("# HELP %s %s" % (name, escape_help(family["help"])))
        lines.append("# TYPE %s %s" % (name, family["type"]))
        for labels in sorted(family["samples"]):
            text = ",".join('%s="%s"' % (key, escape_label_value(value)) for key, value in labels)
            lines.append("%s%s %s" % (name, "{%s}" % text if text else "", family["samples"][labels]))
    return "".join(line + "\n" for line in lines)
