# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

from ansible_collections.llmserve.sglang.plugins.module_utils.deploy_report import (
    build_host_report,
    gateway_states,
    render_markdown,
    render_text,
)


def sglang_host_report(host, preflight=None, driver=None, sglang=None, gateway_out=None, gateway_in=None,
                       plan=None):
    return build_host_report(host, preflight or None, driver or None, sglang or None,
                             gateway_states(gateway_out or None, gateway_in or None), plan or None)


def sglang_report_markdown(reports, title="SGLang deployment report"):
    return render_markdown(list(reports), title)


def sglang_report_text(report):
    return render_text(report)


class FilterModule(object):
    """Deployment report filters."""

    def filters(self):
        return {
            "sglang_host_report": sglang_host_report,
            "sglang_report_markdown": sglang_report_markdown,
            "sglang_report_text": sglang_report_text,
        }
