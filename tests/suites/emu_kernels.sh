#!/usr/bin/env bash
# emu_kernels.sh - the CUDA kernels of the memory-bound solutions (RMSNorm family, QK norm, Flux AdaLN, RoPE, SiLU /
# GeGLU, GroupNorm, causal conv1d, the DeepSeek router), the GQA paged decode kernel and the calibration copy and read,
# run on a CPU emulation of CUDA (tests/emu/emu.h: a block's threads as fibers, barriers, shuffles, shared memory,
# atomics, clusters, emulated mbarriers) and checked element by element against double-precision references of their
# oracles over workload, held-out and fallback shapes (tests/emu/emu_test.cpp). No GPU needed: each .cu is rewritten
# (its CUDA includes dropped, `k<<<g, b, smem, s>>>(...)` turned into `emu_launch(g, b, k, ...)`, `__shared__` arrays
# turned into per-block arrays) and built with g++.
# The list below is the defaults plus every knob variant kept for side-by-side timing and every candidate (the lines
# after EXTRA: decode's TMA / dynamic / cluster / diagnostic variants, GroupNorm's ring, L2-window, cluster and
# L2-chunk paths, conv1d's earlier kernels, the router's version 1); until session 25 those ran only with
# EMU_EXTRA=1, to keep CI under 20 minutes, and the fibers made them cheap enough for CI (EMU_EXTRA=0 leaves them
# out, for a quicker run). What each variant is and when it was measured: the problems' NOTES files.
# A list line may end with -D flags (a tuning variant of the same source) and -I folders, and MUTANT=name (a sed
# mutation of the source or of a header, listed below, whose emulation must report a failure; a mutant's run stops
# at its first failing case). The data are drawn from EMU_SEED (fresh per run, printed first; EMU_SEED=n reruns a
# draw), EMU_ONLY (an extended regex) keeps the matching lines. Prints each binary's ok/FAIL lines, the five slowest
# lines, and ends with the summed "N passed, M failed".
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
# one draw of the test data (and of the fibers' orders) per run, printed: EMU_SEED=n reruns it
export EMU_SEED=${EMU_SEED:-$((RANDOM * 32768 + RANDOM))}
echo "emu_kernels: EMU_SEED=$EMU_SEED"
TMP=$(mktemp -d /tmp/solforge-emu.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
CXX=${CXX:-g++}
P=0
F=0
# one list line: rewrite, build, run; prints its ok/FAIL lines, then "RESULT passed failed"
run_one() {
	local macro=$1 src=$2 name line mutant="" x
	shift 2
	local extra=""
	for x in "$@"; do # MUTANT=name: run a copy of src with that mutation (below), which must fail
		case $x in
		MUTANT=*) mutant=${x#MUTANT=} ;;
		*) extra+="${extra:+ }$x" ;;
		esac
	done
	if [ -n "$mutant" ]; then
		local msrc=$TMP/mutant_$mutant.cu mfile=${mutation_file[$mutant]:-} mdir="" mout
		if [ -n "$mfile" ]; then # a header: a copy of its folder, searched first (-I), holds the mutated copy
			mdir=$TMP/mutant_$mutant.d
			mkdir -p "$mdir" && cp "$(dirname "$mfile")"/*.cuh "$mdir"/
			mout=$mdir/$(basename "$mfile")
			cp "$src" "$msrc"
		else
			mfile=$src
			mout=$msrc
		fi
		sed -E "${mutations[$mutant]}" "$mfile" >"$mout"
		if cmp -s "$mfile" "$mout"; then
			echo "FAIL mutant $mutant: the mutation does not apply to $mfile"
			echo "RESULT 0 1"
			return
		fi
		local res nf
		res=$(MUTANT_RUN=1 run_one "$macro" "$msrc" ${mdir:+-I$mdir} $extra)
		nf=$(grep -c '^FAIL ' <<<"$res")
		if grep -q '^FAIL build' <<<"$res" || [ "$nf" = 0 ]; then
			echo "FAIL mutant $mutant of $src${extra:+ $extra}: not caught (${nf} failing cases)"
			echo "RESULT 0 1"
		else
			echo "ok mutant $mutant of $src${extra:+ $extra}: caught (its run stops at the first failing case)"
			echo "RESULT 1 0"
		fi
		return
	fi
	name=emu_$(printf '%s' "$src$extra" | md5sum | cut -c1-16) # (a long -D list would exceed the file-name limit)
	python3 - "$src" "$TMP/$name.cpp" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
src = re.sub(r'#include <cuda_(runtime|bf16|fp16)\.h>\n', '', src)
# comments out (their newlines kept: line numbers stay), so a launch quoted in a comment is not rewritten
src = re.sub(r'"(?:\\.|[^"\\\n])*"|/\*.*?\*/|//[^\n]*',
             lambda m: m.group(0) if m.group(0).startswith('"') else '\n' * m.group(0).count('\n'), src, flags=re.S)
