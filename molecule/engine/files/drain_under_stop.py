# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Runs on the engine test host: four long /generate calls, `systemctl stop sglang` while they run, one JSON
line with what each call got and how the unit stopped. The API key is read from the role's --config file, so it
is in no command line."""

import json
import subprocess
import threading
import time
import urllib.error
import urllib.request

TOKENS = 1000
with open("/etc/sglang/sglang.yaml") as handle:
    KEY = [line.split(":", 1)[1].strip().strip("'\"") for line in handle if line.startswith("api-key:")][0]


def generate(results, index):
    body = json.dumps({"text": "Once upon a time", "sampling_params": {
        "max_new_tokens": TOKENS, "temperature": 0, "ignore_eos": True}}).encode()
    request = urllib.request.Request("http://127.0.0.1:30000/generate", data=body, method="POST", headers={
        "Content-Type": "application/json", "Authorization": "Bearer " + KEY})
    entry = {"status": 0, "completion_tokens": None}
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            entry["status"] = response.status
            entry["completion_tokens"] = json.loads(response.read())["meta_info"]["completion_tokens"]
    except urllib.error.HTTPError as exc:
        entry["status"] = exc.code
    except OSError as exc:
        entry["error"] = str(exc)
    entry["ended"] = time.monotonic()
    results[index] = entry


results = [None] * 4
threads = [threading.Thread(target=generate, args=(results, i)) for i in range(4)]
for thread in threads:
    thread.start()
time.sleep(0.5)
stop_began = time.monotonic()
subprocess.run(["systemctl", "stop", "sglang"], check=False)
stop_seconds = time.monotonic() - stop_began
for thread in threads:
    thread.join(timeout=120)
show = subprocess.run(["systemctl", "show", "-p", "Result", "-p", "ExecMainStatus", "-p", "ExecMainCode", "sglang"],
                      capture_output=True, text=True, check=False).stdout
print(json.dumps({
    "stop_seconds": round(stop_seconds, 2),
    "show": dict(line.split("=", 1) for line in show.splitlines() if "=" in line),
    "requests": [dict(r, ended_after_stop=round(r.pop("ended") - stop_began, 2)) for r in results if r],
}))
