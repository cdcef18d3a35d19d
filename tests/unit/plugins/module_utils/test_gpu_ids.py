# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the NVIDIA device-ID table and classifier."""

from __future__ import annotations

import pytest

from ansible_collections.llmserve.sglang.plugins.module_utils import gpu_ids


@pytest.mark.parametrize('device_id, name, chip, arch', [
    (0x2BB5, 'NVIDIA RTX PRO 6000 Blackwell Server Edition', 'GB202', 'blackwell'),
    (0x2BB1, 'NVIDIA RTX PRO 6000 Blackwell Workstation Edition', 'GB202', 'blackwell'),
    (0x2BB4, 'NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition', 'GB202', 'blackwell'),
    (0x2901, 'NVIDIA B200', 'GB100', 'blackwell'),
    (0x3182, 'NVIDIA B300 SXM6 AC', 'GB110', 'blackwell'),
    (0x2E12, 'NVIDIA GB10', 'GB20B', 'blackwell'),
    (0x2331, 'NVIDIA H100 PCIe', 'GH100', 'hopper'),
    (0x2335, 'NVIDIA H200', 'GH100', 'hopper'),
    (0x26B9, 'NVIDIA L40S', 'AD102', 'ada'),
    (0x27B8, 'NVIDIA L4', 'AD104', 'ada'),
    (0x20B0, 'NVIDIA A100-SXM4-40GB', 'GA100', 'ampere'),
    (0x2236, 'NVIDIA A10', 'GA102', 'ampere'),
    (0x1EB8, 'Tesla T4', 'TU104', 'turing'),
    (0x1DB6, 'Tesla V100 PCIe 32GB', 'GV100', 'volta'),
])
def test_known_ids(device_id, name, chip, arch):
    assert gpu_ids.lookup(device_id) == (name, chip, arch)
    described = gpu_ids.classify(device_id)
    assert described == {'name': name, 'chip': chip, 'architecture': arch, 'known': True}


@pytest.mark.parametrize('text', ['0x2bb5', '0x2BB5', '2bb5', ' 2BB5 '])
def test_hex_strings(text):
    assert gpu_ids.classify(text)['architecture'] == 'blackwell'


def test_unknown_ids_from_0x2900_are_blackwell():
    described = gpu_ids.classify(0x2FFF)
    assert described == {'name': 'NVIDIA device 0x2fff', 'chip': None, 'architecture': 'blackwell', 'known': False}
    assert gpu_ids.classify(0x3FFF)['architecture'] == 'blackwell'
    assert gpu_ids.classify(0x2900)['architecture'] == 'blackwell'


def test_unknown_ids_below_0x2900_are_unknown():
    assert gpu_ids.lookup(0x28FF) is None
    assert gpu_ids.classify(0x28FF) == {'name': 'NVIDIA device 0x28ff', 'chip': None, 'architecture': 'unknown',
                                        'known': False}


def test_non_hex_is_rejected():
    with pytest.raises(ValueError):
        gpu_ids.classify('not-an-id')


def test_table_is_consistent():
    prefixes = {'GM': 'maxwell', 'GP': 'pascal', 'GV': 'volta', 'TU': 'turing', 'GA': 'ampere', 'AD': 'ada',
                'GH': 'hopper', 'GB': 'blackwell', 'GR': 'rubin'}
    assert len(gpu_ids.DEVICE_TABLE) > 500
    for device_id, (name, chip, arch) in gpu_ids.DEVICE_TABLE.items():
        assert 0x1000 <= device_id <= 0xFFFF
        assert name and arch in gpu_ids.ARCHITECTURES
        assert prefixes[chip[:2]] == arch, (hex(device_id), chip, arch)
    # Hopper lives in 0x23xx only; the 0x22xx/0x24xx/0x25xx neighbours are Ampere (not a monotonic range).
    hopper = [device_id for device_id, entry in gpu_ids.DEVICE_TABLE.items() if entry[2] == 'hopper']
    assert all(0x2300 <= device_id <= 0x23FF for device_id in hopper)
    assert gpu_ids.DEVICE_TABLE[0x2204][2] == 'ampere' and gpu_ids.DEVICE_TABLE[0x2482][2] == 'ampere'
    # No known ID below the Blackwell fallback is Blackwell, so the fallback never contradicts the table.
    assert all(entry[2] != 'blackwell' for device_id, entry in gpu_ids.DEVICE_TABLE.items()
               if device_id < gpu_ids.BLACKWELL_FALLBACK_FROM)
