# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the sysfs/procfs readers: path resolution, command line, IOMMU, SNP, driver, GPUs, identity units."""

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.llmserve.sglang.plugins.module_utils import gpu_sysfs, pci
from ansible_collections.llmserve.sglang.plugins.module_utils.gpu_sysfs import HostRoot
from ansible_collections.llmserve.sglang.tests.fixtures.hosts import materialize


@pytest.fixture(scope='module')
def hosts(tmp_path_factory):
    base = tmp_path_factory.mktemp('hosts')
    for name in materialize.host_names():
        materialize.build(name, str(base / name))
    return base


def host(hosts, name):
    return HostRoot(str(hosts / name))


def write(root, path, text='', mode=0o644):
    real = os.path.join(str(root), path.lstrip('/'))
    os.makedirs(os.path.dirname(real), exist_ok=True)
    with open(real, 'w') as handle:
        handle.write(text)
    os.chmod(real, mode)
    return real


def link(root, path, target):
    real = os.path.join(str(root), path.lstrip('/'))
    os.makedirs(os.path.dirname(real), exist_ok=True)
    os.symlink(target, real)


# --- PCI addresses --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('text, expected', [
    ('0000:01:00.0', '0000:01:00.0'),
    ('0000:C1:00.0', '0000:c1:00.0'),
    ('00000000:C1:00.0', '0000:c1:00.0'),
    ('01:00.0', '0000:01:00.0'),
    ('0000:81:00', '0000:81:00.0'),
    ('0001:02:03.4', '0001:02:03.4'),
])
def test_normalize_pci_address(text, expected):
    assert pci.normalize_pci_address(text) == expected


@pytest.mark.parametrize('text', [None, '', 'GPU0', '0000:01:00.8', '1:00.0', '00010000:01:00.0', 'zz:00.0'])
def test_normalize_pci_address_rejects(text):
    assert pci.normalize_pci_address(text) is None


# --- HostRoot -------------------------------------------------------------------------------------------------------

def test_absolute_links_stay_below_the_root(tmp_path):
    write(tmp_path, '/sys/devices/x/vendor', '0x10de\n')
    link(tmp_path, '/sys/bus/pci/devices/a', '/sys/devices/x')
    root = HostRoot(str(tmp_path))
    assert root.resolve('/sys/bus/pci/devices/a/vendor') == str(tmp_path / 'sys/devices/x/vendor')
    assert root.read_value('/sys/bus/pci/devices/a/vendor') == '0x10de'
    assert root.readlink('/sys/bus/pci/devices/a') == '/sys/devices/x'
    assert root.link_name('/sys/bus/pci/devices/a') == 'x'


def test_dot_dot_cannot_climb_above_the_root(tmp_path):
    write(tmp_path, '/etc/hostname', 'inside\n')
    link(tmp_path, '/sys/escape', '../../../../../../etc')
    root = HostRoot(str(tmp_path))
    assert root.read_value('/sys/escape/hostname') == 'inside'
    assert root.resolve('/../../etc/hostname') == str(tmp_path / 'etc/hostname')


def test_symlink_loop_is_not_followed_forever(tmp_path):
    link(tmp_path, '/a', 'b')
    link(tmp_path, '/b', 'a')
    root = HostRoot(str(tmp_path))
    assert root.resolve('/a/file') is None
    assert root.read('/a/file', default='none') == 'none'
    assert root.listdir('/a') == []


def test_missing_files_give_defaults(tmp_path):
    root = HostRoot(str(tmp_path))
    assert root.read('/proc/cmdline') is None
    assert root.read_value('/proc/cmdline', default='x') == 'x'
    assert root.link_name('/sys/nothing') is None
    assert root.is_live is False
    assert HostRoot('/').is_live is True


# --- kernel command line --------------------------------------------------------------------------------------------

def test_split_cmdline_handles_quotes_and_init_args():
    pairs = gpu_sysfs.split_cmdline('ro quiet opt="a b" "nvidia.NVreg_RegistryDwords=A=1;B=2" x= -- single iommu=pt\n')
    assert pairs == [('ro', None), ('quiet', None), ('opt', 'a b'), ('nvidia.NVreg_RegistryDwords', 'A=1;B=2'),
                     ('x', '')]


