#!/usr/bin/env bash
# The host's command line (Boost.Program_options, shared with simsync-demo):
# --help lists every option and exits 0; a bad option value or an unknown option
# is named and exits 2; --scale 0 runs unpaced (as in simsync-demo); a bad scene
# is reported at load with file:line:column and key, exit 2.
#
# usage: check_options.sh HOST
set -euo pipefail
host=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

help=$("$host" --help) || fail "--help exited $?"
for option in --config --duration --scale --trace --jitter-us --seed --chaos --host-steps --no-threads --sensors --ros2-clock --ros2-network --remote-controller --remote-domain --remote-network --remote-tag --remote-partition --remote-delay-us --remote-program --remote-join-timeout --help "0: unpaced"; do
  grep -qF -- "$option" <<<"$help" || fail "--help does not list $option"
done

# expect_error WHAT ARGS...: exit status 2 and stderr naming WHAT.
expect_error() {
  local what=$1; shift
  local status=0
  "$host" "$@" </dev/null >"$tmp/out" 2>"$tmp/err" || status=$?
  [[ $status -eq 2 ]] || fail "$* exited $status, not 2"
  grep -qF -- "$what" "$tmp/err" || { cat "$tmp/err" >&2; fail "$* does not name $what"; }
}
expect_error "--scale: expected 0 (unpaced) or a time scale" --scale -1
expect_error "--scale: expected 0 (unpaced) or a time scale" --scale 1e7
# What was expected, not Boost's "the argument ('fast') for option '--scale' is invalid".
expect_error "--scale: expected 0 (unpaced) or a time scale in [1e-06, 1e+06], got 'fast'" --scale fast
expect_error "--duration: expected simulated time in (0, 1e6 s], got 0.000000000 s" --duration 0
expect_error "--duration: expected a duration: seconds (2.5) or a number and a unit" --duration 5sec
expect_error "--jitter-us: expected an integer in [-9223372036854775808, 9223372036854775807], got 'lots'" --jitter-us lots
expect_error "--remote-domain: expected an unsigned integer in [0, 4294967295], got 'x'" --remote-controller spawn --remote-domain x
expect_error "--seed: expected an unsigned integer" --seed -1
expect_error "--jitter-us: must be >= 0" --jitter-us -5
expect_error "unrecognised option '--bogus'" --bogus
expect_error "--sensors: 'fibres' is neither 'inline' nor 'threads'" --sensors fibres
expect_error "--slip-tick: a test hook of --no-threads" --slip-tick 3
# Without the dds adapter the message says so instead; either way it names the option.
expect_error "--ros2-clock: " --ros2-clock 300
expect_error "--ros2-network: only with --ros2-clock" --ros2-network loopback
expect_error "--remote-tag: only with --remote-controller" --remote-tag x
expect_error "--remote-domain: only with --remote-controller" --remote-domain 5
# Without the dds adapter the message says so instead; either way it names the option.
expect_error "--remote-controller: " --remote-controller fibres

expect_error "--trace: traces the accessors' threads: not with --no-threads" --trace "$tmp/t.json" --no-threads
# An unwritable trace path fails at the start, with the reason (before: after the run, exit 1).
expect_error "--trace: cannot write the trace file '$tmp/no/t.json': No such file or directory" --trace "$tmp/no/t.json"
grep -q "trajectory_hash" "$tmp/out" && fail "--trace to an unwritable path ran the simulation first"
"$host" --scale 0 --duration 0.1 --trace "$tmp/t.json" </dev/null >/dev/null || fail "--trace exited $?"
# A wait slice and a hold slice per access (before: one slice, request to release).
waits=$(grep -c '"name":"wait"' "$tmp/t.json") holds=$(grep -c '"name":"hold"' "$tmp/t.json")
(( waits > 0 && waits == holds )) || fail "--trace: $waits wait and $holds hold slices"

printf 'world:\n  type: bullet\n  bodies:\n    - {name: a, shape: box, size: [1, 1, 1], mass: -1}\n' >"$tmp/bad.yaml"
expect_error "$tmp/bad.yaml:4:52: world.bodies[0].mass: expected a number >= 0" --config "$tmp/bad.yaml"
printf 'world:\n  type: bouncing_balls\n' >"$tmp/balls.yaml"
expect_error "world.type: unknown world type 'bouncing_balls'; this program knows: bullet" --config "$tmp/balls.yaml"

out=$("$host" --scale 0 --duration 0.2 </dev/null) || fail "--scale 0 exited $?"
grep -q "unpaced" <<<"$out" || fail "--scale 0 did not run unpaced"
grep -q "^pacer:" <<<"$out" && fail "--scale 0 ran a pacer"
inline=$("$host" --scale 0 --duration 0.3 </dev/null | grep '^trajectory_hash=') || fail "--sensors inline (default) failed"
threads=$("$host" --scale 0 --duration 0.3 --sensors threads </dev/null | grep '^trajectory_hash=') || fail "--sensors threads failed"
[[ $inline == "$threads" ]] || fail "--sensors inline ($inline) and threads ($threads) give different hashes"
out=$("$host" --scale 4 --duration 0.2 </dev/null) || fail "--scale 4 exited $?"
grep -q "paced at 4x" <<<"$out" || fail "--scale 4 did not pace at 4x"
echo ok
