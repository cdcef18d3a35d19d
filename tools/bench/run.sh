#!/usr/bin/env bash
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# make bench: wait_for_endpoint vs ansible.builtin.uri + until vs the seed's curl loop, side by side; site.yml that
# changes nothing over one demo host and over both; the rolling restart through the gateway (fleet).
#
#   tools/bench/run.sh [bench_wait.py options, e.g. --samples 6 --seed 20261129]
#
# Builds the SGLang stand-in wheel, boots one systemd test container (localhost/llmserve-testhost:bookworm,
# named llmserve-bench-<pid>, removed on exit) for the crash sample, then runs tools/bench/bench_wait.py.
# BENCH_NO_CRASH=1 skips the container and the crash sample. The real SGLang start-up samples use
# $LLMSERVE_SGLANG_VENV and $LLMSERVE_SGLANG_MODEL (made by `make engine-assets`, which `make bench` runs
# first); BENCH_NO_REAL=1 skips them. Results: reports/bench_wait.json. BENCH_NO_WAIT=1 skips this whole part.
# Then site.yml on converged hosts (BENCH_NO_SITE=1 skips it, about 5 minutes): tools/demo.sh boots (or reuses)
# the two demo hosts of inventories/demo, and tools/bench/bench_site.py runs site.yml over one of them (--limit) and
# over both, alternating, BENCH_SITE_SAMPLES (default 5) times each; every run must change nothing. Targets: both hosts
# <= 1.3 x one host and one host <= 22 s (medians), PASS/FAIL each. Results: reports/bench_site.json, logs under
# reports/bench_site/.
# Then the compile caches (BENCH_NO_CACHE=1 skips them): tools/bench/bench_cache.py, two starts of the real CPU engine
# with the unit's environment; targets: no file written outside the declared directories, none added to the caches by
# the second start. Results: reports/bench_cache.json.
# Then the controller's cost per host (BENCH_NO_SCALE=1 skips it; see below), and the sliding window against lockstep
# batches (BENCH_NO_WINDOW=1 skips it; see below), and the canary gate (BENCH_NO_CANARY=1 skips it; see below).
# Then the model store (BENCH_NO_MODEL=1 skips it, about 11 minutes): tools/bench/bench_model.py serves a 1 GiB model
# from olah on 127.0.0.1 and compares the sglang_model role's download with curl's of the same file, side by side,
# then measures runs that change nothing (no weight byte read, checked with fincore). Targets: role rate >= 0.8 x
# curl's; what each host adds to a no-change run <= 0.5 s at ansible-core's default forks and with all hosts at once,
# and <= 1.5 plain module calls one after the other. Results: reports/bench_model.json, logs under
# reports/bench_model/. It needs `make model-assets` and `make engine-assets` (make bench runs both).
# Then the fleet (BENCH_NO_FLEET=1 skips it, about 25 minutes): `molecule test -s fleet` (one smg gateway, two
# real SGLang CPU workers) measures a client stream through the gateway in steady state, during restart.yml and
# during a plain restart without the drain; tools/bench/bench_fleet.py summarises it into reports/bench_fleet.json
# (scenario log: reports/bench_fleet.log). It needs what `make molecule` needs (make bench runs those targets).
# Then the pre-warm (BENCH_NO_PREWARM=1 skips it, about 35 minutes): `molecule test -s prewarm` (one smg gateway, two
# real SGLang CPU workers serving a model of 2 GiB of weights, built once into $LLMSERVE_CACHE/models/big-llama by
# `make big-model`: tools/engine/make_tiny_model.py --size-mib 2048) runs restart.yml through the gateway with the
# weights dropped from the page cache, without and with the pre-warm, BENCH_PREWARM_SAMPLES (default 1) times each,
# with the storage as it is and again for each rate of BENCH_PREWARM_READ_BPS (default "100mb 20mb"; empty: only as
# it is), the workers' reads throttled to it. At 20mb, loading the weights cold takes about twice the warm start's
# time out of rotation, the proportion of the story's host (3-4 minutes cold, about 50 s warm).
# tools/bench/bench_prewarm.py compares the time out of rotation (target: with <= 0.6 x without) per condition.
# Results: reports/bench_prewarm.json (scenario log: reports/bench_prewarm.log).
# Then the revision swap (BENCH_NO_SWAP=1 skips it, about 5-10 minutes on 2 busy cores): tools/bench/bench_swap.py
# changes one real CPU SGLang server between two revisions of the tiny model (make_tiny_model.py seeds, built into
# reports/bench_swap/) by restart and by an in-place swap (POST /update_weights_from_disk through module_utils
# weight_swap), alternating, BENCH_SWAP_SAMPLES (default 3) times each, every answer checked against the revision's
# own. Target: swap <= 0.3 x restart time out of rotation (medians). It measures the server's mechanism alone.
# Results: reports/bench_swap.json, server logs under reports/bench_swap/.
# Then the same revision change through the role (BENCH_NO_SWAP_ROLE=1 skips it, about 20 minutes): `molecule test -s
# swap` (one smg gateway, two real SGLang CPU workers) runs site.yml A -> B by restart (an environment variable of the
# unit changes with the revision) and in place (sglang_server_weight_swap: required), in turns, BENCH_SWAP_ROLE_SAMPLES (default 2) times each, and back each time;
# tools/bench/bench_swap_role.py compares each worker's time out of rotation and its phases (the run reports' rotation
# records). Target: in place <= 0.3 x restart per worker (medians). Results: reports/bench_swap_role.json (scenario
# log: reports/bench_swap_role.log).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
: "${LLMSERVE_CACHE:=/var/cache/llmserve}"
python=${BENCH_PYTHON:-$LLMSERVE_CACHE/venv/bin/python}
[ -x "$python" ] || python=$(command -v python3)

