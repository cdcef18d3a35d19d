# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the iommu_preflight_evaluate and p2p_matrix filters (thin wrappers around module_utils)."""

from __future__ import annotations

import os

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.llmserve.sglang.plugins.filter import iommu_preflight as filters

RECORDED = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'recorded')


def recorded(name):
    with open(os.path.join(RECORDED, name)) as handle:
        return handle.read()


def test_filters_are_registered():
    assert sorted(filters.FilterModule().filters()) == ['iommu_preflight_evaluate', 'iommu_preflight_next_boot', 'p2p_matrix']


def test_evaluate_defaults_and_errors():
    result = filters.iommu_preflight_evaluate({'gpus': [], 'iommu': {'enabled': True}})
    assert [m.split(':', maxsplit=1)[0] for m in result['errors']] == ['no-gpu']
    result = filters.iommu_preflight_evaluate({'gpus': [], 'iommu': {'enabled': True}}, require_gpu=False)
    assert result['errors'] == [] and result['report']['status'] == 'warn'
    with pytest.raises(AnsibleFilterError, match='iommu_preflight_fatal_xids must be a list'):
        filters.iommu_preflight_evaluate({}, fatal_xids=79)
    with pytest.raises(AnsibleFilterError, match='positive integers'):
        filters.iommu_preflight_evaluate({}, fatal_xids=[79, 'x'])
    with pytest.raises(AnsibleFilterError, match='expected the gpu_host facts'):
        filters.iommu_preflight_evaluate('nope')
    with pytest.raises(AnsibleFilterError, match='must be a list'):
        filters.iommu_preflight_evaluate({}, gpus='0000:01:00.0')
    with pytest.raises(AnsibleFilterError, match='fail, warn'):
        filters.iommu_preflight_evaluate({}, dma_faults='maybe')


def test_evaluate_fatal_xids_default():
    gpu = {'index': 0, 'pci_address': '0000:05:00.0', 'name': 'NVIDIA H200', 'architecture': 'hopper',
           'iommu_group': 9, 'iommu_domain_type': 'DMA-FQ', 'iommu_group_devices': ['0000:05:00.0'], 'driver': 'nvidia'}
    event = {'kind': 'xid', 'code': 48, 'pci_address': '0000:05:00.0', 'caused_by': None, 'timestamp': 1.0,
             'line': 'NVRM: Xid (PCI:0000:05:00): 48, An uncorrectable double bit error (DBE) has been detected'}
    facts = {'gpus': [gpu], 'iommu': {'enabled': True}, 'nvidia_driver': {'loaded': True},
             'kernel_log_source': 'file', 'xid_events': [event]}
    result = filters.iommu_preflight_evaluate(facts)
    assert [m.split(':', maxsplit=1)[0] for m in result['errors']] == ['gpu-xid']
    assert filters.iommu_preflight_evaluate(facts, fatal_xids=[79])['errors'] == []


def test_evaluate_forbidden_architectures_default():
    gpu = {'index': 0, 'pci_address': '0000:05:00.0', 'name': 'NVIDIA device 0x3000', 'architecture': 'rubin',
           'iommu_group': 9, 'iommu_domain_type': 'identity', 'iommu_group_devices': ['0000:05:00.0'], 'driver': 'nvidia'}
    result = filters.iommu_preflight_evaluate({'gpus': [gpu], 'iommu': {'enabled': True},
                                               'nvidia_driver': {'loaded': True}, 'kernel_log_source': 'file'})
    assert [m.split(':', maxsplit=1)[0] for m in result['errors']] == ['blackwell-identity']


def test_p2p_matrix_from_recorded_outputs():
    gpus = [{'pci_address': '0000:01:00.0'}, {'pci_address': '0000:41:00.0'}, {'pci_address': '0000:81:00.0'},
            {'pci_address': '0000:c1:00.0'}]
    result = filters.p2p_matrix(gpus, topology=recorded('nvidia-smi_topo-p2p-r_4gpu_ok.txt'),
                                query=recorded('nvidia-smi_query-gpu_4gpu.csv'),
                                functional=recorded('p2p_check_4gpu_cross_numa_broken.stdout'))
    assert result['ok'] is False and len(result['bad_pairs']) == 4


def test_p2p_matrix_untested():
    assert filters.p2p_matrix(['0000:01:00.0', '0000:41:00.0'])['ok'] is None
    assert filters.p2p_matrix([])['ok'] is True


def test_p2p_matrix_errors_are_filter_errors():
    with pytest.raises(AnsibleFilterError, match='p2p_matrix: the P2P test could not run'):
        filters.p2p_matrix(['0000:01:00.0', '0000:41:00.0'], functional=recorded('p2p_check_no_cudart.json'))


def test_p2p_matrix_skipped_in_check_mode():
    # the role passes skipped='' when the test runs (or is off) and a reason when check mode skips it
    assert filters.p2p_matrix([{'pci_address': '0000:00:06.0'}], skipped='')['ok'] is True
    result = filters.p2p_matrix([{'pci_address': '0000:00:06.0'}], skipped='skipped in check mode')
    assert result['ok'] is None and result['skipped'] == 'skipped in check mode'
    assert result['unknown_pairs'] == ['0000:00:06.0->0000:00:06.0']
    with pytest.raises(AnsibleFilterError, match='p2p_matrix: skipped must be a string'):
        filters.p2p_matrix(['0000:00:06.0'], skipped=True)
