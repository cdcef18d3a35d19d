#!/usr/bin/env bash
# Builds a stand-in package of the nextboot scenario with the real dpkg-deb and prints the path of the .deb.
# They are test-built look-alikes, not NVIDIA's or Debian's packages: their names, versions and file layout are those
# of the real ones, but the nvidia.ko holds only an ELF .modinfo section (tests/fixtures/next_boot/boot_files.py),
# the NVML library is a few bytes and the kernel is a copy of the installed one under a new release name. Nothing of
# it is ever loaded or booted (containers cannot load modules or boot kernels).
#   lookalike_deb.sh module KERNEL VERSION  linux-modules-nvidia-535-KERNEL: nvidia.ko VERSION built for KERNEL, in
#                                            kernel/nvidia-535 (the layout of Ubuntu's precompiled module packages)
#   lookalike_deb.sh nvml VERSION           libnvidia-ml1: libnvidia-ml.so.VERSION and the link libnvidia-ml.so.1
#   lookalike_deb.sh kernel KERNEL NEW      linux-image-NEW: KERNEL's vmlinuz, config, System.map and modules (without
#                                            the NVIDIA module and depmod's output), named NEW
set -euo pipefail

out=${LOOKALIKE_DEB_DIR:-/srv/llmserve-nextboot/debs}
boot_files=${LOOKALIKE_BOOT_FILES:-/usr/local/lib/llmserve-nextboot/boot_files.py}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pkg=$work/pkg

# The modules directory the installed image of KERNEL uses: /lib/modules (Debian 12) or /usr/lib/modules (Debian 13).
modules_dir() {
  local dir
  for dir in /usr/lib/modules /lib/modules; do
    # grep reads all of it (no -q): dpkg -L would die of SIGPIPE under pipefail
    if dpkg -L "linux-image-$1" | grep -xF "$dir/$1" >/dev/null; then
      printf '%s\n' "$dir"
      return 0
    fi
  done
  echo "lookalike_deb.sh: no package linux-image-$1 ships a modules directory" >&2
  return 1
}

# build NAME VERSION DESCRIPTION: the package of everything below $pkg
build() {
  local deb="$out/${1}_${2}_amd64.deb"
  mkdir -p "$pkg/DEBIAN" "$out"
  printf '%s\n' "Package: $1" "Version: $2" "Architecture: amd64" "Section: misc" "Priority: optional" \
    "Maintainer: llmserve.sglang tests <tests@llmserve.invalid>" "Description: $3" \
    " Test-built look-alike for the llmserve.sglang nextboot molecule scenario." >"$pkg/DEBIAN/control"
  # uncompressed: the kernel package's modules tree would take most of the build time in xz
  dpkg-deb --root-owner-group -Znone -b "$pkg" "$deb" >/dev/null
  printf '%s\n' "$deb"
}

case ${1:-} in
  module)
    kernel=$2 version=$3
    dir=$pkg$(modules_dir "$kernel")/$kernel/kernel/nvidia-535
    mkdir -p "$dir"
    python3 "$boot_files" module "$dir/nvidia.ko" --version "$version" \
      --vermagic "$kernel SMP preempt mod_unload modversions "
    build "linux-modules-nvidia-535-$kernel" "$version-0llmserve1" "NVIDIA kernel module $version for $kernel (look-alike)"
    ;;
  nvml)
    version=$2
    lib=$pkg/usr/lib/x86_64-linux-gnu
    mkdir -p "$lib"
    printf '\177ELF stand-in for libnvidia-ml.so.%s\n' "$version" >"$lib/libnvidia-ml.so.$version"
    ln -s "libnvidia-ml.so.$version" "$lib/libnvidia-ml.so.1"
    build libnvidia-ml1 "$version-1~llmserve1" "NVIDIA Management Library (NVML) $version (look-alike)"
    ;;
  kernel)
    kernel=$2 new=$3
    modules=$(modules_dir "$kernel")
    mkdir -p "$pkg/boot" "$pkg$modules"
    for file in vmlinuz config System.map; do
      cp "/boot/$file-$kernel" "$pkg/boot/$file-$new"
    done
    cp -a "$modules/$kernel" "$pkg$modules/$new"
    # a new kernel comes without the NVIDIA module; depmod writes its own files after the install
    rm -rf "$pkg$modules/$new"/kernel/nvidia-*
    find "$pkg$modules/$new" -maxdepth 1 -name 'modules.*' ! -name modules.order ! -name modules.builtin \
      ! -name modules.builtin.modinfo -delete
    build "linux-image-$new" "999.0-0llmserve1" "Linux $new (look-alike: a copy of $kernel)"
    ;;
  *)
    echo "usage: lookalike_deb.sh module KERNEL VERSION | nvml VERSION | kernel KERNEL NEW" >&2
    exit 2
    ;;
esac
