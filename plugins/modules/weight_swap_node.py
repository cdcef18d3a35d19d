#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: weight_swap_node
short_description: The part of an in-place weight swap on a node of rank 1 or above of a multi-node SGLang server
version_added: 0.1.0
description:
  - A multi-node SGLang server answers HTTP on rank 0 only. When rank 0 is asked to load other weights
    (M(llmserve.sglang.weight_swap)), every rank loads the path from its own node's disk, and only rank 0's own
    result comes back. SGLang 0.5.23 answers 200 even when a rank on another node failed its load (and died). This
    module gives each other node its own account, from its own disk and its own journal.
  - With O(state=prepared), before rank 0 is asked, it compares O(model_path) with O(current_model_path) on this
    node (as M(llmserve.sglang.weight_swap) does on rank 0), and marks the unit's process and the journal
    (RV(mark)). A node whose revision does not fit is V(incompatible); rank 0 must then not be asked.
  - With O(state=loaded), after rank 0 answered, it waits until this node's ranks logged the end of their load after
    the mark, in the same process (RV(outcome=swapped)), and fails when one logged a failed load, when the process
    changed or stopped, or after O(timeout).
author: llmserve developers (@llmserve)
attributes:
  check_mode:
    details:
      - O(state=prepared) reads and compares the same in check mode; O(state=loaded) waits for nothing and returns
        V(would_swap).
options:
  unit:
    description: The systemd unit that runs this node's ranks.
    type: str
    required: true
  state:
    description: V(prepared) before rank 0 is asked, V(loaded) after it answered.
    type: str
    choices: [prepared, loaded]
    required: true
  model_path:
    description: The model directory rank 0 is asked to load, as this node sees it (the same path on every node).
      Required with O(state=prepared).
    type: path
  current_model_path:
    description: The model directory this node's ranks serve now. With O(state=prepared), both are compared (the
      configuration and every tensor's name, dtype and shape).
    type: path
  mark:
    description: RV(mark) of the O(state=prepared) call on this node. Required with O(state=loaded).
    type: dict
  ranks:
    description: How many ranks of the server run on this node (each logs the end of its own load).
    type: int
    default: 1
  timeout:
    description: Seconds to wait with O(state=loaded) for this node's ranks, counted from the call.
    type: float
    default: 600
notes:
  - The journal lines are SGLang 0.5.23's (C(Update weights end.) on success; C(Failed to update weights), C(Failed to
    get weights iterator) or a traceback on failure).
seealso:
  - module: llmserve.sglang.weight_swap
extends_documentation_fragment: [ansible.builtin.action_common_attributes, llmserve.sglang.attributes]
"""

EXAMPLES = r"""
- name: Check the staged revision and mark the journal (a node of rank 1 or above)
  llmserve.sglang.weight_swap_node:
    unit: sglang
    state: prepared
    model_path: /var/lib/llmserve-sglang/sglang/model
    current_model_path: /var/lib/llmserve-models/Qwen--Qwen3.5-122B-A10B/9d8c7b6a5f4e3d2c1b0a99887766554433221100
  register: node_ready

# ... rank 0 is asked with llmserve.sglang.weight_swap ...

- name: Wait until this node's ranks loaded it too
  llmserve.sglang.weight_swap_node:
    unit: sglang
    state: loaded
    mark: "{{ node_ready.mark }}"
    timeout: 900
"""

RETURN = r"""
outcome:
  description:
    - V(ready) - O(state=prepared) - the revision fits; RV(mark) is set.
    - V(incompatible) - O(state=prepared) - the two directories differ in configuration or tensor layout.
    - V(not_running) - O(state=prepared) - the unit does not run.
    - V(swapped) - O(state=loaded) - every rank of this node logged the end of its load, in the same process.
    - V(rejected) - O(state=loaded) - a rank logged a failed load; this node's ranks may hold other weights than rank 0's.
    - V(lost) - O(state=loaded) - the unit stopped or another process runs it.
    - V(timeout) - O(state=loaded) - not every rank ended its load within O(timeout).
    - V(would_swap) - O(state=loaded) in check mode.
  returned: always
  type: str
  sample: swapped
msg:
  description: One sentence that says what happened.
  returned: always
  type: str
