#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: model_stage
short_description: Fetch, verify and publish one model revision in the host's model store
version_added: 0.1.0
description:
  - Makes C(<dir>/<org>--<name>/<commit>/) hold exactly the files of O(manifest), each with the size and hash the
    hub publishes, owned by root and group O(group) (directories C(0750), files C(0640); the service account reads,
    it cannot write).
  - When that directory exists, its files are verified (O(verify)) and nothing is fetched. In V(changed) mode a file
    whose size, mtime, ctime and inode are those of the last verification is not read again, so a run that changes
    nothing reads no weights. A file that differs fails the task, naming it; the directory is left as it is.
  - With O(fetch=false) and no O(manifest), a revision in place is verified against the record of its last
    verification (C(<dir>/<org>--<name>/.verified-<commit>.json)) when that record holds the hub's hashes; the
    hub need not be asked for a commit the host already holds. The refusals of M(llmserve.sglang.model_revision)
    (pickle weights without O(allow_pickle), custom code in C(config.json) without O(allow_remote_code)) are made
    again on that record and the revision's own C(config.json). A revision in place without such a record
    returns RV(needs_manifest=true) and changes nothing.
  - Otherwise the revision is fetched into C(<dir>/<org>--<name>/.staging-<commit>/) beside it. First the bytes
    still needed (files already complete there count as present) plus a margin are compared with the free space
    of that filesystem, before anything is written. With O(source=hub) the real C(huggingface_hub)
    (C(snapshot_download), run with O(python) in a child process that gets the token on its standard input) fetches
    the files; with O(source=path) they are copied from O(source_path). Files fetched before an interruption are
    kept, so a rerun fetches only the rest (partial files that C(huggingface_hub) leaves behind are removed).
  - Every staged file is then hashed. A file that differs is fetched once more; if it still differs the task fails
    naming the file and both hashes, and the published revisions are untouched. Only a fully verified staging
    directory is renamed into place (one atomic rename on the same filesystem).
  - The store is trusted only where root alone controls it, checked on every run before anything is read or
    written. Each directory on the way to C(<dir>/<org>--<name>) is root's and writable by root only (a sticky
    directory such as C(/tmp) may stand above), and so is every file and directory of a published revision and its
    record; a staging directory left by an earlier run holds no link; the interpreter O(python), the directories on
    the way to it and its virtualenv likewise, before it is handed the token. Anything else fails the task, naming
    the path and what was found.
  - Afterwards older revisions are removed so that O(keep) remain, never this one, one listed in O(referenced), nor
    one that a command line record of sglang_server in O(unit_records) or O(good_records) loads.
  - Two runs may share a store (two playbook runs at once on one host, or hosts whose O(dir) is on one shared
    filesystem). A run that fetches first takes an exclusive lock on C(<dir>/<org>--<name>/.lock) and waits for it up
    to O(timeout) seconds; once it holds it, a revision that the other run published meanwhile is verified in place,
    not fetched again. With O(fetch=false) the lock is not waited for; when another run holds it, the revision is
    still verified but old revisions are left for that run to remove.
  - Runs through an action plugin of the same name. Unless the task is in check mode, has C(async) of its own, or
    the revision is already in place, the plugin starts the module as an async job itself and prints a progress line
    every O(progress_interval) seconds (bytes done and total, rate, ETA), so a long download shows in the play output
    and in an AWX job log; C(throttle) on the task limits how many hosts download at once.
author: llmserve developers (@llmserve)
attributes:
  action:
    support: full
  async:
    support: full
  bypass_host_loop:
    support: none
  check_mode:
    support: full
    details:
      - Verifies a revision in place, or reports the bytes it would fetch after checking the free space; fetches,
        writes and removes nothing.
