# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The sglang_server role's unit, environment and --config files, rendered by Ansible and read back like systemd.

One ansible-playbook run (localhost, no connection) renders every case: each case is a play with the case's
role variables that runs the role's own ``validate`` entry point (the real "Assemble" task and filters) and
records the probe URLs (``__sglang_server_base_url``, ``__sglang_server_ready_url``) and renders the role's three
templates, inside a block whose rescue records the failure message. The rendered files
are then parsed with ``systemd_syntax`` (systemd 252's quoting, escapes, specifiers and $-expansion) and,
where this machine has it, checked with ``systemd-analyze verify`` and ``systemd-analyze security --offline``.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.llmserve.sglang.tests.unit.roles.sglang_server import systemd_syntax as sd
from ansible_collections.llmserve.sglang.plugins.plugin_utils import revision_swap
from ansible_collections.llmserve.sglang.tests.unit.collection_tree import run_plays

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "sglang_server")
API_KEY = "sk-unit-%must$stay\"literal"
HF_TOKEN = "hf_tok$en\"with`specials\\x"

# /proc/devices "Character devices:" as read on an H200 host with the 580.159.04 open kernel module
# (docs: real-gpu-hosts.md), and as printed by a pre-545 proprietary driver (nvidia-frontend on 195).
PROC_DEVICES_580_OPEN = [
    (1, "mem"), (4, "tty"), (5, "/dev/tty"), (10, "misc"), (195, "nvidia"), (195, "nvidiactl"), (238, "nvidia-uvm"),
    (239, "nvidia-nvswitch"), (240, "nvidia-nvlink"), (241, "nvidia-caps"), (242, "nvidia-caps-imex-channels"),
    (254, "rtc"),
]
PROC_DEVICES_535_PROPRIETARY = [
    (1, "mem"), (10, "misc"), (195, "nvidia-frontend"), (236, "nvidia-nvlink"), (237, "nvidia-nvswitch"),
    (508, "nvidia-uvm"), (509, "nvidia-caps"), (254, "rtc"),
]

REVISION_DIR = "/var/lib/llmserve-models/Qwen--Qwen3.5-122B-A10B/"

BASE_VARS = {
    "sglang_server_model_path": "/models/Qwen3.5-122B-A10B",
    "sglang_server_install": "none",
    "sglang_server_python": "/usr/bin/python3",
    "sglang_server_api_key": API_KEY,
    "sglang_server_hf_token": HF_TOKEN,
}

