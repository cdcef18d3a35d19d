# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fact sglang_server_addresses against the code before it drove the role's probes (commit ``BASELINE``), for
thousands of inputs from a seeded generator, many of them bad:

* ``server_addresses``: the same result as the baseline's but for ``probe_url``, which is now the URL the role probed
  its own server at before (the filter ``sglang_base_url``: ``probe_url`` on ``sglang_server_host`` and
  ``sglang_server_port`` as written), None exactly where that filter failed;
* ``server_config``: the same problems in the same order (or the same exception), the same rendered server; its
  ``host_addresses`` is ``server_addresses`` of the same variables.

The baseline is read with ``git show``; the test is skipped where that history is not there."""

from __future__ import annotations

import os
import random

import pytest
import yaml

from ansible_collections.llmserve.sglang.plugins.plugin_utils import addresses
from ansible_collections.llmserve.sglang.plugins.plugin_utils import server_config
from ansible_collections.llmserve.sglang.tests.unit.differential import COUNT, pick

BASELINE = "3e44798"
SEED = 4747
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
MISSING = object()


@pytest.fixture(scope="module")
def old_addresses(baseline_module):
    return baseline_module(BASELINE, "plugins/plugin_utils/addresses.py")


@pytest.fixture(scope="module")
def old_server_config(baseline_module):
    return baseline_module(BASELINE, "plugins/plugin_utils/server_config.py")


HOSTS = (["127.0.0.1", "10.0.0.5", " 10.0.0.5 ", "0.0.0.0", "::", "::1", "fd00::5", "2001:DB8::1",
          "2001:db8:0:0:0:0:0:1", "0:0:0:0:0:0:0:0", "::ffff:10.0.0.1", "", None],
         ["gpu-1", "127.1", "10.0.0.1\n", "[::1]", "fe80::1%eth0", 5, "1.2.3.04", "0x7f000001", "10.0.0.1 x",
          "\u00a010.0.0.1", ["10.0.0.1"]])
PORTS = ([30000, "30000", " 30001", "+30002", "030000", 8000, 65535, 1],
         [0, 70000, None, "", True, 30000.0, "3e4", "30000\n", -1, "abc", "0x7530", 2 ** 70])
ARGS = ([{}, None, {"ssl_certfile": "/c"}, {"--ssl-certfile": "/c", "enable-metrics": True}, {"ssl_certfile": ""},
         {"enable_metrics": "yes"}, {"ssl-certfile": False}, {"dtype": "bfloat16"}],
        ["not a dict", {"ssl_certfile": None}, {"ssl_certfile": "/c\n"}, {"enable_metrics": "maybe"}])
ANSIBLE_HOSTS = (["10.0.0.9", "GPU-1.example.", "fd00::7", "localhost", ""], ["bad host", "10.0.0.9\n", 7, None])
FACTS = ([{}, {"default_ipv4": {"address": "192.0.2.2"}}, {"default_ipv6": {"address": "fd00::2"}},
          {"default_ipv4": {"address": "192.0.2.2"}, "default_ipv6": {"address": "fd00::2"}}],
         [{"default_ipv4": {"address": "nope"}}, {"default_ipv4": "x"}, "facts", None])


def generate_hostvars(rng):
    rate = rng.choice((0.0, 0.1, 0.3, 0.6))
    hostvars = {"inventory_hostname": pick(rng, ("gpu-1", "10.7.7.7", "w'1"), (None, ""), rate),
                "sglang_server_host": pick(rng, *HOSTS, rate=rate),
                "sglang_server_port": pick(rng, *PORTS, rate=rate),
                "sglang_server_metrics": pick(rng, (True, False, "yes", None), ("maybe",), rate),
                "sglang_server_args": pick(rng, *ARGS, rate=rate),
                "sglang_server_node_group": pick(rng, ("", "", "mn", None), (), rate),
                "sglang_server_dist_init_host": pick(rng, ("", "10.1.0.1", "fd00::9"), ("[fd00::9]", "gpu-x"), rate),
                "sglang_server_dist_init_port": pick(rng, (25000, "26000", None), (0, "x", ""), rate),
                "ansible_host": pick(rng, *ANSIBLE_HOSTS, rate=rate),
                "ansible_facts": pick(rng, *FACTS, rate=rate)}
    for key in list(hostvars):
        if rng.random() < 0.12:
            del hostvars[key]
    return hostvars


def _outcome(function, *args):
    try:
        return function(*args)
    except Exception as exc:  # pylint: disable=broad-except
        return ("raised", type(exc).__name__, str(exc))


def _role_url(old_addresses, hostvars):
    """What the role probed before: sglang_base_url(sglang_server_args, sglang_server_host, sglang_server_port), the
    role's default for a variable not given; None where it failed."""
    try:
        return old_addresses.probe_url(hostvars.get("sglang_server_host", "127.0.0.1"),
                                       hostvars.get("sglang_server_port", 30000), hostvars.get("sglang_server_args"))
    except ValueError:
        return None


