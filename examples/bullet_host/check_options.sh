#!/usr/bin/env bash
# simsync-bullet-host's own options and scenario, beyond the host kit's
# (host_kit/check_options.sh, which checks the --remote-* options too): a bad
# Bullet scene reported at load with file:line:column and key, an unknown world
# type named.
#
# usage: check_options.sh HOST
set -euo pipefail
host=$1
source "$(dirname "$0")/../host_kit/check_lib.sh"

printf 'world:\n  type: bullet\n  bodies:\n    - {name: a, shape: box, size: [1, 1, 1], mass: -1}\n' >"$tmp/bad.yaml"
expect_error "$tmp/bad.yaml:4:52: world.bodies[0].mass: expected a number >= 0" --config "$tmp/bad.yaml"
printf 'world:\n  type: bouncing_balls\n' >"$tmp/balls.yaml"
expect_error "world.type: unknown world type 'bouncing_balls'; this program knows: bullet" --config "$tmp/balls.yaml"
printf 'world:\n  type: bullet\n  bodies:\n    - {name: wall, shape: box, size: [1, 1, 1], mass: 0}\n' >"$tmp/static.yaml"
expect_error "world: the controller pushes the first body: the scene needs a dynamic one" --config "$tmp/static.yaml"
echo ok
