# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The iommu_preflight role's P2P tasks (tagged molecule-notest: the test hosts have no GPU) run for real with
ansible-playbook on localhost: the host state comes from a fixture tree (iommu_preflight_root), the P2P test is
the shipped p2p_check.py on the stand-in CUDA runtime, passed through iommu_preflight_p2p_cudart."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from p2p_standin_helpers import ROOT

FIXTURE = 'blackwell4_amd_snp_dmafq'  # a healthy host; its GPUs:
A, B, C, D = '0000:01:00.0', '0000:41:00.0', '0000:81:00.0', '0000:c1:00.0'
MARK = 'P2P-CASE '


def play(name, tree, standin, role_vars, standin_env):
    # PYTHONPATH: where a p2p_check.py without LLMSERVE_CUDART looks (see p2p_standin_helpers)
    env = dict((key, value) for key, value in standin.env(gpus=[A, B, C, D], cudart=None, **standin_env).items()
               if key.startswith('CUDART_STANDIN_') or key == 'PYTHONPATH')
    role_vars = dict({
        'iommu_preflight_root': tree,
        'iommu_preflight_fail_on_error': False,
        'iommu_preflight_p2p_test': True,
        'iommu_preflight_p2p_python': sys.executable,
        'iommu_preflight_p2p_cudart': standin.lib,
        'iommu_preflight_p2p_timeout': 20,
        'iommu_preflight_p2p_buffer_mib': 1,
    }, **role_vars)
    return {
        'name': name,
        'hosts': 'localhost',
        'gather_facts': False,
        'environment': env,
        'tasks': [
            {'name': 'Forget the last case',
             'ansible.builtin.set_fact': {'case_error': '', 'iommu_preflight_p2p': None, 'iommu_preflight_p2p_ok': None}},
            {'name': 'Run the role', 'block': [
                {'ansible.builtin.include_role': {'name': 'llmserve.sglang.iommu_preflight'}, 'vars': role_vars}],
             'rescue': [{'ansible.builtin.set_fact': {'case_error': '{{ ansible_failed_result.msg }}'}}]},
            {'name': 'Report the case', 'ansible.builtin.debug': {
                'msg': MARK + "{{ {'case': '%s', 'error': case_error, 'p2p': iommu_preflight_p2p, "
                              "'p2p_ok': iommu_preflight_p2p_ok, "
                              "'report': (iommu_preflight_report | default({})).get('p2p')} | to_json }}" % name}},
        ],
    }


def run_plays(tmp_path, plays, check=False):
    playbook = tmp_path / ('check.yml' if check else 'play.yml')
    playbook.write_text(yaml.safe_dump(plays, sort_keys=False), encoding='utf-8')
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.environ['LLMSERVE_PYTEST_TREE'], ANSIBLE_STDOUT_CALLBACK='json',
               ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false', ANSIBLE_NOCOLOR='1',
               ANSIBLE_HOME=str(tmp_path / 'home'), ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    argv = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,', '-c', 'local',
            str(playbook)] + (['--check'] if check else [])
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False, timeout=600)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    cases = {}
    for play_result in json.loads(done.stdout)['plays']:
        for task in play_result['tasks']:
            message = task['hosts'].get('localhost', {}).get('msg')
            if isinstance(message, str) and message.startswith(MARK):
                case = json.loads(message[len(MARK):])
                cases[case['case']] = case
    return cases


@pytest.fixture
def tree(tmp_path):
    target = tmp_path / 'hosts'
    subprocess.run([sys.executable, os.path.join(ROOT, 'tests', 'fixtures', 'hosts', 'materialize.py'), str(target),
                    FIXTURE], check=True, capture_output=True, timeout=120)
    return str(target / FIXTURE)


