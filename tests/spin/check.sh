#!/usr/bin/env bash
# Checks the grant protocol's Promela model (grant_protocol.pml) with Spin.
#
#   tests/spin/check.sh [--baseline] [--seeded] [--deep] [--keep DIR]
#
# --baseline (the default, with --seeded): the model as the code must behave,
#            checked exhaustively; every run must end with no error, having
#            searched the whole state space.
# --seeded   each known defect, switched on in the same file (-DSEED_...),
#            must be found: the run must report an error. Its trail is
#            replayed and its story (the model's MSC lines) printed.
# --deep     also the larger configurations (minutes, by hand): a separate
#            canceller thread beside an operator doing two actions.
# --keep DIR keep the generated verifiers and trails in DIR.
#
# Needs spin (Debian's package) and a C compiler ($CC, else cc). Prints, for
# each run, the states stored and the time taken; exits 1 if any run has the
# wrong outcome or could not search its whole state space.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
model=$here/grant_protocol.pml
spin=${SPIN:-spin}
cc=${CC:-cc}

baseline=0 seeded=0 deep=0 keep=""
while [ $# -gt 0 ]; do
  case "$1" in
    --baseline) baseline=1 ;;
    --seeded) seeded=1 ;;
    --deep) deep=1 ;;
    --keep) keep=$2; shift ;;
    *) echo "usage: $0 [--baseline] [--seeded] [--deep] [--keep DIR]" >&2; exit 2 ;;
  esac
  shift
done
if [ $baseline -eq 0 ] && [ $seeded -eq 0 ] && [ $deep -eq 0 ]; then baseline=1 seeded=1; fi

for tool in "$spin" "$cc"; do
  command -v "$tool" >/dev/null 2>&1 || { echo "check.sh: $tool not found (scripts/setup-deps installs spin and gcc)" >&2; exit 1; }
done

if [ -n "$keep" ]; then
  mkdir -p "$keep"
  work=$(cd "$keep" && pwd)
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi

failures=0

# run NAME EXPECT "SPIN -D FLAGS" "CC FLAGS" "PAN FLAGS"
#   EXPECT: pass (no error, whole state space searched), or fail:REGEX (an
#   error whose report matches REGEX: the seeded defect, not another one)
run() {
  local name=$1 expect=$2 defines=$3 ccflags=$4 panflags=$5
  local dir=$work/$name
  rm -rf "$dir" && mkdir -p "$dir" && cp "$model" "$dir/"
  local start=$SECONDS
  (
    cd "$dir"
    # shellcheck disable=SC2086 # the flags are lists
    "$spin" -a $defines grant_protocol.pml >spin.log 2>&1 || { cat spin.log; exit 1; }
    # shellcheck disable=SC2086
    "$cc" -w $ccflags -o pan pan.c >cc.log 2>&1 || { cat cc.log; exit 1; }
    # shellcheck disable=SC2086
    ./pan $panflags >pan.log 2>&1 || true
  ) || { echo "FAIL  $name: could not build the verifier"; failures=$((failures + 1)); return; }
  local log=$dir/pan.log
  local errors states
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$log" | tail -1)
  states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$log" | tail -1)
  local took=$((SECONDS - start))
  if [ -z "$errors" ]; then
    echo "FAIL  $name: the verifier did not finish"; tail -5 "$log"; failures=$((failures + 1)); return
  fi
  if [ "$expect" = pass ]; then
    if [ "$errors" != 0 ] || grep -q "Search not completed\|reached -DMEMLIM" "$log"; then
      echo "FAIL  $name: errors: $errors"
      grep -E "^pan:|violated|Search not|MEMLIM" "$log" | head -5
      replay "$dir" "$defines"
      failures=$((failures + 1))
      return
    fi
    echo "ok    $name: $states states, no error, whole state space searched (${took} s)"
  else
    if [ "$errors" = 0 ]; then
      echo "FAIL  $name: the seeded defect was not found ($states states searched)"
      failures=$((failures + 1))
      return
    fi
    local what depth
    what=$(grep -m1 -E "^pan:[0-9]+:" "$log" | sed 's/^pan:[0-9]*: *//')
    depth=$(grep -m1 -oE "at depth [0-9]+" "$log" || true)
    if ! grep -qE -- "${expect#fail:}" <<<"$what"; then
      echo "FAIL  $name: an error, but not the seeded one: $what"
      replay "$dir" "$defines"
      failures=$((failures + 1))
      return
    fi
    echo "ok    $name: found, as it must be: $what (${took} s)"
    echo "      trail ($depth):"
    replay "$dir" "$defines"
    case "$what" in
      *"invalid end state"*) echo "        => invalid end state: a thread waits for ever" ;;
      *"non-progress cycle"*) ;;
      *) ;;
    esac
  fi
}

