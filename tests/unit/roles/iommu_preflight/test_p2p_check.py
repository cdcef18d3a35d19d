# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for roles/iommu_preflight/files/p2p_check.py without a GPU.

What is tested here is everything around the CUDA calls: argument checks, the byte pattern check, the IPC
handle copies, finding libcudart, the owner/writer protocol with its timeout, and the JSON it prints, with
fake worker processes standing in for the CUDA ones. tests/functional/p2p_check runs the whole script as a
process on a stand-in CUDA runtime.
"""

from __future__ import annotations

import ctypes
import importlib.util
import io
import json
import multiprocessing
import os
import time

import pytest

from ansible_collections.llmserve.sglang.plugins.plugin_utils import p2p

SCRIPT = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'roles', 'iommu_preflight', 'files',
                      'p2p_check.py')


def load_script():
    spec = importlib.util.spec_from_file_location('llmserve_p2p_check', SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check = load_script()
FORK = multiprocessing.get_context('fork')


# Fake workers (module level so the forked processes can run them). They speak the real protocol.
def good_owner(lib_path, bus_id, size, conn):
    conn.send(('handle', b'h' * 64))
    if conn.recv()[0] == 'check':
        conn.send(('checked', True, ''))


def good_writer(lib_path, bus_id, peer_bus_id, size, conn):
    message = conn.recv()
    assert message == ('handle', b'h' * 64)
    conn.send(('written', True, '', True))
    conn.recv()


def corrupting_owner(lib_path, bus_id, size, conn):
    conn.send(('handle', b'h' * 64))
    if conn.recv()[0] == 'check':
        ok, detail = check.pattern_ok(bytes([check.OWNER_PATTERN]) * 16, check.WRITER_PATTERN)
        conn.send(('checked', ok, 'owner side: ' + detail))


def refusing_writer(lib_path, bus_id, peer_bus_id, size, conn):
    conn.recv()
    conn.send(('open_failed', 'cudaIpcOpenMemHandle failed: peer access is not supported between these two devices '
               '(217)', False))


def hanging_writer(lib_path, bus_id, peer_bus_id, size, conn):
    conn.recv()
    time.sleep(60)


def failing_owner(lib_path, bus_id, size, conn):
    conn.send(('error', 'owner %s: cudaMalloc failed: out of memory (2)' % bus_id))


def test_pattern_ok():
    assert check.pattern_ok(b'\xa5' * 8, 0xA5) == (True, '')
    ok, detail = check.pattern_ok(b'\xa5\xa5\x5a\xa5', 0xA5)
    assert ok is False
    assert detail == '1 of 4 bytes differ, first at offset 2 (0x5a instead of 0xa5)'


@pytest.mark.parametrize('argv', [
    ['--devices', ''],
    ['--devices', ' , '],
    ['--devices', '0000:01:00.0,0000:01:00.0'],
    ['--devices', '0000:01:00.0,0000:41:00.0', '--timeout', '0'],
    [],
])
def test_bad_arguments(argv):
    with pytest.raises(SystemExit) as info:
        check.parse_args(argv)
    assert info.value.code == 2


def test_arguments():
    args = check.parse_args(['--devices', ' 0000:01:00.0, 0000:C1:00.0 ', '--size', '4096'])
    assert args.devices == ['0000:01:00.0', '0000:c1:00.0'] and args.size == 4096 and args.timeout == 60.0


def test_one_device_is_the_ipc_test():
    assert check.parse_args(['--devices', '0000:00:06.0']).devices == ['0000:00:06.0']


def test_ipc_handle_bytes_survive_both_copies():
    # Real handles hold zero bytes; bytes(handle.reserved) stopped at the first one and
    # memmove(handle.reserved, ...) wrote into a temporary copy, leaving the handle zeroed.
    raw = bytes([0x43, 0x53, 0x49, 0x31, 1, 0, 0, 0]) + bytes(range(56))
    handle = check.handle_from_bytes(raw)
    assert check.handle_to_bytes(handle) == raw
    assert ctypes.string_at(ctypes.addressof(handle), 64) == raw
    with pytest.raises(check.CudaError, match='64 bytes, got 5'):
        check.handle_from_bytes(raw[:5])


def test_find_cudart_knows_the_cuda_13_wheel_layout(tmp_path, monkeypatch):
    lib = tmp_path / 'nvidia' / 'cu13' / 'lib' / 'libcudart.so.13'
    lib.parent.mkdir(parents=True)
    lib.write_bytes(b'')
    loaded = []

    def fake_cdll(path):
        loaded.append(path)
        if path != str(lib):
            raise OSError('not this one')

    monkeypatch.setattr(check.sys, 'path', [str(tmp_path)])
    monkeypatch.setattr(check.ctypes, 'CDLL', fake_cdll)
    assert check.find_cudart(str(tmp_path / 'no-maps')) == str(lib)
    assert loaded[0] == str(lib)


def test_find_cudart_prefers_the_loaded_library(tmp_path):
    maps = tmp_path / 'maps'
    maps.write_text('7f0000-7f1000 r-xp 00000000 08:01 123 /usr/lib/libc.so.6\n'
                    '7f2000-7f3000 r-xp 00000000 08:01 456 /venv/nvidia/cuda_runtime/lib/libcudart.so.12\n')
    assert check.find_cudart(str(maps)) == '/venv/nvidia/cuda_runtime/lib/libcudart.so.12'


def test_good_pair():
    result = check.run_pair(FORK, 'libcudart.so', '0000:01:00.0', '0000:41:00.0', 16, 10,
                            owner=good_owner, writer=good_writer)
    assert result['ok'] is True and result['can_access_peer'] is True and result['detail'] == ''
    assert result['src'] == '0000:01:00.0' and result['dst'] == '0000:41:00.0' and result['kind'] == 'p2p'


def test_same_gpu_pair_is_the_ipc_kind():
    result = check.run_pair(FORK, 'libcudart.so', '0000:00:06.0', '0000:00:06.0', 16, 10,
                            owner=good_owner, writer=good_writer)
    assert result['ok'] is True and result['kind'] == 'ipc'


def test_owner_sees_old_pattern():
    result = check.run_pair(FORK, 'libcudart.so', '0000:01:00.0', '0000:81:00.0', 16, 10,
                            owner=corrupting_owner, writer=good_writer)
    assert result['ok'] is False
    assert result['detail'] == 'owner side: 16 of 16 bytes differ, first at offset 0 (0x5a instead of 0xa5)'


def test_peer_mapping_refused():
    result = check.run_pair(FORK, 'libcudart.so', '0000:01:00.0', '0000:81:00.0', 16, 10,
                            owner=good_owner, writer=refusing_writer)
    assert result['ok'] is False and result['can_access_peer'] is False
    assert result['detail'].startswith('peer mapping failed: cudaIpcOpenMemHandle failed')


def test_hanging_pair_times_out_and_is_killed():
    started = time.monotonic()
    result = check.run_pair(FORK, 'libcudart.so', '0000:c1:00.0', '0000:41:00.0', 16, 1.5,
                            owner=good_owner, writer=hanging_writer)
    assert result['ok'] is False
    assert 'timed out waiting for the peer write from 0000:c1:00.0' in result['detail']
    assert time.monotonic() - started < 20


def test_owner_error():
    result = check.run_pair(FORK, 'libcudart.so', '0000:01:00.0', '0000:41:00.0', 16, 10,
                            owner=failing_owner, writer=good_writer)
    assert result['ok'] is False and 'out of memory' in result['detail']


def test_main_without_cuda_runtime_prints_an_error(monkeypatch):
    monkeypatch.delenv('LLMSERVE_CUDART', raising=False)
    monkeypatch.setattr(check, 'find_cudart', lambda: None)
    out = io.StringIO()
    assert check.main(['--devices', '0000:01:00.0,0000:41:00.0'], stdout=out) == 2
    data = json.loads(out.getvalue())
    assert 'no CUDA runtime' in data['error']
    with pytest.raises(p2p.P2PParseError, match='could not run'):
        p2p.parse_p2p_check(out.getvalue())


def test_main_output_is_what_the_role_parses(monkeypatch):
    class FakeRuntime(object):
        def __init__(self, path):
            self.path = path

        def version(self, name):
            return 12080

        def device_by_bus_id(self, bus_id):
            return ['0000:01:00.0', '0000:41:00.0'].index(bus_id)

    monkeypatch.delenv('LLMSERVE_CUDART', raising=False)
    monkeypatch.setattr(check, 'find_cudart', lambda: '/fake/libcudart.so.12')
    monkeypatch.setattr(check, 'Cudart', FakeRuntime)
    monkeypatch.setattr(check, 'run_pair', lambda context, lib, src, dst, size, timeout: {
        'src': src, 'dst': dst, 'ok': src < dst, 'can_access_peer': True, 'detail': '', 'seconds': 0.1})
    out = io.StringIO()
    assert check.main(['--devices', '0000:01:00.0,0000:41:00.0'], context=FORK, stdout=out) == 0
    results = p2p.parse_p2p_check(out.getvalue())
    assert results[('0000:01:00.0', '0000:41:00.0')]['ok'] is True
    assert results[('0000:41:00.0', '0000:01:00.0')]['ok'] is False
    data = json.loads(out.getvalue())
    assert data['devices'] == [{'pci_address': '0000:01:00.0', 'cuda_device': 0},
                               {'pci_address': '0000:41:00.0', 'cuda_device': 1}]
