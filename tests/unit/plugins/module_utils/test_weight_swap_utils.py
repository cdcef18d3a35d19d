# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for module_utils/weight_swap.py.

The swap runs through the collection's real HTTP client (http_client.HardenedClient over build_fetcher) against a
loopback stand-in that answers like SGLang 0.5.23 (its auth levels, its 200/400 answers, the read-back of
/model_info and /v1/models, the served name that becomes the loaded path), and that can also lie: 200 with success
false, success without moving the weight version, a trickled body, a redirect, no route, a dropped connection.
The checkpoint comparison reads safetensors files written here by hand.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.llmserve.sglang.plugins.module_utils import http_client
from ansible_collections.llmserve.sglang.plugins.module_utils import weight_swap as ws
from ansible_collections.llmserve.sglang.tests.unit.plugins.module_utils.source_imports import top_level_imports

API = "sk-api-0123456789abcdef"
ADMIN = "sk-admin-fedcba9876543210"
OLD = "/opt/models/tiny/rev-a"
NEW = "/opt/models/tiny/rev-b"


def test_imports_only_the_standard_library():
    assert top_level_imports(ws.__file__, (3, 9)) <= {"__future__", "json", "os", "re", "struct", "time",
                                                      "ansible_collections"}


# --- the stand-in -----------------------------------------------------------------------------------------------

class StandIn(object):
    """What the handler reads: SGLang's state and the misbehaviour asked for."""

    def __init__(self, api_key=API, admin_key=ADMIN):
        self.api_key = api_key
        self.admin_key = admin_key
        self.model_path = OLD
        self.served_model_name = "tiny"
        self.weight_version = "default"
        self.mode = "sglang"
        self.delay = 0.0
        self.seen = []
        self.base_url = None

    def allowed(self, path, authorization):
        def bearer(key):
            return authorization == "Bearer %s" % key
        if path == "/update_weights_from_disk":  # admin-optional (sglang/srt/utils/auth.py)
            if self.admin_key:
                return bearer(self.admin_key)
            return bearer(self.api_key) if self.api_key else True
        return bearer(self.api_key) if self.api_key else True

    def update(self, body):
        """SGLang's answer to a well-formed update: ``(status, json)``; moves the state on success."""
        path = body.get("model_path", "")
        if "missing" in path:
            return 400, {"success": False, "num_paused_requests": 0,
                         "message": "Failed to get weights iterator: Cannot find any model weights with `%s`." % path}
        self.model_path = path
        self.served_model_name = path  # what 0.5.23 does, whatever --served-model-name said
        message = "Succeeded to update model weights."
        if body.get("weight_version") is not None:
            self.weight_version = body["weight_version"]
            message += " Weight version updated to %s." % body["weight_version"]
        return 200, {"success": True, "message": message, "num_paused_requests": 0}


