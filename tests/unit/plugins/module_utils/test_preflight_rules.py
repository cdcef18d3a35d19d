# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the iommu_preflight rules, on facts gathered from the host fixture trees."""

from __future__ import annotations

import copy
import os

import pytest

from ansible_collections.llmserve.sglang.plugins.module_utils import preflight_rules as rules
from ansible_collections.llmserve.sglang.plugins.modules import gpu_host_facts
from ansible_collections.llmserve.sglang.tests.fixtures.hosts import materialize


class FakeModule(object):
    def fail_json(self, **kwargs):
        raise AssertionError(kwargs)


@pytest.fixture(scope='module')
def facts(tmp_path_factory):
    base = tmp_path_factory.mktemp('hosts')
    gathered = {}
    for name in materialize.host_names():
        root = materialize.build(name, str(base / name))
        gathered[name] = gpu_host_facts.gather(FakeModule(), root, os.path.join(root, 'var/log/kern.log'))
    return gathered


def rule_names(messages):
    return sorted(message.split(':', 1)[0] for message in messages)


def test_healthy_host_passes_with_numa_warning(facts):
    result = rules.evaluate(facts['blackwell4_amd_snp_dmafq'])
    assert result['errors'] == []
    assert rule_names(result['warnings']) == ['numa-span']
    assert result['report']['status'] == 'warn'
    assert result['units_to_disable'] == [] and result['reboot_required'] is False
    assert [gpu['pci_address'] for gpu in result['selected']] == ['0000:01:00.0', '0000:41:00.0', '0000:81:00.0',
                                                                  '0000:c1:00.0']


def test_one_numa_node_selected_is_clean(facts):
    result = rules.evaluate(facts['blackwell4_amd_snp_dmafq'], selection=[0, '0000:41:00.0'])
    assert result['errors'] == [] and result['warnings'] == []
    assert result['report']['status'] == 'pass'
    assert [gpu['selected'] for gpu in result['report']['gpus']] == [True, True, False, False]


def test_blackwell_identity_on_snp_host(facts):
    result = rules.evaluate(facts['blackwell4_amd_snp_one_identity'])
    assert rule_names(result['errors']) == ['blackwell-identity', 'dma-faults', 'snp-identity']
    blackwell = [m for m in result['errors'] if m.startswith('blackwell-identity')][0]
    for part in ('GPU 0000:81:00.0 (NVIDIA RTX PRO 6000 Blackwell Server Edition)', 'IOMMU group 62',
                 'FSP', 'Xid 143', '0x177', 'FLR', 'Fix:', 'DMA-FQ', '/sys/kernel/iommu_groups/62/type', 'power cycle'):
        assert part in blackwell
    snp = [m for m in result['errors'] if m.startswith('snp-identity')][0]
    assert 'SEV-SNP' in snp and 'ILLEGAL_DEV_TABLE_ENTRY' in snp and 'Fix:' in snp
    assert 'snp-kernel' in rule_names(result['warnings'])  # 6.14 may accept identity on SNP
    assert result['report']['status'] == 'fail'


def test_unselected_broken_gpu_only_warns_on_its_own_rules(facts):
    result = rules.evaluate(facts['blackwell4_amd_snp_one_identity'], selection=['0000:01:00.0', '0000:41:00.0'])
    # the SNP rule is host-wide and still fails; the GPU rules of 0000:81:00.0 only warn
    assert rule_names(result['errors']) == ['snp-identity']
    assert {'blackwell-identity', 'dma-faults'} <= set(rule_names(result['warnings']))


def test_hopper_identity_without_snp_is_allowed(facts):
    result = rules.evaluate(facts['hopper4_intel_identity'])
    assert result['errors'] == []
    assert rule_names(result['warnings']) == ['identity-allowed'] * 4 + ['numa-span']
    assert 'GPU 0000:18:00.0 (NVIDIA H100 PCIe)' in result['warnings'][0]


def test_hopper_identity_fails_when_hopper_is_forbidden(facts):
    result = rules.evaluate(facts['hopper4_intel_identity'], identity_forbidden_architectures=['blackwell', 'hopper'])
    assert rule_names(result['errors']) == ['blackwell-identity'] * 4