@pytest.mark.parametrize('cmdline, passthrough', [
    ('ro iommu=pt', True),
    ('ro iommu=nopt', False),
    ('ro iommu.passthrough=1', True),
    ('ro iommu.passthrough=0', False),
    ('ro iommu=pt iommu.passthrough=0', False),
    ('ro iommu.passthrough=0 iommu=pt', True),
    ('ro iommu=soft,pt', True),
    ('ro quiet', None),
])
def test_passthrough_request(cmdline, passthrough):
    assert gpu_sysfs.parse_cmdline(cmdline)['passthrough_requested'] is passthrough


def test_cmdline_flags():
    facts = gpu_sysfs.parse_cmdline(
        'BOOT_IMAGE=/vmlinuz ro amd-iommu=off,pgtbl_v2 intel_iommu=off iommu.strict=1 iommu=off '
        'nvidia.NVreg_EnableStreamMemOPs=1 nvidia.NVreg_RegistryDwords="DmaRemapPeerMmio=0"')
    assert facts['amd_iommu_off'] is True
    assert facts['amd_iommu_pgtbl_v2'] is True
    assert facts['intel_iommu_off'] is True
    assert facts['iommu_off'] is True
    assert facts['strict'] is True
    assert facts['cmdline'] == {'iommu': 'off', 'amd_iommu': 'off,pgtbl_v2', 'intel_iommu': 'off',
                                'iommu.passthrough': None, 'iommu.strict': '1'}
    assert facts['cmdline_nvidia'] == {'NVreg_EnableStreamMemOPs': '1', 'NVreg_RegistryDwords': 'DmaRemapPeerMmio=0'}


def test_empty_cmdline():
    facts = gpu_sysfs.parse_cmdline('')
    assert facts['cmdline'] == dict((key, None) for key in gpu_sysfs.CMDLINE_IOMMU_KEYS)
    assert facts['amd_iommu_off'] is False and facts['intel_iommu_off'] is False and facts['iommu_off'] is False
    assert facts['strict'] is None and facts['passthrough_requested'] is None


def test_later_pgtbl_v1_wins():
    assert gpu_sysfs.parse_cmdline('amd_iommu=pgtbl_v2 amd_iommu=pgtbl_v1')['amd_iommu_pgtbl_v2'] is False


# --- IOMMU, SNP ------------------------------------------------------------------------------------------------------

def test_read_iommu_amd(hosts):
    root = host(hosts, 'blackwell4_amd_snp_dmafq')
    iommu, groups = gpu_sysfs.read_iommu(root, root.read('/proc/cmdline'))
    assert iommu['enabled'] is True and iommu['vendor'] == 'amd'
    assert iommu['instances'] == ['ivhd0', 'ivhd1', 'ivhd2', 'ivhd3']
    assert iommu['group_types'] == {'DMA-FQ': 11}
    assert groups[62] == {'type': 'DMA-FQ', 'devices': ['0000:81:00.0']}
    assert list(groups)[:3] == [0, 13, 14]


def test_read_iommu_off(hosts):
    root = host(hosts, 'blackwell4_no_iommu')
    iommu, groups = gpu_sysfs.read_iommu(root, root.read('/proc/cmdline'))
    assert iommu['enabled'] is False and iommu['vendor'] is None and groups == {}
    assert iommu['group_count'] == 0


def test_read_iommu_intel_identity(hosts):
    root = host(hosts, 'hopper4_intel_identity')
    iommu, groups = gpu_sysfs.read_iommu(root, root.read('/proc/cmdline'))
    assert iommu['vendor'] == 'intel'
    assert iommu['group_types'] == {'identity': 8}
    assert {'group': 31, 'devices': ['0000:18:00.0']} in iommu['identity_groups']


def test_snp_from_sysfs_and_log(hosts, tmp_path):
    assert gpu_sysfs.detect_sev_snp(host(hosts, 'blackwell4_amd_snp_dmafq')) == (
        True, ['/sys/module/kvm_amd/parameters/sev_snp = Y'])
    enabled, evidence = gpu_sysfs.detect_sev_snp(HostRoot(str(tmp_path)), [
        '[    9.912345] kvm_amd: SEV-SNP enabled (ASIDs 1 - 99)',
        '[    1.201234] AMD-Vi: IOMMU SNP support enabled.',
    ])
    assert enabled is True
    assert evidence == ['kernel log: kvm_amd SEV-SNP enabled', 'kernel log: AMD-Vi SNP support enabled']


