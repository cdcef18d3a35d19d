# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the P2P parsers and per-pair decision, on recorded tool outputs (tests/fixtures/recorded)."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.llmserve.sglang.plugins.plugin_utils import p2p

RECORDED = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'recorded')
GPUS = ['0000:01:00.0', '0000:41:00.0', '0000:81:00.0', '0000:c1:00.0']


def recorded(name):
    with open(os.path.join(RECORDED, name)) as handle:
        return handle.read()


def test_parse_topo_all_ok():
    cells = p2p.parse_topo_p2p(recorded('nvidia-smi_topo-p2p-r_4gpu_ok.txt'))
    assert len(cells) == 12
    assert set(cells.values()) == {'OK'}
    assert (0, 0) not in cells and cells[(3, 1)] == 'OK'


def test_parse_topo_not_supported():
    cells = p2p.parse_topo_p2p(recorded('nvidia-smi_topo-p2p-r_2gpu_gns.txt'))
    assert cells == {(0, 1): 'GNS', (1, 0): 'GNS'}


@pytest.mark.parametrize('text, message', [
    ('', 'no GPU header'),
    ('No devices were found\n', 'no GPU header'),
    (' \tGPU0\tGPU1\t\n GPU0\tX\n', 'has 1 cells, expected 2'),
])
def test_parse_topo_errors(text, message):
    with pytest.raises(p2p.P2PParseError, match=message):
        p2p.parse_topo_p2p(text)


def test_parse_query_gpus():
    assert p2p.parse_query_gpus(recorded('nvidia-smi_query-gpu_4gpu.csv')) == dict(enumerate(GPUS))
    assert p2p.parse_query_gpus('index, pci.bus_id\n0, 00000000:01:00.0\n') == {0: '0000:01:00.0'}
    with pytest.raises(p2p.P2PParseError, match='PCI bus id'):
        p2p.parse_query_gpus('0, [N/A]\n')


def test_parse_p2p_check_ok():
    results = p2p.parse_p2p_check(recorded('p2p_check_4gpu_ok.json'))
    assert len(results) == 12
    assert all(result['ok'] and result['can_access_peer'] for result in results.values())


def test_parse_p2p_check_with_noise_and_failures():
    results = p2p.parse_p2p_check(recorded('p2p_check_4gpu_cross_numa_broken.stdout'))
    assert sorted(key for key, value in results.items() if not value['ok']) == sorted([
        ('0000:01:00.0', '0000:81:00.0'), ('0000:81:00.0', '0000:01:00.0'),
        ('0000:41:00.0', '0000:c1:00.0'), ('0000:c1:00.0', '0000:41:00.0')])
    assert 'P2P hang' in results[('0000:c1:00.0', '0000:41:00.0')]['detail']


@pytest.mark.parametrize('data, message', [
    (recorded('p2p_check_no_cudart.json'), 'could not run: no CUDA runtime'),
    ('Traceback (most recent call last):\n  ImportError: torch\n', 'printed no JSON'),
    ('[1, 2]', 'not a JSON object'),
    ('{"version": 1}', 'no "pairs" list'),
    ({'pairs': [{'src': 'GPU0', 'dst': '0000:41:00.0', 'ok': True}]}, 'needs "src", "dst"'),
    ({'pairs': [{'src': '0000:01:00.0', 'dst': '0000:41:00.0', 'ok': 'yes'}]}, 'needs "src", "dst"'),
    ({'pairs': ['x']}, 'not an object'),
])
def test_parse_p2p_check_errors(data, message):
    with pytest.raises(p2p.P2PParseError, match=message):
        p2p.parse_p2p_check(data)


