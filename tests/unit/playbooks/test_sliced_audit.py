# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""preflight.yml may run as an AWX sliced job (issue 49): three slices give every host the verdict one job gives it,
each slice's report stands alone, and tools/merge_reports.py makes the one job's report out of the slices'.

Run for real through ansible-runner, as AWX runs a job: a private data directory per job (inventory, env/extravars,
env/cmdline --check), the project directory holding the playbook, the job events and the stats event's artifacts.
AWX starts slice k of 3 with the inventory's hosts k-1, k-1+3, ... in the inventory's order, groups kept, and the
extra vars of a workflow job named after its template (awx/main/models: JobTemplate.create_unified_job,
Inventory.get_sliced_hosts, UnifiedJob.awx_meta_vars). The three slices and the unsliced job start together on one
controller, with one report directory.

The hosts are seven GPU hosts read from fixture trees (tests/fixtures/hosts, connection local): one passes, three
warn, three fail (the verdicts the preflight molecule scenario expects of the same fixtures). The playbook is
playbooks/preflight.yml with one addition: module_defaults give each host's lock (llmserve.sglang.run_lock) a path
in the test's directory, since the seven hosts are one machine here and /run/llmserve is root's."""

from __future__ import annotations

import copy
import glob
import json
import os
import subprocess
import sys

import pytest
import yaml
from ansible_collections.llmserve.sglang.tests.unit.collection_tree import collections_path

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
RUNNER = os.path.join(os.path.dirname(sys.executable), "ansible-runner")
SLICES = 3
TEMPLATE = "GPU fleet: audit"
WORKFLOW_JOB = 4700
WHOLE_JOB = 4800

# host: (fixture tree, host variables, the verdict report.html shows)
HOSTS = {
    "gpu-01": ("blackwell4_amd_snp_dmafq", {"iommu_preflight_gpus": [0, "0000:41:00.0"]}, "ok"),
    "gpu-02": ("blackwell4_amd_snp_dmafq", {}, "warn"),  # its four GPUs span two NUMA nodes
    "gpu-03": ("blackwell4_amd_snp_one_identity", {}, "fail"),  # identity on Blackwell and SEV-SNP
    "gpu-04": ("blackwell4_no_iommu", {}, "warn"),
    "gpu-05": ("hopper4_intel_identity", {}, "warn"),
    "gpu-06": ("h200_vm_580_xid79", {}, "fail"),  # fatal Xid 79
    "gpu-07": ("blackwell4_amd_snp_io_page_faults", {}, "fail"),  # DMA faults
}
NAMES = list(HOSTS)


def _slice_hosts(number):
    """The hosts AWX gives slice ``number`` (1-based) of SLICES."""
    return NAMES[number - 1::SLICES]


def _inventory(trees, hosts):
    """The inventory of a job: the hosts of group sglang_servers given, in the inventory's order."""
    def host_vars(name):
        fixture, extra, dummy = HOSTS[name]
        tree = os.path.join(trees, fixture)
        return dict({"iommu_preflight_root": tree, "iommu_preflight_kernel_log": os.path.join(tree, "var/log/kern.log"),
                     "nvidia_driver_facts_root": tree}, **extra)

    return {"all": {"vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
                    "children": {"sglang_servers": {"hosts": {name: host_vars(name) for name in hosts}}}}}


def _project(tmp_path, locks):
    """playbooks/preflight.yml, each play with its lock in the test's directory (one lock per host)."""
    with open(os.path.join(ROOT, "playbooks", "preflight.yml"), encoding="utf-8") as handle:
        plays = yaml.safe_load(handle)
    for play in plays:
        assert "module_defaults" not in play, "the test would replace the playbook's own module_defaults"
        play["module_defaults"] = {"llmserve.sglang.run_lock": {"path": locks + "/{{ inventory_hostname }}.lock"}}
    project = tmp_path / "project"
    project.mkdir()
    (project / "preflight.yml").write_text(json.dumps(plays), encoding="utf-8")
    return str(project)


