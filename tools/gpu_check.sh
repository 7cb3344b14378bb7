#!/usr/bin/env bash
# gpu_check.sh - every GPU-side check, on a machine with an NVIDIA GPU. Prints a short summary last;
# full logs go to $OUT (the device tool's output folder) or build/gpu-check.
#
#   env       GPU, driver, CUDA, clocks (recorded with every result)
#   oracles   solforge oracle-check: GPU-compiled oracles agree with the CPU ones on small workloads
#   e2e       tests/gpu/cuda_e2e.sh: the cuda backend end to end, deliberately wrong solutions included
#   dobench   solforge's time vs triton.testing.do_bench on the same call: a cuBLASLt GEMM and a copy
#   spread    the same solution evaluated 3 times: spread of the medians
#   bench     wall time of a full 16-workload evaluation (cache hit) and of the compile-cache hit path
#   suite     solforge suite --backend cuda over $SUITE_DIRS (default: every problem)
# STEPS selects steps (default: all, in this order). Exit status 0 when every step passed.
# When $OUT is set (the device tool), the logs end up packed in $OUT/gpu_check_logs.tgz beside
# $OUT/summary.txt, since the tool brings back at most 8 files.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu-check}
mkdir -p "$out"
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache}
steps=${STEPS:-env oracles e2e dobench spread bench suite}
S=build/solforge
summary=()
status=0
has() { case " $steps " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
note() {
	summary+=("$1")
	echo "== $1"
}

t0=$(date +%s)
if ! make -j"$(nproc)" >"$out/build.log" 2>&1; then
	tail -30 "$out/build.log"
	echo "gpu_check: build failed"
	exit 1
fi

if has env; then
	{
		nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,persistence_mode,compute_mode --format=csv
		nvcc --version | tail -2
		python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)' 2>&1
		uname -r
	} >"$out/env.txt" 2>&1
	note "env: $(sed -n 2p "$out/env.txt")"
fi

