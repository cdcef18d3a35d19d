# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Helpers for the CPU SGLang wheelhouse (standard library only, Python 3.9+).

Used by build_wheelhouse.sh and install_sglang_venv.sh, and imported by the
integration tests.  Sub-commands:

  check-lock LOCK                 every line must be an exact ``name==version`` pin
  stamp LOCK SHIMS                cache key: sha256 over the lock and the shim sources
  missing LOCK DIR                lock lines (shims excluded) that have no wheel in DIR
  build-shims LOCK SHIMS DIR      build the import-only shim wheels into DIR
  verify LOCK DIR                 one wheel per lock line, write DIR/SHA256SUMS
  extras LOCK DIR                 wheels in DIR that no lock line asks for
  check-installed LOCK PYTHON     the interpreter's installed distributions == the lock

A shim is a lock line whose version carries the local label ``llmserve.importshim``
(e.g. ``vllm==0.0.0+llmserve.importshim``); its sources are the package directory
``SHIMS/<name>/`` and its wheel is built here, by hand, without network or setuptools.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import zipfile

SHIM_LABEL = "llmserve.importshim"
# Bump when the wheel layout written by build_shim_wheel() changes: it is part of the cache key.
SHIM_BUILDER_VERSION = "1"
# Every file inside a shim wheel gets this timestamp, so the wheel is byte-reproducible.
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)

_PIN_RE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]|[A-Za-z0-9])==([0-9][A-Za-z0-9.!+_-]*)$")


