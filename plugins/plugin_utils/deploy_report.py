# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The per-host deployment report of the site playbook: one summary from the three roles' results.

``build_host_report`` takes what each stage published (``iommu_preflight_report``, the nvidia_driver facts,
``sglang_server_report``); a stage that did not run (tags, failure) gives ``None`` and shows as "not run".
``gateway_states`` turns the results of taking a worker out of its gateways and putting it back
(llmserve.sglang.gateway_worker, looped over the gateways) into the host's rows of gateway state.
The site playbook's plan (``sglang_rollout_plan``: what the run planned to change on the host) is kept with it.
``host_rows`` gives the rows of one host's table, for the play output (``render_text``) and the Markdown template
(``roles/sglang_rollout/templates/sglang_report.md.j2``).
``report_file_name`` turns a host's inventory name into the name of its report files.
``host_stats`` cuts a host report down to the few values a job's custom stats carry (``set_stats``: the AWX job
artifacts that later workflow nodes get as extra vars).
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import quote

from ansible_collections.llmserve.sglang.plugins.module_utils.model_store import human_bytes
from ansible_collections.llmserve.sglang.plugins.module_utils.text import safe_value
from ansible_collections.llmserve.sglang.plugins.plugin_utils.rotation import (
    gateway_of as _gateway_of,
    loop_results as _loop_results,
    rotation_rows,
    rotation_stats,
    swap_total,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.values import finite_number

NOT_RUN = "not run"

# What a Python package version looks like (0.5.23, 0.5.0rc2, 0.4.6.post1, 0.5.3.dev12+g1234abc): no space, quote,
# brace or control character, so a server's /server_info cannot put text of its choosing where a version goes.
_VERSION = re.compile(r"[0-9]+(?:[.-][0-9A-Za-z]+)*(?:\+[0-9A-Za-z]+(?:\.[0-9A-Za-z]+)*)?")
_VERSION_MAX = 64
# The openings of Jinja's expressions, statements and comments; "{ {" no longer opens anything.
_JINJA_OPENING = re.compile(r"\{(?=[{%#])")


def version_text(value):
    """``value`` as a plain ``str`` when it is shaped like a package version, else ``None``."""
    if isinstance(value, str) and len(value) <= _VERSION_MAX and _VERSION.fullmatch(value):
        return str(value)
    return None


def inert(value):
    """``value`` with every string (dict keys too) unable to open Jinja: ``{{``, ``{%`` and ``{#`` become ``{ {``,
    ``{ %`` and ``{ #``. The job artifacts reach later workflow nodes as extra vars, which Ansible templates; text
    that a server or a host wrote (an error quoting a server's answer, a stage verdict) must stay text there."""
    if isinstance(value, str):
        return _JINJA_OPENING.sub("{ ", str(value))
    if isinstance(value, dict):
        return {inert(k): inert(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [inert(v) for v in value]
    return value


# File names of reports stay well below NAME_MAX (255 bytes) with a suffix such as ".json".
_FILE_NAME_MAX = 200


def report_file_name(host):
    """The file name (without suffix) of ``host``'s report files: always one path component of the report directory.

    An inventory name is not a file name: ``../../x`` or ``/etc/x`` would write outside the directory, and NUL, a
    newline or ``/`` have no place in one. Letters, digits, ``_``, ``-`` and ``.`` are kept (a leading dot is not, so
    neither ``..`` nor a hidden file comes out), every other byte is written ``%XX`` (UTF-8; ``%`` too, so two
    names never share a file); a very long result is cut and ends in a hash of the name.
    """
    text = str(host)
    name = quote(text, safe="-_.", errors="surrogatepass")
    if name.startswith("."):
        name = "%2E" + name[1:]
    if not name:
        raise ValueError("a report needs a host name, got an empty one")
    if len(name) > _FILE_NAME_MAX:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        name = "%s~%s" % (name[:_FILE_NAME_MAX - 17], digest)
    return name


def _gpu_summary(gpus):
    """``4 x NVIDIA RTX PRO 6000 Blackwell Server Edition (blackwell)``, one part per distinct model."""
    counts = {}
    for gpu in gpus:
        key = (gpu.get("name") or "unknown GPU", gpu.get("architecture") or "unknown")
        counts[key] = counts.get(key, 0) + 1
    if not counts:
        return "none"
    return ", ".join("%d x %s (%s)" % (n, name, arch) for (name, arch), n in sorted(counts.items()))


def gateway_states(taken_out=None, put_back=None):
    """One dict per gateway: where this host's worker stands in it after this run.

    ``taken_out`` and ``put_back`` are the registered results of gateway_worker (state absent, then present)
    looped over the gateways; either may be ``None`` (not run). ``state`` is ``in`` (put back and healthy),
    ``in, unhealthy``, ``out`` (taken out, not put back: the host failed, or putting it back failed) or
    ``untouched`` (only in the rare case of a put-back without a take-out).
    """
    rows = {}
    for result in _loop_results(taken_out):
        row = rows.setdefault(_gateway_of(result), {"state": "out"})
        if result.get("failed"):
            row["error"] = "taking it out: %s" % (result.get("msg") or "failed")
        row["drained"] = result.get("drained")
        row["drain_seconds"] = result.get("drain_seconds")
        row["in_flight_at_removal"] = (result.get("in_flight") or {}).get("at_removal")
    for result in _loop_results(put_back):
        row = rows.setdefault(_gateway_of(result), {"state": "untouched"})
        if result.get("failed"):
            row["state"] = "out"
            row["error"] = "putting it back: %s" % (result.get("msg") or "failed")
            continue
        row["state"] = "in" if result.get("healthy") else "in, unhealthy"
        row["wait_seconds"] = result.get("wait_seconds")
        row["healthy_workers"] = result.get("healthy_workers")
    return [dict(gateway=name, **rows[name]) for name in sorted(rows)]


def _gateway_text(row):
    parts = [row.get("state") or "?"]
    if row.get("drain_seconds") is not None:
        parts.append("drained in %.1f s" % float(row["drain_seconds"]))
    if row.get("wait_seconds") is not None:
        parts.append("healthy again after %.1f s" % float(row["wait_seconds"]))
    if row.get("error"):
        parts.append(str(row["error"]))
    return "%s: %s" % (row.get("gateway"), ", ".join(parts))


def _model_part(model):
    """The sglang_model role's ``sglang_model_report`` in the report's shape: plain, typed values only."""
    return {
        "repo": _text_or_none(model.get("repo")),
        "revision": _text_or_none(model.get("revision")),
        "requested": _text_or_none(model.get("requested")),
        "path": _text_or_none(model.get("path")),
        "bytes": _count_or_none(model.get("bytes")),
        "files": _count_or_none(model.get("files")),
        "staged": bool(_flag(model.get("changed"))),
        "downloaded_bytes": _count_or_none(model.get("downloaded_bytes")),
        "bytes_read": _count_or_none(model.get("bytes_read")),
        "files_hashed": _count_or_none(model.get("files_hashed")),
        "verified": _text_or_none(model.get("verified")),
        "removed": [str(path) for path in model.get("removed") or []],
        "prewarm": _text_or_none(model.get("prewarm")),
    }


def _health_part(preflight):
    """The GPU health the preflight saw, per GPU (every GPU, selected or not): the DMA faults by GPU address, the Xid
    events by device, code and fatality, and the P2P pairs the functional test decided (``ok`` true or false; pairs
    it did not test are left out). The node exporter textfile is written from it (``plugin_utils/host_metrics.py``)."""
    pairs = ((preflight.get("p2p") or {}).get("pairs") or {}).values()
    return {
        "dma_faults": {str(g["pci_address"]): _count_or_none(g.get("dma_faults")) or 0
                       for g in preflight.get("gpus") or [] if g.get("pci_address")},
        "xid_events": [{"gpu": str(x.get("pci_address") or ""), "code": str(x.get("code")), "fatal": bool(x.get("fatal")),
                        "count": _count_or_none(x.get("count")) or 0} for x in preflight.get("xid_counts") or []],
        "p2p": sorted(({"src": str(p.get("src")), "dst": str(p.get("dst")), "ok": bool(p["functional"])}
                       for p in pairs if isinstance(p, dict) and p.get("functional") is not None),
                      key=lambda p: (p["src"], p["dst"])),
    }


def _p2p_part(p2p, gpus):
    """The preflight's P2P verdict (``iommu_preflight_report.p2p``) with the GPUs it covers: enough to draw the pair
    matrix (a pair is bad, undecided, or good). ``unknown_pairs`` is ``None`` in a preflight report from before it
    was published."""
    unknown = p2p.get("unknown_pairs")
    group = p2p.get("largest_p2p_group")
    return {
        "gpus": [str(gpu) for gpu in gpus if gpu],
        "tested": bool(p2p.get("tested")),
        "ok": p2p.get("ok") if isinstance(p2p.get("ok"), bool) else None,
        "skipped": _text_or_none(p2p.get("skipped")),
        "bad_pairs": [str(key) for key in p2p.get("bad_pairs") or []],
        "unknown_pairs": [str(key) for key in unknown] if isinstance(unknown, list) else None,
        "ipc_failed": [str(gpu) for gpu in p2p.get("ipc_failed") or []],
        "largest_p2p_group": [str(gpu) for gpu in group] if isinstance(group, list) else None,
    }


def _next_boot_part(next_boot):
    """The preflight's next-boot verdict: the verdict and policy, what the host boots next, the findings."""
    summary = next_boot.get("summary") or {}
    part = {"verdict": next_boot.get("verdict"), "policy": next_boot.get("policy"),
            "errors": list(next_boot.get("errors") or []), "warnings": list(next_boot.get("warnings") or [])}
    for key in ("kernel", "kernel_source", "kernel_is_running", "cmdline", "update_grub_pending", "module_version",
                "loaded_module_version", "userspace_version", "fabric_manager_version", "held_packages",
                "unattended_upgrades", "checks", "error"):
        if key in summary:
            part[key] = summary[key]
    return part


def _flag(value):
    return value.strip().lower() in ("true", "yes", "1") if isinstance(value, str) else bool(value)


def _canary_part(gate):
    """The canary gate's verdict as the report keeps it: the numbers judged, not every worker's."""
    checks = [{key: check.get(key) for key in ("metric", "canary", "pool", "ratio", "difference", "result", "message")}
              for check in gate.get("checks") or [] if isinstance(check, dict)]
    return {"verdict": gate.get("verdict"), "message": gate.get("message"), "pool": list(gate.get("pool") or []),
            "excluded": dict(gate.get("excluded") or {}), "source": gate.get("source"),
            "window_seconds": gate.get("window_seconds"), "checks": checks,
            "problems": list(gate.get("problems") or [])[:20], "kept": gate.get("kept")}


def build_host_report(host, preflight=None, driver=None, sglang=None, gateways=None, plan=None, model=None,
                      rotation=None, canary=None):
    """Return the report dict of one host. Every argument but ``host`` may be ``None``.

    ``gateways`` is the list from ``gateway_states`` (empty or ``None``: no gateway was touched this run);
    ``plan`` is the site playbook's ``sglang_rollout_plan``; ``model`` the sglang_model role's ``sglang_model_report``
    (repository, revision, bytes, what was downloaded, read and verified on this host); ``rotation`` the record of
    ``rotation.rotation_record`` (the worker's time out of rotation; ``None`` when it neither left a gateway nor
    restarted); ``canary`` the verdict of site.yml's canary gate on this host (canary_gate.judge, with ``kept``: whether
    its change stayed), ``None`` when it was not a canary.

    Every string of the report is ``text.safe_value`` (printable, valid UTF-8, capped): the report is where what the
    servers, the gateways and the hosts answered comes together, and the report files, the job's custom stats,
    report.html and the node exporter textfiles are all made from it; one character no file can hold (a lone
    surrogate) or no YAML can read must not stop the end of the run.
    """
    report = {"host": host, "stages": {}}
    if rotation:
        report["rotation"] = rotation
    if model:
        report["stages"]["model"] = "staged" if _flag(model.get("changed")) else "verified"
        report["model"] = _model_part(model)
    if gateways:
        report["gateways"] = list(gateways)
    if isinstance(canary, dict) and canary.get("verdict"):
        report["stages"]["canary"] = "%s, %s" % (canary["verdict"], "kept" if canary.get("kept") else "rolled back")
        report["canary"] = _canary_part(canary)
    if plan is not None:
        report["plan"] = {"changes": list(plan.get("changes") or []),
                          "restart_needed": bool(plan.get("restart_needed"))}

    if preflight:
        gpus = preflight.get("gpus") or []
        selected = [g for g in gpus if g.get("selected", True)] or gpus
        host_facts = preflight.get("host") or {}
        report["stages"]["preflight"] = preflight.get("status", "pass")
        report.update({
            "gpus": _gpu_summary(selected),
            "gpu_count": len(selected),
            "numa_nodes": sorted({g.get("numa_node") for g in selected if g.get("numa_node") is not None}),
            "iommu": {
                "enabled": host_facts.get("iommu"),
                "vendor": host_facts.get("iommu_vendor"),
                "per_gpu": {g.get("pci_address"): g.get("iommu_domain_type") for g in selected},
            },
            "sev_snp": host_facts.get("sev_snp"),
            "dma_faults": sum(int(g.get("dma_faults") or 0) for g in gpus),
            "driver_version": host_facts.get("driver_version"),
            "preflight_warnings": list(preflight.get("warnings") or []),
            "health": _health_part(preflight),
        })
        if isinstance(preflight.get("p2p"), dict):
            report["p2p"] = _p2p_part(preflight["p2p"], [g.get("pci_address") for g in selected])
        if isinstance(preflight.get("next_boot"), dict):
            report["next_boot"] = _next_boot_part(preflight["next_boot"])
    else:
        report["stages"]["preflight"] = NOT_RUN

    if driver:
        report["stages"]["driver"] = driver.get("status") or "ok"
        report["driver_params"] = {
            "desired": driver.get("desired") or {},
            "pending": list(driver.get("pending") or []),
            "applied": not driver.get("pending") and bool(driver.get("loaded")),
        }
        report["reboot_required"] = bool(driver.get("reboot_required"))
    else:
        report["stages"]["driver"] = NOT_RUN

    if sglang:
        # a failed deployment reports what became of the host (rolled back, stopped, unchanged)
        report["stages"]["sglang"] = sglang.get("state") or ("serving" if sglang.get("ready") else "not ready")
        report["sglang"] = {
            # what the server reports (/server_info) when it looks like a version, else what the role installed
            "version": version_text(sglang.get("version")) or version_text(sglang.get("installed_version")),
            "tp_size": sglang.get("tp_size"),
            "speculative_requested": sglang.get("speculative_requested") or {},
            "speculative_reported": sglang.get("speculative_reported"),
            "time_to_ready": sglang.get("time_to_ready"),
            "restarted": sglang.get("restarted"),
            "restart_pending": sglang.get("restart_pending"),
            "metrics_url": sglang.get("metrics_url"),
            "smoke": sglang.get("smoke"),
            "p2p": sglang.get("p2p"),
        }
        for key in ("error", "rollback_error"):
            if sglang.get(key):
                report["sglang"][key] = sglang[key]
        # the speculative check (verdict, SGLang's numbers, the backend asked for and chosen) and a configuration the
        # host keeps off for a low acceptance length
        for key in ("speculative_check", "speculative_disabled"):
            if sglang.get(key):
                report["sglang"][key] = sglang[key]
        # the model revision change: loaded into the running server, or restarted and why
        if sglang.get("weight_swap"):
            report["sglang"]["weight_swap"] = sglang["weight_swap"]
        # one node of a multi-node server (docs/multinode.md): the run report shows the server once, with its nodes
        if sglang.get("node_group"):
            report["sglang"]["node_group"] = sglang["node_group"]
            report["sglang"]["node_rank"] = _int_or_none(sglang.get("node_rank"))
    else:
        report["stages"]["sglang"] = NOT_RUN
    return safe_value(report)


def host_stats(report):
    """The summary of one host that the playbooks publish with ``set_stats`` (AWX job artifacts).

    Plain data only, small and stable, for a workflow node to branch on: the stage verdicts, whether a reboot is
    required, the driver options still pending, the SGLang version, whether SGLang restarted this run and the
    seconds it took to become ready (``None`` when it did not restart), the seconds of each phase out of rotation
    and SGLang's start-up metrics (``rotation``, when the worker left a gateway or restarted), and the planned
    changes when the run planned (site.yml).

    A later workflow node gets it as extra vars, which Ansible templates: the version is ``None`` unless it is
    shaped like one (:func:`version_text`), and no string can open Jinja (:func:`inert`).
    """
    sg = report.get("sglang") or {}
    drv = report.get("driver_params") or {}
    restarted = bool(sg.get("restarted"))
    stats = {
        "stages": dict(report.get("stages") or {}),
        "reboot_required": bool(report.get("reboot_required")),
        "pending_driver_options": [str(item) for item in drv.get("pending") or []],
        "sglang_version": version_text(sg.get("version")),
        "restarted": restarted,
        "time_to_ready": sg.get("time_to_ready") if restarted else None,
    }
    if "plan" in report:
        stats["planned_changes"] = list(report["plan"].get("changes") or [])
    swap = sg.get("weight_swap")
    if isinstance(swap, dict):
        stats["weight_swap"] = {"action": _text_or_none(swap.get("action")),
                                "swapped_in_place": bool(swap.get("swapped_in_place")),
                                "outcome": _text_or_none(swap.get("outcome")),
                                "seconds": swap_total(swap),
                                "to_weight_version": _text_or_none(swap.get("to_weight_version"))}
    if sg.get("error"):
        stats["error"] = str(sg["error"])
    if report.get("rotation"):
        stats["rotation"] = rotation_stats(report["rotation"])
    spec = _speculative_stats(sg)
    if spec:
        stats["speculative"] = spec
    nb = report.get("next_boot")
    if nb:
        # what a workflow node branches on before a maintenance window: the verdict, the kernel, the checks
        stats["next_boot"] = {"verdict": nb.get("verdict"), "kernel": nb.get("kernel"),
                              "checks": list(nb.get("checks") or [])}
    model = report.get("model")
    if model:
        stats["model"] = {key: model.get(key) for key in ("repo", "revision", "bytes", "downloaded_bytes",
                                                          "bytes_read", "verified", "staged")}
    return inert(stats)


def weight_swap_rows(swap):
    """The report's line about a model revision change: swapped in place (with the update's seconds) or restarted,
    and why."""
    if not isinstance(swap, dict):
        return []
    seconds = swap.get("seconds") if isinstance(swap.get("seconds"), dict) else {}
    if swap.get("swapped_in_place"):
        text = "swapped in place: %s -> %s in %s s, no restart" % (
            _fmt(swap.get("from_weight_version")), _fmt(swap.get("to_weight_version")), _fmt(seconds.get("total")))
    elif swap.get("outcome"):
        text = "in-place swap failed (%s: %s)" % (_fmt(swap.get("outcome")), _fmt(swap.get("msg")))
    else:
        text = "restarted: %s" % ("; ".join(str(r) for r in swap.get("reasons") or []) or "-")
    return [("Model revision change", text)]


def _count_or_none(value):
    """``value`` as an ``int`` when it is a whole finite number, else ``None``."""
    number = finite_number(value)
    return int(number) if number is not None and number.is_integer() else None


def _text_or_none(value):
    return None if value is None else str(value)


def _speculative_stats(sg):
    """The speculative check in a few plain values (empty without a check or a disabled configuration).

    The numbers are numbers (``None`` when the server's answer held none); the backend SGLang chose is the server's
    text, which :func:`host_stats` makes inert like every other string it publishes."""
    check = sg.get("speculative_check") or {}
    off = sg.get("speculative_disabled") or {}
    if not check and not off:
        return {}
    chosen = (check.get("backend") or {}).get("chosen") or {}
    return {
        "verdict": _text_or_none(check.get("verdict")),
        "action": _text_or_none(check.get("action")),
        "accept_length": finite_number(check.get("accept_length")),
        "accept_length_source": _text_or_none(check.get("accept_length_source")),
        "min_accept_length": finite_number(check.get("min_accept_length")),
        "decode_tokens_per_s": finite_number(check.get("decode_tokens_per_s")),
        "prompt_tokens": [_count_or_none(t) for t in check.get("prompt_tokens") or []],
        "attention_backend": _text_or_none(chosen.get("attention_backend")),
        "page_size": _count_or_none(chosen.get("page_size")),
        "active_num_steps": _count_or_none(check.get("active_num_steps")),
        "disabled": bool(off),
        "disabled_reason": _text_or_none(off.get("reason")) if off else None,
    }


def _num(value, digits=2):
    try:
        return ("%%.%df" % digits) % float(value)
    except (TypeError, ValueError):
        return "-"


def speculative_rows(sg):
    """The report rows of the speculative check and of a speculative configuration kept off."""
    rows = []
    check = sg.get("speculative_check") or {}
    if check:
        text = "%s: acceptance length %s (%s)" % (check.get("verdict") or "?", _num(check.get("accept_length")),
                                                  check.get("accept_length_source") or "not reported")
        extra = []
        if check.get("accept_length_server_info") is not None:
            extra.append("server_info %s" % _num(check["accept_length_server_info"]))
        if check.get("accept_length_metrics") is not None:
            extra.append("/metrics %s" % _num(check["accept_length_metrics"]))
        if extra:
            text += " [%s]" % ", ".join(extra)
        if check.get("min_accept_length") is not None:
            text += ", floor %s (%s)" % (_num(check["min_accept_length"]), check.get("min_accept_length_rule"))
        text += "; %s tokens/s; %s requests, prompt tokens %s" % (
            _num(check.get("decode_tokens_per_s"), 1), check.get("requests"),
            "/".join(str(t) for t in check.get("prompt_tokens") or []) or "-")
        if check.get("action") not in (None, "none"):
            text += "; action: %s" % check["action"]
        rows.append(("Speculative check", text))
        backend = check.get("backend") or {}
        asked, chosen = backend.get("asked") or {}, backend.get("chosen") or {}
        rows.append(("Attention backend (asked / chosen)", "%s, page size %s / %s, page size %s" % (
            asked.get("attention_backend") or "left to SGLang", asked.get("page_size") or "left to SGLang",
            _fmt(chosen.get("attention_backend")), _fmt(chosen.get("page_size")))))
        if check.get("adaptive"):
            rows.append(("Speculative steps (adaptive)", "%s configured, %s active%s" % (
                _fmt(check.get("num_steps")), _fmt(check.get("active_num_steps")),
                "" if check.get("active_num_steps_metrics") is None
                else " (%s on /metrics)" % check["active_num_steps_metrics"])))
    off = sg.get("speculative_disabled") or {}
    if off:
        rows.append(("Speculative decoding", "kept off on this host since %s: %s" % (
            off.get("disabled_at") or "?", off.get("reason") or "low acceptance length")))
    return rows


def _bytes_text(value):
    return "-" if value is None else "%s (%d bytes)" % (human_bytes(value), value) if value >= 1024 else "%d B" % value


def _int_or_none(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _fmt(value):
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return ", ".join("%s=%s" % (k, _fmt(v)) for k, v in sorted(value.items())) or "-"
    if isinstance(value, (list, tuple)):
        return ", ".join(_fmt(v) for v in value) or "-"
    if isinstance(value, float):
        return "%.1f s" % value
    return str(value)


def host_rows(report):
    """(label, value) rows of one host, in the order the table shows them."""
    sg = report.get("sglang") or {}
    drv = report.get("driver_params") or {}
    spec = sg.get("speculative_requested") or {}
    rows = [
        ("Stages", _fmt(report.get("stages"))),
        ("GPUs", _fmt(report.get("gpus"))),
        ("NUMA node(s)", _fmt(report.get("numa_nodes"))),
        ("IOMMU", "%s (%s)" % (_fmt((report.get("iommu") or {}).get("enabled")), _fmt((report.get("iommu") or {}).get("vendor")))
         if report.get("iommu") else "-"),
        ("IOMMU domain per GPU", _fmt((report.get("iommu") or {}).get("per_gpu"))),
        ("SEV-SNP", _fmt(report.get("sev_snp"))),
        ("DMA faults this boot", _fmt(report.get("dma_faults"))),
        ("Driver version", _fmt(report.get("driver_version"))),
        ("Driver params", "%s; pending: %s" % (_fmt(drv.get("desired")), _fmt(drv.get("pending"))) if drv else "-"),
        ("Reboot required", _fmt(report.get("reboot_required"))),
    ]
    rows += next_boot_rows(report.get("next_boot"))
    rows += [
        ("SGLang version", _fmt(sg.get("version"))),
    ]
    if sg.get("node_group"):
        rows.append(("Multi-node server", "%s, node rank %s%s" % (
            sg["node_group"], _fmt(sg.get("node_rank")),
            " (serves the API)" if sg.get("node_rank") == 0 else " (rank 0 serves the API and is smoke-tested)")))
    rows += [
        ("Tensor parallel", _fmt(sg.get("tp_size"))),
        ("Speculative (requested)", _fmt(spec) if spec else "off"),
        ("Speculative (server reports)", _fmt(sg.get("speculative_reported"))),
        ("Time to ready", _fmt(sg.get("time_to_ready")) if sg.get("restarted") else "no restart this run"),
        ("Smoke test", _fmt(sg.get("smoke"))),
    ]
    rows += weight_swap_rows(sg.get("weight_swap"))
    if sg.get("metrics_url"):
        rows.append(("Metrics", sg["metrics_url"]))
    rows += speculative_rows(sg)
    model = report.get("model")
    if model:
        rows.append(("Model", "%s@%s (%s, %s files)" % (
            model.get("repo"), model.get("revision"), _bytes_text(model.get("bytes")), _fmt(model.get("files")))))
        rows.append(("Model this run", "%s; downloaded %s, hashed %s (%s files, verify %s)%s" % (
            "staged" if model.get("staged") else "already in the store", _bytes_text(model.get("downloaded_bytes")),
            _bytes_text(model.get("bytes_read")), _fmt(model.get("files_hashed")), _fmt(model.get("verified")),
            "; removed %s" % ", ".join(model["removed"]) if model.get("removed") else "")))
        if model.get("prewarm"):
            rows.append(("Page-cache pre-warm", model["prewarm"]))
    if report.get("gateways"):
        rows.append(("Gateways", "; ".join(_gateway_text(row) for row in report["gateways"])))
    rows += rotation_rows(report.get("rotation"))
    if report.get("canary"):
        gate = report["canary"]
        rows.append(("Canary gate", "%s (%s): %s" % (gate.get("verdict"), "change kept" if gate.get("kept")
                                                     else "rolled back, the rollout stopped", _fmt(gate.get("message")))))
    if "plan" in report:
        rows.append(("Planned changes", "; ".join(report["plan"]["changes"]) or "none"))
    if sg.get("error"):
        rows.append(("Deployment error", _fmt(sg.get("error"))))
    if sg.get("rollback_error"):
        rows.append(("Rollback error", _fmt(sg.get("rollback_error"))))
    return rows


def next_boot_rows(nb):
    """The rows of the next-boot verdict: one with the verdict and versions, one per finding."""
    if not nb:
        return []
    if nb.get("verdict") == "unknown":
        return [("Next boot", "not judged: %s" % _fmt(nb.get("error")))]
    versions = "module %s, user space %s" % (_fmt(nb.get("module_version")), _fmt(nb.get("userspace_version")))
    if nb.get("fabric_manager_version"):
        versions += ", fabric manager %s" % nb["fabric_manager_version"]
    rows = [("Next boot", "%s: kernel %s (%s%s), %s; held: %s%s" % (
        nb.get("verdict"), _fmt(nb.get("kernel")), _fmt(nb.get("kernel_source")),
        ", running now" if nb.get("kernel_is_running") else "", versions,
        ", ".join(nb.get("held_packages") or []) or "none",
        "; update-grub pending" if nb.get("update_grub_pending") else ""))]
    policy = nb.get("policy")
    for text in nb.get("errors") or []:
        rows.append(("Next boot error" if policy == "fail" else "Next boot error (policy warn)", text))
    for text in nb.get("warnings") or []:
        rows.append(("Next boot warning", text))
    return rows


def server_rows(reports):
    """One row per server: (server, nodes, state, smoke test). A single host is its own server; the nodes of a
    multi-node server are listed once under their group, by rank (rank 0 serves the API and is smoke-tested). The
    state is shared when all nodes agree, else each node's."""
    rows = []
    groups = {}
    for report in reports:
        sg = report.get("sglang") or {}
        state = (report.get("stages") or {}).get("sglang", NOT_RUN)
        group = sg.get("node_group")
        if not group:
            rows.append([report.get("host"), [(report.get("host"), None, state, sg.get("smoke"))]])
            continue
        if group not in groups:
            groups[group] = [group, []]
            rows.append(groups[group])
        groups[group][1].append((report.get("host"), sg.get("node_rank"), state, sg.get("smoke")))
    out = []
    for name, nodes in rows:
        nodes = sorted(nodes, key=lambda n: (n[1] is None, n[1] if n[1] is not None else 0, n[0]))
        states = sorted(set(n[2] for n in nodes))
        if nodes[0][1] is None:
            out.append((name, name, states[0], _fmt(nodes[0][3])))
            continue
        text = ", ".join("%s (rank %s)" % (host, _fmt(rank)) for host, rank, _s, _m in nodes)
        state = states[0] if len(states) == 1 else "; ".join("%s: %s" % (host, s) for host, _r, s, _m in nodes)
        smoke = [m for _h, rank, _s, m in nodes if rank == 0]
        out.append((name, text, state, _fmt(smoke[0] if smoke else None)))
    return out


def render_text(report):
    """The host's table as aligned plain-text lines for the play output."""
    rows = host_rows(report)
    width = max(len(label) for label, _value in rows)
    return ["%s  %s" % (label.ljust(width), value) for label, value in rows]
