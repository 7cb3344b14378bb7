#!/usr/bin/env bash
# gpu_memB.sh - issue 7 part B on an H200: builds solforge, evaluates every memory-bound fast.cu of
# part B (RoPE x2, silu_and_mul, geglu_tanh, both MoE routers, NVFP4 quantize, causal_conv1d_silu)
# and its naive.cu on the cuda backend on every workload, times torch eager baselines of the same ops
# (tools/memB_torch_baselines.py), and prints a table: problem, workload, bytes, T_k, T_sol, TB/s, the
# fraction of the measured copy bandwidth, the SOL score against the best torch time (naive.cu's where
# torch has none; the definitions list no library baseline) and the status. Torch is timed with
# triton's do_bench (events, L2 flushed), solforge with CUPTI device time: at decode sizes the torch
# numbers include launch gaps, so they flatter fast.cu there.
#
# Usage: tools/gpu_memB.sh            (OUT=folder for logs; default build/gpu-memB)
#   ROUNDS=2 BUDGET_MS=300            fast.cu settings (naive.cu: 1 round, 50 ms, only while the
#                                     DEADLINE_S=220 seconds since the start have not passed)
#   PROBS="llama/silu_and_mul_i14336 ..."  subset;  TORCH=0 skips the torch baselines
# Logs: $OUT/memB_logs.tgz (traces as JSON lines, build and eval logs) and $OUT/summary.txt.
set -u
cd "$(dirname "$0")/.." || exit 1
out=${OUT:-build/gpu-memB}
logs=$out/memB_logs
mkdir -p "$logs"
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache}
S=build/solforge
rounds=${ROUNDS:-2}
budget=${BUDGET_MS:-300}
probs=${PROBS:-"llama/rope_llama31_h32_kv8_d128 flux/flux_rope_3axis_h24_d128 llama/silu_and_mul_i14336
gemma/geglu_tanh_h5376_i21504 qwen/moe_router_softmax_topk_e128_k8 deepseek/moe_grouped_topk_routing_e256_g8_k8
qwen/nvfp4_quantize_h2048 mamba/causal_conv1d_silu_d4_mamba2"}
t0=$(date +%s)

if ! make -j"$(nproc)" >"$logs/build.log" 2>&1; then
	tail -30 "$logs/build.log"
	echo "gpu_memB: build failed"
	exit 1
fi
{
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
	nvcc --version | tail -1
} >"$logs/env.txt" 2>&1

# register / spill report of every fast.cu (what -O3 -gencode sm_90a gives eval), in the background
for p in $probs; do
	nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinclude -Xptxas -v -c \
		"problems/$p/solutions/fast.cu" -o /dev/null 2>&1 | sed "s|^|$p: |"
done >"$logs/ptxas.txt" 2>&1 &
ptxas_pid=$!

# compile every oracle module and solution in parallel (nvcc is the slow part)
for p in $probs; do
	for s in fast naive; do echo "problems/$p problems/$p/solutions/$s.cu"; done
done | xargs -P "$(nproc)" -L 1 sh -c "$S eval \$0 \$1 --backend cuda --prepare-only >/dev/null 2>&1" || true
wait "$ptxas_pid"
echo "build+compile: $(($(date +%s) - t0)) s" >"$logs/times.txt"

# copy ceiling: memA's per-size option when eval has it; --calibrate (a 2^28-element copy) always, which
# adds sol_measured_ms = bytes / measured copy rate to every trace
# (CEIL_FLAG overrides the auto-detected flag; CEIL_FLAG=none drops it)
ceil_flag=${CEIL_FLAG:-}
if [ -z "$ceil_flag" ] && $S eval --help 2>&1 | grep -q -- '--copy-ceiling'; then
	ceil_flag="--copy-ceiling"
fi
[ "$ceil_flag" = none ] && ceil_flag=""
cal_flag="--calibrate"
for p in $probs; do
	n=$(basename "$p")
	for _ in 1 2; do
		# shellcheck disable=SC2086
		timeout 120 $S eval "problems/$p" "problems/$p/solutions/fast.cu" --backend cuda --rounds "$rounds" \
			--budget-ms "$budget" $ceil_flag $cal_flag --json -o "$logs/$n.fast.jsonl" \
			>/dev/null 2>"$logs/$n.fast.err"
		echo "$n fast rc=$? $(($(date +%s) - t0)) s $cal_flag" >>"$logs/times.txt"
		# a failed calibration aborts eval: go on without it
		if [ -n "$cal_flag" ] && grep -q 'calibration failed' "$logs/$n.fast.err"; then
			cat "$logs/$n.fast.err" >>"$logs/calibration.txt"
			cal_flag=""
			continue
		fi
		break
	done
	grep -h '^calibration:' "$logs/$n.fast.err" >>"$logs/calibration.txt"
done

if [ "${TORCH:-1}" = 1 ]; then
	# shellcheck disable=SC2086
	timeout 100 python3 tools/memB_torch_baselines.py $probs >"$logs/torch.jsonl" 2>"$logs/torch.err"
	echo "torch rc=$? $(($(date +%s) - t0)) s" >>"$logs/times.txt"
fi

# naive.cu for comparison, while the time budget (DEADLINE_S after start, default 220) lasts
for p in $probs; do
	n=$(basename "$p")
	if [ $(($(date +%s) - t0)) -ge "${DEADLINE_S:-220}" ]; then
		echo "$n naive skipped: time budget" >>"$logs/times.txt"
		continue
	fi
	timeout 60 $S eval "problems/$p" "problems/$p/solutions/naive.cu" --backend cuda --rounds 1 --budget-ms 50 \
		--min-iters 5 --json -o "$logs/$n.naive.jsonl" >/dev/null 2>"$logs/$n.naive.err"
	echo "$n naive rc=$? $(($(date +%s) - t0)) s" >>"$logs/times.txt"
done

# shellcheck disable=SC2086
python3 tools/memB_summary.py "$logs" $probs >"$out/summary.txt"
tar -C "$out" -czf "$out/memB_logs.tgz" memB_logs && rm -rf "$logs"
echo "total $(($(date +%s) - t0)) s"
cat "$out/summary.txt"
