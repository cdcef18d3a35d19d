# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Support bundle of a GPU host: what ``gpu_host_facts`` read, as a tar that is itself a host tree.

``gpu_host_facts`` reads the host through a :class:`~gpu_sysfs.HostRoot` with a
:class:`~gpu_sysfs.HostRecorder`; this file turns the record into a gzip tar whose members are host paths
without the leading ``/``. Unpacked, the tar is a root that ``gpu_host_facts`` (option ``root``) reads to the
same facts; ``tests/fixtures/hosts/materialize.py --import-capture`` turns it into a fixture manifest.

What goes in:

* everything read, listed, followed or seen below ``/sys`` and ``/proc`` (kernel state; names listed in a
  directory but never read become empty files, so that listings replay), but not the files of processes
  (``/proc/<pid>``, ``/proc/self``);
* from elsewhere (``/etc``, ``/usr``, ...) only the boot units, scripts and links that the identity-unit scan
  reported, and an installed ``nvidia-smi`` as an empty executable: other unit files and cron entries are read
  by the scan but may hold unrelated secrets, and their content changes no fact;
* the NVIDIA device nodes as a table (``.gpu_host_facts/device-nodes``, ``c MAJOR:MINOR PATH``): a tar of real
  device nodes could only be unpacked with privileges;
* the kernel log lines the parsers use (``var/log/kern.log``, bounded), never the whole log;
* ``.gpu_host_facts/capture.json``: format, time, kernel log source and counts, truncated files.

