# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The run reports of an AWX sliced job's slices as one (tests/unit/playbooks/test_sliced_audit.py merges real ones)."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.llmserve.sglang.plugins.plugin_utils.report_merge import merge_run_reports


def _run(run_id, *hosts):
    return {"run_id": run_id, "hosts": [{"host": name, "stages": {"preflight": "pass"}} for name in hosts]}


def _slices(names, count, first_id=11):
    """The runs of ``count`` slices, each with the hosts AWX gives it (every count-th, in order)."""
    return [_run(first_id + k, *names[k::count]) for k in range(count)]


@pytest.mark.parametrize("hosts,count", [(7, 3), (6, 3), (5, 2), (3, 3), (2, 3), (4, 1)])
def test_the_slices_in_turn_give_the_inventory_order_back(hosts, count):
    names = ["h%02d" % i for i in range(hosts)]
    slices = [run for run in _slices(names, count) if run["hosts"]]  # a slice without a host writes no report
    merged = merge_run_reports(slices)
    assert [entry["host"] for entry in merged["hosts"]] == names
    assert merged["runs"] == [run["run_id"] for run in slices]


def test_host_reports_pass_through_unchanged():
    slices = _slices(["a", "b", "c"], 2)
    slices[1]["hosts"][0]["stages"] = {"preflight": "fail", "driver": "not run"}
    before = copy.deepcopy(slices)
    merged = merge_run_reports(slices)
    assert merged == {"run_id": "11+12", "runs": [11, 12],
                      "hosts": [before[0]["hosts"][0], before[1]["hosts"][0], before[0]["hosts"][1]]}
    assert slices == before, "the inputs are left as they were"


def test_one_run_is_its_own_report():
    run = _run(4711, "a", "b")
    assert merge_run_reports([run]) == dict(run, runs=[4711])
    assert merge_run_reports([_run("run-20261207T060000Z-42", "a")])["run_id"] == "run-20261207T060000Z-42"


def test_a_host_that_did_not_report_moves_the_others_but_none_is_lost():
    slices = [_run(1, "a", "d"), _run(2, "e"), _run(3, "c", "f")]  # b of slice 2 was unreachable
    assert [entry["host"] for entry in merge_run_reports(slices)["hosts"]] == ["a", "e", "c", "d", "f"]


@pytest.mark.parametrize("runs,message", [
    ([], "no run report to merge"),
    ([_run(1, "a"), _run(2, "b", "a")], "host a is in run 1 and in run 2: these are not the slices of one job"),
    ([_run(1, "a"), _run(1, "b")], "run 1 comes more than once"),
    ([_run(1, "a"), {"hosts": []}], "report 2 is not a run report"),
    ([{"run_id": 1, "hosts": {"a": {}}}], "report 1 is not a run report"),
    ([_run(1, "a"), {"run_id": 2, "hosts": [{"stages": {}}]}], "report 2 (run 2) has a host report without a host name"),
    (["report.json"], "report 1 is not a run report"),
])
def test_what_is_not_the_slices_of_one_job_is_refused(runs, message):
    with pytest.raises(ValueError) as error:
        merge_run_reports(runs)
    assert message in str(error.value)
