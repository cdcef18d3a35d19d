# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The multi-node rendezvous is open to the group's nodes alone (issue 24, finding 6).

One ansible-playbook run renders the sglang_server unit of every node of two multi-node groups (all hosts local,
no connection): ``mn`` with the firewall on (the default), ``mnoff`` with ``sglang_server_node_firewall: false``.
Each play runs the role's ``validate`` entry point (the real group check and plan) and renders ``sglang.service``.
The units are read back like systemd (``systemd_syntax``) and checked with ``systemd-analyze verify``; then, where
this machine allows it (root, nft, ``ip netns``), rank 0's rendered nft script is loaded into a network namespace of
its own and connections are tried from a peer address and from a stranger.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid

import pytest

from ansible_collections.llmserve.sglang.tests.unit.roles.sglang_server import systemd_syntax as sd
from ansible_collections.llmserve.sglang.tests.unit.collection_tree import run_plays

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "sglang_server")
NFT = shutil.which("nft") or "/usr/sbin/nft"
HOSTS = {"mn": {"mn-0": "10.9.0.1", "mn-1": "10.9.0.2"}, "mnoff": {"off-0": "10.9.1.1", "off-1": "10.9.1.2"}}


def _inventory():
    common = {"ansible_connection": "local", "sglang_server_model_path": "/models/tiny",
              "sglang_server_install": "none", "sglang_server_python": "/usr/bin/python3",
              "sglang_server_tp_size": 2, "sglang_server_api_key": "k-1",
              "sglang_server_node_ifname": "eth0", "sglang_server_host": "0.0.0.0",
              "sglang_server_nft": NFT if os.path.exists(NFT) else "/bin/true"}
    groups = {}
    for group, hosts in HOSTS.items():
        variables = dict(common, sglang_server_node_group=group)
        if group == "mnoff":
            variables["sglang_server_node_firewall"] = False
        groups[group] = {"hosts": {name: {"ansible_host": address} for name, address in hosts.items()},
                         "vars": variables}
    return {"all": {"children": groups}}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("node-firewall"))
    play = {"name": "render", "hosts": "mn:mnoff", "gather_facts": False, "tasks": [
        {"ansible.builtin.include_role": {"name": "llmserve.sglang.sglang_server", "tasks_from": "validate",
                                          "public": True}},
        {"ansible.builtin.template": {"src": os.path.join(ROLE, "templates", "sglang.service.j2"),
                                      "dest": os.path.join(out, "{{ inventory_hostname }}.service"), "mode": "0600"}},
    ]}
    result = run_plays(out, [play], _inventory())
    units = {}
    for hosts in HOSTS.values():
        for name in hosts:
            with open(os.path.join(out, name + ".service"), encoding="utf-8") as handle:
                units[name] = handle.read()
    return {"units": units, "output": result.stdout + result.stderr}


def _pre(unit):
    """(prefix, argv) of the unit's one ExecStartPre=."""
    (value,) = sd.values(unit, "ExecStartPre")
    words = [sd.specifiers(w) for w in sd.words(value)]
    prefix = words[0][:len(words[0]) - len(words[0].lstrip("-+@:!"))]
    return prefix, [words[0][len(prefix):]] + words[1:]


def test_rank0_lets_only_the_nodes_reach_the_rendezvous(rendered):
    prefix, argv = _pre(rendered["units"]["mn-0"])
    assert prefix == "+" and len(argv) == 2  # as root, outside the sandbox; the script is one argument
    script = argv[1]
    table = "table inet llmserve_sglang"
    assert script.startswith("%s; delete %s; %s {" % (table, table, table))
    assert "tcp dport { 25000 } ip saddr { 10.9.0.1, 10.9.0.2 } accept" in script
    assert "tcp dport { 25000 } reject with tcp reset" in script and "iif lo accept" in script
    # the API's port is nobody's business here
    assert "30000" not in script


def test_other_ranks_guard_their_keyless_health_port(rendered):
    prefix, argv = _pre(rendered["units"]["mn-1"])
    assert prefix == "+"
    assert "tcp dport { 30000 } ip saddr { 10.9.0.1, 10.9.0.2 } accept" in argv[1]
    assert "25000" not in argv[1]


