#!/usr/bin/env bash
# How a run of the host ends (each step bounded in time; a hang fails the test):
#  1. at --duration, also when the step is coarser than a sensor's period (a
#     sensor then asks several times at one instant, the last ones at the end):
#     before, the host's own lockstep end marker ('end') held those back and the
#     run hung at the end; and the no-threads reference gives the same hash,
#     repeats at one instant included (before, it granted one per instant);
#  2. on SIGTERM, as on `quit`: the summary and the hash, exit 0 (before: killed);
#  3. a scenario that starts paused says, with no terminal, that time waits for
#     `resume` and how to give it, and that nothing can once stdin has ended;
#     SIGINT ends it (exit 0).
#
# usage: check_run_end.sh HOST
set -euo pipefail
host=$1
tmp=$(mktemp -d)
host_pid=
trap '[[ -n $host_pid ]] && kill "$host_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
hash_of() { sed -n 's/^trajectory_hash=\([0-9a-f]\{16\}\)$/\1/p' <<<"$1"; }

# 1. A 20 ms step: the 200 Hz sensor asks 4 times at most instants, the 100 Hz
# controller twice.
printf 'handler: {step: 20ms}\n' >"$tmp/coarse.yaml"
reference=$(timeout 60 "$host" --no-threads --config "$tmp/coarse.yaml" --duration 0.5) || fail "--no-threads exited $?"
reference=$(hash_of "$reference")
[[ -n $reference ]] || fail "no hash from --no-threads"
for args in "" "--sensors threads --jitter-us 100 --chaos --seed 7" "--host-steps"; do
  # shellcheck disable=SC2086
  status=0
  out=$(timeout 60 "$host" --config "$tmp/coarse.yaml" --duration 0.5 --scale 0 $args </dev/null 2>&1) || status=$?
  [[ $status -eq 0 ]] || { echo "$out"; fail "a 20 ms step with '$args' did not end by itself (status $status)"; }
  grep -q "waiting for" <<<"$out" && { echo "$out"; fail "a stall was reported"; }
  [[ $(hash_of "$out") == "$reference" ]] || { echo "$out"; fail "'$args': hash $(hash_of "$out"), reference $reference"; }
done
echo "20 ms step: ends at --duration, hash $reference as the no-threads reference"

# Runs the host as a coprocess (stderr merged) with the given arguments.
start() {
  coproc HOST { exec "$host" "$@" 2>&1; } # exec: the signals below reach the host itself
  exec {to_host}>&"${HOST[1]}" {from_host}<&"${HOST[0]}"
  host_pid=$HOST_PID
}
# Reads lines until one contains $1 (20 s at most per line); prints it.
# Every line read so far, for the failure message.
seen=$tmp/seen
expect() {
  local line
  while IFS= read -r -t 20 line <&"$from_host"; do
    echo "$line" >>"$seen"
    [[ $line == *"$1"* ]] && { echo "$line"; return 0; }
  done
  local why="end of output"
  [[ -n $host_pid ]] && kill -0 "$host_pid" 2>/dev/null && why="nothing for 20 s, the host still running"
  echo "--- the host's output so far:" >&2; cat "$seen" >&2
  # A host that hangs says where (CI failed here once under ThreadSanitizer).
  if [[ $why != "end of output" ]] && command -v gdb >/dev/null; then
    gdb -p "$host_pid" -batch -ex "thread apply all bt" 2>&1 | grep -E '^(Thread|#)' >&2 || true
  fi
  fail "no line with '$1' ($why)"
}
finish() {
  local status=0
  wait "$host_pid" || status=$?
  host_pid=
  [[ $status -eq 0 ]] || fail "exited $status"
}

# 2. SIGTERM while running.
start --duration 1000 --scale 1
expect "sensors" >/dev/null
echo status >&"$to_host"; expect "status sim_time=" >/dev/null
kill -TERM "$host_pid"
expect "ended by SIGTERM at "
expect "trajectory_hash="
finish

# 3. Paused at the start, no terminal; stdin then ends.
printf 'handler: {start_paused: true}\n' >"$tmp/paused.yaml"
start --config "$tmp/paused.yaml" --duration 10
expect "time waits for 'resume'; type it on standard input" >/dev/null
exec {to_host}>&-
eval "exec ${HOST[1]}>&-" # the coprocess's own copy too: now stdin ends
expect "standard input has ended while the run is paused, so nothing can resume it: SIGINT or SIGTERM ends it" >/dev/null
kill -INT "$host_pid"
expect "ended by SIGINT at 0.000000000 s"
expect "trajectory_hash=" >/dev/null
finish
echo ok