# `__shared__ T a[N], b[M];` -> per-block arrays (blocks may run concurrently in the emulation)
nshared = [0]
def shared(m):
    out = []
    for d in split_top(m.group(2)):
        dm = re.fullmatch(r'(\w+)\s*((?:\[[^\]]+\])+)', d)
        if not dm:
            sys.exit("emu: cannot rewrite __shared__ declaration: " + m.group(0))
        dims = re.findall(r'\[([^\]]+)\]', dm.group(2))
        nshared[0] += 1
        inner = ''.join('[%s]' % x for x in dims[1:])
        ptr = '(*%s)%s' % (dm.group(1), inner) if inner else '*' + dm.group(1)
        out.append('%s %s = reinterpret_cast<%s %s>(emu_shared<%s>(%d, (size_t)(%s)));' % (
            m.group(1), ptr, m.group(1), '(*)' + inner if inner else '*', m.group(1), nshared[0],
            ' * '.join('(%s)' % x for x in dims)))
    return ' '.join(out)
def split_top(s):
    out, depth, cur = [], 0, ''
    for ch in s:
        if ch in '([{': depth += 1
        if ch in ')]}': depth -= 1
        if ch == ',' and depth == 0:
            out.append(cur); cur = ''
        else:
            cur += ch
    out.append(cur)
    return [x.strip() for x in out]
def launch(m):
    cfg = split_top(m.group(2))
    return 'emu_launch(%s, %s, %s, ' % (cfg[0], cfg[1], m.group(1))
src, n = re.subn(r'([A-Za-z_]\w*(?:<\w+>)?)<<<(.*?)>>>\(', launch, src, flags=re.S)
if n == 0:
    sys.exit("no kernel launch found in " + sys.argv[1])
src = re.sub(r'__shared__\s+([A-Za-z_][\w ]*?)\s+([A-Za-z_]\w*\s*\[[^;]*);', shared, src)
open(sys.argv[2], 'w').write(src)
PY
	# shellcheck disable=SC2086 # extra: a list of -D flags
	if ! $CXX -std=c++17 -O1 -pthread -Wall -Wno-unused-function -Wno-unknown-pragmas -Iinclude -Itests/emu "-D$macro" \
		"-DEMU_SOLUTION=\"$TMP/$name.cpp\"" $extra tests/emu/emu_test.cpp -o "$TMP/$name" >"$TMP/$name.log" 2>&1; then
		echo "FAIL build $src"
		sed 's/^/    /' "$TMP/$name.log" | head -20
		echo "RESULT 0 1"
		return
	fi
	# a mutant stops at its first failing case (one is all it must show)
	EMU_STOP_AT_FAIL=${MUTANT_RUN:-0} "$TMP/$name" >"$TMP/$name.out" 2>&1
	sed -E "s#^(ok|FAIL) #\1 $src${extra:+ $extra}: #" "$TMP/$name.out" | grep -v " passed, \|^seed "
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$TMP/$name.out" | tail -1)
	if [ -z "$line" ]; then
		echo "FAIL $src: no result (crashed?)"
		tail -5 "$TMP/$name.out"
		echo "RESULT 0 1"
		return
	fi
	echo "RESULT $(echo "$line" | cut -d' ' -f1) $(echo "$line" | cut -d' ' -f3)"
}

