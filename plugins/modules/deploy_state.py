#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: deploy_state
short_description: Check, create and read back a deployment's directories and files in one execution
version_added: 0.1.0
description:
  - Does in one module execution what a deployment otherwise does in a loop of M(ansible.builtin.stat),
    M(ansible.builtin.file) and M(ansible.builtin.copy) tasks, so that a run that changes nothing costs one round trip.
  - "In this order: checks that root alone controls O(trusted_dir) and every directory above it; checks every wanted
    directory and file (a symbolic link or an object of the wrong type in a wanted place is refused, and then nothing
    at all is changed); creates or fixes the directories (O(directories)) and writes the files whose content, owner,
    group or mode differ (O(files)); and finally describes O(inspect) paths, reads O(read) files, looks up the
    accounts (O(user), O(group)), reads the state of a systemd O(unit) and runs one read-only O(probe_argv) command."
  - The last component of a path is never followed. Ownership and modes are changed through descriptors opened with
    C(O_NOFOLLOW), so a link planted in a wanted place never redirects a change. A file's content is written to a new
    file in the same directory and renamed over the old one, so readers see the old or the new file, never half of one.
  - Only what differs is changed; a run on a host where everything is in place changes nothing.
author: llmserve developers (@llmserve)
attributes:
  check_mode:
    details:
      - In check mode nothing is created or written. RV(directories) and RV(files) say what would change; the
        refusals (O(trusted_dir), links, wrong types) fail as they would outside check mode. An owner or group that
        does not exist yet (an account that an earlier task of the same run would create) counts as a change there,
        and fails outside check mode.
      - O(inspect), O(read), O(unit) and O(probe_argv) run in check mode too (they only read).
  diff_mode:
    support: full
    details:
      - RV(diff) shows every directory and file that changes (would change, in check mode) as a unified diff of the
        content, with the owner, group or mode that change in the headers; a binary file or one larger than
        102 KiB is named, not shown.
      - "Secrets are masked with C(********) on both sides (the old file's too): the value of a C(NAME=value) or
        C(name: value) line whose name is secret (C(api-key), C(HF_TOKEN), C(LLMSERVE_SMG_ADMIN_API_KEY); a name
        with C(password), C(secret), C(api_key), C(credential) and the like in it, or ending in C(token)) and the
        lines continuing it, every O(secrets) string wherever it appears, secret C(--flags) and URL logins. A
        changed secret still shows as a changed line, without its value."
