# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The host as it will boot next: kernel, kernel command line, NVIDIA module, initramfs, driver versions.

Stdlib only, importable on Python 3.9+ targets; reads below a root through ``gpu_sysfs.HostRoot`` so that a
fixture tree stands in for a host. Nothing here writes.

* The kernel: GRUB's default entry (``GRUB_DEFAULT``, ``saved`` through ``/boot/grub/grubenv``) resolved in
  ``/boot/grub/grub.cfg``; without GRUB, the newest installed kernel, and the facts say which.
* The command line GRUB will write: ``/etc/default/grub`` and then ``/etc/default/grub.d/*.cfg`` evaluated as
  ``grub-mkconfig`` sources them, by a small evaluator of shell assignments (nothing is executed); a line it cannot
  evaluate is listed, never guessed. Each word remembers the file that added it, so a rule can say where ``iommu=pt``
  comes from.
* The NVIDIA kernel module built for that kernel: ``nvidia.ko`` (or Debian's ``nvidia-current.ko``) anywhere below
  ``/lib/modules/<kernel>`` (DKMS ``updates/dkms``, Ubuntu's precompiled ``kernel/nvidia-<branch>``), plain, xz, gzip
  or zstd compressed; its version and vermagic are read from the ELF ``.modinfo`` section.
* The initramfs of that kernel: the ``modprobe.d`` files inside it (a newc cpio reader over the concatenated
  archives), so a rule can compare their NVIDIA options with those on the root file system.
* The user-space driver (the ``libnvidia-ml.so.1`` link's target) and the fabric manager (its package).
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import re
import shutil
import struct
import subprocess

from ansible_collections.llmserve.sglang.plugins.module_utils import gpu_sysfs
from ansible_collections.llmserve.sglang.plugins.module_utils.nvidia_modules import (
    MODPROBE_CONFIG_DIRS,
    logical_lines,
    normalize_module_name,
    parse_modprobe_config,
)

__all__ = [
    "evaluate_grub_defaults",
    "parse_grub_cfg",
    "kernel_sort_key",
    "installed_kernels",
    "choose_kernel",
    "find_nvidia_modules",
    "read_modinfo",
    "parse_modinfo",
    "read_initramfs_modprobe",
    "read_userspace_version",
    "read_next_boot",
]

GRUB_DEFAULTS = "/etc/default/grub"
GRUB_DEFAULTS_DIR = "/etc/default/grub.d"
GRUB_CFG = "/boot/grub/grub.cfg"
GRUB_ENV = "/boot/grub/grubenv"
MODULE_DIRS = ("/lib/modules", "/usr/lib/modules")
# nvidia.ko, Debian's nvidia-current.ko and the Tesla branches' names (nvidia-tesla-535.ko)
_NVIDIA_MODULE_RE = re.compile(r"^(nvidia|nvidia-current|nvidia-tesla(-[0-9]+)?)\.ko(\.(xz|zst|gz))?$")
_MODULE_LIMIT = 512 * 1024 * 1024
_INITRAMFS_FILE_LIMIT = 1024 * 1024
_LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib64")
_NVML_VERSION_RE = re.compile(r"^libnvidia-ml\.so\.([0-9]+\.[0-9]+(\.[0-9]+)?)$")

# ---------------------------------------------------------------------------------------------------
# /etc/default/grub as grub-mkconfig sources it
# ---------------------------------------------------------------------------------------------------

_ASSIGN_RE = re.compile(r"^(?:export\s+)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)$")
_VAR_RE = re.compile(r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)\}|(?P<plain>[A-Za-z_][A-Za-z0-9_]*))")


_BLOCK_OPEN = ("if", "case", "for", "while", "until")
_BLOCK_CLOSE = ("fi", "esac", "done")
# the words of a block's own lines: they change nothing themselves (what runs inside is judged line by line)
_BLOCK_WORDS = _BLOCK_OPEN + _BLOCK_CLOSE + ("then", "else", "elif", "do", ";;")


class _Unevaluable(ValueError):
    pass


def _expand(text, values):
    def repl(match):
        return values.get(match.group("braced") or match.group("plain"), "")
    if "$(" in text or "`" in text or re.search(r"\$\{[^}]*[^A-Za-z0-9_}]", text):
        raise _Unevaluable("command substitution or parameter operator")
    return _VAR_RE.sub(repl, text)


def _shell_value(raw, values):
    """The value of a shell assignment's right-hand side (quotes, ``$VAR``), or raise ``_Unevaluable``."""
    out = []
    i = 0
    raw = raw.rstrip()
    while i < len(raw):
        ch = raw[i]
        if ch == "'":
            end = raw.find("'", i + 1)
            if end < 0:
                raise _Unevaluable("unterminated quote")
            out.append(raw[i + 1:end])
            i = end + 1
        elif ch == '"':
            j = i + 1
            part = []
            while j < len(raw) and raw[j] != '"':
                if raw[j] == "\\" and j + 1 < len(raw) and raw[j + 1] in '"\\$`':
                    part.append(raw[j + 1])
                    j += 2
                    continue
                part.append(raw[j])
                j += 1
            if j >= len(raw):
                raise _Unevaluable("unterminated quote")
            out.append(_expand("".join(part), values))
            i = j + 1
        elif ch.isspace():
            rest = raw[i:].strip()
            if rest and not rest.startswith("#"):
                # VAR=x command: a command run with a variable set; not an assignment grub-mkconfig keeps
                raise _Unevaluable("more than one word")
            break
        elif ch == ";":
            if raw[i + 1:].strip():
                raise _Unevaluable("several commands on one line")
            break
        else:
            j = i
            while j < len(raw) and not raw[j].isspace() and raw[j] not in "'\";":
                j += 1
            out.append(_expand(raw[i:j], values))
            i = j
    return "".join(out)


def grub_default_files(host):
    """``/etc/default/grub`` and then ``/etc/default/grub.d/*.cfg`` in the shell's glob order."""
    files = []
    if host.isfile(GRUB_DEFAULTS):
        files.append(GRUB_DEFAULTS)
    for name in sorted(host.listdir(GRUB_DEFAULTS_DIR)):
        path = "%s/%s" % (GRUB_DEFAULTS_DIR, name)
        if name.endswith(".cfg") and host.isfile(path):
            files.append(path)
    return files


def evaluate_grub_defaults(host):
    """Evaluate GRUB's default files. Returns ``{files, values, origins, unevaluated}``.

    ``values`` maps each ``GRUB_*`` variable to its final text; ``origins`` maps every word of
    ``GRUB_CMDLINE_LINUX`` and ``GRUB_CMDLINE_LINUX_DEFAULT`` to the file that added it (a word kept from the
    previous value keeps its file); ``unevaluated`` lists ``{file, line, text, why}`` for lines that are neither
    an assignment nor a comment (``if``, commands): their effect is unknown; ``cmdline`` says whether the line may
    change the kernel command line (any line that is no assignment may, an assignment only to GRUB_CMDLINE_LINUX*).
    """
    values = {}
    origins = {}
    unevaluated = []
    files = grub_default_files(host)
    for path in files:
        text = host.read(path, default="", limit=1024 * 1024)
        depth = 0
        for number, line in logical_lines(text):
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            word = stripped.split(None, 1)[0].rstrip(";")
            if word in _BLOCK_OPEN:
                depth += 1
            elif word in _BLOCK_CLOSE and depth:
                depth -= 1
            match = _ASSIGN_RE.match(stripped)
            if not match or depth:
                # an assignment inside if/case/for/while may or may not happen: never applied, always listed
                unevaluated.append({"file": path, "line": number, "text": stripped[:200],
                                    "why": "inside a conditional or loop" if match else "not an assignment",
                                    "cmdline": (match.group("name").startswith("GRUB_CMDLINE") if match
                                                else word not in _BLOCK_WORDS)})
                continue
            name = match.group("name")
            try:
                value = _shell_value(match.group("value"), values)
            except _Unevaluable as exc:
                unevaluated.append({"file": path, "line": number, "text": stripped[:200], "why": str(exc),
                                    "cmdline": name.startswith("GRUB_CMDLINE_LINUX")})
                continue
            if name.startswith("GRUB_CMDLINE_LINUX"):
                before = dict((word, origins.get((name, word))) for word in values.get(name, "").split())
                for key in [key for key in origins if key[0] == name]:
                    del origins[key]
                for word in value.split():
                    origins[(name, word)] = before.get(word) or path
            values[name] = value
    flat = {}
    for (name, word), path in origins.items():
        flat.setdefault(word, path)
    return {"files": files, "values": values, "origins": flat, "unevaluated": unevaluated}


# ---------------------------------------------------------------------------------------------------
# /boot/grub/grub.cfg
# ---------------------------------------------------------------------------------------------------

_ENTRY_RE = re.compile(r"^\s*(?P<kind>menuentry|submenu)\s+(?P<rest>.*)\{\s*$")
_QUOTED_RE = re.compile(r"'([^']*)'|\"([^\"]*)\"")
_LINUX_RE = re.compile(r"^\s*linux(?:efi|16)?\s+(?P<image>\S+)(?P<args>.*)$")
_INITRD_RE = re.compile(r"^\s*initrd(?:efi|16)?\s+(?P<image>\S+)")
_ID_RE = re.compile(r"\$menuentry_id_option\s+(?:'([^']*)'|\"([^\"]*)\"|(\S+))")


def _kernel_of_image(image):
    name = os.path.basename(image)
    for prefix in ("vmlinuz-", "vmlinux-", "linux-", "Image-", "bzImage-"):
        if name.startswith(prefix):
            return name[len(prefix):]
    return None


def parse_grub_cfg(text):
    """Menu entries of a grub.cfg: ``[{title, id, path, kernel, image, args, initrd, submenu}]`` in menu order.

    ``path`` is the entry's position as GRUB_DEFAULT numbers it (``"0"``, ``"1>2"``); ``args`` the words after the
    kernel image on the ``linux`` line. Other blocks (``function x {``) are skipped.
    """
    entries = []
    blocks = []  # each: {"kind": menuentry|submenu|block, "path", "title", "children": [count]}
    top = [0]
    current = None
    for line in (text or "").splitlines():
        stripped = line.strip()
        match = _ENTRY_RE.match(line)
        if match:
            submenu = next((block for block in reversed(blocks) if block["kind"] == "submenu"), None)
            counter = submenu["children"] if submenu else top
            position = str(counter[0]) if submenu is None else "%s>%d" % (submenu["path"], counter[0])
            counter[0] += 1
            quoted = _QUOTED_RE.search(match.group("rest"))
            title = (quoted.group(1) if quoted.group(1) is not None else quoted.group(2)) if quoted else ""
            ident = _ID_RE.search(match.group("rest"))
            ident = next((g for g in ident.groups() if g is not None), None) if ident else None
            blocks.append({"kind": match.group("kind"), "path": position, "title": title, "id": ident,
                           "children": [0]})
            if match.group("kind") == "menuentry":
                current = {"title": title, "id": ident, "path": position, "kernel": None, "image": None,
                           "args": None, "initrd": None, "submenu": submenu["title"] if submenu else None,
                           "submenu_id": submenu["id"] if submenu else None}
                entries.append(current)
            continue
        if stripped.endswith("{") and not stripped.startswith("#"):
            blocks.append({"kind": "block", "path": None, "title": None, "id": None, "children": [0]})
            continue
        if stripped == "}" or stripped.startswith("}"):
            if blocks:
                closed = blocks.pop()
                if closed["kind"] == "menuentry":
                    current = None
            continue
        if current is not None:
            linux = _LINUX_RE.match(line)
            if linux and current["image"] is None:
                current["image"] = linux.group("image")
                current["kernel"] = _kernel_of_image(linux.group("image"))
                current["args"] = linux.group("args").strip()
            initrd = _INITRD_RE.match(line)
            if initrd and current["initrd"] is None:
                current["initrd"] = initrd.group("image")
    return entries


def read_grubenv(text):
    values = {}
    for line in (text or "").splitlines():
        if line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        values[key.strip()] = value.strip()
    return values


def _find_entry(entries, wanted):
    """The menu entry GRUB_DEFAULT (or saved_entry) ``wanted`` names: a position, an id or a title."""
    if wanted is None:
        wanted = "0"
    for key in ("path", "id", "title"):
        for entry in entries:
            if entry[key] == wanted:
                return entry
    # "Advanced options for X>Title" by titles or ids of the submenu and the entry
    if ">" in wanted:
        head, tail = wanted.split(">", 1)
        for entry in entries:
            if head in (entry["submenu"], entry["submenu_id"]) and tail in (entry["title"], entry["id"]):
                return entry
    # A submenu position: GRUB boots its first entry
    for entry in entries:
        if entry["path"].startswith(wanted + ">"):
            return entry
    return None


# ---------------------------------------------------------------------------------------------------
# Installed kernels
# ---------------------------------------------------------------------------------------------------

def kernel_sort_key(release):
    """Order kernel releases as version sort does (6.8.0-60-generic before 6.8.0-100-generic)."""
    key = []
    for part in re.findall(r"[0-9]+|[^0-9]+", release or ""):
        key.append((1, int(part), "") if part.isdigit() else (0, 0, part))
    return key


def installed_kernels(host):
    """Kernel releases with an image in ``/boot`` (``vmlinuz-*``), oldest first; each with its modules' state."""
    releases = set()
    for name in host.listdir("/boot"):
        kernel = _kernel_of_image(name)
        if kernel and not name.endswith((".old", ".bak", ".sig", ".efi.signed")) and name.startswith("vmlinuz-"):
            releases.add(kernel)
    return sorted(releases, key=kernel_sort_key)


def choose_kernel(host, grub_values, running):
    """``{kernel, source, detail, entry, grub_cfg}``: the kernel the host will boot next and why we think so."""
    kernels = installed_kernels(host)
    cfg_text = host.read(GRUB_CFG, limit=4 * 1024 * 1024)
    if cfg_text is not None:
        entries = parse_grub_cfg(cfg_text)
        default = grub_values.get("GRUB_DEFAULT", "0") or "0"
        source = "grub_default"
        wanted = default
        detail = "GRUB_DEFAULT=%s" % default
        if default == "saved":
            env = read_grubenv(host.read(GRUB_ENV, default="", limit=65536))
            wanted = env.get("next_entry") or env.get("saved_entry") or "0"
            source = "grub_saved"
            detail = "GRUB_DEFAULT=saved, %s=%s in %s" % (
                "next_entry" if env.get("next_entry") else "saved_entry", wanted, GRUB_ENV)
        entry = _find_entry(entries, wanted)
        if entry is None and entries:
            entry = entries[0]
            detail += " names no menu entry; GRUB falls back to the first one"
        if entry is not None and entry["kernel"]:
            return {"kernel": entry["kernel"], "source": source,
                    "detail": "%s: menu entry '%s' of %s" % (detail, entry["title"], GRUB_CFG),
                    "entry": entry, "grub_cfg": True, "installed": kernels}
        detail += "; no Linux entry found in %s" % GRUB_CFG
    else:
        detail = "no %s" % GRUB_CFG
    if kernels:
        return {"kernel": kernels[-1], "source": "newest_installed",
                "detail": "%s: the newest kernel in /boot is assumed (systemd-boot, EFI stub or a new host)" % detail,
                "entry": None, "grub_cfg": cfg_text is not None, "installed": kernels}
    return {"kernel": running, "source": "running" if running else "unknown",
            "detail": "%s and no kernel image in /boot: the running kernel is assumed" % detail,
            "entry": None, "grub_cfg": cfg_text is not None, "installed": kernels}


# ---------------------------------------------------------------------------------------------------
# NVIDIA kernel module files and their .modinfo
# ---------------------------------------------------------------------------------------------------

def parse_modinfo(data):
    """``{field: value}`` from the ``.modinfo`` section of an ELF kernel module (bytes); ``None`` if not ELF."""
    if len(data) < 64 or data[:4] != b"\x7fELF":
        return None
    is64 = data[4] == 2
    endian = "<" if data[5] == 1 else ">"
    try:
        if is64:
            shoff, = struct.unpack_from(endian + "Q", data, 0x28)
            shentsize, shnum, shstrndx = struct.unpack_from(endian + "HHH", data, 0x3A)
        else:
            shoff, = struct.unpack_from(endian + "I", data, 0x20)
            shentsize, shnum, shstrndx = struct.unpack_from(endian + "HHH", data, 0x2E)

        def section(index):
            base = shoff + index * shentsize
            if is64:
                name, _type, _flags, _addr, offset, size = struct.unpack_from(endian + "IIQQQQ", data, base)
            else:
                name, _type, _flags, _addr, offset, size = struct.unpack_from(endian + "IIIIII", data, base)
            return name, offset, size

        _n, str_off, str_size = section(shstrndx)
        names = data[str_off:str_off + str_size]
        for index in range(shnum):
            name_off, offset, size = section(index)
            end = names.find(b"\x00", name_off)
            if names[name_off:end] == b".modinfo":
                fields = {}
                for item in data[offset:offset + size].split(b"\x00"):
                    if b"=" in item:
                        key, value = item.split(b"=", 1)
                        fields.setdefault(key.decode("ascii", "replace"), value.decode("utf-8", "replace"))
                return fields
    except struct.error:
        return None
    return {}


def _decompress(real_path, suffix):
    """Bytes of a (compressed) module file, at most ``_MODULE_LIMIT``; raises OSError/ValueError."""
    if suffix == ".xz":
        opener = lzma.open
    elif suffix == ".gz":
        opener = gzip.open
    elif suffix == ".bz2":
        opener = bz2.open
    elif suffix == ".zst":
        return _zstd(real_path)
    else:
        opener = open
    with opener(real_path, "rb") as handle:
        return handle.read(_MODULE_LIMIT)


def _zstd_binary():
    # The standard library of the supported Pythons has no zstd; the zstd tool is on every host that compresses
    # modules or initramfs images with it (initramfs-tools depends on it for that).
    binary = shutil.which("zstd") or shutil.which("unzstd")
    if binary is None:
        raise OSError("zstd is not installed, so a zstd-compressed file cannot be read")
    return binary


def _zstd(real_path, limit=_MODULE_LIMIT):
    binary = _zstd_binary()
    with open(real_path, "rb") as source:
        # Not AnsibleModule.run_command: this runs without a module (a tree read by tests), and only the first
        # _MODULE_LIMIT bytes of the output are wanted, not all of it in memory.
        # pylint: disable-next=consider-using-with,ansible-bad-function
        proc = subprocess.Popen([binary, "-dc", "-q"], stdin=source, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        data = proc.stdout.read(limit)
        proc.stdout.close()
        proc.kill()
        err = proc.stderr.read()
        proc.wait()
    if not data:
        raise OSError("zstd could not decompress it: %s" % err.decode("utf-8", "replace").strip()[:200])
    return data


def read_modinfo(host, path):
    """``(fields, error)`` of the module at host path ``path``."""
    real = host.resolve(path)
    if real is None or not os.path.isfile(real):
        return None, "not a file"
    suffix = os.path.splitext(path)[1] if not path.endswith(".ko") else ""
    try:
        data = _decompress(real, suffix)
    except (OSError, IOError, EOFError, ValueError, lzma.LZMAError) as exc:
        return None, str(exc)
    if host.recorder is not None:
        host.recorder.file(path)
    fields = parse_modinfo(data)
    if fields is None:
        return None, "not an ELF file"
    return fields, None


def _walk(host, top, limit=20000):
    """Host paths of the files below ``top`` (no link followed out of the tree), breadth first."""
    found = []
    pending = [top]
    while pending and len(found) < limit:
        directory = pending.pop(0)
        for name in host.listdir(directory):
            path = "%s/%s" % (directory, name)
            real = os.path.join(host.root, path.lstrip("/"))
            if os.path.islink(real):
                continue
            if os.path.isdir(real):
                pending.append(path)
            else:
                found.append(path)
    return found


def _module_source(relative):
    if relative.startswith("updates/dkms/"):
        return "dkms"
    if relative.startswith("kernel/nvidia-") or "/nvidia-" in relative:
        return "packaged"
    return "other"


def find_nvidia_modules(host, kernel):
    """NVIDIA module files for ``kernel``: ``[{path, name, source, version, vermagic, flavor, in_modules_dep,
    error}]``, plus whether ``modules.dep`` exists (``depmod`` ran for that kernel)."""
    base = None
    for top in MODULE_DIRS:
        if host.isdir("%s/%s" % (top, kernel)):
            base = "%s/%s" % (top, kernel)
            break
    if base is None:
        return {"modules_dir": None, "modules_dep": False, "modules": []}
    dep_text = host.read(base + "/modules.dep", limit=16 * 1024 * 1024)
    dep_paths = set()
    for line in (dep_text or "").splitlines():
        if ":" in line:
            dep_paths.add(line.split(":", 1)[0].strip())
    modules = []
    for path in _walk(host, base):
        name = path.rsplit("/", 1)[1]
        if not _NVIDIA_MODULE_RE.match(name):
            continue
        relative = path[len(base) + 1:]
        fields, error = read_modinfo(host, path)
        fields = fields or {}
        license_text = fields.get("license", "")
        modules.append({
            "path": path,
            "name": normalize_module_name(name.split(".ko", 1)[0]),
            "source": _module_source(relative),
            "version": fields.get("version"),
            "vermagic": fields.get("vermagic"),
            "flavor": ("open" if "Dual MIT/GPL" in license_text
                       else ("proprietary" if license_text else None)),
            "in_modules_dep": relative in dep_paths or path in dep_paths,
            "error": error,
        })
    modules.sort(key=lambda item: (item["source"] != "dkms", item["path"]))
    return {"modules_dir": base, "modules_dep": dep_text is not None, "modules": modules}


# ---------------------------------------------------------------------------------------------------
# initramfs: the modprobe.d files inside it
# ---------------------------------------------------------------------------------------------------

_CPIO_MAGICS = (b"070701", b"070702")
_CPIO_NAME_MAX = 4096  # PATH_MAX


def _read_exact(stream, size):
    chunks = []
    while size > 0:
        chunk = stream.read(min(size, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _skip(stream, size):
    while size > 0:
        chunk = stream.read(min(size, 1 << 20))
        if not chunk:
            return False
        size -= len(chunk)
    return True


def _cpio_members(stream, wanted, found):
    """Read newc members from ``stream`` until the trailer; keep the text of names ``wanted(name)`` accepts.

    Returns the number of bytes consumed (to find the next archive), or ``None`` at a stream that is no cpio.
    """
    consumed = 0
    while True:
        header = _read_exact(stream, 110)
        if len(header) < 110 or header[:6] not in _CPIO_MAGICS:
            return None if consumed == 0 else consumed
        fields = [int(header[6 + 8 * i:14 + 8 * i], 16) for i in range(13)]
        mode, filesize, namesize = fields[1], fields[6], fields[11]
        if namesize > _CPIO_NAME_MAX:
            # a header no initramfs tool writes: its name alone could be gigabytes read into memory
            raise ValueError("a cpio member name of %d bytes (at most %d)" % (namesize, _CPIO_NAME_MAX))
        name_pad = (4 - (110 + namesize) % 4) % 4
        name = _read_exact(stream, namesize + name_pad)[:namesize].rstrip(b"\x00").decode("utf-8", "replace")
        data_pad = (4 - filesize % 4) % 4
        consumed += 110 + namesize + name_pad + filesize + data_pad
        if name == "TRAILER!!!":
            return consumed
        regular = (mode & 0o170000) == 0o100000
        if regular and wanted(name) and filesize <= _INITRAMFS_FILE_LIMIT:
            found[name] = _read_exact(stream, filesize).decode("utf-8", "replace")
            _skip(stream, data_pad)
        elif not _skip(stream, filesize + data_pad):
            return consumed


def _is_modprobe_file(name):
    name = "/" + name.lstrip("./")
    return any(name.startswith(d + "/") and name.endswith(".conf") for d in MODPROBE_CONFIG_DIRS)


def _open_compressed(handle, magic):
    if magic.startswith(b"\x1f\x8b"):
        return gzip.GzipFile(fileobj=handle), "gzip"
    if magic.startswith(b"\xfd7zXZ\x00"):
        return lzma.LZMAFile(handle), "xz"
    if magic.startswith(b"BZh"):
        return bz2.BZ2File(handle), "bzip2"
    if magic.startswith(b"\x28\xb5\x2f\xfd"):
        return None, "zstd"
    if magic.startswith(b"\x02\x21\x4c\x18") or magic.startswith(b"\x04\x22\x4d\x18"):
        return None, "lz4"
    if magic.startswith(b"\x89LZO"):
        return None, "lzo"
    return None, None


def read_initramfs_modprobe(host, path):
    """``{path, exists, compression, files: {host path: text}, error}`` for the modprobe.d files of an initramfs.

    An initramfs is a chain of cpio archives: uncompressed ones first (CPU microcode), then one compressed archive
    with the rest. Only the ``modprobe.d`` files are kept.
    """
    result = {"path": path, "exists": False, "compression": None, "files": {}, "error": None}
    real = host.resolve(path)
    if real is None or not os.path.isfile(real):
        return result
    result["exists"] = True
    if host.recorder is not None:
        host.recorder.file(path)
    found = {}
    try:
        with open(real, "rb") as handle:
            while True:
                start = handle.tell()
                consumed = _cpio_members(handle, _is_modprobe_file, found)
                if consumed is None:
                    handle.seek(start)
                    break
                handle.seek(start + consumed)
                # archives are padded with zeros to a block boundary
                while True:
                    byte = handle.read(1)
                    if byte != b"\x00":
                        if byte:
                            handle.seek(-1, io.SEEK_CUR)
                        break
            magic = handle.read(6)
            handle.seek(-len(magic), io.SEEK_CUR)
            if magic:
                offset = handle.tell()
                stream, kind = _open_compressed(handle, magic)
                result["compression"] = kind
                if kind == "zstd":
                    _zstd_members(real, offset, found)
                elif stream is None:
                    raise ValueError("compression %s cannot be read here" % (kind or "unknown (magic %r)" % magic))
                else:
                    _cpio_members(stream, _is_modprobe_file, found)
            else:
                result["compression"] = "none"
    except (OSError, IOError, EOFError, ValueError, lzma.LZMAError) as exc:
        result["error"] = str(exc)
    result["files"] = dict(("/" + name.lstrip("./"), text) for name, text in sorted(found.items()))
    return result


def _zstd_members(real_path, offset, found):
    """Read the cpio members of a zstd stream starting at ``offset``, through the zstd tool, without holding it."""
    binary = _zstd_binary()
    with open(real_path, "rb") as source:
        source.seek(offset)
        # Not AnsibleModule.run_command: the cpio stream is read as it comes (an initramfs decompresses to
        # hundreds of MiB), which run_command, holding all output in memory, cannot do.
        # pylint: disable-next=consider-using-with,ansible-bad-function
        proc = subprocess.Popen([binary, "-dc", "-q"], stdin=source, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        try:
            _cpio_members(proc.stdout, _is_modprobe_file, found)
        finally:
            proc.stdout.close()
            proc.kill()
            proc.wait()


def nvidia_options(files):
    """``{file: ["options nvidia NVreg_X=1", ...]}`` (normalised words) for files setting NVIDIA module options."""
    options = {}
    for path, text in sorted(files.items()):
        words = ["%s %s=%s" % (item["module"], item["param"], item["value"]) if item["value"] is not None
                 else "%s %s" % (item["module"], item["param"])
                 for item in parse_modprobe_config(text) if item["module"].startswith("nvidia")]
        if words:
            options[path] = words
    return options


def root_modprobe_files(host):
    """The modprobe.d files on the root file system, as the initramfs hook copies them (``{path: text}``)."""
    files = {}
    for directory in MODPROBE_CONFIG_DIRS:
        for name in host.listdir(directory):
            path = "%s/%s" % (directory, name)
            if name.endswith(".conf") and host.isfile(path):
                files[path] = host.read(path, default="", limit=_INITRAMFS_FILE_LIMIT)
    return files


# ---------------------------------------------------------------------------------------------------
# User-space driver version
# ---------------------------------------------------------------------------------------------------

def read_userspace_version(host):
    """``{version, path, versions}``: the NVML library the loader finds (``libnvidia-ml.so.1``'s target)."""
    versions = {}
    chosen = None
    for directory in _LIB_DIRS:
        for name in host.listdir(directory):
            match = _NVML_VERSION_RE.match(name)
            if match:
                versions.setdefault(match.group(1), "%s/%s" % (directory, name))
        target = host.readlink("%s/libnvidia-ml.so.1" % directory)
        if target and chosen is None:
            match = _NVML_VERSION_RE.match(os.path.basename(target))
            if match:
                chosen = (match.group(1), "%s/libnvidia-ml.so.1" % directory)
    if chosen is None and len(versions) == 1:
        version = next(iter(versions))
        chosen = (version, versions[version])
    if chosen is not None:
        versions.setdefault(chosen[0], chosen[1])
    return {"version": chosen[0] if chosen else None, "path": chosen[1] if chosen else None,
            "versions": sorted(versions, key=kernel_sort_key)}


# ---------------------------------------------------------------------------------------------------
# Everything together
# ---------------------------------------------------------------------------------------------------

def _written_args(args):
    """The words of a grub.cfg ``linux`` line that come from GRUB_CMDLINE_LINUX(_DEFAULT).

    grub-mkconfig adds ``root=`` and ``ro`` itself, and Ubuntu adds ``$vt_handoff`` (a GRUB variable).
    """
    return [word for word in (args or "").split()
            if not word.startswith(("root=", "BOOT_IMAGE=", "$")) and word not in ("ro", "rw")]


def _initrd_path(host, kernel, entry):
    if entry and entry.get("initrd"):
        name = os.path.basename(entry["initrd"])
        for base in ("/boot", ""):
            path = "%s/%s" % (base, name) if base else entry["initrd"]
            if host.isfile(path):
                return path
    for name in ("initrd.img-%s" % kernel, "initramfs-%s.img" % kernel):
        if host.isfile("/boot/" + name):
            return "/boot/" + name
    return "/boot/initrd.img-%s" % kernel


def read_next_boot(host, running_kernel, loaded_version, packages):
    """The ``next_boot`` facts (see the module's RETURN documentation for each key).

    ``packages`` is what :func:`host_packages.read_packages` returned; it is kept under ``packages`` and used for
    the fabric manager's version.
    """
    grub = evaluate_grub_defaults(host)
    values = grub["values"]
    choice = choose_kernel(host, values, running_kernel)
    kernel = choice["kernel"]
    parts = (values.get("GRUB_CMDLINE_LINUX", ""), values.get("GRUB_CMDLINE_LINUX_DEFAULT", ""))
    cmdline_words = " ".join(part for part in parts if part).split()
    cmdline = " ".join(cmdline_words) if grub["files"] else None
    entry = choice["entry"]
    pending = None
    written = _written_args(entry["args"]) if entry is not None and entry["args"] is not None else None
    if cmdline is not None and written is not None:
        pending = written != cmdline_words
    iommu = gpu_sysfs.parse_cmdline(cmdline if cmdline is not None else (entry or {}).get("args") or "")
    origins = dict((word, grub["origins"].get(word)) for word in cmdline_words)
    module_info = {"modules_dir": None, "modules_dep": False, "modules": []}
    if kernel:
        module_info = find_nvidia_modules(host, kernel)
    usable = [item for item in module_info["modules"] if item["version"]]
    initrd = _initrd_path(host, kernel, entry) if kernel else None
    initramfs = {"path": None, "exists": False, "compression": None, "files": {}, "error": None}
    if initrd:
        initramfs = read_initramfs_modprobe(host, initrd)
    fabric = [item for item in packages["packages"] if item["role"] == "fabric_manager"
              and item["name"].startswith(("nvidia-fabricmanager", "cuda-drivers-fabricmanager"))]
    userspace = read_userspace_version(host)
    return {
        "kernel": kernel,
        "kernel_source": choice["source"],
        "kernel_detail": choice["detail"],
        "kernel_is_running": kernel is not None and kernel == running_kernel,
        "installed_kernels": choice["installed"],
        "grub": {
            "files": grub["files"],
            "default": values.get("GRUB_DEFAULT"),
            "cmdline_linux": values.get("GRUB_CMDLINE_LINUX"),
            "cmdline_linux_default": values.get("GRUB_CMDLINE_LINUX_DEFAULT"),
            "unevaluated": grub["unevaluated"],
            "grub_cfg": choice["grub_cfg"],
            "grub_cfg_args": entry["args"] if entry else None,
            "update_pending": pending,
        },
        "cmdline": cmdline,
        "cmdline_origins": origins,
        "iommu": iommu,
        # What grub.cfg boots now, when it differs from what the next update-grub writes (any kernel upgrade runs it)
        "iommu_grub_cfg": gpu_sysfs.parse_cmdline(" ".join(written)) if pending else None,
        "nvidia_module": usable[0] if usable else None,
        "nvidia_modules": module_info["modules"],
        "modules_dir": module_info["modules_dir"],
        "modules_dep": module_info["modules_dep"],
        "loaded_module_version": loaded_version,
        "userspace_version": userspace["version"],
        "userspace_path": userspace["path"],
        "userspace_versions": userspace["versions"],
        "fabric_manager_version": fabric[0]["upstream_version"] if fabric else None,
        "fabric_manager_package": fabric[0]["name"] if fabric else None,
        "initramfs": {
            "path": initramfs["path"],
            "exists": initramfs["exists"],
            "compression": initramfs["compression"],
            "error": initramfs["error"],
            "nvidia_options": nvidia_options(initramfs["files"]),
        },
        "modprobe_nvidia_options": nvidia_options(root_modprobe_files(host)),
        "packages": packages["packages"],
        "dpkg": packages["dpkg"],
        "unattended_upgrades": packages["unattended_upgrades"],
    }
