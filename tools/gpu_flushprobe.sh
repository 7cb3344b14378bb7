#!/usr/bin/env bash
# gpu_flushprobe.sh - the timing-parity probe on a GPU machine (docs/runner.md, "Timing parity"): builds
# tools/membench/rmsnorm.cu as build/membench/rmsnorm.so (fast.cu's RMSNorm kernel as variant 0) and
# runs tools/membench/flushprobe.py: does each L2 flush method evict a small buffer, and how do
# torch.compile's and fast.cu's RMSNorm at 16 rows time after no flush, the bridge's and the runner's.
#
#   tools/gpu_flushprobe.sh            (OUT: default build/gpu-flushprobe; ITERS default 40; ~30 s)
# Output: $OUT/summary.txt (the probe's table), $OUT/flushprobe_logs.tgz.
set -u
cd "$(dirname "$0")/.." || exit 2
out=${OUT:-build/gpu-flushprobe}
logs=$out/flushprobe_logs
mkdir -p "$logs" build/membench
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$NVCC" -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Itools/membench -Iinclude -shared -Xcompiler -fPIC \
	tools/membench/rmsnorm.cu -o build/membench/rmsnorm.so >"$logs/build_so.log" 2>&1 || {
	echo "gpu_flushprobe: the rmsnorm.so build failed"
	tail -20 "$logs/build_so.log"
	exit 1
}
# fast.cu as the evaluator builds a solution (src/core/backend_cuda.c: the shared CUDA runtime)
"$NVCC" -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Xcompiler -fPIC -shared -Iinclude -cudart shared \
	problems/llama/rmsnorm_h4096/solutions/fast.cu -o build/membench/rmsnorm_eval.so >"$logs/build_eval_so.log" 2>&1 || {
	echo "gpu_flushprobe: the evaluator-style build of fast.cu failed"
	tail -20 "$logs/build_eval_so.log"
	exit 1
}
python3 tools/membench/flushprobe.py --iters "${ITERS:-40}" --lib build/membench/rmsnorm.so \
	--abi build/membench/rmsnorm_eval.so --out "$logs" \
	>"$logs/stdout.txt" 2>&1
rc=$?
grep -v -e Warning -e _warn_once "$logs/stdout.txt" >"$out/summary.txt"
tar czf "$out/flushprobe_logs.tgz" -C "$out" flushprobe_logs
cat "$out/summary.txt"
exit $rc
