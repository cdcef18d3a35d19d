# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The SGLang model gateway rules (plugins/plugin_utils/gateway_config.py): worker URLs from the inventory, every
refusal with the variable it names, the rendered smg command line, and that no secret reaches a message."""

from __future__ import annotations

import copy
import os
import time

import pytest
import yaml

from ansible_collections.llmserve.sglang.plugins.plugin_utils import gateway_config as gc
from ansible_collections.llmserve.sglang.tests.unit.plugins.module_utils.source_imports import top_level_imports

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
ADMIN = "adm-0123456789abcdef"
WORKER = "sk-worker-key"


def worker(name, host="0.0.0.0", port=30000, ansible_host="", ipv4="", ipv6="", api_key=WORKER, args=None):
    return {"name": name, "host": host, "port": port, "args": args or {}, "api_key": api_key,
            "ansible_host": ansible_host, "ipv4": ipv4, "ipv6": ipv6}


def base(**overrides):
    """The role's defaults (without prefix) for a gateway gw (10.0.0.1) in front of w1, w2."""
    with open(os.path.join(ROOT, "roles", "sglang_gateway", "defaults", "main.yml"), encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)
    cfg = {key[len("sglang_gateway_"):]: value for key, value in defaults.items()}
    cfg.update({"gateway_name": "gw", "gateway_address": "10.0.0.1", "host": "10.0.0.1", "admin_api_key": ADMIN,
                "workers": [worker("w1", ansible_host="10.0.0.11"), worker("w2", ansible_host="10.0.0.12")]})
    cfg.update(overrides)
    return cfg


def errors(**overrides):
    return gc.validate_gateway_config(base(**overrides))


def test_imports_only_the_standard_library_and_the_collection():
    assert top_level_imports(gc.__file__) == {"__future__", "json", "re", "ansible_collections"}


def test_worker_defaults_follow_the_sglang_server_role():
    with open(os.path.join(ROOT, "roles", "sglang_server", "defaults", "main.yml"), encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)
    assert (gc.WORKER_DEFAULT_HOST, gc.WORKER_DEFAULT_PORT) == (defaults["sglang_server_host"],
                                                                defaults["sglang_server_port"])


def test_policy_choices_and_variables_match_the_argument_specs():
    role = os.path.join(ROOT, "roles", "sglang_gateway")
    with open(os.path.join(role, "meta", "argument_specs.yml"), encoding="utf-8") as handle:
        specs = yaml.safe_load(handle)["argument_specs"]
    with open(os.path.join(role, "defaults", "main.yml"), encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)
    for entry in ("main", "validate"):
        options = specs[entry]["options"]
        assert set(options) == set(defaults), entry
        for name, spec in options.items():
            assert spec.get("default") == defaults[name], name
    assert tuple(specs["main"]["options"]["sglang_gateway_policy"]["choices"]) == gc.POLICIES
    assert specs["main"]["options"]["sglang_gateway_admin_api_key"]["no_log"] is True
    assert specs["main"]["options"]["sglang_gateway_worker_api_key"]["no_log"] is True


def test_a_good_configuration_renders_the_smg_command_line():
    rendered = gc.render_gateway(base(args={"request_timeout_secs": 600, "dp_aware": True, "cors_allowed_origins":
                                            ["https://a.example", "https://b.example"], "upstream_http2": False}))
    assert rendered["argv"] == [
        "--host", "10.0.0.1", "--port", "8000", "--worker-urls", "http://10.0.0.11:30000", "http://10.0.0.12:30000",
        "--policy", "cache_aware", "--prometheus-host", "10.0.0.1", "--prometheus-port", "29000",
        "--health-check-interval-secs", "10", "--health-check-timeout-secs", "5", "--health-failure-threshold", "3",
        "--health-success-threshold", "2", "--health-check-endpoint", "/health", "--retry-max-retries", "5",
        "--retry-initial-backoff-ms", "50", "--retry-max-backoff-ms", "30000", "--shutdown-grace-period-secs", "180",
        "--log-level", "info", "--log-json", "--control-plane-audit-enabled",
        "--cors-allowed-origins", "https://a.example", "https://b.example", "--dp-aware",
        "--request-timeout-secs", "600"]
    assert rendered["env_file"] == {"LLMSERVE_SMG_ADMIN_API_KEY": ADMIN, "LLMSERVE_SMG_API_KEY": WORKER}
    assert rendered["workers"] == [{"name": "w1", "url": "http://10.0.0.11:30000"},
                                   {"name": "w2", "url": "http://10.0.0.12:30000"}]
    assert rendered["base_url"] == "http://10.0.0.1:8000"
    assert rendered["readiness_url"] == "http://10.0.0.1:8000/readiness"
    assert rendered["workers_url"] == "http://10.0.0.1:8000/workers"
    assert rendered["metrics_url"] == "http://10.0.0.1:29000/metrics"
    assert rendered["privileged_port"] is False and rendered["authenticated_data_plane"] is True
    assert not any(ADMIN in token or WORKER in token for token in rendered["argv"])


