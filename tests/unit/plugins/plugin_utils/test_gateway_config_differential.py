# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``gateway_config`` on the rule engine against its class-based version before the port (commit ``BASELINE``):
the same errors and warnings, in the same order, the same rendered unit (or the same exception), for thousands of
gateway configurations from a seeded generator: bad values of every variable, and workers of every shape (wildcard
binds with and without ansible_host or facts, loopback, IPv6, duplicates, bad ports, long and hostile names). The
baseline is read with ``git show``; the test is skipped where that history is not there."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.llmserve.sglang.plugins.plugin_utils import gateway_config
from ansible_collections.llmserve.sglang.tests.unit.differential import COUNT, SEED, baseline_fixture, matching_cases, pick

BASELINE = "3e44798"

ADMIN = "adm-0123456789abcdef"
WORKER_KEY = "sk-worker-key"
LONG_NAME = "gpu-node-" + "x" * 70
# values a user could give any variable by mistake
ODD = (None, "", "  ", True, False, 0, -1, 1.5, [], ["x"], {}, {"a": 1}, "x\n", "\x00", "é" * 5, "x" * 150,
       10 ** 30, "1" * 19)


baseline = baseline_fixture(BASELINE, "plugins/plugin_utils/gateway_config.py")


def _name(rng, position, rate):
    good = ("w%d" % position, "gpu-%d.example" % position, "W%d" % position)
    bad = (LONG_NAME + str(position), "w%d\x00\nExecStartPre=+/bin/true" % position, "gw", "", None, 7,
           "w\u202e%d" % position, "w%d" % max(position - 1, 0))
    return pick(rng, good, bad, rate)


def _worker(rng, position, rate):
    """One worker as the role collects it, from a mix of usual and broken shapes."""
    if rng.random() < rate * 0.1:
        return rng.choice(("w1", None, 5, ["w1"], {"host": "10.0.0.1"}, {"name": ""}))
    if rng.random() < rate + 0.1:
        # shapes the gateway refuses unless the worker shares its host, or whose address is missing
        shape = rng.choice(("loopback", "default", "facts_only", "wildcard_bare"))
    else:
        shape = rng.choice(("ansible_host", "bound", "wildcard4", "wildcard6"))
    worker = {"name": _name(rng, position, rate), "host": "", "port": "", "args": {}, "api_key": WORKER_KEY,
              "ansible_host": "", "ipv4": "", "ipv6": ""}
    if shape == "ansible_host":
        worker.update(host="0.0.0.0", ansible_host=pick(
            rng, ("10.0.0.%d" % (10 + position), "gpu-%d.example" % position, "Node-%d.Example." % position,
                  "0x0a00000%d" % (position % 10), "10.010.0.%d" % position),
            ("127.1", "localhost", "fd00::%d" % (position + 1), "bad_name!", "a" * 300, "x\ny", 5, "10.0.0.1",
             "10.0.0.11", "db.localhost."), rate))
    elif shape == "bound":
        worker["host"] = pick(rng, ("10.0.0.%d" % (20 + position), "fd00::%d" % (20 + position),
                                    "2001:DB8::0:%d" % (position + 1)),
                              ("::ffff:127.0.0.1", "10.0.0.20", "somewhere", "fe80::1%eth0", "[::1]", 5, ["x"],
                               "10.0.0.1"), rate)
    elif shape in ("wildcard4", "wildcard6"):
        worker["host"] = "0.0.0.0" if shape == "wildcard4" else "::"
        worker["ipv4"] = pick(rng, ("10.1.0.%d" % position,) + ("",) * (shape == "wildcard6"),
                              ("127.0.0.1", "nope", 5, None, "10.1.0.1", ""), rate)
        worker["ipv6"] = pick(rng, ("fd01::%d" % (position + 1), ""), ("::1", "::ffff:127.0.0.1", "zzz", None),
                              rate)
        if rng.random() < 0.3:
            worker["ansible_host"] = pick(rng, ("10.2.0.%d" % position,), ("fd02::1", "::1"), rate)
    elif shape == "loopback":
        worker["host"] = rng.choice(("127.0.0.1", "::1", "127.0.0.2", ""))
    elif shape == "wildcard_bare":
        worker["host"] = rng.choice(("0.0.0.0", "::", " :: ", "0:0::0"))
    elif shape == "facts_only":
        worker["host"] = rng.choice(("0.0.0.0", "::"))
        for key in ("ipv4", "ipv6", "ansible_host"):
            if rng.random() < 0.5:
                del worker[key]
    worker["port"] = pick(rng, (30000 + position, str(30000 + position), "", None, " 30001 ", "0030000",
                                "000000000000030000", 30000),
                          (0, 65536, -1, "http", 1.0, True, [], "9" * 30, "0" * 20 + "1", 8000, 29000, "x\n"), rate)
    if rng.random() < 0.3:
        worker["args"] = pick(rng, ({"ssl_certfile": "/etc/c.pem"}, {"--ssl-certfile": "/c"}, {"tp_size": 2}),
                              ("args", ["x"], None), rate)
    worker["api_key"] = pick(rng, (WORKER_KEY, WORKER_KEY, "", None), ("other-key", "a b", "k\x00", 5, ADMIN),
                             rate)
    for key in ("args", "api_key", "port", "host"):
        if rng.random() < 0.03:
            del worker[key]
    return worker


