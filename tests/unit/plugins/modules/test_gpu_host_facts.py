# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the gpu_host_facts module, run against the host fixture trees (tests/fixtures/hosts)."""

from __future__ import annotations

import hashlib
import os
import tarfile

import pytest

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.llmserve.sglang.plugins.module_utils.gpu_sysfs import HostRoot
from ansible_collections.llmserve.sglang.plugins.modules import gpu_host_facts
from ansible_collections.llmserve.sglang.tests.unit.plugins.modules.module_exits import ExitJson, FailJson, patch_exits
from ansible_collections.llmserve.sglang.tests.fixtures.hosts import materialize


@pytest.fixture(autouse=True)
def patched_module(monkeypatch):
    def _no_commands(self, *args, **kwargs):
        raise AssertionError('run_command must not be called for a fixture root: %r' % (args,))

    patch_exits(monkeypatch)
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', _no_commands)


@pytest.fixture(scope='module')
def hosts(tmp_path_factory):
    base = tmp_path_factory.mktemp('hosts')
    for name in materialize.host_names():
        materialize.build(name, str(base / name))
    return base


def run(args, expect=ExitJson):
    with patch_module_args(args):
        with pytest.raises(expect) as info:
            gpu_host_facts.main()
    return info.value.result


def facts_of(hosts, name, **extra):
    root = str(hosts / name)
    args = {'root': root, 'kernel_log': os.path.join(root, 'var/log/kern.log')}
    args.update(extra)
    result = run(args)
    assert result['changed'] is False
    return result['ansible_facts']['gpu_host']


def snapshot(root):
    state = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(directory, name)
            info = os.lstat(path)
            digest = None
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, 'rb') as handle:
                    digest = hashlib.sha256(handle.read()).hexdigest()
            state[path] = (info.st_mode, info.st_mtime_ns, digest, os.readlink(path) if os.path.islink(path) else None)
    return state


def test_healthy_blackwell_snp_host(hosts):
    facts = facts_of(hosts, 'blackwell4_amd_snp_dmafq')
    gpus = facts['gpus']
    assert [gpu['pci_address'] for gpu in gpus] == ['0000:01:00.0', '0000:41:00.0', '0000:81:00.0', '0000:c1:00.0']
    assert [gpu['index'] for gpu in gpus] == [0, 1, 2, 3]
    first = gpus[0]
    assert first['vendor_id'] == '0x10de'
    assert first['device_id'] == '0x2bb5'
    assert first['name'] == 'NVIDIA RTX PRO 6000 Blackwell Server Edition'
    assert first['architecture'] == 'blackwell'
    assert first['chip'] == 'GB202'
    assert first['iommu_group'] == 14
    assert first['iommu_domain_type'] == 'DMA-FQ'
    assert first['iommu_instance'] == 'ivhd0'
    assert first['driver'] == 'nvidia'
    assert first['uuid'] == 'GPU-3b1c1d7e-1f0a-4c2b-9a57-0c8a2f6e4d11'
    assert first['device_minor'] == 0
    assert [gpu['numa_node'] for gpu in gpus] == [0, 0, 1, 1]
    assert facts['iommu']['enabled'] is True
    assert facts['iommu']['vendor'] == 'amd'
    assert facts['iommu']['identity_groups'] == []
    assert facts['sev_snp'] is True
    assert '/sys/module/kvm_amd/parameters/sev_snp = Y' in facts['sev_snp_evidence']
    assert 'kernel log: AMD-Vi SNP support enabled' in facts['sev_snp_evidence']
    driver = facts['nvidia_driver']
    assert driver['loaded'] is True
    assert driver['version'] == '595.45.04'
    assert driver['flavor'] == 'open'
    assert driver['params']['DmaRemapPeerMmio'] == 1
    assert driver['params']['RegistryDwords'] == 'DmaRemapPeerMmio=1'
    assert driver['registry_dwords'] == {'DmaRemapPeerMmio': 1}
    assert driver['registry_dwords_notes'] == []
    assert driver['modules']['nvidia'] == 12
    assert driver['nvidia_smi'] is None
    assert facts['dma_faults'] == []
    assert facts['identity_units'] == []
    assert facts['kernel_release'] == '6.12.30-amd64'
    assert facts['kernel_log_source'] == 'file'
    assert facts['kernel_log_lines'] > 10