def test_snp_cmdline_passthrough(facts):
    host = copy.deepcopy(facts['blackwell4_amd_snp_dmafq'])
    host['iommu'].update(passthrough_requested=True, amd_iommu_pgtbl_v2=True)
    host['iommu']['cmdline']['iommu'] = 'pt'
    result = rules.evaluate(host)
    assert rule_names(result['errors']) == ['snp-cmdline']
    assert 'iommu=pt, amd_iommu=pgtbl_v2' in result['errors'][0]
    assert 'GRUB_CMDLINE_LINUX' in result['errors'][0]
    host['iommu'].update(passthrough_requested=True, amd_iommu_pgtbl_v2=False, amd_iommu_off=True)
    host['iommu']['cmdline'].update(iommu=None)
    host['iommu']['cmdline']['iommu.passthrough'] = '1'
    assert 'iommu.passthrough=1, amd_iommu=off' in rules.evaluate(host)['errors'][0]


def test_passthrough_without_snp_is_no_error(facts):
    host = copy.deepcopy(facts['blackwell4_no_iommu'])
    host['iommu']['passthrough_requested'] = True
    assert rules.evaluate(host)['errors'] == []


def test_iommu_off(facts):
    result = rules.evaluate(facts['blackwell4_no_iommu'])
    assert result['errors'] == []
    assert 'iommu-off' in rule_names(result['warnings'])
    result = rules.evaluate(facts['blackwell4_no_iommu'], require_iommu=True)
    assert rule_names(result['errors']) == ['iommu-required']
    assert 'amd_iommu=off' in result['errors'][0] and 'Fix:' in result['errors'][0]


def test_dma_fault_policy(facts):
    result = rules.evaluate(facts['blackwell4_amd_snp_io_page_faults'])
    assert rule_names(result['errors']) == ['dma-faults', 'dma-faults']
    assert 'GPU 0000:81:00.0' in result['errors'][0] and 'IO_PAGE_FAULT x2' in result['errors'][0]
    assert 'GPU 0000:c1:00.0' in result['errors'][1]
    nic = [m for m in result['warnings'] if '0000:42:00.0' in m]
    assert len(nic) == 1 and 'not an NVIDIA GPU' in nic[0]
    warned = rules.evaluate(facts['blackwell4_amd_snp_io_page_faults'], dma_faults='warn')
    assert warned['errors'] == []
    assert rule_names(warned['warnings']).count('dma-faults') == 3


def test_dma_rule_needs_a_kernel_log(facts):
    host = dict(facts['blackwell4_amd_snp_io_page_faults'], kernel_log_source='none', dma_faults=[])
    result = rules.evaluate(host)
    assert result['errors'] == []
    assert 'kernel-log' in rule_names(result['warnings'])


def test_identity_unit(facts):
    result = rules.evaluate(facts['blackwell4_amd_snp_identity_unit'])
    assert rule_names(result['errors']) == ['identity-units']
    assert 'gpu-iommu-identity.service' in result['errors'][0]
    assert 'systemctl disable gpu-iommu-identity.service' in result['errors'][0]
    assert 'iommu_preflight_disable_identity_units' in result['errors'][0]
    disabling = rules.evaluate(facts['blackwell4_amd_snp_identity_unit'], disable_identity_units=True)
    assert disabling['errors'] == []
    assert disabling['units_to_disable'] == ['gpu-iommu-identity.service']
    assert disabling['reboot_required'] is False  # the groups are still DMA-FQ: the unit did not run yet


def test_disabled_unit_with_live_identity_needs_a_reboot(facts):
    host = copy.deepcopy(facts['hopper4_intel_identity'])
    host['identity_units'] = [{'kind': 'systemd', 'name': 'pt.service', 'path': '/etc/systemd/system/pt.service',
                               'enabled': False, 'masked': False, 'scripts': [], 'evidence': []}]
    result = rules.evaluate(host)
    assert result['errors'] == [] and result['reboot_required'] is True
    assert 'identity-units' in rule_names(result['warnings'])


