# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A revision swapped into the REAL SGLang 0.5.23 server on CPU, through module_utils/weight_swap.py.

Two revisions of the tiny model (tools/engine/make_tiny_model.py, default seed and ``--seed 2``: same tokenizer,
configuration and shapes, other weights) and two broken ones (no weight file; a weight file cut in half). One server
is started on revision A with an API key and an admin key (in a ``--config`` file, as the role keeps them) and a
``--served-model-name``; on it, in this order:

1. a revision without weights: 400, A's weights still serve (same greedy answer);
2. revision B as ``weight_version`` = a commit: same PID and children, ``/model_info`` and every answer's
   ``meta_info`` carry the commit, ``/server_info`` keeps the start-up value, the served name becomes B's path,
   the greedy answer changes;
3. the API key instead of the admin key: 401;
4. back to A while a long request streams (sent once its first tokens are back): the update waits for it, then
   succeeds (the cache flush is not refused);
5. the cut weight file: the server drops the connection and dies (SGLang's rollback reads the broken path again).

Then a fresh server is started on B through a link, without ``--served-model-name``: its greedy answer is the one
the swapped server gave, and its start-up time is printed beside the swap's seconds (``pytest -s``); the link is
moved to A and A swapped in through the link: the served name (the link's path) stays, the answers are A's.
Two server starts, one at a time: 2-4 minutes on 2 busy cores.
Needs ``LLMSERVE_SGLANG_VENV`` (``make engine-assets``); ``LLMSERVE_SGLANG_MODEL`` (optional) saves building A.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from ansible_collections.llmserve.sglang.plugins.module_utils import http_client
from ansible_collections.llmserve.sglang.plugins.module_utils import weight_swap as ws
from ansible_collections.llmserve.sglang.tests.functional.engine.engine_tools import ENGINE_DIR, VENV, load_engine_tool

CACHED_MODEL = os.environ.get("LLMSERVE_SGLANG_MODEL", "")
API = "sk-swap-api-0123456789"
ADMIN = "sk-swap-admin-9876543210"
COMMIT_B = "b" * 40
LONG_TOKENS = 1900  # greedy tokens of the request the update must wait for
START_BUDGET = 240.0  # launch to /health 200; 25 s idle, over 80 s seen with the 2 cores shared

pytestmark = pytest.mark.usefixtures("sglang_venv")


smoke_server = load_engine_tool("smoke_server")


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _make_model(python, outdir, seed=None):
    argv = [python, str(ENGINE_DIR / "make_tiny_model.py"), str(outdir)]
    if seed is not None:
        argv += ["--seed", str(seed)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False,
                          env=dict(os.environ, HF_HUB_OFFLINE="1"))
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture(scope="module")
def revisions(tmp_path_factory, sglang_venv):
    root = tmp_path_factory.mktemp("revisions")
    rev_a, rev_b = root / "rev-a", root / "rev-b"
    if CACHED_MODEL and os.path.isfile(os.path.join(CACHED_MODEL, "model.safetensors")):
        shutil.copytree(CACHED_MODEL, rev_a)  # the default seed: what make_tiny_model.py writes without --seed
    else:
        _make_model(sglang_venv, rev_a)
    _make_model(sglang_venv, rev_b, seed=2)
    no_weights = root / "rev-no-weights"
    shutil.copytree(rev_a, no_weights)
    (no_weights / "model.safetensors").unlink()
    cut = root / "rev-cut"
    shutil.copytree(rev_a, cut)
    data = (cut / "model.safetensors").read_bytes()
    (cut / "model.safetensors").write_bytes(data[:len(data) // 2])
    return {"a": str(rev_a), "b": str(rev_b), "no_weights": str(no_weights), "cut": str(cut)}


class Server(object):
    """One real server on loopback, its start-up timed; always stopped by the caller."""

    def __init__(self, model, workdir, name, served_name="tiny"):
        self.port = _free_port()
        self.base_url = "http://127.0.0.1:%d" % self.port
        config = Path(workdir) / ("%s.yaml" % name)
        config.write_text("api-key: %s\nadmin-api-key: %s\n%s" % (
            API, ADMIN, "served-model-name: %s\n" % served_name if served_name else ""))
        config.chmod(0o600)
        self.log_path = Path(workdir) / ("%s.log" % name)
        self.log = open(self.log_path, "wb")  # pylint: disable=consider-using-with
        self.shm_before = set(glob.glob(smoke_server.SHM_GLOB))
        started = time.monotonic()
        self.process = smoke_server.launch(VENV, model, self.port, self.log, ["--config", str(config)])
        while True:
            assert self.process.poll() is None, "server exited with %s: %s" % (self.process.returncode, self.tail())
            assert time.monotonic() - started < START_BUDGET, "no /health 200 in %d s: %s" % (START_BUDGET, self.tail())
            if smoke_server.port_open(self.port):
                status, dummy = smoke_server.http("GET", self.base_url + "/health", timeout=2.0)
                if status == 200:
                    break
            time.sleep(0.1)
        self.start_seconds = round(time.monotonic() - started, 2)

    def tail(self):
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-3000:]

    def stop(self):
        try:
            smoke_server.stop(self.process)
        finally:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)  # whatever of its group is left
            except ProcessLookupError:
                pass
            self.log.close()
            smoke_server.remove_leftover_shm(self.shm_before)

    def children(self):
        found = []
        for stat in glob.glob("/proc/[0-9]*/stat"):
            try:
                with open(stat) as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == str(self.process.pid):
                found.append(int(stat.split("/")[2]))
        return sorted(found)

    def get(self, path):
        status, body = _request("GET", self.base_url + path, None)
        assert status == 200, (path, status, body)
        return body

    def generate(self, tokens=8, **sampling):
        sampling_params = dict(max_new_tokens=tokens, temperature=0, **sampling)
        status, body = _request("POST", self.base_url + "/generate",
                                {"text": "Hello world", "sampling_params": sampling_params})
        assert status == 200 and isinstance(body, dict), (status, body)
        return body["text"], body["meta_info"]

    def stream(self, tokens, on_first):
        """A streamed greedy request: [(arrival, meta_info), ...]; on_first() runs when the first chunk is in."""
        body = {"text": "Hello world", "stream": True,
                "sampling_params": {"max_new_tokens": tokens, "temperature": 0, "ignore_eos": True}}
        request = urllib.request.Request(self.base_url + "/generate", data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json",
                                                  "Authorization": "Bearer %s" % API})
        chunks = []
        with urllib.request.urlopen(request, timeout=300) as response:
            for raw in response:
                line = raw.decode("utf-8", "replace").strip()
                if not line.startswith("data:"):
                    continue
                payload = line[len("data:"):].strip()
                if payload == "[DONE]":
                    break
                chunks.append((time.monotonic(), json.loads(payload)["meta_info"]))
                if len(chunks) == 1:
                    on_first()
        return chunks


def _request(method, url, body, key=API, timeout=300):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={
        "Content-Type": "application/json", "Authorization": "Bearer %s" % key})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")


