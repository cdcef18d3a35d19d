# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The llmserve SGLang stand-in HTTP server (NOT SGLang; standard library only, Python 3.9+).

Startup timeline, as SGLang 0.5.23 behaves on a GPU host:

1. "loading" (``LLMSERVE_STANDIN_LOAD_SECONDS``, default 3): nothing listens on the port,
   clients get "connection refused".
2. "warm-up" (``LLMSERVE_STANDIN_WARMUP_SECONDS``, default 2): the port is open;
   ``/health``, ``/health_generate``, ``/ready`` and ``/ping`` answer 503 at once, while
   ``/v1/models``, ``/model_info`` and ``/server_info`` already answer 200.
3. "up": everything answers 200; ``/health`` takes ``LLMSERVE_STANDIN_HEALTH_SECONDS``
   (default 1.0) like SGLang's one-token health generation.

A failing warm-up (``LLMSERVE_STANDIN_FAIL=warmup``, or ``{"standin_fail_warmup": true}`` in
``--json-model-override-args``) logs "Initialization failed. warmup error" and SIGKILLs its own
process, as SGLang does.  ``LLMSERVE_STANDIN_FAIL=load`` dies the same way while loading.
``--skip-server-warmup`` skips phase 2.  ``--api-key`` protects every path except
``/health*``, ``/ready*`` and ``/metrics*`` (401 without ``Authorization: Bearer <key>``).

Generation: the made-up model answers " Paris." (two tokens, then EOS; fewer with a smaller ``max_new_tokens`` /
``max_tokens``); with SGLang's ``ignore_eos`` (in ``sampling_params`` for ``/generate``, top-level on the OpenAI
routes) it decodes the whole ``max_new_tokens`` / ``max_completion_tokens`` / ``max_tokens`` (128 when unset). Each
token takes ``LLMSERVE_STANDIN_TOKEN_SECONDS`` (default 0, or ``standin_token_seconds`` in
``--json-model-override-args``), so a test can keep a request running on the worker; the first token (prefill) takes
``LLMSERVE_STANDIN_FIRST_TOKEN_SECONDS`` (``standin_first_token_seconds``) instead when that is set.
``LLMSERVE_STANDIN_ERROR_EVERY=N`` (``standin_error_every``) answers every Nth completion with a 500 before decoding. The requests being
generated are its load: ``GET /v1/loads`` (SGLang's load snapshot, ``num_running_reqs`` per DP rank; it needs the
API key) and ``sglang:num_running_reqs`` on ``/metrics``. SIGTERM drains them before the server stops, as SGLang
does. ``/metrics`` also counts what the server did as SGLang does (standin_metrics): HTTP answers by endpoint and
status, finished requests and tokens, and the histograms of time to first token, inter-token latency, time per
output token and end-to-end latency, from the stand-in's own clock.