options:
  trusted_dir:
    description:
      - A directory root keeps state in and later restores from (as root). It and every directory above it (but C(/))
        that exists must be a directory, not a symbolic link, owned by root and not writable by group or others;
        otherwise the module fails before it changes anything.
      - A part that O(directories) lists with owner V(root) and a mode closed to group and others may have the wrong
        owner or mode; it is fixed first, and the whole path is checked again before anything is read back.
      - Parts that do not exist yet are created by O(directories) when listed there.
    type: path
  trusted_dir_name:
    description: How failure messages name O(trusted_dir) (the variable that set it).
    type: str
    default: trusted_dir
  directories:
    description:
      - Directories that must exist with the given owner, group and mode, in order (list a parent before its children).
      - A missing directory is created, missing parents too (with the same owner, group and mode).
      - A path that exists but is a symbolic link or not a directory fails the module before anything changes.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute, normalised path.
        type: path
        required: true
      owner:
        description: User name or uid; left as it is when not given.
        type: str
      group:
        description: Group name or gid; left as it is when not given.
        type: str
      mode:
        description: Permission bits as an octal string (V('0750')); left as they are when not given.
        type: raw
  files:
    description:
      - Files that must exist with the given content, owner, group and mode, written only when something differs.
      - A path that exists but is not a regular file (a symbolic link, a directory) fails the module before anything
        changes. The directory of each file must exist (list it in O(directories)).
      - An existing file keeps the owner, group and mode that are not given; a new one gets the module's user and
        the mode V('0600') then.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute, normalised path.
        type: path
        required: true
      content:
        description:
          - The content (text, written as UTF-8). Never shown in any output (it may hold secrets) but in RV(diff),
            with its secrets masked.
          - Exactly one of O(files[].content) and O(files[].src) is required.
        type: str
      src:
        description:
          - A regular file on the host whose bytes are the content (never read through a symbolic link).
        type: path
      owner:
        description: User name or uid.
        type: str
      group:
        description: Group name or gid.
        type: str
      mode:
        description: Permission bits as an octal string (V('0640')).
        type: raw
  inspect:
    description: Paths to describe in RV(paths), without following a link at the last component.
    type: list
    elements: path
    default: []
  checksum:
    description: Whether RV(paths) gives the sha256 of regular files.
    type: bool
    default: true
  read:
    description: Small regular files (1 MiB at most) whose text comes back in RV(contents); not for secrets.
    type: list
    elements: path
    default: []
  user:
    description: A user account to look up (the C(user) entry of RV(accounts)).
    type: str
  group:
    description: A group to look up (the C(group) entry of RV(accounts)).
    type: str
  unit:
    description:
      - A systemd unit whose C(ActiveState), C(SubState), C(UnitFileState), C(LoadState), C(FragmentPath) and C(Id)
        come back in RV(unit).
    type: str
  trust:
    description:
      - Paths to walk as O(trusted_dir) is walked (from the top; a link, not a directory, not owned by root, or
        writable by group or others), reporting what is found in RV(trust) instead of failing.
    type: list
    elements: path
    default: []
  heads:
    description: Files whose first 4 KiB come back in RV(heads) (null for a missing path or anything but a regular file).
    type: list
    elements: path
    default: []
  secrets:
    description:
      - Literal secrets (an API key, a token) the files hold, masked wherever they appear in RV(diff) (and, as every
        no_log value, in the rest of what the module returns). Lines that name a secret are masked without this.
    type: list
    elements: str
    default: []
  probe_argv:
    description:
      - A read-only command (argument vector, no shell) to run after everything else, for example a version probe.
        Its exit status and output come back in RV(probe). It runs in check mode too.
      - A missing or non-executable program gives a C(rc) of null in RV(probe) instead of a failure.
    type: list
    elements: str
    default: []
notes:
  - Runs as root to create directories and files of other users.
seealso:
  - module: ansible.builtin.file
  - module: ansible.builtin.copy
  - module: ansible.builtin.stat
extends_documentation_fragment: [ansible.builtin.action_common_attributes, llmserve.sglang.attributes]
"""

EXAMPLES = r"""
- name: Check the state directory, create the cache and state directories, stage the files that differ
  llmserve.sglang.deploy_state:
    trusted_dir: /var/lib/llmserve-sglang/sglang
    trusted_dir_name: sglang_server_state_dir
    directories:
      - {path: /var/lib/sglang/cache, owner: sglang, group: sglang, mode: "0750"}
      - {path: /var/lib/llmserve-sglang/sglang/staging, owner: root, group: root, mode: "0700"}
    files:
      - {path: /var/lib/llmserve-sglang/sglang/staging/sglang.yaml, content: "{{ config_text }}",
         owner: root, group: root, mode: "0600"}
    inspect:
      - /etc/sglang/sglang.yaml
      - /var/lib/llmserve-sglang/sglang/last-good/sglang.yaml
    user: sglang
    unit: sglang
  no_log: true

- name: Copy the staged files into place (only those that differ)
  llmserve.sglang.deploy_state:
    files:
      - {path: /etc/sglang/sglang.yaml, src: /var/lib/llmserve-sglang/sglang/staging/sglang.yaml,
         owner: root, group: sglang, mode: "0640"}
"""

RETURN = r"""
changed:
  description: Whether a directory or file was created or changed (would be, in check mode).
  returned: always
  type: bool
directories:
  description: One entry per O(directories) item, in order.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The directory.
      type: str
    changes:
      description: What was (or would be) changed, among V(created), V(owner), V(group) and V(mode).
      type: list
      elements: str
  sample: [{path: /var/lib/sglang/cache, changes: [mode]}]
files:
  description: One entry per O(files) item, in order (never with the content).
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The file.
      type: str
    changes:
      description: What was (or would be) changed, among V(created), V(content), V(owner), V(group) and V(mode).
      type: list
      elements: str
  sample: [{path: /etc/sglang/sglang.yaml, changes: []}]