# The trail's story: the MSC lines the model prints, and the failed check.
replay() {
  local dir=$1 defines=$2
  [ -f "$dir/grant_protocol.pml.trail" ] || return 0
  # shellcheck disable=SC2086
  (cd "$dir" && "$spin" -t $defines grant_protocol.pml 2>&1) |
    sed -n -e 's/^ *MSC: /        /p' -e 's/^spin: .*\(assertion violated\)/        => \1/p' \
           -e 's/^spin: text of failed assertion: /           /p' -e 's/^ *<<<<<START OF CYCLE>>>>>/        (the cycle, repeated for ever:)/p'
}

# Exhaustive: the state vector compressed (COLLAPSE), memory capped.
safety="-O1 -DSAFETY -DCOLLAPSE -DMEMLIM=2048"
liveness="-O1 -DNP -DCOLLAPSE -DMEMLIM=2048"
# A seeded run stops at the first error; breadth first (BFS) makes its trail
# the shortest there is.
seed="-O0 -DSAFETY -DBFS -DMEMLIM=2048"

if [ $baseline -eq 1 ]; then
  echo "Baseline: the protocol with defect 5 fixed (tests/spin/README.md)"
  run safety pass "-DNOPS=2" "$safety" "-m100000 -w24"
  run safety-lockstep-c pass "-DNOPS=1 -DC_LOCKSTEP=1" "$safety" "-m100000 -w22"
  run liveness pass "-DNOPS=1" "$liveness" "-l -m100000 -w22"
fi
if [ $seeded -eq 1 ]; then
  echo "Seeded defects: each must be found"
  # what each must violate: P2 (a duty nobody carries), P1/P2 (a thread
  # asleep for good), P6 (a grant after stop), P7 (a livelock)
  run seed-defect-5 'fail:!\(stepping\)' "-DNOPS=1 -DNO_HIDDEN -DSEED_DEFECT_5" "$seed" "-m100000 -w22"
  run seed-no-recheck 'fail:invalid end state|sleeping' "-DNOPS=1 -DNO_HIDDEN -DSEED_NO_RECHECK" "$seed" "-m100000 -w22"
  run seed-no-handback-on-cancel 'fail:!\(stepping\)' "-DNOPS=1 -DNO_HIDDEN -DSEED_NO_HANDBACK_ON_CANCEL" "$seed" "-m100000 -w22"
  run seed-grant-after-stop 'fail:!\(stopped\)' "-DNOPS=1 -DNO_HIDDEN -DSEED_GRANT_AFTER_STOP" "$seed" "-m100000 -w22"
  run seed-handback-loop 'fail:non-progress cycle' "-DNOPS=1 -DSEED_HANDBACK_LOOP" "-O0 -DNP" "-l -m100000 -w22"
fi
if [ $deep -eq 1 ]; then
  echo "Deep: larger configurations"
  run deep-canceller pass "-DNOPS=1 -DCANCELLER" "$safety" "-m100000 -w25"
  run deep-canceller-lockstep-c pass "-DNOPS=1 -DCANCELLER -DC_LOCKSTEP=1" "$safety" "-m100000 -w25"
  run deep-two-requests pass "-DNOPS=1 -DB_REQUESTS=2 -DC_REQUESTS=2" "$safety" "-m100000 -w25"
fi

if [ $failures -ne 0 ]; then
  echo "check.sh: $failures run(s) with the wrong outcome"
  exit 1
fi
echo "check.sh: all runs as expected"
