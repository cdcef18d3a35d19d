#!/usr/bin/env bash
# Test hosts for molecule: Debian 12 and 13 images that boot systemd as PID 1 under rootful podman,
# built locally with debootstrap from the Debian mirror this machine's apt sources already use.
#
# Sourced by the Makefile targets; every function is idempotent and safe to re-run:
#   th_host_setup    podman + debootstrap installed, the two host fixes applied (needed on each boot)
#   th_build_images  localhost/llmserve-testhost:<suite> for each suite in TH_SUITES (cached)
#   th_teardown      remove molecule containers and the scenarios' podman networks (keeps images)
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

: "${LLMSERVE_CACHE:=/var/cache/llmserve}"
: "${TH_WORK:=$LLMSERVE_CACHE/rootfs}"
: "${TH_SUITES:=bookworm trixie}"
: "${TH_IMAGE_PREFIX:=localhost/llmserve-testhost}"
: "${TH_MIRROR:=}"
: "${TH_SECURITY_MIRROR:=}"
# Pre-baked packages: what every role needs on a host, so scenarios do not spend time in apt.
# python3-venv: sglang_server builds its virtualenv; kmod + initramfs-tools: nvidia_driver.
: "${TH_PKGS:=systemd,systemd-sysv,dbus,python3,python3-apt,python3-venv,python3-pip,sudo,iproute2,procps,kmod,initramfs-tools,ca-certificates,curl}"
# Bump when TH_PKGS or the recipe changes, so cached images are rebuilt instead of silently reused.
TH_RECIPE_VERSION=1

th_log() { printf '[testhosts %(%T)T] %s\n' -1 "$*" >&2; }

th_host_setup() {
  if ! command -v podman >/dev/null || ! command -v debootstrap >/dev/null; then
    th_log "installing podman and debootstrap"
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends \
      podman crun conmon netavark aardvark-dns iptables catatonit uidmap slirp4netns fuse-overlayfs \
      debootstrap >/dev/null
  fi
  # Fix 1: crun 1.8 refuses cgroup "hybrid" mode while cgroup2 still owns a controller
  # ("cgroups in hybrid mode not supported"). Give each such controller a v1 hierarchy (per boot).
  local ctl ctls=()
  if [ -r /sys/fs/cgroup/unified/cgroup.controllers ]; then
    read -ra ctls < /sys/fs/cgroup/unified/cgroup.controllers || true
  fi
  for ctl in "${ctls[@]}"; do
    mkdir -p "/sys/fs/cgroup/$ctl"
    mountpoint -q "/sys/fs/cgroup/$ctl" || mount -t cgroup -o "$ctl" cgroup "/sys/fs/cgroup/$ctl"
  done
  # Fix 2: rootful podman asks for nofile/nproc 1048576, above this VM's hard limits and without
  # CAP_SYS_RESOURCE ("setrlimit RLIMIT_NOFILE: Operation not permitted"). Ask for what we have.
  local nofile nproc pidmax
  nofile=$(ulimit -Hn)
  nproc=$(ulimit -Hu)
  pidmax=$(cat /proc/sys/kernel/pid_max)
  if [ "$nofile" = unlimited ]; then nofile=1048576; fi
  if [ "$nproc" = unlimited ] || [ "$nproc" -gt "$pidmax" ]; then nproc=$pidmax; fi
  mkdir -p /etc/containers
  local conf
  conf=$(printf '[containers]\ndefault_ulimits = ["nofile=%s:%s", "nproc=%s:%s"]\n[network]\nnetwork_backend = "netavark"\n' \
    "$nofile" "$nofile" "$nproc" "$nproc")
  if [ "$(cat /etc/containers/containers.conf 2>/dev/null)" != "$conf" ]; then
    printf '%s\n' "$conf" > /etc/containers/containers.conf
  fi
  rm -f /etc/cni/net.d/87-podman-bridge.conflist   # unused CNI file; only produces warnings
  mkdir -p "$TH_WORK"
}

# Print "URI SUITE COMPONENTS..." for each enabled deb entry of this machine's apt sources,
# one-line (*.list) and deb822 (*.sources) formats.
th_apt_sources() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -r "$f" ] || continue
    awk '$1 == "deb" {
           i = 2
           if ($i ~ /^\[/) { while (i < NF && $i !~ /\]$/) i++; i++ }
           line = $i
           for (j = i + 1; j <= NF && $j !~ /^#/; j++) line = line " " $j
           print line
         }' "$f"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    awk 'BEGIN { RS = ""; FS = "\n" }
         {
           types = ""; uris = ""; suites = ""; comps = ""; enabled = "yes"
           for (i = 1; i <= NF; i++) {
             if ($i ~ /^[ \t]*#/ || !match($i, /^[A-Za-z-]+:/)) continue
             key = tolower(substr($i, 1, RLENGTH - 1)); val = substr($i, RLENGTH + 1)
             if (key == "types") types = val
             else if (key == "uris") uris = val
             else if (key == "suites") suites = val
             else if (key == "components") comps = val
             else if (key == "enabled") enabled = tolower(val)
           }
           gsub(/[ \t]/, "", enabled)
           if (enabled == "no" || (" " types " ") !~ /[ \t]deb[ \t]/) next
           nu = split(uris, U, /[ \t]+/); ns = split(suites, S, /[ \t]+/)
           for (a = 1; a <= nu; a++) for (b = 1; b <= ns; b++)
             if (U[a] != "" && S[b] != "") print U[a], S[b], comps
         }' "$f"
  done
}

