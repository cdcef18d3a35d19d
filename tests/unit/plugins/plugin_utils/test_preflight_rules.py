# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the iommu_preflight rules, on facts gathered from the host fixture trees."""

from __future__ import annotations

import copy
import os

import pytest

from ansible_collections.llmserve.sglang.plugins.plugin_utils import p2p
from ansible_collections.llmserve.sglang.plugins.plugin_utils import preflight_rules as rules
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


def test_sriov_host_checks_and_pairs_the_physical_gpus_only(facts):
    host = facts['blackwell4_amd_snp_sriov_vfs']
    result = rules.evaluate(host, selection=[0, 1])
    assert result['errors'] == []
    assert [gpu['pci_address'] for gpu in result['selected']] == ['0000:01:00.0', '0000:41:00.0']
    assert len(rules.evaluate(host)['selected']) == 4
    assert [gpu['pci_address'] for gpu in result['report']['gpus']] == [
        '0000:01:00.0', '0000:41:00.0', '0000:81:00.0', '0000:c1:00.0']
    assert result['report']['gpus'][0]['virtual_functions'] == ['0000:01:00.4', '0000:01:00.5', '0000:01:00.6']
    # the VF's fault is reported as the VF's, a warning, not as a fault of the GPU or of an unknown device
    vf = [m for m in result['warnings'] if '0000:01:00.5' in m]
    assert rule_names(vf) == ['dma-faults']
    assert 'SR-IOV virtual function 0000:01:00.5 of GPU 0000:01:00.0' in vf[0] and 'not an NVIDIA GPU' not in vf[0]
    matrix = p2p.build_matrix([gpu['pci_address'] for gpu in rules.evaluate(host)['selected']])
    assert len(matrix['gpus']) == 4 and len(matrix['pairs']) == 12


@pytest.mark.parametrize('item', ['0000:01:00.5', 4])
def test_selecting_a_virtual_function_is_an_error(facts, item):
    result = rules.evaluate(facts['blackwell4_amd_snp_sriov_vfs'], selection=[item])
    assert rule_names(result['errors']) == ['gpu-selection']
    if item == 4:
        assert 'indexes 0, 1, 2, 3' in result['errors'][0]
    else:
        assert ('0000:01:00.5 is an SR-IOV virtual function of GPU 0000:01:00.0 (index 0)' in result['errors'][0])


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


def test_unbound_gpus_fail_naming_them(facts):
    result = rules.evaluate(facts['blackwell4_driver_not_loaded'])
    assert rule_names(result['errors']) == ['driver'] * 4
    for message, address in zip(result['errors'], ['0000:01:00.0', '0000:41:00.0', '0000:81:00.0', '0000:c1:00.0']):
        assert message.startswith('driver: GPU %s (NVIDIA RTX PRO 6000 Blackwell Server Edition) is not bound to '
                                  'nvidia: it is bound to no driver; the NVIDIA driver is not loaded.' % address)
        assert 'Fix: install and load the NVIDIA driver' in message
    # only the selected GPUs fail, the others warn
    result = rules.evaluate(facts['blackwell4_driver_not_loaded'], selection=[0, 1])
    assert rule_names(result['errors']) == ['driver'] * 2 and rule_names(result['warnings']) == ['driver'] * 2
    assert all('not selected' in message for message in result['warnings'])


@pytest.mark.parametrize('bound, found, fix', [
    ('vfio-pci', 'is bound to vfio-pci, which reserves it for passing through to a virtual machine',
     'remove its ID from the vfio-pci options'),
    ('nouveau', 'is bound to nouveau, the open-source driver', 'blacklist nouveau'),
    ('pci-stub', 'is bound to pci-stub', 'unbind it from pci-stub and bind it to nvidia'),
    (None, 'is bound to no driver although the NVIDIA driver is loaded',
     'echo 0000:c1:00.0 > /sys/bus/pci/drivers/nvidia/bind'),
])
def test_gpu_bound_to_another_driver_fails(facts, bound, found, fix):
    host = copy.deepcopy(facts['blackwell4_amd_snp_dmafq'])
    host['gpus'][3]['driver'] = bound
    result = rules.evaluate(host, selection=[2, 3])
    errors = [m for m in result['errors'] if m.startswith('driver')]
    assert len(errors) == 1
    assert errors[0].startswith('driver: GPU 0000:c1:00.0 (NVIDIA RTX PRO 6000 Blackwell Server Edition) is not bound '
                                'to nvidia: it ' + found)
    assert fix in errors[0]
    warned = rules.evaluate(host, selection=[0, 1])
    assert 'driver' not in rule_names(warned['errors']) and 'driver' in rule_names(warned['warnings'])


