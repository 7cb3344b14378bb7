#!/usr/bin/env bash
# attn_wgmma_emu.sh - the wgmma paged prefill (problems/common/kernels/gqa_paged_prefill_sm90_wgmma.cuh,
# -DSF_PREFILL_WGMMA=1 and 2) replayed on the CPU by tools/attn_emulate_wg.py: 128B-swizzled cp.async
# gathers, wgmma descriptors decoded through the canonical operand layouts (self-checked against the
# GEMM's proven TMA layout), accumulator / register-A fragments, the cp.async group order with its
# wait counts (early and late landing), both tile orders, on fixed compositions (long prefix, empty and
# single-token sequences, q1000's shape in small: no prefix, an 8-token last item, a partial last kv
# tile; page sizes 1, 16 and a runtime 3), compared with a float64 reference; before it the
# synchronization protocol sweep (cp.async groups, proxy fences, barriers, wgmma waits replayed against
# the PTX rules for n_tiles 1..64 and larger ones to 1025, both orders; CTA coverage of q1, q63, q65,
# q129, q1000, ragged and prefixed compositions). Then deliberate mistakes must be caught: V descriptor LBO/SBO swapped; the
# overlapped order's last PV without its cp.async wait; and, by the protocol sweep alone (seconds): the
# commits inside the tail's load guards, no proxy fence, no second barrier. Version 3 (v3pp,
# -DSF_PREFILL_WGMMA=3, gqa_paged_prefill_sm90_pp.cuh) by tools/attn_emulate_pp.py --quick: its
# two-warpgroup protocol (mbarriers, named-barrier turns; and without the turns, =4) under random
# interleavings for 29 tile counts
# and one ragged ps16 composition through the data path, then mutations that must be caught (no empty
# wait, early publish, parity off by one, unbalanced turn barrier, double arrival, V with the wrong
# slots, the rescale vote inverted, a skipped mask); where nvcc exists, v3pp must compile for sm_90a
# with -Werror, 0 spill bytes and no serialized wgmma (ptxas C7520). Version 5 (v5, -DSF_PREFILL_WGMMA=5,
# gqa_paged_prefill_sm90_p5.cuh: 128-key tiles, 3-stage ring) by attn_emulate_pp.py --variant 5 --quick
# (its protocol sweep and a ps16 composition with a first limit in the last 16 keys of a tile and a
# 5-tile sequence), its own mutations (no empty wait, early publish, parity off, double arrival, the
# empty-V parity of t-1 instead of t-2, V with the wrong slots, the skipped mask, the K descriptor's
# half stride of a 64-key tile) and, with nvcc, the same sm_90a compile rules. Version 6 (v6,
# -DSF_PREFILL_WGMMA=6, gqa_paged_prefill_sm90_p6.cuh: v5 with a producer warpgroup and setmaxnreg) by
# attn_emulate_pp.py --variant 6 --quick (the producer and both consumers under random interleavings,
# the same ps16 composition), its protocol mutations (no empty wait, early publish, parity off, double
# arrival, empty-V parity off, no proxy fence, K released before S retired) and V gathered with the
# next tile's slots; with nvcc the compile rules plus 168 registers at launch (the setmaxnreg budget
# 128 x 64 + 256 x 216 assumes it). Version 7 (v7, -DSF_PREFILL_WGMMA=7, gqa_paged_prefill_sm90_p7.cuh: v6
# made persistent) by attn_emulate_pp.py --variant 7 --quick (tools/attn_emulate_p7.py: CTAs walking lists
# of 0-7 units of 1..33 tiles under random interleavings, the ps16 composition over 3 persistent CTAs),
# its mutations (no EMPTY_Q wait, info written before it, EMPTY_Q arrived before the last S retired, no
# flush at a unit's end, the last V never released, parity off, no empty wait, a unit's first PV onto
# the stale O); with nvcc the compile rules (no C7520, 168 registers at launch, setmaxnreg honoured: no
# C7508, 0 spills in the ps1 / ps16 kernels; its runtime page-size kernel, which no bundled workload
# uses, spills 4 B: PREFILL_NOTES.md). Version 8 (v8, -DSF_PREFILL_WGMMA=8, gqa_paged_prefill_sm90_p8.cuh: v6
# with the two consumers' ping-pong turns on named barriers 1 and 2) by attn_emulate_pp.py --variant 8 --quick
# (v6's agents plus the turns; the S issues must alternate consumer 0, 1, 0, 1), its mutations (no
# balancing sync: partial phase; no first arrival: deadlock; the turn passed to itself: double arrival;
# consumer 0 skipping a fully masked last tile: deadlock; parity off; no empty wait; and in the per-warp
# model of the turns, tools/attn_emulate_p8.py: a 128-thread phase, no balancing sync); with nvcc v6's
# compile rules (168 registers, 0 spills, no C7520 / C7508); with nvcc the compile rules (every version: no C7520 and no C7515 /
# C7517, ptxas's serialized or waited wgmma). Version 9 was removed in session 13 (measured slower than v8).
# v8's lean consumer (-DSF_PREFILL_LEAN=1, gqa_paged_prefill_sm90_lean.cuh) by attn_emulate_pp.py --variant 8
# --lean --quick, its mutations packearly / smearly, and v8's compile rules for it (the default since session 14;
# -DSF_PREFILL_LEAN=0 compiled as the control); SF_PREFILL_LEAN=2 (kept maxima) by --lean 2 --quick, its mutation
# thrstale and its compile only with EMU_EXTRA=1, which also adds both full data runs (8-9 cases, early
# and late, ~1-2 min each: kept out of CI).
# No GPU needed. Ends with "N passed, M failed".
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
if ! python3 -c 'import numpy' 2>/dev/null; then
	echo "FAIL attn_wgmma_emu: python3 has no numpy"
	echo "0 passed, 1 failed"
	exit 1
