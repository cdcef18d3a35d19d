"""Make the working tree importable as ``ansible_collections.llmserve.sglang`` for pytest.

Plugins import each other by their collection path, so the tests need the checkout to sit at
``<dir>/ansible_collections/llmserve/sglang``. A symlink in a temporary directory gives that
without moving the checkout (and without a self-referencing link inside the repository).
"""

import os
import sys
import tempfile

_ROOT = os.path.dirname(os.path.abspath(__file__))
_TREE = os.path.join(tempfile.gettempdir(), "llmserve-pytest-collections-%d" % os.getuid())
_LINK = os.path.join(_TREE, "ansible_collections", "llmserve", "sglang")

os.makedirs(os.path.dirname(_LINK), exist_ok=True)
if os.path.realpath(_LINK) != _ROOT:
    if os.path.lexists(_LINK):
        os.unlink(_LINK)
    os.symlink(_ROOT, _LINK)
if _TREE not in sys.path:
    sys.path.insert(0, _TREE)