def test_snp_not_claimed_without_evidence(hosts):
    root = host(hosts, 'blackwell4_no_iommu')
    lines = root.read('/var/log/kern.log').splitlines()
    assert any('SNP cannot be supported' in line for line in lines)
    assert gpu_sysfs.detect_sev_snp(root, lines) == (False, [])
    assert gpu_sysfs.detect_sev_snp(host(hosts, 'hopper4_intel_identity'), []) == (False, [])


# --- NVIDIA driver ---------------------------------------------------------------------------------------------------

def test_parse_nvidia_params():
    params = gpu_sysfs.parse_nvidia_params(
        'ResmanDebugLevel: 4294967295\nDmaRemapPeerMmio: 0\nRegistryDwords: "DmaRemapPeerMmio=0; RMForceStaticBar1=1"\n'
        'ExcludedGpus: ""\nnot a param line\nBroken: 12abc\n')
    assert params == {'ResmanDebugLevel': 4294967295, 'DmaRemapPeerMmio': 0,
                      'RegistryDwords': 'DmaRemapPeerMmio=0; RMForceStaticBar1=1', 'ExcludedGpus': ''}


@pytest.mark.parametrize('text, version, flavor', [
    ('NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  595.45.04  Release Build  (dvs-builder@U22)  Thu Mar  5\n',
     '595.45.04', 'open'),
    ('NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.172.08  Tue Jul  8 18:01:32 UTC 2025\n', '570.172.08',
     'proprietary'),
    ('NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.65\n', '580.65', 'open'),
    ('', None, None),
    (None, None, None),
])
def test_parse_nvidia_version(text, version, flavor):
    assert gpu_sysfs.parse_nvidia_version(text) == (version, flavor)


def test_parse_gpu_information_with_tabs():
    info = gpu_sysfs.parse_gpu_information('Model: \t\t NVIDIA H100 PCIe\nGPU UUID: \t GPU-1234\nGPU Excluded:\t No\n')
    assert info == {'Model': 'NVIDIA H100 PCIe', 'GPU UUID': 'GPU-1234', 'GPU Excluded': 'No'}


def test_driver_version_falls_back_to_sysfs(tmp_path):
    write(tmp_path, '/sys/module/nvidia/version', '580.95.05\n')
    write(tmp_path, '/sys/module/nvidia/refcnt', '3\n')
    driver = gpu_sysfs.read_nvidia_driver(HostRoot(str(tmp_path)))
    assert driver == {'loaded': True, 'version': '580.95.05', 'flavor': None, 'modules': {'nvidia': 3}, 'params': {}}


def test_driver_not_loaded(hosts):
    driver = gpu_sysfs.read_nvidia_driver(host(hosts, 'blackwell4_driver_not_loaded'))
    assert driver == {'loaded': False, 'version': None, 'flavor': None, 'modules': {}, 'params': {}}


# --- GPU scan --------------------------------------------------------------------------------------------------------

def _pci(root, address, vendor, device, cls, numa='-1', driver=None):
    base = '/sys/devices/pci0000:00/%s' % address
    for name, value in (('vendor', vendor), ('device', device), ('class', cls), ('numa_node', numa)):
        write(root, '%s/%s' % (base, name), value + '\n')
    link(root, '/sys/bus/pci/devices/%s' % address, '../../../devices/pci0000:00/%s' % address)
    if driver:
        link(root, '%s/driver' % base, '../../../bus/pci/drivers/%s' % driver)


def test_scan_filters_classes_and_vendors(tmp_path):
    _pci(tmp_path, '0000:05:00.0', '0x10de', '0x2bb1', '0x030000', numa='-1', driver='vfio-pci')  # VGA: kept
    _pci(tmp_path, '0000:05:00.1', '0x10de', '0x22e8', '0x040300')  # HD audio of the same card: skipped
    _pci(tmp_path, '0000:06:00.0', '0x10de', '0x22a3', '0x068000')  # NVSwitch bridge: skipped
    _pci(tmp_path, '0000:07:00.0', '0x1002', '0x74a1', '0x030200')  # AMD GPU: skipped
    _pci(tmp_path, '0000:08:00.0', '0x10de', '0x2d9f', '0x030200')  # ID not in the table, above 0x2900
    gpus = gpu_sysfs.scan_gpus(HostRoot(str(tmp_path)))
    assert [gpu['pci_address'] for gpu in gpus] == ['0000:05:00.0', '0000:08:00.0']
    vga = gpus[0]
    assert vga['architecture'] == 'blackwell' and vga['architecture_known'] is True
    assert vga['numa_node'] is None
    assert vga['driver'] == 'vfio-pci'
    assert vga['iommu_group'] is None and vga['iommu_domain_type'] is None and vga['iommu_group_devices'] == []
    assert gpus[1]['architecture'] == 'blackwell' and gpus[1]['architecture_known'] is False
    assert gpus[1]['name'] == 'NVIDIA device 0x2d9f'
    assert [gpu['index'] for gpu in gpus] == [0, 1]


