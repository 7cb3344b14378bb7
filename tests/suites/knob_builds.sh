#!/usr/bin/env bash
# knob_builds.sh - the opt-in candidates the next GPU call will time, built exactly as `solforge eval` builds a
# solution (nvcc -std=c++17 -O3 sm_90a -shared -cudart shared, with the knob's -D), ptxas with -warn-spills: an
# off-by-default macro whose code only the CPU emulation ever compiled (SF_EMU_H) can hide a host-pass error that
# first shows up as COMPILE_ERROR on the GPU machine (session 16: DEC_B1_TMA's mbarrier helpers used the emulator's
# std::mutex in nvcc's host pass), and a kernel whose wgmma ptxas serialized (C7520, an "info" line). Skips (0 passed, 0 failed) where nvcc is missing. ~5-10 s per line.
set -u
cd "$(dirname "$0")/../.." || exit 1
out=${BUILD:-build}/suites/knob_builds
mkdir -p "$out"
nvcc=${NVCC:-nvcc}
if ! command -v "$nvcc" >/dev/null 2>&1; then
	echo "skip: nvcc not found"
	echo "0 passed, 0 failed"
	exit 0
fi
# solution (under problems/) and its -D list; keep to the candidates still opt-in and pending a GPU number (session 17:
# the measured decode TMA / gather-diagnostic lines and MW 2 removed; the controls of this session's two flips kept;
# session 18: the control of its DEC_CP_L2 flip added; session 19: the control of decode_b1's ring depth, 3 stages, and the wave-chunk candidate; session 20: the wave chunk made the default, its control DEC_WAVE_CHUNK 0 kept; session 24: the narrow token tiles made the default, their control v24o kept; the stream-K half bands v26 in their form 2, the one pending a GPU number; the defaults' C7520 check is tools/cuda_check.sh's)
list=$(
	cat <<'LIST'
llama/gemm_bf16_n6144_k4096 -DSF_GEMM_V6_BN96=0 -DSF_GEMM_SM16_MIDM=0
llama/gqa_paged_decode_h32_kv8_d128_ps1 -DDEC_B1_REG=1
llama/gqa_paged_decode_h32_kv8_d128_ps16 -DDEC_CP_L2=0
llama/gqa_paged_decode_h32_kv8_d128_ps16 -DDEC_B1_STAGES=3 -DDEC_B1_STAGES_SHORT=3
llama/gqa_paged_decode_h32_kv8_d128_ps1 -DDEC_WAVE_CHUNK=0
llama/gemm_bf16_n28672_k4096 -DSF_GEMM_MIDM_MW=0
llama/gemm_bf16_n4096_k4096 -DSF_GEMM_SM_LDPF=0
llama/gemm_bf16_n4096_k4096 -DSF_GEMM_MIDM_TT_SMALL=0 -DSF_GEMM_MIDM_TT_MIN_M=128
llama/gemm_bf16_n6144_k4096 -DSF_GEMM_MIDM_SK=2
LIST
)
pass=0 fail=0 i=0
while read -r prob defs; do
	[ -n "$prob" ] || continue
	i=$((i + 1))
	log=$out/$i.log
	# shellcheck disable=SC2086 # defs: a list of -D flags
	if "$nvcc" -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Xcompiler -fPIC -shared -Iinclude -cudart shared \
		-Xptxas -warn-spills,-Werror $defs "problems/$prob/solutions/fast.cu" -o "$out/$i.so" >"$log" 2>&1; then
		# ptxas reports wgmma serialization (C7520: accumulators touched on a path it cannot prove warp-uniform) as
		# "info", which -Werror lets through: the first build of version 26 ran 1.3x slow that way (session 24)
		if grep -q C7520 "$log"; then
			echo "FAIL $prob $defs: wgmma serialized by ptxas: $(grep -m1 -o "C7520.*function '[^']*'" "$log")"
			fail=$((fail + 1))
			continue
		fi
		echo "ok $prob $defs"
		pass=$((pass + 1))
	else
		echo "FAIL $prob $defs: $(grep -m2 -i error "$log" | tr '\n' ' ')"
		fail=$((fail + 1))
	fi
done <<<"$list"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
