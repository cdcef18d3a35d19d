# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run the installed SGLang's own argument parser over a rendered command line.

Usage: sglang_parser_check.py ARGS_JSON

ARGS_JSON holds {"argv": [...]} as the sglang_server role renders it. The parser is built exactly as
SGLang's ``prepare_server_args`` builds it (``ServerArgs.add_cli_args``), but the server arguments are
not resolved: resolution needs the model and an accelerator. An unknown, ambiguous or badly typed flag
makes argparse exit 2 with its own message on stderr.

The ``--config FILE`` pair is left out: the check runs before the new file is written, and the role
puts nothing but its own, already validated secret keys (api-key, ...) there.
"""

import argparse
import json
import sys


def main():
    with open(sys.argv[1]) as handle:
        argv = json.load(handle)["argv"]

    from sglang.srt.server_args import ServerArgs  # the INSTALLED SGLang, whatever its version

    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    if "--config" in argv:
        at = argv.index("--config")
        argv = argv[:at] + argv[at + 2:]
    parsed = parser.parse_args(argv)

    # Echo what the parser made of the settings the role cares about (never the secrets).
    keys = ("model_path", "served_model_name", "host", "port", "tp_size", "speculative_algorithm",
            "speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens", "nnodes", "node_rank",
            "dist_init_addr")
    print(json.dumps({k: getattr(parsed, k, None) for k in keys}, sort_keys=True))


if __name__ == "__main__":
    main()
