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
  ordered pair of GPUs.

A pair is good when the functional test passed; without a functional result the driver's ``OK`` is
taken as a (weaker) hint, and with neither the pair is unknown.  ``OK`` in the capability matrix is not
proof that P2P works under IOMMU translation, which is why the functional test exists.

Standard library only.
"""

from __future__ import annotations

import itertools
import json
import re

from ansible_collections.llmserve.sglang.plugins.module_utils.gpu_sysfs import normalize_pci_address

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

    Returns ``{(src, dst): {'ok': bool, 'detail': str, 'can_access_peer': bool|None}}`` keyed by PCI
    addresses.  Raises :class:`P2PParseError` on anything that is not such a result.
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
        peer = entry.get('can_access_peer')
        results[(src, dst)] = {
            'ok': entry['ok'],
            'detail': str(entry.get('detail') or ''),
            'can_access_peer': peer if isinstance(peer, bool) else None,
        }
    return results


def _largest_group(addresses, good):
    """Largest set of GPUs whose every ordered pair is good (ties: first in PCI order)."""
    if len(addresses) > _MAX_GROUP_SEARCH:
        return None
    for size in range(len(addresses), 0, -1):
        for combo in itertools.combinations(addresses, size):
            if all(good.get((a, b)) is True for a in combo for b in combo if a != b):
                return list(combo)
    return []


def build_matrix(gpus, topology=None, index_map=None, functional=None):
    """Decide P2P per ordered pair of ``gpus`` (a list of PCI addresses).

    ``topology`` is :func:`parse_topo_p2p` output, ``index_map`` :func:`parse_query_gpus` output (needed
    to place topology cells; without it the topology is ignored), ``functional`` :func:`parse_p2p_check`
    output.  Returns a dict:

    * ``gpus``: the normalised addresses;
    * ``tested``: whether a functional result was given; ``topology_read``: whether a topology was used;
    * ``pairs``: ``{"src->dst": {src, dst, topology, functional, ok, detail}}``;
    * ``bad_pairs`` / ``unknown_pairs``: keys of pairs that failed / could not be decided;
    * ``ok``: ``True`` when every pair is good (also when there are fewer than two GPUs), ``False`` when
      any pair is bad, ``None`` when some pair is unknown and none is bad;
    * ``largest_p2p_group``: the largest set of GPUs in which every pair is good (``None`` above 12 GPUs).
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
    tested = functional is not None
    functional = functional or {}
    pairs = {}
    bad = []
    unknown = []
    good = {}
    for src in addresses:
        for dst in addresses:
            if src == dst:
                continue
            status = None
            if src in index_of and dst in index_of:
                status = topology.get((index_of[src], index_of[dst]))
            result = functional.get((src, dst))
            details = []
            if result is not None:
                ok = result['ok']
                if result['detail']:
                    details.append(result['detail'])
                if not ok and status == 'OK':
                    details.append('the driver reports P2P as supported, but the write/read-back test failed')
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
                'topology': status,
                'functional': result['ok'] if result is not None else None,
                'ok': ok,
                'detail': '; '.join(details),
            }
            good[(src, dst)] = ok
            if ok is False:
                bad.append(key)
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
        'pairs': pairs,
        'bad_pairs': bad,
        'unknown_pairs': unknown,
        'ok': overall,
        'largest_p2p_group': _largest_group(addresses, good),
    }
