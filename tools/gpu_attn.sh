#!/usr/bin/env bash
# gpu_attn.sh - one H200 run for the GQA paged attention solutions (issue 9): builds solforge, then
# evaluates solutions/fast.cu of the four problems gqa_paged_{prefill_causal,decode}_h32_kv8_d128_ps{1,16}
# on every bundled workload (timed) and on held-out batch compositions (tools/attn_heldout.py:
# correctness first, timed lightly), adds PyTorch SDPA on contiguous K/V as a reference point, and
# prints a table last: workload, status, T_k, T_sol, TFLOP/s (prefill) or TB/s of the referenced K/V
# bytes (decode), SOL score. Target: well under 4 minutes.
#
# env: SOLUTION (default fast.cu), ROUNDS (2), BUDGET_MS (300), HELDOUT=0 skips the held-out
# compositions, TORCH=0 skips the SDPA reference. Logs: $OUT (device tool) or build/gpu-attn; with
# $OUT set they are packed into $OUT/gpu_attn_logs.tgz beside $OUT/summary.txt.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu-attn}
mkdir -p "$out"
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache}
sol=${SOLUTION:-fast.cu}
rounds=${ROUNDS:-2}
budget=${BUDGET_MS:-300}
S=build/solforge
t0=$(date +%s)

if ! make -j"$(nproc)" >"$out/build.log" 2>&1; then
	tail -30 "$out/build.log"
	echo "gpu_attn: build failed"
	exit 1
fi
{
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv
	nvcc --version | tail -2
} >"$out/env.txt" 2>&1

names="gqa_paged_prefill_causal_h32_kv8_d128_ps1 gqa_paged_prefill_causal_h32_kv8_d128_ps16
gqa_paged_decode_h32_kv8_d128_ps1 gqa_paged_decode_h32_kv8_d128_ps16"
held=build/attn-heldout
python3 tools/attn_heldout.py "$held" >"$out/heldout.txt" 2>&1

# build every oracle module and solution in parallel (register/spill report of the solutions too)
for n in $names; do
	echo "problems/llama/$n problems/llama/$n/solutions/$sol"
	[ "${HELDOUT:-1}" = 0 ] || echo "$held/$n problems/llama/$n/solutions/$sol"
done | xargs -P "$(nproc)" -L 1 sh -c "$S eval \$0 \$1 --backend cuda --prepare-only >/dev/null 2>&1" || true
for n in gqa_paged_prefill_causal_h32_kv8_d128_ps1 gqa_paged_decode_h32_kv8_d128_ps1; do
	nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinclude -Xptxas -v -c \
		"problems/llama/$n/solutions/$sol" -o "$out/$n.o" >"$out/ptxas_$n.txt" 2>&1
	rm -f "$out/$n.o"
done
echo "gpu_attn: built in $(($(date +%s) - t0)) s" >&2

traces=()
for n in $names; do
	timeout 200 $S eval "problems/llama/$n" "problems/llama/$n/solutions/$sol" --backend cuda \
		--rounds "$rounds" --budget-ms "$budget" --json >"$out/$n.jsonl" 2>"$out/$n.err"
	traces+=("$out/$n.jsonl")
	echo "gpu_attn: $n done at $(($(date +%s) - t0)) s" >&2
done
if [ "${HELDOUT:-1}" != 0 ]; then
	for n in $names; do
		timeout 120 $S eval "$held/$n" "problems/llama/$n/solutions/$sol" --backend cuda \
			--rounds 1 --budget-ms 100 --json >"$out/heldout_$n.jsonl" 2>"$out/heldout_$n.err"
		traces+=("$out/heldout_$n.jsonl")
	done
	echo "gpu_attn: held-out done at $(($(date +%s) - t0)) s" >&2
fi
if [ "${TORCH:-1}" != 0 ]; then
	timeout 90 python3 tools/attn_torch_ref.py >"$out/torch_sdpa.txt" 2>&1
fi

(
	echo "gpu_attn ($sol, $(($(date +%s) - t0)) s; $(sed -n 2p "$out/env.txt"))"
	python3 tools/attn_table.py "${traces[@]}"
	rc=$?
	echo "registers / spill stores per kernel (ptxas):"
	awk '/Function properties for/ {k = $NF} /spill stores/ {sp = $5} /Used [0-9]+ registers/ {print "  " k ": " $5 " registers, " sp " bytes spilled"}' \
		"$out"/ptxas_*.txt
	if [ -s "$out/torch_sdpa.txt" ]; then
		echo "torch SDPA, contiguous K/V (reference):"
		sed 's/^/  /' "$out/torch_sdpa.txt" | tail -12
	fi
	exit $rc
) >"$out/summary.txt"
status=$?
cat "$out/summary.txt"
# the device tool brings back at most 8 files: pack the logs into one archive beside the summary
if [ -n "${OUT:-}" ]; then
	tar czf "$out/../gpu_attn_logs.tgz" -C "$out" --exclude=summary.txt . 2>/dev/null &&
		find "$out" -mindepth 1 ! -name summary.txt -delete &&
		mv "$out/../gpu_attn_logs.tgz" "$out/"
fi
exit $status
