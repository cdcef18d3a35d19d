# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The nvidia_driver_config action plugin (llmserve.sglang.nvidia_driver_config) and its rules
(plugin_utils/nvidia_driver_config.py).

Real ansible-playbook runs (localhost, no connection) of the action beside the Jinja path it replaced
(files/nvidia_driver_jinja.yml: validate.yml's assert, configure.yml's template task and plan.yml's lookup, as the
role had them, with the template as it was) for many variable sets, valid and broken, generated from a fixed seed:
both must give the same messages in the same order, and the file the role writes from the action's ``content``
(ansible.builtin.copy, as configure.yml does) must be byte for byte the file the template task wrote. Some of the
sets also go through the role's ``validate`` entry point. Then the rules in Python, one by one.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys

import pytest
import yaml

from ansible_collections.llmserve.sglang.plugins.plugin_utils import nvidia_driver_config as ndc
from ansible_collections.llmserve.sglang.tests.unit.collection_tree import collections_path, guarded_block, json_result_task

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
JINJA_PATH = os.path.join(HERE, "files", "nvidia_driver_jinja.yml")
OLD_TEMPLATE = os.path.join(HERE, "files", "nvidia-options-jinja.conf.j2")

with open(os.path.join(ROOT, "roles", "nvidia_driver", "defaults", "main.yml"), encoding="utf-8") as _handle:
    DEFAULTS = yaml.safe_load(_handle)

# values for each variable the rules read: the role's default first, then good and broken ones
POOLS = {
    "nvidia_driver_registry_dwords": [
        {}, None, "", {"DmaRemapPeerMmio": 1}, {"DmaRemapPeerMmio": "1", "RMForceStaticBar1": 0},
        {"DmaRemapPeerMmio": "010"}, {"DmaRemapPeerMmio": "on"}, {"NVreg_DmaRemapPeerMmio": 1}, {"A=B": 1},
        {"K": 4294967296}, {"K": True}, {"K": 4294967295}, "not-a-dict", [1, 2], {"RmProfilingAdminOnly": 0}],
    "nvidia_driver_module_params": [
        {}, None, {"NVreg_EnableStreamMemOPs": 1}, {"EnableResizableBar": 1}, {"NVreg_EnableStreamMemOPs": -1},
        {"NVreg_EnableStreamMemOPs": "2147483648"}, {"NVreg_RestrictProfilingToAdminUsers": 0},
        {"NVreg_RegistryDwords": 1}, {"NVreg_EnableStreamMemOPs": 1, "NVreg_EnableGpuFirmware": 0}, "x"],
    "nvidia_driver_modprobe_file": [
        DEFAULTS["nvidia_driver_modprobe_file"], "/run/modprobe.d/50-x.conf", "/usr/local/lib/modprobe.d/a.conf",
        "/etc/nvidia.conf", "/lib/modprobe.d/a/b.conf", "/etc/modprobe.d/x.conf\n", "relative.conf", None, 5,
        ["/etc/modprobe.d/a.conf"], "/etc/modprobe.d/é.conf"],
    "nvidia_driver_apply": ["none", "reload", "reboot", "now", None],
    "nvidia_driver_reboot_ok": [False, True, "yes", "no", 1, 0, "True"],
    "nvidia_driver_gpu_services": [
        DEFAULTS["nvidia_driver_gpu_services"], [], ["sglang"], "sglang.service", ["a", 1], {"a.service": 1},
        None, 5, ["{{ 'templated' }}.service"], [None], ["é.service"]],
    "nvidia_driver_hold_file": [
        DEFAULTS["nvidia_driver_hold_file"], "/etc/apt/apt.conf.d/99x", "/etc/apt/holds",
        "/etc/apt/apt.conf.d/.hidden", "/etc/apt/apt.conf.d/a b", None, 5, "/etc/apt/apt.conf.d/é",
        "/etc/apt/apt.conf.d/x\n", ["/etc/apt/apt.conf.d/x"]],
    "nvidia_driver_reboot_timeout": [1800, 60, 86400, 5, 86401, "600", "abc", None, 1.5, 120.0, True, "0x10"],
}


def _good():
    return dict((name, values[0]) for name, values in POOLS.items())


