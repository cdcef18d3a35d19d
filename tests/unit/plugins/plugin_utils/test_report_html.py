# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""report.html: the run report as one self-contained, inert HTML page (escaping, the P2P grid, the rollout phases,
missing data). tests/functional/report loads it in a real browser."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from ansible_collections.llmserve.sglang.plugins.filter.deploy_report import FilterModule, sglang_report_html
from ansible_collections.llmserve.sglang.plugins.plugin_utils.deploy_report import build_host_report, gateway_states
from ansible_collections.llmserve.sglang.plugins.plugin_utils.report_html import (
    host_phases,
    host_verdict,
    p2p_cells,
    render_run_report,
)

A, B, C = "0000:01:00.0", "0000:41:00.0", "0000:81:00.0"
HOSTILE = "<script>document.title='pwned'</script>\"><img src=x onerror=alert(1)>"


def _preflight(gpus, **p2p):
    return {"status": "pass", "host": {"iommu": True, "iommu_vendor": "amd"},
            "gpus": [{"pci_address": gpu, "name": "NVIDIA RTX PRO 6000", "architecture": "blackwell"} for gpu in gpus],
            "p2p": dict({"tested": True, "ok": True, "skipped": None, "bad_pairs": [], "unknown_pairs": [],
                         "ipc_failed": [], "largest_p2p_group": list(gpus)}, **p2p)}


SERVING = {"state": "serving", "version": "0.5.23", "ready": True, "restarted": True, "time_to_ready": 41.25,
           "smoke": "passed"}
OUT = {"results": [{"item": "gw-1", "drained": True, "drain_seconds": 3.2},
                   {"item": "gw-2", "drained": True, "drain_seconds": 5.5}]}
IN = {"results": [{"item": "gw-1", "healthy": True, "wait_seconds": 2.0},
                  {"item": "gw-2", "healthy": True, "wait_seconds": 1.0}]}