# mutations (sed -E expressions) that list lines name with MUTANT=name: the emulation of the mutated
# source must report failing cases (a test that cannot fail is a defect). DeepSeek routing: version 2's
# group tie rule reversed, its in-lane duplicate skip dropped; version 1's lowest-expert tie rule reversed.
# mutation_file[name]: the header the mutation edits instead of the list line's source. Decode's TMA candidate
# (DEC_B1_TMA): the bulk copies write the ring rows at pitch 16 while mma_step reads them at 17 (CI); each stage's
# mbarrier expects half the step's bytes (EMU_EXTRA: the emulated wait never completes and aborts after 20 s). The gather
# diagnostic: diag_off (variant 3's rows at kv head h / 2), diag_regs (variant 5's register loads at half the column).
# Decode's session-17 candidate (-DDEC_B1_REG=1, K / V in registers; measured slower) runs in EMU_EXTRA (chunks of up to
# 11 steps, and of 4) with its reg_prmt mutant (V's second dim of each pair taken from the first), as do the gather
# diagnostic's six variants and their two mutants (all measured in session 17).
# decode_b1's ring depth (session 19: DEC_B1_STAGES 2 for long chunks, DEC_B1_STAGES_SHORT 1 for chunks of at most
# DEC_B1_SHORT_STEPS 2 steps): the first CI line runs 4-step chunks on 2 stages, the held-out line 2-step chunks on 1;
# the B1_ONLY line puts every batch-1 chunk (4-5 steps: the one buffer reused every step) on 1 stage, and its mutant
# b1_st_ring issues the copies into buffer s % DEC_STAGES while the loop reads buffer s % ST.
# decode_fused's wave-chunk rule (the default since session 20 at 2048 positions from a host chunk of 1024; the other CI
# lines' host chunk of 256 never doubles): its CI line (-DDEC_WAVE_CHUNK=512 -DEMU_DECODE_WAVE, 256 -> 512) gives
# batches whose doubled chunks fill one wave of the emulation's 48 slots the doubled chunk, the others the host's;
# mutant wave_split lets only the CTAs of odd items double (the CTAs of one kv head then disagree on the chunk: must fail).
declare -A mutation_file=(
	[tma_pitch]=problems/common/kernels/gqa_paged_decode_sm90_b1tma.cuh
	[tma_bytes]=problems/common/kernels/gqa_paged_decode_sm90_b1tma.cuh
	[diag_off]=problems/common/kernels/gqa_paged_decode_sm90_attend.cuh
	[diag_regs]=problems/common/kernels/gqa_paged_decode_sm90_attend.cuh
	[reg_prmt]=problems/common/kernels/gqa_paged_decode_sm90_b1reg.cuh
	[b1_st_ring]=problems/common/kernels/gqa_paged_decode_sm90_attend.cuh
)
declare -A mutations=(
	[tma_pitch]='s/[+] tid [*] DEC_TMA_PITCH, src/+ tid * (D \/ 8), src/'
	[tma_bytes]='s/tma_bar_expect[(]bar, DEC_TMA_STEP_BYTES[)]/tma_bar_expect(bar, DEC_TMA_STEP_BYTES \/ 2)/'
	[diag_off]='s/[(]size_t[)][(]p_[)] [*] HKV [+] kvh [+]/(size_t)(p_) * HKV + kvh \/ 2 +/'
	[diag_regs]='s/kvh[)] [*] D [+] col [*] 8;/kvh) * D + (col \/ 2) * 8;/'
	[reg_prmt]='s/dec_prmt[(]x, y, 0x7632u[)]/dec_prmt(x, y, 0x5410u)/'
	[b1_st_ring]='s/ring [+] [(]size_t[)][(][(]s_[)] % ST[)]/ring + (size_t)((s_) % DEC_STAGES)/'
	[wave_split]='s/const bool dbl = w <= slots [&][&]/const bool dbl = (blockIdx.x \/ HKV) % 2 \&\& w <= slots \&\&/'

	[ds2_group_tie]='s/h0 < g [?] 1u : 0u/h0 > g ? 1u : 0u/'
	[ds2_dup]='s/m [&]= m - 1u;/m |= 0u;/'
	[ds1_tie]='s/__reduce_min_sync\(0xffffffffu, cand\)/__reduce_max_sync(0xffffffffu, cand == 0xffffffffu ? 0u : cand)/'
	[cc_mask]='s/tt >= 2 [?] xs/tt >= 3 ? xs/'
	[cc_interior]='s/t [+] 8 <= L[)] [{] [/][*] interior/t + 7 <= L) { \/* interior/'
	[cc_rows]='s/blockIdx.y [*] blockDim.y [+] threadIdx.y/blockIdx.y * blockDim.y/'
	[gn_l2chunk]='s/gp [+] g0 [*] cpg, bp [+] g0 [*] cpg/gp, bp/'
	[cc_pred]='s/pw = lane [?] uw : [(]j [?] lw : hw[)]/pw = lane ? uw : (j ? uw : hw)/'
)
# the list lines: kernel macro, source, extra flags. EMU_EXTRA=1 adds the variants kept only for
# side-by-side timing (not in CI: time): decode versions 2 and 1, GroupNorm's L2 window and ring; the
# default GroupNorm build with its two largest shapes (-DEMU_GN_BIG: 200x200 and 400x400, ~100 CPU-seconds); and the
# decode's cluster candidate (version 5, -DDEC_CLUSTER=4 here: batches up to 4 on clusters of 4 CTAs), the old
# batch-1 path on decode_fused (-DDEC_B1=0; since session 10 the default is decode_b1, which the CI lines run: no
# locate scan, page ids loaded beside kv_indptr; the first CI line with DEC_B1_ITEMS as DEC_ITEMS, many chunks),
# the session-11 candidate decode_b1dyn (-DDEC_B1_DYN=1 with 3-4 CTAs per kv head: static runs of 50% and 10%,
# the rest claimed), and both with the cluster size rule (-DDEC_CLUSTER_MAXKV=1000: shorter batches on clusters, longer on decode_b1).
list=$(cat <<'LIST'
EMU_RMSNORM problems/llama/rmsnorm_h4096/solutions/fast.cu -Iproblems/llama/rmsnorm_h4096/solutions
EMU_RMSNORM problems/llama/rmsnorm_h4096/solutions/fast.cu -Iproblems/llama/rmsnorm_h4096/solutions -DRMS_SMALL_T=0
EMU_FUSED_ADD problems/llama/fused_add_rmsnorm_h4096/solutions/fast.cu -Iproblems/llama/fused_add_rmsnorm_h4096/solutions
EMU_FUSED_ADD problems/llama/fused_add_rmsnorm_h4096/solutions/fast.cu -Iproblems/llama/fused_add_rmsnorm_h4096/solutions -DRMS_SMALL_T=0
EMU_GEMMA problems/gemma/gemma_rmsnorm_h5376/solutions/fast.cu -Iproblems/gemma/gemma_rmsnorm_h5376/solutions
EMU_GEMMA problems/gemma/gemma_rmsnorm_h5376/solutions/fast.cu -Iproblems/gemma/gemma_rmsnorm_h5376/solutions -DRMS_SMALL_T=0
EMU_GEMMA problems/gemma/gemma_rmsnorm_h5376/solutions/fast.cu -Iproblems/gemma/gemma_rmsnorm_h5376/solutions -DRMS_SUM_UNROLL=0 -DRMS_MEAN_MUL=0
EMU_QK problems/qwen/qk_rmsnorm_h32_kv4_d128/solutions/fast.cu
EMU_QK problems/qwen/qk_rmsnorm_h32_kv4_d128/solutions/fast.cu -DQKN_RPT=2 -DQKN_WAVES=1
EMU_GN problems/stable-diffusion/groupnorm32_silu_sd_vae/solutions/fast.cu -Iproblems/stable-diffusion/groupnorm32_silu_sd_vae/solutions
EMU_GN problems/stable-diffusion/groupnorm32_silu_sd_vae/solutions/fast.cu -Iproblems/stable-diffusion/groupnorm32_silu_sd_vae/solutions -DEMU_GN_CL -DEMU_GN_CL_QUICK -DGN_CL_MAX_HW=4096 -DGN_CL_THREADS=64 -DGN_FUSED_MAX=0
EMU_FLUX problems/flux/flux_adaln_layernorm_modulate_h3072/solutions/fast.cu
EMU_COPY tools/calibration/copy/solutions/copy.cu
EMU_COPY tools/calibration/copy/solutions/copy.cu -DCOPY_SMALL_BYTES=0
EMU_SILU problems/llama/silu_and_mul_i14336/solutions/fast.cu -Iproblems/llama/silu_and_mul_i14336/solutions
EMU_SILU problems/llama/silu_and_mul_i14336/solutions/fast.cu -Iproblems/llama/silu_and_mul_i14336/solutions -DSM_GRID=0 -DTHREADS=256 -DUNROLL=2 -DSM_HINT=1
EMU_GEGLU problems/gemma/geglu_tanh_h5376_i21504/solutions/fast.cu -Iproblems/gemma/geglu_tanh_h5376_i21504/solutions
EMU_GEGLU problems/gemma/geglu_tanh_h5376_i21504/solutions/fast.cu -Iproblems/gemma/geglu_tanh_h5376_i21504/solutions -DGG_GRID=2 -DGG_BPS=2 -DUNROLL=2 -DGG_HINT=3
EMU_SILU problems/llama/silu_and_mul_i14336/solutions/fast.cu -Iproblems/llama/silu_and_mul_i14336/solutions -DSM_NARROW_MAX=100000000 -DSM_NARROW_EPT=2 -DSM_NARROW_THREADS=64
EMU_GEGLU problems/gemma/geglu_tanh_h5376_i21504/solutions/fast.cu -Iproblems/gemma/geglu_tanh_h5376_i21504/solutions -DGG_NARROW_MAX=100000000 -DGG_NARROW_EPT=4 -DGG_NARROW_THREADS=32
EMU_GEGLU problems/gemma/geglu_tanh_h5376_i21504/solutions/fast.cu -Iproblems/gemma/geglu_tanh_h5376_i21504/solutions -DGG_NARROW_MAX=100000000 -DGG_NARROW_EPT=1
EMU_SILU problems/llama/silu_and_mul_i14336/solutions/fast.cu -Iproblems/llama/silu_and_mul_i14336/solutions -DSM_CONST_I=0
EMU_SILU problems/llama/silu_and_mul_i14336/solutions/fast.cu -Iproblems/llama/silu_and_mul_i14336/solutions -DSM_EXACT=0
EMU_SILU problems/llama/silu_and_mul_i14336/solutions/fast.cu -Iproblems/llama/silu_and_mul_i14336/solutions -DSM_EXACT_NARROW=1
EMU_RMSNORM problems/llama/rmsnorm_h4096/solutions/fast.cu -Iproblems/llama/rmsnorm_h4096/solutions -DRMS_CONST_H=0
EMU_FUSED_ADD problems/llama/fused_add_rmsnorm_h4096/solutions/fast.cu -Iproblems/llama/fused_add_rmsnorm_h4096/solutions -DRMS_CONST_H=0
EMU_GEMMA problems/gemma/gemma_rmsnorm_h5376/solutions/fast.cu -Iproblems/gemma/gemma_rmsnorm_h5376/solutions -DRMS_CONST_H=0
EMU_QK problems/qwen/qk_rmsnorm_h32_kv4_d128/solutions/fast.cu -DQKN_CONST_D=0
EMU_QK problems/qwen/qk_rmsnorm_h32_kv4_d128/solutions/fast.cu -DQKN_BIG_ROWS=1
EMU_FLUX problems/flux/flux_adaln_layernorm_modulate_h3072/solutions/fast.cu -DADL_CONST_H=0
EMU_ROPE problems/llama/rope_llama31_h32_kv8_d128/solutions/fast.cu
EMU_ROPE problems/llama/rope_llama31_h32_kv8_d128/solutions/fast.cu -DRP_CONST=0
EMU_GEGLU problems/gemma/geglu_tanh_h5376_i21504/solutions/fast.cu -Iproblems/gemma/geglu_tanh_h5376_i21504/solutions -DGG_CONST_I=0
EMU_COPY tools/calibration/copy/solutions/copy.cu -DCOPY_BLOCKED=1
EMU_COPY tools/calibration/copy/solutions/copy.cu -DCOPY_BPS=4 -DCOPY_UNROLL=4 -DCOPY_THREADS=512
EMU_READ tools/calibration/read/solutions/read.cu
EMU_READ tools/calibration/read/solutions/read.cu -DREAD_THREADS=128 -DREAD_UNROLL=2
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDEC_MIN_CHUNK=256 -DDEC_ITEMS=100000 -DDEC_B1_ITEMS=100000 -DDEC_SCAN_PASS=2 -DDECODE_MMA=1
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DEMU_DECODE_HELDOUT
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDEC_MIN_CHUNK=256 -DDEC_ITEMS=100000 -DDEC_B1_ITEMS=100000 -DDEC_B1_SHORT_STEPS=100 -DEMU_DECODE_B1_ONLY
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDEC_MIN_CHUNK=256 -DDEC_ITEMS=100000 -DDEC_B1_ITEMS=100000 -DDEC_B1_SHORT_STEPS=100 -DEMU_DECODE_B1_ONLY MUTANT=b1_st_ring
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDEC_WAVE_CHUNK=512 -DDEC_MIN_CHUNK=256 -DDEC_ITEMS=100000 -DDEC_B1=0 -DEMU_DECODE_WAVE
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDEC_WAVE_CHUNK=512 -DDEC_MIN_CHUNK=256 -DDEC_ITEMS=100000 -DDEC_B1=0 -DEMU_DECODE_WAVE MUTANT=wave_split
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDEC_B1_TMA=1 -DDEC_MIN_CHUNK=256 -DDEC_ITEMS=100000 -DDEC_B1_ITEMS=2 -DDEC_SCAN_PASS=2
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDEC_B1_TMA=1 -DDEC_MIN_CHUNK=256 -DDEC_ITEMS=100000 -DDEC_B1_ITEMS=2 -DDEC_SCAN_PASS=2 -DEMU_DECODE_TMA_ONLY MUTANT=tma_pitch
EMU_DSROUTE problems/deepseek/moe_grouped_topk_routing_e256_g8_k8/solutions/fast.cu
EMU_DSROUTE problems/deepseek/moe_grouped_topk_routing_e256_g8_k8/solutions/fast.cu -DDS_V2=1 -DDS2_PREFETCH=0 -DDS2_THREADS=64 -DDS2_BPS=1 -DEMU_DS_QUICK
EMU_DSROUTE problems/deepseek/moe_grouped_topk_routing_e256_g8_k8/solutions/fast.cu -DDS_V2=1 MUTANT=ds2_group_tie -DEMU_DS_QUICK
EMU_DSROUTE problems/deepseek/moe_grouped_topk_routing_e256_g8_k8/solutions/fast.cu -DDS_V2=1 MUTANT=ds2_dup -DEMU_DS_QUICK
EMU_CONV problems/mamba/causal_conv1d_silu_d4_mamba2/solutions/fast.cu
EMU_CONV problems/mamba/causal_conv1d_silu_d4_mamba2/solutions/fast.cu -DCC_SCALAR_N=0
EMU_CONV problems/mamba/causal_conv1d_silu_d4_mamba2/solutions/fast.cu -DCC_FLAT=2 -DCC_SCALAR_N=0 -DCC_SMALL_NV=0 MUTANT=cc_pred
EMU_CONV problems/mamba/causal_conv1d_silu_d4_mamba2/solutions/fast.cu -DCC_VU=2 -DTHREADS=128 -DCC_SCALAR_N=0 MUTANT=cc_rows
LIST
)
if [ "${EMU_EXTRA:-1}" = 1 ]; then
	list+=$'\n'$(cat <<'EXTRA'
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDEC_MIN_CHUNK=256 -DDEC_ITEMS=100000 -DDEC_B1_ITEMS=2 -DDEC_SCAN_PASS=2 -DDEC_DIAG_GATHER=1
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDEC_MIN_CHUNK=256 -DDEC_ITEMS=100000 -DDEC_B1_ITEMS=2 -DDEC_SCAN_PASS=2 -DDEC_DIAG_GATHER=2
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDEC_MIN_CHUNK=256 -DDEC_ITEMS=100000 -DDEC_B1_ITEMS=2 -DDEC_SCAN_PASS=2 -DDEC_DIAG_GATHER=3
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDEC_MIN_CHUNK=256 -DDEC_ITEMS=100000 -DDEC_B1_ITEMS=2 -DDEC_SCAN_PASS=2 -DDEC_DIAG_GATHER=3 MUTANT=diag_off
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDEC_MIN_CHUNK=256 -DDEC_ITEMS=100000 -DDEC_B1_ITEMS=2 -DDEC_SCAN_PASS=2 -DDEC_DIAG_GATHER=5
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDEC_MIN_CHUNK=256 -DDEC_ITEMS=100000 -DDEC_B1_ITEMS=2 -DDEC_SCAN_PASS=2 -DDEC_DIAG_GATHER=5 MUTANT=diag_regs
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDEC_B1_REG=1 -DDEC_MIN_CHUNK=256 -DDEC_ITEMS=100000 -DDEC_B1_ITEMS=2 -DDEC_SCAN_PASS=2
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDEC_MIN_CHUNK=256 -DDEC_ITEMS=100000 -DDEC_B1_ITEMS=2 -DDEC_SCAN_PASS=2 -DDEC_DIAG_GATHER=4
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDEC_MIN_CHUNK=256 -DDEC_ITEMS=100000 -DDEC_B1_ITEMS=2 -DDEC_SCAN_PASS=2 -DDEC_DIAG_GATHER=6
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDEC_B1_REG=1 -DDEC_MIN_CHUNK=256 -DDEC_ITEMS=100000 -DDEC_B1_ITEMS=100000 -DDEC_SCAN_PASS=2
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDEC_B1_REG=1 -DDEC_MIN_CHUNK=256 -DDEC_ITEMS=100000 -DDEC_B1_ITEMS=2 -DDEC_SCAN_PASS=2 MUTANT=reg_prmt
EMU_GN problems/stable-diffusion/groupnorm32_silu_sd_vae/solutions/fast.cu -Iproblems/stable-diffusion/groupnorm32_silu_sd_vae/solutions -DGN_ODD=1 -DGN_CLR=1 -DEMU_GN_V6 -DGN_CLR_THREADS=64 -DGN_FUSED_MAX=256 -DGN_FUSED_PF=1
EMU_DSROUTE problems/deepseek/moe_grouped_topk_routing_e256_g8_k8/solutions/fast.cu -DDS_V2=0
EMU_DSROUTE problems/deepseek/moe_grouped_topk_routing_e256_g8_k8/solutions/fast.cu -DDS_V2=0 MUTANT=ds1_tie -DEMU_DS_QUICK
EMU_CONV problems/mamba/causal_conv1d_silu_d4_mamba2/solutions/fast.cu -DCC_FLAT=2 -DCC_U=4 -DTHREADS=128 -DCC_SMALL_NV=0 -DCC_SCALAR_N=0
EMU_CONV problems/mamba/causal_conv1d_silu_d4_mamba2/solutions/fast.cu -DCC_ROWS=0 -DCC_SCALAR_N=0
EMU_CONV problems/mamba/causal_conv1d_silu_d4_mamba2/solutions/fast.cu -DCC_FLAT=2 -DCC_U=1 -DCC_SCALAR_N=0
EMU_CONV problems/mamba/causal_conv1d_silu_d4_mamba2/solutions/fast.cu -DCC_FLAT=2 -DCC_SCALAR_N=0 -DCC_SMALL_NV=0 MUTANT=cc_mask
EMU_CONV problems/mamba/causal_conv1d_silu_d4_mamba2/solutions/fast.cu -DCC_FLAT=2 -DCC_SCALAR_N=0 -DCC_SMALL_NV=0 MUTANT=cc_interior
EMU_CONV problems/mamba/causal_conv1d_silu_d4_mamba2/solutions/fast.cu -DCC_FLAT_MAXL=4096 -DCC_U=4 -DCC_SMALL_NV=0 -DCC_SCALAR_N=0
EMU_GN problems/stable-diffusion/groupnorm32_silu_sd_vae/solutions/fast.cu -Iproblems/stable-diffusion/groupnorm32_silu_sd_vae/solutions -DGN_L2CHUNK_KB=64 -DGN_CLR=0 -DGN_CLUSTER=0 -DGN_FUSED_MAX=0 -DEMU_GN_L2CHUNK
EMU_GN problems/stable-diffusion/groupnorm32_silu_sd_vae/solutions/fast.cu -Iproblems/stable-diffusion/groupnorm32_silu_sd_vae/solutions -DGN_L2CHUNK_KB=64 -DGN_CLR=0 -DGN_CLUSTER=0 -DGN_FUSED_MAX=0 -DEMU_GN_L2CHUNK MUTANT=gn_l2chunk
EMU_CONV problems/mamba/causal_conv1d_silu_d4_mamba2/solutions/fast.cu -DCC_FLAT=0 -DCC_VU=1 -DCC_IDX32=0 -DCC_SMALL_NV=0 -DCC_SCALAR_N=0
EMU_GN problems/stable-diffusion/groupnorm32_silu_sd_vae/solutions/fast.cu -Iproblems/stable-diffusion/groupnorm32_silu_sd_vae/solutions -DEMU_GN_BIG
EMU_GN problems/stable-diffusion/groupnorm32_silu_sd_vae/solutions/fast.cu -Iproblems/stable-diffusion/groupnorm32_silu_sd_vae/solutions -DGN_CLUSTER=1 -DGN_CL_STREAM=1 -DGN_CL_MAX_HW=1000000000 -DEMU_GN_CL -DGN_CL_THREADS=64 -DGN_FUSED_MAX=0
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDEC_MIN_CHUNK=256 -DDEC_ITEMS=100000 -DDEC_SCAN_PASS=2 -DDECODE_MMA=0
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDECODE_V1=1 -DDEC_MIN_CHUNK=64 -DDEC_ITEMS=100000
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDEC_CLUSTER=4 -DDEC_CLUSTER_MAXB=4 -DDEC_MIN_CHUNK=256 -DDEC_ITEMS=100000 -DDEC_SCAN_PASS=2
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDEC_B1=0 -DDEC_MIN_CHUNK=256 -DDEC_ITEMS=100000 -DDEC_SCAN_PASS=2
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDEC_B1_TMA=1 -DDEC_MIN_CHUNK=256 -DDEC_ITEMS=100000 -DDEC_B1_ITEMS=2 -DDEC_SCAN_PASS=2 -DEMU_DECODE_TMA_ONLY MUTANT=tma_bytes
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDEC_B1_DYN=1 -DDEC_B1_ITEMS=4 -DDEC_B1_DYN_MIN=1 -DDEC_B1_DYN_PCT=50 -DDEC_MIN_CHUNK=256 -DDEC_ITEMS=100000 -DDEC_SCAN_PASS=2
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDEC_B1_DYN=1 -DDEC_B1_ITEMS=3 -DDEC_B1_DYN_MIN=1 -DDEC_B1_DYN_PCT=10 -DDEC_MIN_CHUNK=256 -DDEC_ITEMS=100000 -DDEC_SCAN_PASS=2
EMU_DECODE problems/common/kernels/gqa_paged_decode_sm90.cu -Iproblems/common/kernels -DDEC_CLUSTER=4 -DDEC_CLUSTER_MAXB=4 -DDEC_CLUSTER_MAXKV=1000 -DDEC_B1=1 -DDEC_MIN_CHUNK=256 -DDEC_ITEMS=100000 -DDEC_SCAN_PASS=2
EMU_GN problems/stable-diffusion/groupnorm32_silu_sd_vae/solutions/fast.cu -Iproblems/stable-diffusion/groupnorm32_silu_sd_vae/solutions -DGN_L2WIN=1 -DEMU_GN_L2W -DGN_L2W_THREADS=64 -DGN_L2W_VPT=1 -DGN_L2W_KB=8 -DGN_FUSED_MAX=0
EMU_GN problems/stable-diffusion/groupnorm32_silu_sd_vae/solutions/fast.cu -Iproblems/stable-diffusion/groupnorm32_silu_sd_vae/solutions -DGN_RING=1 -DEMU_GN_WIDE -DGN_RING_THREADS=128 -DGN_RING_SLOT_VALUES=4096 -DGN_RING_SLOTS=4 -DGN_FUSED_MAX=0 -DGN_SPLIT_FAST=0
EXTRA
)
fi

