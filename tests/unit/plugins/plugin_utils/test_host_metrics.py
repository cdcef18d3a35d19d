# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The node exporter metrics of a host report: from a fixture host's facts through the preflight rules and the host
report to the samples (filter sglang_host_metrics), the text, and what Prometheus's parser reads of it."""

from __future__ import annotations

import os

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.llmserve.sglang.plugins.filter.deploy_report import sglang_host_metrics, sglang_host_report
from ansible_collections.llmserve.sglang.plugins.module_utils.textfile_metrics import render
from ansible_collections.llmserve.sglang.plugins.modules import gpu_host_facts
from ansible_collections.llmserve.sglang.plugins.plugin_utils import host_metrics
from ansible_collections.llmserve.sglang.plugins.plugin_utils import p2p
from ansible_collections.llmserve.sglang.plugins.plugin_utils import preflight_rules as rules
from ansible_collections.llmserve.sglang.tests.fixtures.hosts import materialize
from ansible_collections.llmserve.sglang.tests.unit.prometheus_text import parse


class FakeModule(object):
    def fail_json(self, **kwargs):
        raise AssertionError(kwargs)


def _facts(tmp_path, name):
    root = materialize.build(name, str(tmp_path / name))
    return gpu_host_facts.gather(FakeModule(), root, os.path.join(root, "var/log/kern.log"))


def _preflight(facts, functional=None):
    """What roles/iommu_preflight publishes as iommu_preflight_report (the report and the P2P part)."""
    evaluated = rules.evaluate(facts)
    matrix = p2p.build_matrix([g["pci_address"] for g in evaluated["selected"]], functional=functional)
    return dict(evaluated["report"], p2p={"tested": matrix["tested"], "ok": matrix["ok"], "pairs": matrix["pairs"]})


def _samples(samples, name):
    return sorted((tuple(sorted((s.get("labels") or {}).items())), s["value"]) for s in samples if s["name"] == name)


def test_fatal_xid_events_per_gpu_and_code(tmp_path):
    report = sglang_host_report("gpu1", _preflight(_facts(tmp_path, "h200_vm_580_xid79")))
    samples = sglang_host_metrics(report, "gpu")
    # Xid 79 (fell off the bus) and the Xid 45 it caused: both fatal by the gpu-xid rule
    assert _samples(samples, "llmserve_gpu_xid_events") == [
        ((("code", "45"), ("fatal", "true"), ("gpu", "0000:00:06.0")), 1),
        ((("code", "79"), ("fatal", "true"), ("gpu", "0000:00:06.0")), 1),
    ]
    assert _samples(samples, "llmserve_preflight_ok") == [((), 0)]
    assert _samples(samples, "llmserve_iommu_dma_faults") == [(((("gpu", "0000:00:06.0"),)), 0)]
    assert _samples(samples, "llmserve_p2p_pair_ok") == []  # the test did not run
    assert {s["name"] for s in samples} <= set(host_metrics.PARTS["gpu"])


def test_codes_outside_the_fatal_list_are_not_fatal(tmp_path):
    facts = _facts(tmp_path, "h200_vm_580_xid79")
    evaluated = rules.evaluate(facts, fatal_xids=[48])
    report = sglang_host_report("gpu1", evaluated["report"])
    assert {s["labels"]["fatal"] for s in sglang_host_metrics(report, "gpu")
            if s["name"] == "llmserve_gpu_xid_events"} == {"false"}
    assert _samples(sglang_host_metrics(report, "gpu"), "llmserve_preflight_ok") == [((), 1)]  # a warning passes


def test_dma_faults_per_gpu_and_p2p_per_tested_pair(tmp_path):
    facts = _facts(tmp_path, "blackwell4_amd_snp_one_identity")
    gpus = [g["pci_address"] for g in facts["gpus"]]
    functional = {(a, b): {"ok": not (a == gpus[2] or b == gpus[2]), "detail": ""}
                  for a in gpus[:3] for b in gpus[:3] if a != b}
    report = sglang_host_report("gpu2", _preflight(facts, functional))
    samples = sglang_host_metrics(report, "gpu")
    faults = dict((labels[0][1], value) for labels, value in _samples(samples, "llmserve_iommu_dma_faults"))
    assert sorted(faults) == sorted(gpus) and faults[gpus[2]] > 0 and faults[gpus[0]] == 0
    pairs = dict(((dict(labels)["src"], dict(labels)["dst"]), value)
                 for labels, value in _samples(samples, "llmserve_p2p_pair_ok"))
    # six tested pairs, the pairs with the fourth GPU were not tested and are absent
    assert len(pairs) == 6 and pairs[(gpus[0], gpus[1])] == 1 and pairs[(gpus[2], gpus[0])] == 0
    assert not any(gpus[3] in pair for pair in pairs)
    assert _samples(samples, "llmserve_preflight_ok") == [((), 0)]


def test_no_preflight_no_gpu_metrics():
    assert sglang_host_metrics(sglang_host_report("gpu1"), "gpu") == []


