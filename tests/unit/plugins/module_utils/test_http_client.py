# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The proxy decision of the shared HTTP client: loopback, link-local and this machine's own addresses go direct."""

from __future__ import annotations

import socket

import pytest

from ansible_collections.llmserve.sglang.plugins.module_utils import http_client

# TEST-NET-3: never an address of a test machine
FOREIGN = "203.0.113.77"


def _own_ipv4_address():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("198.51.100.1", 9))  # picks a route, sends nothing
        except OSError:
            return None
        address = sock.getsockname()[0]
    return None if address.startswith("127.") or address == "0.0.0.0" else address


def _nonlocal_bind():
    try:
        with open("/proc/sys/net/ipv4/ip_nonlocal_bind") as f:
            return f.read().strip() != "0"
    except OSError:
        return False


def _resolving(mapping):
    calls = []

    def resolve(host, port, family=0, type=0):
        calls.append(host)
        if host not in mapping:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "",
                 (a, 0, 0, 0) if ":" in a else (a, 0)) for a in mapping[host]]

    resolve.calls = calls
    return resolve


def test_own_non_loopback_address_goes_direct():
    address = _own_ipv4_address()
    if address is None:
        pytest.skip("this machine has no IPv4 address other than loopback")
    assert http_client.is_own_address(address) is True
    assert http_client.goes_direct(address) is True
    # not loopback or link-local: only the own-address rule sends it direct
    assert http_client.is_local_host(address) is False


def test_a_name_of_this_machine_goes_direct():
    resolve = _resolving({"gpu-node-1.example.internal": [FOREIGN, "127.0.0.1"]})
    # one of its addresses is this machine's (a socket binds to it)
    assert http_client.goes_direct("gpu-node-1.example.internal", resolve) is True


@pytest.mark.skipif(_nonlocal_bind(), reason="ip_nonlocal_bind is set: every address binds here")
def test_other_machines_use_the_proxy():
    resolve = _resolving({"sglang.example.com": [FOREIGN]})
    assert http_client.goes_direct("sglang.example.com", resolve) is False
    assert http_client.goes_direct(FOREIGN) is False
    assert http_client.goes_direct("10.255.254.253") is False


def test_names_that_do_not_resolve_are_not_this_machine():
    resolve = _resolving({})
    assert http_client.is_own_address("nowhere.invalid", resolve) is False
    assert http_client.is_own_address("", resolve) is False and http_client.is_own_address(None, resolve) is False
    assert resolve.calls == ["nowhere.invalid"]

    def broken(*args):
        raise UnicodeError("label too long")

    assert http_client.is_own_address("x" * 300, broken) is False


def test_other_families_are_ignored():
    def resolve(host, *args):
        return [(getattr(socket, "AF_UNIX", 1), socket.SOCK_STREAM, 0, "", "/run/x.sock")]

    assert http_client.is_own_address("odd", resolve) is False


def test_loopback_and_link_local_go_direct_without_a_lookup():
    resolve = _resolving({})
    for host in ("127.0.0.1", "localhost", "::1", "169.254.169.254", "fe80::1"):
        assert http_client.goes_direct(host, resolve) is True
    assert resolve.calls == []


class _Module(object):
    def __init__(self, **params):
        self.params = params


def test_fetcher_skips_the_proxy_for_own_addresses_and_decides_once_a_host(monkeypatch):
    decided = []
    monkeypatch.setattr(http_client, "goes_direct", lambda host: decided.append(host) or host == "192.0.2.10")
    monkeypatch.setattr(http_client.urls, "make_context", lambda **kw: object())
    calls = []

    def fake_open(self, method, url, **kwargs):
        calls.append((url, kwargs["use_proxy"]))
        raise http_client.urllib.error.URLError("refused")

    monkeypatch.setattr(http_client.urls.Request, "open", fake_open)
    module = _Module()
    fetch = http_client.build_fetcher(module)
    for url in ("http://192.0.2.10:30000/health", "http://192.0.2.10:30000/generate", "http://10.9.9.9:1/x"):
        fetch(module, url, timeout=1)
    assert calls == [("http://192.0.2.10:30000/health", False), ("http://192.0.2.10:30000/generate", False),
                     ("http://10.9.9.9:1/x", True)]
    assert decided == ["192.0.2.10", "10.9.9.9"]
    # use_proxy false: no decision to make, never a proxy
    off = _Module(use_proxy=False)
    calls[:] = []
    http_client.build_fetcher(off)(off, "http://10.9.9.9:1/x", timeout=1)
    assert calls == [("http://10.9.9.9:1/x", False)] and decided == ["192.0.2.10", "10.9.9.9"]
