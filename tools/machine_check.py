# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What `make test`, `make demo` and `make bench` assume about the machine, checked in well under a second before
minutes of work: one line per broken assumption, naming it and what to do, and exit 1.

Assumptions: root (rootful podman, apt, setpriv), Debian 12 (the podman host fixes and the test-host images are
built for it), a Python 3.12 for the controller venv, free disk where the cache and podman's images go, loopback
TCP, a checkout path that make and the shell can carry, and a cache directory that unprivileged service accounts
can traverse (the real smg runs as uid 65534 from a venv under it).

Standard library only (it runs with the system's python3, before any venv exists).
``LLMSERVE_MACHINE_CHECK=warn`` prints the same lines and goes on; ``--os-release`` reads another file than
/etc/os-release (the unit tests use it).
"""

import argparse
import glob
import os
import re
import shutil
import socket
import stat
import sys

GIB = 1024 ** 3
# Free disk (GiB) each run needs where it writes, cold (nothing built yet) and warm (built by an earlier run), with
# a margin over what clean clones used on a fresh 2-core machine (README, Testing): the cache holds the venvs,
# wheelhouses, the tiny model, fixture trees and logs (4.8 GiB built); podman's storage the test-host images (0.7 GiB)
# and the scenarios' containers, each with its own SGLang venv (8.2 GiB more at the peak of make test's molecule
# lanes; the fleet scenario of make bench has three engines). Where both live on one filesystem the needs add up.
DISK_NEED = {
    "test": {"cache": (10, 3), "podman storage": (12, 10)},
    "demo": {"cache": (9, 2), "podman storage": (7, 6)},
    "bench": {"cache": (10, 3), "podman storage": (16, 14)},
}
DISK_PATHS = {"cache": None, "podman storage": "/var/lib/containers"}
DISK_HINTS = {"cache": "free some or point LLMSERVE_CACHE at a larger filesystem",
              "podman storage": "free some (podman system prune) or give /var/lib/containers more room"}
# Characters make or the recipes' shell quoting cannot carry in a path (make splits words on blanks and treats
# '$', '#', ':', '%', ';' and '\\' specially).
UNSAFE_PATH = re.compile(r"[\s$#:%;\\\"'`*?\[\]{}()<>|&!]")


def parse_os_release(text):
    values = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        values[key.strip()] = value.strip().strip("\"'")
    return values


def existing_ancestor(path):
    """``path`` or its nearest parent that exists (the cache may not be made yet)."""
    path = os.path.abspath(path)
    while not os.path.exists(path) and path != os.sep:
        path = os.path.dirname(path)
    return path


def blocked_for_others(path, stat_fn=os.stat):
    """The first existing directory on the way to ``path`` that others cannot traverse (no o+x), or None."""
    path = os.path.abspath(path)
    parts = path.split(os.sep)
    for depth in range(2, len(parts) + 1):
        current = os.sep.join(parts[:depth])
        try:
            mode = stat_fn(current).st_mode
        except OSError:
            return None  # not made yet: it will be made 0755 by the recipes
        if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
            return current
    return None


def loopback_works():
    """None when a TCP connection over 127.0.0.1 works, else the error."""
    try:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            server.bind(("127.0.0.1", 0))
            server.listen(1)
            client = socket.create_connection(server.getsockname(), timeout=2)
            client.close()
        finally:
            server.close()
    except OSError as exc:
        return str(exc)
    return None


def find_python(env):
    """The interpreter tools/devenv.sh would take: LLMSERVE_PYTHON, pyenv's 3.12, then python3.12, python3.13
    or python3.14 on PATH (ansible-core 2.21 needs >= 3.12)."""
    if env.get("LLMSERVE_PYTHON"):
        return shutil.which(env["LLMSERVE_PYTHON"], path=env.get("PATH"))
    pyenv = env.get("PYENV_ROOT") or os.path.join(env.get("HOME", "/root"), ".pyenv")
    candidates = sorted(glob.glob(os.path.join(pyenv, "versions", "3.12.*", "bin", "python3.12")))
    candidates = [c for c in candidates if os.access(c, os.X_OK)]
    if candidates:
        return candidates[0]
    for name in ("python3.12", "python3.13", "python3.14"):
        found = shutil.which(name, path=env.get("PATH"))
        if found:
            return found
    return None


def gather(checkout, env, os_release="/etc/os-release"):
    """The facts the rules look at, read from this machine."""
    cache = env.get("LLMSERVE_CACHE") or "/var/cache/llmserve"
    release_path = os_release
    try:
        with open(release_path) as handle:
            release = parse_os_release(handle.read())
    except OSError:
        release = {}
    disks = {}
    for label, path in sorted(DISK_PATHS.items()):
        path = path or cache
        where = existing_ancestor(path)
        try:
            vfs = os.statvfs(where)
            disks[label] = {"path": path, "checked": where, "free": vfs.f_bavail * vfs.f_frsize,
                            "device": os.stat(where).st_dev}
        except OSError as exc:
            disks[label] = {"path": path, "checked": where, "free": None, "error": str(exc), "device": label}
    disks["cache"]["warm"] = (os.path.exists(os.path.join(cache, "venv", ".llmserve-stamp"))
                              and os.path.isdir(os.path.join(cache, "venv-sglang-cpu")))
    try:
        with open("/var/lib/containers/storage/overlay-images/images.json") as handle:
            disks["podman storage"]["warm"] = "llmserve-testhost" in handle.read()
    except OSError:
        disks["podman storage"]["warm"] = False
    return {
        "euid": os.geteuid(),
        "os_release": release,
        "python312": find_python(env),
        "disks": disks,
        "loopback_error": loopback_works(),
        "checkout": os.path.abspath(checkout),
        "checkout_is_git": os.path.exists(os.path.join(checkout, ".git")),
        "cache": cache,
        "cache_blocked": blocked_for_others(cache),
    }


def human(size):
    return "%.1f GiB" % (size / float(GIB))


def evaluate(facts, purpose="test"):
    """One line per broken assumption: what is wrong, then what to do."""
    problems = []
    if facts["euid"] != 0:
        problems.append("not root (euid %d): make %s runs rootful podman, apt-get and setpriv; run it as root"
                        % (facts["euid"], purpose))
    release = facts["os_release"]
    if release.get("ID") != "debian" or release.get("VERSION_ID") != "12":
        problems.append("not Debian 12: this machine is %s; the test hosts' podman fixes and images are made for "
                        "Debian 12 (bookworm) (LLMSERVE_MACHINE_CHECK=warn tries anyway)"
                        % (release.get("PRETTY_NAME") or "unknown (no /etc/os-release)"))
    if not facts["python312"]:
        problems.append("no Python 3.12: ansible-core 2.20+ needs it (or a later one) on the controller; looked at "
                        "LLMSERVE_PYTHON, pyenv's versions ($PYENV_ROOT or ~/.pyenv) and python3.12-3.14 on PATH")
    by_device = {}
    for label, disk in sorted(facts["disks"].items()):
        by_device.setdefault(disk.get("device", label), []).append(label)
    for labels in by_device.values():
        disk = facts["disks"][labels[0]]
        need = sum(DISK_NEED[purpose][label][1 if facts["disks"][label]["warm"] else 0] for label in labels) * GIB
        state = ", ".join("%s %s" % (label, "built before" if facts["disks"][label]["warm"] else "nothing built yet")
                          for label in labels)
        what = " and the ".join(labels) + (" (one filesystem)" if len(labels) > 1 else "")
        if disk["free"] is None:
            problems.append("cannot read free disk for the %s at %s: %s"
                            % (what, disk["path"], disk.get("error", "")))
        elif disk["free"] < need:
            problems.append("too little free disk for the %s: %s free on the filesystem of %s, make %s needs %s there "
                            "(%s); %s" % (what, human(disk["free"]), disk["checked"], purpose, human(need), state,
                                          "; ".join(DISK_HINTS[label] for label in labels)))
    if facts["loopback_error"]:
        problems.append("no TCP over loopback (127.0.0.1): %s; the tests' servers listen there"
                        % facts["loopback_error"])
    bad = UNSAFE_PATH.search(facts["checkout"])
    if bad:
        problems.append("the checkout's path %r has %r, which make and the recipes cannot quote; clone into a "
                        "path of letters, digits, '.', '_', '-' and '/'" % (facts["checkout"], bad.group(0)))
    if not facts["checkout_is_git"]:
        problems.append("%s is not a git clone: the sanity tree and the build are made from git's file list; "
                        "run from a clone" % facts["checkout"])
    cache = facts["cache"]
    if not os.path.isabs(cache):
        problems.append("LLMSERVE_CACHE=%r is not an absolute path" % cache)
    elif (cache.rstrip(os.sep) + os.sep).startswith(facts["checkout"].rstrip(os.sep) + os.sep):
        problems.append("LLMSERVE_CACHE=%s is inside the checkout: linters and the sanity tree would read its "
                        "venvs; put it outside" % cache)
    if facts["cache_blocked"] and purpose != "demo":
        problems.append("LLMSERVE_CACHE=%s is below %s, which others cannot traverse (no o+x): the gateway tests "
                        "run smg from it as an unprivileged account; use a cache outside private directories"
                        % (cache, facts["cache_blocked"]))
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("purpose", nargs="?", default="test", choices=sorted(DISK_NEED))
    parser.add_argument("--checkout", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--os-release", default="/etc/os-release", help="read this file instead")
    args = parser.parse_args(argv)
    facts = gather(args.checkout, os.environ, os_release=args.os_release)
    problems = evaluate(facts, args.purpose)
    mode = os.environ.get("LLMSERVE_MACHINE_CHECK", "")
    for problem in problems:
        print("machine check: %s" % problem, file=sys.stderr)
    if problems and mode != "warn":
        print("machine check: %d assumption(s) of make %s do not hold; nothing was changed"
              % (len(problems), args.purpose), file=sys.stderr)
        return 1
    print("machine check: %s (%s)" % ("ok" if not problems else "%d warning(s), going on" % len(problems), ", ".join([
        "root" if facts["euid"] == 0 else "not root",
        facts["os_release"].get("PRETTY_NAME", "unknown OS"),
        "%s free for the cache" % human(facts["disks"]["cache"]["free"] or 0),
        "checkout %s" % facts["checkout"]])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
