# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The real huggingface_hub client, driven from the command line with one JSON answer on stdout (for tests).

Run it with an interpreter that has huggingface_hub (``PY tools/model/hf_client.py ...``); the endpoint comes from
``HF_ENDPOINT`` as in production.

    hf_client.py snapshot REPO REVISION LOCAL_DIR [--max-workers N] [--token-stdin]
    hf_client.py dry-run REPO REVISION LOCAL_DIR [--token-stdin]
    hf_client.py info REPO REVISION [--token-stdin]
    hf_client.py paths-info REPO REVISION PATH... [--token-stdin]
    hf_client.py tree REPO REVISION [--token-stdin]

``--token-stdin`` reads the token from the first line of stdin, so it is in neither argv nor the environment;
without it no token is sent (``token=False``: a token stored on the machine is not picked up either).
On an error the answer is ``{"error": TYPE, "message": ...}`` and the exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys


def _file(entry):
    out = {"path": entry.path, "type": "directory" if not hasattr(entry, "size") else "file"}
    if out["type"] == "file":
        out.update(size=entry.size, blob_id=entry.blob_id,
                   lfs=None if entry.lfs is None else {"sha256": entry.lfs.sha256, "size": entry.lfs.size})
    return out


def run(args, token):
    import huggingface_hub  # pylint: disable=import-outside-toplevel
    from huggingface_hub import HfApi  # pylint: disable=import-outside-toplevel

    api = HfApi(token=token)
    if args.command == "snapshot":
        path = huggingface_hub.snapshot_download(args.repo, revision=args.revision, local_dir=args.local_dir,
                                                 max_workers=args.max_workers, token=token)
        return {"path": path, "huggingface_hub": huggingface_hub.__version__}
    if args.command == "dry-run":
        infos = huggingface_hub.snapshot_download(args.repo, revision=args.revision, local_dir=args.local_dir,
                                                  token=token, dry_run=True)
        return {"files": [{"filename": i.filename, "size": i.file_size, "will_download": i.will_download,
                           "commit": i.commit_hash} for i in infos]}
    if args.command == "info":
        info = api.model_info(args.repo, revision=args.revision, files_metadata=True)
        return {"sha": info.sha, "siblings": [{"path": s.rfilename, "size": s.size, "blob_id": s.blob_id,
                                               "lfs": None if s.lfs is None else dict(s.lfs)}
                                              for s in info.siblings or []]}
    if args.command == "paths-info":
        return {"paths": [_file(e) for e in api.get_paths_info(args.repo, args.paths, revision=args.revision)]}
    return {"tree": [_file(e) for e in api.list_repo_tree(args.repo, revision=args.revision, recursive=True,
                                                          expand=True)]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("snapshot", "dry-run", "info", "paths-info", "tree"):
        cmd = sub.add_parser(name)
        cmd.add_argument("repo")
        cmd.add_argument("revision")
        if name in ("snapshot", "dry-run"):
            cmd.add_argument("local_dir")
        if name == "snapshot":
            cmd.add_argument("--max-workers", type=int, default=8)
        if name == "paths-info":
            cmd.add_argument("paths", nargs="+")
        cmd.add_argument("--token-stdin", action="store_true")
    args = parser.parse_args(argv)
    token = sys.stdin.readline().strip() if args.token_stdin else False
    try:
        answer = run(args, token)
    except Exception as exc:  # pylint: disable=broad-exception-caught
        print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
        return 1
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
