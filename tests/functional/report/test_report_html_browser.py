# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""report.html in a real browser: headless Chromium from Debian (chromium-headless-shell) loads the run report that
the sglang_rollout role writes, and the test reads the DOM the browser built.

The report comes from a real run on localhost: ansible-playbook runs the iommu_preflight role on each host of a
demo-like inventory (host state from a fixture tree, the P2P test is the shipped p2p_check.py on the stand-in CUDA
runtime, with a broken pair on one host and the test off on another), the host report is built by the role's own
filters from that and from server, gateway and model results in the shape the roles publish, and the sglang_rollout role's
report entry point writes report.json, report.md and report.html in one module call. One host has a hostile
inventory name; a second report of the same run leaves it out, for the screenshot in the README.

``LLMSERVE_REPORT_SCREENSHOT=docs/images/report-html.png`` writes that screenshot (see the README's "Run report").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser

import pytest
import yaml

from p2p_standin_helpers import ROOT, Standin, build_standin  # tests/functional/p2p_check (see conftest.py)

FIXTURE = 'blackwell4_amd_snp_dmafq'
A, B, C, D = '0000:01:00.0', '0000:41:00.0', '0000:81:00.0', '0000:c1:00.0'
HOSTILE = '<img src=x onerror="document.title=\'pwned\'">'
DEMO = ['llmserve-demo-debian12', 'llmserve-demo-debian13', 'gpu-node-03']
REVISION = '0123456789abcdef0123456789abcdef01234567'
RUN_ID = 'run-20261202T101500Z-demo'
BROWSERS = ('chromium-headless-shell', 'chromium')


def _browser():
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    # tools/devenv.sh installs it for make test (as root); make check installs no system package
    if os.geteuid() != 0 or os.environ.get('LLMSERVE_SYSTEM_PACKAGES') == 'no':
        pytest.skip('no headless Chromium (Debian package chromium-headless-shell; make test installs it)')
    pytest.fail('no headless Chromium: tools/devenv.sh (make venv, make test) installs chromium-headless-shell')


def _browse(browser, page, tmp_path, *args):
    """Run the browser on ``page``; returns its standard output. As root Chromium runs only without its sandbox."""
    argv = [browser, '--headless', '--disable-gpu', '--no-first-run', '--hide-scrollbars',
            '--user-data-dir=%s' % (tmp_path / 'chromium-profile')]
    if os.geteuid() == 0:
        argv.append('--no-sandbox')
    done = subprocess.run(argv + list(args) + ['file://%s' % page], capture_output=True, text=True, check=False,
                          timeout=120, env=dict(os.environ, HOME=str(tmp_path)))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done.stdout


VOID = ('area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'source', 'track', 'wbr')


class Dom(HTMLParser):
    """The elements of the DOM Chromium dumped, in document order: tag, attributes, text, and where each ends."""

    def __init__(self, text):
        super().__init__()
        self.elements, self._open = [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        element = {'tag': tag, 'attrs': dict(attrs), 'text': '', 'start': len(self.elements), 'end': None}
        self.elements.append(element)
        if tag not in VOID:
            self._open.append(element)

    def handle_endtag(self, tag):
        while self._open:
            element = self._open.pop()
            element['end'] = len(self.elements)
            if element['tag'] == tag:
                break

    def handle_data(self, data):
        for element in self._open:
            element['text'] += data

    def find(self, within=None, **attrs):
        elements = self.elements if within is None else self.elements[within['start'] + 1:within['end']]
        return [e for e in elements if all(e['attrs'].get(k) == v if v is not True else k in e['attrs']
                                           for k, v in attrs.items())]

    def title(self):
        return [e['text'] for e in self.elements if e['tag'] == 'title'][0]


def _hosts(tree, standin_dir, kernel_log):
    def env(**standin):
        made = Standin(standin_dir)
        return dict((key, value) for key, value in made.env(gpus=[A, B, C, D], cudart=None, **standin).items()
                    if key.startswith('CUDART_STANDIN_') or key == 'PYTHONPATH')

    def server(**fields):
        return dict({'state': 'serving', 'version': '0.5.23', 'ready': True, 'restarted': True, 'tp_size': 4,
                     'time_to_ready': 48.6, 'smoke': 'passed', 'p2p': 'on'}, **fields)

    def drained(seconds):
        return {'results': [{'gw': 'gateway-1', 'ansible_loop_var': 'gw', 'drained': True,
                             'drain_seconds': seconds, 'in_flight': {'at_removal': 3}}]}

    def back(**result):
        return {'results': [dict({'gw': 'gateway-1', 'ansible_loop_var': 'gw'}, **result)]}

    model = {'repo': 'Qwen/Qwen3-8B', 'revision': REVISION, 'bytes': 16 * 1024 ** 3, 'files': 12, 'changed': False,
             'verified': 'size', 'requested': 'main'}
    common = {'iommu_preflight_root': tree, 'iommu_preflight_p2p_test': True, 'model_report': model,
              'iommu_preflight_p2p_cudart': Standin(standin_dir).lib, 'iommu_preflight_kernel_log': kernel_log}
    return {
        # the two GPUs of NUMA node 0 (four span two nodes: a preflight warning)
        DEMO[0]: dict(common, standin_env=env(), server_fields=server(tp_size=2), iommu_preflight_gpus=[A, B],
                      gateway_out=drained(4.2), gateway_in=back(healthy=True, wait_seconds=2.5)),
        # a broken pair: the server was let run with P2P off (iommu_preflight_p2p_required false)
        DEMO[1]: dict(common, standin_env=env(drop='%s>%s' % (B, C)),
                      server_fields=server(p2p='off', time_to_ready=51.3),
                      gateway_out=drained(6.8), gateway_in=back(healthy=True, wait_seconds=3.1)),
        # P2P not tested; the new configuration never got ready, the host was rolled back and stays out
        DEMO[2]: dict(common, standin_env=env(), iommu_preflight_p2p_test=False,
                      server_fields=server(state='rolled back', ready=False, time_to_ready=None, smoke='not run',
                                           error='not ready within 600 s (last status: 503)'),
                      gateway_out=drained(3.9), gateway_in={'results': []}),
        # a hostile inventory name: only the preflight ran
        HOSTILE: dict(common, standin_env=env(), iommu_preflight_p2p_test=False, model_report={}),
    }


def _run_playbook(tmp_path, hosts):
    reports = tmp_path / 'reports'
    inventory = {'all': {
        'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable},
        'hosts': {'localhost': {'sglang_rollout_run_id': RUN_ID, 'sglang_rollout_report_run_dir': str(reports / 'all')}},
        'children': {'sglang_servers': {'hosts': hosts}},
    }}
    preflight_vars = {
        'iommu_preflight_fail_on_error': False,
        'iommu_preflight_p2p_python': sys.executable,
        'iommu_preflight_p2p_timeout': 20,
        'iommu_preflight_p2p_buffer_mib': 1,
    }
    play = {
        'name': 'A demo-like run, reported',
        'hosts': 'sglang_servers',
        'gather_facts': False,
        'environment': '{{ standin_env }}',
        'tasks': [
            {'name': 'Preflight', 'ansible.builtin.include_role': {'name': 'llmserve.sglang.iommu_preflight'},
             'vars': preflight_vars},
            {'name': 'What the server, gateway and model stages published',
             'ansible.builtin.set_fact': {
                 'sglang_server_report': '{{ server_fields | llmserve.sglang.sglang_server_report }}',
                 'sglang_rollout_gateway_out': '{{ gateway_out }}', 'sglang_rollout_gateway_in': '{{ gateway_in }}',
                 'sglang_model_report': '{{ model_report }}'},
             'when': 'server_fields is defined'},
            {'name': 'Report every host', 'ansible.builtin.include_role': {
                'name': 'llmserve.sglang.sglang_rollout', 'tasks_from': 'report'}},
            {'name': 'A second report directory for the demo hosts alone', 'ansible.builtin.set_fact': {
                'sglang_rollout_report_run_dir': str(reports / 'demo')},
             'delegate_to': 'localhost', 'delegate_facts': True, 'run_once': True},
            {'name': 'Report the demo hosts', 'ansible.builtin.include_role': {
                'name': 'llmserve.sglang.sglang_rollout', 'tasks_from': 'report'},
             'vars': {'__sglang_rollout_report_hosts': DEMO}},
        ],
    }
    (tmp_path / 'hosts.yml').write_text(yaml.safe_dump(inventory, sort_keys=False), encoding='utf-8')
    (tmp_path / 'play.yml').write_text(yaml.safe_dump([play], sort_keys=False), encoding='utf-8')
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.environ['LLMSERVE_PYTEST_TREE'], ANSIBLE_NOCOLOR='1',
               ANSIBLE_HOME=str(tmp_path / 'home'), ANSIBLE_LOCALHOST_WARNING='false')
    done = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i',
                           str(tmp_path / 'hosts.yml'), str(tmp_path / 'play.yml')],
                          capture_output=True, text=True, env=env, check=False, timeout=600, cwd=str(tmp_path))
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    return reports


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    browser = _browser()
    tmp_path = tmp_path_factory.mktemp('report-html')
    tree = tmp_path / 'fixtures'
    subprocess.run([sys.executable, os.path.join(ROOT, 'tests', 'fixtures', 'hosts', 'materialize.py'), str(tree),
                    FIXTURE], check=True, capture_output=True, timeout=120)
    # a saved kernel log of the boot, without a DMA fault or an Xid
    kernel_log = tmp_path / 'kern.log'
    kernel_log.write_text('[    0.000000] Linux version 6.12.0 (demo)\n', encoding='utf-8')
    reports = _run_playbook(tmp_path, _hosts(str(tree / FIXTURE), build_standin(tmp_path_factory), str(kernel_log)))
    return browser, tmp_path, reports


