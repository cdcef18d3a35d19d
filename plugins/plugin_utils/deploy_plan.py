# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a site run would change on a host, decided from one read of the host, and the batches of its rollout.

``plan_server`` is the one place where the sglang_server role decides, from what ``llmserve.sglang.deploy_state``
read on the host and the checksums of the files rendered on the controller, which files to stage, whether to swap
them in, whether to restart, whether to refresh the last good copy and whether to enable the unit. The site
playbook's plan play and the role's deployment (``deploy.yml``) both call it, so the plan and the change can not
disagree about what "no change" means.

``rollout_batches`` splits hosts into the batches Ansible makes of a play with ``serial`` (the same rules as
``PlaybookExecutor._get_serialized_batches``), so the plan play knows which hosts the rollout takes first.
"""

from __future__ import annotations

import hashlib
import os


class PlanError(ValueError):
    """Input that does not describe a deployment (a programming error of the caller)."""


def _mode(value):
    if value is None:
        return None
    return int(value, 8) if isinstance(value, str) else int(value)


def _differs(info, sha256=None, owner=None, group=None, mode=None):
    """Whether an inspected path is not a regular file with the given content and attributes."""
    if not info or info.get("type") != "file":
        return True
    if sha256 is not None and info.get("sha256") != sha256:
        return True
    if owner is not None and info.get("owner") != owner:
        return True
    if group is not None and info.get("group") != group:
        return True
    return mode is not None and _mode(info.get("mode")) != _mode(mode)


def _sum(info):
    """The content checksum of an inspected path, ``missing`` unless it is a regular file (like a failed stat)."""
    if info and info.get("type") == "file":
        return info.get("sha256") or "missing"
    return "missing"


def _names(paths):
    return ", ".join(os.path.basename(p) for p in paths)


def plan_server(state, managed, candidates, staging_dir, good_dir, extra=None, staged_attrs=None, good_attrs=None,
                install=None, account=None, restart_policy="on_change"):
    """Decide a deployment from one ``deploy_state`` result.

    ``state``: the module result (``paths`` must cover every path named below; ``directories``, ``unit`` and
    ``accounts`` are used when present). ``managed``: the deployment's files, ``{name, path}`` with ``path`` the live
    file; its staged and last good copies are ``<staging_dir>/<basename>`` and ``<good_dir>/<basename>``.
    ``candidates``: the content rendered on the controller for each ``name`` (only its sha256 is used and nothing of
    it is returned). ``extra``: other files the stage step writes, ``{path, sha256, owner, group, mode}`` (they never
    restart anything). ``staged_attrs``/``good_attrs``: the ``{owner, group, mode}`` of the staged and the last good
    copies. ``install``: ``{needed, what}``. ``account``: ``{user, group, home, shell}`` (and ``comment``) the service account must have.
    """
    if not isinstance(state, dict) or not isinstance(managed, list) or not isinstance(candidates, dict):
        raise PlanError("plan_server: state must be a dict (a deploy_state result), managed a list of files and "
                        "candidates a dict of their contents")
    paths = state.get("paths") or {}
    staged_attrs = staged_attrs or {}
    good_attrs = good_attrs or {}
    install = install or {}
    files = []
    for item in managed:
        name, live = item.get("name"), item.get("path")
        if name not in candidates or not isinstance(live, str):
            raise PlanError("plan_server: no rendered content for the managed file %r (%r)" % (name, live))
        content = candidates[name]
        data = content.encode("utf-8", "surrogateescape") if isinstance(content, str) else bytes(content)
        base = os.path.basename(live)
        files.append(dict(live=live, staged=os.path.join(staging_dir, base), good=os.path.join(good_dir, base),
                          sha256=hashlib.sha256(data).hexdigest()))
    managed = files

    def info(path):
        if path not in paths:
            raise PlanError("plan_server: deploy_state did not inspect %s" % path)
        return paths[path]

    changes = []
    if account:
        accounts = state.get("accounts") or {}
        group = accounts.get("group") or {}
        user = accounts.get("user") or {}
        if not group.get("exists"):
            changes.append("create the group %s" % account.get("group"))
        if not user.get("exists"):
            changes.append("create the user %s" % account.get("user"))
        else:
            wrong = [what for what, ok in (("group", group.get("exists") and user.get("gid") == group.get("gid")),
                                           ("home", user.get("home") == account.get("home")),
                                           ("shell", user.get("shell") == account.get("shell")),
                                           ("comment", "comment" not in account
                                            or user.get("comment") == account.get("comment"))) if not ok]
            if wrong:
                changes.append("update the user %s (%s)" % (account.get("user"), ", ".join(wrong)))
    for entry in state.get("directories") or []:
        if entry.get("changes"):
            changes.append("directory %s: %s" % (entry.get("path"), ", ".join(entry["changes"])))
    if install.get("needed"):
        changes.append("install %s" % (install.get("what") or "SGLang"))

    stage = [f["staged"] for f in managed
             if _differs(info(f["staged"]), f["sha256"], staged_attrs.get("owner"), staged_attrs.get("group"),
                         staged_attrs.get("mode"))]
    stage_extra = [e["path"] for e in extra or []
                   if _differs(info(e["path"]), e.get("sha256"), e.get("owner"), e.get("group"), e.get("mode"))]
    swap = [f["live"] for f in managed if _sum(info(f["live"])) != f["sha256"]]
    live_sums = [_sum(info(f["live"])) for f in managed]
    good_sums = [_sum(info(f["good"])) for f in managed]
    active = (state.get("unit") or {}).get("ActiveState", "")

    reasons = []
    if stage:
        reasons.append("the staged files change (%s)" % _names(stage))
    if install.get("needed"):
        reasons.append("SGLang is installed anew")
    if swap:
        reasons.append("the live files differ (%s)" % _names(swap))
    if live_sums != good_sums:
        reasons.append("the last good copy differs from the live files")
    if active != "active":
        reasons.append("the unit is not active (%s)" % (active or "unknown"))
    restart_needed = bool(reasons)
    pending = restart_needed and restart_policy == "never"
    swap_needed = bool(swap or stage)
    keep_good_needed = any(_differs(info(f["good"]), _sum(info(f["live"])), good_attrs.get("owner"),
                                    good_attrs.get("group"), good_attrs.get("mode")) for f in managed)
    enable_needed = (state.get("unit") or {}).get("UnitFileState", "") != "enabled"

    if stage or stage_extra:
        changes.append("stage %s" % _names(stage + stage_extra))
    if swap_needed:
        changes.append("swap in the staged files (%s)" % (_names(swap) or "unchanged content"))
    if restart_needed:
        changes.append(("restart pending (sglang_server_restart_policy: never): " if pending else "restart: ")
                       + "; ".join(reasons))
    if enable_needed and not pending:
        changes.append("enable the unit at boot")
    if keep_good_needed and not restart_needed:
        changes.append("refresh the last good copy")
    return dict(
        changes=changes,
        stage=stage + stage_extra,
        stage_managed=stage,
        swap=swap,
        swap_needed=swap_needed,
        restart_needed=restart_needed,
        restart_reasons=reasons,
        restart_pending=pending,
        have_last_good="missing" not in good_sums,
        keep_good_needed=keep_good_needed,
        enable_needed=enable_needed,
    )


def _batch_size(value, total):
    """Ansible's ``pct_to_int``: ``'30%'`` of ``total`` (at least 1), else the integer."""
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            pct = int(value.strip()[:-1])
        except ValueError:
            raise PlanError("serial: %r is not a percentage" % value)
        return int((pct / 100.0) * total) or 1
    if isinstance(value, bool):
        raise PlanError("serial: %r is not a batch size" % value)
    try:
        return int(value)
    except (TypeError, ValueError):
        raise PlanError("serial: %r is not a batch size" % (value,))