def test_one_group_in_identity_with_fsp_failure(hosts):
    facts = facts_of(hosts, 'blackwell4_amd_snp_one_identity')
    by_address = dict((gpu['pci_address'], gpu) for gpu in facts['gpus'])
    broken = by_address['0000:81:00.0']
    assert broken['iommu_domain_type'] == 'identity'
    assert broken['uuid'] is None
    assert broken['dma_faults'] == 2
    assert by_address['0000:01:00.0']['iommu_domain_type'] == 'DMA-FQ'
    assert facts['iommu']['identity_groups'] == [{'group': 62, 'devices': ['0000:81:00.0']}]
    kinds = [(event['kind'], event['pci_address'], event['gpu'], event['gpu_index']) for event in facts['dma_faults']]
    assert kinds == [('ILLEGAL_DEV_TABLE_ENTRY', '0000:81:00.0', True, 2), ('XID_143', '0000:81:00.0', True, 2)]
    assert facts['kernel_release'] == '6.14.0-37-generic'


def test_iommu_off(hosts):
    facts = facts_of(hosts, 'blackwell4_no_iommu')
    assert facts['iommu']['enabled'] is False
    assert facts['iommu']['vendor'] is None
    assert facts['iommu']['amd_iommu_off'] is True
    assert facts['iommu']['cmdline']['amd_iommu'] == 'off'
    assert facts['sev_snp'] is False  # "SNP cannot be supported" in the log is not SNP
    assert all(gpu['iommu_group'] is None and gpu['iommu_domain_type'] is None for gpu in facts['gpus'])
    assert len(facts['gpus']) == 4


def test_intel_hopper_identity(hosts):
    facts = facts_of(hosts, 'hopper4_intel_identity')
    assert facts['iommu']['vendor'] == 'intel'
    assert facts['iommu']['passthrough_requested'] is True
    assert facts['iommu']['cmdline']['intel_iommu'] == 'on'
    assert facts['sev_snp'] is False
    assert set(gpu['architecture'] for gpu in facts['gpus']) == {'hopper'}
    assert set(gpu['iommu_domain_type'] for gpu in facts['gpus']) == {'identity'}
    assert facts['gpus'][0]['iommu_instance'] == 'dmar1'
    assert facts['nvidia_driver']['flavor'] == 'proprietary'
    assert facts['nvidia_driver']['version'] == '570.172.08'
    assert facts['nvidia_driver']['registry_dwords'] == {}


def test_no_nvidia_gpu_is_not_an_error(hosts):
    facts = facts_of(hosts, 'no_nvidia_gpu')
    assert facts['gpus'] == []
    assert facts['nvidia_driver']['loaded'] is False
    assert facts['nvidia_driver']['params'] == {}
    assert facts['iommu']['enabled'] is True
    assert facts['pci_scan'] == {'sysfs': True, 'devices': 11, 'vendors': {'0x1022': 10, '0x15b3': 1},
                                 'nvidia_functions': []}
    assert facts['device_nodes'] == [] and facts['char_devices'] == [] and facts['xid_events'] == []


def test_driver_not_loaded(hosts):
    facts = facts_of(hosts, 'blackwell4_driver_not_loaded')
    assert facts['nvidia_driver']['loaded'] is False
    assert facts['nvidia_driver']['version'] is None
    assert facts['nvidia_driver']['registry_dwords'] == {}
    assert [gpu['driver'] for gpu in facts['gpus']] == [None] * 4
    assert [gpu['model'] for gpu in facts['gpus']] == [None] * 4
    assert facts['gpus'][0]['name'] == 'NVIDIA RTX PRO 6000 Blackwell Server Edition'