work=$(mktemp -d /tmp/llmserve-bench.XXXXXX)
container=""
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  if [ -n "$container" ]; then podman rm -f -t 2 "$container" >/dev/null 2>&1 || true; fi
  rm -rf "$work/wheelhouse"
}
trap cleanup EXIT

args=(--json "$root/reports/bench_wait.json" --workdir "$work/logs")
if [ "${BENCH_NO_CRASH:-0}" = 1 ] || [ "${BENCH_NO_WAIT:-0}" = 1 ]; then
  args+=(--no-crash)
else
  bash "$root/tools/standin/build_wheel.sh" "$work/wheelhouse" >/dev/null
  # shellcheck source=/dev/null
  source "$root/tools/hosts/testhosts.sh"
  th_host_setup
  podman image exists localhost/llmserve-testhost:bookworm || th_build_images
  container="llmserve-bench-$$"
  podman run -d --name "$container" --systemd=always --label owner=llmserve-bench \
    -v "$work/wheelhouse:/opt/llmserve-wheelhouse:ro" localhost/llmserve-testhost:bookworm /sbin/init >/dev/null
  for _ in $(seq 1 60); do
    state=$(podman exec "$container" systemctl is-system-running 2>/dev/null || true)
    case "$state" in running|degraded) break ;; esac
    sleep 0.5
  done
  args+=(--container "$container")
fi

if [ "${BENCH_NO_REAL:-0}" != 1 ] && [ "${BENCH_NO_WAIT:-0}" != 1 ]; then
  : "${LLMSERVE_SGLANG_VENV:=$LLMSERVE_CACHE/venv-sglang-cpu}" "${LLMSERVE_SGLANG_MODEL:=$LLMSERVE_CACHE/models/tiny-llama}"
  if [ ! -x "$LLMSERVE_SGLANG_VENV/bin/python" ] || [ ! -f "$LLMSERVE_SGLANG_MODEL/config.json" ]; then
    echo "bench: no real SGLang venv/model at $LLMSERVE_SGLANG_VENV / $LLMSERVE_SGLANG_MODEL;" \
         "run 'make engine-assets' (or set BENCH_NO_REAL=1)" >&2
    exit 2
  fi
  args+=(--real-venv "$LLMSERVE_SGLANG_VENV" --real-model "$LLMSERVE_SGLANG_MODEL")
fi

status=0
if [ "${BENCH_NO_WAIT:-0}" != 1 ]; then
  "$python" "$here/bench_wait.py" "${args[@]}" "$@" || status=$?
fi

# Compile and JIT caches (BENCH_NO_CACHE=1 skips it, about 3 minutes): tools/bench/bench_cache.py starts the real SGLang
# CPU engine twice with the unit's environment (the role's base environment and its versioned cache directory) and
# lists what each start wrote outside the declared directories and what the second added to the caches (targets:
# none). Results: reports/bench_cache.json, logs under reports/bench_cache/.
if [ "${BENCH_NO_CACHE:-0}" != 1 ]; then
  echo "== compile/JIT caches: two starts of the real CPU engine"
  : "${LLMSERVE_SGLANG_VENV:=$LLMSERVE_CACHE/venv-sglang-cpu}" "${LLMSERVE_SGLANG_MODEL:=$LLMSERVE_CACHE/models/tiny-llama}"
  rm -rf "$root/reports/bench_cache"
  "$python" "$here/bench_cache.py" --venv "$LLMSERVE_SGLANG_VENV" --model "$LLMSERVE_SGLANG_MODEL" \
    --json "$root/reports/bench_cache.json" --workdir "$root/reports/bench_cache" || status=1
