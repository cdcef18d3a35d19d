# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""NVIDIA kernel modules on a Linux host: option conflicts, unload/reload order, device holders.

Stdlib only, importable on Python 3.9+ targets.  Every function that reads the host takes a
``root`` (or ``proc_root``) so tests can point it at a fixture tree.

* Option conflicts: kmod collects ``options <module> ...`` lines from every modprobe.d file and
  then ``<module>.<param>=...`` words from the kernel command line, and hands all of them to the
  kernel in that order; for a parameter given twice the kernel keeps the last one, silently.
  :func:`find_option_conflicts` finds every place besides our own file that sets one of our
  parameters.
* Unload order: :data:`UNLOAD_ORDER` lists the NVIDIA modules dependents first;
  :func:`plan_reload` turns ``/proc/modules`` into the exact ``rmmod``/``modprobe`` sequence, or
  explains why the modules cannot be unloaded safely.
* Device holders: :func:`find_device_holders` lists processes with ``/dev/nvidia*`` open or
  mapped (what ``fuser -v /dev/nvidia*`` would show), by PID and command line.
"""

from __future__ import annotations

import os

from ansible_collections.llmserve.sglang.plugins.module_utils.nvidia_registry import (
    MODULE_PARAM_PREFIX,
    REGISTRY_DWORDS_PARAM,
    parse_registry_dwords,
    registry_key_for_param,
)

__all__ = [
    "UNLOAD_ORDER",
    "MODPROBE_CONFIG_DIRS",
    "MODPROBE_CONFIG_FILE",
    "normalize_module_name",
    "split_kernel_args",
    "logical_lines",
    "parse_modprobe_config",
    "parse_kernel_cmdline",
    "modprobe_config_files",
    "find_option_conflicts",
    "format_conflicts",
    "parse_proc_modules",
    "plan_reload",
    "find_device_holders",
    "format_holders",
]

# Dependents before what they depend on: nvidia_drm uses nvidia_modeset, and nvidia_modeset,
# nvidia_uvm and nvidia_peermem use nvidia.
UNLOAD_ORDER = ("nvidia_drm", "nvidia_modeset", "nvidia_uvm", "nvidia_peermem", "nvidia")

# kmod's configuration directories, highest priority first: a file name found in an earlier
# directory hides the file of the same name in every later one.
MODPROBE_CONFIG_DIRS = (
    "/etc/modprobe.d",
    "/run/modprobe.d",
    "/usr/local/lib/modprobe.d",
    "/usr/lib/modprobe.d",
    "/lib/modprobe.d",
)
# The old single configuration file, still read by kmod when present.
MODPROBE_CONFIG_FILE = "/etc/modprobe.conf"

_KERNEL_SPACE = " \t\n\v\f\r"


def normalize_module_name(name):
    """kmod treats ``-`` and ``_`` in module names alike; use the ``_`` spelling."""
    return name.replace("-", "_")


def split_kernel_args(text):
    """Split a parameter string into ``[(name, value or None), ...]`` like the kernel does.

    This follows ``next_arg()`` in the kernel's ``lib/cmdline.c``: words are separated by
    whitespace outside double quotes, a word is cut at its first ``=``, a double quote opening the
    value (or the whole word) is removed together with a double quote closing the word, and any
    other quote character stays in place.
    """
    args = []
    s = text or ""
    i = 0
    n = len(s)
    while True:
        while i < n and s[i] in _KERNEL_SPACE:
            i += 1
        if i >= n:
            break
        start = i
        quoted = False
        in_quote = False
        if s[i] == '"':
            start += 1
            i += 1
            quoted = True
            in_quote = True
        equals = -1
        while i < n:
            ch = s[i]
            if ch in _KERNEL_SPACE and not in_quote:
                break
            if equals < 0 and ch == "=" and i > start:
                equals = i
            if ch == '"':
                in_quote = not in_quote
            i += 1
        word_end = i
        closing_quote = word_end > start and s[word_end - 1] == '"'
        if equals < 0:
            name = s[start:word_end]
            if quoted and closing_quote:
                name = name[:-1]
            args.append((name, None))
        else:
            name = s[start:equals]
            value = s[equals + 1:word_end]
            if value.startswith('"'):
                value = value[1:]
                if closing_quote and value.endswith('"'):
                    value = value[:-1]
            elif quoted and closing_quote and value.endswith('"'):
                value = value[:-1]
            args.append((name, value))
        i = word_end + 1
    return args


def logical_lines(text):
    """Yield ``(line_number, line)`` joining lines that end in a backslash, as kmod (and the shell) does."""
    pending = ""
    first = None
    for number, line in enumerate((text or "").splitlines(), start=1):
        if first is None:
            first = number
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        yield first, pending + line
        pending = ""
        first = None
    if first is not None:
        yield first, pending


def parse_modprobe_config(text):
    """Return the parameters set by a modprobe.d file.

    The result is a list of dicts ``{line, module, param, value, command}``: one per parameter
    word of every ``options <module> ...`` line, and one per ``NVreg_...=`` style word of an
    ``install <module> <command>`` line (where a parameter can be passed on the command line of
    ``modprobe``).  ``command`` is ``options`` or ``install``.  Comment lines (first word
    starting with ``#``) and blank lines are skipped.
    """
    found = []
    for number, line in logical_lines(text):
        words = line.split(None, 2)
        if not words or words[0].startswith("#"):
            continue
        command = words[0]
        if command not in ("options", "install") or len(words) < 3:
            continue
        module = normalize_module_name(words[1])
        if command == "options":
            pairs = split_kernel_args(words[2])
        else:
            pairs = [(n, v) for (n, v) in split_kernel_args(words[2]) if v is not None and n[:1].isalpha()]
        for name, value in pairs:
            found.append({"line": number, "module": module, "param": name, "value": value, "command": command})
    return found


def parse_kernel_cmdline(text):
    """Return the module parameters on a kernel command line as ``[{module, param, value}]``.

    Only words of the form ``module.param[=value]`` count; the module name is normalised.
    """
    found = []
    for name, value in split_kernel_args(text):
        if "." not in name:
            continue
        module, param = name.split(".", 1)
        if not module or not param:
            continue
        found.append({"module": normalize_module_name(module), "param": param, "value": value})
    return found


def _join_root(root, path):
    root = root or "/"
    if root == "/":
        return path
    return os.path.join(root, path.lstrip("/"))


def modprobe_config_files(root="/", dirs=MODPROBE_CONFIG_DIRS, single_file=MODPROBE_CONFIG_FILE):
    """List the modprobe configuration files kmod reads, in the order it reads them.

    Returns host paths (without ``root``).  Only names ending in ``.conf`` and not starting with
    ``.`` count; a name found in a higher-priority directory hides the same name further down.
    kmod reads the surviving files sorted by name, then ``single_file`` when it exists.
    """
    chosen = {}
    for directory in dirs:
        local = _join_root(root, directory)
        try:
            names = os.listdir(local)
        except OSError:
            continue
        for name in names:
            if name.startswith(".") or not name.endswith(".conf") or name in chosen:
                continue
            if os.path.isdir(os.path.join(local, name)):
                continue
            chosen[name] = os.path.join(directory, name)
    files = [chosen[name] for name in sorted(chosen)]
    if single_file and os.path.isfile(_join_root(root, single_file)):
        files.append(single_file)
    return files


def _read(root, path):
    try:
        with open(_join_root(root, path), "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return None


def find_option_conflicts(
    params,
    module="nvidia",
    exclude=(),
    root="/",
    dirs=MODPROBE_CONFIG_DIRS,
    single_file=MODPROBE_CONFIG_FILE,
    cmdline_path="/proc/cmdline",
):
    """Find every other place that sets one of ``params`` for ``module``.

    ``exclude`` holds the host paths of our own file(s).  When ``params`` holds standalone
    ``NVreg_*`` options but not ``NVreg_RegistryDwords``, another ``NVreg_RegistryDwords`` counts
    as a conflict only when it sets one of the same keys (the registry value would override ours).

    Returns ``(conflicts, scanned)``: ``conflicts`` is a list of dicts
    ``{source, line, param, value, kind}`` (``kind`` is ``modprobe.d``, ``modprobe.d install`` or
    ``cmdline``; ``line`` is None for the command line) in the order kmod applies them;
    ``scanned`` lists the files read (plus the command line path when read).
    """
    wanted = set(params)
    shadowed = set(
        registry_key_for_param(p) for p in wanted if p.startswith(MODULE_PARAM_PREFIX) and p != REGISTRY_DWORDS_PARAM
    )

    def hits(param, value):
        if param in wanted:
            return True
        if param == REGISTRY_DWORDS_PARAM and shadowed:
            return bool(shadowed & set(parse_registry_dwords(value or "")))
        return False

    module = normalize_module_name(module)
    excluded = set(os.path.normpath(p) for p in exclude)
    conflicts = []
    scanned = []
    for path in modprobe_config_files(root, dirs, single_file):
        if os.path.normpath(path) in excluded:
            continue
        text = _read(root, path)
        if text is None:
            continue
        scanned.append(path)
        for item in parse_modprobe_config(text):
            if item["module"] == module and hits(item["param"], item["value"]):
                conflicts.append(
                    {
                        "source": path,
                        "line": item["line"],
                        "param": item["param"],
                        "value": item["value"],
                        "kind": "modprobe.d" if item["command"] == "options" else "modprobe.d install",
                    }
                )
    if cmdline_path:
        text = _read(root, cmdline_path)
        if text is not None:
            scanned.append(cmdline_path)
            for item in parse_kernel_cmdline(text):
                if item["module"] == module and hits(item["param"], item["value"]):
                    conflicts.append(
                        {"source": cmdline_path, "line": None, "param": item["param"], "value": item["value"], "kind": "cmdline"}
                    )
    return conflicts, scanned


def format_conflicts(conflicts, own_file, module="nvidia"):
    """One readable message for the role's failure, naming our file and every conflicting source."""
    if not conflicts:
        return "no other modprobe.d file or kernel command line sets these %s options" % module
    parts = []
    for item in conflicts:
        where = item["source"] if item["line"] is None else "%s:%d" % (item["source"], item["line"])
        value = "" if item["value"] is None else "=%s" % item["value"]
        if item["kind"] == "cmdline":
            parts.append("%s sets %s.%s%s" % (where, module, item["param"], value))
        else:
            parts.append("%s sets %s%s" % (where, item["param"], value))
    sources = sorted(set(item["source"] for item in conflicts))
    return (
        "%s is not the only place setting %s options: %s. kmod passes all of them to the kernel and the "
        "last one silently wins, so the value in %s may never reach the driver. Remove these settings "
        "from %s (or move them into the role's variables), then run again."
        % (own_file, module, "; ".join(parts), own_file, ", ".join(sources))
    )


def parse_proc_modules(text):
    """Parse ``/proc/modules`` into ``{name: {size, refcount, used_by, state}}``.

    ``refcount`` is None when the kernel prints ``-`` (no unload support).
    """
    modules = {}
    for line in (text or "").splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        name = fields[0]
        try:
            size = int(fields[1])
        except ValueError:
            size = None
        try:
            refcount = int(fields[2])
        except ValueError:
            refcount = None
        used_by = []
        if len(fields) > 3 and fields[3] != "-":
            used_by = [normalize_module_name(m) for m in fields[3].split(",") if m and m != "[permanent]"]
        state = fields[4] if len(fields) > 4 else None
        modules[normalize_module_name(name)] = {"size": size, "refcount": refcount, "used_by": used_by, "state": state}
    return modules


def plan_reload(modules, order=UNLOAD_ORDER):
    """Work out how to unload and load back the NVIDIA modules.

    ``modules`` is the dict from :func:`parse_proc_modules`.  Returns a dict:

    * ``unload``: the loaded modules of ``order``, in ``order`` (run ``rmmod`` on each in turn);
    * ``load``: the same modules in reverse order (run ``modprobe`` on each in turn);
    * ``problems``: sentences explaining why unloading would fail or be unsafe: another module
      that is not in ``order`` uses one of them, or a module has more users than the modules
      that will be removed before it (an open device, a console, a running process).
    """
    order = [normalize_module_name(m) for m in order]
    unload = [m for m in order if m in modules]
    problems = []
    removed_before = set()
    for name in unload:
        info = modules[name]
        used_by = info.get("used_by") or []
        if info.get("state") not in (None, "Live"):
            problems.append("module %s is in state %s; wait for it to settle and retry" % (name, info.get("state")))
        outside = [m for m in used_by if m not in unload]
        if outside:
            problems.append(
                "module %s is used by %s, which is not in the unload list; unload %s first "
                "(or add it to the unload list)" % (name, ", ".join(outside), ", ".join(outside))
            )
        late = [m for m in used_by if m in unload and m not in removed_before]
        if late:
            problems.append(
                "module %s is used by %s, which the unload list removes after it; put %s before %s"
                % (name, ", ".join(late), ", ".join(late), name)
            )
        refcount = info.get("refcount")
        if refcount is None:
            problems.append("module %s reports no reference count (this kernel cannot unload it); reboot instead" % name)
        elif refcount > len(used_by):
            problems.append(
                "module %s has %d reference(s) but only %d come from the modules using it (%s); "
                "a process, the console or another driver still holds it"
                % (name, refcount, len(used_by), ", ".join(used_by) or "none")
            )
        removed_before.add(name)
    return {"unload": unload, "load": list(reversed(unload)), "problems": problems}


def _read_small(path, limit=65536):
    try:
        with open(path, "rb") as handle:
            return handle.read(limit)
    except OSError:
        return None


def find_device_holders(proc_root="/proc", prefix="/dev/nvidia", ignore_pids=()):
    """List processes that have a ``prefix*`` device open or mapped.

    Returns ``[{pid, comm, cmdline, paths}]`` sorted by PID; ``paths`` are the device paths
    found among the process's open files (``/proc/PID/fd``) and memory maps (``/proc/PID/maps``).
    Processes that vanish or cannot be read while scanning are skipped.
    """
    ignore = set(int(p) for p in ignore_pids)
    holders = []
    try:
        entries = os.listdir(proc_root)
    except OSError:
        return holders
    for entry in entries:
        if not entry.isdigit():
            continue
        pid = int(entry)
        if pid in ignore:
            continue
        base = os.path.join(proc_root, entry)
        paths = set()
        fd_dir = os.path.join(base, "fd")
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            fds = []
        for fd in fds:
            try:
                target = os.readlink(os.path.join(fd_dir, fd))
            except OSError:
                continue
            if target.startswith(prefix):
                paths.add(target.split(" (deleted)")[0])
        maps = _read_small(os.path.join(base, "maps"), limit=4 * 1024 * 1024)
        if maps:
            for line in maps.decode("utf-8", "replace").splitlines():
                fields = line.split(None, 5)
                if len(fields) == 6 and fields[5].startswith(prefix):
                    paths.add(fields[5].split(" (deleted)")[0])
        if not paths:
            continue
        comm = (_read_small(os.path.join(base, "comm")) or b"").decode("utf-8", "replace").strip()
        raw = _read_small(os.path.join(base, "cmdline")) or b""
        cmdline = " ".join(part for part in raw.decode("utf-8", "replace").split("\0") if part)
        holders.append({"pid": pid, "comm": comm, "cmdline": cmdline, "paths": sorted(paths)})
    holders.sort(key=lambda h: h["pid"])
    return holders


def format_holders(holders, prefix="/dev/nvidia"):
    """One readable sentence naming each holder's PID, command and devices."""
    if not holders:
        return "no process holds %s*" % prefix
    parts = []
    for h in holders:
        command = h["cmdline"] or h["comm"] or "?"
        if len(command) > 160:
            command = command[:157] + "..."
        parts.append("PID %d (%s: %s) holds %s" % (h["pid"], h["comm"] or "?", command, ", ".join(h["paths"])))
    return "; ".join(parts)
