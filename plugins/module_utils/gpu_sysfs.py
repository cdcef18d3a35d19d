# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Read-only readers for the sysfs/procfs/etc facts of a GPU host.

Every path is read below a *root* directory (``/`` on a real host, a fixture tree in tests).  Symbolic
links are resolved the way ``chroot`` would resolve them: an absolute link target is taken relative to
the root and ``..`` never climbs above it, so a fixture tree can never make the readers look at the
machine that runs the tests.

Nothing in this file writes anywhere.  Standard library only (runs on managed hosts, Python 3.9+).
"""

from __future__ import annotations

import os
import re
import stat

from ansible_collections.llmserve.sglang.plugins.module_utils import gpu_ids
from ansible_collections.llmserve.sglang.plugins.module_utils.nvidia_modules import parse_proc_modules
from ansible_collections.llmserve.sglang.plugins.module_utils.pci import normalize_pci_address

# PCI classes nvidia.ko binds: VGA compatible controller (0x0300) and 3D controller (0x0302).
GPU_PCI_CLASSES = (0x0300, 0x0302)

_MAX_SYMLINK_HOPS = 40
_MAX_SCRIPT_BYTES = 256 * 1024


class HostRecorder(object):
    """What a :class:`HostRoot` looked at, for a capture (see ``host_capture``).

    Paths are host paths (as seen below the root). ``files`` maps a path to the bytes read (``None``: the file
    was only seen to exist), ``modes`` the permission bits of files checked for being executable, ``links`` a
    symbolic link to its raw target, ``dirs`` a directory to the names listed in it (``None``: only seen to
    exist), ``devices`` a character device node to ``(major, minor)``.
    """

    def __init__(self):
        self.files = {}
        self.modes = {}
        self.links = {}
        self.dirs = {}
        self.devices = {}

    def file(self, path, data=None):
        known = self.files.get(path)
        if data is None:
            self.files.setdefault(path, None)
        elif known is None or len(data) > len(known):
            # the same file may be read whole and with a limit: keep the longest read
            self.files[path] = data

    def directory(self, path, names=None):
        known = self.dirs.get(path)
        if names is None:
            self.dirs.setdefault(path, None)
        else:
            self.dirs[path] = set(names) | (known or set())


class HostRoot(object):
    """Read files of a host whose filesystem starts at ``root``.

    With a ``recorder`` (:class:`HostRecorder`) every file read, directory listed, link followed and device
    node seen is noted, so that a capture can hold exactly what the readers used.
    """

    def __init__(self, root='/', recorder=None):
        self.root = os.path.abspath(root or '/')
        self.recorder = recorder

    @property
    def is_live(self):
        """True when the root is the real ``/`` of the machine running this code."""
        return self.root == '/'

    def _join(self, parts):
        if not parts:
            return self.root
        return os.path.join(self.root, *parts)

    def _resolve_parts(self, path):
        """Host path components of ``path`` with every symlink followed inside the root; ``None`` on a loop."""
        pending = [part for part in path.split('/') if part not in ('', '.')]
        done = []
        hops = 0
        while pending:
            part = pending.pop(0)
            if part == '..':
                if done:
                    done.pop()
                continue
            candidate = self._join(done + [part])
            if os.path.islink(candidate):
                hops += 1
                if hops > _MAX_SYMLINK_HOPS:
                    return None
                target = os.readlink(candidate)
                if self.recorder is not None:
                    self.recorder.links['/' + '/'.join(done + [part])] = target
                if target.startswith('/'):
                    done = []
                pending = [p for p in target.split('/') if p not in ('', '.')] + pending
            else:
                done.append(part)
        return done

    def resolve(self, path):
        """Resolve ``path`` (absolute, host view) to a real path below the root, following symlinks.

        Returns ``None`` on a symlink loop.
        """
        parts = self._resolve_parts(path)
        return None if parts is None else self._join(parts)

    def _located(self, path):
        """``(real path, host path)`` of ``path`` after resolving symlinks, or ``(None, None)``."""
        parts = self._resolve_parts(path)
        if parts is None:
            return None, None
        return self._join(parts), '/' + '/'.join(parts)

    def _found(self, path, test):
        """Whether ``path`` resolves to something ``test`` (``os.path.exists``, ``isdir``, ``isfile``) accepts; a hit
        is recorded as a directory or a file."""
        real, host_path = self._located(path)
        found = real is not None and test(real)
        if found and self.recorder is not None:
            if os.path.isdir(real):
                self.recorder.directory(host_path)
            else:
                self.recorder.file(host_path)
        return found

    def exists(self, path):
        return self._found(path, os.path.exists)

    def isdir(self, path):
        return self._found(path, os.path.isdir)

    def isfile(self, path):
        return self._found(path, os.path.isfile)

    def is_executable(self, path):
        real, host_path = self._located(path)
        if real is None or not os.path.isfile(real):
            return False
        mode = os.stat(real).st_mode
        if self.recorder is not None:
            self.recorder.file(host_path)
            self.recorder.modes[host_path] = stat.S_IMODE(mode)
        return bool(mode & stat.S_IXUSR)

    def read(self, path, default=None, limit=None):
        """Text of a file (UTF-8, undecodable bytes replaced), or ``default`` if it cannot be read."""
        real, host_path = self._located(path)
        if real is None:
            return default
        try:
            with open(real, 'rb') as handle:
                data = handle.read() if limit is None else handle.read(limit)
        except (IOError, OSError):
            return default
        if self.recorder is not None:
            self.recorder.file(host_path, data)
        return data.decode('utf-8', 'replace')

    def read_value(self, path, default=None):
        """First line of a file, stripped (sysfs attribute style)."""
        text = self.read(path, limit=65536)
        if text is None:
            return default
        text = text.strip()
        return text.splitlines()[0].strip() if text else ''

    def readlink(self, path):
        """Raw target of a symlink (not resolved), or ``None`` if ``path`` is not a symlink."""
        parent_parts = self._resolve_parts(os.path.dirname(path.rstrip('/')) or '/')
        if parent_parts is None:
            return None
        name = os.path.basename(path.rstrip('/'))
        candidate = os.path.join(self._join(parent_parts), name)
        if not os.path.islink(candidate):
            return None
        target = os.readlink(candidate)
        if self.recorder is not None:
            self.recorder.links['/' + '/'.join(parent_parts + [name])] = target
        return target

    def link_name(self, path):
        """Basename of a symlink's target (``driver`` -> ``nvidia``), or ``None``."""
        target = self.readlink(path)
        if not target:
            return None
        return os.path.basename(target.rstrip('/')) or None

    def listdir(self, path):
        real, host_path = self._located(path)
        if real is None:
            return []
        try:
            names = sorted(os.listdir(real))
        except (IOError, OSError):
            return []
        if self.recorder is not None:
            self.recorder.directory(host_path, names)
        return names

    def char_device(self, path):
        """``(major, minor)`` of a character device node (symlinks followed inside the root), else ``None``."""
        real, host_path = self._located(path)
        if real is None:
            return None
        try:
            info = os.stat(real)
        except (IOError, OSError):
            return None
        if not stat.S_ISCHR(info.st_mode):
            return None
        numbers = (os.major(info.st_rdev), os.minor(info.st_rdev))
        if self.recorder is not None:
            self.recorder.devices[host_path] = numbers
        return numbers


