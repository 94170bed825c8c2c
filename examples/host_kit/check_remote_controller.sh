#!/usr/bin/env bash
# A host's --remote-controller (the host kit's: simsync-bullet-host with
# simsync-remote-controller, simsync-mujoco-host with
# simsync-mujoco-remote-controller; ctest labels: integration, the engine, dds).
#
# 1. The controller in another process gives the in-process hash, bit for bit:
#    the no-threads reference, then RUNS runs with --remote-controller spawn, each
#    with random delays of 0..DELAY_US us in the controller process (a fresh seed
#    per run), with sensor threads and host jitter, paced, or with operator chaos
#    and the engine stepped on the host thread (as check_determinism.sh). Every hash
#    must equal the reference. EXTRA_HOST_ARGS, if any, make one more spawned run
#    with them, against a no-threads reference with them (simsync-mujoco-host:
#    --model FILE of another model, which the host must pass on to the
#    controller it spawns: a controller with the default model would refuse
#    the observations, whose sizes are the other model's).
# 2. A malformed command is refused by name and never applied: the host waits
#    (--remote-controller wait) for a controller this script starts with the test
#    hook --corrupt-command-at 5 (tick 5, 50 ms, gets a command of wire version
#    99; then, in a second run, a well-formed command for the instant before).
#    The host must name it (unsupported_version, stale_command), count it, exit 1,
#    and its hash must differ from the reference (the push was not applied).
# 3. SIGTERM ends the controller cleanly: before it has joined (exit 3 at once,
#    not after --join-timeout), and once joined (it leaves, with its summary,
#    exit 3; the host sees it leave early and exits 1). Before: killed by the
#    signal (status 143), the host waiting for the lease to expire.
# Every run has a Cyclone discovery tag of its own (spawn makes one; here:
# pid and a counter), on the loopback network: parallel runs never meet.
#
# usage: check_remote_controller.sh HOST CONTROLLER [RUNS (4)] [DURATION_S (1)] [DELAY_US (500)] [EXTRA_HOST_ARGS...]
set -euo pipefail
host=$1
controller=$2
runs=${3:-4}
duration=${4:-1}
delay=${5:-500}
extra=("${@:6}")
name=$(basename "$controller") # how the controller names itself in its output
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
hash_of() { sed -n 's/^trajectory_hash=\([0-9a-f]\{16\}\)$/\1/p' <<<"$1"; }

out=$("$host" --no-threads --duration "$duration" </dev/null)
reference=$(hash_of "$out")
[[ -n $reference ]] || fail "no trajectory_hash in the reference output: $out"
echo "reference (no threads): $reference"

