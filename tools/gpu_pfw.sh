#!/usr/bin/env bash
# gpu_pfw.sh - one H200 run for the paged prefill's wgmma kernels (issue 9, prefill versions 2 and 3): builds
# solforge, reports registers / spills of the variants of problems/common/kernels/gqa_paged_prefill_sm90.cu
# (-DSF_PREFILL_WGMMA=0: v1 mma.sync, 1: v2 wgmma, 2: v2o wgmma with the overlapped tile order, 3: v3pp
# two consumer warpgroups with ping-pong, 4: v3np, the same without the ping-pong turns, 5: v5, v3pp with
# 128-key tiles and no turns, 6: v6, v5 with a producer warpgroup doing every gather and setmaxnreg, 384
# threads, 7: v7, v6 made persistent: at most one CTA per SM walking work units, 8: v8, v6 with the two
# consumers' ping-pong turns on named barriers; v9 was removed in session 13; VARIANTS token 10 = "v8lean":
# -DSF_PREFILL_WGMMA=8 -DSF_PREFILL_LEAN=1, v8 with the lean consumer, PREFILL_NOTES.md version 10; token 11 =
# "v8lean2": SF_PREFILL_LEAN=2, the lean consumer that keeps its running maxima unless one grows by more than 8) and the HGMMA count of the wgmma SASS (v6: also its setmaxnreg count, USETMAXREG in SASS: 2 per instantiation, 6 in all; v8: its BAR.SYNC / BAR.ARV counts), checks the wgmma variants on every workload of
# gqa_paged_prefill_causal_h32_kv8_d128_ps{1,16} and on the held-out compositions of tools/attn_heldout.py,
# and prints a side-by-side table last (tools/pfw_table.py: workload, us per variant, the best wgmma
# variant's speedup over v1, TFLOP/s and T_sol/T_k; with two or more wgmma variants, e.g. VARIANTS=8+6,
# also T_k(first) / T_k(second) per workload and its geometric mean: pfw_table.py --ratio v8/v6).
#
# Time: an eval of one problem's 12 workloads takes ~60-80 s on the H200, almost all of it the GPU
# oracle (one reference per round plus 4 audited calls per workload; ~20 s each for q16384 and
# b1-q2048-kv34816), so one GPU fits the two bundled evals of ONE wgmma variant. The v1 column therefore
# comes by default from the recorded v1 traces (V1_TRACES, a folder with
# attn_<problem>.jsonl; default results/h200/2026-11-29-s2/run2, same H200 kind, CUPTI, L2 flushed) and
# is labelled "v1rec"; put 0 into VARIANTS to time v1 live instead.
# Jobs run in priority order (wgmma variants on the bundled workloads, then held-out, then live v1), on
# two GPUs at once when there are two (nvidia-h200-x2; default VARIANTS "3 2": v3pp and v2o), else one
# after another (default "3"). Every eval is capped by CAP_S (default 110 s) and by the time left before DEADLINE_S
# (default 225 s); inside it each candidate runner (one workload) has `--timeout WL_TIMEOUT` (default
# 30 s), so a kernel that hangs is reported as that workload's TIMEOUT ("hang/timeout" in the table)
# and the eval goes on with the next workload. Traces are written and flushed per workload; a job the
# cap kills shows "hang/timeout" on the workload it was in and "-" after it; one never started shows
# "not run" (its .err).
# env: VARIANTS (space- or '+'-separated, e.g. "5+3" in a gpu_round spec), DEADLINE_S, CAP_S, WL_TIMEOUT, ROUNDS (1), BUDGET_MS (120), SOLUTION (fast.cu),
# V1_TRACES, V2O_TRACES (a folder with v2o_<problem>.jsonl, default results/h200/2026-11-30-s5/call1:
# shown as column "v2orec" when 2 is not in VARIANTS), V3PP_TRACES (a folder with v3pp_<problem>.jsonl, default
# results/h200/2026-11-30-s5/call2: column "v3rec" (v3pp recorded) when 3 is not in VARIANTS), HELDOUT (1; 0 skips the held-out jobs), HELD_CAP (90: the cap of a held-out eval),
# BUNDLED (1; 0 skips the bundled jobs), ONLY (eval --only, bundled jobs only), SEED (eval --seed of
# every evaluation; default gpu_round's ROUND_SEED, else one drawn per run: the ragged workloads draw
# their batch composition from the seed, so variants evaluated in different processes, e.g. two
# gpu_round lanes, are comparable there only with one seed; session 8 compared v5 and v6 without it and
# only the fixed-shape workloads matched), PAGES ("1 16": the
# page sizes, i.e. problems, to run; "1+16" in a gpu_round spec). Logs: $OUT (device
# tool) or build/gpu-pfw; with $OUT set they are packed into $OUT/gpu_pfw_logs.tgz beside $OUT/summary.txt. Per job TAG: TAG.jsonl
# (traces), TAG.err, TAG.rc (exit status; 124 = killed by the cap), TAG.wl (its workload.jsonl), TAG.only (ONLY, when set), TAG.end
# (the epoch second it ended and WL_TIMEOUT: how long a cap-killed eval had been in its last workload).
set -u
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu-pfw}
mkdir -p "$out"
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache}
sol=${SOLUTION:-fast.cu}
pfw_seed=${SEED:-${ROUND_SEED:-$((RANDOM * 32768 + RANDOM + 1))}}
rounds=${ROUNDS:-1}
budget=${BUDGET_MS:-120}
deadline=${DEADLINE_S:-225}
cap=${CAP_S:-110}
wl_timeout=${WL_TIMEOUT:-30}
v1rec=${V1_TRACES:-results/h200/2026-11-29-s2/run2}
v2orec=${V2O_TRACES:-results/h200/2026-11-30-s5/call1} # recorded v2o traces: v2o_<problem>.jsonl
v3pprec=${V3PP_TRACES:-results/h200/2026-11-30-s5/call2} # recorded v3pp traces: v3pp_<problem>.jsonl
S=${SOLFORGE_BIN:-build/solforge} # SOLFORGE_BIN: only for testing this script
t0=$(date +%s)
left() { echo $((deadline - ($(date +%s) - t0))); }
log() { echo "gpu_pfw: $* at $(($(date +%s) - t0)) s" >&2; }