# ---------------------------------------------------------------------------------------------------
# Kernel command line
# ---------------------------------------------------------------------------------------------------

CMDLINE_IOMMU_KEYS = ('iommu', 'amd_iommu', 'intel_iommu', 'iommu.passthrough', 'iommu.strict')

_TRUE_WORDS = ('1', 'y', 'yes', 'on', 'true')
_FALSE_WORDS = ('0', 'n', 'no', 'off', 'false')


def split_cmdline(text):
    """Split a kernel command line into ``(name, value)`` pairs the way the kernel does.

    Double quotes group text containing spaces (``opt="a b"`` and ``"opt=a b"``) and are removed;
    the first ``=`` separates name and value (``value`` is ``None`` for a bare flag).  Everything after
    a lone ``--`` belongs to init and is ignored.
    """
    tokens = []
    current = []
    in_quote = False
    started = False
    for char in (text or '').strip():
        if char == '"':
            in_quote = not in_quote
            started = True
            continue
        if char.isspace() and not in_quote:
            if started:
                tokens.append(''.join(current))
            current = []
            started = False
            continue
        current.append(char)
        started = True
    if started:
        tokens.append(''.join(current))
    pairs = []
    for token in tokens:
        if token == '--':
            break
        if '=' in token:
            name, value = token.split('=', 1)
        else:
            name, value = token, None
        pairs.append((name, value))
    return pairs


def _param_name(name):
    # The kernel treats '-' and '_' in parameter names as the same character.
    return name.replace('-', '_')


def _to_bool(value):
    if value is None:
        return None
    lowered = value.strip().lower()
    if lowered in _TRUE_WORDS:
        return True
    if lowered in _FALSE_WORDS:
        return False
    return None


