#!/usr/bin/env bash
# simsync-mujoco-host's own option and scenario, beyond the host kit's
# (host_kit/check_options.sh): --model listed; a bad model or scenario named on
# stderr (exit 2, no run); a scenario's world.model read relative to the file
# and its timestep made the handler's step. With CONTROLLER, the remote
# controller's --model too: a bad one named, exit 2, before it waits for a host.
#
# usage: check_options.sh HOST [CONTROLLER]
set -euo pipefail
host=$1
source "$(dirname "$0")/../host_kit/check_lib.sh"

expect_help --model
# The model: a missing file, and MuJoCo's own reason for a broken one.
expect_error "--model: MujocoWorld: cannot load the model '$tmp/none.xml'" --model "$tmp/none.xml"
printf '<mujoco><worldbody><geom type="sphere" sizes="1"/></worldbody></mujoco>\n' >"$tmp/typo.xml"
expect_error "--model: MujocoWorld: cannot load the model '$tmp/typo.xml'" --model "$tmp/typo.xml"
grep -q "sizes" "$tmp/err" || fail "the typo's message does not give MuJoCo's reason: $(cat "$tmp/err")"
printf '<mujoco><option timestep="0.0003333333333333333"/></mujoco>\n' >"$tmp/third.xml"
expect_error "not a positive whole number of nanoseconds" --model "$tmp/third.xml"

# The scenario: a handler step other than the model's timestep names both.
printf 'handler:\n  step: 2ms\n' >"$tmp/step.yaml"
expect_error "$tmp/step.yaml:2:9: handler.step: MujocoWorld 'arm.xml': the handler's step is 0.002000000 s but the model's opt.timestep is 0.001 s" --config "$tmp/step.yaml"
printf 'handler:\n  step: 1ms\npacer:\n  enabled: false\n' >"$tmp/same.yaml"
"$host" --config "$tmp/same.yaml" --duration 0.05 </dev/null >"$tmp/out" || fail "handler.step equal to the timestep refused"
printf 'world:\n  type: bullet\n' >"$tmp/bullet.yaml"
expect_error "world.type: unknown world type 'bullet'; this program knows: mujoco" --config "$tmp/bullet.yaml"
printf 'world:\n  type: mujoco\n  modle: arm.xml\n' >"$tmp/key.yaml"
expect_error "$tmp/key.yaml:3:3: world.modle" --config "$tmp/key.yaml"
printf 'world:\n  type: mujoco\n  model: none.xml\n' >"$tmp/none.yaml"
expect_error "$tmp/none.yaml:3:10: world.model: MujocoWorld: cannot load the model '$tmp/none.xml'" --config "$tmp/none.yaml"

# A scenario's world.model is read relative to the scenario file.
mkdir "$tmp/models"
printf '<mujoco><option timestep="0.002"/><worldbody><body><freejoint/><geom size="0.1"/></body></worldbody></mujoco>\n' \
  >"$tmp/models/ball.xml"
printf 'world:\n  type: mujoco\n  model: models/ball.xml\npacer:\n  enabled: false\n' >"$tmp/ball.yaml"
out=$(cd / && "$host" --config "$tmp/ball.yaml" --duration 0.1 </dev/null) || fail "world.model relative to the scenario failed"
grep -q "ball.xml: 1 bodies, 0 actuators" <<<"$out" || fail "the scenario's model was not loaded: $(head -1 <<<"$out")"
grep -q "dt 0.002000000 s" <<<"$out" || fail "the handler's step is not the model's 2 ms: $(head -1 <<<"$out")"

if [[ -n ${2:-} ]]; then
  host=$2
  expect_help --model
  expect_error "--model: MujocoWorld: cannot load the model '$tmp/none.xml'" --model "$tmp/none.xml" --join-timeout 600
  expect_error "--model: MujocoWorld: cannot load the model '$tmp/typo.xml'" --model "$tmp/typo.xml" --join-timeout 600
  host=$1
fi
echo ok