``LLMSERVE_STANDIN_EVENT_LOG=<file>`` appends one JSON line per event (start, listening, ready,
crash, request) with a wall-clock timestamp, for tests and the benchmark.
"""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import socketserver
import sys
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl

from sglang._version import __version__
from sglang.srt.standin_metrics import RequestMetrics

STARTING = "Starting"
UP = "Up"

AUTH_FREE_PREFIXES = ("/health", "/ready", "/metrics")


def _env_float(name, default):
    raw = os.environ.get(name)
    if raw in (None, ""):
        return default
    try:
        return float(raw)
    except ValueError:
        raise SystemExit("%s must be a number of seconds, got %r" % (name, raw))


def _env_bool(name, default):
    raw = os.environ.get(name)
    if raw in (None, ""):
        return default
    return raw.strip().lower() in ("1", "true", "yes", "y", "on")


class Timings(object):
    """Timeline settings: environment first, then ``standin_*`` keys of --json-model-override-args."""

    def __init__(self, server_args):
        overrides = server_args.model_overrides()
        self.load = float(overrides.get("standin_load_seconds", _env_float("LLMSERVE_STANDIN_LOAD_SECONDS", 3.0)))
        self.warmup = float(overrides.get("standin_warmup_seconds", _env_float("LLMSERVE_STANDIN_WARMUP_SECONDS", 2.0)))
        self.health = float(overrides.get("standin_health_seconds", _env_float("LLMSERVE_STANDIN_HEALTH_SECONDS", 1.0)))
        self.token = float(overrides.get("standin_token_seconds", _env_float("LLMSERVE_STANDIN_TOKEN_SECONDS", 0.0)))
        if math.isnan(self.token) or self.token < 0:
            raise SystemExit("LLMSERVE_STANDIN_TOKEN_SECONDS must be 0 or more seconds, got %r" % self.token)
        # unset: the first token costs what the others do, so the total stays tokens * token seconds
        first = overrides.get("standin_first_token_seconds", _env_float("LLMSERVE_STANDIN_FIRST_TOKEN_SECONDS", None))
        self.first_token = self.token if first is None else float(first)
        if math.isnan(self.first_token) or self.first_token < 0:
            raise SystemExit("LLMSERVE_STANDIN_FIRST_TOKEN_SECONDS must be 0 or more seconds, got %r" % first)
        every = overrides.get("standin_error_every", os.environ.get("LLMSERVE_STANDIN_ERROR_EVERY") or 0)
        try:
            self.error_every = int(every)
        except (TypeError, ValueError):
            self.error_every = -1
        if self.error_every < 0:
            raise SystemExit("LLMSERVE_STANDIN_ERROR_EVERY must be a whole number (0: never), got %r" % every)
        fail = os.environ.get("LLMSERVE_STANDIN_FAIL", "").strip().lower()
        if overrides.get("standin_fail_warmup"):
            fail = "warmup"
        if fail not in ("", "none", "warmup", "load"):
            raise SystemExit("LLMSERVE_STANDIN_FAIL must be warmup, load or empty, got %r" % fail)
        self.fail = fail if fail in ("warmup", "load") else None


class Speculation(object):
    """How the made-up model answers and how its speculative decoding fares: environment first, then ``standin_*``
    keys of --json-model-override-args (the same order as ``Timings``).

    ``answer_tokens``: tokens before EOS (``LLMSERVE_STANDIN_ANSWER_TOKENS``, default 2: " Paris."). With
    speculation on, ``accept_length`` (``LLMSERVE_STANDIN_ACCEPT_LENGTH``, default the step count) is what each
    verify forward yields, at most ``num_steps + 1``; ``attention_backend``/``page_size`` are what the server reports
    when the command line names none (``LLMSERVE_STANDIN_ATTENTION_BACKEND``, default triton, and
    ``LLMSERVE_STANDIN_PAGE_SIZE``, default 1), and ``spec_attention_backend`` ("name" or "name:page_size",
    ``LLMSERVE_STANDIN_SPEC_ATTENTION_BACKEND``) replaces them once speculation is on, as SGLang does by itself for
    hybrid Qwen3.5 models on Blackwell.
    """

    def __init__(self, server_args):
        overrides = server_args.model_overrides()
        args = server_args

        def pick(key, env, default):
            return overrides.get(key, os.environ.get(env) or default)

        try:
            self.answer_tokens = int(pick("standin_answer_tokens", "LLMSERVE_STANDIN_ANSWER_TOKENS", EOS_AFTER))
            steps = int(args.speculative_num_steps or 0)
            self.on = bool(args.speculative_algorithm)
            accept = float(pick("standin_accept_length", "LLMSERVE_STANDIN_ACCEPT_LENGTH", max(1, steps)))
            self.page_size = int(pick("standin_page_size", "LLMSERVE_STANDIN_PAGE_SIZE", 1))
        except (TypeError, ValueError) as exc:
            raise SystemExit("stand-in speculation settings: %s" % exc)
        if self.answer_tokens < 1 or accept < 1.0 or math.isnan(accept):
            raise SystemExit("stand-in: the answer needs 1 token or more and the acceptance length 1 or more")
        self.adaptive = bool(getattr(args, "speculative_adaptive", False))
        # a verify yields at most one token per step plus the bonus; adaptive may go up to its largest candidate (7)
        ceiling = 8.0 if self.adaptive else steps + 1.0
        self.accept_length = min(accept, ceiling) if steps else accept
        self.num_steps = steps
        self.draft_tokens = int(args.speculative_num_draft_tokens or (steps + 1))
        self.attention_backend = str(pick("standin_attention_backend", "LLMSERVE_STANDIN_ATTENTION_BACKEND", "triton"))
        switch = str(pick("standin_spec_attention_backend", "LLMSERVE_STANDIN_SPEC_ATTENTION_BACKEND", ""))
        if self.on and switch and args.attention_backend is None:
            name, _sep, page = switch.partition(":")
            self.attention_backend = name
            if page:
                self.page_size = int(page)
        if args.attention_backend is not None:
            self.attention_backend = args.attention_backend
        if args.page_size is not None:
            self.page_size = int(args.page_size)
        self.lock = threading.Lock()
        self.total_tokens = 0
        self.total_forwards = 0

    def active_steps(self):
        """The step count in use: the configured one, or with --speculative-adaptive the candidate step the
        acceptance supports (a crude model of SGLang's EMA: one step beyond the accepted drafts)."""
        if not self.adaptive:
            return self.num_steps
        wanted = int(round(self.accept_length - 1)) + 1
        return max([s for s in (1, 3, 5, 7) if s <= wanted] or [1])

    def verify(self, tokens):
        """``(verify forwards, correct drafts)`` for a request that produced ``tokens`` tokens."""
        if not self.on or tokens <= 0:
            return 0, 0
        forwards = max(1, int(math.ceil(tokens / self.accept_length - 1e-9)))
        with self.lock:
            self.total_tokens += tokens
            self.total_forwards += forwards
        return forwards, max(0, tokens - forwards)

    def cumulative(self):
        with self.lock:
            return round(self.total_tokens / self.total_forwards, 4) if self.total_forwards else None


class EventLog(object):
    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()

    def write(self, event, **fields):
        if not self.path:
            return
        fields.update(t=time.time(), event=event, pid=os.getpid())
        line = json.dumps(fields, sort_keys=True) + "\n"
        with self.lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line.encode())
            finally:
                os.close(fd)