CASES = {
    # the role's defaults with a model: what most hosts get
    "plain": {},
    # '$', '%', quotes and backslashes in the environment: each must reach the process unchanged
    "env_specials": {"sglang_server_env": {"DB_PASSWORD": "pa$word", "PCT": "100%", "QUOTE": "a\"b'c\\d", "SEMI": ";"}},
    # a server with TLS is probed over https
    "tls": {"sglang_server_host": "0.0.0.0", "sglang_server_ready_path": "/health_generate",
            "sglang_server_args": {"ssl_certfile": "/etc/sglang/tls.crt", "ssl_keyfile": "/etc/sglang/tls.key"}},
    # values systemd would otherwise expand, split or unescape: each must reach SGLang unchanged
    "hostile_text": {
        "sglang_server_served_model_name": "50% $HOME \"quoted\" back\\slash ;semi",
        "sglang_server_env": {"DB_PASSWORD": "pa$word", "PCT": "100%", "QUOTE": "a\"b'c\\d", "SEMI": ";"},
        "sglang_server_args": {
            "chunked_prefill_size": -1,
            "tokenizer_path": "-looks-like-an-option",
            "json_model_override_args": {"note": "$x %n \"q\""},
            "log_requests_target": ["stdout", "/var/log/sglang requests"],
        },
    },
    # the NUL injection of the security review: must fail before anything is written
    "nul_in_env": {"sglang_server_env": {"FOO": "x\0ExecStartPre=+/usr/bin/touch /var/pwned\0#"}},
    "newline_in_env": {"sglang_server_env": {"FOO": "x\nExecStartPre=+/usr/bin/touch /var/pwned"}},
    "tab_in_served_name": {"sglang_server_served_model_name": "a\tb"},
    "esc_in_arg": {"sglang_server_args": {"tokenizer_path": "/tok\x1b[2J"}},
    "nul_in_model_path": {"sglang_server_model_path": "/models/m\0ExecStartPre=+/bin/true"},
    "c1_in_api_key": {"sglang_server_api_key": "sk-\x85secret"},
    # values the validation does not see yet: the template refuses them on its own
    "newline_in_home": {"sglang_server_home": "/var/lib/sglang\nExecStartPre=+/bin/true"},
    "prefix_on_python": {"sglang_server_python": "+/usr/bin/python3"},
    "newline_in_restart_sec": {"sglang_server_restart_sec": "30\nExecStartPre=+/bin/true"},
    # '@evil/...' after http://127.0.0.1:30000 sends the probe (and the API key) to another host
    "ready_path_other_host": {"sglang_server_ready_path": "@evil.example/health"},
    # numeric time, size and count variables out of range
    "restart_sec_too_short": {"sglang_server_restart_sec": 5},
    "negative_ready_timeout": {"sglang_server_ready_timeout": -5},
    "huge_journal_lines": {"sglang_server_journal_lines": 10000000},
    # the name people say for Qwen3.5's speculation is not SGLang's: the validation names the variable and NEXTN,
    # the argument spec (type only) does not stop it first with a dump of every option
    "algorithm_mtp": {"sglang_server_speculative": {"algorithm": "MTP"}},
    # compile caches: another SGLang version, another architecture (the CPU engine vs an xpu device)
    "cache_other_version": {"sglang_server_version": "0.5.22", "sglang_server_args": {"device": "cpu"}},
    "cache_cpu": {"sglang_server_args": {"device": "cpu"}},
    "cache_xpu": {"sglang_server_args": {"device": "xpu"}},
    # a cache variable of the user's would share kernels between versions
    "cache_env_override": {"sglang_server_env": {"TRITON_CACHE_DIR": "/srv/triton"}},
    # root chowns the cache root and removes trees below it: never a shared or system tree, never the home
    "cache_root_in_tmp": {"sglang_server_cache_root": "/tmp/kernels"},
    "cache_root_in_home": {"sglang_server_cache_root": "/var/lib/sglang/kernels"},
    # two revisions of one model as sglang_model lays them out, and the second with one flag more: only the first
    # pair may become an in-place weight swap (plugin_utils/revision_swap.py)
    "revision_a": {"sglang_server_model_path": REVISION_DIR + "a" * 40},
    "revision_b": {"sglang_server_model_path": REVISION_DIR + "b" * 40},
    "revision_b_chunked": {"sglang_server_model_path": REVISION_DIR + "b" * 40,
                           "sglang_server_args": {"chunked_prefill_size": 4096}},
    # no swaps: the unit names the revision directory itself, without a weight version
    "revision_never": {"sglang_server_model_path": REVISION_DIR + "b" * 40, "sglang_server_weight_swap": "never"},
    # the role sets the weight version where it swaps; the user's own would fight it
    "weight_version_of_the_user": {"sglang_server_model_path": REVISION_DIR + "b" * 40,
                                   "sglang_server_args": {"weight-version": "v2"}},
    "weight_swap_bad_policy": {"sglang_server_weight_swap": "sometimes"},
}
FAILING = {
    "nul_in_env": "sglang_server_env.FOO: contains a control character (NUL at offset 1)",
    "newline_in_env": "sglang_server_env.FOO: contains a control character (LF at offset 1)",
    "tab_in_served_name": "sglang_server_served_model_name: contains a control character (TAB at offset 1)",
    "esc_in_arg": "sglang_server_args.tokenizer_path: contains a control character (ESC at offset 4)",
    "nul_in_model_path": "sglang_server_model_path: contains a control character (NUL at offset 9)",
    "c1_in_api_key": "sglang_server_api_key: contains a control character (NEL at offset 3; value not shown)",
    "newline_in_home": "HOME: contains a control character (LF at offset 15)",
    "prefix_on_python": "sglang_server_python: must be an absolute path, got '+/usr/bin/python3'",
    "newline_in_restart_sec": "sglang_server_restart_sec",
    "ready_path_other_host": "sglang_server_ready_path: must be a plain absolute URL path",
    "restart_sec_too_short": "sglang_server_restart_sec: must be an integer from 30 to 3600, got 5",
    "negative_ready_timeout": "sglang_server_ready_timeout: must be an integer from 1 to 86400, got -5",
    "huge_journal_lines": "sglang_server_journal_lines: must be an integer from 0 to 10000, got 10000000",
    "algorithm_mtp": "sglang_server_speculative.algorithm",
    "cache_env_override": "sglang_server_env.TRITON_CACHE_DIR: is refused: the unit points every compile and JIT cache",
    "cache_root_in_tmp": "sglang_server_cache_root: /tmp/kernels",
    "cache_root_in_home": "sglang_server_cache_root (/var/lib/sglang/kernels) must be an absolute, normalised path",
    "weight_version_of_the_user": "sglang_server_args.weight-version: the role sets --weight-version to the model "
                                  "revision's commit while sglang_server_weight_swap is not never",
    "weight_swap_bad_policy": "sglang_server_weight_swap",
}
TEMPLATES = ("sglang.service", "sglang.env", "config.yaml")
URLS = "{{ {'base': __sglang_server_base_url, 'ready': __sglang_server_ready_url | default('(undefined)')} | to_json }}"