@pytest.mark.parametrize("host,port,extra,url", [
    ("10.0.0.21", 30001, {}, "http://10.0.0.21:30001"),                        # a specific address wins
    ("0.0.0.0", None, {"ansible_host": "gpu-1.Example.internal"}, "http://gpu-1.example.internal:30000"),
    ("0.0.0.0", 30000, {"ipv4": "192.0.2.7", "ipv6": "2001:db8::7"}, "http://192.0.2.7:30000"),
    ("::", 30000, {"ipv4": "192.0.2.7", "ipv6": "2001:DB8:0::7"}, "http://[2001:db8::7]:30000"),
    ("::", 30000, {"ipv4": "192.0.2.7"}, "http://192.0.2.7:30000"),            # dual-stack bind, IPv4 fact only
    ("::", 30000, {"ansible_host": "2001:db8::8"}, "http://[2001:db8::8]:30000"),
    ("fd00::21", 30000, {}, "http://[fd00::21]:30000"),
    ("10.0.0.21", 30000, {"args": {"ssl_certfile": "/etc/sglang/tls.crt", "ssl_keyfile": "/k"}},
     "https://10.0.0.21:30000"),
    (None, None, {"ansible_host": "10.0.0.99"}, None),                          # sglang_server's 127.0.0.1, below
])
def test_worker_urls(host, port, extra, url):
    entry = worker("w1", host=host, port=port, ansible_host=extra.get("ansible_host", ""),
                   ipv4=extra.get("ipv4", ""), ipv6=extra.get("ipv6", ""), args=extra.get("args"))
    cfg = base(workers=[entry])
    if url is None:
        # unset host: the worker binds sglang_server's default 127.0.0.1, unreachable from the gateway's host
        assert any(e.startswith("hostvars['w1'].sglang_server_host: w1 is reached at the loopback address 127.0.0.1")
                   for e in gc.validate_gateway_config(cfg))
        return
    assert gc.render_gateway(cfg)["worker_urls"] == [url]


def test_loopback_workers_are_fine_on_the_gateways_own_host():
    same_name = worker("gw", host="127.0.0.1", port=30000)
    same_address = worker("w2", host="127.0.0.1", port=30001, ansible_host="10.0.0.1")
    rendered = gc.render_gateway(base(workers=[same_name, same_address]))
    assert rendered["worker_urls"] == ["http://127.0.0.1:30000", "http://127.0.0.1:30001"]


