#!/usr/bin/env bash
# gpu_pfw.sh - one H200 run for the paged prefill's wgmma kernel (issue 9, prefill version 2): builds
# solforge, reports registers / spills of the variants of problems/common/kernels/gqa_paged_prefill_sm90.cu
# (-DSF_PREFILL_WGMMA=0: v1 mma.sync, 1: v2 wgmma, 2: v2o wgmma with the overlapped tile order) and the
# HGMMA count of the wgmma SASS, checks the wgmma variants on every workload of
# gqa_paged_prefill_causal_h32_kv8_d128_ps{1,16} and on the held-out compositions of tools/attn_heldout.py,
# times v1 on the bundled workloads, and prints a side-by-side table last (tools/pfw_table.py: workload,
# us per variant, the best wgmma variant's speedup over v1, TFLOP/s and T_sol/T_k).
#
# Jobs run in priority order (wgmma variants bundled, then held-out, then v1), on two GPUs at once when
# there are two (nvidia-h200-x2; default VARIANTS "1 2 0"), else one after another (default "2 0":
# the overlapped wgmma variant against v1; "1 0" for the plain one). Every eval is capped so the whole
# run ends by DEADLINE_S (default 225 s); a job cut by it shows as "not run" in the table.
# env: VARIANTS, DEADLINE_S, ROUNDS (1), BUDGET_MS (120), SOLUTION (fast.cu). Logs: $OUT
# (device tool) or build/gpu-pfw; with $OUT set they are packed into $OUT/gpu_pfw_logs.tgz beside
# $OUT/summary.txt.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu-pfw}
mkdir -p "$out"
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache}
sol=${SOLUTION:-fast.cu}
rounds=${ROUNDS:-1}
budget=${BUDGET_MS:-120}
deadline=${DEADLINE_S:-225}
S=${SOLFORGE_BIN:-build/solforge} # SOLFORGE_BIN: only for testing this script
t0=$(date +%s)
left() { echo $((deadline - ($(date +%s) - t0))); }
log() { echo "gpu_pfw: $* at $(($(date +%s) - t0)) s" >&2; }

if ! make -j"$(nproc)" >"$out/build.log" 2>&1; then
	tail -30 "$out/build.log"
	echo "gpu_pfw: build failed"
	exit 1
fi
{
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv
	nvcc --version | tail -2
} >"$out/env.txt" 2>&1
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
# the GPUs this script may use: those in CUDA_VISIBLE_DEVICES when it is set (tools/gpu_round.sh gives
# each lane one), else every GPU of the machine
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then IFS=, read -r -a devs <<<"$CUDA_VISIBLE_DEVICES"; else
	devs=($(seq 0 $((ngpu - 1))))
fi
ngpu=${#devs[@]}
log "built solforge ($ngpu GPUs)"

probs="gqa_paged_prefill_causal_h32_kv8_d128_ps1 gqa_paged_prefill_causal_h32_kv8_d128_ps16"
held=build/pfw-heldout
python3 tools/attn_heldout.py "$held" >"$out/heldout.txt" 2>&1

# ptxas report and SASS of both variants (the ps1 solution; ps16 includes the same source)
src=problems/llama/gqa_paged_prefill_causal_h32_kv8_d128_ps1/solutions/$sol
for v in 0 1 2; do # -DSF_PREFILL_WGMMA=v
	nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinclude -Xptxas -v -DSF_PREFILL_WGMMA=$v \
		-cubin "$src" -o "$out/prefill_$v.cubin" >"$out/ptxas_$v.txt" 2>&1 &
done
wait
hgmma="? (no cuobjdump)"
if command -v cuobjdump >/dev/null 2>&1; then
	cuobjdump -sass "$out/prefill_1.cubin" >"$out/sass_v2.txt" 2>&1
	cuobjdump -sass "$out/prefill_2.cubin" >"$out/sass_v2o.txt" 2>&1
	hgmma="$(grep -c HGMMA "$out/sass_v2.txt") / $(grep -c HGMMA "$out/sass_v2o.txt")"
fi
rm -f "$out"/prefill_*.cubin

# variants: 0 = v1 mma.sync, 1 = v2 wgmma, 2 = v2o wgmma with the overlapped tile order
label() { case $1 in 0) echo v1 ;; 1) echo v2 ;; *) echo v2o ;; esac; }
# default: all three on two GPUs; the overlapped wgmma variant and v1 on one (fits the deadline)
if [ "$ngpu" -ge 2 ]; then variants=${VARIANTS:-1 2 0}; else variants=${VARIANTS:-2 0}; fi

