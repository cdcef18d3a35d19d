# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_native

# Helpers are imported inside the filters: Ansible imports every filter file of the collection to find any one
# filter, in each worker process, so an import up here would be paid by every task that uses any of them.


def _report():
    from ansible_collections.llmserve.sglang.plugins.plugin_utils import deploy_report

    return deploy_report


def sglang_host_report(host, preflight=None, driver=None, sglang=None, gateway_out=None, gateway_in=None,
                       plan=None, model=None, canary=None):
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.rotation import rotation_record

    report = _report()
    return report.build_host_report(host, preflight or None, driver or None, sglang or None,
                                    report.gateway_states(gateway_out or None, gateway_in or None), plan or None,
                                    model or None,
                                    rotation_record(gateway_out or None, gateway_in or None, sglang or None),
                                    canary or None)


def sglang_host_stats(report):
    return _report().host_stats(report)


def sglang_report_rows(report):
    """The rows of one host's table, ``[[label, value], ...]`` (the Markdown template and the play output share them)."""
    return [list(row) for row in _report().host_rows(report)]


def sglang_report_servers(reports):
    """One row per server (server, nodes, state, rank 0's smoke test); empty without a multi-node server."""
    reports = list(reports)
    if not any((r.get("sglang") or {}).get("node_group") for r in reports):
        return []
    return [list(row) for row in _report().server_rows(reports)]


def sglang_report_text(report):
    return _report().render_text(report)


def sglang_report_html(reports, run_id, title=None):
    """The run report as one self-contained HTML page (inline CSS and SVG, no script, nothing loaded)."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.report_html import render_run_report

    return render_run_report(run_id, list(reports or []), title)


def sglang_report_file_name(host):
    try:
        return _report().report_file_name(host)
    except ValueError as exc:
        raise AnsibleFilterError("sglang_report_file_name: %s" % to_native(exc))


def sglang_host_metrics(report, part, success=None, ended=None):
    """The node exporter textfile samples of one part (``gpu`` or ``run``) of a host report."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.host_metrics import host_metrics

    try:
        return host_metrics(report, part, success=success, ended=ended)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("sglang_host_metrics: %s" % to_native(exc))


def sglang_server_report(fields):
    """The role sglang_server's host report with every key (``None`` where ``fields`` has none)."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.server_report import server_report

    try:
        return server_report(fields)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError(to_native(exc))


class FilterModule(object):
    """Deployment report filters."""

    def filters(self):
        return {
            "sglang_host_report": sglang_host_report,
            "sglang_host_stats": sglang_host_stats,
            "sglang_report_rows": sglang_report_rows,
            "sglang_report_servers": sglang_report_servers,
            "sglang_report_text": sglang_report_text,
            "sglang_report_html": sglang_report_html,
            "sglang_report_file_name": sglang_report_file_name,
            "sglang_server_report": sglang_server_report,
            "sglang_host_metrics": sglang_host_metrics,
        }
