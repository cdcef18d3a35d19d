# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""SGLang's start-up metrics as the REAL SGLang 0.5.23 writes them, read the way the role reads them.

In the CPU SGLang venv (``LLMSERVE_SGLANG_VENV``), SGLang's own ``TokenizerMetricsCollector`` emits a start-up the
way its tokenizer manager does (``emit_startup_time``) and prometheus_client renders the exposition its ``/metrics``
serves. That text then goes through the collection's parser (``module_utils/prometheus_samples``, what
wait_for_endpoint's ``metric_names`` uses) and the report's ``rotation.startup_metrics``: the names the role asks for
(``roles/sglang_server/vars/main.yml``) are the ones SGLang writes, they are gauges, and
``sglang:weight_load_duration_seconds`` (only set by an update_weights_from_* call) comes out as not reported, not 0.
One import of sglang, about 25 s.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml

from ansible_collections.llmserve.sglang.plugins.module_utils.prometheus_samples import parse_samples
from ansible_collections.llmserve.sglang.plugins.plugin_utils.rotation import startup_metrics

ROOT = Path(__file__).resolve().parents[3]

MODEL = os.environ.get("LLMSERVE_SGLANG_MODEL", "/var/cache/llmserve/models/tiny-llama")
EMIT = """
MODEL = %r
import warnings
warnings.simplefilter("ignore")
from prometheus_client import REGISTRY, generate_latest
from sglang.srt.observability.metrics_collector import TokenizerMetricsCollector
from sglang.srt.runtime_context import publish
from sglang.srt.server_args import ServerArgs

# the process config the tokenizer manager publishes before it builds its collector
publish(ServerArgs(model_path=MODEL, device="cpu", enable_metrics=True), role="tokenizer")
collector = TokenizerMetricsCollector(labels={"model_name": "tiny"})
collector.emit_startup_time({"load_weight": 41.25, "kv_cache_allocation": 2.5, "scheduler_e2e": 50.0,
                             "tokenizer_e2e": 52.0, "cuda_graph": {"decode": 12.0}})
print(generate_latest(REGISTRY).decode())
""" % MODEL


def test_the_role_reads_the_names_sglang_writes(sglang_venv):
    proc = subprocess.run([sglang_venv, "-c", EMIT], capture_output=True, text=True,
                          timeout=300, check=False, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = proc.stdout
    names = yaml.safe_load((ROOT / "roles" / "sglang_server" / "vars" / "main.yml").read_text())[
        "__sglang_server_startup_metrics"]
    for name in ("sglang:startup_time_seconds", "sglang:startup_cuda_graph_time_seconds"):
        assert "# TYPE %s gauge" % name in text
    samples = parse_samples(text, names)
    assert sorted(samples) == ["sglang:startup_cuda_graph_time_seconds", "sglang:startup_time_seconds"]
    assert startup_metrics(samples) == {
        "startup_time_seconds": {"kv_cache_allocation": 2.5, "load_weight": 41.25, "scheduler_e2e": 50.0,
                                 "tokenizer_e2e": 52.0},
        "startup_cuda_graph_time_seconds": {"decode": 12.0},
        "weight_load_duration_seconds": None}
