# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the kernel-log fault parser (AMD-Vi, Intel DMAR, NVRM Xid 143)."""

from __future__ import annotations

import time

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


# --- line prefixes --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('line, timestamp, wallclock, message', [
    ('[  812.000001] nvidia 0000:81:00.0: x', 812.000001, None, 'nvidia 0000:81:00.0: x'),
    ('[  130.456250] [ T1946] NVRM: x', 130.45625, None, 'NVRM: x'),            # CONFIG_PRINTK_CALLER
    ('[    2.101000] [    C3] NVRM: x', 2.101, None, 'NVRM: x'),
    ('NVRM: x', None, None, 'NVRM: x'),                                          # dmesg -t, no PRINTK_TIME
    ('[Fri Aug 30 11:43:09 2024] NVRM: x', None, 'Fri Aug 30 11:43:09 2024', 'NVRM: x'),  # dmesg -T
    ('2024-08-30T11:43:09,123456+02:00 NVRM: x', None, '2024-08-30T11:43:09,123456+02:00', 'NVRM: x'),
    ('[    1.234567] gpu01 kernel: NVRM: x', 1.234567, None, 'NVRM: x'),        # journalctl -k -o short-monotonic
    ('Mar 20 10:13:33 gpu01 kernel: NVRM: x', None, 'Mar 20 10:13:33', 'NVRM: x'),  # journalctl -k
    ('Mar  2 10:13:33.123456 gpu01 kernel: NVRM: x', None, 'Mar  2 10:13:33.123456', 'NVRM: x'),  # short-precise
    ('2026-03-20T10:13:33+0000 gpu01 kernel: NVRM: x', None, '2026-03-20T10:13:33+0000', 'NVRM: x'),  # short-iso
    ('Mar 20 10:13:33 gpu01 kernel: [  813.402210] NVRM: x', 813.40221, 'Mar 20 10:13:33', 'NVRM: x'),  # kern.log
    ('4,9921,9370042162,-;NVRM: x', 9370.042162, None, 'NVRM: x'),             # /dev/kmsg record
    ('[drm] Initialized nvidia-drm 0.0.0', None, None, '[drm] Initialized nvidia-drm 0.0.0'),
])
def test_split_line(line, timestamp, wallclock, message):
    found = dma_faults.split_line(line)
    assert found[0] == (pytest.approx(timestamp) if timestamp is not None else None)
    assert found[1:] == (wallclock, message)


# --- AMD-Vi events split over two records (kernels around 4.9) ------------------------------------------------------

def test_amd_vi_event_split_over_two_records():
    lines = [
        '[  221.562629] AMD-Vi: Event logged [',
        '[  221.565929] IO_PAGE_FAULT device=05:00.0 domain=0x0012 address=0x00000000ff6101b0 flags=0x0070]',
        '[  221.565938] AMD-Vi: Event logged [',
        '[  221.569235] INVALID_DEVICE_REQUEST device=00:00.1 address=0x000000fdf8000020 flags=0x0a00]',
    ]
    events, dropped = dma_faults.parse_kernel_log(lines)
    assert dropped == 0
    assert [(e['kind'], e['pci_address'], e['address'], e['domain']) for e in events] == [
        ('IO_PAGE_FAULT', '0000:05:00.0', '0x00000000ff6101b0', '0x0012'),
        ('INVALID_DEVICE_REQUEST', '0000:00:00.1', '0x000000fdf8000020', None)]
    assert events[0]['timestamp'] == pytest.approx(221.562629)  # the header's time
    assert events[0]['line'] == lines[0] + ' ' + lines[1]


def test_amd_vi_split_record_in_syslog_form_with_a_line_in_between():
    lines = [
        'Mar 20 10:13:33 gpu01 kernel: [   13.134460] AMD-Vi: Event logged [',
        'Mar 20 10:13:33 gpu01 kernel: [   13.134461] r8169 0000:02:00.0 eth0: Link is Up - 1Gbps/Full',
        'Mar 20 10:13:33 gpu01 kernel: [   13.137925] IO_PAGE_FAULT device=0000:41:00.0 domain=0x0003 '
        'address=0x80000040 flags=0x0020]',
        'Mar 20 10:13:34 gpu01 kernel: [   14.0] nvidia 0000:41:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT '
        'domain=0x0003 address=0x80001040 flags=0x0020]',
    ]
    events, dropped = dma_faults.parse_kernel_log(lines)
    assert [(e['kind'], e['pci_address'], e['timestamp']) for e in events] == [
        ('IO_PAGE_FAULT', '0000:41:00.0', pytest.approx(13.13446)), ('IO_PAGE_FAULT', '0000:41:00.0', 14.0)]


