"""The site report: one entry per host from the three stages' results."""

import json
import os

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible.errors import AnsibleFilterError

from ansible_collections.llmserve.sglang.plugins.filter.deploy_report import (
    sglang_report_file_name,
    sglang_report_rows,
    sglang_report_servers,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.deploy_report import (
    build_host_report,
    gateway_states,
    host_rows,
    host_stats,
    render_text,
    report_file_name,
)

PREFLIGHT = {
    "status": "pass",
    "host": {"iommu": True, "iommu_vendor": "amd", "sev_snp": True, "driver_version": "595.45.04"},
    "gpus": [
        {"pci_address": "0000:%02x:00.0" % bus, "name": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
         "architecture": "blackwell", "numa_node": 0, "iommu_domain_type": "DMA-FQ", "dma_faults": faults,
         "selected": True}
        for bus, faults in ((0x01, 0), (0x41, 2), (0x81, 0), (0xc1, 0))
    ],
    "warnings": [],
}
DRIVER = {"loaded": True, "status": "applied", "pending": [], "reboot_required": False,
          "desired": {"RegistryDwords": {"DmaRemapPeerMmio": 1}, "params": {}}}
SGLANG = {"version": "0.5.23", "tp_size": 4, "ready": True, "restarted": True, "time_to_ready": 412.5,
          "speculative_requested": {"algorithm": "NEXTN", "num_steps": 5}, "speculative_reported": "EAGLE",
          "smoke": "passed", "p2p": "on"}

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def test_full_report_holds_every_stage():
    report = build_host_report("gpu-node-01", PREFLIGHT, DRIVER, SGLANG)
    assert report["stages"] == {"preflight": "pass", "driver": "applied", "sglang": "serving"}
    assert report["gpus"] == "4 x NVIDIA RTX PRO 6000 Blackwell Server Edition (blackwell)"
    assert report["numa_nodes"] == [0]
    assert report["dma_faults"] == 2
    assert report["iommu"]["per_gpu"]["0000:41:00.0"] == "DMA-FQ"
    assert report["driver_params"]["applied"] is True
    assert report["sglang"]["speculative_reported"] == "EAGLE"


def test_missing_stages_show_as_not_run():
    report = build_host_report("h", None, None, SGLANG)
    assert report["stages"]["preflight"] == "not run"
    assert report["stages"]["driver"] == "not run"
    rows = dict(host_rows(report))
    assert rows["GPUs"] == "-"
    assert rows["Time to ready"] == "412.5 s"


def test_pending_driver_params_need_reboot():
    driver = dict(DRIVER, pending=["DmaRemapPeerMmio"], reboot_required=True, status="pending")
    report = build_host_report("h", PREFLIGHT, driver, None)
    assert report["driver_params"]["applied"] is False
    assert dict(host_rows(report))["Reboot required"] == "yes"


def _render_markdown(reports, title):
    """roles/sglang_rollout/templates/sglang_report.md.j2 as the template lookup renders it (trim_blocks on)."""
    import jinja2  # pylint: disable=import-outside-toplevel
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(ROOT, "roles", "sglang_rollout", "templates")),
                             trim_blocks=True, undefined=jinja2.StrictUndefined)
    env.filters["llmserve.sglang.sglang_report_rows"] = sglang_report_rows
    env.filters["llmserve.sglang.sglang_report_servers"] = sglang_report_servers
    return env.get_template("sglang_report.md.j2").render(__sglang_rollout_md_title=title, __sglang_rollout_md_reports=reports)


def test_markdown_has_one_table_per_host_and_escapes_pipes():
    a = build_host_report("a", PREFLIGHT, DRIVER, SGLANG)
    b = build_host_report("b|x", None, None, dict(SGLANG, restarted=False, smoke="fail|ed"))
    text = _render_markdown([a, b], "T")
    assert text.startswith("# T\n\n## a\n\n| item | value |\n| --- | --- |\n| Stages | ")
    assert text.count("| item | value |") == 2
    assert "| Smoke test | fail\\|ed |" in text
    assert "no restart this run" in text
    # one line per row of the play output, nothing else in the table
    assert len([line for line in text.splitlines() if line.startswith("| ") and line not in ("| item | value |", "| --- | --- |")]) \
        == len(host_rows(a)) + len(host_rows(b))


