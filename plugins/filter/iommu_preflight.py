# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Jinja filters of the iommu_preflight role; the logic lives in plugin_utils (preflight_rules, p2p)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

# Helpers are imported inside the filters: Ansible imports every filter file of the collection to find any one
# filter, in each worker process, so an import up here would be paid by every task that uses any of them.


def iommu_preflight_evaluate(gpu_host, gpus=None, require_iommu=False, dma_faults='fail',
                             identity_forbidden_architectures=None, disable_identity_units=False,
                             fatal_xids=None, require_gpu=True, next_boot='ignore', next_boot_options_file=None):
    """``ansible_facts['gpu_host']`` -> ``{errors, warnings, selected, units_to_disable, reboot_required, report}``."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.preflight_rules import (
        DEFAULT_FATAL_XIDS,
        DEFAULT_FORBIDDEN_ARCHITECTURES,
        evaluate,
    )

    if not isinstance(gpu_host, dict):
        raise AnsibleFilterError('iommu_preflight_evaluate: expected the gpu_host facts dictionary, got %s'
                                 % type(gpu_host).__name__)
    if gpus is not None and not isinstance(gpus, (list, tuple)):
        raise AnsibleFilterError('iommu_preflight_evaluate: iommu_preflight_gpus must be a list of PCI addresses or '
                                 'indexes, got %r' % (gpus,))
    forbidden = identity_forbidden_architectures
    if forbidden is None:
        forbidden = DEFAULT_FORBIDDEN_ARCHITECTURES
    if fatal_xids is None:
        fatal_xids = DEFAULT_FATAL_XIDS
    if not isinstance(fatal_xids, (list, tuple)):
        raise AnsibleFilterError('iommu_preflight_evaluate: iommu_preflight_fatal_xids must be a list of Xid codes, '
                                 'got %r' % (fatal_xids,))
    try:
        return evaluate(gpu_host, selection=list(gpus or []), require_iommu=bool(require_iommu),
                        dma_faults=dma_faults, identity_forbidden_architectures=list(forbidden),
                        disable_identity_units=bool(disable_identity_units), fatal_xids=list(fatal_xids),
                        require_gpu=bool(require_gpu), next_boot=next_boot,
                        next_boot_options_file=next_boot_options_file)
    except ValueError as exc:
        raise AnsibleFilterError('iommu_preflight_evaluate: %s' % exc)


def iommu_preflight_next_boot(gpu_host, identity_forbidden_architectures=None, own_options_file=None):
    """``ansible_facts['gpu_host']`` -> the next-boot verdict ``{verdict, errors, warnings, findings, summary}``."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.next_boot_rules import (
        DEFAULT_OWN_OPTIONS_FILE,
        evaluate_next_boot,
    )
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.preflight_rules import DEFAULT_FORBIDDEN_ARCHITECTURES

    if not isinstance(gpu_host, dict):
        raise AnsibleFilterError('iommu_preflight_next_boot: expected the gpu_host facts dictionary, got %s'
                                 % type(gpu_host).__name__)
    forbidden = identity_forbidden_architectures
    if forbidden is None:
        forbidden = DEFAULT_FORBIDDEN_ARCHITECTURES
    return evaluate_next_boot(gpu_host, identity_forbidden_architectures=list(forbidden),
                              own_options_file=own_options_file or DEFAULT_OWN_OPTIONS_FILE)


def p2p_matrix(gpus, topology=None, query=None, functional=None, skipped=None):
    """GPU list + recorded tool outputs -> per-pair P2P matrix and decision (see plugin_utils.p2p)."""
    from ansible_collections.llmserve.sglang.plugins.plugin_utils import p2p

    addresses = []
    for gpu in gpus or []:
        addresses.append(gpu.get('pci_address') if isinstance(gpu, dict) else gpu)
    if skipped is not None and not isinstance(skipped, str):
        raise AnsibleFilterError('p2p_matrix: skipped must be a string (why the requested test did not run), got %r'
                                 % (skipped,))
    try:
        cells = p2p.parse_topo_p2p(topology) if topology else None
        index_map = p2p.parse_query_gpus(query) if query else None
        results = p2p.parse_p2p_check(functional) if functional and not skipped else None
        return p2p.build_matrix(addresses, topology=cells, index_map=index_map, functional=results,
                                skipped=skipped or None)
    except p2p.P2PParseError as exc:
        raise AnsibleFilterError('p2p_matrix: %s' % exc)


class FilterModule(object):
    """IOMMU preflight filters."""

    def filters(self):
        return {
            'iommu_preflight_evaluate': iommu_preflight_evaluate,
            'iommu_preflight_next_boot': iommu_preflight_next_boot,
            'p2p_matrix': p2p_matrix,
        }