# EMU_ONLY (an extended regex): only the list lines it matches (a developer's quick run)
if [ -n "${EMU_ONLY:-}" ]; then
	list=$(grep -E -- "$EMU_ONLY" <<<"$list")
fi
# the list lines run side by side (one per core); their reports are printed in list order
i=0
while read -r macro src extra; do
	[ -n "$macro" ] || continue
	i=$((i + 1))
	# shellcheck disable=SC2086 # extra: a list of -D flags
	{
		t0=$(date +%s)
		run_one "$macro" "$src" $extra
		echo "SECONDS $(($(date +%s) - t0)) $src $extra"
	} >"$TMP/job$i.txt" 2>&1 </dev/null &
	while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n; done
done <<<"$list"
wait
for ((j = 1; j <= i; j++)); do
	grep -v '^RESULT \|^SECONDS ' "$TMP/job$j.txt"
	r=$(grep '^RESULT ' "$TMP/job$j.txt" | tail -1)
	if [ -z "$r" ]; then
		echo "FAIL job $j: no result"
		F=$((F + 1))
		continue
	fi
	P=$((P + $(echo "$r" | cut -d' ' -f2)))
	F=$((F + $(echo "$r" | cut -d' ' -f3)))
done
echo "slowest lines (s):"
cat "$TMP"/job*.txt | grep '^SECONDS ' | sort -k2,2nr | head -5 | sed 's/^SECONDS /  /'
echo "$P passed, $F failed"
[ "$F" = 0 ]
