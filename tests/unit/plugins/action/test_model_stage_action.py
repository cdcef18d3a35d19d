# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The model_stage action plugin in a real ansible-playbook run (local connection, stub hub interpreter): the
download runs as an async job with progress lines, the job file is cleaned up, a revision in place is one plain
run, check mode fetches nothing, and a failed job fails the task with the module's message."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest
import yaml

from ansible.errors import AnsibleActionFail

from ansible_collections.llmserve.sglang.plugins.action import model_stage as action
from ansible_collections.llmserve.sglang.tests.unit.collection_tree import collections_path
from ansible_collections.llmserve.sglang.tests.unit.plugins.modules.fake_hub import FakeHub

C1 = "1" * 40
C2 = "2" * 40
TOKEN = "hf_ActionToken55555"

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the store's files are root's: chown needs root")


def play(tmp_path, tasks, check=False, release=None):
    results = tmp_path / "results.json"
    tasks = list(tasks) + [{"ansible.builtin.copy": {
        "content": "{{ {'a': a | default(None), 'b': b | default(None), 'c': c | default(None)} | to_json }}",
        "dest": str(results)}, "check_mode": False}]
    doc = [{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    async_dir = tmp_path / "async"
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
               ANSIBLE_ASYNC_DIR=str(async_dir), ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c", "local",
            str(tmp_path / "play.yml")] + (["--check"] if check else [])
    # pylint: disable-next=consider-using-with
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines = []
    try:
        if release is not None:
            # hold the download until the play has shown a progress line, however slow this machine is
            deadline = time.monotonic() + 240
            for line in proc.stdout:
                lines.append(line)
                if PROGRESS.match(line.rstrip("\n")) or time.monotonic() > deadline:
                    break
            release.touch()
        lines.extend(proc.stdout)
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = "".join(lines)
    data = json.loads(results.read_text(encoding="utf-8")) if results.exists() else None
    return proc.returncode, out, data, async_dir


def stage_task(hub, store, register, commit=C1, **extra):
    args = dict(repo="llmserve/tiny", commit=commit, manifest=hub.manifest(), dir=store, python=hub.python,
                token=TOKEN, disk_margin=0, progress_interval=1)
    args.update(extra)
    return {"llmserve.sglang.model_stage": args, "register": register, "ignore_errors": True}


PROGRESS = re.compile(r"^localhost: llmserve/tiny@111111111111 \d+(\.\d)? (B|KiB) / 293\.0 KiB \(\d+ %\)"
                      r"(, [\d.]+ (B|KiB)/s, ETA \d+s|, ETA unknown)$", re.M)


@needs_root
def test_download_runs_async_with_progress_then_plain_run(tmp_path):
    release = tmp_path / "release"
    hub = FakeHub(tmp_path, commit=C1, files={"config.json": "{}", "a.safetensors": {"size": 100000, "lfs": True},
                                              "b.safetensors": {"size": 200000, "lfs": True}}, hold=str(release))
    store = str(tmp_path / "models")
    rc, out, data, async_dir = play(tmp_path, [stage_task(hub, store, "a"), stage_task(hub, store, "b")],
                                    release=release)
    assert rc == 0, out
    a, b = data["a"], data["b"]
    assert a["changed"] is True and a["staged"] is True and not a.get("failed"), a
    assert a["downloaded_bytes"] == 300002 and a["path"] == os.path.join(store, "llmserve--tiny", C1)
    assert "ansible_job_id" not in a and "finished" not in a
    lines = [m.group(0) for m in PROGRESS.finditer(out)]
    assert lines, out
    # the first file (a.safetensors, 97.7 KiB) had arrived when the download was held
    assert any(line.split("@111111111111 ", 1)[1].startswith("97.7 KiB / ") for line in lines), out
    assert out.count("localhost: llmserve/tiny@") == len(lines), "every progress line has the same form"
    assert TOKEN not in out
    # the second run found the revision in place: one plain run, no progress line, nothing read
    assert b["changed"] is False and b["bytes_read"] == 0 and b["staged"] is False
    assert "localhost: llmserve/tiny@" not in out.split("TASK", 2)[2]
    # the job file was removed, the executor did not poll a job of its own
    assert not async_dir.exists() or os.listdir(str(async_dir)) == []
    assert "ASYNC" not in out


@needs_root
def test_failed_job_fails_the_task_with_the_modules_message(tmp_path):
    hub = FakeHub(tmp_path, commit=C2, corrupt={"config.json": 9})
    store = str(tmp_path / "models")
    rc, out, data, async_dir = play(tmp_path, [stage_task(hub, store, "a", commit=C2)])
    a = data["a"]
    assert a["failed"] is True and "config.json: blob is " in a["msg"], a
    assert "fetched a second time" in a["msg"]
    assert not async_dir.exists() or os.listdir(str(async_dir)) == []


@needs_root
def test_check_mode_fetches_nothing(tmp_path):
    hub = FakeHub(tmp_path, commit=C1)
    store = str(tmp_path / "models")
    rc, out, data, _async_dir = play(tmp_path, [stage_task(hub, store, "a")], check=True)
    assert rc == 0, out
    assert data["a"]["changed"] is True and "would fetch" in data["a"]["msg"]
    assert not os.path.exists(store) and hub.calls() == []


@needs_root
@pytest.mark.parametrize("option, value, shown", [("progress_interval", 0, "0"), ("timeout", 2.5, "2.5")])
def test_bad_integer_option_refused_before_the_module_runs(tmp_path, option, value, shown):
    hub = FakeHub(tmp_path, commit=C1)
    store = str(tmp_path / "models")
    rc, out, data, _async_dir = play(tmp_path, [stage_task(hub, store, "a", **{option: value})])
    assert data["a"]["failed"] is True, data["a"]
    assert "%s: %s must be an integer of at least 1" % (option, shown) in data["a"]["msg"]
    assert hub.calls() == []


@pytest.mark.parametrize("value, number", [(15, 15), ("15", 15), (" 7 ", 7), (15.0, 15), ("+3", 3)])
def test_integer_option_taken(value, number):
    assert action._int_option({"timeout": value}, "timeout", 21600, 1) == number
    assert action._int_option({}, "timeout", 21600, 1) == 21600


@pytest.mark.parametrize("value", [2.5, "2.5", 0.5, True, False, "1_000", "15s", "", None, [15], 0, "-1"])
def test_fraction_bool_or_text_refused_naming_the_option(value):
    with pytest.raises(AnsibleActionFail) as err:
        action._int_option({"progress_interval": value}, "progress_interval", 15, 1)
    assert str(err.value) == ("progress_interval: %r must be an integer of at least 1 (a whole number of seconds, "
                              "not a fraction or a boolean)" % (value,))
