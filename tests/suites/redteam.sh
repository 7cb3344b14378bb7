#!/usr/bin/env bash
# tests/suites/redteam.sh - the red-team suite on the cpu backend (issue 4, docs/security.md).
#
# Every cheating solution under tests/redteam/cpu/ is evaluated on a small problem
# (tools/calibration/copy, one 65536-element workload) and must end with the status its header
# names (REWARD_HACK, INCORRECT_* or RUNTIME_ERROR) - never PASSED; honest solutions must still pass
# with the same defenses on. Each case file must say which hack it is, where it was seen and what it
# expects (header lines "Seen:" and "Expected:"). Prints `ok NAME` / `FAIL NAME: why` per case and
# ends with `N passed, M failed`.
#
# Usage: tests/suites/redteam.sh [FILTER]. Environment: BUILD (build folder, default build),
# SOLFORGE_CACHE (compile cache; a private one when unset).
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
SF=$BUILD/solforge
FILTER=${1:-}
if [ ! -x "$SF" ] || [ ! -x "$BUILD/solforge-runner-cpu" ]; then
	echo "redteam.sh: no $SF or runner (run make first)" >&2
	echo "0 passed, 1 failed"
	exit 2
fi
TMP=$(mktemp -d /tmp/solforge-redteam.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$TMP/cache}
export SOLFORGE_SCRATCH=$TMP/scratch
export SOLFORGE_HOME=$ROOT
mkdir -p "$SOLFORGE_CACHE" "$SOLFORGE_SCRATCH"

COPY=tools/calibration/copy
RT=tests/redteam/cpu
# 20 timed calls at least: the first pass over the timing sets is a cache miss for the caching
# cheats, and four audits are drawn among the calls
FAST=(--backend cpu --budget-ms 300 --min-iters 20 --max-iters 30 --rounds 2 --timeout 120 --no-baseline)
PASS=0
FAILN=0

ok() { echo "ok $1"; PASS=$((PASS + 1)); }
fail() {
	echo "FAIL $1: $2"
	[ -n "${3:-}" ] && [ -f "$3" ] && tail -n 25 "$3" | sed 's/^/    | /'
	FAILN=$((FAILN + 1))
}
selected() { [ -z "$FILTER" ] || [[ $1 == *"$FILTER"* ]]; }

# case NAME FILE WORKLOAD STATUS_RE [MSG_RE] [ENV=V ...]: the workload's status must match STATUS_RE
# (never PASSED), the output MSG_RE, and the exit code must not be 0.
case_() {
	local name=$1 file=$2 only=$3 status=$4 msg=${5:-}
	shift 5 2>/dev/null || shift $#
	selected "$name" || return 0
	local out=$TMP/$name.out
	if ! grep -q 'Seen:' "$file" || ! grep -q 'Expected:' "$file"; then
		fail "$name" "$file lacks a 'Seen:' or 'Expected:' header line"
		return
	fi
	env "$@" timeout -k 5 300 "$SF" eval "$COPY" "$file" "${FAST[@]}" --only "=$only" >"$out" 2>&1
	local rc=$?
	local got
	got=$(awk -v w="$only" '$1 == w { print $2; exit }' "$out")
	if [ "$rc" = 0 ] || [ "$got" = PASSED ]; then
		fail "$name" "a cheat PASSED (exit $rc, status ${got:-none})" "$out"
	elif ! [[ $got =~ ^($status)$ ]]; then
		fail "$name" "status ${got:-none}, expected $status" "$out"
	elif [ -n "$msg" ] && ! grep -Eq -- "$msg" "$out"; then
		fail "$name" "status $got but the log does not match /$msg/" "$out"
	else
		ok "$name ($got)"
	fi
}

W=copy-n2^16
case_ cache_by_pointer $RT/cache_by_pointer.c $W REWARD_HACK 'timed call'
case_ cache_by_fingerprint $RT/cache_by_fingerprint.c $W REWARD_HACK 'timed call'
case_ warmup_then_replay $RT/warmup_then_replay.c $W REWARD_HACK 'timed call'
case_ detect_warmup $RT/detect_warmup.c $W REWARD_HACK 'timed call'
case_ batch_and_skip $RT/batch_and_skip.c $W REWARD_HACK 'timed call'
case_ deferred_output $RT/deferred_output.c $W REWARD_HACK 'timed call'
case_ sol_skip_after_first $RT/sol_skip_after_first.c $W REWARD_HACK 'timed call|speed of light'
case_ side_thread $RT/side_thread.c $W REWARD_HACK 'left a thread running'
case_ fork_daemon $RT/fork_daemon.c $W REWARD_HACK 'imports fork'
case_ fork_daemon_declared $RT/fork_daemon_declared.c $W REWARD_HACK 'forbidden system call'
case_ raw_syscall_fork $RT/raw_syscall_fork.c $W REWARD_HACK 'raw system-call instruction'
case_ raw_syscall_fork_declared $RT/raw_syscall_fork_declared.c $W REWARD_HACK 'forbidden system call'
case_ socket_declared $RT/socket_declared.c $W REWARD_HACK 'forbidden system call'
case_ steal_reference_declared $RT/steal_reference_declared.c $W INCORRECT_NUMERICAL 'out of tolerance'
case_ interpose_clock $RT/interpose_clock.c $W REWARD_HACK 'defines clock_gettime'
case_ patch_timer_mprotect_declared $RT/patch_timer_mprotect_declared.c $W REWARD_HACK 'forbidden system call'
# the same cheat with the OS sandbox off: the patch lands and the timer reads a constant; the
# speed-of-light check (and the external wall clock) still catch it
case_ patch_timer_sandbox_off $RT/patch_timer_mprotect_declared.c $W REWARD_HACK 'speed of light|clock outside' \
	SOLFORGE_SANDBOX=0
