# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Where a listener of the fleet is reached: the one place for the address rules (controller side).

A listener binds an IP address (``sglang_server_host``, ``sglang_gateway_host``, ...). Who reaches it where:

* **a listener bound to one address** is reached at that address;
* **the wildcard rule**: a listener bound to ``0.0.0.0`` or ``::`` is reached at the host's address: its
  ``ansible_host`` when set (a host name or an IP address; an IPv6 one is refused for ``0.0.0.0``), else the
  default address of its gathered facts (``default_ipv4``; for ``::`` first ``default_ipv6``). Without either
  the caller is told to set ``ansible_host`` or to gather the facts (``wildcard_address``);
* **the probe rule**: the host itself probes a wildcard-bound listener on loopback (``probe_address``: ``::``
  on ``::1``; the SGLang server's own probe, ``probe_url``, on ``127.0.0.1`` for both wildcards, as SGLang's
  ``::`` socket also takes IPv4);
* **the rendezvous of a multi-node server** is ``sglang_server_dist_init_host`` when set, else rank 0's inventory
  address (``inventory_address``: ``ansible_host`` when it is an IP address, else the default IPv4, else the
  default IPv6 address of its facts), on ``sglang_server_dist_init_port`` (25000 when unset).

``server_addresses(hostvars)`` applies them to one SGLang server host (its API, its ``/metrics``, which SGLang
serves on the API port, and its rendezvous); the sglang_server role publishes the result as the fact
``sglang_server_addresses`` (entry point ``addresses``, filter ``llmserve.sglang.sglang_server_addresses``).
``plugin_utils/gateway_config.py`` (the gateway's workers), ``plugin_utils/monitoring_targets.py`` (Prometheus'
targets) and ``plugin_utils/sglang_nodes.py`` (the multi-node plan) take the helpers from here, with their own
words for who reaches the listener in their messages.

