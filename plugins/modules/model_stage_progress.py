#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: model_stage_progress
short_description: How many bytes a model revision's staging directory holds so far
version_added: 0.1.0
description:
  - Adds up the sizes of the regular files under O(path), the partial C(*.incomplete) files of C(huggingface_hub)
    included, without following links.
  - The action plugin of M(llmserve.sglang.model_stage) runs it between two looks at the async job, to print how far
    a download has come. Reads only; always C(changed=false).
author: llmserve developers (@llmserve)
attributes:
  check_mode:
    details: Runs as usual.
options:
  path:
    description: The staging directory. One that does not exist (yet, or no more) holds V(0) bytes.
    type: path
    required: true
seealso:
  - module: llmserve.sglang.model_stage
extends_documentation_fragment: [ansible.builtin.action_common_attributes, llmserve.sglang.attributes]
"""

EXAMPLES = r"""
- name: How far has the download come
  llmserve.sglang.model_stage_progress:
    path: /var/lib/llmserve-models/Qwen--Qwen3.5-122B-A10B/.staging-0123456789abcdef0123456789abcdef01234567
  register: progress
"""

RETURN = r"""
bytes:
  description: Bytes in regular files under O(path).
  returned: always
  type: int
  sample: 1288490188
files:
  description: Number of those files.
  returned: always
  type: int
  sample: 12
exists:
  description: Whether O(path) is a directory.
  returned: always
  type: bool
  sample: true
"""

import os
import stat

from ansible.module_utils.basic import AnsibleModule


def tally(path):
    """``(bytes, files)`` of the regular files under ``path``; files that vanish meanwhile are skipped."""
    total = count = 0
    for top, _dirs, files in os.walk(path):
        for name in files:
            try:
                info = os.lstat(os.path.join(top, name))
            except OSError:
                continue  # renamed or removed by the download while we looked
            if stat.S_ISREG(info.st_mode):
                total += info.st_size
                count += 1
    return total, count


def main():
    module = AnsibleModule(argument_spec=dict(path=dict(type="path", required=True)), supports_check_mode=True)
    path = module.params["path"]
    exists = os.path.isdir(path) and not os.path.islink(path)
    total, count = tally(path) if exists else (0, 0)
    module.exit_json(changed=False, bytes=total, files=count, exists=exists)


if __name__ == "__main__":
    main()
