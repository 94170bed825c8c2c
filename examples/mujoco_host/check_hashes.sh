#!/usr/bin/env bash
# simsync-mujoco-host's trajectory hash, one variant per ctest case
# (MujocoHost.Hash.VARIANT): every run of the host must print the hash of
# mujoco_raw_loop, a plain mj_step loop (MuJoCo's C API, no simsync) that calls
# the same control law at the same instants. Runs are unpaced (--scale 0) unless
# the variant is about pacing; stdin is /dev/null (no operator commands).
#
# usage: check_hashes.sh VARIANT HOST RAW_LOOP SAMPLE_MODEL
set -euo pipefail
variant=$1 host=$2 raw_loop=$3 sample_model=$4
duration=1

fail() { echo "FAIL: $*" >&2; exit 1; }
hash_of() { sed -n 's/^trajectory_hash=\([0-9a-f]\{16\}\)$/\1/p' <<<"$1"; }
# run_host ARGS...: one host run, which must succeed; sets last_out and last_hash.
run_host() {
  local status=0
  last_out=$("$host" "$@" 2>&1 </dev/null) || status=$?
  (( status == 0 )) || { echo "$last_out" >&2; fail "simsync-mujoco-host $* exited $status"; }
  last_hash=$(hash_of "$last_out")
}
# expect_raw ARGS...: one host run whose hash must be the plain loop's.
expect_raw() {
  run_host "$@"
  [[ $last_hash == "$raw" ]] || { echo "$last_out" >&2; fail "$* gave '$last_hash', the plain mj_step loop $raw"; }
  echo "ok  $last_hash  $*"
}
seed() { echo $(( (RANDOM << 30) ^ (RANDOM << 15) ^ RANDOM )); }

raw_args=(--duration "$duration")
if [[ $variant == AnotherModelWithA5msStep ]]; then
  [[ -f $sample_model ]] || { echo "skipped: $sample_model is missing (libmujoco-samples)"; exit 77; }
  raw_args+=(--model "$sample_model")
fi
raw_out=$("$raw_loop" "${raw_args[@]}") || fail "mujoco_raw_loop exited $?"
raw=$(hash_of "$raw_out")
[[ -n $raw ]] || fail "no trajectory_hash from mujoco_raw_loop: $raw_out"
echo "plain mj_step loop: $raw"

case $variant in
  NoThreadsIsThePlainMjStepLoop)
    expect_raw --no-threads --duration "$duration" ;;
  InlineAndThreadedSensors)
    expect_raw --scale 0 --duration "$duration" --sensors inline
    expect_raw --scale 0 --duration "$duration" --sensors threads ;;
  JitterAndSeeds)
    for sensors in inline threads inline threads; do
      expect_raw --scale 0 --duration "$duration" --sensors "$sensors" --jitter-us 300 --seed "$(seed)"
    done ;;
  ChaosOperator)
    for sensors in inline threads inline threads; do
      expect_raw --scale 0 --duration "$duration" --sensors "$sensors" --chaos --jitter-us 100 --seed "$(seed)"
      pauses=$(sed -n 's/^chaos: \([0-9]*\) pauses.*/\1/p' <<<"$last_out")
      (( pauses > 0 )) || fail "--chaos paused nothing: $(grep '^chaos' <<<"$last_out")"
    done ;;
  HostSteps)
    expect_raw --scale 0 --duration "$duration" --host-steps
    expect_raw --scale 0 --duration "$duration" --host-steps --sensors threads --chaos --jitter-us 100 --seed "$(seed)" ;;
  Paced)
    expect_raw --scale 4 --duration "$duration"
    grep -q "paced at 4x" <<<"$last_out" || fail "--scale 4 did not pace at 4x"
    grep -q '^pacer: ' <<<"$last_out" || fail "--scale 4 printed no pacer summary" ;;
  AWriteOneStepLateChangesIt)
    # The control: the hash notices a controller write one step late.
    run_host --no-threads --duration "$duration" --slip-tick 7
    [[ -n $last_hash && $last_hash != "$raw" ]] ||
      fail "a write one step late leaves the hash '$last_hash': the hash proves nothing"
    echo "ok  $last_hash differs from $raw with tick 7 written one step late" ;;
  AnotherModelWithA5msStep)
    # MuJoCo's humanoid (21 motors, 5 ms steps): ticks every 2 steps, the 200 Hz
    # sensor every step, the 30 Hz one rounded to the grid.
    expect_raw --model "$sample_model" --no-threads --duration "$duration"
    expect_raw --model "$sample_model" --scale 0 --duration "$duration" --chaos --jitter-us 100 --seed "$(seed)"
    grep -q "dt 0.005000000 s" <<<"$last_out" || fail "the handler's step is not the model's 5 ms: $(head -1 <<<"$last_out")"
    expect_raw --model "$sample_model" --scale 0 --duration "$duration" --sensors threads --host-steps ;;
  *) fail "unknown variant $variant" ;;
esac