def _play(name, overrides, out):
    variables = dict(BASE_VARS, **overrides)
    tasks = [{"ansible.builtin.include_role": {"name": "llmserve.sglang.sglang_server", "tasks_from": "validate",
                                               "public": True}},
             {"ansible.builtin.copy": {"content": URLS, "dest": os.path.join(out, name, "urls.json"), "mode": "0600"}}]
    for template in TEMPLATES:
        tasks.append({"ansible.builtin.template": {"src": os.path.join(ROLE, "templates", template + ".j2"),
                                                   "dest": os.path.join(out, name, template), "mode": "0600"}})
    tasks.append({"ansible.builtin.copy": {"content": "{{ __sglang_server_rendered | to_json }}",
                                           "dest": os.path.join(out, name, "rendered.json"), "mode": "0600"}})
    return {
        "name": name, "hosts": "localhost", "gather_facts": False, "vars": variables,
        "tasks": [
            {"ansible.builtin.file": {"path": os.path.join(out, name), "state": "directory", "mode": "0700"}},
            {"block": tasks, "rescue": [{"ansible.builtin.copy": {
                "content": "{{ ansible_failed_result.msg | default(ansible_failed_result) | string }}",
                "dest": os.path.join(out, name, "error.txt"), "mode": "0600"}}]},
        ],
    }


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("sglang-unit"))
    # run_plays writes JSON, which keeps the NUL and ESC characters of the cases intact, and caches no facts (the
    # cache directory's architecture depends on them)
    run_plays(out, [_play(name, overrides, out) for name, overrides in CASES.items()])
    cases = {}
    for name in CASES:
        files = {}
        for entry in TEMPLATES + ("rendered.json", "error.txt", "urls.json"):
            path = os.path.join(out, name, entry)
            if os.path.exists(path):
                with open(path, encoding="utf-8", newline="") as handle:
                    files[entry] = handle.read()
        files["dir"] = os.path.join(out, name)
        cases[name] = files
    return cases


def _ok(rendered, name):
    case = rendered[name]
    assert "error.txt" not in case, case.get("error.txt")
    return case, json.loads(case["rendered.json"])