def test_text_rows_are_aligned():
    report = build_host_report("a", PREFLIGHT, DRIVER, SGLANG)
    lines = render_text(report)
    rows = host_rows(report)
    width = max(len(label) for label, _value in rows)
    assert len(lines) == len(rows)
    for line, (label, value) in zip(lines, rows):
        assert line == label.ljust(width) + "  " + value


def test_rolled_back_host_is_reported_with_both_errors():
    failed = {"state": "failed, and the rollback failed too", "ready": False, "restarted": True, "tp_size": 4,
              "error": "Verify the server: unit sglang failed", "rollback_error": "Wait until ...: timed out"}
    report = build_host_report("h", PREFLIGHT, DRIVER, failed)
    assert report["stages"]["sglang"] == "failed, and the rollback failed too"
    rows = dict(host_rows(report))
    assert rows["Deployment error"] == "Verify the server: unit sglang failed"
    assert rows["Rollback error"] == "Wait until ...: timed out"
    rolled_back = build_host_report(
        "h", None, None, dict(failed, state="rolled back to the last good configuration", rollback_error=None))
    assert rolled_back["stages"]["sglang"] == "rolled back to the last good configuration"
    assert "Rollback error" not in dict(host_rows(rolled_back))


def test_every_string_of_the_report_is_safe_text():
    # issue 45 #6: whatever a server, a gateway or a host answered, the report (and all that is made from it: the
    # files, the job's stats, report.html, the textfiles) holds printable, valid UTF-8 of a bounded length
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.host_metrics import host_metrics
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.report_html import render_run_report

    sg = dict(SGLANG, speculative_reported="EAGLE3\ud83d\ude80", version="0.5.23\ud83d", error="x\x1b[2J\ud83d",
              rollback_error="y" * 50000, speculative_check={"verdict": "ok\udc80", "accept_length": 3.2})
    out = [{"changed": True, "drained": True, "drain_seconds": 1.0, "__sglang_rollout_gw": "gw\u202e1", "msg": "m"}]
    report = build_host_report("h", PREFLIGHT, DRIVER, sg, gateway_states(_looped(*out)))
    sgr = report["sglang"]
    assert sgr["speculative_reported"] == "EAGLE3\U0001F680"
    assert sgr["version"] is None, "not shaped like a version"
    assert sgr["error"] == "x\\x1b[2J\ufffd" and sgr["speculative_check"]["verdict"] == "ok\ufffd"
    assert len(sgr["rollback_error"]) == 10000
    assert report["gateways"][0]["gateway"] == "gw\\u202e1"
    text = json.dumps(report, ensure_ascii=False)
    text.encode("utf-8")  # strict
    assert json.loads(json.dumps(report)) == report
    assert dict(host_rows(report))["Speculative (server reports)"] == "EAGLE3\U0001F680"
    stats = host_stats(report)
    assert stats["speculative"]["verdict"] == "ok\ufffd"
    json.dumps(stats, ensure_ascii=False).encode("utf-8")
    page = render_run_report("run-1", [report])
    page.encode("utf-8")
    assert "EAGLE3\U0001F680" in page and "\x1b" not in page
    assert host_metrics(report, "run", success=True, ended=1)[0]["value"] == 1


def _looped(*results):
    """A looped task's registered variable, as gateway_out.yml / gateway_in.yml register it."""
    return {"results": [dict(r, ansible_loop_var="__sglang_rollout_gw") for r in results]}