@pytest.mark.parametrize("overrides,expected", [
    ({"workers": []}, "sglang_gateway_workers_group: the inventory group 'sglang_servers' has no hosts"),
    ({"workers": [worker("w1", ansible_host="10.0.0.11"), worker("w2", ansible_host="10.0.0.11")]},
     "hostvars['w2']: reaches the same URL http://10.0.0.11:30000 as w1"),
    ({"workers": [worker("w1", host="10.0.0.11"), worker("w2", ansible_host="10.0.0.11")]},
     "hostvars['w2']: reaches the same URL http://10.0.0.11:30000 as w1"),
    ({"workers": [worker("w1", host="127.0.0.1")]},
     "hostvars['w1'].sglang_server_host: w1 is reached at the loopback address 127.0.0.1, which the gateway on gw "
     "(another host) cannot reach"),
    ({"workers": [worker("w1", host="::1")]}, "hostvars['w1'].sglang_server_host: w1 is reached at the loopback "
                                              "address ::1"),
    ({"workers": [worker("w1", ansible_host="localhost")]}, "hostvars['w1'].ansible_host: w1 is reached at the "
                                                            "loopback address localhost"),
    ({"workers": [worker("w1")]}, "hostvars['w1'].sglang_server_host: w1 binds 0.0.0.0, so the gateway needs an "
                                  "address to reach it: set its ansible_host, or gather its facts (default_ipv4)"),
    ({"workers": [worker("w1", host="::")]}, "gather its facts (default_ipv4/default_ipv6)"),
    ({"workers": [worker("w1", ansible_host="2001:db8::1")]},
     "hostvars['w1'].ansible_host: is the IPv6 address 2001:db8::1, but w1 binds 0.0.0.0 (IPv4 only)"),
    ({"workers": [worker("w1", ansible_host="bad host!")]}, "hostvars['w1'].ansible_host: must be a host name or an IP"),
    ({"workers": [worker("w1", host="gpu-1")]}, "hostvars['w1'].sglang_server_host: must be an IP address"),
    ({"workers": [worker("w1", ansible_host="10.0.0.11", port=70000)]},
     "hostvars['w1'].sglang_server_port: must be an integer between 1 and 65535, got int 70000"),
    ({"workers": [worker("w1", ansible_host="10.0.0.1", port=8000)]},
     "sglang_gateway_port: clashes with worker w1 on the same host, which listens on port 8000"),
    ({"workers": [worker("gw", host="127.0.0.1", port=29000)]},
     "sglang_gateway_metrics_port: clashes with worker gw on the same host, which listens on port 29000"),
    ({"metrics_port": 8000}, "sglang_gateway_metrics_port: must differ from sglang_gateway_port (8000)"),
    ({"port": 0}, "sglang_gateway_port: must be an integer between 1 and 65535, got int 0"),
    ({"port": "80x"}, "sglang_gateway_port: must be an integer between 1 and 65535, got '80x'"),
    ({"host": "gateway.example"}, "sglang_gateway_host: must be an IP address (smg binds it"),
    ({"host": "[::1]"}, "sglang_gateway_host: must be an IP address"),
    ({"host": "fe80::1%eth0"}, "sglang_gateway_host: must be an IP address"),
    ({"metrics_host": "metrics.example"}, "sglang_gateway_metrics_host: must be an IP address"),
    ({"policy": "cache-aware"}, "sglang_gateway_policy: must be one of smg 1.13.0's routing policies"),
    ({"policy": "bucket"}, "sglang_gateway_policy: must be one of smg 1.13.0's routing policies"),
    ({"health_check_interval": 0}, "sglang_gateway_health_check_interval: must be an integer >= 1, got int 0"),
    ({"health_failure_threshold": True}, "sglang_gateway_health_failure_threshold: must be an integer >= 1, got "
                                         "boolean true"),
    ({"health_check_endpoint": "//evil/health"}, "sglang_gateway_health_check_endpoint: must be a plain absolute"),
    ({"retry_max_retries": 0}, "sglang_gateway_retry_max_retries: must be an integer between 1 and 100"),
    ({"retry_max_backoff_ms": 10}, "sglang_gateway_retry_max_backoff_ms: must be >= "
                                   "sglang_gateway_retry_initial_backoff_ms (50), got 10"),
    ({"log_level": "trace"}, "sglang_gateway_log_level: must be one of debug, info, warn, error"),
    ({"log_json": "maybe"}, "sglang_gateway_log_json: must be true or false"),
    ({"tls_cert_path": "/etc/ssl/gw.pem"}, "sglang_gateway_tls_cert_path: and sglang_gateway_tls_key_path go "
                                           "together"),
    ({"worker_ca_path": "relative/ca.pem"}, "sglang_gateway_worker_ca_path: must be an absolute path"),
    ({"admin_api_key": ""}, "sglang_gateway_admin_api_key: must be set: without a control-plane key smg 1.13.0 lets "
                            "anyone who reaches the gateway"),
    ({"admin_api_key": "short"}, "sglang_gateway_admin_api_key: must be at least 16 characters long"),
    ({"admin_api_key": WORKER + "-but-longer", "worker_api_key": WORKER + "-but-longer",
      "workers": [worker("w1", ansible_host="10.0.0.11", api_key="")]},
     "sglang_gateway_admin_api_key: must differ from the workers' API key"),
    ({"workers": [worker("w1", ansible_host="10.0.0.11"), worker("w2", ansible_host="10.0.0.12", api_key="other")]},
     "sglang_gateway_worker_api_key: the workers' sglang_server_api_key values differ (w1 vs w2; values not shown)"),
    ({"worker_api_key": "explicit-key"}, "sglang_gateway_worker_api_key: differs from the sglang_server_api_key of "
                                         "w1, w2 (values not shown)"),
    ({"workers": [worker("w1", ansible_host="10.0.0.11", api_key="has space")]},
     "hostvars['w1'].sglang_server_api_key: must be printable ASCII without spaces"),
    ({"workers": [worker("w1", ansible_host="10.0.0.11", api_key="")]},
     "sglang_gateway_host: binds the non-loopback address 10.0.0.1 without an API key"),
    ({"args": {"api-key": "x"}}, "sglang_gateway_args.api-key: is refused: the workers' API key is "
                                 "sglang_gateway_worker_api_key"),
    ({"args": {"--control_plane_api_keys": ["a:b:admin:x"]}}, "sglang_gateway_args.--control_plane_api_keys: is "
                                                              "refused"),
    ({"args": {"api": "x"}}, "sglang_gateway_args.api: abbreviates --api-key"),
    ({"args": {"tenant-api": "t:x"}}, "sglang_gateway_args.tenant-api: abbreviates --tenant-api-key"),
    ({"args": {"enable_mesh": True}}, "sglang_gateway_args.enable_mesh: is refused: opens an unauthenticated"),
    ({"args": {"enable-rl": True}}, "sglang_gateway_args.enable-rl: is refused: mounts a second control plane"),
    ({"args": {"policy": "random"}}, "sglang_gateway_args.policy: is set by the role from its own variable"),
    ({"args": {"worker_urls": ["http://x:1"]}}, "sglang_gateway_args.worker_urls: is set by the role"),
    ({"args": {"Bad Flag": 1}}, "sglang_gateway_args.Bad Flag: is not an smg flag name"),
    ({"args": {"request-timeout-secs": {"a": 1}}}, "sglang_gateway_args.request-timeout-secs: values must be strings "
                                                   "or numbers"),
    ({"args": {"model-alias": "a=b\nExecStartPre=+/bin/true"}},
     "sglang_gateway_args.model-alias: contains a control character (LF at offset 3)"),
    ({"args": ["--dp-aware"]}, "sglang_gateway_args: must be a dict of smg flags"),
    ({"args": {"cors_allowed_origins": ["https://a.example", "-x"]}},
     "sglang_gateway_args.cors_allowed_origins: a value in a list must not start with '-'"),
    ({"unit_name": "../../etc/evil"}, "sglang_gateway_unit_name: must be a plain systemd unit name"),
    ({"unit_name": "gateway.service"}, "sglang_gateway_unit_name: must be a plain systemd unit name"),
    ({"user": "root\nExecStartPre=+/bin/true"}, "sglang_gateway_user: contains a control character (LF at offset 4)"),
    ({"group": "-wheel"}, "sglang_gateway_group: must be a group name"),
    ({"config_dir": "/"}, "sglang_gateway_config_dir: must be a normalised absolute path other than /"),
    ({"config_dir": "/etc/sglang gateway"}, "sglang_gateway_config_dir: must not contain whitespace"),
    ({"venv": "opt/venv"}, "sglang_gateway_venv: must be an absolute path"),
    ({"venv": "/opt/../venv"}, "sglang_gateway_venv: must not contain '..' components"),
])
def test_refusals_name_the_variable_and_the_rule(overrides, expected):
    found = errors(**overrides)
    assert any(expected in message for message in found), found


