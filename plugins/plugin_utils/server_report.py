# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The shape of ``sglang_server_report``, the host report the role sglang_server publishes.

The role sets it in several places (a failure before the swap, a failed or a finished deployment, the probe of an
unchanged server), each knowing only part of the values. ``server_report`` gives all of them one shape: every key
of ``FIELDS``, ``None`` where the task had no value. A key outside ``FIELDS`` is refused, so a misspelt key in a
task fails instead of quietly joining the report. Readers (deploy_report.build_host_report, the sglang_rollout role,
preflight.yml, the molecule verifiers) can so rely on every key being there.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

# key -> what it holds; every key defaults to None ("not known on this path")
FIELDS = {
    "unit": "the systemd unit of the server",
    "state": "what became of the server: serving, not ready, restart pending, rolled back, failed ...",
    "version": "the SGLang version the server reports (/server_info), else the installed one",
    "installed_version": "the SGLang version installed in the server's virtualenv",
    "tp_size": "the tensor parallel size (sglang_server_tp_size)",
    "speculative_requested": "the speculative decoding settings asked for (sglang_server_speculative)",
    "speculative_reported": "the speculative algorithm the server reports",
    "restarted": "whether the server restarted in this run",
    "weight_swap": "the model revision change: swap in place or restart (action, swapped_in_place, reasons), and the "
                   "update's outcome, message and seconds (None when the revision did not change)",
    "restart_pending": "whether a changed configuration waits for a restart (restart policy never)",
    "node_group": "the multi-node server this host is a node of",
    "node_rank": "this node's rank in its multi-node server",
    "metrics_url": "the server's /metrics address, when metrics are on",
    "ready": "whether the server answered its readiness check",
    "time_to_ready": "seconds from the new main process's start to readiness, after a restart",
    "status_history": "the readiness wait's statuses over time",
    "unit_times": "systemd's moments of the restart on the host's monotonic clock (the readiness wait's "
                  "unit_state.timestamps), with was_active and ready",
    "startup_metrics": "SGLang's start-up metrics read from /metrics after a restart (sglang_server_metrics)",
    "prewarm": "the weights read into the page cache before the host left rotation (warmed, seconds, bytes_read, "
               "note), when the prewarm entry point ran on this host in this run",
    "smoke": "the smoke test's outcome (passed, failed, skipped, not run ...)",
    "smoke_text": "the text the smoke test's generation returned",
    "p2p": "the GPU peer-to-peer setting the render step chose",
    "speculative_check": "the speculative check's numbers and verdict (verify.yml)",
    "speculative_disabled": "why and since when the speculative configuration stays off on this host",
    "error": "why the deployment or the readiness wait failed",
    "rollback_error": "why the rollback after a failed deployment failed as well",
    "journal": "the failed invocation's journal lines",
}


def server_report(fields):
    """``fields`` with every key of ``FIELDS`` (``None`` where missing), in ``FIELDS``' order.

    Raises ``ValueError`` naming a key that ``FIELDS`` does not know (and the known key it most resembles) and
    ``TypeError`` when ``fields`` is not a mapping.
    """
    if not isinstance(fields, Mapping):
        raise TypeError("sglang_server_report: expected a dict of report fields, got %s" % type(fields).__name__)
    unknown = sorted(str(key) for key in fields if key not in FIELDS)
    if unknown:
        hints = []
        for key in unknown:
            close = difflib.get_close_matches(key, FIELDS, n=1)
            hints.append("%r%s" % (key, " (did you mean %r?)" % close[0] if close else ""))
        raise ValueError("sglang_server_report: unknown key(s) %s; the report's keys are %s"
                         % (", ".join(hints), ", ".join(FIELDS)))
    return {key: fields.get(key) for key in FIELDS}