def _handler(state):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _send(self, status, payload, headers=()):
            raw = json.dumps(payload).encode() if not isinstance(payload, bytes) else payload
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(raw)

        def _route(self, method):
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            state.seen.append((method, self.path, self.headers.get("Authorization"), body))
            if not state.allowed(self.path, self.headers.get("Authorization")):
                return self._send(401, {"error": "Unauthorized"})
            if method == "GET" and self.path == "/model_info":
                return self._send(200, {"model_path": state.model_path, "served_model_name": state.served_model_name,
                                        "weight_version": state.weight_version, "load_format": "auto",
                                        "is_generation": True})
            if method == "GET" and self.path == "/v1/models":
                return self._send(200, {"object": "list", "data": [
                    {"id": state.served_model_name, "root": state.served_model_name, "object": "model"}]})
            if self.path != "/update_weights_from_disk":
                return self._send(404, {"detail": "Not Found"})
            return self._update(body)

        def _update(self, body):
            mode = state.mode
            if state.delay:
                time.sleep(state.delay)
            if mode == "no_route":
                return self._send(404, {"detail": "Not Found"})
            if mode == "get_only":
                return self._send(405, {"detail": "Method Not Allowed"})
            if mode == "redirect":
                return self._send(307, b"", [("Location", state.base_url.replace("127.0.0.1", "localhost") +
                                              "/elsewhere")])
            if mode == "server_error":
                return self._send(500, b"Internal Server Error")
            if mode == "html":
                return self._send(200, b"<html>proxy login</html>")
            if mode == "drop":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return None
            if mode == "trickle":
                raw = json.dumps({"success": True, "message": "x" * 400, "num_paused_requests": 0}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                for byte in raw:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(0.05)
                return None
            if mode == "lie_success_false":
                return self._send(200, {"success": False, "message": "nothing loaded", "num_paused_requests": 0})
            if mode == "lie_version":  # says yes, moves nothing
                return self._send(200, {"success": True, "message": "Succeeded to update model weights.",
                                        "num_paused_requests": 0})
            if mode == "echo_key":
                return self._send(400, {"success": False, "num_paused_requests": 0,
                                        "message": "bad key %s\x1b[31m" % self.headers.get("Authorization")})
            status, payload = state.update(body)
            return self._send(status, payload)

        def do_GET(self):
            self._route("GET")

        def do_POST(self):
            self._route("POST")

    return Handler


@contextlib.contextmanager
def running_stand_in(**kwargs):
    """A stand-in on a free loopback port, for as long as the with-block lasts; yields its StandIn."""
    state = StandIn(**kwargs)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    state.base_url = "http://127.0.0.1:%d" % httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def server():
    with running_stand_in() as state:
        yield state


class _Module(object):
    """What build_fetcher and HardenedClient read of an AnsibleModule."""

    def __init__(self):
        self.params = {"use_proxy": True, "validate_certs": True}

    def fail_json(self, **kwargs):
        raise AssertionError(kwargs)


@pytest.fixture
def client():
    module = _Module()
    with http_client.HardenedClient(module, http_client.build_fetcher(module)) as hardened:
        yield hardened


def _swap(client, state, **kwargs):
    args = dict(api_key=API, admin_key=ADMIN, timeout=5.0, read_timeout=2.0)
    args.update(kwargs)
    return ws.swap_weights(client, state.base_url, args.pop("model_path", NEW), args.pop("weight_version", "c0ffee"),
                           **args)


# --- swaps --------------------------------------------------------------------------------------------------------

def test_a_swap_is_verified_by_the_read_back(server, client):
    result = _swap(client, server)
    assert result["outcome"] == ws.SWAPPED and result["ok"] is True and result["status"] == 200
    assert result["before"] == {"model_path": OLD, "served_model_name": "tiny", "weight_version": "default",
                                "load_format": "auto"}
    assert result["after"] == {"model_path": NEW, "served_model_name": NEW, "weight_version": "c0ffee",
                               "load_format": "auto"}
    assert result["served_models"] == [{"id": NEW, "root": NEW}]
    assert result["served_model_name_changed"] is True and result["problems"] == []
    assert result["message"] == "Succeeded to update model weights. Weight version updated to c0ffee."
    assert result["num_paused_requests"] == 0 and result["old_weights_serving"] is None
    assert set(result["seconds"]) == {"update", "verify", "total"}
    assert result["msg"].startswith("%s loaded %s as weight_version c0ffee in " % (server.base_url, NEW))
    # the update went with the admin key and the body SGLang reads; the read-backs with the API key
    posts = [seen for seen in server.seen if seen[0] == "POST"]
    assert posts == [("POST", "/update_weights_from_disk", "Bearer " + ADMIN,
                      {"model_path": NEW, "weight_version": "c0ffee", "flush_cache": True,
                       "abort_all_requests": False})]
    assert {seen[2] for seen in server.seen if seen[0] == "GET"} == {"Bearer " + API}


def test_without_an_admin_key_the_api_key_opens_the_route(server, client):
    server.admin_key = None
    result = _swap(client, server, admin_key=None, load_format="auto", abort_all_requests=True)
    assert result["outcome"] == ws.SWAPPED
    post = [seen for seen in server.seen if seen[0] == "POST"][0]
    assert post[2] == "Bearer " + API and post[3]["load_format"] == "auto" and post[3]["abort_all_requests"] is True


def test_a_server_without_keys_gets_no_authorization(server, client):
    server.admin_key = server.api_key = None
    assert _swap(client, server, api_key=None, admin_key=None)["outcome"] == ws.SWAPPED
    assert {seen[2] for seen in server.seen} == {None}


@pytest.mark.parametrize("api_key,admin_key", [(API, None), (None, None), (API, "sk-wrong-admin")])
def test_a_refused_key_is_unauthorized(server, client, api_key, admin_key):
    result = _swap(client, server, api_key=api_key, admin_key=admin_key)
    assert result["outcome"] == ws.UNAUTHORIZED and result["status"] == 401 and not result["ok"]
    assert "the key was refused" in result["msg"] and server.model_path == OLD
    assert ADMIN not in json.dumps(result) and API not in json.dumps(result)


def test_a_load_failure_leaves_the_old_revision(server, client):
    result = _swap(client, server, model_path="/opt/models/tiny/missing")
    assert result["outcome"] == ws.REJECTED and result["status"] == 400 and result["old_weights_serving"] is True
    assert result["message"].startswith("Failed to get weights iterator: Cannot find any model weights")
    assert result["after"]["weight_version"] == "default" and result["after"]["model_path"] == OLD
    assert "refused the update" in result["msg"] and "still reports the revision it had before" in result["msg"]


def test_expected_served_name_fails_the_verification(server, client):
    # SGLang 0.5.23 serves the model under the loaded path afterwards; a caller that needs the old name learns it
    result = _swap(client, server, expect_served_model_name="tiny")
    assert result["outcome"] == ws.UNVERIFIED and not result["ok"]
    assert result["problems"] == ["the server now serves the model as '%s', not 'tiny'" % NEW]


@pytest.mark.parametrize("mode,outcome,words", [
    ("no_route", ws.UNSUPPORTED, "404 (Not Found)"),
    ("get_only", ws.UNSUPPORTED, "405 (Method Not Allowed)"),
    ("server_error", ws.BAD_ANSWER, "500 (Internal Server Error)"),
    ("html", ws.BAD_ANSWER, "not an answer of SGLang's update route"),
    ("lie_success_false", ws.REJECTED, "refused the update"),
    ("redirect", ws.BAD_ANSWER, "redirect to http://localhost:"),
])
def test_answers_that_are_no_swap(server, client, mode, outcome, words):
    server.mode = mode
    result = _swap(client, server)
    assert result["outcome"] == outcome and not result["ok"], result
    assert words in result["msg"]
    assert result["after"]["model_path"] == OLD and result["server_answering"] is True


def test_a_redirect_is_not_followed_with_the_key(server, client):
    server.mode = "redirect"
    result = _swap(client, server)
    assert result["status"] == 307
    assert [seen[1] for seen in server.seen if seen[1] == "/elsewhere"] == []


def test_success_without_the_new_version_is_unverified(server, client):
    server.mode = "lie_version"
    result = _swap(client, server)
    assert result["outcome"] == ws.UNVERIFIED and result["status"] == 200
    assert result["problems"] == ["/model_info reports weight_version 'default', not 'c0ffee'",
                                  "/model_info reports model_path '%s', not '%s'" % (OLD, NEW)]
    assert "the read-back disagrees" in result["msg"]


def test_a_trickled_answer_is_a_timeout(server, client):
    server.mode = "trickle"  # about 25 s for the whole body; the request has 1 s
    started = time.monotonic()
    result = _swap(client, server, timeout=1.0)
    assert time.monotonic() - started < 6
    assert result["outcome"] == ws.TIMEOUT and result["status"] == 200
    assert "may still be running" in result["msg"]


def test_a_slow_server_is_a_timeout(server, client):
    server.delay = 1.5
    result = _swap(client, server, timeout=0.5)
    assert result["outcome"] == ws.TIMEOUT and result["status"] == -1
    assert result["seconds"]["update"] < 1.4


def test_a_dropped_connection_is_lost(server, client):
    server.mode = "drop"
    result = _swap(client, server)
    assert result["outcome"] == ws.LOST and result["status"] == -1
    assert result["server_answering"] is True and "it still answers" in result["msg"]


def test_a_dead_server_is_lost_and_not_answering(client):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = ws.swap_weights(client, "http://127.0.0.1:%d" % port, NEW, "c0ffee", timeout=2.0, read_timeout=1.0)
    assert result["outcome"] == ws.LOST and result["server_answering"] is False and result["before"] is None
    assert "may have died" in result["msg"]
    assert result["problems"][0].startswith("before the update: GET /model_info answered no answer")


def test_server_text_is_cleaned_and_keys_masked(server, client):
    server.mode = "echo_key"
    result = _swap(client, server)
    assert result["outcome"] == ws.REJECTED
    assert ADMIN not in result["message"] and "Bearer ********" in result["message"] and "\x1b" not in result["message"]
    assert ADMIN not in result["msg"] and "\x1b" not in result["msg"]


def test_a_swap_to_the_same_revision_again_is_verified(server, client):
    assert _swap(client, server)["outcome"] == ws.SWAPPED
    again = _swap(client, server)
    assert again["outcome"] == ws.SWAPPED and again["served_model_name_changed"] is False


# --- arguments ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,words", [
    (dict(model_path="relative/path"), "model_path must be an absolute path"),
    (dict(model_path="/a\x00b"), "model_path must be an absolute path"),
    (dict(weight_version=""), "weight_version must be 1 to 256"),
    (dict(weight_version=" x"), "weight_version must be 1 to 256"),
    (dict(weight_version="a\nb"), "weight_version must be 1 to 256"),
    (dict(weight_version="x" * 257), "weight_version must be 1 to 256"),
    (dict(weight_version=5), "weight_version must be 1 to 256"),
    (dict(load_format="auto;rm"), "load_format must be"),
    (dict(admin_key="two words"), "admin_key must be printable ASCII"),
    (dict(api_key="k\u00e9y"), "api_key must be printable ASCII"),
    (dict(base_url="http://user:pw@127.0.0.1:1"), "must not carry credentials"),
    (dict(base_url="http://127.0.0.1:1/v1"), "without a path"),
    (dict(base_url="ftp://127.0.0.1"), "http:// or https://"),
])
def test_arguments_that_cannot_make_a_request(client, kwargs, words):
    positional = ("base_url", "model_path", "weight_version")
    base_url, model_path, weight_version = (kwargs.get(name, default) for name, default in zip(
        positional, ("http://127.0.0.1:9", NEW, "c0ffee")))
    options = dict((name, value) for name, value in kwargs.items() if name not in positional)
    with pytest.raises(ws.SwapInputError) as info:
        ws.swap_weights(client, base_url, model_path, weight_version, **options)
    assert words in str(info.value)
    assert "two words" not in str(info.value)


