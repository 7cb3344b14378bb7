#!/usr/bin/env bash
# tests/suites/gpu_round_check.sh - tools/gpu_round.sh --check, the local validation of a round's specs before a
# device call: limits that fit ROUND_S (with its 10 s to spare) per lane pass, one second more is refused, a lane
# split (LANES) sums only its own specs, a missing script or a limit that is not a number is refused, and nothing
# runs. The limits are drawn at random each run (GPU_ROUND_SEED to repeat one). Prints `ok NAME` / `FAIL NAME`, then
# `N passed, M failed`; exits non-zero when anything failed.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
pass=0 fail=0
ok() { echo "ok $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1: $2"; fail=$((fail + 1)); }
TMP=$(mktemp -d /tmp/solforge-gpu-round.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
SEED=${GPU_ROUND_SEED:-$((RANDOM * 32768 + RANDOM))}
RANDOM=$((SEED % 32768))
echo "gpu_round_check: seed $SEED (GPU_ROUND_SEED)"
# a script that would leave a mark if --check ran it
S=$TMP/mark.sh
printf '#!/bin/sh\ntouch %s/ran\n' "$TMP" >"$S"
chmod +x "$S"
G=tools/gpu_round.sh
expect() { # expect NAME RC ENV... -- SPECS...
	local name=$1 want=$2 got
	shift 2
	local -a envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	env "${envs[@]}" "$G" --check "$@" >"$TMP/out.txt" 2>&1
	got=$?
	if [ "$got" = "$want" ]; then ok "$name"; else bad "$name" "exit $got, wanted $want: $(cat "$TMP/out.txt")"; fi
}
for trial in 1 2 3; do
	a=$((RANDOM % 300 + 1)) b=$((RANDOM % 300 + 1)) c=$((RANDOM % 300 + 1))
	expect "fits.$trial ($a+$b)" 0 ROUND_S=$((a + b + 10)) -- "X=1,Y=2@$S:$a" "$S:$b"
	expect "one second over.$trial ($a+$b)" 2 ROUND_S=$((a + b + 9)) -- "X=1,Y=2@$S:$a" "$S:$b"
	# two lanes: spec 1 and 3 on lane 0, spec 2 on lane 1
	l0=$((a + c)) top=$((a + c > b ? a + c : b))
	expect "two lanes fit.$trial" 0 LANES=2 ROUND_S=$((top + 10)) -- "$S:$a" "$S:$b" "$S:$c"
	expect "two lanes over.$trial (lane sums $l0 / $b)" 2 LANES=2 ROUND_S=$((top + 9)) -- "$S:$a" "$S:$b" "$S:$c"
done
expect "no ROUND_S: no sum rule" 0 -- "$S:100000"
expect "missing script" 2 ROUND_S=600 -- "$TMP/none.sh:10"
expect "limit not a number" 2 ROUND_S=600 -- "$S:1O"
expect "no limit" 2 ROUND_S=600 -- "$S"
if [ -e "$TMP/ran" ]; then bad "nothing ran" "--check ran a script"; else ok "nothing ran"; fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
