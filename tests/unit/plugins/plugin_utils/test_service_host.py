# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the roles may take over on a host (plugins/plugin_utils/service_host.py): system and deploy accounts,
privileged and shared groups, units of others, system directories, and directories root runs Python from."""

from __future__ import annotations

import copy
import os

import pytest
import yaml

from ansible_collections.llmserve.sglang.plugins.plugin_utils import service_host as sh
from ansible_collections.llmserve.sglang.tests.unit.plugins.module_utils.source_imports import top_level_imports

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


def spec(**overrides):
    """The sglang_server role's defaults, deployed by 'ops'."""
    value = {"prefix": "sglang_server_", "user": "sglang", "group": "sglang", "user_create": True,
             "account_home": "/var/lib/sglang", "deploy_users": ["ops", ""],
             "directories": {"sglang_server_home": "/var/lib/sglang", "sglang_server_config_dir": "/etc/sglang",
                             "sglang_server_state_dir": "/var/lib/llmserve-sglang"},
             "venvs": {"sglang_server_venv": "/opt/sglang/venv"},
             "unit_name": "sglang", "trust": {"sglang_server_venv": ["/opt/sglang"]}}
    value.update(overrides)
    return value


def own_account(**overrides):
    user = {"exists": True, "name": "sglang", "uid": 998, "gid": 998, "primary_group": "sglang",
            "home": "/var/lib/sglang", "shell": "/usr/sbin/nologin", "comment": sh.ACCOUNT_COMMENT, "groups": []}
    user.update(overrides)
    return user


def state(user=None, group=None, unit=None, paths=None, heads=None, trust=None, deployer=None):
    """A deploy_state read of a host the role deployed to before."""
    return {
        "accounts": {"user": own_account() if user is None else user,
                     "group": {"exists": True, "name": "sglang", "gid": 998, "members": [], "primary_of": ["sglang"]}
                     if group is None else group,
                     "deployer": {"login_uid": 1000, "login_user": "ops", "sudo_user": "ops"}
                     if deployer is None else deployer},
        "unit": {"LoadState": "loaded", "FragmentPath": "/etc/systemd/system/sglang.service", "Id": "sglang.service"}
        if unit is None else unit,
        "paths": {"/etc/systemd/system/sglang.service": {"exists": True, "type": "file"},
                  "/lib/systemd/system/sglang.service": {"exists": False, "type": None},
                  "/usr/lib/systemd/system/sglang.service": {"exists": False, "type": None}}
        if paths is None else paths,
        "heads": {"/etc/systemd/system/sglang.service": "# Ansible managed\n[Unit]\n%s\n" % sh.UNIT_MARKER}
        if heads is None else heads,
        "trust": {"/opt/sglang": []} if trust is None else trust,
    }


def fresh_host():
    return state(user={"exists": False, "name": "sglang"}, group={"exists": False, "name": "sglang"},
                 unit={"LoadState": "not-found", "FragmentPath": "", "Id": "sglang.service"},
                 paths={}, heads={"/etc/systemd/system/sglang.service": None})


def test_imports_only_the_standard_library_and_the_collection():
    # ansible_collections: the collection's values.py, itself standard library only (test_values.py)
    assert top_level_imports(sh.__file__) == {"__future__", "posixpath", "ansible_collections"}


def test_the_defaults_pass_on_a_fresh_host_and_on_one_deployed_before():
    assert sh.service_problems(spec()) == []
    assert sh.service_problems(spec(), fresh_host()) == []
    assert sh.service_problems(spec(), state()) == []


def test_an_account_an_earlier_release_made_is_the_roles():
    legacy = own_account(comment="")
    assert sh.service_problems(spec(), state(user=legacy)) == []


def test_both_roles_mark_their_accounts_and_units_as_the_rules_expect():
    for role, unit in (("sglang_server", "sglang.service.j2"), ("sglang_gateway", "sglang-gateway.service.j2")):
        with open(os.path.join(ROOT, "roles", role, "vars", "main.yml"), encoding="utf-8") as handle:
            assert yaml.safe_load(handle)["__%s_account_comment" % role] == sh.ACCOUNT_COMMENT
        with open(os.path.join(ROOT, "roles", role, "templates", unit), encoding="utf-8") as handle:
            assert "\n%s\n" % sh.UNIT_MARKER in handle.read()