def test_scan_counts_physical_functions_and_lists_virtual_functions_apart(tmp_path):
    _pci(tmp_path, '0000:05:00.0', '0x10de', '0x2bb5', '0x030200', driver='nvidia')
    for number, function in enumerate(('4', '5')):
        address = '0000:05:00.%s' % function
        _pci(tmp_path, address, '0x10de', '0x2bb5', '0x030200', driver='vfio-pci' if function == '5' else None)
        link(tmp_path, '/sys/devices/pci0000:00/%s/physfn' % address, '../0000:05:00.0')
        link(tmp_path, '/sys/devices/pci0000:00/0000:05:00.0/virtfn%d' % number, '../%s' % address)
    # a VF whose PF is not in sysfs (any more): listed with no GPU, never counted as one
    _pci(tmp_path, '0000:09:00.4', '0x10de', '0x2bb5', '0x030200')
    link(tmp_path, '/sys/devices/pci0000:00/0000:09:00.4/physfn', '../0000:09:00.0')
    _pci(tmp_path, '0000:08:00.0', '0x10de', '0x2bb5', '0x030200')
    host = HostRoot(str(tmp_path))
    gpus, vfs = gpu_sysfs.scan_gpu_functions(host)
    assert [(gpu['index'], gpu['pci_address'], gpu['virtual_functions']) for gpu in gpus] == [
        (0, '0000:05:00.0', ['0000:05:00.4', '0000:05:00.5']), (1, '0000:08:00.0', [])]
    assert [(vf['pci_address'], vf['physical_function'], vf['gpu_index'], vf['driver']) for vf in vfs] == [
        ('0000:05:00.4', '0000:05:00.0', 0, None), ('0000:05:00.5', '0000:05:00.0', 0, 'vfio-pci'),
        ('0000:09:00.4', '0000:09:00.0', None, None)]
    assert gpu_sysfs.scan_gpus(host) == gpus


def test_scan_of_the_sriov_fixture(hosts):
    gpus, vfs = gpu_sysfs.scan_gpu_functions(host(hosts, 'blackwell4_amd_snp_sriov_vfs'))
    assert len(gpus) == 4 and len(vfs) == 3
    assert [vf['iommu_group'] for vf in vfs] == [15, 16, 17]


def test_scan_reads_group_when_not_preloaded(hosts):
    gpus = gpu_sysfs.scan_gpus(host(hosts, 'blackwell4_amd_snp_one_identity'), groups={})
    assert [gpu['iommu_domain_type'] for gpu in gpus] == ['DMA-FQ', 'DMA-FQ', 'identity', 'DMA-FQ']


def test_scan_without_gpus(hosts):
    assert gpu_sysfs.scan_gpus(host(hosts, 'no_nvidia_gpu')) == []


# --- identity units --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('text, expected', [
    ('echo identity > /sys/kernel/iommu_groups/5/type', True),
    ('MODE=identity\nfor g in /sys/kernel/iommu_groups/*; do echo $MODE > $g/type; done', True),
    ('ACTION=="add", ATTR{iommu_group/type}="identity"', True),
    ('cat /sys/kernel/iommu_groups/*/type', False),
    ('useradd --comment "service identity" svc', False),
    ('echo identitymode > /sys/kernel/iommu_groups/5/type', False),
    ('', False),
])
def test_writes_identity(text, expected):
    assert gpu_sysfs.writes_identity(text) is expected


def test_fixture_identity_unit(hosts):
    units = gpu_sysfs.scan_identity_units(host(hosts, 'blackwell4_amd_snp_identity_unit'))
    assert len(units) == 1
    unit = units[0]
    assert unit['kind'] == 'systemd' and unit['name'] == 'gpu-iommu-identity.service'
    assert unit['path'] == '/etc/systemd/system/gpu-iommu-identity.service'
    assert unit['enabled'] is True and unit['masked'] is False
    assert unit['evidence'] == ['/usr/local/sbin/gpu-iommu-identity.sh:10: echo identity > '
                                '"/sys/kernel/iommu_groups/$group/type"']