def test_switched_off_warns_and_drops_the_old_table(rendered):
    for name in ("off-0", "off-1"):
        prefix, argv = _pre(rendered["units"][name])
        assert prefix == "-+" and argv[1] == "table inet llmserve_sglang; delete table inet llmserve_sglang"
    output = rendered["output"]
    assert "sglang_server_node_firewall is false: anyone who reaches this node may connect to the rendezvous (TCP " \
           "store) on port(s) 25000" in " ".join(output.split())
    assert "the key-less health server on port 30000" in " ".join(output.split())


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed here")
@pytest.mark.parametrize("name", ["mn-0", "mn-1", "off-0"])
def test_systemd_analyze_verify_accepts_the_unit(rendered, tmp_path, name):
    unit = tmp_path / "sglang.service"
    unit.write_text(rendered["units"][name], encoding="utf-8")
    result = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, check=False,
                            timeout=120)
    assert result.returncode == 0 and not (result.stdout + result.stderr).strip(), result.stdout + result.stderr


def _netns_usable():
    if os.geteuid() != 0 or not os.path.exists(NFT) or not shutil.which("ip"):
        return False
    name = "llms-probe-%s" % uuid.uuid4().hex[:6]
    ok = subprocess.run(["ip", "netns", "add", name], capture_output=True, check=False).returncode == 0
    if ok:
        subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
    return ok


def _in(ns, *argv, **kwargs):
    return subprocess.run(["ip", "netns", "exec", ns] + list(argv), capture_output=True, text=True, timeout=60,
                          check=kwargs.get("check", True))


CONNECT = ("import socket, sys\n"
           "s = socket.socket(); s.settimeout(5); s.bind((sys.argv[1], 0))\n"
           "try:\n    s.connect((sys.argv[2], int(sys.argv[3]))); print('open')\n"
           "except ConnectionRefusedError:\n    print('refused')\n"
           "except OSError as exc:\n    print('error %s' % exc)\n")
LISTEN = ("import socket, time\n"
          "for port in (25000, 30000):\n"
          "    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
          "    s.bind(('0.0.0.0', port)); s.listen(8); globals()['k%d' % port] = s\n"
          "print('listening', flush=True); time.sleep(60)\n")


@pytest.mark.skipif(not _netns_usable(), reason="needs root, nft and ip netns")
def test_the_rendered_rules_refuse_a_stranger_and_let_the_nodes_in(rendered):
    """Rank 0's script, loaded by nft in a namespace with 10.9.0.1: 10.9.0.2 (the other node) reaches the rendezvous,
    10.9.0.9 (a stranger on the same network) is refused at once, the API port stays open to both."""
    script = _pre(rendered["units"]["mn-0"])[1][1]
    tag = uuid.uuid4().hex[:6]
    server, client = "llms-s-" + tag, "llms-c-" + tag
    listener = None
    try:
        for ns in (server, client):
            subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True)
        subprocess.run(["ip", "link", "add", "vs" + tag, "netns", server, "type", "veth", "peer", "name", "vc" + tag,
                        "netns", client], check=True, capture_output=True)
        _in(server, "ip", "addr", "add", "10.9.0.1/24", "dev", "vs" + tag)
        _in(client, "ip", "addr", "add", "10.9.0.2/24", "dev", "vc" + tag)
        _in(client, "ip", "addr", "add", "10.9.0.9/24", "dev", "vc" + tag)
        for ns, dev in ((server, "vs" + tag), (client, "vc" + tag)):
            _in(ns, "ip", "link", "set", "lo", "up")
            _in(ns, "ip", "link", "set", dev, "up")
        _in(server, NFT, script)
        _in(server, NFT, script)  # a restart loads it again: replaced, never stacked
        assert _in(server, NFT, "list", "ruleset").stdout.count("reject with tcp reset") == 1
        listener = subprocess.Popen(["ip", "netns", "exec", server, sys.executable, "-c", LISTEN],
                                    stdout=subprocess.PIPE, text=True)
        assert listener.stdout.readline().strip() == "listening"

        def attempt(ns, source, port):
            return _in(ns, sys.executable, "-c", CONNECT, source, "10.9.0.1" if ns == client else source,
                       str(port)).stdout.strip()

        assert attempt(client, "10.9.0.2", 25000) == "open"
        assert attempt(client, "10.9.0.9", 25000) == "refused"
        assert attempt(client, "10.9.0.9", 30000) == "open"
        assert attempt(server, "127.0.0.1", 25000) == "open"
        _in(server, NFT, "table inet llmserve_sglang; delete table inet llmserve_sglang")
        assert attempt(client, "10.9.0.9", 25000) == "open"
    finally:
        if listener is not None:
            listener.kill()
            listener.wait()
        for ns in (server, client):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