def test_gateway_states_of_a_rolled_worker():
    out = _looped({"__sglang_rollout_gw": "gw-b", "drained": True, "drain_seconds": 4.25,
                   "in_flight": {"at_removal": {"gateway": 2, "worker": 2}, "at_end": {"gateway": 0, "worker": 0}}},
                  {"__sglang_rollout_gw": "gw-a", "drained": True, "drain_seconds": 0.5, "in_flight": {"at_removal": None}})
    back = _looped({"__sglang_rollout_gw": "gw-b", "healthy": True, "wait_seconds": 1.5, "healthy_workers": 2},
                   {"__sglang_rollout_gw": "gw-a", "healthy": False, "wait_seconds": 300.0, "healthy_workers": 1,
                    "failed": False})
    rows = gateway_states(out, back)
    assert [r["gateway"] for r in rows] == ["gw-a", "gw-b"]
    assert rows[1] == {"gateway": "gw-b", "state": "in", "drained": True, "drain_seconds": 4.25,
                       "in_flight_at_removal": {"gateway": 2, "worker": 2}, "wait_seconds": 1.5,
                       "healthy_workers": 2}
    assert rows[0]["state"] == "in, unhealthy"
    report = build_host_report("w1", None, None, dict(SGLANG, metrics_url="http://10.0.0.5:30000/metrics"), rows)
    table = dict(host_rows(report))
    assert table["Gateways"] == ("gw-a: in, unhealthy, drained in 0.5 s, healthy again after 300.0 s; "
                                 "gw-b: in, drained in 4.2 s, healthy again after 1.5 s")
    assert table["Metrics"] == "http://10.0.0.5:30000/metrics"
    assert report["sglang"]["metrics_url"] == "http://10.0.0.5:30000/metrics"


def test_gateway_states_of_a_failed_worker_say_it_stays_out():
    out = _looped({"__sglang_rollout_gw": "gw", "drained": True, "drain_seconds": 2.0, "in_flight": {}})
    # the host failed: gateway_in.yml never ran
    assert gateway_states(out, None) == [{"gateway": "gw", "state": "out", "drained": True, "drain_seconds": 2.0,
                                          "in_flight_at_removal": None}]
    back = _looped({"__sglang_rollout_gw": "gw", "failed": True, "msg": "not healthy after 300 s"})
    assert gateway_states(out, back)[0]["state"] == "out"
    assert gateway_states(out, back)[0]["error"] == "putting it back: not healthy after 300 s"
    failed_out = _looped({"__sglang_rollout_gw": "gw", "failed": True, "msg": "only 1 healthy worker left"})
    assert gateway_states(failed_out, None)[0]["error"] == "taking it out: only 1 healthy worker left"


def test_no_gateway_touched_gives_no_gateway_rows():
    skipped = {"results": [{"skipped": True, "__sglang_rollout_gw": "gw", "ansible_loop_var": "__sglang_rollout_gw"}]}
    assert gateway_states(None, None) == [] and gateway_states(skipped, {"skipped": True}) == []
    report = build_host_report("w1", None, None, SGLANG, [])
    assert "gateways" not in report and "Gateways" not in dict(host_rows(report))


def test_host_stats_of_a_restarted_host():
    plan = {"changes": ["sglang: restart (unit changed)"], "restart_needed": True}
    stats = host_stats(build_host_report("h", PREFLIGHT, DRIVER, SGLANG, None, plan))
    assert stats == {
        "stages": {"preflight": "pass", "driver": "applied", "sglang": "serving"},
        "reboot_required": False,
        "pending_driver_options": [],
        "sglang_version": "0.5.23",
        "restarted": True,
        "time_to_ready": 412.5,
        "planned_changes": ["sglang: restart (unit changed)"],
    }


def test_host_stats_of_a_host_waiting_for_a_reboot_without_sglang():
    driver = dict(DRIVER, pending=["DmaRemapPeerMmio"], reboot_required=True, status="pending")
    stats = host_stats(build_host_report("h", PREFLIGHT, driver, None))
    assert stats["stages"] == {"preflight": "pass", "driver": "pending", "sglang": "not run"}
    assert stats["reboot_required"] is True
    assert stats["pending_driver_options"] == ["DmaRemapPeerMmio"]
    assert stats["sglang_version"] is None
    assert stats["time_to_ready"] is None
    # preflight.yml does not plan: no planned_changes key
    assert "planned_changes" not in stats


def test_host_stats_give_no_time_to_ready_without_a_restart_and_carry_the_error():
    unchanged = host_stats(build_host_report("h", None, None, dict(SGLANG, restarted=False)))
    assert unchanged["restarted"] is False
    assert unchanged["time_to_ready"] is None
    rolled_back = {"state": "rolled back to the last good configuration", "restarted": True,
                   "error": "unit sglang failed"}
    failed = host_stats(build_host_report("h", None, None, rolled_back))
    assert failed["stages"]["sglang"] == "rolled back to the last good configuration"
    assert failed["error"] == "unit sglang failed"


