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
    ``NetworkAddress.parse`` requires. The address rules are ``addresses.server_addresses``' (its
    ``rendezvous`` entry, read for rank 0); this module adds what only the group decides;
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

The rules are plain functions ``rule(cfg, problems)`` on the rule engine (``rules``) over one ``NodeGroup`` (the
normalised input and what the rules derived from it), listed in ``STAGES``: a stage runs only when the ones before
it found no problem.
"""

from __future__ import annotations

import json
import re

from ansible_collections.llmserve.sglang.plugins.plugin_utils.addresses import (
    DEFAULT_DIST_INIT_PORT,
    interface_addresses,
    inventory_address,
    netaddr_ip,
    server_addresses,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.rules import (
    UNSET,
    Problems,
    read_bool,
    read_int,
    read_list,
    run_rules,
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


class NodeGroup(object):
    """The normalised group the rules read: the prefix, the group's name, ``nodes`` (inventory name -> hostvars;
    empty until ``read_nodes`` accepted the input) and ``names`` (sorted), and what the rules derived so far: ``ranks``
    (rank -> inventory name), ``rendezvous`` (``server_addresses``' entry for rank 0), ``ifnames``, ``firewalls``
    and the ``plan``."""

    def __init__(self, nodes, group, prefix):
        self.raw = nodes
        self.group = group
        self.prefix = prefix
        self.nodes = {}
        self.names = []
        self.ranks = None
        self.rendezvous = None
        self.ifnames = {}
        self.firewalls = {}
        self.plan = {}

    def var(self, name):
        return self.prefix + name

    def host_var(self, name, host):
        """How a message names one host's variable: ``sglang_server_node_rank (host gpu-a)``."""
        return "%s (host %s)" % (self.var(name), host)

    def get(self, name, node):
        return self.nodes[node].get(self.var(name))

    def label(self):
        return "multi-node server group %r" % self.group

    def address(self, name):
        """The node's inventory address: ansible_host when it is an IP address, else the default IPv4/IPv6."""
        node = self.nodes[name]
        return inventory_address(node.get("ansible_host"), node.get("ansible_facts"))

    def rank_of(self):
        return dict((name, rank) for rank, name in self.ranks.items())


# -- the input -----------------------------------------------------------------------------------------------


def _input_mapping(cfg, problems):
    """The input as inventory name -> hostvars (dicts), or None after a problem."""
    variable = cfg.var("node_group")
    nodes = cfg.raw
    if isinstance(nodes, (list, tuple)):
        pairs = []
        for position, item in enumerate(nodes):
            name = item.get("inventory_hostname") if isinstance(item, dict) else None
            if blank(name):
                problems.add(variable, "node %d of the input has no inventory_hostname" % position,
                             "pass each node's hostvars (or a dict of inventory name to hostvars)")
                return None
            pairs.append((str(name), item))
        nodes = dict(pairs)
    if not isinstance(nodes, dict):
        problems.add(variable, "the group check needs a dict of inventory name to hostvars (or a list of hostvars), "
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
                problems.add(variable, "the entry of host %s must be its hostvars (a dict)" % name)
                return None
        result[str(name)] = value
    return result


def read_nodes(cfg, problems):
    """The hosts of the group and its name (from the hosts when the caller gave none)."""
    variable = cfg.var("node_group")
    nodes = _input_mapping(cfg, problems)
    if nodes is None:
        return
    if cfg.group is None:
        named = sorted({str(v.get(variable)) for v in nodes.values() if not blank(v.get(variable))})
        if len(named) != 1:
            problems.add(variable, "the hosts given name %s; a group check takes the hosts of one group"
                         % (" and ".join(repr(n) for n in named) or "no group"),
                         "pass the group name, e.g. sglang_node_group_check('%s')" % (named[0] if named else "g"))
            return
        cfg.group = named[0]
    if blank(cfg.group) or not isinstance(cfg.group, str):
        problems.add(variable, "must be the name of an inventory group, got %r" % (cfg.group,))
        return
    if not nodes:
        problems.add(variable, "there is no inventory group %r with hosts in it" % cfg.group,
                     "put the hosts of the multi-node server into an inventory group of that name")
        return
    cfg.nodes = nodes
    cfg.names = sorted(nodes)


# -- who belongs to the group ----------------------------------------------------------------------------------


def check_all_in_run(cfg, problems):
    missing = [n for n in cfg.names if not cfg.nodes[n]]
    if missing:
        problems.add(cfg.var("node_group"), "host(s) %s of %s are not part of this run (--limit, or a rollout batch "
                     "that splits the group): the nodes of one server are checked and changed together"
                     % (", ".join(missing), cfg.label()),
                     "run all hosts of the group in one batch")


def check_membership(cfg, problems):
    for name in cfg.names:
        own = cfg.get("node_group", name)
        if own != cfg.group:
            problems.add(cfg.host_var("node_group", name), "is %r, but the host is in %s" % (own, cfg.label()),
                         "set %s: %s on every host of the group, and only on them" % (cfg.var("node_group"), cfg.group))


def check_several_nodes(cfg, problems):
    if len(cfg.names) < 2:
        problems.add(cfg.var("node_group"), "%s has only one host (%s); a multi-node server needs at least two"
                     % (cfg.label(), cfg.names[0]), "leave %s empty for a single-host server" % cfg.var("node_group"))


# -- the settings of the server ----------------------------------------------------------------------------


def check_agreeing(cfg, problems):
    for key, what in AGREEING:
        seen = {}
        for name in cfg.names:
            seen.setdefault(_canonical(cfg.get(key, name)), []).append(name)
        if len(seen) <= 1:
            continue
        if key in ("args", "speculative"):
            # Name the keys that differ, never their values (args may hold admin_api_key and the like).
            values = [cfg.get(key, name) for name in cfg.names]
            dicts = [dict((normalise_flag_name(k), _canonical(v)) for k, v in value.items())
                     if isinstance(value, dict) else {} for value in values]
            keys = sorted(set(k for d in dicts for k in d if any(d.get(k) != o.get(k) for o in dicts)))
            detail = "keys that differ: %s" % (", ".join(keys) or "(the whole setting)")
        else:
            detail = "; ".join("%s: %s" % (", ".join(hosts), text if len(text) <= 120 else text[:117] + "...")
                               for text, hosts in sorted(seen.items(), key=lambda item: item[1]))
        problems.add(cfg.var(key), "differs between the nodes of %s (%s); the nodes run one server, so %s must "
                     "be the same on all of them" % (cfg.label(), detail, what),
                     "set %s once for the group (group_vars/%s)" % (cfg.var(key), cfg.group))


def read_ranks(cfg, problems):
    """``cfg.ranks``: rank -> inventory name, when the ranks are 0..n-1 exactly once."""
    variable = cfg.var("node_rank")
    given = {}
    ok = True
    for position, name in enumerate(cfg.names):
        raw = cfg.get("node_rank", name)
        if blank(raw):
            given[name] = position
            continue
        number = read_int(problems, cfg.host_var("node_rank", name), raw, minimum=0, show=repr,
                          fix="leave it unset to use the host's position in the group sorted by name")
        if number is UNSET:
            ok = False
        else:
            given[name] = number
    if not ok:
        return
    holders = {}
    for name in cfg.names:
        holders.setdefault(given[name], []).append(name)
    count = len(cfg.names)
    for rank in sorted(holders):
        if len(holders[rank]) > 1:
            problems.add(variable, "rank %d is held by more than one node of %s (%s); ranks must be unique"
                         % (rank, cfg.label(), ", ".join(holders[rank])),
                         "give each host its own sglang_server_node_rank, or unset them all to rank by name")
            ok = False
    for rank in sorted(r for r in holders if r >= count):
        problems.add("%s (host %s)" % (variable, ", ".join(holders[rank])),
                     "is %d, but %s has %d hosts, so ranks run from 0 to %d" % (rank, cfg.label(), count, count - 1),
                     "number the nodes 0..%d" % (count - 1))
        ok = False
    if 0 not in holders:
        problems.add(variable, "%s has no rank 0 node: rank 0 holds the rendezvous (--dist-init-addr) and serves "
                     "the API" % cfg.label(), "set %s: 0 on the first node" % variable)
        ok = False
    gaps = [r for r in range(1, count) if r not in holders]
    if gaps:
        problems.add(variable, "the ranks of %s must cover 0..%d without gaps; missing %s"
                     % (cfg.label(), count - 1, ", ".join(str(g) for g in gaps)),
                     "number the nodes 0..%d" % (count - 1))
        ok = False
    if ok:
        cfg.ranks = dict((rank, holders[rank][0]) for rank in holders)


def check_parallel(cfg, problems):
    """tp_size over the nodes and the GPUs of each; only when the settings and ranks before it are sound."""
    tp = as_int(cfg.get("tp_size", cfg.names[0]))
    if tp is None or problems.errors:
        return
    count = len(cfg.names)
    if tp % count:
        problems.add(cfg.var("tp_size"), "%d is not a multiple of the number of nodes of %s (%d): each node runs "
                     "tp_size / nnodes ranks" % (tp, cfg.label(), count),
                     "use a tp_size that is a multiple of %d, or change the group" % count)
        return
    per_node = tp // count
    for name in cfg.names:
        gpus = cfg.get("gpus", name)
        if isinstance(gpus, (list, tuple)) and gpus and len(gpus) != per_node:
            problems.add(cfg.host_var("gpus", name),
                         "lists %d GPU(s), but each node of %s runs tp_size / nnodes = %d / %d = %d"
                         % (len(gpus), cfg.label(), tp, count, per_node),
                         "list exactly %d GPU index(es) on every node" % per_node)


# -- the rendezvous ------------------------------------------------------------------------------------------


def _rendezvous_hostvars(cfg, name):
    """What ``server_addresses`` reads of a node's rendezvous, under the names it reads (the group's prefix may be
    another one); its API settings are left to the defaults, as only the rendezvous is wanted."""
    node = cfg.nodes[name]
    return {"inventory_hostname": name, "sglang_server_node_group": cfg.group,
            "sglang_server_dist_init_host": cfg.get("dist_init_host", name),
            "sglang_server_dist_init_port": cfg.get("dist_init_port", name),
            "ansible_host": node.get("ansible_host"), "ansible_facts": node.get("ansible_facts")}


def check_rendezvous_agrees(cfg, problems):
    if cfg.ranks is None:
        return
    for key in ("dist_init_host", "dist_init_port"):
        seen = {}
        for name in cfg.names:
            raw = cfg.get(key, name)
            seen.setdefault("(unset)" if blank(raw) else _canonical(raw), []).append(name)
        if len(seen) > 1:
            problems.add(cfg.var(key), "differs between the nodes of %s (%s)" % (
                cfg.label(), "; ".join("%s: %s" % (", ".join(h), t) for t, h in sorted(seen.items()))),
                "set it once for the group")


def read_rendezvous(cfg, problems):
    """``cfg.rendezvous``: rank 0's rendezvous as ``addresses.server_addresses`` finds it, checked for the group.

    The messages are the ones this check always wrote (they name rank 0, the group's prefix and the fix), so the
    entry's own problems are not taken over; the text a refused host came from is read again for the message."""
    if cfg.ranks is None:
        return
    rank0 = cfg.ranks[0]
    host_var, port_var = cfg.var("dist_init_host"), cfg.var("dist_init_port")
    found = server_addresses(_rendezvous_hostvars(cfg, rank0), rank0)["rendezvous"]
    if found["source"] is None:
        problems.add(host_var, "is unset and rank 0 (%s) has no IP address in the inventory (ansible_host) or "
                     "its facts (default IPv4/IPv6)" % rank0,
                     "set %s to the address the other nodes reach rank 0 at" % host_var)
        return
    if found["source"] == "inventory":
        given, source = cfg.address(rank0), "the inventory address of rank 0 (%s)" % rank0
    else:
        given, source = str(cfg.get("dist_init_host", rank0)).strip(), host_var
    reachable = "set %s to rank 0's address on the network between the nodes" % host_var
    if found["host"] is None:
        problems.add(host_var, "must be an IP address (the nodes meet at it; IPv6 without brackets), got %r from %s"
                     % (given, source), reachable)
        return
    address = netaddr_ip(found["host"])
    if address.is_loopback() or str(address) in ("0.0.0.0", "::"):
        hosts = set(cfg.address(n) for n in cfg.names)
        if len(hosts) > 1 or None in hosts:
            problems.add(host_var, "%s (from %s) cannot be reached from the other nodes" % (address, source), reachable)
            return
    if found["port"] is None:
        problems.add(port_var, "must be a TCP port number between 1 and 65535, got %r"
                     % (cfg.get("dist_init_port", rank0),), "use e.g. %d" % DEFAULT_DIST_INIT_PORT)
        return
    _check_port_free(cfg, problems, rank0, found["port"])
    cfg.rendezvous = found


def _args_ports(cfg, node):
    """port -> the ``args`` entry that binds it on ``node`` (the int flags named ``*_port``)."""
    args = cfg.get("args", node)
    used = {}
    if isinstance(args, dict):
        for key, value in args.items():
            dest = SPELLINGS.get(normalise_flag_name(key)) if isinstance(key, str) else None
            if dest is None:
                continue
            if dest.endswith("_port") and FLAGS[dest]["type"] == "int" and as_int(value) is not None:
                used[as_int(value)] = "%sargs.%s" % (cfg.prefix, key)
    return used


def _check_port_free(cfg, problems, rank0, port):
    """The rendezvous port is bound on rank 0: it must not be a port that node's server uses otherwise."""
    port_var = cfg.var("dist_init_port")
    http = as_int(cfg.get("port", rank0))
    http = DEFAULT_HTTP_PORT if http is None else http
    if port == http:
        problems.add(port_var, "is %d, the HTTP port (%s) of rank 0 (%s); the rendezvous needs a port of its own"
                     % (port, cfg.var("port"), rank0), "pick another port")
    used = _args_ports(cfg, rank0)
    dp_attention = _dp_attention_size(cfg, rank0) > 0
    if port in used:
        problems.add(port_var, "is %d, which %s already uses on rank 0 (%s)" % (port, used[port], rank0),
                     "pick another port")
    if dp_attention:
        extra = range(port + 1, port + 1 + DP_ATTENTION_EXTRA_PORTS)
        clash = sorted(p for p in [http] + list(used) if p in extra)
        if clash:
            problems.add(port_var, "is %d: with data-parallel attention rank 0 also binds ports %d-%d, which "
                         "includes %s" % (port, extra[0], extra[-1], ", ".join(str(c) for c in clash)),
                         "move the rendezvous port at least %d away" % (DP_ATTENTION_EXTRA_PORTS + 1))


def _dp_attention_size(cfg, node):
    """The attention data-parallel size of the server (0 without data-parallel attention)."""
    args = cfg.get("args", node)
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
        return as_int(found.get("dp_size")) or as_int(cfg.get("tp_size", node)) or 1
    return 0


# -- the network interfaces and the firewall --------------------------------------------------------------------


def read_ifnames(cfg, problems):
    """``cfg.ifnames``: each node's interface, given or found in its facts (for rank 0 the rendezvous address)."""
    if cfg.ranks is None:
        return
    variable = cfg.var("node_ifname")
    rank_of = cfg.rank_of()
    for name in cfg.names:
        raw = cfg.get("node_ifname", name)
        if not blank(raw):
            text = str(raw).strip()
            if not isinstance(raw, str) or not _IFNAME.fullmatch(text) or text in (".", ".."):
                problems.add(cfg.host_var("node_ifname", name), "must be a network interface name (at most 15 "
                             "letters, digits or _.:@-), got %r" % (raw,))
                continue
            cfg.ifnames[name] = text
            continue
        if cfg.rendezvous is None:
            continue
        address = cfg.rendezvous["host"] if rank_of[name] == 0 else cfg.address(name)
        found = _interface_of(cfg.nodes[name].get("ansible_facts"), address) if address else None
        if found is None:
            problems.add(cfg.host_var("node_ifname", name),
                         "is unset and no interface of the host holds its address %s in its network facts"
                         % (address or "(none known)"),
                         "set %s to the interface the nodes talk over (NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME), or "
                         "gather network facts" % variable)
            continue
        cfg.ifnames[name] = found


def _firewall_sources(cfg, problems, name):
    """The node's sglang_server_node_firewall_sources as normalised addresses and networks."""
    import netaddr  # pylint: disable=import-outside-toplevel

    variable = cfg.host_var("node_firewall_sources", name)
    raw = cfg.get("node_firewall_sources", name)
    if raw is None or raw == "":
        return []
    items = read_list(problems, variable, raw, what="a list of IP addresses or networks",
                      show=lambda value: type(value).__name__)
    if items is UNSET:
        return []
    result = []
    for item in items:
        try:
            network = netaddr.IPNetwork(str(item).strip())
        except (netaddr.AddrFormatError, ValueError, TypeError):
            problems.add(variable, "%r is not an IP address or network (e.g. 10.20.0.0/24)" % (item,))
            continue
        if network.prefixlen == 0:
            problems.add(variable, "%r allows every address: that is no restriction" % (item,),
                         "set %s: false instead, if that is meant" % cfg.var("node_firewall"))
            continue
        result.append(str(network.ip) if network.size == 1 else str(network.cidr))
    return result


def _node_addresses(cfg, rank_of):
    """inventory name -> the addresses the node connects from: its inventory address, its interface's addresses,
    and for rank 0 the rendezvous address."""
    addresses = {}
    for name in cfg.names:
        found = []
        for text in [cfg.address(name)] + _interface_addresses(cfg.nodes[name].get("ansible_facts"),
                                                               cfg.ifnames.get(name)):
            if text is not None and _ip(text) is not None:
                found.append(str(_ip(text)))
        if rank_of[name] == 0:
            found.append(cfg.rendezvous["host"])
        addresses[name] = sorted(set(found))
    return addresses


def read_firewalls(cfg, problems):
    """``cfg.firewalls``: inventory name -> {enabled, ports, sources}."""
    variable = cfg.var("node_firewall")
    port = cfg.rendezvous["port"]
    rank_of = cfg.rank_of()
    addresses = _node_addresses(cfg, rank_of)
    peers = sorted(set(a for found in addresses.values() for a in found), key=lambda a: (":" in a, a))
    for name in cfg.names:
        enabled = cfg.get("node_firewall", name)
        enabled = read_bool(problems, cfg.host_var("node_firewall", name), None if enabled == "" else enabled,
                            default=True, what="true or false", show=repr)
        if enabled is UNSET:
            continue
        extra = _firewall_sources(cfg, problems, name)
        if enabled:
            unknown = [n for n in cfg.names if not addresses[n]]
            if unknown:
                problems.add(cfg.host_var("node_firewall", name),
                             "cannot tell which addresses node(s) %s of %s connect from (no IP address in "
                             "ansible_host, no default address and no address of its interface in the network "
                             "facts), so the rendezvous cannot be opened to them alone"
                             % (", ".join(unknown), cfg.label()),
                             "gather network facts, set ansible_host to the node's IP address, list the addresses in "
                             "%s, or set %s: false (leaves the rendezvous open to the network)"
                             % (cfg.var("node_firewall_sources"), variable))
                continue
        if rank_of[name] == 0:
            ports = ["%d" % port]
            size = _dp_attention_size(cfg, name)
            if size:
                last = min(port + DP_ATTENTION_PORTS_BEFORE_RANKS + size, 65535)
                ports.append("%d-%d" % (port + 1, last))
        else:
            http = as_int(cfg.get("port", name))
            ports = ["%d" % (DEFAULT_HTTP_PORT if http is None else http)]
        cfg.firewalls[name] = {"enabled": enabled, "ports": ports,
                               "sources": peers + [s for s in extra if s not in peers]}


# -- the plan ------------------------------------------------------------------------------------------------


def make_plan(cfg, problems):  # pylint: disable=unused-argument
    rank_of = cfg.rank_of()
    for name in cfg.names:
        cfg.plan[name] = {
            "nnodes": len(cfg.names),
            "node_rank": rank_of[name],
            "dist_init_addr": cfg.rendezvous["address"],
            "node_ifname": cfg.ifnames[name],
            "node_firewall": cfg.firewalls[name],
        }


# The rules in the order they report, in stages: a stage runs only when the ones before it found no problem (the
# input, then who belongs to the group, then the server's settings, then the firewall, which needs the rendezvous
# and the interfaces, then the plan). Within the settings, a rule that needs the ranks skips without them.
STAGES = (
    (read_nodes,),
    (check_all_in_run,),
    (check_membership,),
    (check_several_nodes,),
    (check_agreeing, read_ranks, check_parallel, check_rendezvous_agrees, read_rendezvous, read_ifnames),
    (read_firewalls,),
    (make_plan,),
)


def _check(nodes, group, prefix):
    cfg = NodeGroup(nodes, group, prefix)
    problems = Problems()
    for rules in STAGES:
        run_rules(rules, cfg, problems)
        if problems.errors:
            break
    return cfg, problems


def node_group_problems(nodes, group=None, prefix=DEFAULT_PREFIX):
    """Every rule the multi-node group breaks (empty list when it is fine)."""
    return list(_check(nodes, group, prefix)[1].errors)


def node_group_plan(nodes, group=None, prefix=DEFAULT_PREFIX):
    """inventory name -> {nnodes, node_rank, dist_init_addr, node_ifname, node_firewall}; raises SGLangConfigError."""
    cfg, problems = _check(nodes, group, prefix)
    if problems.errors:
        raise SGLangConfigError(problems.errors)
    return cfg.plan
