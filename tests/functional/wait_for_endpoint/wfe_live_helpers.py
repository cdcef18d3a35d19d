# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Helpers for the wait_for_endpoint integration tests: real HTTP(S) servers on 127.0.0.1 with
scripted timelines, TLS material made on the fly, the module run as a real subprocess, and the
SGLang stand-in started from the source tree. The fixtures in conftest.py wrap these."""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
STANDIN_SRC = os.path.join(ROOT, "tools", "standin", "src")
TREE = os.environ["LLMSERVE_PYTEST_TREE"]  # set by the root conftest.py
MODULE = "ansible_collections.llmserve.sglang.plugins.modules.wait_for_endpoint"
HANG = "hang"


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def own_ipv4_address():
    """An IPv4 address of this machine other than loopback (the source of its default route), or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("198.51.100.1", 9))  # TEST-NET-2: no packet is sent, the kernel only picks a route
        except OSError:
            return None
        address = sock.getsockname()[0]
    return None if address.startswith("127.") or address == "0.0.0.0" else address


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):  # TLS handshakes that the client aborts, resets
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def _answer(self):
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        body_in = self.rfile.read(length) if length else b""
        elapsed = time.monotonic() - owner.opened_at
        owner.requests.append({"path": self.path, "method": self.command, "elapsed": elapsed,
                               "authorization": self.headers.get("Authorization"), "body": body_in})
        answer = owner.script(elapsed, self.path, self.command, self.headers)
        if answer == HANG:
            owner.stop_event.wait(60)
            return
        answer = answer if isinstance(answer, tuple) else (answer,)
        status, body, extra = (tuple(answer) + (None, None))[:3]
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else (body or b"")
        self.send_response(status)
        self.send_header("Content-Type", "application/json" if isinstance(body, (dict, list)) else "text/plain")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = _answer


class ScriptedServer(object):
    """An HTTP(S) server on ``host`` (127.0.0.1 by default) that keeps its port closed for ``closed_for`` seconds, then
    answers with ``script(elapsed_since_open, path, method, headers)`` -> status, (status, body),
    (status, body, extra_headers) or HANG."""

    def __init__(self, script, closed_for=0.0, tls=None, host="127.0.0.1"):
        self.script = script
        self.host = host
        self.closed_for = closed_for
        self.tls = tls
        self.port = free_port()
        self.requests = []
        self.opened_at = None
        self.httpd = None
        self.stop_event = threading.Event()
        self.started_at = None
        self._threads = []

    @property
    def url(self):
        return "%s://%s:%d" % ("https" if self.tls else "http", self.host, self.port)

    def start(self):
        self.started_at = time.monotonic()
        thread = threading.Thread(target=self._run, daemon=True)
        thread.start()
        self._threads.append(thread)
        if not self.closed_for:
            deadline = time.monotonic() + 5
            while self.httpd is None and time.monotonic() < deadline:
                time.sleep(0.01)
        return self

    def _run(self):
        if self.stop_event.wait(self.closed_for):
            return
        httpd = _Quiet((self.host, self.port), _Handler)
        if self.tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(self.tls["cert"], self.tls["key"])
            httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
        httpd.owner = self
        self.opened_at = time.monotonic()
        self.httpd = httpd
        httpd.serve_forever(poll_interval=0.05)

    def stop(self):
        self.stop_event.set()
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()


def _module_env(overrides=None):
    """The environment of a module run: no proxies unless a test sets them (None removes a variable)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([TREE] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        env.pop(var, None)
    for var, value in (overrides or {}).items():
        if value is None:
            env.pop(var, None)
        else:
            env[var] = value
    return env


class ModuleRun(object):
    def __init__(self, rc, result, wall, stderr, maxrss_kib=None):
        self.rc = rc
        self.result = result
        self.wall = wall
        self.stderr = stderr
        self.maxrss_kib = maxrss_kib  # peak resident memory of the module process (getrusage of that child)

    def __repr__(self):
        return "ModuleRun(rc=%s, wall=%.2f, maxrss=%s KiB, result=%r, stderr=%r)" % (
            self.rc, self.wall, self.maxrss_kib, self.result, self.stderr[-500:])


# Runs its arguments as a child, passes on its output and exit code, and writes the child's own peak RSS
# (os.wait4) to the file named by LLMSERVE_MAXRSS_FILE. A direct child of pytest would not do: Linux carries
# the high-water RSS of the address space a process execs away from into its ru_maxrss, and a vfork'ed child of
# pytest execs away from pytest's (hundreds of MiB late in a run). This wrapper is small, so its child's
# figure is the module's own.
_RSS_WRAPPER = """
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[1:])
pid, status, usage = os.wait4(proc.pid, 0)
with open(os.environ["LLMSERVE_MAXRSS_FILE"], "w") as handle:
    handle.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status) % 256)
