# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Read the samples of a few named metrics out of a Prometheus text exposition (a server's ``/metrics`` answer).

Only what a report needs: the sample lines ``name{label="value",...} value [timestamp]`` of the names asked for, with
their labels (escapes undone) and values. ``# HELP``/``# TYPE`` lines, other metrics and lines that do not parse are
skipped; a value that is not a finite number (``NaN``, ``+Inf``, text) is skipped too, so a metric with no usable
sample is simply absent, never 0. Standard library only: this runs on the managed hosts.
"""

from __future__ import annotations

import math
import re

# name, the label block (quoted values may hold "}" and ","), the value; a timestamp may follow
_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[^"}]|"(?:[^"\\]|\\.)*")*)\})?\s+(\S+)(?:\s+\S+)?\s*$')
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')
_ESCAPES = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}
# the samples kept per metric: a server's label sets are few, a hostile answer's need not be
MAX_SAMPLES = 64


def _labels(block):
    labels = {}
    pos = 0
    while pos < len(block):
        match = _LABEL.match(block, pos)
        if not match:
            return None
        labels[match.group(1)] = re.sub(r'\\[\\"n]', lambda m: _ESCAPES[m.group(0)], match.group(2))
        pos = match.end()
    return labels


def parse_samples(text, names, limit=MAX_SAMPLES):
    """``{name: [{"labels": {...}, "value": float}, ...]}`` for each of ``names`` with at least one usable sample
    in ``text`` (str or bytes), in the order the samples came, at most ``limit`` per name (a histogram's buckets
    of several label sets need more than the default :data:`MAX_SAMPLES`)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    wanted = set(names or ())
    found = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if not match or match.group(1) not in wanted:
            continue
        labels = _labels(match.group(2) or "")
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        if labels is None or not math.isfinite(value):
            continue
        samples = found.setdefault(match.group(1), [])
        if len(samples) < limit:
            samples.append({"labels": labels, "value": value})
    return found