@pytest.mark.parametrize('lines', [
    ['[  1.0] AMD-Vi: Event logged ['],                                               # body lost
    ['[  1.0] AMD-Vi: Event logged [', '[  1.1] a', '[  1.2] b', '[  1.3] c',
     '[  1.4] IO_PAGE_FAULT device=05:00.0 domain=0x0012 address=0x1000 flags=0x0070]'],  # too far away
    ['[  1.1] IO_PAGE_FAULT device=05:00.0 domain=0x0012 address=0x1000 flags=0x0070]'],  # body without header
    ['[  1.0] AMD-Vi: Event logged [', '[  1.1] ACPI: Added _OSI(Linux-Dell-Video)'],  # not an event body
])
def test_amd_vi_split_record_needs_both_parts(lines):
    assert dma_faults.parse_kernel_log(lines) == ([], 0)


# --- NVIDIA Xid events ----------------------------------------------------------------------------------------------
# Lines written for these tests in the formats the drivers print (krcReportXid / nvErrorLog_va of the open driver,
# older proprietary drivers); processes, channels and times are made up.

XID_LINES = [
    # current drivers: pid and name of the channel's process
    ('[ 3947.590120] NVRM: Xid (PCI:0000:61:00): 119, pid=123417, name=nv-hostengine, Timeout after 6s of waiting '
     'for RPC response from GPU0 GSP! Expected function 10 (FREE) (0xc0000005 0x0).',
     dict(code=119, pci_address='0000:61:00.0', pid=123417, process='nv-hostengine', caused_by=None,
          text='Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected function 10 (FREE) '
               '(0xc0000005 0x0).', timestamp=3947.59012, time=None)),
    # no channel: pid '<unknown>' and name <unknown>
    ("[ 1212.338190] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on "
     "(GPC 7, TPC 7, SM 0): Illegal Instruction Parameter",
     dict(code=13, pci_address='0000:cb:00.0', pid=None, process=None, caused_by=None,
          text='Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter')),
    # 4xx/5xx drivers: pid without name, "Ch 000000NN"
    ('[24128.834365] NVRM: Xid (PCI:0000:01:00): 31, pid=2127, Ch 00000003, intr 10000000. MMU Fault: ENGINE '
     'GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f2b_4c000000. Fault is of type FAULT_PDE ACCESS_TYPE_READ',
     dict(code=31, pci_address='0000:01:00.0', pid=2127, process=None,
          text='Ch 00000003, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f2b_4c000000. '
               'Fault is of type FAULT_PDE ACCESS_TYPE_READ')),
    # newer drivers: "channel 0x...", printk caller id in front
    ('[  130.456250] [ T1946] NVRM: Xid (PCI:0000:2b:00): 31, pid=1942, name=llama-server, channel 0x00000002, intr '
     '00000000. MMU Fault: ENGINE GRAPHICS GPC1 GPCCLIENT_T1_3 faulted @ 0x7f3a_12000000.',
     dict(code=31, pci_address='0000:2b:00.0', pid=1942, process='llama-server',
          text='channel 0x00000002, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC1 GPCCLIENT_T1_3 faulted @ '
               '0x7f3a_12000000.')),
    # no pid at all (older drivers, and events without process context)
    ('NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.',
     dict(code=79, pci_address='0000:3b:00.0', pid=None, process=None, text='GPU has fallen off the bus.',
          timestamp=None, time=None)),
    # very old drivers: no "PCI:" and only the raw words; a syslog file line
    ('May 10 22:25:01 jambi kernel: [176830.774761] NVRM: Xid (0000:03:00): 13, 0003 00000000 00008297 00001098 '
     '00000000 00000044',
     dict(code=13, pci_address='0000:03:00.0', text='0003 00000000 00008297 00001098 00000000 00000044',
          timestamp=176830.774761, time='May 10 22:25:01')),
    # a PCI domain other than 0 (Grace Hopper, large servers), journalctl -o short-iso
    ('2026-03-20T10:13:33+0000 gh200 kernel: NVRM: Xid (PCI:0002:01:00): 119, pid=430, name=nv_queue, Timeout '
     'waiting for RPC from GSP!',
     dict(code=119, pci_address='0002:01:00.0', pid=430, process='nv_queue', time='2026-03-20T10:13:33+0000')),
    # MIG attribution
    ('[ 5210.004410] NVRM: Xid (PCI:0000:81:00 GPU-I:02 GPU-CI:00): 43, pid=8812, name=python3, Ch 00000010',
     dict(code=43, pci_address='0000:81:00.0', gpu_instance=2, compute_instance=0, text='Ch 00000010')),
    # follow-up events that name their cause, with and without the process
    ('Mar 12 04:11:02 hgx07 kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused '
     'by previous Xid 149',
     dict(code=45, pci_address='0000:dc:00.0', process='python3', text='Ch 00000001', caused_by=149)),
    ('[  913.100000] NVRM: Xid (PCI:0000:81:00): 45, Ch 00000008 caused by previous Xid 79',
     dict(code=45, pid=None, process=None, text='Ch 00000008', caused_by=79)),
    # a raw /dev/kmsg record; dmesg -T; a process name with a space
    ('4,9921,9370042162,-;NVRM: Xid (PCI:0000:17:00): 119, pid=5678, name=python3, Timeout waiting for RPC from GSP',
     dict(code=119, pci_address='0000:17:00.0', timestamp=9370.042162)),
    ('[Fri Aug 30 11:43:14 2024] NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, name=pt_main_thread, Ch 00000008, '
     'errorString CTX SWITCH TIMEOUT, Info 0x58005',
     dict(code=109, time='Fri Aug 30 11:43:14 2024', process='pt_main_thread',
          text='Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005')),
    ('[   77.7] NVRM: Xid (PCI:0000:01:00): 69, pid=3301, name=Web Content, Ch 0000002a, Class Error',
     dict(code=69, process='Web Content', text='Ch 0000002a, Class Error')),
]


