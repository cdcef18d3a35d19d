# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The shipped roles/iommu_preflight/files/p2p_check.py as a real process, on the stand-in CUDA runtime.

Nothing of the script is mocked: it loads the stand-in through ctypes, spawns its owner and writer processes,
and those really share memory through the stand-in's IPC handles (POSIX shared memory). What the stand-in
fakes is the GPU: it can drop, refuse or hang the writes of chosen device pairs (tools/standin/cudart/README.md).
"""

from __future__ import annotations

import time

import pytest

from ansible_collections.llmserve.sglang.plugins.plugin_utils import p2p

from p2p_standin_helpers import GPUS

A, B, C = GPUS
WRONG = 'writer side: 4096 of 4096 bytes differ, first at offset 0 (0x5a instead of 0xa5); ' \
        'owner side: 4096 of 4096 bytes differ, first at offset 0 (0x5a instead of 0xa5)'


def by_pair(result):
    return dict(((pair['src'], pair['dst']), pair) for pair in result['pairs'])


def test_three_healthy_gpus_pass_every_ordered_pair(standin):
    result = standin.run(GPUS)
    assert 'error' not in result
    pairs = by_pair(result)
    assert sorted(pairs) == sorted((src, dst) for src in GPUS for dst in GPUS if src != dst)
    for key, pair in pairs.items():
        assert (pair['ok'], pair['detail'], pair['can_access_peer'], pair.get('kind')) == (True, '', True, 'p2p'), \
            '%s->%s: %s' % (key[0], key[1], pair['detail'])
    assert result['cudart'] == standin.lib and result['cudart_source'] == 'LLMSERVE_CUDART'
    assert result['runtime_version'] == 13000
    assert [device['cuda_device'] for device in result['devices']] == [0, 1, 2]
    matrix = p2p.build_matrix(GPUS, functional=p2p.parse_p2p_check(result))
    assert matrix['ok'] is True and matrix['tested'] is True and matrix['largest_p2p_group'] == GPUS


@pytest.mark.parametrize('drop, broken', [
    ('%s>%s' % (B, C), (B, C)),
    ('2>0', (C, A)),  # device numbers work too
])
def test_a_dropped_write_direction_fails_exactly_that_pair(standin, drop, broken):
    result = standin.run(GPUS, drop=drop)
    pairs = by_pair(result)
    assert [key for key, pair in pairs.items() if not pair['ok']] == [broken]
    assert pairs[broken]['detail'] == WRONG
    assert pairs[broken]['can_access_peer'] is True  # the driver's answer is no proof
    assert pairs[(broken[1], broken[0])]['ok'] is True  # the other direction works
    matrix = p2p.build_matrix(GPUS, functional=p2p.parse_p2p_check(result))
    assert matrix['ok'] is False and matrix['bad_pairs'] == [p2p.pair_key(*broken)]
    assert len(matrix['largest_p2p_group']) == 2 and set(broken) - set(matrix['largest_p2p_group'])


def test_a_refused_peer_mapping_fails_that_pair(standin):
    pairs = by_pair(standin.run(GPUS, open_fail='%s>%s' % (A, C)))
    assert [key for key, pair in pairs.items() if not pair['ok']] == [(A, C)]
    assert pairs[(A, C)]['can_access_peer'] is False
    assert pairs[(A, C)]['detail'] == ('peer mapping failed: cudaIpcOpenMemHandle failed: peer access is not '
                                       'supported between these two devices (217)')


def test_a_hung_pair_times_out_and_the_others_still_run(standin):
    standin.leftovers_allowed = True  # the killed owner cannot free its buffer
    started = time.monotonic()
    pairs = by_pair(standin.run(GPUS, timeout=2, hang='%s>%s' % (C, B)))
    assert time.monotonic() - started < 60
    assert [key for key, pair in pairs.items() if not pair['ok']] == [(C, B)]
    assert pairs[(C, B)]['detail'] == 'timed out waiting for the peer write from %s after 2.0s (P2P hang?)' % C


def test_one_gpu_checks_cuda_ipc_between_two_processes(standin):
    result = standin.run([B], gpus=[B])
    assert result['pairs'] == [{'src': B, 'dst': B, 'kind': 'ipc', 'ok': True, 'can_access_peer': None, 'detail': '',
                                'seconds': result['pairs'][0]['seconds']}]
    matrix = p2p.build_matrix([B], functional=p2p.parse_p2p_check(result))
    assert matrix['ok'] is True and matrix['pairs'][p2p.pair_key(B, B)]['kind'] == 'ipc'


def test_one_gpu_with_a_broken_ipc_path_fails(standin):
    result = standin.run([A], gpus=[A], drop='0>0')
    assert [(pair['src'], pair['dst'], pair['ok'], pair['detail']) for pair in result['pairs']] == [(A, A, False, WRONG)]
    matrix = p2p.build_matrix([A], functional=p2p.parse_p2p_check(result))
    assert matrix['ok'] is False and matrix['ipc_failed'] == [A] and matrix['largest_p2p_group'] == []
    assert matrix['pairs'][p2p.pair_key(A, A)]['detail'].startswith('CUDA IPC between two processes on this GPU failed')


def test_cuda_13_wheel_layout_is_found_without_the_variable(standin):
    result = standin.run([A, B], cudart=None, pythonpath=[standin.site_cu13])
    assert result['cudart'] == standin.cu13_lib and result['cudart_source'] == 'search'
    assert [pair['ok'] for pair in result['pairs']] == [True, True]


def test_the_variable_wins_over_the_search(standin):
    result = standin.run([A, B], pythonpath=[standin.site_cu13, standin.site_cu12])
    assert result['cudart'] == standin.lib


def test_an_unloadable_cudart_in_the_variable_is_an_error(standin):
    missing = standin.directory + '/no/libcudart.so.13'
    result = standin.run([A, B], cudart=missing, check_rc=2)
    assert result['error'].startswith('LLMSERVE_CUDART=%s cannot be loaded: ' % missing)
    assert result['pairs'] == []
    with pytest.raises(p2p.P2PParseError, match='could not run: LLMSERVE_CUDART='):
        p2p.parse_p2p_check(result)


def test_a_gpu_the_runtime_does_not_know_is_an_error(standin):
    result = standin.run([A, '0000:c1:00.0'], check_rc=2)
    assert result['error'] == 'cudaDeviceGetByPCIBusId(0000:c1:00.0) failed: invalid device ordinal (101)'
