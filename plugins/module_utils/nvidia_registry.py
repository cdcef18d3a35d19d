# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Grammar of the NVIDIA kernel module's registry options.

Stdlib only, importable on Python 3.9+ targets and on the controller.

Two kinds of driver options are handled here:

* ``NVreg_RegistryDwords``: one string option holding ``key=value`` pairs separated by ``;``.
  :func:`parse_registry_dwords` reads such a string exactly the way nvidia.ko does
  (``rm_parse_option_string`` in the open kernel modules), :func:`render_registry_dwords`
  writes a stable one, and :func:`validate_registry_dwords` rejects input the driver would
  misread or silently drop.
* standalone options such as ``NVreg_EnableStreamMemOPs=1``, checked by
  :func:`validate_module_params`.

How the driver reads ``NVreg_RegistryDwords`` (and so how :func:`parse_registry_dwords` reads it):

1. Every whitespace character (space, TAB, LF, VT, FF, CR) is deleted first, wherever it is,
   so ``"A=1; B = 2"`` is the same as ``"A=1;B=2"``.
2. The string is cut at each ``;``; every piece is cut at ``=``.  A piece is dropped without
   any message when its name or its value is empty or when it holds a second ``=``
   (``A=1=2``).  A piece without ``=`` is dropped too.
3. The value is converted like the kernel's ``simple_strtoul(value, NULL, 0)`` and the result is
   cut to 32 bits: ``0x``/``0X`` followed by a hex digit means hexadecimal, any other leading
   ``0`` means **octal** (``010`` is 8; ``08`` and ``09`` stop at the 8/9 and read as 0),
   anything else decimal.  Conversion stops at the first character that is not a digit of
   that base, so ``12abc`` reads as 12, and a value with no leading digit at all (``abc``,
   ``-1``, ``"1"`` with literal quotes) reads as 0.  The number wraps modulo 2**64 and is then
   truncated to its low 32 bits.
4. Keys are case sensitive; when a key appears twice the later pair wins (it overwrites the
   earlier one), which is also what the returned dict shows.

