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

``run_child(python, request, timeout)``
    the child's answer (a dict), or ``HubError`` with a message that never holds the token.
``hub_name(endpoint)``
    the endpoint as messages name it (``https://huggingface.co`` for ``''``), URL logins masked.
``allow_pattern(path)``
    a file name as an ``allow_patterns`` entry that matches that one file only (fnmatch has ``*?[``).

Standard library only: this runs on the managed hosts (Python 3.8+).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile

from ansible_collections.llmserve.sglang.plugins.module_utils.text import clean_text, mask_secrets

ANSWER_MARK = "LLMSERVE-HUB-ANSWER "
DEFAULT_HUB = "https://huggingface.co"
# What of the child's stderr a message quotes (the end: where the traceback's last line is).
STDERR_TAIL = 1500

# Run as ``python -I -c CHILD_SCRIPT`` with a JSON request on stdin:
#   {"op": "resolve", "repo", "revision", "endpoint", "token", "cache_dir"}
#       -> {"commit", "files": [{path, size, oid, lfs: {sha256, size} | null}], "config": dict | null,
#           "config_error": str | null, "version"}
#   {"op": "download", "repo", "revision", "endpoint", "token", "local_dir", "allow_patterns", "max_workers"}
#       -> {"path", "version"}
# An error is {"error": <exception type>, "message", "status": <HTTP status> | null} and exit status 1.
# Only huggingface_hub's public API is used: no request of our own, no download loop of our own.
CHILD_SCRIPT = r'''
import json
import sys

MARK = "LLMSERVE-HUB-ANSWER "
CONFIG_MAX = 4 << 20


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


def download(hub, req, token, endpoint):
    path = hub.snapshot_download(req["repo"], revision=req["revision"], local_dir=req["local_dir"],
                                 allow_patterns=req.get("allow_patterns"), token=token, endpoint=endpoint,
                                 max_workers=req.get("max_workers") or 8)
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
        answer({"error": type(exc).__name__, "message": str(exc)[:4000],
                "status": status if isinstance(status, int) else None})
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


def hub_name(endpoint):
    """The endpoint as a message names it."""
    return mask_secrets(endpoint or DEFAULT_HUB, ())


def allow_pattern(path):
    """``path`` as an fnmatch pattern that matches exactly that name: each of ``*?[`` in brackets."""
    return "".join("[%s]" % char if char in "*?[" else char for char in path)


def child_env(endpoint, hf_home, base=None):
    """The child's environment: the host's, less every ``HF_*``/``HUGGING_FACE_*`` (a stray ``HF_TOKEN`` or
    ``HF_HUB_OFFLINE`` would change what it does), plus an own ``HF_HOME`` and no telemetry."""
    base = os.environ if base is None else base
    env = dict((key, value) for key, value in base.items() if not key.startswith(("HF_", "HUGGING_FACE_")))
    env.update(HF_HOME=hf_home, HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_DISABLE_PROGRESS_BARS="1",
               HF_HUB_DISABLE_IMPLICIT_TOKEN="1", PYTHONUNBUFFERED="1", PYTHONIOENCODING="utf-8")
    if endpoint:
        env["HF_ENDPOINT"] = endpoint
    return env


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


def run_child(python, request, timeout, tmp_root=None, secrets=()):
    """Run ``request`` (a dict with ``op``) in ``python -I -c CHILD_SCRIPT``; its answer, or HubError.

    The child gets a fresh ``HF_HOME`` (removed afterwards) and ``timeout`` seconds; it stays in this process's
    process group, so an async job's own deadline, which kills that group, ends it too.
    """
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
            out, err = proc.communicate(json.dumps(request).encode("utf-8"), timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            raise HubError("huggingface_hub (%s) did not finish within %d s" % (python, timeout), "Timeout")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    out = out.decode("utf-8", "replace")
    err = err.decode("utf-8", "replace")
    doc = _answer(out)
    if doc is None:
        tail = mask_secrets(err[-STDERR_TAIL:], hide)
        raise HubError("%s gave no answer (exit status %s): %s"
                       % (python, proc.returncode, clean_text(tail, STDERR_TAIL) or "no output"))
    if "error" in doc:
        message = mask_secrets(str(doc.get("message") or ""), hide)
        raise HubError("%s: %s" % (doc["error"], clean_text(message, 600)), doc["error"], doc.get("status"))
    return doc
