# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Build the llmserve SGLang stand-in wheel with nothing but the standard library (no network).

    python3 tools/standin/build_wheel.py OUTDIR

writes ``OUTDIR/sglang-0.5.23+llmserve.standin-py3-none-any.whl`` and prints its path. The wheel
holds ``tools/standin/src/sglang`` (its parser comes from ``sglang/srt/standin_parser_actions.py``,
SGLang's own argparse actions; the collection's flag table is not part of it) and declares the
``sglang`` console script. The build is reproducible: fixed timestamps, sorted entries.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import re
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "src")
ACTIONS_FILE = os.path.join(SRC, "sglang", "srt", "standin_parser_actions.py")
NAME = "sglang"
ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def read_version():
    with open(os.path.join(SRC, NAME, "_version.py")) as handle:
        match = re.search(r'^__version__ = "([^"]+)"', handle.read(), re.M)
    if not match:
        raise SystemExit("no __version__ in %s/_version.py" % NAME)
    return match.group(1)


def actions_version():
    with open(ACTIONS_FILE) as handle:
        match = re.search(r'^SGLANG_VERSION = "([^"]+)"', handle.read(), re.M)
    return match.group(1) if match else None


def sources():
    """(archive name, bytes) for every package file, sorted."""
    files = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(SRC, NAME)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for filename in sorted(filenames):
            if filename.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(dirpath, filename)
            arcname = os.path.relpath(path, SRC).replace(os.sep, "/")
            with open(path, "rb") as handle:
                files.append((arcname, handle.read()))
    return sorted(files)


def record_hash(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def metadata(version):
    return (
        "Metadata-Version: 2.1\n"
        "Name: %s\n"
        "Version: %s\n"
        "Summary: llmserve SGLang stand-in: imitates SGLang 0.5.23's HTTP start-up for tests (not SGLang)\n"
        "License: GPL-3.0-or-later\n"
        "Requires-Python: >=3.9\n"
        "\n"
        "This is NOT SGLang. It is a small standard-library HTTP server from the llmserve.sglang\n"
        "Ansible collection's tests that accepts SGLang's command line and reproduces its start-up\n"
        "behaviour (closed port, 503 during warm-up, 200 when ready, SIGKILL on warm-up failure).\n"
    ) % (NAME, version)


def build(outdir):
    version = read_version()
    parser_version = actions_version()
    if not parser_version or not version.startswith(parser_version + "+"):
        raise SystemExit("stand-in version %s does not match the SGLang %s its parser was dumped from"
                         % (version, parser_version))
    dist_info = "%s-%s.dist-info" % (NAME, version)
    entries = sources()
    entries.append(("%s/METADATA" % dist_info, metadata(version).encode()))
    entries.append(("%s/WHEEL" % dist_info, (
        "Wheel-Version: 1.0\nGenerator: llmserve-standin-build_wheel\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    ).encode()))
    entries.append(("%s/entry_points.txt" % dist_info, b"[console_scripts]\nsglang = sglang.cli.main:main\n"))
    entries.append(("%s/top_level.txt" % dist_info, b"sglang\n"))
    record_name = "%s/RECORD" % dist_info
    record = "".join("%s,%s,%d\n" % (name, record_hash(data), len(data)) for name, data in entries)
    record += "%s,,\n" % record_name
    entries.append((record_name, record.encode()))

    os.makedirs(outdir, exist_ok=True)
    wheel = os.path.join(outdir, "%s-%s-py3-none-any.whl" % (NAME, version))
    tmp = wheel + ".tmp"
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o644 & 0xFFFF) << 16
            archive.writestr(info, data)
    os.replace(tmp, wheel)
    return wheel


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", help="directory to write the wheel into (created if missing)")
    args = parser.parse_args(argv)
    print(build(args.outdir))


if __name__ == "__main__":
    sys.exit(main())