def test_no_gpu_host_fails_with_what_the_scan_saw(facts):
    result = rules.evaluate(facts['no_nvidia_gpu'])
    assert rule_names(result['errors']) == ['no-gpu'] and result['warnings'] == []
    message = result['errors'][0]
    assert message.startswith('no-gpu: no NVIDIA GPU found: the PCI scan of /sys/bus/pci/devices saw 11 device(s) '
                              '(vendors: 0x1022 x10, 0x15b3 x1), none of them from NVIDIA (vendor 0x10de).')
    assert 'iommu_preflight_require_gpu: false' in message
    assert result['report']['gpus'] == [] and result['report']['status'] == 'fail'
    assert result['report']['host']['sev_snp'] is True
    audit = rules.evaluate(facts['no_nvidia_gpu'], require_gpu=False)
    assert audit['errors'] == [] and rule_names(audit['warnings']) == ['no-gpu']


def test_no_gpu_without_pci_sysfs_or_with_only_other_nvidia_functions(facts):
    host = copy.deepcopy(facts['no_nvidia_gpu'])
    host['pci_scan'] = {'sysfs': False, 'devices': 0, 'vendors': {}, 'nvidia_functions': []}
    assert 'no NVIDIA GPU found: there is no /sys/bus/pci/devices' in rules.evaluate(host)['errors'][0]
    host['pci_scan'] = {'sysfs': True, 'devices': 2, 'vendors': {'0x10de': 1, '0x8086': 1}, 'nvidia_functions': [
        {'pci_address': '0000:81:00.1', 'device_id': '0x22e8', 'pci_class': '0x040300', 'driver': 'snd_hda_intel'}]}
    message = rules.evaluate(host)['errors'][0]
    assert ('saw 2 device(s) (vendors: 0x10de x1, 0x8086 x1); NVIDIA functions that are not GPUs: 0000:81:00.1 '
            '(class 0x040300, driver snd_hda_intel)') in message
    # an old facts dictionary without pci_scan still fails clearly
    del host['pci_scan']
    assert 'no NVIDIA GPU found: no PCI scan was reported' in rules.evaluate(host)['errors'][0]


def test_selected_gpu_that_is_absent_is_named(facts):
    host = copy.deepcopy(facts['h200_vm_580'])
    result = rules.evaluate(host, selection=['0000:00:06.0', '00000000:41:00.0', 1])
    assert rule_names(result['errors']) == ['gpu-selection'] * 2
    assert ("iommu_preflight_gpus[1] = '00000000:41:00.0' names no NVIDIA GPU of this host: there is no NVIDIA GPU at "
            "PCI address 0000:41:00.0") in result['errors'][0]
    assert 'iommu_preflight_gpus[2] = 1 names no NVIDIA GPU of this host: this host has 1 NVIDIA GPU(s), indexes 0' \
        in result['errors'][1]
    host['pci_scan']['nvidia_functions'] = [{'pci_address': '0000:00:07.0', 'device_id': '0x22e8',
                                             'pci_class': '0x040300', 'driver': None}]
    message = rules.evaluate(host, selection=['0000:00:07.0'])['errors'][0]
    assert 'PCI address 0000:00:07.0 is an NVIDIA function of class 0x040300, not a GPU' in message


# --- the H200 guest of shared/reference/real-gpu-hosts.md -----------------------------------------------------------

def test_h200_vm_passes_with_the_vm_without_viommu_warning(facts):
    result = rules.evaluate(facts['h200_vm_580'])
    assert result['errors'] == [] and result['report']['status'] == 'warn'
    assert rule_names(result['warnings']) == ['iommu-off']
    message = result['warnings'][0]
    assert message.startswith('iommu-off: the IOMMU is off: this is a virtual machine (the CPU reports a hypervisor) '
                              'without a virtual IOMMU: there are no IOMMU groups and no IOMMU units in the guest.')
    for part in ('nothing isolates device DMA', 'all guest memory', "host's IOMMU", 'peer-to-peer (P2P)',
                 'only the P2P test shows it', 'virtio-iommu', 'iommu_preflight_require_iommu: true'):
        assert part in message
    assert 'firmware' not in message  # no BIOS advice for a guest
    report = result['report']
    assert report['host']['virtual_machine'] is True and report['host']['iommu'] is False
    assert report['host']['driver_version'] == '580.159.04' and report['host']['sev_snp'] is False
    assert [(gpu['pci_address'], gpu['name'], gpu['architecture'], gpu['xid_events'])
            for gpu in report['gpus']] == [('0000:00:06.0', 'NVIDIA H200', 'hopper', 0)]


def test_h200_vm_with_iommu_required_fails_as_a_vm(facts):
    result = rules.evaluate(facts['h200_vm_580'], require_iommu=True)
    assert rule_names(result['errors']) == ['iommu-required']
    assert 'this is a virtual machine' in result['errors'][0] and 'virtual IOMMU' in result['errors'][0]
    host = copy.deepcopy(facts['h200_vm_580'])
    host['virtualization']['hypervisor_vendor'] = 'KVM'
    host['iommu']['intel_iommu_off'] = True
    message = rules.evaluate(host)['warnings'][0]
    assert 'virtual machine (the CPU reports a hypervisor, KVM) without a virtual IOMMU: the kernel command line has ' \
           'intel_iommu=off' in message
    assert 'remove intel_iommu=off from its kernel command line' in message


# --- NVIDIA Xid events ----------------------------------------------------------------------------------------------

