# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""GPU peer-to-peer (P2P) results: parse what the tools print and decide per GPU pair.

Inputs, all optional:

* ``nvidia-smi topo -p2p r``: the driver's *capability* matrix (``OK``, ``CNS``, ``GNS``, ``TNS``,
  ``NS``, ``DR``, ``U``), indexed by nvidia-smi GPU numbers;
* ``nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader``: maps those numbers to PCI
  addresses (a GPU that failed to initialise is missing from nvidia-smi, so its numbering cannot be
  derived from sysfs);
* the JSON printed by the role's ``p2p_check.py``: a *functional* write-and-read-back result for every
  ordered pair of GPUs; with a single GPU, the pair GPU->GPU (kind ``ipc``): the same write and read-back
  between two processes on that one GPU through CUDA IPC, which SGLang's processes rely on.

A pair is good when the functional test passed; without a functional result the driver's ``OK`` is
taken as a (weaker) hint, and with neither the pair is unknown.  ``OK`` in the capability matrix is not
proof that P2P works under IOMMU translation, which is why the functional test exists.

Standard library only.
"""

from __future__ import annotations

import itertools
import json
import re

from ansible_collections.llmserve.sglang.plugins.module_utils.pci import normalize_pci_address

TOPOLOGY_STATUS = {
    'OK': 'status OK',
    'CNS': 'chipset not supported',
    'GNS': 'GPU not supported',
    'TNS': 'topology not supported',
    'NS': 'not supported',
    'DR': 'disabled by regkey',
    'U': 'unknown',
}

_GPU_LABEL = re.compile(r'^GPU(\d+)$')
_MAX_GROUP_SEARCH = 12


class P2PParseError(ValueError):
    """Raised when a tool output cannot be understood."""


def pair_key(src, dst):
    return '%s->%s' % (src, dst)


def parse_topo_p2p(text):
    """Parse ``nvidia-smi topo -p2p <mode>`` output into ``{(row_index, col_index): status}``.

    Diagonal cells (``X``) are left out.  Raises :class:`P2PParseError` when no matrix is found.
    """
    columns = None
    cells = {}
    for line in (text or '').splitlines():
        tokens = line.split()
        if not tokens:
            continue
        if tokens[0].rstrip(':') == 'Legend':
            break
        if all(_GPU_LABEL.match(token) for token in tokens):
            columns = [int(_GPU_LABEL.match(token).group(1)) for token in tokens]
            continue
        row = _GPU_LABEL.match(tokens[0])
        if row is None or columns is None:
            continue
        values = tokens[1:1 + len(columns)]
        if len(values) != len(columns):
            raise P2PParseError('row %s has %d cells, expected %d' % (tokens[0], len(values), len(columns)))
        for column, value in zip(columns, values):
            if value != 'X':
                cells[(int(row.group(1)), column)] = value
    if columns is None:
        raise P2PParseError('no GPU header line found in the nvidia-smi topo -p2p output')
    return cells


def parse_query_gpus(text):
    """Parse ``nvidia-smi --query-gpu=index,pci.bus_id --format=csv[,noheader]`` into ``{index: address}``."""
    mapping = {}
    for line in (text or '').splitlines():
        parts = [part.strip() for part in line.split(',')]
        if len(parts) < 2 or not parts[0].isdigit():
            continue
        address = normalize_pci_address(parts[1])
        if address is None:
            raise P2PParseError('cannot read the PCI bus id %r of GPU %s' % (parts[1], parts[0]))
        mapping[int(parts[0])] = address
    return mapping


def _last_json_object(text):
    """The JSON object in ``text``; with other output around it (warnings, a TTY merging stderr), the last
    line that is a JSON object."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith('{') and line.endswith('}'):
            try:
                return json.loads(line)
            except ValueError:
                continue
    raise P2PParseError('the P2P test printed no JSON result')


def parse_p2p_check(data):
    """Validate the output of ``p2p_check.py`` (a JSON text or an already decoded dict).

    Returns ``{(src, dst): {'ok': bool, 'detail': str, 'can_access_peer': bool|None, 'kind': 'p2p'|'ipc'}}``
    keyed by PCI addresses (``src == dst`` for the one-GPU IPC test).  Raises :class:`P2PParseError` on
    anything that is not such a result.
    """
    if isinstance(data, bytes):
        data = data.decode('utf-8', 'replace')
    if isinstance(data, str):
        data = _last_json_object(data)
    if not isinstance(data, dict):
        raise P2PParseError('the P2P test result is not a JSON object')
    if data.get('error'):
        raise P2PParseError('the P2P test could not run: %s' % data['error'])
    if not isinstance(data.get('pairs'), list):
        raise P2PParseError('the P2P test result has no "pairs" list')
    results = {}
    for entry in data['pairs']:
        if not isinstance(entry, dict):
            raise P2PParseError('a P2P pair entry is not an object: %r' % (entry,))
        src = normalize_pci_address(entry.get('src'))
        dst = normalize_pci_address(entry.get('dst'))
        if src is None or dst is None or not isinstance(entry.get('ok'), bool):
            raise P2PParseError('a P2P pair entry needs "src", "dst" (PCI addresses) and "ok" (boolean): %r'
                                % (entry,))
        kind = 'ipc' if src == dst else 'p2p'
        if entry.get('kind', kind) != kind:
            raise P2PParseError('a P2P pair entry with %s has "kind" %r, expected %r: %r'
                                % ('src == dst' if src == dst else 'src != dst', entry.get('kind'), kind, entry))
        peer = entry.get('can_access_peer')
        results[(src, dst)] = {
            'ok': entry['ok'],
            'detail': str(entry.get('detail') or ''),
            'can_access_peer': peer if isinstance(peer, bool) else None,
            'kind': kind,
        }
    return results