def _workers(rng, rate):
    if rng.random() < rate * 0.1:
        return rng.choice(([], "w1,w2", None, {"w1": {}}, 5))
    workers = [_worker(rng, position, rate) for position in range(rng.choice((1, 1, 2, 2, 3, 4)))]
    if workers and rng.random() < rate:
        workers.append(copy.deepcopy(rng.choice(workers)))  # a duplicate
    return workers


def _args(rng, rate):
    if rng.random() < 0.5:
        return rng.choice(({}, None))
    flags = {}
    for _count in range(rng.choice((1, 2, 3))):
        name = pick(rng, ("request-id-headers", "max_payload_size", "--cors-allowed-origins", "dp-aware",
                          "rdma-listen-ip", "otlp-traces-endpoint", "mm-allow-private-media-hosts",
                          "queue-size"),
                    ("api-key", "port", "health-check-int", "Bad Flag", "mesh", "rdma", "otlp", 5, "",
                     "enable-mesh", "log-dir", "x\n", "tls-cert"), rate)
        value = pick(rng, ("x-request-id", 1024, ["a", "b"], True, False, None, "-5", ["1", "-2"], "10.0.0.5",
                           "127.0.0.1:4317", "http://localhost:4317", "collector.example:4317", [], 2.5),
                     ({"a": 1}, [None], "x\n", ["a", "-x"], "0.0.0.0", "::", ["10.0.0.1", "10.0.0.2"], "nowhere",
                      [True], "127.1"), rate)
        flags[name] = value
    if rng.random() < rate * 0.1:
        return rng.choice((["--x"], "--x", 5))
    return flags


