# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The sglang_monitoring role's configuration rules, one message per broken rule naming the variable. Controller only.

``config_problems(settings)`` checks the main entry point's settings (durations, thresholds, names, paths, the
Prometheus mode and package version, Alertmanagers, the CA file); ``node_exporter_problems(settings)`` those of the
node_exporter entry point. Both return every problem at once, in a fixed order, and never raise on bad values: a
value of the wrong type is a problem like any other. Only a malformed rule table (a bug in the role) raises.

``monitoring_config(settings, targets)`` is the main entry point's whole check, as the action
llmserve.sglang.monitoring_config runs it: the settings first, then the scrape targets
(``monitoring_targets.build_targets``) of the input ``targets_input`` makes of the inventory; the problems of the first
step that has any raise ``MonitoringConfigError``, every one of that step at once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping

from ansible.errors import AnsibleUndefinedVariable
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.filter.core import from_json, to_json

from ansible_collections.llmserve.sglang.plugins.plugin_utils.monitoring_targets import build_targets
from ansible_collections.llmserve.sglang.plugins.plugin_utils.ranges import range_problems

# Prometheus' duration grammar (prometheus/common model.ParseDuration, as in Prometheus 2.42): units from the
# largest down, each at most once, "0" alone, nothing empty; no fractions and no spaces.
DURATION_RE = re.compile(r"0|(?=[0-9])([0-9]+y)?([0-9]+w)?([0-9]+d)?([0-9]+h)?([0-9]+m)?([0-9]+s)?([0-9]+ms)?")
# Values that go into PromQL string literals (job="...") or name a unit, a group or a package.
NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:@-]*")
# Absolute paths that go into prometheus.yml, a unit drop-in or the node exporter's arguments.
PATH_RE = re.compile(r"/[^\s\"'\\]*")
# A Debian version or an apt pattern of one such as 2.42.*; "" takes the distribution's.
VERSION_RE = re.compile(r"([0-9][A-Za-z0-9.+~:*-]*)?")
# host:port, an IPv6 address in brackets.
ALERTMANAGER_RE = re.compile(r"([A-Za-z0-9][A-Za-z0-9.-]*|\[[0-9A-Fa-f:.]+\]):[0-9]{1,5}")
DECIMAL_RE = re.compile(r"[0-9]+([.][0-9]+)?")
MODES = ("existing", "distribution")

# The role variable config_problems checks: the role's vars/main.yml assembles it from the sglang_monitoring_*
# variables, with the bounds of each rule (the node_exporter entry point shares some of its tables).
SETTINGS_VARIABLE = "__sglang_monitoring_settings"
# The role variables the scrape targets are built from, besides the inventory (groups, hostvars) and the host's name.
TARGET_VARIABLES = ("sglang_monitoring_servers_group", "sglang_monitoring_gateways_group",
                    "sglang_monitoring_node_exporters_group", "__sglang_monitoring_jobs",
                    "__sglang_monitoring_host_fields")


def _text(value):
    """The value as the message shows it: the string Jinja's ``string`` filter makes, JSON-quoted."""
    return json.dumps(str(value))


def _is_path(value):
    text = str(value)
    return PATH_RE.fullmatch(text) is not None and "/../" not in text + "/"


def _duration_problems(durations, above_zero):
    problems = []
    for name, value in durations.items():
        text = str(value)
        if DURATION_RE.fullmatch(text) is None:
            ok = False
        else:
            ok = not above_zero or re.search("[1-9]", text) is not None
        if not ok:
            problems.append("%s: must be a Prometheus duration %ssuch as %s (units y w d h m s ms, largest first, "
                            "whole numbers), got %s"
                            % (name, "above zero " if above_zero else "",
                               "1m or 5m" if above_zero else "0s, 30s, 2m or 1h30m", _text(value)))
    return problems


def _number_problems(numbers):
    problems = []
    for name, rule in numbers.items():
        if not isinstance(rule, (list, tuple)) or len(rule) != 3:
            raise ValueError("%s: the rule must be [value, exclusive minimum, maximum], got %r" % (name, rule))
        value, low, high = rule
        text = str(value)
        if DECIMAL_RE.fullmatch(text) is None or not low < float(text) <= high:
            problems.append("%s: must be a decimal number above %s and at most %s, got %s"
                            % (name, low, high, _text(value)))
    return problems


def _truthy(value):
    try:
        return boolean(value, strict=False)
    except TypeError:
        return False


