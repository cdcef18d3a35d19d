# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""An HTTP proxy in front of a mirror that misbehaves on purpose, for the failures a real mirror cannot play.

    python3 tools/model/hostile_proxy.py --upstream http://127.0.0.1:PORT [--host H] [--port P]
        [--rules FILE] [--log FILE] [--rule MODE:GLOB[:N]] ...

Every request goes to the upstream unchanged (method, path, body, all headers including ``Range`` and
``Authorization``); status and headers come back unchanged (``ETag``, ``X-Repo-Commit``, ``Content-Length`` but
for ``pad``, ``Location`` of a redirect, which is not followed). Only the body of a GET whose path matches a rule is
changed:

  pass              forward as is
  flip:GLOB[:OFF]   invert the byte at body offset OFF (default 0), same length
  truncate:GLOB:N   send N body bytes, then close the connection
  stall:GLOB:N      send N body bytes, then send nothing more until the proxy stops (the client must time out)
  slow:GLOB:RATE    forward at about RATE bytes per second
  pad:GLOB:N        send the body, then N zero bytes more (the Content-Length, if any, raised to match): a mirror
                    that streams more than it lists

GLOB is an fnmatch pattern against the request path (``*/resolve/*/model.safetensors``). The first matching rule
wins. Rules come from ``--rule`` or from ``--rules FILE`` (JSON: ``[{"mode": .., "path": .., "n": .., "times":
..}]``), which is read again on every request so a test can change behaviour without a restart; ``times`` limits
a rule to its first N matching requests (``truncate`` once, then pass).

``--log FILE`` gets one JSON line per request: method, path, the ``Range`` header, the mode applied, status, body
bytes sent (and ``hung_up`` when the client closed the connection while ``pad`` was sending), and for
``Authorization`` only the scheme and the sha256 of the credentials (a test compares that with the token it used,
and the log never holds the token itself).
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import http.client
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

MODES = ("pass", "flip", "truncate", "stall", "slow", "pad")
# hop-by-hop headers (RFC 9110 section 7.6.1) are for one connection and are not forwarded
HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
              "transfer-encoding", "upgrade"}
BLOCK = 64 * 1024


def parse_rule(text):
    """``MODE:GLOB[:N]`` -> rule dict."""
    parts = text.split(":")
    mode = parts[0]
    if mode not in MODES:
        raise ValueError("unknown mode %r in rule %r (one of %s)" % (mode, text, ", ".join(MODES)))
    number = ""
    if len(parts) >= 3 and parts[-1].isdigit():
        number = parts.pop()
    glob = ":".join(parts[1:])
    rule = {"mode": mode, "path": glob or "*"}
    if number:
        rule["n"] = int(number)
    if mode in ("truncate", "stall", "slow", "pad") and "n" not in rule:
        raise ValueError("rule %r needs a number (bytes, or bytes per second for slow)" % text)
    return rule


class Rules:
    """The rule list, from the command line or a JSON file read on every request; counts uses of ``times``."""

    def __init__(self, rules=(), path=None):
        self.fixed = list(rules)
        self.path = path
        self.lock = threading.Lock()
        self.used = {}

    def _current(self):
        if not self.path:
            return self.fixed
        try:
            with open(self.path, encoding="utf-8") as handle:
                return json.load(handle) or []
        except FileNotFoundError:
            return []

    def pick(self, method, path):
        if method != "GET":
            return {"mode": "pass"}
        with self.lock:
            for index, rule in enumerate(self._current()):
                if not fnmatch.fnmatch(path, rule.get("path", "*")):
                    continue
                key = (index, json.dumps(rule, sort_keys=True))
                if rule.get("times") is not None and self.used.get(key, 0) >= rule["times"]:
                    continue
                self.used[key] = self.used.get(key, 0) + 1
                return rule
        return {"mode": "pass"}


class ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "hostile-proxy"
    entry = None
    log_path = None

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        pass  # one JSON line per request goes to the log file instead

    def _record(self, **entry):
        # the log that was current when the request came in: a request that ends after a test switched the log
        # (a killed client's) belongs to the test that sent it
        path = self.log_path
        if path:
            with self.server.log_lock, open(path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(entry, sort_keys=True) + "\n")

    def _auth_digest(self):
        value = self.headers.get("Authorization")
        if value is None:
            return None
        scheme, _sep, credentials = value.partition(" ")
        return {"scheme": scheme, "sha256": hashlib.sha256(credentials.encode()).hexdigest()}

    def _proxy(self):
        self.log_path = self.server.log_path
        rule = self.server.rules.pick(self.command, self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        # Host stays the client's: the upstream builds absolute URLs (olah's trailing-slash redirects) from it,
        # and those must lead back through the proxy
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        upstream = http.client.HTTPConnection(self.server.upstream_host, self.server.upstream_port, timeout=120)
        self.entry = {"time": round(time.time(), 3), "method": self.command, "path": self.path,
                      "range": self.headers.get("Range"), "authorization": self._auth_digest(), "mode": rule["mode"]}
        try:
            upstream.request(self.command, self.path, body=body, headers=headers)
            response = upstream.getresponse()
            self.entry["status"] = response.status
            sent = self._relay(response, rule)
            if self.entry is not None:
                self.entry["sent"] = sent
        except OSError as exc:
            if self.entry is not None:
                self.entry["error"] = "%s: %s" % (type(exc).__name__, exc)
            self.close_connection = True
        finally:
            upstream.close()
            if self.entry is not None:
                self._record(**self.entry)

    def _relay(self, response, rule):
        """Send status, headers and (possibly spoiled) body; return the body bytes sent."""
        mode = rule["mode"]
        self.send_response_only(response.status, response.reason)
        upstream_length = response.getheader("Content-Length")
        for name, value in response.getheaders():
            if name.lower() == "content-length" and mode == "pad" and self.command != "HEAD":
                value = str(int(value) + rule["n"])
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        # without a length from upstream (olah streams mirror files chunked), re-frame the body as chunked
        chunked = self.command != "HEAD" and upstream_length is None and response.status not in (204, 304)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        if mode in ("truncate", "stall"):
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command == "HEAD":
            return 0
        sent = 0
        limit = rule.get("n")
        flip_at = rule.get("n", 0) if mode == "flip" else None
        while True:
            block = response.read(BLOCK)
            if not block:
                break
            if flip_at is not None and sent <= flip_at < sent + len(block):
                spoiled = bytearray(block)
                spoiled[flip_at - sent] ^= 0xFF
                block = bytes(spoiled)
            if mode in ("truncate", "stall") and sent + len(block) >= limit:
                block = block[:limit - sent]
                self._write(block, chunked)
                sent += len(block)
                if mode == "stall":
                    # logged now: a stalled request ends only when the proxy stops
                    self._record(stalled=True, **dict(self.entry, sent=sent))
                    self.entry = None
                    self.server.stopping.wait()
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass  # the client hung up first
                return sent
            self._write(block, chunked)
            sent += len(block)
            if mode == "slow":
                time.sleep(len(block) / float(max(limit, 1)))
        if mode == "pad":
            sent += self._pad(limit, chunked)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        return sent

    def _pad(self, count, chunked):
        """Send ``count`` zero bytes; the bytes sent before the client hung up, which is then logged as such."""
        sent = 0
        zeros = bytes(BLOCK)
        while sent < count:
            block = zeros[:count - sent]
            try:
                self._write(block, chunked)
            except OSError:
                self.entry["hung_up"] = True
                self.close_connection = True
                break
            sent += len(block)
        return sent

    def _write(self, block, chunked):
        if not block:
            return
        if chunked:
            self.wfile.write(b"%x\r\n" % len(block) + block + b"\r\n")
        else:
            self.wfile.write(block)
        self.wfile.flush()

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = _proxy


class HostileProxy(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, upstream, host="127.0.0.1", port=0, rules=(), rules_file=None, log_path=None):
        parts = urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError("--upstream must be http://HOST:PORT, got %r" % upstream)
        self.upstream_host = parts.hostname
        self.upstream_port = parts.port or 80
        self.rules = Rules(rules, rules_file)
        self.log_path = log_path
        self.log_lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = None
        super().__init__((host, port), ProxyHandler)

    @property
    def url(self):
        return "http://%s:%d" % self.server_address[:2]

    def start(self):
        """Serve in a background thread (for tests)."""
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.stopping.set()  # releases stalled connections
        self.shutdown()
        self.server_close()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--upstream", required=True, help="http://HOST:PORT of the mirror")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--rule", action="append", default=[], help="MODE:GLOB[:N], first match wins")
    parser.add_argument("--rules", help="JSON rule file, read on every request (overrides --rule)")
    parser.add_argument("--log", help="JSON-lines request log")
    args = parser.parse_args(argv)
    try:
        rules = [parse_rule(text) for text in args.rule]
        proxy = HostileProxy(args.upstream, args.host, args.port, rules, args.rules, args.log)
    except ValueError as exc:
        print("hostile_proxy: %s" % exc, file=sys.stderr)
        return 2
    print("hostile proxy on %s -> %s" % (proxy.url, args.upstream), flush=True)
    try:
        proxy.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        proxy.stopping.set()
        proxy.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
