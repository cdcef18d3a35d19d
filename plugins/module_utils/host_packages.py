# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Debian packages of a GPU host: the NVIDIA and kernel packages, their holds, and unattended-upgrades.

Stdlib only, importable on Python 3.9+ targets. Everything is read below a root (a live host or a fixture tree):
``/var/lib/dpkg/status`` for what is installed and held (``apt-mark hold`` sets the dpkg selection ``hold``), and
APT's configuration for unattended-upgrades. APT's configuration is either the output of ``apt-config dump``
(the live host, where APT itself merges every file) or read from ``/etc/apt/apt.conf.d`` with a small parser of
APT's syntax (a host tree).
"""

from __future__ import annotations

import re

__all__ = [
    "DPKG_STATUS",
    "parse_dpkg_status",
    "package_role",
    "upstream_version",
    "parse_apt_config",
    "apt_config_files",
    "unattended_upgrades",
    "blacklisted",
    "read_packages",
]

DPKG_STATUS = "/var/lib/dpkg/status"
APT_CONF_FILE = "/etc/apt/apt.conf"
APT_CONF_DIR = "/etc/apt/apt.conf.d"
UU_ENABLE_KEY = "APT::Periodic::Unattended-Upgrade"
UU_BLACKLIST_KEY = "Unattended-Upgrade::Package-Blacklist"
# dpkg status files of real hosts are a few MiB; a fixture tree or capture cannot make us read more.
_STATUS_LIMIT = 64 * 1024 * 1024

# What a package is to the next boot. Order matters: the first pattern that matches decides.
_ROLE_PATTERNS = (
    ("fabric_manager", re.compile(r"^(nvidia-fabricmanager|cuda-drivers-fabricmanager|libnvidia-nscq|nvlsm)")),
    # The kernel module: DKMS sources, Ubuntu's precompiled modules, and the meta packages that pull them in.
    ("driver", re.compile(r"^(nvidia-kernel-dkms|nvidia-dkms-|nvidia-kernel-open-dkms|nvidia-open-kernel-dkms"
                          r"|nvidia-tesla(-[0-9]+)?-kernel-dkms|nvidia-kernel-source|nvidia-kernel-open-"
                          r"|linux-modules-nvidia-|linux-objects-nvidia-|linux-signatures-nvidia-"
                          r"|nvidia-driver(-|$)|nvidia-open(-|$)|nvidia-headless-|cuda-drivers(-|$))")),
    # The user-space side that must match the loaded module (NVML, CUDA driver library, nvidia-smi).
    ("userspace", re.compile(r"^(libnvidia-|libcuda1|nvidia-utils-|nvidia-compute-utils-|nvidia-smi$"
                             r"|nvidia-kernel-common-|nvidia-firmware-|firmware-nvidia-gsp|nvidia-persistenced)")),
    ("kernel", re.compile(r"^(linux-image-|linux-headers-|linux-modules-[0-9]|linux-modules-extra-[0-9]"
                          r"|linux-generic|linux-signed-|linux-virtual|linux-hwe-)")),
)


def _stanzas(text):
    stanza = {}
    key = None
    for line in (text or "").splitlines():
        if not line.strip():
            if stanza:
                yield stanza
            stanza, key = {}, None
            continue
        if line[:1] in (" ", "\t"):
            if key is not None:
                stanza[key] += "\n" + line.strip()
            continue
        if ":" not in line:
            continue
        key, value = line.split(":", 1)
        key = key.strip().lower()
        stanza[key] = value.strip()
    if stanza:
        yield stanza


def parse_dpkg_status(text):
    """Installed (or half-installed) packages from a dpkg status file: ``{name: {version, arch, selection, state}}``.

    ``selection`` is dpkg's wanted state (``install``, ``hold``, ``deinstall``, ``purge``); ``state`` the package's
    (``installed``, ``half-configured``, ...). Packages that are not on the disk (``not-installed``,
    ``config-files``) are left out. A package of several architectures keeps its first entry.
    """
    packages = {}
    for stanza in _stanzas(text):
        name = stanza.get("package")
        status = stanza.get("status", "").split()
        if not name or len(status) != 3:
            continue
        selection, _flag, state = status
        if state in ("not-installed", "config-files"):
            continue
        packages.setdefault(name, {
            "version": stanza.get("version"),
            "arch": stanza.get("architecture"),
            "selection": selection,
            "state": state,
        })
    return packages


def package_role(name):
    """``driver``, ``userspace``, ``fabric_manager``, ``kernel`` or ``None`` for a package name."""
    for role, pattern in _ROLE_PATTERNS:
        if pattern.match(name):
            return role
    return None


def upstream_version(version):
    """The upstream part of a Debian version: ``1:580.95.05-0ubuntu1`` -> ``580.95.05``."""
    if not version:
        return None
    if ":" in version.split("-", 1)[0]:
        version = version.split(":", 1)[1]
    if "-" in version:
        version = version.rsplit("-", 1)[0]
    return version


# ---------------------------------------------------------------------------------------------------
# APT configuration
# ---------------------------------------------------------------------------------------------------

_APT_TOKEN_RE = re.compile(r'\s*(?:(?P<quoted>"[^"]*")|(?P<open>\{)|(?P<close>\})|(?P<semi>;)|(?P<word>[^\s{};"]+))')


def _strip_apt_comments(text):
    out = []
    in_block = False
    for line in (text or "").splitlines():
        result = []
        i = 0
        in_quote = False
        while i < len(line):
            if in_block:
                end = line.find("*/", i)
                if end < 0:
                    i = len(line)
                    break
                in_block = False
                i = end + 2
                continue
            ch = line[i]
            if ch == '"':
                in_quote = not in_quote
            elif not in_quote and line.startswith("//", i):
                break
            elif not in_quote and line.startswith("/*", i):
                in_block = True
                i += 2
                continue
            elif not in_quote and ch == "#" and not line.startswith("#clear", i) and not line.startswith("#include", i):
                break
            result.append(ch)
            i += 1
        out.append("".join(result))
    return "\n".join(out)


def parse_apt_config(text):
    """``[(key, value)]`` in order from APT configuration text: files of apt.conf.d or ``apt-config dump``.

    Scopes (``A { B "1"; };``) become ``A::B``; list items (``A { "x"; "y"; };`` or the dump's ``A:: "x";``)
    become ``(A, x)`` pairs; ``#clear A`` gives ``(A, None)``, which empties what came before. ``#include`` is not
    followed.
    """
    pairs = []
    scope = []
    pending = []
    for match in _APT_TOKEN_RE.finditer(_strip_apt_comments(text)):
        if match.group("word") is not None:
            pending.append(match.group("word"))
        elif match.group("quoted") is not None:
            pending.append(match.group("quoted"))
        elif match.group("open"):
            name = pending[0] if pending else ""
            scope.append(name.strip('"'))
            pending = []
        elif match.group("close"):
            if scope:
                scope.pop()
            pending = []
        elif match.group("semi"):
            if pending and pending[0] == "#clear":
                for name in pending[1:]:
                    pairs.append(("::".join(scope + [name]), None))
            elif pending and pending[0] != "#include":
                if len(pending) == 1:
                    key, value = "", pending[0]
                else:
                    key, value = pending[0], " ".join(pending[1:])
                key = "::".join([part for part in scope + [key] if part])
                if key.endswith("::"):
                    key = key[:-2]
                pairs.append((key, value.strip('"')))
            pending = []
    return pairs


def apt_config_files(host):
    """APT's configuration files below the host root, in the order APT reads them."""
    files = []
    names = [name for name in host.listdir(APT_CONF_DIR)
             if re.match(r"^[A-Za-z0-9_.-]+$", name) and not name.endswith((".disabled", ".dpkg-old", ".dpkg-dist",
                                                                            ".dpkg-new", ".ucf-old", ".bak", "~"))]
    for name in sorted(names):
        files.append("%s/%s" % (APT_CONF_DIR, name))
    if host.isfile(APT_CONF_FILE):
        files.append(APT_CONF_FILE)
    return files


def _values(pairs, key):
    """Every value of ``key`` (list semantics: ``#clear`` empties, each assignment adds)."""
    values = []
    lowered = key.lower()
    for name, value in pairs:
        if name.lower() != lowered:
            continue
        if value is None:
            values = []
        else:
            values.append(value)
    return values


def unattended_upgrades(pairs, installed):
    """``{installed, enabled, interval, blacklist}`` from APT configuration pairs."""
    enabled_values = _values(pairs, UU_ENABLE_KEY)
    interval = enabled_values[-1] if enabled_values else None
    enabled = bool(installed) and interval not in (None, "", "0", "false", "no", "off")
    blacklist = [value for value in _values(pairs, UU_BLACKLIST_KEY) if value]
    return {"installed": bool(installed), "enabled": enabled, "interval": interval, "blacklist": blacklist}


def blacklisted(name, blacklist):
    """The first blacklist entry that keeps unattended-upgrades from upgrading ``name``, or ``None``.

    unattended-upgrades matches each entry as a Python regular expression from the start of the name; an entry
    that is not a valid expression is compared as a plain prefix here.
    """
    for entry in blacklist:
        try:
            if re.match(entry, name):
                return entry
        except re.error:
            if name.startswith(entry):
                return entry
    return None


def read_packages(host, apt_config_text=None):
    """The packages that matter to the next boot, and unattended-upgrades' view of them.

    ``apt_config_text`` is the output of ``apt-config dump`` on a live host; without it APT's files below the
    host root are parsed. Returns ``{dpkg, packages: [{name, version, upstream_version, role, held,
    upgraded_unattended, blacklisted_by}], unattended_upgrades: {...}, config_source}``.
    """
    status_text = host.read(DPKG_STATUS, limit=_STATUS_LIMIT)
    installed = parse_dpkg_status(status_text) if status_text is not None else {}
    if apt_config_text is not None:
        pairs = parse_apt_config(apt_config_text)
        source = "apt-config dump"
    else:
        pairs = []
        for path in apt_config_files(host):
            pairs.extend(parse_apt_config(host.read(path, default="", limit=1024 * 1024)))
        source = "files"
    uu = unattended_upgrades(pairs, "unattended-upgrades" in installed)
    packages = []
    for name in sorted(installed):
        role = package_role(name)
        if role is None:
            continue
        info = installed[name]
        held = info["selection"] == "hold"
        by = blacklisted(name, uu["blacklist"])
        packages.append({
            "name": name,
            "version": info["version"],
            "upstream_version": upstream_version(info["version"]),
            "role": role,
            "held": held,
            "state": info["state"],
            "blacklisted_by": by,
            # Origins are not evaluated: a package from an origin unattended-upgrades does not take is counted
            # too, which errs on the side of a warning.
            "upgraded_unattended": bool(uu["enabled"] and not held and by is None),
        })
    return {
        "dpkg": status_text is not None,
        "packages": packages,
        "unattended_upgrades": uu,
        "config_source": source,
    }
