# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The model store's rules: names, revisions, layout, free space, retention and progress text.

Rules (each raises ``ModelStoreError`` naming the variable and the rule):

``check_repo(repo)``
    ``sglang_model_repo`` is ``org/name`` as the hub allows it; returns ``(org, name)``.
``check_revision(revision, allow_floating)``
    ``'commit'`` for a full 40-hex commit id, ``'floating'`` for a branch or tag when that is allowed.
``check_file_name(path)``
    a file name the hub lists, as a safe relative path inside a revision directory.
``pickle_files(names)`` / ``pickle_refusal(files)``
    the weights that are pickles (loading them runs code) and the sentence that refuses them.
``remote_code_files(config, names)`` / ``remote_code_refusal(config, names)``
    the Python files a ``config.json`` with ``auto_map`` makes SGLang run, and the sentence that refuses them.
``policy_refusal(names, config, config_error, allow_pickle, allow_remote_code)``
    both refusals in their order, as the hub's answer and a verified record are held to them.

Layout: ``revision_dir``, ``staging_dir`` (beside it, so the final rename stays on one filesystem), ``state_file``
and ``safe_join``.  Disk: ``bytes_needed``, ``check_free_space``, ``mount_point``.  Retention:
``revisions_to_remove``; the revisions sglang_server's units load: ``referenced_revisions`` over its command line
records (``*.args.json``), which ``read_records`` reads from its directories (``read_small_file``: a bounded read
that never waits on a FIFO).  Concurrency: ``lock_repo``, one writer per repository directory.  Text:
``human_bytes``, ``progress_line``, ``listed``.

Trust: ``trusted_owners``, ``path_problems`` (the directories on the way to the store), ``entry_problem`` and
``tree_problems`` (a published revision, its record, a staging directory), ``interpreter_problems`` (the interpreter
that runs huggingface_hub as root, and its virtualenv), ``trust_text``.