def _generated(count, seed=47):
    """``count`` variable sets: each variable at its default, or (one time in three) another value of its pool."""
    rng = random.Random(seed)
    cases = {}
    for number in range(count):
        variables = _good()
        for name, values in POOLS.items():
            if rng.random() < 0.33:
                variables[name] = rng.choice(values)
        cases["gen%02d" % number] = variables
    return cases


CASES = {
    "defaults": {},
    "molecule": {"nvidia_driver_registry_dwords": {"DmaRemapPeerMmio": 1},
                 "nvidia_driver_module_params": {"NVreg_EnableStreamMemOPs": 1}},
    "params_only": {"nvidia_driver_module_params": {"NVreg_EnableStreamMemOPs": 1}},
    "reboot_ok": {"nvidia_driver_apply": "reboot", "nvidia_driver_reboot_ok": True,
                  "nvidia_driver_registry_dwords": {"DmaRemapPeerMmio": "0"}},
    "managed_text": {"ansible_managed": "Managed by llmserve\nsecond line",
                     "nvidia_driver_registry_dwords": {"DmaRemapPeerMmio": 1}},
    "managed_templated": {"ansible_managed": "{{ 'templated' | upper }} header"},
    # every rule broken at once: all messages, in the same order
    "all_broken": {"nvidia_driver_registry_dwords": {"DmaRemapPeerMmio": "010"},
                   "nvidia_driver_module_params": {"EnableResizableBar": 1},
                   "nvidia_driver_modprobe_file": "/etc/nvidia.conf", "nvidia_driver_apply": "reboot",
                   "nvidia_driver_gpu_services": "sglang.service", "nvidia_driver_hold_file": "/etc/apt/holds",
                   "nvidia_driver_reboot_timeout": 5},
}
CASES.update((name, dict((key, value) for key, value in variables.items() if value != _good()[key]))
             for name, variables in _generated(32).items())
# these also go through the role's validate entry point (its argument spec first)
ROLE_CASES = ("defaults", "molecule", "params_only", "reboot_ok", "managed_text", "all_broken")


def _play(name, overrides, out):
    directory = os.path.join(out, name)
    new = [{"llmserve.sglang.nvidia_driver_config": None, "register": "__new"},
           json_result_task(out, name, "new", "__new"),
           # as configure.yml writes it
           {"ansible.builtin.copy": {"content": "{{ __new.content }}", "dest": os.path.join(directory, "new.conf"),
                                     "mode": "0600"}}]
    old = [{"ansible.builtin.include_tasks": JINJA_PATH,
            "vars": {"__old_template": OLD_TEMPLATE, "__old_dest": os.path.join(directory, "old.conf")}},
           json_result_task(out, name, "old", "{'lookup_sha256': __old_lookup_sha256, 'options_line': __old_options_line, "
                                              "'param_names': __old_param_names}")]
    tasks = [{"ansible.builtin.file": {"path": directory, "state": "directory", "mode": "0700"}},
             guarded_block(out, name, "new", new), guarded_block(out, name, "old", old)]
    if name in ROLE_CASES:
        tasks.append(guarded_block(out, name, "role", [
            {"ansible.builtin.include_role": {"name": "llmserve.sglang.nvidia_driver", "tasks_from": "validate"}},
            json_result_task(out, name, "role", "__nvidia_driver_config")]))
    return {"name": name, "hosts": "localhost", "gather_facts": False, "vars": dict(DEFAULTS, **overrides),
            "tasks": tasks}


