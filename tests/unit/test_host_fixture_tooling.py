# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fixture tooling: device nodes in manifests, and capture bundles turned into manifests (materialize.py)."""

from __future__ import annotations

import io
import os
import stat
import tarfile

import pytest
import yaml

from ansible_collections.llmserve.sglang.tests.fixtures.hosts import materialize


def manifest_dir(tmp_path, **manifests):
    directory = tmp_path / 'manifests'
    directory.mkdir(exist_ok=True)
    for name, data in manifests.items():
        (directory / (name + '.yml')).write_text(yaml.safe_dump(data))
    return str(directory)


def test_devices_become_the_device_table(tmp_path):
    directory = manifest_dir(tmp_path, host={'devices': {'/dev/nvidia0': {'major': 195, 'minor': 0},
                                                         '/dev/nvidia-caps/nvidia-cap1': {'major': 241, 'minor': 1}}})
    root = tmp_path / 'root'
    materialize.build('host', str(root), directory=directory)
    table = 'c 241:1 /dev/nvidia-caps/nvidia-cap1\nc 195:0 /dev/nvidia0\n'
    assert (root / '.gpu_host_facts/device-nodes').read_text() == table
    assert not (root / 'dev/nvidia0').exists() and (root / 'dev/nvidia-caps').is_dir()


def test_mknod_makes_real_nodes_when_allowed(tmp_path):
    directory = manifest_dir(tmp_path, host={'devices': {'/dev/nvidia0': {'major': 195, 'minor': 3}}})
    root = tmp_path / 'root'
    try:
        materialize.build('host', str(root), directory=directory, mknod=True)
    except materialize.ManifestError as exc:
        assert 'cannot make the device node /dev/nvidia0' in str(exc)
        pytest.skip('no CAP_MKNOD here: %s' % exc)
    info = os.stat(str(root / 'dev/nvidia0'))
    assert stat.S_ISCHR(info.st_mode) and (os.major(info.st_rdev), os.minor(info.st_rdev)) == (195, 3)


@pytest.mark.parametrize('devices, message', [
    ({'/sys/nvidia0': {'major': 195, 'minor': 0}}, 'must be below /dev'),
    ({'/dev/nvidia0': {'major': 195}}, 'needs exactly major and minor'),
    ({'/dev/nvidia0': {'major': -1, 'minor': 0}}, 'major must be an integer from 0 to 4095'),
    ({'/dev/nvidia0': {'major': 195, 'minor': '0'}}, 'minor must be an integer'),
    ({'/dev/nvidia0': {'major': True, 'minor': 0}}, 'major must be an integer'),
    ({'/dev/nvidia0': '195:0'}, 'needs exactly major and minor'),
])
def test_bad_devices_are_refused(tmp_path, devices, message):
    directory = manifest_dir(tmp_path, host={'devices': devices})
    with pytest.raises(materialize.ManifestError, match=message):
        materialize.resolve('host', directory)


def test_links_may_point_at_dev_null_only_as_absolute_target(tmp_path):
    directory = manifest_dir(tmp_path, masked={'links': {'/etc/systemd/system/x.service': '/dev/null'}},
                             escaping={'links': {'/etc/x': '/etc/passwd'}})
    root = tmp_path / 'root'
    materialize.build('masked', str(root), directory=directory)
    assert os.readlink(str(root / 'etc/systemd/system/x.service')) == '/dev/null'
    with pytest.raises(materialize.ManifestError, match='must have a relative target'):
        materialize.resolve('escaping', directory)


def bundle(tmp_path, members):
    path = str(tmp_path / 'bundle.tar.gz')
    with tarfile.open(path, 'w:gz') as tar:
        for name, kind, payload in members:
            info = tarfile.TarInfo(name)
            if kind == 'file':
                info.size = len(payload)
                tar.addfile(info, io.BytesIO(payload))
                continue
            info.type = kind
            if kind == tarfile.SYMTYPE:
                info.linkname = payload
            elif kind in (tarfile.CHRTYPE, tarfile.BLKTYPE):
                info.devmajor, info.devminor = payload
            tar.addfile(info)
    return path