mark:
  description: C(main_pid), C(invocation_id) and C(cursor) (the journal's newest entry) before rank 0 is asked;
    V(null) unless RV(outcome=ready).
  returned: always
  type: dict
compared:
  description: The comparison of O(current_model_path) with O(model_path) (C(same_shape), C(problems), C(tensors));
    V(null) without it.
  returned: always
  type: dict
problems:
  description: Each check that failed.
  returned: always
  type: list
  elements: str
lines:
  description: With O(state=loaded), the newest journal lines of the unit after the mark (at most 40).
  returned: always
  type: list
  elements: str
seconds:
  description: Seconds waited with O(state=loaded).
  returned: always
  type: float
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmserve.sglang.plugins.module_utils import weight_swap


def _result(outcome=None, msg="", **extra):
    result = {"outcome": outcome, "msg": msg, "mark": None, "compared": None, "problems": [], "lines": [],
              "seconds": 0.0}
    result.update(extra)
    return result


def read_params(params):
    """The first rule the options break, or None."""
    problem = weight_swap.seconds_problem("timeout", params["timeout"])
    if problem:
        return problem
    if params["ranks"] < 1:
        return "ranks must be 1 or more, got %d" % params["ranks"]
    if params["state"] == "prepared" and not params["model_path"]:
        return "model_path is required with state=prepared"
    if params["state"] == "loaded":
        mark = params["mark"] or {}
        try:
            pid = int(mark.get("main_pid"))
        except (TypeError, ValueError):
            pid = 0
        if pid <= 0 or not isinstance(mark.get("invocation_id"), str) or not mark["invocation_id"]:
            return ("mark must be the mark of a state=prepared call on this node (main_pid and invocation_id), "
                    "got %r" % (params["mark"],))
    return None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            unit=dict(type="str", required=True),
            state=dict(type="str", required=True, choices=["prepared", "loaded"]),
            model_path=dict(type="path"),
            current_model_path=dict(type="path"),
            mark=dict(type="dict"),
            ranks=dict(type="int", default=1),
            timeout=dict(type="float", default=600),
        ),
        supports_check_mode=True,
    )
    p = module.params
    error = read_params(p)
    if error:
        module.fail_json(**_result(msg=error))

    def run(argv):
        return module.run_command(argv, environ_update={"LC_ALL": "C", "SYSTEMD_COLORS": "0"})

    if p["state"] == "prepared":
        unit = weight_swap.read_unit(run, p["unit"])
        if not unit["active"] or unit["main_pid"] <= 0:
            module.fail_json(**_result(weight_swap.NOT_RUNNING, "%s does not run: there is nothing to load the "
                                                                "revision into" % p["unit"]))
        compared = None
        if p["current_model_path"]:
            compared = weight_swap.compare_checkpoints(p["current_model_path"], p["model_path"])
            if not compared["same_shape"]:
                module.fail_json(**_result(
                    weight_swap.INCOMPATIBLE, "%s cannot be swapped in for %s on this node: %s" % (
                        p["model_path"], p["current_model_path"], "; ".join(compared["problems"])),
                    compared=compared, problems=list(compared["problems"])))
        mark = {"main_pid": unit["main_pid"], "invocation_id": unit["invocation_id"],
                "cursor": weight_swap.journal_cursor(run)}
        module.exit_json(changed=False, **_result(weight_swap.READY, "%s (PID %d) is ready to load %s" % (
            p["unit"], unit["main_pid"], p["model_path"]), mark=mark, compared=compared))

    mark = dict(p["mark"], main_pid=int(p["mark"]["main_pid"]))
    if module.check_mode:
        module.exit_json(changed=True, **_result(
            weight_swap.WOULD_SWAP, "%s would be watched for its ranks' load" % p["unit"], mark=mark))
    waited = weight_swap.wait_rank_load(run, p["unit"], mark, ranks=p["ranks"], timeout=p["timeout"])
    result = _result(waited["outcome"], waited["msg"], mark=mark, lines=waited["lines"], seconds=waited["seconds"])
    if waited["outcome"] != weight_swap.SWAPPED:
        result["problems"] = [waited["msg"]]
        module.fail_json(changed=True, **result)
    module.exit_json(changed=True, **result)


if __name__ == "__main__":
    main()
