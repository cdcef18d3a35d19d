#!/usr/bin/env bash
# Run molecule scenarios in N parallel lanes (MOLECULE_LANES, default 2): the scenarios spend most of their time
# waiting on containers and services, so two lanes fit a 2-core machine. Scenarios are dealt out in the order
# given (put the longest first). Prints one PASSED/FAILED line per scenario, the failed logs' tails, and the
# closing line "molecule: N passed, N failed".
#   molecule_lanes.sh LOGDIR SCENARIO...
set -uo pipefail
logdir=$1
shift
lanes=${MOLECULE_LANES:-2}
mkdir -p "$logdir"

run_lane() {
  local s start rc
  for s in "$@"; do
    start=$SECONDS
    molecule test -s "$s" </dev/null >"$logdir/molecule-$s.log" 2>&1
    rc=$?
    echo "$rc $((SECONDS - start))" >"$logdir/molecule-$s.result"
    if [ "$rc" -eq 0 ]; then
      echo "molecule scenario $s: PASSED ($((SECONDS - start)) s)"
    else
      echo "molecule scenario $s: FAILED ($((SECONDS - start)) s)"
    fi
  done
}

declare -a lane_items
i=0
for s in "$@"; do
  lane_items[i % lanes]+="$s "
  i=$((i + 1))
done
pids=()
for ((l = 0; l < lanes; l++)); do
  # shellcheck disable=SC2086  # word splitting of the lane's scenario list is intended
  [ -n "${lane_items[l]:-}" ] && { run_lane ${lane_items[l]} & pids+=($!); }
done
for p in "${pids[@]}"; do wait "$p"; done

pass=0
fail=0
for s in "$@"; do
  read -r rc _secs <"$logdir/molecule-$s.result" 2>/dev/null || rc=1
  if [ "$rc" -eq 0 ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "---- last 150 lines of molecule test -s $s ----"
    tail -n 150 "$logdir/molecule-$s.log"
  fi
done
echo "molecule: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
