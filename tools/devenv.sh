#!/usr/bin/env bash
# Developer environment for llmserve.sglang: the controller virtualenv and the collection trees that
# ansible, ansible-test and molecule need. Sourced by the Makefile; every function is idempotent.
set -euo pipefail

: "${LLMSERVE_CACHE:=/var/cache/llmserve}"
: "${LLMSERVE_VENV:=$LLMSERVE_CACHE/venv}"
DEV_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# One tree per checkout, so two clones (a session and its CI run) never point at each other's files.
DEV_TREE="$LLMSERVE_CACHE/trees/$(printf '%s' "$DEV_ROOT" | sha256sum | cut -c1-12)"

dev_log() { printf '[devenv %(%T)T] %s\n' -1 "$*" >&2; }

# ansible-core 2.20 and 2.21 need Python >= 3.12 on the controller: LLMSERVE_PYTHON when set, else pyenv's 3.12
# (what CI uses), else python3.12, python3.13 or python3.14 on PATH (distribution packages, `uv python install`).
# tools/machine_check.py (find_python) looks in the same places.
dev_python() {
  local p
  if [ -n "${LLMSERVE_PYTHON:-}" ]; then
    if "$LLMSERVE_PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      command -v "$LLMSERVE_PYTHON"
      return 0
    fi
    dev_log "LLMSERVE_PYTHON=$LLMSERVE_PYTHON is not a Python >= 3.12 that runs"
    return 1
  fi
  for p in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12.*/bin/python3.12; do
    [ -x "$p" ] && { printf '%s\n' "$p"; return 0; }
  done
  for p in python3.12 python3.13 python3.14; do
    if command -v "$p" >/dev/null && "$p" -c 'import sys' 2>/dev/null; then
      command -v "$p"
      return 0
    fi
  done
  dev_log "no Python >= 3.12 (ansible-core 2.21 needs it): install one (the distribution's python3.12, \`pyenv install 3.12\` or \`uv python install 3.12\`) or set LLMSERVE_PYTHON=/path/to/python3.12"
  return 1
}

# Host tools the test suite calls besides Python packages: ansible-test's shellcheck test; nft and ip for the
# multi-node firewall test (tests/unit/roles/sglang_server/test_node_firewall.py loads the rules into namespaces);
# headless Chromium for the browser test of report.html (tests/functional/report; the headless shell is the
# smallest Debian package of it).
dev_system_packages() {
  local missing=()
  command -v shellcheck >/dev/null || missing+=(shellcheck)
  command -v nft >/dev/null || [ -x /usr/sbin/nft ] || missing+=(nftables)
  command -v ip >/dev/null || [ -x /usr/sbin/ip ] || missing+=(iproute2)
  command -v chromium-headless-shell >/dev/null || command -v chromium >/dev/null || missing+=(chromium-headless-shell)
  [ "${#missing[@]}" -eq 0 ] && return 0
  dev_log "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The venv at LLMSERVE_VENV, built from LLMSERVE_VENV_REQUIREMENTS (default requirements-dev.txt; `make compat`
# names requirements-compat.txt and a venv of its own, `make build-check` tools/galaxy_importer/requirements.txt),
# rebuilt when that file changes.
dev_venv() {
  local venv=$LLMSERVE_VENV req=${LLMSERVE_VENV_REQUIREMENTS:-$DEV_ROOT/requirements-dev.txt} want have py
  # make check needs none of them (no sanity; the firewall test skips without nft) and may run without root
  [ "${LLMSERVE_SYSTEM_PACKAGES:-yes}" = no ] || dev_system_packages
  want=$(sha256sum "$req" | cut -c1-16)
  have=$(cat "$venv/.llmserve-stamp" 2>/dev/null || true)
  if [ "$want" = "$have" ] && [ -x "$venv/bin/ansible-playbook" ]; then
    return 0
  fi
  py=$(dev_python)
  # the interpreter's own file: a venv made through a link in another directory (uv's ~/.local/bin/python3.12)
  # looks for the standard library next to the link and cannot even run ensurepip
  py=$(readlink -f "$py")
  dev_log "building $venv from $(basename "$req") with $py"
  rm -rf "$venv"
  "$py" -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$req"
  printf '%s\n' "$want" > "$venv/.llmserve-stamp"
}

# ansible_collections/llmserve/sglang -> this checkout (a symlink: edits are live). LLMSERVE_TREE names a tree
# that exists already (make check: the committed collections/ of the checkout, so nothing is written outside it).
dev_tree() {
  if [ -n "${LLMSERVE_TREE:-}" ]; then
    printf '%s\n' "$LLMSERVE_TREE"
    return 0
  fi
  mkdir -p "$DEV_TREE/ansible_collections/llmserve"
  ln -sfn "$DEV_ROOT" "$DEV_TREE/ansible_collections/llmserve/sglang"
  printf '%s\n' "$DEV_TREE"
}

# ansible-test wants to run inside a real ansible_collections/<ns>/<name> directory, so sanity gets
# a copy of the files git knows about (tracked and untracked-but-not-ignored). One copy per checkout and venv: make
# test runs the sanity tests of two ansible-core versions at once.
dev_sanity_tree() {
  local dst
  dst="$LLMSERVE_CACHE/sanity/$(basename "$DEV_TREE")-$(basename "$LLMSERVE_VENV")/ansible_collections/llmserve/sglang"
  rm -rf "$dst"
  mkdir -p "$dst"
  # files deleted in the work tree but still in the index are skipped by --ignore-failed-read
  # collections/ (the checkout linked as llmserve.sglang for the root playbooks) is not shipped (build_ignore):
  # sanity checks what ships, and the copy holds no link back to the checkout
  (cd "$DEV_ROOT" && git ls-files -z --cached --others --exclude-standard -- . ':!:collections' |
    tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -C "$dst" -xf -
  printf '%s\n' "$dst"
}

# ansible-test downloads a pip bootstrap script from a host CI cannot reach; give it a local one
# at the cache path it checks first (the pip version is read from the installed ansible-test).
dev_ansible_test_pip() {
  local ver
  ver=$("$LLMSERVE_VENV/bin/python" -c 'import re, ansible_test, pathlib
src = (pathlib.Path(ansible_test.__file__).parent / "_internal/python_requirements.py").read_text()
print(re.search(r"pip=.([0-9.]+).", src).group(1))')
  mkdir -p "$HOME/.ansible/test/cache"
  install -m 0644 "$DEV_ROOT/tools/ansible_test_get_pip.py" "$HOME/.ansible/test/cache/get_pip_${ver//./_}.py"
}
