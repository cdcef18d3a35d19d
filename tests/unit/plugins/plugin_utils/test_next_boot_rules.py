# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for plugin_utils/next_boot_rules.py: the gpu_host_facts module reads trees that join a GPU host
fixture (tests/fixtures/hosts) with the boot files of an Ubuntu 24.04, Debian 12 or HGX host
(tests/fixtures/next_boot), and the verdict must name what breaks the next boot."""

from __future__ import annotations

import shutil

import pytest

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.llmserve.sglang.plugins.modules import gpu_host_facts
from ansible_collections.llmserve.sglang.plugins.filter.iommu_preflight import iommu_preflight_next_boot
from ansible_collections.llmserve.sglang.plugins.plugin_utils.next_boot_rules import evaluate_next_boot
from ansible_collections.llmserve.sglang.tests.fixtures.hosts import materialize
from ansible_collections.llmserve.sglang.tests.fixtures.next_boot import trees
from ansible_collections.llmserve.sglang.tests.unit.plugins.modules.module_exits import ExitJson, patch_exits

pytestmark = pytest.mark.skipif(shutil.which('zstd') is None, reason='the zstd tool is not installed')

DROP_IN = ('50-gpu.cfg', 'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT iommu=pt"\n')


@pytest.fixture(autouse=True)
def patched_module(monkeypatch):
    patch_exits(monkeypatch)

    def _no_commands(self, *args, **kwargs):
        raise AssertionError('run_command must not be called for a fixture root: %r' % (args,))
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', _no_commands)


def facts_of(root):
    with patch_module_args({'root': str(root)}):
        with pytest.raises(ExitJson) as info:
            gpu_host_facts.main()
    return info.value.result['ansible_facts']['gpu_host']


def host(tmp_path, fixture, builder, **switches):
    root = tmp_path / 'host'
    materialize.build(fixture, str(root))
    builder(root, **switches)
    return facts_of(root)


def checks(verdict, severity=None):
    return sorted(set(item['check'] for item in verdict['findings']
                      if severity is None or item['severity'] == severity))


def test_clean_next_boot_on_snp_blackwell_ubuntu(tmp_path):
    facts = host(tmp_path, 'blackwell4_amd_snp_dmafq', trees.ubuntu2404, held=True, blacklist=('nvidia-',))
    verdict = evaluate_next_boot(facts)
    assert verdict['findings'] == []
    assert verdict['verdict'] == 'ok'
    assert verdict['summary']['kernel'] == '6.8.0-62-generic'
    assert verdict['summary']['module_version'] == '580.95.05'
    assert 'nvidia-driver-580-server-open' in verdict['summary']['held_packages']


def test_second_kernel_without_module_is_named_with_the_fix(tmp_path):
    facts = host(tmp_path, 'blackwell4_amd_snp_dmafq', trees.ubuntu2404, next_module=False, held=True)
    verdict = evaluate_next_boot(facts)
    assert verdict['verdict'] == 'error'
    assert checks(verdict, 'error') == ['next-boot-no-module']
    message = verdict['errors'][0]
    assert 'kernel 6.8.0-62-generic' in message and 'without GPUs' in message
    assert 'apt-get install linux-modules-nvidia-580-server-open-6.8.0-62-generic' in message


def test_debian_dkms_without_headers_says_so(tmp_path):
    root = tmp_path / 'host'
    materialize.build('h200_vm_580', str(root))
    trees.debian12(root, next_module=False)
    status = (root / 'var/lib/dpkg/status').read_text()
    (root / 'var/lib/dpkg/status').write_text(status.replace('Package: linux-headers-6.1.0-31-amd64',
                                                             'Package: linux-headers-6.1.0-28-amd64'))
    verdict = evaluate_next_boot(facts_of(root))
    assert checks(verdict, 'error') == ['next-boot-no-module']
    assert 'apt-get install linux-headers-6.1.0-31-amd64, then dkms autoinstall -k 6.1.0-31-amd64' \
        in verdict['errors'][0]


def test_debian_module_missing_from_modules_dep(tmp_path):
    facts = host(tmp_path, 'h200_vm_580', trees.debian12, module_in_dep=False)
    assert 'depmod 6.1.0-31-amd64' in ' '.join(evaluate_next_boot(facts)['errors'])


def test_userspace_upgraded_is_a_mismatch_now_and_after_the_boot(tmp_path):
    facts = host(tmp_path, 'blackwell4_amd_snp_dmafq', trees.ubuntu2404, userspace='580.105.08')
    verdict = evaluate_next_boot(facts)
    assert checks(verdict, 'error') == ['nvml-mismatch-next-boot', 'nvml-mismatch-now']
    assert any('Driver/library version mismatch' in text and '580.105.08' in text for text in verdict['errors'])
    # unheld, and unattended-upgrades is on: the warning says how to hold them
    assert 'driver-packages-unheld' in checks(verdict, 'warning')
    assert 'nvidia_driver_hold_packages: true' in ' '.join(verdict['warnings'])
    # the reboot is refused for the next boot's mismatch, not for today's
    assert [text.split(':')[0] for text in verdict['boot_errors']] == ['nvml-mismatch-next-boot']


def test_mismatch_now_that_the_next_boot_fixes_does_not_refuse_a_reboot(tmp_path):
    root = tmp_path / 'host'
    materialize.build('blackwell4_amd_snp_dmafq', str(root))
    trees.ubuntu2404(root, held=True)
    # the loaded module is older than what is installed: the reboot into 580.95.05 is the fix
    version = root / 'proc/driver/nvidia/version'
    version.write_text(version.read_text().replace('580.95.05', '580.82.07'))
    verdict = evaluate_next_boot(facts_of(root))
    assert checks(verdict, 'error') == ['nvml-mismatch-now']
    assert verdict['boot_errors'] == []


def test_grub_drop_in_with_iommu_pt_is_refused_on_snp(tmp_path):
    facts = host(tmp_path, 'blackwell4_amd_snp_dmafq', trees.ubuntu2404, grub_drop_in=DROP_IN, held=True)
    assert facts['iommu']['passthrough_requested'] is None  # the live host is fine
    verdict = evaluate_next_boot(facts)
    assert checks(verdict, 'error') == ['next-boot-blackwell-identity', 'next-boot-snp']
    snp = next(text for text in verdict['errors'] if text.startswith('next-boot-snp'))
    assert 'live: translated; next boot (GRUB): iommu=pt from /etc/default/grub.d/50-gpu.cfg -> refused on SEV-SNP' \
        in snp


def test_grub_drop_in_before_update_grub_is_judged_too(tmp_path):
    facts = host(tmp_path, 'blackwell4_amd_snp_dmafq', trees.ubuntu2404, grub_drop_in=DROP_IN, update_grub=False,
                 held=True)
    assert facts['next_boot']['grub']['update_pending'] is True
    verdict = evaluate_next_boot(facts)
    assert 'next-boot-snp' in checks(verdict, 'error')
    assert verdict['summary']['update_grub_pending'] is True


def test_passthrough_on_a_hopper_host_without_snp_is_allowed(tmp_path):
    facts = host(tmp_path, 'h200_vm_580', trees.hgx)
    assert facts['next_boot']['iommu']['passthrough_requested'] is True
    verdict = evaluate_next_boot(facts)
    assert not [check for check in checks(verdict) if 'snp' in check or 'identity' in check]


def test_hgx_fabric_manager_behind_the_driver(tmp_path):
    facts = host(tmp_path, 'h200_vm_580', trees.hgx, fabric_manager='570.133.20', held=True)
    verdict = evaluate_next_boot(facts)
    assert checks(verdict, 'error') == ['fabric-manager-mismatch']
    assert 'nvidia-fabricmanager-570' in verdict['errors'][0] and '570.133.20' in verdict['errors'][0]


def test_hgx_fabric_manager_equal_is_clean(tmp_path):
    facts = host(tmp_path, 'h200_vm_580', trees.hgx, held=True)
    assert evaluate_next_boot(facts)['verdict'] == 'ok'


def test_initramfs_without_the_collection_options(tmp_path):
    facts = host(tmp_path, 'blackwell4_amd_snp_dmafq', trees.ubuntu2404, initramfs_options=False, held=True)
    verdict = evaluate_next_boot(facts, own_options_file=trees.OPTIONS_FILE)
    assert checks(verdict, 'error') == ['next-boot-initramfs-options']
    assert 'update-initramfs -u -k 6.8.0-62-generic' in verdict['errors'][0]
    # another file's options are only a warning
    other = evaluate_next_boot(facts, own_options_file='/etc/modprobe.d/other.conf')
    assert checks(other, 'warning') == ['next-boot-initramfs-options'] and other['errors'] == []


def test_identity_unit_enabled_refuses_the_next_boot(tmp_path):
    facts = host(tmp_path, 'blackwell4_amd_snp_identity_unit', trees.ubuntu2404, held=True)
    assert 'next-boot-identity-unit' in checks(evaluate_next_boot(facts), 'error')


def test_broken_dkms_package_is_an_error(tmp_path):
    root = tmp_path / 'host'
    materialize.build('h200_vm_580', str(root))
    trees.debian12(root)
    status = (root / 'var/lib/dpkg/status').read_text()
    (root / 'var/lib/dpkg/status').write_text(status.replace(
        'Package: nvidia-kernel-dkms\nStatus: install ok installed', 'Package: nvidia-kernel-dkms\nStatus: install ok '
        'half-configured'))
    verdict = evaluate_next_boot(facts_of(root))
    assert 'package-broken' in checks(verdict, 'error')
    assert 'nvidia-kernel-dkms' in ' '.join(verdict['errors'])


def test_a_host_without_nvidia_is_clean(tmp_path):
    facts = facts_of(_plain(tmp_path))
    verdict = evaluate_next_boot(facts)
    assert verdict['verdict'] == 'ok', verdict['findings']


def _plain(tmp_path):
    root = tmp_path / 'plain'
    materialize.build('no_nvidia_gpu', str(root))
    trees.write(root, '/boot/vmlinuz-6.1.0-31-amd64', b'MZ')
    trees.write(root, '/boot/initrd.img-6.1.0-31-amd64', trees.boot_files.initramfs({'init': b''}, 'gzip'))
    return root


def test_unknown_without_facts_and_filter_checks_input():
    assert evaluate_next_boot({})['verdict'] == 'unknown'
    assert evaluate_next_boot({'next_boot': {'error': 'x'}})['verdict'] == 'unknown'
    with pytest.raises(Exception, match='expected the gpu_host facts'):
        iommu_preflight_next_boot(['not', 'facts'])


def test_unevaluable_grub_line_is_a_warning(tmp_path):
    facts = host(tmp_path, 'blackwell4_amd_snp_dmafq', trees.ubuntu2404, held=True, grub_drop_in=(
        '60-x.cfg', 'GRUB_CMDLINE_LINUX="$(cat /etc/gpu-args)"\n'))
    verdict = evaluate_next_boot(facts)
    assert checks(verdict, 'warning') == ['next-boot-cmdline-unknown']
    assert '/etc/default/grub.d/60-x.cfg:1' in verdict['warnings'][0]


def test_a_tree_without_boot_files_is_not_judged(tmp_path):
    root = tmp_path / 'fixture'
    materialize.build('blackwell4_amd_snp_dmafq', str(root))
    facts = facts_of(root)
    assert facts['next_boot']['kernel_source'] == 'running'
    verdict = evaluate_next_boot(facts)
    assert verdict['verdict'] == 'unknown' and verdict['findings'] == []
    assert 'no boot files' in verdict['summary']['error']


@pytest.mark.parametrize('policy', ['fail', 'warn', 'ignore'])
def test_preflight_policy_places_the_next_boot_errors(tmp_path, policy):
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.preflight_rules import evaluate

    facts = host(tmp_path, 'blackwell4_amd_snp_dmafq', trees.ubuntu2404, next_module=False, held=True)
    result = evaluate(facts, next_boot=policy)
    found = [text for text in result['errors'] + result['warnings'] if text.startswith('next-boot-no-module')]
    if policy == 'ignore':
        assert found == [] and 'next_boot' not in result['report']
        return
    assert found and (found[0] in result['errors']) == (policy == 'fail')
    assert result['report']['status'] == ('fail' if policy == 'fail' else 'warn')
    assert result['report']['next_boot']['verdict'] == 'error'
    assert result['report']['next_boot']['policy'] == policy


def test_preflight_refuses_an_unknown_policy():
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.preflight_rules import evaluate

    with pytest.raises(ValueError, match='iommu_preflight_next_boot must be one of fail, warn, ignore'):
        evaluate({}, next_boot='maybe')


@pytest.mark.parametrize('installed, kernels, kernel, expected', [
    (['linux-modules-nvidia-580-server-open-6.8.0-60-generic', 'linux-modules-nvidia-580-server-open-generic'],
     ['6.8.0-60-generic', '6.8.0-62-generic'], '6.8.0-62-generic',
     'apt-get install linux-modules-nvidia-580-server-open-6.8.0-62-generic '),
    # Debian 13 names its kernels 6.12.118+deb13-cloud-amd64
    (['linux-modules-nvidia-535-6.12.118+deb13-cloud-amd64'], ['6.12.118+deb13-cloud-amd64'],
     '6.12.999+deb13-cloud-amd64', 'apt-get install linux-modules-nvidia-535-6.12.999+deb13-cloud-amd64 '),
    # a kernel no longer in /boot: the version-shaped tail of the name
    (['linux-modules-nvidia-535-6.1.0-28-cloud-amd64'], [], '6.1.0-31-cloud-amd64',
     'apt-get install linux-modules-nvidia-535-6.1.0-31-cloud-amd64 '),
    (['linux-modules-nvidia-580-server-open-generic-hwe-24.04'], [], '6.8.0-62-generic',
     'install the NVIDIA module for 6.8.0-62-generic'),
])
def test_module_fix_names_the_package_of_the_next_kernel(installed, kernels, kernel, expected):
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.next_boot_rules import _module_fix

    next_boot = {'installed_kernels': kernels,
                 'packages': [{'name': name, 'role': 'driver'} for name in installed]}
    assert expected in _module_fix(next_boot, kernel)


def test_an_identity_unit_the_preflight_disables_does_not_refuse_the_next_boot(tmp_path):
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.preflight_rules import evaluate

    facts = host(tmp_path, 'blackwell4_amd_snp_identity_unit', trees.ubuntu2404, held=True)
    kept = evaluate(facts, next_boot='fail')
    assert 'next-boot-identity-unit' in kept['report']['next_boot']['summary']['checks']
    disabled = evaluate(facts, next_boot='fail', disable_identity_units=True)
    assert disabled['units_to_disable']
    assert 'next-boot-identity-unit' not in disabled['report']['next_boot']['summary']['checks']