fi

if [ "${BENCH_NO_SITE:-0}" != 1 ]; then
  echo "== site.yml, no change: one demo host vs both"
  rm -rf "$root/reports/bench_site"; mkdir -p "$root/reports/bench_site"
  if LLMSERVE_DEMO_HOSTS_ONLY=1 bash "$root/tools/demo.sh" >"$root/reports/bench_site/demo-hosts.log" 2>&1; then
    "$python" "$here/bench_site.py" --inventory "$root/inventories/demo" \
      --hosts llmserve-demo-debian12,llmserve-demo-debian13 --samples "${BENCH_SITE_SAMPLES:-5}" \
      --json "$root/reports/bench_site.json" --workdir "$root/reports/bench_site" || status=1
  else
    echo "bench: the demo hosts did not start; see reports/bench_site/demo-hosts.log" >&2
    status=1
  fi
fi

# The controller's cost per host (BENCH_NO_SCALE=1 skips it, about 10 minutes): tools/bench/bench_scale.py boots
# test hosts of its own (llmserve-scale-<pid>-N, removed at the end) set up as the demo's stand-in host, converges
# them, then runs site.yml that changes nothing over 1, 2, 4 and 8 of them (BENCH_SCALE_HOSTS, comma separated),
# BENCH_SCALE_SAMPLES (default 2) times each, alternating, and once more at the smallest and largest count with facts
# gathered on every run. Per run: the controller's CPU seconds, the peak memory of the ansible-playbook process
# tree, the wall time; then the fits (a + b * hosts) with their R^2. Target: every run changed nothing. Forks: the
# largest host count, so every host has one (BENCH_SCALE_FORKS sets another number, e.g. 2 to tell the memory per
# host from the memory per fork).
# Results: reports/bench_scale.json, logs under reports/bench_scale/.
if [ "${BENCH_NO_SCALE:-0}" != 1 ]; then
  echo "== site.yml, no change: the controller's CPU and memory at ${BENCH_SCALE_HOSTS:-1,2,4,8} hosts"
  rm -rf "$root/reports/bench_scale"
  scale_forks=()
  if [ -n "${BENCH_SCALE_FORKS:-}" ]; then scale_forks=(--forks "$BENCH_SCALE_FORKS"); fi
  "$python" "$here/bench_scale.py" --counts "${BENCH_SCALE_HOSTS:-1,2,4,8}" --samples "${BENCH_SCALE_SAMPLES:-2}" \
    "${scale_forks[@]}" --uncached --prefix "llmserve-scale-$$" --json "$root/reports/bench_scale.json" \
    --workdir "$root/reports/bench_scale" || status=1
fi

# The sliding window (BENCH_NO_WINDOW=1 skips it, about 20 minutes): tools/bench/bench_window.py boots 2 smg gateways
# and 12 stand-in workers (llmserve-window-<pid>-*, two pools of 6: BENCH_WINDOW_POOL_SIZE; one worker slow to start:
# BENCH_WINDOW_SLOW_SECONDS, default 120), converges them, then for a window of 2 workers per pool
# (BENCH_WINDOW_SIZES, e.g. 1,2) rolls a change through every worker with lockstep batches of the same size and in
# the window, BENCH_WINDOW_SAMPLES (default 1) times each, alternating, while a client runs through each gateway. Targets: window
# <= 0.75 x lockstep (the change plays' time) per size, 0 failed client requests, never more workers out of a pool
# than the window (polled from the gateways). Results: reports/bench_window.json, logs under reports/bench_window/.
if [ "${BENCH_NO_WINDOW:-0}" != 1 ]; then
  echo "== a rollout through two gateway pools: sliding window vs lockstep batches of the same size"
  rm -rf "$root/reports/bench_window"
  "$python" "$here/bench_window.py" --samples "${BENCH_WINDOW_SAMPLES:-1}" --windows "${BENCH_WINDOW_SIZES:-2}" \
    --slow-seconds "${BENCH_WINDOW_SLOW_SECONDS:-120}" --pool-size "${BENCH_WINDOW_POOL_SIZE:-6}" \
    --prefix "llmserve-window-$$" \
    --json "$root/reports/bench_window.json" --workdir "$root/reports/bench_window" || status=1
fi

