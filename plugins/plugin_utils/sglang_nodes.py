# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One SGLang server spread over several hosts: the inventory contract and its checks (controller side).

The hosts of one multi-node server form an inventory group; each of them names that group in
``sglang_server_node_group``. From the group this module derives, for every node:

``nnodes``
    the number of hosts in the group;
``node_rank``
    ``sglang_server_node_rank`` when set, else the host's position in the group sorted by inventory name;
``dist_init_addr``
    ``HOST:PORT`` of the rendezvous on rank 0: ``sglang_server_dist_init_host`` (else rank 0's inventory
    address: ``ansible_host`` when it is an IP address, else its default IPv4, else its default IPv6
    address) and ``sglang_server_dist_init_port``; an IPv6 host is bracketed, as SGLang's
    ``NetworkAddress.parse`` requires;
``node_ifname``
    the network interface NCCL and Gloo use on that node (``NCCL_SOCKET_IFNAME``/``GLOO_SOCKET_IFNAME``):
    ``sglang_server_node_ifname``, else the interface (from the host's network facts) that holds the
    node's address (for rank 0 the rendezvous address).
``node_firewall``
    what only the group's nodes may reach on that node (``plugin_utils/node_firewall.py`` writes the
    nftables rules): ``enabled`` (``sglang_server_node_firewall``), ``ports`` (rank 0: the rendezvous port,
    with data-parallel attention also the ports SGLang derives from it; other ranks: the HTTP port, where
    their key-less health server answers) and ``sources`` (every node's addresses: its inventory address,
    the addresses of its node interface in its network facts, rank 0's rendezvous address; then the node's
    ``sglang_server_node_firewall_sources``). With the firewall on, a node whose addresses are unknown is
    an error.

The input is one mapping per host, shaped like that host's ``hostvars``: ``sglang_server_*`` variables,
``inventory_hostname``, ``ansible_host`` and ``ansible_facts`` (the network part is enough). The role
passes the variables it resolved on each host (defaults included); an empty mapping marks a host of the
group that is not part of the run.

Public functions:

``node_group_problems(nodes, group=None, prefix="sglang_server_") -> list[str]``
    every rule the group breaks; each message names the variable (and the host), the rule and the fix.
``node_group_plan(nodes, group=None, prefix="sglang_server_") -> dict``
    inventory name -> ``{nnodes, node_rank, dist_init_addr, node_ifname, node_firewall}``; raises
    ``SGLangConfigError``.