diff:
  description:
    - With C(--diff), one entry per directory or file in RV(directories) and RV(files) that changes (would change,
      in check mode). C(prepared) is a unified diff (from the content there now to O(files[].content) or the content
      of O(files[].src)) with the secrets masked (as the C(diff_mode) attribute says); C(before_header)
      and C(after_header) name the path, with the owner, group and mode that change.
  returned: when diff mode is on
  type: list
  elements: dict
  sample:
    - before_header: /etc/systemd/system/sglang.service
      after_header: /etc/systemd/system/sglang.service
      prepared: |
        --- before: /etc/systemd/system/sglang.service
        +++ after: /etc/systemd/system/sglang.service
        @@ -36 +36 @@
        -ExecStart="/opt/sglang/venv/bin/python" "-m" "sglang.launch_server" "--tp-size" "2"
        +ExecStart="/opt/sglang/venv/bin/python" "-m" "sglang.launch_server" "--tp-size" "2" "--speculative-algo...
paths:
  description:
    - For each O(inspect) path (after the changes above), what is there. C(exists) is false and C(type) null when
      nothing is; C(type) is V(file), V(directory), V(link) or V(other).
  returned: always
  type: dict
  sample:
    /etc/sglang/sglang.yaml: {exists: true, type: file, uid: 0, gid: 998, owner: root, group: sglang, mode: "0640",
                              size: 155, sha256: "9f2c..."}
    /opt/sglang/venv: {exists: true, type: link, target: /opt/sglang/venv-0.5.23-eae79ea017bf, mode: "0777"}
contents:
  description: For each O(read) path, its text, or null when it does not exist.
  returned: always
  type: dict
accounts:
  description:
    - What O(user) and O(group) are on the host (C(exists) false when there is no such account). For the user also
      C(comment) (GECOS), C(primary_group) and C(groups) (the supplementary groups listing it); for the group
      C(members) and C(primary_of) (the accounts whose primary group it is).
    - C(deployer) (always there) says who runs the deployment; C(login_uid) (the audit login uid of the session, which
      become keeps; null without one), C(login_user) and C(sudo_user) (C(SUDO_USER), empty without sudo).
  returned: always
  type: dict
  sample:
    user: {exists: true, name: sglang, uid: 998, gid: 998, primary_group: sglang, home: /var/lib/sglang,
           shell: /usr/sbin/nologin, comment: llmserve.sglang service account, groups: []}
    group: {exists: true, name: sglang, gid: 998, members: [], primary_of: [sglang]}
    deployer: {login_uid: 1000, login_user: ops, sudo_user: ops}
unit:
  description:
    - C(ActiveState), C(SubState), C(UnitFileState), C(LoadState), C(FragmentPath) and C(Id) of O(unit) as systemctl
      shows them (empty without O(unit)).
  returned: always
  type: dict
  sample: {ActiveState: active, SubState: running, UnitFileState: enabled, LoadState: loaded,
           FragmentPath: /etc/systemd/system/sglang.service, Id: sglang.service}
trust:
  description: For each O(trust) path, C([{path, found}]) for every part that anyone but root could change.
  returned: always
  type: dict
  sample: {/opt/sglang: [{path: /opt/sglang, found: "uid 998, mode 0755"}]}
heads:
  description: For each O(heads) path, the first 4 KiB of the file as text, or null.
  returned: always
  type: dict
probe:
  description: C(rc), C(stdout) and C(stderr) of O(probe_argv) (empty without it; C(rc) null when it could not run).
  returned: always
  type: dict
  sample: {rc: 0, stdout: "0.5.23\n", stderr: ""}
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmserve.sglang.plugins.module_utils.deploy_state import (
    MAX_READ,
    Directory,
    File,
    StateError,
    account_info,
    apply_directory,
    apply_file,
    check_path,
    deployer_info,
    inspect_path,
    plan_directory,
    plan_file,
    printable,
    read_head,
    read_regular,
    trust_problems,
)
from ansible_collections.llmserve.sglang.plugins.module_utils.text import parse_systemctl_show
from ansible_collections.llmserve.sglang.plugins.module_utils.file_diff import directory_diff, file_diff