Hashing, manifests and verification live in ``model_manifest``.  Standard library only: this runs on the managed
hosts (Python 3.8+).
"""

from __future__ import annotations

import errno
import fcntl
import json
import math
import os
import re
import stat
import time

from ansible_collections.llmserve.sglang.plugins.module_utils.deploy_state import kind_text, trust_problems
from ansible_collections.llmserve.sglang.plugins.module_utils.text import printable

GIB = 1 << 30
# The hub's own limit for each part of a repository id.
REPO_PART_MAX = 96
# Pickle formats: unpickling runs whatever code the file names.
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt")
# The sglang_server variable that turns on SGLang's --trust-remote-code.
TRUST_REMOTE_CODE_VAR = "sglang_server_args.trust_remote_code"
STAGING_PREFIX = ".staging-"
STATE_PREFIX = ".verified-"
# How many names an error message lists before it gives only a count.
LISTED_MAX = 10
# The flags of sglang_server's command lines that name a model directory.
MODEL_FLAGS = ("--model-path", "--speculative-draft-model-path", "--tokenizer-path")
RECORD_SUFFIX = ".args.json"
# A command line record is a few KiB; a bigger file is not one sglang_server wrote.
RECORD_MAX = 1 << 20

_REPO_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_COMMIT = re.compile(r"[0-9a-f]{40}\Z")
_HEX = re.compile(r"[0-9a-fA-F]+\Z")
_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*\Z")
# C0, DEL and C1 controls: never part of a file name the store writes.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_NAME_MAX = 255


class ModelStoreError(Exception):
    """Input the store refuses; the message names the variable (or the file) and the rule."""


def _show(value, limit=120):
    return printable(value if isinstance(value, str) else repr(value), limit, escape=True)


# --- names and revisions ------------------------------------------------------------------

def check_repo(repo):
    """``(org, name)`` of ``sglang_model_repo``; ModelStoreError unless it is a hub repository id ``org/name``."""
    rule = ("sglang_model_repo: %s must be 'org/name': two parts joined by one '/', each starting with a letter or "
            "digit, then letters, digits, '.', '_' or '-', at most %d characters, without '..' or '--' and not "
            "ending in '.' or '-'" % (_show(repo), REPO_PART_MAX))
    if not isinstance(repo, str) or repo.count("/") != 1:
        raise ModelStoreError(rule)
    parts = repo.split("/")
    for part in parts:
        # '--' joins org and name in the store's directory names, so it must not occur inside either
        # (the hub refuses it too); without it, the directory name maps back to one repository.
        if (not _REPO_PART.match(part) or len(part) > REPO_PART_MAX or ".." in part or "--" in part
                or part.endswith((".", "-"))):
            raise ModelStoreError(rule)
    return parts[0], parts[1]


def check_revision(revision, allow_floating):
    """``'commit'`` or ``'floating'``; ModelStoreError naming ``sglang_model_revision`` otherwise.

    A floating name (branch, tag, ``refs/pr/N``) can move between two hosts' downloads, so it is refused unless
    ``sglang_model_allow_floating_revision`` is true.  An abbreviated commit id is refused either way: the hub
    cannot be asked which commit it means, and a branch could carry the same name.
    """
    if not isinstance(revision, str) or not revision:
        raise ModelStoreError("sglang_model_revision: a commit id (40 hexadecimal digits) is required, got %s"
                              % _show(revision))
    if _COMMIT.match(revision):
        return "commit"
    if _HEX.match(revision) and len(revision) == 40:
        raise ModelStoreError("sglang_model_revision: %s must be written in lower case, as the hub names commits"
                              % _show(revision))
    if _HEX.match(revision) and len(revision) >= 4:
        raise ModelStoreError("sglang_model_revision: %s looks like an abbreviated or malformed commit id; give the "
                              "full 40-hex commit id" % _show(revision))
    if (not _REF.match(revision) or len(revision) > 255 or ".." in revision or "//" in revision
            or revision.endswith(("/", ".", ".lock"))):
        raise ModelStoreError("sglang_model_revision: %s is neither a 40-hex commit id nor a valid branch or tag name"
                              % _show(revision))
    if not allow_floating:
        raise ModelStoreError("sglang_model_revision: %s is a branch or tag name, which can point at other weights "
                              "by the time the next host fetches them; give the full 40-hex commit id, or set "
                              "sglang_model_allow_floating_revision: true to resolve it to one commit per run"
                              % _show(revision))
    return "floating"


def check_file_name(path):
    """``path`` (a file name from the hub) when it is a plain relative path; else ModelStoreError naming the file."""
    def refuse(rule):
        raise ModelStoreError("model file name %s from the hub refused: %s" % (_show(path, 300), rule))

    if not isinstance(path, str) or not path:
        refuse("it is empty or not a string")
    if _CONTROL.search(path):
        refuse("it contains a control character")
    if "\\" in path:
        refuse("it contains a backslash")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        refuse("it is not valid UTF-8")
    if path.startswith("/"):
        refuse("it is an absolute path")
    parts = path.split("/")
    if any(part == "" for part in parts):
        refuse("it has an empty component ('//' or a trailing '/')")
    if any(part in (".", "..") for part in parts):
        refuse("it has a '.' or '..' component")
    if parts[0] == ".git":
        refuse("it is inside .git/")
    if any(len(part.encode("utf-8")) > _NAME_MAX for part in parts):
        refuse("a component is longer than %d bytes" % _NAME_MAX)
    return path


def pickle_files(names):
    """The names (sorted) whose suffix is a pickle format."""
    return sorted(name for name in names if name.lower().endswith(PICKLE_SUFFIXES))


def pickle_refusal(files):
    """The refusal for the pickle ``files`` (first 10 named, then a count)."""
    return ("sglang_model_allow_pickle is false and the repository holds pickle files, which run code when they are "
            "loaded: %s; use a revision with safetensors weights, or set sglang_model_allow_pickle: true if you "
            "trust this repository" % listed(list(files), width=200))


def _auto_map_refs(config):
    """Every class reference under an ``auto_map`` key anywhere in ``config``."""
    refs = []

    def strings(value):
        if isinstance(value, str):
            refs.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                strings(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                strings(item)

    def walk(value):
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "auto_map":
                    strings(item)
                else:
                    walk(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item)

    walk(config)
    return refs


def _code_file(ref):
    """``(repo or None, module file)`` of ``"[org/repo--]module.Class"``."""
    repo = None
    if "--" in ref:
        repo, ref = ref.split("--", 1)
    module = ref.rsplit(".", 1)[0] if "." in ref else ref
    return repo, module.replace(".", "/") + ".py"


def remote_code_files(config, names):
    """The Python files of this repository (among ``names``) that the ``auto_map`` of ``config`` would import."""
    present = set(names)
    files = set()
    for ref in _auto_map_refs(config):
        repo, module_file = _code_file(ref)
        if repo is None and module_file in present:
            files.add(module_file)
    return sorted(files)


def remote_code_refusal(config, names):
    """The refusal when ``config`` asks for custom code (``auto_map``), else None."""
    refs = _auto_map_refs(config)
    if not refs:
        return None
    files = remote_code_files(config, names)
    elsewhere = sorted(set("%s (from %s)" % (module_file, repo)
                           for repo, module_file in map(_code_file, refs) if repo is not None))
    what = (listed(files + elsewhere, width=200)
            or "the modules named by auto_map: %s" % listed(sorted(set(refs)), width=200))
    return ("the model's config.json asks for custom code (auto_map), which SGLang runs only with "
            "--trust-remote-code: %s; set %s: true once you have read it" % (what, TRUST_REMOTE_CODE_VAR))


def policy_refusal(names, config, config_error, allow_pickle, allow_remote_code):
    """The sentence that refuses a revision of files ``names`` whose ``config.json`` is ``config`` (None when the
    revision has none, or ``config_error`` says why it could not be read), or None when nothing is refused: pickle
    weights first, then custom code. A config.json that cannot be read cannot be shown to be free of auto_map."""
    pickles = pickle_files(names)
    if pickles and not allow_pickle:
        return pickle_refusal(pickles)
    if allow_remote_code:
        return None
    if config_error:
        return config_error
    return remote_code_refusal(config, names) if isinstance(config, dict) else None


# --- layout --------------------------------------------------------------------------------

def _repo_dir(model_dir, org, name):
    if (not isinstance(model_dir, str) or not model_dir.startswith("/") or model_dir.startswith("//")
            or os.path.normpath(model_dir) != model_dir):
        raise ModelStoreError("sglang_model_dir: %s must be an absolute, normalised path" % _show(model_dir))
    check_repo("%s/%s" % (org, name))
    return os.path.join(model_dir, "%s--%s" % (org, name))


def is_commit(value):
    """Whether ``value`` is a full commit id as the hub writes it: 40 lower-case hex digits."""
    return isinstance(value, str) and _COMMIT.match(value) is not None


def _commit(commit):
    if not is_commit(commit):
        raise ModelStoreError("revision %s is not a 40-hex commit id" % _show(commit))
    return commit


def revision_dir(model_dir, org, name, commit):
    """``<model_dir>/<org>--<name>/<commit>``: where a verified revision lives."""
    return os.path.join(_repo_dir(model_dir, org, name), _commit(commit))


def staging_dir(model_dir, org, name, commit):
    """``<model_dir>/<org>--<name>/.staging-<commit>``: beside the revision, so renaming it into place is atomic."""
    return os.path.join(_repo_dir(model_dir, org, name), STAGING_PREFIX + _commit(commit))


def state_file(model_dir, org, name, commit):
    """``<model_dir>/<org>--<name>/.verified-<commit>.json``: the last verification's record, outside the revision."""
    return os.path.join(_repo_dir(model_dir, org, name), "%s%s.json" % (STATE_PREFIX, _commit(commit)))


