#!/usr/bin/env bash
# gemm_fragments.sh - the register-fragment index math of the bf16 GEMM's mma.sync kernels
# (problems/common/kernels/gemm_bf16_sm90_smallm.cuh, _mma.cuh), emulated lane by lane in numpy from the
# PTX ISA fragment layouts (tools/gemm_dev/emulate_fragments.py: odd M/N/K, partial K steps, row groups,
# batch depths) and compared with A . B^T; the wgmma kernel's scheduler, accumulator layout and v3
# epilogues (tools/gemm_dev/emulate_wgmma.py: widths 128/192/256, cluster split-K through DSMEM) and the
# v4 mid-M swap-AB kernel (its plan, token tiles 32..256, transposed store and cluster reduction); the v5
# small-M TMA-ring kernel (tools/gemm_dev/emulate_smallm5.py: swizzled TMA boxes with zero fill, lane
# reads, mma.sync, slab and rank-share cluster reduction; M 1..16, odd N/K, 1..8 splits; and its ring
# protocol, mbarrier parity and stage release order under random interleavings); the
# ping-pong kernel (tools/gemm_dev/emulate_pingpong.py: schedule, accumulator map of 128 x 128 / 64 x 256
# consumer tiles, and the named-barrier turn order with the ring under all interleavings); the v8 clustered
# kernel (tools/gemm_dev/emulate_mcast.py: pair schedule, W halves, wave rule, two-CTA ring protocol); the v9
# kernel's index math (tools/gemm_dev/emulate_coop.py: 256 x 128 / 128 x 256 tiles, consumer offsets, wave rule) and
# launch decision (tests/gemm/coop_plan_test.cu); the v10 kernel's TMA-store epilogue (tools/gemm_dev/emulate_v10.py:
# swizzled chunk writes, clipped TMA boxes, the store buffers' wait_group.read protocol with reads as late as
# allowed, three mutations); the
# generated wgmma wrappers are up to date (gen_wgmma_ops.py --check); and, where nvcc exists, the v3 host
# plan's, the v4 mid-M plan's and the v5 small-M plan's invariants on random shapes and GPUs (tests/gemm/v3_plan_test.cu, host
# code only); the v6 mid-M plan (tests/gemm/v6_plan_test.cpp, g++); the v7 ping-pong kernel compiles with no
# spill (tests/gemm/pingpong_compile.cu, nvcc), and so do the v8 and v9 kernels (tests/gemm/mcast_compile.cu,
# tests/gemm/coop_compile.cu: the latter also 16 HGMMA.64x128x16 in SASS where cuobjdump is on PATH or in $CUOBJDUMP),
# and the v10 kernel (tests/gemm/v10_compile.cu: 7 UTMASTG in SASS); the v11 candidate epilogue of the v4 mid-M
# kernel (tools/gemm_dev/emulate_midm_tma.py: the host's box-row rule, transposed swizzled stage writes at the
# kernel's addresses, the stage's place beside the reduction slab, clipped TMA boxes; four mutations) and its
# compile (tests/gemm/midm_tma_compile.cu: 4 UTMASTG); the M 9-16 candidate of the small-M kernel (SF_GEMM_SM16=1:
# emulate_fragments.py's smallm16, M 9..16, odd K and N, each output stored once, five mutations that must be caught)
# and its compile (tests/gemm/smallm16_compile.cu: U 4 and 2, no spill) (the A-in-shared-memory candidate SF_GEMM_SM_ASMEM,
# its emulation and compile check were removed in session 16: measured slower); the version-12 mid-M candidate (SF_GEMM_MIDM_MC=1:
# emulate_fragments.py's midm_pair, band-pair clusters with multicast activation halves, odd M 17..129, odd band counts,
# N / K tails, 1..4 splits, the ring's byte and release accounting, the host rule; five mutations that must be caught)
# and its compile (tests/gemm/midm_mc_compile.cu: 2 UTMALDG.2D.MULTICAST, no spill); the version-15 candidate (SF_GEMM_TAILROWS=1: the
# last token tile's A box its M % 128 real rows in the wgmma kernel's every mode and the v10 kernel, v4's M-row activation
# box outside the half bands; tools/gemm_dev/emulate_tailrows.py --quick: stale stage rows as 1e6 and NaN reaching no
# output through any epilogue or reduction, expect_tx = landed bytes, the host's map rule, 1024-byte aligned stages;
# three mutations) and its compile (tests/gemm/tailrows_compile.cu: 5 kernels, 10 UTMALDG, no spill); the version-16 candidate
# (SF_GEMM_MIDM_FIT=1 / 2: half-band token tiles of M rounded up to 16, FIT 2 two token tiles instead of a 2-way K split;
# emulate_wgmma.py's check_fit, ~2 s: the plan at M 17..256 yields only instantiated tiles that the host's switches launch,
# each tile's MidmCfg limits, odd M 65..255 unsplit / split / two token tiles with stale rows as 1e6 and NaN, every output
# once, expect_tx = the bytes landed; mutations grp16, tok0, mlo, row0, tx16 and three illegal tiles caught) and its compile
# (tests/gemm/midm_fit_compile.cu: NT 144 and 80, FIT 2, no spill) and its plan in C++ (v3_plan_test.cu's midm_fit_checks:
# midm_plan_hb with fit 0 / 1 / 2 on random shapes and GPUs, the Llama plans); the version-17 candidate (SF_GEMM_V6_BN96:
# 128 x 96 persistent tiles in the v6 plan; emulate_wgmma.py's check_w96 and v6_plan_test.cpp's width-96 checks); the
# version-18 candidate (SF_GEMM_MIDM_MW: 28672 x 4096 M 129..192 on the mid-M path; emulate_wgmma.py's check_mw: v4's NT 192
# plan, odd M with stale box rows, mutation txnt; v6_plan_test.cpp's mw_checks: mw_route's range, outputs per SM). Version 14 (token
# pairs) was removed in session 14 (measured slower than the default), its emulation and compile check with it; the
# small-M L2 prefetch candidates (SF_GEMM_SM_PF / _PF_OP / _XPF) and their emulation (emulate_smallm_pf.py) in session 17
# (measured slower).
# No GPU needed. Ends with "N passed, M failed".
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
if ! python3 -c 'import numpy' 2>/dev/null; then
	echo "FAIL gemm_fragments: python3 has no numpy"
	echo "0 passed, 1 failed"
	exit 1