def rollout_batches(hosts, serial, groups=None):
    """The batches a play with ``serial`` makes of ``hosts`` (a scalar or a list of sizes/percentages; 0, an empty
    list or None make one batch).

    ``groups`` (host -> the multi-node server group it belongs to; empty or missing for a single-host server) makes
    ``serial`` count servers instead of hosts: the nodes of one group form one unit, placed where its first node is
    in ``hosts``, and are never split over batches. Flattened, the batches are the rollout's host order, and their
    lengths the ``serial`` list that makes Ansible cut exactly these batches."""
    hosts = list(hosts or [])
    if groups:
        if not isinstance(groups, dict):
            raise PlanError("groups: %r is not a mapping of host to group" % (groups,))
        units = []
        by_group = {}
        for host in hosts:
            group = groups.get(host) or ""
            if not group:
                units.append([host])
            elif group in by_group:
                by_group[group].append(host)
            else:
                by_group[group] = [host]
                units.append(by_group[group])
        return [[host for unit in batch for host in unit] for batch in _batches(units, serial)]
    return _batches(hosts, serial)


def _batches(hosts, serial):
    hosts = list(hosts)
    if serial is None or serial == "":
        sizes = []
    elif isinstance(serial, (list, tuple)):
        sizes = list(serial)
    else:
        sizes = [serial]
    if not sizes:
        sizes = [-1]
    total = len(hosts)
    batches = []
    item = 0
    while hosts:
        size = _batch_size(sizes[item], total)
        if size <= 0:
            batches.append(hosts)
            break
        batches.append(hosts[:size])
        hosts = hosts[size:]
        item = min(item + 1, len(sizes) - 1)
    return batches