@pytest.mark.parametrize('line, expected', XID_LINES)
def test_xid_formats(line, expected):
    events, dropped = dma_faults.parse_xid_events([line])
    assert dropped == 0 and len(events) == 1
    event = events[0]
    assert event['kind'] == 'xid' and event['source'] == 'nvrm'
    for key, value in expected.items():
        if isinstance(value, float):
            value = pytest.approx(value)
        assert event[key] == value, key
    assert event['line'] == line[:300]


def test_fallen_off_the_bus_at_probe_time_in_every_log_form():
    forms = [
        # dmesg: one record, continuation lines indented
        ['[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0',
         '               NVRM: (PCI ID: 10de:26b5) installed in this system has',
         '               NVRM: fallen off the bus and is not responding to commands.'],
        # journalctl -k
        ['Feb 14 05:03:41 gpu-1 kernel: NVRM: The NVIDIA GPU 0000:b3:00.0',
         '                              NVRM: (PCI ID: 10de:26b5) installed in this system has',
         '                              NVRM: fallen off the bus and is not responding to commands.'],
        # rsyslog writes the newlines as #012
        ['Feb 14 05:03:41 gpu-1 kernel: [ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0#012NVRM: (PCI ID: 10de:26b5) '
         'installed in this system has#012NVRM: fallen off the bus and is not responding to commands.'],
        # dmesg -t: no indentation
        ['NVRM: The NVIDIA GPU 0000:b3:00.0', 'NVRM: (PCI ID: 10de:26b5) installed in this system has',
         'NVRM: fallen off the bus and is not responding to commands.'],
    ]
    for lines in forms:
        events, _dropped = dma_faults.parse_xid_events(lines + ['[ 1843.439662] NVRM: The NVIDIA probe routine '
                                                                'failed for 1 device(s).'])
        assert [(e['kind'], e['code'], e['pci_address']) for e in events] == [('fallen-off-bus', None, '0000:b3:00.0')]
        assert 'fallen off the bus and is not responding' in events[0]['text']
        assert '10de:26b5' in events[0]['text']


def test_other_multi_line_nvrm_messages_are_no_events():
    lines = ['[    5.1] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1c82)',
             '          NVRM: installed in this system is not supported by the',
             '          NVRM: NVIDIA 580.159.04 driver release.',
             '[    5.2] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)  ',
             '[    5.3] NVRM: GPU 0000:81:00.0: RmInitAdapter failed! (0x62:0x65:1234)']
    assert dma_faults.parse_xid_events(lines) == ([], 0)