def test_an_open_data_plane_can_be_allowed_explicitly():
    cfg = base(allow_unauthenticated=True, workers=[worker("w1", ansible_host="10.0.0.11", api_key="")])
    rendered = gc.render_gateway(cfg)
    assert rendered["env_file"] == {"LLMSERVE_SMG_ADMIN_API_KEY": ADMIN}
    assert rendered["authenticated_data_plane"] is False
    assert any(w.startswith("sglang_gateway_host: 10.0.0.1 serves the models to anyone") for w in rendered["warnings"])
    # on loopback only local users reach it: no key needed, no warning about it
    cfg = base(host="127.0.0.1", workers=[worker("gw", host="127.0.0.1", api_key="")])
    assert gc.validate_gateway_config(cfg) == []


def test_the_workers_key_comes_from_the_workers_or_the_variable():
    # one worker without a key gets the others' (warned); an explicit key equal to theirs is fine
    cfg = base(workers=[worker("w1", ansible_host="10.0.0.11"), worker("w2", ansible_host="10.0.0.12", api_key="")])
    rendered = gc.render_gateway(cfg)
    assert rendered["env_file"]["LLMSERVE_SMG_API_KEY"] == WORKER
    assert any("w2 set no sglang_server_api_key" in w for w in rendered["warnings"])
    assert gc.render_gateway(base(worker_api_key=WORKER))["env_file"]["LLMSERVE_SMG_API_KEY"] == WORKER
    keyless = base(worker_api_key="explicit-key", workers=[worker("w1", ansible_host="10.0.0.11", api_key="")])
    assert gc.render_gateway(keyless)["env_file"]["LLMSERVE_SMG_API_KEY"] == "explicit-key"


