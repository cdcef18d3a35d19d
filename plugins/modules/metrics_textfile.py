#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: metrics_textfile
short_description: Write llmserve metrics as a node exporter textfile
version_added: 0.1.0
description:
  - Writes O(metrics) in the Prometheus text exposition format to O(path), for the textfile collector of the
    Prometheus node exporter (C(--collector.textfile.directory); Debian's C(prometheus-node-exporter) reads
    C(/var/lib/prometheus/node-exporter)).
  - Each metric gets one C(# HELP) and one C(# TYPE) line; label values are escaped; metrics and samples are sorted,
    so the same metrics always give the same bytes. The file is replaced only when its content (or mode) differs,
    so a run that changes nothing reports C(changed=false).
  - The new content goes to a temporary file in the same directory (its name starts with a dot and does not end in
    C(.prom), so the exporter never reads it) and is renamed over O(path); the exporter sees the old file or the new
    one, never half of either. The file gets mode C(0644), which the exporter's own account can read.
  - Creates nothing outside the directory of O(path), and not the directory itself.
  - "Refuses, before anything is written and naming the metric: a name without the C(llmserve_) prefix or that is no
    Prometheus name, a label name that is none, a value that is not a finite number (booleans, text, NaN and
    infinities), two samples with the same name and labels, two different help texts or types for one metric."
author: llmserve developers (@llmserve)
attributes:
  check_mode:
    details: Reports what would change; writes nothing.
  diff_mode:
    support: full
    details: RV(diff) is a unified diff of the file, with the mode in the headers when it changes.
options:
  path:
    description:
      - The textfile, an absolute path whose file name ends in C(.prom) (the exporter reads no other) and has only
        letters, digits, C(_), C(-) and C(.), not starting with a dot.
      - The directory must exist. A link or anything but a regular file at O(path) is refused.
    type: path
    required: true
  metrics:
    description:
      - The samples. The samples of one metric (same name) share its help text and type.
      - "Each sample is a dict: C(name) (the metric name, starting with C(llmserve_)), C(value) (a finite number:
        an integer or a float, or a string holding one), C(labels) (a dict of label names and values; values are
        written as text, booleans as C(true)/C(false), null as an empty string), C(help) (the metric's help text, given
        by at least one of its samples) and C(type) (V(gauge), the default, V(counter) or V(untyped)). No other key."
      - An empty list writes an empty file (the exporter then has none of these metrics from it).
    type: list
    elements: dict
    required: true
notes:
  - Samples carry no timestamp (the textfile collector refuses them); a metric that says when something happened
    holds a Unix time as its value.
  - Node exporter reads every C(*.prom) file of its directory. Several writers each keep their own file, so none of
    them rewrites the metrics of another; a metric must come from one file only.
seealso:
  - name: Node exporter textfile collector
    description: How node exporter reads C(*.prom) files.
    link: https://github.com/prometheus/node_exporter#textfile-collector
  - name: Prometheus text exposition format
    description: The format of the file.
    link: https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format
extends_documentation_fragment: [ansible.builtin.action_common_attributes, llmserve.sglang.attributes]
"""

EXAMPLES = r"""
- name: Write the run's outcome for node exporter
  become: true
  llmserve.sglang.metrics_textfile:
    path: /var/lib/prometheus/node-exporter/llmserve_run.prom
    metrics:
      - name: llmserve_last_run_success
        help: 1 when the last llmserve.sglang run on this host succeeded, 0 when it failed.
        value: 1
      - name: llmserve_last_run_timestamp_seconds
        help: Unix time at which the last llmserve.sglang run on this host ended.
        value: "{{ now(utc=true).timestamp() | int }}"

- name: The GPU health part of the host report as a textfile
  become: true
  llmserve.sglang.metrics_textfile:
    path: /var/lib/prometheus/node-exporter/llmserve_gpu.prom
    metrics: "{{ sglang_rollout_host_report | llmserve.sglang.sglang_host_metrics('gpu') }}"
"""

RETURN = r"""
path:
  description: The O(path).
  returned: always
  type: str
  sample: /var/lib/prometheus/node-exporter/llmserve_gpu.prom
metrics:
  description: The metric names written, sorted.
  returned: always
  type: list
  elements: str
  sample: [llmserve_gpu_xid_events, llmserve_iommu_dma_faults, llmserve_preflight_ok]
samples:
  description: The number of samples written.
  returned: always
  type: int
  sample: 9
written:
  description: Whether the content was written (false when it was already in place, and in check mode).
  returned: always
  type: bool
diff:
  description: With C(--diff), the file's unified diff (C(before_header), C(after_header), C(prepared)).
  returned: when diff mode is on
  type: dict
"""

import os
import re
import stat

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmserve.sglang.plugins.module_utils.atomic_file import write_text_atomic
from ansible_collections.llmserve.sglang.plugins.module_utils.file_diff import file_diff
from ansible_collections.llmserve.sglang.plugins.module_utils.textfile_metrics import MetricError, collect, render

PREFIX = "llmserve_"
MODE = 0o644
FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\.prom\Z")


def build_module():
    return AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', required=True),
            # checked by textfile_metrics (one message naming the metric for every mistake), not by suboptions
            metrics=dict(type='list', elements='dict', required=True),
        ),
        supports_check_mode=True,
    )


def check_path(path):
    """Why ``path`` cannot be the textfile (``None`` when it can)."""
    if not os.path.isabs(path):
        return 'path must be absolute, got %s' % path
    name = os.path.basename(path)
    if not FILE_NAME.match(name):
        return ('path %s: the file name must end in .prom (node exporter reads no other) and hold only letters, '
                'digits, _, - and ., not starting with a dot' % path)
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        return ('path %s: the directory %s does not exist; the module creates nothing but the file (install node '
                'exporter, or point the path at its --collector.textfile.directory)' % (path, directory))
    return None


def read_current(path):
    """``(content bytes or None, mode or None)`` of the file now; refuses a link or a non-regular file."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None, None
    if not stat.S_ISREG(info.st_mode):
        raise MetricError('path %s exists and is not a regular file (a link, a directory, ...); remove it first' % path)
    with open(path, 'rb') as handle:
        return handle.read(), stat.S_IMODE(info.st_mode)


def main():
    module = build_module()
    path = module.params['path']
    problem = check_path(path)
    if problem:
        module.fail_json(msg=problem)
    try:
        families = collect(module.params['metrics'], PREFIX)
        text = render(module.params['metrics'])
        before, mode = read_current(path)
    except MetricError as exc:
        module.fail_json(msg='metrics_textfile %s: %s' % (path, exc))
    except (IOError, OSError) as exc:
        module.fail_json(msg='path %s cannot be read: %s' % (path, exc))
    after = text.encode('utf-8')
    content_differs = before != after
    changed = content_differs or mode != MODE
    result = dict(path=path, metrics=sorted(families), written=False,
                  samples=sum(len(family['samples']) for family in families.values()))
    if changed and module._diff:
        result['diff'] = file_diff(path, before, after,
                                   before_attrs={'mode': '%04o' % mode} if mode is not None else None,
                                   after_attrs={'mode': '%04o' % MODE})
    if changed and not module.check_mode:
        try:
            if content_differs:
                write_text_atomic(path, text, '.%s.' % os.path.basename(path), mode=MODE)
                result['written'] = True
            else:
                os.chmod(path, MODE)
        except (IOError, OSError) as exc:
            module.fail_json(msg='path %s cannot be written: %s' % (path, exc))
    module.exit_json(changed=changed, **result)


if __name__ == '__main__':
    main()
