#!/usr/bin/env bash
# The host's stdin commands (the same console as simsync-demo): pause, status
# twice (the same simulated time, state paused), step 5 (paused again exactly
# 5 ms later),
# resume, status (running), quit (exits 0, says so, still prints the hash).
#
# usage: check_console.sh HOST [CONFIG]
set -euo pipefail
host=$1
config=${2:-}
args=(--duration 600 --scale 1)
[[ -n $config ]] && args+=(--config "$config")

coproc HOST { "$host" "${args[@]}" 2>&1; }
# Own copies of the pipes: bash unsets HOST when the host exits (after quit).
exec {to_host}>&"${HOST[1]}" {from_host}<&"${HOST[0]}"
host_pid=$HOST_PID
# On any failure, end the host too: a host left running keeps the test's output
# pipe open and turns a quick FAIL into a ctest timeout.
trap 'kill "$host_pid" 2>/dev/null || true' EXIT
send() { echo "$1" >&"$to_host"; }
# Reads lines until one starts with $1 (10 s at most per line); prints it.
expect() {
  local line
  while IFS= read -r -t 10 line <&"$from_host"; do
    [[ $line == "$1"* ]] && { echo "$line"; return 0; }
  done
  echo "FAIL: no line starting with '$1'" >&2; exit 1
}
field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" <<<"$2"; }

expect "sensors" >/dev/null
send status; s0=$(expect "status ")
send pause
send status; s1=$(expect "status ")
send status; s2=$(expect "status ")
echo "$s0"; echo "$s1"; echo "$s2"
[[ $(field state "$s1") == paused && $(field state "$s2") == paused ]] || { echo "FAIL: not paused"; exit 1; }
[[ $(field sim_time "$s1") == $(field sim_time "$s2") ]] || { echo "FAIL: time moved while paused"; exit 1; }
send "step 5" # asynchronous: runs 5 steps, then pauses again
for ((i = 0; i < 100; i++)); do
  send status; s3=$(expect "status ")
  [[ $(field state "$s3") == paused ]] && break
done
echo "$s3"
want=$(echo "$(field sim_time "$s2") + 0.005" | bc)
[[ $(echo "$(field sim_time "$s3") == $want" | bc) == 1 ]] || { echo "FAIL: step 5 did not advance 5 ms"; exit 1; }
send resume
send status; s4=$(expect "status ")
echo "$s4"
[[ $(field state "$s4") == running ]] || { echo "FAIL: not running after resume"; exit 1; }
send bogus; expect "error unknown command" >/dev/null
send quit
expect "quit by the operator" >/dev/null
h=$(expect "trajectory_hash=")
echo "$h"
wait "$host_pid"
echo "ok"
