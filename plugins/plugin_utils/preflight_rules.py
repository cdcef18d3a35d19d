# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The IOMMU preflight rules: turn ``gpu_host_facts`` output into errors, warnings and a report.

Used by the ``iommu_preflight`` role through the ``llmserve.sglang.iommu_preflight_evaluate`` filter.
Every message starts with the rule name and says what was found (naming the GPU by PCI address and
name), why it matters and how to fix it.

Rules (``E`` = error, ``W`` = warning):

* ``blackwell-identity`` (E): a selected GPU of an architecture in ``identity_forbidden_architectures``
  (Blackwell and later) sits in an identity IOMMU domain.
* ``snp-identity`` (E): on an SEV-SNP host, any IOMMU group in an identity domain.
* ``snp-cmdline`` (E): on an SEV-SNP host, ``iommu=pt``/``iommu.passthrough=1``, ``amd_iommu=off``,
  ``iommu=off`` or ``amd_iommu=pgtbl_v2`` on the kernel command line.
* ``snp-kernel`` (W): SEV-SNP host on a kernel from 6.13 on, which may accept identity domains.
* ``identity-units`` (E): an enabled boot unit/rule/script writes ``identity`` into group ``type`` files
  (systemd units are disabled by the role instead when ``disable_identity_units`` is true; a present but
  disabled one is a warning).
* ``dma-faults`` (E, or W with ``dma_faults='warn'``): IOMMU/DMA fault events of this boot attributed
  to a selected GPU; faults of other devices, SR-IOV virtual functions of a GPU included, are warnings.
* ``iommu-required`` (E when ``require_iommu``, else W ``iommu-off`` on a host with NVIDIA GPUs): the IOMMU is off;
  in a virtual machine (CPU flag ``hypervisor``) the message says that the VM has no virtual IOMMU.
* ``identity-allowed`` (W): another GPU in an identity domain on a host without SEV-SNP.
* ``numa-span`` (W): the selected GPUs are on more than one NUMA node.
* ``no-gpu`` (E, or W with ``require_gpu=False``): the host has no NVIDIA GPU; says what the PCI scan saw.
* ``driver`` (E for selected GPUs, W for others): a GPU is bound to no driver (the NVIDIA driver not loaded, or
  it did not take the GPU) or to another one (``vfio-pci``, ``nouveau``).
* ``gpu-xid`` (E for selected GPUs, W otherwise): NVIDIA Xid events of this boot whose code (or the code they
  were caused by) is in ``fatal_xids``, and "fallen off the bus" messages; other Xid events are warnings.
  Xid 143 is left to ``dma-faults``.
* ``kernel-log`` (W): no kernel log could be read, so the fault and Xid rules were not checked.
* ``gpu-selection`` (E): an entry of the GPU selection names no GPU of the host (an SR-IOV virtual function is
  not a GPU: the facts list physical functions only, so indexes and P2P pairs count physical GPUs).

