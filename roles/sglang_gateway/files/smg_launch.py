# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Start the SGLang model gateway (smg) with its secrets taken from a systemd credential, not the command line.

Usage (by the sglang_gateway role's unit):

    <venv>/bin/python -I smg_launch.py [--check] SMG_LAUNCH_FLAGS...

smg 1.13.0 takes the workers' API key (``--api-key``) and the control-plane keys
(``--control-plane-api-keys``) only as command-line flags, and ``/proc/<pid>/cmdline`` is readable by
every local user. This launcher does what ``smg launch`` does (smg's own ``parse_router_args`` and
``launch_router``, in this same process), but sets the two keys on the parsed arguments, read from the
credential ``smg-keys`` (``$CREDENTIALS_DIRECTORY/smg-keys``, which the unit's ``LoadCredential=`` fills
from a root-only file):

* ``LLMSERVE_SMG_API_KEY``: the workers' API key (optional; also what the gateway's clients present),
* ``LLMSERVE_SMG_ADMIN_API_KEY``: the control-plane key, with the admin role (required).

The file has the ``NAME="value"`` lines of a systemd EnvironmentFile (a backslash inside the quotes escapes
the next character). The keys are never in the environment: ``/proc/<pid>/environ`` keeps the
environment the process started with, whatever the process later removes from it, so popping them
there would not hide them. A command line that sets a secret itself (any spelling or abbreviation smg's
parser accepts) is refused, and so is a start without the control-plane key: smg would leave its control
plane open (or guarded by the workers' key, which every client holds).

``--check`` parses the flags with the installed smg's parser and exits (0: accepted; 2: argparse's
message on stderr), without secrets and without starting anything.
"""

import json
import os
import re
import sys

WORKER_KEY_ENV = "LLMSERVE_SMG_API_KEY"
ADMIN_KEY_ENV = "LLMSERVE_SMG_ADMIN_API_KEY"
CREDENTIAL = "smg-keys"
ADMIN_KEY_ID = "llmserve-admin"
ADMIN_KEY_NAME = "llmserve.sglang gateway role"
# one NAME="value" line as the role writes it; inside the quotes a backslash escapes the next character
_LINE = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def _fail(message):
    sys.stderr.write("smg_launch: %s\n" % message)
    sys.exit(2)


def _unescape(text):
    # systemd's EnvironmentFile reader: a backslash before one of " \ ` $ stands for that character, before
    # anything else it stays
    return re.sub(r'\\(.)', lambda m: m.group(1) if m.group(1) in '"\\`$' else m.group(0), text)


def read_keys(directory):
    """NAME -> value from the credential file ``<directory>/smg-keys``; exits with a message when it is unusable."""
    if not directory:
        _fail("$CREDENTIALS_DIRECTORY is not set: start smg through its unit, whose LoadCredential=%s:<file> passes "
              "the keys" % CREDENTIAL)
    path = os.path.join(directory, CREDENTIAL)
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        _fail("cannot read the credential %s: %s" % (path, exc.__class__.__name__))
    keys = {}
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith(("#", ";")):
            continue
        match = _LINE.fullmatch(line.strip())
        if match is None:
            # never echo the line: it may hold a key
            _fail("the credential %s, line %d, is not NAME=\"value\"" % (path, number))
        keys[match.group(1)] = _unescape(match.group(2))
    return keys


def _secrets_on_command_line(args):
    """Names of the parsed fields that carry a secret although the command line must not hold one."""
    fields = ("api_key", "control_plane_api_keys", "tenant_api_keys", "oracle_password", "postgres_db_url",
              "redis_url")
    return [name for name in fields if getattr(args, name, None)]


def main(argv):
    check = bool(argv) and argv[0] == "--check"
    if check:
        argv = argv[1:]
    from smg.launch_router import launch_router, parse_router_args  # the INSTALLED smg

    args = parse_router_args(argv)
    on_argv = _secrets_on_command_line(args)
    if on_argv:
        _fail("refusing secrets on the command line (%s): every local user can read it; pass them in the "
              "credential %s (%s, %s)" % (", ".join(on_argv), CREDENTIAL, WORKER_KEY_ENV, ADMIN_KEY_ENV))
    if check:
        print(json.dumps({"host": args.host, "port": args.port, "policy": args.policy,
                          "worker_urls": list(args.worker_urls or [])}, sort_keys=True))
        return 0
    keys = read_keys(os.environ.get("CREDENTIALS_DIRECTORY", ""))
    worker_key = keys.get(WORKER_KEY_ENV, "")
    admin_key = keys.get(ADMIN_KEY_ENV, "")
    if not admin_key:
        _fail("%s is missing from the credential %s: smg would start with its control plane open (worker "
              "registration, cache flush, profiling); refusing to start" % (ADMIN_KEY_ENV, CREDENTIAL))
    if worker_key and worker_key == admin_key:
        _fail("%s and %s are the same key: every client of the gateway would hold the control plane"
              % (WORKER_KEY_ENV, ADMIN_KEY_ENV))
    args.api_key = worker_key or None
    # (id, name, key, role): the shape smg's own parser gives --control-plane-api-keys 'id:name:role:key'
    args.control_plane_api_keys = [(ADMIN_KEY_ID, ADMIN_KEY_NAME, admin_key, "admin")]
    launch_router(args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