def test_sriov_virtual_functions_are_not_gpus(hosts):
    facts = facts_of(hosts, 'blackwell4_amd_snp_sriov_vfs')
    gpus = facts['gpus']
    assert [gpu['pci_address'] for gpu in gpus] == ['0000:01:00.0', '0000:41:00.0', '0000:81:00.0', '0000:c1:00.0']
    assert [gpu['index'] for gpu in gpus] == [0, 1, 2, 3]
    assert [gpu['virtual_functions'] for gpu in gpus] == [['0000:01:00.4', '0000:01:00.5', '0000:01:00.6'], [], [], []]
    vfs = facts['gpu_virtual_functions']
    assert [(vf['pci_address'], vf['physical_function'], vf['gpu_index']) for vf in vfs] == [
        ('0000:01:00.4', '0000:01:00.0', 0), ('0000:01:00.5', '0000:01:00.0', 0), ('0000:01:00.6', '0000:01:00.0', 0)]
    assert vfs[1] == {'pci_address': '0000:01:00.5', 'physical_function': '0000:01:00.0', 'gpu_index': 0,
                      'device_id': '0x2bb5', 'pci_class': '0x030200',
                      'name': 'NVIDIA RTX PRO 6000 Blackwell Server Edition', 'iommu_group': 16,
                      'iommu_domain_type': 'DMA-FQ', 'driver': None}
    # the VFs are neither GPUs nor "other NVIDIA functions"; the fault of a VF is not the GPU's
    assert facts['pci_scan']['nvidia_functions'] == []
    assert facts['pci_scan']['vendors']['0x10de'] == 7
    assert [gpu['dma_faults'] for gpu in gpus] == [0, 0, 0, 0]
    assert [(e['pci_address'], e['gpu'], e['gpu_index']) for e in facts['dma_faults']] == [
        ('0000:01:00.5', False, None)]


def test_hosts_without_sriov_have_no_virtual_functions(hosts):
    facts = facts_of(hosts, 'blackwell4_amd_snp_dmafq')
    assert facts['gpu_virtual_functions'] == []
    assert [gpu['virtual_functions'] for gpu in facts['gpus']] == [[], [], [], []]


def test_io_page_faults_attributed(hosts):
    facts = facts_of(hosts, 'blackwell4_amd_snp_io_page_faults')
    counts = dict((gpu['pci_address'], gpu['dma_faults']) for gpu in facts['gpus'])
    assert counts == {'0000:01:00.0': 0, '0000:41:00.0': 0, '0000:81:00.0': 2, '0000:c1:00.0': 1}
    nic = [event for event in facts['dma_faults'] if event['pci_address'] == '0000:42:00.0']
    assert len(nic) == 1 and nic[0]['gpu'] is False and nic[0]['gpu_name'] is None
    assert facts['dma_faults'][0]['timestamp'] == pytest.approx(812.000001)
    assert facts['dma_faults'][0]['address'] == '0x3ff000001000'


def test_identity_unit_found(hosts):
    facts = facts_of(hosts, 'blackwell4_amd_snp_identity_unit')
    assert [unit['name'] for unit in facts['identity_units']] == ['gpu-iommu-identity.service']
    unit = facts['identity_units'][0]
    assert unit['enabled'] is True
    assert unit['scripts'] == ['/usr/local/sbin/gpu-iommu-identity.sh']
    assert any('echo identity >' in line for line in unit['evidence'])


def test_no_kernel_log_below_another_root(hosts):
    result = run({'root': str(hosts / 'blackwell4_amd_snp_io_page_faults')})
    facts = result['ansible_facts']['gpu_host']
    assert facts['kernel_log_source'] == 'none'
    assert facts['kernel_log_lines'] == 0
    assert facts['dma_faults'] == []
    # SEV-SNP is still seen from sysfs
    assert facts['sev_snp'] is True


def test_check_mode_gives_the_same_facts_and_changes_nothing(hosts):
    root = str(hosts / 'blackwell4_amd_snp_identity_unit')
    before = snapshot(root)
    normal = facts_of(hosts, 'blackwell4_amd_snp_identity_unit')
    checked = facts_of(hosts, 'blackwell4_amd_snp_identity_unit', _ansible_check_mode=True)
    assert checked == normal
    assert snapshot(root) == before


