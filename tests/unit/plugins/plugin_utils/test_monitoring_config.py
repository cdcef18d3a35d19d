# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The sglang_monitoring role's configuration rules in Python: every broken rule named, nothing raised on bad values."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.llmserve.sglang.plugins.filter.sglang_monitoring import sglang_monitoring_problems
from ansible_collections.llmserve.sglang.plugins.plugin_utils.monitoring_config import (
    config_problems, node_exporter_problems)


def _settings(**changes):
    settings = {
        "for_durations": {"sglang_monitoring_worker_down_for": "2m"},
        "windows": {"sglang_monitoring_ttft_window": "5m"},
        "numbers": {"sglang_monitoring_ttft_p99_seconds": ["5", 0, 86400]},
        "names": {"sglang_monitoring_sglang_job": "sglang"},
        "paths": {"sglang_monitoring_rules_dir": "/etc/prometheus/rules"},
        "prometheus": "existing",
        "write_targets": True,
        "prometheus_version": "",
        "alertmanagers": [],
        "tls_ca_file": "",
        "ranges": {"sglang_monitoring_queue_backlog_threshold": [50, 1, 1000000]},
    }
    settings.update(changes)
    return settings


def test_the_defaults_hold():
    assert not config_problems(_settings())


@pytest.mark.parametrize("duration", ["0", "0s", "30s", "2m", "1h30m", "1d", "2w", "1y", "500ms", "1h5m10s250ms"])
def test_every_form_of_the_duration_grammar_holds(duration):
    assert not config_problems(_settings(for_durations={"sglang_monitoring_worker_down_for": duration}))


@pytest.mark.parametrize("duration", ["", "2", "1.5m", "2m1h", "2 m", "m", "30s\n", "-1m", "1m1m", None, 5])
def test_other_durations_are_refused_naming_the_variable(duration):
    problems = config_problems(_settings(for_durations={"sglang_monitoring_worker_down_for": duration}))
    assert len(problems) == 1
    assert problems[0].startswith("sglang_monitoring_worker_down_for: must be a Prometheus duration such as 0s")


@pytest.mark.parametrize("window", ["0", "0s", "0m0s"])
def test_a_window_of_zero_is_refused(window):
    problems = config_problems(_settings(windows={"sglang_monitoring_ttft_window": window}))
    assert problems == ['sglang_monitoring_ttft_window: must be a Prometheus duration above zero such as 1m or 5m '
                        '(units y w d h m s ms, largest first, whole numbers), got "%s"' % window]


@pytest.mark.parametrize("value,ok", [("5", True), ("0.5", True), (2, True), ("86400", True), ("0", False),
                                      ("86400.5", False), ("-1", False), ("1e3", False), (".5", False),
                                      ("nan", False), ("inf", False), (True, False)])
def test_decimal_thresholds(value, ok):
    problems = config_problems(_settings(numbers={"sglang_monitoring_ttft_p99_seconds": [value, 0, 86400]}))
    assert (problems == []) is ok, problems
    if not ok:
        assert problems[0].startswith("sglang_monitoring_ttft_p99_seconds: must be a decimal number above 0 and "
                                      "at most 86400, got ")


@pytest.mark.parametrize("name", ['sg"lang', "sg lang", "", "a{b}", "x\n"])
def test_names_that_would_break_a_label_matcher_are_refused(name):
    problems = config_problems(_settings(names={"sglang_monitoring_sglang_job": name}))
    assert len(problems) == 1 and problems[0].startswith("sglang_monitoring_sglang_job: must be a non-empty name")


@pytest.mark.parametrize("path", ["etc/prometheus", "/etc/pro metheus", "/etc/../root", "/etc/..", '/a"b', "/a\\b"])
def test_paths_must_be_absolute_and_plain(path):
    problems = config_problems(_settings(paths={"sglang_monitoring_rules_dir": path}))
    assert len(problems) == 1 and problems[0].startswith("sglang_monitoring_rules_dir: must be an absolute path")