Standard library only, except ``netaddr`` for the multi-node helpers (as ``sglang_nodes`` always used).
"""

from __future__ import annotations

import ipaddress
import re

from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args_service import serves_tls
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args_common import normalise_flag_name
from ansible_collections.llmserve.sglang.plugins.plugin_utils.rules import describe as _describe_probe
from ansible_collections.llmserve.sglang.plugins.plugin_utils.rules import describe_shown as _describe
from ansible_collections.llmserve.sglang.plugins.plugin_utils.rules import shown as _shown
from ansible_collections.llmserve.sglang.plugins.plugin_utils.systemd_unit import control_problem, printable
from ansible_collections.llmserve.sglang.plugins.plugin_utils.values import as_bool, as_int, blank

# The sglang_server role's defaults for a host whose inventory does not set them
# (tests/unit/plugins/plugin_utils/test_addresses.py keeps them equal to roles/sglang_server/defaults).
SERVER_DEFAULT_HOST = "127.0.0.1"
SERVER_DEFAULT_PORT = 30000
# What SGLang's help suggests for --dist-init-addr (``192.168.0.2:25000``); used when the port is unset.
DEFAULT_DIST_INIT_PORT = 25000
WILDCARDS = ("0.0.0.0", "::")
# The host variables server_addresses reads.
HOSTVARS = ("inventory_hostname", "sglang_server_host", "sglang_server_port", "sglang_server_metrics",
            "sglang_server_args", "sglang_server_node_group", "sglang_server_dist_init_host",
            "sglang_server_dist_init_port", "ansible_host", "ansible_facts")

# a DNS host name (RFC 1123 labels, an optional final dot); monitoring_targets checks ansible_host with it too
HOSTNAME = re.compile(r"(?=.{1,253}\.?$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                      r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?")
_UNSET = object()

# How a message names who reaches a server's listener: the bind rule's words, who needs the address, what they do
# there, and a hint after "gather its facts in the same play". Each consumer of server_addresses passes its own.
SERVER_WORDS = {"binds": "the listener binds it", "who": "another host", "reacher": "other hosts reach",
                "hint": ""}


def ip_literal(text):
    """``ipaddress`` object for an IP literal (no brackets, no zone), or None."""
    if not isinstance(text, str) or "%" in text:
        return None
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def _inet_aton_part(text):
    """One dot-separated part of an IPv4 address as inet_aton reads it: 0x hex, leading-0 octal, else decimal."""
    if text[:2] in ("0x", "0X"):
        digits, base = text[2:], 16
        if not re.fullmatch(r"[0-9A-Fa-f]+", digits):
            return None
    elif len(text) > 1 and text.startswith("0"):
        digits, base = text[1:], 8
        if not re.fullmatch(r"[0-7]+", digits):
            return None
    else:
        digits, base = text, 10
        if not re.fullmatch(r"[0-9]+", digits):
            return None
    return int(digits, base)


def resolver_address(text):
    """The address the host's resolver (glibc ``getaddrinfo``/``inet_aton``) makes of ``text``, or None for a name.

    Besides the dotted quad and IPv6 it reads the old numeric forms: one to four parts, each decimal, octal
    (leading 0) or hex (0x), the last one filling the remaining bytes (``127.1``, ``0x7f000001``, ``2130706433``
    are all 127.0.0.1). An IPv4-mapped IPv6 address (``::ffff:127.0.0.1``) is that IPv4 address: a connection to it
    goes out as IPv4. Loopback and wildcard checks look at this form, so no spelling slips past them.
    """
    if not isinstance(text, str) or "%" in text:
        return None
    text = text.strip()
    if not text:
        return None
    try:
        parsed = ipaddress.ip_address(text)
    except ValueError:
        parsed = None
    if parsed is not None:
        if parsed.version == 6 and parsed.ipv4_mapped is not None:
            return parsed.ipv4_mapped
        return parsed
    parts = text.split(".")
    if len(parts) > 4:
        return None
    values = [_inet_aton_part(part) for part in parts]
    if None in values:
        return None
    last_bits = 8 * (5 - len(values))
    if any(value > 255 for value in values[:-1]) or values[-1] >= 1 << last_bits:
        return None
    number = values[-1]
    for position, value in enumerate(values[:-1]):
        number |= value << (24 - 8 * position)
    return ipaddress.IPv4Address(number)


def url_host(address):
    """``address`` as the host part of a URL: IPv6 compressed and bracketed, names lower-cased."""
    parsed = ip_literal(address)
    if parsed is None:
        return address.rstrip(".").lower()
    if parsed.version == 6:
        return "[%s]" % parsed.compressed
    return parsed.compressed


def named_address(value, name, reacher, bind=None):
    """``value`` (a host's ``ansible_host``) checked as the host name or IP address at which ``reacher`` ("the
    gateway reaches", "Prometheus scrapes") reaches ``name``: ``(address, None)``, the address normalised (IP
    compressed, name lower-cased without a final dot), or ``(None, message)``. With ``bind`` (the wildcard the
    listener binds), an IPv6 address for a listener bound to 0.0.0.0 is refused."""
    if not isinstance(value, str) or control_problem(value):
        return None, "must be a host name or an IP address, got %s" % _describe(value)
    value = value.strip()
    # a numeric name (127.1, 0x7f000001) is an address to the resolver, not a name to look up
    parsed = resolver_address(value)
    if parsed is None and not HOSTNAME.fullmatch(value):
        return None, "must be a host name or an IP address (%s %s there), got %s" % (
            reacher, _shown(name, 60), _describe(value))
    if parsed is not None and bind is not None and parsed.version == 6 and bind.version == 4:
        return None, ("is the IPv6 address %s, but %s binds 0.0.0.0 (IPv4 only); bind '::' or give an IPv4 "
                      "ansible_host" % (parsed.compressed, _shown(name, 60)))
    return (parsed.compressed if parsed is not None else value.rstrip(".").lower()), None


def wildcard_address(name, bind, explicit, facts, who, reacher, hint=""):
    """Where another host (``who``: "the gateway", "Prometheus"; ``reacher`` as in named_address) reaches ``name``'s
    listener bound to the wildcard ``bind`` (0.0.0.0 or ::): its ``ansible_host`` when set, else its gathered default
    address (``facts``: the keys ``ipv6`` and ``ipv4``; IPv6 first for '::'). Returns ``(address, variable, None)``
    or ``(None, variable, message)``, ``variable`` being "ansible_host", the fact's path or None (the bind's own
    variable)."""
    if not blank(explicit):
        address, problem = named_address(explicit, name, reacher, bind)
        return address, "ansible_host", problem
    candidates = [("ipv4", "ansible_facts.default_ipv4.address")]
    if bind.version == 6:
        candidates.insert(0, ("ipv6", "ansible_facts.default_ipv6.address"))
    for key, fact in candidates:
        value = facts.get(key)
        if blank(value):
            continue
        parsed = resolver_address(value) if ip_literal(value) is not None else None
        if parsed is None:
            return None, fact, "must be an IP address, got %s" % _describe(value)
        return parsed.compressed, "ansible_host", None
    facts_named = "default_ipv4/default_ipv6" if bind.version == 6 else "default_ipv4"
    return None, None, ("%s binds %s, so %s needs an address to reach it: set its ansible_host, or gather its facts "
                        "(%s) in the same play%s" % (_shown(name, 60), bind.compressed, who, facts_named, hint))


def is_loopback_name(address):
    """True for a loopback address in any spelling the resolver reads, and for localhost names."""
    parsed = resolver_address(address)
    if parsed is not None:
        return parsed.is_loopback
    name = address.rstrip(".").lower()
    return name == "localhost" or name.endswith(".localhost")


def probe_address(host):
    """Where the role itself reaches a listener bound to ``host``: loopback for a wildcard bind."""
    parsed = ip_literal(host)
    if parsed is not None and parsed.is_unspecified:
        return "127.0.0.1" if parsed.version == 4 else "::1"
    return host


def probe_url(host, port, args=None):
    """``scheme://address:port`` at which the sglang_server role probes its own server.

    https when ``args`` set ``ssl_certfile`` (SGLang then serves TLS only); a wildcard bind address is
    probed on 127.0.0.1; an IPv6 address is bracketed. Raises ``ValueError`` for an address or port that
    could not be part of a URL (the full rules are ``validate_server_config``'s).
    """
    for name, value in (("host", host), ("port", port)):
        if isinstance(value, str) and control_problem(value):
            raise ValueError("%s: %s" % (name, control_problem(value)))
    host = "" if host is None else str(host).strip()
    if not host or host in WILDCARDS:
        host = "127.0.0.1"
    if not re.fullmatch(r"[0-9A-Fa-f:.]+", host):
        raise ValueError("host: must be an IP address, got %r" % printable(host))
    number = as_int(port, _UNSET)
    if number is _UNSET or not 1 <= number <= 65535:
        raise ValueError("port: must be a TCP port number between 1 and 65535, got %s" % _describe_probe(port))
    if ":" in host:
        host = "[%s]" % host
    return "%s://%s:%d" % ("https" if serves_tls(args) else "http", host, number)


# -- multi-node: rank 0's inventory address (netaddr, as the multi-node plan always read it) -------------------

def netaddr_ip(text):
    """``netaddr.IPAddress`` for ``text``, or None when it is not an IP address."""
    import netaddr  # pylint: disable=import-outside-toplevel

    try:
        return netaddr.IPAddress(str(text).strip().strip("[]"))
    except (netaddr.AddrFormatError, ValueError, TypeError):
        return None


def default_address(facts):
    """The default IPv4 address of ``ansible_facts``, else its default IPv6 address (text), else None."""
    for key in ("default_ipv4", "default_ipv6"):
        entry = facts.get(key) if isinstance(facts, dict) else None
        if isinstance(entry, dict) and not blank(entry.get("address")):
            return str(entry["address"])
    return None


def inventory_address(ansible_host, facts):
    """A node's inventory address: ``ansible_host`` when it is an IP address, else ``default_address(facts)``."""
    if not blank(ansible_host) and netaddr_ip(ansible_host) is not None:
        return str(ansible_host).strip().strip("[]")
    return default_address(facts or {})


def interface_addresses(facts, ifname):
    """Every address (text) the interface ``ifname`` holds in ``ansible_facts`` (empty when unknown)."""
    found = []
    if not isinstance(facts, dict) or blank(ifname):
        return found
    for value in facts.values():
        if not isinstance(value, dict) or value.get("device") != ifname:
            continue
        for key in ("ipv4", "ipv4_secondaries", "ipv6"):
            entry = value.get(key)
            for item in entry if isinstance(entry, list) else [entry]:
                address = netaddr_ip(item.get("address")) if isinstance(item, dict) else None
                # a link-local IPv6 address is no source the nodes meet from (no scope in a rule)
                if address is not None and not (address.version == 6 and address.is_link_local()):
                    found.append(str(address))
    return found


def fact_addresses(facts):
    """``{"ipv4": ..., "ipv6": ...}``: the default addresses of ``ansible_facts`` ("" when not gathered)."""
    found = {}
    for key in ("ipv4", "ipv6"):
        entry = facts.get("default_" + key) if isinstance(facts, dict) else None
        value = entry.get("address") if isinstance(entry, dict) else None
        found[key] = "" if value is None else value
    return found


def serves_metrics(hostvars):
    """True when the server serves ``/metrics``: ``sglang_server_metrics`` or ``enable_metrics`` in its args."""
    if as_bool(hostvars.get("sglang_server_metrics"), False):
        return True
    args = hostvars.get("sglang_server_args")
    if isinstance(args, dict):
        for key, value in args.items():
            if isinstance(key, str) and normalise_flag_name(key) == "enable_metrics" and as_bool(value, False):
                return True
    return False


# -- one server host ---------------------------------------------------------------------------------------------

def _listener(name, hostvars, problems, words, describe):
    """(bind, address, source, port) of the server's API listener; None parts after a problem."""

    def var(field):
        return "hostvars['%s'].%s" % (_shown(name, 60), field)

    text = hostvars.get("sglang_server_host")
    text = SERVER_DEFAULT_HOST if blank(text) else text
    raw_port = hostvars.get("sglang_server_port")
    port = SERVER_DEFAULT_PORT if blank(raw_port) else as_int(raw_port, _UNSET, digits=5)
    if port is _UNSET or not 1 <= port <= 65535:
        problems.append("%s: must be an integer between 1 and 65535, got %s"
                        % (var("sglang_server_port"), describe(raw_port)))
        port = None
    bind = ip_literal(text) if isinstance(text, str) else None
    if bind is None:
        problems.append("%s: must be an IP address (%s), got %s"
                        % (var("sglang_server_host"), words["binds"], describe(text)))
        return None, None, None, port
    if not bind.is_unspecified:
        return bind, bind.compressed, "sglang_server_host", port
    explicit = hostvars.get("ansible_host")
    facts = fact_addresses(hostvars.get("ansible_facts"))
    address, source, problem = wildcard_address(name, bind, explicit, facts, words["who"], words["reacher"],
                                                words["hint"])
    if problem:
        problems.append("%s: %s" % (var(source or "sglang_server_host"), problem))
        return bind, None, None, port
    if blank(explicit):
        # wildcard_address names ansible_host as the variable to set; the address came from the facts
        source = "ansible_facts.default_ipv%d.address" % ip_literal(address).version
    return bind, address, source, port


def _rendezvous(name, hostvars, problems):
    """The multi-node rendezvous this host offers as rank 0, or None when it is no node of one."""
    if blank(hostvars.get("sglang_server_node_group")):
        return None
    variable = "hostvars['%s'].sglang_server_dist_init_host" % _shown(name, 60)
    raw_host = hostvars.get("sglang_server_dist_init_host")
    if blank(raw_host):
        host = inventory_address(hostvars.get("ansible_host"), hostvars.get("ansible_facts"))
        source = "inventory"
        if host is None:
            problems.append("%s: is unset and %s has no IP address in the inventory (ansible_host) or its facts "
                            "(default IPv4/IPv6)" % (variable, _shown(name, 60)))
            return {"host": None, "port": None, "address": None, "source": None}
    else:
        host = str(raw_host).strip()
        source = "sglang_server_dist_init_host"
    parsed = netaddr_ip(host)
    raw_port = hostvars.get("sglang_server_dist_init_port")
    port = DEFAULT_DIST_INIT_PORT if blank(raw_port) else as_int(raw_port)
    if port is None or not 1 <= port <= 65535:
        problems.append("hostvars['%s'].sglang_server_dist_init_port: must be a TCP port number between 1 and 65535, "
                        "got %r" % (_shown(name, 60), raw_port))
        port = None
    if parsed is None:
        problems.append("%s: must be an IP address (the nodes meet at it; IPv6 without brackets), got %r from %s"
                        % (variable, host, source if source != "inventory" else "the inventory address of %s"
                           % _shown(name, 60)))
        return {"host": None, "port": port, "address": None, "source": source}
    host = str(parsed)
    shown = "[%s]" % host if parsed.version == 6 else host
    return {"host": host, "port": port, "address": None if port is None else "%s:%d" % (shown, port),
            "source": source}


def server_addresses(hostvars, name=None, words=None, describe=None):
    """The addresses of one SGLang server host, from its variables and facts.

    ``hostvars``: that host's variables (a missing one takes the sglang_server role's default):
    ``inventory_hostname``, ``sglang_server_host``, ``sglang_server_port``, ``sglang_server_metrics``,
    ``sglang_server_args``, ``sglang_server_node_group``, ``sglang_server_dist_init_host``,
    ``sglang_server_dist_init_port``, ``ansible_host`` (only when the inventory sets it) and ``ansible_facts``
    (``default_ipv4``/``default_ipv6``). Returns::

        {"name": ..., "needs_facts": bool,
         "api": {"bind", "wildcard", "address", "port", "scheme", "url", "probe_url", "source", "needs_facts"},
         "metrics": {"enabled", "address", "port", "url", "probe_url"},
         "rendezvous": None or {"host", "port", "address", "source", "needs_facts"},
         "problems": [...]}

    ``address`` is where other hosts reach the listener (the wildcard rule), ``probe_url`` where the host itself
    probes it (the probe rule, on ``sglang_server_host`` and ``sglang_server_port`` as written: None where
    ``probe_url`` refuses them), ``source`` the variable the address comes from (``sglang_server_host``,
    ``ansible_host``, ``ansible_facts.default_ipv4.address``/``default_ipv6``; ``inventory`` or
    ``sglang_server_dist_init_host`` for the rendezvous). A part that cannot be known is None and ``problems``
    says why (each message starts with the variable). ``needs_facts`` (of the API: a wildcard bind without
    ``ansible_host``; of the rendezvous: no ``sglang_server_dist_init_host`` and no ``ansible_host`` that is an IP
    address; at the top: either) says the address is read from the host's network facts, whether or not they
    are gathered yet. ``words`` (keys as ``SERVER_WORDS``, the default) word the messages for the consumer that
    reaches the server (the gateway, Prometheus); ``describe`` (default ``rules.describe_shown``) shows a wrong
    ``sglang_server_port`` or ``sglang_server_host`` in their messages, for a consumer whose messages always showed
    them otherwise.
    """
    if not isinstance(hostvars, dict):
        raise TypeError("hostvars must be a dict, got %s" % type(hostvars).__name__)
    if name is None:
        name = hostvars.get("inventory_hostname")
    name = "" if blank(name) else str(name)
    problems = []
    words = dict(SERVER_WORDS, **(words or {}))
    bind, address, source, port = _listener(name, hostvars, problems, words, describe or _describe)
    args = hostvars.get("sglang_server_args")
    args = args if isinstance(args, dict) else {}
    scheme = "https" if serves_tls(args) else "http"
    url = "%s://%s:%d" % (scheme, url_host(address), port) if address is not None and port is not None else None
    # the probe rule on the host and port as written, as the sglang_server role has always probed its own server:
    # a spelling the bind rule normalises (2001:DB8::1, a port of "030000") keeps the URL it had, and a value the
    # probe rule refuses (a host with a line break, a null port) leaves it None, where the role failed before
    try:
        probe = probe_url(hostvars.get("sglang_server_host", SERVER_DEFAULT_HOST),
                          hostvars.get("sglang_server_port", SERVER_DEFAULT_PORT), args)
    except ValueError:
        probe = None
    api = {"bind": bind.compressed if bind is not None else None, "wildcard": bool(bind and bind.is_unspecified),
           "address": address, "port": port, "scheme": scheme, "url": url, "probe_url": probe, "source": source}
    enabled = serves_metrics(hostvars)
    metrics = {"enabled": enabled, "address": address, "port": port,
               "url": url + "/metrics" if url and enabled else None,
               "probe_url": probe + "/metrics" if probe and enabled else None}
    api["needs_facts"] = bool(bind is not None and bind.is_unspecified and blank(hostvars.get("ansible_host")))
    rendezvous = _rendezvous(name, hostvars, problems)
    if rendezvous is not None:
        rendezvous["needs_facts"] = blank(hostvars.get("sglang_server_dist_init_host")) and (
            blank(hostvars.get("ansible_host")) or netaddr_ip(hostvars.get("ansible_host")) is None)
    needs_facts = api["needs_facts"] or bool(rendezvous and rendezvous["needs_facts"])
    return {"name": name, "needs_facts": needs_facts, "api": api, "metrics": metrics, "rendezvous": rendezvous,
            "problems": problems}