class Page(HTMLParser):
    """The elements and the text of a page, as a browser's parser sees them."""

    def __init__(self, text):
        super().__init__()
        self.tags, self.attrs, self.text = [], [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def elements(self, **wanted):
        return [attrs for _tag, attrs in self.attrs if all(attrs.get(k) == v for k, v in wanted.items())]


def _report(host="gpu-a", **kwargs):
    args = dict(preflight=_preflight([A, B, C], ok=False, bad_pairs=["%s->%s" % (B, C)]), sglang=SERVING,
                gateways=gateway_states(OUT, IN), model={"repo": "org/model", "revision": "a" * 40})
    args.update(kwargs)
    return build_host_report(host, args["preflight"], None, args["sglang"], args["gateways"], None, args["model"])


def test_host_report_carries_the_p2p_matrix_inputs():
    p2p = _report()["p2p"]
    assert p2p == {"gpus": [A, B, C], "tested": True, "ok": False, "skipped": None,
                   "bad_pairs": ["%s->%s" % (B, C)], "unknown_pairs": [], "ipc_failed": [],
                   "largest_p2p_group": [A, B, C]}
    # a preflight report from before unknown_pairs was published
    old = _preflight([A, B])
    del old["p2p"]["unknown_pairs"]
    assert build_host_report("h", old)["p2p"]["unknown_pairs"] is None
    assert "p2p" not in build_host_report("h", None)


def test_a_hostile_host_name_stays_text():
    page = render_run_report("run-<b>1</b>", [_report(HOSTILE), _report(HOSTILE + "-2", sglang={
        "state": "rolled back", "error": "<iframe src=//evil.example/>"})])
    parsed = Page(page)
    # no element came from the data: the page's own elements only
    assert not {"script", "img", "iframe", "b"} & set(parsed.tags)
    assert HOSTILE in "".join(parsed.text)
    assert "<iframe src=//evil.example/>" in "".join(parsed.text)
    # in attributes too: quoted and escaped, the name is the whole value
    assert [attrs["data-host"] for attrs in parsed.elements() if "data-host" in attrs].count(HOSTILE) >= 3
    assert "<title>SGLang deployment report run-&lt;b&gt;1&lt;/b&gt;</title>" in page


def test_the_page_loads_nothing_and_runs_nothing():
    page = render_run_report("run-1", [_report(), _report("gpu-b", preflight=None, sglang=None, gateways=None,
                                                          model=None)])
    parsed = Page(page)
    assert not {"script", "link", "img", "iframe", "object", "embed", "base", "form"} & set(parsed.tags)
    for _tag, attrs in parsed.attrs:
        assert not {"src", "href", "xlink:href", "action"} & set(attrs)
        assert not [name for name in attrs if name.startswith("on")]
    # no URL of any scheme, no CSS that could fetch (url(), @import)
    assert re.findall(r"(?i)https?:|//[a-z0-9]|url\(|@import", page) == []
    csp = parsed.elements(**{"http-equiv": "Content-Security-Policy"})
    assert csp == [{"http-equiv": "Content-Security-Policy",
                    "content": "default-src 'none'; style-src 'unsafe-inline'"}]


def test_p2p_grid_marks_each_pair():
    page = Page(render_run_report("r", [_report()]))
    cells = {attrs["data-pair"]: (attrs["data-state"], attrs["class"]) for attrs in page.elements()
             if "data-pair" in attrs}
    assert len(cells) == 9
    assert cells["%s->%s" % (B, C)] == ("fail", "p2p-cell p2p-fail")
    assert cells["%s->%s" % (C, B)] == ("ok", "p2p-cell p2p-ok")
    assert cells["%s->%s" % (A, A)] == ("none", "p2p-cell p2p-none")
    # a word in each cell besides the colour
    assert "".join(page.text).count("fail") >= 1 and "".join(page.text).count("ok") >= 6


def test_p2p_cells_untested_skipped_ipc_and_old_reports():
    skipped = {"gpus": [A, B], "tested": False, "skipped": "skipped in check mode", "bad_pairs": [],
               "unknown_pairs": ["%s->%s" % (A, B), "%s->%s" % (B, A)]}
    assert p2p_cells(skipped) == {(A, A): "none", (A, B): "untested", (B, A): "untested", (B, B): "none"}
    # without unknown_pairs (an older report): untested when the test did not run, else what bad_pairs says
    assert set(p2p_cells({"gpus": [A, B], "tested": False}).values()) == {"none", "untested"}
    assert p2p_cells({"gpus": [A, B], "tested": True, "bad_pairs": ["%s->%s" % (A, B)]})[(A, B)] == "fail"
    # one GPU: the diagonal is its two-process IPC test
    assert p2p_cells({"gpus": [A], "tested": True, "bad_pairs": ["%s->%s" % (A, A)], "ipc_failed": [A]}) == {
        (A, A): "fail"}
    assert p2p_cells({"gpus": [A], "tested": True, "unknown_pairs": []}) == {(A, A): "ok"}
    assert p2p_cells({"gpus": [A], "tested": False, "unknown_pairs": ["%s->%s" % (A, A)]}) == {(A, A): "untested"}


def test_rollout_phases_of_a_drained_restarted_host():
    phases = host_phases(_report())
    assert [p[0] for p in phases] == ["drain", "stop", "start", "ready", "rejoin"]
    assert [(p[1], p[2]) for p in phases] == [("done", "5.5 s"), ("done", "done"), ("done", "done"),
                                              ("done", "41.2 s"), ("done", "2.0 s")]


def test_rollout_phases_when_things_went_wrong_or_did_not_happen():
    failed_back = gateway_states(OUT, {"results": [{"item": "gw-1", "failed": True, "msg": "gateway said 500"},
                                                   {"item": "gw-2", "healthy": False, "wait_seconds": 300.0}]})
    rolled = _report(sglang={"state": "rolled back", "restarted": True, "error": "not ready in 600 s"},
                     gateways=failed_back)
    states = dict((p[0], p[1]) for p in host_phases(rolled))
    assert states == {"drain": "done", "stop": "done", "start": "done", "ready": "fail", "rejoin": "fail"}
    assert "gateway said 500" in host_phases(rolled)[4][3]
    not_drained = gateway_states({"results": [{"item": "gw-1", "drained": False, "drain_seconds": 600.0}]}, IN)
    assert host_phases(_report(gateways=not_drained))[0][1:3] == ("warn", "600.0 s")
    unchanged = host_phases(_report(sglang={"state": "serving", "restarted": False}, gateways=None))
    assert [p[1] for p in unchanged] == ["skipped", "skipped", "skipped", "done", "skipped"]
    assert unchanged[3][2] == "serving"
    audit = host_phases(build_host_report("h", _preflight([A])))
    assert [p[1] for p in audit] == ["skipped", "unknown", "unknown", "unknown", "skipped"]


def test_verdicts():
    assert host_verdict(build_host_report("h", _preflight([A]), None, SERVING)) == ("ok", "serving", [])
    assert host_verdict(_report()) == ("warn", "serving", ["P2P test failed"])
    level, label, reasons = host_verdict(_report(sglang={"state": "rolled back", "error": "x"}))
    assert (level, label) == ("fail", "rolled back") and reasons[:2] == ["SGLang rolled back", "deployment error"]
    assert host_verdict(build_host_report("h", None)) == ("unknown", "preflight not run", [])
    assert host_verdict(build_host_report("h", dict(_preflight([A]), status="fail")))[:2] == ("fail",
                                                                                              "preflight fail")


def test_missing_data_renders_with_notes():
    page = render_run_report("run-1", [build_host_report("bare", None)])
    text = " ".join(Page(page).text)
    assert "No P2P result: preflight not run." in text
    assert "No host staged or verified a model in this run." in text
    assert "No worker was taken out of or put back into a gateway in this run." in text
    assert len(Page(page).elements(**{"data-phase": "drain"})) == 1
    empty = render_run_report("run-2", [])
    assert "0 host(s)" in empty and "No host in this report." in empty


def test_model_revisions_listed_and_a_mismatch_noted():
    page = render_run_report("r", [_report("a"), _report("b", model={"repo": "org/model", "revision": "b" * 40})])
    assert "org/model@%s" % ("a" * 40) in page and "org/model@%s" % ("b" * 40) in page
    assert "The hosts hold different model revisions." in page


def test_filter_renders_the_page():
    assert FilterModule().filters()["sglang_report_html"] is sglang_report_html
    page = sglang_report_html([_report()], "run-9")
    assert page.startswith("<!DOCTYPE html>") and page.endswith("</html>\n")
    assert "<title>SGLang deployment report run-9</title>" in page
    assert "<title>Custom</title>" in sglang_report_html([], "run-9", "Custom")
