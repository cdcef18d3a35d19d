# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the scenario benchmarks' summarisers share: a ratio of two measured numbers, and printing the summary's lines
under a title, writing it as JSON when asked and turning its verdicts into the exit status (0 when all passed)."""

from __future__ import annotations

import json


def ratio(value, base, digits=2):
    """``value / base`` rounded, or None when either was not measured (or the base is 0)."""
    if value is None or not base:
        return None
    return round(float(value) / float(base), digits)


def publish(title, lines, summary, json_path=None):
    print(title)
    for text in lines:
        print(text)
    if json_path:
        with open(json_path, "w") as handle:
            json.dump(summary, handle, indent=2)
            handle.write("\n")
    return 0 if all(summary["verdicts"].values()) else 1
