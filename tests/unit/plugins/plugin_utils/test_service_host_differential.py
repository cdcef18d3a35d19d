# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``service_host`` on the rule engine against its class-based version before the port (commit ``BASELINE``): the
same problems, in the same order (or the same exception), for thousands of specs and host states from a seeded
generator. The baseline is read with ``git show``; the test is skipped where that history is not there."""

from __future__ import annotations


from ansible_collections.llmserve.sglang.plugins.plugin_utils import service_host
from ansible_collections.llmserve.sglang.tests.unit.differential import COUNT, SEED, baseline_fixture, matching_cases, pick

BASELINE = "6e286f7"


baseline = baseline_fixture(BASELINE, "plugins/plugin_utils/service_host.py")


def _account(rng, rate, name):
    if rng.random() < 0.3:
        return {"exists": False}
    user = {"exists": True, "uid": pick(rng, (998, 120), (0, 1000, 5, "x"), rate), "gid": pick(rng, (998,), (0, 5), rate),
            "home": pick(rng, ("/var/lib/sglang",), ("/home/x", None), rate),
            "shell": pick(rng, ("/usr/sbin/nologin", "/bin/false"), ("/bin/bash",), rate),
            "comment": pick(rng, (service_host.ACCOUNT_COMMENT, ""), ("Someone",), rate),
            "groups": pick(rng, ([], [name]), (["docker"], ["sudo", "adm"]), rate),
            "primary_group": pick(rng, (name,), ("root", "wheel", None), rate)}
    return user


def generate(rng):
    rate = rng.choice((0.0, 0.0, 0.1, 0.3, 0.6))
    prefix = rng.choice(("sglang_server_", "sglang_gateway_", "", None))
    user = pick(rng, ("sglang", "smg", ""), ("root", "deploy", " sglang "), rate)
    group = pick(rng, ("sglang", "smg"), ("sudo", "docker", "root"), rate)
    pfx = prefix or "sglang_server_"
    spec = {"prefix": prefix, "user": user, "group": group,
            "user_create": pick(rng, (True, False, None, "yes", "no"), ("maybe", 2), rate),
            "account_home": "/var/lib/sglang",
            "deploy_users": pick(rng, (["deploy"], [], None, ["deploy", "", None]), (["sglang"],), rate),
            "directories": {pfx + "home": pick(rng, ("/var/lib/sglang", "relative"), ("/etc", "/tmp/x", "/home/bob"),
                                               rate),
                            "other_dir": pick(rng, ("/srv/sglang",), ("/", "//usr/", "/var/lib/../lib"), rate)},
            "venvs": {pfx + "venv": pick(rng, ("/opt/sglang/venv", "/usr/local/x"), ("/usr", "/opt", "/usr/local/"),
                                         rate)},
            "unit_name": pick(rng, ("sglang", "smg", "", None), ("ssh", "cron"), rate),
            "trust": {pfx + "venv": ["/opt/sglang/venv", "/opt/sglang"]}}
    for key in list(spec):
        if key != "prefix" and rng.random() < 0.1:
            del spec[key]
    if rng.random() < 0.4:
        return spec, None
    name = _text(spec.get("unit_name"))
    own = "/etc/systemd/system/%s.service" % name
    paths = {}
    if rng.random() < rate:
        paths["/lib/systemd/system/%s.service" % name] = {"exists": True}
    if rng.random() < 0.5:
        paths[own] = {"exists": True, "type": pick(rng, ("file",), ("link", "char"), rate)}
    state = {
        "accounts": {"user": _account(rng, rate, group), "group": _group(rng, rate, user),
                     "deployer": {"login_user": pick(rng, ("deploy", None), (user,), rate),
                                  "login_uid": pick(rng, (1000,), (998,), rate),
                                  "sudo_user": pick(rng, (None, "deploy"), (user,), rate)}},
        "paths": paths,
        "heads": {own: pick(rng, (service_host.UNIT_MARKER + "\n",), ("", None), rate)},
        "unit": pick(rng, ({}, {"LoadState": "not-found"},
                           {"LoadState": "loaded", "FragmentPath": own, "Id": "%s.service" % name}),
                     ({"LoadState": "loaded", "FragmentPath": "/lib/systemd/system/x.service", "Id": "x.service"},
                      {"LoadState": "masked"}), rate),
        "trust": {"/opt/sglang": pick(rng, ([],), ([{"path": "/opt", "found": "owner 1000, mode 0775"}],), rate)},
    }
    if rng.random() < 0.05:
        state = rng.choice(("x", [], {}))
    return spec, state


def _group(rng, rate, user):
    if rng.random() < 0.3:
        return {"exists": False}
    return {"exists": True, "gid": pick(rng, (998,), (0,), rate),
            "members": pick(rng, ([], [user]), (["alice", "bob"],), rate),
            "primary_of": pick(rng, ([user], None), (["mallory"],), rate)}


def _text(value):
    return value.strip() if isinstance(value, str) else ""


def outcome(module, spec, state):
    try:
        return module.service_problems(spec, state)
    except Exception as exc:  # pylint: disable=broad-except
        return ("raised", type(exc).__name__, str(exc))


def test_rule_engine_port_matches_the_baseline(baseline):
    clean = 0
    for dummy, new in matching_cases(generate, outcome, service_host, baseline, spread=True):
        clean += new == []
    print("\n%d cases (seed %d): %d without problems, %d with" % (COUNT, SEED, clean, COUNT - clean))
    assert COUNT * 0.05 < clean < COUNT * 0.95, clean


def test_not_a_dict_is_refused_as_before(baseline):
    assert outcome(service_host, "x", None) == outcome(baseline, "x", None)
