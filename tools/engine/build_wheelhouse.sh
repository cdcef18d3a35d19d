#!/usr/bin/env bash
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Build (once) an offline wheelhouse for SGLang 0.5.23 on CPU, Python 3.11, x86_64.
#
#   tools/engine/build_wheelhouse.sh [DIR]     (default /var/cache/llmserve/wheelhouse/sglang-cpu)
#
# The wheelhouse holds one wheel per line of requirements-sglang-cpu.lock.txt (every line an exact
# name==version pin), a copy of that lock, SHA256SUMS and a stamp. Install it anywhere, offline, with
#
#   pip install --no-index --find-links DIR --no-deps -r DIR/requirements-sglang-cpu.lock.txt
#
# * torch is pinned to the CPU build 2.13.0+cpu. PyPI has no "+cpu" release, so pip finds it only in a
#   local find-links directory (this machine's pip configuration points at /opt/wheels); anywhere else the
#   download fails instead of silently pulling a multi-GB CUDA build.
# * Lines whose version ends in "+llmserve.importshim" are the import-only shims (torchvision, vllm); their
#   wheels are built here from tools/engine/shims/<name>/ by wheelhouse.py, with no network.
# * Everything else is fetched as binary wheels with "pip download --no-deps"; a pin that has no wheel is
#   built into one with "pip wheel --no-deps", so installing from the wheelhouse never compiles anything.
# * Cache: DIR/.stamp holds a sha256 of the lock and the shim sources. When it matches and every wheel is
#   present, the run only reports that it reuses the wheelhouse. Set LLMSERVE_WHEELHOUSE_FORCE=1 to rebuild.
# * pip's usual environment variables (PIP_FIND_LINKS, PIP_INDEX_URL, ...) are honoured for the downloads.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DIR=${1:-/var/cache/llmserve/wheelhouse/sglang-cpu}
PYTHON=${PYTHON:-python3}
LOCK_NAME=requirements-sglang-cpu.lock.txt
LOCK="$HERE/$LOCK_NAME"
SHIMS="$HERE/shims"
HELPER="$HERE/wheelhouse.py"

log() { printf '[build_wheelhouse] %s\n' "$*"; }
die() { printf '[build_wheelhouse] ERROR: %s\n' "$*" >&2; exit 1; }

command -v "$PYTHON" >/dev/null || die "PYTHON=$PYTHON not found"
"$PYTHON" "$HELPER" check-lock "$LOCK" >/dev/null || die "$LOCK is not an exact lock (see above)"
tag=$("$PYTHON" -c 'import platform, sys; print("%d.%d-%s" % (sys.version_info[0], sys.version_info[1], platform.machine()))')
[ "$tag" = "3.11-x86_64" ] \
    || die "$PYTHON is $tag; the CPU torch wheel and this lock are for CPython 3.11 on x86_64 (set PYTHON=python3.11)"
stamp=$("$PYTHON" "$HELPER" stamp "$LOCK" "$SHIMS")

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
# One builder at a time per wheelhouse (make test and molecule may both ask for it).
exec 9>"$DIR/.build.flock"
flock 9

if [ "${LLMSERVE_WHEELHOUSE_FORCE:-0}" != 1 ] && [ -f "$DIR/.stamp" ] && [ "$(cat "$DIR/.stamp")" = "$stamp" ] \
        && cmp -s "$LOCK" "$DIR/$LOCK_NAME" && [ -z "$("$PYTHON" -c '
import sys; sys.path.insert(0, sys.argv[1]); import wheelhouse
print("\n".join(wheelhouse.missing(sys.argv[2], sys.argv[3], include_shims=True)))' "$HERE" "$LOCK" "$DIR")" ]; then
    log "reusing cached wheelhouse $DIR (stamp ${stamp:0:16}, $(find "$DIR" -maxdepth 1 -name '*.whl' | wc -l) wheels, $(du -sh "$DIR" | cut -f1))"
    exit 0
fi

start=$SECONDS
rm -f "$DIR/.stamp"
log "building wheelhouse in $DIR (stamp ${stamp:0:16})"

"$PYTHON" "$HELPER" build-shims "$LOCK" "$SHIMS" "$DIR"

todo=$(mktemp)
trap 'rm -f "$todo"' EXIT
"$PYTHON" "$HELPER" missing "$LOCK" "$DIR" >"$todo"
if [ -s "$todo" ]; then
    log "downloading $(wc -l <"$todo") wheels (binary only, no dependencies)"
    if ! "$PYTHON" -m pip download --no-deps --only-binary=:all: --progress-bar off --dest "$DIR" -r "$todo"; then
        # Some pin has no usable wheel: go line by line and build the ones that are missing.
        log "bulk download failed; retrying pin by pin"
        "$PYTHON" "$HELPER" missing "$LOCK" "$DIR" >"$todo"
        while read -r pin; do
            if "$PYTHON" -m pip download --no-deps --only-binary=:all: --progress-bar off --dest "$DIR" "$pin"; then
                continue
            fi
            case "$pin" in
                torch==*) die "$pin not found: it is only available from a local find-links directory (see the pip configuration, e.g. PIP_FIND_LINKS=/opt/wheels)";;
            esac
            log "no wheel for $pin; building one with pip wheel"
            "$PYTHON" -m pip wheel --no-deps --progress-bar off --wheel-dir "$DIR" "$pin" || die "cannot get a wheel for $pin"
        done <"$todo"
    fi
fi

"$PYTHON" "$HELPER" verify "$LOCK" "$DIR" || die "wheelhouse $DIR is incomplete"
while read -r extra; do
    [ -n "$extra" ] || continue
    log "removing $extra (not in the lock)"
    rm -f "$DIR/$extra"
done < <("$PYTHON" "$HELPER" extras "$LOCK" "$DIR")
cp "$LOCK" "$DIR/$LOCK_NAME"
printf '%s\n' "$stamp" >"$DIR/.stamp"
log "wheelhouse ready: $DIR ($(find "$DIR" -maxdepth 1 -name '*.whl' | wc -l) wheels, $(du -sh "$DIR" | cut -f1), $((SECONDS - start)) s)"
