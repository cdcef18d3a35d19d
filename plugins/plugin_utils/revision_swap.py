# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Whether a deployment may load the new model revision into the running server instead of restarting it.

A restart costs minutes on a GPU host (process start, weight load, CUDA graph capture, NCCL set-up); SGLang 0.5.23
can load other weights into the running process (``POST /update_weights_from_disk``, module_utils/weight_swap.py).
That is only the same thing as a restart when nothing but the weights moves: the same SGLang install, the same flags,
the same environment, a checkpoint of the same configuration and tensor layout. This module decides the first three
on the controller, from the rendered files; the module ``llmserve.sglang.weight_swap`` checks the checkpoints on the
host before it asks the server.

How "only the revision changed" is seen: every rendered file is hashed once more with the model path replaced by a
marker (:func:`neutral_sums`). After each verified deployment the role keeps a record (:func:`serving_record`) of
the live files' checksums, their neutral checksums and the model path and revision they serve. A later plan may swap
when the record still describes the live files (nobody changed them since, no restart is pending), its neutral
checksums equal the new ones and only the model path differs (:func:`plan_revision_swap`).

Controller only; the decisions are plain data so that the plan play can print them and the tests can read them.
"""

from __future__ import annotations

import hashlib

POLICIES = ("auto", "never", "required")
MARKER = "\x00llmserve-model-path\x00"
RECORD_KEYS = ("model_path", "weight_version", "live", "neutral")

SWAP = "swap"          # load the new revision into the running process
RESTART = "restart"    # restart the unit (the plan's restart reasons hold)
NOTHING = "none"       # the plan restarts nothing


class RevisionSwapError(ValueError):
    """Input that cannot be decided on (a programming error of the caller, or a broken record)."""


def _sha256(content):
    data = content.encode("utf-8", "surrogateescape") if isinstance(content, str) else bytes(content)
    return hashlib.sha256(data).hexdigest()


def neutral_sums(candidates, model_path):
    """``{name: sha256}`` of each rendered file with every occurrence of ``model_path`` replaced by one marker.

    Two renders that differ only in the model path have equal neutral sums. The marker holds NUL bytes, which the role's
    validation refuses in every value; content that holds it anyway is refused, so no file can match by spelling the
    marker out."""
    if not isinstance(candidates, dict):
        raise RevisionSwapError("neutral_sums: candidates must be a dict of name to rendered content")
    if not isinstance(model_path, str) or not model_path.strip():
        raise RevisionSwapError("neutral_sums: model_path must be a non-empty string, got %r" % (model_path,))
    sums = {}
    for name, content in candidates.items():
        text = content if isinstance(content, str) else bytes(content).decode("utf-8", "surrogateescape")
        if MARKER in text:
            raise RevisionSwapError("neutral_sums: the rendered %s holds the model path marker" % name)
        sums[name] = _sha256(text.replace(model_path, MARKER))
    return sums


def serving_record(candidates, model_path, weight_version):
    """What the role keeps after a verified deployment: the files' checksums (``live``), their neutral checksums,
    and the model path and revision the running process serves. No file content, so nothing secret."""
    return {"model_path": model_path, "weight_version": weight_version or "",
            "live": dict((name, _sha256(content)) for name, content in candidates.items()),
            "neutral": neutral_sums(candidates, model_path)}


def _record_problem(record):
    if not isinstance(record, dict):
        return "no record of what the running server was started with"
    missing = [key for key in RECORD_KEYS if key not in record]
    if missing:
        return "the record of the running server lacks %s" % ", ".join(missing)
    if not isinstance(record["live"], dict) or not isinstance(record["neutral"], dict):
        return "the record of the running server is not readable"
    return None


def plan_revision_swap(policy, plan, record, live_sums, candidates, model_path, weight_version,
                       served_model_name="", draft_model_path="", install_needed=False, active=True,
                       multinode=False):
    """Decide restart or swap for one host.

    ``plan``: ``plan_server``'s result for this host. ``record``: the :func:`serving_record` kept on the host (None
    when there is none). ``live_sums``: ``{name: sha256}`` of the live files as ``deploy_state`` read them.
    ``candidates``: the rendered files of this run. ``model_path``/``weight_version``: what this run serves.
    ``active``: whether the unit is active now.

    Returns ``{action, reasons, problems, from_model_path, from_weight_version, to_model_path, to_weight_version}``: ``action`` is :data:`SWAP`,
    :data:`RESTART` or :data:`NOTHING`; ``reasons`` says why a swap is not possible (empty for a swap and when there
    is nothing to do); ``problems`` is non-empty only when the policy is ``required`` and a restart is needed.
    """
    if policy not in POLICIES:
        raise RevisionSwapError("sglang_server_weight_swap must be one of %s, got %r" % (", ".join(POLICIES), policy))
    if not isinstance(plan, dict) or not isinstance(live_sums, dict) or not isinstance(candidates, dict):
        raise RevisionSwapError("plan_revision_swap: plan, live_sums and candidates must be dicts")
    result = {"action": NOTHING, "reasons": [], "problems": [], "from_model_path": None, "from_weight_version": None,
              "to_model_path": model_path, "to_weight_version": weight_version}
    if not plan.get("restart_needed"):
        return result
    if policy == "never":
        result.update(action=RESTART, reasons=["sglang_server_weight_swap is never"])
        return result
    reasons = []
    problem = _record_problem(record)
    if problem:
        reasons.append(problem)
    else:
        result["from_model_path"] = record["model_path"]
        result["from_weight_version"] = record["weight_version"]
        if dict(record["live"]) != dict(live_sums):
            reasons.append("the live files are not the ones the running server was started with")
        if record["model_path"] == model_path:
            reasons.append("the model revision does not change")
        new = neutral_sums(candidates, model_path)
        changed = sorted(name for name in set(record["neutral"]) | set(new)
                         if record["neutral"].get(name) != new.get(name))
        if changed:
            reasons.append("more than the model revision changes (%s)" % ", ".join(changed))
    if install_needed:
        reasons.append("SGLang is installed anew")
    if not active:
        reasons.append("the unit is not active")
    if plan.get("restart_pending"):
        reasons.append("sglang_server_restart_policy is never")
    if served_model_name:
        # 0.5.23 reports the loaded path as the served name after an update: clients would lose the name
        reasons.append("sglang_server_served_model_name is set (SGLang 0.5.23 renames the model to its path when it "
                       "loads other weights)")
    if draft_model_path:
        # the update loads its one path into every runner, the draft runner included
        reasons.append("a separate draft model is configured (the update would load the target's weights into it)")
    if multinode:
        reasons.append("multi-node servers are restarted (the in-place swap covers single-host servers)")
    result["reasons"] = reasons
    result["action"] = RESTART if reasons else SWAP
    if reasons and policy == "required":
        result["problems"] = ["sglang_server_weight_swap is required, but this change needs a restart: %s"
                              % "; ".join(reasons)]
    return result
