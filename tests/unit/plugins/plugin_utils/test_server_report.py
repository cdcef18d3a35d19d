# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""sglang_server_report: one shape for the role sglang_server's host report."""

from __future__ import annotations

import os

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.llmserve.sglang.plugins.filter.deploy_report import FilterModule
from ansible_collections.llmserve.sglang.plugins.plugin_utils.deploy_report import build_host_report, host_stats
from ansible_collections.llmserve.sglang.plugins.plugin_utils.server_report import FIELDS, server_report

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def test_every_key_is_present_and_missing_ones_are_none():
    report = server_report({"unit": "sglang.service", "state": "serving", "ready": True})
    assert list(report) == list(FIELDS)
    assert report["unit"] == "sglang.service" and report["state"] == "serving" and report["ready"] is True
    assert all(report[key] is None for key in FIELDS if key not in ("unit", "state", "ready"))


def test_given_values_are_kept_as_they_are():
    fields = {key: ("value of %s" % key) for key in FIELDS}
    fields.update(restarted=False, status_history=[], speculative_requested={}, time_to_ready=0.0)
    assert server_report(fields) == fields


def test_an_unknown_key_is_refused_by_name():
    with pytest.raises(ValueError) as exc:
        server_report({"unit": "sglang.service", "smoek": "passed"})
    assert "'smoek'" in str(exc.value)
    assert "did you mean 'smoke'" in str(exc.value)


def test_a_report_that_is_not_a_dict_is_refused():
    with pytest.raises(TypeError, match="expected a dict"):
        server_report(["unit", "state"])


def test_the_filter_gives_the_same_shape_and_refuses_unknown_keys():
    flt = FilterModule().filters()["sglang_server_report"]
    assert flt({"state": "not ready"}) == server_report({"state": "not ready"})
    with pytest.raises(AnsibleFilterError, match="'rollback_eror'"):
        flt({"rollback_eror": "x"})


def test_the_filter_documentation_lists_every_key():
    with open(os.path.join(ROOT, "plugins", "filter", "sglang_server_report.yml"), encoding="utf-8") as handle:
        doc = yaml.safe_load(handle)
    text = " ".join(doc["RETURN"]["_value"]["description"])
    assert [key for key in FIELDS if "C(%s)" % key not in text] == []


def test_a_report_of_a_failure_before_the_swap_reads_as_before():
    # the shortest path's report: the keys it never had are None, which the host report reads as "absent"
    sparse = {"unit": "sglang.service", "state": "failed before the swap (the live configuration is unchanged)",
              "error": "boom", "ready": False}
    host = build_host_report("h", None, None, server_report(sparse))
    assert host == build_host_report("h", None, None, sparse)
    assert host["stages"]["sglang"] == sparse["state"]
    assert host_stats(host)["error"] == "boom"