def test_run_time_fallen_off_the_bus_repeats_xid_79_only():
    lines = ["[ 8123.441207] NVRM: Xid (PCI:0000:00:06): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
             '[ 8123.441215] NVRM: GPU 0000:00:06.0: GPU has fallen off the bus.',
             '[ 9000.000001] NVRM: GPU 0000:41:00.0: GPU has fallen off the bus.']
    events, _dropped = dma_faults.parse_xid_events(lines)
    assert [(e['kind'], e['code'], e['pci_address']) for e in events] == [
        ('xid', 79, '0000:00:06.0'), ('fallen-off-bus', None, '0000:41:00.0')]


def test_xid_limit_and_attribution():
    line = '[ 1.0] NVRM: Xid (PCI:0000:81:00): 13, pid=1, name=a, Graphics Exception'
    events, dropped = dma_faults.parse_xid_events([line] * 7, limit=5)
    assert len(events) == 5 and dropped == 2
    dma_faults.attribute_faults(events, [{'pci_address': '0000:81:00.0', 'index': 3, 'name': 'NVIDIA H200'}])
    assert (events[0]['gpu'], events[0]['gpu_index'], events[0]['gpu_name']) == (True, 3, 'NVIDIA H200')


@pytest.mark.parametrize('line', [
    'NVRM: Xid (PCI:0000:81:00): 79\x00, GPU has fallen off the bus.\x1b[0m',
    '\x1b[31m[ 1.0] NVRM: Xid (PCI:0000:81:00): 79, pid=\x00, name=\n, x',
])
def test_xid_control_characters_do_not_break_parsing(line):
    events, _dropped = dma_faults.parse_xid_events([line])
    assert [(e['code'], e['pci_address']) for e in events] == [(79, '0000:81:00.0')]


def test_huge_and_hostile_lines_are_cut_before_matching():
    huge = '[ 1.0] NVRM: Xid (PCI:0000:81:00): 13, ' + 'A' * 2000000
    nested = 'NVRM: ' + '(' * 100000 + 'Xid'
    events, _dropped = dma_faults.parse_xid_events([huge, nested, 'AMD-Vi: Event logged [' * 50000])
    assert [e['code'] for e in events] == [13]
    assert len(events[0]['line']) == 300
    assert dma_faults.parse_kernel_log([huge, 'AMD-Vi: Event logged [' * 50000]) == ([], 0)


# --- lines kept for a capture ---------------------------------------------------------------------------------------

def test_relevant_lines_keep_what_the_parsers_use():
    lines = [
        '[    0.000000] Linux version 6.18.44 (nixbld@localhost) (gcc 15.3.0) #1-NixOS SMP',
        '[    0.000000] Hypervisor detected: KVM',
        '[    0.156354] iommu: Default domain type: Translated',
        '[    3.1] usb 1-1: new high-speed USB device number 2 using xhci_hcd',
        '[  221.562629] AMD-Vi: Event logged [',
        '[  221.565929] IO_PAGE_FAULT device=05:00.0 domain=0x0012 address=0x00000000ff6101b0 flags=0x0070]',
        '[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0',
        '               NVRM: (PCI ID: 10de:26b5) installed in this system has',
        '               NVRM: fallen off the bus and is not responding to commands.',
        '[ 1900.0] audit: type=1400 audit(1700000000.0:1): apparmor="DENIED" name="/home/alice/secret"',
    ]
    kept, omitted = dma_faults.relevant_lines(lines)
    assert omitted == 0
    assert kept == lines[1:3] + lines[4:9]
    kept, omitted = dma_faults.relevant_lines(['[ 1.0] NVRM: ' + 'x' * 5000], max_chars=100)
    assert [len(line) for line in kept] == [100]


def test_relevant_lines_are_bounded():
    lines = ['[ %d.0] NVRM: line %d' % (n, n) for n in range(12000)]
    kept, omitted = dma_faults.relevant_lines(lines, max_lines=1000)
    assert len(kept) == 1000 and omitted == 11000
    assert kept[0] == lines[0] and kept[199] == lines[199] and kept[200] == lines[11200] and kept[-1] == lines[-1]


def test_long_lines_do_not_make_the_parsers_quadratic():
    # a pattern that may start at any position of a long word backtracks over the whole word at every position
    lines = ['[ 1.0] ' + 'x' * 8000 + ' AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x1 address=0x1000 flags=0x0]',
             '[ 2.0] ' + 'y' * 8000 + ' AMD-Vi: Event logged [',
             '[ 3.0] Hypervisor detected: ' + ' ' * 8000 + 'x',
             '[ 4.0] NVRM: Xid (PCI:0000:01:00): 13, ' + ' ' * 8000 + 'caused by previous Xid 7x'] * 25
    started = time.monotonic()
    events, _dropped = dma_faults.parse_kernel_log(lines)
    xids, _dropped = dma_faults.parse_xid_events(lines)
    kept, _omitted = dma_faults.relevant_lines(lines)
    assert time.monotonic() - started < 5
    assert [(e['kind'], e['pci_address']) for e in events] == [('IO_PAGE_FAULT', None)] * 25
    assert [(e['code'], e['caused_by']) for e in xids] == [(13, None)] * 25
    assert len(kept) == 100