# compile every (problem, variant) in parallel first (the compile cache keys on the -D define)
for v in $variants; do
	for n in $probs; do
		echo "problems/llama/$n problems/llama/$n/solutions/$sol -DSF_PREFILL_WGMMA=$v"
		[ "$v" = 0 ] || echo "$held/$n problems/llama/$n/solutions/$sol -DSF_PREFILL_WGMMA=$v"
	done
done | xargs -P "$(nproc)" -L 1 sh -c "$S eval \$0 \$1 \$2 --backend cuda --prepare-only >/dev/null 2>&1" || true
log "compiled"

# run_eval TAG GPU DIR DEFINE ROUNDS BUDGET CAP: one eval into $out/TAG.jsonl, capped by CAP seconds
# and by the time left before DEADLINE_S
run_eval() {
	local lim n
	lim=$(left)
	[ "$lim" -gt "$7" ] && lim=$7
	if [ "$lim" -lt 10 ]; then
		echo "not run: out of time" >"$out/$1.err"
		: >"$out/$1.jsonl"
		return
	fi
	n=$(basename "$3")
	CUDA_VISIBLE_DEVICES=$2 timeout "$lim" $S eval "$3" "problems/llama/$n/solutions/$sol" -D "$4" --backend cuda \
		--no-torch --no-baseline --rounds "$5" --budget-ms "$6" --json >"$out/$1.jsonl" 2>"$out/$1.err"
	log "$1 done (exit $?)"
}

# the jobs in priority order: the wgmma variants on the bundled workloads, then on the held-out
# compositions, then the reference v1 (timing; its correctness was established before)
jobs=()
for v in $variants; do
	[ "$v" = 0 ] && continue
	for n in $probs; do jobs+=("$(label "$v")_$n problems/llama/$n $v $rounds $budget 80"); done
done
for v in $variants; do
	[ "$v" = 0 ] && continue
	for n in $probs; do jobs+=("$(label "$v")_heldout_$n $held/$n $v 1 50 40"); done
done
case " $variants " in *" 0 "*)
	for n in $probs; do jobs+=("v1_$n problems/llama/$n 0 $rounds $budget 80"); done ;;
esac
# lane L (one per GPU, at most 2) runs jobs L, L + lanes, ... one after another
lanes=1
[ "$ngpu" -ge 2 ] && lanes=2
lane() {
	local i
	for ((i = $1; i < ${#jobs[@]}; i += lanes)); do
		set -- ${jobs[$i]}
		run_eval "$1" "$lane_gpu" "$2" "SF_PREFILL_WGMMA=$3" "$4" "$5" "$6"
	done
}
pids=()
for ((l = 0; l < lanes; l++)); do
	lane_gpu=${devs[$l]} lane "$l" &
	pids+=($!)
done
wait "${pids[@]}"

cols=()
for v in 0 $variants; do
	[ "$v" = 0 ] && [ ${#cols[@]} -gt 0 ] && continue
	cols+=(--col "$(label "$v")")
	for n in $probs; do
		cols+=("$out/$(label "$v")_$n.jsonl")
		[ "$v" = 0 ] || cols+=("$out/$(label "$v")_heldout_$n.jsonl")
	done
done
(
	echo "gpu_pfw ($sol, variants $variants, rounds $rounds, budget $budget ms, $lanes lane(s), $(($(date +%s) - t0)) s; $(sed -n 2p "$out/env.txt"))"
	echo "registers / spill stores per kernel (ptxas; v1 = -DSF_PREFILL_WGMMA=0, v2 = 1, v2o = 2):"
	for v in 0 1 2; do
		awk -v tag="$(label $v)" '/Function properties for/ {k = $NF} /spill stores/ {sp = $5}
			/Used [0-9]+ registers/ {print "  " tag " " k ": " $5 " registers, " sp " bytes spilled"}' "$out/ptxas_$v.txt"
		grep -i "warn\|serializ" "$out/ptxas_$v.txt" | sed 's/^/  /' | head -5
	done
	echo "HGMMA instructions in the SASS of v2 / v2o: $hgmma"
	python3 tools/pfw_table.py "${cols[@]}"
) >"$out/summary.txt"
status=$?
cat "$out/summary.txt"
# the device tool brings back at most 8 files: pack the logs into one archive beside the summary
if [ -n "${OUT:-}" ]; then
	tar czf "$out/../gpu_pfw_logs.tgz" -C "$out" --exclude=summary.txt . 2>/dev/null &&
		find "$out" -mindepth 1 ! -name summary.txt -delete &&
		mv "$out/../gpu_pfw_logs.tgz" "$out/"
fi
exit $status