def safe_join(root, rel):
    """``root/rel`` when it resolves (links followed) strictly inside ``root``; else ModelStoreError."""
    if not isinstance(rel, str) or not rel or rel.startswith("/"):
        raise ModelStoreError("%s is not a relative path inside %s" % (_show(rel, 300), _show(root, 300)))
    real_root = os.path.realpath(root)
    joined = os.path.join(root, rel)
    real = os.path.realpath(joined)
    if not real.startswith(real_root.rstrip("/") + "/"):
        raise ModelStoreError("%s does not resolve to a path inside %s" % (_show(rel, 300), _show(root, 300)))
    return joined


# --- trust ---------------------------------------------------------------------------------
# Root publishes the weights, trusts its records of their hashes on later runs (a no-change run reads no weight) and
# runs huggingface_hub with the token: whoever can change the store or that interpreter could make root serve other
# weights or hand over the token. So every directory on the way is root's and writable by root only (a sticky
# directory such as /tmp may stand above: nobody else can rename or remove root's entries there), and so is every
# file and directory of a published revision, its record, the staging directory and the interpreter's virtualenv.

def trusted_owners():
    """The owners the store may have: root, and the account running the module when that is not root."""
    uid = os.geteuid()
    return (0,) if uid == 0 else (0, uid)