# --- Intel DMAR fault reasons: decimal in older kernels, hex from 5.10 ----------------------------------------------
# Kernels before 5.10 print the reason with %02d, later ones with 0x%02x; 129 (decimal) and 0x81 are the same reason.

@pytest.mark.parametrize('line, detail', [
    ('[   12.6] DMAR: [DMA Read] Request device [00:02.0] PASID ffffffff fault addr 9c000000 [fault reason 129] '
     'SM: Present bit in PASID directory entry is clear',
     'fault reason 0x81: SM: Present bit in PASID directory entry is clear'),
    ('[   12.6] DMAR: [DMA Write] Request device [03:00.0] fault addr 100000 [fault reason 06] PTE Read access is '
     'not set', 'fault reason 0x06: PTE Read access is not set'),
    ('[   12.6] DMAR: [DMA Write] Request device [03:00.0] fault addr 100000 [fault reason 12] x',
     'fault reason 0x0c: x'),
    ('[   12.7] DMAR: [INTR-REMAP] Request device [1a:00.0] fault index 1f [fault reason 34] Detected reserved '
     'fields in the IRTE entry', 'fault reason 0x22: Detected reserved fields in the IRTE entry'),
    ('[   12.8] DMAR: [DMA Read NO_PASID] Request device [00:02.0] fault addr 0x7cd80000 [fault reason 0x81] '
     'SM: Present bit in PASID directory entry is clear',
     'fault reason 0x81: SM: Present bit in PASID directory entry is clear'),
    ('[   12.8] DMAR: [DMA Write NO_PASID] Request device [0x03:0x00.0] fault addr 0x100000 [fault reason 0x12] x',
     'fault reason 0x12: x'),
])
def test_dmar_reason_decimal_or_hex(line, detail):
    event = dma_faults.parse_line(line)
    assert event is not None and event['source'] == 'intel-dmar'
    assert event['detail'] == detail


def test_dmar_old_two_record_form_is_one_event():
    # kernels up to 4.0 printed the fault as two lines, without a space after "DMAR:", the reason in decimal
    lines = [
        '[  221.100000] DMAR:[DMA Read] Request device [00:02.0] fault addr 9c000000 ',
        '[  221.100000] DMAR:[fault reason 129] Unknown',
        '[  222.000000] INTR-REMAP: Request device [[1a:00.0] fault index 1f',
        '[  222.000000] INTR-REMAP:[fault reason 34] Detected reserved fields in the IRTE entry',
        '[  223.000000] DMAR:[DMA Write] Request device [03:00.0] fault addr 100000 ',
    ]
    events, dropped = dma_faults.parse_kernel_log(lines)
    assert dropped == 0
    assert [(e['kind'], e['pci_address'], e['address'], e['detail']) for e in events] == [
        ('DMAR_READ_FAULT', '0000:00:02.0', '0x9c000000', 'fault reason 0x81: Unknown'),
        ('DMAR_INTR_REMAP_FAULT', '0000:1a:00.0', '0x1f',
         'fault reason 0x22: Detected reserved fields in the IRTE entry'),
        ('DMAR_WRITE_FAULT', '0000:03:00.0', '0x100000', '')]  # its reason line was lost
    assert events[0]['timestamp'] == pytest.approx(221.1)
    assert events[0]['line'] == lines[0].strip() + ' ' + lines[1]
    # the reason lines are no events of their own, and a capture keeps them
    assert dma_faults.parse_line(lines[1]) is None
    assert dma_faults.relevant_lines(lines)[0] == lines


def test_dmar_old_form_in_one_kmsg_record():
    event = dma_faults.parse_line('3,4471,221100000,-;DMAR:[DMA Read] Request device [00:02.0] fault addr 9c000000 '
                                  '\\x0aDMAR:[fault reason 129] Unknown')
    assert (event['kind'], event['pci_address'], event['detail']) == (
        'DMAR_READ_FAULT', '0000:00:02.0', 'fault reason 0x81: Unknown')
