# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The node exporter textfile metrics of one host, from its host report (``deploy_report.build_host_report``).

Two parts, each written to its own file by llmserve.sglang.metrics_textfile (``roles/sglang_rollout/tasks/report.yml``):

* ``gpu`` (``llmserve_gpu.prom``): what the preflight saw of the GPUs: Xid events per GPU, code and fatality, DMA
  faults per GPU, the P2P verdict per tested pair, the preflight verdict, and whether the next boot is safe (with
  the names of the next-boot checks that found something). Every run with a preflight writes it,
  scheduled audits (preflight.yml) too, so it follows the hardware between deployments.
* ``run`` (``llmserve_run.prom``): what a deployment run left: the SGLang version and model revision, the measured
  speculative acceptance length, the seconds of an in-place model revision swap, and the run's outcome and end time.
  Only runs that deploy write it, so an audit never turns a failed deployment into a success.

One file per part, not one shared file: node exporter reads every ``*.prom`` of its directory, so each writer
replaces only its own file, atomically, without reading (and possibly keeping a broken copy of) another's metrics.
Each metric belongs to exactly one part (``PARTS``): the same series in two files is an error for the exporter.

Only values the report holds as plain data go out: counts, verdicts, a version shaped like one, the model's
repository and revision. No URL, no error text, no setting (nothing that could carry a secret).
"""

from __future__ import annotations


from ansible_collections.llmserve.sglang.plugins.plugin_utils.deploy_report import NOT_RUN, finite_number, version_text
from ansible_collections.llmserve.sglang.plugins.plugin_utils.rotation import swap_total

HELP = {
    "llmserve_gpu_xid_events": "NVIDIA Xid events of this boot's kernel log per GPU (PCI address), Xid code "
                               "(fallen-off-bus for the messages without one) and whether the preflight counts "
                               "them as fatal, at the last preflight.",
    "llmserve_iommu_dma_faults": "IOMMU DMA faults (IO_PAGE_FAULT, DMAR faults, Xid 143) of this boot's kernel log "
                                 "per GPU, at the last preflight.",
    "llmserve_p2p_pair_ok": "1 when the last preflight's write/read-back test proved P2P for the GPU pair "
                            "(src == dst: CUDA IPC on one GPU), 0 when it failed; untested pairs are absent.",
    "llmserve_preflight_ok": "1 when the last IOMMU/GPU preflight passed (with or without warnings), 0 when a rule "
                             "failed.",
    "llmserve_next_boot_ok": "1 when the last preflight found the host's next boot safe (no next-boot error), 0 "
                             "when rebooting would break it; absent when the next boot was not judged.",
    "llmserve_next_boot_finding": "One sample per check that found something in the host's next boot at the last "
                                  "preflight (check name and severity); always 1.",
    "llmserve_sglang_info": "The SGLang version and the model (repository and revision) the last deployment run "
                            "left on this host; always 1.",
    "llmserve_mtp_accept_length": "Mean speculative (MTP) acceptance length the last deployment run measured.",
    "llmserve_revision_swap_seconds": "Seconds the last deployment run took to load a new model revision into the "
                                      "running SGLang server in place (the update call); absent when it loaded "
                                      "none in place.",
    "llmserve_last_run_success": "1 when the last llmserve.sglang deployment run on this host succeeded, 0 when it "
                                 "failed.",
    "llmserve_last_run_timestamp_seconds": "Unix time at which the last llmserve.sglang deployment run on this host "
                                           "ended.",
}
PARTS = {
    "gpu": ("llmserve_gpu_xid_events", "llmserve_iommu_dma_faults", "llmserve_p2p_pair_ok", "llmserve_preflight_ok",
            "llmserve_next_boot_ok", "llmserve_next_boot_finding"),
    "run": ("llmserve_sglang_info", "llmserve_mtp_accept_length", "llmserve_revision_swap_seconds",
            "llmserve_last_run_success",
            "llmserve_last_run_timestamp_seconds"),
}
FILES = {"gpu": "llmserve_gpu.prom", "run": "llmserve_run.prom"}


def _sample(name, value, **labels):
    sample = {"name": name, "help": HELP[name], "type": "gauge", "value": value}
    if labels:
        sample["labels"] = labels
    return sample


def gpu_metrics(report):
    """The ``gpu`` part; empty when the preflight did not run in this report."""
    stage = (report.get("stages") or {}).get("preflight", NOT_RUN)
    health = report.get("health")
    if stage == NOT_RUN or not isinstance(health, dict):
        return []
    samples = [_sample("llmserve_preflight_ok", 0 if stage == "fail" else 1)]
    for gpu, count in sorted((health.get("dma_faults") or {}).items()):
        samples.append(_sample("llmserve_iommu_dma_faults", int(count or 0), gpu=str(gpu)))
    for event in health.get("xid_events") or []:
        samples.append(_sample("llmserve_gpu_xid_events", int(event.get("count") or 0), gpu=str(event.get("gpu") or ""),
                               code=str(event.get("code")), fatal="true" if event.get("fatal") else "false"))
    for pair in health.get("p2p") or []:
        samples.append(_sample("llmserve_p2p_pair_ok", 1 if pair.get("ok") else 0, src=str(pair.get("src")),
                               dst=str(pair.get("dst"))))
    return samples + next_boot_metrics(report.get("next_boot"))


def next_boot_metrics(nb):
    """``llmserve_next_boot_ok`` and one ``llmserve_next_boot_finding`` per check; nothing when not judged."""
    if not isinstance(nb, dict) or nb.get("verdict") not in ("ok", "warning", "error"):
        return []
    samples = [_sample("llmserve_next_boot_ok", 0 if nb["verdict"] == "error" else 1)]
    severities = {}
    for severity, texts in (("error", nb.get("errors") or []), ("warning", nb.get("warnings") or [])):
        for text in texts:
            check = str(text).split(":", 1)[0]
            severities.setdefault(check, severity)
    for check in sorted(severities):
        samples.append(_sample("llmserve_next_boot_finding", 1, check=check, severity=severities[check]))
    return samples


def run_metrics(report, success, ended):
    """The ``run`` part: ``success`` (bool) and ``ended`` (Unix time) of this host's run, and what it deployed."""
    if not isinstance(success, bool):
        raise ValueError("success must be true or false (did this host's run succeed), got %r" % (success,))
    end = finite_number(ended)
    if end is None or end < 0:
        raise ValueError("ended must be the Unix time the run ended, got %r" % (ended,))
    sg = report.get("sglang") or {}
    model = report.get("model") or {}
    samples = [
        _sample("llmserve_last_run_success", 1 if success else 0),
        _sample("llmserve_last_run_timestamp_seconds", int(end) if end.is_integer() else end),
    ]
    version = version_text(sg.get("version"))
    if version or model.get("repo") or model.get("path"):
        samples.append(_sample("llmserve_sglang_info", 1, version=version or "",
                               model=str(model.get("repo") or model.get("path") or ""),
                               revision=str(model.get("revision") or "")))
    accept = finite_number((sg.get("speculative_check") or {}).get("accept_length"))
    if accept is not None:
        samples.append(_sample("llmserve_mtp_accept_length", accept))
    swap = sg.get("weight_swap") if isinstance(sg.get("weight_swap"), dict) else {}
    seconds = swap_total(swap)
    if swap.get("swapped_in_place") and seconds is not None and seconds >= 0:
        samples.append(_sample("llmserve_revision_swap_seconds", seconds))
    return samples


def host_metrics(report, part, success=None, ended=None):
    """The samples of ``part`` (``gpu`` or ``run``) for llmserve.sglang.metrics_textfile."""
    if not isinstance(report, dict):
        raise ValueError("the input must be a host report (sglang_host_report), got %r" % (type(report).__name__,))
    if part == "gpu":
        return gpu_metrics(report)
    if part == "run":
        return run_metrics(report, success, ended)
    raise ValueError("part must be one of %s, got %r" % (", ".join(sorted(PARTS)), part))