case " ${VARIANTS:-3} " in *[!\ +0-9]*) # checked before the build: a typo must not cost GPU time
	echo "gpu_pfw: VARIANTS '${VARIANTS:-}': variant digits separated by spaces or '+'"
	exit 2 ;;
esac
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

probs=""
pages=${PAGES:-1 16}
for ps in ${pages//+/ }; do probs+="${probs:+ }gqa_paged_prefill_causal_h32_kv8_d128_ps$ps"; done
held=build/pfw-heldout
python3 tools/attn_heldout.py "$held" >"$out/heldout.txt" 2>&1

# ptxas report and SASS of both variants (the ps1 solution; ps16 includes the same source)
src=problems/llama/gqa_paged_prefill_causal_h32_kv8_d128_ps1/solutions/$sol
for v in 0 1 2 3 4 5 6 7 8; do # -DSF_PREFILL_WGMMA=v
	nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinclude -Xptxas -v -DSF_PREFILL_WGMMA=$v \
		-cubin "$src" -o "$out/prefill_$v.cubin" >"$out/ptxas_$v.txt" 2>&1 &
done
for l in 1 2; do # v8lean, v8lean2
	nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinclude -Xptxas -v -DSF_PREFILL_WGMMA=8 -DSF_PREFILL_LEAN=$l \
		-cubin "$src" -o "$out/prefill_8lean$l.cubin" >"$out/ptxas_8lean$l.txt" 2>&1 &
done
wait
hgmma="? (no cuobjdump)"
loopcls="" # one tile's SASS classes of v8, v8lean1, v8lean2 (tools/sass_loop_classes.py, prefill_attend_p8<1>)
if command -v cuobjdump >/dev/null 2>&1; then
	cuobjdump -sass "$out/prefill_1.cubin" >"$out/sass_v2.txt" 2>&1
	cuobjdump -sass "$out/prefill_2.cubin" >"$out/sass_v2o.txt" 2>&1
	cuobjdump -sass "$out/prefill_3.cubin" >"$out/sass_v3pp.txt" 2>&1
	cuobjdump -sass "$out/prefill_5.cubin" >"$out/sass_v5.txt" 2>&1
	cuobjdump -sass "$out/prefill_6.cubin" >"$out/sass_v6.txt" 2>&1
	cuobjdump -sass "$out/prefill_7.cubin" >"$out/sass_v7.txt" 2>&1
	cuobjdump -sass "$out/prefill_8.cubin" >"$out/sass_v8.txt" 2>&1
	hgmma="$(grep -c HGMMA "$out/sass_v2.txt") / $(grep -c HGMMA "$out/sass_v2o.txt") / $(grep -c HGMMA "$out/sass_v3pp.txt")"
	hgmma+=" / $(grep -c HGMMA "$out/sass_v5.txt") / $(grep -c HGMMA "$out/sass_v6.txt")"
	hgmma+=" / $(grep -c HGMMA "$out/sass_v7.txt") / $(grep -c HGMMA "$out/sass_v8.txt")"
	hgmma+=" (v6: $(grep -c SETMAX "$out/sass_v6.txt") SETMAX*REG (USETMAXREG in SASS), $(grep -c LDGSTS "$out/sass_v6.txt") LDGSTS;"
	hgmma+=" v7: $(grep -c SETMAX "$out/sass_v7.txt") SETMAX*REG, $(grep -c LDGSTS "$out/sass_v7.txt") LDGSTS,"
	hgmma+=" $(grep -c 'WARPGROUP.DEPBAR\|WARPGROUP.ARRIVE' "$out/sass_v7.txt") vs v6 $(grep -c 'WARPGROUP.DEPBAR\|WARPGROUP.ARRIVE' "$out/sass_v6.txt") WARPGROUP.DEPBAR/ARRIVE;"
	hgmma+=" v8: $(grep -c SETMAX "$out/sass_v8.txt") SETMAX*REG, $(grep -c LDGSTS "$out/sass_v8.txt") LDGSTS,"
	hgmma+=" $(grep -c 'BAR.SYNC' "$out/sass_v8.txt") BAR.SYNC (v6 $(grep -c 'BAR.SYNC' "$out/sass_v6.txt")),"
	hgmma+=" $(grep -c 'BAR.ARV' "$out/sass_v8.txt") BAR.ARV (v6 $(grep -c 'BAR.ARV' "$out/sass_v6.txt")))"
	for c in 8 8lean1 8lean2; do
		cuobjdump -sass -fun '_Z17prefill_attend_p8ILi1EEvPK13__nv_bfloat16S2_S2_PKiS4_S4_S4_ifPK9work_itemS4_PS0_Pf' \
			"$out/prefill_$c.cubin" >"$out/sass_p8_1_$c.txt" 2>&1
		loopcls+="v$c: $(python3 tools/sass_loop_classes.py "$out/sass_p8_1_$c.txt" 2>&1 | head -1)"$'\n'
	done
fi
rm -f "$out"/prefill_*.cubin

# variants: 0 = v1 mma.sync, 1 = v2 wgmma, 2 = v2o wgmma with the overlapped tile order, 3 = v3pp,
# 4 = v3np (v3pp without the ping-pong turns), 5 = v5 (v3pp with 128-key tiles, no turns), 6 = v6 (v5 with
# a producer warpgroup + setmaxnreg), 7 = v7 (v6 persistent), 8 = v8 (v6 + the consumers' ping-pong turns)
label() { case $1 in 0) echo v1 ;; 1) echo v2 ;; 2) echo v2o ;; 3) echo v3pp ;; 4) echo v3np ;; 5) echo v5 ;; 6) echo v6 ;; 10) echo v8lean ;; 11) echo v8lean2 ;; *) echo "v$1" ;; esac; }
# the eval defines of a variant, comma-separated (10, 11: v8 with the lean consumer, SF_PREFILL_LEAN 1 or 2)
defs() { case $1 in 10) echo "SF_PREFILL_WGMMA=8,SF_PREFILL_LEAN=1" ;; 11) echo "SF_PREFILL_WGMMA=8,SF_PREFILL_LEAN=2" ;; *) echo "SF_PREFILL_WGMMA=$1" ;; esac; }
# default: the candidate v3pp beside v2o (the fastest measured wgmma variant) on two GPUs; v3pp on one
if [ "$ngpu" -ge 2 ]; then variants=${VARIANTS:-3 2}; else variants=${VARIANTS:-3}; fi
variants=${variants//+/ } # "5+3" (a gpu_round spec cannot hold spaces) is two variants, as PAGES

# compile every (problem, variant) in parallel first (the compile cache keys on the -D define)
for v in $variants; do
	for n in $probs; do
		d=$(defs "$v")
		echo "problems/llama/$n problems/llama/$n/solutions/$sol -D${d//,/ -D}"
		[ "$v" = 0 ] || echo "$held/$n problems/llama/$n/solutions/$sol -D${d//,/ -D}"
	done
done | xargs -P "$(nproc)" -L 1 sh -c "$S eval \"\$@\" --backend cuda --prepare-only >/dev/null 2>&1" sh || true
log "compiled"

# line-buffered stdout as well (the CLI flushes each trace itself; this covers an older build)
lb=()
command -v stdbuf >/dev/null 2>&1 && lb=(stdbuf -oL)

# run_eval TAG GPU DIR DEFINES ROUNDS BUDGET CAP: one eval into $out/TAG.jsonl (DEFINES comma-separated), capped by CAP seconds
# and by the time left before DEADLINE_S; each workload's candidate runner by WL_TIMEOUT
run_eval() {
	local lim n rc
	lim=$(left)
	[ "$lim" -gt "$7" ] && lim=$7
	echo "$3/workload.jsonl" >"$out/$1.wl"
	# the eval's --only (bundled jobs): pfw_table.py names the in-progress workload among the selected ones only
	case "$3" in problems/*) [ -n "${ONLY:-}" ] && printf '%s\n' "$ONLY" >"$out/$1.only" ;; esac
	if [ "$lim" -lt 10 ]; then
		echo "not run: out of time" >"$out/$1.err"
		: >"$out/$1.jsonl"
		echo "not run" >"$out/$1.rc"
		return
	fi
	n=$(basename "$3")
	local only=() seed=() dl=() d
	for d in ${4//,/ }; do dl+=(-D "$d"); done
	case "$3" in problems/*) [ -n "${ONLY:-}" ] && only=(--only "$ONLY") ;; esac
	seed=(--seed "$pfw_seed")
	CUDA_VISIBLE_DEVICES=$2 timeout -k 5 "$lim" ${lb[@]+"${lb[@]}"} $S eval "$3" "problems/llama/$n/solutions/$sol" \
		"${dl[@]}" --backend cuda --no-torch --no-baseline --rounds "$5" --budget-ms "$6" --timeout "$wl_timeout" \
		${only[@]+"${only[@]}"} ${seed[@]+"${seed[@]}"} --json >"$out/$1.jsonl" 2>"$out/$1.err"
	rc=$?
	echo "$rc" >"$out/$1.rc"
	echo "$(date +%s) $wl_timeout" >"$out/$1.end" # when it ended, the runner's --timeout (pfw_table.py)
	log "$1 done (exit $rc, cap $lim s, $(grep -c '^{' "$out/$1.jsonl") traces)"
}

# the jobs in priority order: the wgmma variants on the bundled workloads, then on the held-out
# compositions, then the reference v1 (timing; its correctness was established before)
jobs=()
for v in $variants; do
	[ "$v" = 0 ] && continue
	[ "${BUNDLED:-1}" = 0 ] && continue
	for n in $probs; do jobs+=("$(label "$v")_$n problems/llama/$n $v $rounds $budget $cap"); done
done
if [ "${HELDOUT:-1}" != 0 ]; then
	for v in $variants; do
		[ "$v" = 0 ] && continue
		for n in $probs; do jobs+=("$(label "$v")_heldout_$n $held/$n $v 1 50 ${HELD_CAP:-90}"); done
	done
fi
case " $variants " in *" 0 "*)
	for n in $probs; do jobs+=("v1_$n problems/llama/$n 0 $rounds $budget $cap"); done ;;
esac
# lane L (one per GPU, at most 2) runs jobs L, L + lanes, ... one after another
lanes=1
[ "$ngpu" -ge 2 ] && lanes=2
lane() {
	local i
	for ((i = $1; i < ${#jobs[@]}; i += lanes)); do
		set -- ${jobs[$i]}
		run_eval "$1" "$lane_gpu" "$2" "$(defs "$3")" "$4" "$5" "$6"
	done
}
pids=()
for ((l = 0; l < lanes; l++)); do
	lane_gpu=${devs[$l]} lane "$l" &
	pids+=($!)
done
wait "${pids[@]}"

# the reference column: live v1 when it ran, else the recorded v1 traces
cols=()
case " $variants " in
*" 0 "*) cols+=(--col v1); for n in $probs; do cols+=("$out/v1_$n.jsonl"); done ;;
*) cols+=(--col v1rec); for n in $probs; do cols+=("$v1rec/attn_$n.jsonl"); done ;;
esac
# v2o not timed live: its recorded traces (V2O_TRACES) as a column, when they exist
case " $variants " in *" 2 "*) ;; *)
	if [ -f "$v2orec/v2o_gqa_paged_prefill_causal_h32_kv8_d128_ps1.jsonl" ]; then
		cols+=(--col v2orec)
		for n in $probs; do [ -f "$v2orec/v2o_$n.jsonl" ] && cols+=("$v2orec/v2o_$n.jsonl"); done
	fi ;;
esac
# v3pp (the default) not timed live: its recorded traces (V3PP_TRACES), when they exist
case " $variants " in *" 3 "*) ;; *)
	if [ -f "$v3pprec/v3pp_gqa_paged_prefill_causal_h32_kv8_d128_ps1.jsonl" ]; then
		cols+=(--col v3rec)
		for n in $probs; do [ -f "$v3pprec/v3pp_$n.jsonl" ] && cols+=("$v3pprec/v3pp_$n.jsonl"); done
	fi ;;
esac
for v in $variants; do
	[ "$v" = 0 ] && continue
	cols+=(--col "$(label "$v")")
	for n in $probs; do
		cols+=("$out/$(label "$v")_$n.jsonl")
		[ "${HELDOUT:-1}" = 0 ] || cols+=("$out/$(label "$v")_heldout_$n.jsonl")
	done
done
(
	echo "gpu_pfw ($sol, variants $variants, rounds $rounds, budget $budget ms, cap $cap s, --timeout $wl_timeout s, $lanes lane(s), $(($(date +%s) - t0)) s; $(sed -n 2p "$out/env.txt"))"
	echo "registers / spill stores per kernel (ptxas; v1 = -DSF_PREFILL_WGMMA=0, v2 = 1, v2o = 2, v3pp = 3, v3np = 4, v5 = 5, v6 = 6 (at launch; setmaxnreg 64 / 216), v7 = 7 (setmaxnreg 88 / 208), v8 = 8):"
	for v in 0 1 2 3 4 5 6 7 8; do
		awk -v tag="$(label $v)" '/Function properties for/ {k = $NF} /spill stores/ {sp = $5}
			/Used [0-9]+ registers/ {print "  " tag " " k ": " $5 " registers, " sp " bytes spilled"}' "$out/ptxas_$v.txt"
		grep -i "warn\|serializ" "$out/ptxas_$v.txt" | sed 's/^/  /' | head -5
	done
	for l in 1 2; do
		awk -v tag="v8lean$l" '/Function properties for/ {k = $NF} /spill stores/ {sp = $5}
			/Used [0-9]+ registers/ {print "  " tag " " k ": " $5 " registers, " sp " bytes spilled"}' "$out/ptxas_8lean$l.txt"
		grep -i "warn\|serializ" "$out/ptxas_8lean$l.txt" | sed 's/^/  /' | head -5
	done
	echo "HGMMA instructions in the SASS of v2 / v2o / v3pp / v5 / v6 / v7 / v8 (and v9's counts): $hgmma"
	[ -n "$loopcls" ] && printf "one tile of prefill_attend_p8<1>'s consumer loop (main path):\n%s" "$loopcls"
	set -- $variants
	rv=()
	[ $# -ge 2 ] && [ "$1" != 0 ] && [ "$2" != 0 ] && rv=(--ratio "$(label "$1")/$(label "$2")")
	python3 tools/pfw_table.py ${rv[@]+"${rv[@]}"} "${cols[@]}"
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
