# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading named samples out of a Prometheus text exposition (module_utils/prometheus_samples.py)."""

from __future__ import annotations

from ansible_collections.llmserve.sglang.plugins.module_utils import prometheus_samples as ps

# shaped like SGLang 0.5.23's /metrics (srt/observability/metrics_collector.py: TokenizerMetricsCollector)
TEXT = b"""# HELP sglang:startup_time_seconds Engine startup duration by phase in seconds.
# TYPE sglang:startup_time_seconds gauge
sglang:startup_time_seconds{model_name="qwen",phase="load_weight"} 41.25
sglang:startup_time_seconds{model_name="qwen",phase="kv_cache_allocation"} 2.5
sglang:startup_cuda_graph_time_seconds{model_name="qwen",phase="decode"} 12.0 1764675000000
sglang:num_running_reqs{model_name="qwen"} 3.0
sglang:weight_load_duration_seconds{model_name="a\\"b}, c\\\\",source="disk"} NaN
sglang:startup_time_seconds{broken 9
"""

NAMES = ("sglang:startup_time_seconds", "sglang:startup_cuda_graph_time_seconds", "sglang:weight_load_duration_seconds")


def test_named_samples_with_their_labels_and_nothing_else():
    found = ps.parse_samples(TEXT, NAMES)
    assert found == {
        "sglang:startup_time_seconds": [
            {"labels": {"model_name": "qwen", "phase": "load_weight"}, "value": 41.25},
            {"labels": {"model_name": "qwen", "phase": "kv_cache_allocation"}, "value": 2.5}],
        "sglang:startup_cuda_graph_time_seconds": [
            {"labels": {"model_name": "qwen", "phase": "decode"}, "value": 12.0}],
    }


def test_a_metric_without_a_usable_sample_is_absent_never_zero():
    # NaN is no number to report; a label block that does not parse is skipped
    assert "sglang:weight_load_duration_seconds" not in ps.parse_samples(TEXT, NAMES)
    assert ps.parse_samples("", NAMES) == {} and ps.parse_samples(None, NAMES) == {}


def test_escaped_label_values_are_undone():
    text = 'm{a="x\\"}, y",b="back\\\\slash\\nline"} 1\n'
    assert ps.parse_samples(text, ["m"]) == {"m": [{"labels": {"a": 'x"}, y', "b": "back\\slash\nline"},
                                                    "value": 1.0}]}


def test_samples_per_metric_are_capped():
    text = "".join('m{i="%d"} %d\n' % (i, i) for i in range(ps.MAX_SAMPLES + 10))
    assert len(ps.parse_samples(text, ["m"])["m"]) == ps.MAX_SAMPLES