def parse_cmdline(text):
    """Turn ``/proc/cmdline`` into the IOMMU facts that matter for the GPU checks.

    Returns a dict with:

    * ``cmdline``: the last value of each of ``iommu``, ``amd_iommu``, ``intel_iommu``,
      ``iommu.passthrough`` and ``iommu.strict`` (``None`` when absent; several occurrences of the
      comma-separated ``iommu``/``amd_iommu`` options are joined with ``,`` in order);
    * ``cmdline_nvidia``: every ``nvidia.NVreg_*`` parameter (name without the ``nvidia.`` prefix);
    * ``passthrough_requested``: ``True`` for ``iommu=pt``/``iommu.passthrough=1``, ``False`` for
      ``iommu=nopt``/``iommu.passthrough=0``, ``None`` if the command line does not choose (the last
      choice wins, as in the kernel);
    * ``iommu_off`` (x86 ``iommu=off``: no IOMMU of any vendor is used), ``amd_iommu_off``,
      ``amd_iommu_pgtbl_v2``, ``intel_iommu_off``: booleans;
    * ``strict``: ``iommu.strict`` as a boolean or ``None``.
    """
    flags = dict((key, None) for key in CMDLINE_IOMMU_KEYS)
    nvidia = {}
    passthrough = None
    iommu_off = False
    amd_off = False
    pgtbl_v2 = False
    intel_off = None
    for raw_name, value in split_cmdline(text):
        name = _param_name(raw_name)
        if name.startswith('nvidia.NVreg_'):
            nvidia[raw_name[len('nvidia.'):]] = value
            continue
        if name not in CMDLINE_IOMMU_KEYS:
            continue
        if name in ('iommu', 'amd_iommu') and flags[name] and value is not None:
            flags[name] = flags[name] + ',' + value
        else:
            flags[name] = value
        options = [opt.strip() for opt in (value or '').split(',') if opt.strip()]
        if name == 'iommu':
            for opt in options:
                if opt == 'pt':
                    passthrough = True
                elif opt == 'nopt':
                    passthrough = False
                elif opt == 'off':
                    iommu_off = True
        elif name == 'iommu.passthrough':
            choice = _to_bool(value)
            if choice is not None:
                passthrough = choice
        elif name == 'amd_iommu':
            amd_off = amd_off or 'off' in options
            # pgtbl_v1 wins over pgtbl_v2 in the same value; neither keeps the earlier choice
            if 'pgtbl_v1' in options or 'pgtbl_v2' in options:
                pgtbl_v2 = 'pgtbl_v1' not in options
        elif name == 'intel_iommu':
            # off wins over on in the same value; neither keeps the earlier choice
            if 'off' in options or 'on' in options:
                intel_off = 'off' in options
    return {
        'cmdline': flags,
        'cmdline_nvidia': nvidia,
        'passthrough_requested': passthrough,
        'iommu_off': iommu_off,
        'amd_iommu_off': amd_off,
        'amd_iommu_pgtbl_v2': pgtbl_v2,
        'intel_iommu_off': bool(intel_off),
        'strict': _to_bool(flags['iommu.strict']),
    }


# ---------------------------------------------------------------------------------------------------
# IOMMU
# ---------------------------------------------------------------------------------------------------

def _group_sort_key(name):
    return (0, int(name)) if name.isdigit() else (1, name)


def read_iommu_groups(host):
    """Return ``{group_number: {'type': str|None, 'devices': [pci addresses]}}``."""
    groups = {}
    for name in sorted(host.listdir('/sys/kernel/iommu_groups'), key=_group_sort_key):
        base = '/sys/kernel/iommu_groups/%s' % name
        if not host.isdir(base):
            continue
        key = int(name) if name.isdigit() else name
        groups[key] = {
            'type': host.read_value(base + '/type') or None,
            'devices': host.listdir(base + '/devices'),
        }
    return groups


def read_iommu(host, cmdline_text):
    """IOMMU facts: enabled, vendor, instances, group types and the command-line flags."""
    instances = host.listdir('/sys/class/iommu')
    groups = read_iommu_groups(host)
    vendor = None
    if any(name.startswith('ivhd') for name in instances):
        vendor = 'amd'
    elif any(name.startswith('dmar') for name in instances):
        vendor = 'intel'
    group_types = {}
    identity_groups = []
    for number, group in groups.items():
        kind = group['type'] or 'unknown'
        group_types[kind] = group_types.get(kind, 0) + 1
        if group['type'] == 'identity':
            identity_groups.append({'group': number, 'devices': group['devices']})
    facts = {
        'enabled': bool(groups) or bool(instances),
        'vendor': vendor,
        'instances': instances,
        'group_count': len(groups),
        'group_types': group_types,
        'identity_groups': identity_groups,
    }
    facts.update(parse_cmdline(cmdline_text))
    return facts, groups


# ---------------------------------------------------------------------------------------------------
# SEV-SNP
# ---------------------------------------------------------------------------------------------------

_SNP_LOG_PATTERNS = (
    (re.compile(r'SEV-SNP: RMP table physical range'), 'kernel log: RMP table set up'),
    (re.compile(r'AMD-Vi: IOMMU SNP support enabled'), 'kernel log: AMD-Vi SNP support enabled'),
    (re.compile(r'SEV-SNP enabled \(ASIDs'), 'kernel log: kvm_amd SEV-SNP enabled'),
)