@pytest.mark.parametrize("overrides,expected", [
    ({"user": "root"}, "sglang_server_user: is root"),
    ({"user": "ops"}, "sglang_server_user: is ops, the account the deployment logs in as"),
    ({"group": "sudo"}, "sglang_server_group: is sudo, a privileged group"),
    ({"group": "root"}, "sglang_server_group: is root, a privileged group"),
    ({"group": "docker"}, "sglang_server_group: is docker, a privileged group"),
    ({"group": "systemd-journal"}, "sglang_server_group: is systemd-journal, a privileged group"),
    ({"directories": {"sglang_server_home": "/etc"}}, "sglang_server_home: /etc is the system directory /etc"),
    ({"directories": {"sglang_server_home": "/tmp"}}, "sglang_server_home: /tmp is the system directory /tmp"),
    ({"directories": {"sglang_server_home": "/var/lib/"}}, "sglang_server_home: /var/lib/ is the system directory"),
    ({"directories": {"sglang_server_config_dir": "/usr"}}, "sglang_server_config_dir: /usr is the system directory"),
    ({"directories": {"sglang_server_state_dir": "/root"}}, "sglang_server_state_dir: /root is the system directory"),
    ({"directories": {"sglang_server_home": "/tmp/sglang"}}, "sglang_server_home: /tmp/sglang is inside /tmp"),
    ({"directories": {"sglang_server_home": "/run/sglang"}}, "sglang_server_home: /run/sglang is inside /run"),
    ({"directories": {"sglang_server_home": "/home/alice"}}, "sglang_server_home: /home/alice is a person's home"),
    ({"venvs": {"sglang_gateway_venv": "/usr/local"}, "prefix": "sglang_gateway_"},
     "sglang_gateway_venv: /usr/local is the system directory /usr/local; the role would create a virtualenv there"),
    ({"venvs": {"sglang_server_venv": "/usr"}}, "sglang_server_venv: /usr is the system directory /usr"),
    ({"user_create": "maybe"}, "sglang_server_user_create: must be true or false"),
])
def test_what_the_variables_alone_decide(overrides, expected):
    found = sh.service_problems(spec(**overrides))
    assert any(message.startswith(expected) for message in found), found


def test_a_virtualenv_may_lie_anywhere_the_trust_walk_accepts():
    # /tmp itself fails the walk on the host (mode 1777); the variables alone refuse only system directories
    assert sh.service_problems(spec(venvs={"sglang_server_venv": "/tmp/build/venv"})) == []


def test_a_pre_made_account_is_still_never_root_or_the_deploy_user():
    assert sh.service_problems(spec(user="root", user_create=False))
    assert sh.service_problems(spec(user="ops", user_create=False))


HUMAN = own_account(name="alice", uid=1001, gid=1001, primary_group="alice", home="/home/alice", shell="/bin/bash",
                    comment="Alice,,,")


@pytest.mark.parametrize("host,expected", [
    (state(user=own_account(uid=0)), "sglang_server_user: sglang has uid 0"),
    (state(user=own_account(uid=1000)), "sglang_server_user: sglang is the account the deployment logs in as"),
    (state(deployer={"login_uid": None, "login_user": None, "sudo_user": "sglang"}),
     "sglang_server_user: sglang is the account the deployment logs in as"),
    (state(user=own_account(groups=["sglang", "sudo"])),
     "sglang_server_user: sglang belongs to the privileged group(s) sudo"),
    (state(user=own_account(primary_group="adm", gid=4)), "sglang_server_user: sglang belongs to the privileged group"),
    (state(user=HUMAN), "sglang_server_user: the account sglang already exists and was not created by this role "
                        "(uid 1001, home /home/alice, shell /bin/bash"),
    (state(user=own_account(comment="www-data", uid=33)), "sglang_server_user: the account sglang already exists"),
    (state(user=own_account(comment="", home="/nonexistent", uid=42)),
     "sglang_server_user: the account sglang already exists"),
    (state(user=own_account(comment="", uid=1500)), "sglang_server_user: the account sglang already exists"),
    (state(user=own_account(comment="", shell="/bin/sh")), "sglang_server_user: the account sglang already exists"),
    (state(group={"exists": True, "name": "sglang", "gid": 0, "members": [], "primary_of": []}),
     "sglang_server_group: sglang has gid 0"),
    (state(group={"exists": True, "name": "sglang", "gid": 100, "members": ["bob"], "primary_of": ["sglang", "eve"]}),
     "sglang_server_group: sglang also holds the account(s) bob, eve"),
])
def test_what_the_host_decides_about_accounts(host, expected):
    found = sh.service_problems(spec(), host)
    assert any(message.startswith(expected) for message in found), found