def log(message):
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    sys.stderr.write("[%s] %s\n" % (stamp, message))
    sys.stderr.flush()


def _model_config(path):
    """config.json of a local model directory, or {} (the stand-in needs no weights)."""
    try:
        with open(os.path.join(path, "config.json")) as handle:
            data = json.load(handle)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError, TypeError):
        return {}


class StandinServer(object):
    def __init__(self, server_args):
        self.args = server_args
        self.timings = Timings(server_args)
        self.spec = Speculation(server_args)
        self.status = STARTING
        self.gracefully_exit = False
        self.events = EventLog(os.environ.get("LLMSERVE_STANDIN_EVENT_LOG"))
        self.health_generation = _env_bool("SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION", True)
        self.model_config = _model_config(server_args.model_path or "")
        self.created = int(time.time())
        self.httpd = None
        self.running_lock = threading.Lock()
        self.running = 0  # completions being generated: the load that /v1/loads and /metrics report
        self.completions = 0  # completions asked for, to pick every Nth for LLMSERVE_STANDIN_ERROR_EVERY
        self.request_metrics = RequestMetrics(self.served_name())

    # --- lifecycle -------------------------------------------------------------------------

    def run(self):
        args = self.args
        log("server_args=%s" % _masked_args(args))
        self.events.write("start", load=self.timings.load, warmup=self.timings.warmup, fail=self.timings.fail)
        if not os.path.isdir(args.model_path or ""):
            log("stand-in: model path %r is not a local directory; serving a made-up model card" % args.model_path)
        log("Load weight begin. (stand-in: sleeping %.1f s with the port closed)" % self.timings.load)
        time.sleep(max(0.0, self.timings.load))
        if self.timings.fail == "load":
            log("Scheduler hit an exception: RuntimeError: stand-in load failure (LLMSERVE_STANDIN_FAIL=load)")
            self._die()
        log("Load weight end. KV cache allocated. Capture cuda graph end. (stand-in)")
        try:
            server_class = _Server6 if ":" in str(args.host) else _Server
            self.httpd = server_class((args.host, int(args.port)), _Handler)
        except OSError as exc:
            log("ERROR: cannot listen on %s:%s: %s" % (args.host, args.port, exc))
            sys.exit(1)
        self.httpd.standin = self
        signal.signal(signal.SIGTERM, self._on_sigterm)
        log("Uvicorn running on http://%s:%s (Press CTRL+C to quit)" % (args.host, args.port))
        self.events.write("listening", port=int(args.port))
        threading.Thread(target=self._warmup, name="warmup", daemon=True).start()
        try:
            self.httpd.serve_forever(poll_interval=0.1)
        except KeyboardInterrupt:
            pass
        finally:
            self.httpd.server_close()
        self.events.write("stopped")
        log("Shutdown complete.")

    def _warmup(self):
        if self.args.skip_server_warmup:
            self._set_up()
            return
        log("Start of warmup (stand-in: %.1f s)" % self.timings.warmup)
        time.sleep(max(0.0, self.timings.warmup))
        if self.timings.fail == "warmup":
            log("Initialization failed. warmup error: stand-in warm-up failure requested "
                "(LLMSERVE_STANDIN_FAIL=warmup or standin_fail_warmup)")
            self._die()
        self._set_up()
        log("End of prefill warmup with status 200, resp: [{'text': ' Paris', 'meta_info': {}}]")
        log("The server is fired up and ready to roll!")

    def _set_up(self):
        self.status = UP
        self.events.write("ready")

    def _die(self):
        """SGLang's kill_process_tree(os.getpid()): the process ends by SIGKILL."""
        self.events.write("crash")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    def _on_sigterm(self, signum, frame):
        self.gracefully_exit = True
        log("SIGTERM received. Draining requests and shutting down...")
        threading.Thread(target=self._drain_then_stop, daemon=True).start()

    def _drain_then_stop(self):
        """SGLang's sigterm_watchdog: the server keeps serving until no request is left, then stops."""
        while True:
            remaining = self.running_count()
            if not remaining:
                break
            log("Gracefully exiting... Remaining number of requests %d." % remaining)
            time.sleep(0.1)
        self.httpd.shutdown()

    def running_count(self):
        with self.running_lock:
            return self.running

    def track(self, delta):
        with self.running_lock:
            self.running += delta

    def next_fails(self):
        """True when this completion is one that LLMSERVE_STANDIN_ERROR_EVERY makes fail."""
        with self.running_lock:
            self.completions += 1
            return bool(self.timings.error_every) and self.completions % self.timings.error_every == 0

    # --- answers ---------------------------------------------------------------------------

    def healthy(self):
        return self.status == UP and not self.gracefully_exit

    def served_name(self):
        return self.args.served_model_name or self.args.model_path

    def context_length(self):
        return int(self.args.context_length or self.model_config.get("max_position_embeddings") or 32768)

    def models(self):
        name = self.served_name()
        return {"object": "list", "data": [{
            "id": name, "object": "model", "created": self.created, "owned_by": "sglang", "root": name,
            "parent": None, "max_model_len": self.context_length()}]}

    def model_info(self):
        cfg = self.model_config
        return {
            "model_path": self.args.model_path,
            "tokenizer_path": self.args.tokenizer_path,
            "is_generation": True,
            "preferred_sampling_params": None,
            "weight_version": "default",
            "has_image_understanding": False,
            "has_audio_understanding": False,
            "model_type": cfg.get("model_type", "standin"),
            "architectures": cfg.get("architectures", ["StandinForCausalLM"]),
        }

    def loads(self, query):
        """``(status, body)`` of SGLang's ``GET /v1/loads``: one load snapshot per DP rank (the stand-in has one)."""
        include = query.get("include")
        sections = set(part.strip() for part in include.split(",")) if include else None
        valid = {"core", "memory", "spec", "lora", "disagg", "queues", "all"}
        if sections is not None and not sections <= valid:
            return 400, {"detail": "Invalid include sections: %s. Valid options: %s"
                         % (sorted(sections - valid), sorted(valid))}
        running = self.running_count()
        load = {"timestamp": time.time(), "dp_rank": 0, "num_running_reqs": running, "num_waiting_reqs": 0,
                "num_waiting_uncached_tokens": 0, "num_used_tokens": 8 * running, "num_total_tokens": 8 * running,
                "num_active_tokens": 8 * running, "num_prealloc_ready_tokens": 0,
                "max_total_num_tokens": self.context_length(), "max_running_requests": 48,
                "token_usage": round(8.0 * running / self.context_length(), 6), "gen_throughput": 0.0,
                "cache_hit_rate": 0.0, "utilization": 0.0, "total_prefill_uncached_tokens": 0,
                "total_prefill_busy_us": 0, "decode_moments": None}
        extra = {"memory": {"weight_gb": 0.0, "kv_cache_gb": 0.0, "graph_gb": 0.0,
                            "token_capacity": self.context_length()},
                 "disaggregation": {"mode": "null", "prefill_bootstrap_queue_reqs": 0,
                                    "prefill_inflight_queue_reqs": 0, "decode_prealloc_queue_reqs": 0,
                                    "decode_transfer_queue_reqs": 0, "decode_retracted_queue_reqs": 0,
                                    "kv_transfer_speed_gb_s": 0.0, "kv_transfer_latency_ms": 0.0},
                 "queues": {"waiting": 0, "grammar": 0, "paused": 0, "retracted": 0, "prealloc_ready": 0}}
        names = {"memory": "memory", "disaggregation": "disagg", "queues": "queues"}
        if sections != {"core"}:
            for field, section in extra.items():
                if sections is None or "all" in sections or names[field] in sections:
                    load[field] = section
        loads = [load]
        dp_rank = query.get("dp_rank")
        if dp_rank is not None:
            try:
                loads = [load] if int(dp_rank) == 0 else []
            except ValueError:
                return 422, {"detail": [{"type": "int_parsing", "loc": ["query", "dp_rank"],
                                         "msg": "Input should be a valid integer, unable to parse string as an integer",
                                         "input": dp_rank}]}
        if query.get("format") == "prometheus":
            lines = []
            for key, value in sorted(load.items()):
                if isinstance(value, (int, float)) and not isinstance(value, bool) and key != "dp_rank":
                    lines += ["# TYPE sglang_%s gauge" % key, 'sglang_%s{dp_rank="0"} %s' % (key, value)]
            return 200, "\n".join(lines) + "\n"
        return 200, {"timestamp": datetime.now(timezone.utc).isoformat(), "version": __version__,
                     "accelerator": None, "num_accelerators": 1, "loads": loads}

    def metrics(self):
        """The scheduler gauges of SGLang's Prometheus text that tell its load."""
        labels = 'engine_type="unified",model_name="%s",moe_ep_rank="0",pp_rank="0",tp_rank="0"' % self.served_name()
        lines = ["# HELP sglang:num_running_reqs The number of running requests.",
                 "# TYPE sglang:num_running_reqs gauge",
                 "sglang:num_running_reqs{%s} %.1f" % (labels, self.running_count()),
                 "# HELP sglang:num_queue_reqs The number of requests in the waiting queue.",
                 "# TYPE sglang:num_queue_reqs gauge",
                 "sglang:num_queue_reqs{%s} 0.0" % labels]
        # SGLang sets these at its decode log interval, 0.0 without speculation; the stand-in reports its running
        # figures
        accept = (self.spec.cumulative() or 0.0) if self.spec.on else 0.0
        rate = (accept - 1.0) / max(1, self.spec.draft_tokens - 1) if accept else 0.0
        gauges = [("spec_accept_length", "Mean acceptance length of speculative decoding.", accept),
                  ("spec_accept_rate", "Speculative acceptance rate.", rate)]
        if self.spec.on:
            gauges.append(("spec_num_steps", "Currently active speculative_num_steps.", self.spec.active_steps()))
        for name, text, value in gauges:
            lines += ["# HELP sglang:%s %s" % (name, text), "# TYPE sglang:%s gauge" % name,
                      "sglang:%s{%s} %s" % (name, labels, float(value))]
        return "\n".join(lines + self.request_metrics.lines()) + "\n"

    def server_info(self):
        info = self.args.resolved_dict()
        info["launch_command"] = self.args.launch_command
        info["version"] = __version__
        info["status"] = self.status
        # what resolution chose where the command line named nothing (SGLang always reports a concrete backend)
        info["attention_backend"] = self.spec.attention_backend
        info["page_size"] = self.spec.page_size
        state = {
            "last_gen_throughput": 0.0,
            "memory_usage": {"weight": 0.0, "kvcache": 0.0, "token_capacity": self.context_length()},
            "attention_backend": self.spec.attention_backend,
            "page_size": self.spec.page_size,
            "speculative_num_steps": self.spec.active_steps() if self.spec.on else self.args.speculative_num_steps,
        }
        # SGLang leaves the key out until the first decode stats were logged
        if self.spec.cumulative() is not None:
            state["avg_spec_accept_length"] = self.spec.cumulative()
        info["internal_states"] = [state]
        return info


