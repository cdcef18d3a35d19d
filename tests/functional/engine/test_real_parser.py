# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The example inventory's SGLang command line, parsed by the REAL SGLang 0.5.23 parser.

The command line is built the way the sglang_server role builds it: the role's defaults and vars, the
example inventory's group_vars (its vault decrypted with the example vault password) and the
gpu-node-01 host_vars are templated with Ansible's own Templar, each variable the ``llmserve.sglang.server_config``
action reads (``server_config.VARIABLES``), into the configuration that action builds
(``server_config.build_config``), then ``render_server_argv`` renders it. The role's own
``files/sglang_parser_check.py`` then runs with the python of the CPU SGLang venv
(``LLMSERVE_SGLANG_VENV``, built by ``tools/engine/install_sglang_venv.sh`` / ``make engine-assets``).

Three runs of the script (started together, each imports the real sglang, ~5-15 s): the example host
(exit 0), the same line plus a misspelled flag, and the same line with a bad ``--dtype`` choice (both exit 2
with argparse's message).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ansible_collections.llmserve.sglang.tests.functional.engine.example_inventory import load_example

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "sglang_server"
INVENTORY = ROOT / "inventories" / "example"
CHECK_SCRIPT = ROLE / "files" / "sglang_parser_check.py"


# Order matters: later files win, as group_vars < host_vars and defaults < vars in the role.
VAR_FILES = (
    ROLE / "defaults" / "main.yml",
    INVENTORY / "group_vars" / "sglang_servers" / "main.yml",
    INVENTORY / "group_vars" / "sglang_servers" / "vault.yml",
    INVENTORY / "host_vars" / "gpu-node-01" / "main.yml",
    ROLE / "vars" / "main.yml",
)


def _example_host_cfg():
    """Return (cfg, api_key): the configuration llmserve.sglang.server_config builds for gpu-node-01, from the role's
    variables templated by Ansible."""
    from ansible.template import Templar

    from ansible_collections.llmserve.sglang.plugins.plugin_utils.server_config import (
        OPTIONAL_VARIABLES,
        VARIABLES,
        build_config,
    )

    loader, variables, _tasks = load_example(VAR_FILES)
    templar = Templar(loader=loader, variables=variables)
    cfg = build_config(dict((name, templar.resolve_variable_expression(name)) for name in VARIABLES
                            if name in variables or name not in OPTIONAL_VARIABLES))
    api_key = templar.template(variables["sglang_server_api_key"])
    return cfg, api_key


@pytest.fixture(scope="module")
def rendered():
    from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args import (
        render_server_argv,
        validate_server_config,
    )

    cfg, api_key = _example_host_cfg()
    assert validate_server_config(cfg) == [], "the example inventory does not pass the collection's own rules"
    return render_server_argv(cfg), api_key


def _replace_value(argv, option, value):
    at = argv.index(option)
    return argv[:at + 1] + [value] + argv[at + 2:]


@pytest.fixture(scope="module")
def parser_runs(rendered, tmp_path_factory, sglang_venv):
    """Run the role's check script three times (concurrently) with the venv's python."""
    argv = rendered[0]["argv"]
    cases = {
        "example": argv,
        # cuda_graph_max_bs was split into _decode/_prefill; argparse's prefix matching makes it ambiguous
        "misspelled": argv + ["--cuda-graph-max-bs", "8"],
        "bad_choice": _replace_value(argv, "--dtype", "bf16"),
    }
    work = tmp_path_factory.mktemp("real-parser")
    env = dict(os.environ, HOME=str(work), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    procs = {}
    for name, case_argv in cases.items():
        args_file = work / ("%s.json" % name)
        args_file.write_text(json.dumps({"argv": case_argv}))
        procs[name] = subprocess.Popen([sglang_venv, str(CHECK_SCRIPT), str(args_file)], env=env, cwd=str(work),
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    results = {}
    try:
        for name, proc in procs.items():
            out, err = proc.communicate(timeout=120)
            results[name] = (proc.returncode, out, err)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return results


def test_example_argv_is_rendered_without_secrets(rendered):
    result, api_key = rendered
    argv = result["argv"]
    assert api_key and not api_key.startswith("{{"), "the vaulted API key was not decrypted"
    assert api_key not in argv and api_key == result["config"]["api-key"]
    assert argv[argv.index("--config") + 1] == "/etc/sglang/sglang.yaml"
    assert argv[argv.index("--tp-size") + 1] == "4"
    assert result["env"]["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"


def test_real_parser_accepts_the_example_host(parser_runs):
    rc, out, err = parser_runs["example"]
    assert rc == 0, "the real SGLang parser rejected the example host's command line:\n%s" % err[-3000:]
    parsed = json.loads(out.strip().splitlines()[-1])
    assert parsed["tp_size"] == 4
    assert parsed["speculative_algorithm"] == "NEXTN"
    assert parsed["speculative_num_steps"] == 5
    assert parsed["speculative_eagle_topk"] == 1
    assert parsed["speculative_num_draft_tokens"] == 6
    assert parsed["model_path"] == "/models/Qwen3.5-122B-A10B"
    assert parsed["served_model_name"] == "qwen3.5-122b-a10b"
    assert (parsed["host"], parsed["port"]) == ("0.0.0.0", 30000)


def test_real_parser_rejects_a_misspelled_flag(parser_runs):
    rc, out, err = parser_runs["misspelled"]
    assert rc == 2, (rc, out, err[-2000:])
    assert "ambiguous option: --cuda-graph-max-bs" in err
    assert "--cuda-graph-max-bs-decode" in err.splitlines()[-1]


def test_real_parser_rejects_a_bad_choice(parser_runs):
    rc, out, err = parser_runs["bad_choice"]
    assert rc == 2, (rc, out, err[-2000:])
    assert "argument --dtype: invalid choice: 'bf16'" in err
    assert "'bfloat16'" in err.splitlines()[-1]
