# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""nftables rules that open a multi-node server's rendezvous to the nodes of its group alone (controller side).

SGLang's rendezvous (torch's TCP store on ``--dist-init-addr``'s port, bound on every address of rank 0), the
ports data-parallel attention derives from it, and the key-less health server of the other ranks answer anyone
who reaches them. systemd's ``IPAddressAllow=``/``IPAddressDeny=`` cannot narrow that down: they filter all IP
traffic of the unit by address, the HTTP API's clients and the model download included, with no notion of a
port. So the unit loads one nftables table of its own before SGLang starts (``ExecStartPre=+nft ...``): an
input chain that accepts loopback, accepts the listed sources on the guarded TCP ports and rejects every other
connection to those ports with a TCP reset. Every other port, the API's among them, is left alone, and so is
every other table: with ``policy accept`` the chain only ever adds refusals. The whole script is one nft
transaction (the table is created when missing, deleted, and written anew), so a restart replaces the rules
atomically and never stacks them.

``table_name(unit_name) -> str``
    ``llmserve_<unit>``, with every character nft would not take in a name written ``_``.
``rules(table, ports, sources) -> str``
    the one-line nft script that (re)loads the table; ``ports`` are ``"N"`` or ``"N-M"`` strings, ``sources``
    IPv4/IPv6 addresses or networks.
``removal(table) -> str``
    the nft script that removes the table and succeeds whether it exists or not.
``firewall_lines(node_firewall, unit_name) -> dict``
    ``{table, load, remove}`` for the unit: ``load`` is ``rules(...)`` when the firewall is enabled, else None.
"""

from __future__ import annotations

import re

_PORT = re.compile(r"([0-9]{1,5})(?:-([0-9]{1,5}))?")
_SOURCE = re.compile(r"[0-9A-Fa-f.:]+(?:/[0-9]{1,3})?")


class FirewallError(ValueError):
    """Input the rules cannot be written from."""


def table_name(unit_name):
    if not isinstance(unit_name, str) or not unit_name:
        raise FirewallError("unit_name must be a non-empty string, got %r" % (unit_name,))
    return "llmserve_" + re.sub(r"[^A-Za-z0-9_]", "_", unit_name)


def _ports(ports):
    if not isinstance(ports, (list, tuple)) or not ports:
        raise FirewallError("ports must be a non-empty list, got %r" % (ports,))
    result = []
    for port in ports:
        match = _PORT.fullmatch(str(port))
        numbers = [int(n) for n in match.groups() if n is not None] if match else []
        if not numbers or not all(1 <= n <= 65535 for n in numbers) or numbers != sorted(numbers):
            raise FirewallError("%r is not a TCP port or range of ports (N or N-M, 1-65535)" % (port,))
        result.append(str(port))
    return result


def _sources(sources):
    if not isinstance(sources, (list, tuple)) or not sources:
        raise FirewallError("sources must be a non-empty list of addresses, got %r" % (sources,))
    v4, v6 = [], []
    for source in sources:
        text = str(source)
        if not _SOURCE.fullmatch(text):
            raise FirewallError("%r is not an IP address or network" % (source,))
        (v6 if ":" in text else v4).append(text)
    return v4, v6


def rules(table, ports, sources):
    portset = "{ %s }" % ", ".join(_ports(ports))
    v4, v6 = _sources(sources)
    statements = ["type filter hook input priority 0", "policy accept", "iif lo accept"]
    if v4:
        statements.append("tcp dport %s ip saddr { %s } accept" % (portset, ", ".join(v4)))
    if v6:
        statements.append("tcp dport %s ip6 saddr { %s } accept" % (portset, ", ".join(v6)))
    statements.append("tcp dport %s reject with tcp reset" % portset)
    # nft wants the chain block itself ended by ';' inside the table block when it is all on one line
    return "%s; table inet %s { chain input { %s; }; }" % (removal(table), table, "; ".join(statements))


def removal(table):
    return "table inet %s; delete table inet %s" % (table, table)


def firewall_lines(node_firewall, unit_name):
    if not isinstance(node_firewall, dict) or not isinstance(node_firewall.get("enabled"), bool):
        raise FirewallError("node_firewall must be the group plan's {enabled, ports, sources}, got %r"
                            % (node_firewall,))
    table = table_name(unit_name)
    load = rules(table, node_firewall.get("ports"), node_firewall.get("sources")) if node_firewall["enabled"] \
        else None
    return {"table": table, "load": load, "remove": removal(table)}
