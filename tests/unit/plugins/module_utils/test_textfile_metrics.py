# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Prometheus text format renderer: escaping, one HELP/TYPE per metric, stable order, refusals naming the metric,
and text that the real Prometheus parser reads back as written."""

from __future__ import annotations

import pytest

from ansible_collections.llmserve.sglang.plugins.module_utils import textfile_metrics as tm
from ansible_collections.llmserve.sglang.tests.unit.prometheus_text import parse

XID = "llmserve_gpu_xid_events"


def _xid(gpu, code, fatal, value, **extra):
    sample = {"name": XID, "labels": {"gpu": gpu, "code": code, "fatal": fatal}, "value": value}
    sample.update(extra)
    return sample


SAMPLES = [
    _xid("0000:41:00.0", "79", True, 2, help="Xid events per GPU and code."),
    {"name": "llmserve_preflight_ok", "help": "1 when the preflight passed.", "value": 1},
    _xid("0000:01:00.0", "13", False, 1),
    _xid("0000:01:00.0", "119", True, 1.0),
]


def test_one_help_and_type_per_metric_sorted_by_name_then_labels():
    assert tm.render(SAMPLES) == (
        "# HELP llmserve_gpu_xid_events Xid events per GPU and code.\n"
        "# TYPE llmserve_gpu_xid_events gauge\n"
        'llmserve_gpu_xid_events{code="119",fatal="true",gpu="0000:01:00.0"} 1\n'
        'llmserve_gpu_xid_events{code="13",fatal="false",gpu="0000:01:00.0"} 1\n'
        'llmserve_gpu_xid_events{code="79",fatal="true",gpu="0000:41:00.0"} 2\n'
        "# HELP llmserve_preflight_ok 1 when the preflight passed.\n"
        "# TYPE llmserve_preflight_ok gauge\n"
        "llmserve_preflight_ok 1\n"
    )


def test_the_same_metrics_in_any_order_give_the_same_bytes():
    shuffled = [SAMPLES[3], SAMPLES[1], SAMPLES[0], SAMPLES[2]]
    shuffled[3] = dict(shuffled[3], labels=dict(reversed(list(shuffled[3]["labels"].items()))))
    assert tm.render(shuffled) == tm.render(SAMPLES)
    assert tm.render([]) == ""


def test_label_values_and_help_are_escaped():
    text = tm.render([{"name": "llmserve_sglang_info", "help": 'the "info"\nback\\slash',
                       "labels": {"model": 'a\\b"c\nd'}, "value": 1}])
    assert '# HELP llmserve_sglang_info the "info"\\nback\\\\slash\n' in text
    assert 'llmserve_sglang_info{model="a\\\\b\\"c\\nd"} 1\n' in text


@pytest.mark.parametrize("value, text", [
    (3, "3"), (2.0, "2"), ("7", "7"), (" 1.5 ", "1.5"), (0.1, "0.1"), (-4, "-4"), (1e20, "1e+20"), (2 ** 60, str(2 ** 60)),
])
def test_values_are_written_one_way(value, text):
    assert tm.format_value(value) == text


@pytest.mark.parametrize("value", [True, False, None, "nan", float("nan"), float("inf"), "-Inf", "1,5", "", [1], {}])
def test_values_that_are_not_finite_numbers_are_refused_naming_the_metric(value):
    with pytest.raises(tm.MetricError) as exc:
        tm.render([{"name": "llmserve_mtp_accept_length", "help": "h", "labels": {"gpu": "0"}, "value": value}])
    assert 'metric llmserve_mtp_accept_length{gpu="0"}: the value must be a finite number' in str(exc.value)


@pytest.mark.parametrize("sample, message", [
    ({"name": "1bad", "help": "h", "value": 1}, "'1bad' is no metric name"),
    ({"name": "llmserve-x", "help": "h", "value": 1}, "'llmserve-x' is no metric name"),
    ({"name": "node_x", "help": "h", "value": 1}, "metric node_x: the name must start with llmserve_"),
    ({"name": "llmserve_x", "help": "h", "value": 1, "labels": {"1a": "v"}}, "metric llmserve_x: '1a' is no label name"),
    ({"name": "llmserve_x", "help": "h", "value": 1, "labels": {"__name__": "v"}}, "'__name__' is no label name"),
    ({"name": "llmserve_x", "help": "h", "value": 1, "labels": {"a": [1]}}, "the value of label a must be text"),
    ({"name": "llmserve_x", "help": "h", "value": 1, "labels": "a=b"}, "labels must be a mapping"),
    ({"name": "llmserve_x", "help": "h"}, "metric llmserve_x: the sample has no value"),
    ({"name": "llmserve_x", "value": 1}, "metric llmserve_x: no sample gives its help text"),
    ({"name": "llmserve_x", "help": "h", "value": 1, "type": "histogram"}, "type must be one of gauge, counter"),
    ({"name": "llmserve_x", "help": "h", "value": 1, "timestamp": 5}, "metric llmserve_x: unknown key(s) timestamp"),
])
def test_refusals_name_the_metric_and_the_rule(sample, message):
    with pytest.raises(tm.MetricError) as exc:
        tm.render([sample], prefix="llmserve_")
    assert message in str(exc.value)


def test_a_sample_twice_or_two_help_texts_are_refused():
    with pytest.raises(tm.MetricError, match=r'llmserve_gpu_xid_events\{code="13",fatal="false",gpu="0000:01:00.0"\}: '
                                             r'the same sample is given twice'):
        tm.render(SAMPLES + [_xid("0000:01:00.0", "13", False, 5)])
    with pytest.raises(tm.MetricError, match="metric llmserve_gpu_xid_events: two different help values"):
        tm.render(SAMPLES + [_xid("0000:02:00.0", "13", False, 5, help="other")])
    with pytest.raises(tm.MetricError, match="metric llmserve_gpu_xid_events: two different type values"):
        tm.render(SAMPLES + [_xid("0000:02:00.0", "13", False, 5, type="counter")])


def test_the_prometheus_parser_reads_back_what_was_written():
    samples = SAMPLES + [
        {"name": "llmserve_sglang_info", "help": 'SGLang "info"\nwith a \\ in it', "value": 1,
         "labels": {"version": "0.5.23", "model": 'odd\\name "x"\nline', "revision": ""}},
        {"name": "llmserve_last_run_timestamp_seconds", "help": "end", "value": 1796196969},
        {"name": "llmserve_mtp_accept_length", "help": "accept", "value": 2.734375},
    ]
    families = {family["name"]: family for family in parse(tm.render(samples, prefix="llmserve_"))}
    assert sorted(families) == ["llmserve_gpu_xid_events", "llmserve_last_run_timestamp_seconds",
                                "llmserve_mtp_accept_length", "llmserve_preflight_ok", "llmserve_sglang_info"]
    assert all(family["type"] == "gauge" for family in families.values())
    info = families["llmserve_sglang_info"]
    assert info["help"] == 'SGLang "info"\nwith a \\ in it'
    assert info["samples"] == [["llmserve_sglang_info", {"version": "0.5.23", "model": 'odd\\name "x"\nline',
                                                         "revision": ""}, 1.0, None]]
    xids = families[XID]["samples"]
    assert [(s[1]["gpu"], s[1]["code"], s[1]["fatal"], s[2]) for s in xids] == [
        ("0000:01:00.0", "119", "true", 1.0), ("0000:01:00.0", "13", "false", 1.0), ("0000:41:00.0", "79", "true", 2.0)]
    assert families["llmserve_last_run_timestamp_seconds"]["samples"][0][2] == 1796196969.0
    assert families["llmserve_mtp_accept_length"]["samples"][0][2] == 2.734375
