#!/usr/bin/env bash
# simsync-sensor-threads: its duration in plain seconds or with a unit (before:
# seconds only), and SIGTERM ends a long run with its summary, exit 0 (before:
# killed by the signal, no summary).
#
# usage: check_sensor_threads.sh PROGRAM
set -euo pipefail
program=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
for duration in 0.25 250ms 0.25s; do
  out=$("$program" "$duration") || fail "$duration: exit $?"
  grep -q "^simulated 0.250000000 s in 250 steps" <<<"$out" || { echo "$out"; fail "$duration: not 0.25 s"; }
done
# SIGTERM once the program says it runs (its handler is installed by then),
# not after a fixed time that a starved machine may not give it.
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$program" 1000000 >"$dir/out" 2>"$dir/err" &
pid=$!
for _ in $(seq 600); do # at most 60 s
  grep -q "^running to " "$dir/err" && break
  sleep 0.1
done
grep -q "^running to " "$dir/err" || { kill -KILL "$pid"; fail "SIGTERM: the program never said it runs"; }
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
out=$(cat "$dir/out")
(( status == 0 )) || { echo "$out"; fail "SIGTERM: exit $status"; }
grep -q "^ended by SIGTERM at " <<<"$out" || { echo "$out"; fail "SIGTERM: no word"; }
grep -q "^simulated " <<<"$out" || { echo "$out"; fail "SIGTERM: no summary"; }
echo ok
