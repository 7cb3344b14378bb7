#!/usr/bin/env bash
# test.sh - every test CI runs (no GPU needed), in order:
#   1. missing Debian packages installed (tools/deps.sh)
#   2. the build, warnings as errors
#   3. unit tests                      5. end-to-end CLI tests on the cpu backend (tests/cli/run.sh)
#   4. every problem's oracle tests    6. the same unit, oracle and CLI tests built with ASan+UBSan
#   7. every bundled CUDA source compiled for sm_90a   8. the fuzzers, briefly
#   (after 5: every tests/suites/*.sh — red team, bridge, campaign — each printing its own counts)
# Each suite's own "N passed, N failed" is added up; the last line is the total.
set -u
cd "$(dirname "$0")/.."
P=0 F=0
logdir=${BUILD:-build}/test-logs
mkdir -p "$logdir"

# add the counts of a log's last "N passed, N failed" line; a suite that printed none counts as one failure
count() {
	local name=$1 log=$2 rc=$3
	local line p f
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
	p=$(echo "$line" | cut -d' ' -f1)
	f=$(echo "$line" | cut -d' ' -f3 | tr -d ',')
	if [ -z "$line" ]; then
		p=0
		f=1
	elif [ "$rc" -ne 0 ] && [ "${f:-0}" = 0 ]; then
		f=1
	fi
	P=$((P + p))
	F=$((F + f))
	if [ "$f" != 0 ]; then
		echo "== $name: $p passed, $f failed (exit $rc); log $log:"
		grep -E '^(FAIL|  )' "$log" | head -60
		tail -5 "$log"
	else
		echo "== $name: $p passed"
	fi
}

# a step that is one test
step() {
	local name=$1
	shift
	local log="$logdir/$name.log"
	if "$@" >"$log" 2>&1; then
		P=$((P + 1))
		echo "== $name: ok"
	else
		F=$((F + 1))
		echo "== $name: FAILED; log $log:"
		tail -40 "$log"
	fi
}

suite() {
	local name=$1 t=$SECONDS
	shift
	local log="$logdir/$name.log"
	"$@" >"$log" 2>&1
	count "$name" "$log" $?
	echo "   ($name: $((SECONDS - t)) s)"
}

t0=$(date +%s)
step deps tools/deps.sh
step build make -j"$(nproc)" all build/unit-tests
suite unit build/unit-tests
suite oracles tools/oracle_tests.sh
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache}
suite cli env BUILD=build tests/cli/run.sh
# every further suite: tests/suites/NAME.sh prints its own "N passed, N failed" last (BUILD is set)
for t in tests/suites/*.sh; do
	[ -x "$t" ] && suite "$(basename "$t" .sh)" env BUILD=build "$t"
done
step build-asan make -j"$(nproc)" BUILD=build-asan SAN=1 build-asan/solforge build-asan/solforge-runner-cpu build-asan/unit-tests
suite unit-asan build-asan/unit-tests
suite oracles-asan env BUILD=build-asan OT_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined" tools/oracle_tests.sh
# runner processes end through _exit on purpose (a candidate may have left state behind), so leak
# detection is for the unit and oracle tests; the CLI run under ASan checks memory errors, and leaves
# SIGSEGV to the kernel so that a crashing candidate ends its runner as it does without ASan
suite cli-asan env BUILD=build-asan SOLFORGE_CACHE=$PWD/build-asan/cache CLI_QUICK=1 ASAN_OPTIONS=detect_leaks=0:handle_segv=0 tests/cli/run.sh
suite cuda-compile tools/cuda_check.sh
step fuzz tools/fuzz.sh "${FUZZ_SECONDS:-15}"
echo "test.sh: $(($(date +%s) - t0)) s"
echo "$P passed, $F failed"
[ "$F" = 0 ]