def _masked_args(args):
    """Arguments that differ from SGLang's defaults, secrets masked."""
    from sglang.srt.server_args import DEFAULTS  # pylint: disable=import-outside-toplevel

    shown = {}
    for key, value in sorted(args.resolved_dict().items()):
        if key != "model_path" and value == DEFAULTS.get(key):
            continue
        shown[key] = "***" if key in ("api_key", "admin_api_key") and value else value
    return "ServerArgs(%s)" % ", ".join("%s=%r" % kv for kv in shown.items())


_WORDS = (" Paris", ".")
EOS_AFTER = 2  # the made-up model ends its answer (" Paris.") with EOS after two tokens
IGNORE_EOS_DEFAULT = 128  # SGLang's default max_new_tokens
MAX_TOKENS = 100000


def _prompt_tokens(text):
    """A made-up token count of a prompt: its words, plus one for the BOS token."""
    return len(text.split()) + 1 if isinstance(text, str) else 6


def _requested_tokens(path, request, eos_after=EOS_AFTER):
    """``(tokens, problem)``: how many tokens the stand-in decodes for the request, with SGLang's field names per
    route: at most ``eos_after`` (then EOS), or the whole ``max_new_tokens``/``max_tokens`` with ``ignore_eos``."""
    if path == "/generate":
        params = request.get("sampling_params") or {}
        if not isinstance(params, dict):
            return 0, "sampling_params must be an object"
        names = ("max_new_tokens",)
    else:
        params = request
        names = ("max_completion_tokens", "max_tokens")
    limit = None
    for name in names:
        value = params.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
            return 0, "%s must be an integer from 0 to %d, got %r" % (name, MAX_TOKENS, value)
        limit = value
        break
    if params.get("ignore_eos") is True:
        return (IGNORE_EOS_DEFAULT if limit is None else limit), None
    return (eos_after if limit is None else min(limit, eos_after)), None