# issue 24 #3: what the server (or the host) says must not become Jinja in a later workflow job's extra vars
HOSTILE_VERSION = "0.5.23{{ lookup('pipe', 'id') }}"
HOSTILE_ERROR = ('POST /generate answered 500: {"detail": "{%% set n = 7 * 191 %%}{{ n }}{# hidden #}"} %s'
                 % "{{ lookup('pipe', 'id') }}")


def _as_extra_vars(data):
    """The artifacts as a later workflow job gets them: JSON read back as extra vars, whose strings are trusted
    templates (as with ``-e @artifacts.json``)."""
    def trust(value):
        if isinstance(value, str):
            return trust_as_template(value)
        if isinstance(value, dict):
            return {k: trust(v) for k, v in value.items()}
        if isinstance(value, list):
            return [trust(v) for v in value]
        return value

    return trust(json.loads(json.dumps(data)))


def _hostile_stats():
    sglang = dict(SGLANG, version=HOSTILE_VERSION, installed_version="0.5.23", error=HOSTILE_ERROR,
                  state="rolled back {{ 7 * 191 }}")
    driver = dict(DRIVER, pending=["{{ 7 * 191 }}"], status="driver {% if true %}x{% endif %}")
    plan = {"changes": ["sglang: version 0.5.22 -> {{ 7 * 191 }}"], "restart_needed": True}
    return host_stats(build_host_report("h", PREFLIGHT, driver, sglang, None, plan))


def test_a_later_job_rendering_the_artifacts_runs_nothing_the_server_wrote():
    artifacts = {"sglang_run_summary": {"run_id": 7, "hosts": {"h": _hostile_stats()}}}
    rendered = Templar(loader=DataLoader(), variables={}).template(_as_extra_vars(artifacts))
    text = json.dumps(rendered)
    assert "1337" not in text and "uid=" not in text
    # rendering changes nothing: no string of the artifacts is a template
    assert rendered == json.loads(json.dumps(artifacts))
    for opening in ("{{", "{%", "{#"):
        assert opening not in text


def test_server_version_must_look_like_a_version():
    stats = _hostile_stats()
    # the server's text is refused; the version the role installed is reported instead
    assert stats["sglang_version"] == "0.5.23"
    # the error is still there to read, with its delimiters broken
    assert stats["error"] == ('POST /generate answered 500: {"detail": "{ % set n = 7 * 191 %}{ { n }}{ # hidden #}"}'
                              " { { lookup('pipe', 'id') }}")
    no_fallback = host_stats(build_host_report("h", None, None, dict(SGLANG, version="v1 {{ x }}")))
    assert no_fallback["sglang_version"] is None


@pytest.mark.parametrize("version", ["0.5.23", "0.5.0rc2", "0.4.6.post1", "0.5.3.dev12+g1234abc", "0.5.23+llmserve.standin", "1"])
def test_real_versions_are_kept(version):
    assert host_stats(build_host_report("h", None, None, dict(SGLANG, version=version)))["sglang_version"] == version


@pytest.mark.parametrize("version", ["", "latest", "0.5.23 ", "0.5.23\n", "0.5.{{x}}", "0.5.23;id", "1" * 100, 5,
                                     None, ["0.5.23"]])
def test_other_versions_are_refused(version):
    assert host_stats(build_host_report("h", None, None, dict(SGLANG, version=version)))["sglang_version"] is None