def test_inline_unit_masked_unit_and_templates(tmp_path):
    write(tmp_path, '/usr/lib/systemd/system/inline.service',
          "[Service]\nExecStart=/bin/sh -c 'echo identity > /sys/kernel/iommu_groups/7/type'\n")
    link(tmp_path, '/etc/systemd/system/sysinit.target.wants/inline.service', '../../../../usr/lib/systemd/system/inline.service')
    write(tmp_path, '/usr/lib/systemd/system/masked.service', '[Service]\nExecStart=-/usr/local/bin/pt.sh\n')
    write(tmp_path, '/usr/local/bin/pt.sh', '#!/bin/sh\necho identity > /sys/kernel/iommu_groups/8/type\n', 0o755)
    link(tmp_path, '/etc/systemd/system/masked.service', '/dev/null')
    write(tmp_path, '/etc/systemd/system/pt@.service', '[Service]\nExecStart=/usr/local/bin/pt.sh %i\n')
    link(tmp_path, '/etc/systemd/system/multi-user.target.wants/pt@62.service', '../pt@.service')
    write(tmp_path, '/etc/systemd/system/other.service', '[Service]\nExecStart=/usr/bin/true\n')
    units = dict((unit['name'], unit) for unit in gpu_sysfs.scan_identity_units(HostRoot(str(tmp_path))))
    assert sorted(units) == ['inline.service', 'masked.service', 'pt@.service']
    assert (units['masked.service']['enabled'], units['masked.service']['masked']) == (False, True)
    assert units['inline.service']['enabled'] is True
    assert units['inline.service']['scripts'] == []
    assert units['inline.service']['evidence'][0].startswith('/usr/lib/systemd/system/inline.service:2:')
    assert units['pt@.service']['enabled'] is True
    assert units['pt@.service']['scripts'] == ['/usr/local/bin/pt.sh']


def test_masked_unit_is_reported_disabled(tmp_path):
    write(tmp_path, '/usr/lib/systemd/system/pt.service', '[Service]\nExecStart=/usr/local/bin/pt.sh\n'
          '[Install]\nWantedBy=multi-user.target\n')
    write(tmp_path, '/usr/local/bin/pt.sh', 'echo identity > /sys/kernel/iommu_groups/8/type\n', 0o755)
    link(tmp_path, '/usr/lib/systemd/system/multi-user.target.wants/pt.service', '../pt.service')
    link(tmp_path, '/etc/systemd/system/pt.service', '/dev/null')
    units = gpu_sysfs.scan_identity_units(HostRoot(str(tmp_path)))
    assert [(unit['name'], unit['enabled'], unit['masked']) for unit in units] == [('pt.service', False, True)]


def test_drop_in_exec_line(tmp_path):
    write(tmp_path, '/usr/lib/systemd/system/gpu-setup.service', '[Service]\nExecStart=/usr/bin/true\n')
    write(tmp_path, '/etc/systemd/system/gpu-setup.service.d/10-pt.conf',
          "[Service]\nExecStartPost=/bin/bash -c 'echo identity | tee /sys/kernel/iommu_groups/3/type'\n")
    units = gpu_sysfs.scan_identity_units(HostRoot(str(tmp_path)))
    assert [unit['name'] for unit in units] == ['gpu-setup.service']
    assert units[0]['enabled'] is False
    assert units[0]['evidence'][0].startswith('/etc/systemd/system/gpu-setup.service.d/10-pt.conf:2:')


