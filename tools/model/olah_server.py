# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run olah in offline mode over local git repositories: a Hugging Face-compatible endpoint for tests.

    python3 tools/model/olah_server.py --mirror-root DIR --workdir DIR [--venv DIR] [--host H] [--port P]
        [--public-netloc HOST:PORT]

Writes ``WORKDIR/olah.toml``, starts ``olah-cli -c`` (log in ``WORKDIR/olah.log``), waits until it answers HTTP and
stays in the foreground until interrupted. ``--public-netloc`` is the address clients use (a proxy in front of
olah): olah writes it into the absolute URLs it hands out. Importable: ``OlahServer`` does the same for a test.
"""

from __future__ import annotations

import argparse
import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_VENV = "/var/cache/llmserve/venv-olah"


def free_port(host="127.0.0.1"):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _toml_str(value):
    return '"%s"' % str(value).replace("\\", "\\\\").replace('"', '\\"')


def render_config(host, port, mirror_root, repos_path, public_netloc=None):
    """olah's TOML: local mirrors only, never the real hub."""
    netloc = public_netloc or "%s:%d" % (host, port)
    return "\n".join([
        "[basic]",
        "host = %s" % _toml_str(host),
        "port = %d" % port,
        "repos-path = %s" % _toml_str(repos_path),
        "mirrors-path = [%s]" % _toml_str(mirror_root),
        'mirror-scheme = "http"',
        "mirror-netloc = %s" % _toml_str(netloc),
        "mirror-lfs-netloc = %s" % _toml_str(netloc),
        # a test pushes new revisions; a cached "main" would hide them
        "metadata-cache-ttl = 0",
        "",
        "[accessibility]",
        "offline = true",
        "",
    ])


def answers(host, port, timeout=1.0):
    """True when something at host:port answers an HTTP request (any status)."""
    try:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
        conn.request("GET", "/api/whoami-v2")
        conn.getresponse().read()
        conn.close()
        return True
    except (OSError, http.client.HTTPException):
        return False


class OlahServer:
    """olah-cli as a child process; ``start()`` returns once it answers, ``stop()`` ends it."""

    def __init__(self, mirror_root, workdir, venv=DEFAULT_VENV, host="127.0.0.1", port=None, public_netloc=None):
        self.venv = Path(venv)
        # absolute: olah runs with the workdir as its cwd and reads the paths of its config from there
        self.mirror_root = Path(mirror_root).resolve()
        self.workdir = Path(workdir).resolve()
        self.host = host
        self.port = port or free_port(host)
        self.public_netloc = public_netloc
        self.proc = None
        self.config = self.workdir / "olah.toml"
        self.log = self.workdir / "olah.log"

    @property
    def url(self):
        return "http://%s:%d" % (self.host, self.port)

    def start(self, timeout=60.0):
        cli = self.venv / "bin" / "olah-cli"
        if not cli.exists():
            raise FileNotFoundError("%s not found; run tools/model/install_olah_venv.sh %s" % (cli, self.venv))
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "repos").mkdir(exist_ok=True)
        self.config.write_text(render_config(self.host, self.port, self.mirror_root, self.workdir / "repos",
                                             self.public_netloc), encoding="utf-8")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        # olah must never reach out: no proxy, no token of the caller's
        for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
            env.pop(name, None)
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(  # pylint: disable=consider-using-with
                [str(cli), "-c", str(self.config), "--log-path", str(self.workdir / "logs")],
                cwd=str(self.workdir), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=env, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = self.log.read_text(errors="replace")[-3000:]
                raise RuntimeError("olah exited with %s; see %s:\n%s" % (self.proc.returncode, self.log, tail))
            if answers(self.host, self.port):
                return self
            time.sleep(0.2)
        self.stop()
        raise TimeoutError("olah did not answer on %s within %.0f s; see %s" % (self.url, timeout, self.log))

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.proc = None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--venv", default=DEFAULT_VENV)
    parser.add_argument("--mirror-root", required=True, help="directory holding models/ORG/NAME git repositories")
    parser.add_argument("--workdir", required=True, help="for olah.toml, olah.log and olah's cache")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    parser.add_argument("--public-netloc", help="HOST:PORT clients use, when a proxy stands in front")
    args = parser.parse_args(argv)
    server = OlahServer(args.mirror_root, args.workdir, args.venv, args.host, args.port or None, args.public_netloc)
    server.start()
    print("olah answering on %s (config %s)" % (server.url, server.config), flush=True)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        return server.proc.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
