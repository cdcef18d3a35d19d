# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark helper callback: writes one JSON line per finished task (wall time of the result).

Enabled only by tools/bench/bench_wait.py and bench_window.py (ANSIBLE_CALLBACKS_ENABLED=bench_times), which set
BENCH_TIMES_FILE; also one line per play start. Records when the controller received each task result, so "server ready ->
task returned" can be measured on one clock.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: bench_times
type: aggregate
short_description: Record task end times for the wait benchmark
description:
  - Appends a JSON line per task result to the file named by the E(BENCH_TIMES_FILE) environment variable.
requirements:
  - enabled with ANSIBLE_CALLBACKS_ENABLED=bench_times
"""

import json
import os
import time

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "bench_times"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self.path = os.environ.get("BENCH_TIMES_FILE")
        self.retries = 0

    def _write(self, result, outcome):
        if not self.path:
            return
        res = result._result
        record = {
            "t": time.time(),
            "task": result._task.get_name(),
            "outcome": outcome,
            "retries_seen": self.retries,
            "attempts": res.get("attempts"),
            "status": res.get("status"),
            "ready": res.get("ready"),
            "stdout_lines": len(res.get("stdout_lines") or []),
            "msg": str(res.get("msg", ""))[:300],
            "elapsed": res.get("elapsed"),
            "main_exit_seconds_ago": (res.get("unit_state") or {}).get("main_exit_seconds_ago"),
            "status_history": res.get("status_history"),
        }
        with open(self.path, "a") as handle:
            handle.write(json.dumps(record) + "\n")
        self.retries = 0

    def v2_playbook_on_play_start(self, play):
        # bench_window.py times a run's change plays by their starts
        if self.path:
            with open(self.path, "a") as handle:
                handle.write(json.dumps({"t": time.time(), "play": play.get_name(), "outcome": "play_started"}) + "\n")

    def v2_playbook_on_task_start(self, task, is_conditional):
        if self.path:
            with open(self.path, "a") as handle:
                handle.write(json.dumps({"t": time.time(), "task": task.get_name(), "outcome": "started"}) + "\n")

    def v2_runner_retry(self, result):
        self.retries += 1

    def v2_runner_on_ok(self, result):
        self._write(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._write(result, "failed")
