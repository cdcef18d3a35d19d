# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Talking to a Hugging Face–compatible hub through the real ``huggingface_hub``, in a child process.

The modules run under Ansible's interpreter, which need not have ``huggingface_hub``; the child runs under the
interpreter the role names (``python -I -c CHILD_SCRIPT``).  The request, token included, goes to the child as JSON
on its stdin, never in its argv or environment, so ``ps`` and ``/proc/<pid>/cmdline`` never show it.  The child
answers with one JSON line that starts with ``ANSWER_MARK``; whatever else it prints is kept only for error
messages, with the token masked.

``run_child(python, request, timeout, watch=None)``
    the child's answer (a dict), or ``HubError`` with a message that never holds the token; ``watch`` is called
    while the child runs and stops it by raising. A download with ``sizes`` (path -> listed bytes) is capped at
    them: no file may grow past its listed size (``Oversize``, the over-long file removed).
``hub_name(endpoint)``
    the endpoint as messages name it (``https://huggingface.co`` for ``''``), URL logins masked.
``allow_pattern(path)``
    a file name as an ``allow_patterns`` entry that matches that one file only (fnmatch has ``*?[``).

Standard library and the collection's own module_utils only: this runs on the managed hosts (Python 3.8+).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

from ansible_collections.llmserve.sglang.plugins.module_utils.http_client import goes_direct, url_host
from ansible_collections.llmserve.sglang.plugins.module_utils.text import clean_text, mask_secrets

ANSWER_MARK = "LLMSERVE-HUB-ANSWER "
DEFAULT_HUB = "https://huggingface.co"
# What of the child's stderr a message quotes (the end: where the traceback's last line is).
STDERR_TAIL = 1500
# How often a watch looks at a running download: a mirror that streams too much is stopped within this.
WATCH_INTERVAL = 0.25
# Where huggingface_hub keeps its bookkeeping in a local_dir, and the partial files among it.
HF_CACHE_TOP = ".cache"
HF_LOCAL_CACHE = os.path.join(HF_CACHE_TOP, "huggingface")
HF_PARTIALS = os.path.join(HF_LOCAL_CACHE, "download")

# Run as ``python -I -c CHILD_SCRIPT`` with a JSON request on stdin:
#   {"op": "resolve", "repo", "revision", "endpoint", "token", "cache_dir"}
#       -> {"commit", "files": [{path, size, oid, lfs: {sha256, size} | null}], "config": dict | null,
#           "config_error": str | null, "version"}
#   {"op": "download", "repo", "revision", "endpoint", "token", "local_dir", "allow_patterns", "max_workers",
#    "sizes": {path: listed bytes}}
#       -> {"path", "version"}
# An error is {"error": <exception type>, "message", "status": <HTTP status> | null} and exit status 1; a file cut
# off at the download's size ceiling (see cap_file_size) is "error": "FileTooLarge" with "path", "listed", "limit".
# Only huggingface_hub's public API is used: no request of our own, no download loop of our own.
CHILD_SCRIPT = r'''
import json
import sys

MARK = "LLMSERVE-HUB-ANSWER "
CONFIG_MAX = 4 << 20
EFBIG = 27
# Above the largest listed size: huggingface_hub's own small files (metadata, the tree listing) must still fit.
FSIZE_SLACK = 1 << 20


class FileTooLarge(Exception):
    def __init__(self, msg, **extra):
        Exception.__init__(self, msg)
        self.extra = extra


def answer(doc):
    sys.stdout.write(MARK + json.dumps(doc) + "\n")
    sys.stdout.flush()


def resolve(hub, api, req, token, endpoint):
    info = api.model_info(req["repo"], revision=req["revision"])
    commit = info.sha
    files = []
    # the tree of the commit just resolved, so the listing cannot come from a branch that moved meanwhile
    for item in api.list_repo_tree(req["repo"], revision=commit, recursive=True, expand=True):
        if not hasattr(item, "blob_id"):
            continue  # a folder
        lfs = getattr(item, "lfs", None)
        files.append({"path": item.path, "size": item.size, "oid": item.blob_id,
                      "lfs": None if lfs is None else {"sha256": lfs.sha256, "size": lfs.size}})
    config, config_error = None, None
    if any(item["path"] == "config.json" for item in files):
        path = hub.hf_hub_download(req["repo"], "config.json", revision=commit, token=token, endpoint=endpoint,
                                   cache_dir=req["cache_dir"])
        with open(path, "rb") as handle:
            raw = handle.read(CONFIG_MAX + 1)
        try:
            if len(raw) > CONFIG_MAX:
                raise ValueError("larger than %d bytes" % CONFIG_MAX)
            config = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            config_error = "config.json is not readable JSON: %s" % exc
    return {"commit": commit, "files": files, "config": config, "config_error": config_error,
            "version": hub.__version__}


def cap_file_size(sizes):
    """The kernel's ceiling for every file this process writes: the largest listed size plus FSIZE_SLACK. A write
    past it fails with EFBIG (Python ignores SIGXFSZ), so a mirror that streams more than it lists cannot fill the
    disk between two looks of the parent's watch. None when there is no ceiling."""
    if not sizes:
        return None
    try:
        import resource
    except ImportError:
        return None
    limit = max(sizes.values()) + FSIZE_SLACK
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    for old in (soft, hard):
        if old != resource.RLIM_INFINITY:
            limit = min(limit, old)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    return limit


def too_large(exc):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if getattr(exc, "errno", None) == EFBIG or "(os error %d)" % EFBIG in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def culprit(exc, names):
    """The requested file whose write failed: the innermost frame of the traceback (kept across the thread pool)
    with one of ``names`` in a local variable; None when no frame has one."""
    found = None
    tb = exc.__traceback__
    while tb is not None:
        for value in list(tb.tb_frame.f_locals.values()):
            if isinstance(value, str) and value in names:
                found = value
        tb = tb.tb_next
    return found


def download(hub, req, token, endpoint):
    sizes = req.get("sizes") or {}
    limit = cap_file_size(sizes)
    try:
        path = hub.snapshot_download(req["repo"], revision=req["revision"], local_dir=req["local_dir"],
                                     allow_patterns=req.get("allow_patterns"), token=token, endpoint=endpoint,
                                     max_workers=req.get("max_workers") or 8)
    except Exception as exc:
        if limit is None or not too_large(exc):
            raise
        name = culprit(exc, sizes)
        raise FileTooLarge("%s grew past %d bytes: %s" % (name or "a file", limit, exc), path=name,
                           listed=sizes[name] if name else max(sizes.values()), limit=limit)
    return {"path": path, "version": hub.__version__}


def main():
    req = json.loads(sys.stdin.read())
    # False, not None: a token stored on the machine must not be picked up either
    token = req.get("token") or False
    endpoint = req.get("endpoint") or None
    try:
        import huggingface_hub as hub
    except Exception as exc:
        answer({"error": "ImportError", "message": "huggingface_hub cannot be imported: %s" % exc, "status": None})
        return 3
    try:
        if req["op"] == "resolve":
            answer(resolve(hub, hub.HfApi(endpoint=endpoint, token=token), req, token, endpoint))
        elif req["op"] == "download":
            answer(download(hub, req, token, endpoint))
        else:
            raise ValueError("unknown op %r" % req["op"])
    except Exception as exc:
        status = getattr(getattr(exc, "response", None), "status_code", None)
        doc = {"error": type(exc).__name__, "message": str(exc)[:4000],
               "status": status if isinstance(status, int) else None}
        doc.update(getattr(exc, "extra", None) or {})
        answer(doc)
        return 1
    return 0


sys.exit(main())
'''


class HubError(Exception):
    """The child could not do what was asked; the message names what went wrong, never the token."""

    def __init__(self, msg, error=None, status=None):
        super().__init__(msg)
        self.error = error
        self.status = status


class Oversize(HubError):
    """The hub sent more bytes than it lists: of the file ``path``, listed with ``listed`` bytes, of which at least
    ``seen`` were written. Without a ``path`` (not known which file), ``what`` says what grew past ``listed``."""

    def __init__(self, path, listed, seen, what=None):
        if path is not None:
            msg = "%s is listed with %d bytes and the hub sent at least %d" % (clean_text(path, 300), listed, seen)
        else:
            msg = "%s: the hub sent at least %d bytes where %d are listed" % (what or "a file", seen, listed)
        super().__init__(msg, "Oversize")
        self.path = path
        self.listed = listed
        self.seen = seen
        self.removed = []  # the files run_child removed, relative to the download's directory


def hub_name(endpoint):
    """The endpoint as a message names it."""
    return mask_secrets(endpoint or DEFAULT_HUB, ())


def allow_pattern(path):
    """``path`` as an fnmatch pattern that matches exactly that name: each of ``*?[`` in brackets."""
    return "".join("[%s]" % char if char in "*?[" else char for char in path)


def child_env(endpoint, hf_home, base=None, resolve=None):
    """The child's environment: the host's, less every ``HF_*``/``HUGGING_FACE_*`` (a stray ``HF_TOKEN`` or
    ``HF_HUB_OFFLINE`` would change what it does), plus an own ``HF_HOME`` and no telemetry.

    An endpoint that the collection's HTTP client reaches without a proxy (``http_client.goes_direct``: loopback,
    link-local, this machine's own addresses) is added to ``no_proxy`` and ``NO_PROXY``, so the token does not go
    through the host's proxy to it either. httpx (huggingface_hub's client), hf_xet and urllib all skip the proxy
    for a host listed there; the proxy stays for any other host (``https://huggingface.co`` for ``''``)."""
    base = os.environ if base is None else base
    env = dict((key, value) for key, value in base.items() if not key.startswith(("HF_", "HUGGING_FACE_")))
    env.update(HF_HOME=hf_home, HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_DISABLE_PROGRESS_BARS="1",
               HF_HUB_DISABLE_IMPLICIT_TOKEN="1", PYTHONUNBUFFERED="1", PYTHONIOENCODING="utf-8")
    if endpoint:
        env["HF_ENDPOINT"] = endpoint
    host = url_host(endpoint) if endpoint else None
    if host and (goes_direct(host) if resolve is None else goes_direct(host, resolve)):
        # both spellings, the same list: which one a client reads first differs (urllib prefers the lower case)
        hosts = []
        for key in ("no_proxy", "NO_PROXY"):
            hosts.extend(item.strip() for item in env.get(key, "").split(",") if item.strip() not in ("", host))
        env["no_proxy"] = env["NO_PROXY"] = ",".join(sorted(set(hosts), key=hosts.index) + [host])
    return env


def _short_hash(name):
    # huggingface_hub's name for the partial files of ``name`` (its _local_folder._short_hash, 0.23 to 1.33 at least)
    return base64.urlsafe_b64encode(hashlib.sha1(name.encode("utf-8")).digest()).decode("ascii")


class SizeWatch(object):
    """A ``watch`` for ``run_child`` that caps a download into ``local_dir`` at the listed sizes (``sizes``: path in
    the repository -> bytes): it raises ``Oversize`` as soon as a file, or huggingface_hub's partial file of it
    (``.cache/huggingface/download/<dir>/<hash of name>.<etag>[.<id>].incomplete``), is larger than the file's
    listed size, or when the files hold more bytes than were there before plus all that is asked for.

    A file that is unchanged since the watch was made (one fetched by an earlier run) is not judged, only counted.
    A partial file whose name does not tell its file (another huggingface_hub's naming) is held to the largest
    listed size."""

    def __init__(self, local_dir, sizes):
        self.local_dir = local_dir
        self.sizes = dict(sizes)
        self.largest = max(self.sizes.values()) if self.sizes else 0
        self.partials = {}
        for path in self.sizes:
            folder, name = os.path.split(path)
            self.partials[(os.path.normpath(os.path.join(HF_PARTIALS, folder)), _short_hash(name + ".metadata"))] = path
        self.before = dict((rel, _mark(info)) for rel, info in self._files())
        self.allowed = sum(info[1] for info in self.before.values()) + sum(self.sizes.values())

    def _files(self):
        """(path relative to local_dir, stat) of every file the download writes: the files themselves and the
        partial files; not huggingface_hub's bookkeeping (metadata, locks, the tree listing)."""
        for top, dirs, files in os.walk(self.local_dir):
            rel_top = os.path.relpath(top, self.local_dir)
            if rel_top == ".":
                rel_top = ""
            cache = _under(rel_top, HF_CACHE_TOP)
            partials = _under(rel_top, HF_PARTIALS)
            if rel_top in (HF_CACHE_TOP, HF_LOCAL_CACHE):
                dirs[:] = [name for name in dirs if os.path.join(rel_top, name) in (HF_LOCAL_CACHE, HF_PARTIALS)]
            for name in files:
                if cache and not (partials and name.endswith(".incomplete")):
                    continue
                try:
                    info = os.lstat(os.path.join(top, name))
                except OSError:
                    continue  # renamed or removed meanwhile
                yield os.path.join(rel_top, name), info

    def _owner(self, rel):
        """(the repository path the file ``rel`` is or belongs to, or None; the bytes it may hold, or None)."""
        if rel in self.sizes:
            return rel, self.sizes[rel]
        if not rel.endswith(".incomplete"):
            return None, None
        folder, name = os.path.split(rel)
        path = self.partials.get((os.path.normpath(folder), name.split(".", 1)[0]))
        if path is None:
            return None, self.largest
        return path, self.sizes[path]

    def __call__(self):
        total = 0
        for rel, info in self._files():
            total += info.st_size
            if self.before.get(rel) == _mark(info):
                continue
            path, listed = self._owner(rel)
            if listed is not None and info.st_size > listed:
                raise Oversize(path, listed, info.st_size, "a partial file (%s), larger than any file listed"
                               % clean_text(rel, 300))
        if total > self.allowed:
            raise Oversize(None, self.allowed, total, "the files of the download all together")

    def clean(self):
        """After the child ended: remove every partial file (huggingface_hub 1.x never resumes one: each download
        has a name of its own) and every file larger than it is listed; the paths removed, relative."""
        removed = []
        for rel, info in list(self._files()):
            path, listed = self._owner(rel)
            if _under(rel, HF_PARTIALS) or path == rel and info.st_size > listed:
                try:
                    os.unlink(os.path.join(self.local_dir, rel))
                except FileNotFoundError:
                    continue
                removed.append(rel)
        return removed


def _mark(info):
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def _under(rel, top):
    return rel == top or rel.startswith(top + os.sep)


def _kill(proc):
    try:
        proc.send_signal(signal.SIGKILL)
    except OSError:
        pass
    proc.communicate()


def _answer(stdout):
    for line in reversed(stdout.splitlines()):
        if line.startswith(ANSWER_MARK):
            try:
                doc = json.loads(line[len(ANSWER_MARK):])
            except ValueError:
                return None
            return doc if isinstance(doc, dict) else None
    return None


def _communicate(proc, data, timeout, watch):
    """``proc.communicate(data)`` within ``timeout`` seconds, calling ``watch`` every WATCH_INTERVAL meanwhile (and
    once more when the child has ended). A retried communicate loses no output; the input goes with the first."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        try:
            out, err = proc.communicate(data, timeout=max(0, min(left, WATCH_INTERVAL) if watch else left))
        except subprocess.TimeoutExpired:
            data = None
            if time.monotonic() >= deadline:
                raise
            if watch is not None:
                watch()
            continue
        if watch is not None:
            watch()
        return out, err


def run_child(python, request, timeout, tmp_root=None, secrets=(), watch=None):
    """Run ``request`` (a dict with ``op``) in ``python -I -c CHILD_SCRIPT``; its answer, or HubError.

    The child gets a fresh ``HF_HOME`` (removed afterwards) and ``timeout`` seconds; it stays in this process's
    process group, so an async job's own deadline, which kills that group, ends it too. ``watch`` (a callable) is
    called every WATCH_INTERVAL seconds while the child runs and once after; what it raises goes to the caller, the
    child killed first.

    A download whose request has ``sizes`` is capped twice: the child's files cannot grow past the largest listed
    size (plus a little) at all (its RLIMIT_FSIZE), and a ``SizeWatch`` (unless ``watch`` is given) stops the child
    as soon as one file is larger than its own listed size. Either way ``Oversize`` is raised after every partial
    and over-long file is removed; its ``removed`` lists them.
    """
    if watch is None and request.get("op") == "download" and request.get("sizes"):
        watch = SizeWatch(request["local_dir"], request["sizes"])
    try:
        return _run_child(python, request, timeout, tmp_root, secrets, watch)
    except Oversize as exc:
        exc.removed = watch.clean() if isinstance(watch, SizeWatch) else []
        raise


def _run_child(python, request, timeout, tmp_root, secrets, watch):
    token = request.get("token") or ""
    hide = [token] + [secret for secret in secrets if secret]
    home = tempfile.mkdtemp(prefix="llmserve-hub-", dir=tmp_root)
    try:
        request = dict(request, cache_dir=os.path.join(home, "cache"))
        try:
            # Not AnsibleModule.run_command: the child needs a deadline (run_command has none) and an environment
            # without the host's HF_* variables (run_command can only add to it).
            # pylint: disable-next=consider-using-with,ansible-bad-function
            proc = subprocess.Popen(
                [python, "-I", "-c", CHILD_SCRIPT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=child_env(request.get("endpoint"), home), close_fds=True)
        except OSError as exc:
            raise HubError("cannot run %s: %s" % (python, exc))
        try:
            out, err = _communicate(proc, json.dumps(request).encode("utf-8"), timeout, watch)
        except subprocess.TimeoutExpired:
            _kill(proc)
            raise HubError("huggingface_hub (%s) did not finish within %d s" % (python, timeout), "Timeout")
        except BaseException:
            if proc.returncode is None:
                _kill(proc)
            raise
    finally:
        shutil.rmtree(home, ignore_errors=True)
    out = out.decode("utf-8", "replace")
    err = err.decode("utf-8", "replace")
    doc = _answer(out)
    if doc is None:
        tail = mask_secrets(err[-STDERR_TAIL:], hide)
        raise HubError("%s gave no answer (exit status %s): %s"
                       % (python, proc.returncode, clean_text(tail, STDERR_TAIL) or "no output"))
    if doc.get("error") == "FileTooLarge" and isinstance(doc.get("limit"), int) and isinstance(doc.get("listed"), int):
        # the write that failed was the one past the ceiling: the hub sent at least that much
        raise Oversize(doc.get("path") if isinstance(doc.get("path"), str) else None, doc["listed"], doc["limit"],
                       "one of the files (listed with at most that many bytes)")
    if "error" in doc:
        message = mask_secrets(str(doc.get("message") or ""), hide)
        raise HubError("%s: %s" % (doc["error"], clean_text(message, 600)), doc["error"], doc.get("status"))
    return doc
