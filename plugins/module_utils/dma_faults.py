# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Find IOMMU/DMA fault events in a kernel log and attribute them to PCI devices and GPUs.

Recognised messages (dmesg, ``journalctl -k`` in any of its time formats, or ``/var/log/kern.log``):

* AMD-Vi event log entries: ``... AMD-Vi: Event logged [IO_PAGE_FAULT ...]``,
  ``ILLEGAL_DEV_TABLE_ENTRY``, ``RMP_PAGE_FAULT``/``RMP_HW_ERROR`` (SEV-SNP) and the other event types.
  The device is the ``<driver> <address>:`` prefix when the kernel knew the device, else the
  ``device=`` field (with or without PCI segment);
* Intel VT-d faults: ``DMAR: [DMA Read|DMA Write|INTR-REMAP ...] Request device [bb:dd.f] ...``
  (no PCI segment in the message: segment 0000 is assumed);
* NVIDIA Xid 143 (GPU initialisation / FSP boot failure): ``NVRM: Xid (PCI:0000:81:00): 143, ...``
  (no function number in the message: function 0 is assumed).

Standard library only.
"""

from __future__ import annotations

import re

from ansible_collections.llmserve.sglang.plugins.module_utils.gpu_sysfs import normalize_pci_address

# NVIDIA Xid codes that mean the GPU could not reach (or be reached through) the IOMMU at init time.
DMA_XIDS = (143,)

MAX_EVENTS = 500
_MAX_LINE = 300

_TIMESTAMP_RE = re.compile(r'\[\s*(?P<ts>\d+\.\d{3,9})\]')
_AMD_RE = re.compile(
    r'(?:(?P<driver>[\w.-]+) (?P<bdf>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]): )?'
    r'AMD-Vi: Event logged \[(?P<kind>[A-Z][A-Z0-9_]*)(?P<rest>[^\]]*)\]'
)
_AMD_DEVICE_RE = re.compile(r'device=(?P<dev>[0-9a-fA-F]{2,4}(?::[0-9a-fA-F]{2}){1,2}\.[0-7])')
_AMD_ADDRESS_RE = re.compile(r'(?:address|gpa)=(?P<addr>0x[0-9a-fA-F]+)')
_AMD_DOMAIN_RE = re.compile(r'domain=(?P<dom>0x[0-9a-fA-F]+)')
_DMAR_RE = re.compile(
    r'DMAR: \[(?P<what>DMA Read|DMA Write|INTR-REMAP)[^\]]*\] Request device '
    r'\[(?P<dev>[0-9a-fA-Fx:.]+)\]\s*(?:PASID \S+ )?fault (?:addr|index) (?P<addr>(?:0x)?[0-9a-fA-F]+)'
    r'(?: \[fault reason (?P<reason>(?:0x)?[0-9a-fA-F]+)\])?\s*(?P<msg>.*)'
)
_XID_RE = re.compile(r'NVRM: Xid \(PCI:(?P<bdf>[0-9a-fA-F:.]+)\): (?P<xid>\d+),?\s*(?P<msg>.*)')

_DMAR_KINDS = {'DMA Read': 'DMAR_READ_FAULT', 'DMA Write': 'DMAR_WRITE_FAULT', 'INTR-REMAP': 'DMAR_INTR_REMAP_FAULT'}


def _timestamp(line):
    match = _TIMESTAMP_RE.search(line)
    return float(match.group('ts')) if match else None


def _dmar_device(text):
    cleaned = text.replace('0x', '')
    return normalize_pci_address(cleaned)


def _hex(text):
    if text is None:
        return None
    return text if text.startswith('0x') else '0x' + text


def parse_line(line):
    """Return one fault event dict for a kernel log line, or ``None`` if the line is not a fault."""
    match = _AMD_RE.search(line)
    if match:
        rest = match.group('rest')
        address = normalize_pci_address(match.group('bdf'))
        if address is None:
            device = _AMD_DEVICE_RE.search(rest)
            address = normalize_pci_address(device.group('dev')) if device else None
        fault_address = _AMD_ADDRESS_RE.search(rest)
        domain = _AMD_DOMAIN_RE.search(rest)
        return {
            'source': 'amd-vi',
            'kind': match.group('kind'),
            'pci_address': address,
            'address': fault_address.group('addr') if fault_address else None,
            'domain': domain.group('dom') if domain else None,
            'detail': rest.strip(' ,'),
        }
    match = _DMAR_RE.search(line)
    if match:
        return {
            'source': 'intel-dmar',
            'kind': _DMAR_KINDS[match.group('what')],
            'pci_address': _dmar_device(match.group('dev')),
            'address': _hex(match.group('addr')),
            'domain': None,
            'detail': ('fault reason %s: %s' % (_hex(match.group('reason')), match.group('msg').strip())
                       if match.group('reason') else match.group('msg').strip()),
        }
    match = _XID_RE.search(line)
    if match and int(match.group('xid')) in DMA_XIDS:
        return {
            'source': 'nvrm',
            'kind': 'XID_%s' % match.group('xid'),
            'pci_address': normalize_pci_address(match.group('bdf')),
            'address': None,
            'domain': None,
            'detail': match.group('msg').strip(),
        }
    return None


def parse_kernel_log(lines, limit=MAX_EVENTS):
    """Parse log lines; return ``(events, dropped)`` where ``dropped`` counts events beyond ``limit``.

    Each event has ``source``, ``kind``, ``pci_address`` (``dddd:bb:dd.f`` or ``None``), ``address``
    (faulting address), ``domain`` (AMD-Vi protection domain), ``detail``, ``timestamp`` (seconds since
    boot when the line carries one) and ``line`` (the log line, shortened).
    """
    events = []
    dropped = 0
    for line in lines:
        event = parse_line(line)
        if event is None:
            continue
        if len(events) >= limit:
            dropped += 1
            continue
        event['timestamp'] = _timestamp(line)
        event['line'] = line.strip()[:_MAX_LINE]
        events.append(event)
    return events, dropped


def attribute_faults(events, gpus):
    """Mark each event with ``gpu`` (bool), ``gpu_index`` and ``gpu_name`` from the scanned GPUs."""
    by_address = dict((gpu['pci_address'], gpu) for gpu in gpus)
    for event in events:
        gpu = by_address.get(event.get('pci_address'))
        event['gpu'] = gpu is not None
        event['gpu_index'] = gpu['index'] if gpu is not None else None
        event['gpu_name'] = gpu['name'] if gpu is not None else None
    return events


def count_by_device(events):
    """``{pci_address: number of events}`` (events without an address are counted under ``None``)."""
    counts = {}
    for event in events:
        key = event.get('pci_address')
        counts[key] = counts.get(key, 0) + 1
    return counts
