#!/usr/bin/env bash
# The determinism proof of a host built on the host kit (simsync-bullet-host,
# simsync-mujoco-host; ctest label: integration).
#
# Runs the host RUNS times with every accessor thread jittered by 0..JITTER_US us
# and a fresh seed each run; every other run adds an operator thread that pauses,
# steps, runs-until and resumes at random (--chaos), and every fourth steps the
# world on the host thread only (--host-steps); the sensors are inline systems (the default)
# except in every third run, where they have threads of their own (--sensors
# threads; chaos meets both). All hashes must equal the one of the
# no-threads reference. A control run shows the hash does notice a controller
# write applied one step late. Runs are unpaced (--scale 0) except every fifth, which the
# real-time pacer paces (at 1x, or 3x): the pacer only holds time, so the hash
# must not change. stdin is /dev/null: no operator commands, no raw terminal.
#
# usage: check_determinism.sh HOST [RUNS (20)] [DURATION_S (1)] [JITTER_US (200)]
set -euo pipefail
host=$1
runs=${2:-20}
duration=${3:-1}
jitter=${4:-200}

hash_of() { sed -n 's/^trajectory_hash=\([0-9a-f]\{16\}\)$/\1/p' <<<"$1"; }

out=$("$host" --no-threads --duration "$duration")
reference=$(hash_of "$out")
[[ -n $reference ]] || { echo "no trajectory_hash in the reference output:"; echo "$out"; exit 1; }
echo "reference (no threads): $reference"

out=$("$host" --no-threads --duration "$duration" --slip-tick 7)
slipped=$(hash_of "$out")
if [[ $slipped == "$reference" ]]; then
  echo "FAIL: a write one step late leaves the hash unchanged ($slipped): the hash proves nothing"
  exit 1
fi
echo "control, tick 7 written one step late: $slipped (differs, as it must)"

failures=0
start=$(date +%s.%N)
for ((i = 1; i <= runs; i++)); do
  seed=$(( (RANDOM << 30) ^ (RANDOM << 15) ^ RANDOM ^ (i << 45) ))
  args=(--duration "$duration" --jitter-us "$jitter" --seed "$seed")
  (( i % 2 == 0 )) && args+=(--chaos)
  (( i % 3 == 0 )) && args+=(--sensors threads)
  (( i % 4 == 3 )) && args+=(--host-steps)
  if (( i % 10 == 5 )); then args+=(--scale 1)
  elif (( i % 10 == 0 )); then args+=(--scale 3)
  else args+=(--scale 0)
  fi
  if ! out=$("$host" "${args[@]}" 2>&1 </dev/null); then
    echo "run $i (${args[*]}) FAILED:"; echo "$out"; failures=$((failures + 1)); continue
  fi
  h=$(hash_of "$out")
  chaos=$(grep '^chaos:' <<<"$out" || true)
  pacer=$(sed -n 's/^pacer: \([0-9]*\) grants.*/pacer grants \1/p' <<<"$out")
  chaos="$chaos${pacer:+  $pacer}"
  if [[ $h == "$reference" ]]; then
    echo "run $i ok   $h  ${args[*]}  ${chaos}"
  else
    echo "run $i DIFF $h  ${args[*]}  ${chaos}"; echo "$out"; failures=$((failures + 1))
  fi
done
end=$(date +%s.%N)
printf '%d runs in %.1f s, %d differing or failed\n' "$runs" "$(echo "$end - $start" | bc)" "$failures"
(( failures == 0 ))
