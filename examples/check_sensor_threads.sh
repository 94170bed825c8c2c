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
status=0
out=$(timeout --preserve-status -s TERM 3 "$program" 1000000) || status=$?
(( status == 0 )) || { echo "$out"; fail "SIGTERM: exit $status"; }
grep -q "^ended by SIGTERM at " <<<"$out" || { echo "$out"; fail "SIGTERM: no word"; }
grep -q "^simulated " <<<"$out" || { echo "$out"; fail "SIGTERM: no summary"; }
echo ok
