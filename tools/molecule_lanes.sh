#!/usr/bin/env bash
# Run molecule scenarios in N parallel lanes (MOLECULE_LANES, default 2): the scenarios spend most of their time
# waiting on containers and services, so two lanes fit a 2-core machine. A lane that is free takes the next
# scenario of the list (put the longest first: the fleet scenario then runs alone in one lane while the other works
# through the rest). Prints one PASSED/FAILED line per scenario, a failed scenario's log tail as soon as it failed
# (a CI run killed at its time limit still shows why an earlier scenario failed), and the closing line
# "molecule: N passed, N failed".
#   molecule_lanes.sh LOGDIR SCENARIO...
set -uo pipefail
logdir=$1
shift
lanes=${MOLECULE_LANES:-2}
mkdir -p "$logdir"

queue=$(mktemp)
printf '%s\n' "$@" >"$queue"
trap 'rm -f "$queue" "$queue.lock"' EXIT

# the next scenario of the queue, taken under a lock so two lanes never take the same one
next_scenario() {
  (
    flock 9
    head -n 1 "$queue"
    sed -i '1d' "$queue"
  ) 9>"$queue.lock"
}

run_lane() {
  local s start rc
  while s=$(next_scenario) && [ -n "$s" ]; do
    start=$SECONDS
    molecule test -s "$s" </dev/null >"$logdir/molecule-$s.log" 2>&1
    rc=$?
    echo "$rc $((SECONDS - start))" >"$logdir/molecule-$s.result"
    if [ "$rc" -eq 0 ]; then
      echo "molecule scenario $s: PASSED ($((SECONDS - start)) s)"
    else
      # one block under the queue's lock: the other lane's lines never fall inside it
      (
        flock 9
        echo "molecule scenario $s: FAILED ($((SECONDS - start)) s)"
        echo "---- last 150 lines of molecule test -s $s ----"
        tail -n 150 "$logdir/molecule-$s.log"
        echo "---- end of molecule test -s $s ----"
      ) 9>"$queue.lock"
    fi
  done
}

pids=()
for ((l = 0; l < lanes; l++)); do
  run_lane &
  pids+=($!)
  # a moment apart, so the lanes do not build their first containers at the same instant
  sleep 2
done
for p in "${pids[@]}"; do wait "$p"; done

pass=0
fail=0
for s in "$@"; do
  if ! read -r rc _secs <"$logdir/molecule-$s.result" 2>/dev/null; then
    fail=$((fail + 1))
    echo "molecule scenario $s: did not run"
  elif [ "$rc" -eq 0 ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "molecule scenario $s failed: $logdir/molecule-$s.log (its tail is above)"
  fi
done
echo "molecule: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
