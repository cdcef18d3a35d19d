# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin for llmserve.sglang.model_stage: a long download runs as an async job, with progress lines.

A download of a 244 GB model takes many minutes, and a task that says nothing for that long looks hung in an AWX
job log.  So, unless the task is in check mode, has ``async`` of its own (then Ansible polls it as usual) or the
revision is already in place (then the module only verifies, which a plain run does), the plugin starts the module
as an async job itself, asks ``async_status`` how it goes, and every ``progress_interval`` seconds prints

    <host>: <org>/<name>@<commit[:12]> 1.2 GiB / 244.0 GiB (0 %), 410.2 MiB/s, ETA 9m39s

from ``model_stage_progress`` (the bytes in the staging directory).  Polling starts fast (0.5 s, doubling up to the
interval), so a short job is not held up.  The task's result is the module's own; the job file is removed.  With
``throttle`` on the task, at most that many hosts download at once, since each host's task lasts as long as its
download.
"""

from __future__ import annotations

import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible.utils.vars import merge_hash

from ansible_collections.llmserve.sglang.plugins.module_utils.model_store import (
    ModelStoreError,
    check_repo,
    progress_line,
    staging_dir,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.values import as_int

display = Display()

MODULE = "llmserve.sglang.model_stage"
PROGRESS_MODULE = "llmserve.sglang.model_stage_progress"
DEFAULT_INTERVAL = 15
DEFAULT_TIMEOUT = 21600
DEFAULT_DIR = "/var/lib/llmserve-models"
# The module stops its download child at `timeout`; the job's own deadline comes later, so the module's clear
# message, not a killed job, reports a download that ran out of time.
ASYNC_SLACK = 600
FIRST_POLL = 0.5
MAX_POLL_ERRORS = 5
# Keys async_status adds to the module's result.
STATUS_KEYS = ("ansible_job_id", "started", "finished", "results_file", "stdout", "stderr", "stdout_lines",
               "stderr_lines", "erased")


def _int_option(args, name, default, minimum):
    """The option as a whole number of at least ``minimum``: ``15``, ``"15"`` and ``15.0`` are 15; a fraction
    (``2.5``), a boolean or any other text fails the task naming the option (int() would cut 2.5 to 2)."""
    value = args.get(name, default)
    number = as_int(value, floats=True)
    if number is None or number < minimum:
        raise AnsibleActionFail("%s: %r must be an integer of at least %d (a whole number of seconds, not a "
                                "fraction or a boolean)" % (name, value, minimum))
    return number


class Progress(object):
    """Turns (time, bytes) samples into progress lines: rate over the last interval, ETA from it."""

    def __init__(self, label, total):
        self.label = label
        self.total = total
        self.last = None

    def line(self, now, done):
        rate = None
        if self.last is not None and now > self.last[0]:
            rate = max(done - self.last[1], 0) / (now - self.last[0])
        self.last = (now, done)
        if self.total:
            return "%s %s" % (self.label, progress_line(done, self.total, rate))
        # a path source without a manifest: the total is known only once the source is hashed
        return "%s %s so far" % (self.label, progress_line(done, 0, rate).split(" / ", 1)[0])


class ActionModule(ActionBase):

    _supports_check_mode = True
    _supports_async = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        args = dict(self._task.args)
        interval = _int_option(args, "progress_interval", DEFAULT_INTERVAL, 1)
        timeout = _int_option(args, "timeout", DEFAULT_TIMEOUT, 1)
        args.pop("progress_interval", None)  # the plugin's, not the module's

        if self._task.async_val:
            # the task has async of its own: Ansible polls it (and the job's deadline is the task's)
            return merge_hash(result, self._execute_module(MODULE, module_args=args, task_vars=task_vars,
                                                           wrap_async=True))
        staging = self._staging(args)
        if self._task.check_mode or staging is None or args.get("fetch") is False:
            # check mode fetches nothing; bad input fails in the module
            return self._sync(result, args, task_vars)
        # one module call verifies a revision that is in place (a run that changes nothing costs no more); only a
        # missing one becomes an async job with progress lines
        first = self._sync(result, dict(args, fetch=False), task_vars)
        if first.get("failed") or not first.get("needs_fetch"):
            return first
        return self._staged(result, args, task_vars, staging, interval, timeout)

    # --- helpers -------------------------------------------------------------------------------

    @staticmethod
    def _staging(args):
        """The staging directory of the revision, or None when the module is to refuse the input itself."""
        try:
            org, name = check_repo(args.get("repo"))
            return staging_dir(args.get("dir") or DEFAULT_DIR, org, name, args.get("commit"))
        except ModelStoreError:
            return None

    def _sync(self, result, args, task_vars):
        try:
            return merge_hash(result, self._execute_module(MODULE, module_args=args, task_vars=task_vars))
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)

    def _async_dir(self):
        return self._remote_expand_user(self.get_shell_option("async_dir", default="~/.ansible_async"))

    def _launch(self, args, task_vars, timeout):
        self._task.async_val = timeout + ASYNC_SLACK
        try:
            return self._execute_module(MODULE, module_args=args, task_vars=task_vars, wrap_async=True)
        finally:
            # the task executor must not poll this job a second time after the plugin returns
            self._task.async_val = 0

    def _status(self, jid, async_dir, task_vars, mode="status"):
        return self._execute_module("ansible.legacy.async_status", task_vars=task_vars,
                                    module_args=dict(jid=jid, mode=mode, _async_dir=async_dir))

    def _staged_bytes(self, staging, task_vars):
        """Bytes in the staging directory; None when unknown, or when it is gone (renamed into place)."""
        answer = self._execute_module(PROGRESS_MODULE, module_args=dict(path=staging), task_vars=task_vars)
        if answer.get("failed") or not answer.get("exists"):
            return None
        return answer.get("bytes")

    def _staged(self, result, args, task_vars, staging, interval, timeout):
        launched = self._launch(args, task_vars, timeout)
        jid = launched.get("ansible_job_id")
        if not jid:
            # async_wrapper could not start the job (no async on this connection, no writable async_dir):
            # run the module in the foreground; there is no progress to show then
            display.warning("model_stage: could not start the download as an async job (%s); running it in the "
                            "foreground without progress lines" % (launched.get("msg") or "no job id"))
            return self._sync(result, args, task_vars)
        async_dir = self._async_dir()
        host = task_vars.get("inventory_hostname", "?")
        manifest = args.get("manifest") or []
        total = sum(entry.get("size", 0) for entry in manifest if isinstance(entry, dict)
                    and isinstance(entry.get("size"), int))
        progress = Progress("%s: %s@%s" % (host, args.get("repo"), str(args.get("commit"))[:12]), total)
        start = time.monotonic()
        deadline = start + timeout + ASYNC_SLACK + 60
        # the baseline: files kept from an interrupted run are not part of this run's rate
        progress.line(time.monotonic(), self._staged_bytes(staging, task_vars) or 0)
        last_line = time.monotonic()
        delay = FIRST_POLL
        errors = 0
        try:
            while True:
                time.sleep(delay)
                delay = min(delay * 2, interval)
                status = self._status(jid, async_dir, task_vars)
                if status.get("finished"):
                    break
                # a poll that failed on its way (a connection that dropped) is retried, as Ansible's own poll does
                errors = errors + 1 if status.get("failed") or status.get("unreachable") else 0
                if errors >= MAX_POLL_ERRORS:
                    raise AnsibleActionFail("model_stage: cannot ask the async job %s how it goes: %s" % (
                        jid, status.get("msg") or status.get("module_stderr") or "no answer"))
                now = time.monotonic()
                if now > deadline:
                    raise AnsibleActionFail("model_stage: the async job %s did not finish within %d s" % (
                        jid, int(now - start)))
                if now - last_line >= interval:
                    done = self._staged_bytes(staging, task_vars)
                    if done is not None:
                        display.display(progress.line(now, done))
                    last_line = now
        finally:
            try:
                self._status(jid, async_dir, task_vars, mode="cleanup")
            finally:
                self._remove_tmp_path(self._connection._shell.tmpdir)
        module_result = dict((key, value) for key, value in status.items() if key not in STATUS_KEYS)
        return merge_hash(result, module_result)