def detect_sev_snp(host, log_lines=None):
    """Return ``(enabled, evidence)``: whether the host runs with SEV-SNP, and why we think so.

    Sources: ``/sys/module/kvm_amd/parameters/sev_snp`` (``Y``) and, when a kernel log was read, the
    boot messages of the RMP set-up, of the AMD IOMMU SNP enablement and of kvm_amd.  The CPU flag in
    ``/proc/cpuinfo`` only means the CPU could do it and is not used.
    """
    evidence = []
    value = host.read_value('/sys/module/kvm_amd/parameters/sev_snp')
    if value is not None and value.upper() in ('Y', '1'):
        evidence.append('/sys/module/kvm_amd/parameters/sev_snp = %s' % value)
    for line in log_lines or ():
        for pattern, label in _SNP_LOG_PATTERNS:
            if label not in evidence and pattern.search(line):
                evidence.append(label)
    return bool(evidence), evidence


# ---------------------------------------------------------------------------------------------------
# NVIDIA driver
# ---------------------------------------------------------------------------------------------------

_VERSION_RE = re.compile(r'Kernel Module(?: for \S+)?\s+(?P<version>\d+\.\d+(?:\.\d+)?)\s')
_PARAM_NUM_RE = re.compile(r'^(?P<key>\w+): (?P<value>\d+)$')
_PARAM_STR_RE = re.compile(r'^(?P<key>\w+): "(?P<value>.*)"$')
NVIDIA_MODULES = ('nvidia', 'nvidia_uvm', 'nvidia_modeset', 'nvidia_drm', 'nvidia_peermem')


def parse_nvidia_params(text):
    """Parse ``/proc/driver/nvidia/params`` by key: numbers become ints, quoted strings stay strings."""
    params = {}
    for line in (text or '').splitlines():
        line = line.rstrip('\n')
        match = _PARAM_NUM_RE.match(line)
        if match:
            params[match.group('key')] = int(match.group('value'))
            continue
        match = _PARAM_STR_RE.match(line)
        if match:
            params[match.group('key')] = match.group('value')
    return params


def parse_nvidia_version(text):
    """Return ``(version, flavor)`` from ``/proc/driver/nvidia/version`` (flavor ``open``/``proprietary``)."""
    if not text:
        return None, None
    first = text.splitlines()[0] if text.splitlines() else ''
    match = _VERSION_RE.search(first + ' ')
    version = match.group('version') if match else None
    flavor = 'open' if 'Open Kernel Module' in first else ('proprietary' if 'Kernel Module' in first else None)
    return version, flavor


def parse_gpu_information(text):
    """Parse ``/proc/driver/nvidia/gpus/<addr>/information`` (``Label: <tabs> value`` lines)."""
    info = {}
    for line in (text or '').splitlines():
        if ':' not in line:
            continue
        label, value = line.split(':', 1)
        info[label.strip()] = value.strip()
    return info


def read_nvidia_driver(host):
    """Facts of the loaded nvidia.ko (the registry dwords are parsed by the caller)."""
    version_text = host.read('/proc/driver/nvidia/version')
    version, flavor = parse_nvidia_version(version_text)
    if version is None:
        version = host.read_value('/sys/module/nvidia/version') or None
    modules = {}
    for name in NVIDIA_MODULES:
        if host.isdir('/sys/module/%s' % name):
            refcnt = host.read_value('/sys/module/%s/refcnt' % name)
            modules[name] = int(refcnt) if refcnt and refcnt.isdigit() else None
    # /proc/modules lists the loaded modules even where /sys/module is not readable (or not captured)
    listed = parse_proc_modules(host.read('/proc/modules', default=''))
    for name in NVIDIA_MODULES:
        if name in listed and name not in modules:
            modules[name] = listed[name]['refcount']
    params_text = host.read('/proc/driver/nvidia/params')
    loaded = version_text is not None or 'nvidia' in modules or host.isdir('/proc/driver/nvidia')
    return {
        'loaded': bool(loaded),
        'version': version,
        'flavor': flavor,
        'modules': modules,
        'params': parse_nvidia_params(params_text) if params_text is not None else {},
    }


# ---------------------------------------------------------------------------------------------------
# Virtualization
# ---------------------------------------------------------------------------------------------------

_CPUINFO_FLAGS_RE = re.compile(r'^flags\s*:\s*(?P<flags>.*)$', re.M)
_HYPERVISOR_LOG = 'Hypervisor detected: '
# The first processor block of /proc/cpuinfo is enough (every CPU of a guest carries the flag); hosts with
# hundreds of CPUs have a cpuinfo of several hundred KiB.
_CPUINFO_LIMIT = 16384


