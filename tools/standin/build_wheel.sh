#!/usr/bin/env bash
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Build the llmserve SGLang stand-in wheel (sglang-0.5.23+llmserve.standin-py3-none-any.whl) into DIR,
# offline, with the standard library only. Prints the wheel's path.
#
#   tools/standin/build_wheel.sh DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=${1:?usage: build_wheel.sh DIR}
exec "${PYTHON:-python3}" "$here/build_wheel.py" "$dir"
