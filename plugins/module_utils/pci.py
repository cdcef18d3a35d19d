# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""PCI addresses in the one form every part of the collection compares: ``dddd:bb:dd.f``, lower case.

Shared by the host-side readers (gpu_sysfs, dma_faults) and the controller's rules (P2P matrix, preflight).
Standard library only (runs on managed hosts, Python 3.9+).
"""

from __future__ import annotations

import re

_BDF_RE = re.compile(
    r'^(?:(?P<domain>[0-9a-fA-F]{4,8}):)?(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})(?:\.(?P<fn>[0-7]))?$'
)


def normalize_pci_address(text):
    """Return ``dddd:bb:dd.f`` (lower case) for a PCI address, or ``None`` if ``text`` is not one.

    Accepts the sysfs form (``0000:01:00.0``), the short form without a domain (``01:00.0``, domain 0),
    nvidia-smi's 8-digit domain (``00000000:C1:00.0``) and the NVRM Xid form without a function
    (``0000:81:00``, function 0).
    """
    if text is None:
        return None
    match = _BDF_RE.match(str(text).strip())
    if not match:
        return None
    domain = match.group('domain') or '0000'
    if len(domain) > 4:
        if int(domain[:-4], 16) != 0:
            return None
        domain = domain[-4:]
    return '%s:%s:%s.%s' % (domain.lower(), match.group('bus').lower(), match.group('dev').lower(),
                            match.group('fn') or '0')
