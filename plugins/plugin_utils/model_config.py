# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The sglang_model role's variables, checked on the controller before anything on a host changes.

``model_config_problems(cfg)`` returns one message per broken rule, each naming the ``sglang_model_*`` variable
(the ranges of the numeric variables are the role's ``__sglang_model_ranges``, checked by ``range_problems``).
The name and revision rules are the model store's own (``module_utils/model_store.py``), so the role and the
modules refuse the same things with the same words.

The revisions that sglang_server's command line records load (the ``sglang_model_referenced`` filter) are the model
store's to work out: ``module_utils/model_store.py``'s ``referenced_revisions``, which the model_stage module uses
on the host.
"""

from __future__ import annotations

import os
import re

from ansible_collections.llmserve.sglang.plugins.module_utils.model_store import (
    ModelStoreError,
    check_repo,
    check_revision,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.service_host import directory_problem
from ansible_collections.llmserve.sglang.plugins.plugin_utils.systemd_unit import control_problem
from ansible_collections.llmserve.sglang.plugins.plugin_utils.values import as_bool, as_int, blank

SOURCES = ("hub", "path")
VERIFY_MODES = ("changed", "full")
INSTALL_MODES = ("pip", "wheelhouse", "none")
PREWARM_MODES = ("auto", "always", "never")
# An endpoint is a base URL: scheme, host, optional port and path; never a login (the token has its own variable).
_ENDPOINT = re.compile(r"https?://[A-Za-z0-9.\-\[\]:]+(/[A-Za-z0-9._~/%-]*)?\Z")
_VERSION = re.compile(r"[0-9]+(\.[0-9]+)*([a-z]+[0-9]*)?\Z")


def _show(value):
    return repr(value)[:120] if isinstance(value, str) else str(value)[:120]


def _absolute(value):
    return isinstance(value, str) and value.startswith("/") and not value.startswith("//") \
        and os.path.normpath(value) == value


def model_config_problems(cfg):
    """Messages for every ``sglang_model_*`` rule ``cfg`` (the role's variables without the prefix) breaks."""
    problems = []

    def err(name, rule):
        problems.append("sglang_model_%s: %s" % (name, rule))

    def flag(name):
        value = as_bool(cfg.get(name))
        if value is None:
            err(name, "must be true or false, got %s" % _show(cfg.get(name)))
        return bool(value)

    def choice(name, choices):
        value = cfg.get(name)
        if value not in choices:
            err(name, "must be one of %s, got %s" % (", ".join(choices), _show(value)))
        return value

    allow_floating = flag("allow_floating_revision")
    flag("allow_pickle")
    source = choice("source", SOURCES)
    choice("verify", VERIFY_MODES)
    install = choice("install", INSTALL_MODES)
    choice("prewarm", PREWARM_MODES)

    # the repository and revision rules of the store itself (their messages name the variable)
    repo = cfg.get("repo")
    if blank(repo):
        err("repo", "is required: the hub repository 'org/name' whose weights the hosts serve")
    else:
        try:
            check_repo(repo)
        except ModelStoreError as exc:
            problems.append(str(exc))
    try:
        # a directory on the host has no branches to resolve: its revision is named by the inventory
        check_revision(cfg.get("revision"), allow_floating and source == "hub")
    except ModelStoreError as exc:
        problems.append(str(exc) + (" (sglang_model_source: path names the revision the directory holds)"
                                    if source == "path" and allow_floating else ""))

    endpoint = cfg.get("hub_endpoint")
    if not isinstance(endpoint, str):
        err("hub_endpoint", "must be a string, got %s" % _show(endpoint))
    elif endpoint and "@" in endpoint:
        err("hub_endpoint", "must not hold a login (user:password@): give the token in sglang_model_hub_token, "
                            "which never appears in a command line or a log")
    elif endpoint and not _ENDPOINT.match(endpoint):
        err("hub_endpoint", "must be '' (huggingface.co) or a base URL http(s)://host[:port][/path] without query, "
                            "fragment or spaces, got %s" % _show(endpoint))

    source_path = cfg.get("source_path")
    # the paths the role uses on the host, each only where its setting is in use: a control character would only
    # fail there, or reach a unit file or a log line as it is
    paths_in_use = (("source_path", source_path, source == "path"), ("dir", cfg.get("dir"), True),
                    ("python", cfg.get("python"), True), ("venv", cfg.get("venv_path"), as_bool(cfg.get("venv"))),
                    ("wheelhouse", cfg.get("wheelhouse"), install == "wheelhouse"))
    for name, value, in_use in paths_in_use:
        rule = control_problem(value) if in_use and isinstance(value, str) else None
        if rule:
            err(name, rule)
    if source == "path" and not _absolute(source_path):
        err("source_path", "must be an absolute, normalised directory on the host when sglang_model_source is "
                           "path, got %s" % _show(source_path))
    store = cfg.get("dir")
    home = cfg.get("service_home")
    if not _absolute(store) or store == "/":
        err("dir", "must be an absolute, normalised path other than '/', got %s" % _show(store))
    elif directory_problem(store):
        # root publishes the weights there and trusts them on later runs (the host checks who owns the way there)
        err("dir", "%s %s: the model store must be a directory of its own, such as /var/lib/llmserve-models"
            % (store, directory_problem(store)))
    elif _absolute(home) and home != "/" and (store + "/").startswith(home.rstrip("/") + "/"):
        err("dir", "%s is inside the service account's home %s (sglang_server_home), which that account can write: "
                   "it could swap the weights root verified; use a directory of its own such as "
                   "/var/lib/llmserve-models" % (store, home))
    elif source == "path" and _absolute(source_path) and (
            source_path + "/").startswith(cfg["dir"].rstrip("/") + "/"):
        err("source_path", "must lie outside sglang_model_dir (%s): the store removes old revisions" % cfg["dir"])

    margin = cfg.get("prewarm_margin")
    number = None if isinstance(margin, bool) else as_int(margin)
    if number is None:
        try:
            number = float(margin) if not isinstance(margin, bool) and margin is not None else None
        except (TypeError, ValueError):
            number = None
    if number is None or number < 0 or (isinstance(number, float) and number > 1 and not number.is_integer()):
        err("prewarm_margin", "must be a fraction of MemAvailable (0 to 1) or a number of bytes, got %s"
            % _show(margin))

    python = cfg.get("python")
    if install == "none" and blank(python):
        err("python", "is required when sglang_model_install is none (and sglang_server_python is not set): an "
                      "interpreter that has huggingface_hub")
    elif not blank(python) and not _absolute(python):
        err("python", "must be an absolute path to an interpreter, got %s" % _show(python))
    # the role's own virtualenv (no sglang_model_python given) installs offline from the wheelhouse in that mode
    if install == "wheelhouse" and as_bool(cfg.get("venv")) and blank(cfg.get("wheelhouse")):
        err("wheelhouse", "is required when sglang_model_install is wheelhouse (it follows sglang_server_wheelhouse): "
                          "the directory of wheels on the host that holds huggingface_hub and its dependencies")
    if as_bool(cfg.get("venv")) and (not _absolute(cfg.get("venv_path")) or cfg.get("venv_path") == "/"):
        err("venv", "must be an absolute, normalised path other than '/', got %s" % _show(cfg.get("venv_path")))
    elif as_bool(cfg.get("venv")) and directory_problem(cfg.get("venv_path"), system_only=True):
        err("venv", "%s %s: the role creates its virtualenv there and runs it as root with the hub token"
            % (cfg.get("venv_path"), directory_problem(cfg.get("venv_path"), system_only=True)))
    version = cfg.get("hub_version")
    if not isinstance(version, str) or not _VERSION.match(version):
        err("hub_version", "must be a huggingface_hub release such as 1.33.0, got %s" % _show(version))

    group = cfg.get("group")
    if not isinstance(group, str) or not re.match(r"[a-z_][a-z0-9_-]*\$?\Z", group or ""):
        err("group", "must be a group name, got %s" % _show(group))
    return problems


def _count(value):
    number = as_int(value)
    return number if number is not None else 0


def published_revision(done, repo, requested, source, prewarm, resolved=None):
    """What the role publishes once a revision is usable on a host: ``{resolved, path, report}``.

    ``done`` is the result of llmserve.sglang.model_stage: the staging task's, or the check in the store's when the
    revision was already in place. ``resolved`` is the play's ``sglang_model_resolved`` after a stage; without it the
    revision in place stands for itself (its record in the store stood in for the hub's answer).
    """
    done = done if isinstance(done, dict) else {}
    serving = as_bool(done.get("serving")) is True
    if resolved is None:
        resolved = {"repo": repo, "commit": requested, "floating": False, "manifest": [],
                    "total_bytes": _count(done.get("bytes")), "files": _count(done.get("files"))}
    if serving:
        note = "not needed: this revision is already serving"
    elif prewarm == "never":
        note = "off (sglang_model_prewarm: never)"
    else:
        note = "not run"
    report = {
        "repo": repo,
        "revision": resolved.get("commit", requested),
        "requested": requested,
        "source": source,
        "path": done.get("path", ""),
        "bytes": _count(done.get("bytes")),
        "files": _count(done.get("files")),
        "changed": as_bool(done.get("changed")) is True,
        "downloaded_bytes": _count(done.get("downloaded_bytes")),
        "bytes_read": _count(done.get("bytes_read")),
        "files_hashed": _count(done.get("files_hashed")),
        "verified": done.get("verified") or "",
        "removed": list(done.get("removed") or []),
        "serving": serving,
        "prewarm": note,
    }
    return {"resolved": resolved, "path": done.get("path", ""), "report": report}