def config_problems(settings):
    """Every broken rule of the main entry point's settings (see the role's vars/main.yml for the tables)."""
    problems = _duration_problems(settings.get("for_durations") or {}, above_zero=False)
    problems += _duration_problems(settings.get("windows") or {}, above_zero=True)
    problems += _number_problems(settings.get("numbers") or {})
    for name, value in (settings.get("names") or {}).items():
        if NAME_RE.fullmatch(str(value)) is None:
            problems.append("%s: must be a non-empty name of letters, digits and _ . : @ - (it goes into a PromQL "
                            "label matcher or names a unit), got %s" % (name, _text(value)))
    mode = settings.get("prometheus")
    if mode not in MODES:
        problems.append("sglang_monitoring_prometheus: must be existing (write the target and rule files for your "
                        "Prometheus) or distribution (install Prometheus from the distribution), got %s"
                        % _text(mode))
    if mode == "distribution" and not _truthy(settings.get("write_targets")):
        problems.append("sglang_monitoring_write_targets: must be true with sglang_monitoring_prometheus: "
                        "distribution (the configuration the role writes reads the target files)")
    for name, value in (settings.get("paths") or {}).items():
        if not _is_path(value):
            problems.append("%s: must be an absolute path without spaces, quotes, backslashes or .. components, "
                            "got %s" % (name, _text(value)))
    version = settings.get("prometheus_version", "")
    if VERSION_RE.fullmatch(str(version)) is None:
        problems.append('sglang_monitoring_prometheus_version: must be "" or a package version such as '
                        '2.42.0+ds-5+deb12u1 or 2.42.*, got %s' % _text(version))
    managers = settings.get("alertmanagers", [])
    if isinstance(managers, (str, bytes, Mapping)) or not isinstance(managers, Iterable):
        problems.append("sglang_monitoring_alertmanagers: must be a list of host:port, got %s" % _text(managers))
    else:
        for item in managers:
            if ALERTMANAGER_RE.fullmatch(str(item)) is None:
                problems.append("sglang_monitoring_alertmanagers: each entry must be host:port (an IPv6 address in "
                                "brackets), got %s" % _text(item))
    ca_file = settings.get("tls_ca_file") or ""
    if str(ca_file) and PATH_RE.fullmatch(str(ca_file)) is None:
        problems.append('sglang_monitoring_tls_ca_file: must be "" or an absolute path without spaces, quotes or '
                        "backslashes, got %s" % _text(ca_file))
    return problems + range_problems(settings.get("ranges") or {})


def node_exporter_problems(settings):
    """Every broken rule of the node_exporter entry point's settings."""
    problems = []
    textfile_dir = settings.get("textfile_dir")
    if not _is_path(textfile_dir):
        problems.append("sglang_monitoring_node_exporter_textfile_dir: must be an absolute path without spaces, "
                        "quotes, backslashes or .. components, got %s" % _text(textfile_dir))
    package = settings.get("package")
    if NAME_RE.fullmatch(str(package)) is None:
        problems.append("sglang_monitoring_node_exporter_package: must be a package name, got %s" % _text(package))
    return problems + range_problems(settings.get("ranges") or {})


# -- the main entry point's check (the action llmserve.sglang.monitoring_config) --------------------------------------


class MonitoringConfigError(ValueError):
    """The settings or the inventory break rules; ``problems`` lists every message of the step that failed."""

    def __init__(self, problems):
        super(MonitoringConfigError, self).__init__("; ".join(str(problem) for problem in problems))
        self.problems = list(problems)


def _defined(variables, name):
    """(True, value) where the host defines ``name`` and its value templates, else (False, None): Jinja's
    ``hostvars[host][name] is defined``."""
    if not isinstance(variables, Mapping) or name not in variables:
        return False, None
    try:
        return True, variables[name]
    except AnsibleUndefinedVariable:
        return False, None


def _fact_address(facts, key):
    """``(facts[key] | default({}))['address'] | default('')``: the default address of gathered facts, or ''."""
    part = facts.get(key, {}) if isinstance(facts, Mapping) else {}
    if isinstance(part, Mapping) and "address" in part:
        return part["address"]
    return ""


def inventory_host(variables, fields):
    """What the targets read of one inventory host (``hostvars[host]``): each of ``fields`` it defines, not None, and
    the default IPv4/IPv6 addresses of its gathered facts as ``ipv4``/``ipv6`` ('' where there are none)."""
    found = {}
    for field in fields:
        defined, value = _defined(variables, field)
        if defined and value is not None:
            found[field] = value
    defined, facts = _defined(variables, "ansible_facts")
    facts = facts if defined else {}
    found.update(ipv4=_fact_address(facts, "default_ipv4"), ipv6=_fact_address(facts, "default_ipv6"))
    return found


def targets_input(variables, hostname, groups, hostvars):
    """``build_targets``' input for Prometheus on ``hostname``: the role's ``TARGET_VARIABLES`` (``variables``), the
    inventory's ``groups`` and, of every host of group all, what ``inventory_host`` reads of ``hostvars[host]``. The
    hosts pass through JSON, as the role's Jinja passed them (tuples become lists, keys strings)."""
    fields = variables["__sglang_monitoring_host_fields"]
    own = hostvars[hostname] if isinstance(hostname, str) and hostname in hostvars else {}
    defined, address = _defined(own, "ansible_host")
    hosts = {}
    for name in (groups.get("all") or []):
        hosts[name] = inventory_host(hostvars[name] if name in hostvars else {}, fields)
    return {"prometheus": {"name": hostname, "ansible_host": address if defined else ""},
            "servers_group": variables["sglang_monitoring_servers_group"],
            "gateways_group": variables["sglang_monitoring_gateways_group"],
            "node_exporters_group": variables["sglang_monitoring_node_exporters_group"],
            "jobs": variables["__sglang_monitoring_jobs"], "groups": groups, "hosts": from_json(to_json(hosts))}


def monitoring_config(settings=None, targets=None):
    """The settings' rules (``config_problems``; skipped where ``settings`` is None), then the scrape targets of the
    input ``targets`` (``targets_input``; not built where it is None). Returns ``settings`` as checked and ``targets``
    (``build_targets``' result, None where not built); raises MonitoringConfigError with every problem of the settings,
    or, where they hold, every error of the inventory."""
    if settings is not None:
        problems = config_problems(settings)
        if problems:
            raise MonitoringConfigError(problems)
    built = None
    if targets is not None:
        built = build_targets(targets)
        if built["errors"]:
            raise MonitoringConfigError(built["errors"])
    return {"settings": settings, "targets": built}
