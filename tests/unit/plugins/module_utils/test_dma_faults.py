# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the kernel-log fault parser (AMD-Vi, Intel DMAR, NVRM Xid 143)."""

from __future__ import annotations

import pytest

from ansible_collections.llmserve.sglang.plugins.module_utils import dma_faults


@pytest.mark.parametrize('line, kind, address, fault_address', [
    # device known to the kernel: "<driver> <address>: AMD-Vi: ..."
    ('[  812.000001] nvidia 0000:81:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x003e address=0x3ff000001000 '
     'flags=0x0020]', 'IO_PAGE_FAULT', '0000:81:00.0', '0x3ff000001000'),
    # journalctl -o short (syslog prefix), device unknown to the kernel: device= with segment
    ('Sep 21 09:59:59 runtime kernel: AMD-Vi: Event logged [IO_PAGE_FAULT device=0000:07:00.0 domain=0x0003 '
     'address=0x80000040 flags=0x0020]', 'IO_PAGE_FAULT', '0000:07:00.0', '0x80000040'),
    # older kernels: device= without segment
    ('[   30.1] AMD-Vi: Event logged [IO_PAGE_FAULT device=41:00.0 domain=0x0000 address=0xfe000000 flags=0x0000]',
     'IO_PAGE_FAULT', '0000:41:00.0', '0xfe000000'),
    ('[  640.000000] iommu ivhd2: AMD-Vi: Event logged [ILLEGAL_DEV_TABLE_ENTRY device=0000:81:00.0 pasid=0x00000 '
     'address=0x20f8a01000 flags=0x0020]', 'ILLEGAL_DEV_TABLE_ENTRY', '0000:81:00.0', '0x20f8a01000'),
    ('[  700.5] iommu ivhd0: AMD-Vi: Event logged [RMP_PAGE_FAULT device=0000:01:00.0, vmg_tag=0x0000, '
     'gpa=0x7f0000, flags_rmp=0x0001, flags=0x0020]', 'RMP_PAGE_FAULT', '0000:01:00.0', '0x7f0000'),
    ('[   12.5] DMAR: [DMA Write NO_PASID] Request device [03:00.0] fault addr 0x100000 [fault reason 0x71] '
     'SM: Present bit in first-level paging entry is clear', 'DMAR_WRITE_FAULT', '0000:03:00.0', '0x100000'),
    ('[   12.6] DMAR: [DMA Read] Request device [00:02.0] PASID ffffffff fault addr 9c000000 [fault reason 06] '
     'PTE Read access is not set', 'DMAR_READ_FAULT', '0000:00:02.0', '0x9c000000'),
    ('[   12.7] DMAR: [INTR-REMAP] Request device [1a:00.0] fault index 0x1f [fault reason 0x25] Blocked a '
     'compatibility format interrupt request', 'DMAR_INTR_REMAP_FAULT', '0000:1a:00.0', '0x1f'),
    ('[  645.1] NVRM: Xid (PCI:0000:81:00): 143, Error status 0x00000065 while polling for FSP boot complete',
     'XID_143', '0000:81:00.0', None),
])
def test_parse_line_formats(line, kind, address, fault_address):
    event = dma_faults.parse_line(line)
    assert event is not None
    assert event['kind'] == kind
    assert event['pci_address'] == address
    assert event['address'] == fault_address


@pytest.mark.parametrize('line', [
    '[    1.2] AMD-Vi: IOMMU SNP support enabled.',
    '[  640.000002] AMD-Vi: DTE[0]: 6000000000000003',
    '[    0.41] iommu: Default domain type: Translated',
    '[   12.0] DMAR: IOMMU enabled',
    '[  900.0] NVRM: Xid (PCI:0000:41:00): 79, pid=1234, GPU has fallen off the bus.',
    '[  900.0] NVRM: GPU 0000:81:00.0: RmInitAdapter failed! (0x62:0x65:1234)',
])
def test_non_fault_lines(line):
    assert dma_faults.parse_line(line) is None


def test_details():
    event = dma_faults.parse_line('nvidia 0000:81:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x003e '
                                  'address=0x3ff000001000 flags=0x0020]')
    assert event['source'] == 'amd-vi'
    assert event['domain'] == '0x003e'
    assert event['detail'] == 'domain=0x003e address=0x3ff000001000 flags=0x0020'
    event = dma_faults.parse_line('DMAR: [DMA Read NO_PASID] Request device [00:02.0] fault addr 0x7cd80000 '
                                  '[fault reason 0x01] Present bit in root entry is clear')
    assert event['source'] == 'intel-dmar'
    assert event['detail'] == 'fault reason 0x01: Present bit in root entry is clear'


def test_parse_kernel_log_timestamps_and_limit():
    lines = [
        '[  812.000001] nvidia 0000:81:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x1 address=0x1000 flags=0x20]',
        'Mar 20 10:13:33 gpu01 kernel: [  813.402210] AMD-Vi: Event logged [IO_PAGE_FAULT device=0000:c1:00.0 '
        'domain=0x56 address=0x2000 flags=0x20]',
        'Mar 20 10:13:34 gpu01 kernel: AMD-Vi: Event logged [IO_PAGE_FAULT device=0000:c1:00.0 domain=0x56 '
        'address=0x3000 flags=0x20]',
        'unrelated line',
    ]
    events, dropped = dma_faults.parse_kernel_log(lines)
    assert dropped == 0
    assert [event['timestamp'] for event in events] == [pytest.approx(812.000001), pytest.approx(813.40221), None]
    assert events[0]['line'] == lines[0]
    events, dropped = dma_faults.parse_kernel_log(lines * 3, limit=4)
    assert len(events) == 4 and dropped == 5


def test_attribute_and_count():
    gpus = [{'pci_address': '0000:81:00.0', 'index': 2, 'name': 'GPU two'}]
    events, dropped = dma_faults.parse_kernel_log([
        'nvidia 0000:81:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x1 address=0x1000 flags=0x20]',
        'mlx5_core 0000:42:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x2 address=0x2000 flags=0x0]',
        'AMD-Vi: Event logged [IOTLB_INV_TIMEOUT address=0x5000]',
    ])
    assert dropped == 0
    dma_faults.attribute_faults(events, gpus)
    assert [(event['gpu'], event['gpu_index'], event['gpu_name']) for event in events] == [
        (True, 2, 'GPU two'), (False, None, None), (False, None, None)]
    assert dma_faults.count_by_device(events) == {'0000:81:00.0': 1, '0000:42:00.0': 1, None: 1}
