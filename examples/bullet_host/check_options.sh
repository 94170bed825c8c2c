#!/usr/bin/env bash
# simsync-bullet-host's own options and scenario, beyond the host kit's
# (host_kit/check_options.sh): the --remote-* options listed and their errors
# named (exit 2), a bad Bullet scene reported at load with file:line:column and
# key, an unknown world type named.
#
# usage: check_options.sh HOST
set -euo pipefail
host=$1
source "$(dirname "$0")/../host_kit/check_lib.sh"

expect_help --remote-controller --remote-domain --remote-network --remote-tag --remote-partition --remote-delay-us \
            --remote-program --remote-join-timeout --remote-security --remote-controller-security
expect_error "--remote-domain: expected an unsigned integer in [0, 4294967295], got 'x'" --remote-controller spawn --remote-domain x
expect_error "--remote-tag: only with --remote-controller" --remote-tag x
expect_error "--remote-domain: only with --remote-controller" --remote-domain 5
# Without the dds adapter the message says so instead; either way it names the option.
expect_error "--remote-controller: " --remote-controller fibres

printf 'world:\n  type: bullet\n  bodies:\n    - {name: a, shape: box, size: [1, 1, 1], mass: -1}\n' >"$tmp/bad.yaml"
expect_error "$tmp/bad.yaml:4:52: world.bodies[0].mass: expected a number >= 0" --config "$tmp/bad.yaml"
printf 'world:\n  type: bouncing_balls\n' >"$tmp/balls.yaml"
expect_error "world.type: unknown world type 'bouncing_balls'; this program knows: bullet" --config "$tmp/balls.yaml"
printf 'world:\n  type: bullet\n  bodies:\n    - {name: wall, shape: box, size: [1, 1, 1], mass: 0}\n' >"$tmp/static.yaml"
expect_error "world: the controller pushes the first body: the scene needs a dynamic one" --config "$tmp/static.yaml"
echo ok
