# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Helpers for running the shipped p2p_check.py against the stand-in CUDA runtime (tools/standin/cudart).

The stand-in is compiled once per session with the system C compiler (``$CC`` or ``cc``); without a compiler
these tests skip. It is installed three times in a temporary directory:

* ``lib/libcudart-standin.so``: what the tests pass in ``LLMSERVE_CUDART``;
* ``site-cu13/nvidia/cu13/lib/libcudart.so.13``: the layout of CUDA 13 wheels;
* ``site-cu12/nvidia/cuda_runtime/lib/libcudart.so.12``: the layout of CUDA 12 wheels, always on ``PYTHONPATH`` of
  the runs, so a p2p_check.py that does not know ``LLMSERVE_CUDART`` (the one before it existed) still loads the
  stand-in and the same tests show how it fails. ``LLMSERVE_P2P_CHECK_SCRIPT=/path/to/p2p_check.py`` runs the
  tests against another copy of the script.

Every run gets its own shared memory prefix; what a run leaves in /dev/shm is reported and removed.
"""

from __future__ import annotations

import glob
import itertools
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
SOURCE = os.path.join(ROOT, 'tools', 'standin', 'cudart', 'cudart_standin.c')
SCRIPT = os.environ.get('LLMSERVE_P2P_CHECK_SCRIPT') or os.path.join(
    ROOT, 'roles', 'iommu_preflight', 'files', 'p2p_check.py')
GPUS = ['0000:01:00.0', '0000:41:00.0', '0000:81:00.0']
SHM = '/dev/shm'
_COUNTER = itertools.count()


class Standin(object):
    """The built stand-in: where its copies are, and how to run p2p_check.py with it."""

    def __init__(self, directory):
        self.directory = directory
        self.lib = os.path.join(directory, 'lib', 'libcudart-standin.so')
        self.site_cu13 = os.path.join(directory, 'site-cu13')
        self.cu13_lib = os.path.join(self.site_cu13, 'nvidia', 'cu13', 'lib', 'libcudart.so.13')
        self.site_cu12 = os.path.join(directory, 'site-cu12')
        self.cu12_lib = os.path.join(self.site_cu12, 'nvidia', 'cuda_runtime', 'lib', 'libcudart.so.12')
        self.prefix = 'cst%x%x' % (os.getpid() & 0xffff, next(_COUNTER))

    def env(self, gpus=None, cudart='lib', pythonpath=None, **standin):
        """Environment of one run: ``cudart`` is ``'lib'`` (LLMSERVE_CUDART = the stand-in), a path, or None
        (unset); ``standin`` holds CUDART_STANDIN_* settings by suffix (drop='1>2')."""
        env = dict((key, value) for key, value in os.environ.items()
                   if not key.startswith('CUDART_STANDIN_') and key not in ('LLMSERVE_CUDART', 'PYTHONPATH'))
        env['CUDART_STANDIN_GPUS'] = ','.join(GPUS if gpus is None else gpus)
        env['CUDART_STANDIN_SHM_PREFIX'] = self.prefix
        for key, value in standin.items():
            env['CUDART_STANDIN_' + key.upper()] = value
        if cudart is not None:
            env['LLMSERVE_CUDART'] = self.lib if cudart == 'lib' else cudart
        env['PYTHONPATH'] = os.pathsep.join(pythonpath or [self.site_cu12])
        return env

    def run(self, devices, size=4096, timeout=20, check_rc=0, **env):
        """Run the shipped script as a process; returns its decoded JSON."""
        argv = [sys.executable, SCRIPT, '--devices', ','.join(devices), '--size', str(size), '--timeout', str(timeout)]
        done = subprocess.run(argv, env=self.env(**env), capture_output=True, text=True, timeout=300, cwd=self.directory,
                              check=False)
        assert done.returncode == check_rc, 'rc %s\nstdout: %s\nstderr: %s' % (done.returncode, done.stdout,
                                                                               done.stderr)
        return json.loads(done.stdout)

    def leftovers(self):
        return sorted(glob.glob(os.path.join(SHM, self.prefix + '-*')))

    def clean(self):
        for path in self.leftovers():
            os.unlink(path)


def build_standin(tmp_path_factory):
    """Compile the stand-in into a new temporary directory and install its three copies; returns the directory.
    Skips (pytest.skip) when there is no C compiler or no /dev/shm."""
    compiler = shutil.which(os.environ.get('CC') or 'cc')
    if compiler is None:
        pytest.skip('no C compiler (cc or $CC) to build the stand-in CUDA runtime of tools/standin/cudart')
    if not os.path.isdir(SHM):
        pytest.skip('no %s for the POSIX shared memory of the stand-in CUDA runtime' % SHM)
    directory = str(tmp_path_factory.mktemp('cudart-standin'))
    built = os.path.join(directory, 'libcudart-standin.so')
    done = subprocess.run([compiler, '-std=c11', '-shared', '-fPIC', '-O2', '-Wall', '-Wextra', '-Werror',
                           '-fvisibility=hidden', '-o', built, SOURCE, '-lrt'],
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, 'the stand-in does not build:\n' + done.stderr
    standin = Standin(directory)
    for target in (standin.lib, standin.cu13_lib, standin.cu12_lib):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy(built, target)
    return directory
