#!/usr/bin/env bash
# simsync-mujoco-host's command line and scenario (Boost.Program_options, the
# host kit's options, shared with simsync-bullet-host): --help lists every
# option (exit 0); a bad option, model or scenario is named on stderr and exits
# 2 before any run.
#
# usage: check_options.sh HOST
set -euo pipefail
host=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

help=$("$host" --help) || fail "--help exited $?"
for option in --model --config --duration --scale --trace --jitter-us --seed --chaos --host-steps --no-threads \
              --sensors --web --ros2-clock --ros2-network --ros2-security --help "0: unpaced"; do
  grep -qF -- "$option" <<<"$help" || fail "--help does not list $option"
done

# expect_error WHAT ARGS...: exit status 2, stderr naming WHAT, and no run.
expect_error() {
  local what=$1; shift
  local status=0
  "$host" "$@" </dev/null >"$tmp/out" 2>"$tmp/err" || status=$?
  [[ $status -eq 2 ]] || { cat "$tmp/err" >&2; fail "$* exited $status, not 2"; }
  grep -qF -- "$what" "$tmp/err" || { cat "$tmp/err" >&2; fail "$* does not name $what"; }
  ! grep -q "trajectory_hash" "$tmp/out" || fail "$* ran anyway"
}
expect_error "--scale: expected 0 (unpaced) or a time scale in [1e-06, 1e+06], got 'fast'" --scale fast
expect_error "--scale: expected 0 (unpaced) or a time scale" --scale -1
expect_error "--duration: expected simulated time in (0, 1e6 s], got 0.000000000 s" --duration 0
expect_error "--duration: expected a duration: seconds (2.5) or a number and a unit" --duration 5sec
expect_error "--jitter-us: must be >= 0" --jitter-us -5
expect_error "--seed: expected an unsigned integer" --seed -1
expect_error "unrecognised option '--bogus'" --bogus
expect_error "--sensors: 'fibres' is neither 'inline' nor 'threads'" --sensors fibres
expect_error "--slip-tick: a test hook of --no-threads" --slip-tick 3
expect_error "--trace: traces the accessors' threads: not with --no-threads" --trace "$tmp/t.json" --no-threads
expect_error "--trace: cannot write the trace file '$tmp/no/t.json': No such file or directory" --trace "$tmp/no/t.json"
expect_error "--ros2-network: only with --ros2-clock" --ros2-network loopback
# With the web adapter: not with --no-threads; without: this build has none. Either way it names --web.
expect_error "--web: " --web 0 --no-threads
# The model: a missing file, and MuJoCo's own reason for a broken one.
expect_error "--model: MujocoWorld: cannot load the model '$tmp/none.xml'" --model "$tmp/none.xml"
printf '<mujoco><worldbody><geom type="sphere" sizes="1"/></worldbody></mujoco>\n' >"$tmp/typo.xml"
expect_error "--model: MujocoWorld: cannot load the model '$tmp/typo.xml'" --model "$tmp/typo.xml"
grep -q "sizes" "$tmp/err" || fail "the typo's message does not give MuJoCo's reason: $(cat "$tmp/err")"
printf '<mujoco><option timestep="0.0003333333333333333"/></mujoco>\n' >"$tmp/third.xml"
expect_error "not a positive whole number of nanoseconds" --model "$tmp/third.xml"

# The scenario: a handler step other than the model's timestep names both.
printf 'handler:\n  step: 2ms\n' >"$tmp/step.yaml"
expect_error "the handler's step is 0.002000000 s but the model's opt.timestep is 0.001 s" --config "$tmp/step.yaml"
printf 'handler:\n  step: 1ms\npacer:\n  enabled: false\n' >"$tmp/same.yaml"
"$host" --config "$tmp/same.yaml" --duration 0.05 </dev/null >"$tmp/out" || fail "handler.step equal to the timestep refused"
printf 'world:\n  type: bullet\n' >"$tmp/bullet.yaml"
expect_error "world.type: unknown world type 'bullet'; this program knows: mujoco" --config "$tmp/bullet.yaml"
printf 'world:\n  type: mujoco\n  modle: arm.xml\n' >"$tmp/key.yaml"
expect_error "$tmp/key.yaml:3:3: world.modle" --config "$tmp/key.yaml"
printf 'world:\n  type: mujoco\n  model: none.xml\n' >"$tmp/none.yaml"
expect_error "$tmp/none.yaml:3:10: world.model: MujocoWorld: cannot load the model '$tmp/none.xml'" --config "$tmp/none.yaml"
printf 'accessors:\n  - {name: x, rate: 10}\n' >"$tmp/accessors.yaml"
expect_error "simsync-mujoco-host runs its own controller and sensors; remove this" --config "$tmp/accessors.yaml"

# A scenario's world.model is read relative to the scenario file.
mkdir "$tmp/models"
printf '<mujoco><option timestep="0.002"/><worldbody><body><freejoint/><geom size="0.1"/></body></worldbody></mujoco>\n' \
  >"$tmp/models/ball.xml"
printf 'world:\n  type: mujoco\n  model: models/ball.xml\npacer:\n  enabled: false\n' >"$tmp/ball.yaml"
out=$(cd / && "$host" --config "$tmp/ball.yaml" --duration 0.1 </dev/null) || fail "world.model relative to the scenario failed"
grep -q "ball.xml: 1 bodies, 0 actuators" <<<"$out" || fail "the scenario's model was not loaded: $(head -1 <<<"$out")"
grep -q "dt 0.002000000 s" <<<"$out" || fail "the handler's step is not the model's 2 ms: $(head -1 <<<"$out")"

out=$("$host" --scale 0 --duration 0.2 </dev/null) || fail "--scale 0 exited $?"
grep -q "unpaced" <<<"$out" || fail "--scale 0 did not run unpaced"
grep -q "^pacer:" <<<"$out" && fail "--scale 0 ran a pacer"
echo ok
