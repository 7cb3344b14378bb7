#!/usr/bin/env bash
# gpu_memc.sh - issue 7, memory-bound kernels, versions 3, 4 and 5, on an H200 in one call (< 4 min): old
# and new variants of three fast.cu side by side on ALL their workloads, each eval with --copy-ceiling
# --no-torch --rounds 1 --budget-ms 200. Steps, in this order (STEPS="gn5 l2w gn gnold small smallold pc4
# torch" selects them; the default leaves gn5 and l2w out, STEPS=l2w runs it alone in < 3 min):
#   l2w       groupnorm32_silu_sd_vae, per workload (small to large; the 9 whose groups exceed the
#             fused kernel's 8192 values) the committed default (v1 split) and then -D GN_L2WIN=1 (v4 L2
#             window), so a cut run still compares both on the same workloads; L2W_KB=N adds a variant
#             with -D GN_L2WIN=1 -D GN_L2W_KB=N (window size), SPLIT_FAST=1 one with -D GN_SPLIT_FAST=1,
#             GN_ONLY=TEXT limits the workloads (uuid substring)
#   gn5       groupnorm32_silu_sd_vae, per workload (ALL 11, small to large) the committed default and
#             then -D GN_CLUSTER=1 (v5 thread-block clusters); CL_EXTRA="-D K=V ..." adds a third
#             variant (-D GN_CLUSTER=1 plus those defines, e.g. "-D GN_CL_HALF=0" or "-D GN_CL_MAXCS=8"),
#             GN_ONLY=TEXT limits the workloads (uuid substring). STEPS=gn5 runs it alone in < 4 min;
#             with 2 GPUs (nvidia-h200-x2) the two variants of a workload run at once, one per GPU
#   gn        groupnorm32_silu_sd_vae fast.cu with -D GN_RING=1 (the v3 ring path)
#   gnold     the same source as committed (v1 split) and with -D GN_COOP=1 (v2 group-resident)
#   small     fused_add_rmsnorm_h4096 with RMS_SMALL_T=256 (its default since session 7, measured
#             there by tools/gpu_knobs.sh), rope_llama31_h32_kv8_d128 with RP_SINCOS_F64=1 (unmeasured)
#   smallold  the same two as committed (fused_add: the same as `small` since session 7)
#   pc4       the ring with GN_RING_PER_CTA=4 on n1-c512-64x64
#   torch     the committed groupnorm again WITH the PyTorch baselines (torch, torch.compile)
# Groupnorm variants are -D defines of the committed source (its fast.cu includes gn_ring.cuh and
# gn_l2win.cuh beside it, so a copy elsewhere would not build).
# No eval starts after BUDGET_S (default 190) s, and every eval runs under `timeout`, cut to end by
# HARD_S (default 230) s: steps that do not fit are reported as not run (a hung kernel costs its
# limit, not the call). Logs: $OUT/memc_logs.tgz beside $OUT/summary.txt (default OUT build/gpu-memc).
# Prints one table last: problem, workload, variant, status, T_k us, copy us, fraction of copy, TB/s.
# Exit 0 when every evaluated workload passed.
set -u
cd "$(dirname "$0")/.." || exit 2
out=${OUT:-build/gpu-memc}
logs=$out/memc_logs
mkdir -p "$logs"
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache}
export SOLFORGE_HOME=$PWD
S=build/solforge
budget=${BUDGET_S:-190} # no eval starts after this
hard=${HARD_S:-230}     # and none runs past this (its limit is cut)
steps=${STEPS:-gn gnold small smallold pc4 torch}
l2w_kb=${L2W_KB:-}
cl_extra=${CL_EXTRA:-}
t0=$(date +%s)
status=0
elapsed() { echo $(($(date +%s) - t0)); }
has() { case " $steps " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
note() { echo "$*" >>"$logs/times.txt"; }
: >"$logs/times.txt"

if ! make -j"$(nproc)" >"$logs/build.log" 2>&1; then
	tail -30 "$logs/build.log"
	echo "gpu_memc: build failed"
	exit 1
fi
{
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
	nvcc --version | tail -1
} >"$logs/env.txt" 2>&1
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
GN=problems/stable-diffusion/groupnorm32_silu_sd_vae
FA=problems/llama/fused_add_rmsnorm_h4096
RP=problems/llama/rope_llama31_h32_kv8_d128
# ptxas report (registers, spills) of the three fast.cu, in the background
for src in $GN/solutions/fast.cu $FA/solutions/fast.cu $RP/solutions/fast.cu; do
	echo "== $src"
	"$NVCC" -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinclude -Xptxas -v -c "$src" -o /dev/null 2>&1 |
		grep -E 'Compiling entry|registers|spill' | paste - - -
done >"$logs/ptxas.txt" 2>&1 &

# problem copies in /tmp whose relative paths (baselines, oracle) point at the originals
tmp=$(mktemp -d /tmp/memc.XXXXXX)
for p in $GN $FA $RP; do
	python3 tools/problem_subset.py "$tmp" "$p" '.*' >/dev/null || exit 1
done
# variants: groupnorm by -D defines (fast.cu's defaults are the measured v1 split path); the other two
# by a knob prepended to the source (they include nothing)
printf '#define RMS_SMALL_T 256\n' | cat - $FA/solutions/fast.cu >"$tmp/fa_smallt.cu"
printf '#define RP_SINCOS_F64 1\n' | cat - $RP/solutions/fast.cu >"$tmp/rp_f64.cu"
g=$tmp/$(basename $GN) f=$tmp/$(basename $FA) r=$tmp/$(basename $RP)
G=$GN/solutions/fast.cu
printf '%s\n' "$g $G" "$g $G -D GN_RING=1" "$g $G -D GN_COOP=1" "$g $G -D GN_RING=1 -D GN_RING_PER_CTA=4" \
	"$g $G -D GN_L2WIN=1" "$g $G -D GN_CLUSTER=1" ${cl_extra:+"$g $G -D GN_CLUSTER=1 $cl_extra"} ${l2w_kb:+"$g $G -D GN_L2WIN=1 -D GN_L2W_KB=$l2w_kb"} "$g $G -D GN_SPLIT_FAST=1" \
	"$f $FA/solutions/fast.cu" "$f $tmp/fa_smallt.cu" "$r $RP/solutions/fast.cu" "$r $tmp/rp_f64.cu" |
	xargs -P "$(nproc)" -L 1 sh -c "$S eval \$0 \$1 \$2 \$3 \$4 \$5 \$6 \$7 --backend cuda --prepare-only >>$logs/prepare.log 2>&1" || true
note "build+compile: $(elapsed) s"

ev() { # ev PROBLEM_COPY SOURCE VARIANT LIMIT_S [EXTRA EVAL ARGS...]
	local p=$1 src=$2 tag=$3 lim=$4 name
	shift 4
	name=$(basename "$p")@$tag
	[ $((hard - $(elapsed))) -lt "$lim" ] && lim=$((hard - $(elapsed)))
	if [ "$(elapsed)" -ge "$budget" ] || [ "$lim" -lt 10 ]; then
		note "$name${EV_TAG:+ $EV_TAG}: not run (elapsed $(elapsed) s; BUDGET_S $budget, HARD_S $hard)"
		return
	fi
	timeout -k 5 "$lim" $S eval "$p" "$src" --backend cuda --copy-ceiling --rounds 1 --budget-ms 200 "$@" \
		-o "$logs/$name.part" >>"$logs/$name.txt" 2>&1
	local rc=$?
	[ $rc = 0 ] || status=1
	cat "$logs/$name.part" >>"$logs/$name.jsonl" 2>/dev/null
	note "$name${EV_TAG:+ $EV_TAG}: rc=$rc, $(grep -c '"PASSED"' "$logs/$name.part" 2>/dev/null) passed, $(grep -vc '"PASSED"' "$logs/$name.part" 2>/dev/null) not ($(elapsed) s)"
	rm -f "$logs/$name.part"
}

# the gn5 step: per workload (all 11), the committed default then the cluster path (and CL_EXTRA's).
# With 2+ GPUs the variants of a workload run at once, one per GPU (each eval times its own copy on its
# own GPU, so the fractions compare): all 11 in ~2.5 min; on one GPU in turn (the 1024^2 pairs may be
# cut by BUDGET_S: GN_ONLY=1024 runs them alone)
if has gn5; then
	# the GPUs this script may use: CUDA_VISIBLE_DEVICES when set (tools/gpu_round.sh gives a lane ONE;
	# session 5 call 4 ignored that and ran the cluster evals on the other lane's GPU, beside its evals)
	if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then IFS=, read -r -a gdevs <<<"$CUDA_VISIBLE_DEVICES"; else
		mapfile -t gdevs < <(seq 0 $(($(nvidia-smi -L 2>/dev/null | grep -c '^GPU') - 1)))
	fi
	ngpu=${#gdevs[@]}
	for u in $(python3 -c 'import json, sys
for l in open(sys.argv[1]):
    if l.strip(): print(json.loads(l)["uuid"])' $GN/workload.jsonl | grep -F -- "${GN_ONLY:-}"); do
		if [ "$ngpu" -ge 2 ]; then
			CUDA_VISIBLE_DEVICES=${gdevs[0]} EV_TAG="$u gpu${gdevs[0]}" ev "$g" $G default 40 --no-torch --only "=$u" &
			CUDA_VISIBLE_DEVICES=${gdevs[1]} EV_TAG="$u gpu${gdevs[1]}" ev "$g" $G cluster 40 --no-torch --only "=$u" -D GN_CLUSTER=1 &
			wait
		else
			EV_TAG=$u ev "$g" $G default 40 --no-torch --only "=$u"
			EV_TAG=$u ev "$g" $G cluster 40 --no-torch --only "=$u" -D GN_CLUSTER=1
		fi
		# shellcheck disable=SC2086 # cl_extra: a list of -D defines
		[ -n "$cl_extra" ] && EV_TAG=$u ev "$g" $G cluster_x 40 --no-torch --only "=$u" -D GN_CLUSTER=1 $cl_extra
	done
	grep -q 'rc=[1-9]' "$logs/times.txt" && status=1 # (the parallel evals ran in subshells)
fi

# the l2w step: per workload, the committed default (split) then the L2 window (and L2W_KB's window)
if has l2w; then
	# (groups of <= 8192 values take the fused kernel in every variant: left out)
	for u in $(python3 -c 'import json, sys
for l in open(sys.argv[1]):
    if l.strip():
        w = json.loads(l); a = w["axes"]
        if a["num_channels"] // 32 * a["height"] * a["width"] > 8192: print(w["uuid"])' $GN/workload.jsonl |
		grep -F -- "${GN_ONLY:-}"); do
		EV_TAG=$u ev "$g" $G split 45 --no-torch --only "=$u"
		EV_TAG=$u ev "$g" $G l2w 45 --no-torch --only "=$u" -D GN_L2WIN=1
		[ -n "$l2w_kb" ] && EV_TAG=$u ev "$g" $G "l2w_$l2w_kb" 45 --no-torch --only "=$u" -D GN_L2WIN=1 -D GN_L2W_KB="$l2w_kb"
		[ "${SPLIT_FAST:-0}" = 1 ] && EV_TAG=$u ev "$g" $G split_fast 45 --no-torch --only "=$u" -D GN_SPLIT_FAST=1
	done
fi

# in order of what matters most (steps that do not fit are reported as not run: rerun with STEPS=...)
if has gn; then
	ev "$g" $G ring 75 --no-torch -D GN_RING=1
fi
if has gnold; then
	ev "$g" $G split 75 --no-torch
	ev "$g" $G coop 75 --no-torch -D GN_COOP=1
fi
if has small; then
	ev "$f" "$tmp/fa_smallt.cu" small_t 45 --no-torch
	ev "$r" "$tmp/rp_f64.cu" sincos_f64 45 --no-torch
fi
if has smallold; then
	ev "$f" $FA/solutions/fast.cu v1 45 --no-torch
	ev "$r" $RP/solutions/fast.cu v1 45 --no-torch
fi
has pc4 && ev "$g" $G ring_pc4 20 --no-torch --only c512-64x64 -D GN_RING=1 -D GN_RING_PER_CTA=4
has torch && ev "$g" $G split_torch 90
wait
rm -rf "$tmp"

python3 - "$logs" >"$out/table.txt" 2>&1 <<'PY'
import glob, json, os, sys
logs = sys.argv[1]
print("%-26s %-22s %-11s %-8s %9s %9s %6s %6s" % ("problem", "workload", "variant", "status", "T_k us", "copy us", "frac", "TB/s"))
bad = n = 0
for f in sorted(glob.glob(os.path.join(logs, "*.jsonl"))):
    prob, var = os.path.basename(f)[:-6].split("@")
    for l in open(f):
        try:
            t = json.loads(l)
        except ValueError:
            continue
        e = t["evaluation"]; s = e.get("solforge", {}); tk = e.get("performance", {}).get("latency_ms")
        c, b, fr = s.get("copy_ms"), s.get("bytes"), s.get("bw_fraction_of_copy")
        n += 1; bad += e["status"] != "PASSED"
        print("%-26.26s %-22.22s %-11.11s %-8.8s %9s %9s %6s %6s" % (prob, t["workload"]["uuid"].replace(t["definition"] + "-", ""), var,
              e["status"], "-" if not tk else "%.2f" % (tk * 1e3), "-" if not c else "%.2f" % (c * 1e3),
              "-" if fr is None else "%.3f" % fr, "-" if not (b and tk) else "%.2f" % (b / tk / 1e9)))
print("workloads: %d evaluated, %d not PASSED" % (n, bad))
PY
{
	echo "gpu_memc ($(elapsed) s):"
	cat "$logs/times.txt"
	cat "$logs/ptxas.txt"
	f=$(ls "$logs"/*@split_torch.txt 2>/dev/null) && { echo "== groupnorm (committed) with torch baselines"; tail -16 "$f"; }
} >"$out/summary.txt"
cat "$out/table.txt" >>"$out/summary.txt"
tar -C "$out" -czf "$out/memc_logs.tgz" memc_logs && rm -rf "$logs"
cat "$out/summary.txt"
exit $status
