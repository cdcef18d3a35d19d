# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The next-boot verdict: the preflight's IOMMU rules applied to the command line GRUB will boot, and the drift
between kernel, NVIDIA module, user-space driver, fabric manager, initramfs and package holds.

Controller side: it reads ``ansible_facts['gpu_host']`` (``next_boot`` from ``gpu_host_facts``) and returns
findings, each ``{check, severity, message}`` where the message says what was found, why it matters and the fix
in one line. ``severity`` is ``error`` (the host should not reboot into it) or ``warning``.
"""

from __future__ import annotations

import re

from ansible_collections.llmserve.sglang.plugins.plugin_utils.preflight_rules import DEFAULT_FORBIDDEN_ARCHITECTURES

DEFAULT_OWN_OPTIONS_FILE = '/etc/modprobe.d/90-llmserve-nvidia.conf'
_HOLD_FIX = ('set nvidia_driver_hold_packages: true (the nvidia_driver role holds them with apt-mark and adds an '
             'unattended-upgrades blacklist), or hold and blacklist them yourself')


def _finding(check, severity, message, when='boot'):
    """``when`` is ``boot`` for what the next boot would hit, ``now`` for what is broken already (a reboot into a
    good next boot is the fix of some of those, so they must not keep a reboot from happening)."""
    return {'check': check, 'severity': severity, 'message': '%s: %s' % (check, message), 'when': when}


def _iommu_words(iommu):
    """The words of a parsed command line that change the IOMMU mode, as the user wrote them."""
    cmdline = (iommu or {}).get('cmdline') or {}
    words = []
    if (iommu or {}).get('passthrough_requested'):
        if cmdline.get('iommu') and 'pt' in cmdline['iommu'].split(','):
            words.append('iommu=pt')
        if cmdline.get('iommu.passthrough') is not None:
            words.append('iommu.passthrough=%s' % cmdline['iommu.passthrough'])
    if (iommu or {}).get('iommu_off'):
        words.append('iommu=off')
    if (iommu or {}).get('amd_iommu_off'):
        words.append('amd_iommu=off')
    if (iommu or {}).get('amd_iommu_pgtbl_v2'):
        words.append('amd_iommu=pgtbl_v2')
    if (iommu or {}).get('intel_iommu_off'):
        words.append('intel_iommu=off')
    return words


def _origin(word, origins):
    name = word.split('=', 1)[0]
    for candidate, path in (origins or {}).items():
        if candidate == word or candidate.split('=', 1)[0] == name:
            return path
    return None


def _live_mode(facts):
    """The live IOMMU mode in a word or two: 'translated', 'identity (groups 3, 4)', 'passthrough', 'off'."""
    iommu = facts.get('iommu') or {}
    if not iommu.get('enabled'):
        return 'off'
    identity = [str(group.get('group')) for group in iommu.get('identity_groups') or []]
    if identity:
        return 'identity (groups %s)' % ', '.join(identity)
    if iommu.get('passthrough_requested'):
        return 'passthrough'
    return 'translated'


def _iommu_findings(facts, next_boot, iommu, where, forbidden):
    findings = []
    words = _iommu_words(iommu)
    if not words:
        return findings
    origins = next_boot.get('cmdline_origins') or {}
    described = ', '.join('%s from %s' % (word, _origin(word, origins) or where) for word in words)
    live = _live_mode(facts)
    passthrough = [word for word in words if word.startswith(('iommu=pt', 'iommu.passthrough'))]
    off = [word for word in words if word.endswith('=off')]
    if facts.get('sev_snp') and words:
        findings.append(_finding(
            'next-boot-snp', 'error',
            'live: %s; next boot (%s): %s -> refused on SEV-SNP. Why: SEV-SNP needs the AMD IOMMU on, translating, '
            'with v1 page tables; passthrough or a disabled IOMMU makes devices untranslated, which SNP does not '
            'allow. Fix: remove %s from %s and run update-grub before the reboot.'
            % (live, where, described, ', '.join(words),
               ', '.join(sorted(set(_origin(word, origins) or '/etc/default/grub' for word in words))))))
    blackwell = [gpu for gpu in facts.get('gpus') or [] if gpu.get('architecture') in forbidden]
    if passthrough and blackwell:
        findings.append(_finding(
            'next-boot-blackwell-identity', 'error',
            'live: %s; next boot (%s): %s puts the IOMMU groups of %d %s GPU(s) into identity -> refused. Why: in '
            'identity their firmware (FSP) boot fails (Xid 143, error 0x177) and only a power cycle recovers them. '
            'Fix: remove %s from %s and run update-grub before the reboot.'
            % (live, where, described, len(blackwell), '/'.join(sorted(set(g['architecture'] for g in blackwell))),
               ', '.join(passthrough),
               ', '.join(sorted(set(_origin(word, origins) or '/etc/default/grub' for word in passthrough))))))
    elif off and not facts.get('sev_snp') and (facts.get('iommu') or {}).get('enabled'):
        findings.append(_finding(
            'next-boot-iommu-off', 'warning',
            'live: %s; next boot (%s): %s turns the IOMMU off. Why: no DMA isolation after the reboot, and the P2P '
            'results of this boot do not carry over. Fix: remove it, unless that is intended.'
            % (live, where, described)))
    return findings


def _identity_unit_findings(facts, forbidden, disabling):
    # the units the preflight disables in this run (iommu_preflight_disable_identity_units) do not run at that boot
    units = [unit for unit in facts.get('identity_units') or []
             if unit.get('enabled') and unit.get('name') not in disabling]
    exposed = facts.get('sev_snp') or any(gpu.get('architecture') in forbidden for gpu in facts.get('gpus') or [])
    if not units or not exposed:
        return []
    return [_finding(
        'next-boot-identity-unit', 'error',
        '%s %s (%s) is enabled and writes identity into IOMMU group type files at the next boot -> refused on %s. '
        'Fix: systemctl disable %s (or iommu_preflight_disable_identity_units: true) before the reboot.'
        % (unit.get('kind'), unit.get('name'), unit.get('path'),
           'SEV-SNP' if facts.get('sev_snp') else 'Blackwell', unit.get('name'))) for unit in units]


def _driver_packages(next_boot):
    return [item for item in next_boot.get('packages') or [] if item.get('role') == 'driver']


# the kernel release at the end of a per-kernel package name: -6.8.0-60-generic, -6.1.0-28-cloud-amd64
_KERNEL_SUFFIX_RE = re.compile(r'-[0-9]+\.[0-9]+(\.[0-9]+)?[-+][0-9a-z.+~-]*$')


def _module_fix(next_boot, kernel):
    packages = next_boot.get('packages') or []
    names = set(item['name'] for item in packages)
    dkms = [item['name'] for item in _driver_packages(next_boot) if 'dkms' in item['name']]
    precompiled = [name for name in names if name.startswith('linux-modules-nvidia-')]
    if precompiled:
        # linux-modules-nvidia-580-server-open-6.8.0-60-generic -> the same for the next kernel; the kernels the host
        # has name the suffix (6.12.118+deb13-cloud-amd64 is no pattern's), else a version-shaped tail does
        kernels = sorted(set(next_boot.get('installed_kernels') or []) | set([kernel]), key=len, reverse=True)
        for name in sorted(precompiled):
            known = next((k for k in kernels if name.endswith('-' + k)), None)
            stem = name[:-len(known) - 1] if known else (_KERNEL_SUFFIX_RE.sub('', name)
                                                         if _KERNEL_SUFFIX_RE.search(name) else None)
            if stem:
                return 'apt-get install %s-%s (the precompiled module package for that kernel)' % (stem, kernel)
    if dkms:
        headers = 'linux-headers-%s' % kernel
        if headers not in names:
            return ('apt-get install %s, then dkms autoinstall -k %s (DKMS cannot build without the headers; %s is '
                    'installed)' % (headers, kernel, ', '.join(sorted(dkms))))
        return 'dkms autoinstall -k %s and read its make.log if it fails (%s)' % (kernel, ', '.join(sorted(dkms)))
    return ('install the NVIDIA module for %s (the driver packages for that kernel, or rebuild the .run '
            'installation), or make GRUB boot a kernel that has one' % kernel)


def _version_findings(next_boot):
    findings = []
    kernel = next_boot.get('kernel')
    loaded = next_boot.get('loaded_module_version')
    module = next_boot.get('nvidia_module')
    userspace = next_boot.get('userspace_version')
    fabric = next_boot.get('fabric_manager_version')
    driver_present = bool(loaded or _driver_packages(next_boot) or next_boot.get('nvidia_modules'))
    if kernel and driver_present and module is None:
        unreadable = [item for item in next_boot.get('nvidia_modules') or [] if item.get('error')]
        if unreadable:
            findings.append(_finding(
                'next-boot-module-unreadable', 'warning',
                'the NVIDIA module for kernel %s (%s) could not be read: %s. Fix: check the file with modinfo -k %s '
                'nvidia.' % (kernel, unreadable[0]['path'], unreadable[0]['error'], kernel)))
        else:
            findings.append(_finding(
                'next-boot-no-module', 'error',
                'kernel %s (%s) has no NVIDIA module below %s: the host would come back without GPUs. Fix: %s.'
                % (kernel, next_boot.get('kernel_detail') or next_boot.get('kernel_source'),
                   next_boot.get('modules_dir') or '/lib/modules/%s' % kernel, _module_fix(next_boot, kernel))))
    if module is not None:
        if not module.get('in_modules_dep'):
            findings.append(_finding(
                'next-boot-depmod', 'error',
                '%s is not in modules.dep of %s, so modprobe will not find it at boot. Fix: depmod %s.'
                % (module['path'], kernel, kernel)))
        vermagic = (module.get('vermagic') or '').split(' ', 1)[0]
        if vermagic and kernel and vermagic != kernel:
            findings.append(_finding(
                'next-boot-vermagic', 'error',
                '%s was built for kernel %s, not %s: the kernel refuses to load it. Fix: %s.'
                % (module['path'], vermagic, kernel, _module_fix(next_boot, kernel))))
    if loaded and userspace and loaded != userspace:
        findings.append(_finding(
            'nvml-mismatch-now', 'error',
            'the loaded NVIDIA module is %s but the user-space driver (%s) is %s: every CUDA and NVML process fails '
            'now with "Driver/library version mismatch". Fix: reboot into a module of %s (or reload the driver), and '
            'hold the driver packages so it does not happen again (%s).'
            % (loaded, next_boot.get('userspace_path') or 'libnvidia-ml', userspace, userspace, _HOLD_FIX), when='now'))
    next_version = (module or {}).get('version')
    if next_version and userspace and next_version != userspace:
        findings.append(_finding(
            'nvml-mismatch-next-boot', 'error',
            'the NVIDIA module for kernel %s is %s but the user-space driver is %s: after the reboot every CUDA '
            'process fails with "Driver/library version mismatch". Fix: install the module and user-space packages '
            'of one driver version (%s), then hold them (%s).'
            % (kernel, next_version, userspace, userspace, _HOLD_FIX)))
    if fabric:
        for label, version, when in (('module for kernel %s' % kernel, next_version, 'boot'),
                                     ('loaded module', loaded, 'now')):
            if version and version != fabric:
                findings.append(_finding(
                    'fabric-manager-mismatch', 'error',
                    'the fabric manager (%s) is %s but the %s is %s: the fabric manager refuses to start and the '
                    'NVSwitch fabric stays down. Fix: install %s of version %s and hold it (%s).'
                    % (next_boot.get('fabric_manager_package'), fabric, label, version,
                       next_boot.get('fabric_manager_package'), version, _HOLD_FIX), when=when))
                break
    return findings


def _initramfs_findings(next_boot, own_file):
    initramfs = next_boot.get('initramfs') or {}
    kernel = next_boot.get('kernel')
    on_disk = next_boot.get('modprobe_nvidia_options') or {}
    inside = initramfs.get('nvidia_options') or {}
    if not kernel or not initramfs.get('path'):
        return []
    if not initramfs.get('exists'):
        if not next_boot.get('installed_kernels'):
            return []
        return [_finding('next-boot-initramfs', 'error',
                         'kernel %s has no initramfs (%s): it will not boot. Fix: update-initramfs -c -k %s.'
                         % (kernel, initramfs['path'], kernel))]
    if initramfs.get('error'):
        return [_finding('next-boot-initramfs', 'warning',
                         '%s could not be read (%s), so its NVIDIA options are unknown. Fix: lsinitramfs %s to check.'
                         % (initramfs['path'], initramfs['error'], initramfs['path']))]
    findings = []
    for path in sorted(set(on_disk) | set(inside)):
        if on_disk.get(path) == inside.get(path):
            continue
        own = path == own_file
        state = 'without' if path not in inside else ('with stale' if path in on_disk else 'with a deleted file\'s')
        findings.append(_finding(
            'next-boot-initramfs-options', 'error' if own else 'warning',
            'the initramfs of kernel %s (%s) is %s NVIDIA options of %s (on disk: %s; inside: %s): an nvidia.ko '
            'loaded from the initramfs gets other options than the collection set. Fix: update-initramfs -u -k %s.'
            % (kernel, initramfs['path'], state, path, '; '.join(on_disk.get(path) or ['none']),
               '; '.join(inside.get(path) or ['none']), kernel)))
    return findings


def _package_findings(next_boot):
    findings = []
    uu = next_boot.get('unattended_upgrades') or {}
    exposed = [item['name'] for item in next_boot.get('packages') or []
               if item.get('role') in ('driver', 'userspace', 'fabric_manager') and item.get('upgraded_unattended')]
    if exposed:
        findings.append(_finding(
            'driver-packages-unheld', 'warning',
            'unattended-upgrades is on (APT::Periodic::Unattended-Upgrade "%s") and may upgrade %s: an upgraded '
            'user-space driver breaks CUDA until the next reboot, an upgraded module or fabric manager breaks the '
            'next boot. Fix: %s.' % (uu.get('interval'), ', '.join(exposed), _HOLD_FIX)))
    broken = [item for item in next_boot.get('packages') or []
              if item.get('role') in ('driver', 'userspace', 'fabric_manager', 'kernel')
              and item.get('state') not in (None, 'installed')]
    for item in broken:
        findings.append(_finding(
            'package-broken', 'error',
            'dpkg has %s %s in state %s (a DKMS build or a postinst that failed). Fix: dpkg --configure -a and read '
            'the error (for DKMS: /var/lib/dkms/*/*/build/make.log).'
            % (item['name'], item.get('version'), item['state'])))
    return findings


def _grub_findings(next_boot):
    grub = next_boot.get('grub') or {}
    unknown = [line for line in grub.get('unevaluated') or [] if line.get('cmdline')]
    if not unknown:
        return []
    return [_finding(
        'next-boot-cmdline-unknown', 'warning',
        'the kernel command line of the next boot cannot be evaluated without running shell code: %s. Fix: write '
        'GRUB_CMDLINE_LINUX as a plain assignment (KEY="words") so it can be checked.'
        % '; '.join('%s:%s %s (%s)' % (line['file'], line['line'], line['text'], line['why']) for line in unknown))]


def evaluate_next_boot(facts, identity_forbidden_architectures=DEFAULT_FORBIDDEN_ARCHITECTURES,
                       own_options_file=DEFAULT_OWN_OPTIONS_FILE, disabling=()):
    """The next-boot verdict of ``facts`` (``ansible_facts['gpu_host']``).

    Returns ``{verdict, errors, warnings, boot_errors, findings, summary}``: ``verdict`` is ``ok``, ``warning``,
    ``error`` or ``unknown`` (no ``next_boot`` facts); ``boot_errors`` the errors a reboot would run into (not those
    that are broken now and that the reboot may fix: what refuses a reboot); ``summary`` the few values a report
    shows. ``disabling`` names the identity units this run disables (they do not count).
    """
    facts = facts or {}
    next_boot = facts.get('next_boot')
    if not next_boot:
        return {'verdict': 'unknown', 'errors': [], 'warnings': [], 'boot_errors': [], 'findings': [],
                'summary': {'kernel': None, 'error': 'no next_boot facts (gpu_host_facts next_boot: false?)'}}
    if next_boot.get('error'):
        finding = _finding('next-boot-unreadable', 'warning', '%s. Fix: run gpu_host_facts as root.'
                           % next_boot['error'])
        return {'verdict': 'unknown', 'errors': [], 'warnings': [finding['message']], 'boot_errors': [],
                'findings': [finding],
                'summary': {'kernel': None, 'error': next_boot['error']}}
    forbidden = tuple(identity_forbidden_architectures or ())
    if next_boot.get('kernel_source') in ('running', 'unknown') and not next_boot.get('modules_dir') \
            and not (next_boot.get('grub') or {}).get('files'):
        # No kernel image, no modules directory, no GRUB: a container or a tree without boot files. Nothing here
        # says how the host boots, so nothing is judged (a real host always has /lib/modules/<running kernel>).
        return {'verdict': 'unknown', 'errors': [], 'warnings': [], 'boot_errors': [], 'findings': [],
                'summary': {'kernel': next_boot.get('kernel'), 'kernel_source': next_boot.get('kernel_source'),
                            'error': 'no boot files (no /boot kernel, no /lib/modules/%s, no GRUB configuration)'
                                     % next_boot.get('kernel'), 'checks': []}}
    findings = []
    findings += _iommu_findings(facts, next_boot, next_boot.get('iommu'), 'GRUB', forbidden)
    if next_boot.get('iommu_grub_cfg'):
        # update-grub has not run since GRUB's files changed: grub.cfg's own line is what boots first
        findings += _iommu_findings(facts, next_boot, next_boot['iommu_grub_cfg'],
                                    '/boot/grub/grub.cfg as written now', forbidden)
    findings += _identity_unit_findings(facts, forbidden, set(disabling or ()))
    findings += _grub_findings(next_boot)
    findings += _version_findings(next_boot)
    findings += _initramfs_findings(next_boot, own_options_file)
    findings += _package_findings(next_boot)
    errors = [item['message'] for item in findings if item['severity'] == 'error']
    warnings = [item['message'] for item in findings if item['severity'] == 'warning']
    held = [item['name'] for item in next_boot.get('packages') or [] if item.get('held')]
    summary = {
        'kernel': next_boot.get('kernel'),
        'kernel_source': next_boot.get('kernel_source'),
        'kernel_is_running': next_boot.get('kernel_is_running'),
        'cmdline': next_boot.get('cmdline'),
        'update_grub_pending': (next_boot.get('grub') or {}).get('update_pending'),
        'module_version': (next_boot.get('nvidia_module') or {}).get('version'),
        'loaded_module_version': next_boot.get('loaded_module_version'),
        'userspace_version': next_boot.get('userspace_version'),
        'fabric_manager_version': next_boot.get('fabric_manager_version'),
        'held_packages': held,
        'unattended_upgrades': bool((next_boot.get('unattended_upgrades') or {}).get('enabled')),
        'checks': sorted(set(item['check'] for item in findings)),
    }
    boot_errors = [item['message'] for item in findings if item['severity'] == 'error' and item['when'] == 'boot']
    return {'verdict': 'error' if errors else ('warning' if warnings else 'ok'),
            'errors': errors, 'warnings': warnings, 'boot_errors': boot_errors, 'findings': findings,
            'summary': summary}