fi
pass=0
fail=0
# emulate_pingpong.py --quick: the v7 ping-pong kernel's schedule and its turn / ring protocol over all
# interleavings of small cases (tiles per CTA 0..5), plus mutations that must be caught (~0.5 s)
# emulate_mcast.py --quick: the v8 clustered kernel's schedule, W halves and wave rule, and its two-CTA ring
# protocol (multicast landings, 16-arrival empty barriers, exit barrier) over all interleavings of small
# cases, plus six mutations that must be caught (~4 s)
# (emulate_tt.py: version 24's narrow token tiles, split out of emulate_wgmma.py in session 24; emulate_sk.py: version 26's stream-K
# schedule and its partial / flag protocol under random interleavings, four mutations)
for script in emulate_fragments.py emulate_wgmma.py emulate_tt.py emulate_sk.py emulate_smallm5.py "emulate_pingpong.py --quick" "emulate_mcast.py --quick" "emulate_coop.py --quick" "emulate_v10.py --quick" "emulate_midm_tma.py --quick" "emulate_tailrows.py --quick"; do
	# shellcheck disable=SC2086
	out=$(python3 tools/gemm_dev/$script 2>&1)
	if [ $? = 0 ]; then
		pass=$((pass + $(echo "$out" | grep -c 'max err')))
	else
		echo "$out" | tail -15 | sed "s/^/FAIL $script: /"
		fail=$((fail + 1))
	fi
done
if python3 tools/gemm_dev/gen_wgmma_ops.py --check; then
	pass=$((pass + 1))
else
	echo "FAIL gen_wgmma_ops: problems/common/kernels/gemm_bf16_sm90_wgmma_ops.cuh differs from the generator's output"
	fail=$((fail + 1))
fi
# plan_test NAME COMPILER ARGS...: builds tests/gemm/NAME with COMPILER ARGS -o BIN, runs it on a fresh
# seed (its FAIL lines printed with the seed), or says why it was skipped
plan_test() {
	local name=$1 cc=$2 bin=${BUILD:-build}/suites seed out
	shift 2
	if ! command -v "$cc" >/dev/null 2>&1; then
		echo "skip $name: $cc not found"
		return
	fi
	mkdir -p "$bin"
	seed=$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')
	if ! "$cc" "$@" -o "$bin/$name" >"$bin/$name.log" 2>&1; then
		echo "FAIL $name: build (see $bin/$name.log)"
		fail=$((fail + 1))
	elif out=$("$bin/$name" "$seed" 2>&1); then
		pass=$((pass + 1))
	else
		echo "$out" | grep FAIL | sed "s/^/(seed $seed) /"
		fail=$((fail + 1))
	fi
}
# the v6 mid-M plan (plain C++, tests/gemm/v6_plan_test.cpp: invariants against a brute force on random
# shapes and GPUs, the calibration table and the Llama plans; ~1 s with g++)
plan_test v6_plan_test "${CXX:-g++}" -std=c++17 -O2 -Wall -Wextra -Wshadow -Werror tests/gemm/v6_plan_test.cpp
# the v3 plan (tests/gemm/v3_plan_test.cu, built by nvcc for its host code)
plan_test v3_plan_test "${NVCC:-nvcc}" -std=c++17 -O2 -gencode=arch=compute_90a,code=sm_90a \
	-Xcompiler -Wall,-Wextra,-Wshadow,-Werror -Iinclude tests/gemm/v3_plan_test.cu