def _endpoint(target):
    """The ``endpoint`` label SGLang's middleware gives a request: the route's path, else the path as sent."""
    path = str(target).split("?", 1)[0]
    return "/v1/models/{model:path}" if path.startswith("/v1/models/") else path


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def server_bind(self):
        # skip HTTPServer's reverse DNS lookup of the bind address (slow without a resolver)
        socketserver.TCPServer.server_bind(self)
        self.server_name = self.server_address[0]
        self.server_port = self.server_address[1]


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "uvicorn"
    sys_version = ""

    GET_ROUTES = ("/health", "/health_generate", "/ready", "/ping", "/v1/models", "/model_info", "/get_model_info",
                  "/server_info", "/get_server_info", "/metrics", "/v1/loads")
    POST_ROUTES = ("/generate", "/v1/chat/completions", "/v1/completions")

    def log_message(self, fmt, *args):  # uvicorn-like access log on stderr
        log('INFO:     %s - "%s %s" %s' % (self.client_address[0], self.command, self.path, args[1] if len(args) > 1 else ""))

    @property
    def standin(self):
        return self.server.standin

    def _read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _send(self, status, payload=None, content_type="application/json"):
        if payload is None:
            body = b""
        elif isinstance(payload, (bytes, str)):
            body = payload.encode() if isinstance(payload, str) else payload
        else:
            body = json.dumps(payload).encode()
        self.send_response(status)
        if body or payload is not None:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)
        self.standin.events.write("request", method=self.command, path=self.path, status=status)
        # after the answer, like SGLang's middleware: a /metrics scrape shows up in the next one
        self.standin.request_metrics.answered(_endpoint(self.path), self.command, status)

    def _authorised(self, path):
        key = self.standin.args.api_key
        if not key or path.startswith(AUTH_FREE_PREFIXES):
            return True
        return self.headers.get("Authorization", "") == "Bearer %s" % key

    def _route(self, method):
        path = self.path.split("?", 1)[0]
        body = self._read_body() if method == "POST" else b""
        if not self._authorised(path):
            return self._send(401, {"error": "Unauthorized"})
        s = self.standin
        if method == "GET":
            if path in ("/health", "/health_generate"):
                return self._health(path)
            if path in ("/ready", "/ping"):
                return self._send(200 if s.healthy() else 503, None)
            if path == "/v1/models":
                return self._send(200, s.models())
            if path.startswith("/v1/models/"):
                name = path[len("/v1/models/"):]
                if name == s.served_name():
                    return self._send(200, s.models()["data"][0])
                return self._send(404, {"detail": "The model '%s' does not exist" % name})
            if path in ("/model_info", "/get_model_info"):
                return self._send(200, s.model_info())
            if path in ("/server_info", "/get_server_info"):
                return self._send(200, s.server_info())
            if path == "/metrics" and s.args.enable_metrics:
                return self._send(200, s.metrics(), "text/plain; version=0.0.4; charset=utf-8")
            if path == "/v1/loads":
                status, payload = s.loads(dict(parse_qsl(self.path.partition("?")[2])))
                if isinstance(payload, str):
                    return self._send(status, payload, "text/plain; version=0.0.4; charset=utf-8")
                return self._send(status, payload)
        if method == "POST" and path in self.POST_ROUTES:
            return self._completion(path, body)
        if path in self.GET_ROUTES + self.POST_ROUTES and not (path == "/metrics" and not s.args.enable_metrics):
            return self._send(405, {"detail": "Method Not Allowed"})
        return self._send(404, {"detail": "Not Found"})

    def _health(self, path):
        s = self.standin
        if s.gracefully_exit or s.status == STARTING:
            return self._send(503, None)
        if path == "/health" and not s.health_generation:
            return self._send(200, None)
        time.sleep(max(0.0, s.timings.health))  # SGLang waits for a one-token generation (>= 1 s)
        return self._send(200 if s.healthy() else 503, None)

    def _completion(self, path, body):
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            return self._send(400, {"error": {"message": "request body is not JSON"}})
        if not isinstance(request, dict):
            return self._send(400, {"error": {"message": "request body must be a JSON object"}})
        tokens, problem = _requested_tokens(path, request, self.standin.spec.answer_tokens)
        if problem:
            return self._send(400, {"error": {"message": problem}})
        s = self.standin
        if s.next_fails():
            return self._send(500, {"error": {"message": "stand-in: injected failure (LLMSERVE_STANDIN_ERROR_EVERY)"}})
        began = time.monotonic()
        first_token_at = None
        s.track(+1)
        try:
            if tokens:
                time.sleep(s.timings.first_token)  # prefill and the first token
                first_token_at = time.monotonic()
                time.sleep((tokens - 1) * s.timings.token)  # decoding the rest
        finally:
            s.track(-1)
        ended = time.monotonic()
        prompt = _prompt_tokens(request.get("text")) if path == "/generate" else 6
        s.request_metrics.finished(request.get("stream") is True, prompt, tokens,
                                   None if first_token_at is None else first_token_at - began, ended - began)
        text = "".join(_WORDS[i % len(_WORDS)] for i in range(tokens))
        if path == "/generate":
            meta = {"id": "standin-%d" % int(time.time() * 1000), "finish_reason": {"type": "length", "length": tokens},
                    "prompt_tokens": prompt, "completion_tokens": tokens,
                    "cached_tokens": 0, "e2e_latency": round(ended - began, 6)}
            forwards, correct = s.spec.verify(tokens)
            if forwards:
                # SGLang 0.5.23's _calculate_spec_decoding_metrics (tokenizer_manager.py)
                proposed = forwards * (s.spec.draft_tokens - 1)
                meta.update(spec_verify_ct=forwards, spec_accept_length=tokens / forwards,
                            spec_num_correct_drafts=correct, spec_num_proposed_drafts=proposed,
                            spec_accept_rate=(correct / proposed) if proposed else 0.0)
            return self._send(200, {"text": text, "meta_info": meta})
        usage = {"prompt_tokens": 6, "completion_tokens": tokens, "total_tokens": 6 + tokens}
        if path == "/v1/completions":
            return self._send(200, {"id": "cmpl-standin", "object": "text_completion", "created": int(time.time()),
                                    "model": s.served_name(), "usage": usage,
                                    "choices": [{"index": 0, "text": text, "finish_reason": "length"}]})
        return self._send(200, {"id": "chatcmpl-standin", "object": "chat.completion", "created": int(time.time()),
                                "model": s.served_name(), "usage": usage,
                                "choices": [{"index": 0, "finish_reason": "length",
                                             "message": {"role": "assistant", "content": text}}]})

    def do_GET(self):
        self._route("GET")

    def do_POST(self):
        self._route("POST")

    def do_HEAD(self):
        self._route("HEAD")

    def do_PUT(self):
        self._route("PUT")

    def do_DELETE(self):
        self._route("DELETE")


def launch(argv, prog_warning=None):
    """Parse, resolve and run; exits like SGLang (2 for argparse errors, 1 for resolution errors)."""
    from sglang.srt.server_args import prepare_server_args  # pylint: disable=import-outside-toplevel

    if prog_warning:
        sys.stderr.write(prog_warning + "\n")
    server_args = prepare_server_args(argv)
    try:
        server_args.resolve_once()
        server_args.model_overrides()
    except (ValueError, AssertionError) as exc:
        log("Traceback (most recent call last): [stand-in] %s: %s" % (type(exc).__name__, exc))
        sys.exit(1)
    StandinServer(server_args).run()