"""

from __future__ import annotations

import json
import re

from ansible_collections.llmserve.sglang.plugins.plugin_utils.addresses import (
    DEFAULT_DIST_INIT_PORT,
    interface_addresses,
    inventory_address,
    netaddr_ip,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args import (
    SGLangConfigError,
    normalise_flag_name,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_flags import FLAGS, SPELLINGS
from ansible_collections.llmserve.sglang.plugins.plugin_utils.values import as_int, blank

DEFAULT_PREFIX = "sglang_server_"
DEFAULT_HTTP_PORT = 30000
# Settings every node of one server must have alike (role variable without prefix, what it is).
AGREEING = (
    ("version", "the SGLang version"),
    ("model_path", "the model"),
    ("tp_size", "the tensor-parallel size"),
    ("speculative", "the speculative decoding settings"),
    ("args", "the SGLang flags"),
)
# Linux interface names: at most 15 bytes, no '/', no whitespace, not '.' or '..'.
_IFNAME = re.compile(r"[A-Za-z0-9_.:@-]{1,15}")
# With data-parallel attention rank 0 also binds the six ports after the rendezvous port
# (PortArgs.init_new in SGLang's srt/server_args.py).
DP_ATTENTION_EXTRA_PORTS = 6
# ... and one scheduler input port per attention-DP rank past the first: rendezvous port + 5 + rank + 1
# (PortArgs.init_new: port_base = rendezvous + 1, scheduler input = port_base + 4 + 1 + dp_rank).
DP_ATTENTION_PORTS_BEFORE_RANKS = 5


def _canonical(value):
    """A stable text for comparing settings (dict order and 4 vs '4' do not matter)."""
    if isinstance(value, str) and re.fullmatch(r"[0-9]+", value.strip()):
        value = int(value.strip())
    if isinstance(value, dict) and value:
        value = dict((normalise_flag_name(k) if isinstance(k, str) else k, v) for k, v in value.items())
    if value in (None, "", {}, []):
        value = None
    return json.dumps(value, sort_keys=True, default=str)


_ip = netaddr_ip
_interface_addresses = interface_addresses


def _interface_of(facts, address):
    """Name of the interface in ``ansible_facts`` that holds ``address`` (None when none or unknown)."""
    if not isinstance(facts, dict):
        return None
    wanted = _ip(address)
    if wanted is None:
        return None
    for value in facts.values():
        if not isinstance(value, dict) or blank(value.get("device")):
            continue
        found = []
        for key in ("ipv4", "ipv4_secondaries", "ipv6"):
            entry = value.get(key)
            entries = entry if isinstance(entry, list) else [entry]
            found.extend(e.get("address") for e in entries if isinstance(e, dict))
        for text in found:
            if text is not None and _ip(text) == wanted:
                return str(value["device"])
    return None


class _Group(object):
    def __init__(self, nodes, group, prefix):
        self.prefix = prefix
        self.errors = []
        self.plan = {}
        self.group = group
        self.nodes = self._nodes(nodes)
        if self.nodes is not None:
            self._run()

    def var(self, name):
        return self.prefix + name

    def err(self, variable, rule, fix=None):
        self.errors.append("%s: %s%s" % (variable, rule, "; " + fix if fix else ""))

    def get(self, name, node):
        return self.nodes[node].get(self.var(name))

    def label(self):
        return "multi-node server group %r" % self.group

    # -- input ---------------------------------------------------------------------------------------

    def _nodes(self, nodes):
        variable = self.var("node_group")
        if isinstance(nodes, (list, tuple)):
            pairs = []
            for position, item in enumerate(nodes):
                name = item.get("inventory_hostname") if isinstance(item, dict) else None
                if blank(name):
                    self.err(variable, "node %d of the input has no inventory_hostname" % position,
                             "pass each node's hostvars (or a dict of inventory name to hostvars)")
                    return None
                pairs.append((str(name), item))
            nodes = dict(pairs)
        if not isinstance(nodes, dict):
            self.err(variable, "the group check needs a dict of inventory name to hostvars (or a list of hostvars), "
                     "got %s" % type(nodes).__name__)
            return None
        result = {}
        for name, value in nodes.items():
            if value is None:
                value = {}
            if not isinstance(value, dict):
                try:
                    value = dict(value)
                except (TypeError, ValueError):
                    self.err(variable, "the entry of host %s must be its hostvars (a dict)" % name)
                    return None
            result[str(name)] = value
        if self.group is None:
            named = sorted({str(v.get(variable)) for v in result.values() if not blank(v.get(variable))})
            if len(named) != 1:
                self.err(variable, "the hosts given name %s; a group check takes the hosts of one group"
                         % (" and ".join(repr(n) for n in named) or "no group"),
                         "pass the group name, e.g. sglang_node_group_check('%s')" % (named[0] if named else "g"))
                return None
            self.group = named[0]
        if blank(self.group) or not isinstance(self.group, str):
            self.err(variable, "must be the name of an inventory group, got %r" % (self.group,))
            return None
        if not result:
            self.err(variable, "there is no inventory group %r with hosts in it" % self.group,
                     "put the hosts of the multi-node server into an inventory group of that name")
            return None
        return result

    # -- rules ---------------------------------------------------------------------------------------

    def _run(self):
        names = sorted(self.nodes)
        missing = [n for n in names if not self.nodes[n]]
        if missing:
            self.err(self.var("node_group"), "host(s) %s of %s are not part of this run (--limit, or a rollout batch "
                     "that splits the group): the nodes of one server are checked and changed together"
                     % (", ".join(missing), self.label()),
                     "run all hosts of the group in one batch")
            return
        for name in names:
            own = self.get("node_group", name)
            if own != self.group:
                self.err("%s (host %s)" % (self.var("node_group"), name),
                         "is %r, but the host is in %s" % (own, self.label()),
                         "set %s: %s on every host of the group, and only on them" % (self.var("node_group"), self.group))
        if self.errors:
            return
        if len(names) < 2:
            self.err(self.var("node_group"), "%s has only one host (%s); a multi-node server needs at least two"
                     % (self.label(), names[0]), "leave %s empty for a single-host server" % self.var("node_group"))
            return
        self._agree(names)
        ranks = self._ranks(names)
        tp = as_int(self.get("tp_size", names[0]))
        if tp is not None and not self.errors:
            self._parallel(names, tp)
        if ranks is None:
            return
        rank0 = ranks[0]
        rendezvous = self._rendezvous(names, rank0)
        ifnames = self._ifnames(names, ranks, rendezvous)
        if self.errors:
            return
        host, port = rendezvous
        text = "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)
        by_name = dict((name, rank) for rank, name in ranks.items())
        firewalls = self._firewalls(names, by_name, rendezvous, ifnames)
        if self.errors:
            return
        for name in names:
            self.plan[name] = {
                "nnodes": len(names),
                "node_rank": by_name[name],
                "dist_init_addr": text,
                "node_ifname": ifnames[name],
                "node_firewall": firewalls[name],
            }

    def _agree(self, names):
        for key, what in AGREEING:
            seen = {}
            for name in names:
                seen.setdefault(_canonical(self.get(key, name)), []).append(name)
            if len(seen) <= 1:
                continue
            if key in ("args", "speculative"):
                # Name the keys that differ, never their values (args may hold admin_api_key and the like).
                values = [self.get(key, name) for name in names]
                dicts = [dict((normalise_flag_name(k), _canonical(v)) for k, v in value.items())
                         if isinstance(value, dict) else {} for value in values]
                keys = sorted(set(k for d in dicts for k in d if any(d.get(k) != o.get(k) for o in dicts)))
                detail = "keys that differ: %s" % (", ".join(keys) or "(the whole setting)")
            else:
                detail = "; ".join("%s: %s" % (", ".join(hosts), text if len(text) <= 120 else text[:117] + "...")
                                   for text, hosts in sorted(seen.items(), key=lambda item: item[1]))
            self.err(self.var(key), "differs between the nodes of %s (%s); the nodes run one server, so %s must "
                     "be the same on all of them" % (self.label(), detail, what),
                     "set %s once for the group (group_vars/%s)" % (self.var(key), self.group))

    def _ranks(self, names):
        """rank -> inventory name, or None when the ranks are not 0..n-1 exactly once."""
        variable = self.var("node_rank")
        given = {}
        ok = True
        for position, name in enumerate(names):
            raw = self.get("node_rank", name)
            if blank(raw):
                given[name] = position
                continue
            number = as_int(raw)
            if number is None or number < 0:
                self.err("%s (host %s)" % (variable, name), "must be an integer >= 0, got %r" % (raw,),
                         "leave it unset to use the host's position in the group sorted by name")
                ok = False
            else:
                given[name] = number
        if not ok:
            return None
        holders = {}
        for name in names:
            holders.setdefault(given[name], []).append(name)
        count = len(names)
        for rank in sorted(holders):
            if len(holders[rank]) > 1:
                self.err(variable, "rank %d is held by more than one node of %s (%s); ranks must be unique"
                         % (rank, self.label(), ", ".join(holders[rank])),
                         "give each host its own sglang_server_node_rank, or unset them all to rank by name")
                ok = False
        out_of_range = sorted(r for r in holders if r >= count)
        for rank in out_of_range:
            self.err("%s (host %s)" % (variable, ", ".join(holders[rank])),
                     "is %d, but %s has %d hosts, so ranks run from 0 to %d" % (rank, self.label(), count, count - 1),
                     "number the nodes 0..%d" % (count - 1))
            ok = False
        if 0 not in holders:
            self.err(variable, "%s has no rank 0 node: rank 0 holds the rendezvous (--dist-init-addr) and serves "
                     "the API" % self.label(), "set %s: 0 on the first node" % variable)
            ok = False
        gaps = [r for r in range(1, count) if r not in holders]
        if gaps:
            self.err(variable, "the ranks of %s must cover 0..%d without gaps; missing %s"
                     % (self.label(), count - 1, ", ".join(str(g) for g in gaps)),
                     "number the nodes 0..%d" % (count - 1))
            ok = False
        if not ok:
            return None
        return dict((rank, holders[rank][0]) for rank in holders)

    def _parallel(self, names, tp):
        count = len(names)
        if tp % count:
            self.err(self.var("tp_size"), "%d is not a multiple of the number of nodes of %s (%d): each node runs "
                     "tp_size / nnodes ranks" % (tp, self.label(), count),
                     "use a tp_size that is a multiple of %d, or change the group" % count)
            return
        per_node = tp // count
        for name in names:
            gpus = self.get("gpus", name)
            if isinstance(gpus, (list, tuple)) and gpus and len(gpus) != per_node:
                self.err("%s (host %s)" % (self.var("gpus"), name),
                         "lists %d GPU(s), but each node of %s runs tp_size / nnodes = %d / %d = %d"
                         % (len(gpus), self.label(), tp, count, per_node),
                         "list exactly %d GPU index(es) on every node" % per_node)

    def _address(self, name):
        """The node's inventory address: ansible_host when it is an IP address, else the default IPv4/IPv6."""
        node = self.nodes[name]
        return inventory_address(node.get("ansible_host"), node.get("ansible_facts"))

    def _rendezvous(self, names, rank0):
        """(host, port) of the rendezvous; errors name the variable."""
        host_var, port_var = self.var("dist_init_host"), self.var("dist_init_port")
        for key in ("dist_init_host", "dist_init_port"):
            seen = {}
            for name in names:
                raw = self.get(key, name)
                seen.setdefault("(unset)" if blank(raw) else _canonical(raw), []).append(name)
            if len(seen) > 1:
                self.err(self.var(key), "differs between the nodes of %s (%s)" % (
                    self.label(), "; ".join("%s: %s" % (", ".join(h), t) for t, h in sorted(seen.items()))),
                    "set it once for the group")
        raw_host = self.get("dist_init_host", rank0)
        if blank(raw_host):
            host = self._address(rank0)
            if host is None:
                self.err(host_var, "is unset and rank 0 (%s) has no IP address in the inventory (ansible_host) or "
                         "its facts (default IPv4/IPv6)" % rank0,
                         "set %s to the address the other nodes reach rank 0 at" % host_var)
                return None
            source = "the inventory address of rank 0 (%s)" % rank0
        else:
            host = str(raw_host).strip()
            source = host_var
        address = _ip(host)
        if address is None:
            self.err(host_var, "must be an IP address (the nodes meet at it; IPv6 without brackets), got %r from %s"
                     % (host, source), "set %s to rank 0's address on the network between the nodes" % host_var)
            return None
        if address.is_loopback() or str(address) in ("0.0.0.0", "::"):
            hosts = set(self._address(n) for n in names)
            if len(hosts) > 1 or None in hosts:
                self.err(host_var, "%s (from %s) cannot be reached from the other nodes" % (address, source),
                         "set %s to rank 0's address on the network between the nodes" % host_var)
                return None
        raw_port = self.get("dist_init_port", rank0)
        port = DEFAULT_DIST_INIT_PORT if blank(raw_port) else as_int(raw_port)
        if port is None or not 1 <= port <= 65535:
            self.err(port_var, "must be a TCP port number between 1 and 65535, got %r" % (raw_port,),
                     "use e.g. %d" % DEFAULT_DIST_INIT_PORT)
            return None
        self._port_free(rank0, port)
        return str(address), port

    def _port_free(self, rank0, port):
        """The rendezvous port is bound on rank 0: it must not be a port that node's server uses otherwise."""
        port_var = self.var("dist_init_port")
        http = as_int(self.get("port", rank0))
        http = DEFAULT_HTTP_PORT if http is None else http
        if port == http:
            self.err(port_var, "is %d, the HTTP port (%s) of rank 0 (%s); the rendezvous needs a port of its own"
                     % (port, self.var("port"), rank0), "pick another port")
        args = self.get("args", rank0)
        used = {}
        if isinstance(args, dict):
            for key, value in args.items():
                dest = SPELLINGS.get(normalise_flag_name(key)) if isinstance(key, str) else None
                if dest is None:
                    continue
                if dest.endswith("_port") and FLAGS[dest]["type"] == "int" and as_int(value) is not None:
                    used[as_int(value)] = "%sargs.%s" % (self.prefix, key)
        dp_attention = self._dp_attention_size(rank0) > 0
        if port in used:
            self.err(port_var, "is %d, which %s already uses on rank 0 (%s)" % (port, used[port], rank0),
                     "pick another port")
        if dp_attention:
            extra = range(port + 1, port + 1 + DP_ATTENTION_EXTRA_PORTS)
            clash = sorted(p for p in [http] + list(used) if p in extra)
            if clash:
                self.err(port_var, "is %d: with data-parallel attention rank 0 also binds ports %d-%d, which "
                         "includes %s" % (port, extra[0], extra[-1], ", ".join(str(c) for c in clash)),
                         "move the rendezvous port at least %d away" % (DP_ATTENTION_EXTRA_PORTS + 1))

    def _dp_attention_size(self, node):
        """The attention data-parallel size of the server (0 without data-parallel attention)."""
        args = self.get("args", node)
        if not isinstance(args, dict):
            return 0
        found = {}
        for key, value in args.items():
            dest = SPELLINGS.get(normalise_flag_name(key)) if isinstance(key, str) else None
            if dest is not None:
                found[dest] = value
        size = as_int(found.get("attn_dp_size")) or 1
        if size > 1:
            return size
        if found.get("enable_dp_attention") is True:
            # the deprecated switch takes --dp-size as the attention DP size; unknown: at most tp_size
            return as_int(found.get("dp_size")) or as_int(self.get("tp_size", node)) or 1
        return 0

    def _firewalls(self, names, rank_of, rendezvous, ifnames):
        """inventory name -> {enabled, ports, sources}; errors name the variable."""
        variable = self.var("node_firewall")
        host, port = rendezvous
        addresses = {}
        for name in names:
            found = []
            for text in [self._address(name)] + _interface_addresses(self.nodes[name].get("ansible_facts"),
                                                                     ifnames.get(name)):
                if text is not None and _ip(text) is not None:
                    found.append(str(_ip(text)))
            if rank_of[name] == 0:
                found.append(host)
            addresses[name] = sorted(set(found))
        peers = sorted(set(a for found in addresses.values() for a in found), key=lambda a: (":" in a, a))
        result = {}
        for name in names:
            enabled = self.get("node_firewall", name)
            enabled = True if enabled is None or enabled == "" else enabled
            if not isinstance(enabled, bool):
                self.err("%s (host %s)" % (variable, name), "must be true or false, got %r" % (enabled,))
                continue
            extra = self._firewall_sources(name)
            if enabled:
                unknown = [n for n in names if not addresses[n]]
                if unknown:
                    self.err("%s (host %s)" % (variable, name),
                             "cannot tell which addresses node(s) %s of %s connect from (no IP address in "
                             "ansible_host, no default address and no address of its interface in the network "
                             "facts), so the rendezvous cannot be opened to them alone"
                             % (", ".join(unknown), self.label()),
                             "gather network facts, set ansible_host to the node's IP address, list the addresses in "
                             "%s, or set %s: false (leaves the rendezvous open to the network)"
                             % (self.var("node_firewall_sources"), variable))
                    continue
            if rank_of[name] == 0:
                ports = ["%d" % port]
                size = self._dp_attention_size(name)
                if size:
                    last = min(port + DP_ATTENTION_PORTS_BEFORE_RANKS + size, 65535)
                    ports.append("%d-%d" % (port + 1, last))
            else:
                http = as_int(self.get("port", name))
                ports = ["%d" % (DEFAULT_HTTP_PORT if http is None else http)]
            result[name] = {"enabled": enabled, "ports": ports,
                            "sources": peers + [s for s in extra if s not in peers]}
        return result

    def _firewall_sources(self, name):
        """The node's sglang_server_node_firewall_sources as normalised addresses and networks."""
        import netaddr  # pylint: disable=import-outside-toplevel

        variable = "%s (host %s)" % (self.var("node_firewall_sources"), name)
        raw = self.get("node_firewall_sources", name)
        if raw is None or raw == "":
            return []
        if not isinstance(raw, (list, tuple)):
            self.err(variable, "must be a list of IP addresses or networks, got %s" % type(raw).__name__)
            return []
        result = []
        for item in raw:
            try:
                network = netaddr.IPNetwork(str(item).strip())
            except (netaddr.AddrFormatError, ValueError, TypeError):
                self.err(variable, "%r is not an IP address or network (e.g. 10.20.0.0/24)" % (item,))
                continue
            if network.prefixlen == 0:
                self.err(variable, "%r allows every address: that is no restriction" % (item,),
                         "set %s: false instead, if that is meant" % self.var("node_firewall"))
                continue
            result.append(str(network.ip) if network.size == 1 else str(network.cidr))
        return result

    def _ifnames(self, names, ranks, rendezvous):
        variable = self.var("node_ifname")
        result = {}
        rank_of = dict((name, rank) for rank, name in ranks.items())
        for name in names:
            raw = self.get("node_ifname", name)
            if not blank(raw):
                text = str(raw).strip()
                if not isinstance(raw, str) or not _IFNAME.fullmatch(text) or text in (".", ".."):
                    self.err("%s (host %s)" % (variable, name), "must be a network interface name (at most 15 "
                             "letters, digits or _.:@-), got %r" % (raw,))
                    continue
                result[name] = text
                continue
            if rendezvous is None:
                continue
            address = rendezvous[0] if rank_of[name] == 0 else self._address(name)
            found = _interface_of(self.nodes[name].get("ansible_facts"), address) if address else None
            if found is None:
                self.err("%s (host %s)" % (variable, name),
                         "is unset and no interface of the host holds its address %s in its network facts"
                         % (address or "(none known)"),
                         "set %s to the interface the nodes talk over (NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME), or "
                         "gather network facts" % variable)
                continue
            result[name] = found
        return result


def node_group_problems(nodes, group=None, prefix=DEFAULT_PREFIX):
    """Every rule the multi-node group breaks (empty list when it is fine)."""
    return list(_Group(nodes, group, prefix).errors)


def node_group_plan(nodes, group=None, prefix=DEFAULT_PREFIX):
    """inventory name -> {nnodes, node_rank, dist_init_addr, node_ifname}; raises SGLangConfigError."""
    checked = _Group(nodes, group, prefix)
    if checked.errors:
        raise SGLangConfigError(checked.errors)
    return checked.plan
