#!/usr/bin/env bash
# test.sh - every test CI runs (no GPU needed), in order:
#   1. missing Debian packages installed (tools/deps.sh)
#   2. the build, warnings as errors
#   3. unit tests                      5. end-to-end CLI tests on the cpu backend (tests/cli/run.sh)
#   4. every problem's oracle tests    6. the same unit, oracle and CLI tests built with ASan+UBSan
#   7. every bundled CUDA source compiled for sm_90a   8. the fuzzers, briefly
#   (after 5: every tests/suites/*.sh — red team, bridge, campaign — each printing its own counts)
# Steps 3-7 run in two lanes side by side (see below); the reports come in this order at the end.
# Each suite's own "N passed, N failed" is added up; the last line is the total.
set -u
cd "$(dirname "$0")/.." || exit 2
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

# run_logged NAME CMD...: CMD's output into $logdir/NAME.log, its exit status into NAME.rc and its
# seconds into NAME.sec (a lane's step: the counts are made afterwards, in order, by report)
run_logged() {
	local name=$1 t=$SECONDS
	shift
	"$@" >"$logdir/$name.log" 2>&1
	echo $? >"$logdir/$name.rc"
	echo $((SECONDS - t)) >"$logdir/$name.sec"
}
# report NAME [step]: counts a run_logged suite (its "N passed, N failed" line) or, with "step", a
# command that passes by its exit status alone; a missing .rc (the lane never got there) fails
report() {
	local name=$1 rc
	rc=$(cat "$logdir/$name.rc" 2>/dev/null || echo 99)
	if [ "${2:-}" = step ]; then
		if [ "$rc" = 0 ]; then
			P=$((P + 1))
			echo "== $name: ok"
		else
			F=$((F + 1))
			echo "== $name: FAILED (exit $rc); log $logdir/$name.log:"
			tail -40 "$logdir/$name.log"
		fi
		return
	fi
	count "$name" "$logdir/$name.log" "$rc"
	echo "   ($name: $(cat "$logdir/$name.sec" 2>/dev/null || echo '?') s)"
}

# step NAME CMD...: a step that is one test (passes by its exit status), run and reported at once
step() {
	run_logged "$@"
	report "$1" step
}

t0=$(date +%s)
step deps tools/deps.sh
step build make -j"$(nproc)" all build/unit-tests
rm -f "$logdir"/*.rc "$logdir"/*.sec
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache}
# Two lanes side by side (on CI's 2 cores a single lane left a third of the CPU idle): lane A the
# mostly single-threaded suites, then the ASan build and its tests; lane B the suites that spread over
# every core themselves (emulations, the sm_90a compiles), plus campaign (since session 25, when the emulations
# became cheap: it evens the lanes out). A tests/suites/*.sh not named in `wide` goes to lane A. Each prints nothing until the end, where every report comes in a fixed order.
# The suites in `quiet` compare timings on the CPU (a copy against the calibration copy, the red team's
# clocks): they run after both lanes, alone (beside the emulations, a CI run saw copy_vs_itself measure
# the copy at 0.09 of itself).
wide=" attn_wgmma_emu emu_kernels emu_mma gemm_fragments knob_builds campaign "
quiet=" copy_ceiling redteam "
narrow_suites=()
wide_suites=()
quiet_suites=()
for t in tests/suites/*.sh; do
	[ -x "$t" ] || continue
	n=$(basename "$t" .sh)
	case "$wide/$quiet" in
	*" $n "*/*) wide_suites+=("$n") ;;
	*/*" $n "*) quiet_suites+=("$n") ;;
	*) narrow_suites+=("$n") ;;
	esac
done
lane_a() {
	run_logged unit build/unit-tests
	run_logged oracles tools/oracle_tests.sh
	run_logged cli env BUILD=build tests/cli/run.sh
	# every further suite: tests/suites/NAME.sh prints its own "N passed, N failed" last (BUILD is set)
	for n in "${narrow_suites[@]}"; do
		run_logged "$n" env BUILD=build "tests/suites/$n.sh"
	done
	run_logged build-asan make -j"$(nproc)" BUILD=build-asan SAN=1 build-asan/solforge build-asan/solforge-runner-cpu build-asan/unit-tests
	run_logged unit-asan build-asan/unit-tests
	run_logged oracles-asan env BUILD=build-asan OT_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined" tools/oracle_tests.sh
	# runner processes end through _exit on purpose (a candidate may have left state behind), so leak
	# detection is for the unit and oracle tests; the CLI run under ASan checks memory errors, and leaves
	# SIGSEGV to the kernel so that a crashing candidate ends its runner as it does without ASan
	run_logged cli-asan env BUILD=build-asan SOLFORGE_CACHE="$PWD/build-asan/cache" CLI_QUICK=1 ASAN_OPTIONS=detect_leaks=0:handle_segv=0 tests/cli/run.sh
}
lane_b() {
	for n in "${wide_suites[@]}"; do
		run_logged "$n" env BUILD=build "tests/suites/$n.sh"
	done
	run_logged cuda-compile tools/cuda_check.sh
}
lane_a &
lane_a_pid=$!
lane_b
wait "$lane_a_pid"
for n in "${quiet_suites[@]}"; do
	run_logged "$n" env BUILD=build "tests/suites/$n.sh"
done
for n in unit oracles cli "${narrow_suites[@]}" "${wide_suites[@]}" "${quiet_suites[@]}"; do
	report "$n"
done
report build-asan step
for n in unit-asan oracles-asan cli-asan cuda-compile; do
	report "$n"
done
step fuzz tools/fuzz.sh "${FUZZ_SECONDS:-15}"
echo "test.sh: $(($(date +%s) - t0)) s"
echo "$P passed, $F failed"
[ "$F" = 0 ]