fi
pass=0
fail=0
jobdir=$(mktemp -d)
trap 'rm -rf "$jobdir"' EXIT
njobs=0
# the checks run side by side (one per core, each a python process or an nvcc), their reports read
# back in order at the end. run_check LABEL ARGS...: attn_emulate ARGS (from tools/) must pass, its
# "ok" lines count; mutant LABEL ARGS...: it must FAIL (the mutation is caught)
spawn() {
	njobs=$((njobs + 1))
	"$@" >"$jobdir/$njobs.txt" 2>&1 </dev/null &
	while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n; done
}
run_body() {
	local label=$1 out
	shift
	# shellcheck disable=SC2068
	if out=$(cd tools && python3 $@ 2>&1); then
		echo "PASS $(echo "$out" | grep -c '^ok ')"
	else
		echo "$out" | grep -v '^ok ' | sed "s/^/FAIL $label/"
		echo "FAILED 1"
	fi
}
mutant_body() {
	local label=$1
	shift
	# shellcheck disable=SC2068
	if (cd tools && python3 $@ >/dev/null 2>&1); then
		echo "FAIL $label was not caught"
		echo "FAILED 1"
	else
		echo "PASS 1"
	fi
}
run_check() { spawn run_body "$@"; }
mutant() { spawn mutant_body "$@"; }

run_check "" attn_emulate_wg.py --seeds 0
for m in "lbo_sbo --order plain --mode early" "tail --order ovl --mode late" "tailskip --protocol-only" \
	"nofence --protocol-only" "nobar2 --protocol-only"; do
	# shellcheck disable=SC2086 # m: the mutation and its options
	mutant "mutation '$m'" attn_emulate_wg.py --seeds 0 --mutate $m
done
run_check "v3pp " attn_emulate_pp.py --quick --schedules 3
spawn run_body "v3np (-DSF_PREFILL_WGMMA=4) protocol " attn_emulate_pp.py --protocol-only --pingpong 0 --schedules 3
for m in "noempty --protocol-only" "pubearly --protocol-only" "parity --protocol-only" "turn --protocol-only" \
	"arrive2 --protocol-only" "slotv --quick" "vote --quick" "limmin --quick"; do
	# shellcheck disable=SC2086 # m: the mutation and its options
	mutant "v3pp mutation '$m'" attn_emulate_pp.py --schedules 1 --mutate $m
done
# variant_check VARIANT SCHEDULES MUTATION...: the emulation of one variant (every case must pass),
# then each mutation (it must be caught)
variant_check() {
	local v=$1 sched=$2 m
	shift 2
	run_check "v$v " attn_emulate_pp.py --variant "$v" --quick --schedules "$sched"
	for m in "$@"; do
		# shellcheck disable=SC2086 # m: the mutation and its options
		mutant "v$v mutation '$m'" attn_emulate_pp.py --variant "$v" --schedules 1 --mutate $m
	done
}
variant_check 5 2 "noempty --protocol-only" "pubearly --protocol-only" "parity --protocol-only" \
	"arrive2 --protocol-only" "evpar --protocol-only" "slotv --quick" "limmin --quick" "khalf --quick"
variant_check 6 1 "noempty --protocol-only" "pubearly --protocol-only" "parity --protocol-only" \
	"arrive2 --protocol-only" "evpar --protocol-only" "nofence --protocol-only" "ekearly --protocol-only" \
	"slotv --quick"
variant_check 7 1 "noeq --protocol-only" "infoearly --protocol-only" "eqearly --protocol-only" \
	"noflush --protocol-only" "nolastv --protocol-only" "parity --protocol-only" "noempty --protocol-only" \
	"acc1 --quick"