SGLANG = {"version": "0.5.23", "ready": True, "metrics_url": "http://user:secret@gpu1:30000/metrics",
          "error": "token hf_secret refused",
          "speculative_check": {"verdict": "pass", "accept_length": 2.734375},
          # the run loaded the revision into the running server (sglang_server_report.weight_swap)
          "weight_swap": {"action": "swap", "swapped_in_place": True, "outcome": "swapped",
                          "msg": "loaded http://user:secret@gpu1:30000", "seconds": {"update": 41.0, "total": 41.5}}}
MODEL = {"repo": "Qwen/Qwen3.5-122B-A10B", "revision": "0123456789abcdef0123456789abcdef01234567", "changed": False}


def test_run_part_version_model_accept_length_and_outcome():
    report = sglang_host_report("gpu1", None, None, SGLANG, model=MODEL)
    samples = sglang_host_metrics(report, "run", success=True, ended=1796196969.0)
    assert _samples(samples, "llmserve_last_run_success") == [((), 1)]
    assert _samples(samples, "llmserve_last_run_timestamp_seconds") == [((), 1796196969)]
    assert _samples(samples, "llmserve_sglang_info") == [(
        (("model", "Qwen/Qwen3.5-122B-A10B"), ("revision", "0123456789abcdef0123456789abcdef01234567"),
         ("version", "0.5.23")), 1)]
    assert _samples(samples, "llmserve_mtp_accept_length") == [((), 2.734375)]
    assert _samples(samples, "llmserve_revision_swap_seconds") == [((), 41.5)]
    assert {s["name"] for s in samples} == set(host_metrics.PARTS["run"])
    text = render(samples, prefix="llmserve_")
    assert "secret" not in text and "http" not in text  # no URL, no error text
    failed = sglang_host_metrics(sglang_host_report("gpu1"), "run", success=False, ended=5)
    assert [(s["name"], s["value"]) for s in failed] == [("llmserve_last_run_success", 0),
                                                         ("llmserve_last_run_timestamp_seconds", 5)]


def test_no_swap_seconds_without_an_in_place_swap():
    for swap in (None, {"action": "restart", "swapped_in_place": False, "outcome": None},
                 {"action": "swap", "swapped_in_place": False, "outcome": "incompatible", "seconds": {"total": 0.1}},
                 {"action": "swap", "swapped_in_place": True, "outcome": "swapped", "seconds": {"total": "nan"}}):
        report = sglang_host_report("gpu1", None, None, dict(SGLANG, weight_swap=swap), model=MODEL)
        names = [s["name"] for s in sglang_host_metrics(report, "run", success=True, ended=1)]
        assert "llmserve_revision_swap_seconds" not in names, swap


def test_a_version_that_is_no_version_is_left_empty():
    report = sglang_host_report("gpu1", None, None, dict(SGLANG, version='0.5"} 1\nevil 1'), model=MODEL)
    [info] = [s for s in sglang_host_metrics(report, "run", success=True, ended=1) if s["name"] == "llmserve_sglang_info"]
    assert info["labels"]["version"] == "" and info["labels"]["model"] == MODEL["repo"]
    # without a version and a model there is nothing to say
    report = sglang_host_report("gpu1", None, None, dict(SGLANG, version=None))
    assert "llmserve_sglang_info" not in [s["name"] for s in sglang_host_metrics(report, "run", success=True, ended=1)]


@pytest.mark.parametrize("args, message", [
    (("disk",), "part must be one of gpu, run, got 'disk'"),
    (("run",), "success must be true or false"),
    (("run", "yes", 1), "success must be true or false"),
    (("run", True, None), "ended must be the Unix time"),
    (("run", True, float("nan")), "ended must be the Unix time"),
])
def test_bad_arguments_name_the_rule(args, message):
    with pytest.raises(AnsibleFilterError, match="sglang_host_metrics: " + message):
        sglang_host_metrics(sglang_host_report("gpu1"), *args)


def test_the_parts_never_share_a_metric_and_every_metric_has_help():
    gpu, run = set(host_metrics.PARTS["gpu"]), set(host_metrics.PARTS["run"])
    assert not gpu & run and gpu | run == set(host_metrics.HELP)
    assert set(host_metrics.FILES) == set(host_metrics.PARTS)


def test_the_prometheus_parser_reads_both_parts(tmp_path):
    report = sglang_host_report("gpu1", _preflight(_facts(tmp_path, "h200_vm_580_xid79")), None, SGLANG, model=MODEL)
    for part, extra in (("gpu", {}), ("run", {"success": True, "ended": 1796196969})):
        samples = sglang_host_metrics(report, part, **extra)
        families = parse(render(samples, prefix="llmserve_"))
        assert sorted(f["name"] for f in families) == sorted({s["name"] for s in samples})
        assert all(f["type"] == "gauge" and f["help"] == host_metrics.HELP[f["name"]] for f in families)
        assert sum(len(f["samples"]) for f in families) == len(samples)