def test_missing_kernel_log_fails_clearly(hosts):
    result = run({'root': str(hosts / 'no_nvidia_gpu'), 'kernel_log': str(hosts / 'nope.log')}, expect=FailJson)
    assert 'kernel_log' in result['msg'] and 'nope.log' in result['msg']


def test_root_must_be_a_directory(hosts, tmp_path):
    result = run({'root': str(tmp_path / 'missing')}, expect=FailJson)
    assert 'is not a directory' in result['msg']


class FakeModule(object):
    """Enough of AnsibleModule for read_kernel_log on a live root."""

    def __init__(self, outputs, binaries=('journalctl', 'dmesg')):
        self.outputs = outputs
        self.binaries = binaries
        self.calls = []

    def get_bin_path(self, name):
        return '/usr/bin/%s' % name if name in self.binaries else None

    def run_command(self, argv):
        self.calls.append(argv)
        return self.outputs[os.path.basename(argv[0])]

    def fail_json(self, **kwargs):
        raise FailJson(kwargs)


def test_live_kernel_log_prefers_journalctl():
    module = FakeModule({'journalctl': (0, '[    1.0] host kernel: AMD-Vi: IOMMU SNP support enabled.\n', '')})
    lines, info = gpu_host_facts.read_kernel_log(module, HostRoot('/'), None)
    assert info['kernel_log_source'] == 'journalctl'
    assert lines == ['[    1.0] host kernel: AMD-Vi: IOMMU SNP support enabled.']
    assert module.calls[0][1:] == ['-k', '-b', '-o', 'short-monotonic', '--no-pager', '-q']


def test_live_kernel_log_falls_back_to_dmesg():
    module = FakeModule({'journalctl': (0, '', ''), 'dmesg': (0, '[    0.1] line one\n[    0.2] line two\n', '')})
    lines, info = gpu_host_facts.read_kernel_log(module, HostRoot('/'), None)
    assert info['kernel_log_source'] == 'dmesg'
    assert info['kernel_log_lines'] == 2 and len(lines) == 2


def test_live_kernel_log_unreadable_is_reported():
    module = FakeModule({'dmesg': (1, '', 'dmesg: read kernel buffer failed: Operation not permitted')},
                        binaries=('dmesg',))
    lines, info = gpu_host_facts.read_kernel_log(module, HostRoot('/'), None)
    assert lines == []
    assert info['kernel_log_source'] == 'none'
    assert 'journalctl not found' in info['kernel_log_error']
    assert 'Operation not permitted' in info['kernel_log_error']


# --- the H200 guest of shared/reference/real-gpu-hosts.md -----------------------------------------------------------

H200_PARAMS_TAIL = 'ExcludedGpus: ""\n'