def test_matrix_all_good():
    matrix = p2p.build_matrix(GPUS, topology=p2p.parse_topo_p2p(recorded('nvidia-smi_topo-p2p-r_4gpu_ok.txt')),
                              index_map=p2p.parse_query_gpus(recorded('nvidia-smi_query-gpu_4gpu.csv')),
                              functional=p2p.parse_p2p_check(recorded('p2p_check_4gpu_ok.json')))
    assert matrix['ok'] is True and matrix['tested'] is True and matrix['topology_read'] is True
    assert matrix['bad_pairs'] == [] and matrix['unknown_pairs'] == []
    assert matrix['largest_p2p_group'] == GPUS
    pair = matrix['pairs']['0000:01:00.0->0000:81:00.0']
    assert pair == {'src': '0000:01:00.0', 'dst': '0000:81:00.0', 'kind': 'p2p', 'topology': 'OK', 'functional': True,
                    'ok': True, 'detail': ''}
    assert matrix['skipped'] is None and matrix['ipc_failed'] == []


def test_matrix_driver_says_ok_but_pairs_fail():
    matrix = p2p.build_matrix(GPUS, topology=p2p.parse_topo_p2p(recorded('nvidia-smi_topo-p2p-r_4gpu_ok.txt')),
                              index_map=p2p.parse_query_gpus(recorded('nvidia-smi_query-gpu_4gpu.csv')),
                              functional=p2p.parse_p2p_check(recorded('p2p_check_4gpu_cross_numa_broken.stdout')))
    assert matrix['ok'] is False
    assert matrix['bad_pairs'] == ['0000:01:00.0->0000:81:00.0', '0000:41:00.0->0000:c1:00.0',
                                   '0000:81:00.0->0000:01:00.0', '0000:c1:00.0->0000:41:00.0']
    assert 'the driver reports P2P as supported' in matrix['pairs']['0000:01:00.0->0000:81:00.0']['detail']
    assert matrix['largest_p2p_group'] == ['0000:01:00.0', '0000:41:00.0']


def test_matrix_from_topology_only():
    matrix = p2p.build_matrix(['0000:01:00.0', '0000:41:00.0'],
                              topology=p2p.parse_topo_p2p(recorded('nvidia-smi_topo-p2p-r_2gpu_gns.txt')),
                              index_map={0: '0000:01:00.0', 1: '0000:41:00.0'})
    assert matrix['tested'] is False and matrix['ok'] is False
    assert matrix['pairs']['0000:01:00.0->0000:41:00.0']['detail'] == 'driver capability only: GPU not supported'
    assert matrix['largest_p2p_group'] == ['0000:01:00.0']


def test_matrix_with_a_gpu_missing_from_nvidia_smi():
    # fixture B: 0000:81:00.0 failed its FSP boot; nvidia-smi numbers the other three 0..2
    matrix = p2p.build_matrix(GPUS, topology=p2p.parse_topo_p2p(recorded('nvidia-smi_topo-p2p-r_3gpu_ok.txt')),
                              index_map=p2p.parse_query_gpus(recorded('nvidia-smi_query-gpu_3gpu_missing.csv')))
    assert matrix['pairs']['0000:41:00.0->0000:c1:00.0']['topology'] == 'OK'
    assert matrix['pairs']['0000:41:00.0->0000:81:00.0']['ok'] is None
    assert matrix['ok'] is None
    assert len(matrix['unknown_pairs']) == 6
    assert matrix['largest_p2p_group'] == ['0000:01:00.0', '0000:41:00.0', '0000:c1:00.0']


def test_matrix_topology_without_index_map_is_ignored():
    matrix = p2p.build_matrix(GPUS[:2], topology={(0, 1): 'OK', (1, 0): 'OK'})
    assert matrix['topology_read'] is False and matrix['ok'] is None


@pytest.mark.parametrize('gpus', [[], ['0000:01:00.0'], ['01:00.0', '0000:01:00.0']])
def test_matrix_fewer_than_two_gpus_is_ok(gpus):
    matrix = p2p.build_matrix(gpus)
    assert matrix['ok'] is True and matrix['pairs'] == {}


def test_matrix_rejects_bad_addresses():
    with pytest.raises(p2p.P2PParseError, match='not a PCI address'):
        p2p.build_matrix(['GPU0', '0000:01:00.0'])


def test_recorded_outputs_are_consistent_with_the_fixture_gpus():
    data = json.loads(recorded('p2p_check_4gpu_ok.json'))
    assert [device['pci_address'] for device in data['devices']] == GPUS