# ... and on a workload whose copy takes longer than the external clock's slack: there the external
# wall clock contradicts the frozen in-process timer first (2^22 elements, 16 MB moved: a 2^20 copy
# costs about the 0.1 ms slack on a fast host, and session 10's CI saw the speed-of-light check fire first)
case_ patch_timer_sandbox_off_n2^22 $RT/patch_timer_mprotect_declared.c copy-n2^22 REWARD_HACK 'clock outside' \
	SOLFORGE_SANDBOX=0
case_ proc_self_mem_patch_declared $RT/proc_self_mem_patch_declared.c $W 'RUNTIME_ERROR|REWARD_HACK' \
	'returned|speed of light|clock outside'
case_ ld_preload_reexec_declared $RT/ld_preload_reexec_declared.c $W REWARD_HACK 'forbidden system call'
case_ forge_result_declared $RT/forge_result_declared.c $W REWARD_HACK 'wall-clock batch did not arrive|records of the timed calls|audit records'
case_ forge_clock_declared $RT/forge_clock_declared.c $W REWARD_HACK 'forbidden system call|did not arrive'
# session 25's red-team review: the defenses switched off by a constructor's setenv; the audit records erased
case_ defenses_off_setenv $RT/defenses_off_setenv.c $W REWARD_HACK 'timed call|unperturbed'
case_ erase_audits $RT/erase_audits.c $W REWARD_HACK 'audit records were tampered'
case_ nan_wildcard $RT/nan_wildcard.c $W INCORRECT_NUMERICAL 'nan'
case_ zeros_loose_tol $RT/zeros_loose_tol.c $W INCORRECT_NUMERICAL 'all zeros|out of tolerance'
case_ partial_write $RT/partial_write.c $W INCORRECT_NUMERICAL 'out of tolerance'
case_ modify_inputs $RT/modify_inputs.c $W REWARD_HACK 'modified its inputs'
case_ precision_downgrade $RT/precision_downgrade.c $W INCORRECT_NUMERICAL 'out of tolerance'
# hard-coded for n2^16: the hidden sizes around it fail
case_ hardcoded_shape_hidden_smaller $RT/hardcoded_shape.c copy-n2^15 "INCORRECT_SHAPE|RUNTIME_ERROR" "wrote outside|signal"
case_ hardcoded_shape_hidden_larger $RT/hardcoded_shape.c copy-n2^17 INCORRECT_NUMERICAL 'out of tolerance'

# every case file is run above
for f in $RT/*.c; do
	b=$(basename "$f" .c)
	selected "$b" || continue
	grep -q "$b" "$0" || fail "coverage/$b" "$f is not run by this suite"
done

# honest solutions pass with every defense on
honest() { # honest NAME PROBLEM SOLUTION WORKLOAD
	selected "honest/$1" || return 0
	local out=$TMP/honest_$1.out
	timeout -k 5 300 "$SF" eval "$2" "$3" "${FAST[@]}" --only "=$4" >"$out" 2>&1
	local rc=$?
	if [ "$rc" = 0 ] && grep -Eq "^$(printf '%s' "$4" | sed 's/\^/\\^/g') +PASSED" "$out"; then
		ok "honest/$1"
	else
		fail "honest/$1" "exit $rc, expected PASSED" "$out"
	fi
}
honest copy_oracle $COPY @oracle copy-n2^16
honest copy_c $COPY tests/redteam/honest/copy.c copy-n2^16
# a denied import declared in an included file is allowed
honest declared_in_include $COPY tests/redteam/honest/declared/copy_reads_file.c copy-n2^16
honest gemma_rmsnorm problems/gemma/gemma_rmsnorm_h5376 tests/fixtures/solutions/gemma_rmsnorm_h5376/correct.c \
	gemma_rmsnorm_h5376-t64
honest silu_and_mul problems/llama/silu_and_mul_i14336 tests/fixtures/solutions/silu_and_mul_i14336/correct.c \
	silu_and_mul_i14336-t64

echo "$PASS passed, $FAILN failed"
[ "$FAILN" = 0 ]