def generate(rng):
    """One configuration: the role's defaults, the variables broken at a random rate, and a set of workers."""
    rate = rng.choice((0.0, 0.0, 0.0, 0.05, 0.15, 0.4))
    odd = 0.3

    def pick(good, bad):
        if rng.random() < rate:
            return rng.choice(ODD) if rng.random() < odd else rng.choice(bad)
        return rng.choice(good)

    cfg = {
        "gateway_name": pick(("gw", "gateway-1"), ("w1", LONG_NAME + "0", None)),
        "gateway_address": pick(("10.0.0.1", "", "gw.example"), ("10.0.0.11", "10.2.0.0")),
        "host": pick(("10.0.0.1", "127.0.0.1", "0.0.0.0", "::", "::1", "fd00::1", " 10.0.0.1 "),
                     ("gateway.example", "[::1]", "fe80::1%eth0", "10.0.0.1:80", "999.1.1.1")),
        "port": pick((8000, "8000", 443, 30000, 80), (0, 65536, "http", "0" * 19 + "1", 29000)),
        "metrics_host": pick(("", "127.0.0.1", "10.0.0.1", None, "::1"), ("somewhere", "[::1]")),
        "metrics_port": pick((29000, "29000", 9090), (0, 70000, "x", 8000)),
        "policy": pick(gateway_config.POLICIES + (" cache_aware ",), ("fastest", "Cache_Aware")),
        "health_check_interval": pick((10, "10", 1), (0, -5, "soon")),
        "health_check_timeout": pick((5, 1), (0, "5s")),
        "health_failure_threshold": pick((3,), (0,)),
        "health_success_threshold": pick((2,), (0, "two")),
        "health_check_endpoint": pick(("/health", "/readiness", " /health "), ("health", "/a b", "/x?y", "//x")),
        "retry_max_retries": pick((5, 1, 100), (0, 101, "x")),
        "retry_initial_backoff_ms": pick((50, 100), (0, "x", 5000)),
        "retry_max_backoff_ms": pick((30000, 100), (0, 10)),
        "shutdown_grace_period": pick((180, 0, 86400), (-1, 86401, "x")),
        "log_level": pick(gateway_config.LOG_LEVELS, ("loud", "INFO", "warning")),
        "log_json": pick((True, False, "yes", "off", None), ("maybe", 2)),
        "audit": pick((True, False, "true", None), ("maybe",)),
        "worker_api_key": pick(("", "", WORKER_KEY, None), ("other-key", "a b", "k\n", 5, ADMIN)),
        "admin_api_key": pick((ADMIN, ADMIN, "adm-fedcba9876543210-x"),
                              ("", "adm", "adm key", WORKER_KEY, "k\x00" * 10, 5)),
        "allow_unauthenticated": pick((False, True, "no", None), ("maybe", 1)),
        "worker_ca_path": pick(("", "/etc/ca.pem", None), ("ca.pem", "/a b", "/x/../y")),
        "tls_cert_path": pick(("",), ("/etc/smg/cert.pem", "cert.pem")),
        "tls_key_path": pick(("",), ("/etc/smg/key.pem", "key.pem")),
        "args": _args(rng, rate),
        "workers_group": pick(("sglang_servers",), ("nosuchgroup", None, "x" * 200)),
        "workers": _workers(rng, rate),
        "unit_name": pick(("sglang-gateway", "smg"), ("smg gateway", "smg.service", "a@b", "")),
        "user": pick(("sglang-gateway",), ("bad user", "",)),
        "group": pick(("sglang-gateway",), ("bad group", "0" * 40)),
        "config_dir": pick(("/etc/sglang-gateway", "/etc/smg"), ("etc/smg", "/", "/etc/smg/", "/etc//smg")),
        "venv": pick(("/opt/sglang-gateway/venv",), ("opt/smg", "/opt/x/")),
    }
    if rng.random() < 0.5:
        # a TLS listener needs both files
        cfg["tls_cert_path"], cfg["tls_key_path"] = "/etc/smg/cert.pem", "/etc/smg/key.pem"
    if rng.random() < 0.3 and cfg["workers"] and isinstance(cfg["workers"], list):
        # a worker on the gateway's own host (same name or the same ansible_host)
        first = cfg["workers"][0]
        if isinstance(first, dict):
            if rng.random() < 0.5:
                first["name"] = cfg["gateway_name"]
            else:
                first["ansible_host"] = cfg["gateway_address"]
    for key in list(cfg):
        if rng.random() < 0.03:
            del cfg[key]
    return cfg


def outcome(module, cfg):
    """Everything a caller sees: the problems, the warnings, the rendered unit or the exception."""
    found = {}
    for label, call in (("errors", lambda: module.validate_gateway_config(copy.deepcopy(cfg))),
                        ("warnings", lambda: module._Check(copy.deepcopy(cfg)).warnings),  # pylint: disable=protected-access
                        ("render", lambda: module.render_gateway(copy.deepcopy(cfg)))):
        try:
            found[label] = call()
        except Exception as exc:  # pylint: disable=broad-except
            found[label] = ("raised", type(exc).__name__, str(exc), getattr(exc, "errors", None))
    return found


def test_rule_engine_port_matches_the_baseline(baseline):
    clean = warned = 0
    for dummy, new in matching_cases(generate, outcome, gateway_config, baseline):
        clean += new["errors"] == []
        warned += bool(new["warnings"]) if isinstance(new["warnings"], list) else 0
    print("\n%d cases (seed %d): %d without problems (rendered), %d with; %d with warnings"
          % (COUNT, SEED, clean, COUNT - clean, warned))
    assert COUNT * 0.05 < clean < COUNT * 0.95, clean


@pytest.mark.parametrize("cfg", ["gw", None, ["x"], 5])
def test_not_a_dict_is_refused_as_before(baseline, cfg):
    assert outcome(gateway_config, cfg) == outcome(baseline, cfg)
