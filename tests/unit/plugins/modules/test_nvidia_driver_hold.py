# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the nvidia_driver_hold module. The host's dpkg status is a file of the test and apt-mark a
stand-in that changes the selection in that file as the real one does (the molecule scenario nextboot runs the
real apt-mark on test hosts): what is held, what is recorded, what false releases, check and diff mode."""

from __future__ import annotations

import os
import re

import pytest

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.llmserve.sglang.plugins.module_utils import host_packages
from ansible_collections.llmserve.sglang.plugins.modules import nvidia_driver_hold
from ansible_collections.llmserve.sglang.tests.fixtures.next_boot import trees
from ansible_collections.llmserve.sglang.tests.unit.plugins.modules.module_exits import ExitJson, FailJson, patch_exits

PACKAGES = [
    ('nvidia-driver-580-server-open', '580.95.05-0ubuntu0.24.04.2', 'install'),
    ('linux-modules-nvidia-580-server-open-6.8.0-60-generic', '6.8.0-60.63+1', 'install'),
    ('libnvidia-compute-580-server', '580.95.05-0ubuntu0.24.04.2', 'install'),
    ('nvidia-fabricmanager-580', '580.95.05-1', 'install'),
    ('linux-image-6.8.0-60-generic', '6.8.0-60.63', 'install'),
    ('zstd', '1.5.5', 'hold'),
    ('nvidia-utils-580-server', '580.95.05-0ubuntu0.24.04.2', 'hold'),
]


@pytest.fixture
def host(tmp_path, monkeypatch):
    status = tmp_path / 'status'
    status.write_text(trees.dpkg_status(PACKAGES))
    conf = tmp_path / 'apt.conf.d'
    conf.mkdir()
    calls = []

    def apt_mark(self, args, **kwargs):
        calls.append(list(args))
        action, names = args[1], args[2:]
        text = status.read_text()
        for name in names:
            old = 'hold' if action == 'unhold' else 'install'
            new = 'install' if action == 'unhold' else 'hold'
            text = re.sub(r'(Package: %s\nStatus: )%s ' % (re.escape(name), old), r'\g<1>%s ' % new, text)
        status.write_text(text)
        return 0, '', ''

    patch_exits(monkeypatch)
    monkeypatch.setattr(host_packages, 'DPKG_STATUS', str(status))
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', apt_mark)
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', lambda self, name, required=False: '/usr/bin/' + name)
    return {'status': status, 'file': str(conf / '51llmserve-nvidia-hold'), 'calls': calls}


def run(args, expect=ExitJson, check=False, diff=False):
    args = dict(args)
    if check:
        args['_ansible_check_mode'] = True
    if diff:
        args['_ansible_diff'] = True
    with patch_module_args(args):
        with pytest.raises(expect) as info:
            nvidia_driver_hold.main()
    return info.value.result


def held(host):
    packages = host_packages.parse_dpkg_status(host['status'].read_text())
    return sorted(name for name, info in packages.items() if info['selection'] == 'hold')


def test_hold_records_blacklists_and_reruns_unchanged(host):
    result = run({'state': 'present', 'blacklist_file': host['file']})
    assert result['changed'] is True
    assert result['newly_held'] == ['libnvidia-compute-580-server',
                                    'linux-modules-nvidia-580-server-open-6.8.0-60-generic',
                                    'nvidia-driver-580-server-open', 'nvidia-fabricmanager-580']
    assert result['held_before'] == ['nvidia-utils-580-server']
    assert host['calls'] == [['/usr/bin/apt-mark', 'hold'] + result['newly_held']]
    assert held(host) == sorted(result['newly_held'] + ['nvidia-utils-580-server', 'zstd'])
    text = open(host['file']).read()
    assert '// llmserve.sglang held: ' + ' '.join(result['newly_held']) in text
    pairs = host_packages.parse_apt_config(text)
    blacklist = host_packages.unattended_upgrades(pairs, installed=True)['blacklist']
    assert blacklist == ['^nvidia\\-', '^libnvidia\\-',
                         '^linux\\-modules\\-nvidia\\-580\\-server\\-open\\-6\\.8\\.0\\-60\\-generic$']
    # unattended-upgrades would now skip every NVIDIA package, and never the kernel
    for name, _version, _selection in PACKAGES:
        covered = host_packages.blacklisted(name, blacklist) is not None
        assert covered == (host_packages.package_role(name) in ('driver', 'userspace', 'fabric_manager')), name
    again = run({'state': 'present', 'blacklist_file': host['file']})
    assert again['changed'] is False and again['newly_held'] == [] and len(host['calls']) == 1
    assert again['held'] == result['held']


def test_absent_releases_only_what_it_held(host):
    run({'state': 'present', 'blacklist_file': host['file']})
    result = run({'state': 'absent', 'blacklist_file': host['file']})
    assert result['changed'] is True
    assert result['released'] == ['libnvidia-compute-580-server',
                                  'linux-modules-nvidia-580-server-open-6.8.0-60-generic',
                                  'nvidia-driver-580-server-open', 'nvidia-fabricmanager-580']
    # the administrator's holds stay
    assert held(host) == ['nvidia-utils-580-server', 'zstd']
    assert not os.path.exists(host['file'])
    again = run({'state': 'absent', 'blacklist_file': host['file']})
    assert again['changed'] is False and again['released'] == []


def test_absent_without_drop_in_changes_nothing(host):
    result = run({'state': 'absent', 'blacklist_file': host['file']})
    assert result['changed'] is False and host['calls'] == []
    assert held(host) == ['nvidia-utils-580-server', 'zstd']


def test_check_mode_changes_nothing_and_diff_shows_both(host):
    result = run({'state': 'present', 'blacklist_file': host['file']}, check=True, diff=True)
    assert result['changed'] is True and len(result['newly_held']) == 4
    assert host['calls'] == [] and not os.path.exists(host['file'])
    assert 'held: nvidia-utils-580-server zstd' in result['diff']['before']
    assert 'Unattended-Upgrade::Package-Blacklist' in result['diff']['after']
    assert 'nvidia-driver-580-server-open' in result['diff']['after'].splitlines()[0]


def test_a_package_installed_later_is_held_too(host):
    run({'state': 'present', 'blacklist_file': host['file']})
    host['status'].write_text(host['status'].read_text() + '\n' + trees.dpkg_status(
        [('libnvidia-common-580-server', '580.95.05-0ubuntu0.24.04.2', 'install')]))
    result = run({'state': 'present', 'blacklist_file': host['file']})
    assert result['changed'] is True and result['newly_held'] == ['libnvidia-common-580-server']
    assert 'libnvidia-common-580-server' in result['held']


@pytest.mark.parametrize('path', ['relative/file', '/etc/apt/apt.conf.d/has space', '/etc/apt/apt.conf.d/x.disabled'])
def test_bad_file_names_are_refused_before_anything_changes(host, path):
    result = run({'state': 'present', 'blacklist_file': path}, expect=FailJson)
    assert 'blacklist_file must be an absolute path whose name APT reads' in result['msg']
    assert host['calls'] == []


def test_apt_mark_failure_is_reported(host, monkeypatch):
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', lambda self, args, **kw: (100, '', 'E: locked'))
    result = run({'state': 'present', 'blacklist_file': host['file']}, expect=FailJson)
    assert 'apt-mark hold' in result['msg'] and 'E: locked' in result['msg']
    assert not os.path.exists(host['file'])
