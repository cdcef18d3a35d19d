# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The stand-in CUDA runtime itself (tools/standin/cudart): it must refuse what a real runtime refuses, or the
p2p_check tests on it prove nothing. Calls go through ctypes with the real C types; the IPC handle is opened in a
second process, as CUDA requires."""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys

import pytest

from p2p_standin_helpers import GPUS

INVALID_VALUE = 1

# Runs in a child process: open the handles given as hex on stdin, report each result (and the first bytes read).
OPENER = r'''
import ctypes, json, sys
class Handle(ctypes.Structure):
    _fields_ = [('reserved', ctypes.c_char * 64)]
lib = ctypes.CDLL(sys.argv[1])
lib.cudaIpcOpenMemHandle.argtypes = [ctypes.POINTER(ctypes.c_void_p), Handle, ctypes.c_uint]
lib.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
lib.cudaIpcCloseMemHandle.argtypes = [ctypes.c_void_p]
assert lib.cudaSetDevice(int(sys.argv[2])) == 0
answers = []
for line in sys.stdin.read().split():
    raw, flags = line.split(':')
    handle = Handle()
    ctypes.memmove(ctypes.addressof(handle), bytes.fromhex(raw), 64)
    pointer = ctypes.c_void_p()
    code = lib.cudaIpcOpenMemHandle(ctypes.byref(pointer), handle, int(flags))
    data = ''
    if code == 0:
        buffer = ctypes.create_string_buffer(8)
        assert lib.cudaMemcpy(buffer, pointer, 8, 2) == 0
        data = buffer.raw.hex()
        assert lib.cudaIpcCloseMemHandle(pointer) == 0
    answers.append([code, data])
print(json.dumps(answers))
'''


class Handle(ctypes.Structure):
    _fields_ = [('reserved', ctypes.c_char * 64)]


@pytest.fixture
def runtime(standin, monkeypatch):
    """The stand-in loaded into this process, configured through the environment it reads on every call."""
    for key, value in standin.env().items():
        if key.startswith('CUDART_STANDIN_'):
            monkeypatch.setenv(key, value)
    lib = ctypes.CDLL(standin.lib)
    lib.cudaGetErrorString.restype = ctypes.c_char_p
    lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    lib.cudaFree.argtypes = [ctypes.c_void_p]
    lib.cudaMemset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    lib.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    lib.cudaIpcGetMemHandle.argtypes = [ctypes.POINTER(Handle), ctypes.c_void_p]
    lib.cudaIpcOpenMemHandle.argtypes = [ctypes.POINTER(ctypes.c_void_p), Handle, ctypes.c_uint]
    lib.standin = standin
    return lib


def export(lib, device, pattern, size=4096):
    assert lib.cudaSetDevice(device) == 0
    pointer = ctypes.c_void_p()
    assert lib.cudaMalloc(ctypes.byref(pointer), size) == 0
    assert lib.cudaMemset(pointer, pattern, size) == 0
    handle = Handle()
    assert lib.cudaIpcGetMemHandle(ctypes.byref(handle), pointer) == 0
    return pointer, ctypes.string_at(ctypes.addressof(handle), 64)


def open_in_child(lib, device, handles):
    lines = '\n'.join('%s:%d' % (raw.hex(), flags) for raw, flags in handles)
    done = subprocess.run([sys.executable, '-c', OPENER, lib.standin.lib, str(device)], input=lines,
                          capture_output=True, text=True, check=True, timeout=60)
    return json.loads(done.stdout)


def test_handles_hold_zero_bytes_and_only_the_exact_bytes_open(runtime):
    pointer, raw = export(runtime, 1, 0x42)
    assert raw[0] != 0 and 0 in raw[:32], 'the handle must start non-zero and hold zero bytes before the name'
    assert raw[32:33] == b'/', 'the segment name sits at offset 32'
    cut = raw.split(b'\0', 1)[0].ljust(64, b'\0')  # what bytes(c_char array) keeps
    changed_nonce = raw[:16] + bytes([raw[16] ^ 0xFF]) + raw[17:]
    answers = open_in_child(runtime, 0, [(raw, 1), (raw, 0), (cut, 1), (b'\0' * 64, 1), (changed_nonce, 1), (raw, 2)])
    assert answers == [[0, '42' * 8], [0, '42' * 8], [INVALID_VALUE, ''], [INVALID_VALUE, ''], [INVALID_VALUE, ''],
                       [INVALID_VALUE, '']]
    assert open_in_child(runtime, 0, [(raw, 1)]) == [[0, '42' * 8]]
    assert runtime.cudaFree(pointer) == 0
    assert open_in_child(runtime, 0, [(raw, 1)]) == [[INVALID_VALUE, '']], 'freed memory must not open'


def test_a_handle_does_not_open_in_its_own_process(runtime):
    pointer, raw = export(runtime, 0, 0x11)
    handle = Handle()
    ctypes.memmove(ctypes.addressof(handle), raw, 64)
    opened = ctypes.c_void_p()
    assert runtime.cudaIpcOpenMemHandle(ctypes.byref(opened), handle, 1) == INVALID_VALUE
    assert runtime.cudaFree(pointer) == 0


def test_memcpy_tells_device_from_host_pointers(runtime):
    assert runtime.cudaSetDevice(0) == 0
    device = ctypes.c_void_p()
    assert runtime.cudaMalloc(ctypes.byref(device), 64) == 0
    host = ctypes.create_string_buffer(b'\x07' * 64, 64)
    assert runtime.cudaMemcpy(device, host, 64, 1) == 0  # host to device
    assert runtime.cudaMemcpy(host, device, 64, 1) == INVALID_VALUE  # direction says the other way
    assert runtime.cudaMemcpy(host, host, 64, 2) == INVALID_VALUE  # no device memory at the source
    assert runtime.cudaMemcpy(host, device, 65, 2) == INVALID_VALUE  # past the end of the allocation
    assert runtime.cudaMemcpy(host, device, 64, 7) == 21
    assert runtime.cudaMemset(host, 0, 64) == INVALID_VALUE
    back = ctypes.create_string_buffer(64)
    assert runtime.cudaMemcpy(back, device, 64, 4) == 0  # cudaMemcpyDefault infers device to host
    assert back.raw == b'\x07' * 64
    assert runtime.cudaFree(host) == INVALID_VALUE
    assert runtime.cudaFree(device) == 0
    assert runtime.cudaFree(device) == INVALID_VALUE


def test_devices_come_from_the_environment(runtime, monkeypatch):
    count = ctypes.c_int()
    assert runtime.cudaGetDeviceCount(ctypes.byref(count)) == 0 and count.value == len(GPUS)
    found = ctypes.c_int()
    assert runtime.cudaDeviceGetByPCIBusId(ctypes.byref(found), GPUS[2].upper().encode()) == 0 and found.value == 2
    assert runtime.cudaDeviceGetByPCIBusId(ctypes.byref(found), b'0000:c1:00.0') == 101
    assert runtime.cudaGetErrorString(101) == b'invalid device ordinal'
    assert runtime.cudaSetDevice(len(GPUS)) == 101
    monkeypatch.setenv('CUDART_STANDIN_GPUS', '')
    assert runtime.cudaGetDeviceCount(ctypes.byref(count)) == 100 and count.value == 0
    monkeypatch.setenv('CUDART_STANDIN_GPUS', 'not-a-gpu')
    assert runtime.cudaGetDeviceCount(ctypes.byref(count)) == 3