def path_problems(path, owners=None):
    """``[(component, found)]`` for each existing directory on the way to ``path`` (itself included) that anyone but
    ``owners`` could change (``deploy_state.trust_problems``, sticky directories allowed above the last one)."""
    owners = trusted_owners() if owners is None else owners
    return [(part, found) for part, found, _fixable in trust_problems(path, owners, sticky_ok=True)]


def entry_problem(path, info, owners, links_ok=False):
    """What makes one directory entry (its ``lstat``) untrustworthy, or None: a link (unless ``links_ok``), something
    that is neither a directory nor a regular file, another owner, or write permission for group or others."""
    if stat.S_ISLNK(info.st_mode):
        return None if links_ok else kind_text(path, info)
    if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
        return kind_text(path, info)
    if info.st_uid not in owners or info.st_mode & 0o022:
        return "uid %d, mode %04o" % (info.st_uid, stat.S_IMODE(info.st_mode))
    return None


def tree_problems(root, owners=None, links_ok=False, limit=LISTED_MAX + 1, links=None, skip=()):
    """``[(path, found)]`` for ``root`` and everything below it that ``entry_problem`` refuses (links are not
    followed); at most ``limit``. A missing ``root`` has none. ``links``: a list that gets every link met; ``skip``:
    paths below ``root`` not looked at (nor what is below them)."""
    owners = trusted_owners() if owners is None else owners
    problems = []
    try:
        info = os.lstat(root)
    except FileNotFoundError:
        return problems
    found = entry_problem(root, info, owners, links_ok)
    if found or not stat.S_ISDIR(info.st_mode):
        return [(root, found)] if found else []
    pending = [root]
    while pending:
        top = pending.pop()
        try:
            entries = sorted(os.scandir(top), key=lambda entry: entry.name)
        except FileNotFoundError:
            continue
        for entry in entries:
            if entry.path in skip:
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            found = entry_problem(entry.path, info, owners, links_ok)
            if found:
                problems.append((entry.path, found))
                if len(problems) >= limit:
                    return problems
            elif stat.S_ISLNK(info.st_mode):
                if links is not None:
                    links.append(entry.path)
            elif stat.S_ISDIR(info.st_mode):
                pending.append(entry.path)
    return problems


def interpreter_problems(python, owners=None):
    """``[(path, found)]`` that make the interpreter running huggingface_hub (as root, with the token) one that
    someone else could change: the directories on the way to it; its real file and the directories on the way there
    when it is a link; in a virtualenv (``pyvenv.cfg`` beside its ``bin/``) every entry of the virtualenv, and where a
    link there leads out of it, that target and its directories. A missing interpreter has none here (running it
    fails, naming it)."""
    owners = trusted_owners() if owners is None else owners
    problems = path_problems(os.path.dirname(python), owners)
    try:
        os.lstat(python)
    except OSError:
        return problems
    targets = [os.path.realpath(python)]
    venv = os.path.dirname(os.path.dirname(python))
    if os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
        links = []
        problems += tree_problems(venv, owners, links_ok=True, links=links)
        real_venv = os.path.realpath(venv)
        for path in links:
            target = os.path.realpath(path)
            if not (target + "/").startswith(real_venv + "/"):
                targets.append(target)
    for target in sorted(set(targets)):
        problems += path_problems(os.path.dirname(target), owners)
        try:
            info = os.lstat(target)
        except OSError:
            continue
        found = entry_problem(target, info, owners)
        if found:
            problems.append((target, found))
    unique = []
    for item in problems:
        if item not in unique:
            unique.append(item)
    return unique