def test_h200_vm_facts_match_the_reference(hosts):
    facts = facts_of(hosts, 'h200_vm_580')
    assert len(facts['gpus']) == 1
    gpu = facts['gpus'][0]
    assert (gpu['pci_address'], gpu['device_id'], gpu['subsystem_device_id'], gpu['pci_class']) == (
        '0000:00:06.0', '0x2335', '0x18bf', '0x030200')
    assert (gpu['name'], gpu['chip'], gpu['architecture'], gpu['architecture_known']) == (
        'NVIDIA H200', 'GH100', 'hopper', True)
    assert gpu['numa_node'] is None and gpu['driver'] == 'nvidia'
    assert gpu['iommu_group'] is None and gpu['iommu_domain_type'] is None and gpu['iommu_instance'] is None
    assert gpu['dma_faults'] == 0 and gpu['xid_events'] == 0
    driver = facts['nvidia_driver']
    assert (driver['loaded'], driver['version'], driver['flavor']) == (True, '580.159.04', 'open')
    assert driver['params']['DmaRemapPeerMmio'] == 1 and driver['params']['RegistryDwords'] == ''
    assert len(driver['params']) == 42
    assert driver['registry_dwords'] == {} and driver['modules'] == {'nvidia': 2, 'nvidia_uvm': 0}
    iommu = facts['iommu']
    assert (iommu['enabled'], iommu['vendor'], iommu['instances'], iommu['group_count']) == (False, None, [], 0)
    assert facts['sev_snp'] is False and facts['sev_snp_evidence'] == []
    assert facts['virtualization'] == {'hypervisor': True, 'hypervisor_vendor': None,
                                       'evidence': ['/proc/cpuinfo: hypervisor flag']}
    assert facts['pci_scan'] == {'sysfs': True, 'devices': 7, 'vendors': {'0x10de': 1, '0x1af4': 5, '0x8086': 1},
                                 'nvidia_functions': []}
    assert facts['kernel_release'] == '6.18.44' and facts['kernel_log_lines'] == 3
    assert facts['dma_faults'] == [] and facts['xid_events'] == [] and facts['identity_units'] == []
    assert [(node['path'], node['major'], node['minor']) for node in facts['device_nodes']] == [
        ('/dev/nvidia-caps/nvidia-cap1', 241, 1), ('/dev/nvidia-caps/nvidia-cap2', 241, 2),
        ('/dev/nvidia-uvm', 238, 0), ('/dev/nvidia-uvm-tools', 238, 1), ('/dev/nvidia0', 195, 0),
        ('/dev/nvidiactl', 195, 255)]
    assert all(set(node) == {'path', 'major', 'minor'} for node in facts['device_nodes'])
    assert all(set(entry) == {'major', 'name'} for entry in facts['char_devices'])
    assert {'major': 238, 'name': 'nvidia-uvm'} in facts['char_devices']
    assert not any(entry['name'] == 'nvidia-frontend' for entry in facts['char_devices'])


def test_h200_vm_fixture_files_are_verbatim(hosts):
    root = hosts / 'h200_vm_580'
    version = (root / 'proc/driver/nvidia/version').read_bytes()
    assert version == (b'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  '
                       b'(nixbld@)  \nGCC version:  gcc version 15.3.0 (GCC) \n')
    params = (root / 'proc/driver/nvidia/params').read_text()
    assert params.startswith('ResmanDebugLevel: 4294967295\nRmLogonRC: 1\n') and params.endswith(H200_PARAMS_TAIL)
    assert len(params.splitlines()) == 42 and 'DmaRemapPeerMmio: 1\n' in params
    assert not (root / 'sys/module/nvidia').exists() and not (root / 'etc/modprobe.d').exists()
    assert (root / 'var/log/kern.log').read_text().endswith('Release Build  (nixbld@)  \n')


def test_fatal_xid_fixture_facts(hosts):
    facts = facts_of(hosts, 'h200_vm_580_xid79')
    assert facts['gpus'][0]['xid_events'] == 2
    assert [(e['code'], e['caused_by'], e['pci_address'], e['gpu'], e['gpu_index'], e['gpu_name'], e['process'])
            for e in facts['xid_events']] == [
        (79, None, '0000:00:06.0', True, 0, 'NVIDIA H200', None),
        (45, 79, '0000:00:06.0', True, 0, 'NVIDIA H200', 'python3')]
    assert facts['xid_events'][0]['timestamp'] == pytest.approx(8123.441207)
    assert facts['xid_events'][0]['text'] == 'GPU has fallen off the bus.'
    assert facts['xid_events_dropped'] == 0 and facts['dma_faults'] == []


# --- capture (support bundle) ---------------------------------------------------------------------------------------

# What legitimately differs between a host and the replay of its capture.
# next_boot: a bundle holds /sys and /proc only, not /boot, /etc or /lib/modules (see the option's documentation)
REPLAY_DIFFERENT = ('root', 'kernel_log_path', 'kernel_log_lines', 'kernel_log_source', 'kernel_log_error',
                    'next_boot')


def comparable(facts):
    facts = dict((key, value) for key, value in facts.items() if key not in REPLAY_DIFFERENT)
    driver = dict(facts['nvidia_driver'])
    driver['nvidia_smi'] = os.path.basename(driver['nvidia_smi']) if driver['nvidia_smi'] else None
    facts['nvidia_driver'] = driver
    return facts


