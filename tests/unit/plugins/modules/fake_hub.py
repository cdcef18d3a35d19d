# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A stand-in for an interpreter with huggingface_hub: an executable script that the model modules run as
``PY -I -c CHILD_SCRIPT``.  It ignores the script, reads the JSON request from stdin, logs what it saw (argv, the
HF_* environment, the request) and answers like the real child would, from a scenario file:

    {"commit", "files": {path: text or {"size": n, "lfs": true}}, "config": ..., "error": {...} | null,
     "corrupt": {path: times}, "die_after": path | null, "slow": seconds before each file,
     "hold": a path: after the first file, wait (at most 120 s) until it exists,
     "oversize": {path: bytes}: that file is written with so many zero bytes instead, 64 KiB every 10 ms (a hub
     that streams more than it lists); ``oversize-done`` beside the scenario is made once all were written}

For ``download`` it writes the files into ``local_dir`` (a corrupt file gets its first byte flipped while its
``times`` count lasts).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

STUB = r'''#!%(python)s
import json, os, sys
SCENARIO = %(scenario)r
LOG = %(log)r
MARK = "LLMSERVE-HUB-ANSWER "
req = json.loads(sys.stdin.read())
with open(SCENARIO) as handle:
    sc = json.load(handle)
with open(LOG, "a") as handle:
    handle.write(json.dumps({"argv": sys.argv, "env": {k: v for k, v in os.environ.items() if k.startswith("HF_")},
                             "pid": os.getpid(), "request": req}) + "\n")
if sc.get("error"):
    print(MARK + json.dumps(sc["error"]))
    sys.exit(1)
if sc.get("noise"):
    sys.stderr.write(sc["noise"] %% {"token": req.get("token")})
    sys.exit(2)
def content(path):
    spec = sc["files"][path]
    return spec.encode() if isinstance(spec, str) else bytes(spec["size"])
if req["op"] == "resolve":
    import hashlib
    files = []
    for path in sorted(sc["files"]):
        data = content(path)
        blob = hashlib.sha1(b"blob %%d\0" %% len(data) + data).hexdigest()
        lfs = isinstance(sc["files"][path], dict) and sc["files"][path].get("lfs")
        files.append({"path": path, "size": len(data), "oid": blob,
                      "lfs": {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)} if lfs else None})
    print(MARK + json.dumps({"commit": sc["commit"], "files": files, "config": sc.get("config"),
                             "config_error": sc.get("config_error"), "version": "0.0-fake"}))
    sys.exit(0)
corrupt = sc.get("corrupt", {})
written = 0
for path in req.get("allow_patterns") or sorted(sc["files"]):
    target = os.path.join(req["local_dir"], path)
    if os.path.exists(target):
        continue
    if sc.get("hold") and written:
        import time
        deadline = time.time() + 120
        while not os.path.exists(sc["hold"]) and time.time() < deadline:
            time.sleep(0.1)
    written += 1
    if sc.get("slow"):
        import time
        time.sleep(sc["slow"])
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if path in sc.get("oversize", {}):
        import time
        with open(target, "wb") as handle:
            left = sc["oversize"][path]
            while left > 0:
                handle.write(bytes(min(left, 65536)))
                handle.flush()
                left -= 65536
                time.sleep(0.01)
        open(os.path.join(os.path.dirname(SCENARIO), "oversize-done"), "w").close()
        continue
    data = bytearray(content(path))
    if corrupt.get(path, 0) > 0 and data:
        corrupt[path] -= 1
        data[0] ^= 0xFF
    with open(target, "wb") as handle:
        handle.write(data)
    if sc.get("die_after") == path:
        with open(SCENARIO, "w") as handle:
            json.dump(dict(sc, corrupt=corrupt, die_after=None), handle)
        os.kill(os.getpid(), 9)
with open(SCENARIO, "w") as handle:
    json.dump(dict(sc, corrupt=corrupt), handle)
print(MARK + json.dumps({"path": req["local_dir"], "version": "0.0-fake"}))
'''


class FakeHub(object):
    def __init__(self, tmp_path, commit="a" * 40, files=None, **scenario):
        self.dir = tmp_path / "fake-hub"
        self.dir.mkdir(exist_ok=True)
        self.python = str(self.dir / "python")
        self.scenario_path = self.dir / "scenario.json"
        self.log_path = self.dir / "log.jsonl"
        self.scenario = dict(commit=commit, files=files if files is not None else {
            "config.json": json.dumps({"architectures": ["LlamaForCausalLM"]}),
            "model.safetensors": {"size": 4096, "lfs": True},
            "tokenizer.json": "{}",
        })
        self.scenario.update(scenario)
        self.save()
        with open(self.python, "w", encoding="utf-8") as handle:
            handle.write(STUB % {"python": sys.executable, "scenario": str(self.scenario_path),
                                 "log": str(self.log_path)})
        os.chmod(self.python, 0o755)

    def save(self):
        self.scenario_path.write_text(json.dumps(self.scenario), encoding="utf-8")

    def update(self, **changes):
        self.scenario = json.loads(self.scenario_path.read_text(encoding="utf-8"))
        self.scenario.update(changes)
        self.save()

    def calls(self):
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text(encoding="utf-8").splitlines()]

    def content(self, path):
        spec = self.scenario["files"][path]
        return spec.encode() if isinstance(spec, str) else bytes(spec["size"])

    def manifest(self):
        out = []
        for path in sorted(self.scenario["files"]):
            data = self.content(path)
            spec = self.scenario["files"][path]
            if isinstance(spec, dict) and spec.get("lfs"):
                out.append({"path": path, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
            else:
                blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
                out.append({"path": path, "size": len(data), "blob": blob})
        return out