def test_multinode_server_is_shown_once_with_its_nodes():
    rank0 = build_host_report("node-b", None, None, dict(SGLANG, node_group="big", node_rank="0"))
    rank1 = build_host_report("node-a", None, None, dict(SGLANG, node_group="big", node_rank=1, smoke="skipped"))
    single = build_host_report("single", None, None, SGLANG)
    assert rank0["sglang"]["node_group"] == "big" and rank0["sglang"]["node_rank"] == 0
    assert "node_group" not in single["sglang"]
    assert ("Multi-node server", "big, node rank 1 (rank 0 serves the API and is smoke-tested)") in host_rows(rank1)
    text = _render_markdown([single, rank1, rank0], "T")
    servers = text.split("## Servers")[1].split("\n## ")[0]
    # one row per server, the nodes by rank, rank 0's smoke test
    assert servers.count("| big |") == 1 and servers.count("| single |") == 1
    assert "| big | node-b (rank 0), node-a (rank 1) | serving | passed |" in servers
    # a node that failed differently is named with its own state
    failed = build_host_report("node-a", None, None, dict(SGLANG, node_group="big", node_rank=1, ready=False,
                                                          state="rolled back to the last good configuration"))
    assert "node-b: serving; node-a: rolled back" in _render_markdown([rank0, failed], "T")
    # without a multi-node server the report has no servers table
    assert "## Servers" not in _render_markdown([single], "T")


# issue 24 #8: an inventory name is not a file name
HOSTILE_NAMES = ["../../x", "..", ".", ".hidden", "/abs", "/etc/cron.d/x", "a/../../b", "nul\x00byte", "new\nline",
                 "tab\there", "back\\slash", "100%", "%2E%2E", "gpu node", "ünïcode", "\udcff", "\ud800", "x" * 300,
                 "x" * 299 + "y"]


@pytest.mark.parametrize("host", HOSTILE_NAMES)
def test_report_file_name_is_one_plain_path_component(tmp_path, host):
    name = report_file_name(host)
    assert name and "/" not in name and "\\" not in name and not name.startswith(".")
    assert all(c.isalnum() and c.isascii() or c in "-_.%~" for c in name), name
    assert len(name + ".json") < 255
    directory = str(tmp_path / "gateways")
    path = os.path.normpath(os.path.join(directory, name + ".json"))
    assert os.path.dirname(path) == directory


def test_report_file_names_keep_ordinary_names_and_never_collide():
    for host in ("gpu-node-01", "gpu-node-01.example.com", "10.0.0.5", "GW_1"):
        assert report_file_name(host) == host
    names = ["gpu-node-01", "%2E%2E", "..", ".", "%2E.", "a/b", "a%2Fb", "x" * 300, "x" * 299 + "y"] + HOSTILE_NAMES
    assert len({report_file_name(h) for h in set(names)}) == len(set(names))
    assert report_file_name("../../x") == "%2E.%2F..%2Fx"
    assert report_file_name(5) == "5"


def test_report_file_name_refuses_an_empty_name():
    with pytest.raises(ValueError):
        report_file_name("")
    with pytest.raises(AnsibleFilterError, match="sglang_report_file_name: a report needs a host name"):
        sglang_report_file_name("")


def test_the_canary_gate_is_a_stage_and_a_row_of_its_report():
    gate = {"verdict": "fail", "message": "canary a1 is worse than its pool (a2, a3) over 60 s: decode time per output "
                                          "token (mean): canary 0.1 s, pool 0.02 s (median of 2), 5.00x; limit 1.50x",
            "pool": ["a2", "a3"], "excluded": {}, "source": "metrics", "window_seconds": 60, "problems": [],
            "checks": [{"metric": "tpot", "canary": 0.1, "pool": 0.02, "ratio": 5.0, "difference": 0.08,
                        "result": "fail", "message": "...", "threshold": {"max_tpot_ratio": 1.5}}],
            "workers": {"a1": {"requests": 40}}, "kept": False}
    report = build_host_report("a1", canary=gate)
    assert report["stages"]["canary"] == "fail, rolled back"
    assert report["canary"]["checks"] == [{"metric": "tpot", "canary": 0.1, "pool": 0.02, "ratio": 5.0,
                                           "difference": 0.08, "result": "fail", "message": "..."}]
    assert "workers" not in report["canary"], "every worker's numbers stay out of the report"
    row = dict(host_rows(report))["Canary gate"]
    assert row.startswith("fail (rolled back, the rollout stopped): canary a1 is worse than its pool")
    kept = build_host_report("a1", canary=dict(gate, verdict="pass", kept=True))
    assert kept["stages"]["canary"] == "pass, kept"
    assert dict(host_rows(kept))["Canary gate"].startswith("pass (change kept)")
    assert "canary" not in build_host_report("a1")["stages"]