def test_role_runs_the_p2p_test_per_pair_and_on_one_gpu(tmp_path, tree, standin):
    cases = run_plays(tmp_path, [
        play('three', tree, standin, {'iommu_preflight_gpus': [A, B, C]}, {'drop': '%s>%s' % (B, C)}),
        play('one', tree, standin, {'iommu_preflight_gpus': [0]}, {}),
        play('one-broken', tree, standin, {'iommu_preflight_gpus': [0], 'iommu_preflight_p2p_required': True},
             {'drop': '0>0'}),
    ])
    three = cases['three']
    assert three['error'] == ''
    assert three['p2p_ok'] is False and three['p2p']['tested'] is True
    assert three['p2p']['bad_pairs'] == ['%s->%s' % (B, C)] and len(three['p2p']['pairs']) == 6
    assert 'owner side: 1048576 of 1048576 bytes differ' in three['p2p']['pairs']['%s->%s' % (B, C)]['detail']
    assert three['report']['bad_pairs'] == ['%s->%s' % (B, C)] and three['report']['skipped'] is None

    one = cases['one']
    assert one['error'] == '' and one['p2p_ok'] is True
    assert list(one['p2p']['pairs']) == ['%s->%s' % (A, A)] and one['p2p']['pairs']['%s->%s' % (A, A)]['kind'] == 'ipc'

    broken = cases['one-broken']
    assert broken['error'].startswith('p2p: GPU %s failed the CUDA IPC write/read-back test between two processes on '
                                      'the same GPU (CUDA IPC between two processes on this GPU failed; writer side: '
                                      % A)
    assert broken['p2p']['ipc_failed'] == [A]


def test_check_mode_skips_the_p2p_test_unless_asked(tmp_path, tree, standin):
    # The IPC path is broken, so a test that ran would say so: the skipped one must say "not tested".
    cases = run_plays(tmp_path, [
        play('skipped', tree, standin, {'iommu_preflight_gpus': [0], 'iommu_preflight_p2p_required': True},
             {'drop': '0>0'}),
        play('asked', tree, standin, {'iommu_preflight_gpus': [0], 'iommu_preflight_p2p_test_in_check_mode': True},
             {'drop': '0>0'}),
    ], check=True)
    skipped = cases['skipped']
    assert skipped['error'] == ''
    assert skipped['p2p_ok'] is None and skipped['p2p']['tested'] is False
    assert skipped['report']['skipped'].startswith('skipped in check mode')
    assert skipped['p2p']['unknown_pairs'] == ['%s->%s' % (A, A)]
    asked = cases['asked']
    assert asked['p2p_ok'] is False and asked['p2p']['tested'] is True and asked['p2p']['ipc_failed'] == [A]


@pytest.mark.parametrize('value, accepted', [
    ('', True),
    ('/usr/local/cuda-13.0/lib/libcudart.so.13', True),
    ('libcudart.so.13', False),
    ('/opt/cuda/lib/libcudart.so\nrm -rf /', False),
    ('/opt/cuda/lib/libcudart.so\x1b[2J', False),
])
def test_validate_checks_the_cudart_path(tmp_path, value, accepted):
    plays = [{'name': 'validate', 'hosts': 'localhost', 'gather_facts': False, 'tasks': [
        {'name': 'Validate', 'block': [
            {'ansible.builtin.include_role': {'name': 'llmserve.sglang.iommu_preflight', 'tasks_from': 'validate'},
             'vars': {'iommu_preflight_p2p_cudart': value}},
            {'ansible.builtin.debug': {'msg': MARK + '{"case": "validate", "error": ""}'}}],
         'rescue': [{'ansible.builtin.debug': {
             'msg': MARK + "{{ {'case': 'validate', 'error': ansible_failed_result.msg} | to_json }}"}}]}]}]
    error = run_plays(tmp_path, plays)['validate']['error']
    if accepted:
        assert error == ''
    else:
        assert error.startswith('iommu_preflight_p2p_cudart must be empty (find the CUDA runtime of '
                                'iommu_preflight_p2p_python) or the absolute path of a libcudart.so file without '
                                'control characters; got ')