def test_hostile_values_reach_sglang_unchanged(rendered):
    case, data = _ok(rendered, "hostile_text")
    unit = case["sglang.service"]
    (exec_start,) = sd.values(unit, "ExecStart")
    assert sd.exec_argv(exec_start) == ["/usr/bin/python3", "-m", "sglang.launch_server"] + data["argv"]
    argv = data["argv"]
    # values starting with '-' are joined to their option, so argparse cannot take them for options
    assert "--chunked-prefill-size=-1" in argv and "--tokenizer-path=-looks-like-an-option" in argv
    assert argv[argv.index("--served-model-name") + 1] == "50% $HOME \"quoted\" back\\slash ;semi"
    assert argv[argv.index("--log-requests-target") + 1:][:2] == ["stdout", "/var/log/sglang requests"]
    assert API_KEY not in unit and HF_TOKEN not in unit


@pytest.mark.parametrize("name", ["env_specials", "hostile_text"])
def test_environment_values_are_not_doubled(rendered, name):
    """'$' has no meaning in Environment=: pa$word must arrive as pa$word, not pa$$word."""
    case, data = _ok(rendered, name)
    env = {}
    for value in sd.values(case["sglang.service"], "Environment"):
        env.update(sd.environment(value))
    # the unit's environment is the rendered one plus the compile cache variables (test below)
    assert {k: v for k, v in env.items() if k not in CACHE_NAMES + ("CUDA_CACHE_MAXSIZE",)} == data["env"]
    assert env["DB_PASSWORD"] == "pa$word" and env["PCT"] == "100%" and env["QUOTE"] == "a\"b'c\\d"
    assert env["PYTHONPATH"] == "/etc/sglang/pylib"


def test_redaction_hook_learns_where_the_config_file_is(rendered):
    case = _ok(rendered, "plain")[0]
    env = {}
    for value in sd.values(case["sglang.service"], "Environment"):
        env.update(sd.environment(value))
    assert env["LLMSERVE_REDACT_CONFIG"] == "/etc/sglang/sglang.yaml"
    assert sd.exec_argv(sd.values(case["sglang.service"], "ExecStart")[0])[-2:] == ["--config", env["LLMSERVE_REDACT_CONFIG"]]


def test_single_host_units_load_no_firewall(rendered):
    """The multi-node firewall (ExecStartPre=+nft ...) belongs to the nodes of a group only."""
    for name in ("plain", "tls", "hostile_text"):
        assert sd.values(_ok(rendered, name)[0]["sglang.service"], "ExecStartPre") == []


def test_probe_urls(rendered):
    _ok(rendered, "plain")
    assert json.loads(rendered["plain"]["urls.json"]) == {"base": "http://127.0.0.1:30000",
                                                          "ready": "http://127.0.0.1:30000/health"}
    assert json.loads(rendered["tls"]["urls.json"]) == {"base": "https://127.0.0.1:30000",
                                                        "ready": "https://127.0.0.1:30000/health_generate"}


def test_description_escapes_specifiers(rendered):
    case = _ok(rendered, "hostile_text")[0]
    (description,) = sd.values(case["sglang.service"], "Description", section="Unit")
    assert sd.specifiers(description) == "SGLang server 50% $HOME \"quoted\" back\\slash ;semi"


def test_secret_files_read_back_literally(rendered):
    case = _ok(rendered, "hostile_text")[0]
    assert sd.env_file(case["sglang.env"]) == {"HF_TOKEN": HF_TOKEN}
    assert yaml.safe_load(case["config.yaml"]) == {"api-key": API_KEY}


@pytest.mark.parametrize("name", sorted(FAILING))
def test_control_characters_and_prefixes_are_refused(rendered, name):
    case = rendered[name]
    assert "error.txt" in case, "rendered although it must fail: %r" % case.get("sglang.service")
    assert FAILING[name] in case["error.txt"]
    assert not [template for template in TEMPLATES if template in case], "a file was written before the failure"


def test_secret_values_are_not_in_error_messages(rendered):
    assert "secret" not in rendered["c1_in_api_key"]["error.txt"]