@pytest.mark.parametrize("host,base_url,metrics_url", [
    ("0.0.0.0", "http://127.0.0.1:8000", "http://127.0.0.1:29000/metrics"),
    ("::", "http://[::1]:8000", "http://[::1]:29000/metrics"),
    ("fd00::5", "http://[fd00::5]:8000", "http://[fd00::5]:29000/metrics"),
])
def test_probe_urls_of_wildcard_and_ipv6_listeners(host, base_url, metrics_url):
    rendered = gc.render_gateway(base(host=host))
    assert (rendered["base_url"], rendered["metrics_url"]) == (base_url, metrics_url)
    assert rendered["argv"][:2] == ["--host", host]


def test_tls_listener_privileged_port_and_dash_values():
    rendered = gc.render_gateway(base(port=443, tls_cert_path="/etc/ssl/gw.pem", tls_key_path="/etc/ssl/gw.key",
                                      worker_ca_path="/etc/ssl/ca.pem", args={"model-alias": "-odd=name"}))
    argv = rendered["argv"]
    assert rendered["base_url"] == "https://10.0.0.1:443" and rendered["privileged_port"] is True
    assert argv[argv.index("--tls-cert-path") + 1] == "/etc/ssl/gw.pem"
    assert argv[argv.index("--tls-key-path") + 1] == "/etc/ssl/gw.key"
    assert argv[argv.index("--ca-cert-paths") + 1] == "/etc/ssl/ca.pem"
    assert "--model-alias=-odd=name" in argv


HOSTILE_SECRETS = ["sk-\x00nul", "sk-\nline", "sk-\x1b[2Jesc", "sk- space", "sk-\u2028sep", "sk-é-non-ascii"]


@pytest.mark.parametrize("secret", HOSTILE_SECRETS)
@pytest.mark.parametrize("variable", ["admin_api_key", "worker_api_key"])
def test_hostile_secrets_are_refused_without_being_shown(variable, secret):
    value = secret + "-0123456789abcdef"
    found = errors(**{variable: value})
    assert any(m.startswith("sglang_gateway_%s:" % variable) for m in found), found
    text = "\n".join(found)
    assert value not in text and secret not in text and "0123456789abcdef" not in text


def test_no_secret_appears_in_any_message():
    secret_admin, secret_worker, other = "ADMINSECRET-aaaaaaaaaaaa", "WORKERSECRET-bbbb", "OTHERSECRET-cccc"
    cfgs = [
        base(admin_api_key=secret_worker, worker_api_key=secret_worker),
        base(admin_api_key=secret_admin, workers=[worker("w1", ansible_host="10.0.0.11", api_key=secret_worker),
                                                  worker("w2", ansible_host="10.0.0.12", api_key=other)]),
        base(admin_api_key=secret_admin, worker_api_key=other,
             workers=[worker("w1", ansible_host="10.0.0.11", api_key=secret_worker)]),
        base(admin_api_key="short-" + "x", workers=[worker("w1", host="127.0.0.1", api_key=secret_worker)]),
    ]
    for cfg in cfgs:
        check = gc._Check(cfg)  # pylint: disable=protected-access
        text = "\n".join(check.errors + check.warnings)
        assert check.errors
        for secret in (secret_admin, secret_worker, other, "short-x"):
            assert secret not in text, text
        with pytest.raises(gc.GatewayConfigError) as info:
            gc.render_gateway(cfg)
        assert all(s not in str(info.value) for s in (secret_admin, secret_worker, other))


