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
import json
import re

from ansible_collections.llmserve.sglang.plugins.plugin_utils.deploy_plan import _sum as file_sum

POLICIES = ("auto", "never", "required")
MARKER = "\x00llmserve-model-path\x00"
VERSION_MARKER = "\x00llmserve-weight-version\x00"
# only a commit is neutralised on its own: a short version ("a") would also match unrelated text
COMMIT = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
RECORD_KEYS = ("model_path", "weight_version", "live", "neutral")

SWAP = "swap"          # load the new revision into the running process
RESTART = "restart"    # restart the unit (the plan's restart reasons hold)
NOTHING = "none"       # the plan restarts nothing


class RevisionSwapError(ValueError):
    """Input that cannot be decided on (a programming error of the caller, or a broken record)."""


def _sha256(content):
    data = content.encode("utf-8", "surrogateescape") if isinstance(content, str) else bytes(content)
    return hashlib.sha256(data).hexdigest()


def weight_version_for(model_path):
    """The version a server loading ``model_path`` reports: the commit a model store's revision directory is named
    after (``<dir>/<org>--<name>/<commit>``), else "" (no swap: there is no revision to name)."""
    if not isinstance(model_path, str):
        return ""
    name = model_path.rstrip("/").rsplit("/", 1)[-1]
    return name if model_path.startswith("/") and COMMIT.match(name) else ""


def neutral_sums(candidates, model_path, weight_version=""):
    """``{name: sha256}`` of each rendered file with every occurrence of ``model_path`` replaced by one marker, and of
    ``weight_version`` by another when it is a commit (40 or 64 hex digits: nothing else in a file spells one).

    Two renders that differ only in the model path and its commit have equal neutral sums. The markers hold NUL bytes,
    which the role's validation refuses in every value; content that holds one anyway is refused, so no file can match
    by spelling a marker out."""
    if not isinstance(candidates, dict):
        raise RevisionSwapError("neutral_sums: candidates must be a dict of name to rendered content")
    if not isinstance(model_path, str) or not model_path.strip():
        raise RevisionSwapError("neutral_sums: model_path must be a non-empty string, got %r" % (model_path,))
    version = weight_version if isinstance(weight_version, str) and COMMIT.match(weight_version) else ""
    sums = {}
    for name, content in candidates.items():
        text = content if isinstance(content, str) else bytes(content).decode("utf-8", "surrogateescape")
        if MARKER in text or VERSION_MARKER in text:
            raise RevisionSwapError("neutral_sums: the rendered %s holds a marker" % name)
        text = text.replace(model_path, MARKER)
        if version:
            text = text.replace(version, VERSION_MARKER)
        sums[name] = _sha256(text)
    return sums


def serving_record(candidates, model_path, weight_version):
    """What the role keeps after a verified deployment: the files' checksums (``live``), their neutral checksums,
    and the model path and revision the running process serves. No file content, so nothing secret."""
    return {"model_path": model_path, "weight_version": weight_version or "",
            "live": dict((name, _sha256(content)) for name, content in candidates.items()),
            "neutral": neutral_sums(candidates, model_path, weight_version)}


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
                       served_model_name="", draft_model_path="", install_needed=False, active=True):
    """Decide restart or swap for one host.

    ``plan``: ``plan_server``'s result for this host. ``record``: the :func:`serving_record` kept on the host (None
    when there is none). ``live_sums``: ``{name: sha256}`` of the live files as ``deploy_state`` read them.
    ``candidates``: the rendered files of this run. ``model_path``/``weight_version``: what this run serves.
    ``active``: whether the unit is active now.

    Returns ``{action, reasons, problems, from_model_path, from_weight_version, to_model_path, to_weight_version,
    revision_changes}``: ``action`` is :data:`SWAP`,
    :data:`RESTART` or :data:`NOTHING`; ``reasons`` says why a swap is not possible (empty for a swap and when there
    is nothing to do); ``problems`` is non-empty only when the policy is ``required`` and a running server would be restarted.
    """
    if policy not in POLICIES:
        raise RevisionSwapError("sglang_server_weight_swap must be one of %s, got %r" % (", ".join(POLICIES), policy))
    if not isinstance(plan, dict) or not isinstance(live_sums, dict) or not isinstance(candidates, dict):
        raise RevisionSwapError("plan_revision_swap: plan, live_sums and candidates must be dicts")
    result = {"action": NOTHING, "reasons": [], "problems": [], "from_model_path": None, "from_weight_version": None,
              "to_model_path": model_path, "to_weight_version": weight_version, "revision_changes": False}
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
        # what the reports speak of: a restart is a "model revision change" only when the revision does change
        result["revision_changes"] = bool(model_path) and record["model_path"] != model_path
        if dict(record["live"]) != dict(live_sums):
            reasons.append("the live files are not the ones the running server was started with")
        if record["model_path"] == model_path:
            reasons.append("the model revision does not change")
        new = neutral_sums(candidates, model_path, weight_version)
        changed = sorted(name for name in set(record["neutral"]) | set(new)
                         if record["neutral"].get(name) != new.get(name))
        if changed:
            reasons.append("more than the model revision changes (%s)" % ", ".join(changed))
    if not weight_version:
        reasons.append("the model path is not a revision directory of the model store (no commit to report)")
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
    result["reasons"] = reasons
    result["action"] = RESTART if reasons else SWAP
    # a unit that does not run has nothing to swap into: starting it is no restart the policy forbids
    if reasons and policy == "required" and active:
        result["problems"] = ["sglang_server_weight_swap is required, but this change needs a restart: %s"
                              % "; ".join(reasons)]
    return result