def _device_majors(unit, proc_devices):
    classes = []
    for value in sd.values(unit, "DeviceAllow"):
        spec, access = value.split()
        assert spec.startswith("char-") and access == "rw", value
        classes.append(spec[len("char-"):])
    # systemd matches the name after char- against /proc/devices with fnmatch
    return {major for major, name in proc_devices if any(fnmatch.fnmatchcase(name, c) for c in classes)}


def test_unit_allows_the_gpu_on_driver_580_and_on_older_drivers(rendered):
    case = _ok(rendered, "plain")[0]
    unit = case["sglang.service"]
    assert sd.values(unit, "DevicePolicy") == ["closed"]
    assert _device_majors(unit, PROC_DEVICES_580_OPEN) == {195, 238, 239, 240, 241, 242}
    assert _device_majors(unit, PROC_DEVICES_535_PROPRIETARY) == {195, 236, 237, 508, 509}


def test_device_class_list_is_defined_once():
    with open(os.path.join(ROLE, "vars", "main.yml"), encoding="utf-8") as handle:
        classes = yaml.safe_load(handle)["__sglang_server_nvidia_device_classes"]
    assert {"nvidia", "nvidiactl", "nvidia-frontend", "nvidia-uvm"} <= set(classes)
    with open(os.path.join(ROLE, "templates", "sglang.service.j2"), encoding="utf-8") as handle:
        template = handle.read()
    assert "__sglang_server_nvidia_device_classes" in template
    assert not re.search(r"DeviceAllow=char-nvidia", template), "device classes hard-coded in the template"


needs_systemd_analyze = pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                                           reason="systemd-analyze is not installed here")


@needs_systemd_analyze
@pytest.mark.parametrize("name", ["plain", "env_specials", "hostile_text"])
def test_systemd_analyze_verify_accepts_the_unit(rendered, tmp_path, name):
    case = _ok(rendered, name)[0]
    unit = tmp_path / "sglang.service"
    unit.write_text(case["sglang.service"], encoding="utf-8")
    result = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, check=False,
                            timeout=120)
    assert result.returncode == 0 and not (result.stdout + result.stderr).strip(), result.stdout + result.stderr


@needs_systemd_analyze
def test_exposure_level_at_most_2(rendered, tmp_path):
    case = _ok(rendered, "plain")[0]
    unit = tmp_path / "sglang.service"
    unit.write_text(case["sglang.service"], encoding="utf-8")
    result = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--no-pager", str(unit)],
                            capture_output=True, text=True, check=False, timeout=120)
    match = re.search(r"Overall exposure level for \S+: ([0-9.]+)", result.stdout)
    if match is None:
        pytest.skip("systemd-analyze security --offline is not supported here: %s" % result.stderr.strip()[-300:])
    assert float(match.group(1)) <= 2.0, result.stdout[-4000:]


def test_a_wrong_speculative_algorithm_is_named_with_its_fix(rendered):
    error = rendered["algorithm_mtp"]["error.txt"]
    assert "sglang_server_speculative.algorithm" in error and "NEXTN" in error, error
    # the validation's message, not the argument spec's: no dump of the role's options
    assert "argument_spec" not in error and "Validation of arguments failed" not in error, error
    assert "sglang_server_rollout" not in error and len(error) < 600, error


CACHE_NAMES = ("SGLANG_CACHE_DIR", "SGLANG_JIT_CACHE_DIR", "SGLANG_DG_CACHE_DIR", "SGLANG_CUTE_AOT_CACHE_DIR",
               "TRITON_CACHE_DIR", "TRITON_HOME", "TORCHINDUCTOR_CACHE_DIR", "CUDA_CACHE_PATH", "TILELANG_CACHE_DIR",
               "FLASHINFER_WORKSPACE_BASE", "CUTE_DSL_CACHE_DIR", "TVM_FFI_CACHE_DIR", "TORCH_EXTENSIONS_DIR",
               "PYTORCH_KERNEL_CACHE_PATH", "XDG_CACHE_HOME")