def test_hostile_names_and_huge_values_are_handled_quickly():
    started = time.monotonic()
    found = errors(host="1" * 1000000, port="9" * 1000000, policy="x" * 100000,
                   workers=[worker("w\x00\nExecStartPre=+/bin/true", host="127.0.0.1"),
                            worker("w2", ansible_host="a" * 300)])
    assert time.monotonic() - started < 5
    assert len(found) == 5 and all(len(m) < 600 for m in found), found
    assert not any(c in m for m in found for c in "\x00\n")
    assert any(m.startswith("sglang_gateway_port: must be an integer between 1 and 65535, got '999") for m in found)
    assert any(m.startswith("hostvars['w2'].ansible_host: must be a host name or an IP address") for m in found)
    # a worker name with control characters is shown escaped
    assert any(m.startswith("hostvars['w\\x00\\x0aExecStartPre=+/bin/true'].sglang_server_host: ") for m in found)


def test_bad_shapes():
    with pytest.raises(TypeError):
        gc.validate_gateway_config(["not", "a", "dict"])
    assert any(m.startswith("sglang_gateway_workers_group: the workers must be a list")
               for m in errors(workers="w1,w2"))
    assert any(m.startswith("sglang_gateway_workers_group: worker 0 is not a dict with a 'name'")
               for m in errors(workers=[{"host": "10.0.0.1"}]))


def test_workers_check():
    expected = ["http://10.0.0.11:30000", "http://10.0.0.12:30000"]
    listed = [{"url": "http://10.0.0.11:30000", "is_healthy": True, "status": "ready"},
              {"url": "http://10.0.0.12:30000/", "is_healthy": False, "status": "pending"},
              {"url": "http://10.0.0.99:30000", "is_healthy": True, "status": "ready"}]
    assert gc.workers_check(listed, expected) == {
        "missing": [], "unhealthy": ["http://10.0.0.12:30000"], "extra": ["http://10.0.0.99:30000"], "ok": False,
        "states": {"http://10.0.0.11:30000": "healthy", "http://10.0.0.12:30000": "unhealthy (pending)",
                   "http://10.0.0.99:30000": "extra, healthy"}}
    assert gc.workers_check(listed[:1], expected) == {
        "missing": ["http://10.0.0.12:30000"], "unhealthy": [], "extra": [], "ok": False,
        "states": {"http://10.0.0.11:30000": "healthy", "http://10.0.0.12:30000": "not registered"}}
    healthy = copy.deepcopy(listed)
    healthy[1]["is_healthy"] = True
    assert gc.workers_check(healthy, expected)["ok"] is True  # an extra worker does not fail the check
    assert gc.workers_check(None, expected) == {"missing": expected, "unhealthy": [], "extra": [], "ok": False,
                                                "states": {url: "not registered" for url in expected}}
    assert gc.workers_check([{"url": 5}, "junk"], expected)["missing"] == expected


# ---- addresses as the resolver reads them; listeners and destinations in sglang_gateway_args ---------------------

@pytest.mark.parametrize("text,expected", [
    ("127.0.0.1", "127.0.0.1"),
    ("127.1", "127.0.0.1"),
    ("0x7f000001", "127.0.0.1"),
    ("2130706433", "127.0.0.1"),
    ("0177.0.0.1", "127.0.0.1"),
    ("127.0.1", "127.0.0.1"),
    ("::ffff:127.0.0.1", "127.0.0.1"),
    ("::FFFF:7f00:1", "127.0.0.1"),
    ("0", "0.0.0.0"),
    ("10.0.0.11", "10.0.0.11"),
    ("2001:db8::1", "2001:db8::1"),
    ("gpu-1.example", None),
    ("4294967296", None),
    ("1.2.3.4.5", None),
    ("08.0.0.1", None),
    ("", None),
])
def test_resolver_address_reads_the_forms_inet_aton_accepts(text, expected):
    parsed = gc.resolver_address(text)
    assert (None if parsed is None else parsed.compressed) == expected