class _Module(object):
    params = {"use_proxy": False, "validate_certs": True}

    def fail_json(self, **kwargs):
        raise AssertionError(kwargs)


def _point(link, target):
    """Point ``link`` at ``target`` in one rename, as a role moves a link that a running server reads."""
    tmp = Path(str(link) + ".new")
    if tmp.is_symlink():
        tmp.unlink()
    os.symlink(target, tmp)
    os.replace(tmp, link)


def _swap(server, model_path, version, **kwargs):
    module = _Module()
    args = dict(api_key=API, admin_key=ADMIN, timeout=300.0, read_timeout=30.0)
    args.update(kwargs)
    with http_client.HardenedClient(module, http_client.build_fetcher(module)) as client:
        return ws.swap_weights(client, server.base_url, model_path, version, **args)


def test_a_revision_swapped_into_the_running_server(revisions, tmp_path):
    timings = {}
    # what the host would check before asking: B fits A tensor by tensor, the broken ones do not
    assert ws.compare_checkpoints(revisions["a"], revisions["b"]) == {"same_shape": True, "problems": [],
                                                                      "tensors": 21}
    assert not ws.compare_checkpoints(revisions["a"], revisions["no_weights"])["same_shape"]
    cut = ws.compare_checkpoints(revisions["a"], revisions["cut"])
    assert not cut["same_shape"] and "(cut or padded)" in cut["problems"][0]

    server = Server(revisions["a"], tmp_path, "swapped")
    try:
        timings["cold_start_a_s"] = server.start_seconds
        pid, children = server.process.pid, server.children()
        assert len(children) >= 2  # scheduler and detokenizer
        answer_a, meta = server.generate()
        assert meta["weight_version"] == "default"
        assert server.get("/v1/models")["data"][0]["id"] == "tiny"

        # 1. no weights in the new directory: refused before anything is read, A still serves
        failed = _swap(server, revisions["no_weights"], "c" * 40)
        assert failed["outcome"] == ws.REJECTED and failed["status"] == 400, failed
        assert "Cannot find any model weights" in failed["message"]
        assert failed["old_weights_serving"] is True
        assert failed["after"] == {"model_path": revisions["a"], "served_model_name": "tiny",
                                   "weight_version": "default", "load_format": "auto"}
        text, meta = server.generate()
        assert text == answer_a and meta["weight_version"] == "default"
        timings["refused_update_s"] = failed["seconds"]["update"]

        # 2. revision B, in place
        swapped = _swap(server, revisions["b"], COMMIT_B)
        assert swapped["outcome"] == ws.SWAPPED and swapped["ok"] and swapped["status"] == 200, swapped
        assert swapped["message"] == "Succeeded to update model weights. Weight version updated to %s." % COMMIT_B
        assert swapped["after"] == {"model_path": revisions["b"], "served_model_name": revisions["b"],
                                    "weight_version": COMMIT_B, "load_format": "auto"}
        # SGLang 0.5.23 serves under the loaded path afterwards: --served-model-name is lost
        assert swapped["served_models"] == [{"id": revisions["b"], "root": revisions["b"]}]
        assert swapped["served_model_name_changed"] is True
        assert server.process.poll() is None and server.process.pid == pid and server.children() == children
        answer_b, meta = server.generate()
        assert answer_b != answer_a and meta["weight_version"] == COMMIT_B
        info = server.get("/server_info")
        assert info["weight_version"] == "default" and info["model_path"] == revisions["a"]  # start-up values
        timings["swap_update_s"] = swapped["seconds"]["update"]
        timings["swap_with_read_back_s"] = swapped["seconds"]["total"]

        # 3. with both keys set, only the admin key opens the route
        refused = _swap(server, revisions["a"], "d" * 40, admin_key=None)
        assert refused["outcome"] == ws.UNAUTHORIZED and refused["status"] == 401
        assert server.generate()[0] == answer_b

        # 4. a long request runs: the update waits for it (a writer lock), then loads; no flush refusal.
        # The swap is sent once the request's first tokens have streamed back, so it is running then on any
        # machine however fast; the context (2048) leaves room for LONG_TOKENS more.
        long_answer = {}
        first_tokens = threading.Event()

        def long_request():
            try:
                long_answer["chunks"] = server.stream(LONG_TOKENS, first_tokens.set)
            finally:
                first_tokens.set()

        thread = threading.Thread(target=long_request)
        thread.start()
        assert first_tokens.wait(120) and "chunks" not in long_answer, "the long request did not start streaming"
        # The module reads /model_info before it sends the update, and that read can wait seconds behind the
        # generating request on a loaded machine: take the send time from the module's own clock (its second
        # reading, the one the update's seconds count from), not from before the call.
        stamps = []

        def recording_clock():
            stamps.append(time.monotonic())
            return stamps[-1]

        back = _swap(server, revisions["a"], "a" * 40, clock=recording_clock)
        returned = time.monotonic()
        sent = stamps[1]
        assert abs(stamps[2] - sent - back["seconds"]["update"]) < 0.01, (stamps, back["seconds"])
        thread.join(300)
        assert back["outcome"] == ws.SWAPPED, back
        chunks = long_answer["chunks"]
        ended, meta = chunks[-1]
        assert meta["finish_reason"]["type"] == "length" and meta["completion_tokens"] == LONG_TOKENS
        # every token of the long request came from B's weights: the update did not cut in
        assert {chunk[1]["weight_version"] for chunk in chunks} == {COMMIT_B}
        # it was still generating when the update was sent, and the update returned only after it had ended
        before_sent = [chunk[1]["completion_tokens"] for chunk in chunks if chunk[0] <= sent]
        tokens_after_sent = LONG_TOKENS - (before_sent[-1] if before_sent else 0)
        assert tokens_after_sent >= LONG_TOKENS // 4, (tokens_after_sent, LONG_TOKENS)
        # both stamps are the client's: on a loaded machine the stream's thread may read its last chunk a little after
        # the main thread read the update's answer, although the server finished the request first
        assert ended <= returned + 0.5, (ended, returned)
        assert back["seconds"]["update"] >= ended - sent - 0.5
        assert server.generate()[0] == answer_a
        timings["swap_behind_long_request_s"] = back["seconds"]["update"]
        timings["long_request_left_when_swap_sent_s"] = round(ended - sent, 2)
        timings["long_request_tokens_after_swap_sent"] = tokens_after_sent

        # 5. a weight file cut in half: SGLang's rollback reads the broken path again and the server dies
        lost = _swap(server, revisions["cut"], "e" * 40, timeout=120.0, read_timeout=5.0)
        assert lost["outcome"] == ws.LOST and lost["status"] == -1, lost
        server.process.wait(timeout=120)
        assert server.process.returncode != 0
        log = server.log_path.read_text(errors="replace")
        # the first read fails, and the "rollback" fails the same way: no "Rolling back" answer, a second traceback
        assert log.count("incomplete metadata, file not fully covered") >= 2
        assert "During handling of the above exception, another exception occurred" in log
    finally:
        server.stop()

    # 6. a fresh server on B through a stable link, without --served-model-name: it serves under the link's path.
    # The link moved to A and the update sent for the link keep that name, so a swap through a link changes no
    # name anything routes by, and a later restart loads what the link names, the revision the swap loaded.
    link = tmp_path / "serving"
    _point(link, revisions["b"])
    fresh = Server(str(link), tmp_path, "fresh", served_name=None)
    try:
        timings["cold_start_b_s"] = fresh.start_seconds
        assert fresh.generate()[0] == answer_b  # the swapped server answered exactly like a fresh one on B
        assert fresh.get("/v1/models")["data"][0]["id"] == str(link)
        _point(link, revisions["a"])
        relinked = _swap(fresh, str(link), "a" * 40)
        assert relinked["outcome"] == ws.SWAPPED, relinked
        assert relinked["after"] == {"model_path": str(link), "served_model_name": str(link),
                                     "weight_version": "a" * 40, "load_format": "auto"}
        assert relinked["served_model_name_changed"] is False
        assert relinked["served_models"] == [{"id": str(link), "root": str(link)}]
        assert fresh.generate()[0] == answer_a
        # asked again for what it serves, the module's check finds it current: nothing would be sent
        assert ws.serves(relinked["after"], str(link), "a" * 40)
    finally:
        fresh.stop()
    timings["swap_vs_cold_start"] = round(timings["swap_update_s"] / timings["cold_start_b_s"], 5)
    print("\nweight swap timings: %s" % json.dumps(timings, sort_keys=True))
    (tmp_path / "timings.json").write_text(json.dumps(timings, indent=1, sort_keys=True))
    assert timings["swap_update_s"] < timings["cold_start_b_s"]
