# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a role may take over on a host: its service account, group, unit name and directories.

The ``sglang_server`` and ``sglang_gateway`` roles create a system account, write a unit under
``/etc/systemd/system`` and create, chown and chmod directories as root. A careless variable would make them rewrite
an account, replace a unit or re-mode a directory that belongs to someone else (``root``, the deploy user, ``ssh``,
``/etc``). ``service_problems`` is the rule book, in two parts:

* without ``state``, the rules the variables alone decide (run in the roles' controller-only validation);
* with ``state`` (a ``llmserve.sglang.deploy_state`` read of the host, before anything changes), the rules the host
  decides: the existing account and group, the existing unit, and whether root alone controls the directories root
  later runs Python from.

How an account is known to be the role's: the roles write ``ACCOUNT_COMMENT`` into its GECOS field. An account made
by an earlier release has an empty GECOS field, a no-login shell, the home the role gives it, a system uid and the
role's group as its primary group: that is taken as the role's too (the next run writes the comment). Anything else
is another account, used only when ``<role>_user_create: false`` says it was made for the service on purpose.

How a unit is known to be the role's: its file is ``/etc/systemd/system/<name>.service``, a regular file with the
``UNIT_MARKER`` line both roles' templates write, systemd knows the name as that file and no package installs a unit
of that name (``/lib/systemd/system``, ``/usr/lib/systemd/system``).

``spec`` (what a role passes):

``prefix``       the role's variable prefix (``sglang_server_``)
``user``, ``group``, ``user_create``
``account_home`` the home the role gives the account
``deploy_users`` names of the account the deployment logs in as (``ansible_user``, ...); blanks are ignored
``directories``  ``{variable: path}``: directories the role creates or re-modes as root
``venvs``        ``{variable: path}``: where the role creates a virtualenv (never a system directory; where it lies
                 is the ``trust`` walk's business)
``unit_name``    the unit's name without ``.service``
``trust``        ``{variable: [path]}``: directories root runs code from (the host walks them: ``state['trust']``)

The rules are plain functions ``rule(cfg, problems)`` on the rule engine (``rules``) over one ``ServiceSpec`` (the
normalised ``spec`` and ``state``): ``STATIC_RULES`` always, ``HOST_RULES`` when there is a ``state``.

Standard library only.
"""

from __future__ import annotations

import posixpath

from ansible_collections.llmserve.sglang.plugins.plugin_utils.values import as_bool
from ansible_collections.llmserve.sglang.plugins.plugin_utils.rules import Problems, run_rules

ACCOUNT_COMMENT = "llmserve.sglang service account"
UNIT_MARKER = "Documentation=https://github.com/llmserve/sglang"
OWN_UNIT_DIR = "/etc/systemd/system"
VENDOR_UNIT_DIRS = ("/lib/systemd/system", "/usr/lib/systemd/system")
# Groups whose members can read logs or secrets, write disks, or become root (directly or through a daemon).
PRIVILEGED_GROUPS = frozenset((
    "root", "sudo", "wheel", "admin", "adm", "disk", "kmem", "shadow", "staff", "sys", "tty", "docker", "podman",
    "lxd", "lxc", "libvirt", "kvm", "systemd-journal", "systemd-network", "netdev", "polkitd",
))
# Directories of the operating system: chowning or re-moding one breaks the host (or opens it).
SYSTEM_DIRECTORIES = frozenset((
    "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/media", "/mnt", "/opt",
    "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/usr/bin", "/usr/include", "/usr/lib",
    "/usr/lib64", "/usr/libexec", "/usr/local", "/usr/local/bin", "/usr/local/lib", "/usr/local/sbin",
    "/usr/local/share", "/usr/sbin", "/usr/share", "/usr/src", "/var", "/var/backups", "/var/cache", "/var/lib",
    "/var/local", "/var/lock", "/var/log", "/var/mail", "/var/opt", "/var/run", "/var/spool", "/var/tmp", "/etc/ssh",
    "/etc/systemd", "/etc/systemd/system", "/etc/sudoers.d", "/etc/ssl", "/etc/pki", "/lib/systemd",
    "/usr/lib/systemd",
))
# Trees nothing of a deployment may live in: kernel and device file systems, volatile or world-writable ones.
FORBIDDEN_TREES = ("/proc", "/sys", "/dev", "/run", "/tmp", "/var/tmp", "/boot")
NOLOGIN_SHELLS = ("/usr/sbin/nologin", "/sbin/nologin", "/bin/false", "/usr/bin/false")
# Debian, Ubuntu, RHEL: system accounts get uids below 1000 (SYS_UID_MAX in login.defs).
SYSTEM_UID_MAX = 999


def unit_paths(unit_name):
    """``(own, vendor)``: where the role writes the unit, and where a package's unit of that name would be."""
    name = "%s.service" % unit_name
    return posixpath.join(OWN_UNIT_DIR, name), [posixpath.join(d, name) for d in VENDOR_UNIT_DIRS]


def _text(value):
    return value.strip() if isinstance(value, str) else ""


def _normalised(path):
    norm = posixpath.normpath(path)
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    return norm


def directory_problem(path, system_only=False):
    """Why ``path`` may not be a directory a role takes over (None when it may); ``system_only``: only the rule
    against the system directories themselves."""
    path = _text(path)
    if not path.startswith("/"):
        return None
    norm = _normalised(path)
    if norm in SYSTEM_DIRECTORIES:
        return "is the system directory %s" % norm
    if system_only:
        return None
    for tree in FORBIDDEN_TREES:
        if norm.startswith(tree + "/"):
            return "is inside %s (kernel, device, volatile or world-writable)" % tree
    if posixpath.dirname(norm) == "/home":
        return "is a person's home directory (%s)" % norm
    return None


class ServiceSpec(object):
    """The normalised configuration the rules read: ``spec``, ``state`` (None without one), the prefix, the account
    and group names and ``user_create`` (set by ``check_user_create``)."""

    def __init__(self, spec, state):
        if not isinstance(spec, dict):
            raise TypeError("spec must be a dict, got %s" % type(spec).__name__)
        self.spec = spec
        self.state = state if isinstance(state, dict) else None
        self.prefix = _text(spec.get("prefix")) or "sglang_server_"
        self.user = _text(spec.get("user"))
        self.group = _text(spec.get("group"))
        self.user_create = True

    def var(self, key):
        """The role variable of ``key`` (``user`` -> ``sglang_server_user``)."""
        return self.prefix + key

    def named(self, variable):
        """A variable of a ``spec`` table as the messages name it: with the prefix (added where it lacks one)."""
        return self.prefix + (variable[len(self.prefix):] if variable.startswith(self.prefix) else variable)


# -- what the variables alone decide ----------------------------------------------------------------


def check_user_create(cfg, problems):
    user_create = as_bool(cfg.spec.get("user_create", True))
    if user_create is None:
        problems.add(cfg.var("user_create"), "must be true or false, got %r" % (cfg.spec.get("user_create"),))
        user_create = True
    cfg.user_create = user_create


def check_service_account(cfg, problems):
    if cfg.user == "root":
        problems.add(cfg.var("user"), "is root: the service would run with every privilege. Use an account of its own "
                     "(the default creates one)")
    deployers = set(_text(name) for name in cfg.spec.get("deploy_users") or [] if _text(name))
    if cfg.user and cfg.user in deployers:
        problems.add(cfg.var("user"), "is %s, the account the deployment logs in as: the service would run with its "
                     "rights (sudo, SSH keys, other hosts). Use an account of its own" % cfg.user)
    if cfg.group in PRIVILEGED_GROUPS:
        problems.add(cfg.var("group"), "is %s, a privileged group (its members can read logs or secrets, write disks "
                     "or become root): the service would hold those rights. Use a group of its own" % cfg.group)


def check_directories(cfg, problems):
    for variable, path in sorted((cfg.spec.get("directories") or {}).items()):
        problem = directory_problem(path)
        if problem:
            problems.add(cfg.named(variable), "%s %s; the role creates, chowns and re-modes this directory as root. "
                         "Choose a directory of its own (such as the default)" % (_text(path), problem))


def check_venvs(cfg, problems):
    for variable, path in sorted((cfg.spec.get("venvs") or {}).items()):
        problem = directory_problem(path, system_only=True)
        if problem:
            problems.add(cfg.named(variable), "%s %s; the role would create a virtualenv there as root. Choose a "
                         "directory of its own (such as the default)" % (_text(path), problem))


# -- what the host decides ----------------------------------------------------------------------------


def _accounts(cfg):
    accounts = cfg.state.get("accounts") or {}
    return (accounts.get("user") or {}, accounts.get("group") or {}, accounts.get("deployer") or {})


def _ours(cfg, user, group):
    if user.get("comment") == ACCOUNT_COMMENT:
        return True
    # an account an earlier release made (no comment then)
    uid = user.get("uid")
    return (not user.get("comment") and user.get("shell") in NOLOGIN_SHELLS
            and user.get("home") == cfg.spec.get("account_home")
            and isinstance(uid, int) and 0 < uid <= SYSTEM_UID_MAX
            and bool(group.get("exists")) and user.get("gid") == group.get("gid"))


def check_account(cfg, problems):
    user, group, deployer = _accounts(cfg)
    if not user.get("exists"):
        if not cfg.user_create:
            problems.add(cfg.var("user_create"), "is false, but the account %s does not exist on this host: create "
                         "it first, or let the role create it (true)" % cfg.user)
        return
    uid = user.get("uid")
    if uid == 0:
        problems.add(cfg.var("user"), "%s has uid 0 (root's): the service would run with every privilege" % cfg.user)
        return
    # the login uid counts only when it names an account here: in a container it is the outer host's
    if (deployer.get("login_user") and uid == deployer.get("login_uid")) \
            or cfg.user in (deployer.get("login_user"), deployer.get("sudo_user")):
        problems.add(cfg.var("user"), "%s is the account the deployment logs in as on this host: the service would "
                     "run with its rights (sudo, SSH keys, other hosts). Use an account of its own" % cfg.user)
        return
    privileged = sorted(set(user.get("groups") or []) & PRIVILEGED_GROUPS)
    if user.get("primary_group") in PRIVILEGED_GROUPS or user.get("gid") == 0:
        privileged.insert(0, user.get("primary_group") or "gid 0")
    if privileged:
        problems.add(cfg.var("user"), "%s belongs to the privileged group(s) %s: the service would hold their rights. "
                     "Take the account out of them or use another" % (cfg.user, ", ".join(privileged)))
    if cfg.user_create and not _ours(cfg, user, group):
        problems.add(cfg.var("user"), "the account %s already exists and was not created by this role (uid %s, home "
                     "%s, shell %s, comment %r): the role would change its group, home and shell. Choose another "
                     "name, or, when the account was made for this service on purpose, set %suser_create: false (the "
                     "role then uses it as it is)" % (cfg.user, uid, user.get("home"), user.get("shell"),
                                                      user.get("comment") or "", cfg.prefix))


def check_group(cfg, problems):
    dummy, group, dummy = _accounts(cfg)
    if not group.get("exists"):
        if not cfg.user_create:
            problems.add(cfg.var("group"), "%s does not exist on this host, and %suser_create is false: create it "
                         "first, or let the role create it" % (cfg.group, cfg.prefix))
        return
    if group.get("gid") == 0:
        problems.add(cfg.var("group"), "%s has gid 0 (root's group)" % cfg.group)
        return
    others = sorted((set(group.get("members") or []) | set(group.get("primary_of") or [])) - set([cfg.user]))
    if others:
        problems.add(cfg.var("group"), "%s also holds the account(s) %s: they could read what the role makes readable "
                     "to the service's group (its configuration with the API key, its TLS key). Use a group of the "
                     "service's own" % (cfg.group, ", ".join(others[:10])))


def check_unit(cfg, problems):
    name = _text(cfg.spec.get("unit_name"))
    if not name:
        return
    own, vendor = unit_paths(name)
    paths = cfg.state.get("paths") or {}
    heads = cfg.state.get("heads") or {}
    unit = cfg.state.get("unit") or {}
    variable = cfg.var("unit_name")
    for path in vendor:
        if (paths.get(path) or {}).get("exists"):
            problems.add(variable, "%s is the name of a unit a package installed (%s): the role's unit in %s would "
                         "replace it. Choose another name" % (name, path, OWN_UNIT_DIR))
            return
    found = paths.get(own) or {}
    if found.get("exists"):
        if found.get("type") != "file":
            problems.add(variable, "%s is a %s, not a unit file this role wrote (an alias or a masked unit): choose "
                         "another name" % (own, found.get("type")))
            return
        if UNIT_MARKER not in (heads.get(own) or ""):
            problems.add(variable, "%s exists and was not written by this role (it lacks the line %s): the role "
                         "would replace it. Choose another name" % (own, UNIT_MARKER))
            return
    load = unit.get("LoadState") or ""
    if load and load != "not-found":
        fragment = unit.get("FragmentPath") or ""
        unit_id = unit.get("Id") or ""
        if fragment != own or (unit_id and unit_id != name + ".service"):
            problems.add(variable, "systemd already knows %s.service as %s (%s): it is not a unit this role wrote. "
                         "Choose another name" % (name, unit_id or "?", fragment or "no unit file"))


def check_trust(cfg, problems):
    walked = cfg.state.get("trust") or {}
    for variable, paths in sorted((cfg.spec.get("trust") or {}).items()):
        for path in paths or []:
            for problem in walked.get(path) or []:
                problems.add(cfg.named(variable), "%s must be a directory owned by root and writable by root only "
                             "(found: %s). Root installs or runs the Python below %s, so whoever can change it could "
                             "run code as root. Fix the ownership and mode, or choose another %s"
                             % (problem.get("path"), problem.get("found"), path, variable))


# The rules in the order they report.
STATIC_RULES = (check_user_create, check_service_account, check_directories, check_venvs)
HOST_RULES = (check_account, check_group, check_unit, check_trust)


def service_problems(spec, state=None):
    """Every rule the service account, group, unit name and directories of ``spec`` break (empty when none).

    Without ``state`` only the rules the variables decide; with ``state`` (a deploy_state read) the host's too.
    """
    cfg = ServiceSpec(spec, state)
    problems = Problems()
    run_rules(STATIC_RULES, cfg, problems)
    if cfg.state is not None:
        run_rules(HOST_RULES, cfg, problems)
    return problems.errors
