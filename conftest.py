"""Make the working tree importable as ``ansible_collections.llmserve.sglang`` for pytest.

Plugins import each other by their collection path, so the tests need the checkout to sit at
``<dir>/ansible_collections/llmserve/sglang``. A symlink in a temporary directory gives that
without moving the checkout (and without a self-referencing link inside the repository).
"""

import hashlib
import os
import sys
import tempfile

_ROOT = os.path.dirname(os.path.abspath(__file__))
# One link tree per checkout: two worktrees testing at once must not import each other's files.
_TREE = os.path.join(tempfile.gettempdir(), "llmserve-pytest-collections-%d-%s" % (
    os.getuid(), hashlib.sha256(_ROOT.encode()).hexdigest()[:12]))
_LINK = os.path.join(_TREE, "ansible_collections", "llmserve", "sglang")

os.makedirs(os.path.dirname(_LINK), exist_ok=True)
if os.path.realpath(_LINK) != _ROOT:
    if os.path.lexists(_LINK):
        os.unlink(_LINK)
    os.symlink(_ROOT, _LINK)
# Subprocesses the tests start (a module run as a real process) find the same tree here.
os.environ["LLMSERVE_PYTEST_TREE"] = _TREE
if _TREE not in sys.path:
    sys.path.insert(0, _TREE)