def test_the_report_of_a_real_run_reads_right_in_chromium(run):
    browser, tmp_path, reports = run
    page = reports / 'all' / 'report.html'
    report = json.loads((reports / 'all' / 'report.json').read_text())
    assert [entry['host'] for entry in report['hosts']] == DEMO + [HOSTILE]
    dom_text = _browse(browser, page, tmp_path, '--dump-dom')
    dom = Dom(dom_text)

    # the hostile name is text: no element came of it, and its handler never changed the title
    assert dom.title() == 'SGLang deployment report %s' % RUN_ID
    assert [e for e in dom.elements if e['tag'] in ('img', 'script')] == []
    assert '&lt;img src=x onerror="document.title=\'pwned\'"&gt;' in dom_text

    # every host with its verdict
    rows = dict((e['attrs']['data-host'], e) for e in dom.find(**{'data-host': True}) if e['tag'] == 'tr'
                and 'data-gateway' not in e['attrs'])
    assert list(rows) == DEMO + [HOSTILE]
    verdicts = dict((host, dom.find(row, **{'data-verdict': True})[0]['attrs']['data-verdict'])
                    for host, row in rows.items())
    assert verdicts == {DEMO[0]: 'ok', DEMO[1]: 'warn', DEMO[2]: 'fail', HOSTILE: 'warn'}
    assert 'P2P test failed' in rows[DEMO[1]]['text']
    assert 'not ready within 600 s (last status: 503)' in dom_text

    # the P2P grids: every pair of the run's P2P test where it ran, a word or a mark in each cell besides its colour
    grids = dict((e['attrs']['data-host'], e) for e in dom.find(**{'data-host': True}) if e['tag'] == 'figure')
    assert list(grids) == DEMO + [HOSTILE]

    def cells(host):
        return dict((e['attrs']['data-pair'], (e['attrs']['data-state'], dom.find(e)[-1]['text']))
                    for e in dom.find(grids[host], **{'data-pair': True}))

    healthy = cells(DEMO[0])
    assert len(healthy) == 4
    assert sorted(set(healthy.values())) == [('none', '\u2013'), ('ok', 'ok')]
    broken = cells(DEMO[1])
    assert broken.pop('%s->%s' % (B, C)) == ('fail', 'fail')
    assert sorted(set(broken.values())) == [('none', '\u2013'), ('ok', 'ok')]
    untested = cells(DEMO[2])
    assert sorted(set(untested.values())) == [('none', '\u2013'), ('untested', '?')]

    # the rollout: a row per host, five phases each
    timeline = dict((e['attrs']['data-host'], [(p['attrs']['data-phase'], p['attrs']['data-state'])
                                               for p in dom.find(e, **{'data-phase': True})])
                    for e in dom.find(**{'class': 'timeline-row'}))
    assert timeline == {
        DEMO[0]: [('drain', 'done'), ('stop', 'done'), ('start', 'done'), ('ready', 'done'), ('rejoin', 'done')],
        DEMO[1]: [('drain', 'done'), ('stop', 'done'), ('start', 'done'), ('ready', 'done'), ('rejoin', 'done')],
        DEMO[2]: [('drain', 'done'), ('stop', 'done'), ('start', 'done'), ('ready', 'fail'), ('rejoin', 'fail')],
        HOSTILE: [('drain', 'skipped'), ('stop', 'unknown'), ('start', 'unknown'), ('ready', 'unknown'),
                  ('rejoin', 'skipped')],
    }
    assert '\u2713 4.2 s' in dom_text and '\u2713 48.6 s' in dom_text

    # the gateway states and the model revision
    gateways = dict((e['attrs']['data-host'], e['text']) for e in dom.find(**{'data-gateway': 'gateway-1'}))
    assert sorted(gateways) == sorted(DEMO)
    assert '\u2713 in' in gateways[DEMO[0]] and '\u2717 out' in gateways[DEMO[2]]
    assert [e['text'] for e in dom.find(**{'class': 'revision'})] == ['Qwen/Qwen3-8B@%s' % REVISION]


def test_screenshot_of_the_demo_report(run):
    browser, tmp_path, reports = run
    page = reports / 'demo' / 'report.html'
    assert HOSTILE not in json.dumps(json.loads((reports / 'demo' / 'report.json').read_text()))
    target = os.environ.get('LLMSERVE_REPORT_SCREENSHOT') or str(tmp_path / 'report-html.png')
    _browse(browser, page, tmp_path, '--window-size=1100,1500', '--screenshot=%s' % os.path.abspath(target))
    with open(target, 'rb') as png:
        assert png.read(8) == b'\x89PNG\r\n\x1a\n'
    assert 20000 < os.path.getsize(target) < 300 * 1024
