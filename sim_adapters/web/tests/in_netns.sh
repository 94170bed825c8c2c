#!/bin/sh
# Runs a command inside a network namespace of its own (an unprivileged user
# and network namespace: unshare -rn), whose loopback device also carries
# 192.0.2.1 (TEST-NET-1): an address that is not a loopback one to the web
# console, reachable only inside this namespace, so a test can bind off
# loopback without touching any real network. The command finds the address in
# SIMSYNC_TEST_OFF_LOOPBACK_ADDRESS. Exits 77 (skipped, with the reason) where
# namespaces are not allowed or `ip` is missing.
set -eu
address=192.0.2.1
if ! command -v unshare >/dev/null 2>&1 || ! command -v ip >/dev/null 2>&1; then
  echo "skipped: unshare or ip (iproute2) is missing; the off-loopback cases need a network namespace" >&2
  exit 77
fi
if ! unshare -rn true 2>/dev/null; then
  echo "skipped: this system does not allow an unprivileged network namespace (unshare -rn);" \
       "the off-loopback cases need one" >&2
  exit 77
fi
exec unshare -rn sh -c '
  ip link set lo up && ip addr add "$0"/32 dev lo || exit 1
  SIMSYNC_TEST_OFF_LOOPBACK_ADDRESS="$0" exec "$@"' "$address" "$@"
