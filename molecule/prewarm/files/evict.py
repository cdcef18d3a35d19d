# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Drop a model directory's files from the page cache (POSIX_FADV_DONTNEED on every regular file) and say how much of
them stayed resident, as fincore (util-linux) counts it. Prints one JSON object: files, bytes, resident_before,
resident_after (bytes).

    python3 evict.py MODEL_DIR

Runs on the machine that holds the files (the podman host: the workers mount the directory read-only). A page that
a running process has mapped stays resident; fincore shows it, and the caller refuses a sample that was not cold.
"""

import json
import os
import subprocess
import sys


def files(root):
    for base, _dirs, names in os.walk(root):
        for name in sorted(names):
            path = os.path.join(base, name)
            if os.path.isfile(path) and not os.path.islink(path):
                yield path


def resident(paths):
    """Bytes of ``paths`` in the page cache (fincore's RES column)."""
    if not paths:
        return 0
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES"] + paths,
                         capture_output=True, text=True, check=True).stdout
    return sum(int(line) for line in out.split())


def main(root):
    paths = list(files(root))
    before = resident(paths)
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    print(json.dumps({"files": len(paths), "bytes": sum(os.path.getsize(p) for p in paths),
                      "resident_before": before, "resident_after": resident(paths)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