# build every module and solution in parallel first (nvcc is slow; the GPU is not needed for it)
problems=$(ls -d problems/*/*/ tools/calibration/*/ | sed 's:/$::' | while read -r p; do [ -f "$p/definition.json" ] && echo "$p"; done)
for p in $problems; do
	for s in "$p"/solutions/*.cu; do [ -f "$s" ] && echo "$p $s"; done
done | xargs -P "$(nproc)" -L 1 sh -c "$S eval \$0 \$1 --backend cuda --prepare-only >/dev/null 2>&1" || true

if has oracles; then
	$S oracle-check $problems >"$out/oracle_check.log" 2>&1
	rc=$?
	note "oracles: $(tail -1 "$out/oracle_check.log")"
	[ $rc = 0 ] || status=1
fi

if has e2e; then
	tests/gpu/cuda_e2e.sh >"$out/cuda_e2e.log" 2>&1
	rc=$?
	note "cuda e2e: $(tail -1 "$out/cuda_e2e.log")"
	[ $rc = 0 ] || status=1
fi

so_of() { $S eval "$1" "$2" --backend cuda --prepare-only 2>/dev/null | awk '/^solution/ {print $3}'; }

if has dobench; then
	G=problems/llama/gemm_bf16_n4096_k4096
	B=problems/common/baselines/cublaslt_gemm_bf16.cu
	C=tools/calibration/copy
	: >"$out/dobench.jsonl"
	python3 tools/dobench_crosscheck.py $S $G $B gemm_bf16_n4096_k4096-m4096 \
		'{"inputs": [[[4096, 4096], "bfloat16"], [[4096, 4096], "bfloat16"]], "outputs": [[[4096, 4096], "bfloat16"]]}' \
		"$(so_of $G $B)" >>"$out/dobench.jsonl" 2>"$out/dobench.err"
	python3 tools/dobench_crosscheck.py $S $C $C/solutions/copy.cu 'copy-n2^28' \
		'{"inputs": [[[268435456], "bfloat16"]], "outputs": [[[268435456], "bfloat16"]]}' \
		"$(so_of $C $C/solutions/copy.cu)" >>"$out/dobench.jsonl" 2>>"$out/dobench.err"
	r=$(python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
bad = [r for r in rows if "ratio" not in r or abs(r["ratio"] - 1) > 0.03]
for r in rows:
    print("%s %s: solforge %.4f ms, do_bench %.4f ms, ratio %.4f" % (r.get("problem","?").split("/")[-1], r.get("workload","?"), r.get("solforge_ms", float("nan")), r.get("do_bench_ms", float("nan")), r.get("ratio", float("nan"))) if "ratio" in r else "error: %s" % r)
print("PASS" if rows and not bad and len(rows) == 2 else "FAIL")' "$out/dobench.jsonl")
	echo "$r" >"$out/dobench.txt"
	note "dobench: $(echo "$r" | tr '\n' ';')"
	echo "$r" | tail -1 | grep -q PASS || status=1
fi

if has spread; then
	: >"$out/spread.txt"
	for pair in "problems/llama/gemm_bf16_n4096_k4096 problems/common/baselines/cublaslt_gemm_bf16.cu -m4096" \
		"tools/calibration/copy tools/calibration/copy/solutions/copy.cu n2^28" \
		"problems/llama/rmsnorm_h4096 problems/llama/rmsnorm_h4096/solutions/naive.cu -t4096"; do
		set -- $pair
		for i in 1 2 3; do
			$S eval "$1" "$2" --backend cuda --only "$3" --json --no-baseline 2>/dev/null |
				python3 -c 'import json,sys; [print(sys.argv[1], json.loads(l)["evaluation"]["performance"]["latency_ms"]) for l in sys.stdin if "latency_ms" in l]' "$1$3"
		done
	done >>"$out/spread.txt"
	r=$(python3 -c '
import sys, collections
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    k, v = l.split(); d[k].append(float(v))
ok = True
for k, v in d.items():
    s = (max(v) - min(v)) / sorted(v)[len(v)//2]
    ok &= s <= 0.02 and len(v) == 3
    print("%s: %s ms, spread %.2f%%" % (k.split("/")[-1], " ".join("%.4f" % x for x in v), 100 * s))
print("PASS" if ok and d else "FAIL")' "$out/spread.txt")
	echo "$r" >"$out/spread_summary.txt"
	note "spread: $(echo "$r" | tr '\n' ';')"
	echo "$r" | tail -1 | grep -q PASS || status=1
fi

if has bench; then
	C=tools/calibration/copy
	$S eval $C $C/solutions/copy.cu --backend cuda --only 'n2^' --no-baseline >/dev/null 2>&1
	a=$(date +%s.%N)
	$S eval $C $C/solutions/copy.cu --backend cuda --only 'n2^' --no-baseline -o "$out/copy16.jsonl" >"$out/copy16.txt" 2>&1
	b=$(date +%s.%N)
	$S eval $C $C/solutions/copy.cu --backend cuda --prepare-only >"$out/prepare.txt" 2>&1
	c=$(date +%s.%N)
	r=$(python3 -c "print('full 16-workload eval (compiled objects cached): %.1f s; compile-cache hit path (--prepare-only): %.3f s' % ($b - $a, $c - $b))")
	echo "$r" >"$out/bench.txt"
	note "bench: $r"
fi

if has suite; then
	dirs=${SUITE_DIRS:-problems}
	: >"$out/suite.txt"
	: >"$out/suite.jsonl"
	# one problem at a time, so that what finished is on disk even if the run is cut short
	for d in $(for x in $dirs; do find "$x" -name definition.json -printf '%h\n' | sort; done); do
		$S suite "$d" --backend cuda --rounds 2 --budget-ms 300 -o "$out/suite-part.jsonl" >>"$out/suite.txt" 2>>"$out/suite.err"
		[ $? = 0 ] || status=1
		cat "$out/suite-part.jsonl" >>"$out/suite.jsonl"
	done
	rm -f "$out/suite-part.jsonl"
	note "suite: $(grep -c '"PASSED"' "$out/suite.jsonl") workloads passed, $(grep -vc '"PASSED"' "$out/suite.jsonl") not"
fi

{
	echo "gpu_check summary ($(($(date +%s) - t0)) s):"
	for s in "${summary[@]}"; do echo "  $s"; done
} >"$out/summary.txt"
echo
cat "$out/summary.txt"
# the device tool brings back at most 8 files: pack the logs into one archive beside the summary
if [ -n "${PACK:-${OUT:-}}" ]; then
	tar czf "$out/../gpu_check_logs.tgz" -C "$out" --exclude=summary.txt . 2>/dev/null &&
		find "$out" -mindepth 1 ! -name summary.txt -delete &&
		mv "$out/../gpu_check_logs.tgz" "$out/"
fi
exit $status