def test_keys_come_from_a_value_a_file_or_the_environment(tmp_path):
    key_file = tmp_path / "admin.key"
    key_file.write_text("\n  %s  \nsecond line\n" % ADMIN)
    assert ws.read_key(ADMIN) == ADMIN
    assert ws.read_key(path=str(key_file)) == ADMIN
    assert ws.read_key(env="SGL_ADMIN", environ={"SGL_ADMIN": API}) == API
    assert ws.read_key(path=str(key_file), env="SGL_ADMIN", environ={"SGL_ADMIN": API}) == ADMIN
    assert ws.read_key(env="SGL_ADMIN", environ={}) is None and ws.read_key() is None
    empty = tmp_path / "empty.key"
    empty.write_text("\n \n")
    with pytest.raises(ws.SwapInputError, match="is empty"):
        ws.read_key(path=str(empty), name="admin key")
    with pytest.raises(ws.SwapInputError, match="cannot read the admin key file .*nope"):
        ws.read_key(path=str(tmp_path / "nope"), name="admin key")
    with pytest.raises(ws.SwapInputError) as info:
        ws.read_key(env="K", environ={"K": "secret with space"}, name="admin key")
    assert "environment variable K" in str(info.value) and "secret" not in str(info.value)


# --- checkpoints --------------------------------------------------------------------------------------------------