# The controller's ticks before the end (100 Hz), each of which must be a command applied.
ticks=$(echo "$duration * 100 / 1" | bc)
start=$(date +%s.%N)
total=$runs
(( ${#extra[@]} > 0 )) && total=$((runs + 1))
for ((i = 1; i <= total; i++)); do
  seed=$(( (RANDOM << 30) ^ (RANDOM << 15) ^ RANDOM ^ (i << 45) ))
  args=(--duration "$duration" --seed "$seed" --remote-controller spawn --remote-delay-us "$delay"
        --remote-program "$controller" --remote-join-timeout 20)
  want=$reference
  if (( i > runs )); then
    args+=("${extra[@]}")
    out=$("$host" --no-threads --duration "$duration" "${extra[@]}" </dev/null)
    want=$(hash_of "$out")
    [[ -n $want && $want != "$reference" ]] || fail "no other reference hash with ${extra[*]}: $out"
    echo "reference with ${extra[*]} (no threads): $want"
  fi
  (( i % 4 == 2 )) && args+=(--sensors threads --jitter-us 200)
  (( i % 4 == 0 )) && args+=(--chaos --host-steps)
  if (( i % 4 == 3 )); then args+=(--scale 2); else args+=(--scale 0); fi
  status=0
  out=$("$host" "${args[@]}" </dev/null 2>"$tmp/err") || status=$?
  if (( status != 0 )); then
    cat "$tmp/err" >&2; echo "$out" >&2; fail "run $i (${args[*]}) exited $status"
  fi
  h=$(hash_of "$out")
  summary=$(grep '^remote controller:' <<<"$out" || true)
  [[ $h == "$want" ]] || { cat "$tmp/err" >&2; echo "$out" >&2; fail "run $i (${args[*]}): hash $h, not $want"; }
  grep -q " $ticks commands applied, 0 refused" <<<"$summary" || fail "run $i: not $ticks commands applied: $summary"
  grep -q "^$name: done" "$tmp/err" || { cat "$tmp/err" >&2; fail "run $i: the controller did not finish"; }
  echo "run $i ok   $h  ${args[*]}  ($summary)"
done
end=$(date +%s.%N)
printf '%d remote runs in %.1f s, all with their reference hash\n' "$total" "$(echo "$end - $start" | bc)"

# 2. Corrupted commands, in wait mode: a command of another wire version (the
#    decoder refuses it), and one for another instant (the host refuses it).
bad_run() { # CORRUPTION ERROR
  local corruption=$1 error=$2
  local tag="check-remote-$$-$corruption"
  "$host" --scale 0 --duration "$duration" --remote-controller wait --remote-tag "$tag" --remote-join-timeout 20 \
    </dev/null >"$tmp/host.out" 2>"$tmp/host.err" &
  local host_pid=$!
  local ctl_status=0
  "$controller" --tag "$tag" --corrupt-command-at 5 --corruption "$corruption" --random-delay-us "$delay" \
    --join-timeout 20 >"$tmp/ctl.out" 2>&1 || ctl_status=$?
  local host_status=0
  wait "$host_pid" || host_status=$?
  show() { echo "--- host stdout"; cat "$tmp/host.out"; echo "--- host stderr"; cat "$tmp/host.err";
           echo "--- controller"; cat "$tmp/ctl.out"; } >&2
  (( ctl_status == 0 )) || { show; fail "$corruption: the controller exited $ctl_status"; }
  (( host_status == 1 )) || { show; fail "$corruption: the host exited $host_status after a refused command, not 1"; }
  grep -q "^waiting up to 20 s for the remote controller: .* --tag $tag" "$tmp/host.out" ||
    { show; fail "wait mode did not print the controller's command line"; }
  grep -qF "remote controller: command at 0.050000000 s refused: $error" "$tmp/host.err" ||
    { show; fail "$corruption: the host did not name the refused command ($error)"; }
  grep -qF "remote controller: 1 command(s) refused, the first at 0.050000000 s: $error" "$tmp/host.err" ||
    { show; fail "$corruption: the host did not fail the run for the refused command"; }
  grep -qE "^remote controller: [0-9]+ observations sent, [0-9]+ commands applied, 1 refused $error=1$" \
    "$tmp/host.out" || { show; fail "$corruption: the summary does not count the refusal"; }
  local bad
  bad=$(hash_of "$(cat "$tmp/host.out")")
  [[ -n $bad ]] || { show; fail "$corruption: no hash after a refused command"; }
  [[ $bad != "$reference" ]] || { show; fail "$corruption: the hash is the reference's: the refused push was applied"; }
  echo "$corruption command at tick 5: refused ($error), not applied (hash $bad), host exit 1"
}
bad_run version unsupported_version
bad_run stale stale_command

# 3. SIGTERM.
wait_for_line() { # FILE TEXT: 30 s at most
  local i
  for ((i = 0; i < 300; i++)); do
    grep -qF -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
tag="check-remote-$$-signal"
"$controller" --tag "$tag" --join-timeout 600 </dev/null >"$tmp/ctl.out" 2>&1 &
ctl_pid=$!
wait_for_line "$tmp/ctl.out" "waiting up to 600 s for a host" || { cat "$tmp/ctl.out" >&2; fail "the controller did not start"; }
kill -TERM "$ctl_pid"
ctl_status=0
timeout 30 tail --pid="$ctl_pid" -f /dev/null || fail "the controller did not end on SIGTERM before joining"
wait "$ctl_pid" || ctl_status=$?
(( ctl_status == 3 )) || { cat "$tmp/ctl.out" >&2; fail "SIGTERM before joining: exit $ctl_status, not 3"; }
grep -qF "SIGTERM while waiting for the host: exiting, not joined" "$tmp/ctl.out" || { cat "$tmp/ctl.out" >&2; fail "no word"; }
echo "SIGTERM before joining: exit 3 at once"

"$host" --scale 1 --duration 1000 --remote-controller wait --remote-tag "$tag" --remote-join-timeout 30 \
  </dev/null >"$tmp/host.out" 2>"$tmp/host.err" &
host_pid=$!
"$controller" --tag "$tag" --join-timeout 30 </dev/null >"$tmp/ctl.out" 2>&1 &
ctl_pid=$!
# The controller's own word that it joined, not the host's: the host sees the
# join before the controller's constructor returns, and a SIGTERM in between
# finds the controller not yet joined (it exits at once, without leaving).
wait_for_line "$tmp/ctl.out" "$name: joined as" ||
  { cat "$tmp/host.out" "$tmp/host.err" "$tmp/ctl.out" >&2; fail "no join"; }
kill -TERM "$ctl_pid"
ctl_status=0
wait "$ctl_pid" || ctl_status=$?
host_status=0
wait "$host_pid" || host_status=$?
show() { echo "--- host stdout"; cat "$tmp/host.out"; echo "--- host stderr"; cat "$tmp/host.err";
         echo "--- controller"; cat "$tmp/ctl.out"; } >&2
(( ctl_status == 3 )) || { show; fail "SIGTERM once joined: the controller exited $ctl_status, not 3"; }
grep -qE "^$name: ended by SIGTERM before [0-9.]+ s, [0-9]+ commands sent" "$tmp/ctl.out" ||
  { show; fail "no summary from the controller"; }
(( host_status == 1 )) || { show; fail "the host exited $host_status after its controller left, not 1"; }
grep -qF "remote controller: it ended before the end of the run" "$tmp/host.err" || { show; fail "the host did not say why"; }
echo "SIGTERM once joined: the controller leaves (exit 3), the host ends its run (exit 1)"
echo ok