def _without_probe(found):
    if not isinstance(found, dict):
        return found
    return dict(found, api=dict(found["api"], probe_url="-"), metrics=dict(found["metrics"], probe_url="-"))


def test_server_addresses_matches_the_baseline_and_probes_where_the_role_did(old_addresses):
    rng = random.Random(SEED)
    counts = {"problems": 0, "probe_none": 0, "spelling": 0, "baseline_none": 0, "now_none": 0}
    for number in range(COUNT):
        hostvars = generate_hostvars(rng)
        new, old = _outcome(addresses.server_addresses, hostvars), _outcome(old_addresses.server_addresses, hostvars)
        assert _without_probe(new) == _without_probe(old), "case %d differs: %r" % (number, hostvars)
        url = _role_url(old_addresses, hostvars)
        assert new["api"]["probe_url"] == url, "case %d: %r" % (number, hostvars)
        enabled = new["metrics"]["enabled"]
        assert new["metrics"]["probe_url"] == (url + "/metrics" if url and enabled else None), number
        counts["problems"] += bool(new["problems"])
        counts["probe_none"] += url is None
        # where the baseline's server_addresses was not the role's URL: it probed the normalised bind address
        # (2001:db8::1 for 2001:DB8::1), and had none for a port it reads otherwise ("030000") or a host the bind
        # rule refuses, one for a host with a line break
        before = old["api"]["probe_url"]
        counts["spelling"] += before is not None and url is not None and before != url
        counts["baseline_none"] += before is None and url is not None
        counts["now_none"] += before is not None and url is None
    print("\n%d cases (seed %d): %r" % (COUNT, SEED, counts))
    assert COUNT * 0.1 < counts["problems"] < COUNT * 0.9, counts
    assert COUNT * 0.05 < counts["probe_none"] < COUNT * 0.5, counts
    assert counts["spelling"] and counts["baseline_none"] and counts["now_none"], counts


def test_not_a_dict_is_refused_as_before(old_addresses):
    for value in ("x", None, ["a"]):
        assert _outcome(addresses.server_addresses, value) == _outcome(old_addresses.server_addresses, value)


# ---- server_config: the role's variables, resolved as the action reads them ----------------------------------------

def _base_variables():
    with open(os.path.join(ROOT, "roles", "sglang_server", "defaults", "main.yml"), encoding="utf-8") as handle:
        variables = yaml.safe_load(handle)
    variables.update(sglang_server_model_path="/models/m", sglang_server_install="none",
                     sglang_server_python="/usr/bin/python3", sglang_server_api_key="k-1", sglang_server_p2p_ok=None)
    variables["__sglang_server_config_path"] = "/etc/sglang/sglang.yaml"
    variables["__sglang_server_base_env"] = {"HOME": "/var/lib/sglang", "HF_HOME": "/var/lib/sglang/hf",
                                             "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1",
                                             "PYTHONPATH": "/etc/sglang/pylib",
                                             "LLMSERVE_REDACT_CONFIG": "/etc/sglang/sglang.yaml"}
    return variables


