#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: model_revision
short_description: Resolve a model revision on a Hugging Face hub to a commit and the manifest of its files
version_added: 0.1.0
description:
  - Asks a Hugging Face–compatible hub (huggingface.co or a mirror) which commit O(revision) of O(repo) is, and
    lists that commit's files with their sizes and hashes (the SHA-256 the hub publishes for LFS files, the git blob
    id for the others), so every host can be given the same commit and can verify what it downloads.
  - The repository and revision names are checked first, without any network request. A branch or tag name is
    refused unless O(allow_floating=true); then it is resolved to the commit it points at now.
  - Refuses, naming the files, a revision whose weights are pickle files (C(*.bin), C(*.pt), C(*.pth), C(*.pkl),
    C(*.pickle), C(*.ckpt); loading them can run code) unless O(allow_pickle=true), and a revision whose
    C(config.json) asks for custom code (C(auto_map)) unless O(allow_remote_code=true).
  - File names from the hub are checked (no C(..), no absolute paths, no control characters, nothing in C(.git/)).
  - The hub is asked by the real C(huggingface_hub) library in a child process run with O(python)
    (C(HfApi.model_info), C(HfApi.list_repo_tree) and C(hf_hub_download) of C(config.json) into a temporary
    directory). The token reaches the child on its standard input; it is in no command line, environment variable,
    file or returned value.
  - Reads only; always reports C(changed=false).
author: llmserve developers (@llmserve)
attributes:
  check_mode:
    details: Runs as usual; it changes nothing in either mode.
