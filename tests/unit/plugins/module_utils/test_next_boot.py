# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for module_utils/next_boot.py and host_packages.py on trees shaped like Ubuntu 24.04 (precompiled
modules, .ko.zst, zstd initramfs), Debian 12 (DKMS, gzip initramfs) and an HGX host with a fabric manager."""

from __future__ import annotations

import gzip
import lzma
import os
import shutil

import pytest

from ansible_collections.llmserve.sglang.plugins.module_utils import gpu_sysfs
from ansible_collections.llmserve.sglang.plugins.module_utils import host_packages as hp
from ansible_collections.llmserve.sglang.plugins.module_utils import next_boot as nb
from ansible_collections.llmserve.sglang.tests.fixtures.next_boot import boot_files
from ansible_collections.llmserve.sglang.tests.fixtures.next_boot import trees

needs_zstd = pytest.mark.skipif(shutil.which('zstd') is None, reason='the zstd tool is not installed')


def read(root, info):
    host = gpu_sysfs.HostRoot(str(root))
    return nb.read_next_boot(host, info['running'], info['version'], hp.read_packages(host))


# ---------------------------------------------------------------------------------------------
# Whole trees
# ---------------------------------------------------------------------------------------------

@needs_zstd
def test_ubuntu_next_kernel_from_grub_with_precompiled_zstd_module(tmp_path):
    info = trees.ubuntu2404(tmp_path)
    facts = read(tmp_path, info)
    assert facts['kernel'] == '6.8.0-62-generic'
    assert facts['kernel_source'] == 'grub_default'
    assert "menu entry 'Ubuntu'" in facts['kernel_detail']
    assert facts['kernel_is_running'] is False
    assert facts['installed_kernels'] == ['6.8.0-60-generic', '6.8.0-62-generic']
    module = facts['nvidia_module']
    assert module['path'] == '/lib/modules/6.8.0-62-generic/kernel/nvidia-580srv/nvidia.ko.zst'
    assert (module['version'], module['source'], module['flavor']) == ('580.95.05', 'packaged', 'open')
    assert module['vermagic'].startswith('6.8.0-62-generic ')
    assert module['in_modules_dep'] is True
    assert facts['userspace_version'] == '580.95.05'
    assert facts['grub']['update_pending'] is False
    assert facts['cmdline'] == 'quiet splash'
    assert facts['initramfs']['compression'] == 'zstd'
    assert facts['initramfs']['nvidia_options'] == {
        trees.OPTIONS_FILE: ['nvidia NVreg_RegistryDwords=DmaRemapPeerMmio=1']}
    assert facts['modprobe_nvidia_options'] == facts['initramfs']['nvidia_options']
    assert facts['unattended_upgrades']['enabled'] is True
    roles = dict((item['name'], item['role']) for item in facts['packages'])
    assert roles['linux-modules-nvidia-580-server-open-6.8.0-62-generic'] == 'driver'
    assert roles['libnvidia-compute-580-server'] == 'userspace'
    assert roles['linux-image-6.8.0-62-generic'] == 'kernel'
    assert 'zstd' not in roles


@needs_zstd
def test_ubuntu_second_kernel_without_module(tmp_path):
    info = trees.ubuntu2404(tmp_path, next_module=False)
    facts = read(tmp_path, info)
    assert facts['kernel'] == '6.8.0-62-generic'
    assert facts['nvidia_module'] is None
    assert facts['nvidia_modules'] == []
    assert facts['modules_dir'] == '/lib/modules/6.8.0-62-generic'


@needs_zstd
def test_ubuntu_grub_drop_in_origin_and_pending_update(tmp_path):
    info = trees.ubuntu2404(tmp_path, grub_drop_in=(
        '50-gpu.cfg', 'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT iommu=pt"\n'), update_grub=False)
    facts = read(tmp_path, info)
    assert facts['cmdline'] == 'quiet splash iommu=pt'
    assert facts['cmdline_origins'] == {'quiet': '/etc/default/grub', 'splash': '/etc/default/grub',
                                        'iommu=pt': '/etc/default/grub.d/50-gpu.cfg'}
    assert facts['iommu']['passthrough_requested'] is True
    assert facts['grub']['update_pending'] is True
    assert facts['iommu_grub_cfg']['passthrough_requested'] is None


@needs_zstd
def test_ubuntu_userspace_upgraded_without_module(tmp_path):
    info = trees.ubuntu2404(tmp_path, userspace='580.105.08')
    facts = read(tmp_path, info)
    assert facts['userspace_version'] == '580.105.08'
    assert facts['loaded_module_version'] == '580.95.05'


@needs_zstd
def test_ubuntu_holds_and_blacklist(tmp_path):
    info = trees.ubuntu2404(tmp_path, held=True, blacklist=('nvidia-', 'libnvidia-'))
    facts = read(tmp_path, info)
    by_name = dict((item['name'], item) for item in facts['packages'])
    assert by_name['nvidia-driver-580-server-open']['held'] is True
    assert by_name['libnvidia-compute-580-server']['blacklisted_by'] == 'libnvidia-'
    assert not any(item['upgraded_unattended'] for item in facts['packages'] if item['role'] != 'kernel')
    assert facts['unattended_upgrades']['blacklist'] == ['nvidia-', 'libnvidia-']


def test_debian_dkms_module_and_gzip_initramfs(tmp_path):
    info = trees.debian12(tmp_path)
    facts = read(tmp_path, info)
    assert facts['kernel'] == '6.1.0-31-amd64'
    module = facts['nvidia_module']
    assert module['path'] == '/lib/modules/6.1.0-31-amd64/updates/dkms/nvidia-current.ko'
    assert (module['version'], module['source'], module['flavor']) == ('535.247.01', 'dkms', 'proprietary')
    assert facts['userspace_version'] == '535.247.01'
    assert facts['userspace_path'] == '/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1'
    assert facts['initramfs']['compression'] == 'gzip'
    assert trees.OPTIONS_FILE in facts['initramfs']['nvidia_options']


def test_debian_module_not_in_modules_dep(tmp_path):
    info = trees.debian12(tmp_path, module_in_dep=False)
    facts = read(tmp_path, info)
    assert facts['nvidia_module']['in_modules_dep'] is False


@needs_zstd
def test_hgx_saved_entry_and_fabric_manager(tmp_path):
    info = trees.hgx(tmp_path, fabric_manager='570.133.20')
    facts = read(tmp_path, info)
    assert facts['kernel'] == '6.8.0-60-generic'
    assert facts['kernel_source'] == 'grub_saved'
    assert 'falls back' not in facts['kernel_detail']
    assert facts['kernel_is_running'] is True
    assert facts['fabric_manager_version'] == '570.133.20'
    assert facts['fabric_manager_package'] == 'nvidia-fabricmanager-570'
    assert facts['nvidia_module']['version'] == '570.158.01'
    assert facts['iommu']['passthrough_requested'] is True
    assert facts['unattended_upgrades'] == {'installed': False, 'enabled': False, 'interval': None, 'blacklist': []}


def test_no_grub_newest_installed_kernel_is_said(tmp_path):
    for kernel in ('6.1.0-9-amd64', '6.1.0-10-amd64'):
        trees.write(tmp_path, '/boot/vmlinuz-%s' % kernel, b'MZ')
    facts = nb.read_next_boot(gpu_sysfs.HostRoot(str(tmp_path)), '6.1.0-9-amd64', None,
                              hp.read_packages(gpu_sysfs.HostRoot(str(tmp_path))))
    assert facts['kernel'] == '6.1.0-10-amd64'
    assert facts['kernel_source'] == 'newest_installed'
    assert 'newest kernel in /boot is assumed' in facts['kernel_detail']
    assert facts['cmdline'] is None
    assert facts['dpkg'] is False


def test_empty_tree_is_the_running_kernel(tmp_path):
    facts = nb.read_next_boot(gpu_sysfs.HostRoot(str(tmp_path)), '6.1.0-9-amd64', None,
                              hp.read_packages(gpu_sysfs.HostRoot(str(tmp_path))))
    assert (facts['kernel'], facts['kernel_source']) == ('6.1.0-9-amd64', 'running')
    assert facts['nvidia_module'] is None and facts['modules_dir'] is None
    assert facts['initramfs']['exists'] is False


# ---------------------------------------------------------------------------------------------
# GRUB's files
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize('lines, expected, unevaluated', [
    (['GRUB_CMDLINE_LINUX="a b"'], 'a b', 0),
    (["GRUB_CMDLINE_LINUX='a $X'"], 'a $X', 0),
    (['X=1', 'GRUB_CMDLINE_LINUX="a x=${X}"'], 'a x=1', 0),
    (['export GRUB_CMDLINE_LINUX=plain'], 'plain', 0),
    (['GRUB_CMDLINE_LINUX="a \\"q\\""'], 'a "q"', 0),
    (['GRUB_CMDLINE_LINUX="a"', 'GRUB_CMDLINE_LINUX="$(cat /x)"'], 'a', 1),
    (['GRUB_CMDLINE_LINUX="a"', 'if true; then', 'GRUB_CMDLINE_LINUX="b"', 'fi'], 'a', 3),
    (['if [ -x /x ]; then', '  X=1', 'fi', 'GRUB_CMDLINE_LINUX="c"'], 'c', 3),
    (['. /etc/gpu-grub-args', 'GRUB_CMDLINE_LINUX="d"'], 'd', 1),
    (['GRUB_CMDLINE_LINUX="a \\', 'b"'], 'a b', 0),
    (['GRUB_CMDLINE_LINUX="a" # comment'], 'a', 0),
    (['GRUB_CMDLINE_LINUX="${X:-iommu=pt}"'], '', 1),
])
def test_grub_defaults_evaluation(tmp_path, lines, expected, unevaluated):
    trees.write(tmp_path, nb.GRUB_DEFAULTS, '\n'.join(lines) + '\n')
    result = nb.evaluate_grub_defaults(gpu_sysfs.HostRoot(str(tmp_path)))
    assert result['values'].get('GRUB_CMDLINE_LINUX', '') == expected
    assert len(result['unevaluated']) == unevaluated
    # a block's own lines and an assignment of another variable cannot change the command line
    for item in result['unevaluated']:
        assert item['cmdline'] == (not item['text'].startswith(('if ', 'fi', 'X='))), item


def test_grub_drop_ins_in_glob_order_and_non_cfg_ignored(tmp_path):
    trees.write(tmp_path, nb.GRUB_DEFAULTS, 'GRUB_CMDLINE_LINUX="a"\n')
    trees.write(tmp_path, '/etc/default/grub.d/20-b.cfg', 'GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX b"\n')
    trees.write(tmp_path, '/etc/default/grub.d/10-a.cfg', 'GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX iommu=pt"\n')
    trees.write(tmp_path, '/etc/default/grub.d/30-c.cfg.disabled', 'GRUB_CMDLINE_LINUX="nothing"\n')
    result = nb.evaluate_grub_defaults(gpu_sysfs.HostRoot(str(tmp_path)))
    assert result['values']['GRUB_CMDLINE_LINUX'] == 'a iommu=pt b'
    assert result['origins'] == {'a': nb.GRUB_DEFAULTS, 'iommu=pt': '/etc/default/grub.d/10-a.cfg',
                                 'b': '/etc/default/grub.d/20-b.cfg'}


def test_grub_cfg_positions_ids_and_blocks():
    text = trees.ubuntu_grub_cfg(['6.8.0-62-generic', '6.8.0-60-generic'], 'quiet')
    entries = nb.parse_grub_cfg(text)
    assert [entry['path'] for entry in entries] == ['0', '1>0', '1>1', '1>2', '1>3']
    assert entries[0]['kernel'] == '6.8.0-62-generic'
    assert entries[3]['kernel'] == '6.8.0-60-generic'
    assert entries[2]['args'].endswith('recovery nomodeset dis_ucode_ldr $vt_handoff')
    assert entries[3]['submenu'] == 'Advanced options for Ubuntu'
    wanted = 'gnulinux-advanced-%s>gnulinux-6.8.0-60-generic-advanced-%s' % (trees.UBUNTU_UUID, trees.UBUNTU_UUID)
    assert nb._find_entry(entries, wanted) is entries[3]
    assert nb._find_entry(entries, '1>2') is entries[3]
    assert nb._find_entry(entries, 'Advanced options for Ubuntu>Ubuntu, with Linux 6.8.0-60-generic') is entries[3]
    assert nb._find_entry(entries, '1') is entries[1]


@pytest.mark.parametrize('env, expected', [
    ('saved_entry=1>2\n', '6.8.0-60-generic'),
    ('saved_entry=1>2\nnext_entry=0\n', '6.8.0-62-generic'),
    ('', '6.8.0-62-generic'),
])
def test_grub_saved_default(tmp_path, env, expected):
    trees.write(tmp_path, nb.GRUB_DEFAULTS, 'GRUB_DEFAULT=saved\n')
    trees.write(tmp_path, nb.GRUB_CFG, trees.ubuntu_grub_cfg(['6.8.0-62-generic', '6.8.0-60-generic'], 'quiet'))
    trees.write(tmp_path, nb.GRUB_ENV, env)
    host = gpu_sysfs.HostRoot(str(tmp_path))
    choice = nb.choose_kernel(host, nb.evaluate_grub_defaults(host)['values'], None)
    assert choice['kernel'] == expected
    assert choice['source'] == 'grub_saved'


def test_kernel_sort_is_numeric():
    kernels = ['6.8.0-100-generic', '6.8.0-60-generic', '6.10.0-1-generic', '6.8.0-9-generic']
    assert sorted(kernels, key=nb.kernel_sort_key) == ['6.8.0-9-generic', '6.8.0-60-generic', '6.8.0-100-generic',
                                                       '6.10.0-1-generic']


# ---------------------------------------------------------------------------------------------
# Modules and initramfs images
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize('suffix, pack', [
    ('', lambda data: data),
    ('.xz', lambda data: lzma.compress(data, format=lzma.FORMAT_XZ)),
    ('.gz', gzip.compress),
    pytest.param('.zst', lambda data: boot_files.compress(data, 'zstd'), marks=needs_zstd),
])
def test_modinfo_of_compressed_modules(tmp_path, suffix, pack):
    data = boot_files.elf_module(boot_files.nvidia_fields('570.1.2', '6.1.0-9-amd64 SMP'))
    trees.write(tmp_path, '/m/nvidia.ko' + suffix, pack(data))
    fields, error = nb.read_modinfo(gpu_sysfs.HostRoot(str(tmp_path)), '/m/nvidia.ko' + suffix)
    assert error is None
    assert fields['version'] == '570.1.2'
    assert fields['vermagic'] == '6.1.0-9-amd64 SMP'


def test_modinfo_of_a_file_that_is_no_module(tmp_path):
    trees.write(tmp_path, '/m/nvidia.ko', b'not an ELF file at all, but long enough to be read as one maybe ' * 2)
    fields, error = nb.read_modinfo(gpu_sysfs.HostRoot(str(tmp_path)), '/m/nvidia.ko')
    assert fields is None and error == 'not an ELF file'


def test_modinfo_of_truncated_elf_does_not_raise(tmp_path):
    data = boot_files.elf_module(boot_files.nvidia_fields('570.1.2', 'x'))
    trees.write(tmp_path, '/m/nvidia.ko', data[:80])
    fields, error = nb.read_modinfo(gpu_sysfs.HostRoot(str(tmp_path)), '/m/nvidia.ko')
    assert not (fields or {}).get('version')


@pytest.mark.parametrize('compression', ['gzip', 'none', pytest.param('zstd', marks=needs_zstd)])
def test_initramfs_modprobe_files(tmp_path, compression):
    files = {'etc/modprobe.d/a.conf': b'options nvidia NVreg_X=1\n', 'usr/lib/modprobe.d/b.conf': b'blacklist x\n',
             'etc/other.conf': b'options nvidia NVreg_Y=2\n', 'bin/big': b'\x00' * 300000}
    trees.write(tmp_path, '/boot/initrd.img-k', boot_files.initramfs(files, compression))
    result = nb.read_initramfs_modprobe(gpu_sysfs.HostRoot(str(tmp_path)), '/boot/initrd.img-k')
    assert result['error'] is None
    assert result['compression'] == compression
    assert sorted(result['files']) == ['/etc/modprobe.d/a.conf', '/usr/lib/modprobe.d/b.conf']
    assert nb.nvidia_options(result['files']) == {'/etc/modprobe.d/a.conf': ['nvidia NVreg_X=1']}


def test_initramfs_with_unknown_compression_names_it(tmp_path):
    trees.write(tmp_path, '/boot/initrd.img-k', boot_files.cpio_newc({'a': b'1'}) + b'\x89LZO\x00\x0d\x0a')
    result = nb.read_initramfs_modprobe(gpu_sysfs.HostRoot(str(tmp_path)), '/boot/initrd.img-k')
    assert 'lzo' in result['error']


# ---------------------------------------------------------------------------------------------
# Packages and APT configuration
# ---------------------------------------------------------------------------------------------

def test_apt_config_files_and_dump_agree():
    files = ('// comment\nAPT::Periodic::Unattended-Upgrade "1";\n'
             'Unattended-Upgrade::Package-Blacklist {\n  "nvidia-";  # c\n  /* x */ "libnvidia-";\n};\n'
             'Unattended-Upgrade { Mail "root"; };\n')
    dump = ('APT::Periodic::Unattended-Upgrade "1";\nUnattended-Upgrade "";\nUnattended-Upgrade::Mail "root";\n'
            'Unattended-Upgrade::Package-Blacklist "";\nUnattended-Upgrade::Package-Blacklist:: "nvidia-";\n'
            'Unattended-Upgrade::Package-Blacklist:: "libnvidia-";\n')
    for text in (files, dump):
        uu = hp.unattended_upgrades(hp.parse_apt_config(text), installed=True)
        assert uu == {'installed': True, 'enabled': True, 'interval': '1', 'blacklist': ['nvidia-', 'libnvidia-']}


def test_apt_clear_and_off():
    pairs = hp.parse_apt_config('Unattended-Upgrade::Package-Blacklist { "a"; };\n'
                                '#clear Unattended-Upgrade::Package-Blacklist;\n'
                                'APT::Periodic::Unattended-Upgrade "0";\n')
    expected = {'installed': True, 'enabled': False, 'interval': '0', 'blacklist': []}
    assert hp.unattended_upgrades(pairs, installed=True) == expected
    assert hp.unattended_upgrades(hp.parse_apt_config('APT::Periodic::Unattended-Upgrade "1";'),
                                  installed=False)['enabled'] is False


@pytest.mark.parametrize('name, blacklist, expected', [
    ('libnvidia-compute-580', ['nvidia-', 'libnvidia-'], 'libnvidia-'),
    ('nvidia-driver-580', ['nvidia-'], 'nvidia-'),
    ('xnvidia', ['nvidia-'], None),
    ('nvidia-utils-580', ['nvidia-.*'], 'nvidia-.*'),
    ('nvidia-(x', ['nvidia-('], 'nvidia-('),
])
def test_blacklist_matches_like_unattended_upgrades(name, blacklist, expected):
    assert hp.blacklisted(name, blacklist) == expected


def test_dpkg_status_states_and_versions():
    text = trees.dpkg_status([('a', '1:2.0-1', 'hold'), ('b', '1.0', 'install')])
    text += '\nPackage: gone\nStatus: deinstall ok config-files\nVersion: 1\n'
    text += '\nPackage: nvidia-kernel-dkms\nStatus: install ok half-configured\nVersion: 535.247.01-1~deb12u1\n'
    packages = hp.parse_dpkg_status(text)
    assert packages['a']['selection'] == 'hold'
    assert 'gone' not in packages
    assert packages['nvidia-kernel-dkms']['state'] == 'half-configured'
    assert hp.upstream_version('1:580.95.05-0ubuntu1') == '580.95.05'
    assert hp.upstream_version('535.247.01-1~deb12u1') == '535.247.01'
    assert hp.upstream_version('570.1') == '570.1'


@pytest.mark.parametrize('name, role', [
    ('nvidia-fabricmanager-570', 'fabric_manager'), ('nvidia-fabricmanager', 'fabric_manager'),
    ('libnvidia-nscq-570', 'fabric_manager'), ('nvidia-kernel-dkms', 'driver'), ('nvidia-dkms-580-open', 'driver'),
    ('linux-modules-nvidia-580-server-open-6.8.0-60-generic', 'driver'), ('nvidia-driver-580-open', 'driver'),
    ('cuda-drivers-580', 'driver'), ('libnvidia-ml1', 'userspace'), ('libnvidia-compute-580', 'userspace'),
    ('nvidia-utils-580', 'userspace'), ('linux-image-6.8.0-60-generic', 'kernel'),
    ('linux-headers-6.1.0-31-amd64', 'kernel'), ('linux-modules-6.8.0-60-generic', 'kernel'),
    ('nvidia-settings', None), ('python3', None),
])
def test_package_roles(name, role):
    assert hp.package_role(name) == role


def test_links_in_module_tree_are_not_followed(tmp_path):
    trees.write(tmp_path, '/lib/modules/k/modules.dep', '')
    outside = tmp_path / 'outside'
    outside.mkdir()
    (outside / 'nvidia.ko').write_bytes(boot_files.elf_module(boot_files.nvidia_fields('1.0', 'k')))
    os.symlink(str(outside), str(tmp_path / 'lib/modules/k/updates'))
    found = nb.find_nvidia_modules(gpu_sysfs.HostRoot(str(tmp_path)), 'k')
    assert found['modules'] == []


def test_initramfs_with_a_huge_member_name_is_refused_not_read(tmp_path):
    header = b"070701" + b"".join(b"%08X" % value for value in [1, 0o100644, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x7FFFFFFF, 0])
    trees.write(tmp_path, '/boot/initrd.img-k', header + b"x" * 64)
    result = nb.read_initramfs_modprobe(gpu_sysfs.HostRoot(str(tmp_path)), '/boot/initrd.img-k')
    assert 'cpio member name of 2147483647 bytes' in result['error']
    assert result['files'] == {}
