# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The nvidia_driver role's variables checked and normalised on the controller (the action
llmserve.sglang.nvidia_driver_config, plugins/action/nvidia_driver_config.py, renders the options file from them).

``nvidia_driver_problems(variables)`` runs the role's rules (``RULES``, on ``rules.Problems``) over the variables by
name, every broken one at once and in the order the role's assert listed them before: the option mappings
(``nvidia_driver_param_errors``), the modprobe.d file, reboot without permission, the GPU services, the APT hold file,
the reboot timeout's range. Each message is word for word the one the role's Jinja assert gave; a rule evaluates a
value the way that Jinja expression did (``default({}, true)``, the ``match`` and ``sequence`` tests, the ``bool``
filter, ``{{ value }}`` in a message writes nothing for null). ``nvidia_driver_values(variables)`` returns what the
role uses of them once they pass: the normalised values, the ``options nvidia ...`` line and the option names.

Controller only.
"""

from __future__ import annotations

import json
import re

from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.filter.core import to_bool

from ansible_collections.llmserve.sglang.plugins.filter.nvidia import (
    nvidia_driver_param_errors,
    nvidia_modprobe_options,
)
from ansible_collections.llmserve.sglang.plugins.plugin_utils.values import as_int
from ansible_collections.llmserve.sglang.plugins.plugin_utils.rules import Problems, range_rule, run_rules

# the option mappings: blank (null, {}, '') is no option, as the role's default({}, true) made it
OPTIONAL_VARIABLES = ("nvidia_driver_registry_dwords", "nvidia_driver_module_params")
VARIABLES = OPTIONAL_VARIABLES + (
    "nvidia_driver_modprobe_file",
    "nvidia_driver_apply",
    "nvidia_driver_reboot_ok",
    "nvidia_driver_gpu_services",
    "nvidia_driver_hold_file",
    "nvidia_driver_reboot_timeout",
)

# kmod reads configuration files only directly inside these directories
MODPROBE_FILE_PATTERN = r"^/(etc|run|usr/local/lib|usr/lib|lib)/modprobe\.d/[^/]+\.conf$"
# APT reads a drop-in only directly inside apt.conf.d, with a name of these characters
HOLD_FILE_PATTERN = r"^/etc/apt/apt\.conf\.d/[A-Za-z0-9_][A-Za-z0-9_.-]*$"
REBOOT_TIMEOUT_RANGE = (60, 86400)

MODPROBE_FILE_RULE = (
    "%s is not a file kmod reads; kmod only reads files ending in .conf directly inside /etc/modprobe.d, "
    "/run/modprobe.d, /usr/local/lib/modprobe.d, /usr/lib/modprobe.d or /lib/modprobe.d. Use for example "
    "/etc/modprobe.d/90-llmserve-nvidia.conf."
)
APPLY_RULE = (
    "reboot needs nvidia_driver_reboot_ok: true (an explicit permission to reboot the host). Without it use none and "
    "reboot later, or reload."
)
GPU_SERVICES_MESSAGE = (
    "nvidia_driver_gpu_services must be a list of systemd unit names (for example [sglang.service, "
    "nvidia-persistenced.service]); got %s."
)
HOLD_FILE_MESSAGE = (
    "nvidia_driver_hold_file must be a file APT reads directly inside /etc/apt/apt.conf.d (letters, digits, -, _ and "
    ". in its name); got %s."
)


def blank_to_empty(value):
    """``value | default({}, true)``: a false value (null, {}, '', 0) is no option."""
    return value if value else {}


def in_message(value):
    """``{{ value }}`` inside a message: null writes nothing, anything else its ``str``."""
    return "" if value is None else str(value)


def matches(value, pattern):
    """Ansible's ``match`` test: ``re.match`` on the value's text."""
    return re.match(pattern, to_text(value, errors="surrogate_or_strict")) is not None


def is_sequence(value):
    """Jinja's ``sequence`` test: anything with a length and items (a string or a dict too)."""
    try:
        len(value)
        getattr(value, "__getitem__")
    except Exception:  # the test catches anything len() raises
        return False
    return True


# -- the rules, in the order of the role's messages --------------------------------------------------------------


def option_rules(cfg, problems):
    problems.extend(nvidia_driver_param_errors(cfg["registry"], cfg["params"]))


def modprobe_file_rule(cfg, problems):
    value = cfg["nvidia_driver_modprobe_file"]
    if not matches(value, MODPROBE_FILE_PATTERN):
        problems.add("nvidia_driver_modprobe_file", MODPROBE_FILE_RULE % in_message(value))


def apply_rule(cfg, problems):
    # the permission is read only for a reboot, as the role's `and` did
    if cfg["nvidia_driver_apply"] == "reboot" and not to_bool(cfg["nvidia_driver_reboot_ok"]):
        problems.add("nvidia_driver_apply", APPLY_RULE)


def gpu_services_rule(cfg, problems):
    value = cfg["nvidia_driver_gpu_services"]
    if not is_sequence(value) or isinstance(value, str) or any(not isinstance(name, str) for name in value):
        problems.extend([GPU_SERVICES_MESSAGE % in_message(value)])


def hold_file_rule(cfg, problems):
    value = cfg["nvidia_driver_hold_file"]
    if not isinstance(value, str) or not matches(value, HOLD_FILE_PATTERN):
        problems.extend([HOLD_FILE_MESSAGE % json.dumps(str(value))])


def reboot_timeout_rule(cfg, problems):
    range_rule(problems, "nvidia_driver_reboot_timeout", cfg["nvidia_driver_reboot_timeout"], *REBOOT_TIMEOUT_RANGE)


RULES = (option_rules, modprobe_file_rule, apply_rule, gpu_services_rule, hold_file_rule, reboot_timeout_rule)


def _cfg(variables):
    cfg = dict(variables)
    cfg["registry"] = blank_to_empty(variables.get("nvidia_driver_registry_dwords"))
    cfg["params"] = blank_to_empty(variables.get("nvidia_driver_module_params"))
    return cfg


def nvidia_driver_problems(variables):
    """Every broken rule of the role's variables (``{name: value}``, ``VARIABLES``), as the role's messages."""
    problems = Problems()
    run_rules(RULES, _cfg(variables), problems)
    return problems.errors


def nvidia_driver_values(variables):
    """What the role uses of variables that pass ``nvidia_driver_problems``: ``variables`` (each variable normalised,
    by name), ``options_line`` (the ``options nvidia ...`` line, '' when no option is wanted) and ``param_names``
    (the option names the role sets, for the conflict scan)."""
    cfg = _cfg(variables)
    registry, params = dict(cfg["registry"]), dict(cfg["params"])
    return {
        "variables": {
            "nvidia_driver_registry_dwords": registry,
            "nvidia_driver_module_params": params,
            "nvidia_driver_modprobe_file": cfg["nvidia_driver_modprobe_file"],
            "nvidia_driver_apply": cfg["nvidia_driver_apply"],
            "nvidia_driver_reboot_ok": to_bool(cfg["nvidia_driver_reboot_ok"]),
            "nvidia_driver_gpu_services": list(cfg["nvidia_driver_gpu_services"]),
            "nvidia_driver_hold_file": cfg["nvidia_driver_hold_file"],
            "nvidia_driver_reboot_timeout": as_int(cfg["nvidia_driver_reboot_timeout"], floats=True),
        },
        "options_line": nvidia_modprobe_options(registry, params),
        "param_names": (["NVreg_RegistryDwords"] if registry else []) + list(params),
    }