def test_non_systemd_identity_writers_always_fail(facts):
    host = copy.deepcopy(facts['blackwell4_amd_snp_dmafq'])
    host['identity_units'] = [{'kind': 'tmpfiles', 'name': 'iommu.conf', 'path': '/etc/tmpfiles.d/iommu.conf',
                               'enabled': True, 'masked': False, 'scripts': [], 'evidence': ['x:1: w ... identity']}]
    result = rules.evaluate(host, disable_identity_units=True)
    assert rule_names(result['errors']) == ['identity-units']
    assert 'remove the entry from /etc/tmpfiles.d/iommu.conf' in result['errors'][0]
    assert result['units_to_disable'] == []


def test_driver_warnings(facts):
    result = rules.evaluate(facts['blackwell4_driver_not_loaded'])
    assert result['errors'] == []
    assert 'driver' in rule_names(result['warnings'])
    host = copy.deepcopy(facts['blackwell4_amd_snp_dmafq'])
    host['gpus'][3]['driver'] = 'vfio-pci'
    warnings = [m for m in rules.evaluate(host)['warnings'] if m.startswith('driver')]
    assert warnings and 'GPU 0000:c1:00.0' in warnings[0] and 'vfio-pci' in warnings[0]


def test_no_gpu_host(facts):
    result = rules.evaluate(facts['no_nvidia_gpu'])
    assert result['errors'] == [] and result['warnings'] == []
    assert result['report']['gpus'] == [] and result['report']['status'] == 'pass'
    assert result['report']['host']['sev_snp'] is True


@pytest.mark.parametrize('selection, bad', [
    ([7], '[0] = 7'),
    (['0000:99:00.0'], "'0000:99:00.0'"),
    ([0, 'GPU1'], "[1] = 'GPU1'"),
    ([True], '[0] = True'),
])
def test_selection_errors(facts, selection, bad):
    result = rules.evaluate(facts['blackwell4_amd_snp_dmafq'], selection=selection)
    assert rule_names(result['errors']) == ['gpu-selection']
    assert bad in result['errors'][0] and '0=0000:01:00.0' in result['errors'][0]


def test_selection_forms(facts):
    selected, errors = rules.select_gpus(facts['blackwell4_amd_snp_dmafq']['gpus'], ['3', '81:00.0', 3, '0000:C1:00.0'])
    assert errors == []
    assert [gpu['pci_address'] for gpu in selected] == ['0000:c1:00.0', '0000:81:00.0']


def test_report_summary(facts):
    report = rules.evaluate(facts['blackwell4_amd_snp_one_identity'])['report']
    assert report['host'] == {'kernel': '6.14.0-37-generic', 'iommu': True, 'iommu_vendor': 'amd',
                              'iommu_passthrough_requested': None, 'sev_snp': True, 'driver_loaded': True,
                              'driver_version': '595.45.04', 'kernel_log_source': 'file'}
    gpu = report['gpus'][2]
    assert gpu == {'index': 2, 'pci_address': '0000:81:00.0', 'name': 'NVIDIA RTX PRO 6000 Blackwell Server Edition',
                   'architecture': 'blackwell', 'numa_node': 1, 'iommu_group': 62, 'iommu_domain_type': 'identity',
                   'driver': 'nvidia', 'dma_faults': 2, 'selected': True}


def test_bad_policy():
    with pytest.raises(ValueError, match='iommu_preflight_dma_faults'):
        rules.evaluate({}, dma_faults='ignore')


def test_kernel_version():
    assert rules.kernel_version('6.14.0-37-generic') == (6, 14)
    assert rules.kernel_version('6.1.0-57-cloud-amd64') == (6, 1)
    assert rules.kernel_version(None) is None


def test_iommu_off_without_gpus_only_matters_when_required():
    host = {'gpus': [], 'iommu': {'enabled': False}, 'kernel_log_source': 'none'}
    assert rules.evaluate(host)['warnings'] == []
    assert rule_names(rules.evaluate(host, require_iommu=True)['errors']) == ['iommu-required']