"""


def run_child(argv, env, cwd, limit):
    """Run ``argv`` and return (rc, stdout, stderr, wall, maxrss_kib, killed).

    The child's own peak RSS comes from ``os.wait4`` in a small wrapper process (see _RSS_WRAPPER); the
    wrapper and the child form a process group of their own, killed after ``limit`` seconds."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".maxrss") as rss:
        env = dict(env, LLMSERVE_MAXRSS_FILE=rss.name)
        start = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-c", _RSS_WRAPPER] + list(argv), stdout=out, stderr=err,
                                env=env, cwd=cwd, start_new_session=True)
        killed = False
        try:
            proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            killed = True
            proc.wait()
        wall = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        text = rss.read().strip()
        return (proc.returncode, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"), wall,
                int(text) if text else None, killed)


class RawServer(object):
    """A hostile HTTP server on 127.0.0.1 built on plain sockets: for every connection it reads the
    request head, records it, and hands the socket to ``behaviour(conn, request, stop_event)``, which
    writes whatever it likes (one byte at a time, a huge body, garbage). Stops when told to."""

    def __init__(self, behaviour):
        self.behaviour = behaviour
        self.requests = []
        self.stop_event = threading.Event()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.url = "http://127.0.0.1:%d" % self.port

    def start(self):
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def _accept(self):
        while not self.stop_event.is_set():
            try:
                conn, dummy = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        try:
            conn.settimeout(5)
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 65536:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
            headers = {}
            for line in lines[1:]:
                name, dummy, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            request = {"line": lines[0], "headers": headers, "at": time.monotonic()}
            self.requests.append(request)
            self.behaviour(conn, request, self.stop_event)
        except OSError:  # the client hung up: exactly what a cut-off client does
            pass
        finally:
            conn.close()

    def stop(self):
        self.stop_event.set()
        self.sock.close()


def trickle(conn, data, stop_event, every=0.05, for_at_most=30.0):
    """Send ``data`` one byte at a time, one byte every ``every`` seconds, for at most ``for_at_most`` s."""
    end = time.monotonic() + for_at_most
    for index in range(len(data)):
        if stop_event.is_set() or time.monotonic() > end:
            return
        conn.sendall(data[index:index + 1])
        time.sleep(every)


def _tls_with_cryptography(directory):
    import datetime  # pylint: disable=import-outside-toplevel
    import ipaddress  # pylint: disable=import-outside-toplevel

    from cryptography import x509  # pylint: disable=import-outside-toplevel
    from cryptography.hazmat.primitives import hashes, serialization  # pylint: disable=import-outside-toplevel
    from cryptography.hazmat.primitives.asymmetric import ec  # pylint: disable=import-outside-toplevel
    from cryptography.x509.oid import NameOID  # pylint: disable=import-outside-toplevel

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "llmserve test CA")])
    ca_cert = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
               .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                            data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                            crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
               .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    files = {"ca": directory / "ca.pem", "cert": directory / "server.pem", "key": directory / "server.key"}
    files["ca"].write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    files["cert"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    files["key"].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
    return {k: str(v) for k, v in files.items()}


def _tls_with_openssl(directory):
    def sh(*argv):
        subprocess.run(argv, check=True, capture_output=True, cwd=str(directory))

    (directory / "ext.cnf").write_text("basicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n"
                                       "subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
       "-subj", "/CN=llmserve test CA", "-keyout", "ca.key", "-out", "ca.pem",
       "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    sh("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=127.0.0.1",
       "-keyout", "server.key", "-out", "server.csr")
    sh("openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
       "-days", "1", "-extfile", "ext.cnf", "-out", "server.pem")
    return {"ca": str(directory / "ca.pem"), "cert": str(directory / "server.pem"), "key": str(directory / "server.key")}


class Standin(object):
    """The SGLang stand-in run from the source tree as ``python -m sglang.launch_server``."""

    def __init__(self, argv, env, event_log):
        self.argv = argv
        self.env = env
        self.event_log = event_log
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(self.argv, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, start_new_session=True)
        return self

    def events(self):
        if not os.path.exists(self.event_log):
            return []
        with open(self.event_log) as handle:
            return [json.loads(line) for line in handle if line.strip()]

    def wait(self, timeout=10):
        out = self.proc.communicate(timeout=timeout)[0]
        return self.proc.returncode, out

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.communicate()


def standin_env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = STANDIN_SRC
    env.pop("PYTHONHOME", None)
    env.update({k: str(v) for k, v in extra.items()})
    return env
