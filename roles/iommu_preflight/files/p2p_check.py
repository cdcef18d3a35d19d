#!/usr/bin/env python
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Functional GPU peer-to-peer test: write through peer access, read back on both sides.

Shipped with the llmserve.sglang.iommu_preflight role and run with the Python of the SGLang
environment (the CUDA runtime comes from its torch installation).

For every ordered pair SRC->DST of the chosen GPUs (with a single GPU: the pair GPU->GPU, which tests
the CUDA IPC path between two processes on one GPU that SGLang's processes use to share GPU memory),
in two fresh processes:

1. the *owner* process on DST allocates a buffer, fills it with one byte pattern and exports a CUDA
   IPC handle for it;
2. the *writer* process on SRC opens that handle (which maps DST's memory into SRC's context through
   peer access), fills the whole buffer with a second pattern from SRC (a P2P write), waits for it and
   copies the buffer back through the peer mapping (a P2P read);
3. the owner reads its buffer locally.

The pair is good only when the writer could open the handle and both sides see the second pattern
everywhere. The IPC handle is a 64-byte structure with zero bytes inside; it is copied by address, as
raw bytes, in both directions. A pair that hangs longer than --timeout seconds is failed and its
processes are killed. The driver's "P2P supported" answer (cudaDeviceCanAccessPeer) is reported next
to the result but is not proof of anything, which is why this test exists.

The CUDA runtime library is the file named by the environment variable LLMSERVE_CUDART when it is set
and not empty (hosts with an unusual CUDA install, tests with a stand-in runtime); otherwise the one
torch loads, else libcudart from the Python path (CUDA 12 wheels: nvidia/cuda_runtime/lib, CUDA 13
wheels: nvidia/cu13/lib) or the system library path.

Prints one JSON object on stdout and exits 0 when the test ran (whatever the pairs gave), 2 when it
could not run (no CUDA runtime, unknown GPU, bad arguments); the JSON then carries "error". Each pair
carries "kind": "p2p" (two GPUs) or "ipc" (one GPU, src == dst).
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import glob
import json
import multiprocessing
import os
import sys
import time

OWNER_PATTERN = 0x5A
WRITER_PATTERN = 0xA5
MEMCPY_DEVICE_TO_HOST = 2
IPC_LAZY_ENABLE_PEER_ACCESS = 1
IPC_HANDLE_SIZE = 64
RESULT_VERSION = 2
CUDART_ENV = 'LLMSERVE_CUDART'


class CudaError(RuntimeError):
    pass


class IpcHandle(ctypes.Structure):
    """cudaIpcMemHandle_t. Never read or write it through ``reserved``: ctypes turns a c_char array field
    into a bytes copy that ends at the first zero byte, and the handle holds zero bytes."""
    _fields_ = [('reserved', ctypes.c_char * IPC_HANDLE_SIZE)]


def handle_to_bytes(handle):
    """The 64 bytes of an IpcHandle, zero bytes included."""
    return ctypes.string_at(ctypes.addressof(handle), ctypes.sizeof(handle))


def handle_from_bytes(raw):
    """An IpcHandle holding exactly the 64 bytes ``raw``."""
    raw = bytes(raw)
    if len(raw) != IPC_HANDLE_SIZE:
        raise CudaError('an IPC handle has %d bytes, got %d' % (IPC_HANDLE_SIZE, len(raw)))
    handle = IpcHandle()
    ctypes.memmove(ctypes.addressof(handle), raw, IPC_HANDLE_SIZE)
    return handle


class Cudart(object):
    """The few CUDA runtime calls the test needs, through ctypes."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.lib.cudaGetErrorString.restype = ctypes.c_char_p
        self.lib.cudaGetErrorString.argtypes = [ctypes.c_int]
        self.lib.cudaIpcOpenMemHandle.argtypes = [ctypes.POINTER(ctypes.c_void_p), IpcHandle, ctypes.c_uint]
        self.lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
        self.lib.cudaMemset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
        self.lib.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        self.lib.cudaFree.argtypes = [ctypes.c_void_p]
        self.lib.cudaIpcCloseMemHandle.argtypes = [ctypes.c_void_p]
        self.lib.cudaIpcGetMemHandle.argtypes = [ctypes.POINTER(IpcHandle), ctypes.c_void_p]

    def _check(self, code, call):
        if code != 0:
            text = self.lib.cudaGetErrorString(code)
            raise CudaError('%s failed: %s (%d)' % (call, text.decode() if text else 'unknown error', code))

    def version(self, name):
        value = ctypes.c_int()
        self._check(getattr(self.lib, name)(ctypes.byref(value)), name)
        return value.value

    def device_count(self):
        return self.version('cudaGetDeviceCount')

    def device_by_bus_id(self, bus_id):
        value = ctypes.c_int()
        self._check(self.lib.cudaDeviceGetByPCIBusId(ctypes.byref(value), bus_id.encode()),
                    'cudaDeviceGetByPCIBusId(%s)' % bus_id)
        return value.value

    def set_device(self, device):
        self._check(self.lib.cudaSetDevice(device), 'cudaSetDevice(%d)' % device)

    def can_access_peer(self, device, peer):
        value = ctypes.c_int()
        self._check(self.lib.cudaDeviceCanAccessPeer(ctypes.byref(value), device, peer), 'cudaDeviceCanAccessPeer')
        return bool(value.value)

    def malloc(self, size):
        pointer = ctypes.c_void_p()
        self._check(self.lib.cudaMalloc(ctypes.byref(pointer), size), 'cudaMalloc')
        return pointer

    def free(self, pointer):
        self._check(self.lib.cudaFree(pointer), 'cudaFree')

    def memset(self, pointer, value, size):
        self._check(self.lib.cudaMemset(pointer, value, size), 'cudaMemset')

    def synchronize(self):
        self._check(self.lib.cudaDeviceSynchronize(), 'cudaDeviceSynchronize')

    def read(self, pointer, size):
        buffer = ctypes.create_string_buffer(size)
        self._check(self.lib.cudaMemcpy(buffer, pointer, size, MEMCPY_DEVICE_TO_HOST), 'cudaMemcpy')
        return buffer.raw

    def ipc_handle(self, pointer):
        handle = IpcHandle()
        self._check(self.lib.cudaIpcGetMemHandle(ctypes.byref(handle), pointer), 'cudaIpcGetMemHandle')
        return handle_to_bytes(handle)

    def ipc_open(self, raw):
        handle = handle_from_bytes(raw)
        pointer = ctypes.c_void_p()
        self._check(self.lib.cudaIpcOpenMemHandle(ctypes.byref(pointer), handle, IPC_LAZY_ENABLE_PEER_ACCESS),
                    'cudaIpcOpenMemHandle')
        return pointer

    def ipc_close(self, pointer):
        self._check(self.lib.cudaIpcCloseMemHandle(pointer), 'cudaIpcCloseMemHandle')


def find_cudart(maps_path='/proc/self/maps'):
    """Path of the CUDA runtime library: the one torch loaded, else the usual install places."""
    try:
        import torch  # noqa: F401  pylint: disable=unused-import,import-outside-toplevel
    except Exception:  # pylint: disable=broad-except
        pass
    try:
        with open(maps_path) as handle:
            for line in handle:
                path = line.split()[-1] if line.split() else ''
                if os.path.basename(path).startswith('libcudart.so'):
                    return path
    except (IOError, OSError):
        pass
    candidates = []
    for entry in sys.path:
        # CUDA 13 wheels put the runtime in nvidia/cu13/lib, CUDA 12 wheels in nvidia/cuda_runtime/lib.
        for folder in ('cu[0-9]*', 'cuda_runtime'):
            candidates += sorted(glob.glob(os.path.join(entry, 'nvidia', folder, 'lib', 'libcudart.so*')))
    found = ctypes.util.find_library('cudart')
    if found:
        candidates.append(found)
    candidates += ['libcudart.so', 'libcudart.so.13', 'libcudart.so.12', 'libcudart.so.11.0']
    for candidate in candidates:
        try:
            ctypes.CDLL(candidate)
        except OSError:
            continue
        return candidate
    return None


def _torch_version():
    try:
        import torch  # pylint: disable=import-outside-toplevel
    except Exception:  # pylint: disable=broad-except
        return None
    return getattr(torch, '__version__', None)


def pattern_ok(data, pattern):
    """True when every byte of ``data`` equals ``pattern``; else a short description of the first mismatch."""
    expected = bytes([pattern])
    if data.count(expected) == len(data):
        return True, ''
    first = next(index for index, byte in enumerate(bytearray(data)) if byte != pattern)
    return False, '%d of %d bytes differ, first at offset %d (0x%02x instead of 0x%02x)' % (
        len(data) - data.count(expected), len(data), first, bytearray(data)[first], pattern)


def owner_main(lib_path, bus_id, size, conn):
    """Process on the destination GPU: allocate, fill, export, then check what the writer left."""
    try:
        rt = Cudart(lib_path)
        rt.set_device(rt.device_by_bus_id(bus_id))
        pointer = rt.malloc(size)
        rt.memset(pointer, OWNER_PATTERN, size)
        rt.synchronize()
        conn.send(('handle', rt.ipc_handle(pointer)))
        message = conn.recv()
        if message[0] == 'check':
            ok, detail = pattern_ok(rt.read(pointer, size), WRITER_PATTERN)
            conn.send(('checked', ok, detail and 'owner side: ' + detail))
        rt.free(pointer)
    except CudaError as exc:
        conn.send(('error', 'owner %s: %s' % (bus_id, exc)))
    conn.close()


def writer_main(lib_path, bus_id, peer_bus_id, size, conn):
    """Process on the source GPU: open the peer buffer, write it, read it back."""
    try:
        rt = Cudart(lib_path)
        device = rt.device_by_bus_id(bus_id)
        rt.set_device(device)
        # Same GPU (the one-GPU IPC test): peer access is a question between two GPUs, not asked here.
        peer = rt.device_by_bus_id(peer_bus_id)
        can_access = rt.can_access_peer(device, peer) if peer != device else None
        message = conn.recv()
        if message[0] != 'handle':
            conn.close()
            return
        try:
            pointer = rt.ipc_open(message[1])
        except CudaError as exc:
            conn.send(('open_failed', str(exc), can_access))
            conn.close()
            return
        rt.memset(pointer, WRITER_PATTERN, size)
        rt.synchronize()
        ok, detail = pattern_ok(rt.read(pointer, size), WRITER_PATTERN)
        conn.send(('written', ok, detail and 'writer side: ' + detail, can_access))
        conn.recv()  # wait until the owner has checked before unmapping
        rt.ipc_close(pointer)
    except CudaError as exc:
        conn.send(('error', 'writer %s: %s' % (bus_id, exc), None))
    except EOFError:
        pass
    conn.close()


def _receive(conn, deadline, what):
    remaining = deadline - time.monotonic()
    if remaining <= 0 or not conn.poll(remaining):
        raise TimeoutError('timed out waiting for %s' % what)
    return conn.recv()


def _stop(processes):
    for process in processes:
        process.join(2)
    for process in processes:
        if process.is_alive():
            process.terminate()
            process.join(5)
        if process.is_alive():
            process.kill()
            process.join(5)


def run_pair(context, lib_path, src, dst, size, timeout, owner=owner_main, writer=writer_main):
    """Test SRC->DST; return the pair result dict."""
    started = time.monotonic()
    deadline = started + timeout
    owner_conn, owner_child = context.Pipe()
    writer_conn, writer_child = context.Pipe()
    processes = [context.Process(target=owner, args=(lib_path, dst, size, owner_child)),
                 context.Process(target=writer, args=(lib_path, src, dst, size, writer_child))]
    for process in processes:
        process.start()
    result = {'src': src, 'dst': dst, 'kind': 'ipc' if src == dst else 'p2p', 'ok': False, 'can_access_peer': None,
              'detail': ''}
    try:
        message = _receive(owner_conn, deadline, 'the owner on %s' % dst)
        if message[0] != 'handle':
            result['detail'] = message[1]
            writer_conn.send(('abort', None))
            return result
        writer_conn.send(('handle', message[1]))
        message = _receive(writer_conn, deadline, 'the peer write from %s' % src)
        result['can_access_peer'] = message[-1]
        if message[0] == 'open_failed':
            result['detail'] = 'peer mapping failed: %s' % message[1]
            owner_conn.send(('abort',))
            return result
        if message[0] == 'error':
            result['detail'] = message[1]
            owner_conn.send(('abort',))
            return result
        writer_ok, writer_detail = message[1], message[2]
        owner_conn.send(('check',))
        message = _receive(owner_conn, deadline, 'the owner check on %s' % dst)
        writer_conn.send(('done',))
        if message[0] == 'error':
            result['detail'] = message[1]
            return result
        owner_ok, owner_detail = message[1], message[2]
        result['ok'] = bool(writer_ok and owner_ok)
        result['detail'] = '; '.join(part for part in (writer_detail, owner_detail) if part)
        return result
    except TimeoutError as exc:
        result['detail'] = '%s after %ss (P2P hang?)' % (exc, timeout)
        return result
    except (EOFError, OSError) as exc:
        result['detail'] = 'a test process died: %s' % exc
        return result
    finally:
        _stop(processes)
        result['seconds'] = round(time.monotonic() - started, 3)


def parse_args(argv):
    parser = argparse.ArgumentParser(description='Per-pair GPU P2P write/read-back test.')
    parser.add_argument('--devices', required=True,
                        help='comma-separated PCI addresses of the GPUs (dddd:bb:dd.f); with one GPU the '
                             'two-process CUDA IPC path on that GPU is tested')
    parser.add_argument('--size', type=int, default=32 * 1024 * 1024, help='bytes per test buffer (default 32 MiB)')
    parser.add_argument('--timeout', type=float, default=60.0, help='seconds per pair before it counts as hung')
    args = parser.parse_args(argv)
    devices = [item.strip().lower() for item in args.devices.split(',') if item.strip()]
    if not devices or len(set(devices)) != len(devices):
        parser.error('--devices needs one or more different PCI addresses')
    if args.size <= 0 or args.timeout <= 0:
        parser.error('--size and --timeout must be positive')
    args.devices = devices
    return args


def main(argv=None, context=None, stdout=None):
    stdout = stdout or sys.stdout
    args = parse_args(argv)
    result = {'version': RESULT_VERSION, 'tool': 'p2p_check', 'size': args.size, 'timeout': args.timeout,
              'torch': _torch_version(), 'devices': [], 'pairs': []}
    os.environ.setdefault('CUDA_DEVICE_ORDER', 'PCI_BUS_ID')
    lib_path = os.environ.get(CUDART_ENV, '')
    result['cudart_source'] = CUDART_ENV if lib_path else 'search'
    lib_path = lib_path or find_cudart()
    result['cudart'] = lib_path
    if lib_path is None:
        result['error'] = ('no CUDA runtime library (libcudart) found; run this with the Python of the SGLang/torch '
                           'environment or name the library in %s' % CUDART_ENV)
        stdout.write(json.dumps(result) + '\n')
        return 2
    try:
        try:
            runtime = Cudart(lib_path)
        except OSError as exc:
            if result['cudart_source'] == CUDART_ENV:
                raise OSError('%s=%s cannot be loaded: %s' % (CUDART_ENV, lib_path, exc))
            raise
        result['runtime_version'] = runtime.version('cudaRuntimeGetVersion')
        result['driver_version'] = runtime.version('cudaDriverGetVersion')
        for address in args.devices:
            result['devices'].append({'pci_address': address, 'cuda_device': runtime.device_by_bus_id(address)})
    except (CudaError, OSError) as exc:
        result['error'] = str(exc)
        stdout.write(json.dumps(result) + '\n')
        return 2
    context = context or multiprocessing.get_context('spawn')
    for src in args.devices:
        for dst in args.devices:
            if src != dst or len(args.devices) == 1:
                result['pairs'].append(run_pair(context, lib_path, src, dst, args.size, args.timeout))
    stdout.write(json.dumps(result) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