def build_module():
    return AnsibleModule(
        argument_spec=dict(
            trusted_dir=dict(type="path"),
            trusted_dir_name=dict(type="str", default="trusted_dir"),
            directories=dict(type="list", elements="dict", default=[], options=dict(
                path=dict(type="path", required=True),
                owner=dict(type="str"),
                group=dict(type="str"),
                mode=dict(type="raw"),
            )),
            files=dict(type="list", elements="dict", default=[], options=dict(
                path=dict(type="path", required=True),
                content=dict(type="str", no_log=True),
                src=dict(type="path"),
                owner=dict(type="str"),
                group=dict(type="str"),
                mode=dict(type="raw"),
            ), mutually_exclusive=[("content", "src")], required_one_of=[("content", "src")]),
            inspect=dict(type="list", elements="path", default=[]),
            checksum=dict(type="bool", default=True),
            read=dict(type="list", elements="path", default=[]),
            user=dict(type="str"),
            group=dict(type="str"),
            unit=dict(type="str"),
            trust=dict(type="list", elements="path", default=[]),
            heads=dict(type="list", elements="path", default=[]),
            probe_argv=dict(type="list", elements="str", default=[]),
            secrets=dict(type="list", elements="str", default=[], no_log=True),
        ),
        supports_check_mode=True,
    )


def check_trust(path, name, fixed=()):
    """Fail unless root alone controls ``path``; directories in ``fixed`` (that O(directories) gives to root with a
    mode closed to group and others) may still have the wrong owner or mode: they are fixed before anything is read."""
    problems = [(part, found) for part, found, fixable in trust_problems(path) if not (fixable and part in fixed)]
    if problems:
        raise StateError(" ".join(
            "%s: %s must be a directory owned by root and writable by root only (found: %s). Root restores what it "
            "keeps below %s, so whoever can change it could run commands as root. Fix the ownership and mode, or "
            "choose another %s." % (printable(name), printable(part), found, printable(path), printable(name))
            for part, found in problems))


def file_spec(item):
    path = check_path(item["path"], "files")
    if item.get("src") is not None:
        src = check_path(item["src"], "files[].src of %s" % path)
        data = read_regular(src)
        if data is None:
            raise StateError("files: the source %s of %s does not exist" % (printable(src), printable(path)))
    else:
        data = item["content"].encode("utf-8", "surrogateescape")
    return File(path, data, item.get("owner"), item.get("group"), item.get("mode"))


def wanted_attributes(spec, changes):
    """What --diff shows as the new owner, group and mode: all that is given for a new path, else what changes."""
    wanted = dict(owner=spec.owner, group=spec.group, mode=None if spec.mode is None else "%04o" % spec.mode)
    return dict((key, value) for key, value in wanted.items()
                if value is not None and ("created" in changes or key in changes))


def diff_entries(dir_plans, directories, file_plans, files, secrets):
    """The ``diff`` of what changes (or would, in check mode), secrets masked (module_utils/file_diff.py)."""
    entries = []
    for spec, plan in zip(directories, dir_plans):
        if plan["changes"]:
            current = plan.get("attributes") or {}
            entries.append(directory_diff(plan["path"], plan["exists"],
                                          dict((key, current[key]) for key in plan["changes"] if key in current),
                                          wanted_attributes(spec, plan["changes"])))
    for spec, plan in zip(files, file_plans):
        if plan["changes"]:
            current = plan.get("attributes") or {}
            before = plan.get("before") if plan["exists"] else None
            entries.append(file_diff(plan["path"], before, spec.data,
                                     dict((key, current[key]) for key in plan["changes"] if key in current),
                                     wanted_attributes(spec, plan["changes"]), secrets))
    return entries