def _read(path, binary=False):
    with open(path, "rb" if binary else "r") as handle:
        return handle.read() if binary else json.load(handle)


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("nvidia-driver-config"))
    playbook = os.path.join(out, "both.yml")
    with open(playbook, "w", encoding="utf-8") as handle:
        json.dump([_play(name, overrides, out) for name, overrides in CASES.items()], handle)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="false", ANSIBLE_NOCOLOR="1", ANSIBLE_HOME=os.path.join(out, "home"),
               ANSIBLE_ROLES_PATH=os.path.join(out, "roles"), ANSIBLE_CACHE_PLUGIN="memory",
               ANSIBLE_DEPRECATION_WARNINGS="false")
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,",
                             "-c", "local", "-e", "ansible_python_interpreter=" + sys.executable, playbook],
                            capture_output=True, text=True, env=env, check=False, timeout=900)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    cases = {}
    for name in CASES:
        files = {}
        for entry in ("new", "new_error", "old", "old_error", "role", "role_error"):
            path = os.path.join(out, name, entry + ".json")
            if os.path.exists(path):
                files[entry] = _read(path)
        for entry in ("new", "old"):
            path = os.path.join(out, name, entry + ".conf")
            if os.path.exists(path):
                files[entry + "_file"] = _read(path, binary=True)
        cases[name] = files
    return cases


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_action_agrees_with_the_jinja_assert_and_template(both, name):
    case = both[name]
    if "old_error" in case:
        # the same messages, in the same order; nothing rendered, nothing written
        assert "new_error" in case, case
        assert case["new_error"] == case["old_error"]
        assert isinstance(case["new_error"], list) and case["new_error"]
        assert "new" not in case and "new_file" not in case
        return
    assert "new_error" not in case, case["new_error"]
    new, old = case["new"], case["old"]
    # the file configure.yml writes: the bytes the template task wrote
    assert case["new_file"] == case["old_file"]
    assert new["content"].encode("utf-8") == case["old_file"]
    # the digest plan.yml compares: the file's, and the same as the lookup's the plan used before
    assert new["sha256"] == hashlib.sha256(case["old_file"]).hexdigest() == old["lookup_sha256"]
    assert new["options_line"] == old["options_line"]
    assert new["param_names"] == old["param_names"]
    assert new["changed"] is False


@pytest.mark.parametrize("name", ROLE_CASES)
def test_the_role_entry_point_registers_the_action(both, name):
    case = both[name]
    if "old_error" in case:
        assert case["role_error"] == case["old_error"]
        return
    role = case["role"]
    for key in ("content", "sha256", "options_line", "param_names", "variables"):
        assert role[key] == case["new"][key], key


def test_the_cases_cover_both_outcomes_and_every_rule(both):
    failed = [name for name in CASES if "old_error" in both[name]]
    rendered = [name for name in CASES if "old" in both[name]]
    assert len(failed) >= 10 and len(rendered) >= 6, (failed, rendered)
    messages = [message for name in failed for message in both[name]["old_error"]]
    for start in ("nvidia_driver_registry_dwords:", "nvidia_driver_module_params:", "nvidia_driver_modprobe_file:",
                  "nvidia_driver_apply:", "nvidia_driver_gpu_services must", "nvidia_driver_hold_file must",
                  "nvidia_driver_reboot_timeout:"):
        assert any(message.startswith(start) for message in messages), start
    # several rules broken at once in generated sets too
    assert any(len(both[name]["old_error"]) >= 3 for name in failed if name.startswith("gen"))


def test_every_rule_broken_at_once(both):
    assert both["all_broken"]["new_error"] == [
        "nvidia_driver_registry_dwords: value '010' for key 'DmaRemapPeerMmio' starts with 0: the driver reads such a "
        "number as octal (or hex after 0x), so '010' would load as 8; write the intended value in decimal without "
        "leading zeros",
        "nvidia_driver_module_params: option name 'EnableResizableBar' does not start with NVreg_ (case matters); "
        "nvidia.ko only takes NVreg_* options: write 'NVreg_EnableResizableBar'",
        "nvidia_driver_modprobe_file: /etc/nvidia.conf " + ndc.MODPROBE_FILE_RULE.split("%s ", 1)[1],
        "nvidia_driver_apply: " + ndc.APPLY_RULE,
        ndc.GPU_SERVICES_MESSAGE % "sglang.service",
        ndc.HOLD_FILE_MESSAGE % '"/etc/apt/holds"',
        "nvidia_driver_reboot_timeout: must be an integer from 60 to 86400, got 5",
    ]