def canonical_name(name):
    """PEP 503 normalised project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def canonical_version(version):
    """Normalised version string (pip's vendored ``packaging`` when present)."""
    try:
        from pip._vendor.packaging.version import Version  # pylint: disable=import-outside-toplevel
        return str(Version(version))
    except Exception:  # pragma: no cover - fallback without pip
        return version.lower().replace("_", "-")


def read_lock(path):
    """Return [(name, version, line)] for a lock file; raise ValueError on any non-pin line."""
    pins = []
    errors = []
    seen = {}
    with open(path, encoding="utf-8") as handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.strip()
            match = _PIN_RE.match(line)
            if not match:
                errors.append("%s:%d: %r is not an exact 'name==version' pin" % (path, number, raw.rstrip("\n")))
                continue
            name, version = match.group(1), match.group(2)
            key = canonical_name(name)
            if key in seen:
                errors.append("%s:%d: %s is pinned twice (first on line %d)" % (path, number, name, seen[key]))
                continue
            seen[key] = number
            pins.append((name, version, line))
    if errors:
        raise ValueError("\n".join(errors))
    if not pins:
        raise ValueError("%s: the lock file is empty" % path)
    return pins


def is_shim(version):
    return version.partition("+")[2] == SHIM_LABEL


def _shim_files(shim_dir):
    """Sorted (relative path, absolute path) of the shim's package files, caches excluded."""
    parent = os.path.dirname(os.path.abspath(shim_dir))
    found = []
    for root, dirs, files in os.walk(shim_dir):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for filename in sorted(files):
            if filename.endswith((".pyc", ".pyo")):
                continue
            absolute = os.path.join(root, filename)
            found.append((os.path.relpath(absolute, parent).replace(os.sep, "/"), absolute))
    return sorted(found)


def stamp(lock_path, shims_root):
    """Cache key of a wheelhouse: lock content, shim sources and the shim builder version."""
    digest = hashlib.sha256()
    digest.update(b"shim-builder:" + SHIM_BUILDER_VERSION.encode() + b"\n")
    with open(lock_path, "rb") as handle:
        digest.update(b"lock\n" + handle.read())
    for name, version, _line in read_lock(lock_path):
        if not is_shim(version):
            continue
        shim_dir = os.path.join(shims_root, name)
        for relative, absolute in _shim_files(shim_dir):
            with open(absolute, "rb") as handle:
                digest.update(("file %s\n" % relative).encode() + handle.read())
    return digest.hexdigest()


def _wheel_index(directory):
    """{canonical name: [(canonical version, filename)]} for the wheels in a directory."""
    index = {}
    if not os.path.isdir(directory):
        return index
    for filename in sorted(os.listdir(directory)):
        if not filename.endswith(".whl"):
            continue
        parts = filename[:-4].split("-")
        if len(parts) not in (5, 6):
            continue
        index.setdefault(canonical_name(parts[0]), []).append((canonical_version(parts[1]), filename))
    return index


def wheel_for(index, name, version):
    wanted = canonical_version(version)
    return [filename for found, filename in index.get(canonical_name(name), []) if found == wanted]


def missing(lock_path, directory, include_shims=False):
    index = _wheel_index(directory)
    return [line for name, version, line in read_lock(lock_path)
            if (include_shims or not is_shim(version)) and not wheel_for(index, name, version)]


def extras(lock_path, directory):
    wanted = {(canonical_name(n), canonical_version(v)) for n, v, _l in read_lock(lock_path)}
    return [filename for name, found in sorted(_wheel_index(directory).items())
            for version, filename in found if (name, version) not in wanted]


def _record_hash(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def build_shim_wheel(name, version, shim_dir, out_dir):
    """Write a reproducible pure-Python wheel for the package directory ``shim_dir``."""
    files = _shim_files(shim_dir)
    if not files:
        raise ValueError("shim %s: no sources under %s" % (name, shim_dir))
    dist = re.sub(r"[-_.]+", "_", name)
    dist_info = "%s-%s.dist-info" % (dist, version)
    summary = "Import-only stand-in for %s on CPU-only SGLang test installs (llmserve); not the real package." % name
    metadata = "Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\nLicense: GPL-3.0-or-later\n" % (
        name, version, summary)
    wheel_meta = "Wheel-Version: 1.0\nGenerator: llmserve-shim-builder %s\nRoot-Is-Purelib: true\nTag: py3-none-any\n" % (
        SHIM_BUILDER_VERSION)
    entries = []
    for relative, absolute in files:
        with open(absolute, "rb") as handle:
            entries.append((relative, handle.read()))
    entries.append((dist_info + "/METADATA", metadata.encode()))
    entries.append((dist_info + "/WHEEL", wheel_meta.encode()))
    entries.append((dist_info + "/top_level.txt", (os.path.basename(os.path.normpath(shim_dir)) + "\n").encode()))
    record_lines = ["%s,%s,%d" % (path, _record_hash(data), len(data)) for path, data in entries]
    record_lines.append("%s/RECORD,," % dist_info)
    entries.append((dist_info + "/RECORD", ("\n".join(record_lines) + "\n").encode()))

    filename = "%s-%s-py3-none-any.whl" % (dist, version)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path, data in entries:
            info = zipfile.ZipInfo(path, date_time=_ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            info.create_system = 3
            archive.writestr(info, data)
    target = os.path.join(out_dir, filename)
    with open(target + ".tmp", "wb") as handle:
        handle.write(buffer.getvalue())
    os.replace(target + ".tmp", target)
    return target


def build_shims(lock_path, shims_root, out_dir):
    built = []
    for name, version, _line in read_lock(lock_path):
        if is_shim(version):
            built.append(build_shim_wheel(name, version, os.path.join(shims_root, name), out_dir))
    return built


def verify(lock_path, directory):
    """Check one wheel per pin; write SHA256SUMS; return the list of problems."""
    index = _wheel_index(directory)
    problems = []
    sums = []
    for name, version, line in read_lock(lock_path):
        found = wheel_for(index, name, version)
        if not found:
            problems.append("no wheel for %s" % line)
            continue
        for filename in found:
            digest = hashlib.sha256()
            with open(os.path.join(directory, filename), "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            sums.append("%s  %s" % (digest.hexdigest(), filename))
    if not problems:
        with open(os.path.join(directory, "SHA256SUMS"), "w", encoding="utf-8") as handle:
            handle.write("\n".join(sorted(sums, key=lambda s: s.split("  ", 1)[1])) + "\n")
    return problems


def check_installed(lock_path, python):
    """Compare ``python``'s installed distributions with the lock (pip, setuptools, wheel ignored)."""
    code = ("import json, importlib.metadata as m; "
            "print(json.dumps(sorted((d.metadata['Name'], d.version) for d in m.distributions())))")
    output = subprocess.run([python, "-c", code], check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout
    installed = {canonical_name(n): canonical_version(v) for n, v in json.loads(output)}
    for tool in ("pip", "setuptools", "wheel"):
        installed.pop(tool, None)
    wanted = {canonical_name(n): canonical_version(v) for n, v, _l in read_lock(lock_path)}
    problems = []
    for name in sorted(set(wanted) | set(installed)):
        if name not in installed:
            problems.append("not installed: %s==%s" % (name, wanted[name]))
        elif name not in wanted:
            problems.append("installed but not in the lock: %s==%s" % (name, installed[name]))
        elif installed[name] != wanted[name]:
            problems.append("%s: installed %s, lock says %s" % (name, installed[name], wanted[name]))
    return problems


def main(argv):
    usage = __doc__.split("Sub-commands:", 1)[1].split("A shim", 1)[0]
    if not argv:
        sys.stderr.write("usage: wheelhouse.py COMMAND ...\n" + usage)
        return 2
    command, args = argv[0], argv[1:]
    try:
        if command == "check-lock" and len(args) == 1:
            pins = read_lock(args[0])
            print("%s: %d exact pins, %d shims" % (args[0], len(pins), sum(is_shim(v) for _n, v, _l in pins)))
        elif command == "stamp" and len(args) == 2:
            print(stamp(args[0], args[1]))
        elif command == "missing" and len(args) == 2:
            for line in missing(args[0], args[1]):
                print(line)
        elif command == "extras" and len(args) == 2:
            for filename in extras(*args):
                print(filename)
        elif command == "build-shims" and len(args) == 3:
            for path in build_shims(*args):
                print("built shim wheel %s" % path)
        elif command == "verify" and len(args) == 2:
            problems = verify(*args)
            for problem in problems:
                sys.stderr.write("ERROR: %s\n" % problem)
            return 1 if problems else 0
        elif command == "check-installed" and len(args) == 2:
            problems = check_installed(*args)
            for problem in problems:
                sys.stderr.write("ERROR: %s\n" % problem)
            return 1 if problems else 0
        else:
            sys.stderr.write("usage: wheelhouse.py COMMAND ...\n" + usage)
            return 2
    except (OSError, ValueError) as exc:
        sys.stderr.write("ERROR: %s\n" % exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
