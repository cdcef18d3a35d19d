# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A deployment's directories and files: checked, created, written and read back without following links.

Root reads back what it keeps in the deployment state directory and restores it as root, so nobody else may be able
to change that directory: ``trust_problems`` walks its path from the top and reports every existing component that is
a link, not a directory, not owned by root, or writable by group or others.

``Directory`` and ``File`` describe what a deployment wants; ``plan_directory``/``plan_file`` compare that with the
host (``lstat``: the last component is never followed) and refuse a link or a file of the wrong type in a wanted
place; ``apply_directory``/``apply_file`` change only what differs, through descriptors opened with ``O_NOFOLLOW``,
and write a file's content atomically (a new file in the same directory, renamed over the old one), so a reader
sees the old or the new file, never half of one. ``inspect_path`` describes one path (type, owner, mode, sha256).

Standard library only: this runs on the managed hosts.
"""

from __future__ import annotations

import grp
import hashlib
import os
import pwd
import re
import stat

from ansible_collections.llmserve.sglang.plugins.module_utils.text import printable as text_printable

O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
# A file read back as text (an install record) is small; a bigger one is not what the caller wrote.
MAX_READ = 1 << 20
_MODE = re.compile(r"0?[0-7]{3,4}")
_CONTROL = re.compile("[\x00-\x1f\x7f]")


class StateError(Exception):
    """A problem that stops the module before (or while) it changes anything; the message says which path and why."""


def printable(text, limit=300):
    """``text`` cut to ``limit``, what is not printable shown as ``?`` (messages about hostile names)."""
    return text_printable(text, limit)


def check_path(path, what):
    """``path`` when it is absolute, normalised and free of control characters; else StateError naming ``what``."""
    if not isinstance(path, str) or not path:
        raise StateError("%s: a path is required" % what)
    if _CONTROL.search(path):
        raise StateError("%s: %s contains a control character" % (what, printable(path)))
    if not path.startswith("/") or path.startswith("//") or os.path.normpath(path) != path:
        raise StateError("%s: %s must be an absolute, normalised path (no '.', '..', '//' or trailing '/')"
                         % (what, printable(path)))
    return path


def parse_mode(value, what):
    """Permission bits from an octal string (``'0750'``) or an integer; StateError otherwise."""
    if isinstance(value, bool):
        raise StateError("%s: mode must be an octal string such as '0750', got %r" % (what, value))
    if isinstance(value, int):
        mode = value
    elif isinstance(value, str) and _MODE.fullmatch(value):
        mode = int(value, 8)
    else:
        raise StateError("%s: mode must be an octal string such as '0750', got %s" % (what, printable(repr(value))))
    if not 0 <= mode <= 0o7777:
        raise StateError("%s: mode %o is out of range" % (what, mode))
    return mode


def _entry_field(lookup, key, field):
    """``field`` of the passwd or group entry that ``lookup`` (``pwd.getpwnam``, ...) finds for ``key``, None when
    there is no such entry."""
    try:
        return getattr(lookup(key), field)
    except KeyError:
        return None


def _account_id(name, lookup, field):
    """The id of an account name through ``lookup`` (a decimal string is the id itself), None for no such account."""
    if name is None:
        return None
    if str(name).isdigit():
        return int(name)
    return _entry_field(lookup, name, field)


def user_id(name):
    """uid of a user name (or of a decimal string), None when there is no such user."""
    return _account_id(name, pwd.getpwnam, "pw_uid")


def group_id(name):
    """gid of a group name (or of a decimal string), None when there is no such group."""
    return _account_id(name, grp.getgrnam, "gr_gid")


def user_name(uid):
    return _entry_field(pwd.getpwuid, uid, "pw_name")


def group_name(gid):
    return _entry_field(grp.getgrgid, gid, "gr_name")


def kind_text(path, info):
    """What ``path`` is, for messages: ``a symbolic link to /etc``, ``a regular file``, ``a directory``, ..."""
    if stat.S_ISLNK(info.st_mode):
        try:
            return "a symbolic link to %s" % printable(os.readlink(path))
        except OSError:
            return "a symbolic link"
    if stat.S_ISREG(info.st_mode):
        return "a regular file"
    if stat.S_ISDIR(info.st_mode):
        return "a directory"
    return "a special file"


def _lstat(path):
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StateError("cannot inspect %s: %s" % (printable(path), exc.strerror))


def trust_problems(path, owners=(0,), sticky_ok=False):
    """``[(component, found, fixable)]`` for each existing component of ``path`` (from the first below ``/``) that
    anyone but root could change: a link, not a directory, another owner (not in ``owners``), or writable by group
    or others. ``fixable`` is true for a directory whose owner or mode is wrong (chown/chmod can fix it), false for
    a link or something that is not a directory.

    ``sticky_ok``: a world-writable directory with the sticky bit (``/tmp``) may stand above the last component:
    nobody but an entry's owner (or root) can rename or remove that entry there, and the next component is judged
    in its turn.

    The walk stops at the first missing component (nothing below it exists yet) and after a component that is
    not a directory (nothing below it can be judged).
    """
    problems = []
    current = ""
    parts = path.strip("/").split("/")
    for index, part in enumerate(parts):
        current += "/" + part
        info = _lstat(current)
        if info is None:
            break
        if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
            problems.append((current, kind_text(current, info), False))
            break
        writable = info.st_mode & 0o022
        if writable and sticky_ok and info.st_mode & stat.S_ISVTX and index < len(parts) - 1:
            writable = 0
        if info.st_uid not in owners or writable:
            problems.append((current, "uid %d, mode %04o" % (info.st_uid, stat.S_IMODE(info.st_mode)), True))
    return problems


class Wanted(object):
    """Owner, group and mode a directory or file must have; an owner or group of None is left as it is."""

    def __init__(self, path, owner=None, group=None, mode=None, what="path"):
        self.path = check_path(path, what)
        self.owner, self.group = owner, group
        self.uid = user_id(owner)
        self.gid = group_id(group)
        self.mode = None if mode is None else parse_mode(mode, "%s %s" % (what, path))

    def unresolved(self):
        """Names that do not exist (yet): the owner or group of an account created later in the same run."""
        missing = []
        if self.owner is not None and self.uid is None:
            missing.append("user %s" % printable(self.owner))
        if self.group is not None and self.gid is None:
            missing.append("group %s" % printable(self.group))
        return missing

    def attribute_changes(self, info):
        """Names of the attributes of an existing inode that differ from the wanted ones."""
        changes = []
        if self.owner is not None and (self.uid is None or info.st_uid != self.uid):
            changes.append("owner")
        if self.group is not None and (self.gid is None or info.st_gid != self.gid):
            changes.append("group")
        if self.mode is not None and stat.S_IMODE(info.st_mode) != self.mode:
            changes.append("mode")
        return changes


class Directory(Wanted):
    def __init__(self, path, owner=None, group=None, mode=None):
        super(Directory, self).__init__(path, owner, group, mode, what="directories")


class File(Wanted):
    def __init__(self, path, data, owner=None, group=None, mode=None):
        super(File, self).__init__(path, owner, group, mode, what="files")
        self.data = data


def attributes_of(info):
    """``{owner, group, mode}`` of an inode as --diff shows them (names, or the ids without a name)."""
    return dict(owner=user_name(info.st_uid) or str(info.st_uid), group=group_name(info.st_gid) or str(info.st_gid),
                mode="%04o" % stat.S_IMODE(info.st_mode))


def plan_directory(spec):
    """What making ``spec`` true takes: ``{path, exists, create (missing directories, top first), changes}``.

    StateError when the path (or a missing directory's existing ancestor) is not a plain directory: a link there
    could send the ownership change somewhere else, so nothing is changed through it.
    """
    info = _lstat(spec.path)
    if info is None:
        create = [spec.path]
        parent = os.path.dirname(spec.path)
        while True:
            parent_info = _lstat(parent)
            if parent_info is not None:
                break
            create.insert(0, parent)
            parent = os.path.dirname(parent)
        if not os.path.isdir(parent):
            raise StateError("%s cannot be created: %s is %s, not a directory"
                             % (printable(spec.path), printable(parent), kind_text(parent, parent_info)))
        return dict(path=spec.path, exists=False, create=create, changes=["created"])
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise StateError("%s is not a plain directory (%s): nothing is created in it or changed through it. "
                         "Something other than this deployment put it there; inspect and remove it, then run again."
                         % (printable(spec.path), kind_text(spec.path, info)))
    return dict(path=spec.path, exists=True, create=[], changes=spec.attribute_changes(info),
                attributes=attributes_of(info))


def _open_nofollow(path, flags, want):
    """A descriptor of ``path`` that is not a link and is of the wanted type (``stat.S_ISDIR``/``S_ISREG``)."""
    try:
        fd = os.open(path, flags | O_NOFOLLOW | O_CLOEXEC)
    except OSError as exc:
        raise StateError("cannot open %s without following links: %s" % (printable(path), exc.strerror))
    if not want(os.fstat(fd).st_mode):
        os.close(fd)
        raise StateError("%s changed type while it was being set up; run again" % printable(path))
    return fd


def _set_attributes(fd, spec):
    if spec.uid is not None or spec.gid is not None:
        os.fchown(fd, -1 if spec.uid is None else spec.uid, -1 if spec.gid is None else spec.gid)
    if spec.mode is not None:
        os.fchmod(fd, spec.mode)


def apply_directory(spec, plan):
    """Create the missing directories (each with the wanted owner, group and mode) and fix the attributes."""
    for path in plan["create"]:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            # a missing parent that an earlier wanted directory created meanwhile keeps what that one wanted; the
            # wanted directory itself is checked and set like any existing one
            if path != spec.path:
                continue
        except OSError as exc:
            raise StateError("cannot create %s: %s" % (printable(path), exc.strerror))
        fd = _open_nofollow(path, os.O_RDONLY | O_DIRECTORY, stat.S_ISDIR)
        try:
            _set_attributes(fd, spec)
        finally:
            os.close(fd)
    if plan["exists"] and plan["changes"]:
        fd = _open_nofollow(spec.path, os.O_RDONLY | O_DIRECTORY, stat.S_ISDIR)
        try:
            _set_attributes(fd, spec)
        finally:
            os.close(fd)


def read_regular(path, limit=None):
    """Bytes of a regular file (never through a link); None when it does not exist.

    StateError for a link or another type, and for a file longer than ``limit`` bytes.
    """
    info = _lstat(path)
    if info is None:
        return None
    if not stat.S_ISREG(info.st_mode):
        raise StateError("%s is not a regular file (%s)" % (printable(path), kind_text(path, info)))
    fd = _open_nofollow(path, os.O_RDONLY, stat.S_ISREG)
    chunks = []
    size = 0
    try:
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            size += len(chunk)
            if limit is not None and size > limit:
                raise StateError("%s is larger than %d bytes" % (printable(path), limit))
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def plan_file(spec):
    """``{path, exists, content_changed, changes}`` for a wanted file; StateError for a link or a non-file there."""
    info = _lstat(spec.path)
    parent = os.path.dirname(spec.path)
    if not os.path.isdir(parent):
        raise StateError("%s cannot be written: its directory %s does not exist"
                         % (printable(spec.path), printable(parent)))
    if info is None:
        return dict(path=spec.path, exists=False, content_changed=True, changes=["created"], before=None,
                    attributes={})
    if not stat.S_ISREG(info.st_mode):
        raise StateError("%s is not a regular file (%s): nothing is written through it. Something other than this "
                         "deployment put it there; inspect and remove it, then run again."
                         % (printable(spec.path), kind_text(spec.path, info)))
    before = read_regular(spec.path)
    content_changed = before != spec.data
    changes = (["content"] if content_changed else []) + spec.attribute_changes(info)
    # ``before`` and ``attributes`` (what is there now) are for --diff only; they never leave the module unmasked
    return dict(path=spec.path, exists=True, content_changed=content_changed, changes=changes, before=before,
                attributes=attributes_of(info))


def apply_file(spec, plan):
    """Write the content atomically when it differs, else fix owner, group and mode in place."""
    if not plan["changes"]:
        return
    if not plan["content_changed"]:
        fd = _open_nofollow(spec.path, os.O_RDONLY, stat.S_ISREG)
        try:
            _set_attributes(fd, spec)
        finally:
            os.close(fd)
        return
    # a file that exists keeps the owner, group and mode nobody asked to change
    keep = _lstat(spec.path) if plan["exists"] else None
    uid = spec.uid if spec.uid is not None else (keep.st_uid if keep else None)
    gid = spec.gid if spec.gid is not None else (keep.st_gid if keep else None)
    mode = spec.mode if spec.mode is not None else (stat.S_IMODE(keep.st_mode) if keep else None)
    directory, name = os.path.split(spec.path)
    tmp = os.path.join(directory, ".%s.%s.tmp" % (name[:200], os.urandom(6).hex()))
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
    except OSError as exc:
        raise StateError("cannot write %s: %s" % (printable(spec.path), exc.strerror))
    try:
        try:
            if uid is not None or gid is not None:
                os.fchown(fd, -1 if uid is None else uid, -1 if gid is None else gid)
            if mode is not None:
                os.fchmod(fd, mode)
            view = memoryview(spec.data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, spec.path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise StateError("cannot write %s: %s" % (printable(spec.path), exc.strerror))
        raise


def sha256_of(path):
    """sha256 of a regular file read through a descriptor that does not follow links."""
    digest = hashlib.sha256()
    fd = _open_nofollow(path, os.O_RDONLY, stat.S_ISREG)
    try:
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            digest.update(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest()


def inspect_path(path, checksum=True):
    """What is at ``path`` (the last component not followed): type, owner, mode, size, link target, sha256."""
    info = _lstat(path)
    if info is None:
        return dict(exists=False, type=None)
    kind = ("link" if stat.S_ISLNK(info.st_mode) else "file" if stat.S_ISREG(info.st_mode)
            else "directory" if stat.S_ISDIR(info.st_mode) else "other")
    result = dict(exists=True, type=kind, uid=info.st_uid, gid=info.st_gid, owner=user_name(info.st_uid),
                  group=group_name(info.st_gid), mode="%04o" % stat.S_IMODE(info.st_mode), size=info.st_size)
    if kind == "link":
        try:
            result["target"] = os.readlink(path)
        except OSError:
            result["target"] = None
    if kind == "file" and checksum:
        result["sha256"] = sha256_of(path)
    return result


def account_info(user=None, group=None):
    """``{user: {exists, name, uid, gid, primary_group, home, shell, comment, groups}, group: {exists, name, gid,
    members, primary_of}}`` for the names given.

    ``comment`` is the GECOS field (the roles mark the accounts they create there), ``groups`` the supplementary
    groups that list the user, ``members`` the accounts a group lists and ``primary_of`` the accounts whose primary
    group it is (the validation refuses privileged and shared groups).
    """
    result = {}
    if user is not None:
        try:
            entry = pwd.getpwnam(user)
            result["user"] = dict(exists=True, name=user, uid=entry.pw_uid, gid=entry.pw_gid,
                                  primary_group=group_name(entry.pw_gid), home=entry.pw_dir, shell=entry.pw_shell,
                                  comment=entry.pw_gecos,
                                  groups=sorted(g.gr_name for g in grp.getgrall() if user in g.gr_mem))
        except KeyError:
            result["user"] = dict(exists=False, name=user)
    if group is not None:
        try:
            entry = grp.getgrnam(group)
            result["group"] = dict(exists=True, name=group, gid=entry.gr_gid, members=sorted(entry.gr_mem),
                                   primary_of=sorted(p.pw_name for p in pwd.getpwall() if p.pw_gid == entry.gr_gid))
        except KeyError:
            result["group"] = dict(exists=False, name=group)
    return result


def deployer_info(environ=None, loginuid_path="/proc/self/loginuid"):
    """Who runs the deployment: ``{login_uid, login_user, sudo_user}``.

    ``login_uid`` is the audit login uid (the account that logged in over SSH; become keeps it), None when the kernel
    has none (4294967295, no audit session); ``sudo_user`` is ``SUDO_USER`` ("" without sudo).
    """
    environ = os.environ if environ is None else environ
    uid = None
    try:
        with open(loginuid_path, "rb") as handle:
            text = handle.read(32).strip()
        if text.isdigit() and int(text) != 4294967295:
            uid = int(text)
    except (OSError, ValueError):
        uid = None
    return dict(login_uid=uid, login_user=None if uid is None else user_name(uid),
                sudo_user=environ.get("SUDO_USER", ""))


def read_head(path, size=4096):
    """The first ``size`` bytes of a regular file as text (never through a link); None for anything else."""
    info = _lstat(path)
    if info is None or not stat.S_ISREG(info.st_mode):
        return None
    fd = _open_nofollow(path, os.O_RDONLY, stat.S_ISREG)
    try:
        return os.read(fd, size).decode("utf-8", "replace")
    finally:
        os.close(fd)
