# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``sglang_args``: GPUs, parallelism and the nodes of a multi-node server (``--nnodes``, ``--node-rank``,
``--dist-init-addr`` and the node's network interface), and the ports they must not share."""

from __future__ import annotations

import re

from ansible_collections.llmserve.sglang.plugins.plugin_utils.values import blank
from ansible_collections.llmserve.sglang.plugins.plugin_utils.systemd_unit import control_problem
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_flags import FLAGS
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args_common import (
    _MULTINODE_HINT,
    _UNSET,
    _as_int,
    _describe,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args_values import dedicated_value

# Environment the node's interface (cfg key node_ifname) sets; refused in ``env`` on a multi-node server.
IFNAME_ENV = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")
# Linux network interface names: at most 15 bytes, no '/' or whitespace.
_IFNAME = re.compile(r"[A-Za-z0-9_.:@-]{1,15}")


def _parse_host_port(text):
    """``(host, port)`` from ``IPv4:PORT`` or ``[IPv6]:PORT``, or the rule it breaks (a string)."""
    if not isinstance(text, str):
        return "it must be a string HOST:PORT"
    problem = control_problem(text)
    if problem:
        return problem
    text = text.strip()
    match = re.fullmatch(r"\[([^\]]+)\]:([0-9]+)", text) or re.fullmatch(r"([^:\[\]]+):([0-9]+)", text)
    if not match:
        return "it must be IPv4:PORT or [IPv6]:PORT (SGLang needs IPv6 addresses in brackets)"
    host, port = match.group(1), int(match.group(2))
    try:
        import netaddr  # pylint: disable=import-outside-toplevel
    except ImportError:
        return "it cannot be checked because the Python package 'netaddr' is missing on the controller"
    try:
        address = netaddr.IPAddress(host)
    except (netaddr.AddrFormatError, ValueError, TypeError):
        return "the host part %r is not an IP address" % host
    if address.version == 6 and not text.startswith("["):
        return "an IPv6 address must be in brackets"
    if not 1 <= port <= 65535:
        return "the port %d is not between 1 and 65535" % port
    return host, port


def check_parallel(cfg, problems):
    dedicated_value(cfg, problems, "tp_size", cfg.var("tp_size"), cfg.raw.get("tp_size"), "top")

    gpus = cfg.raw.get("gpus")
    if gpus is None or gpus == []:
        return
    if not isinstance(gpus, (list, tuple)):
        fix = "write a YAML list such as [0, 1, 2, 3]"
        problems.add(cfg.var("gpus"), "must be a list of GPU indexes, got %s" % _describe(gpus), fix)
        return
    indexes = []
    for position, item in enumerate(gpus):
        number = _as_int(item)
        if number is _UNSET or number < 0:
            problems.add("%s[%d]" % (cfg.var("gpus"), position),
                         "must be a GPU index (integer >= 0), got %s" % _describe(item),
                         "list indexes as shown by nvidia-smi, e.g. [0, 1]")
            return
        indexes.append(number)
    duplicates = sorted({i for i in indexes if indexes.count(i) > 1})
    if duplicates:
        problems.add(cfg.var("gpus"), "lists GPU %s more than once" % ", ".join(str(d) for d in duplicates),
                     "list every GPU once")
        return
    cfg.top["gpus"] = indexes


def check_multinode(cfg, problems):
    """One node of a multi-node server: nnodes, node_rank, dist_init_addr and node_ifname (all optional)."""
    nnodes = cfg.raw.get("nnodes")
    if nnodes is not None:
        number = _as_int(nnodes)
        if number is _UNSET or number < 1:
            problems.add(cfg.var("node_group"), "gives a number of nodes (nnodes) that is not an integer >= 1: %s"
                         % _describe(nnodes), _MULTINODE_HINT)
        else:
            cfg.top["nnodes"] = number
    rank = cfg.raw.get("node_rank")
    if rank is not None:
        number = _as_int(rank)
        if number is _UNSET or number < 0:
            problems.add(cfg.var("node_rank"), "must be an integer >= 0, got %s" % _describe(rank),
                         "number the nodes of the group 0..n-1, or leave it unset to rank them by inventory name")
        else:
            cfg.top["node_rank"] = number
    addr = cfg.raw.get("dist_init_addr")
    if not blank(addr):
        parsed = _parse_host_port(addr)
        if isinstance(parsed, str):
            problems.add(cfg.var("dist_init_host"), "gives the rendezvous address (--dist-init-addr) %s: %s"
                         % (_describe(addr), parsed),
                         "set sglang_server_dist_init_host to an IP address and sglang_server_dist_init_port to a port")
        else:
            cfg.top["dist_init_addr"] = addr.strip()
            cfg.top["dist_init_port"] = parsed[1]
    ifname = cfg.raw.get("node_ifname")
    if not blank(ifname):
        if not isinstance(ifname, str) or not _IFNAME.fullmatch(ifname.strip()) or ifname.strip() in (".", ".."):
            problems.add(cfg.var("node_ifname"), "must be a network interface name (at most 15 letters, digits or "
                         "_.:@-), got %s" % _describe(ifname), "e.g. eth0 or ens5f0")
        else:
            cfg.top["node_ifname"] = ifname.strip()


def rule_parallel(cfg, problems):
    tp = cfg.value("tp_size", 1)
    pp = cfg.value("pp_size", 1)
    dp = cfg.value("dp_size", 1)
    nnodes = cfg.value("nnodes", 1)
    if (tp * pp) % nnodes:
        problems.add(cfg.where("nnodes"), "tp_size x pp_size (%d x %d) must be divisible by nnodes (%d)"
                     % (tp, pp, nnodes), "adjust %s, pp_size or nnodes" % cfg.var("tp_size"))
    if dp > 1 and nnodes > 1:
        problems.add(cfg.where("dp_size"), "dp_size > 1 needs nnodes == 1 (got %d nodes)" % nnodes,
                     "use attn_dp_size for multi-node data parallel attention")
    attn_dp = cfg.value("attn_dp_size", 1)
    if tp % attn_dp:
        problems.add(cfg.where("attn_dp_size"), "tp_size (%d) must be divisible by attn_dp_size (%d)" % (tp, attn_dp),
                     "choose an attn_dp_size that divides %s" % cfg.var("tp_size"))
    node_rank = cfg.value("node_rank", 0)
    if node_rank >= nnodes:
        problems.add(cfg.where("node_rank"), "must be below nnodes (%d), got %d" % (nnodes, node_rank))
    if nnodes > 1 and cfg.value("dist_init_addr") is None:
        problems.add(cfg.where("dist_init_addr"), "is required when nnodes > 1",
                     "set it to host:port of node 0 on every node")
    gpus = cfg.top.get("gpus")
    if gpus:
        needed = tp * pp * dp // nnodes if (tp * pp * dp) % nnodes == 0 else None
        if needed is not None and len(gpus) != needed:
            detail = "tp_size (%d)" % tp if (pp, dp, nnodes) == (1, 1, 1) else \
                "tp_size x pp_size x dp_size / nnodes (%d x %d x %d / %d = %d)" % (tp, pp, dp, nnodes, needed)
            problems.add(cfg.var("gpus"), "lists %d GPU(s) but the server uses %s" % (len(gpus), detail),
                         "list exactly %d GPU index(es) or change %s" % (needed, cfg.var("tp_size")))


def rule_ports(cfg, problems):
    port = cfg.top.get("port", FLAGS["port"]["default"])
    for dest in sorted(cfg.args):
        if dest.endswith("_port") and FLAGS[dest]["type"] == "int" and cfg.args[dest] == port:
            problems.add(cfg.arg_var(dest), "uses %d, the HTTP port of %s" % (port, cfg.var("port")),
                         "pick another port")
    rendezvous = cfg.top.get("dist_init_port")
    if rendezvous is None or cfg.value("nnodes", 1) < 2 or cfg.value("node_rank", 0) != 0:
        return
    # Rank 0 binds the rendezvous port (torch's TCPStore) next to its HTTP port.
    variable = cfg.var("dist_init_port")
    if rendezvous == port:
        problems.add(variable, "is %d, the HTTP port of %s; the rendezvous (--dist-init-addr) needs a port of its own"
                     % (port, cfg.var("port")), "pick another port")
    for dest in sorted(cfg.args):
        if dest.endswith("_port") and FLAGS[dest]["type"] == "int" and cfg.args[dest] == rendezvous:
            problems.add(variable, "is %d, which %s already uses" % (rendezvous, cfg.arg_var(dest)),
                         "pick another port")
