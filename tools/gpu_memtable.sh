#!/usr/bin/env bash
# gpu_memtable.sh - issue 7's table on an H200, one command: every memory-bound problem's
# solutions/fast.cu on EVERY bundled workload (and, HELDOUT=1, on the held-out shapes of
# tools/mem_heldout.py) through `solforge eval` with the problem's own baselines (PyTorch eager, F.*
# library calls and torch.compile through the bridge, docs/bridge.md) and --copy-ceiling (a same-byte
# device copy timed in the same run), then one table (tools/mem_table.py): per workload T_k, the copy,
# the fraction of copy, the rate, the best baseline and T_k's speedup over it, the SOL score; per problem
# and overall the medians.
#
#   PROBLEMS="llama/rmsnorm_h4096 ..." tools/gpu_memtable.sh      (family/name; default: the 14 below)
#
# env: PROBLEMS, SOLUTION (fast.cu), ROUNDS (1), BUDGET_MS (150), DEADLINE_S (480: no eval starts
# later, and a running one is cut there), COMPILE (1; 0 = SOLFORGE_BRIDGE_NO_COMPILE, eager only),
# FLUSH (eval --flush: memset, the default, or reads), HELDOUT (1), INDUCTOR_KEEP (0; 1 = inductor's cache in the logs: the generated Triton kernels
# (*.py) and their autotuned configs (*.best_config) of every torch.compile baseline come back), COPY (1; 0 leaves --copy-ceiling out, e.g. for the GEMMs), READ (0; 1 adds --read-ceiling: the
# same-byte calibration read, for read-dominated problems such as small-M GEMMs), NO_TORCH (0; 1 = --no-torch:
# only the C baselines such as cuBLASLt, no bridge), DEFINES (extra -D NAME=VALUE for every eval, e.g.
# "GN_CLUSTER=1"), TAG (a label for the traces; default "fast"), JOBS (1: evals at once, their GPU
# timing serialized by the device slot), SAMPLE (eval --sample N: N workloads of
# each problem, evenly spread over its file; default all), ONLY (eval --only TEXT: the workloads whose
# uuid contains TEXT, e.g. "-t16" for t16 and t16384), BASE_SPLIT (0; 1 = one eval per baseline of the definition,
# `--baseline NAME`, each its own process and time limit, in the definition's order, so that one slow baseline
# (a torch.compile of a ragged shape) cannot take the others' numbers with it; each trace's ratio is its own
# candidate against that one baseline, side by side, and the table has a row per baseline: the best baseline is the
# row of the smallest speedup), BASE_NAMES (with BASE_SPLIT: a '+'-list of baseline names run in that order instead of
# the definition's; a name it lacks fails that eval with eval's usage error), BASE_TIMEOUT_S (with BASE_SPLIT: each eval's own limit, default the time left),
# PROBLEMS may use '+' between names, and a name may end
# in %TEXT: that problem's own --only TEXT (bundled and held-out), e.g.
# PROBLEMS=deepseek/moe_grouped_topk_routing_e256_g8_k8%t32768+llama/silu_and_mul_i14336%t7777 (one spec, one JOBS pool);
# TEXT may list several filters separated by ':' (name%q16384:b4-q4096): one eval per filter, side by side under JOBS.
#
# torch.compile costs ~5-40 s per workload shape (each eval is a fresh process); the bridge compiles
# outside the device slot where torch lets it lock inductor's benchmarks (docs/bridge.md), which is
# what makes JOBS > 1 pay; before that (session 5), with every baseline a
# workload took 22-90 s on the H200 in session 5 (the larger, the longer), so the 14 problems' 128
# bundled workloads do not fit one device call: SAMPLE, JOBS, and split
# PROBLEMS over lanes and calls. (A parallel untimed warm-up of inductor's caches was tried in session
# 5 and left the timed pass's compile at 7-9 s: removed.) PyTorch baselines are timed on the device (their
# busy time, docs/bridge.md; SOLFORGE_BRIDGE_TIMING=events for CUDA events).
# Logs and traces: $OUT (device tool) or build/gpu-memtable; with $OUT set they are packed into
# $OUT/memtable_logs.tgz beside $OUT/summary.txt (the table). Exit 0 when every evaluated workload passed.
set -u
cd "$(dirname "$0")/.." || exit 2
out=${OUT:-build/gpu-memtable}
logs=$out/memtable_logs
mkdir -p "$logs"
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache}
export SOLFORGE_HOME=$PWD
S=build/solforge
solution=${SOLUTION:-fast.cu}
rounds=${ROUNDS:-1}
budget=${BUDGET_MS:-150}
deadline=${DEADLINE_S:-480}
tag=${TAG:-fast}
problems=${PROBLEMS:-"llama/rmsnorm_h4096 llama/fused_add_rmsnorm_h4096 gemma/gemma_rmsnorm_h5376
qwen/qk_rmsnorm_h32_kv4_d128 llama/rope_llama31_h32_kv8_d128 flux/flux_rope_3axis_h24_d128
llama/silu_and_mul_i14336 gemma/geglu_tanh_h5376_i21504 qwen/moe_router_softmax_topk_e128_k8
deepseek/moe_grouped_topk_routing_e256_g8_k8 qwen/nvfp4_quantize_h2048
mamba/causal_conv1d_silu_d4_mamba2 flux/flux_adaln_layernorm_modulate_h3072
stable-diffusion/groupnorm32_silu_sd_vae"}
problems=${problems//+/ }
# name%TEXT: the problem's own --only (stripped from the names used below)
declare -A only_of=()
plain=""
for p in $problems; do
	case $p in *%*) only_of[${p%%%*}]=${p#*%}; p=${p%%%*} ;; esac # a ':' list: one eval per filter (pairs below)
	only_of[${p##*/}]=${only_of[$p]:-}
	plain+="${plain:+ }$p"
done
problems=$plain
[ "${COMPILE:-1}" = 0 ] && export SOLFORGE_BRIDGE_NO_COMPILE=1
defs=()
copyc=(--copy-ceiling)
[ "${COPY:-1}" = 0 ] && copyc=()
[ "${NO_TORCH:-0}" = 1 ] && copyc+=(--no-torch)
[ "${READ:-0}" = 1 ] && copyc+=(--read-ceiling)
[ -n "${FLUSH:-}" ] && copyc+=(--flush "$FLUSH") # memset (the default) or reads: eval --flush
for d in ${DEFINES:-}; do defs+=(-D "$d"); done
t0=$(date +%s)
elapsed() { echo $(($(date +%s) - t0)); }

if ! make -j"$(nproc)" >"$logs/build.log" 2>&1; then
	tail -30 "$logs/build.log"
	echo "gpu_memtable: build failed"
	exit 1
fi
{
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
	nvcc --version | tail -1
	python3 -c 'import torch; print("torch", torch.__version__)' 2>&1
	echo "PROBLEMS=$problems SOLUTION=$solution ROUNDS=$rounds BUDGET_MS=$budget COMPILE=${COMPILE:-1} DEFINES=${DEFINES:-}"
} >"$logs/env.txt" 2>&1

# the (problem dir, trace name, filter, baseline) entries, bundled first, then held-out; add_pairs DIR NAME adds one
# per ':'-separated filter of the problem's %TEXT (the trace name then ends in .FILTER), one unfiltered otherwise,
# and with BASE_SPLIT=1 one per baseline of each (trace name + .b-BASELINE; the filter "-" when there is none)
pairs=()
add_one() {
	local b
	if [ "${BASE_SPLIT:-0}" = 1 ]; then
		while read -r b; do
			[ -n "$b" ] && pairs+=("$1 $2.b-$b ${3:--} $b")
		done < <(if [ -n "${BASE_NAMES:-}" ]; then tr '+' '\n' <<<"$BASE_NAMES"; else
			python3 -c 'import json, sys; [print(b["name"]) for b in json.load(open(sys.argv[1])).get("solforge", {}).get("baselines", [])]' "$1/definition.json"
		fi)
	else
		pairs+=("$1 $2 ${3:--} -")
	fi
}
add_pairs() {
	local f list=${only_of[${1##*/}]:-}
	case $list in
	*:*) for f in ${list//:/ }; do add_one "$1" "$2.$f" "$f"; done ;;
	*) add_one "$1" "$2" "$list" ;;
	esac
}
for p in $problems; do
	[ -d "problems/$p" ] || { echo "gpu_memtable: no problem folder problems/$p" >&2; exit 2; }
	add_pairs "problems/$p" "${p##*/}"
done
if [ "${HELDOUT:-1}" = 1 ]; then
	if [ -f tools/mem_heldout.py ]; then
		held=build/mem-heldout
		rm -rf "$held"
		if python3 tools/mem_heldout.py "$held" >"$logs/heldout.txt" 2>&1; then
			for p in $problems; do
				n=${p##*/}
				[ -d "$held/$n" ] && add_pairs "$held/$n" "heldout_$n"
			done
		else
			echo "gpu_memtable: tools/mem_heldout.py failed (held-out shapes not run):" >&2
			tail -5 "$logs/heldout.txt" >&2
		fi
	else
		echo "gpu_memtable: no tools/mem_heldout.py: held-out shapes not run" >"$logs/heldout.txt"
	fi
fi

# solution path of a (possibly held-out) problem folder: held-out folders have no solutions/, the
# solution is the bundled problem's
sol_of() {
	local dir=$1 name=${1##*/} p
	for p in $problems; do
		[ "${p##*/}" = "$name" ] && { echo "problems/$p/solutions/$solution"; return; }
	done
}

# the bridge's device-span timing checked on this GPU first; if it fails, the baselines are timed with
# CUDA events instead and the table says so (every such baseline is tagged [events])
timing_note=""
if [ -z "${SOLFORGE_BRIDGE_TIMING:-}" ]; then
	python3 tools/bridge/kspan_selftest.py >"$logs/kspan_selftest.txt" 2>&1
	if [ $? = 1 ]; then
		export SOLFORGE_BRIDGE_TIMING=events
		timing_note="device-span self-test FAILED (memtable_logs/kspan_selftest.txt): baselines timed with CUDA events"
	fi
fi

# JOBS > 1: that many evals at once; every GPU timing (candidate, copy, oracle, the PyTorch process
# once torch has started) takes the device's slot (SOLFORGE_GPU_LOCKS, src/core/gpulock.c), so they
# overlap only in their CPU parts (input generation, python and torch start-up)
jobs=${JOBS:-1}
if [ "${INDUCTOR_KEEP:-0}" = 1 ]; then
	export TORCHINDUCTOR_CACHE_DIR=$PWD/build/inductor-cache
	rm -rf "$TORCHINDUCTOR_CACHE_DIR"
fi
# where each bridge process's time goes (start-up, waiting for the slot, holding it, per task)
export SOLFORGE_BRIDGE_PHASES=$logs/bridge_phases.jsonl
# and as it goes (a line per task begun and ended, per compile and warm call): what a bridge killed by its
# eval's time limit was doing (the phases line is written only at the end)
export SOLFORGE_BRIDGE_PROGRESS=$logs/bridge_progress.jsonl
if [ "$jobs" -gt 1 ]; then
	export SOLFORGE_GPU_LOCKS=$logs/locks
	mkdir -p "$SOLFORGE_GPU_LOCKS"
fi
# one_eval DIR NAME [FILTER]: one problem folder's eval (--only FILTER, else $ONLY) into $logs/$tag.NAME.jsonl; its
# exit status and time go to times.txt (rc != 0 marks the run failed at the end)
one_eval() {
	local dir=$1 name=$2 left s0 rc only=${ONLY:-} base=()
	[ -n "${3:-}" ] && [ "$3" != - ] && only=$3
	[ -n "${4:-}" ] && [ "$4" != - ] && base=(--baseline "$4")
	left=$((deadline - $(elapsed)))
	[ ${#base[@]} -gt 0 ] && [ -n "${BASE_TIMEOUT_S:-}" ] && [ "$BASE_TIMEOUT_S" -lt "$left" ] && left=$BASE_TIMEOUT_S
	if [ "$left" -le 10 ]; then
		echo "$name: not run (deadline)" >>"$logs/times.txt"
		return
	fi
	# a ':' filter list applies to the bundled and the held-out folder alike: a folder none of whose workloads
	# matches this filter is skipped, not run into eval's "no workload" error
	if [ -n "${3:-}" ] && [ "$3" != - ] && [ -f "$dir/workload.jsonl" ] && ! grep -qF -- "$only" "$dir/workload.jsonl"; then
		echo "$name: no workload matches '$only' (skipped)" >>"$logs/times.txt"
		return
	fi
	s0=$(date +%s)
	timeout "$left" "$S" eval "$dir" "$(sol_of "$dir")" "${defs[@]}" ${copyc[@]+"${copyc[@]}"} --rounds "$rounds" \
		--budget-ms "$budget" ${SAMPLE:+--sample "$SAMPLE"} ${only:+--only "$only"} ${base[@]+"${base[@]}"} --json -o "$logs/$tag.$name.jsonl" >/dev/null 2>"$logs/$tag.$name.err"
	rc=$?
	echo "$name: rc $rc, $(($(date +%s) - s0)) s" >>"$logs/times.txt"
}
running=0
for pr in "${pairs[@]}"; do
	read -r pdir pname pfilt pbase <<<"$pr"
	one_eval "$pdir" "$pname" "$pfilt" "$pbase" &
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
done
wait
status=0
grep -q ': rc [1-9]' "$logs/times.txt" 2>/dev/null && status=1

python3 tools/mem_table.py "$logs"/"$tag".*.jsonl >"$out/summary.txt" 2>&1 || status=1
cat "$logs/times.txt" >>"$out/summary.txt"
[ -f "$logs/kspan_selftest.txt" ] && cat "$logs/kspan_selftest.txt" >>"$out/summary.txt"
if [ -f "$logs/bridge_progress.jsonl" ]; then # (a killed bridge leaves a progress trail but no phases line)
	python3 tools/bridge/phases_summary.py "$logs/bridge_phases.jsonl" "$logs/bridge_progress.jsonl" >>"$out/summary.txt"
elif [ -f "$logs/bridge_phases.jsonl" ]; then
	python3 tools/bridge/phases_summary.py "$logs/bridge_phases.jsonl" >>"$out/summary.txt"
fi
[ -n "$timing_note" ] && echo "$timing_note" >>"$out/summary.txt"
if [ "${INDUCTOR_KEEP:-0}" = 1 ] && [ -d build/inductor-cache ]; then
	dest=$(cd "$logs" && pwd)/inductor_kernels.tgz
	(cd build/inductor-cache && find . \( -name '*.py' -o -name '*.best_config' \) -print0 |
		tar czf "$dest" --null -T -) 2>/dev/null
fi
if [ -n "${OUT:-}" ]; then
	tar czf "$out/memtable_logs.tgz" -C "$out" memtable_logs && rm -rf "$logs"
fi
cat "$out/summary.txt"
exit $status
