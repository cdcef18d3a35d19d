# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the gpu_host_facts module, run against the host fixture trees (tests/fixtures/hosts)."""

from __future__ import annotations

import hashlib
import os

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


def test_driver_not_loaded(hosts):
    facts = facts_of(hosts, 'blackwell4_driver_not_loaded')
    assert facts['nvidia_driver']['loaded'] is False
    assert facts['nvidia_driver']['version'] is None
    assert facts['nvidia_driver']['registry_dwords'] == {}
    assert [gpu['driver'] for gpu in facts['gpus']] == [None] * 4
    assert [gpu['model'] for gpu in facts['gpus']] == [None] * 4
    assert facts['gpus'][0]['name'] == 'NVIDIA RTX PRO 6000 Blackwell Server Edition'


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