# The canary gate (BENCH_NO_CANARY=1 skips it, about 12 minutes): tools/bench/bench_canary.py boots 2 smg gateways and
# 6 stand-in workers (llmserve-canary-<pid>-*, two pools of 3), converges them, then rolls a bad change (every worker
# decodes 5 times slower: caught on the canary, rolled back, the run stops, no other worker changes) and a good one
# (passes the gate, every worker changes) while a client runs through each gateway. Results: reports/bench_canary.json,
# logs under reports/bench_canary/.
if [ "${BENCH_NO_CANARY:-0}" != 1 ]; then
  echo "== the canary gate: a change that decodes slower caught on the canary, a good change rolled on"
  rm -rf "$root/reports/bench_canary"
  "$python" "$here/bench_canary.py" --prefix "llmserve-canary-$$" \
    --json "$root/reports/bench_canary.json" --workdir "$root/reports/bench_canary" || status=1
fi

if [ "${BENCH_NO_MODEL:-0}" != 1 ]; then
  echo "== sglang_model: download through the role vs curl, and a run that changes nothing (1 GiB model)"
  rm -rf "$root/reports/bench_model"
  "$python" "$here/bench_model.py" --json "$root/reports/bench_model.json" --workdir "$root/reports/bench_model" \
    || status=1
  # the model, the mirror's copy and the store: gigabytes that the logs do not need
  rm -rf "$root/reports/bench_model/mirror" "$root/reports/bench_model/store" "$root/reports/bench_model/olah/repos"
fi

# a molecule scenario whose side effect writes its measurements to $REPORT_VAR, then its summariser:
#   scenario_bench NAME SCENARIO REPORT_VAR SUMMARISER [VAR=VALUE...]
# log reports/NAME.log, raw measurements reports/NAME_raw.json, summary reports/NAME.json
scenario_bench() {
  local name=$1 scenario=$2 report_var=$3 summariser=$4
  shift 4
  mkdir -p "$root/reports"; rm -f "$root/reports/${name}_raw.json"
  if (cd "$root" && env "$report_var=$root/reports/${name}_raw.json" "$@" molecule test -s "$scenario") \
      >"$root/reports/$name.log" 2>&1; then
    "$python" "$here/$summariser" "$root/reports/${name}_raw.json" --json "$root/reports/$name.json" || status=1
  else
    echo "bench: the $scenario scenario failed; last lines of reports/$name.log:" >&2
    tail -n 40 "$root/reports/$name.log" >&2
    status=1
  fi
}

if [ "${BENCH_NO_FLEET:-0}" != 1 ]; then
  echo "== fleet: molecule test -s fleet (log: reports/bench_fleet.log)"
  # streams of 1200 tokens outlast the workers' stop timeout: the plain restart cuts them, the drain does not
  scenario_bench bench_fleet fleet LLMSERVE_FLEET_REPORT bench_fleet.py \
    LLMSERVE_FLEET_STREAM_TOKENS="${LLMSERVE_FLEET_STREAM_TOKENS:-1200}"
fi
if [ "${BENCH_NO_PREWARM:-0}" != 1 ]; then
  echo "== pre-warm: molecule test -s prewarm (log: reports/bench_prewarm.log)"
  big_model="$LLMSERVE_CACHE/models/big-llama"
  if [ ! -f "$big_model/config.json" ]; then
    echo "bench: no model at $big_model (make big-model builds it; make bench does)" >&2
    status=1
  else
    scenario_bench bench_prewarm prewarm LLMSERVE_PREWARM_REPORT bench_prewarm.py LLMSERVE_BIG_MODEL="$big_model" \
      LLMSERVE_PREWARM_SAMPLES="${BENCH_PREWARM_SAMPLES:-1}" \
      LLMSERVE_PREWARM_READ_BPS="${BENCH_PREWARM_READ_BPS-100mb 20mb}"
  fi
fi
if [ "${BENCH_NO_SWAP:-0}" != 1 ]; then
  echo "== revision change: restart vs in-place weight swap, real SGLang on CPU"
  : "${LLMSERVE_SGLANG_VENV:=$LLMSERVE_CACHE/venv-sglang-cpu}" "${LLMSERVE_SGLANG_MODEL:=$LLMSERVE_CACHE/models/tiny-llama}"
  rm -rf "$root/reports/bench_swap"
  "$python" "$here/bench_swap.py" --venv "$LLMSERVE_SGLANG_VENV" --model "$LLMSERVE_SGLANG_MODEL" \
    --samples "${BENCH_SWAP_SAMPLES:-3}" --json "$root/reports/bench_swap.json" --workdir "$root/reports/bench_swap" \
    || status=1
fi
if [ "${BENCH_NO_SWAP_ROLE:-0}" != 1 ]; then
  echo "== revision change through site.yml: molecule test -s swap (log: reports/bench_swap_role.log)"
  scenario_bench bench_swap_role swap LLMSERVE_SWAP_REPORT bench_swap_role.py \
    LLMSERVE_SWAP_SAMPLES="${BENCH_SWAP_ROLE_SAMPLES:-2}"
fi
exit "$status"