Standard library only.
"""

from __future__ import annotations

import io
import json
import os
import posixpath
import tarfile
import tempfile
import time

from ansible_collections.llmserve.sglang.plugins.module_utils import gpu_sysfs

FORMAT = 1
KERNEL_LOG_PATH = '/var/log/kern.log'
CAPTURE_INFO = gpu_sysfs.REPLAY_DIR + '/capture.json'
MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_TOTAL_BYTES = 64 * 1024 * 1024
KERNEL_LOG_MAX_LINES = 5000
KERNEL_LOG_MAX_CHARS = 2048


class CaptureError(Exception):
    """The bundle cannot be built or written."""


def capture_filter(identity_units=(), extra_paths=()):
    """Return ``keep(path)``: whether a recorded host path belongs in the bundle (see the module doc)."""
    paths = set(path for path in extra_paths if path)
    names = set()
    for unit in identity_units or ():
        paths.add(unit.get('path'))
        paths.update(unit.get('scripts') or ())
        names.add(unit.get('name'))
    names.discard(None)

    def keep(path):
        parts = path.split('/')
        if len(parts) > 2 and parts[1] == 'proc' and (parts[2].isdigit() or parts[2] in ('self', 'thread-self')):
            # a process's own files, reached only through paths named in unit Exec lines: no fact comes from them
            return False
        if len(parts) > 1 and parts[1] in ('sys', 'proc'):
            return True
        if path in paths:
            return True
        base = parts[-1]
        parent = parts[-2] if len(parts) > 2 else ''
        for name in names:
            # the unit file itself, its wants/requires/mask links and its drop-ins
            if base == name or parent == name + '.d':
                return True
            if name.endswith('@.service') and base.startswith(name[:-len('.service')]) and base.endswith('.service'):
                return True
            # SysV rc links: S20name, K01name
            if len(base) > 3 and base[0] in 'SK' and base[1:3].isdigit() and base[3:] == name:
                return True
        return False

    return keep


def _file_entry(data, mode, path, truncated):
    data = data or b''
    if len(data) > MAX_FILE_BYTES:
        truncated.append(path)
        data = data[:MAX_FILE_BYTES]
    return {'type': 'file', 'data': data, 'mode': mode}


def plan_entries(recorder, keep, kernel_log_lines=None, info=None):
    """``{host path: entry}`` of the bundle and the list of truncated paths.

    Entries are ``{'type': 'dir'}``, ``{'type': 'link', 'target': raw target}`` and
    ``{'type': 'file', 'data': bytes, 'mode': int}``.
    """
    entries = {}
    truncated = []
    for path, target in recorder.links.items():
        if keep(path):
            entries[path] = {'type': 'link', 'target': target}
    for path, names in recorder.dirs.items():
        if path != '/' and path not in entries and keep(path):
            entries[path] = {'type': 'dir'}
        # kept names of a directory that is not kept itself (a unit's link in a .wants directory) still go in;
        # the tar makes their parent directories
        for name in sorted(names or ()):
            child = posixpath.join(path, name)
            if child in entries or not keep(child):
                continue
            if child in recorder.dirs:
                entries[child] = {'type': 'dir'}
            elif child not in recorder.files and child not in recorder.links:
                entries[child] = _file_entry(b'', 0o644, child, truncated)
    for path, data in recorder.files.items():
        if (path in entries and entries[path]['type'] != 'file') or not keep(path):
            continue
        entries[path] = _file_entry(data, recorder.modes.get(path, 0o644), path, truncated)
    devices = dict((path, numbers) for path, numbers in recorder.devices.items() if gpu_sysfs.is_nvidia_device_path(path))
    if devices:
        entries[gpu_sysfs.DEVICE_TABLE] = {'type': 'file', 'mode': 0o644,
                                           'data': gpu_sysfs.format_device_table(devices).encode('utf-8')}
    if kernel_log_lines is not None:
        text = ''.join(line + '\n' for line in kernel_log_lines)
        entries[KERNEL_LOG_PATH] = {'type': 'file', 'mode': 0o644, 'data': text.encode('utf-8', 'replace')}
    if info is not None:
        body = dict(info, truncated=sorted(truncated), device_nodes=len(devices))
        entries[CAPTURE_INFO] = {'type': 'file', 'mode': 0o644,
                                 'data': (json.dumps(body, indent=2, sort_keys=True) + '\n').encode('utf-8')}
    total = sum(len(entry['data']) for entry in entries.values() if entry['type'] == 'file')
    if total > MAX_TOTAL_BYTES:
        raise CaptureError('the capture would hold %d bytes, more than the limit of %d' % (total, MAX_TOTAL_BYTES))
    return entries, sorted(truncated)


def summarize(entries):
    """Counts of an entry plan: files, links, dirs and bytes of file content."""
    counts = {'files': 0, 'links': 0, 'dirs': 0, 'bytes': 0}
    for entry in entries.values():
        counts[entry['type'] + 's'] += 1
        if entry['type'] == 'file':
            counts['bytes'] += len(entry['data'])
    return counts


def write_bundle(dest, entries, mtime=None):
    """Write ``entries`` as a gzip tar at ``dest`` (mode 0600, replaced atomically); return its size."""
    mtime = int(time.time() if mtime is None else mtime)
    directory = os.path.dirname(os.path.abspath(dest))
    if not os.path.isdir(directory):
        raise CaptureError('the directory %s of the capture file does not exist' % directory)
    fd, tmp = tempfile.mkstemp(prefix='.gpu-host-capture-', suffix='.tmp', dir=directory)
    try:
        with os.fdopen(fd, 'wb') as raw:
            with tarfile.open(fileobj=raw, mode='w:gz', format=tarfile.PAX_FORMAT) as tar:
                for path in sorted(entries):
                    entry = entries[path]
                    member = tarfile.TarInfo(path.lstrip('/'))
                    member.mtime = mtime
                    member.uid = member.gid = 0
                    member.uname = member.gname = 'root'
                    if entry['type'] == 'dir':
                        member.type = tarfile.DIRTYPE
                        member.mode = 0o755
                        tar.addfile(member)
                    elif entry['type'] == 'link':
                        member.type = tarfile.SYMTYPE
                        member.linkname = entry['target']
                        member.mode = 0o777
                        tar.addfile(member)
                    else:
                        member.size = len(entry['data'])
                        member.mode = entry['mode'] & 0o7777
                        tar.addfile(member, io.BytesIO(entry['data']))
        os.chmod(tmp, 0o600)
        os.replace(tmp, dest)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return os.path.getsize(dest)