def unit_state(module, name):
    systemctl = module.get_bin_path("systemctl")
    if not systemctl:
        raise StateError("unit %s: systemctl is not installed on this host" % printable(name))
    rc, out, err = module.run_command([systemctl, "show", "-p", "ActiveState", "-p", "SubState", "-p", "UnitFileState",
                                       "-p", "LoadState", "-p", "FragmentPath", "-p", "Id", "--", name])
    if rc != 0:
        raise StateError("systemctl show %s failed (rc=%d): %s" % (printable(name), rc, printable(err.strip(), 500)))
    return parse_systemctl_show(out)


def probe(module, argv):
    program = argv[0]
    if not os.path.isabs(program):
        program = module.get_bin_path(program) or program
    if not (os.path.isfile(program) and os.access(program, os.X_OK)):
        return dict(rc=None, stdout="", stderr="%s: no such executable" % printable(argv[0]))
    rc, out, err = module.run_command([program] + list(argv[1:]))
    return dict(rc=rc, stdout=out, stderr=err)


def run(module):
    p = module.params
    result = dict(changed=False, directories=[], files=[], paths={}, contents={}, accounts={}, unit={}, probe={},
                  trust={}, heads={})
    # 1. checks: nothing is changed when any of them fails
    directories = [Directory(d["path"], d.get("owner"), d.get("group"), d.get("mode")) for d in p["directories"]]
    if p["trusted_dir"] is not None:
        check_path(p["trusted_dir"], "trusted_dir")
        fixed = set(d.path for d in directories if d.uid == 0 and d.mode is not None and not d.mode & 0o022)
        check_trust(p["trusted_dir"], p["trusted_dir_name"], fixed)
    files = [file_spec(f) for f in p["files"]]
    if not module.check_mode:
        for spec in directories + files:
            missing = spec.unresolved()
            if missing:
                raise StateError("%s: %s does not exist on this host" % (spec.path, " and ".join(missing)))
    dir_plans = [plan_directory(spec) for spec in directories]
    planned_new = set(path for plan in dir_plans for path in plan["create"])
    file_plans = []
    for spec in files:
        # a file below a directory that is still to be created is a new file; in check mode its directory may also
        # be one that an earlier task of the run would create (a new virtualenv)
        parent = os.path.dirname(spec.path)
        if parent in planned_new or (module.check_mode and not os.path.isdir(parent)):
            file_plans.append(dict(path=spec.path, exists=False, content_changed=True, changes=["created"]))
        else:
            file_plans.append(plan_file(spec))
    # 2. changes
    if not module.check_mode:
        for spec, plan in zip(directories, dir_plans):
            apply_directory(spec, plan)
        if p["trusted_dir"] is not None:
            check_trust(p["trusted_dir"], p["trusted_dir_name"])
        for spec, plan in zip(files, file_plans):
            apply_file(spec, plan)
    result["directories"] = [dict(path=plan["path"], changes=plan["changes"]) for plan in dir_plans]
    result["files"] = [dict(path=plan["path"], changes=plan["changes"]) for plan in file_plans]
    result["changed"] = any(plan["changes"] for plan in dir_plans + file_plans)
    if module._diff:
        result["diff"] = diff_entries(dir_plans, directories, file_plans, files, p["secrets"])
    # 3. reading back
    for path in p["inspect"]:
        result["paths"][path] = inspect_path(check_path(path, "inspect"), checksum=p["checksum"])
    for path in p["read"]:
        data = read_regular(check_path(path, "read"), limit=MAX_READ)
        result["contents"][path] = None if data is None else data.decode("utf-8", "replace")
    for path in p["trust"]:
        result["trust"][path] = [dict(path=part, found=found)
                                 for part, found, dummy in trust_problems(check_path(path, "trust"))]
    for path in p["heads"]:
        result["heads"][path] = read_head(check_path(path, "heads"))
    result["accounts"] = account_info(p["user"], p["group"])
    result["accounts"]["deployer"] = deployer_info()
    if p["unit"]:
        result["unit"] = unit_state(module, p["unit"])
    if p["probe_argv"]:
        result["probe"] = probe(module, p["probe_argv"])
    return result


def main():
    module = build_module()
    try:
        result = run(module)
    except StateError as exc:
        module.fail_json(msg=str(exc))
    except (OSError, ValueError) as exc:
        module.fail_json(msg="deploy_state: %s" % exc)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