def unpack(bundle, dest):
    os.makedirs(dest)
    with tarfile.open(bundle) as tar:
        tar.extractall(dest, filter='tar')
    return dest


def capture(root, bundle, kernel_log=None, **extra):
    args = {'root': root, 'capture': bundle}
    if kernel_log is not None:
        args['kernel_log'] = kernel_log
    args.update(extra)
    return run(args)


@pytest.mark.parametrize('name', materialize.host_names())
def test_capture_replays_to_the_same_facts(hosts, tmp_path, name):
    root = str(hosts / name)
    bundle = str(tmp_path / 'capture.tar.gz')
    result = capture(root, bundle, os.path.join(root, 'var/log/kern.log'))
    assert result['changed'] is True and result['capture']['written'] is True
    assert os.stat(bundle).st_mode & 0o777 == 0o600 and result['capture']['size'] == os.path.getsize(bundle)
    original = result['ansible_facts']['gpu_host']
    replay = unpack(bundle, str(tmp_path / 'replay'))
    replayed = facts_of(tmp_path, 'replay')
    assert comparable(replayed) == comparable(original)
    assert replayed['kernel_log_lines'] == result['capture']['kernel_log_lines']
    assert os.path.isfile(os.path.join(replay, '.gpu_host_facts/capture.json'))


@pytest.mark.parametrize('name', materialize.host_names())
def test_capture_imports_as_a_fixture_manifest(hosts, tmp_path, name):
    root = str(hosts / name)
    bundle = str(tmp_path / 'capture.tar.gz')
    original = capture(root, bundle, os.path.join(root, 'var/log/kern.log'))['ansible_facts']['gpu_host']
    manifest = tmp_path / 'manifests' / 'imported.yml'
    manifest.parent.mkdir()
    materialize.write_manifest(materialize.import_capture(bundle, 'imported from %s' % name), str(manifest))
    materialize.build('imported', str(tmp_path / 'imported'), directory=str(manifest.parent))
    assert comparable(facts_of(tmp_path, 'imported')) == comparable(original)


def test_capture_of_the_machine_running_the_tests_replays(tmp_path):
    log = tmp_path / 'kern.log'
    log.write_text('[    0.000000] Hypervisor detected: KVM\n[    1.0] usb 1-1: new device\n'
                   "[ 8123.441207] NVRM: Xid (PCI:0000:00:06): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
                   "off the bus.\n")
    bundle = str(tmp_path / 'live.tar.gz')
    # next_boot: false, as the live next boot asks APT through apt-config (a command, which these tests forbid)
    result = capture('/', bundle, str(log), next_boot=False)
    assert result['capture']['kernel_log_lines'] == 2
    assert 'next_boot' not in result['ansible_facts']['gpu_host']
    replay = unpack(bundle, str(tmp_path / 'replay'))
    replayed = run({'root': replay, 'kernel_log': os.path.join(replay, 'var/log/kern.log')})
    assert comparable(replayed['ansible_facts']['gpu_host']) == comparable(result['ansible_facts']['gpu_host'])
    with tarfile.open(bundle) as tar:
        names = tar.getnames()
    assert all(name.split('/')[0] in ('sys', 'proc', 'var', '.gpu_host_facts', 'usr', 'dev') for name in names)
    assert not any(name.startswith(('etc/', 'root/', 'home/')) for name in names)


