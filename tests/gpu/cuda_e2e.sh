#!/usr/bin/env bash
# cuda_e2e.sh - the cuda backend end to end, on a GPU machine: the calibration copy solution passes,
# and each deliberately wrong CUDA solution (tests/fixtures/cuda/copy) gets its expected status while
# the harness goes on. Closes with "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
S=${BUILD:-build}/solforge
P=tools/calibration/copy
F=tests/fixtures/cuda/copy
pass=0 fail=0
quick="--backend cuda --rounds 2 --budget-ms 200 --min-iters 5 --timeout 30 --no-baseline"

expect() {
	local name=$1 status=$2 code=$3
	shift 3
	local out rc
	out=$("$S" eval "$@" 2>&1)
	rc=$?
	if [ "$rc" = "$code" ] && echo "$out" | grep -q " $status "; then
		pass=$((pass + 1))
		echo "ok $name ($status, exit $rc)"
	else
		fail=$((fail + 1))
		echo "FAIL $name: wanted $status / exit $code, got exit $rc"
		echo "$out" | tail -8 | sed 's/^/    /'
	fi
}

expect copy_passes PASSED 0 $P $P/solutions/copy.cu $quick --only 'n2^2'
expect wrong_value INCORRECT_NUMERICAL 1 $P $F/wrong_value.cu $quick --only 'n2^20'
expect unwritten_one INCORRECT_NUMERICAL 1 $P $F/unwritten_one.cu $quick --only 'n2^20'
expect nan_out INCORRECT_NUMERICAL 1 $P $F/nan_out.cu $quick --only 'n2^20'
expect wrong_shape INCORRECT_SHAPE 1 $P $F/wrong_shape.cu $quick --only 'n2^20'
expect crash RUNTIME_ERROR 1 $P $F/crash.cu $quick --only 'n2^20'
expect hang TIMEOUT 1 $P $F/hang.cu $quick --only 'n2^20' --timeout 20
expect modifies_input REWARD_HACK 5 $P $F/modifies_input.cu $quick --only 'n2^20'
expect returns_error RUNTIME_ERROR 1 $P $F/returns_error.cu $quick --only 'n2^20'
expect compile_error COMPILE_ERROR 4 $P $F/compile_error.cu $quick --only 'n2^20'
expect side_stream PASSED 0 $P $F/side_stream.cu $quick --only 'n2^20'
expect odd_size PASSED 0 $P $P/solutions/copy.cu $quick --only 'n1000003'
# after all that, the GPU still works
expect after_all PASSED 0 $P $P/solutions/copy.cu $quick --only 'n2^16'
left=$(pgrep -f solforge-runner | wc -l)
if [ "$left" = 0 ]; then
	pass=$((pass + 1))
	echo "ok no_runner_left"
else
	fail=$((fail + 1))
	echo "FAIL no_runner_left: $left runner processes remain"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
