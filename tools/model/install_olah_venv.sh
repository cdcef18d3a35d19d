#!/usr/bin/env bash
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Create a venv holding olah (a self-hosted Hugging Face mirror) exactly as pinned in requirements-olah.lock.txt.
#
#   tools/model/install_olah_venv.sh DEST [WHEELHOUSE]
#
# Without WHEELHOUSE, pip uses its configured index; with one, it installs offline from that directory only.
# --no-deps: the lock is the complete list, so pip must not resolve anything on its own. Afterwards the venv
# must hold exactly the locked distributions, and olah must import.
#
# Reuse: DEST/.llmserve-olah-lock-sha256 holds the sha256 of the lock it was built from; when it matches, the
# venv is kept. A venv made by this script (it has that stamp) or an empty directory is (re)built; any other
# existing path is refused. LLMSERVE_VENV_FORCE=1 rebuilds.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PYTHON=${PYTHON:-python3.11}
LOCK="$HERE/requirements-olah.lock.txt"

log() { printf '[install_olah_venv] %s\n' "$*"; }
die() { printf '[install_olah_venv] ERROR: %s\n' "$*" >&2; exit 1; }

DEST=${1:?usage: install_olah_venv.sh DEST [WHEELHOUSE]}
WHEELHOUSE=${2:-}
want=$(sha256sum "$LOCK" | cut -d' ' -f1)
stamp="$DEST/.llmserve-olah-lock-sha256"

if [ "${LLMSERVE_VENV_FORCE:-0}" != 1 ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] \
        && [ -x "$DEST/bin/olah-cli" ]; then
    log "reusing $DEST (lock sha256 ${want:0:16})"
    exit 0
fi

if [ -e "$DEST" ]; then
    if [ -f "$stamp" ]; then
        log "removing outdated venv $DEST"
        rm -rf -- "$DEST"
    elif [ -d "$DEST" ] && [ -z "$(ls -A "$DEST")" ]; then
        :
    else
        die "$DEST exists and was not made by this script (no $(basename "$stamp")); refusing to replace it"
    fi
fi

start=$SECONDS
log "creating $DEST with $("$PYTHON" --version 2>&1)"
"$PYTHON" -m venv "$DEST"
source_args=()
if [ -n "$WHEELHOUSE" ]; then
    [ -d "$WHEELHOUSE" ] || die "wheelhouse $WHEELHOUSE is not a directory"
    source_args=(--no-index --find-links "$WHEELHOUSE")
fi
log "installing $(grep -c . "$LOCK") pinned distributions${WHEELHOUSE:+ from $WHEELHOUSE (offline)}"
"$DEST/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps "${source_args[@]}" -r "$LOCK"

# The venv must hold the lock and nothing else (pip, setuptools and wheel belong to the venv itself).
installed=$("$DEST/bin/python" -m pip freeze --all --disable-pip-version-check \
    | grep -viE '^(pip|setuptools|wheel)==' | sort -f)
if [ "$installed" != "$(sort -f "$LOCK")" ]; then
    diff <(sort -f "$LOCK") <(printf '%s\n' "$installed") >&2 || true
    die "$DEST does not hold exactly the distributions of $LOCK (diff above: < lock, > venv)"
fi
"$DEST/bin/python" -c 'import olah.server, huggingface_hub; print("olah imports; huggingface_hub", huggingface_hub.__version__)' \
    || die "olah does not import in $DEST"
printf '%s\n' "$want" >"$stamp"
log "venv ready: $DEST ($(du -sh "$DEST" | cut -f1), $((SECONDS - start)) s)"
