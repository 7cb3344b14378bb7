#!/usr/bin/env bash
# gpu_gemm.sh - one-shot GPU check of the from-scratch bf16 GEMM (problems/common/kernels/gemm_bf16_sm90.cu)
# on an H200, in well under 4 minutes. Full logs go to $OUT (the device tool) or build/gpu-gemm, packed
# into gpu_gemm_logs.tgz beside summary.txt; a short table is printed last.
#
#   build    the two variants of the solution as plain .so files (wgmma: SF_GEMM_LARGE=2; mma: the mma.sync
#            path, SF_GEMM_LARGE=1, the v1 default) plus the cuBLASLt baseline, with -Xptxas -v
#   sass     cuobjdump: HGMMA / UTMALDG / HMMA counts of each variant (the large-M path must show HGMMA)
#   check    tools/gemm_dev/gemm_check.py: correctness of each variant against an fp32 torch reference on the
#            4 shapes x M in $MS (odd M included), timed beside cuBLASLt (L2 flushed, median), each variant
#            in its own process under `timeout` (a hung kernel costs at most $VARIANT_TIMEOUT s)
#   eval     build/solforge eval of solutions/fast.cu (the default variant) and of the wgmma variant (a
#            generated solution.json manifest with cuda_cflags -DSF_GEMM_LARGE=2) on $EVAL_PROBLEMS, with
#            the cuBLASLt baseline in the same run (--rounds 2 --budget-ms 300), while time is left
# STEPS selects steps (default: all). Exit status 0 when every step passed.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu-gemm}
mkdir -p "$out"
logs=$out/logs
mkdir -p "$logs"
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache}
steps=${STEPS:-build sass check eval}
MS=${MS:-1,2,3,4,8,16,32,33,64,77,128,256,512,1000,1024,2048,4096,5000,8192}
VARIANT_TIMEOUT=${VARIANT_TIMEOUT:-75}
EVAL_PROBLEMS=${EVAL_PROBLEMS:-gemm_bf16_n4096_k4096 gemm_bf16_n28672_k4096}
has() { case " $steps " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
summary=()
evals=()
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

{
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv
	nvcc --version | tail -2
} >"$logs/env.txt" 2>&1

if has build; then
	make -j"$(nproc)" >"$logs/make.log" 2>&1 &
	mk=$!
	$nv -DSF_GEMM_LARGE=2 "$src" -o "$dev/wgmma.so" >"$logs/ptxas_wgmma.log" 2>&1 &
	p1=$!
	$nv -DSF_GEMM_LARGE=1 "$src" -o "$dev/mma.so" >"$logs/ptxas_mma.log" 2>&1 &
	p2=$!
	$nv problems/common/baselines/cublaslt_gemm_bf16.cu -o "$dev/cublaslt.so" -lcublasLt -lcublas >"$logs/ptxas_cublaslt.log" 2>&1 &
	p3=$!
	wait $p1 $p2 $p3
	wait $mk || { note "make: FAILED (see logs/make.log)"; status=1; }
	for v in wgmma mma cublaslt; do
		if [ -f "$dev/$v.so" ]; then
			note "build $v: ok, registers/spill stores per kernel: $(awk '/Compiling entry/ {k = $0; sub(/.*gemm_/, "", k); sub(/kernel.*/, "", k)} /spill stores/ {s = $5} /Used [0-9]+ registers/ {printf "%s%s/%s ", k, $5, s}' "$logs/ptxas_$v.log")"
		else
			note "build $v: FAILED (see logs/ptxas_$v.log)"
			tail -20 "$logs/ptxas_$v.log"
			status=1
		fi
	done
fi

# the eval step's builds (solution, baseline, oracle module) run on the CPU while the check step uses the GPU
if has eval; then
	# the wgmma variant as a manifest: the same sources, compiled with -DSF_GEMM_LARGE=2
	python3 - "$dev/wgmma_solution.json" <<'PY'
import json, sys
d = "problems/common/kernels/"
srcs = [{"path": "fast.cu", "content": '#include "gemm_bf16_sm90.cu"\n'}]
for f in ["gemm_bf16_sm90.cu", "gemm_bf16_sm90_smallm.cuh", "gemm_bf16_sm90_mma.cuh", "gemm_bf16_sm90_wgmma.cuh"]:
    srcs.append({"path": f, "content": open(d + f).read()})
json.dump({"name": "fast_wgmma", "spec": {"language": "cuda", "entry_point": "fast.cu::run",
           "compile_options": {"cuda_cflags": ["-DSF_GEMM_LARGE=2"]}}, "sources": srcs}, open(sys.argv[1], "w"))
PY
	for p in $EVAL_PROBLEMS; do
		for v in default wgmma; do
			sol=problems/llama/$p/solutions/fast.cu
			[ $v = wgmma ] && sol=$dev/wgmma_solution.json
			build/solforge eval "problems/llama/$p" "$sol" --backend cuda --prepare-only >"$logs/prepare_${p}_$v.log" 2>&1 &
		done
	done
fi

if has sass; then
	for v in wgmma mma; do
		if [ -f "$dev/$v.so" ]; then
			cuobjdump --dump-sass "$dev/$v.so" >"$logs/sass_$v.txt" 2>&1
			note "sass $v: HGMMA $(grep -c HGMMA "$logs/sass_$v.txt") UTMALDG $(grep -c UTMALDG "$logs/sass_$v.txt") HMMA $(grep -c 'HMMA\.' "$logs/sass_$v.txt")"
		fi
	done
	n=$(grep -c HGMMA "$logs/sass_wgmma.txt" 2>/dev/null)
	[ "${n:-0}" -gt 0 ] || { note "sass: no HGMMA in the wgmma variant"; status=1; }
fi

if has check; then
	for v in mma wgmma; do
		[ -f "$dev/$v.so" ] || continue
		timeout -s KILL "$VARIANT_TIMEOUT" python3 tools/gemm_dev/gemm_check.py --ref "cublasLt=$dev/cublaslt.so" \
			--sol "$v=$dev/$v.so" --ms "$MS" >"$logs/check_$v.log" 2>&1
		rc=$?
		nfail=$(grep -c ' FAIL' "$logs/check_$v.log")
		nok=$(grep -c ' ok ' "$logs/check_$v.log")
		if [ $rc = 0 ]; then
			note "check $v: all $nok passed"
		else
			note "check $v: rc $rc, $nok ok, $nfail FAILED$([ $rc = 137 ] && echo ' (killed by timeout: hang?)')"
			grep -A1 ' FAIL' "$logs/check_$v.log" | head -12
			tail -3 "$logs/check_$v.log"
			status=1
		fi
	done
fi

if has eval; then
	wait # the background builds
	for p in $EVAL_PROBLEMS; do
		for v in default wgmma; do
			now=$(($(date +%s) - t0))
			if [ $now -gt 170 ]; then
				note "eval $p $v: skipped (time, ${now}s used)"
				continue
			fi
			sol=problems/llama/$p/solutions/fast.cu
			[ $v = wgmma ] && sol=$dev/wgmma_solution.json
			timeout -s KILL 100 build/solforge eval "problems/llama/$p" "$sol" --backend cuda \
				--rounds 2 --budget-ms 300 --timeout 60 >"$logs/eval_${p}_$v.log" 2>&1
			rc=$?
			note "eval $p $v: rc $rc, $(grep -c '^gemm_bf16.* PASSED ' "$logs/eval_${p}_$v.log") workloads PASSED"
			tab=$(sed -n '/^workload /,$p' "$logs/eval_${p}_$v.log" | sed "s/^/$v  /" | cut -c1-110)
			[ -n "$tab" ] && evals+=("$tab")
			[ $rc = 0 ] || status=1
		done
	done
fi

# the compact table: per variant and shape, the geomean speedup over cuBLASLt by M class
table=$(python3 - "$logs" <<'EOF'
import glob, math, os, sys
rows = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "check_*.log"))):
    for line in open(f):
        p = line.split()
        if len(p) != 10 or p[3] != "ok":
            continue
        try:
            shape, M, sol, sp, bw = p[0], int(p[1]), p[2], float(p[7]), float(p[9])
        except ValueError:
            continue
        if sp != sp:
            continue
        cls = "M<=16" if M <= 16 else ("M<=512" if M <= 512 else "M>512")
        rows.setdefault((sol, shape, cls), []).append((sp, bw))
print("%-6s %-11s %-7s %8s %8s %7s" % ("sol", "shape", "class", "geo_x", "min_x", "minTB/s"))
for (sol, shape, cls), v in sorted(rows.items()):
    g = math.exp(sum(math.log(x[0]) for x in v) / len(v))
    print("%-6s %-11s %-7s %8.3f %8.3f %7.2f" % (sol, shape, cls, g, min(x[0] for x in v), min(x[1] for x in v)))
EOF
)
echo "$table" >"$logs/table.txt"
{
	printf '%s\n' "${summary[@]}"
	[ ${#evals[@]} -gt 0 ] && printf '%s\n' "${evals[@]}"
	echo "$table"
	echo "total $(($(date +%s) - t0)) s, status $status"
} >"$out/summary.txt"
tar -czf "$out/gpu_gemm_logs.tgz" -C "$out" logs && rm -rf "$logs"
echo "-------- gpu_gemm summary --------"
cat "$out/summary.txt"
exit $status