def _cache_env(rendered, name):
    case, _data = _ok(rendered, name)
    env = {}
    for value in sd.values(case["sglang.service"], "Environment"):
        env.update(sd.environment(value))
    writable = [w for value in sd.values(case["sglang.service"], "ReadWritePaths") for w in sd.words(value)]
    return env, writable


def test_unit_points_every_cache_at_its_version_and_arch_directory(rendered):
    env, writable = _cache_env(rendered, "cache_cpu")
    root = "/var/cache/llmserve-sglang/sglang/0.5.23/cpu-unknown"
    for name in CACHE_NAMES:
        assert env[name].startswith(root + "/"), (name, env[name])
    assert env["CUDA_CACHE_MAXSIZE"] == "4294967296"
    # HF_HOME stays in the home: weights are no versioned kernels
    assert env["HF_HOME"] == "/var/lib/sglang/hf"
    # writable: the Hugging Face home and this one cache directory, nothing of the old shared caches
    assert sorted(writable) == sorted(["/var/lib/sglang/hf", root])


@pytest.mark.parametrize("other", ["cache_other_version", "cache_xpu"])
def test_other_version_or_arch_gets_disjoint_cache_paths(rendered, other):
    mine, _w = _cache_env(rendered, "cache_cpu")
    theirs, _w = _cache_env(rendered, other)
    for name in CACHE_NAMES:
        assert not (mine[name] + "/").startswith(theirs[name] + "/")
        assert not (theirs[name] + "/").startswith(mine[name] + "/")
    expected = {"cache_other_version": "/0.5.22/cpu-unknown/", "cache_xpu": "/0.5.23/xpu-unknown/"}[other]
    assert expected in theirs["SGLANG_CACHE_DIR"]


def test_without_swaps_the_unit_names_the_revision_directory(rendered):
    unit = _ok(rendered, "revision_never")[0]["sglang.service"]
    assert '"--model-path" "%s"' % (REVISION_DIR + "b" * 40) in unit
    assert "--weight-version" not in unit and "/var/lib/sglang/model" not in unit
    # a model directory that is no revision of the store is named as it is, with swaps allowed too
    plain = _ok(rendered, "plain")[0]["sglang.service"]
    assert '"--model-path" "/models/Qwen3.5-122B-A10B"' in plain and "--weight-version" not in plain


def test_only_the_model_path_differs_between_revisions(rendered):
    """The role's own templates for two revisions differ, and differ only in the model revision; one flag more is seen."""
    def render(name):
        case = _ok(rendered, name)[0]
        return dict((template, case[template]) for template in TEMPLATES)

    old = render("revision_a")
    new = render("revision_b")
    chunked = render("revision_b_chunked")
    path_a, path_b = REVISION_DIR + "a" * 40, REVISION_DIR + "b" * 40
    # the unit loads the model link, with the revision's commit as the weight version; the revision directory itself
    # is only named in the unit's description
    unit = new["sglang.service"]
    assert old != new and '"--model-path" "/var/lib/sglang/model" \\\n    "--weight-version" "%s"' % ("b" * 40) in unit
    assert [line.split("=")[0] for line in unit.splitlines() if path_b in line] == ["Description"]
    assert not any(path_b in new[name] for name in TEMPLATES if name != "sglang.service")
    record = revision_swap.serving_record(old, path_a, "a" * 40)
    plan = {"restart_needed": True}
    swap = revision_swap.plan_revision_swap("auto", plan, record, record["live"], new, path_b, "b" * 40)
    assert (swap["action"], swap["reasons"]) == (revision_swap.SWAP, [])
    restart = revision_swap.plan_revision_swap("auto", plan, record, record["live"], chunked, path_b, "b" * 40)
    assert restart["action"] == revision_swap.RESTART
    assert restart["reasons"] == ["more than the model revision changes (%s)" % ", ".join(
        name for name in TEMPLATES if chunked[name] != new[name])]
    assert chunked != new