def test_the_rendered_file(both):
    new = both["molecule"]["new"]
    assert new["content"].splitlines()[:3] == ["#", "# Ansible managed", "#"]
    assert 'options nvidia NVreg_EnableStreamMemOPs=1 NVreg_RegistryDwords="DmaRemapPeerMmio=1"' in \
        new["content"].splitlines()
    assert new["variables"] == dict(_good(), nvidia_driver_registry_dwords={"DmaRemapPeerMmio": 1},
                                    nvidia_driver_module_params={"NVreg_EnableStreamMemOPs": 1})
    assert "# No option is wanted: nvidia.ko uses its built-in defaults." in both["defaults"]["new"]["content"]
    assert both["managed_text"]["new"]["content"].startswith("#\n# Managed by llmserve\n# second line\n#\n")
    assert both["managed_templated"]["new"]["content"].startswith("#\n# TEMPLATED header\n#\n")
    assert both["reboot_ok"]["new"]["variables"]["nvidia_driver_reboot_ok"] is True


# ---- the rules in Python -------------------------------------------------------------------------------------------


def _problems(**overrides):
    return ndc.nvidia_driver_problems(dict(_good(), **overrides))


def test_the_defaults_pass():
    assert not _problems()
    found = ndc.nvidia_driver_values(_good())
    assert found["options_line"] == "" and found["param_names"] == []
    assert found["variables"]["nvidia_driver_reboot_timeout"] == 1800


@pytest.mark.parametrize("value, broken", [
    ("/etc/modprobe.d/90-llmserve-nvidia.conf", False), ("/lib/modprobe.d/x.conf", False),
    ("/usr/lib/modprobe.d/x.conf", False), ("/etc/modprobe.d/x.config", True), ("/etc/modprobe.d/a/x.conf", True),
    ("/opt/modprobe.d/x.conf", True), ("etc/modprobe.d/x.conf", True),
])
def test_modprobe_file_rule(value, broken):
    expected = ["nvidia_driver_modprobe_file: " + ndc.MODPROBE_FILE_RULE % value] if broken else []
    assert _problems(nvidia_driver_modprobe_file=value) == expected


@pytest.mark.parametrize("apply, reboot_ok, broken", [
    ("reboot", False, True), ("reboot", "no", True), ("reboot", True, False), ("reboot", "yes", False),
    ("reload", False, False), ("none", False, False),
])
def test_apply_rule(apply, reboot_ok, broken):
    expected = ["nvidia_driver_apply: " + ndc.APPLY_RULE] if broken else []
    assert _problems(nvidia_driver_apply=apply, nvidia_driver_reboot_ok=reboot_ok) == expected


@pytest.mark.parametrize("value, shown", [
    ("sglang.service", "sglang.service"), (["a", 1], "['a', 1]"), (None, ""), (5, "5"),
])
def test_gpu_services_rule(value, shown):
    assert _problems(nvidia_driver_gpu_services=value) == [ndc.GPU_SERVICES_MESSAGE % shown]


def test_gpu_services_rule_takes_a_list_of_names():
    assert not _problems(nvidia_driver_gpu_services=[])
    assert not _problems(nvidia_driver_gpu_services=["sglang", "nvidia-dcgm.service"])


@pytest.mark.parametrize("value, shown", [
    ("/etc/apt/holds", '"/etc/apt/holds"'), (None, '"None"'), ("/etc/apt/apt.conf.d/a b", '"/etc/apt/apt.conf.d/a b"'),
    ("/etc/apt/apt.conf.d/é", '"/etc/apt/apt.conf.d/\\u00e9"'),
])
def test_hold_file_rule(value, shown):
    assert _problems(nvidia_driver_hold_file=value) == [ndc.HOLD_FILE_MESSAGE % shown]


def test_the_option_mappings_take_blank_for_none():
    for blank in (None, "", {}, 0):
        assert not _problems(nvidia_driver_registry_dwords=blank, nvidia_driver_module_params=blank)
    found = ndc.nvidia_driver_values(dict(_good(), nvidia_driver_registry_dwords={"DmaRemapPeerMmio": 1},
                                          nvidia_driver_module_params={"NVreg_EnableStreamMemOPs": "1"}))
    assert found["param_names"] == ["NVreg_RegistryDwords", "NVreg_EnableStreamMemOPs"]
    assert found["options_line"] == 'options nvidia NVreg_EnableStreamMemOPs=1 NVreg_RegistryDwords="DmaRemapPeerMmio=1"'


def test_the_variables_are_the_role_defaults():
    assert set(ndc.VARIABLES) <= set(DEFAULTS)
    assert set(POOLS) == set(ndc.VARIABLES)