def test_capture_leaves_out_unit_and_cron_files_that_are_no_finding(hosts, tmp_path):
    root = tmp_path / 'host'
    materialize.build('blackwell4_amd_snp_identity_unit', str(root))
    (root / 'etc/systemd/system/app.service').write_text(
        '[Service]\nEnvironment=HF_TOKEN=hf_secret_token_value\nExecStart=/usr/bin/app\n')
    (root / 'etc/cron.d').mkdir(parents=True)
    (root / 'etc/cron.d/backup').write_text('0 3 * * * root PGPASSWORD=cron_secret_value pg_dump x\n')
    (root / 'etc/systemd/system/multi-user.target.wants/app.service').symlink_to('../app.service')
    bundle = str(tmp_path / 'capture.tar.gz')
    result = capture(str(root), bundle, str(root / 'var/log/kern.log'))
    with tarfile.open(bundle) as tar:
        contents = b''.join(tar.extractfile(member).read() for member in tar if member.isfile())
        names = tar.getnames()
    assert b'hf_secret_token_value' not in contents and b'cron_secret_value' not in contents
    assert not any('app.service' in name or 'backup' in name for name in names)
    # the finding itself travels, with the link that enables it and the script it runs
    assert 'etc/systemd/system/gpu-iommu-identity.service' in names
    assert 'etc/systemd/system/multi-user.target.wants/gpu-iommu-identity.service' in names
    assert 'usr/local/sbin/gpu-iommu-identity.sh' in names
    assert result['ansible_facts']['gpu_host']['identity_units'][0]['enabled'] is True


def test_capture_bounds_the_kernel_log(hosts, tmp_path):
    root = str(hosts / 'h200_vm_580')
    log = tmp_path / 'kern.log'
    with open(str(log), 'w') as handle:
        for number in range(6000):
            handle.write('[ %d.000000] NVRM: Xid (PCI:0000:00:06): 13, pid=1, name=a, %s\n' % (number, 'x' * 2100))
            handle.write('[ %d.000001] unrelated line %d\n' % (number, number))
    result = capture(root, str(tmp_path / 'c.tar.gz'), str(log))
    info = result['capture']
    assert (info['kernel_log_lines'], info['kernel_log_lines_omitted']) == (5000, 1000)
    with tarfile.open(str(tmp_path / 'c.tar.gz')) as tar:
        kept = tar.extractfile('var/log/kern.log').read().decode().splitlines()
    assert len(kept) == 5000 and max(len(line) for line in kept) == 2048
    assert kept[0].startswith('[ 0.000000]') and kept[999].startswith('[ 999.000000]')
    assert kept[1000].startswith('[ 2000.000000]') and kept[-1].startswith('[ 5999.000000]')


def test_capture_in_check_mode_writes_nothing(hosts, tmp_path):
    bundle = tmp_path / 'c.tar.gz'
    result = capture(str(hosts / 'h200_vm_580'), str(bundle), _ansible_check_mode=True)
    assert result['changed'] is True and result['capture']['written'] is False
    assert result['capture']['size'] is None and result['capture']['device_nodes'] == 6
    assert not bundle.exists() and os.listdir(str(tmp_path)) == []


@pytest.mark.parametrize('dest, message', [
    ('relative.tar.gz', 'capture must be an absolute file path'),
    ('{tmp}', 'is a directory'),
    ('{tmp}/missing/c.tar.gz', 'does not exist'),
])
def test_capture_destination_errors(hosts, tmp_path, dest, message):
    result = run({'root': str(hosts / 'h200_vm_580'), 'capture': dest.format(tmp=tmp_path)}, expect=FailJson)
    assert message in result['msg']


def test_capture_leaves_out_process_files_named_in_unit_exec_lines(hosts, tmp_path):
    root = tmp_path / 'host'
    materialize.build('h200_vm_580', str(root))
    (root / 'etc/systemd/system').mkdir(parents=True)
    (root / 'etc/systemd/system/mounts.service').write_text('[Service]\nExecStart=/bin/cat /proc/self/mountinfo\n')
    (root / 'proc/4242').mkdir()
    (root / 'proc/4242/mountinfo').write_text('22 1 0:21 / /home/alice rw - ext4 /dev/vda1 rw\n')
    (root / 'proc/self').symlink_to('4242')
    bundle = str(tmp_path / 'capture.tar.gz')
    result = capture(str(root), bundle, str(root / 'var/log/kern.log'))
    with tarfile.open(bundle) as tar:
        names = tar.getnames()
    assert not any(name.startswith(('proc/4242', 'proc/self')) for name in names)
    assert 'proc/devices' in names and result['ansible_facts']['gpu_host']['identity_units'] == []