def test_other_kinds(tmp_path):
    write(tmp_path, '/etc/tmpfiles.d/iommu.conf', 'w /sys/kernel/iommu_groups/62/type - - - - identity\n')
    write(tmp_path, '/usr/lib/tmpfiles.d/iommu.conf', 'w /sys/kernel/iommu_groups/1/type - - - - identity\n')  # shadowed
    write(tmp_path, '/etc/udev/rules.d/70-gpu.rules',
          'ACTION=="add", SUBSYSTEM=="pci", ATTR{vendor}=="0x10de", ATTR{iommu_group/type}="identity"\n')
    write(tmp_path, '/etc/rc.local', '#!/bin/sh\necho identity > /sys/kernel/iommu_groups/9/type\nexit 0\n', 0o644)
    write(tmp_path, '/etc/init.d/gpu-pt', '#!/bin/sh\necho identity > /sys/kernel/iommu_groups/9/type\n', 0o755)
    link(tmp_path, '/etc/rc2.d/S01gpu-pt', '../init.d/gpu-pt')
    write(tmp_path, '/etc/cron.d/gpu', '@reboot root echo identity > /sys/kernel/iommu_groups/9/type\n')
    write(tmp_path, '/etc/cron.d/harmless', '@daily root cat /sys/kernel/iommu_groups/9/type\n')
    units = [(unit['kind'], unit['path'], unit['enabled']) for unit in gpu_sysfs.scan_identity_units(HostRoot(str(tmp_path)))]
    assert units == [
        ('tmpfiles', '/etc/tmpfiles.d/iommu.conf', True),
        ('udev', '/etc/udev/rules.d/70-gpu.rules', True),
        ('rc-local', '/etc/rc.local', False),  # not executable: systemd's rc-local generator ignores it
        ('sysv', '/etc/init.d/gpu-pt', True),
        ('cron', '/etc/cron.d/gpu', True),
    ]


def test_binary_and_huge_scripts_are_not_read(tmp_path):
    write(tmp_path, '/etc/systemd/system/bin.service', '[Service]\nExecStart=/usr/local/bin/tool\n')
    real = write(tmp_path, '/usr/local/bin/tool', '', 0o755)
    with open(real, 'wb') as handle:
        handle.write(b'\x7fELF\x00\x00iommu_groups identity')
    assert gpu_sysfs.scan_identity_units(HostRoot(str(tmp_path))) == []


# --- what the readers looked at (for a capture) ---------------------------------------------------------------------

def test_recorder_notes_reads_links_listings_and_checks(tmp_path):
    write(tmp_path, '/sys/devices/x/vendor', '0x10de\n')
    write(tmp_path, '/usr/bin/tool', '#!/bin/sh\n', mode=0o755)
    link(tmp_path, '/sys/bus/pci/devices/a', '../../../devices/x')
    os.makedirs(str(tmp_path / 'sys/kernel/iommu_groups'))
    recorder = gpu_sysfs.HostRecorder()
    root = HostRoot(str(tmp_path), recorder=recorder)
    assert root.read_value('/sys/bus/pci/devices/a/vendor') == '0x10de'
    assert root.listdir('/sys/kernel/iommu_groups') == []
    assert root.is_executable('/usr/bin/tool') and root.isdir('/sys/devices')
    assert root.read('/missing') is None and not root.isfile('/missing')
    assert recorder.links == {'/sys/bus/pci/devices/a': '../../../devices/x'}
    assert recorder.files == {'/sys/devices/x/vendor': b'0x10de\n', '/usr/bin/tool': None}
    assert recorder.modes == {'/usr/bin/tool': 0o755}
    assert recorder.dirs == {'/sys/kernel/iommu_groups': set(), '/sys/devices': None}
    # a whole read after a limited one keeps the longer content
    recorder.file('/f', b'ab')
    recorder.file('/f', b'abcd')
    recorder.file('/f', b'a')
    recorder.file('/f')
    assert recorder.files['/f'] == b'abcd'


# --- virtualization -------------------------------------------------------------------------------------------------

CPUINFO_GUEST = ('processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu vme de pse tsc msr hypervisor lahf_lm\n\n'
                 'processor\t: 1\nflags\t\t: fpu vme\n\n')


@pytest.mark.parametrize('cpuinfo, hypervisor', [
    (CPUINFO_GUEST, True),
    ('processor\t: 0\nflags\t\t: fpu vme de pse tsc msr lahf_lm\n\n', False),
    ('processor\t: 0\nflags\t\t: fpu nothypervisor hypervisorx\n\n', False),
    ('processor\t: 0\nflags\t\t: fpu\n\nprocessor\t: 1\nflags\t\t: fpu hypervisor\n\n', False),  # first block only
    ('processor\t: 0\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32\n\n', False),  # arm64 has no such flag
    ('', False),
])
def test_hypervisor_flag(tmp_path, cpuinfo, hypervisor):
    write(tmp_path, '/proc/cpuinfo', cpuinfo)
    found = gpu_sysfs.detect_virtualization(HostRoot(str(tmp_path)))
    assert found['hypervisor'] is hypervisor
    assert found['evidence'] == (['/proc/cpuinfo: hypervisor flag'] if hypervisor else [])


