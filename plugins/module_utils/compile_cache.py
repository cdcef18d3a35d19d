# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Clean-up of a unit's compile and JIT cache tree (``<root>/<unit>/<version>/<arch>``, plugin_utils/sglang_cache.py).

Two steps, both planned before anything is removed:

* **prune**: remove every ``<version>`` directory whose version is not kept, and below a kept version every
  ``<arch>`` directory whose architecture is not kept;
* **trim**: while the current ``<version>/<arch>`` tree holds more than ``max_bytes``, remove whole entries, least
  recently modified first. An entry is one unit a library writes and reads as a whole: a Triton kernel directory
  (``triton/<hash>``), an Inductor FX graph (``inductor/fxgraph/<xx>/<key>``), an Inductor code bucket
  (``inductor/<xx>``), a build of SGLang's JIT (``jit/<target>/<module>/build-<key>``), a FlashInfer build set
  (``flashinfer/.cache/flashinfer/<version>/<archs>/<kind>``), a torch extension, and otherwise any
  ``<cache>/<name>``. Its time is the newest modification time of the files in it (of the directory itself when it
  holds none). Sizes are apparent sizes
  (``st_size``) of regular files.

Nothing is followed: every path is read with ``lstat``, a link is an entry of its own and removed as a link, and
directories are removed with ``shutil.rmtree``, which on Linux works through file descriptors and never leaves
the tree through a link planted in it. Removing an entry costs only a recompile.
"""

from __future__ import annotations

import os
import shutil
import stat

# (path prefix below the current tree, depth of an entry): the longest matching prefix decides.
ENTRY_DEPTHS = (
    ((), 2),
    (("inductor", "fxgraph"), 4),
    (("inductor", "aotautograd"), 4),
    (("jit",), 4),
    (("flashinfer", ".cache", "flashinfer"), 6),
    (("torch_extensions",), 3),
)


def entry_depth(parts):
    best = (-1, 2)
    for prefix, depth in ENTRY_DEPTHS:
        if len(prefix) > best[0] and tuple(parts[:len(prefix)]) == prefix and len(parts) >= len(prefix):
            best = (len(prefix), depth)
    return best[1]


def tree_size(path):
    """(bytes, newest mtime) of ``path`` and everything below it, never following a link."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return 0, 0.0
    if not stat.S_ISDIR(info.st_mode):
        return (info.st_size if stat.S_ISREG(info.st_mode) else 0), info.st_mtime
    # the files' times, not the directories': a directory's time also moves when something in it is removed
    total, newest = 0, None
    for dirpath, _dirnames, filenames in os.walk(path):
        for name in filenames:
            try:
                child = os.lstat(os.path.join(dirpath, name))
            except FileNotFoundError:
                continue
            newest = child.st_mtime if newest is None else max(newest, child.st_mtime)
            if stat.S_ISREG(child.st_mode):
                total += child.st_size
    return total, info.st_mtime if newest is None else newest


def _children(path):
    try:
        return sorted(os.listdir(path))
    except (FileNotFoundError, NotADirectoryError):
        return []


def _is_dir(path):
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def entries(tree):
    """Every entry of a current tree: [(path, bytes, newest mtime)], in path order."""
    found = []

    def visit(parts):
        path = os.path.join(tree, *parts) if parts else tree
        for name in _children(path):
            child = parts + [name]
            child_path = os.path.join(path, name)
            if _is_dir(child_path) and len(child) < entry_depth(child):
                visit(child)
            else:
                size, newest = tree_size(child_path)
                found.append((child_path, size, newest))

    visit([])
    return found


def plan(root, keep_versions, keep_arches, current, max_bytes, trim=True):
    """What to remove: [{path, bytes, reason}] and the current tree's size before and after."""
    keep_versions = set(keep_versions)
    keep_arches = set(keep_arches)
    removals = []
    for version in _children(root):
        version_path = os.path.join(root, version)
        if version not in keep_versions or not _is_dir(version_path):
            removals.append(dict(path=version_path, bytes=tree_size(version_path)[0],
                                 reason="SGLang version %s is neither installed nor kept" % version))
            continue
        for arch in _children(version_path):
            arch_path = os.path.join(version_path, arch)
            if arch not in keep_arches or not _is_dir(arch_path):
                removals.append(dict(path=arch_path, bytes=tree_size(arch_path)[0],
                                     reason="architecture %s is not one of this host's" % arch))
    current_path = os.path.join(root, current) if current else None
    before = tree_size(current_path)[0] if current_path and _is_dir(current_path) else 0
    after = before
    if trim and max_bytes and current_path and after > max_bytes:
        for path, size, newest in sorted(entries(current_path), key=lambda e: (e[2], e[0])):
            if after <= max_bytes:
                break
            removals.append(dict(path=path, bytes=size, reason="over the size cap (least recently modified)",
                                 mtime=newest))
            after -= size
    return dict(removals=removals, current_bytes_before=before, current_bytes_after=after)


def remove(path):
    """Remove a file, link or directory tree without following links; False when it was already gone."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)
    return True
