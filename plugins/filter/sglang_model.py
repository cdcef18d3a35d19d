# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of the sglang_model role: its variables' rules, what it publishes for a host, and the revisions
sglang_server's units load.

The logic lives in ``plugin_utils/model_config.py`` and ``module_utils/model_store.py``; this file only adapts it
to Jinja. Documentation: one ``<filter name>.yml`` next to it per filter.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

# Helpers are imported inside the filters: Ansible imports every filter file of the collection to find any one
# filter, in each worker process, so an import up here would be paid by every task that uses any of them.


def sglang_model_validate(cfg):
    """The list of problems of the role's variables (empty when they are valid)."""
    if not isinstance(cfg, dict):
        raise AnsibleFilterError("sglang_model_validate: the input must be a dict of role variables, got %s"
                                 % type(cfg).__name__)
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.model_config import model_config_problems

    return model_config_problems(cfg)


def sglang_model_referenced(records, model_dir):
    """The revision directories under ``model_dir`` that the command line records load."""
    if not isinstance(records, (list, tuple)):
        raise AnsibleFilterError("sglang_model_referenced: the input must be a list of command line records, got %s"
                                 % type(records).__name__)
    if not isinstance(model_dir, str) or not model_dir.startswith("/"):
        raise AnsibleFilterError("sglang_model_referenced: model_dir must be an absolute path, got %r" % (model_dir,))
    from ansible_collections.llmserve.sglang.plugins.module_utils.model_store import referenced_revisions

    return referenced_revisions(records, model_dir)


def sglang_model_published(done, repo, requested, source, prewarm, resolved=None):
    """What the role publishes for a host once its revision is usable: ``{resolved, path, report}``."""
    if not isinstance(done, dict):
        raise AnsibleFilterError("sglang_model_published: the input must be the result of model_stage, got %s"
                                 % type(done).__name__)
    if resolved is not None and not isinstance(resolved, dict):
        raise AnsibleFilterError("sglang_model_published: resolved must be a dict (sglang_model_resolved), got %s"
                                 % type(resolved).__name__)
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.model_config import published_revision

    return published_revision(done, repo, requested, source, prewarm, resolved)


class FilterModule(object):
    """The sglang_model role's filters."""

    def filters(self):
        return {"sglang_model_validate": sglang_model_validate, "sglang_model_referenced": sglang_model_referenced,
                "sglang_model_published": sglang_model_published}
