# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The next-boot verdict in what a run leaves: the host report, its text and HTML, the AWX custom stats and the
node exporter textfile (built from a GPU host fixture with Ubuntu 24.04 boot files)."""

from __future__ import annotations

import shutil

import pytest

from ansible_collections.llmserve.sglang.plugins.filter.deploy_report import (
    sglang_host_metrics,
    sglang_host_report,
    sglang_host_stats,
    sglang_report_html,
    sglang_report_text,
)
from ansible_collections.llmserve.sglang.plugins.module_utils.textfile_metrics import render
from ansible_collections.llmserve.sglang.plugins.modules import gpu_host_facts
from ansible_collections.llmserve.sglang.plugins.plugin_utils import preflight_rules as rules
from ansible_collections.llmserve.sglang.tests.fixtures.hosts import materialize
from ansible_collections.llmserve.sglang.tests.fixtures.next_boot import trees
from ansible_collections.llmserve.sglang.tests.unit.prometheus_text import parse as parse_families

pytestmark = pytest.mark.skipif(shutil.which('zstd') is None, reason='the zstd tool is not installed')


class FakeModule(object):
    def fail_json(self, **kwargs):
        raise AssertionError(kwargs)

    def get_bin_path(self, name):
        raise AssertionError('no command for a fixture root: %s' % name)


def parse(text):
    """``{(name, sorted label pairs): value}`` as prometheus_client reads the textfile."""
    samples = {}
    for family in parse_families(text):
        for name, labels, value, _timestamp in family['samples']:
            samples[(name, tuple(sorted(labels.items())))] = value
    return samples


def _report(tmp_path, policy='fail', **switches):
    root = str(tmp_path / 'host')
    materialize.build('blackwell4_amd_snp_dmafq', root)
    trees.ubuntu2404(root, **switches)
    facts = gpu_host_facts.gather(FakeModule(), root, None)
    return sglang_host_report('gpu1', rules.evaluate(facts, next_boot=policy)['report'])


def test_unsafe_next_boot_in_report_text_stats_html_and_metrics(tmp_path):
    report = _report(tmp_path, next_module=False)
    nb = report['next_boot']
    assert nb['verdict'] == 'error' and nb['kernel'] == '6.8.0-62-generic' and nb['policy'] == 'fail'
    assert nb['checks'] == ['driver-packages-unheld', 'next-boot-no-module']
    assert report['stages']['preflight'] == 'fail'

    text = '\n'.join(sglang_report_text(report))
    assert 'Next boot ' in text and 'error: kernel 6.8.0-62-generic (grub_default)' in text
    assert 'Next boot error  ' in text and 'next-boot-no-module: kernel 6.8.0-62-generic' in text
    assert 'Next boot warning' in text

    stats = sglang_host_stats(report)
    assert stats['next_boot'] == {'verdict': 'error', 'kernel': '6.8.0-62-generic',
                                  'checks': ['driver-packages-unheld', 'next-boot-no-module']}

    html = sglang_report_html([report], 'run-1')
    assert 'next-boot-no-module: kernel 6.8.0-62-generic' in html

    samples = parse(render(sglang_host_metrics(report, 'gpu')))
    assert samples[('llmserve_next_boot_ok', ())] == 0
    assert samples[('llmserve_next_boot_finding', (('check', 'next-boot-no-module'), ('severity', 'error')))] == 1
    assert samples[('llmserve_next_boot_finding', (('check', 'driver-packages-unheld'),
                                                   ('severity', 'warning')))] == 1


def test_warn_policy_keeps_the_preflight_passing_but_html_says_unsafe(tmp_path):
    report = _report(tmp_path, policy='warn', next_module=False, held=True)
    assert report['stages']['preflight'] == 'warn'
    assert report['next_boot']['verdict'] == 'error'
    html = sglang_report_html([report], 'run-1')
    assert 'next boot unsafe' in html
    assert 'Next boot error (policy warn)' in '\n'.join(sglang_report_text(report))
    samples = parse(render(sglang_host_metrics(report, 'gpu')))
    assert samples[('llmserve_next_boot_ok', ())] == 0


def test_safe_next_boot_and_ignored_next_boot(tmp_path):
    report = _report(tmp_path, held=True)
    assert report['next_boot']['verdict'] == 'ok'
    samples = parse(render(sglang_host_metrics(report, 'gpu')))
    assert samples[('llmserve_next_boot_ok', ())] == 1
    assert not [key for key in samples if key[0] == 'llmserve_next_boot_finding']
    ignored = _report(tmp_path / 'again', policy='ignore', held=True)
    assert 'next_boot' not in ignored
    assert not [s for s in sglang_host_metrics(ignored, 'gpu') if s['name'].startswith('llmserve_next_boot')]
    assert 'next_boot' not in sglang_host_stats(ignored)
