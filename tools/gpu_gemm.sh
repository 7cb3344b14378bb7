#!/usr/bin/env bash
# gpu_gemm.sh - one-shot GPU check and tuning run of the from-scratch bf16 GEMM
# (problems/common/kernels/gemm_bf16_sm90.cu) on an H200, in under 150 s. Full logs go to $OUT (the device
# tool) or build/gpu-gemm, packed into gpu_gemm_logs.tgz beside summary.txt; the table is printed last.
#
#   build    the default variant (v2) and the candidate variants below as plain .so files, plus the
#            cuBLASLt baseline, all with -Xptxas -v, in parallel with `make` (the eval step needs build/solforge)
#   sass     cuobjdump of v2: HGMMA / HMMA / LDG counts (the large-M path must show HGMMA)
#   check    ONE tools/gemm_dev/gemm_check.py process: every variant but red checked against an fp32 torch
#            reference and timed beside cuBLASLt (CUDA events, L2 flushed, median of 10) on the 4 shapes x
#            $MS; a candidate only at the M it can change (NAME=PATH@MAXM); under `timeout` (a hang costs
#            at most $CHECK_TIMEOUT s); then red alone at M in $MS_MID (35 s limit)
#   eval     build/solforge eval of solutions/fast.cu (the default) on gemm_bf16_n4096_k4096, workloads
#            matching -m1 (M = 1, 16, 128, 1024), --rounds 1 --budget-ms 200, if time is left
# Candidates (one -D each; the default of every macro is in gemm_bf16_sm90.cu / its headers):
#   rg2   -DSF_GEMM_SM_RG=2         small M: 16 rows of B per block (4 K slices per row group), 2x fewer blocks
#   u4    -DSF_GEMM_SM_U=4          small M: 4 loads of B in flight per lane instead of 8 (tests the in-flight hypothesis)
#   pipe4 -DSF_GEMM_SM_PIPE=1 -DSF_GEMM_SM_U=4  small M: batches of 4, the next batch loaded before this one's mma
#   ilv   -DSF_GEMM_SM_ILV=1        small M: K batches interleaved over the warps (contiguous stretches of each row)
#   ilvp4 ilv + pipe4
#   sm64  -DSF_GEMM_SMALL_MAX_M=64  M 17..64 on the small-M kernel instead of the wgmma path (the default)
#   red   -DSF_GEMM_WG_REDUCE=1     mid M: split-K slabs reduced by all units of a tile (cooperative launch)
#   div2  -DSF_GEMM_WG_SPLIT_DIV=2  mid M: half as many K splits (half the slab traffic, half the CTAs)
# STEPS selects steps (default: all). Exit status 0 when every step passed.
set -u
cd "$(dirname "$0")/.." || exit 1
out=${OUT:-build/gpu-gemm}
logs=$out/logs
mkdir -p "$logs"
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache}
steps=${STEPS:-build sass check eval}
MS=${MS:-1,2,3,4,8,16,32,33,64,77,128,256,512,1000,1024,4096}
CHECK_TIMEOUT=${CHECK_TIMEOUT:-85}
EVAL_PROBLEM=${EVAL_PROBLEM:-gemm_bf16_n4096_k4096}
has() { case " $steps " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
summary=()
status=0
note() {
	summary+=("$1")
	echo "== $1"
}
t0=$(date +%s)
dev=build/gemm_dev
mkdir -p "$dev"
src=problems/common/kernels/gemm_bf16_sm90.cu
nv="nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Xcompiler -fPIC -shared -Iinclude -Xptxas -v"
# name, flags, largest M the candidate can change (empty: all M)
variants=("v2||" "rg2|-DSF_GEMM_SM_RG=2|16" "u4|-DSF_GEMM_SM_U=4|16" "pipe4|-DSF_GEMM_SM_PIPE=1 -DSF_GEMM_SM_U=4|16"
	"ilv|-DSF_GEMM_SM_ILV=1|16" "ilvp4|-DSF_GEMM_SM_ILV=1 -DSF_GEMM_SM_PIPE=1 -DSF_GEMM_SM_U=4|16"
	"sm64|-DSF_GEMM_SMALL_MAX_M=64|64" "div2|-DSF_GEMM_WG_SPLIT_DIV=2|512" "red|-DSF_GEMM_WG_REDUCE=1|512")
# red spins on a per-tile counter: a bug there hangs, so it is checked in its own process after the rest

{
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv
	nvcc --version | tail -2
} >"$logs/env.txt" 2>&1

if has build; then
	make -j"$(nproc)" >"$logs/make.log" 2>&1 &
	mk=$!
	pids=()
	for v in "${variants[@]}"; do
		IFS='|' read -r name flags _ <<<"$v"
		# shellcheck disable=SC2086
		$nv $flags "$src" -o "$dev/$name.so" >"$logs/ptxas_$name.log" 2>&1 &
		pids+=($!)
	done
	$nv problems/common/baselines/cublaslt_gemm_bf16.cu -o "$dev/cublaslt.so" -lcublasLt -lcublas >"$logs/ptxas_cublaslt.log" 2>&1 &
	pids+=($!)
	wait "${pids[@]}"
	wait $mk || { note "make: FAILED (see logs/make.log)"; status=1; }
	for v in "${variants[@]}" "cublaslt||"; do
		IFS='|' read -r name _ _ <<<"$v"
		if [ -f "$dev/$name.so" ]; then
			[ "$name" = v2 ] && note "build v2: ok, registers/spill stores per kernel: $(awk '/Compiling entry/ {k = $0; sub(/.*gemm_/, "", k); sub(/kernel.*/, "", k); sub(/EEEvPK.*/, "", k)} /spill stores/ {s = $5} /Used [0-9]+ registers/ {printf "%s%s/%s ", k, $5, s}' "$logs/ptxas_$name.log")"
		else
			note "build $name: FAILED (see logs/ptxas_$name.log)"
			tail -20 "$logs/ptxas_$name.log"
			status=1
		fi
	done
	note "build: done at $(($(date +%s) - t0)) s"
fi

# the eval step's build (solution, baseline, oracle module) runs on the CPU while the check step uses the GPU
if has eval && [ -x build/solforge ]; then
	build/solforge eval "problems/llama/$EVAL_PROBLEM" "problems/llama/$EVAL_PROBLEM/solutions/fast.cu" --backend cuda \
		--prepare-only >"$logs/prepare.log" 2>&1 &
	prep=$!
fi

if has sass && [ -f "$dev/v2.so" ]; then
	cuobjdump --dump-sass "$dev/v2.so" >"$logs/sass_v2.txt" 2>&1
	n=$(grep -c HGMMA "$logs/sass_v2.txt")
	note "sass v2: HGMMA $n UTMALDG $(grep -c UTMALDG "$logs/sass_v2.txt") HMMA $(grep -c 'HMMA\.' "$logs/sass_v2.txt") LDG.E.NA.128 $(grep -c 'LDG.E.NA.128' "$logs/sass_v2.txt")"
	[ "${n:-0}" -gt 0 ] || { note "sass: no HGMMA in v2"; status=1; }
fi

if has check; then
	sols=()
	for v in "${variants[@]}"; do
		IFS='|' read -r name _ maxm <<<"$v"
		[ "$name" != red ] && [ -f "$dev/$name.so" ] && sols+=(--sol "$name=$dev/$name.so${maxm:+@$maxm}")
	done
	timeout -s KILL "$CHECK_TIMEOUT" python3 tools/gemm_dev/gemm_check.py --ref "cublasLt=$dev/cublaslt.so" \
		"${sols[@]}" --ms "$MS" >"$logs/check.log" 2>&1
	rc=$?
	nfail=$(grep -c ' FAIL' "$logs/check.log")
	nok=$(grep -c ' ok ' "$logs/check.log")
	if [ $rc = 0 ] && [ "$nok" -gt 0 ]; then
		note "check: all $nok passed (every variant), at $(($(date +%s) - t0)) s"
	else
		note "check: rc $rc, $nok ok, $nfail FAILED$([ $rc = 137 ] && echo ' (killed by timeout: hang or slow?)')"
		grep -A1 ' FAIL' "$logs/check.log" | head -12
		tail -3 "$logs/check.log"
		status=1
	fi
fi

if has check && [ -f "$dev/red.so" ]; then
	timeout -s KILL 35 python3 tools/gemm_dev/gemm_check.py --ref "cublasLt=$dev/cublaslt.so" \
		--sol "red=$dev/red.so" --ms "${MS_MID:-77,128,256,512}" >"$logs/check_red.log" 2>&1
	rc=$?
	note "check red: rc $rc$([ $rc = 137 ] && echo ' (killed by timeout: hang?)'), $(grep -c ' ok ' "$logs/check_red.log") ok, $(grep -c ' FAIL' "$logs/check_red.log") FAILED (candidate: not counted in the status)"
fi

evaltab=""
if has eval; then
	[ -n "${prep:-}" ] && wait "$prep"
	now=$(($(date +%s) - t0))
	if [ ! -x build/solforge ]; then
		note "eval: skipped (no build/solforge)"
		status=1
	elif [ $now -gt 125 ]; then
		note "eval: skipped (time, ${now}s used)"
	else
		timeout -s KILL 40 build/solforge eval "problems/llama/$EVAL_PROBLEM" "problems/llama/$EVAL_PROBLEM/solutions/fast.cu" \
			--backend cuda --only -m1 --rounds 1 --budget-ms 200 --timeout 30 >"$logs/eval.log" 2>&1
		rc=$?
		note "eval $EVAL_PROBLEM (M 1, 16, 128, 1024): rc $rc, $(grep -c '^gemm_bf16.* PASSED ' "$logs/eval.log") workloads PASSED"
		evaltab=$(sed -n '/^workload /,$p' "$logs/eval.log" | cut -c1-110)
		[ $rc = 0 ] || status=1
	fi
fi

table=""
if [ -f "$logs/check.log" ]; then
	cat "$logs/check.log" "$logs"/check_red.log >"$logs/check_all.log" 2>/dev/null
	table=$(python3 tools/gemm_dev/gemm_table.py "$logs/check_all.log" --default v2)
fi
echo "$table" >"$logs/table.txt"
{
	printf '%s\n' "${summary[@]}"
	[ -n "$evaltab" ] && echo "$evaltab"
	echo "$table"
	echo "total $(($(date +%s) - t0)) s, status $status"
} >"$out/summary.txt"
tar -czf "$out/gpu_gemm_logs.tgz" -C "$out" logs && rm -rf "$logs"
echo "-------- gpu_gemm summary --------"
cat "$out/summary.txt"
exit $status
