#!/usr/bin/env bash
# gpu_rmsbench.sh - issue 7, the t16 experiment: why torch.compile's RMSNorm (h4096) beats fast.cu at 16
# rows (problems/llama/rmsnorm_h4096/solutions/NOTES.md, "Session 8: the t16 experiment"). One call,
# ~1.5-2.5 min, on an H200:
#   1. builds tools/membench/rmsnorm.cu (nvcc, sm_90a; it includes fast.cu itself for variant 0) as a
#      .so for the python driver and as the stand-alone program, side by side; the SASS of every
#      kernel (cuobjdump) with its instruction count
#   2. the stand-alone program on every variant at T 16 (its own C harness: events, cudaMemset L2
#      flush, median of 30): a cross-check of step 3 without torch
#   3. tools/membench/rmsbench.py: every variant, torch.compile of the definition's reference, of the
#      evaluator's norm.py baseline, F.rms_norm and the eager reference at T = SIZES (default
#      16,1,64,256: the key size first, so a cut run still has it); validation first (3 seeds), then
#      device time (CUPTI, L2 flushed), the same with the code warm, the same with only the weight in
#      L2, events, and a CUDA graph
#   4. the Triton kernels inductor built (kept cache): their SASS instruction counts, launch metadata
#      and load / store qualifiers
# Logs: $OUT/rms_logs.tgz and $OUT/summary.txt (default OUT build/gpu-rmsbench); the short table
# (variant, T, device us, code-warm us, weight-in-L2 us, event us, graph us, torch.compile / x, v7 / x)
# is printed last.
# Env: SIZES, ITERS (>= 30), NORMPY=0 (leave out norm.py's torch.compile: one compile per T less),
# LIMIT_S (default 165: the whole script's budget; step 3 gets what is left). Exit 0 when every
# implementation passed validation. Run by the lead as: tools/gpu_round.sh tools/gpu_rmsbench.sh:180
set -u
cd "$(dirname "$0")/.." || exit 2
out=${OUT:-build/gpu-rmsbench}
logs=$out/rms_logs
mkdir -p "$logs" build/membench
sizes=${SIZES:-16,1,64,256}
iters=${ITERS:-30}
limit=${LIMIT_S:-165}
t0=$(date +%s)
status=0
elapsed() { echo $(($(date +%s) - t0)); }
note() { echo "$*" >>"$logs/times.txt"; }
: >"$logs/times.txt"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
CUOBJDUMP=$(command -v cuobjdump || echo "$(dirname "$NVCC")/cuobjdump")
# shellcheck disable=SC2054 # the -gencode value holds a comma
NV=("$NVCC" -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Itools/membench -Iinclude)
{
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
	"$NVCC" --version | tail -1
	python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)' 2>&1
} >"$logs/env.txt" 2>&1

# sass_counts FILE...: "instructions function" per kernel of the cuobjdump -sass listing on stdin
sass_counts() {
	awk '/Function : /{f=$3} /^[ \t]+\/\*[0-9a-f][0-9a-f][0-9a-f][0-9a-f]\*\//{if (f != "") n[f]++} END{for (k in n) print n[k], k}' | sort -k2
}

# 1. builds, side by side
"${NV[@]}" -shared -Xcompiler -fPIC -Xptxas -v tools/membench/rmsnorm.cu -o build/membench/rmsnorm.so \
	>"$logs/build_so.log" 2>&1 &
so_pid=$!
"${NV[@]}" -DMB_MAIN tools/membench/rmsnorm.cu -o build/membench/rmsnorm >"$logs/build_main.log" 2>&1 &
main_pid=$!
if ! wait "$so_pid"; then
	echo "gpu_rmsbench: the bench build failed"
	tail -20 "$logs/build_so.log"
	tar -C "$out" -czf "$out/rms_logs.tgz" rms_logs
	exit 1