@pytest.mark.parametrize("entry,variable", [
    (worker("w1", ansible_host="127.1"), "ansible_host"),
    (worker("w1", ansible_host="0x7f000001"), "ansible_host"),
    (worker("w1", ansible_host="2130706433"), "ansible_host"),
    (worker("w1", ansible_host="::ffff:127.0.0.1", host="::"), "ansible_host"),
    (worker("w1", host="::ffff:127.0.0.1"), "sglang_server_host"),
    (worker("w1", host="::", ipv6="::ffff:127.0.0.1"), "ansible_host"),
])
def test_loopback_in_disguise_is_not_a_remote_worker(entry, variable):
    found = errors(workers=[entry])
    assert any(e.startswith("hostvars['w1'].%s: w1 is reached at the loopback address 127.0.0.1" % variable)
               for e in found), found


def test_a_numeric_ansible_host_is_written_in_its_plain_form():
    rendered = gc.render_gateway(base(workers=[worker("w1", ansible_host="0x0a00000b")]))
    assert rendered["worker_urls"] == ["http://10.0.0.11:30000"]


@pytest.mark.parametrize("value", ["0.0.0.0", "::", "0", "::ffff:0.0.0.0", "0x0"])
def test_the_rdma_listener_may_not_bind_every_interface(value):
    found = errors(args={"rdma_listen_ip": value})
    assert any(e.startswith("sglang_gateway_args.rdma_listen_ip: binds every interface") for e in found), found


@pytest.mark.parametrize("args,expected", [
    ({"rdma-listen-ip": "rdma.example"}, "sglang_gateway_args.rdma-listen-ip: must be an IP address"),
    ({"rdma-listen": "10.0.0.1"}, "sglang_gateway_args.rdma-listen: abbreviates --rdma-listen-ip"),
    ({"otlp-traces": "127.0.0.1:4317"}, "sglang_gateway_args.otlp-traces: abbreviates --otlp-traces-endpoint"),
])
def test_checked_flags_must_be_spelled_out_and_well_formed(args, expected):
    found = errors(args=args)
    assert any(expected in e for e in found), found


def test_a_specific_rdma_address_is_fine():
    rendered = gc.render_gateway(base(args={"rdma-listen-ip": "10.0.1.5"}))
    assert rendered["argv"][-2:] == ["--rdma-listen-ip", "10.0.1.5"]
    assert not any("rdma" in w for w in rendered["warnings"])


@pytest.mark.parametrize("value", [True, "true", "1"])
def test_private_media_hosts_are_warned_about(value):
    rendered = gc.render_gateway(base(args={"mm_allow_private_media_hosts": value}))
    assert any(w.startswith("sglang_gateway_args.mm_allow_private_media_hosts: lets smg fetch") and "169.254.169.254"
               in w for w in rendered["warnings"]), rendered["warnings"]


def test_private_media_hosts_left_out_are_not_warned_about():
    rendered = gc.render_gateway(base(args={"mm_allow_private_media_hosts": False}))
    assert not any("media" in w for w in rendered["warnings"])


@pytest.mark.parametrize("endpoint,warned", [
    ("collector.example:4317", True),
    ("http://10.0.0.50:4317", True),
    ("https://[2001:db8::5]:4317/v1/traces", True),
    ("0x0a000032:4317", True),
    ("localhost:4317", False),
    ("127.0.0.1:4317", False),
    ("http://[::1]:4317", False),
    ("127.1:4317", False),
])
def test_a_trace_endpoint_off_this_host_is_warned_about(endpoint, warned):
    rendered = gc.render_gateway(base(args={"otlp-traces-endpoint": endpoint}))
    remarks = [w for w in rendered["warnings"] if w.startswith("sglang_gateway_args.otlp-traces-endpoint:")]
    assert bool(remarks) == warned, rendered["warnings"]
    if warned:
        assert "leave this host" in remarks[0]
