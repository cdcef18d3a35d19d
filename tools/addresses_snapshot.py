# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Before/after check of the address rules: the gateway configuration, the monitoring targets and the multi-node
plans the plugins make of the molecule scenarios' inventories (molecule/*/molecule.yml) and of inventories/*, as
JSON. Each inventory is also run with gathered facts (a default IPv4/IPv6 address per host), with every server bound
to 0.0.0.0 and to :: without ansible_host (facts gathered, and not), so the wildcard rules are exercised.

    python tools/addresses_snapshot.py [--tree COLLECTIONS_DIR] > out.json
    python tools/addresses_snapshot.py --compare REV      # REV's plugins against this checkout's; exit 1 on a diff

The inputs (inventories, role defaults) are always this checkout's; --tree picks the plugins. Controller only.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import glob
import json
import os
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


def _defaults(role):
    return _load(os.path.join(ROOT, "roles", role, "defaults", "main.yml"))


def molecule_inventories():
    found = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "molecule", "*", "molecule.yml"))):
        data = _load(path)
        inventory = (data.get("provisioner") or {}).get("inventory") or {}
        groups = {"all": []}
        for platform in data.get("platforms") or []:
            groups["all"].append(platform["name"])
            for group in platform.get("groups") or []:
                groups.setdefault(group, []).append(platform["name"])
        found["molecule/" + os.path.basename(os.path.dirname(path))] = (groups, inventory.get("group_vars") or {},
                                                                        inventory.get("host_vars") or {})
    return found


def _walk(node, name, groups, hosts):
    for host, variables in (node.get("hosts") or {}).items():
        hosts.setdefault(host, {}).update(variables or {})
        groups.setdefault(name, []).append(host)
        groups["all"].append(host) if host not in groups["all"] else None
    for child, sub in (node.get("children") or {}).items():
        _walk(sub or {}, child, groups, hosts)
        for host in groups.get(child, []):
            if name != "all" and host not in groups.setdefault(name, []):
                groups[name].append(host)


def file_inventories():
    found = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "inventories", "*", "hosts.yml"))):
        base = os.path.dirname(path)
        groups, hosts = {"all": []}, {}
        data = _load(path)
        _walk(data.get("all") or {}, "all", groups, hosts)
        group_vars = {"all": (data.get("all") or {}).get("vars") or {}}
        for name in groups:
            extra = os.path.join(base, "group_vars", name + ".yml")
            if os.path.exists(extra):
                group_vars.setdefault(name, {}).update(_load(extra))
        host_vars = {}
        for host, variables in hosts.items():
            host_vars[host] = dict(variables)
            extra = os.path.join(base, "host_vars", host + ".yml")
            if os.path.exists(extra):
                host_vars[host].update(_load(extra))
        found["inventories/" + os.path.basename(base)] = (groups, group_vars, host_vars)
    return found


def hostvars_of(groups, group_vars, host_vars):
    result = {}
    for host in groups["all"]:
        merged = dict(group_vars.get("all") or {})
        for group, members in sorted(groups.items()):
            if group != "all" and host in members:
                merged.update(group_vars.get(group) or {})
        merged.update(host_vars.get(host) or {})
        merged["inventory_hostname"] = host
        result[host] = merged
    return result


def variants(groups, hostvars):
    """(label, hostvars) pairs: as written, with facts, and every server on a wildcard with and without facts."""
    def with_facts(hv):
        out = copy.deepcopy(hv)
        for index, host in enumerate(sorted(out), start=1):
            out[host]["ansible_facts"] = {
                "default_ipv4": {"address": "10.9.0.%d" % index, "interface": "eth0"},
                "default_ipv6": {"address": "fd00::%d" % index, "interface": "eth0"},
                "eth0": {"device": "eth0", "ipv4": {"address": "10.9.0.%d" % index},
                         "ipv6": [{"address": "fd00::%d" % index}, {"address": "fe80::%d" % index}]}}
        return out

    def wildcard(hv, bind):
        out = copy.deepcopy(hv)
        for name, host in out.items():
            if name in groups.get("sglang_servers", []):
                host["sglang_server_host"] = bind
            host.pop("ansible_host", None)
        return out

    yield "plain", hostvars
    yield "facts", with_facts(hostvars)
    for bind in ("0.0.0.0", "::"):
        yield "wildcard %s" % bind, wildcard(hostvars, bind)
        yield "wildcard %s, facts" % bind, with_facts(wildcard(hostvars, bind))


def gateway(groups, hv, gateway_name):
    from ansible_collections.llmserve.sglang.plugins.plugin_utils import gateway_config  # noqa

    mine = hv[gateway_name]
    defaults = _defaults("sglang_gateway")
    cfg = {key[len("sglang_gateway_"):]: mine.get(key, value) for key, value in defaults.items()
           if key.startswith("sglang_gateway_")}
    workers = []
    for item in groups.get(cfg.get("workers_group") or "sglang_servers", []):
        worker = hv.get(item, {})
        group = worker.get("sglang_server_node_group") or ""
        if group:
            rank = worker.get("sglang_server_node_rank")
            if rank in (None, ""):
                rank = sorted(groups.get(group, [item])).index(item) if item in groups.get(group, [item]) else 0
            if str(rank) != "0":
                continue
        facts = worker.get("ansible_facts") or {}
        workers.append({"name": item, "host": worker.get("sglang_server_host", ""),
                        "port": worker.get("sglang_server_port", ""), "args": worker.get("sglang_server_args", {}),
                        "api_key": worker.get("sglang_server_api_key", ""),
                        "ansible_host": worker.get("ansible_host", ""),
                        "ipv4": (facts.get("default_ipv4") or {}).get("address", ""),
                        "ipv6": (facts.get("default_ipv6") or {}).get("address", "")})
    cfg.update({"gateway_name": gateway_name, "gateway_address": mine.get("ansible_host", ""), "workers": workers})
    try:
        rendered = gateway_config.render_gateway(cfg)
        rendered.pop("env_file", None)  # secrets
        return rendered
    except gateway_config.GatewayConfigError as error:
        return {"errors": error.errors}
    except (TypeError, ValueError) as error:
        return {"exception": "%s: %s" % (type(error).__name__, error)}


