#!/usr/bin/env bash
# A host's --remote-controller over DDS Security (the host kit's, for
# simsync-bullet-host and simsync-mujoco-host; ctest labels: integration, the
# engine, dds; docs/security.md).
#
# Throwaway CAs and certificates from scripts/make-dds-certs: the host's, the
# controller's (controller_100hz) and another participant's (camera).
# 1. The remote controller, each side with its own certificate, gives the
#    in-process trajectory hash, bit for bit.
# 2. A controller without a certificate is never matched: it finds no host, and
#    the host no controller (both time out).
# 3. A controller holding camera's certificate cannot speak for
#    controller_100hz: its permissions grant no writer in controller_100hz's
#    partition, so it cannot even join; the host times out.
# 4. The control: the same controller without a certificate joins an open host.
# Every run has a Cyclone discovery tag of its own, on the loopback network.
#
# usage: check_remote_security.sh HOST CONTROLLER MAKE_DDS_CERTS [DURATION_S (1)]
set -euo pipefail
host=$1
controller=$2
make_certs=$3
duration=${4:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
hash_of() { sed -n 's/^trajectory_hash=\([0-9a-f]\{16\}\)$/\1/p' <<<"$1"; }

"$make_certs" "$tmp/certs" host:host participant:controller_100hz participant:camera >/dev/null
sec() { echo "$tmp/certs/$1/security.yaml"; }

out=$("$host" --no-threads --duration "$duration" </dev/null)
reference=$(hash_of "$out")
[[ -n $reference ]] || fail "no trajectory_hash in the reference output: $out"
echo "reference (no threads): $reference"

# 1. Secured both ways.
status=0
out=$("$host" --duration "$duration" --scale 0 --remote-controller spawn --remote-program "$controller" \
  --remote-join-timeout 20 --remote-security "$(sec host)" --remote-controller-security "$(sec controller_100hz)" \
  </dev/null 2>"$tmp/err") || status=$?
(( status == 0 )) || { cat "$tmp/err" >&2; echo "$out" >&2; fail "the secured run exited $status"; }
h=$(hash_of "$out")
[[ $h == "$reference" ]] || { cat "$tmp/err" >&2; echo "$out" >&2; fail "secured: hash $h, not $reference"; }
grep -q '^remote controller: .* 0 refused' <<<"$out" || fail "secured: $(grep '^remote controller:' <<<"$out")"
echo "secured run ok   $h"

# A host waiting (secured) for a controller started with `args`; both must fail
# to meet. Prints what the controller said.
unmet() { # NAME CONTROLLER-ARGS...
  local name=$1 tag="check-remote-security-$$-$1"
  shift
  local host_status=0 ctl_status=0
  "$host" --scale 0 --duration "$duration" --remote-controller wait --remote-tag "$tag" --remote-join-timeout 6 \
    --remote-security "$(sec host)" </dev/null >"$tmp/host.out" 2>"$tmp/host.err" &
  local host_pid=$!
  "$controller" --tag "$tag" --join-timeout 6 "$@" >"$tmp/ctl.out" 2>&1 || ctl_status=$?
  wait "$host_pid" || host_status=$?
  show() { echo "--- host"; cat "$tmp/host.out" "$tmp/host.err"; echo "--- controller"; cat "$tmp/ctl.out"; } >&2
  (( ctl_status == 1 )) || { show; fail "$name: the controller exited $ctl_status, not 1 (could not join)"; }
  (( host_status != 0 )) || { show; fail "$name: the host ran to its end with a controller it must not match"; }
  grep -q "no remote controller joined within 6 s" "$tmp/host.err" ||
    { show; fail "$name: the host did not time out waiting for its controller"; }
  echo "$name: not matched ($(grep -m1 'could not join' "$tmp/ctl.out"))"
}

# 2. No certificate.
unmet "no certificate"
grep -q "no host in DDS domain" "$tmp/ctl.out" || fail "no certificate: the controller saw a host"
# 3. Another participant's certificate.
unmet "camera's certificate" --security "$(sec camera)"
grep -q "partition 'simsync/controller_100hz'" "$tmp/ctl.out" ||
  fail "camera's certificate: the controller was not refused its writer in controller_100hz's partition"

# 4. Control: without DDS Security on either side they meet.
tag="check-remote-security-$$-open"
"$host" --scale 0 --duration "$duration" --remote-controller wait --remote-tag "$tag" --remote-join-timeout 20 \
  </dev/null >"$tmp/host.out" 2>"$tmp/host.err" &
host_pid=$!
"$controller" --tag "$tag" --join-timeout 20 >"$tmp/ctl.out" 2>&1 || fail "open: the controller failed: $(cat "$tmp/ctl.out")"
wait "$host_pid" || fail "open: the host failed: $(cat "$tmp/host.err")"
[[ $(hash_of "$(cat "$tmp/host.out")") == "$reference" ]] || fail "open: not the reference hash"
echo "control: an open host and controller meet (reference hash)"
echo ok