def _one_gpu_result(ok, detail=''):
    return {'pairs': [{'src': '0000:00:06.0', 'dst': '0000:00:06.0', 'kind': 'ipc', 'ok': ok, 'detail': detail,
                       'can_access_peer': None}]}


def test_one_gpu_ipc_test_passed():
    matrix = p2p.build_matrix(['0000:00:06.0'], functional=p2p.parse_p2p_check(_one_gpu_result(True)))
    assert matrix['ok'] is True and matrix['tested'] is True and matrix['bad_pairs'] == []
    assert matrix['pairs'] == {'0000:00:06.0->0000:00:06.0': {
        'src': '0000:00:06.0', 'dst': '0000:00:06.0', 'kind': 'ipc', 'topology': None, 'functional': True, 'ok': True,
        'detail': ''}}
    assert matrix['largest_p2p_group'] == ['0000:00:06.0']


def test_one_gpu_ipc_test_failed():
    matrix = p2p.build_matrix(['0000:00:06.0'], functional=p2p.parse_p2p_check(_one_gpu_result(
        False, 'peer mapping failed: cudaIpcOpenMemHandle failed: invalid argument (1)')))
    assert matrix['ok'] is False
    assert matrix['bad_pairs'] == ['0000:00:06.0->0000:00:06.0'] and matrix['ipc_failed'] == ['0000:00:06.0']
    assert matrix['pairs']['0000:00:06.0->0000:00:06.0']['detail'] == (
        'CUDA IPC between two processes on this GPU failed; peer mapping failed: cudaIpcOpenMemHandle failed: '
        'invalid argument (1)')
    assert matrix['largest_p2p_group'] == []


def test_one_gpu_without_its_ipc_result_is_unknown():
    # an older p2p_check.py printed no pair for one GPU: tested, but nothing known
    matrix = p2p.build_matrix(['0000:00:06.0'], functional={})
    assert matrix['ok'] is None and matrix['unknown_pairs'] == ['0000:00:06.0->0000:00:06.0']


def test_a_gpu_whose_ipc_failed_is_left_out_of_the_largest_group():
    good = dict(((src, dst), {'ok': True, 'detail': '', 'can_access_peer': True, 'kind': 'p2p'})
                for src in GPUS[:3] for dst in GPUS[:3] if src != dst)
    good[(GPUS[1], GPUS[1])] = {'ok': False, 'detail': 'x', 'can_access_peer': None, 'kind': 'ipc'}
    matrix = p2p.build_matrix(GPUS[:3], functional=good)
    assert matrix['ok'] is False and matrix['ipc_failed'] == [GPUS[1]]
    assert matrix['largest_p2p_group'] == [GPUS[0], GPUS[2]]


@pytest.mark.parametrize('gpus, unknown', [
    (GPUS[:2], ['0000:01:00.0->0000:41:00.0', '0000:41:00.0->0000:01:00.0']),
    (GPUS[:1], ['0000:01:00.0->0000:01:00.0']),
])
def test_skipped_test_is_not_tested_not_passed(gpus, unknown):
    matrix = p2p.build_matrix(gpus, functional=p2p.parse_p2p_check(recorded('p2p_check_4gpu_ok.json')),
                              skipped='skipped in check mode')
    assert matrix['ok'] is None and matrix['tested'] is False and matrix['skipped'] == 'skipped in check mode'
    assert matrix['unknown_pairs'] == unknown and matrix['bad_pairs'] == []
    assert all(pair['detail'] == 'not tested: skipped in check mode' for pair in matrix['pairs'].values())


def test_skipped_without_gpus_is_ok():
    assert p2p.build_matrix([], skipped='skipped in check mode')['ok'] is True


def test_parse_p2p_check_kind_must_match_the_pair():
    with pytest.raises(p2p.P2PParseError, match='with src == dst has "kind" \'p2p\', expected \'ipc\''):
        p2p.parse_p2p_check({'pairs': [{'src': '0000:01:00.0', 'dst': '0000:01:00.0', 'ok': True, 'kind': 'p2p'}]})
    results = p2p.parse_p2p_check(recorded('p2p_check_4gpu_ok.json'))  # version 1 output, no "kind"
    assert {result['kind'] for result in results.values()} == {'p2p'}