fi
wait "$main_pid" || note "stand-alone build failed (build_main.log)"
note "build: $(elapsed) s"
if [ -x "$CUOBJDUMP" ]; then
	"$CUOBJDUMP" -sass build/membench/rmsnorm.so >"$logs/rmsnorm.sass" 2>&1
	sass_counts <"$logs/rmsnorm.sass" >"$logs/sass_counts.txt"
fi

# 2. the stand-alone harness at T 16
if [ -x build/membench/rmsnorm ]; then
	timeout 25 build/membench/rmsnorm -1 16 >"$logs/standalone.txt" 2>&1
	note "standalone: rc=$? ($(elapsed) s)"
fi

# 3. the bench
export TORCHINDUCTOR_CACHE_DIR=$PWD/build/membench/inductor-rms TRITON_CACHE_DIR=$PWD/build/membench/inductor-rms/triton
rm -rf "$TORCHINDUCTOR_CACHE_DIR"
left=$((limit - $(elapsed) - 12))
[ "$left" -gt 20 ] || left=20
normpy=()
[ "${NORMPY:-1}" = 0 ] && normpy=(--no-normpy)
timeout "$left" python3 tools/membench/rmsbench.py --lib build/membench/rmsnorm.so --sizes "$sizes" --iters "$iters" \
	${normpy[@]+"${normpy[@]}"} --out "$logs" >"$logs/rmsbench.txt" 2>"$logs/rmsbench.err"
rc=$?
[ $rc = 0 ] || status=1
note "rmsbench: rc=$rc (limit $left s; $(elapsed) s)"

# 4. the Triton kernels inductor built
find "$TORCHINDUCTOR_CACHE_DIR" -type f \( -name '*.ptx' -o -name '*.json' -o -name '*.py' \) -size -400k 2>/dev/null |
	tar -cf "$logs/inductor_cache.tar" -T - 2>/dev/null
find "$TORCHINDUCTOR_CACHE_DIR" -name '*.ptx' -print0 2>/dev/null | while IFS= read -r -d '' f; do
	echo "== $f: $(grep -o '\.maxntid [0-9, ]*' "$f" | head -1)"
	grep -oE '(ld|st)\.(global|shared)[a-zA-Z0-9_:.]*|bar\.sync|div\.[a-z.]*f32|rsqrt[a-z.]*' "$f" | sort | uniq -c
done >"$logs/triton_ptx_ops.txt" 2>&1
if [ -x "$CUOBJDUMP" ]; then
	find "$TORCHINDUCTOR_CACHE_DIR" -name '*.cubin' -print0 2>/dev/null | while IFS= read -r -d '' f; do
		echo "== $f"
		"$CUOBJDUMP" -sass "$f" 2>&1
	done >"$logs/triton.sass"
	sass_counts <"$logs/triton.sass" >>"$logs/sass_counts.txt"
fi

{
	echo "gpu_rmsbench ($(elapsed) s):"
	cat "$logs/times.txt"
	grep -h '^FAIL\|^ERROR' "$logs/rms.log" 2>/dev/null
	tail -3 "$logs/rmsbench.err" 2>/dev/null
	echo
	echo "== SASS instructions per kernel (ours, then inductor's)"
	cat "$logs/sass_counts.txt" 2>/dev/null
	echo
	echo "== stand-alone harness, T 16 (events, cudaMemset flush, median of 30)"
	cat "$logs/standalone.txt" 2>/dev/null
	echo
	grep -h '^rmsbench:' "$logs/rmsbench.txt" 2>/dev/null
	echo "== short table (us per call, medians; cupti = device time, L2 flushed: the measure of every row;"
	echo "   warm = the same with the code warm (one untimed run on other buffers first); wl2 = the same with only"
	echo "   the weight read back into L2 first; event = CUDA events;"
	echo "   graph = per call in a CUDA graph of 10; tc/x = torch.compile cupti / the row's, v7/x = v7's / the row's)"
	cat "$logs/rms_short.txt" 2>/dev/null
} >"$out/summary.txt"
tar -C "$out" -czf "$out/rms_logs.tgz" rms_logs && rm -rf "$logs"
cat "$out/summary.txt"
exit $status