def test_hypervisor_vendor_from_log_and_xen(tmp_path):
    write(tmp_path, '/proc/cpuinfo', CPUINFO_GUEST)
    found = gpu_sysfs.detect_virtualization(HostRoot(str(tmp_path)), ['[    0.000000] Hypervisor detected: KVM'])
    assert found == {'hypervisor': True, 'hypervisor_vendor': 'KVM',
                     'evidence': ['/proc/cpuinfo: hypervisor flag', 'kernel log: Hypervisor detected: KVM']}
    write(tmp_path, '/sys/hypervisor/type', 'xen\n')
    assert gpu_sysfs.detect_virtualization(HostRoot(str(tmp_path)))['hypervisor_vendor'] == 'xen'


def test_bare_metal_fixture_is_no_vm(hosts):
    assert gpu_sysfs.detect_virtualization(host(hosts, 'blackwell4_amd_snp_dmafq'))['hypervisor'] is False
    assert gpu_sysfs.detect_virtualization(host(hosts, 'h200_vm_580'))['hypervisor'] is True


# --- /proc/devices and device nodes ---------------------------------------------------------------------------------

def test_parse_proc_devices_reads_the_character_section_only():
    text = ('Character devices:\n  1 mem\n  4 /dev/vc/0\n195 nvidia\n195 nvidiactl\n238 nvidia-uvm\n\n'
            'Block devices:\n  7 loop\n195 nvidia\n254 virtblk\n')
    assert gpu_sysfs.parse_proc_devices(text) == [
        {'major': 1, 'name': 'mem'}, {'major': 4, 'name': '/dev/vc/0'}, {'major': 195, 'name': 'nvidia'},
        {'major': 195, 'name': 'nvidiactl'}, {'major': 238, 'name': 'nvidia-uvm'}]
    assert gpu_sysfs.parse_proc_devices('') == []
    assert gpu_sysfs.parse_proc_devices('Block devices:\n  7 loop\n') == []
    assert gpu_sysfs.parse_proc_devices('Character devices:\nx nvidia\n195\n  7 two words\n') == [
        {'major': 7, 'name': 'two words'}]


def test_device_nodes_of_the_h200_fixture(hosts):
    root = host(hosts, 'h200_vm_580')
    assert gpu_sysfs.read_device_nodes(root) == [
        {'path': '/dev/nvidia-caps/nvidia-cap1', 'major': 241, 'minor': 1},
        {'path': '/dev/nvidia-caps/nvidia-cap2', 'major': 241, 'minor': 2},
        {'path': '/dev/nvidia-uvm', 'major': 238, 'minor': 0},
        {'path': '/dev/nvidia-uvm-tools', 'major': 238, 'minor': 1},
        {'path': '/dev/nvidia0', 'major': 195, 'minor': 0},
        {'path': '/dev/nvidiactl', 'major': 195, 'minor': 255},
    ]
    nvidia = [entry for entry in gpu_sysfs.read_char_devices(root) if entry['name'].startswith('nvidia')]
    assert nvidia == [{'major': 195, 'name': 'nvidia'}, {'major': 195, 'name': 'nvidiactl'},
                      {'major': 238, 'name': 'nvidia-uvm'}, {'major': 239, 'name': 'nvidia-nvswitch'},
                      {'major': 240, 'name': 'nvidia-nvlink'}, {'major': 241, 'name': 'nvidia-caps'},
                      {'major': 242, 'name': 'nvidia-caps-imex-channels'}]


def test_device_table_is_checked(tmp_path):
    table = ('c 195:0 /dev/nvidia0\nc 1:3 /dev/null\nc 238:0 /dev/sub/nvidia-uvm\n'
             'b 8:0 /dev/nvidia1\nc x:1 /dev/nvidia2\n# c 195:3 /dev/nvidia3\n'
             'c 241:1 /dev/nvidia-caps/nvidia-cap1\nc 241:9 /dev/nvidia-caps/\n'
             'c 195:4 /dev/nvidia4 extra\n')
    write(tmp_path, gpu_sysfs.DEVICE_TABLE, table)
    assert gpu_sysfs.read_device_nodes(HostRoot(str(tmp_path))) == [
        {'path': '/dev/nvidia-caps/nvidia-cap1', 'major': 241, 'minor': 1},
        {'path': '/dev/nvidia0', 'major': 195, 'minor': 0}]