def trust_text(problems):
    """``'/a (found: uid 1000, mode 0755); /a/b (found: a symbolic link to /x)'``, the first ten, then a count."""
    return listed(["%s (found: %s)" % (_show(path, 300), found) for path, found in problems], sep="; ")


# --- disk ----------------------------------------------------------------------------------

def bytes_needed(manifest, present):
    """Bytes still to fetch: every manifest entry not complete in ``present`` ({path: size} of finished files)."""
    return sum(entry["size"] for entry in manifest if present.get(entry["path"]) != entry["size"])


def _nearest_existing(path):
    path = os.path.abspath(path)
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def mount_point(path):
    """The mount point of the filesystem that holds ``path`` (or its nearest existing ancestor)."""
    path = os.path.realpath(_nearest_existing(path))
    dev = os.stat(path).st_dev
    while path != "/":
        parent = os.path.dirname(path)
        if os.stat(parent).st_dev != dev:
            break
        path = parent
    return path


def check_free_space(path, needed, margin_fraction=0.05, margin_min=GIB, statvfs=os.statvfs):
    """``{needed, margin, free, mount}`` when the filesystem of ``path`` has room for ``needed`` bytes and a margin
    (the larger of ``margin_fraction`` of it and ``margin_min``); else ModelStoreError naming the bytes and the
    filesystem.  Nothing to fetch needs no room."""
    existing = _nearest_existing(path)
    info = statvfs(existing)
    free = info.f_bavail * info.f_frsize
    margin = max(int(margin_min), int(math.ceil(needed * margin_fraction))) if needed > 0 else 0
    mount = mount_point(existing)
    result = dict(needed=needed, margin=margin, free=free, mount=mount)
    if needed + margin > free:
        raise ModelStoreError(
            "sglang_model_dir: %s needs %s (%d bytes) still to fetch plus a margin of %s, but the filesystem mounted "
            "at %s has %s (%d bytes) free; free %s more or point sglang_model_dir at a larger filesystem"
            % (_show(path, 300), human_bytes(needed), needed, human_bytes(margin), _show(mount, 300),
               human_bytes(free), free, human_bytes(needed + margin - free)))
    return result


# --- retention -----------------------------------------------------------------------------

def revisions_to_remove(existing, keep, referenced):
    """Revisions to delete, oldest first: all but the ``keep`` newest, never one in ``referenced``.

    ``existing`` maps directory names to modification times; only 40-hex names are revisions, so staging
    directories of a running download and state files are never chosen.
    """
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise ModelStoreError("sglang_model_keep: %s must be an integer of at least 1 (the revision being served "
                              "is always kept)" % _show(keep))
    existing = dict(existing)
    # newest first; the name breaks a tie so the answer does not depend on the listing order
    newest = sorted((name for name in existing if is_commit(name)), key=lambda name: (existing[name], name),
                    reverse=True)
    kept = set(newest[:keep]) | set(referenced)
    return [name for name in reversed(newest) if name not in kept]


# --- sglang_server's command line records ----------------------------------------------------

def _record(record):
    """A command line record as a dict (parsed once from its JSON text); {} when it is none."""
    if isinstance(record, (str, bytes)):
        try:
            record = json.loads(record)
        except (ValueError, RecursionError):
            return {}
    return record if isinstance(record, dict) else {}


def _argv(record):
    argv = record.get("argv")
    return [str(arg) for arg in argv] if isinstance(argv, list) else []


def referenced_revisions(records, model_dir):
    """The directories under ``model_dir`` that the command line records (dicts or JSON texts) load: their
    ``--model-path`` (and the other model flags) and their ``model_dir`` (the revision a model link points at).

    A flag may be written ``--model-path X`` or ``--model-path=X``; a path is taken as the revision directory two
    levels below ``model_dir`` (``<dir>/<org>--<name>/<commit>``) even when it names a file or folder inside it.
    """
    root = model_dir.rstrip("/") + "/"
    found = set()
    for record in records or []:
        record = _record(record)
        argv = _argv(record)
        # the sglang_server role's unit may load the revision through a link: its record names the directory
        target = record.get("model_dir")
        if isinstance(target, str) and target:
            argv = argv + ["--model-path", target]
        for index, arg in enumerate(argv):
            value = None
            for flag in MODEL_FLAGS:
                if arg == flag and index + 1 < len(argv):
                    value = argv[index + 1]
                elif arg.startswith(flag + "="):
                    value = arg[len(flag) + 1:]
            if value is None:
                continue
            value = os.path.normpath(value)
            if not value.startswith(root):
                continue
            parts = value[len(root):].split("/")
            if len(parts) >= 2 and parts[0] and parts[1]:
                found.add(root + parts[0] + "/" + parts[1])
    return sorted(found)


