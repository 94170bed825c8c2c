#!/usr/bin/env bash
# The options every host built on the host kit takes (Boost.Program_options):
# --help lists them (exit 0); a bad value, an unknown option or a bad
# combination is named on stderr and exits 2 before any run; --trace writes a
# wait and a hold slice per access; --scale 0 runs unpaced, --scale 4 paces at
# 4x; inline and threaded sensors give one hash; the --remote-* options are
# listed and their errors named. Each host adds its own options'
# checks in its own check_options.sh.
#
# usage: check_options.sh HOST
set -euo pipefail
host=$1
source "$(dirname "$0")/check_lib.sh"

expect_help --config --duration --scale --trace --jitter-us --seed --chaos --host-steps --no-threads --sensors \
            --web --ros2-clock --ros2-network --ros2-security --help "0: unpaced"
expect_error "--scale: expected 0 (unpaced) or a time scale" --scale -1
expect_error "--scale: expected 0 (unpaced) or a time scale" --scale 1e7
# What was expected, not Boost's "the argument ('fast') for option '--scale' is invalid".
expect_error "--scale: expected 0 (unpaced) or a time scale in [1e-06, 1e+06], got 'fast'" --scale fast
expect_error "--duration: expected simulated time in (0, 1e6 s], got 0.000000000 s" --duration 0
expect_error "--duration: expected a duration: seconds (2.5) or a number and a unit" --duration 5sec
expect_error "--jitter-us: expected an integer in [-9223372036854775808, 9223372036854775807], got 'lots'" --jitter-us lots
expect_error "--seed: expected an unsigned integer" --seed -1
expect_error "--jitter-us: must be >= 0" --jitter-us -5
expect_error "unrecognised option '--bogus'" --bogus
expect_error "--sensors: 'fibres' is neither 'inline' nor 'threads'" --sensors fibres
expect_error "--slip-tick: a test hook of --no-threads" --slip-tick 3
# Without the dds adapter the message says so instead; either way it names the option.
expect_error "--ros2-clock: " --ros2-clock 300
expect_error "--ros2-network: only with --ros2-clock" --ros2-network loopback
# With the web adapter: not with --no-threads; without: this build has none. Either way it names --web.
expect_error "--web: " --web 0 --no-threads
# The controller in another process (remote_options.hpp).
expect_help --remote-controller --remote-domain --remote-network --remote-tag --remote-partition --remote-delay-us \
            --remote-program --remote-join-timeout --remote-security --remote-controller-security
expect_error "--remote-domain: expected an unsigned integer in [0, 4294967295], got 'x'" --remote-controller spawn --remote-domain x
expect_error "--remote-tag: only with --remote-controller" --remote-tag x
expect_error "--remote-domain: only with --remote-controller" --remote-domain 5
# Without the dds adapter the message says so instead; either way it names the option.
expect_error "--remote-controller: " --remote-controller fibres
printf 'accessors:\n  - {name: x, rate: 10}\n' >"$tmp/accessors.yaml"
expect_error "runs its own controller and sensors; remove this" --config "$tmp/accessors.yaml"

expect_error "--trace: traces the accessors' threads: not with --no-threads" --trace "$tmp/t.json" --no-threads
# An unwritable trace path fails at the start, with the reason (before: after the run, exit 1).
expect_error "--trace: cannot write the trace file '$tmp/no/t.json': No such file or directory" --trace "$tmp/no/t.json"
"$host" --scale 0 --duration 0.1 --trace "$tmp/t.json" </dev/null >/dev/null || fail "--trace exited $?"
# A wait slice and a hold slice per access (before: one slice, request to release).
waits=$(grep -c '"name":"wait"' "$tmp/t.json") holds=$(grep -c '"name":"hold"' "$tmp/t.json")
(( waits > 0 && waits == holds )) || fail "--trace: $waits wait and $holds hold slices"

out=$("$host" --scale 0 --duration 0.2 </dev/null) || fail "--scale 0 exited $?"
grep -q "unpaced" <<<"$out" || fail "--scale 0 did not run unpaced"
grep -q "^pacer:" <<<"$out" && fail "--scale 0 ran a pacer"
inline=$("$host" --scale 0 --duration 0.3 </dev/null | grep '^trajectory_hash=') || fail "--sensors inline (default) failed"
threads=$("$host" --scale 0 --duration 0.3 --sensors threads </dev/null | grep '^trajectory_hash=') || fail "--sensors threads failed"
[[ $inline == "$threads" ]] || fail "--sensors inline ($inline) and threads ($threads) give different hashes"
out=$("$host" --scale 4 --duration 0.2 </dev/null) || fail "--scale 4 exited $?"
grep -q "paced at 4x" <<<"$out" || fail "--scale 4 did not pace at 4x"
echo ok