th_mirrors() {
  local src
  src=$(th_apt_sources)
  [ -n "$TH_MIRROR" ] || TH_MIRROR=$(awk '$2 !~ /-(security|backports)$/ {
      for (i = 3; i <= NF; i++) if ($i == "main") { print $1; exit } }' <<<"$src")
  [ -n "$TH_SECURITY_MIRROR" ] || TH_SECURITY_MIRROR=$(awk '$2 ~ /-security$/ {
      for (i = 3; i <= NF; i++) if ($i == "main") { print $1; exit } }' <<<"$src")
  TH_MIRROR=${TH_MIRROR%/}
  TH_SECURITY_MIRROR=${TH_SECURITY_MIRROR%/}
  if [ -z "$TH_MIRROR" ]; then
    th_log "no Debian 'main' entry found in this machine's apt sources; set TH_MIRROR"
    return 1
  fi
  th_log "mirror $TH_MIRROR, security ${TH_SECURITY_MIRROR:-none}"
}

th_image_tag() { printf '%s:%s-r%s' "$TH_IMAGE_PREFIX" "$1" "$TH_RECIPE_VERSION"; }

th_build_image() {
  local suite=$1 tag rootfs log
  tag=$(th_image_tag "$suite")
  if podman image exists "$tag"; then
    th_log "$tag is cached"
    podman tag "$tag" "$TH_IMAGE_PREFIX:$suite"
    return 0
  fi
  rootfs="$TH_WORK/$suite"
  log="$TH_WORK/debootstrap-$suite.log"
  rm -rf "$rootfs"
  th_log "debootstrap $suite (log: $log)"
  if ! debootstrap --variant=minbase --include="$TH_PKGS" "$suite" "$rootfs" "$TH_MIRROR" >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    return 1
  fi
  {
    printf 'deb %s %s main\ndeb %s %s-updates main\n' "$TH_MIRROR" "$suite" "$TH_MIRROR" "$suite"
    if [ -n "$TH_SECURITY_MIRROR" ]; then printf 'deb %s %s-security main\n' "$TH_SECURITY_MIRROR" "$suite"; fi
  } > "$rootfs/etc/apt/sources.list"
  chroot "$rootfs" apt-get clean
  echo testhost > "$rootfs/etc/hostname"
  : > "$rootfs/etc/machine-id"        # systemd creates a fresh one in each container
  rm -f "$rootfs/etc/resolv.conf"
  : > "$rootfs/etc/resolv.conf"
  th_log "podman import $tag"
  tar -C "$rootfs" -c . | podman import -q \
    --change 'CMD ["/sbin/init"]' --change 'STOPSIGNAL SIGRTMIN+3' --change 'ENV container=podman' \
    - "$tag" >/dev/null
  podman tag "$tag" "$TH_IMAGE_PREFIX:$suite"
  rm -rf "$rootfs"
}

th_build_images() {
  th_mirrors
  local suite pids=() rc=0 pid
  for suite in $TH_SUITES; do
    if [ ! -e "/usr/share/debootstrap/scripts/$suite" ]; then
      th_log "debootstrap has no script for suite '$suite'"
      return 1
    fi
    th_build_image "$suite" & pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  return $rc
}

# th_teardown [PREFIX...]: remove molecule containers (all of them, or those whose names start with
# one of the prefixes: platform names are "<scenario>-debianNN") and, without prefixes, the networks the scenarios
# declare. Keeps images.
th_teardown() {
  command -v podman >/dev/null || return 0
  local prefix filters=()
  for prefix in "$@"; do filters+=(--filter "name=^$prefix-"); done
  if [ $# -eq 0 ] || [ ${#filters[@]} -gt 0 ]; then
    podman ps -aq --filter label=owner=molecule "${filters[@]}" | xargs -r podman rm -f -t 5 >/dev/null
  fi
  if [ $# -eq 0 ]; then
    # only the networks the scenarios declare: an operator's own podman networks (and the containers on them,
    # which `network rm -f` would remove too) are not the test suite's to delete
    th_scenario_networks | while read -r net; do
      if podman network exists "$net"; then podman network rm -f "$net" >/dev/null || true; fi
    done
  fi
}

# th_scenario_networks: the podman networks named in molecule/*/molecule.yml ("network: NAME"), one per line.
th_scenario_networks() {
  local root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  sed -n 's/^[[:space:]]*network:[[:space:]]*\([A-Za-z0-9][A-Za-z0-9_.-]*\)[[:space:]]*$/\1/p' \
    "$root"/molecule/*/molecule.yml | sort -u
}
