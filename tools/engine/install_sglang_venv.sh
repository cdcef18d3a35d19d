#!/usr/bin/env bash
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Create a Python 3.11 venv with the CPU SGLang from a wheelhouse, fully offline.
#
#   tools/engine/install_sglang_venv.sh VENV [WHEELHOUSE]   (default /var/cache/llmserve/wheelhouse/sglang-cpu)
#
# This is the same pip call the sglang_server role makes on a host in its wheelhouse mode:
#
#   pip install --no-index --find-links WHEELHOUSE --no-deps -r WHEELHOUSE/requirements-sglang-cpu.lock.txt
#
# --no-deps is required: sglang's metadata asks for another torch and for CUDA-only packages that the lock
# deliberately leaves out or replaces (torch 2.13.0+cpu, the two shims). The lock is the complete list of
# what the venv holds, and the script checks afterwards that the venv holds exactly that, then imports sglang.
#
# Reuse: VENV/.llmserve-wheelhouse-stamp records the wheelhouse it was built from; when it matches, the
# venv is kept. Otherwise a venv made by this script (it has that stamp file) or an empty directory is
# (re)created; any other existing directory is refused. LLMSERVE_VENV_FORCE=1 rebuilds.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PYTHON=${PYTHON:-python3}
LOCK_NAME=requirements-sglang-cpu.lock.txt

log() { printf '[install_sglang_venv] %s\n' "$*"; }
die() { printf '[install_sglang_venv] ERROR: %s\n' "$*" >&2; exit 1; }

VENV=${1:?usage: install_sglang_venv.sh VENV [WHEELHOUSE]}
WHEELHOUSE=${2:-/var/cache/llmserve/wheelhouse/sglang-cpu}
if [ ! -f "$WHEELHOUSE/.stamp" ] || [ ! -f "$WHEELHOUSE/$LOCK_NAME" ]; then
    die "$WHEELHOUSE is not a finished wheelhouse (no .stamp or $LOCK_NAME); run tools/engine/build_wheelhouse.sh first"
fi
WHEELHOUSE=$(cd "$WHEELHOUSE" && pwd)
stamp=$(cat "$WHEELHOUSE/.stamp")
marker="$VENV/.llmserve-wheelhouse-stamp"

if [ "${LLMSERVE_VENV_FORCE:-0}" != 1 ] && [ -f "$marker" ] && [ "$(cat "$marker")" = "$stamp" ] \
        && [ -x "$VENV/bin/python" ]; then
    log "reusing venv $VENV (built from wheelhouse stamp ${stamp:0:16})"
    exit 0
fi

if [ -e "$VENV" ]; then
    if [ -f "$marker" ]; then
        log "removing outdated venv $VENV"
        rm -rf -- "$VENV"
    elif [ -d "$VENV" ] && [ -z "$(ls -A "$VENV")" ]; then
        :
    else
        die "$VENV exists and was not created by this script (no $(basename "$marker")); refusing to replace it"
    fi
fi

tag=$("$PYTHON" -c 'import platform, sys; print("%d.%d-%s" % (sys.version_info[0], sys.version_info[1], platform.machine()))')
[ "$tag" = "3.11-x86_64" ] || die "$PYTHON is $tag; the wheelhouse is for CPython 3.11 on x86_64 (set PYTHON=python3.11)"

start=$SECONDS
log "creating $VENV with $("$PYTHON" --version 2>&1)"
"$PYTHON" -m venv "$VENV"
log "installing $(grep -c . "$WHEELHOUSE/$LOCK_NAME") pinned wheels from $WHEELHOUSE (offline, no dependency resolution)"
"$VENV/bin/python" -m pip install --quiet --no-index --find-links "$WHEELHOUSE" --no-deps \
    -r "$WHEELHOUSE/$LOCK_NAME"

"$PYTHON" "$HERE/wheelhouse.py" check-installed "$WHEELHOUSE/$LOCK_NAME" "$VENV/bin/python" \
    || die "$VENV does not hold exactly the locked distributions"
HF_HUB_OFFLINE=1 "$VENV/bin/python" -c 'import sglang, sglang.launch_server; print("sglang", sglang.__version__, "imports")' \
    || die "sglang does not import in $VENV"
printf '%s\n' "$stamp" >"$marker"
log "venv ready: $VENV ($(du -sh "$VENV" | cut -f1), $((SECONDS - start)) s)"