Quoting happens before the driver sees the string: the kernel's module-argument splitter removes
a double quote at the start of a value and one at its end (``NVreg_RegistryDwords="A=1;B=2"``).
:func:`parse_registry_dwords` therefore also accepts the string still wrapped in one pair of
double quotes (as written in a modprobe.d line, or as printed in ``/proc/driver/nvidia/params``).
Any other quote character is passed on by the kernel and becomes part of a key or a value, and
so it does here (``'A=1'`` yields the key ``'A`` with the value 1).
"""

from __future__ import annotations

import re

__all__ = [
    "MODULE_PARAM_PREFIX",
    "REGISTRY_DWORDS_PARAM",
    "U32_MAX",
    "INT_MAX",
    "PARAM_REGISTRY_ALIASES",
    "driver_strtoul",
    "inspect_registry_dwords",
    "parse_registry_dwords",
    "render_registry_dwords",
    "validate_registry_dwords",
    "validate_module_params",
    "registry_key_for_param",
    "coerce_u32",
    "compare_with_loaded",
    "compare_with_driver_facts",
    "STATE_IN_EFFECT",
    "STATE_DRIVER_DEFAULT",
    "STATE_FROM_REGISTRY",
    "render_modprobe_options",
]

MODULE_PARAM_PREFIX = "NVreg_"
REGISTRY_DWORDS_PARAM = "NVreg_RegistryDwords"

U32_MAX = 0xFFFFFFFF
# Standalone NVreg_* integer options are declared to the kernel as ``int``: the kernel parses
# their value with kstrtoint() and refuses to load the module when it does not fit.
INT_MAX = 0x7FFFFFFF

# Standalone option name (without NVreg_) -> the key the driver uses in its option table, in
# RegistryDwords and in /proc/driver/nvidia/params, where the two differ.
PARAM_REGISTRY_ALIASES = {
    "RestrictProfilingToAdminUsers": "RmProfilingAdminOnly",
}

# Options that take a string, not a number; this code only manages numeric ones.
STRING_PARAMS = frozenset(
    (
        "NVreg_RegistryDwordsPerDevice",
        "NVreg_RmMsg",
        "NVreg_GpuBlacklist",
        "NVreg_ExcludedGpus",
        "NVreg_TemporaryFilePath",
        "NVreg_CoherentGPUMemoryMode",
        "NVreg_RmNvlinkBandwidth",
        "NVreg_AssignGpus",
    )
)

# Whitespace as the driver's rm_is_space() sees it: ' ' and ASCII 9..13.
_DRIVER_SPACE = " \t\n\v\f\r"
_DRIVER_SPACE_TABLE = {ord(c): None for c in _DRIVER_SPACE}
_DIGITS = "0123456789abcdef"
_DECIMAL_RE = re.compile(r"[0-9]+\Z")


def _to_text(text):
    if text is None:
        return ""
    if isinstance(text, bytes):
        return text.decode("utf-8", "surrogateescape")
    if not isinstance(text, str):
        raise TypeError("expected a string, got %s" % type(text).__name__)
    return text


def driver_strtoul(value):
    """Return the 32-bit number nvidia.ko makes of ``value`` (``(NvU32)simple_strtoul(v, NULL, 0)``).

    Never raises on odd input: a string without leading digits gives 0, as in the kernel.
    """
    s = _to_text(value)
    base = 10
    pos = 0
    if s[:1] == "0":
        if s[1:2] in ("x", "X") and s[2:3] != "" and s[2:3].lower() in _DIGITS:
            base = 16
            pos = 2
        else:
            base = 8
    result = 0
    for ch in s[pos:]:
        digit = _DIGITS.find(ch.lower()) if ch.isascii() else -1
        if digit < 0 or digit >= base:
            break
        result = (result * base + digit) & 0xFFFFFFFFFFFFFFFF
    return result & U32_MAX


def _unquote(text):
    """Strip outer whitespace and one pair of surrounding double quotes, like the kernel does."""
    text = text.strip(_DRIVER_SPACE)
    if text.startswith('"'):
        text = text[1:]
        if text.endswith('"'):
            text = text[:-1]
    return text


def inspect_registry_dwords(text):
    """Parse a RegistryDwords string and explain what the driver ignores or reads differently.

    Returns ``(values, notes)``: ``values`` is the same dict :func:`parse_registry_dwords`
    returns; ``notes`` is a list of human-readable strings, one per piece the driver skips
    silently, per value it reads differently from its decimal look (octal, hex, trailing junk,
    overflow), and per key given more than once.
    """
    raw = _unquote(_to_text(text))
    cleaned = raw.translate(_DRIVER_SPACE_TABLE)
    values = {}
    notes = []
    if cleaned != raw.strip(_DRIVER_SPACE):
        notes.append("whitespace inside the string is removed by the driver before parsing")
    for piece in cleaned.split(";"):
        if piece == "":
            continue
        parts = piece.split("=")
        if len(parts) == 1:
            notes.append("%r has no '=' and is ignored by the driver" % piece)
            continue
        if len(parts) > 2:
            notes.append("%r holds more than one '=' and is ignored by the driver" % piece)
            continue
        key, value = parts
        if key == "" or value == "":
            notes.append("%r has an empty key or value and is ignored by the driver" % piece)
            continue
        number = driver_strtoul(value)
        if not _DECIMAL_RE.match(value) or (len(value) > 1 and value.startswith("0")):
            notes.append("%s=%s is read by the driver as %d" % (key, value, number))
        elif int(value) > U32_MAX:
            notes.append("%s=%s does not fit in 32 bits; the driver keeps %d" % (key, value, number))
        if key in values:
            notes.append("%s is given more than once; the last value (%d) wins" % (key, number))
        values[key] = number
    return values, notes


def parse_registry_dwords(text):
    """Parse an ``NVreg_RegistryDwords`` value into ``{key: int}`` exactly as nvidia.ko reads it.

    ``text`` is the option's value (``"K=V;K=V"``), optionally still wrapped in one pair of
    double quotes; ``None`` or an empty string give ``{}``.  Pieces the driver ignores are left
    out, values are the 32-bit numbers the driver stores (see the module docstring for the exact
    rules).  Pass the value only, not ``NVreg_RegistryDwords=...``: with the option name in
    front the first piece holds two ``=`` and is dropped, as the driver would drop it.
    """
    return inspect_registry_dwords(text)[0]


def _describe_bad_chars(text):
    """Return a description of the characters ``text`` must not contain, or None."""
    found = []
    for ch, label in (("=", "'='"), (";", "';'"), ('"', "a double quote"), ("'", "a single quote")):
        if ch in text:
            found.append(label)
    if any(ch.isspace() for ch in text):
        found.append("whitespace")
    if any((not ch.isspace()) and (ord(ch) < 0x21 or ord(ch) > 0x7E) for ch in text):
        found.append("a non-printable or non-ASCII character")
    if not found:
        return None
    if len(found) == 1:
        return found[0]
    return "%s and %s" % (", ".join(found[:-1]), found[-1])


def coerce_u32(value, limit=U32_MAX):
    """Return ``(number, problem)`` for one option value.

    ``number`` is the integer to write (or None) and ``problem`` a sentence explaining why the
    value is refused (or None).  Integers (not booleans) and strings of decimal digits are
    accepted when they lie in ``0..limit``.
    """
    if isinstance(value, bool):
        return None, "is a boolean (%s); the driver wants a number: write %d" % (value, int(value))
    if isinstance(value, int):
        number = value
    elif isinstance(value, float):
        return None, "is a float (%r); write a whole number without a decimal point" % value
    elif isinstance(value, (str, bytes)):
        text = _to_text(value)
        bad = _describe_bad_chars(text)
        if text == "":
            return None, "is an empty string; write a number"
        if bad:
            return None, "contains %s; write a bare decimal number such as 1" % bad
        if text[:1] in ("+", "-") and _DECIMAL_RE.match(text[1:]):
            if text[0] == "-":
                return None, "is negative; options are unsigned, use a value from 0 to %d" % limit
            return None, "has a sign; write %s without the '+'" % text[1:]
        if len(text) > 1 and text.startswith("0"):
            return None, (
                "starts with 0: the driver reads such a number as octal (or hex after 0x), "
                "so %r would load as %d; write the intended value in decimal without leading zeros"
                % (text, driver_strtoul(text))
            )
        if not _DECIMAL_RE.match(text):
            return None, "is not a decimal integer; write a bare number such as 1"
        number = int(text)
    else:
        return None, "has type %s; write a whole number" % _type_name(value)
    if number < 0:
        return None, "is negative; options are unsigned, use a value from 0 to %d" % limit
    if number > limit:
        if limit == U32_MAX:
            return None, (
                "does not fit in 32 bits (maximum %d); the driver would keep only %d"
                % (U32_MAX, number & U32_MAX)
            )
        return None, (
            "is above %d: the kernel parses standalone NVreg_ options as signed 32-bit ints and "
            "refuses to load nvidia with a larger value; set it through %s instead "
            "(which takes the full 32-bit range) or use a smaller value"
            % (limit, REGISTRY_DWORDS_PARAM)
        )
    return number, None


def _type_name(value):
    """A value's type as the inventory wrote it: Ansible's lazy and tagged containers and strings are named by their
    builtin base (list, dict, str), so a message reads the same from a filter, an action or a module."""
    for base in type(value).__mro__:
        if base.__module__ == "builtins":
            return base.__name__
    return type(value).__name__


def _mapping_problem(mapping, var_name, what):
    if mapping is None:
        return None
    if not isinstance(mapping, dict):
        return (
            "%s must be a mapping of %s to integer (for example {DmaRemapPeerMmio: 1}), got %s"
            % (var_name, what, _type_name(mapping))
        )
    return None


def _entry_errors(mapping, var_name, what, name_messages, entry_problem):
    """The errors of a ``{name: value}`` mapping of driver options: one when it is not a mapping, else at most one
    per entry, in name order.

    A name that is not a string, or that holds characters the driver's 'key=value;...' grammar cannot carry, gets
    one of the two ``name_messages`` (``%s`` templates of ``(var_name, name, type name)`` and ``(var_name, name,
    characters)``); any other entry gets what ``entry_problem(name, value)`` returns (an error or None).
    """
    problem = _mapping_problem(mapping, var_name, what)
    if problem:
        return [problem]
    not_string, bad_chars = name_messages
    errors = []
    for name in sorted((mapping or {}), key=str):
        if not isinstance(name, str):
            problem = not_string % (var_name, name, _type_name(name))
        else:
            bad = _describe_bad_chars(name)
            problem = bad_chars % (var_name, name, bad) if bad else entry_problem(name, mapping[name])
        if problem:
            errors.append(problem)
    return errors


def validate_registry_dwords(mapping, var_name="nvidia_driver_registry_dwords"):
    """Check a ``{key: value}`` mapping meant for ``NVreg_RegistryDwords``.

    Returns a list of error strings (empty when the mapping is fine).  Each one names the
    variable and the key, says which rule is broken and how to fix it.  ``None`` counts as an
    empty mapping.
    """
    def key_problem(key, value):
        if key == "":
            return "%s: an empty key is ignored by the driver; remove it" % var_name
        if key.startswith(MODULE_PARAM_PREFIX):
            return (
                "%s: key %r starts with %s; registry dword keys are given without that prefix "
                "(the driver would store %r as an unknown key and never apply it): write %r, or put "
                "%r in nvidia_driver_module_params"
                % (var_name, key, MODULE_PARAM_PREFIX, key, key[len(MODULE_PARAM_PREFIX):], key)
            )
        dummy_number, reason = coerce_u32(value, U32_MAX)
        if reason:
            return "%s: value %r for key %r %s" % (var_name, value, key, reason)
        return None

    return _entry_errors(mapping, var_name, "registry key", (
        "%s: key %r has type %s; registry keys are names such as DmaRemapPeerMmio (quote it in YAML if needed)",
        "%s: key %r contains %s, which the driver's 'key=value;...' grammar cannot carry; "
        "use the bare key name (for example DmaRemapPeerMmio)",
    ), key_problem)


def registry_key_for_param(name):
    """Return the registry/``/proc`` key that the standalone option ``name`` sets.

    ``NVreg_DmaRemapPeerMmio`` -> ``DmaRemapPeerMmio``;
    ``NVreg_RestrictProfilingToAdminUsers`` -> ``RmProfilingAdminOnly``.
    """
    bare = name[len(MODULE_PARAM_PREFIX):] if name.startswith(MODULE_PARAM_PREFIX) else name
    return PARAM_REGISTRY_ALIASES.get(bare, bare)


def validate_module_params(
    mapping,
    var_name="nvidia_driver_module_params",
    registry=None,
    registry_var="nvidia_driver_registry_dwords",
):
    """Check a ``{NVreg_Name: value}`` mapping of standalone nvidia.ko integer options.

    ``registry`` is the registry dword mapping that goes into the same file; a key present in
    both is an error because the driver applies ``NVreg_RegistryDwords`` after the standalone
    options and the registry value silently wins.  Returns a list of error strings.
    """
    registry_keys = set(registry) if isinstance(registry, dict) else set()

    def option_problem(name, value):
        if not name.startswith(MODULE_PARAM_PREFIX) or name == MODULE_PARAM_PREFIX:
            tail = name.rsplit(".", 1)[-1]
            if tail.lower().startswith(MODULE_PARAM_PREFIX.lower()):
                tail = tail[len(MODULE_PARAM_PREFIX):]
            return (
                "%s: option name %r does not start with %s (case matters); nvidia.ko only takes "
                "NVreg_* options: write %r" % (var_name, name, MODULE_PARAM_PREFIX, MODULE_PARAM_PREFIX + (tail or "Name"))
            )
        if name == REGISTRY_DWORDS_PARAM:
            return (
                "%s: %s is built by the role; put its pairs in %s instead (for example {DmaRemapPeerMmio: 1})"
                % (var_name, name, registry_var)
            )
        if name in STRING_PARAMS:
            return (
                "%s: %s takes a string, and only integer options are managed here; "
                "remove it (manage string options outside this role)" % (var_name, name)
            )
        dummy_number, reason = coerce_u32(value, INT_MAX)
        if reason:
            return "%s: value %r for option %r %s" % (var_name, value, name, reason)
        regkey = registry_key_for_param(name)
        if regkey in registry_keys:
            return (
                "%s: %s is also set as %r in %s; the driver applies %s after the standalone options, "
                "so the registry value (%r) would silently win; keep only one of the two"
                % (var_name, name, regkey, registry_var, REGISTRY_DWORDS_PARAM, registry[regkey])
            )
        return None

    return _entry_errors(mapping, var_name, "NVreg_ option name", (
        "%s: option name %r has type %s; option names are strings such as NVreg_EnableStreamMemOPs",
        "%s: option name %r contains %s; write the bare option name such as NVreg_EnableStreamMemOPs",
    ), option_problem)


def render_registry_dwords(mapping):
    """Render ``{key: value}`` as ``K=V;K=V`` with keys sorted and decimal values.

    Raises ``ValueError`` listing every problem when the mapping is invalid.  An empty mapping
    gives an empty string.
    """
    errors = validate_registry_dwords(mapping, "registry dwords")
    if errors:
        raise ValueError("; ".join(errors))
    pairs = []
    for key in sorted(mapping or {}):
        number = coerce_u32(mapping[key], U32_MAX)[0]
        pairs.append("%s=%d" % (key, number))
    return ";".join(pairs)


# ---------------------------------------------------------------------------------------------
# Verification against the loaded driver
# ---------------------------------------------------------------------------------------------
#
# What decides whether a wanted option is in effect:
#
# * /proc/driver/nvidia/params prints every option of the driver's static table with its live
#   value (a static key set through RegistryDwords shows the overridden number).  For such a key
#   the live number decides, whether or not the loaded RegistryDwords string names it: a wanted
#   value that equals the driver's default is in effect without any option.
# * Keys the driver does not print (RM registry keys such as RMForceStaticBar1) can only be
#   judged by the loaded RegistryDwords string: set there with the wanted value, or pending.
# * Standalone NVreg_ options are judged by their printed value; the ones the driver does not
#   print are unverifiable.
# * A key in the loaded RegistryDwords that is no longer wanted is "pending removal": the next
#   load drops it and the driver falls back to a default this code cannot know (defaults differ
#   between driver releases), so the running driver is not what the options file gives.
#
# Key names are compared exactly, as the driver does (strcmp).

STATE_IN_EFFECT = "in effect"
STATE_DRIVER_DEFAULT = "in effect (driver default)"
STATE_FROM_REGISTRY = "in effect (the loaded driver has it from RegistryDwords)"


def _loaded_number(value):
    """Turn a value read from /proc (int or decimal string) into an int, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _DECIMAL_RE.match(value.strip()):
        return int(value.strip())
    return None


def _printed_number(loaded_params, key):
    """The live value /proc/driver/nvidia/params prints for ``key`` as a number, else None."""
    if key not in loaded_params:
        return None
    return _loaded_number(loaded_params[key])


def _case_hint(key, loaded_params):
    """Explain a key that is not printed but differs only in case from one that is."""
    for other in sorted(k for k in loaded_params if isinstance(k, str)):
        if other != key and other.lower() == key.lower():
            return (
                " (the driver matches key names case-sensitively, so %s is not its option %s)" % (key, other)
            )
    return ""


def _loaded_state(have, want, same):
    """The state of an option the loaded driver has as ``have``: pending when that is not ``want``, else ``same``."""
    if have != want:
        return "pending: loaded %d, wanted %d" % (have, want)
    return same


def compare_with_loaded(registry, params, loaded_params, loaded_registry=None):
    """Compare wanted options with what the loaded driver reports, key by key, by effective value.

    ``registry`` and ``params`` are the wanted mappings (validated here; ``ValueError`` lists the
    problems).  ``loaded_params`` is the dict parsed from ``/proc/driver/nvidia/params`` (numbers
    as int or decimal strings, string options as str); ``loaded_registry`` the dict parsed from its
    ``RegistryDwords`` line (when None it is parsed from ``loaded_params['RegistryDwords']``).

    Returns a dict:

    * ``states``: ``{key: state}`` for every wanted registry key, every wanted standalone option
      (by option name) and every key of the loaded ``RegistryDwords`` that is no longer wanted.
      The states are ``in effect``, ``in effect (driver default)``, ``in effect (the loaded driver
      has it from RegistryDwords)``, ``pending: loaded L, wanted W``, ``pending: not set in the
      loaded RegistryDwords, wanted W``, ``pending removal: ...`` and ``unverifiable: ...``;
    * ``pending``: sorted keys whose state starts with ``pending`` (effective differences only);
    * ``unverifiable``: sorted standalone options the driver does not print;
    * ``loaded``: ``{key: loaded value or None}`` for every key in ``states``.
    """
    registry = registry or {}
    params = params or {}
    errors = validate_registry_dwords(registry, "registry dwords") + validate_module_params(
        params, "module params", registry=registry, registry_var="registry dwords"
    )
    if errors:
        raise ValueError("; ".join(errors))
    loaded_params = loaded_params or {}
    if loaded_registry is None:
        loaded_registry = parse_registry_dwords(loaded_params.get("RegistryDwords") or "")
    loaded_registry = loaded_registry or {}
    states = {}
    loaded = {}

    for key in sorted(registry):
        want = coerce_u32(registry[key], U32_MAX)[0]
        live = _printed_number(loaded_params, key)
        if live is not None:
            loaded[key] = live
            states[key] = _loaded_state(live, want, STATE_IN_EFFECT if key in loaded_registry else STATE_DRIVER_DEFAULT)
            continue
        have = _loaded_number(loaded_registry.get(key))
        loaded[key] = have
        if have is None:
            states[key] = "pending: not set in the loaded RegistryDwords, wanted %d%s" % (
                want, _case_hint(key, loaded_params)
            )
        else:
            states[key] = _loaded_state(have, want, STATE_IN_EFFECT)

    # Loaded RegistryDwords keys whose printed value a wanted standalone option now decides.
    taken_over = set()
    unverifiable = []
    for name in sorted(params):
        want = coerce_u32(params[name], INT_MAX)[0]
        regkey = registry_key_for_param(name)
        live = _printed_number(loaded_params, regkey)
        loaded[name] = live
        if live is None:
            unverifiable.append(name)
            states[name] = "unverifiable: the driver does not print %s%s" % (regkey, _case_hint(regkey, loaded_params))
            continue
        taken_over.add(regkey)
        states[name] = _loaded_state(live, want, STATE_FROM_REGISTRY if regkey in loaded_registry else STATE_IN_EFFECT)

    for key in sorted(loaded_registry, key=str):
        if key in registry or key in taken_over:
            continue
        label = key if key not in states else "RegistryDwords[%s]" % key
        value = loaded_registry[key]
        loaded[label] = value
        states[label] = (
            "pending removal: the loaded RegistryDwords sets %s=%s, which is no longer wanted "
            "(the next load uses the driver's default)" % (key, value)
        )

    pending = sorted(key for key, state in states.items() if state.startswith("pending"))
    return {"pending": pending, "unverifiable": unverifiable, "loaded": loaded, "states": states}


def render_modprobe_options(registry, params, module="nvidia"):
    """Render the ``options <module> ...`` line for a modprobe.d file.

    Standalone options come first, sorted by name, then ``NVreg_RegistryDwords="K=V;..."``
    (always quoted).  Returns an empty string when both mappings are empty.  Raises
    ``ValueError`` when either mapping is invalid.
    """
    errors = validate_registry_dwords(registry, "registry dwords") + validate_module_params(
        params, "module params", registry=registry, registry_var="registry dwords"
    )
    if errors:
        raise ValueError("; ".join(errors))
    words = []
    for name in sorted(params or {}):
        words.append("%s=%d" % (name, coerce_u32(params[name], INT_MAX)[0]))
    rendered = render_registry_dwords(registry)
    if rendered:
        words.append('%s="%s"' % (REGISTRY_DWORDS_PARAM, rendered))
    if not words:
        return ""
    return "options %s %s" % (module, " ".join(words))


def compare_with_driver_facts(driver, registry, params):
    """Compare wanted options with the ``nvidia_driver`` part of ``gpu_host_facts``.

    ``driver`` is ``{loaded, version, params, registry_dwords}`` (or None).  Returns the dict of
    :func:`compare_with_loaded` plus ``loaded`` (bool, renamed ``loaded_values`` for the values),
    ``version``, ``reboot_required`` (true when anything is pending) and ``status``: one line that starts with the overall verdict and then gives every
    key's state (``driver 580.159.04 loaded with the wanted options; DmaRemapPeerMmio: in effect
    (driver default)``).  When the driver is not loaded nothing is pending: the next load reads the
    new file.  Raises ``ValueError`` when the wanted mappings are invalid.
    """
    driver = driver or {}
    if not driver.get("loaded"):
        # still refuse invalid input, as for a loaded driver
        compare_with_loaded(registry, params, {}, {})
        return {
            "loaded": False,
            "version": driver.get("version"),
            "pending": [],
            "reboot_required": False,
            "unverifiable": [],
            "loaded_values": {},
            "states": {},
            "status": "driver not loaded: the options apply when nvidia.ko is next loaded",
        }
    result = compare_with_loaded(registry, params, driver.get("params") or {}, driver.get("registry_dwords"))
    verdict = "driver %s loaded" % (driver.get("version") or "(unknown version)")
    if result["pending"]:
        verdict += " with options that differ from the wanted ones"
    elif result["unverifiable"]:
        verdict += "; nothing pending, but it does not print every wanted option"
    else:
        verdict += " with the wanted options"
    status = "; ".join([verdict] + ["%s: %s" % (key, state) for key, state in result["states"].items()])
    return {
        "loaded": True,
        "version": driver.get("version"),
        "pending": result["pending"],
        # only an effective difference needs the module reloaded (or the host rebooted)
        "reboot_required": bool(result["pending"]),
        "unverifiable": result["unverifiable"],
        "loaded_values": result["loaded"],
        "states": result["states"],
        "status": status,
    }