def _write_safetensors(path, tensors, cut=0, pad=0):
    """``tensors``: ``{name: (dtype, shape)}``, filled with zero bytes."""
    sizes = {"BF16": 2, "F32": 4, "I8": 1}
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, (dtype, shape) in sorted(tensors.items()):
        count = 1
        for dim in shape:
            count *= dim
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + count * sizes[dtype]]}
        offset += count * sizes[dtype]
    raw = json.dumps(header).encode()
    data = struct.pack("<Q", len(raw)) + raw + b"\0" * (offset + pad)
    with open(path, "wb") as handle:
        handle.write(data[:len(data) - cut] if cut else data)


TENSORS = {"model.embed_tokens.weight": ("BF16", (512, 64)), "model.layers.0.mlp.down_proj.weight": ("BF16", (64, 128)),
           "lm_head.weight": ("BF16", (512, 64))}
CONFIG = {"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "_name_or_path": "/x", "transformers_version": "5"}


def make_model(root, name, tensors=None, config=None, **kwargs):
    path = root / name
    path.mkdir()
    (path / "config.json").write_text(json.dumps(CONFIG if config is None else config))
    _write_safetensors(str(path / "model.safetensors"), TENSORS if tensors is None else tensors, **kwargs)
    return str(path)


def test_two_revisions_of_one_model_compare_equal(tmp_path):
    other_config = dict(CONFIG, _name_or_path="/y", transformers_version="6")  # ignored keys
    result = ws.compare_checkpoints(make_model(tmp_path, "a"), make_model(tmp_path, "b", config=other_config))
    assert result == {"same_shape": True, "problems": [], "tensors": 3}


def test_sharded_checkpoints_are_read_through_their_index(tmp_path):
    path = tmp_path / "sharded"
    path.mkdir()
    (path / "config.json").write_text(json.dumps(CONFIG))
    names = sorted(TENSORS)
    _write_safetensors(str(path / "model-00001-of-00002.safetensors"), {n: TENSORS[n] for n in names[:1]})
    _write_safetensors(str(path / "model-00002-of-00002.safetensors"), {n: TENSORS[n] for n in names[1:]})
    (path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {
        names[0]: "model-00001-of-00002.safetensors", names[1]: "model-00002-of-00002.safetensors",
        names[2]: "model-00002-of-00002.safetensors"}}))
    assert ws.compare_checkpoints(make_model(tmp_path, "a"), str(path))["same_shape"] is True