LOCK_NAME = ".lock"


def lock_repo(repo_dir, wait, poll=0.5, clock=time.monotonic, sleep=time.sleep):
    """An exclusive ``flock`` on ``<repo_dir>/.lock``, waited for up to ``wait`` seconds: the open descriptor (close
    it to release), or None when another process held it all that time.

    Two runs that share a store (two playbook runs at once on one host, or hosts whose store is on one shared
    filesystem) must not stage into one staging directory or remove a revision the other is publishing. The lock
    file is never removed (removing it would let a third run lock a new file while the second holds the old one);
    links are not followed."""
    path = os.path.join(repo_dir, LOCK_NAME)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o600)
    deadline = clock() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                os.close(fd)
                raise
        if clock() >= deadline:
            os.close(fd)
            return None
        sleep(poll)


def read_small_file(path, limit):
    """The bytes of a regular file of at most ``limit`` bytes; None for a link, a non-regular file (a FIFO is not
    waited for), a bigger or an unreadable one."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        # checked on the descriptor, before a buffered reader is made of it (os.fdopen refuses a directory)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) <= limit else None


def read_records(directory, recurse=False):
    """The texts of the command line records (``*.args.json``) in ``directory`` (below it with ``recurse``),
    in path order. A missing directory has none; links are not followed."""
    texts = []
    if not directory or not os.path.isdir(directory):
        return texts
    for top, dirs, files in os.walk(directory):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(RECORD_SUFFIX):
                data = read_small_file(os.path.join(top, name), RECORD_MAX)
                if data is not None:
                    texts.append(data.decode("utf-8", "replace"))
        if not recurse:
            break
    return texts


# --- text ----------------------------------------------------------------------------------

def listed(items, sep=", ", limit=LISTED_MAX, width=None):
    """The first ``limit`` of ``items`` joined by ``sep``, then how many more there are.

    After a comma list the count follows " and" (``a, b and 3 more``); after any other separator it keeps that
    separator (``x: bad; y: bad; and 3 more``), as items that are sentences hold commas of their own.
    ``width``: each shown item is a raw name, written escaped and cut to that many characters; None: the items
    are already printable text.
    """
    shown = [item if width is None else _show(item, width) for item in items[:limit]]
    text = sep.join(shown)
    if len(items) > limit:
        text += "%s and %d more" % (sep.rstrip().rstrip(","), len(items) - limit)
    return text


def human_bytes(count):
    """``count`` bytes in binary units: ``512 B``, ``1.5 KiB``, ``244.0 GiB``."""
    count = float(count)
    if abs(count) < 1024:
        return "%d B" % count
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        count /= 1024.0
        if abs(count) < 1024:
            return "%.1f %s" % (count, unit)
    return "%.1f PiB" % (count / 1024.0)


def _duration(seconds):
    seconds = int(round(seconds))
    if seconds < 60:
        return "%ds" % seconds
    if seconds < 3600:
        return "%dm%02ds" % divmod(seconds, 60)
    hours, rest = divmod(seconds, 3600)
    return "%dh%02dm" % (hours, rest // 60)


def progress_line(done, total, rate, eta=None):
    """``12.3 GiB / 244.0 GiB (5 %), 410.2 MiB/s, ETA 9m39s``; ``eta`` (seconds) defaults to what ``rate`` gives."""
    line = "%s / %s" % (human_bytes(done), human_bytes(total))
    if total:
        line += " (%d %%)" % (min(done, total) * 100 // total)
    if rate:
        line += ", %s/s" % human_bytes(rate)
        if eta is None:
            eta = max(total - done, 0) / float(rate)
    return line + (", ETA %s" % _duration(eta) if eta is not None else ", ETA unknown")
