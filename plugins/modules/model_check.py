#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: model_check
short_description: Validate the sglang_model configuration and check its revision in the host's model store
version_added: 0.1.0
description:
  - The first step of the C(llmserve.sglang.sglang_model) role on a host, as one task, so that a run which changes
    nothing costs each host one task with one module call.
  - First the role's variables (O(config)) and the ranges of its numeric variables (O(ranges)) are checked on the
    controller against the model store's rules. Any broken rule fails the task with every problem at once, each
    naming its C(sglang_model_*) variable; the host is not contacted.
  - Then a pinned commit (40 hex digits) is checked in the host's store by M(llmserve.sglang.model_stage) with
    C(fetch=false), which verifies a revision in place against the record of its last verification and fetches
    nothing. A branch or tag name must be resolved on the hub first, so the task is skipped for it.
  - When the revision is in place (neither RV(needs_fetch) nor RV(needs_manifest)), RV(published) holds what the
    role publishes for the host.
  - This module is only documentation; the work is done by the action plugin of the same name on the controller,
    which runs M(llmserve.sglang.model_stage) on the host.
author: llmserve developers (@llmserve)
attributes:
  check_mode:
    support: full
    details:
      - The check in the store writes nothing in check mode (retention reports what it would remove).
options:
  config:
    description:
      - The role's variables without the C(sglang_model_) prefix, as the role's C(__sglang_model_cfg) holds them
        (C(repo), C(revision), C(dir), C(source), C(source_path), C(python), C(verify), C(group), C(allow_pickle),
        C(prewarm) and the rest that C(llmserve.sglang.sglang_model_validate) checks).
    type: dict
    required: true
  ranges:
    description: Variable name to C([value, minimum, maximum]) for the numeric variables (C(llmserve.sglang.range_problems)).
    type: dict
    default: {}
  publish:
    description:
      - When the revision is in place, also set the host variables C(sglang_model_resolved), C(sglang_model_path) and
        C(sglang_model_report) from RV(published), as M(ansible.builtin.set_fact) would (not as facts, so nothing
        reaches a fact cache); RV(published_as_vars) says whether it did.
      - Needs ansible-core 2.21 or later (an action's host variables). On an older ansible-core nothing is set and
        the caller publishes RV(published) itself; the role does so with a M(ansible.builtin.set_fact) task.
    type: bool
    default: false
  store:
    description: Further options of the check in the store, passed to M(llmserve.sglang.model_stage).
    type: dict
    default: {}
    suboptions:
      keep:
        description: Revisions to keep (M(llmserve.sglang.model_stage)'s O(llmserve.sglang.model_stage#module:keep)).
        type: int
      unit_records:
        description: Directory of sglang_server's live command line records.
        type: path
      good_records:
        description: Directory of sglang_server's last good command line records.
        type: path
      allow_remote_code:
        description: Whether the model may ship code of its own (SGLang's C(--trust-remote-code)).
        type: bool
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - llmserve.sglang.attributes
  - llmserve.sglang.attributes.controller_action
seealso:
  - module: llmserve.sglang.model_stage
"""

EXAMPLES = r"""
- name: Validate the configuration and check the pinned revision in the store
  llmserve.sglang.model_check:
    config:
      repo: Qwen/Qwen3.5-122B-A10B
      revision: 0123456789abcdef0123456789abcdef01234567
      hub_endpoint: ""
      source: hub
      source_path: ""
      dir: /var/lib/llmserve-models
      allow_floating_revision: false
      allow_pickle: false
      verify: changed
      python: /opt/llmserve-model-venv/bin/python
      venv: false
      venv_path: /opt/llmserve-model-venv
      install: pip
      wheelhouse: ""
      hub_version: 1.33.0
      prewarm: auto
      prewarm_margin: 0.1
      group: sglang
    ranges:
      sglang_model_keep: [2, 1, 1000]
    store:
      keep: 2
      unit_records: /etc/sglang
      good_records: /var/lib/llmserve-sglang
  register: model_in_store

- name: The same, and set sglang_model_path and the rest for the host when the revision is in place
  llmserve.sglang.model_check:
    config: "{{ __sglang_model_cfg }}"
    publish: true
  register: model_in_store
"""

RETURN = r"""
problems:
  description: The broken rules, each naming its variable.
  returned: failure of the validation
  type: list
  elements: str
  sample: ["sglang_model_keep: must be an integer from 1 to 1000, got 0"]
published:
  description: What the role publishes for the host when the revision is in place.
  returned: when the revision was verified in place
  type: dict
  contains:
    resolved:
      description: The revision (C(sglang_model_resolved)).
      type: dict
    path:
      description: The revision's directory (C(sglang_model_path)).
      type: str
    report:
      description: The model report (C(sglang_model_report)).
      type: dict
published_as_vars:
  description: Whether the host variables were set from RV(published) (O(publish) on ansible-core 2.21 or later).
  returned: when the revision was verified in place
  type: bool
  sample: true
path:
  description: The revision's directory (the rest of M(llmserve.sglang.model_stage)'s return values come too).
  returned: when the store was checked
  type: str
  sample: /var/lib/llmserve-models/Qwen--Qwen3.5-122B-A10B/0123456789abcdef0123456789abcdef01234567
needs_fetch:
  description: Whether the revision is missing from the store.
  returned: when the store was checked
  type: bool
  sample: false
needs_manifest:
  description: Whether the revision is in place but its record cannot stand in for the hub's answer.
  returned: when the store was checked
  type: bool
  sample: false
"""