def read_record(text):
    """The serving record as ``deploy_state`` read it (its text; None when there is no file); None when unreadable."""
    if isinstance(text, dict):
        return text
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        record = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def plan_host_swap(plan, state, managed, candidates, record_text, policy, model_dir, weight_version,
                   served_model_name="", draft_model_path="", multinode=False):
    """``plan`` (``plan_server``'s result with ``install_needed`` and ``active``) with ``weight_swap`` added: the
    decision of :func:`plan_revision_swap` for this host from one ``deploy_state`` read (``state``), the managed files
    (``[{name, path}]``), this run's ``candidates`` by name and the serving record's text. When the decision is a swap,
    the plan's restart line in ``changes`` says so instead."""
    if not isinstance(plan, dict) or not isinstance(state, dict) or not isinstance(candidates, dict):
        raise RevisionSwapError("plan_host_swap: plan, state and candidates must be dicts")
    paths = state.get("paths") or {}
    names = [entry["name"] for entry in managed]
    # deploy_plan's rule, so both read the live files alike: a checksum only for a regular file
    live = dict((entry["name"], file_sum(paths.get(entry["path"]))) for entry in managed)
    files = dict((name, candidates[name]) for name in names)
    decision = plan_revision_swap(
        policy, plan, read_record(record_text), live, files, model_dir or "", weight_version or "",
        served_model_name=served_model_name or "", draft_model_path=draft_model_path or "",
        install_needed=bool(plan.get("install_needed")), active=bool(plan.get("active")))
    # a node of a multi-node server swaps only when all of them do: plan_group_swap decides that once every node's
    # own decision is known, and only then says it in the changes
    decision["group"] = bool(multinode)
    out = dict(plan, weight_swap=decision)
    if decision["action"] == SWAP and not multinode:
        out["changes"] = _swap_changes(plan, decision, "into the running server")
    elif decision["action"] == RESTART and policy != "never" and weight_version:
        out["changes"] = _restart_changes(plan, decision)
    return out


def _swap_changes(plan, decision, where):
    line = "load revision %s %s in place of %s (no restart)" % (
        decision["to_weight_version"], where, decision["from_weight_version"] or decision["from_model_path"])
    return [line if str(change).startswith("restart: ") else change for change in plan.get("changes", [])]


def _restart_changes(plan, decision):
    return list(plan.get("changes", [])) + [
        "restart instead of loading the revision in place: %s" % "; ".join(decision["reasons"])]


def plan_group_swap(plan, node_plans, policy):
    """The decision of one node of a multi-node server, made for the server as a whole.

    ``plan``: this node's plan after :func:`plan_host_swap`. ``node_plans``: ``{host: plan}`` of every node of the
    server (this one included; a node without a plan, one that failed before, counts as a restart). The nodes load
    the revision together: rank 0 is asked and every rank loads the path from its own disk, so each node must have
    the same revision staged behind the same link. They swap only when every node decided to swap from the same
    revision to the same one; otherwise every node restarts, and the reasons name the nodes that need it."""
    if not isinstance(plan, dict) or not isinstance(node_plans, dict):
        raise RevisionSwapError("plan_group_swap: plan and node_plans must be dicts")
    decision = plan.get("weight_swap")
    if not isinstance(decision, dict) or decision.get("action") != SWAP:
        return plan
    reasons = []
    for host in sorted(node_plans):
        other = (node_plans[host] or {}).get("weight_swap") if isinstance(node_plans[host], dict) else None
        if not isinstance(other, dict) or other.get("action") != SWAP:
            why = "; ".join((other or {}).get("reasons") or []) or "it has no revision to load"
            reasons.append("node %s of the multi-node server restarts (%s)" % (host, why))
        elif (other.get("from_weight_version"), other.get("to_weight_version"), other.get("to_model_path")) != (
                decision["from_weight_version"], decision["to_weight_version"], decision["to_model_path"]):
            reasons.append("node %s of the multi-node server moves from revision %s to %s at %s" % (
                host, other.get("from_weight_version") or "?", other.get("to_weight_version") or "?",
                other.get("to_model_path") or "?"))
    out = dict(plan)
    if not reasons:
        out["changes"] = _swap_changes(plan, decision, "on every node of the multi-node server")
        return out
    decision = dict(decision, action=RESTART, reasons=["a multi-node server restarts as one: " + "; ".join(reasons)])
    if policy == "required" and plan.get("active"):
        decision["problems"] = ["sglang_server_weight_swap is required, but this change needs a restart: %s"
                                % "; ".join(decision["reasons"])]
    out["weight_swap"] = decision
    out["changes"] = _restart_changes(plan, decision)
    return out