Standard library only.
"""

from __future__ import annotations

import re

from ansible_collections.llmserve.sglang.plugins.module_utils.dma_faults import DMA_XIDS
from ansible_collections.llmserve.sglang.plugins.module_utils.pci import normalize_pci_address

DEFAULT_FORBIDDEN_ARCHITECTURES = ('blackwell', 'rubin')
# Xid codes after which the GPU cannot serve until it is reset or the host rebooted (NVIDIA's Xid catalog):
# double-bit ECC (48), micro-controller halt (62), row-remapper failure (64), fallen off the bus (79), uncontained
# ECC (95), GSP RPC timeout and GSP error (119, 120), unrecovered ECC (140).
DEFAULT_FATAL_XIDS = (48, 62, 64, 79, 95, 119, 120, 140)
XID_NAMES = {
    13: 'graphics engine exception', 31: 'GPU memory page fault', 43: 'GPU stopped processing',
    45: 'preemptive cleanup after an earlier error', 48: 'double-bit ECC error', 62: 'internal micro-controller halt',
    63: 'ECC page retirement or row remapping event', 64: 'ECC page retirement or row remapper failure',
    74: 'NVLink error', 79: 'GPU has fallen off the bus', 92: 'high single-bit ECC error rate',
    94: 'contained ECC error', 95: 'uncontained ECC error', 109: 'context switch timeout', 119: 'GSP RPC timeout',
    120: 'GSP error', 140: 'unrecovered ECC error', 154: 'GPU recovery action changed',
}
DMA_FAULT_POLICIES = ('fail', 'warn')
NEXT_BOOT_POLICIES = ('fail', 'warn', 'ignore')
# First kernel release whose AMD IOMMU driver accepts identity domains on SEV-SNP hosts (until the fix
# "iommu/amd: Block identity domain when SNP enabled" is in; distributions may carry either change).
SNP_IDENTITY_REGRESSION = (6, 13)

_SELECT_VAR = 'iommu_preflight_gpus'
# The gpu_host_facts booleans that stand for a kernel command-line setting, and that setting as the messages write it
_CMDLINE_SETTINGS = {'iommu_off': 'iommu=off', 'amd_iommu_off': 'amd_iommu=off', 'intel_iommu_off': 'intel_iommu=off',
                     'amd_iommu_pgtbl_v2': 'amd_iommu=pgtbl_v2'}


def kernel_version(release):
    """``"6.14.0-37-generic"`` -> ``(6, 14)``; ``None`` when the release cannot be read."""
    match = re.match(r'^(\d+)\.(\d+)', release or '')
    return (int(match.group(1)), int(match.group(2))) if match else None


def _cmdline_settings(iommu, names):
    """The settings (``iommu=off``, ...) of the booleans ``names`` that are true in the ``iommu`` facts, in order."""
    return [_CMDLINE_SETTINGS[name] for name in names if iommu.get(name)]


def _gpu_label(gpu):
    return '%s (%s)' % (gpu['pci_address'], gpu.get('name') or 'NVIDIA GPU')


def _virtual_function_owners(gpus):
    """``{VF address: GPU}`` for the SR-IOV virtual functions the facts list under each GPU."""
    owners = {}
    for gpu in gpus:
        for address in gpu.get('virtual_functions') or ():
            owners[address] = gpu
    return owners


def _virtual_function_label(address, gpu):
    return 'SR-IOV virtual function %s of GPU %s (index %s)' % (address, gpu['pci_address'], gpu.get('index'))


def _selection_detail(item, address, gpus, nvidia_functions):
    if address is None:
        if isinstance(item, bool) or not (isinstance(item, int) or str(item).strip().isdigit()):
            return ': it is neither a GPU index nor a PCI address'
        return ': this host has %d NVIDIA GPU(s), indexes %s' % (
            len(gpus), ', '.join(str(gpu['index']) for gpu in gpus) or 'none')
    owner = _virtual_function_owners(gpus).get(address)
    if owner is not None:
        return (': PCI address %s is an SR-IOV virtual function of GPU %s (index %s), a slice of that GPU for '
                'virtual machines, not a GPU of its own; select the GPU itself'
                % (address, owner['pci_address'], owner.get('index')))
    for function in nvidia_functions or ():
        if function.get('pci_address') == address:
            return (': PCI address %s is an NVIDIA function of class %s, not a GPU (display or 3D controller)'
                    % (address, function.get('pci_class')))
    return ': there is no NVIDIA GPU at PCI address %s (absent, not passed through, or removed after an error)' % address


def select_gpus(gpus, selection, var_name=_SELECT_VAR, nvidia_functions=None):
    """Return ``(selected, errors)`` for a list of PCI addresses and/or indexes (empty: all GPUs)."""
    if not selection:
        return list(gpus), []
    by_address = dict((gpu['pci_address'], gpu) for gpu in gpus)
    by_index = dict((gpu['index'], gpu) for gpu in gpus)
    known = ', '.join('%d=%s' % (gpu['index'], gpu['pci_address']) for gpu in gpus) or 'none'
    selected = []
    errors = []
    for position, item in enumerate(selection):
        gpu = None
        if isinstance(item, bool):
            gpu = None
        elif isinstance(item, int) or (isinstance(item, str) and item.strip().isdigit()):
            gpu = by_index.get(int(item))
        else:
            gpu = by_address.get(normalize_pci_address(item))
        if gpu is None:
            address = None
            if not isinstance(item, (bool, int)) and not str(item).strip().isdigit():
                address = normalize_pci_address(item)
            errors.append(
                'gpu-selection: %s[%d] = %r names no NVIDIA GPU of this host%s. Why: the checks and the P2P test '
                'must run on the GPUs the server will use. Fix: use a GPU index or PCI address from this list '
                '(index=address): %s.' % (var_name, position, item,
                                          _selection_detail(item, address, gpus, nvidia_functions), known))
        elif gpu not in selected:
            selected.append(gpu)
    return selected, errors


def _fix_identity_group(group, devices):
    device_list = ' '.join(devices) or '<device>'
    return ('remove what sets identity (iommu=pt or iommu.passthrough=1 on the kernel command line, or a boot '
            'unit writing /sys/kernel/iommu_groups/%s/type), then reboot; or, without a reboot, unbind every '
            'device of the group from its driver, write DMA-FQ to /sys/kernel/iommu_groups/%s/type and bind '
            'them again (devices: %s). Never write identity as a remedy.' % (group, group, device_list))


def _rule_blackwell_identity(gpus, selected, forbidden):
    errors = []
    warnings = []
    for gpu in gpus:
        if gpu.get('architecture') not in forbidden or gpu.get('iommu_domain_type') != 'identity':
            continue
        text = ('blackwell-identity: GPU %s, architecture %s, is in IOMMU group %s whose default domain is '
                'identity. Why: %s GPUs need a translating IOMMU domain; in identity (passthrough) their '
                'firmware (FSP) boot fails (NVRM Xid 143, FSP error 0x177) and neither FLR, a secondary bus reset '
                'nor rebinding the driver recovers the GPU. Fix: %s A GPU whose FSP boot already failed needs a '
                'full power cycle of the host.'
                % (_gpu_label(gpu), gpu['architecture'], gpu.get('iommu_group'), gpu['architecture'].capitalize(),
                   _fix_identity_group(gpu.get('iommu_group'), gpu.get('iommu_group_devices') or [gpu['pci_address']])))
        if gpu in selected:
            errors.append(text)
        else:
            warnings.append(text + ' (This GPU is not selected in %s, so this is only a warning.)' % _SELECT_VAR)
    return errors, warnings


def _group_owner(group_devices, gpus):
    names = []
    by_address = dict((gpu['pci_address'], gpu) for gpu in gpus)
    owners = _virtual_function_owners(gpus)
    for address in group_devices:
        gpu = by_address.get(address)
        if gpu:
            names.append(_gpu_label(gpu))
        elif address in owners:
            names.append(_virtual_function_label(address, owners[address]))
        else:
            names.append(address)
    return ', '.join(names) or 'no devices'


def _rule_snp(facts, gpus):
    errors = []
    warnings = []
    if not facts.get('sev_snp'):
        return errors, warnings
    iommu = facts.get('iommu') or {}
    for group in iommu.get('identity_groups') or []:
        errors.append(
            'snp-identity: IOMMU group %s with %s has default domain identity on a SEV-SNP host. Why: with SEV-SNP '
            'the IOMMU must translate for every device; an identity domain leaves an invalid device table entry '
            '(AMD-Vi ILLEGAL_DEV_TABLE_ENTRY) and the device DMA fails. Kernels from 6.13 accept the write '
            'unless they carry the fix that blocks it, so the kernel is no guard. Fix: %s'
            % (group.get('group'), _group_owner(group.get('devices') or [], gpus),
               _fix_identity_group(group.get('group'), group.get('devices') or [])))
    bad = []
    cmdline = iommu.get('cmdline') or {}
    if iommu.get('passthrough_requested'):
        bad.append('iommu=%s' % cmdline['iommu'] if cmdline.get('iommu') and 'pt' in cmdline['iommu'].split(',')
                   else 'iommu.passthrough=%s' % cmdline.get('iommu.passthrough'))
    bad.extend(_cmdline_settings(iommu, ('iommu_off', 'amd_iommu_off', 'amd_iommu_pgtbl_v2')))
    if bad:
        errors.append(
            'snp-cmdline: the kernel command line has %s on a SEV-SNP host. Why: SEV-SNP needs the AMD IOMMU '
            'enabled, translating, with v1 page tables; passthrough or a disabled IOMMU makes every device an '
            'identity (untranslated) device, which SNP does not allow. Fix: remove %s from the kernel command line '
            '(GRUB_CMDLINE_LINUX in /etc/default/grub, then update-grub) and reboot.'
            % (', '.join(bad), ', '.join(bad)))
    version = kernel_version(facts.get('kernel_release'))
    if version is not None and version >= SNP_IDENTITY_REGRESSION:
        warnings.append(
            'snp-kernel: kernel %s runs a SEV-SNP host. Why: from 6.13 the AMD IOMMU driver accepts identity '
            'domains on SNP hosts until the fix "iommu/amd: Block identity domain when SNP enabled" is in, so a '
            'write of identity to a group type file succeeds and breaks the device. Fix: nothing to do now; never '
            'write identity, and prefer a kernel that carries the fix.' % facts.get('kernel_release'))
    return errors, warnings


def _rule_identity_units(facts, disable):
    errors = []
    warnings = []
    to_disable = []
    for unit in facts.get('identity_units') or []:
        evidence = '; '.join((unit.get('evidence') or [])[:2])
        where = '%s %s (%s)' % (unit.get('kind'), unit.get('name'), unit.get('path'))
        if not unit.get('enabled'):
            warnings.append(
                'identity-units: %s writes identity into IOMMU group type files but does not run at boot (%s). '
                'Why: enabled again, it would put devices into identity domains. Fix: delete it (%s).'
                % (where, 'masked' if unit.get('masked') else 'disabled', unit.get('path')))
            continue
        if unit.get('kind') == 'systemd' and disable:
            to_disable.append(unit.get('name'))
            continue
        if unit.get('kind') == 'systemd':
            fix = ('systemctl disable %s (or set iommu_preflight_disable_identity_units: true to let the role do it), '
                   'then reboot if groups are already in identity' % unit.get('name'))
        else:
            fix = 'remove the entry from %s, then reboot if groups are already in identity' % unit.get('path')
        errors.append(
            'identity-units: %s writes identity into IOMMU group type files at boot (%s). Why: it puts devices into '
            'identity (passthrough) domains on every boot; Blackwell GPUs then fail their firmware boot and on '
            'SEV-SNP hosts identity domains are invalid. Fix: %s.' % (where, evidence, fix))
    return errors, warnings, to_disable


def _fault_summary(events):
    kinds = {}
    for event in events:
        kinds[event['kind']] = kinds.get(event['kind'], 0) + 1
    return ', '.join('%s x%d' % (kind, count) for kind, count in sorted(kinds.items()))


def _rule_dma_faults(facts, gpus, selected, policy):
    errors = []
    warnings = []
    events = facts.get('dma_faults') or []
    if not gpus and not events:
        return errors, warnings
    if facts.get('kernel_log_source', 'none') == 'none' or (facts.get('kernel_log_error')
                                                            and not facts.get('kernel_log_lines')):
        reason = facts.get('kernel_log_error') or 'no kernel_log file given and root is not /'
        warnings.append(
            'kernel-log: no kernel log of this boot was read (%s), so DMA faults and Xid events were not checked. '
            'Why: the fault and Xid rules need journalctl -k or dmesg. Fix: run the role with become: true, or pass '
            'a saved log in iommu_preflight_kernel_log.' % reason)
        return errors, warnings
    selected_addresses = [gpu['pci_address'] for gpu in selected]
    for gpu in gpus:
        mine = [event for event in events if event.get('pci_address') == gpu['pci_address']]
        if not mine:
            continue
        text = ('dma-faults: GPU %s has %d IOMMU/DMA fault event(s) in this boot\'s kernel log (%s; first: %s). '
                'Why: the IOMMU blocked or could not translate this GPU\'s DMA, so the GPU or P2P through it is '
                'broken in the current configuration. Fix: remove the cause (identity domains, a broken peer '
                'mapping such as DmaRemapPeerMmio=0, P2P that the IOMMU cannot translate) and reboot, which also '
                'clears the log; set iommu_preflight_dma_faults: warn to report faults without failing.'
                % (_gpu_label(gpu), len(mine), _fault_summary(mine), mine[0].get('line')))
        if gpu['pci_address'] in selected_addresses and policy == 'fail':
            errors.append(text)
        else:
            warnings.append(text)
    gpu_addresses = set(gpu['pci_address'] for gpu in gpus)
    others = {}
    for event in events:
        if event.get('pci_address') not in gpu_addresses:
            others.setdefault(event.get('pci_address'), []).append(event)
    owners = _virtual_function_owners(gpus)
    for address, mine in sorted(others.items(), key=lambda item: str(item[0])):
        if address in owners:
            # a VF serves a virtual machine: its faults show a problem there, not on the GPU this host uses
            warnings.append(
                'dma-faults: %s has %d IOMMU/DMA fault event(s) in this boot\'s kernel log (%s; first: %s). Why: the '
                'IOMMU blocked DMA of a virtual function, which belongs to a virtual machine (vGPU); it is not counted '
                'as a fault of the GPU itself, but shows a problem of that VM or of the vGPU set-up. Fix: check the '
                'VM that uses the virtual function and the vGPU manager.'
                % (_virtual_function_label(address, owners[address]), len(mine), _fault_summary(mine),
                   mine[0].get('line')))
            continue
        warnings.append(
            'dma-faults: device %s (not an NVIDIA GPU) has %d IOMMU/DMA fault event(s) in this boot\'s kernel log '
            '(%s; first: %s). Why: faults of other devices do not block the GPUs but show an IOMMU problem. Fix: '
            'check that device\'s driver and firmware.'
            % (address or 'unknown', len(mine), _fault_summary(mine), mine[0].get('line')))
    if facts.get('dma_faults_dropped'):
        warnings.append('dma-faults: %d further fault event(s) were not listed.' % facts['dma_faults_dropped'])
    return errors, warnings


def _rule_iommu(facts, require):
    iommu = facts.get('iommu') or {}
    if iommu.get('enabled') or not (require or facts.get('gpus')):
        return [], []
    virtualization = facts.get('virtualization') or {}
    flags = _cmdline_settings(iommu, ('iommu_off', 'amd_iommu_off', 'intel_iommu_off'))
    if virtualization.get('hypervisor'):
        vendor = virtualization.get('hypervisor_vendor')
        found = ('this is a virtual machine (the CPU reports a hypervisor%s) without a virtual IOMMU: %s'
                 % (', %s' % vendor if vendor else '',
                    'the kernel command line has %s' % ', '.join(flags) if flags
                    else 'there are no IOMMU groups and no IOMMU units in the guest'))
        why = ('inside the guest nothing isolates device DMA: every passed-through device can read and write all guest '
               'memory (the host\'s IOMMU only keeps it inside this VM). GPU peer-to-peer (P2P) traffic between '
               'passed-through GPUs is translated by the host\'s IOMMU, which the guest cannot see, so whether P2P '
               'works depends on the hypervisor and only the P2P test shows it (with one GPU there is no P2P). '
               'SEV-SNP host checks do not apply to a guest.')
        fix = ('if that is intended (usual for GPU passthrough), nothing; for DMA isolation inside the guest give the '
               'VM a virtual IOMMU (for example intel-iommu with caching-mode=on, or virtio-iommu)%s and boot the '
               'guest with it' % (' and remove %s from its kernel command line' % ', '.join(flags) if flags else ''))
        if require:
            return ['iommu-required: the IOMMU is off: %s. Why: iommu_preflight_require_iommu is true, and %s Fix: %s.'
                    % (found, why[0].lower() + why[1:], fix)], []
        return [], ['iommu-off: the IOMMU is off: %s. Why: %s Fix: %s (and set iommu_preflight_require_iommu: true '
                    'to require it).' % (found, why, fix)]
    found = ('the kernel command line has %s' % ', '.join(flags)) if flags else \
        'there are no IOMMU groups and no IOMMU units (disabled in firmware or not supported by the kernel)'
    fix = ('enable the IOMMU in the firmware (AMD: IOMMU, Intel: VT-d), remove %s from the kernel command line '
           'and reboot' % (', '.join(flags) if flags else 'any iommu=off/amd_iommu=off/intel_iommu=off'))
    if require:
        return ['iommu-required: the IOMMU is off: %s. Why: iommu_preflight_require_iommu is true, this host must '
                'isolate device DMA (and SEV-SNP cannot run without it). Fix: %s.' % (found, fix)], []
    return [], ['iommu-off: the IOMMU is off: %s. Why: without an IOMMU there is no DMA isolation and no SEV-SNP. '
                'Fix: if that is intended, nothing; otherwise %s (and set iommu_preflight_require_iommu: true).'
                % (found, fix)]


def _rule_identity_allowed(facts, gpus, forbidden):
    if facts.get('sev_snp'):
        return []
    warnings = []
    for gpu in gpus:
        if gpu.get('iommu_domain_type') == 'identity' and gpu.get('architecture') not in forbidden:
            warnings.append(
                'identity-allowed: GPU %s, architecture %s, is in IOMMU group %s with default domain identity. Why: '
                'allowed here (not %s, no SEV-SNP), but its DMA and P2P bypass the IOMMU, so the P2P results do '
                'not carry over to a translated setup. Fix: none needed.'
                % (_gpu_label(gpu), gpu.get('architecture'), gpu.get('iommu_group'), '/'.join(forbidden)))
    return warnings


def _rule_numa(selected):
    nodes = sorted(set(gpu['numa_node'] for gpu in selected if gpu.get('numa_node') is not None))
    if len(nodes) <= 1:
        return []
    placement = ', '.join('%s node %s' % (gpu['pci_address'], gpu.get('numa_node')) for gpu in selected)
    return ['numa-span: the selected GPUs span NUMA nodes %s (%s). Why: tensor-parallel traffic between them crosses '
            'the socket interconnect, which is slower and, under IOMMU translation, the path where P2P most often '
            'fails. Fix: if the model fits, select GPUs of one node in %s and give the server the same GPUs.'
            % (', '.join(str(node) for node in nodes), placement, _SELECT_VAR)]


def _rule_no_gpu(facts, require):
    if facts.get('gpus'):
        return [], []
    scan = facts.get('pci_scan')
    if scan is None:
        seen = 'no PCI scan was reported'
    elif not scan.get('sysfs'):
        seen = 'there is no /sys/bus/pci/devices (sysfs not mounted, or a system without PCI)'
    else:
        vendors = scan.get('vendors') or {}
        seen = 'the PCI scan of /sys/bus/pci/devices saw %d device(s)%s' % (
            scan.get('devices', 0),
            ' (vendors: %s)' % ', '.join('%s x%d' % (vendor, count) for vendor, count in sorted(vendors.items()))
            if vendors else '')
        others = scan.get('nvidia_functions') or []
        if others:
            seen += '; NVIDIA functions that are not GPUs: %s' % ', '.join(
                '%s (class %s, driver %s)' % (item.get('pci_address'), item.get('pci_class'), item.get('driver') or 'none')
                for item in others)
        else:
            seen += ', none of them from NVIDIA (vendor 0x10de)'
    text = ('no-gpu: no NVIDIA GPU found: %s. Why: this host is to serve a model on NVIDIA GPUs; without a GPU in '
            'sysfs (a display or 3D controller of vendor 0x10de) nothing can run there. Fix: check that the GPU is '
            'seated and powered, enabled in the firmware, passed through to this VM, and listed by lspci; run the '
            'role only on GPU hosts, or set iommu_preflight_require_gpu: false to audit a host without GPUs.' % seen)
    return ([text], []) if require else ([], [text])


def _driver_finding(gpu, loaded):
    bound = gpu.get('driver')
    if bound is None:
        if not loaded:
            return ('is bound to no driver; the NVIDIA driver is not loaded',
                    'install and load the NVIDIA driver (modprobe nvidia; the open kernel module for Blackwell and '
                    'later), then run the preflight again')
        return ('is bound to no driver although the NVIDIA driver is loaded (its probe of this GPU failed or the '
                'GPU was unbound)',
                'look for NVRM lines of this GPU in the kernel log (RmInitAdapter failed, fallen off the bus), then '
                'bind it (echo %s > /sys/bus/pci/drivers/nvidia/bind) or reboot' % gpu['pci_address'])
    if bound == 'vfio-pci':
        return ('is bound to vfio-pci, which reserves it for passing through to a virtual machine',
                'if this host is to use it, remove its ID from the vfio-pci options (modprobe.d, kernel command line), '
                'unbind it from vfio-pci and bind it to nvidia, or reboot')
    if bound == 'nouveau':
        return ('is bound to nouveau, the open-source driver, so the NVIDIA driver cannot take it',
                'blacklist nouveau (blacklist nouveau and options nouveau modeset=0 in /etc/modprobe.d), rebuild the '
                'initramfs and reboot')
    return ('is bound to %s' % bound, 'unbind it from %s and bind it to nvidia' % bound)


def _rule_driver(facts, gpus, selected):
    errors = []
    warnings = []
    loaded = (facts.get('nvidia_driver') or {}).get('loaded')
    selected_addresses = [gpu['pci_address'] for gpu in selected]
    for gpu in gpus:
        if gpu.get('driver') == 'nvidia':
            continue
        found, fix = _driver_finding(gpu, loaded)
        text = ('driver: GPU %s is not bound to nvidia: it %s. Why: the server can only use GPUs that the NVIDIA '
                'driver drives, and the driver-side checks (params, P2P) cannot run. Fix: %s; or leave it out of %s.'
                % (_gpu_label(gpu), found, fix, _SELECT_VAR))
        if gpu['pci_address'] in selected_addresses:
            errors.append(text)
        else:
            warnings.append(text + ' (This GPU is not selected in %s, so this is only a warning.)' % _SELECT_VAR)
    return errors, warnings


def _xid_label(event):
    if event.get('code') is None:
        return 'fallen off the bus (no Xid number)'
    label = 'Xid %d' % event['code']
    if event.get('caused_by') is not None:
        label += ' caused by previous Xid %d' % event['caused_by']
    return label


def _xid_summary(events):
    counts = []
    for event in events:
        label = _xid_label(event)
        for item in counts:
            if item[0] == label:
                item[1] += 1
                break
        else:
            counts.append([label, 1])
    return ', '.join('%s x%d' % (label, count) for label, count in counts)


def _xid_meanings(events):
    codes = []
    for event in events:
        for code in (event.get('code'), event.get('caused_by')):
            if code is not None and code in XID_NAMES and code not in codes:
                codes.append(code)
    return '; '.join('%d: %s' % (code, XID_NAMES[code]) for code in codes)


def _is_fatal_xid(event, fatal):
    return event.get('code') is None or event.get('code') in fatal or event.get('caused_by') in fatal


def _rule_xid(facts, gpus, selected, fatal):
    errors = []
    warnings = []
    events = [event for event in facts.get('xid_events') or [] if event.get('code') not in DMA_XIDS]
    if not events:
        return errors, warnings
    selected_addresses = [gpu['pci_address'] for gpu in selected]
    by_address = dict((gpu['pci_address'], gpu) for gpu in gpus)
    addresses = []
    for event in events:
        if event.get('pci_address') not in addresses:
            addresses.append(event.get('pci_address'))
    for address in addresses:
        mine = [event for event in events if event.get('pci_address') == address]
        gpu = by_address.get(address)
        if gpu:
            who = 'GPU %s' % _gpu_label(gpu)
        else:
            who = 'PCI device %s (not an NVIDIA GPU in sysfs now)' % (address or 'unknown')
        bad = [event for event in mine if _is_fatal_xid(event, fatal)]
        other = [event for event in mine if not _is_fatal_xid(event, fatal)]
        if bad:
            first = bad[0]
            text = ('gpu-xid: %s logged fatal NVIDIA Xid events in this boot (%s; first at %s: %s). Why: %s; after '
                    'these the GPU does not compute reliably, or at all, until it is reset or the host rebooted, and a '
                    'server on it fails or returns garbage. Fix: leave the GPU out of %s, reset it (nvidia-smi -r -i %s '
                    'when nothing uses it) or reboot the host (a GPU that fell off the bus often needs a full power '
                    'cycle); if it happens again, check cooling, power and the slot and collect nvidia-bug-report.sh '
                    'for a hardware case. The rule reads this boot\'s log only, so a reboot clears it.'
                    % (who, _xid_summary(bad), _xid_time(first), first.get('line'),
                       _xid_meanings(bad) or 'these codes are in iommu_preflight_fatal_xids', _SELECT_VAR,
                       address or '<address>'))
            if address in selected_addresses:
                errors.append(text)
            else:
                warnings.append(text + ' (Not a selected GPU, so this is only a warning.)')
        if other:
            warnings.append(
                'gpu-xid: %s logged NVIDIA Xid events in this boot that are not in iommu_preflight_fatal_xids (%s; '
                'first at %s: %s). Why: %s; most of these come from a program that crashed or misused the GPU, '
                'repeated ones can also mean a hardware or driver problem. Fix: check the programs that used the GPU '
                '(pid and name are in the line) and nvidia-smi -q; add a code to iommu_preflight_fatal_xids to fail '
                'on it.' % (who, _xid_summary(other), _xid_time(other[0]), other[0].get('line'),
                            _xid_meanings(other) or 'see NVIDIA\'s Xid catalog for these codes'))
    if facts.get('xid_events_dropped'):
        warnings.append('gpu-xid: %d further Xid event(s) were not listed.' % facts['xid_events_dropped'])
    return errors, warnings


def xid_counts(facts, fatal):
    """The Xid events of ``facts`` counted per device, code and fatality: ``[{pci_address, code, fatal, count}]``,
    sorted. ``code`` is the Xid number as text, ``fallen-off-bus`` for the messages without one; ``fatal`` follows
    the ``gpu-xid`` rule (the code, or the code it was caused by, is in ``fatal``; every fall off the bus). The DMA
    Xids (143) are left out: they are DMA faults. Counts cover the listed events (the first 500)."""
    counts = {}
    for event in facts.get('xid_events') or []:
        if event.get('code') in DMA_XIDS:
            continue
        code = 'fallen-off-bus' if event.get('code') is None else str(event['code'])
        key = (event.get('pci_address') or '', code, _is_fatal_xid(event, fatal))
        counts[key] = counts.get(key, 0) + 1
    return [{'pci_address': address, 'code': code, 'fatal': bad, 'count': counts[(address, code, bad)]}
            for address, code, bad in sorted(counts)]


def _xid_time(event):
    if event.get('timestamp') is not None:
        return '%.6f s after boot' % event['timestamp']
    return event.get('time') or 'an unknown time'


def _check_fatal_xids(fatal_xids):
    fatal = []
    for item in fatal_xids or ():
        if isinstance(item, bool) or not isinstance(item, int) or item < 1:
            raise ValueError('iommu_preflight_fatal_xids must be a list of Xid codes (positive integers), got %r'
                             % (item,))
        fatal.append(item)
    return tuple(fatal)


def evaluate(facts, selection=None, require_iommu=False, dma_faults='fail',
             identity_forbidden_architectures=DEFAULT_FORBIDDEN_ARCHITECTURES, disable_identity_units=False,
             fatal_xids=DEFAULT_FATAL_XIDS, require_gpu=True, next_boot='ignore', next_boot_options_file=None):
    """Apply every rule to ``facts`` (``ansible_facts['gpu_host']``).

    ``fatal_xids`` are the Xid codes that fail the preflight for a selected GPU; ``require_gpu`` makes a host
    without NVIDIA GPU an error (else a warning). ``next_boot`` (``fail``, ``warn`` or ``ignore``) adds the verdict
    on the next boot (:mod:`next_boot_rules`): its errors as errors (``fail``) or as warnings (``warn``); the report
    gets it as ``next_boot``.

    Returns ``{errors, warnings, selected, units_to_disable, reboot_required, report}``: ``errors`` and
    ``warnings`` are lists of messages; ``selected`` the chosen GPU dicts; ``units_to_disable`` the
    systemd identity units the role should disable (only with ``disable_identity_units``);
    ``reboot_required`` whether identity domains are live while the boot unit that set them is (being)
    disabled; ``report`` the summary for the site report.
    """
    if next_boot not in NEXT_BOOT_POLICIES:
        raise ValueError('iommu_preflight_next_boot must be one of %s, got %r' % (', '.join(NEXT_BOOT_POLICIES), next_boot))
    if dma_faults not in DMA_FAULT_POLICIES:
        raise ValueError('iommu_preflight_dma_faults must be one of %s, got %r'
                         % (', '.join(DMA_FAULT_POLICIES), dma_faults))
    fatal = _check_fatal_xids(fatal_xids)
    facts = facts or {}
    forbidden = tuple(identity_forbidden_architectures or ())
    gpus = facts.get('gpus') or []
    selected, errors = select_gpus(gpus, selection,
                                   nvidia_functions=(facts.get('pci_scan') or {}).get('nvidia_functions'))
    warnings = []

    found_errors, found_warnings = _rule_no_gpu(facts, require_gpu)
    errors += found_errors
    warnings += found_warnings

    found_errors, found_warnings = _rule_blackwell_identity(gpus, selected, forbidden)
    errors += found_errors
    warnings += found_warnings
    found_errors, found_warnings = _rule_snp(facts, gpus)
    errors += found_errors
    warnings += found_warnings
    found_errors, found_warnings, to_disable = _rule_identity_units(facts, disable_identity_units)
    errors += found_errors
    warnings += found_warnings
    found_errors, found_warnings = _rule_dma_faults(facts, gpus, selected, dma_faults)
    errors += found_errors
    warnings += found_warnings
    found_errors, found_warnings = _rule_iommu(facts, require_iommu)
    errors += found_errors
    warnings += found_warnings
    warnings += _rule_identity_allowed(facts, gpus, forbidden)
    warnings += _rule_numa(selected)
    found_errors, found_warnings = _rule_driver(facts, gpus, selected)
    errors += found_errors
    warnings += found_warnings
    found_errors, found_warnings = _rule_xid(facts, gpus, selected, fatal)
    errors += found_errors
    warnings += found_warnings

    next_boot_part = None
    if next_boot != 'ignore':
        # imported here: next_boot_rules takes its defaults from this module
        from ansible_collections.llmserve.sglang.plugins.plugin_utils.next_boot_rules import (
            DEFAULT_OWN_OPTIONS_FILE,
            evaluate_next_boot,
        )
        verdict = evaluate_next_boot(facts, identity_forbidden_architectures=forbidden,
                                     own_options_file=next_boot_options_file or DEFAULT_OWN_OPTIONS_FILE,
                                     disabling=to_disable)
        if next_boot == 'fail':
            errors += verdict['errors']
        else:
            warnings += verdict['errors']
        warnings += verdict['warnings']
        next_boot_part = {'policy': next_boot, 'verdict': verdict['verdict'], 'errors': verdict['errors'],
                          'warnings': verdict['warnings'], 'summary': verdict['summary']}

    identity_live = bool((facts.get('iommu') or {}).get('identity_groups'))
    disabled_units = [unit for unit in facts.get('identity_units') or [] if not unit.get('enabled')]
    reboot_required = identity_live and bool(to_disable or disabled_units)

    iommu = facts.get('iommu') or {}
    driver = facts.get('nvidia_driver') or {}
    selected_addresses = [gpu['pci_address'] for gpu in selected]
    report = {
        'status': 'fail' if errors else ('warn' if warnings else 'pass'),
        'host': {
            'kernel': facts.get('kernel_release'),
            'iommu': iommu.get('enabled', False),
            'iommu_vendor': iommu.get('vendor'),
            'iommu_passthrough_requested': iommu.get('passthrough_requested'),
            'sev_snp': bool(facts.get('sev_snp')),
            'driver_loaded': bool(driver.get('loaded')),
            'driver_version': driver.get('version'),
            'kernel_log_source': facts.get('kernel_log_source'),
            'virtual_machine': bool((facts.get('virtualization') or {}).get('hypervisor')),
        },
        'gpus': [{
            'index': gpu.get('index'),
            'pci_address': gpu['pci_address'],
            'name': gpu.get('name'),
            'architecture': gpu.get('architecture'),
            'numa_node': gpu.get('numa_node'),
            'iommu_group': gpu.get('iommu_group'),
            'iommu_domain_type': gpu.get('iommu_domain_type'),
            'driver': gpu.get('driver'),
            'dma_faults': gpu.get('dma_faults', 0),
            'xid_events': gpu.get('xid_events', 0),
            'virtual_functions': list(gpu.get('virtual_functions') or []),
            'selected': gpu['pci_address'] in selected_addresses,
        } for gpu in gpus],
        'xid_counts': xid_counts(facts, fatal),
        'identity_units': [unit.get('name') for unit in facts.get('identity_units') or []],
        'reboot_required': reboot_required,
        'errors': errors,
        'warnings': warnings,
    }
    if next_boot_part is not None:
        report['next_boot'] = next_boot_part
    return {
        'errors': errors,
        'warnings': warnings,
        'selected': selected,
        'units_to_disable': to_disable,
        'reboot_required': reboot_required,
        'report': report,
    }