# the version-9 launch decision (tests/gemm/coop_plan_test.cu: coop_decide on v3a's plans and v2's split rule,
# random shapes and SM counts, the Llama decisions; host code, ~12 s with nvcc)
plan_test coop_plan_test "${NVCC:-nvcc}" -std=c++17 -O2 -gencode=arch=compute_90a,code=sm_90a \
	-Xcompiler -Wall,-Wextra,-Wshadow,-Werror -Iinclude tests/gemm/coop_plan_test.cu
# kernel_compile NAME [SASS_PATTERN COUNT [KERNELS]]: tests/gemm/NAME.cu (a candidate kernel not in the default build,
# instantiated KERNELS times, default twice) compiles for sm_90a with warnings as errors, ptxas reports every kernel,
# no spills, no wgmma serialization warning (C7520); with SASS_PATTERN, cuobjdump (when it is there) counts COUNT of it
kernel_compile() {
	local name=$1 pat=${2:-} want=${3:-} nk=${4:-2}
	if ! command -v "${NVCC:-nvcc}" >/dev/null 2>&1; then
		echo "skip $name: ${NVCC:-nvcc} not found"
		return
	fi
	mkdir -p "${BUILD:-build}/suites"
	local log=${BUILD:-build}/suites/$name.log obj=${BUILD:-build}/suites/$name.o
	if "${NVCC:-nvcc}" -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Iproblems/common/kernels -Iinclude \
		-Werror all-warnings -Xptxas -v,-warn-spills,-Werror -c "tests/gemm/$name.cu" -o "$obj" >"$log" 2>&1 &&
		[ "$(grep -c 'Used [0-9]* registers' "$log")" = "$nk" ] && ! grep -q C7520 "$log" &&
		{ [ -z "$pat" ] || ! command -v "${CUOBJDUMP:-cuobjdump}" >/dev/null 2>&1 ||
			[ "$("${CUOBJDUMP:-cuobjdump}" -sass "$obj" 2>>"$log" | grep -c "$pat")" = "$want" ]; }; then
		pass=$((pass + 1))
	else
		echo "FAIL $name: see $log"
		fail=$((fail + 1))
	fi
}
# the ping-pong kernel (candidate SF_GEMM_PINGPONG=1): both tile heights; ~2 s with nvcc
kernel_compile pingpong_compile
# the v8 clustered kernel (candidate SF_GEMM_MCAST=1): both widths; ~2 s
kernel_compile mcast_compile
# the v9 kernel (candidate SF_GEMM_COOP256=1 / 2): both tile shapes, each K loop issuing 8 wgmma m64n128k16 per stage
kernel_compile coop_compile 'HGMMA.64x128x16.F32.BF16' 16
# the v10 kernel (candidate SF_GEMM_V10=1): widths 256 and 192, the epilogue's TMA stores (4 + 3 UTMASTG in SASS)
kernel_compile v10_compile 'UTMASTG' 7
# the v4 mid-M kernel with the version-11 epilogue (candidate SF_GEMM_MIDM_TMA=1): NT 64 at one CTA per SM and NT 96
# at two (80 registers), each with its unsplit and its cluster-reduction TMA store (2 + 2 UTMASTG in SASS)
kernel_compile midm_tma_compile 'UTMASTG' 4
# the M 9..16 small-M candidate (SF_GEMM_SM16=1): batch depths 4 (launched) and 2 at two blocks per SM, no spill
kernel_compile smallm16_compile
# the version-12 mid-M candidate (SF_GEMM_MIDM_MC=1): band-pair clusters, NT 64 and 128, one activation-half multicast each
kernel_compile midm_mc_compile 'UTMALDG.2D.MULTICAST' 2
# the version-15 candidate (SF_GEMM_TAILROWS=1): wgmma persistent / cluster / pair, v10, v4 two-CTA; two TMA loads each
kernel_compile tailrows_compile 'UTMALDG' 10 5
# the version-16 candidate (SF_GEMM_MIDM_FIT=2): half-band kernels at NT 144 (wgmma n 72) and NT 80 (n 40, the token-tile plan)
kernel_compile midm_fit_compile
echo "$pass passed, $fail failed"
[ $fail = 0 ]