def _resolved(variables):
    """The private variables vars/main.yml derives from the ones the generator changes."""
    variables = dict(variables)
    variables["__sglang_server_service_spec"] = {
        "prefix": "sglang_server_", "user": variables["sglang_server_user"], "group": variables["sglang_server_group"],
        "user_create": True, "account_home": variables["sglang_server_home"], "deploy_users": ["deploy", ""],
        "directories": dict((name, variables[name]) for name in (
            "sglang_server_home", "sglang_server_config_dir", "sglang_server_state_dir", "sglang_server_cache_root")),
        "venvs": {"sglang_server_venv": variables["sglang_server_venv"]}, "unit_name": variables["sglang_server_unit_name"],
        "trust": {"sglang_server_python": ["/usr/bin"]}}
    variables["__sglang_server_ranges"] = dict((name, [variables[name], low, high]) for name, low, high in (
        ("sglang_server_restart_sec", 30, 3600), ("sglang_server_timeout_stop_sec", 1, 86400),
        ("sglang_server_journal_lines", 0, 10000)))
    return variables


def generate_variables(rng, base):
    rate = rng.choice((0.0, 0.1, 0.3, 0.6))
    variables = dict(base)
    variables.update(
        sglang_server_host=pick(rng, *HOSTS, rate=rate), sglang_server_port=pick(rng, *PORTS, rate=rate),
        sglang_server_args=pick(rng, *ARGS, rate=rate),
        sglang_server_metrics=pick(rng, (True, False), ("yes", None), rate),
        sglang_server_api_key=pick(rng, ("k-1", ""), ("-k", "a b"), rate),
        sglang_server_allow_unauthenticated=pick(rng, (False, True), ("no",), rate),
        sglang_server_tp_size=pick(rng, (1, 2), (0, "x"), rate), sglang_server_gpus=pick(rng, ([], [0, 1]), ([0],), rate),
        sglang_server_restart_sec=pick(rng, (30, 60), (5, "x"), rate),
        sglang_server_user=pick(rng, ("sglang",), ("root",), rate),
        sglang_server_dist_init_host=pick(rng, ("", "10.1.0.1"), ("gpu-x",), rate),
        sglang_server_dist_init_port=pick(rng, (25000,), ("x",), rate))
    if rng.random() < 0.05:
        variables["sglang_server_node_group"] = "mn"
    for name in server_config.ADDRESS_VARIABLES:
        if rng.random() < 0.2:
            del variables[name]
    return _resolved(variables)


def test_server_config_matches_the_baseline(old_server_config):
    rng = random.Random(SEED + 1)
    base = _base_variables()
    count = COUNT // 4
    valid = 0
    for number in range(count):
        variables = generate_variables(rng, base)
        new = _outcome(server_config.server_config, variables, {}, "gpu-1")
        old = _outcome(old_server_config.server_config, variables, {}, "gpu-1")
        if isinstance(new, dict):
            # the model link (issue 48) came after the baseline: for these model paths (no store revision) it is off
            added = dict((key, new.pop(key)) for key in ("model_link", "model_dir", "weight_version"))
            assert added == {"model_link": "", "model_dir": "", "weight_version": ""}, added
        assert new == old, "case %d differs: %r" % (number, variables)
        if isinstance(new, dict):
            valid += 1
            host = {"ansible_host": "10.0.0.9", "ansible_facts": {"default_ipv4": {"address": "192.0.2.2"}}}
            hostvars = dict((name, variables[name]) for name in addresses.HOSTVARS if name in variables)
            hostvars.update(host, inventory_hostname="gpu-1")
            assert server_config.host_addresses(variables, "gpu-1", host) == addresses.server_addresses(hostvars)
    print("\n%d cases (seed %d): %d valid" % (count, SEED + 1, valid))
    assert count * 0.05 < valid < count * 0.95, valid


def test_server_config_problems_are_compared_with_their_messages(old_server_config):
    variables = _resolved(dict(_base_variables(), sglang_server_host="gpu-1", sglang_server_restart_sec=5))
    new = _outcome(server_config.server_config, variables, {}, "gpu-1")
    old = _outcome(old_server_config.server_config, variables, {}, "gpu-1")
    assert new == old and new[0] == "raised" and "sglang_server_restart_sec" in new[2]