def _start(tmp_path, ident, inventory, extra_vars, project, reports):
    """Start one job through ansible-runner; returns (private data directory, process)."""
    data = tmp_path / ident
    (data / "env").mkdir(parents=True)
    (data / "inventory").mkdir()
    (data / "inventory" / "hosts.json").write_text(json.dumps(inventory), encoding="utf-8")
    (data / "env" / "extravars").write_text(json.dumps(dict(
        extra_vars, sglang_audit_probe=False, sglang_rollout_report_dir=reports)), encoding="utf-8")
    # an audit is a check-mode job template
    (data / "env" / "cmdline").write_text("--check", encoding="utf-8")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_HOME=str(data / "home"), ANSIBLE_LOCALHOST_WARNING="false")
    process = subprocess.Popen([RUNNER, "run", str(data), "--ident", ident, "--project-dir", project,
                                "-p", "preflight.yml", "-q"], env=env, cwd=str(data),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return str(data), process


def _job(data, ident, process):
    """What AWX reads of a finished job: its status, and the stats event (per-host counts, the artifacts)."""
    output = process.communicate(timeout=240)[0]
    artifacts = os.path.join(data, "artifacts", ident)
    with open(os.path.join(artifacts, "status"), encoding="utf-8") as handle:
        status = handle.read().strip()
    with open(os.path.join(artifacts, "stdout"), encoding="utf-8") as handle:
        stdout = handle.read()
    stats = None
    for name in glob.glob(os.path.join(artifacts, "job_events", "*.json")):
        with open(name, encoding="utf-8") as handle:
            event = json.load(handle)
        if event.get("event") == "playbook_on_stats":
            stats = event["event_data"]
    assert stats is not None, "job %s has no stats event: %s\n%s" % (ident, output[-2000:], stdout[-4000:])
    return {"status": status, "stats": stats, "stdout": stdout}


def _run_reports(reports):
    """{run_id: (run directory, report.json)} of every run that wrote into ``reports``."""
    found = {}
    for name in sorted(glob.glob(os.path.join(reports, "*", "report.json"))):
        with open(name, encoding="utf-8") as handle:
            report = json.load(handle)
        found[report["run_id"]] = (os.path.dirname(name), report)
    return found


def _verdicts(host_reports):
    """{host: (its stages, the verdict report.html shows)}: what a host's audit says."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.report_html import host_verdict

    return {entry["host"]: (entry["stages"], host_verdict(entry)) for entry in host_reports}


def _outcomes(stats):
    """{host: failed?} of a job's stats event (the job's red hosts in AWX)."""
    hosts = set(stats.get("ok") or {}) | set(stats.get("failures") or {}) | set(stats.get("dark") or {})
    return {host: bool((stats.get("failures") or {}).get(host) or (stats.get("dark") or {}).get(host))
            for host in hosts}


def _differences(sliced, whole):
    """The hosts whose verdicts differ between the slices' reports and the unsliced job's, or that only one has."""
    return sorted(host for host in set(sliced) | set(whole) if sliced.get(host) != whole.get(host))


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    if not os.path.exists(RUNNER):
        pytest.skip("ansible-runner is not in this venv (requirements-dev.txt installs it)")
    tmp_path = tmp_path_factory.mktemp("sliced-audit")
    trees = str(tmp_path / "trees")
    subprocess.run([sys.executable, os.path.join(ROOT, "tests", "fixtures", "hosts", "materialize.py"), trees]
                   + sorted(set(fixture for fixture, dummy, dummy2 in HOSTS.values())),
                   check=True, capture_output=True, timeout=120)
    locks = tmp_path / "locks"
    locks.mkdir(mode=0o700)
    reports = str(tmp_path / "reports")
    project = _project(tmp_path, str(locks))
    started = {}
    for number in range(1, SLICES + 1):
        extra = {"awx_job_id": WORKFLOW_JOB + number, "awx_job_template_name": TEMPLATE,
                 "awx_workflow_job_id": WORKFLOW_JOB, "awx_workflow_job_name": TEMPLATE,
                 "awx_job_launch_type": "workflow"}
        started["slice%d" % number] = _start(tmp_path, "slice%d" % number,
                                             _inventory(trees, _slice_hosts(number)), extra, project,
                                             reports)
    started["whole"] = _start(tmp_path, "whole", _inventory(trees, NAMES),
                              {"awx_job_id": WHOLE_JOB, "awx_job_template_name": TEMPLATE,
                               "awx_job_launch_type": "manual"}, project, reports)
    done = {ident: _job(data, ident, process) for ident, (data, process) in started.items()}
    return {"jobs": done, "reports": reports, "locks": str(locks), "tmp": tmp_path}


def test_every_job_ran_to_its_end_and_gave_the_locks_back(jobs):
    for ident, job in jobs["jobs"].items():
        # a slice with a failing host is a failed job, as the unsliced job is; none stopped before its recap
        assert "PLAY RECAP" in job["stdout"], job["stdout"][-3000:]
        assert "This run looks like one slice" not in job["stdout"], "preflight.yml must not refuse a slice"
        assert job["status"] == ("successful" if not any(_outcomes(job["stats"]).values()) else "failed"), ident
    assert sorted(os.listdir(jobs["locks"])) == sorted(name + ".lock.guard" for name in NAMES), \
        "every host's lock was given back by every job"


def test_each_slice_reports_exactly_its_hosts_on_its_own(jobs):
    runs = _run_reports(jobs["reports"])
    # one directory per job, though they started together: none replaced another's report
    assert sorted(runs) == [WORKFLOW_JOB + number for number in range(1, SLICES + 1)] + [WHOLE_JOB]
    for number in range(1, SLICES + 1):
        run_dir, report = runs[WORKFLOW_JOB + number]
        assert os.path.basename(run_dir).endswith("-%d" % (WORKFLOW_JOB + number))
        assert [entry["host"] for entry in report["hosts"]] == _slice_hosts(number)
        assert sorted(os.listdir(os.path.join(run_dir, "hosts"))) == \
            sorted("%s.%s" % (name, ext) for name in _slice_hosts(number) for ext in ("json", "md"))
        with open(os.path.join(run_dir, "report.md"), encoding="utf-8") as handle:
            markdown = handle.read()
        with open(os.path.join(run_dir, "report.html"), encoding="utf-8") as handle:
            page = handle.read()
        for name in NAMES:
            mine = name in _slice_hosts(number)
            assert (("## %s\n" % name) in markdown) is mine and (('data-host="%s"' % name) in page) is mine, name
        # the job's artifacts (set_stats) are the slice's alone too
        summary = jobs["jobs"]["slice%d" % number]["stats"]["artifact_data"]["sglang_run_summary"]
        assert summary["run_id"] == WORKFLOW_JOB + number and sorted(summary["hosts"]) == _slice_hosts(number)


def test_the_slices_give_every_host_the_verdict_of_the_unsliced_job(jobs):
    runs = _run_reports(jobs["reports"])
    whole = runs[WHOLE_JOB][1]["hosts"]
    sliced = [entry for number in range(1, SLICES + 1) for entry in runs[WORKFLOW_JOB + number][1]["hosts"]]
    assert _differences(_verdicts(sliced), _verdicts(whole)) == []
    # the fixtures give each verdict somewhere, so an audit that said the same of every host would not pass
    assert {host: verdict[0] for host, (dummy, verdict) in _verdicts(whole).items()} == \
        {name: level for name, (dummy, dummy2, level) in HOSTS.items()}
    # the whole host report, not only its verdict: a slice reads each host as the whole job does
    assert sorted(sliced, key=lambda entry: entry["host"]) == sorted(whole, key=lambda entry: entry["host"])
    # AWX's view: the same hosts fail, and the artifacts say the same of each
    slice_jobs = [jobs["jobs"]["slice%d" % number] for number in range(1, SLICES + 1)]
    outcomes = {}
    artifacts = {}
    for job in slice_jobs:
        outcomes.update(_outcomes(job["stats"]))
        artifacts.update(job["stats"]["artifact_data"]["sglang_run_summary"]["hosts"])
    whole_job = jobs["jobs"]["whole"]
    assert outcomes == _outcomes(whole_job["stats"])
    assert sorted(host for host, failed in outcomes.items() if failed) == ["gpu-03", "gpu-06", "gpu-07"]
    assert artifacts == whole_job["stats"]["artifact_data"]["sglang_run_summary"]["hosts"]


def test_the_comparison_sees_a_slice_that_says_otherwise(jobs):
    """The check above can fail: one host's preflight verdict changed in a copy of a slice's report is found, and so
    is a host that no slice reported."""
    runs = _run_reports(jobs["reports"])
    whole = _verdicts(runs[WHOLE_JOB][1]["hosts"])
    sliced = [copy.deepcopy(entry) for number in range(1, SLICES + 1)
              for entry in runs[WORKFLOW_JOB + number][1]["hosts"]]
    assert _differences(_verdicts(sliced), whole) == []
    changed = next(entry for entry in sliced if entry["host"] == "gpu-05")
    changed["stages"]["preflight"] = "pass"
    assert _differences(_verdicts(sliced), whole) == ["gpu-05"]
    assert _differences(_verdicts([entry for entry in sliced if entry["host"] != "gpu-02"]), whole) == \
        ["gpu-02", "gpu-05"]


def _merge(*args):
    return subprocess.run([sys.executable, os.path.join(ROOT, "tools", "merge_reports.py")] + list(args),
                          capture_output=True, text=True, check=False, timeout=120)


def _read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def test_the_merged_slices_are_the_unsliced_jobs_report(jobs):
    runs = _run_reports(jobs["reports"])
    out = str(jobs["tmp"] / "merged")
    done = _merge("-o", out, *[runs[WORKFLOW_JOB + number][0] for number in range(1, SLICES + 1)])
    assert done.returncode == 0, done.stdout + done.stderr
    whole_dir, whole = runs[WHOLE_JOB]
    merged = json.loads(_read(os.path.join(out, "report.json")))
    ids = [WORKFLOW_JOB + number for number in range(1, SLICES + 1)]
    run_id = "+".join(str(number) for number in ids)
    assert merged["run_id"] == run_id and merged["runs"] == ids
    # the same host reports, in the inventory's order
    assert merged["hosts"] == whole["hosts"]
    assert _differences(_verdicts(merged["hosts"]), _verdicts(whole["hosts"])) == []
    # the same files: the host files byte for byte, the run report but for the run's name
    assert sorted(os.listdir(os.path.join(out, "hosts"))) == sorted(os.listdir(os.path.join(whole_dir, "hosts")))
    for name in os.listdir(os.path.join(whole_dir, "hosts")):
        assert _read(os.path.join(out, "hosts", name)) == _read(os.path.join(whole_dir, "hosts", name)), name
    assert _read(os.path.join(out, "report.md")) == \
        _read(os.path.join(whole_dir, "report.md")).replace("report %d\n" % WHOLE_JOB, "report %s\n" % run_id, 1)
    page = _read(os.path.join(whole_dir, "report.html"))
    for before, after in (("report %d<", "report %s<"), ('"run-id">%d<', '"run-id">%s<')):
        assert page.count(before % WHOLE_JOB) >= 1
        page = page.replace(before % WHOLE_JOB, after % run_id)
    assert _read(os.path.join(out, "report.html")) == page
    # the summary names each host's verdict and the slice that reported it
    lines = done.stdout.splitlines()
    assert lines[0].split()[:2] == ["gpu-01", "ok"] and lines[0].endswith("(run %d)" % ids[0])
    assert lines[-1].startswith("merged 3 run(s) (%s), 7 host(s)" % ", ".join(str(number) for number in ids))


def test_one_slice_merged_alone_is_its_own_report(jobs):
    run_dir, dummy = _run_reports(jobs["reports"])[WORKFLOW_JOB + 2]
    out = str(jobs["tmp"] / "merged-one")
    done = _merge("-o", out, run_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    for name in ["report.md", "report.html"] + ["hosts/" + name for name in os.listdir(os.path.join(run_dir, "hosts"))]:
        assert _read(os.path.join(out, name)) == _read(os.path.join(run_dir, name)), name
    merged = json.loads(_read(os.path.join(out, "report.json")))
    assert merged.pop("runs") == [WORKFLOW_JOB + 2]
    assert merged == json.loads(_read(os.path.join(run_dir, "report.json")))


def test_the_merge_refuses_reports_that_are_not_slices_of_one_job(jobs):
    runs = _run_reports(jobs["reports"])
    # the unsliced job shares every host with each slice
    done = _merge("-o", str(jobs["tmp"] / "refused"), runs[WORKFLOW_JOB + 1][0], runs[WHOLE_JOB][0])
    assert done.returncode == 1
    assert "host gpu-01 is in run %d and in run %d" % (WORKFLOW_JOB + 1, WHOLE_JOB) in done.stderr
    assert not os.path.exists(str(jobs["tmp"] / "refused"))
    # nothing is written over an earlier merge
    (jobs["tmp"] / "taken").mkdir()
    (jobs["tmp"] / "taken" / "report.json").write_text("{}")
    done = _merge("-o", str(jobs["tmp"] / "taken"), runs[WORKFLOW_JOB + 1][0])
    assert done.returncode == 1 and "is not empty" in done.stderr
    assert (jobs["tmp"] / "taken" / "report.json").read_text() == "{}"