variant_check 8 1 "turn --protocol-only" "noturn0 --protocol-only" "turnown --protocol-only" \
	"skipmasked --protocol-only" "parity --protocol-only" "noempty --protocol-only" "count128 --protocol-only" \
	"noturnend --protocol-only"
# v8's lean consumers (-DSF_PREFILL_LEAN=1, tools/attn_emulate_lean.py): the protocol with tile 0 peeled and
# P packed after wait 0, the data path (early mode, 2 cases); mutants: P packed while the PV may still read
# it, the softmax before its S retired. EMU_EXTRA=1 adds the full data run (8 cases, early and late: ~2 min)
run_check "v8lean " attn_emulate_pp.py --variant 8 --lean --quick --schedules 1
run_check "sass_loop_classes " sass_loop_classes.py --self-test # the SASS counter of the notes, on a synthetic loop
for m in packearly smearly; do
	mutant "v8lean mutation '$m'" attn_emulate_pp.py --variant 8 --lean --schedules 1 --protocol-only --mutate $m
done
# SF_PREFILL_LEAN=2 (maxima kept unless one grows by more than 8): its quick run (with a composition whose
# maxima grow after tile 0) and the mutant whose exponentials use the true max while m and l keep the old one
# (EMU_EXTRA only since session 14: measured no faster than lean, CI's time)
if [ "${EMU_EXTRA:-0}" = 1 ]; then
	run_check "v8lean2 " attn_emulate_pp.py --variant 8 --lean 2 --quick --schedules 1
	mutant "v8lean2 mutation 'thrstale'" attn_emulate_pp.py --variant 8 --lean 2 --quick --schedules 1 --mutate thrstale
	run_check "v8lean full " attn_emulate_pp.py --variant 8 --lean --seeds 1 --schedules 2
	run_check "v8lean2 full " attn_emulate_pp.py --variant 8 --lean 2 --seeds 1 --schedules 2
fi
# compile_check V [DEFINE]: the sm_90a compile rules of -DSF_PREFILL_WGMMA=V
compile_check() {
	local v=$1 src=problems/llama/gqa_paged_prefill_causal_h32_kv8_d128_ps1/solutions/fast.cu
	local x=(${2:+"$2"}) n=$1 # n names the log: V, or V plus the extra define (-DSF_PREFILL_LEAN=2: 8lean2)
	[ -n "${2:-}" ] && n="${v}lean${2##*=}"
	if nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinclude -Xcompiler -Wall,-Wextra \
		-Werror all-warnings -Xptxas -v -DSF_PREFILL_WGMMA="$v" ${x[@]+"${x[@]}"} -c "$src" -o "$jobdir/v$n.o" >"$jobdir/log$n" 2>&1 &&
		! grep -q 'C7520\|C7515\|C7517' "$jobdir/log$n" && ! grep -q C7508 "$jobdir/log$n" &&
		awk -v v="$v" '/Function properties for/ {k = $NF} /spill stores/ && $5 != 0 && !(v == 7 && k ~ /p7ILi0E/) {bad = 1}
			END {exit bad}' "$jobdir/log$n" &&
		{ [ "$v" -lt 6 ] || [ "$(grep -c 'Used 168 registers' "$jobdir/log$n")" = 3 ]; }; then
		echo "PASS 1"
	else
		echo "FAIL -DSF_PREFILL_WGMMA=$v ${2:-}: sm_90a compile with -Werror, 0 spills (v7: but its runtime page size), no serialized wgmma (C7520, C7515, C7517), no ignored setmaxnreg (v6 to v8: 168 registers)"
		sed 's/^/    /' "$jobdir/log$n" | grep -v "Compiling entry\|Compile time" | head -20
		echo "FAILED 1"
	fi
}
if command -v nvcc >/dev/null 2>&1; then
	for v in 3 5 6 7 8; do # v3pp, v5, v6, v7, v8
		spawn compile_check "$v"
	done
	spawn compile_check 8 -DSF_PREFILL_LEAN=0 # v8 as measured before the lean default (v8 itself is lean since session 14)
	[ "${EMU_EXTRA:-0}" = 1 ] && spawn compile_check 8 -DSF_PREFILL_LEAN=2
fi
wait
for ((j = 1; j <= njobs; j++)); do
	grep -v '^PASS \|^FAILED ' "$jobdir/$j.txt"
	if grep -q '^FAILED ' "$jobdir/$j.txt"; then
		fail=$((fail + 1))
	elif grep -q '^PASS ' "$jobdir/$j.txt"; then
		pass=$((pass + $(grep '^PASS ' "$jobdir/$j.txt" | tail -1 | cut -d' ' -f2)))
	else
		echo "FAIL check $j: no result"
		fail=$((fail + 1))
	fi
done
echo "$pass passed, $fail failed"
[ $fail = 0 ]
