# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Find IOMMU/DMA fault events and NVIDIA GPU health (Xid) events in a kernel log.

Line forms (the prefix is taken off before the message is matched):

* ``dmesg``: ``[  812.000001] msg``, with the printk caller id ``[  812.000001] [ T1946] msg``, without time
  (``dmesg -t`` or a kernel without ``PRINTK_TIME``) ``msg``, ``dmesg -T`` ``[Fri Aug 30 11:43:09 2024] msg``,
  ``dmesg --time-format iso`` ``2024-08-30T11:43:09,123456+02:00 msg``;
* ``journalctl -k``: ``[    1.234567] host kernel: msg`` (``-o short-monotonic``), ``Mar 20 10:13:33 host kernel: msg``
  (``-o short``/``short-precise``), ``2026-03-20T10:13:33+0000 host kernel: msg`` (``-o short-iso``);
* syslog files (``/var/log/kern.log``): ``Mar 20 10:13:33 host kernel: [  813.402210] msg``;
* raw ``/dev/kmsg`` records: ``3,4471,3023054882,-;msg`` (the third field is microseconds since boot).

Recognised events:

* AMD-Vi event log entries: ``... AMD-Vi: Event logged [IO_PAGE_FAULT ...]``, ``ILLEGAL_DEV_TABLE_ENTRY``,
  ``RMP_PAGE_FAULT``/``RMP_HW_ERROR`` (SEV-SNP) and the other event types. The device is the
  ``<driver> <address>:`` prefix when the kernel knew the device, else the ``device=`` field (with or without
  PCI segment). Kernels around 4.9 printed the header ``AMD-Vi: Event logged [`` and the body
  (``IO_PAGE_FAULT device=05:00.0 ...]``) as two records; the two are joined again;
* Intel VT-d faults: ``DMAR: [DMA Read|DMA Write|INTR-REMAP ...] Request device [bb:dd.f] ...`` (no PCI segment
  in the message: segment 0000 is assumed), and the two-line form of kernels up to 4.0 (``DMAR:[DMA Read] Request
  device [..] fault addr ...`` then ``DMAR:[fault reason 06] ...``, ``INTR-REMAP:`` for interrupt remapping). The
  fault reason is reported as hex (``0x81``); kernels before 5.10 printed it in decimal (``[fault reason 129]``);
* NVIDIA Xid events (:func:`parse_xid_events`): ``NVRM: Xid (PCI:0000:81:00): 79, pid='<unknown>',
  name=<unknown>, GPU has fallen off the bus.`` in the forms of the driver generations: with and without
  ``PCI:``, ``pid=`` and ``name=``, MIG attribution (``GPU-I:02 GPU-CI:00``), follow-up events ending in
  ``caused by previous Xid N``; and the "fallen off the bus" messages that carry no Xid number. Xid 143
  (GPU initialisation / FSP boot failure under the IOMMU) is also a DMA fault event.