FIELDS = ("sglang_server_host", "sglang_server_port", "sglang_server_metrics", "sglang_server_args",
          "sglang_server_node_group", "sglang_server_node_rank", "sglang_server_served_model_name",
          "sglang_server_model_path", "sglang_model_repo", "sglang_model_revision", "sglang_model_dir",
          "sglang_model_path", "sglang_gateway_host", "sglang_gateway_metrics_host", "sglang_gateway_metrics_port",
          "sglang_gateway_workers_group", "sglang_monitoring_scrape", "sglang_monitoring_node_exporter",
          "sglang_monitoring_node_exporter_port", "ansible_host")


def monitoring(groups, hv, prometheus):
    from ansible_collections.llmserve.sglang.plugins.plugin_utils import monitoring_targets  # noqa

    hosts = {}
    for name, variables in hv.items():
        found = dict((field, variables[field]) for field in FIELDS if variables.get(field) is not None)
        facts = variables.get("ansible_facts") or {}
        found["ipv4"] = (facts.get("default_ipv4") or {}).get("address", "")
        found["ipv6"] = (facts.get("default_ipv6") or {}).get("address", "")
        hosts[name] = found
    cfg = {"prometheus": {"name": prometheus, "ansible_host": hv.get(prometheus, {}).get("ansible_host", "")},
           "servers_group": "sglang_servers", "gateways_group": "sglang_gateways",
           "node_exporters_group": "sglang_node_exporters",
           "jobs": {"sglang": "sglang", "gateway": "sglang_gateway", "node": "node"},
           "groups": groups, "hosts": hosts}
    try:
        return monitoring_targets.build_targets(cfg)
    except (TypeError, ValueError) as error:
        return {"exception": "%s: %s" % (type(error).__name__, error)}


def nodes(groups, hv):
    from ansible_collections.llmserve.sglang.plugins.plugin_utils import sglang_nodes  # noqa

    server = _defaults("sglang_server")
    result = {}
    for group in sorted(set(v.get("sglang_server_node_group") for v in hv.values() if v.get("sglang_server_node_group"))):
        members = {}
        for name in groups.get(group, []):
            merged = dict(server)
            merged.update(hv.get(name, {}))
            members[name] = merged
        try:
            result[group] = {"problems": sglang_nodes.node_group_problems(members, group),
                             "plan": sglang_nodes.node_group_plan(members, group)}
        except (TypeError, ValueError) as error:
            result[group] = {"problems": sglang_nodes.node_group_problems(members, group),
                             "exception": "%s: %s" % (type(error).__name__, str(error)[:2000])}
    return result


def snapshot():
    out = {}
    for label, (groups, group_vars, host_vars) in sorted({**molecule_inventories(), **file_inventories()}.items()):
        base = hostvars_of(groups, group_vars, host_vars)
        for variant, hv in variants(groups, base):
            key = "%s [%s]" % (label, variant)
            out[key] = {
                "gateways": dict((g, gateway(groups, hv, g)) for g in groups.get("sglang_gateways", [])),
                "monitoring": dict((p, monitoring(groups, hv, p))
                                   for p in (groups.get("sglang_monitoring") or ["(prometheus elsewhere)"])),
                "nodes": nodes(groups, hv),
            }
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", help="directory holding ansible_collections/llmserve/sglang (default: this checkout)")
    parser.add_argument("--compare", metavar="REV", help="compare REV's plugins with this checkout's")
    options = parser.parse_args()
    if options.compare:
        with tempfile.TemporaryDirectory() as before:
            target = os.path.join(before, "ansible_collections", "llmserve", "sglang")
            os.makedirs(target)
            archive = subprocess.run(["git", "-C", ROOT, "archive", options.compare, "plugins"], check=True,
                                     capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", target], input=archive, check=True)
            texts = []
            for tree in (before, None):
                command = [sys.executable, os.path.abspath(__file__)] + (["--tree", tree] if tree else [])
                texts.append(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
        cases = len(json.loads(texts[1]))
        diff = list(difflib.unified_diff(texts[0].splitlines(), texts[1].splitlines(), options.compare, "checkout",
                                         lineterm=""))
        print("\n".join(diff) if diff else "identical: %d inventory variants, %d lines of JSON"
              % (cases, texts[1].count("\n")))
        return 1 if diff else 0
    if options.tree:
        sys.path.insert(0, options.tree)
    else:
        # this checkout as the collection (ROOT is .../ansible_collections/llmserve/sglang in a collection tree)
        tree = os.environ.get("ANSIBLE_COLLECTIONS_PATH", "").split(os.pathsep)[0]
        if tree:
            sys.path.insert(0, tree)
    from ansible_collections.llmserve.sglang.plugins.plugin_utils import gateway_config  # noqa

    sys.stderr.write("plugins from %s\n" % os.path.dirname(gateway_config.__file__))
    json.dump(snapshot(), sys.stdout, indent=1, sort_keys=True, default=str)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