options:
  repo:
    description: Repository id, C(org/name).
    type: str
    required: true
  commit:
    description: The 40-hex commit id of the revision (from M(llmserve.sglang.model_revision)).
    type: str
    required: true
  manifest:
    description:
      - The revision's files, as M(llmserve.sglang.model_revision) returns them (C(path), C(size), and C(sha256) or
        C(blob)).
      - Required with O(source=hub) to fetch. With O(source=hub), O(fetch=false) and V([]), a revision in place is
        verified against its record (see the description). With O(source=path) and V([]), the manifest is made by
        hashing O(source_path) (and, once the revision is in place, taken from its verified record).
    type: list
    elements: dict
    default: []
  dir:
    description: Root of the model store.
    type: path
    default: /var/lib/llmserve-models
  source:
    description:
      - V(hub) fetches from the hub at O(endpoint); V(path) copies from O(source_path), a directory already on the
        host (for example an NFS mount).
    type: str
    choices: [hub, path]
    default: hub
  source_path:
    description: The directory to copy from, with O(source=path). Links that lead out of it are refused.
    type: path
  endpoint:
    description: Base URL of a Hugging Face–compatible hub (C(HF_ENDPOINT)); V('') is C(https://huggingface.co).
    type: str
    default: ''
  token:
    description: Access token for the hub; V('') sends none. Never in a command line, environment or result.
    type: str
    default: ''
  python:
    description: An interpreter with C(huggingface_hub) 1.x; required with O(source=hub).
    type: path
  verify:
    description:
      - V(changed) hashes only files that changed since their last verification; V(full) hashes every file.
      - A revision that is fetched is always hashed in full.
    type: str
    choices: [changed, full]
    default: changed
  group:
    description: Group of the published files (the service account's group).
    type: str
    default: root
  keep:
    description: How many revisions of O(repo) to keep, at least 1.
    type: int
    default: 2
  referenced:
    description:
      - Paths still in use (the model path in the service's unit, in its last good configuration); the revisions
        they are in are never removed.
    type: list
    elements: path
    default: []
  unit_records:
    description:
      - Directory of sglang_server's command line records of its live units (C(*.args.json), the role's
        C(sglang_server_config_dir)). The revisions they load are kept and RV(serving) says whether this one is
        among them. A missing directory holds none.
    type: path
  good_records:
    description:
      - Directory below which sglang_server keeps the command line records of its last good configurations
        (C(*.args.json) at any depth; the role's C(sglang_server_state_dir)). The revisions they load are kept.
    type: path
  allow_pickle:
    description:
      - Accept pickle weights in a revision whose manifest comes from its record (see O(fetch)); as
        M(llmserve.sglang.model_revision)'s option of that name.
    type: bool
    default: false
  allow_remote_code:
    description:
      - Accept a C(config.json) that asks for custom code in a revision whose manifest comes from its record; as
        M(llmserve.sglang.model_revision)'s option of that name.
    type: bool
    default: false
  disk_margin:
    description:
      - Bytes that must stay free beyond what is still to fetch; the margin is this or 5 % of the bytes to fetch,
        whichever is larger.
    type: int
    default: 1073741824
  timeout:
    description: Seconds the download child may run; the async job is given a few minutes more.
    type: int
    default: 21600
  progress_interval:
    description:
      - Seconds between two progress lines (action plugin only; the module ignores it).
    type: int
    default: 15
  fetch:
    description:
      - V(false) verifies a revision that is in place (and applies the retention) but fetches nothing; when the
        revision is not in place the module changes nothing and returns RV(needs_fetch=true).
      - The action plugin runs the module this way first, so that a run that changes nothing costs one module
        call, and starts the download as an async job only when it is needed.
    type: bool
    default: true
notes:
  - Only whole files survive an interruption (huggingface_hub resumes per file); a file cut half-way is fetched
    again from its start.
seealso:
  - module: llmserve.sglang.model_revision
  - module: llmserve.sglang.model_stage_progress
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - llmserve.sglang.attributes
"""

EXAMPLES = r"""
- name: Stage the resolved revision, four hosts at a time
  llmserve.sglang.model_stage:
    repo: "{{ sglang_model_resolved.repo }}"
    commit: "{{ sglang_model_resolved.commit }}"
    manifest: "{{ sglang_model_resolved.manifest }}"
    endpoint: https://hf-mirror.example.com
    token: "{{ sglang_model_hub_token }}"
    python: /opt/llmserve-model-venv/bin/python
    group: sglang
    unit_records: /etc/sglang
    good_records: /var/lib/llmserve-sglang
  throttle: 4
  register: model_stage

- name: Verify a pinned revision the host already holds, without asking the hub
  llmserve.sglang.model_stage:
    repo: Qwen/Qwen3.5-122B-A10B
    commit: 0123456789abcdef0123456789abcdef01234567
    python: /opt/llmserve-model-venv/bin/python
    group: sglang
    fetch: false
    unit_records: /etc/sglang
    good_records: /var/lib/llmserve-sglang
  register: model_in_store
"""

RETURN = r"""
path:
  description: The revision's directory.
  returned: success
  type: str
  sample: /var/lib/llmserve-models/Qwen--Qwen3.5-122B-A10B/89abcdef0123456789abcdef0123456789abcdef
commit:
  description: The commit id.
  returned: success
  type: str
  sample: 89abcdef0123456789abcdef0123456789abcdef
downloaded_bytes:
  description: Bytes fetched (or copied) in this run, a second try included.
  returned: success
  type: int
  sample: 244000000000
bytes_read:
  description: Bytes read to verify hashes in this run; V(0) for a revision in place whose files did not change.
  returned: success
  type: int
  sample: 0
files_hashed:
  description: How many files were hashed in this run.
  returned: success
  type: int
  sample: 0
verified:
  description: How the files were verified, V(full) or V(changed).
  returned: success
  type: str
  sample: changed
removed:
  description: Revision directories removed by retention (to be removed, in check mode).
  returned: success
  type: list
  elements: str
  sample: []
disk:
  description: The free-space check made before fetching.
  returned: when the revision was not yet in place
  type: dict
  contains:
    needed:
      description: Bytes still to fetch.
      type: int
    free:
      description: Bytes free on the filesystem.
      type: int
    mount:
      description: Mount point of that filesystem.
      type: str
    margin:
      description: Bytes kept free on top.
      type: int
staged:
  description: Whether the revision was fetched in this run (would be, in check mode).
  returned: success
  type: bool
  sample: true
needs_fetch:
  description: With O(fetch=false), whether the revision is missing and was left to a run that fetches.
  returned: success
  type: bool
  sample: false
needs_manifest:
  description:
    - With O(fetch=false) and no O(manifest), whether the revision is in place but its record cannot stand in for
      the hub's manifest (none, or hashed from a path); nothing was verified or changed. Ask the hub and run again
      with the manifest.
  returned: success
  type: bool
  sample: false
bytes:
  description: The size of the revision, all files (from the manifest in use; V(0) when none was).
  returned: success
  type: int
  sample: 244000000000
files:
  description: How many files the revision has (from the manifest in use).
  returned: success
  type: int
  sample: 57
serving:
  description: Whether a live unit's command line record (O(unit_records)) loads this revision.
  returned: success
  type: bool
  sample: true
referenced:
  description: The revision directories kept because O(referenced) or a command line record names them.
  returned: success
  type: list
  elements: str
  sample: [/var/lib/llmserve-models/Qwen--Qwen3.5-122B-A10B/0123456789abcdef0123456789abcdef01234567]
"""

import errno
import grp
import json
import os
import shutil
import stat

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmserve.sglang.plugins.module_utils.model_hub import (
    HubError,
    allow_pattern,
    hub_name,
    run_child,
)
from ansible_collections.llmserve.sglang.plugins.module_utils.model_manifest import (
    bad_message,
    check_manifest,
    manifest_from_dir,
    manifest_from_state,
    present_sizes,
    read_state,
    save_state,
    verify_tree,
)
from ansible_collections.llmserve.sglang.plugins.module_utils.model_store import (
    GIB,
    ModelStoreError,
    check_free_space,
    check_repo,
    entry_problem,
    human_bytes,
    interpreter_problems,
    listed,
    LOCK_NAME,
    lock_repo,
    path_problems,
    policy_refusal,
    read_records,
    read_small_file,
    referenced_revisions,
    revision_dir,
    revisions_to_remove,
    safe_join,
    staging_dir,
    state_file,
    tree_problems,
    trust_text,
    trusted_owners,
)
from ansible_collections.llmserve.sglang.plugins.module_utils.deploy_state import kind_text
from ansible_collections.llmserve.sglang.plugins.module_utils.text import printable

DIR_MODE = 0o750
FILE_MODE = 0o640
STAGING_MODE = 0o700  # nobody but root sees a revision before it is verified
HF_CACHE = ".cache"
VERIFY_WORKERS = 4
# A model's config.json is some KiB; one far bigger is not read into memory to look for auto_map.
CONFIG_MAX = 16 << 20


def build_module():
    return AnsibleModule(
        argument_spec=dict(
            repo=dict(type="str", required=True),
            commit=dict(type="str", required=True),
            manifest=dict(type="list", elements="dict", default=[]),
            dir=dict(type="path", default="/var/lib/llmserve-models"),
            source=dict(type="str", choices=["hub", "path"], default="hub"),
            source_path=dict(type="path"),
            endpoint=dict(type="str", default=""),
            token=dict(type="str", default="", no_log=True),
            python=dict(type="path"),
            verify=dict(type="str", choices=["changed", "full"], default="changed"),
            group=dict(type="str", default="root"),
            keep=dict(type="int", default=2),
            referenced=dict(type="list", elements="path", default=[]),
            disk_margin=dict(type="int", default=GIB),
            timeout=dict(type="int", default=21600),
            progress_interval=dict(type="int", default=15),
            fetch=dict(type="bool", default=True),
            unit_records=dict(type="path"),
            good_records=dict(type="path"),
            allow_pickle=dict(type="bool", default=False),
            allow_remote_code=dict(type="bool", default=False),
        ),
        required_if=[("source", "hub", ("python",)), ("source", "path", ("source_path",))],
        supports_check_mode=True,
    )


class StageError(Exception):
    """The task fails with this message."""


def _show(path):
    return printable(path, 300, escape=True)


def _problems(result):
    """Every bad, missing and extra file of a Verification, one sentence each."""
    return ([bad_message(item) for item in result.bad]
            + ["%s: missing" % _show(path) for path in result.missing]
            + ["%s: not in the manifest" % _show(path) for path in result.extra])


def _hashed(result, old_state, mode):
    """How many files a verification read: all it judged, less those 'changed' mode took from the record."""
    kept = 0
    if mode == "changed":
        # verify_tree hands back the very record it trusted for a file it did not read
        kept = sum(1 for path in result.ok if path in old_state and result.state.get(path) is old_state[path])
    return len(result.ok) - kept + sum(1 for item in result.bad if item["reason"] == "hash")


def _owned_dir(path):
    """Whether ``path`` is a directory (not a link) that root alone controls."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    return stat.S_ISDIR(info.st_mode) and entry_problem(path, info, trusted_owners()) is None


def _walk_remove(path):
    """Remove a file, link or tree without following links; a missing one is fine."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


class Stager(object):
    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.check = module.check_mode
        self.result = dict(changed=False, downloaded_bytes=0, bytes_read=0, files_hashed=0, removed=[],
                           staged=False, bytes=0, files=0, serving=False, referenced=[])
        self._gid = None

    # --- input -----------------------------------------------------------------------------

    def prepare(self):
        p = self.params
        org, name = check_repo(p["repo"])
        self.repo = p["repo"]
        self.commit = p["commit"]
        self.rev = revision_dir(p["dir"], org, name, self.commit)
        self.stage = staging_dir(p["dir"], org, name, self.commit)
        self.state_path = state_file(p["dir"], org, name, self.commit)
        self.repo_dir = os.path.dirname(self.rev)
        self.manifest = check_manifest(p["manifest"])
        if p["source"] == "hub" and not self.manifest and p["fetch"]:
            raise StageError("manifest: the files of %s@%s are needed to fetch it from the hub (see "
                             "llmserve.sglang.model_revision)" % (self.repo, self.commit))
        # keep is checked before anything changes, not when the retention comes
        revisions_to_remove({}, p["keep"], [])
        if p["disk_margin"] < 0 or p["timeout"] < 1:
            raise StageError("disk_margin must be at least 0 and timeout at least 1 (got %d and %d)"
                             % (p["disk_margin"], p["timeout"]))
        self.uid = 0 if os.geteuid() == 0 else -1
        if p["fetch"]:
            self._group_id()  # a missing group is refused before anything is written
        live = referenced_revisions(read_records(p["unit_records"]), p["dir"])
        kept = sorted(set(live + referenced_revisions(read_records(p["good_records"], recurse=True), p["dir"])
                          + [os.path.normpath(path) for path in p["referenced"]]))
        self.referenced = self._referenced_names(kept)
        self.result.update(path=self.rev, commit=self.commit, verified=p["verify"], referenced=kept,
                           serving=self.rev in live)
        self._totals(self.manifest)
        untrusted = path_problems(self.repo_dir)
        if untrusted:
            raise StageError("sglang_model_dir: every directory on the way to %s must be owned by root and writable by "
                             "root only: root serves the weights below it and trusts its records of their hashes on "
                             "later runs, so whoever can change one could swap the model. Not so: %s. Fix the "
                             "ownership and mode, or choose another sglang_model_dir; nothing was changed"
                             % (_show(self.repo_dir), trust_text(untrusted)))

    def _group_id(self):
        """The group's id, looked up when a file is to be owned by it (a host that still has to fetch the revision
        may not have the group yet: the role creates it before fetching)."""
        if self._gid is None:
            try:
                self._gid = grp.getgrnam(self.params["group"]).gr_gid
            except KeyError:
                raise StageError("group: %s does not exist on this host" % _show(self.params["group"]))
        return self._gid

    def _totals(self, manifest):
        self.result.update(bytes=sum(entry["size"] for entry in manifest), files=len(manifest))

    def _refuse_by_policy(self, manifest, root):
        """model_revision's refusals, made on the verified files under ``root``: on a staged revision before it is
        published (the hub's answer at resolve time was read from a config.json nobody had verified yet, and a hub can
        serve another one to the download), and on a revision in place whose manifest comes from its record (the
        inventory may have changed its mind since it was staged)."""
        names = [entry["path"] for entry in manifest]
        config, config_error = None, None
        if "config.json" in names and not self.params["allow_remote_code"]:
            data = read_small_file(os.path.join(root, "config.json"), CONFIG_MAX)
            try:
                config = json.loads(data.decode("utf-8")) if data is not None else None
            except (ValueError, RecursionError):
                config = None
            if not isinstance(config, dict):
                config_error = ("config.json is not a readable JSON object, so it cannot be shown to ask for no "
                                "custom code")
        refusal = policy_refusal(names, config, config_error, self.params["allow_pickle"],
                                 self.params["allow_remote_code"])
        if refusal:
            raise StageError("%s@%s in the model store: %s" % (self.repo, self.commit, refusal))

    def _referenced_names(self, paths):
        """The revision names under this repository's directory that ``paths`` point into."""
        names = set([self.commit])
        prefixes = set([self.repo_dir, os.path.realpath(self.repo_dir)])
        for path in paths:
            for form in (os.path.normpath(path), os.path.realpath(path)):
                for prefix in prefixes:
                    if form.startswith(prefix + "/"):
                        names.add(form[len(prefix) + 1:].split("/", 1)[0])
        return sorted(names)

    # --- ownership -------------------------------------------------------------------------

    def _secure(self, path, mode):
        """root:group and ``mode``, touching the inode only when they differ (chmod moves ctime, which the
        'changed' record compares)."""
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            raise StageError("%s is a link; the model store holds none" % _show(path))
        gid = self._group_id()
        if self.uid != -1 and info.st_uid != self.uid or info.st_gid != gid:
            os.chown(path, self.uid, gid, follow_symlinks=False)
        if stat.S_IMODE(info.st_mode) != mode:
            os.chmod(path, mode)

    def _secure_tree(self, root):
        for top, dirs, files in os.walk(root):
            for name in dirs:
                self._secure(os.path.join(top, name), DIR_MODE)
            for name in files:
                self._secure(os.path.join(top, name), FILE_MODE)

    def _make_dir(self, path, mode):
        """Create ``path`` (and its missing parents) as root's; an existing one is used only when it is a directory
        that root alone controls (one that another account made first, in a race or before, is refused)."""
        if not os.path.lexists(path):
            parent = os.path.dirname(path)
            if parent != path and not os.path.lexists(parent):
                self._make_dir(parent, DIR_MODE)
            try:
                os.mkdir(path, mode)
            except OSError as exc:
                if exc.errno != errno.EEXIST:
                    raise
            else:
                self._secure(path, mode)
                return
        info = os.lstat(path)
        if not stat.S_ISDIR(info.st_mode):
            raise StageError("%s is %s, not a directory; move it away" % (_show(path), kind_text(path, info)))
        found = entry_problem(path, info, trusted_owners())
        if found:
            raise StageError("sglang_model_dir: %s must be a directory owned by root and writable by root only (found: "
                             "%s); fix the ownership and mode, or move it away" % (_show(path), found))

    # --- the revision in place ---------------------------------------------------------------

    def record_manifest(self, state, origin):
        """The manifest from a record (``read_state``) of the hub's hashes; None when it is not one. The refusals are
        made on it after the files are verified (``_run``)."""
        if origin != "hub" or not state:
            return None
        return manifest_from_state(state)

    def _check_published_owners(self):
        """A published revision and its record are trusted (a file whose stat is that of its last verification is
        not read again) only while root alone can change them: checked on every run, before either is read."""
        untrusted = tree_problems(self.rev)
        if os.path.lexists(self.state_path):
            info = os.lstat(self.state_path)
            found = entry_problem(self.state_path, info, trusted_owners())
            if found is None and not stat.S_ISREG(info.st_mode):
                found = kind_text(self.state_path, info)
            if found:
                untrusted.append((self.state_path, found))
        if untrusted:
            raise StageError("%s@%s in the model store: a published revision and the record of its verification must "
                             "be owned by root and writable by root only (the service account reads them), else their "
                             "verification proves nothing: %s. It was left as it is; move the revision and its record "
                             "away to fetch it again" % (self.repo, self.commit, trust_text(untrusted)))

    def check_published(self, state, stored_origin):
        """Verify the revision in place against the manifest, or its record ``state`` (from ``read_state``)."""
        origin = stored_origin
        if self.manifest:
            # the manifest came from the caller: for a hub source, the hub's own
            origin = self.params["source"]
            manifest = self.manifest
        else:
            manifest = manifest_from_state(state) or manifest_from_dir(self.params["source_path"])
            origin = origin or self.params["source"]
        self._totals(manifest)
        mode = self.params["verify"]
        result = verify_tree(self.rev, manifest, state, mode, workers=VERIFY_WORKERS)
        self.result.update(bytes_read=result.bytes_read, files_hashed=_hashed(result, state, mode))
        problems = _problems(result)
        if problems:
            raise StageError("the published revision %s of %s does not match its manifest, and was left as it is "
                             "(move it away to fetch it again): %s"
                             % (_show(self.rev), self.repo, listed(problems, sep="; ")))
        if not self.check and (result.state != state or origin != stored_origin):
            save_state(self.state_path, result.state, mode=FILE_MODE, origin=origin)
        return "%s@%s is in place at %s and verified (%s, %s read)" % (
            self.repo, self.commit, self.rev, mode, human_bytes(result.bytes_read))

    # --- staging -----------------------------------------------------------------------------

    def _remove_partials(self):
        """huggingface_hub's ``*.incomplete`` files of an interrupted run: never resumed, they only take space."""
        if self.check:
            return
        download = os.path.join(self.stage, HF_CACHE, "huggingface", "download")
        for top, _dirs, files in os.walk(download):
            for name in files:
                if name.endswith(".incomplete"):
                    os.unlink(os.path.join(top, name))

    def _fetch(self, entries):
        """Fetch ``entries`` into the staging directory."""
        p = self.params
        if p["source"] == "path":
            for entry in entries:
                source = safe_join(p["source_path"], entry["path"])
                target = safe_join(self.stage, entry["path"])
                parent = os.path.dirname(target)
                if not os.path.isdir(parent):
                    os.makedirs(parent, STAGING_MODE)
                _walk_remove(target)
                shutil.copy2(os.path.realpath(source), target)
            return
        # sizes: no file may grow past its listed size, whatever the hub sends (run_child stops the child and removes
        # the over-long file); the free-space check counted those sizes only
        request = dict(op="download", repo=self.repo, revision=self.commit, endpoint=p["endpoint"], token=p["token"],
                       local_dir=self.stage, allow_patterns=[allow_pattern(entry["path"]) for entry in entries],
                       sizes=dict((entry["path"], entry["size"]) for entry in entries))
        try:
            run_child(p["python"], request, p["timeout"])
        except HubError as exc:
            if exc.error == "Oversize":
                raise StageError("fetching %s@%s from %s was stopped: %s. The hub sends more bytes than it lists, so "
                                 "the download was stopped and the over-long file removed; the published revisions "
                                 "are untouched" % (self.repo, self.commit, hub_name(p["endpoint"]), exc))
            status = " (HTTP %d)" % exc.status if exc.status else ""
            raise StageError("fetching %s@%s from %s failed%s: %s; the files fetched so far stay in %s for the next "
                             "run" % (self.repo, self.commit, hub_name(p["endpoint"]), status, exc, self.stage))

    def _verify_staged(self, manifest, state=None):
        """The staging directory against the whole ``manifest``: every file hashed, or with ``state`` (the record of
        an earlier pass over this directory) every file that changed since that pass."""
        shutil.rmtree(os.path.join(self.stage, HF_CACHE), ignore_errors=True)
        self._secure_tree(self.stage)
        mode = "full" if state is None else "changed"
        state = state or {}
        result = verify_tree(self.stage, manifest, state, mode, workers=VERIFY_WORKERS)
        self.result["bytes_read"] += result.bytes_read
        self.result["files_hashed"] += _hashed(result, state, mode)
        return result

    def _plan_fetch(self):
        """The manifest, the files still missing from the staging directory, their bytes, and the free space
        checked for them (refused before anything is written)."""
        p = self.params
        if not self.manifest:
            self.manifest = manifest_from_dir(p["source_path"])
        manifest = self.manifest
        self._totals(manifest)
        present = present_sizes(self.stage, manifest) if os.path.isdir(self.stage) else {}
        missing = [entry for entry in manifest if present.get(entry["path"]) != entry["size"]]
        needed = sum(entry["size"] for entry in missing)
        return manifest, missing, needed, check_free_space(self.stage, needed, margin_min=p["disk_margin"])

    def _check_staging(self):
        """A staging directory left by an earlier run is used only when root alone controls all of it: a link in it
        (``.cache`` pointing elsewhere) would make root write where the link leads. huggingface_hub's own ``.cache``
        there (locks of mode 0664, partial files it never resumes) is removed first when it is root's directory: each
        download builds it anew."""
        cache = os.path.join(self.stage, HF_CACHE)
        skip = ()
        if _owned_dir(self.stage) and _owned_dir(cache):
            if self.check:
                skip = (cache,)
            else:
                shutil.rmtree(cache)
        untrusted = tree_problems(self.stage, skip=skip)
        if untrusted:
            raise StageError("the staging directory %s must hold only directories and files owned by root and "
                             "writable by root only, no link: %s. Nothing was fetched; move it away (the files are "
                             "fetched again)" % (_show(self.stage), trust_text(untrusted)))

    def _check_interpreter(self):
        """The interpreter that runs huggingface_hub as root with the token, refused when another account could
        change it or its virtualenv."""
        untrusted = interpreter_problems(self.params["python"])
        if untrusted:
            raise StageError("sglang_model_python: %s runs huggingface_hub as root with the hub token, so it, the "
                             "directories on the way to it and its virtualenv (sglang_model_venv) must be owned by "
                             "root and writable by root only: %s. Nothing was fetched; fix the ownership and mode "
                             "(chown -R root, chmod -R go-w) or choose another interpreter"
                             % (_show(self.params["python"]), trust_text(untrusted)))

    def stage_revision(self):
        p = self.params
        self._check_staging()
        self._remove_partials()
        manifest, missing, needed, disk = self._plan_fetch()
        total = sum(entry["size"] for entry in manifest)
        self.result.update(disk=disk, staged=True, changed=True, verified="full")
        if self.check:
            return "would fetch %s of %s (%d of %d files) for %s@%s into %s" % (
                human_bytes(needed), human_bytes(total), len(missing), len(manifest), self.repo, self.commit,
                self.rev)

        self._make_dir(self.repo_dir, DIR_MODE)
        self._make_dir(self.stage, STAGING_MODE)
        if missing and p["source"] == "hub":
            self._check_interpreter()
        if missing:
            self._fetch(missing)
        self.result["downloaded_bytes"] = needed
        result = self._verify_staged(manifest)
        retry = [entry for entry in manifest
                 if entry["path"] in result.missing or entry["path"] in set(item["path"] for item in result.bad)]
        if retry:
            for entry in retry:
                _walk_remove(safe_join(self.stage, entry["path"]))
            self._fetch(retry)
            self.result["downloaded_bytes"] += sum(entry["size"] for entry in retry)
            # The whole tree again, not only the files fetched again: the files of the first pass must still be
            # there, and what counts as extra is judged against the whole manifest. A file that held still since
            # the first pass is not read twice.
            result = self._verify_staged(manifest, result.state)
            problems = ([bad_message(item) for item in result.bad]
                        + ["%s: missing" % _show(path) for path in result.missing])
            if problems:
                for item in result.bad:
                    # a wrong file must not count as present next time
                    _walk_remove(safe_join(self.stage, item["path"]))
                raise StageError("%s@%s: files differ from what the hub publishes, also when fetched a second time; "
                                 "the published revisions are untouched: %s"
                                 % (self.repo, self.commit, listed(problems, sep="; ")))
        try:
            self._refuse_by_policy(manifest, self.stage)
        except StageError as exc:
            raise StageError("%s; the verified files stay in %s, unpublished" % (exc, _show(self.stage)))
        state = dict(result.state)
        # only files the manifest does not list (huggingface_hub's leftovers, a stray file of the source)
        for path in result.extra:
            _walk_remove(os.path.join(self.stage, path))
        self._secure(self.stage, DIR_MODE)
        os.rename(self.stage, self.rev)
        os.utime(self.rev)  # the newest revision by mtime is the one staged last
        save_state(self.state_path, state, mode=FILE_MODE, origin=p["source"])
        return "%s@%s fetched (%s) and verified (%s read) into %s" % (
            self.repo, self.commit, human_bytes(self.result["downloaded_bytes"]),
            human_bytes(self.result["bytes_read"]), self.rev)

    # --- retention ---------------------------------------------------------------------------

    def retain(self):
        existing = {}
        if os.path.isdir(self.repo_dir):
            for entry in os.scandir(self.repo_dir):
                if entry.is_dir(follow_symlinks=False):
                    existing[entry.name] = entry.stat(follow_symlinks=False).st_mtime
        if self.check and self.result["staged"]:
            existing[self.commit] = float("inf")  # as if it had just been staged
        names = revisions_to_remove(existing, self.params["keep"], self.referenced)
        removed = [os.path.join(self.repo_dir, name) for name in names]
        if not self.check:
            for name, path in zip(names, removed):
                shutil.rmtree(path)
                try:
                    os.unlink(os.path.join(self.repo_dir, ".verified-%s.json" % name))
                except FileNotFoundError:
                    pass
        self.result["removed"] = removed
        if removed:
            self.result["changed"] = True

    def _lock(self):
        """The repository directory's lock (``lock_repo``): waited for when fetching, up to the timeout; tried once
        otherwise (None when busy). Check mode takes none and writes none."""
        if self.check:
            return None
        if self.params["fetch"]:
            if not os.path.isdir(self.rev):
                # a full disk is refused before the lock's directory and file are written
                self._plan_fetch()
            self._make_dir(self.repo_dir, DIR_MODE)
            fd = lock_repo(self.repo_dir, self.params["timeout"])
            if fd is None:
                raise StageError("another run held the lock of %s (%s) for all of %d s (the timeout): it is staging "
                                 "or removing a revision of %s in this store. Nothing was changed; run again when "
                                 "it has ended" % (_show(self.repo_dir), LOCK_NAME, self.params["timeout"],
                                                   self.repo))
            return fd
        if not os.path.isdir(self.repo_dir):
            return None
        return lock_repo(self.repo_dir, 0)

    def run(self):
        self.prepare()
        lock = self._lock()
        try:
            return self._run(lock is not None or self.check)
        finally:
            if lock is not None:
                os.close(lock)

    def _run(self, may_remove):
        # under the lock: a revision another run published while this one waited is verified, not fetched again
        if os.path.isdir(self.rev) and not os.path.islink(self.rev):
            self._check_published_owners()
            state, origin = read_state(self.state_path)
            # only with fetch=false (prepare refuses it otherwise): the record stands in for the hub
            from_record = self.params["source"] == "hub" and not self.manifest
            if from_record:
                self.manifest = self.record_manifest(state, origin)
                if self.manifest is None:
                    self.result.update(needs_manifest=True, msg="%s@%s is in place at %s, but no record of the hub's "
                                       "hashes is; the hub's manifest is needed to verify it"
                                       % (self.repo, self.commit, _show(self.rev)))
                    return self.result
            msg = self.check_published(state, origin)
            if from_record:
                # the inventory may have withdrawn an allowance since: held to it once the files are known to be
                # the recorded ones (a file missing from the revision is named as such above, not as a refusal)
                self._refuse_by_policy(self.manifest, self.rev)
        elif os.path.lexists(self.rev):
            raise StageError("%s is not a directory; move it away" % _show(self.rev))
        elif not self.params["fetch"]:
            self.result.update(needs_fetch=True,
                               msg="%s@%s is not in place at %s" % (self.repo, self.commit, _show(self.rev)))
            return self.result
        else:
            msg = self.stage_revision()
        if may_remove:
            self.retain()
        else:
            msg += ("; old revisions were not looked at: another run holds the lock of %s and removes them when it "
                    "is done" % _show(self.repo_dir))
        if self.result["removed"]:
            msg += "; removed %s" % ", ".join(self.result["removed"])
        self.result["msg"] = msg
        return self.result


def main():
    module = build_module()
    stager = Stager(module)
    try:
        result = stager.run()
    except (StageError, ModelStoreError) as exc:
        module.fail_json(msg=str(exc), **stager.result)
    except OSError as exc:
        module.fail_json(msg="model_stage: %s" % exc, **stager.result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
