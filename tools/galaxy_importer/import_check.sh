#!/usr/bin/env bash
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Import a built tarball with galaxy-importer, as Galaxy and Automation Hub do on an upload, for `make build-check`.
#
#   tools/galaxy_importer/import_check.sh VENV TARBALL
#
# VENV holds galaxy-importer (the Makefile builds it from requirements.txt beside this file); its ansible-doc and
# ansible-lint are the ones the importer runs (it finds them on PATH). The configuration is galaxy-importer.cfg
# beside this file: offline, no containers. Fails when the import fails, and when its log has a CRITICAL, ERROR or
# WARNING line, which it prints: the importer itself succeeds on warnings (ansible-lint's findings are warnings),
# and Galaxy shows them on the collection's page.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VENV=${1:?usage: import_check.sh VENV TARBALL}
TARBALL=$(readlink -f "${2:?usage: import_check.sh VENV TARBALL}")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log="$work/importer.log"
# importer_result.json lands in the working directory; the extracted tarball and ansible's temporary files (the
# default ansible_local_tmp, ~/.ansible/tmp, would also be ansible-lint's XDG_CACHE_HOME) stay in this run's directory.
if ! (cd "$work" && PATH="$VENV/bin:$PATH" GALAXY_IMPORTER_CONFIG="$HERE/galaxy-importer.cfg" \
        GALAXY_IMPORTER_ANSIBLE_LOCAL_TMP="$work/ansible-tmp" GALAXY_IMPORTER_TMP_ROOT_DIR="$work" \
        "$VENV/bin/python" -m galaxy_importer.main "$TARBALL") >"$log" 2>&1; then
    grep -v '^Loading ' "$log" || true  # less its line for each plugin, module and role
    echo "galaxy-importer: the import of $(basename "$TARBALL") failed" >&2
    exit 1
fi
if grep -E 'CRITICAL|ERROR|WARNING' "$log"; then
    echo "galaxy-importer: $(basename "$TARBALL") imports, with the errors or warnings above" >&2
    exit 1
fi
"$VENV/bin/python" - "$work/importer_result.json" "$(basename "$TARBALL")" <<'EOF'
import collections, json, sys
import galaxy_importer
kinds = collections.Counter(c["content_type"] for c in json.load(open(sys.argv[1]))["contents"])
print("galaxy-importer %s: %s imports (%s), no error or warning"
      % (galaxy_importer.__version__, sys.argv[2], ", ".join("%s %d" % (k, n) for k, n in sorted(kinds.items()))))
EOF