def test_import_capture_maps_every_kind(tmp_path):
    path = bundle(tmp_path, [
        ('sys/kernel/iommu_groups', tarfile.DIRTYPE, None),
        ('sys/devices/x/vendor', 'file', b'0x10de\n'),
        ('sys/bus/pci/devices/0000:00:06.0', tarfile.SYMTYPE, '../../../devices/x'),
        ('etc/systemd/system/multi-user.target.wants/a.service', tarfile.SYMTYPE, '/etc/systemd/system/a.service'),
        ('etc/systemd/system/b.service', tarfile.SYMTYPE, '/dev/null'),
        ('.gpu_host_facts/device-nodes', 'file', b'c 195:0 /dev/nvidia0\n'),
        ('.gpu_host_facts/capture.json', 'file',
         b'{"created": "2026-11-30T10:00:00Z", "kernel_release": "6.18.44", '
         b'"kernel_log": {"lines_kept": 3, "source": "dmesg"}}'),
        ('./var/log/kern.log', 'file', b'[ 1.0] NVRM: x\n'),
    ])
    manifest = materialize.import_capture(path, 'a test host')
    assert manifest == {
        'description': 'a test host (2026-11-30T10:00:00Z, kernel 6.18.44, 3 kernel log lines from dmesg)',
        'files': {'/sys/devices/x/vendor': '0x10de\n', '/var/log/kern.log': '[ 1.0] NVRM: x\n'},
        'links': {'/etc/systemd/system/b.service': '/dev/null',
                  '/etc/systemd/system/multi-user.target.wants/a.service': '../a.service',
                  '/sys/bus/pci/devices/0000:00:06.0': '../../../devices/x'},
        'dirs': ['/sys/kernel/iommu_groups'],
        'devices': {'/dev/nvidia0': {'major': 195, 'minor': 0}},
    }
    out = tmp_path / 'manifests' / 'imported.yml'
    out.parent.mkdir()
    materialize.write_manifest(manifest, str(out))
    assert materialize.resolve('imported', str(out.parent))['/var/log/kern.log']['content'] == '[ 1.0] NVRM: x\n'


@pytest.mark.parametrize('members, message', [
    ([('/etc/passwd', 'file', b'x')], 'not a relative path'),
    ([('../../etc/passwd', 'file', b'x')], 'not a relative path'),
    ([('sys/a/../../../x', 'file', b'x')], 'not a relative path'),
    ([('dev/nvidia0', tarfile.CHRTYPE, (195, 0))], 'neither a file, a directory nor a symlink'),
    ([('sys/fifo', tarfile.FIFOTYPE, None)], 'neither a file, a directory nor a symlink'),
    ([('sys/x', tarfile.SYMTYPE, '../../../../etc/shadow')], 'leaves the tree'),
    ([('sys/x\nfoo', 'file', b'')], 'control character'),
    ([('.gpu_host_facts/device-nodes', 'file', b'c 195:0 /sys/x\n')], 'must be below /dev'),
    ([('.gpu_host_facts/device-nodes', 'file', b'b 8:0 /dev/sda\n')], 'bad device table line'),
])
def test_import_capture_refuses_hostile_members(tmp_path, members, message):
    with pytest.raises(materialize.ManifestError, match=message):
        materialize.import_capture(bundle(tmp_path, members))


def test_import_capture_limits_sizes(tmp_path, monkeypatch):
    monkeypatch.setattr(materialize, 'MAX_IMPORT_FILE_BYTES', 10)
    with pytest.raises(materialize.ManifestError, match='more than 10'):
        materialize.import_capture(bundle(tmp_path, [('sys/big', 'file', b'x' * 11)]))
    monkeypatch.setattr(materialize, 'MAX_IMPORT_FILE_BYTES', 100)
    monkeypatch.setattr(materialize, 'MAX_IMPORT_TOTAL_BYTES', 15)
    with pytest.raises(materialize.ManifestError, match='holds more than 15 bytes'):
        materialize.import_capture(bundle(tmp_path, [('sys/a', 'file', b'x' * 10), ('sys/b', 'file', b'x' * 10)]))


def test_command_line_import(tmp_path):
    path = bundle(tmp_path, [('sys/devices/x/vendor', 'file', b'0x10de\n')])
    out = tmp_path / 'out.yml'
    assert materialize.main(['captured_host', '--import-capture', path, '--out', str(out)]) == 0
    assert yaml.safe_load(out.read_text())['files'] == {'/sys/devices/x/vendor': '0x10de\n'}
    with pytest.raises(SystemExit):
        materialize.main(['../escape', '--import-capture', path, '--out', str(out)])


def test_manifest_links_that_climb_out_of_the_tree_are_refused(tmp_path):
    directory = manifest_dir(tmp_path, climbing={'links': {'/sys/x': '../../../../etc/shadow'}},
                             inside={'links': {'/sys/bus/pci/devices/a': '../../../devices/a'}})
    with pytest.raises(materialize.ManifestError, match='leaves the tree'):
        materialize.build('climbing', str(tmp_path / 'climbing'), directory=directory)
    materialize.build('inside', str(tmp_path / 'inside'), directory=directory)