Standard library only.
"""

from __future__ import annotations

import re

from ansible_collections.llmserve.sglang.plugins.module_utils.pci import normalize_pci_address

# NVIDIA Xid codes that mean the GPU could not reach (or be reached through) the IOMMU at init time.
DMA_XIDS = (143,)

MAX_EVENTS = 500
_MAX_LINE = 300
# A kernel record is at most about 1 KiB; longer "lines" come from hostile or broken files and are cut
# before any pattern runs on them.
MAX_PARSE_CHARS = 8192
# Lines after an AMD-Vi header (or an NVRM multi-line message) searched for its continuation.
_CONTINUATION_WINDOW = 3

_KMSG_RE = re.compile(r'^\d+,\d+,(?P<usec>\d+),[^;]*;')
_JOURNAL_MONO_RE = re.compile(r'^\[\s*(?P<ts>\d+\.\d+)\] \S+ kernel: ')
_SYSLOG_RE = re.compile(
    r'^(?P<wall>[A-Z][a-z]{2} +\d{1,2} \d{2}:\d{2}:\d{2}(?:\.\d+)?'
    r'|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?) \S+ kernel: ')
_MONO_RE = re.compile(r'^\[\s*(?P<ts>\d+\.\d+)\]\s?')
_CTIME_RE = re.compile(r'^\[(?P<wall>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4})\]\s?')
_ISO_RE = re.compile(r'^(?P<wall>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\s')
_CALLER_RE = re.compile(r'^\[\s*[TC]\d+\]\s?')

_AMD_MARK = 'AMD-Vi: Event logged ['
_AMD_EVENT_RE = re.compile(r'AMD-Vi: Event logged \[(?P<kind>[A-Z][A-Z0-9_]*)(?P<rest>[^\]]*)\]')
# "<driver> <address>: " right before the mark; searched in a short window only (a pattern that may start
# anywhere in a long line would backtrack quadratically)
_AMD_PREFIX_RE = re.compile(r'(?P<prefix>(?P<driver>[\w.-]{1,64}) '
                            r'(?P<bdf>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]): )$')
_AMD_PREFIX_WINDOW = 100
_AMD_BODY_RE = re.compile(r'^(?P<body>[A-Z][A-Z0-9_]* [^\]]*=[^\]]*)\]?\s*$')
_AMD_DEVICE_RE = re.compile(r'device=(?P<dev>[0-9a-fA-F]{2,4}(?::[0-9a-fA-F]{2}){1,2}\.[0-7])')
_AMD_ADDRESS_RE = re.compile(r'(?:address|gpa)=(?P<addr>0x[0-9a-fA-F]+)')
_AMD_DOMAIN_RE = re.compile(r'domain=(?P<dom>0x[0-9a-fA-F]+)')
# Newer kernels: "DMAR: [DMA Read NO_PASID] Request device [00:02.0] fault addr 0x7cd80000 [fault reason 0x01] ...";
# up to 4.0: "DMAR:[DMA Read] Request device [00:02.0] fault addr 9c000000 " and "DMAR:[fault reason 06] ..." as two
# lines (interrupt remapping: "INTR-REMAP: Request device [[1a:00.0] fault index 1f" and "INTR-REMAP:[fault reason
# 34] ..."). The reason is decimal (%02d) before 5.10 and hex (0x%02x) from then on.
_DMAR_RE = re.compile(
    r'(?:DMAR: ?\[(?P<what>DMA Read|DMA Write|INTR-REMAP)[^\]]*\]|(?P<old_ir>INTR-REMAP):) Request device '
    r'\[\[?(?P<dev>[0-9a-fA-Fx:.]+)\]\s*(?:PASID \S+ )?fault (?:addr|index) (?P<addr>(?:0x)?[0-9a-fA-F]+)'
    r'(?:\s*(?:DMAR:|INTR-REMAP:)?\s?\[fault reason (?P<reason>0x[0-9a-fA-F]+|\d+)\])?\s*(?P<msg>.*)'
)
# The reason line of the old two-line form
_DMAR_REASON_RE = re.compile(r'^(?:DMAR|INTR-REMAP):\[fault reason (?:0x[0-9a-fA-F]+|\d+)\]')
# A record read from /dev/kmsg, or written by rsyslog, carries the newline of a two-line message escaped
_ESCAPED_NEWLINES = ('\\x0a', '#012')
_XID_RE = re.compile(
    r'NVRM: Xid \((?:PCI:)?(?P<bdf>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)(?P<attr>[^)]*)\): '
    r'(?P<xid>\d+),?\s*(?P<msg>.*)'
)
_XID_PID_RE = re.compile(r"^pid=(?P<pid>'<unknown>'|<unknown>|\d+)(?:,\s*|\s*$)")
_XID_NAME_RE = re.compile(r'^name=(?P<name>.*?)(?:,\s|,$|$)')
_XID_CAUSE_RE = re.compile(r'caused by previous Xid (?P<cause>\d+)\s*$')
_XID_GI_RE = re.compile(r'GPU-I:(?P<gi>\d+)')
_XID_CI_RE = re.compile(r'GPU-CI:(?P<ci>\d+)')
# Probe time, one printk with embedded newlines (dmesg/journalctl indent the continuation lines, rsyslog
# writes them as #012): "NVRM: The NVIDIA GPU 0000:b3:00.0\nNVRM: (PCI ID: 10de:26b5) installed in this
# system has\nNVRM: fallen off the bus and is not responding to commands."
_FELL_PROBE_RE = re.compile(r'NVRM: The NVIDIA GPU (?P<bdf>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])')
# Run time, printed next to Xid 79: "NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus."
_FELL_RUN_RE = re.compile(
    r'NVRM: GPU (?P<bdf>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]): GPU has fallen off the bus')
_FELL_TEXT = 'fallen off the bus'
FALLEN_OFF_THE_BUS_XID = 79

_DMAR_KINDS = {'DMA Read': 'DMAR_READ_FAULT', 'DMA Write': 'DMAR_WRITE_FAULT', 'INTR-REMAP': 'DMAR_INTR_REMAP_FAULT'}

# Words of the kernel log lines that the readers of gpu_host_facts use (faults, Xid, SEV-SNP, IOMMU,
# hypervisor); a capture keeps only such lines.
_RELEVANT_WORDS = ('NVRM', 'nvidia', 'AMD-Vi', 'DMAR', 'INTR-REMAP', 'iommu', 'IOMMU', 'SEV', 'kvm_amd',
                   'Hypervisor detected')


def split_line(line):
    """Return ``(timestamp, wallclock, message)`` for a kernel log line.

    ``timestamp`` is seconds since boot (float) when the line carries it, ``wallclock`` the logged date/time
    text when it carries one, ``message`` the kernel's own text without these prefixes.
    """
    text = (line or '')[:MAX_PARSE_CHARS].rstrip('\r\n')
    timestamp = None
    wallclock = None
    match = _KMSG_RE.match(text)
    if match:
        timestamp = int(match.group('usec')) / 1e6
        text = text[match.end():]
    else:
        match = _JOURNAL_MONO_RE.match(text)
        if match:
            timestamp = float(match.group('ts'))
            text = text[match.end():]
        else:
            match = _SYSLOG_RE.match(text)
            if match:
                wallclock = match.group('wall')
                text = text[match.end():]
    match = _MONO_RE.match(text)
    if match:
        if timestamp is None:
            timestamp = float(match.group('ts'))
        text = text[match.end():]
    else:
        match = _CTIME_RE.match(text) or (_ISO_RE.match(text) if wallclock is None else None)
        if match:
            wallclock = wallclock or match.group('wall')
            text = text[match.end():]
    match = _CALLER_RE.match(text)
    if match:
        text = text[match.end():]
    return timestamp, wallclock, text


def _timestamp(line):
    return split_line(line)[0]


def _dmar_device(text):
    cleaned = text.replace('0x', '')
    return normalize_pci_address(cleaned)


def _hex(text):
    if text is None:
        return None
    return text if text.startswith('0x') else '0x' + text


def _dmar_reason(text):
    """The fault reason as ``0xNN``: ``0x``-prefixed text is hex, plain digits are decimal (``%02d`` of old kernels)."""
    value = int(text, 16) if text.lower().startswith('0x') else int(text, 10)
    return '0x%02x' % value


def _amd_prefix(text, index):
    """The ``<driver> <address>: `` match right before ``text[index]``, or ``None``."""
    return _AMD_PREFIX_RE.search(text[max(0, index - _AMD_PREFIX_WINDOW):index])


def _amd_event(line):
    """``(event match, prefix match or None)`` of an AMD-Vi event log entry in ``line``, or ``(None, None)``."""
    index = line.find(_AMD_MARK)
    while index >= 0:
        match = _AMD_EVENT_RE.match(line, index)
        if match:
            return match, _amd_prefix(line, index)
        index = line.find(_AMD_MARK, index + 1)
    return None, None


def _amd_header(message):
    """For a message ending in ``AMD-Vi: Event logged [`` (a header whose body was logged as the next record),
    return its ``<driver> <address>: `` prefix text ('' when none); ``None`` for any other message."""
    stripped = message.rstrip()
    if not stripped.endswith(_AMD_MARK):
        return None
    prefix = _amd_prefix(stripped, len(stripped) - len(_AMD_MARK))
    return prefix.group('prefix') if prefix else ''


def parse_line(line):
    """Return one fault event dict for a kernel log line, or ``None`` if the line is not a fault."""
    line = (line or '')[:MAX_PARSE_CHARS]
    match, prefix = _amd_event(line)
    if match:
        rest = match.group('rest')
        address = normalize_pci_address(prefix.group('bdf')) if prefix else None
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
    match = None
    if 'DMAR:' in line or 'INTR-REMAP:' in line:
        for escaped in _ESCAPED_NEWLINES:
            line = line.replace(escaped, ' ')
        match = _DMAR_RE.search(line)
    if match:
        reason = match.group('reason')
        return {
            'source': 'intel-dmar',
            'kind': _DMAR_KINDS[match.group('what') or match.group('old_ir')],
            'pci_address': _dmar_device(match.group('dev')),
            'address': _hex(match.group('addr')),
            'domain': None,
            'detail': ('fault reason %s: %s' % (_dmar_reason(reason), match.group('msg').strip())
                       if reason else match.group('msg').strip()),
        }
    match = _XID_RE.search(line) if 'NVRM: Xid' in line else None
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


def _continuation(lines, index, pattern, stop=None):
    """``(index, message)`` of the first of the ``_CONTINUATION_WINDOW`` lines after ``lines[index]`` whose message
    ``pattern`` matches, or ``(None, None)``; the search ends early at a message for which ``stop`` is true."""
    for offset in range(1, _CONTINUATION_WINDOW + 1):
        if index + offset >= len(lines):
            break
        message = split_line(lines[index + offset])[2].strip()
        if pattern.match(message):
            return index + offset, message
        if stop is not None and stop(message):
            break
    return None, None


def _amd_continuation(lines, index):
    """For an AMD-Vi header at ``lines[index]``, return ``(body index, body message)`` or ``(None, None)``."""
    return _continuation(lines, index, _AMD_BODY_RE)


def _dmar_continuation(lines, index):
    """For an Intel fault at ``lines[index]`` logged without its reason, return ``(index, message)`` of the reason
    line that old kernels printed next (``DMAR:[fault reason 06] ...``), or ``(None, None)``."""
    # at the next fault the search ends: the reason of this one was lost
    return _continuation(lines, index, _DMAR_REASON_RE, stop=lambda message: parse_line(message) is not None)


def parse_kernel_log(lines, limit=MAX_EVENTS):
    """Parse log lines; return ``(events, dropped)`` where ``dropped`` counts events beyond ``limit``.

    Each event has ``source``, ``kind``, ``pci_address`` (``dddd:bb:dd.f`` or ``None``), ``address``
    (faulting address), ``domain`` (AMD-Vi protection domain), ``detail``, ``timestamp`` (seconds since
    boot when the line carries one) and ``line`` (the log line, shortened). An AMD-Vi event split over
    two records, and an Intel fault whose reason old kernels printed on a second line, count once, with the first
    line's time and both lines.
    """
    lines = list(lines or ())
    events = []
    dropped = 0
    consumed = set()
    for index, line in enumerate(lines):
        if index in consumed:
            continue
        event = parse_line(line)
        text = (line or '')[:MAX_PARSE_CHARS].strip()
        if event is None:
            header = _amd_header(split_line(line)[2]) if _AMD_MARK in text else None
            if header is None:
                continue
            body_index, body = _amd_continuation(lines, index)
            if body_index is None:
                continue
            consumed.add(body_index)
            joined = '%s%s%s]' % (header, _AMD_MARK, body.rstrip(']').rstrip())
            event = parse_line(joined)
            if event is None:
                continue
            text = '%s %s' % (text, lines[body_index][:MAX_PARSE_CHARS].strip())
        elif event['source'] == 'intel-dmar' and '[fault reason ' not in text:
            body_index, body = _dmar_continuation(lines, index)
            if body_index is not None:
                joined = parse_line('%s %s' % (split_line(line)[2], body))
                if joined is not None:
                    consumed.add(body_index)
                    event = joined
                    text = '%s %s' % (text, lines[body_index][:MAX_PARSE_CHARS].strip())
        if len(events) >= limit:
            dropped += 1
            continue
        event['timestamp'] = _timestamp(line)
        event['line'] = text[:_MAX_LINE]
        events.append(event)
    return events, dropped


# ---------------------------------------------------------------------------------------------------
# NVIDIA Xid events
# ---------------------------------------------------------------------------------------------------

def _xid_details(message):
    """Split the text after ``<code>,`` into ``(pid, process, text, caused_by)``."""
    rest = message.strip()
    pid = None
    process = None
    match = _XID_PID_RE.match(rest)
    if match:
        value = match.group('pid')
        pid = int(value) if value.isdigit() else None
        rest = rest[match.end():]
        match = _XID_NAME_RE.match(rest)
        if match:
            name = match.group('name').strip()
            process = None if name in ('', '<unknown>') else name
            rest = rest[match.end():]
    caused_by = None
    match = _XID_CAUSE_RE.search(rest)
    if match:
        caused_by = int(match.group('cause'))
        rest = rest[:match.start()]
    return pid, process, rest.strip(), caused_by


def _xid_event(kind, code, address, text, line, timestamp, wallclock):
    return {
        'source': 'nvrm',
        'kind': kind,
        'code': code,
        'pci_address': address,
        'gpu_instance': None,
        'compute_instance': None,
        'pid': None,
        'process': None,
        'text': text,
        'caused_by': None,
        'timestamp': timestamp,
        'time': wallclock,
        'line': line.strip()[:_MAX_LINE],
    }


def _fallen_probe_text(lines, index, message):
    """Join a probe-time "fallen off the bus" message with its continuation lines (or ``None``)."""
    parts = [message.replace('#012', ' ').replace('\\x0a', ' ')]
    for offset in range(1, _CONTINUATION_WINDOW):
        if _FELL_TEXT in ' '.join(parts) or index + offset >= len(lines):
            break
        following = lines[index + offset][:MAX_PARSE_CHARS]
        # continuation lines are indented (dmesg, journalctl) or start right away with NVRM: (dmesg -t)
        if not (following[:1].isspace() or split_line(following)[2].startswith('NVRM: ')):
            break
        parts.append(split_line(following.strip())[2])
    text = ' '.join(part.replace('NVRM: ', '').strip() for part in parts)
    return text if _FELL_TEXT in text else None


def parse_xid_events(lines, limit=MAX_EVENTS):
    """Return ``(events, dropped)``: the NVIDIA Xid events of a kernel log, in log order.

    Each event has ``source`` (``nvrm``), ``kind`` (``xid``, or ``fallen-off-bus`` for the messages that
    carry no Xid number), ``code`` (the Xid, ``None`` for ``fallen-off-bus``), ``pci_address`` (function 0:
    the driver prints domain, bus and device only), ``gpu_instance``/``compute_instance`` (MIG attribution),
    ``pid`` and ``process`` (when the driver knew them), ``text`` (the message after the code),
    ``caused_by`` (the Xid a follow-up event names in ``caused by previous Xid N``), ``timestamp``
    (seconds since boot), ``time`` (the logged date/time text) and ``line``. The run-time message
    ``NVRM: GPU <addr>: GPU has fallen off the bus.`` is dropped after an Xid 79 of the same GPU, which
    it only repeats.
    """
    lines = list(lines or ())
    events = []
    dropped = 0
    fell = set()
    for index, line in enumerate(lines):
        if 'NVRM' not in (line or '')[:MAX_PARSE_CHARS]:
            continue
        timestamp, wallclock, message = split_line(line)
        event = None
        match = _XID_RE.search(message)
        if match:
            address = normalize_pci_address(match.group('bdf'))
            code = int(match.group('xid'))
            pid, process, text, caused_by = _xid_details(match.group('msg'))
            event = _xid_event('xid', code, address, text, line, timestamp, wallclock)
            gi = _XID_GI_RE.search(match.group('attr'))
            ci = _XID_CI_RE.search(match.group('attr'))
            event.update(pid=pid, process=process, caused_by=caused_by,
                         gpu_instance=int(gi.group('gi')) if gi else None,
                         compute_instance=int(ci.group('ci')) if ci else None)
            if code == FALLEN_OFF_THE_BUS_XID:
                fell.add(address)
        else:
            match = _FELL_RUN_RE.search(message)
            if match:
                address = normalize_pci_address(match.group('bdf'))
                if address in fell:
                    continue
                event = _xid_event('fallen-off-bus', None, address, 'GPU has fallen off the bus.', line, timestamp,
                                   wallclock)
            else:
                match = _FELL_PROBE_RE.search(message)
                text = _fallen_probe_text(lines, index, message[match.start():]) if match else None
                if text is None:
                    continue
                event = _xid_event('fallen-off-bus', None, normalize_pci_address(match.group('bdf')), text, line,
                                   timestamp, wallclock)
        if len(events) >= limit:
            dropped += 1
            continue
        events.append(event)
    return events, dropped


def relevant_lines(lines, max_lines=5000, max_chars=2048):
    """Return ``(kept, omitted)``: the kernel log lines the readers use, for a capture.

    Keeps lines naming NVRM/nvidia, AMD-Vi, DMAR, the IOMMU, SEV or the hypervisor, plus the continuation
    lines that follow an AMD-Vi header or an NVRM message. Each line is cut to ``max_chars``; beyond
    ``max_lines`` the first fifth and the last four fifths are kept and ``omitted`` counts the rest.
    """
    lines = list(lines or ())
    keep = [False] * len(lines)
    for index, line in enumerate(lines):
        head = (line or '')[:MAX_PARSE_CHARS]
        if not any(word in head for word in _RELEVANT_WORDS):
            continue
        keep[index] = True
        amd_header = _AMD_MARK in head and _amd_header(split_line(head)[2]) is not None
        for offset in range(1, _CONTINUATION_WINDOW + 1):
            if index + offset >= len(lines):
                break
            following = (lines[index + offset] or '')[:MAX_PARSE_CHARS]
            if following[:1].isspace() or (amd_header and _AMD_BODY_RE.match(split_line(following)[2].strip())):
                keep[index + offset] = True
    kept = [(line or '')[:max_chars] for line, wanted in zip(lines, keep) if wanted]
    if len(kept) <= max_lines:
        return kept, 0
    head = max_lines // 5
    tail = max_lines - head
    return kept[:head] + kept[-tail:], len(kept) - max_lines


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