def _largest_group(addresses, good):
    """Largest set of GPUs whose every ordered pair is good and none of which failed the IPC test (ties: first
    in PCI order)."""
    if len(addresses) > _MAX_GROUP_SEARCH:
        return None
    usable = [address for address in addresses if good.get((address, address)) is not False]
    for size in range(len(usable), 0, -1):
        for combo in itertools.combinations(usable, size):
            if all(good.get((a, b)) is True for a in combo for b in combo if a != b):
                return list(combo)
    return []


def build_matrix(gpus, topology=None, index_map=None, functional=None, skipped=None):
    """Decide P2P per ordered pair of ``gpus`` (a list of PCI addresses).

    ``topology`` is :func:`parse_topo_p2p` output, ``index_map`` :func:`parse_query_gpus` output (needed
    to place topology cells; without it the topology is ignored), ``functional`` :func:`parse_p2p_check`
    output.  ``skipped`` is the reason why a requested functional test did not run (check mode): every pair
    is then unknown (not passed), also the IPC pair of a single GPU.  Returns a dict:

    * ``gpus``: the normalised addresses;
    * ``tested``: whether a functional result was given; ``topology_read``: whether a topology was used;
      ``skipped``: the reason given, or ``None``;
    * ``pairs``: ``{"src->dst": {src, dst, kind, topology, functional, ok, detail}}``; ``kind`` is ``p2p``
      for two GPUs and ``ipc`` for ``src == dst``, the two-process CUDA IPC test of a single GPU (present
      when a functional result has it, or with one GPU when the test ran or was skipped);
    * ``bad_pairs`` / ``unknown_pairs``: keys of pairs that failed / could not be decided;
    * ``ipc_failed``: GPUs whose two-process IPC test failed;
    * ``ok``: ``True`` when every pair is good (also with one GPU and no IPC test asked for, or no GPU),
      ``False`` when any pair is bad, ``None`` when some pair is unknown and none is bad;
    * ``largest_p2p_group``: the largest set of GPUs in which every pair is good and no GPU failed its IPC
      test (``None`` above 12 GPUs).
    """
    addresses = []
    for gpu in gpus:
        address = normalize_pci_address(gpu)
        if address is None:
            raise P2PParseError('%r is not a PCI address' % (gpu,))
        if address not in addresses:
            addresses.append(address)
    index_of = {}
    if topology is not None and index_map:
        index_of = dict((address, index) for index, address in index_map.items())
    tested = functional is not None and not skipped
    functional = (functional or {}) if not skipped else {}
    single_ipc = len(addresses) == 1 and (tested or bool(skipped))
    pairs = {}
    bad = []
    unknown = []
    ipc_failed = []
    good = {}
    for src in addresses:
        for dst in addresses:
            if src == dst and not (single_ipc or (src, dst) in functional):
                continue
            status = None
            if src != dst and src in index_of and dst in index_of:
                status = topology.get((index_of[src], index_of[dst]))
            result = functional.get((src, dst))
            details = []
            if result is not None:
                ok = result['ok']
                if not ok and src == dst:
                    details.append('CUDA IPC between two processes on this GPU failed')
                if result['detail']:
                    details.append(result['detail'])
                if not ok and status == 'OK':
                    details.append('the driver reports P2P as supported, but the write/read-back test failed')
            elif skipped:
                ok = None
                details.append('not tested: %s' % skipped)
            elif status is not None:
                ok = status == 'OK'
                details.append('driver capability only: %s' % TOPOLOGY_STATUS.get(status, status))
            else:
                ok = None
                details.append('not tested')
            key = pair_key(src, dst)
            pairs[key] = {
                'src': src,
                'dst': dst,
                'kind': 'ipc' if src == dst else 'p2p',
                'topology': status,
                'functional': result['ok'] if result is not None else None,
                'ok': ok,
                'detail': '; '.join(details),
            }
            good[(src, dst)] = ok
            if ok is False:
                bad.append(key)
                if src == dst:
                    ipc_failed.append(src)
            elif ok is None:
                unknown.append(key)
    if bad:
        overall = False
    elif unknown:
        overall = None
    else:
        overall = True
    return {
        'gpus': addresses,
        'tested': tested,
        'topology_read': bool(index_of),
        'skipped': skipped or None,
        'pairs': pairs,
        'bad_pairs': bad,
        'unknown_pairs': unknown,
        'ipc_failed': ipc_failed,
        'ok': overall,
        'largest_p2p_group': _largest_group(addresses, good),
    }
