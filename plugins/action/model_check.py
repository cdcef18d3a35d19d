# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin for llmserve.sglang.model_check: the sglang_model role's first step on a host, in one task.

1. The role's variables against the model store's rules, on the controller (``model_config_problems`` and
   ``range_problems``): any broken rule fails the task naming every variable, and nothing on the host is touched.
2. A pinned commit is checked in the host's store by llmserve.sglang.model_stage with ``fetch=false`` (one module
   call; a branch or tag name must be resolved on the hub first, so the check is skipped).
3. When the revision is in place, the result carries ``published``: what the role publishes for the host
   (``published_revision``), so that a run which changes nothing needs no further templating on the host's behalf.

Why one task: on a fleet a run that changes nothing must cost little per host, and every task costs each host a
worker process and a round of templating whether it does anything or not (docs/benchmarks.md).
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.vars import merge_hash

try:
    # ansible-core 2.21 and later: an action may set host variables as set_fact does
    from ansible.plugins.action import VariableLayer
except ImportError:  # ansible-core 2.20: the role publishes with a set_fact task instead
    VariableLayer = None

from ansible_collections.llmserve.sglang.plugins.module_utils.model_store import is_commit
from ansible_collections.llmserve.sglang.plugins.plugin_utils.model_config import (
    model_config_problems,
    published_revision,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.ranges import RangeSpecError, range_problems

MODULE = "llmserve.sglang.model_stage"
# what the role publishes for a host (publish.yml sets the same three on a host that fetched)
PUBLISHED_VARIABLES = (("sglang_model_resolved", "resolved"), ("sglang_model_path", "path"),
                       ("sglang_model_report", "report"))
# model_stage options the check takes from the role's configuration as they are
_FROM_CONFIG = (("repo", "repo"), ("commit", "revision"), ("dir", "dir"), ("source", "source"),
                ("verify", "verify"), ("group", "group"), ("allow_pickle", "allow_pickle"))
# model_stage options the check passes on from ``store``
_STORE_OPTIONS = ("keep", "unit_records", "good_records", "allow_remote_code")


def check_args(config, store):
    """The model_stage arguments of the check in the store (``fetch=false``: nothing is fetched)."""
    args = dict((option, config.get(key)) for option, key in _FROM_CONFIG)
    if config.get("source") == "path":
        args["source_path"] = config.get("source_path")
    elif config.get("python"):
        args["python"] = config.get("python")
    for option in _STORE_OPTIONS:
        if store.get(option) is not None:
            args[option] = store[option]
    args["fetch"] = False
    return args


class ActionModule(ActionBase):

    _supports_check_mode = True
    _supports_async = False
    _VALID_ARGS = frozenset(("config", "ranges", "store", "publish"))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        config = self._task.args.get("config")
        if not isinstance(self._task.args.get("publish", False), bool):
            raise AnsibleActionFail("model_check: publish must be true or false")
        ranges = self._task.args.get("ranges") or {}
        store = self._task.args.get("store") or {}
        for name, value in (("config", config), ("ranges", ranges), ("store", store)):
            if not isinstance(value, dict):
                raise AnsibleActionFail("model_check: %s must be a dict, got %s" % (name, type(value).__name__))
        try:
            problems = model_config_problems(config) + range_problems(ranges)
        except RangeSpecError as exc:
            raise AnsibleActionFail("model_check: ranges: %s" % exc)
        if problems:
            result.update(failed=True, problems=problems,
                          msg="the sglang_model configuration breaks %d rule(s), nothing on the host was changed: %s"
                              % (len(problems), "; ".join(problems)))
            return result
        revision = config.get("revision")
        if not is_commit(revision):
            # a branch or tag name (allowed by sglang_model_allow_floating_revision): the hub resolves it first
            result.update(skipped=True, skip_reason="%r is resolved on the hub before the store is checked"
                                                    % (revision,))
            return result
        try:
            checked = merge_hash(result, self._execute_module(MODULE, module_args=check_args(config, store),
                                                              task_vars=task_vars))
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        if checked.get("failed") or checked.get("needs_fetch") or checked.get("needs_manifest"):
            return checked
        published = published_revision(checked, config.get("repo"), revision, config.get("source"),
                                       config.get("prewarm"))
        checked["published"] = published
        checked["published_as_vars"] = False
        if VariableLayer is not None and self._task.args.get("publish", False):
            # the host's variables as set_fact would set them (not facts: nothing reaches a fact cache), so that a
            # host that holds the revision needs no publishing task of its own
            self.register_host_variables(dict((name, published[key]) for name, key in PUBLISHED_VARIABLES),
                                         VariableLayer.EPHEMERAL_FACT)
            checked["published_as_vars"] = True
        return checked
