#!/usr/bin/env bash
# gpu_memc.sh - issue 7, memory-bound kernels, version 3, on an H200 in one call (< 4 min): old and
# new variants of three fast.cu side by side on ALL their workloads, each eval with --copy-ceiling
# --no-torch --rounds 1 --budget-ms 200. Steps, in this order (STEPS="gn gnold small smallold pc4
# torch" selects them):
#   gn        groupnorm32_silu_sd_vae fast.cu as committed: the v3 ring path
#   gnold     the same source with -DGN_RING=0 (v1 split, the first run's version) and with
#             -DGN_RING=0 -DGN_COOP=1 (v2 group-resident, never measured before)
#   small     fused_add_rmsnorm_h4096 with RMS_SMALL_T=256, rope_llama31_h32_kv8_d128 with
#             RP_SINCOS_F64=1 (their v2 knobs, never measured)
#   smallold  the same two as committed (v1)
#   pc4       the ring with GN_RING_PER_CTA=4 on n1-c512-64x64
#   torch     the ring again WITH the PyTorch baselines (torch, torch.compile)
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
python3 - "$tmp" $GN $FA $RP <<'PY'
import json, os, shutil, sys
tmp, problems = sys.argv[1], sys.argv[2:]
for p in problems:
    dst = os.path.join(tmp, os.path.basename(p.rstrip("/")))
    shutil.copytree(p, dst)
    dp = os.path.join(dst, "definition.json")
    d = json.load(open(dp))
    ext = d.get("solforge", {})
    for b in ext.get("baselines", []):
        if "source" in b and not os.path.isabs(b["source"]):
            b["source"] = os.path.abspath(os.path.join(p, b["source"]))
    if isinstance(ext.get("oracle"), str) and ext["oracle"].startswith(".."):
        ext["oracle"] = os.path.abspath(os.path.join(p, ext["oracle"]))
    json.dump(d, open(dp, "w"), indent=2)
PY
# variants: a knob prepended to the source (fast.cu's defaults are the new version for groupnorm,
# the measured first version for the other two)
printf '#define GN_RING 0\n' | cat - $GN/solutions/fast.cu >"$tmp/gn_split.cu"
printf '#define GN_RING 0\n#define GN_COOP 1\n' | cat - $GN/solutions/fast.cu >"$tmp/gn_coop.cu"
printf '#define GN_RING_PER_CTA 4\n' | cat - $GN/solutions/fast.cu >"$tmp/gn_ring_pc4.cu"
printf '#define RMS_SMALL_T 256\n' | cat - $FA/solutions/fast.cu >"$tmp/fa_smallt.cu"
printf '#define RP_SINCOS_F64 1\n' | cat - $RP/solutions/fast.cu >"$tmp/rp_f64.cu"
g=$tmp/$(basename $GN) f=$tmp/$(basename $FA) r=$tmp/$(basename $RP)
printf '%s\n' "$g $GN/solutions/fast.cu" "$g $tmp/gn_split.cu" "$g $tmp/gn_coop.cu" "$g $tmp/gn_ring_pc4.cu" \
	"$f $FA/solutions/fast.cu" "$f $tmp/fa_smallt.cu" "$r $RP/solutions/fast.cu" "$r $tmp/rp_f64.cu" |
	xargs -P "$(nproc)" -L 1 sh -c "$S eval \$0 \$1 --backend cuda --prepare-only >>$logs/prepare.log 2>&1" || true
note "build+compile: $(elapsed) s"

ev() { # ev PROBLEM_COPY SOURCE VARIANT LIMIT_S [EXTRA EVAL ARGS...]
	local p=$1 src=$2 tag=$3 lim=$4 name
	shift 4
	name=$(basename "$p")@$tag
	[ $((hard - $(elapsed))) -lt "$lim" ] && lim=$((hard - $(elapsed)))
	if [ "$(elapsed)" -ge "$budget" ] || [ "$lim" -lt 10 ]; then
		note "$name: not run (elapsed $(elapsed) s; BUDGET_S $budget, HARD_S $hard)"
		return
	fi
	timeout -k 5 "$lim" $S eval "$p" "$src" --backend cuda --copy-ceiling --rounds 1 --budget-ms 200 "$@" \
		-o "$logs/$name.jsonl" >"$logs/$name.txt" 2>&1
	local rc=$?
	[ $rc = 0 ] || status=1
	note "$name: rc=$rc, $(grep -c '"PASSED"' "$logs/$name.jsonl" 2>/dev/null) passed, $(grep -vc '"PASSED"' "$logs/$name.jsonl" 2>/dev/null) not ($(elapsed) s)"
}

# in order of what matters most (steps that do not fit are reported as not run: rerun with STEPS=...)
if has gn; then
	ev "$g" $GN/solutions/fast.cu ring 75 --no-torch
fi
if has gnold; then
	ev "$g" "$tmp/gn_split.cu" split 75 --no-torch
	ev "$g" "$tmp/gn_coop.cu" coop 75 --no-torch
fi
if has small; then
	ev "$f" "$tmp/fa_smallt.cu" small_t 45 --no-torch
	ev "$r" "$tmp/rp_f64.cu" sincos_f64 45 --no-torch
fi
if has smallold; then
	ev "$f" $FA/solutions/fast.cu v1 45 --no-torch
	ev "$r" $RP/solutions/fast.cu v1 45 --no-torch
fi
has pc4 && ev "$g" "$tmp/gn_ring_pc4.cu" ring_pc4 20 --no-torch --only c512-64x64
has torch && ev "$g" $GN/solutions/fast.cu ring_torch 90
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
	f=$(ls "$logs"/*@ring_torch.txt 2>/dev/null) && { echo "== groupnorm ring with torch baselines"; tail -16 "$f"; }
} >"$out/summary.txt"
cat "$out/table.txt" >>"$out/summary.txt"
tar -C "$out" -czf "$out/memc_logs.tgz" memc_logs && rm -rf "$logs"
cat "$out/summary.txt"
exit $status