def serving_record_text(candidates, names, model_dir, weight_version):
    """The record's file content (JSON) for the managed files ``names`` of ``candidates``."""
    files = dict((name, candidates[name]) for name in names)
    return json.dumps(serving_record(files, model_dir, weight_version), sort_keys=True, indent=1) + "\n"


# the update was refused before anything was loaded: the old weights serve on every rank
_NOTHING_LOADED = ("incompatible", "unsupported", "unauthorized")


def swap_verdict(server_result, prepared=None, loaded=None):
    """The verdict on an in-place swap for the server as a whole: ``{swapped, kept_old, outcome, msg, seconds,
    problems, nodes}``.

    ``server_result``: the result of ``llmserve.sglang.weight_swap`` on the host that answers HTTP (rank 0 of a
    multi-node server); a skipped or missing result when it was not asked. ``prepared`` and ``loaded``: for a
    multi-node server, ``{host: result}`` of ``llmserve.sglang.weight_swap_node`` (``state=prepared``, then
    ``state=loaded``) on every other node; a skipped result where a step did not run.
    ``swapped``: the server (every node) serves the new revision in the same processes. ``kept_old``: it certainly
    still serves the old one everywhere (nothing was loaded), so a failed swap may leave it as it is."""
    server_result = server_result if isinstance(server_result, dict) else {}
    prepared = prepared if isinstance(prepared, dict) else {}
    loaded = loaded if isinstance(loaded, dict) else {}
    verdict = {"swapped": False, "kept_old": False, "outcome": server_result.get("outcome"),
               "msg": server_result.get("msg"), "seconds": server_result.get("seconds"),
               "problems": list(server_result.get("problems") or []), "nodes": {}}
    hosts = sorted(prepared)
    for host in hosts:
        step = loaded.get(host) if isinstance(loaded.get(host), dict) and "outcome" in loaded[host] else prepared[host]
        step = step if isinstance(step, dict) else {}
        verdict["nodes"][host] = {"outcome": step.get("outcome"), "msg": step.get("msg"),
                                  "seconds": step.get("seconds")}
    # a node of rank >= 1 that was not ready: rank 0 was not asked
    unready = [host for host in hosts if (prepared[host] or {}).get("outcome") != "ready"]
    if unready:
        verdict["outcome"] = "incompatible" if all(
            verdict["nodes"][host]["outcome"] == "incompatible" for host in unready) else "not_ready"
        verdict["kept_old"] = verdict["outcome"] == "incompatible"
        verdict["problems"] = ["%s: %s" % (host, verdict["nodes"][host]["msg"] or "not prepared") for host in unready]
        verdict["msg"] = "rank 0 was not asked to load the revision: " + "; ".join(verdict["problems"])
        return verdict
    outcome = server_result.get("outcome")
    if outcome in ("swapped", "current"):
        failed = [host for host in hosts if outcome == "swapped" and verdict["nodes"][host]["outcome"] != "swapped"]
        if not failed:
            verdict["swapped"] = True
            if hosts and outcome == "swapped":
                verdict["msg"] = "%s; the ranks of %s loaded it too" % (verdict["msg"], ", ".join(hosts))
            return verdict
        verdict["outcome"] = verdict["nodes"][failed[0]]["outcome"] or "lost"
        verdict["problems"] = ["%s: %s" % (host, verdict["nodes"][host]["msg"]) for host in failed]
        verdict["msg"] = ("rank 0 loaded the revision, but not every other node did (the server may serve mixed "
                          "weights): " + "; ".join(verdict["problems"]))
        return verdict
    # rank 0 failed: the other nodes' state is unknown unless nothing was loaded anywhere
    verdict["kept_old"] = outcome in _NOTHING_LOADED or (not hosts and server_result.get("old_weights_serving") is True)
    if verdict["msg"] is None:
        verdict["msg"] = "the server was not asked to load the revision"
    return verdict