def test_a_login_uid_that_names_no_account_here_is_not_compared():
    # inside a container /proc/self/loginuid is the outer host's uid, which may equal the service's by chance
    host = state(deployer={"login_uid": 998, "login_user": None, "sudo_user": ""})
    assert sh.service_problems(spec(), host) == []


def test_an_account_made_on_purpose_is_used_when_user_create_is_false():
    premade = own_account(comment="SGLang service (made by ops)", uid=2001, gid=2001, home="/srv/sglang")
    host = state(user=premade, group={"exists": True, "name": "sglang", "gid": 2001, "members": [],
                                      "primary_of": ["sglang"]})
    assert sh.service_problems(spec(), host)
    assert sh.service_problems(spec(user_create=False), host) == []


def test_user_create_false_needs_the_account_and_the_group():
    found = sh.service_problems(spec(user_create=False), fresh_host())
    assert any(m.startswith("sglang_server_user_create: is false, but the account sglang does not exist") for m in found)
    assert any(m.startswith("sglang_server_group: sglang does not exist on this host") for m in found)


def vendor_unit(name, where="/lib/systemd/system"):
    host = fresh_host()
    host["paths"] = {"%s/%s.service" % (where, name): {"exists": True, "type": "file"}}
    host["unit"] = {"LoadState": "loaded", "FragmentPath": "%s/%s.service" % (where, name), "Id": name + ".service"}
    return host


@pytest.mark.parametrize("name,host,expected", [
    ("ssh", vendor_unit("ssh"), "sglang_server_unit_name: ssh is the name of a unit a package installed "
                                "(/lib/systemd/system/ssh.service)"),
    ("systemd-journald", vendor_unit("systemd-journald", "/usr/lib/systemd/system"),
     "sglang_server_unit_name: systemd-journald is the name of a unit a package installed"),
    ("sshd", dict(fresh_host(), paths={"/etc/systemd/system/sshd.service": {"exists": True, "type": "link"}},
                  unit={"LoadState": "loaded", "FragmentPath": "/lib/systemd/system/ssh.service", "Id": "ssh.service"}),
     "sglang_server_unit_name: /etc/systemd/system/sshd.service is a link"),
    ("backup", dict(fresh_host(), paths={"/etc/systemd/system/backup.service": {"exists": True, "type": "file"}},
                    heads={"/etc/systemd/system/backup.service": "[Unit]\nDescription=Backup\n"}),
     "sglang_server_unit_name: /etc/systemd/system/backup.service exists and was not written by this role"),
    ("worker", dict(fresh_host(), unit={"LoadState": "loaded", "FragmentPath": "/run/systemd/transient/worker.service",
                                        "Id": "worker.service"}),
     "sglang_server_unit_name: systemd already knows worker.service as worker.service "
     "(/run/systemd/transient/worker.service)"),
])
def test_units_of_others_are_refused(name, host, expected):
    found = sh.service_problems(spec(unit_name=name), host)
    assert any(message.startswith(expected) for message in found), found


def test_the_venv_python_and_wheelhouse_must_be_roots_alone():
    walked = {"/opt/sglang": [{"path": "/opt/sglang", "found": "uid 998, mode 0755"}],
              "/srv/wheels": [{"path": "/srv", "found": "uid 0, mode 0777"}]}
    found = sh.service_problems(spec(trust={"sglang_server_venv": ["/opt/sglang"],
                                            "sglang_server_wheelhouse": ["/srv/wheels"]}), state(trust=walked))
    assert any(m.startswith("sglang_server_venv: /opt/sglang must be a directory owned by root and writable by root "
                            "only (found: uid 998, mode 0755)") for m in found), found
    assert any(m.startswith("sglang_server_wheelhouse: /srv must be a directory owned by root") for m in found), found


def test_the_state_is_not_changed():
    host = state()
    before = copy.deepcopy(host)
    sh.service_problems(spec(), host)
    assert host == before
