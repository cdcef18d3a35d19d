#!/usr/bin/env bash
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Put the real promtool of Debian 12's Prometheus (2.42) into the cache and print its path, for `make rules-test`.
#
#   tools/prometheus/get_promtool.sh [DIR]
#       (default: $LLMSERVE_CACHE/prometheus/<package version>, LLMSERVE_CACHE defaults to /var/cache/llmserve)
#
# The package is fetched with `apt-get download` (apt checks it against the signed index) and only
# usr/bin/promtool is unpacked with `dpkg-deb -x`: installing the package would run its postinst, which creates
# an account and starts a Prometheus server on this machine. A DIR whose promtool answers with the pinned version
# is reused; nothing is downloaded then.
set -euo pipefail

PACKAGE=prometheus
VERSION=${LLMSERVE_PROMETHEUS_DEB_VERSION:-2.42.0+ds-5+deb12u1}
DIR=${1:-${LLMSERVE_CACHE:-/var/cache/llmserve}/prometheus/$VERSION}
PROMTOOL="$DIR/promtool"

log() { printf '[get_promtool] %s\n' "$*" >&2; }
die() { printf '[get_promtool] ERROR: %s\n' "$*" >&2; exit 1; }

have_version() {
    # Debian's build says: promtool, version 2.42.0+ds (branch: debian/sid, revision: 2.42.0+ds-5+deb12u1)
    [ -x "$PROMTOOL" ] && "$PROMTOOL" --version 2>&1 | grep -qF "revision: $VERSION)"
}

if have_version; then
    printf '%s\n' "$PROMTOOL"
    exit 0
fi

if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
    die "apt-get and dpkg-deb are needed (Debian or Ubuntu); or put Debian's promtool $VERSION at $PROMTOOL"
fi
mkdir -p "$DIR"
# one fetch at a time: two make runs may start together
exec 9>"$DIR/.fetch.flock"
flock 9
if have_version; then
    printf '%s\n' "$PROMTOOL"
    exit 0
fi

work=$(mktemp -d "$DIR/.fetch.XXXXXX")
trap 'rm -rf -- "$work"' EXIT
# apt drops to its _apt account for downloads; that account must be able to write the directory
if [ "$(id -u)" -eq 0 ] && id _apt >/dev/null 2>&1; then
    chown _apt "$work"
fi
log "downloading $PACKAGE=$VERSION"
if ! (cd "$work" && apt-get download -q "$PACKAGE=$VERSION" >/dev/null 2>&1); then
    # a fresh machine may have no package lists yet
    log "apt-get download failed; updating the package lists once"
    apt-get update -qq >/dev/null || die "apt-get update failed"
    (cd "$work" && apt-get download -q "$PACKAGE=$VERSION" >/dev/null) ||
        die "apt-get download $PACKAGE=$VERSION failed (the version is Debian 12's)"
fi
deb=$(find "$work" -maxdepth 1 -name "${PACKAGE}_*.deb" -print -quit)
[ -n "$deb" ] || die "apt-get download left no ${PACKAGE}_*.deb in $work"
dpkg-deb -x "$deb" "$work/root"
[ -x "$work/root/usr/bin/promtool" ] || die "$(basename "$deb") holds no usr/bin/promtool"
# rename within the directory: a reader never sees a half-written promtool
install -m 0755 "$work/root/usr/bin/promtool" "$work/promtool"
mv -f "$work/promtool" "$PROMTOOL"
have_version || die "$PROMTOOL does not report version $VERSION: $("$PROMTOOL" --version 2>&1 | head -n1)"
log "promtool $VERSION ready: $PROMTOOL"
printf '%s\n' "$PROMTOOL"