def detect_virtualization(host, log_lines=None):
    """Return ``{hypervisor, hypervisor_vendor, evidence}``: whether this is a virtual machine.

    ``hypervisor`` is the x86 CPU flag of that name in ``/proc/cpuinfo``, which the hypervisor sets for its
    guests. The vendor comes from the boot message ``Hypervisor detected: KVM`` or ``/sys/hypervisor/type``
    (Xen), null when neither says.
    """
    evidence = []
    text = host.read('/proc/cpuinfo', limit=_CPUINFO_LIMIT) or ''
    match = _CPUINFO_FLAGS_RE.search(text.split('\n\n', 1)[0])
    hypervisor = bool(match) and 'hypervisor' in match.group('flags').split()
    if hypervisor:
        evidence.append('/proc/cpuinfo: hypervisor flag')
    vendor = None
    for line in log_lines or ():
        index = line.find(_HYPERVISOR_LOG)
        found = line[index + len(_HYPERVISOR_LOG):].strip()[:64] if index >= 0 else ''
        if found:
            vendor = found
            evidence.append('kernel log: %s%s' % (_HYPERVISOR_LOG, vendor))
            break
    xen = host.read_value('/sys/hypervisor/type')
    if xen:
        vendor = vendor or xen
        evidence.append('/sys/hypervisor/type = %s' % xen)
    return {'hypervisor': hypervisor, 'hypervisor_vendor': vendor, 'evidence': evidence}


# ---------------------------------------------------------------------------------------------------
# Device nodes
# ---------------------------------------------------------------------------------------------------

# A replay tree (a capture, a fixture) keeps the facts that files cannot hold in this directory below its
# root. It is read only when the root is not / : on a live host only real device nodes count.
REPLAY_DIR = '/.gpu_host_facts'
DEVICE_TABLE = REPLAY_DIR + '/device-nodes'
_DEVICE_TABLE_RE = re.compile(r'^c (?P<major>\d+):(?P<minor>\d+) (?P<path>/\S+)$')
_PROC_DEVICE_RE = re.compile(r'^(?P<major>\d+)\s+(?P<name>\S.*)$')


def parse_proc_devices(text):
    """The ``Character devices:`` section of ``/proc/devices`` as ``[{major, name}]`` (in file order)."""
    devices = []
    section = None
    for line in (text or '').splitlines():
        stripped = line.strip()
        if stripped in ('Character devices:', 'Block devices:'):
            section = stripped
            continue
        if section != 'Character devices:':
            continue
        match = _PROC_DEVICE_RE.match(stripped)
        if match:
            devices.append({'major': int(match.group('major')), 'name': match.group('name')})
    return devices


def read_char_devices(host):
    """``[{major, name}]`` of the character device drivers of ``/proc/devices``."""
    return parse_proc_devices(host.read('/proc/devices', default=''))


def is_nvidia_device_path(path):
    """True for ``/dev/nvidia*`` (not below a subdirectory) and ``/dev/nvidia-caps/*``."""
    parts = path.split('/')
    if len(parts) == 3 and parts[1] == 'dev':
        return parts[2].startswith('nvidia')
    return len(parts) == 4 and parts[1] == 'dev' and parts[2] == 'nvidia-caps' and bool(parts[3])


def parse_device_table(text):
    """``{path: (major, minor)}`` from a replay tree's device table (``c MAJOR:MINOR PATH`` lines)."""
    table = {}
    for line in (text or '').splitlines():
        match = _DEVICE_TABLE_RE.match(line.strip())
        if match and is_nvidia_device_path(match.group('path')):
            table[match.group('path')] = (int(match.group('major')), int(match.group('minor')))
    return table


def format_device_table(devices):
    """Text of a device table for ``{path: (major, minor)}``."""
    return ''.join('c %d:%d %s\n' % (numbers[0], numbers[1], path) for path, numbers in sorted(devices.items()))


def read_device_nodes(host):
    """``[{path, major, minor}]`` of the character devices ``/dev/nvidia*`` and ``/dev/nvidia-caps/*``.

    Numbers come from the nodes themselves (``st_rdev``). Below a root other than ``/``, nodes that the
    tree cannot hold as real device files come from its device table (``/.gpu_host_facts/device-nodes``);
    a real node at the same path wins.
    """
    found = {}
    candidates = ['/dev/%s' % name for name in host.listdir('/dev') if name.startswith('nvidia')]
    if host.isdir('/dev/nvidia-caps'):
        candidates.extend('/dev/nvidia-caps/%s' % name for name in host.listdir('/dev/nvidia-caps'))
    for path in candidates:
        numbers = host.char_device(path)
        if numbers is not None:
            found[path] = numbers
    if not host.is_live:
        for path, numbers in parse_device_table(host.read(DEVICE_TABLE, default='')).items():
            if path not in found:
                found[path] = numbers
                if host.recorder is not None:
                    # a capture of a replay tree carries its table on
                    host.recorder.devices[path] = numbers
    return [{'path': path, 'major': found[path][0], 'minor': found[path][1]} for path in sorted(found)]


# ---------------------------------------------------------------------------------------------------
# GPUs
# ---------------------------------------------------------------------------------------------------

def _hex_value(text):
    try:
        return int(text, 16)
    except (TypeError, ValueError):
        return None


