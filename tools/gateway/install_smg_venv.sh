#!/usr/bin/env bash
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Build (once) a venv with the real SGLang model gateway, smg 1.13.0, for tests/functional/gateway.
#
#   tools/gateway/install_smg_venv.sh VENV [WHEELHOUSE]
#       (defaults: /var/cache/llmserve/venv-smg, /var/cache/llmserve/wheelhouse/smg)
#
# 1. WHEELHOUSE: the wheels of requirements-smg.lock.txt (exact pins, each with its sha256), fetched with
#    "pip download --only-binary=:all: --no-deps --require-hashes" (network, first run only).
# 2. VENV: a Python 3.11 venv that gets exactly those wheels, offline, the way the sglang_gateway role installs
#    from a wheelhouse on a host ("pip install --no-index --find-links WHEELHOUSE"), plus --require-hashes.
#    Then smg's Rust extension must import and report version 1.13.0.
#
# Cache: WHEELHOUSE/.stamp and VENV/.llmserve-smg-stamp hold the sha256 of the lock; when they match, the run
# only says it reuses them. LLMSERVE_SMG_FORCE=1 rebuilds both. An existing VENV not made by this script is
# never replaced.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PYTHON=${PYTHON:-python3}
LOCK="$HERE/requirements-smg.lock.txt"
VENV=${1:-/var/cache/llmserve/venv-smg}
WHEELHOUSE=${2:-/var/cache/llmserve/wheelhouse/smg}

log() { printf '[install_smg_venv] %s\n' "$*"; }
die() { printf '[install_smg_venv] ERROR: %s\n' "$*" >&2; exit 1; }

command -v "$PYTHON" >/dev/null || die "PYTHON=$PYTHON not found"
tag=$("$PYTHON" -c 'import platform, sys; print("%d.%d-%s" % (sys.version_info[0], sys.version_info[1], platform.machine()))')
[ "$tag" = "3.11-x86_64" ] || die "$PYTHON is $tag; the lock pins wheels for CPython 3.11 on x86_64 (set PYTHON=python3.11)"
stamp=$(sha256sum "$LOCK" | cut -d' ' -f1)
wheels=$(grep -c '^[A-Za-z]' "$LOCK")

mkdir -p "$WHEELHOUSE"
WHEELHOUSE=$(cd "$WHEELHOUSE" && pwd)
# one builder at a time (make functional may run while a previous build is still going)
exec 9>"$WHEELHOUSE/.build.flock"
flock 9

if [ "${LLMSERVE_SMG_FORCE:-0}" = 1 ] || [ "$(cat "$WHEELHOUSE/.stamp" 2>/dev/null)" != "$stamp" ] \
        || [ "$(find "$WHEELHOUSE" -maxdepth 1 -name '*.whl' | wc -l)" -lt "$wheels" ]; then
    rm -f "$WHEELHOUSE/.stamp" "$WHEELHOUSE"/*.whl
    log "downloading $wheels wheels into $WHEELHOUSE"
    "$PYTHON" -m pip download --quiet --only-binary=:all: --no-deps --require-hashes --progress-bar off \
        --dest "$WHEELHOUSE" -r "$LOCK" 2> >(grep -v "^WARNING: Location" >&2)
    [ "$(find "$WHEELHOUSE" -maxdepth 1 -name '*.whl' | wc -l)" -eq "$wheels" ] \
        || die "expected $wheels wheels in $WHEELHOUSE after the download"
    printf '%s\n' "$stamp" >"$WHEELHOUSE/.stamp"
else
    log "reusing wheelhouse $WHEELHOUSE (stamp ${stamp:0:16})"
fi

marker="$VENV/.llmserve-smg-stamp"
if [ "${LLMSERVE_SMG_FORCE:-0}" != 1 ] && [ "$(cat "$marker" 2>/dev/null)" = "$stamp" ] && [ -x "$VENV/bin/python" ]; then
    log "reusing venv $VENV (stamp ${stamp:0:16})"
    exit 0
fi
if [ -e "$VENV" ]; then
    if [ -f "$marker" ] || { [ -d "$VENV" ] && [ -z "$(ls -A "$VENV")" ]; }; then
        rm -rf -- "$VENV"
    else
        die "$VENV exists and was not made by this script (no $(basename "$marker")); refusing to replace it"
    fi
fi
log "creating $VENV with $("$PYTHON" --version 2>&1)"
"$PYTHON" -m venv "$VENV"
# the machine's pip configuration (extra indexes, constraints) must not reach this offline install
PIP_CONFIG_FILE=/dev/null "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-index \
    --find-links "$WHEELHOUSE" --no-deps --require-hashes -r "$LOCK"
"$VENV/bin/python" -I -c '
import importlib.metadata as m
import smg.smg_rs
from smg.launch_router import launch_router, parse_router_args
assert m.version("smg") == "1.13.0", m.version("smg")
print("smg", m.version("smg"), "imports")' || die "smg does not import in $VENV"
printf '%s\n' "$stamp" >"$marker"
log "venv ready: $VENV"