class LiveRoot(HostRoot):
    """A temporary tree read as if it were the live / (where only real nodes count)."""

    @property
    def is_live(self):
        return True


def test_device_table_is_ignored_on_a_live_root(tmp_path):
    write(tmp_path, gpu_sysfs.DEVICE_TABLE, 'c 195:0 /dev/nvidia0\n')
    write(tmp_path, '/dev/nvidia0', '')  # a regular file is no device node
    assert gpu_sysfs.read_device_nodes(LiveRoot(str(tmp_path))) == []


def _mknod_or_skip(path, major, minor):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(major, minor))
    except (OSError, AttributeError) as exc:
        pytest.skip('cannot make device nodes here: %s' % exc)


def test_real_device_nodes_are_read_from_st_rdev_and_win(tmp_path):
    _mknod_or_skip(str(tmp_path / 'dev/nvidia0'), 195, 7)
    _mknod_or_skip(str(tmp_path / 'dev/nvidia-caps/nvidia-cap1'), 241, 1)
    os.makedirs(str(tmp_path / 'dev/nvidia-caps-imex-channels'))
    write(tmp_path, gpu_sysfs.DEVICE_TABLE, 'c 195:0 /dev/nvidia0\nc 195:255 /dev/nvidiactl\n')
    recorder = gpu_sysfs.HostRecorder()
    nodes = gpu_sysfs.read_device_nodes(HostRoot(str(tmp_path), recorder=recorder))
    assert nodes == [{'path': '/dev/nvidia-caps/nvidia-cap1', 'major': 241, 'minor': 1},
                     {'path': '/dev/nvidia0', 'major': 195, 'minor': 7},
                     {'path': '/dev/nvidiactl', 'major': 195, 'minor': 255}]
    # the real nodes and the table entries that were used both go into a capture
    assert recorder.devices == {'/dev/nvidia0': (195, 7), '/dev/nvidia-caps/nvidia-cap1': (241, 1),
                                '/dev/nvidiactl': (195, 255)}
    assert gpu_sysfs.read_device_nodes(LiveRoot(str(tmp_path))) == nodes[:2]


# --- PCI scan summary, modules --------------------------------------------------------------------------------------

def test_scan_pci_counts_vendors_and_other_nvidia_functions(hosts, tmp_path):
    scan = gpu_sysfs.scan_pci(host(hosts, 'no_nvidia_gpu'))
    assert scan == {'sysfs': True, 'devices': 11, 'vendors': {'0x1022': 10, '0x15b3': 1}, 'nvidia_functions': []}
    empty = {'sysfs': False, 'devices': 0, 'vendors': {}, 'nvidia_functions': []}
    assert gpu_sysfs.scan_pci(HostRoot(str(tmp_path))) == empty
    write(tmp_path, '/sys/devices/pci0000:00/0000:81:00.1/vendor', '0x10de\n')
    write(tmp_path, '/sys/devices/pci0000:00/0000:81:00.1/device', '0x22e8\n')
    write(tmp_path, '/sys/devices/pci0000:00/0000:81:00.1/class', '0x040300\n')
    link(tmp_path, '/sys/devices/pci0000:00/0000:81:00.1/driver', '../../../bus/pci/drivers/snd_hda_intel')
    link(tmp_path, '/sys/bus/pci/devices/0000:81:00.1', '../../../devices/pci0000:00/0000:81:00.1')
    assert gpu_sysfs.scan_pci(HostRoot(str(tmp_path))) == {
        'sysfs': True, 'devices': 1, 'vendors': {'0x10de': 1},
        'nvidia_functions': [{'pci_address': '0000:81:00.1', 'device_id': '0x22e8', 'pci_class': '0x040300',
                              'driver': 'snd_hda_intel'}]}


def test_modules_from_proc_modules_when_sys_module_is_missing(hosts):
    driver = gpu_sysfs.read_nvidia_driver(host(hosts, 'h200_vm_580'))
    assert driver['modules'] == {'nvidia': 2, 'nvidia_uvm': 0}
    assert (driver['loaded'], driver['version'], driver['flavor']) == (True, '580.159.04', 'open')
    # /sys/module wins where both exist
    assert gpu_sysfs.read_nvidia_driver(host(hosts, 'blackwell4_amd_snp_dmafq'))['modules']['nvidia'] == 12