def _int_value(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def scan_gpu_functions(host, groups=None):
    """Return ``(gpus, virtual_functions)`` of the NVIDIA display-class PCI functions (VGA 0x0300xx / 3D 0x0302xx).

    ``gpus`` are the physical functions, in PCI address order, each with its ``virtual_functions`` (the addresses
    of its SR-IOV VFs). A function with a ``physfn`` link is an SR-IOV virtual function: it shows the IDs and class
    of its GPU but is a slice of it (a vGPU host hands them to virtual machines), so it goes into
    ``virtual_functions`` (dicts with ``pci_address``, ``physical_function``, ``gpu_index``, ``device_id``,
    ``pci_class``, ``name``, ``iommu_group``, ``iommu_domain_type``, ``driver``) and never counts as a GPU.
    Inside a VM a passed-through VF has no ``physfn`` link and is that VM's GPU.

    ``groups`` is the result of :func:`read_iommu_groups` (read here when not given).
    """
    if groups is None:
        groups = read_iommu_groups(host)
    gpus = []
    vfs = []
    for entry in host.listdir('/sys/bus/pci/devices'):
        address = normalize_pci_address(entry)
        if address is None:
            continue
        base = '/sys/bus/pci/devices/%s' % entry
        vendor = _hex_value(host.read_value(base + '/vendor'))
        pci_class = _hex_value(host.read_value(base + '/class'))
        if vendor != gpu_ids.NVIDIA_VENDOR_ID or pci_class is None or (pci_class >> 8) not in GPU_PCI_CLASSES:
            continue
        device = _hex_value(host.read_value(base + '/device'))
        if device is None:
            continue
        ident = gpu_ids.classify(device)
        group_name = host.link_name(base + '/iommu_group')
        group = int(group_name) if group_name and group_name.isdigit() else group_name
        group_info = groups.get(group) if group is not None else None
        if group is not None and group_info is None:
            type_value = host.read_value('/sys/kernel/iommu_groups/%s/type' % group_name)
            group_info = {'type': type_value or None,
                          'devices': host.listdir('/sys/kernel/iommu_groups/%s/devices' % group_name)}
        physfn = host.link_name(base + '/physfn')
        if physfn is not None:
            vfs.append({
                'pci_address': address,
                'physical_function': normalize_pci_address(physfn) or physfn,
                'gpu_index': None,
                'device_id': '0x%04x' % device,
                'pci_class': '0x%06x' % pci_class,
                'name': ident['name'],
                'iommu_group': group,
                'iommu_domain_type': group_info['type'] if group_info else None,
                'driver': host.link_name(base + '/driver'),
            })
            continue
        numa = _int_value(host.read_value(base + '/numa_node'))
        sub_vendor = _hex_value(host.read_value(base + '/subsystem_vendor'))
        sub_device = _hex_value(host.read_value(base + '/subsystem_device'))
        info = parse_gpu_information(host.read('/proc/driver/nvidia/gpus/%s/information' % address))
        minor = info.get('Device Minor')
        gpus.append({
            'pci_address': address,
            'vendor_id': '0x%04x' % vendor,
            'device_id': '0x%04x' % device,
            'subsystem_vendor_id': '0x%04x' % sub_vendor if sub_vendor is not None else None,
            'subsystem_device_id': '0x%04x' % sub_device if sub_device is not None else None,
            'pci_class': '0x%06x' % pci_class,
            'name': ident['name'],
            'chip': ident['chip'],
            'architecture': ident['architecture'],
            'architecture_known': ident['known'],
            'numa_node': numa if numa is not None and numa >= 0 else None,
            'local_cpulist': host.read_value(base + '/local_cpulist'),
            'iommu_group': group,
            'iommu_group_devices': group_info['devices'] if group_info else [],
            'iommu_domain_type': group_info['type'] if group_info else None,
            'iommu_instance': host.link_name(base + '/iommu'),
            'driver': host.link_name(base + '/driver'),
            'model': info.get('Model'),
            'uuid': info.get('GPU UUID'),
            'vbios': info.get('Video BIOS'),
            'device_minor': int(minor) if minor and minor.isdigit() else None,
            'virtual_functions': [],
        })
    gpus.sort(key=lambda gpu: gpu['pci_address'])
    vfs.sort(key=lambda vf: vf['pci_address'])
    by_address = {}
    for index, gpu in enumerate(gpus):
        gpu['index'] = index
        by_address[gpu['pci_address']] = gpu
    for vf in vfs:
        gpu = by_address.get(vf['physical_function'])
        if gpu is not None:
            vf['gpu_index'] = gpu['index']
            gpu['virtual_functions'].append(vf['pci_address'])
    return gpus, vfs


def scan_gpus(host, groups=None):
    """The physical GPUs of :func:`scan_gpu_functions` (SR-IOV virtual functions left out), in PCI address order."""
    return scan_gpu_functions(host, groups)[0]


def scan_pci(host):
    """What the PCI scan saw: ``{sysfs, devices, vendors, nvidia_functions}``.

    ``sysfs`` is whether ``/sys/bus/pci/devices`` exists, ``devices`` the number of PCI functions in it,
    ``vendors`` the number of functions per vendor ID, ``nvidia_functions`` the NVIDIA functions that are
    not GPUs (HDMI audio, NVSwitch bridges, ...) with ``pci_address``, ``device_id``, ``pci_class`` and
    ``driver``; SR-IOV virtual functions of a GPU are not among them (:func:`scan_gpu_functions` lists them).
    Tells "no NVIDIA GPU" apart from "no PCI at all" and from "NVIDIA parts but no GPU".
    """
    present = host.isdir('/sys/bus/pci/devices')
    vendors = {}
    others = []
    count = 0
    for entry in host.listdir('/sys/bus/pci/devices'):
        address = normalize_pci_address(entry)
        if address is None:
            continue
        count += 1
        base = '/sys/bus/pci/devices/%s' % entry
        vendor = _hex_value(host.read_value(base + '/vendor'))
        key = '0x%04x' % vendor if vendor is not None else 'unknown'
        vendors[key] = vendors.get(key, 0) + 1
        if vendor != gpu_ids.NVIDIA_VENDOR_ID:
            continue
        pci_class = _hex_value(host.read_value(base + '/class'))
        if pci_class is not None and (pci_class >> 8) in GPU_PCI_CLASSES:
            continue
        device = _hex_value(host.read_value(base + '/device'))
        others.append({
            'pci_address': address,
            'device_id': '0x%04x' % device if device is not None else None,
            'pci_class': '0x%06x' % pci_class if pci_class is not None else None,
            'driver': host.link_name(base + '/driver'),
        })
    return {'sysfs': present, 'devices': count, 'vendors': vendors,
            'nvidia_functions': sorted(others, key=lambda item: item['pci_address'])}


# ---------------------------------------------------------------------------------------------------
# Boot-time writers of 'identity' into /sys/kernel/iommu_groups/*/type
# ---------------------------------------------------------------------------------------------------

SYSTEMD_UNIT_DIRS = (
    '/etc/systemd/system',
    '/run/systemd/system',
    '/usr/local/lib/systemd/system',
    '/usr/lib/systemd/system',
    '/lib/systemd/system',
)
TMPFILES_DIRS = ('/etc/tmpfiles.d', '/run/tmpfiles.d', '/usr/local/lib/tmpfiles.d', '/usr/lib/tmpfiles.d',
                 '/lib/tmpfiles.d')
UDEV_RULES_DIRS = ('/etc/udev/rules.d', '/run/udev/rules.d', '/usr/lib/udev/rules.d', '/lib/udev/rules.d')
CRON_FILES = ('/etc/crontab',)
CRON_DIRS = ('/etc/cron.d',)

_IDENTITY_WORD = re.compile(r'\bidentity\b')
_EXEC_KEYS = ('ExecStartPre', 'ExecStart', 'ExecStartPost', 'ExecCondition', 'ExecReload')
_ABS_PATH = re.compile(r'(?<![\w$])(/[\w.+@%/-]+)')


def writes_identity(text):
    """True when ``text`` both names IOMMU group attributes and the word ``identity``.

    This is the heuristic used for units, scripts, tmpfiles/udev rules and cron files: a boot-time
    file that touches ``/sys/kernel/iommu_groups/*/type`` (or a udev ``iommu_group/type`` attribute) and
    mentions ``identity`` is taken to switch groups to identity (passthrough) domains.
    """
    return bool(text) and 'iommu_group' in text and bool(_IDENTITY_WORD.search(text))


def _evidence(path, text, limit=5):
    lines = []
    for number, line in enumerate(text.splitlines(), 1):
        if _IDENTITY_WORD.search(line) and not line.lstrip().startswith('#'):
            lines.append('%s:%d: %s' % (path, number, line.strip()))
            if len(lines) >= limit:
                break
    return lines


def _read_script(host, path):
    if not host.isfile(path):
        return None
    real = host.resolve(path)
    try:
        if os.path.getsize(real) > _MAX_SCRIPT_BYTES:
            return None
    except OSError:
        return None
    text = host.read(path, limit=_MAX_SCRIPT_BYTES)
    if text is None or '\x00' in text[:8192]:
        return None  # binary (an interpreter, a compiled program)
    return text


def _exec_paths(text):
    paths = []
    for line in text.splitlines():
        stripped = line.strip()
        if '=' not in stripped:
            continue
        key, value = stripped.split('=', 1)
        if key.strip() not in _EXEC_KEYS:
            continue
        for found in _ABS_PATH.findall(value):
            if found not in paths:
                paths.append(found)
    return paths


def _unit_links(host):
    """Unit names linked into some ``*.wants``/``*.requires`` directory (i.e. enabled or pulled in)."""
    linked = set()
    for directory in SYSTEMD_UNIT_DIRS:
        for entry in host.listdir(directory):
            if entry.endswith(('.wants', '.requires')) and host.isdir('%s/%s' % (directory, entry)):
                linked.update(host.listdir('%s/%s' % (directory, entry)))
    return linked


def _is_masked(host, dirs, name):
    for directory in dirs[:2]:  # masks live in /etc or /run
        target = host.readlink('%s/%s' % (directory, name))
        if target == '/dev/null':
            return True
    return False


def _scan_systemd_units(host):
    found = []
    seen = set()
    linked = _unit_links(host)
    seen_dirs = set()
    for directory in SYSTEMD_UNIT_DIRS:
        real_dir = host.resolve(directory)
        if real_dir is None or real_dir in seen_dirs:
            continue
        seen_dirs.add(real_dir)
        for name in host.listdir(directory):
            if not name.endswith('.service') or name in seen:
                continue
            path = '%s/%s' % (directory, name)
            if not host.isfile(path):
                continue  # a mask (link to /dev/null) or a dangling link
            seen.add(name)
            texts = [(path, host.read(path, default='', limit=_MAX_SCRIPT_BYTES))]
            for drop_dir in SYSTEMD_UNIT_DIRS:
                for conf in host.listdir('%s/%s.d' % (drop_dir, name)):
                    if conf.endswith('.conf'):
                        conf_path = '%s/%s.d/%s' % (drop_dir, name, conf)
                        texts.append((conf_path, host.read(conf_path, default='', limit=_MAX_SCRIPT_BYTES)))
            evidence = []
            scripts = []
            for text_path, text in texts:
                if writes_identity(text):
                    evidence.extend(_evidence(text_path, text))
                for script in _exec_paths(text):
                    content = _read_script(host, script)
                    if content is not None and writes_identity(content):
                        scripts.append(script)
                        evidence.extend(_evidence(script, content))
            if not evidence:
                continue
            if name.endswith('@.service'):
                prefix = name[:-len('.service')]
                enabled = any(link.startswith(prefix) and link.endswith('.service') for link in linked)
            else:
                enabled = name in linked
            masked = _is_masked(host, SYSTEMD_UNIT_DIRS, name)
            found.append({
                'kind': 'systemd',
                'name': name,
                'path': path,
                'enabled': enabled and not masked,
                'masked': masked,
                'scripts': scripts,
                'evidence': evidence,
            })
    return found


def _scan_rule_dirs(host, dirs, suffix, kind):
    found = []
    seen = set()
    for directory in dirs:
        for name in host.listdir(directory):
            if not name.endswith(suffix) or name in seen:
                continue
            seen.add(name)
            path = '%s/%s' % (directory, name)
            if host.readlink(path) == '/dev/null' or not host.isfile(path):
                continue
            text = host.read(path, default='', limit=_MAX_SCRIPT_BYTES)
            if writes_identity(text):
                found.append({'kind': kind, 'name': name, 'path': path, 'enabled': True, 'masked': False,
                              'scripts': [], 'evidence': _evidence(path, text)})
    return found


def _scan_plain_files(host, paths, kind, enabled_check=None):
    found = []
    for path in paths:
        text = _read_script(host, path)
        if text is not None and writes_identity(text):
            enabled = enabled_check(path) if enabled_check else True
            found.append({'kind': kind, 'name': os.path.basename(path), 'path': path, 'enabled': enabled,
                          'masked': False, 'scripts': [], 'evidence': _evidence(path, text)})
    return found


def _sysv_enabled(host, name):
    for level in ('S', '2', '3', '4', '5'):
        for link in host.listdir('/etc/rc%s.d' % level):
            if link.startswith('S') and link[3:] == name:
                return True
    return False


def scan_identity_units(host):
    """Find boot-time units, rules and scripts that write ``identity`` into IOMMU group ``type`` files.

    Looks at systemd services (their unit file, drop-ins and the scripts their ``Exec*=`` lines run),
    tmpfiles.d and udev rules, ``/etc/rc.local``, SysV init scripts and cron files.  Each hit is a dict
    with ``kind`` (systemd, tmpfiles, udev, rc-local, sysv, cron), ``name``, ``path``, ``enabled``
    (whether it runs at the next boot), ``masked``, ``scripts`` (matching scripts run by a unit) and
    ``evidence`` (``path:line: text`` lines that mention ``identity``).
    """
    found = _scan_systemd_units(host)
    found.extend(_scan_rule_dirs(host, TMPFILES_DIRS, '.conf', 'tmpfiles'))
    found.extend(_scan_rule_dirs(host, UDEV_RULES_DIRS, '.rules', 'udev'))
    found.extend(_scan_plain_files(host, ['/etc/rc.local'], 'rc-local', host.is_executable))
    init_scripts = ['/etc/init.d/%s' % name for name in host.listdir('/etc/init.d')]
    found.extend(_scan_plain_files(host, init_scripts, 'sysv',
                                   lambda path: _sysv_enabled(host, os.path.basename(path))))
    cron = list(CRON_FILES)
    for directory in CRON_DIRS:
        cron.extend('%s/%s' % (directory, name) for name in host.listdir(directory))
    found.extend(_scan_plain_files(host, cron, 'cron'))
    return found