@pytest.mark.parametrize("variant,words", [
    (dict(cut=100), "the tensors need 147456 bytes after the header; the file has 147356 (cut or padded)"),
    (dict(pad=3), "(cut or padded)"),
    (dict(tensors=dict(TENSORS, **{"model.embed_tokens.weight": ("BF16", (512, 128))})),
     "1 tensors of another dtype or shape: model.embed_tokens.weight BF16 [512, 64] -> BF16 [512, 128]"),
    (dict(tensors=dict(TENSORS, **{"model.layers.0.mlp.down_proj.weight": ("BF16", (64, 136))})),
     "down_proj.weight BF16 [64, 128] -> BF16 [64, 136]"),
    (dict(tensors=dict(TENSORS, **{"lm_head.weight": ("F32", (512, 64))})), "lm_head.weight BF16 [512, 64] -> F32"),
    (dict(tensors={k: v for k, v in TENSORS.items() if k != "lm_head.weight"}),
     "1 tensors missing from the candidate: lm_head.weight"),
    (dict(tensors=dict(TENSORS, extra=("I8", (3,)))), "1 tensors only in the candidate: extra"),
    (dict(config=dict(CONFIG, hidden_size=128)), "config.json differs in hidden_size"),
])
def test_candidates_that_would_not_swap(tmp_path, variant, words):
    result = ws.compare_checkpoints(make_model(tmp_path, "a"), make_model(tmp_path, "b", **variant))
    assert result["same_shape"] is False
    assert any(words in problem for problem in result["problems"]), result["problems"]


def test_unreadable_candidates(tmp_path):
    good = make_model(tmp_path, "a")
    empty = tmp_path / "empty"
    empty.mkdir()
    result = ws.compare_checkpoints(good, str(empty))
    # the error text is cut at 120 characters, so how much of it shows depends on the length of tmp_path
    error = ws.clean_text("[Errno 2] No such file or directory: '%s/config.json'" % empty, 120)
    assert result["problems"] == ["candidate: %s/config.json cannot be read: %s" % (empty, error),
                                  "candidate: %s holds no *.safetensors file" % empty]
    garbage = make_model(tmp_path, "g")
    with open(os.path.join(garbage, "model.safetensors"), "wb") as handle:
        handle.write(struct.pack("<Q", 4) + b"nope")
    assert "the header is not JSON" in ws.compare_checkpoints(good, garbage)["problems"][0]
    huge = make_model(tmp_path, "h")
    with open(os.path.join(huge, "model.safetensors"), "wb") as handle:
        handle.write(struct.pack("<Q", 1 << 40) + b"{}")
    assert "its header claims" in ws.compare_checkpoints(good, huge)["problems"][0]
    short = make_model(tmp_path, "s")
    with open(os.path.join(short, "model.safetensors"), "wb") as handle:
        handle.write(b"abc")
    assert "shorter than a safetensors header" in ws.compare_checkpoints(good, short)["problems"][0]
    lying = make_model(tmp_path, "l")
    with open(os.path.join(lying, "model.safetensors"), "wb") as handle:
        raw = json.dumps({"w": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 2]}}).encode()
        handle.write(struct.pack("<Q", len(raw)) + raw + b"\0\0")
    assert "tensor w has 2 bytes for BF16 [4]" in ws.compare_checkpoints(good, lying)["problems"][0]


def test_a_refused_read_back_still_counts_as_an_answer(server, client):
    result = _swap(client, server, api_key="sk-not-the-api-key")
    # the admin key opens the update; the read-backs get 401 but the server is there
    assert result["outcome"] == ws.UNVERIFIED and result["server_answering"] is True
    assert result["before"] is None and result["after"] is None
    assert result["problems"][0] == "before the update: GET /model_info answered 401 (Unauthorized): " \
                                    "{\"error\": \"Unauthorized\"}"