options:
  repo:
    description: Repository id, C(org/name) (the role's C(sglang_model_repo)).
    type: str
    required: true
  revision:
    description:
      - A full 40-hex commit id, or with O(allow_floating=true) a branch or tag name (the role's
        C(sglang_model_revision)).
    type: str
    required: true
  endpoint:
    description:
      - Base URL of a Hugging Face–compatible hub, passed to the child as C(HF_ENDPOINT).
      - V('') is C(https://huggingface.co).
    type: str
    default: ''
  token:
    description:
      - Access token sent to the hub as C(Authorization Bearer). V('') sends none (a token stored on the host is not
        used either).
    type: str
    default: ''
  python:
    description:
      - An interpreter on the managed host that can import C(huggingface_hub) (1.x).
      - It runs with the token, as the module's user (root), so it is refused when anyone but root could change it,
        a directory on the way to it, or its virtualenv (C(pyvenv.cfg) beside its C(bin/)).
    type: path
    required: true
  allow_floating:
    description: Accept a branch or tag name in O(revision) and resolve it to its current commit.
    type: bool
    default: false
  allow_pickle:
    description: Accept a revision that holds pickle files.
    type: bool
    default: false
  allow_remote_code:
    description:
      - Accept a revision whose C(config.json) has C(auto_map), that is, asks SGLang to run Python code from the
        repository (C(--trust-remote-code)).
    type: bool
    default: false
  timeout:
    description: Seconds the child may take for all its requests together.
    type: int
    default: 120
notes:
  - An unknown branch makes some mirrors answer 401 (which C(huggingface_hub) reports as a missing repository), so
    an error names the repository, the revision and the endpoint together and does not guess which one is wrong.
seealso:
  - module: llmserve.sglang.model_stage
extends_documentation_fragment: [ansible.builtin.action_common_attributes, llmserve.sglang.attributes]
"""

EXAMPLES = r"""
- name: Resolve the revision once, for every host
  llmserve.sglang.model_revision:
    repo: Qwen/Qwen3.5-122B-A10B
    revision: 0123456789abcdef0123456789abcdef01234567
    endpoint: https://hf-mirror.example.com
    token: "{{ sglang_model_hub_token }}"
    python: /opt/llmserve-model-venv/bin/python
  run_once: true
  register: model_revision
"""

RETURN = r"""
commit:
  description: The 40-hex commit id the revision is.
  returned: success
  type: str
  sample: 0123456789abcdef0123456789abcdef01234567
floating:
  description: Whether O(revision) was a branch or tag name that was resolved.
  returned: success
  type: bool
  sample: false
manifest:
  description:
    - Every file of the commit, sorted by path, as C(llmserve.sglang.model_stage) takes it.
  returned: success
  type: list
  elements: dict
  contains:
    path:
      description: Path inside the repository.
      type: str
    size:
      description: Size in bytes.
      type: int
    sha256:
      description: SHA-256 of the content (files the hub keeps in LFS).
      type: str
      returned: for LFS files
    blob:
      description: Git blob id (other files).
      type: str
      returned: for files not in LFS
  sample:
    - {path: config.json, size: 712, blob: 4d1a5c4c2e3b9a8f7e6d5c4b3a2f1e0d9c8b7a69}
    - {path: model.safetensors, size: 281312, sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08}
total_bytes:
  description: Sum of the sizes of all files.
  returned: success
  type: int
  sample: 244000000000
files:
  description: Number of files.
  returned: success
  type: int
  sample: 54
pickle_files:
  description: The pickle files of the revision (refused unless O(allow_pickle=true)).
  returned: success
  type: list
  elements: str
  sample: []
remote_code_files:
  description: The repository's Python files that C(auto_map) in C(config.json) names.
  returned: success
  type: list
  elements: str
  sample: []
huggingface_hub:
  description: Version of C(huggingface_hub) that O(python) has.
  returned: success
  type: str
  sample: 1.33.0
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmserve.sglang.plugins.module_utils.model_hub import HubError, hub_name, run_child
from ansible_collections.llmserve.sglang.plugins.module_utils.model_manifest import check_manifest, entry_from_hub
from ansible_collections.llmserve.sglang.plugins.module_utils.model_store import (
    ModelStoreError,
    check_repo,
    check_revision,
    interpreter_problems,
    is_commit,
    pickle_files,
    policy_refusal,
    remote_code_files,
    trust_text,
)
from ansible_collections.llmserve.sglang.plugins.module_utils.text import printable


def build_module():
    return AnsibleModule(
        argument_spec=dict(
            repo=dict(type="str", required=True),
            revision=dict(type="str", required=True),
            endpoint=dict(type="str", default=""),
            token=dict(type="str", default="", no_log=True),
            python=dict(type="path", required=True),
            allow_floating=dict(type="bool", default=False),
            allow_pickle=dict(type="bool", default=False),
            allow_remote_code=dict(type="bool", default=False),
            timeout=dict(type="int", default=120),
        ),
        supports_check_mode=True,
    )


def resolve(params, child=run_child):
    """The module's result for ``params``; ModelStoreError or HubError when it must fail."""
    repo, revision = params["repo"], params["revision"]
    # Names first: a refused name costs no request.
    check_repo(repo)
    kind = check_revision(revision, params["allow_floating"])
    if params["timeout"] < 1:
        raise ModelStoreError("timeout: %d must be at least 1 second" % params["timeout"])
    where = "sglang_model_repo %s at sglang_model_revision %s on %s" % (
        printable(repo, 200, escape=True), printable(revision, 200, escape=True), hub_name(params["endpoint"]))
    untrusted = interpreter_problems(params["python"])
    if untrusted:
        raise ModelStoreError("sglang_model_python: %s runs huggingface_hub with the hub token, so it, the directories "
                              "on the way to it and its virtualenv (sglang_model_venv) must be owned by root and "
                              "writable by root only: %s. Nothing was asked of the hub; fix the ownership and mode "
                              "(chown -R root, chmod -R go-w) or choose another interpreter"
                              % (printable(params["python"], 300, escape=True), trust_text(untrusted)))
    request = dict(op="resolve", repo=repo, revision=revision, endpoint=params["endpoint"], token=params["token"])
    try:
        answer = child(params["python"], request, params["timeout"])
    except HubError as exc:
        status = " (HTTP %d)" % exc.status if exc.status else ""
        raise HubError("cannot resolve %s%s: %s; check the repository and revision, sglang_model_hub_endpoint and "
                       "sglang_model_hub_token" % (where, status, exc), exc.error, exc.status)
    commit = answer.get("commit")
    if not is_commit(commit):
        raise HubError("the hub answered for %s with commit %s, which is not a 40-hex commit id"
                       % (where, printable(repr(commit), 100, escape=True)))
    if kind == "commit" and commit != revision:
        raise HubError("the hub answered for %s with another commit, %s" % (where, commit))
    files = answer.get("files")
    if not isinstance(files, list) or not all(isinstance(item, dict) for item in files):
        raise HubError("the hub's file list for %s is not a list of files" % where)
    try:
        manifest = check_manifest([entry_from_hub(item) for item in files])
    except ModelStoreError as exc:
        raise ModelStoreError("%s: %s" % (where, exc))
    if not manifest:
        raise ModelStoreError("%s (commit %s) holds no files" % (where, commit))
    names = [entry["path"] for entry in manifest]
    config = answer.get("config")
    config_error = answer.get("config_error")
    refusal = policy_refusal(names, config, printable(config_error, 300, escape=True) if config_error else None,
                             params["allow_pickle"], params["allow_remote_code"])
    if refusal:
        raise ModelStoreError("%s: %s" % (where, refusal))
    pickles = pickle_files(names)
    code_files = remote_code_files(config, names) if isinstance(config, dict) else []
    return dict(changed=False, commit=commit, floating=kind == "floating", manifest=manifest,
                total_bytes=sum(entry["size"] for entry in manifest), files=len(manifest), pickle_files=pickles,
                remote_code_files=code_files, huggingface_hub=str(answer.get("version") or ""))


def main():
    module = build_module()
    try:
        result = resolve(module.params)
    except (ModelStoreError, HubError) as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