def test_the_mode_and_the_target_files():
    assert config_problems(_settings(prometheus="docker"))[0].startswith(
        'sglang_monitoring_prometheus: must be existing (write the target and rule files for your Prometheus) or '
        'distribution')
    assert config_problems(_settings(prometheus="distribution", write_targets="no")) == [
        "sglang_monitoring_write_targets: must be true with sglang_monitoring_prometheus: distribution (the "
        "configuration the role writes reads the target files)"]
    assert not config_problems(_settings(prometheus="distribution", write_targets="yes"))


@pytest.mark.parametrize("version,ok", [("", True), ("2.42.0+ds-5+deb12u1", True), ("2.42.*", True),
                                        ("latest", False), ("2.42 ", False), ("1:2.42;rm", False)])
def test_the_package_version(version, ok):
    assert (config_problems(_settings(prometheus_version=version)) == []) is ok


def test_alertmanagers_must_be_a_list_of_host_and_port():
    assert config_problems(_settings(alertmanagers=["am-1:9093", "[fd00::1]:9093", "10.0.0.5:9093"])) == []
    assert config_problems(_settings(alertmanagers="am-1:9093")) == [
        'sglang_monitoring_alertmanagers: must be a list of host:port, got "am-1:9093"']
    assert config_problems(_settings(alertmanagers={"a": 1}))[0].startswith(
        "sglang_monitoring_alertmanagers: must be a list of host:port")
    assert config_problems(_settings(alertmanagers=5))[0].startswith(
        "sglang_monitoring_alertmanagers: must be a list of host:port")
    assert config_problems(_settings(alertmanagers=["am-1", "http://am:9093", "am:9093"])) == [
        'sglang_monitoring_alertmanagers: each entry must be host:port (an IPv6 address in brackets), got "am-1"',
        'sglang_monitoring_alertmanagers: each entry must be host:port (an IPv6 address in brackets), got '
        '"http://am:9093"']


def test_every_broken_rule_at_once_in_order_with_the_ranges_last():
    problems = config_problems(_settings(
        for_durations={"sglang_monitoring_worker_down_for": "2 m"}, windows={"sglang_monitoring_ttft_window": "0"},
        tls_ca_file="ca.pem", ranges={"sglang_monitoring_queue_backlog_threshold": [0, 1, 1000000]}))
    assert [p.split(":", 1)[0] for p in problems] == [
        "sglang_monitoring_worker_down_for", "sglang_monitoring_ttft_window", "sglang_monitoring_tls_ca_file",
        "sglang_monitoring_queue_backlog_threshold"]


def test_node_exporter_settings():
    good = {"textfile_dir": "/var/lib/prometheus/node-exporter", "package": "prometheus-node-exporter",
            "ranges": {"sglang_monitoring_node_exporter_port": [9100, 1, 65535]}}
    assert node_exporter_problems(good) == []
    bad = dict(good, textfile_dir="/var/lib/../etc", package="node exporter",
               ranges={"sglang_monitoring_node_exporter_port": [70000, 1, 65535]})
    assert [p.split(":", 1)[0] for p in node_exporter_problems(bad)] == [
        "sglang_monitoring_node_exporter_textfile_dir", "sglang_monitoring_node_exporter_package",
        "sglang_monitoring_node_exporter_port"]


def test_the_filter_chooses_the_entry_point_and_refuses_bad_input():
    assert sglang_monitoring_problems(_settings()) == []
    assert sglang_monitoring_problems({"textfile_dir": "x", "package": "p"}, "node_exporter")[0].startswith(
        "sglang_monitoring_node_exporter_textfile_dir:")
    with pytest.raises(AnsibleFilterError, match="entry point must be main or node_exporter"):
        sglang_monitoring_problems(_settings(), "other")
    with pytest.raises(AnsibleFilterError, match="must be a dict"):
        sglang_monitoring_problems(["x"])
    with pytest.raises(AnsibleFilterError, match="the rule must be"):
        sglang_monitoring_problems(_settings(numbers={"x": [1, 2]}))