def test_fatal_xid_fails_naming_the_gpu(facts):
    result = rules.evaluate(facts['h200_vm_580_xid79'])
    assert rule_names(result['errors']) == ['gpu-xid'] and rule_names(result['warnings']) == ['iommu-off']
    message = result['errors'][0]
    assert message.startswith('gpu-xid: GPU 0000:00:06.0 (NVIDIA H200) logged fatal NVIDIA Xid events in this boot '
                              '(Xid 79 x1, Xid 45 caused by previous Xid 79 x1; first at 8123.441207 s after boot: '
                              "[ 8123.441207] NVRM: Xid (PCI:0000:00:06): 79, pid='<unknown>'")
    assert '79: GPU has fallen off the bus' in message and 'nvidia-smi -r -i 0000:00:06.0' in message
    assert result['report']['gpus'][0]['xid_events'] == 2 and result['report']['status'] == 'fail'


def test_xid_codes_outside_the_fatal_list_only_warn(facts):
    result = rules.evaluate(facts['h200_vm_580_xid79'], fatal_xids=[48])
    assert result['errors'] == []
    xid = [m for m in result['warnings'] if m.startswith('gpu-xid')]
    assert len(xid) == 1 and 'not in iommu_preflight_fatal_xids (Xid 79 x1, Xid 45 caused by previous Xid 79 x1' in xid[0]


def _xid(code, address='0000:00:06.0', caused_by=None, kind='xid', line='x'):
    return {'source': 'nvrm', 'kind': kind, 'code': code, 'pci_address': address, 'caused_by': caused_by,
            'timestamp': None, 'time': 'Mar 20 10:13:33', 'line': line, 'text': ''}


def test_xid_rule_cases(facts):
    host = copy.deepcopy(facts['h200_vm_580'])
    host['xid_events'] = [_xid(13), _xid(45, caused_by=13)]
    result = rules.evaluate(host)
    assert result['errors'] == [] and 'first at Mar 20 10:13:33' in result['warnings'][1]
    assert '13: graphics engine exception' in result['warnings'][1]
    # a follow-up whose cause is fatal is fatal, even when the cause itself was not logged (rate limit, rotation)
    host['xid_events'] = [_xid(45, caused_by=119)]
    assert rule_names(rules.evaluate(host)['errors']) == ['gpu-xid']
    # "fallen off the bus" without a number always fails
    host['xid_events'] = [_xid(None, kind='fallen-off-bus')]
    errors = rules.evaluate(host, fatal_xids=[])['errors']
    assert rule_names(errors) == ['gpu-xid'] and 'fallen off the bus (no Xid number) x1' in errors[0]
    # Xid 143 belongs to the DMA fault rule
    host['xid_events'] = [_xid(143)]
    assert 'gpu-xid' not in rule_names(rules.evaluate(host)['errors'] + rules.evaluate(host)['warnings'])
    # an address that is no GPU in sysfs now (it fell off the bus and was removed) only warns
    host['xid_events'] = [_xid(79, address='0000:41:00.0')]
    result = rules.evaluate(host)
    assert result['errors'] == []
    assert 'gpu-xid: PCI device 0000:41:00.0 (not an NVIDIA GPU in sysfs now) logged fatal' in result['warnings'][1]
    host['xid_events'] = [_xid(13)]
    host['xid_events_dropped'] = 7
    assert 'gpu-xid: 7 further Xid event(s) were not listed.' in rules.evaluate(host)['warnings']


@pytest.mark.parametrize('fatal', [['79'], [True], [0], [-1], [1.5], [None]])
def test_bad_fatal_xids(fatal):
    with pytest.raises(ValueError, match='iommu_preflight_fatal_xids'):
        rules.evaluate({}, fatal_xids=fatal)


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
                              'driver_version': '595.45.04', 'kernel_log_source': 'file', 'virtual_machine': False}
    gpu = report['gpus'][2]
    assert gpu == {'index': 2, 'pci_address': '0000:81:00.0', 'name': 'NVIDIA RTX PRO 6000 Blackwell Server Edition',
                   'architecture': 'blackwell', 'numa_node': 1, 'iommu_group': 62, 'iommu_domain_type': 'identity',
                   'driver': 'nvidia', 'dma_faults': 2, 'xid_events': 1, 'virtual_functions': [], 'selected': True}


def test_bad_policy():
    with pytest.raises(ValueError, match='iommu_preflight_dma_faults'):
        rules.evaluate({}, dma_faults='ignore')


def test_kernel_version():
    assert rules.kernel_version('6.14.0-37-generic') == (6, 14)
    assert rules.kernel_version('6.1.0-57-cloud-amd64') == (6, 1)
    assert rules.kernel_version(None) is None


def test_iommu_off_without_gpus_only_matters_when_required():
    host = {'gpus': [], 'iommu': {'enabled': False}, 'kernel_log_source': 'none'}
    audit = rules.evaluate(host, require_gpu=False)
    assert audit['errors'] == [] and rule_names(audit['warnings']) == ['no-gpu']
    assert rule_names(rules.evaluate(host, require_iommu=True)['errors']) == ['iommu-required', 'no-gpu']
