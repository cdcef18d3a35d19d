# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parse Prometheus exposition text with the real parser of ``prometheus_client`` (what Prometheus's own Python client
reads textfiles with), to prove that what the collection writes is what a scraper reads.

The controller venv has no ``prometheus_client``; SGLang's CPU venv (``LLMSERVE_SGLANG_VENV``, built by ``make
engine-assets``) does, so the parser runs in a subprocess of whichever Python has it. ``parse`` skips the test,
saying why, when none has.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

SGLANG_VENV = os.environ.get("LLMSERVE_SGLANG_VENV") or "/var/cache/llmserve/venv-sglang-cpu"
CANDIDATES = (sys.executable, os.path.join(SGLANG_VENV, "bin", "python"))

_PARSE = """
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for family in text_string_to_metric_families(sys.stdin.read()):
    out.append({"name": family.name, "type": family.type, "help": family.documentation,
                "samples": [[s.name, dict(s.labels), s.value, s.timestamp] for s in family.samples]})
print(json.dumps(out))
"""


def _python():
    for python in CANDIDATES:
        if not os.path.exists(python):
            continue
        found = subprocess.run([python, "-c", "import prometheus_client.parser"], capture_output=True, check=False)
        if found.returncode == 0:
            return python
    return None


def parse(text):
    """The metric families of ``text`` as ``[{name, type, help, samples: [[name, labels, value, timestamp]]}]``."""
    python = _python()
    if python is None:
        pytest.skip("no Python with prometheus_client: neither %s (the controller venv) nor %s (SGLang's CPU venv, "
                    "make engine-assets builds it)" % CANDIDATES)
    done = subprocess.run([python, "-c", _PARSE], input=text, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise AssertionError("prometheus_client refused the text: %s\n%s" % (done.stderr.strip()[-2000:], text))
    return json.loads(done.stdout)
