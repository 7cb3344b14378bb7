#!/usr/bin/env bash
# gpu_mem2.sh - issue 7 version 2 on an H200, one call (~150 s): evaluates only what changed since
# the first H200 run plus the memB problems that run did not reach, and times the calibration-copy
# variants side by side.
#   1. groupnorm32_silu_sd_vae fast.cu (group-resident one-launch path): 5 workloads (smallest,
#      64x64, 128x128, 512x512, the largest) + 3 held-out shapes (partial chunks, channels ending
#      mid-vector, the scalar path)
#   2. tools/copy_bench.cu: 10 variants of tools/calibration/copy/solutions/copy.cu and
#      cudaMemcpyAsync at 32, 256, 1024, 4096 MiB, plus torch's copy_ at the same sizes
#   3. moe_router_softmax_topk, moe_grouped_topk_routing, nvfp4_quantize, causal_conv1d_silu: fast.cu
#      on ALL workloads (correctness; not reached by the first run)
#   4. fused_add_rmsnorm and rope_llama31 (small-T changes): 5 workloads each, v2 then v1 (the knob
#      that restores the first run's version: RMS_SMALL_T=0, RP_SINCOS_F64=0) side by side; then
#      groupnorm's two c512 workloads again with GN_COOP_VPT=2 (twice the blocks, half the chunk)
# Every eval: --backend cuda --copy-ceiling --rounds 1 --budget-ms 200 (64 workloads). A step that
# would start after BUDGET_S (default 135) seconds is reported as not run. Prints the copy variants,
# then one table last: problem, workload, status, T_k, copy time, fraction of copy, TB/s. Logs:
# $OUT/mem2_logs.tgz beside $OUT/summary.txt (default OUT build/gpu-mem2). Exit 0 when every
# evaluated workload passed. STEPS="gn copy memb small" selects steps.
set -u
cd "$(dirname "$0")/.." || exit 2
out=${OUT:-build/gpu-mem2}
logs=$out/mem2_logs
mkdir -p "$logs"
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache}
export SOLFORGE_HOME=$PWD
S=build/solforge
budget=${BUDGET_S:-135}
steps=${STEPS:-gn copy memb small}
t0=$(date +%s)
status=0
elapsed() { echo $(($(date +%s) - t0)); }
has() { case " $steps " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
note() { echo "$*" >>"$logs/times.txt"; }
: >"$logs/times.txt"

if ! make -j"$(nproc)" >"$logs/build.log" 2>&1; then
	tail -30 "$logs/build.log"
	echo "gpu_mem2: build failed"
	exit 1
fi
{
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
	nvcc --version | tail -1
} >"$logs/env.txt" 2>&1
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
# the copy bench and the ptxas report build in the background while the solutions compile
"$NVCC" -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinclude tools/copy_bench.cu -o build/copy_bench \
	>"$logs/copy_bench_build.log" 2>&1 &
bench_pid=$!
GN=problems/stable-diffusion/groupnorm32_silu_sd_vae
FA=problems/llama/fused_add_rmsnorm_h4096
RP=problems/llama/rope_llama31_h32_kv8_d128
MEMB="problems/qwen/moe_router_softmax_topk_e128_k8 problems/deepseek/moe_grouped_topk_routing_e256_g8_k8
problems/qwen/nvfp4_quantize_h2048 problems/mamba/causal_conv1d_silu_d4_mamba2"
for src in $GN/solutions/fast.cu tools/calibration/copy/solutions/copy.cu; do
	echo "== $src"
	"$NVCC" -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinclude -Xptxas -v -c "$src" -o /dev/null 2>&1 |
		grep -E 'Compiling entry|registers|spill' | paste - - -
done >"$logs/ptxas.txt" 2>&1 &

# problem copies with the selected workloads (GroupNorm: 5 of 11 + held-out shapes; memB: all)
tmp=$(mktemp -d /tmp/mem2.XXXXXX)
# shellcheck disable=SC2086 # MEMB is a list
python3 - "$tmp" $GN $FA $RP $MEMB <<'PY'
import json, os, sys
sys.path.insert(0, "tools")
from problem_subset import copy_problem
tmp, problems = sys.argv[1], sys.argv[2:]
pick = {"groupnorm32_silu_sd_vae": ["n1-c128-8x8", "n1-c512-64x64", "n2-c512-128x128", "n1-c256-512x512",
                                    "n1-c256-1024x1024"],
        "fused_add_rmsnorm_h4096": ["t1", "t16", "t64", "t256", "t65536"],
        "rope_llama31_h32_kv8_d128": ["t1", "t8", "t32", "t128", "t16384"]}
heldout = {"groupnorm32_silu_sd_vae": [
    {"batch_size": 1, "num_channels": 256, "height": 99, "width": 99},   # group-resident, 10 chunks, mid-vector channels
    {"batch_size": 1, "num_channels": 320, "height": 96, "width": 96},   # group-resident, 12 chunks
    {"batch_size": 1, "num_channels": 64, "height": 33, "width": 35},    # cnt % 8 != 0: scalar split
]}
for p in problems:
    name, dst, rows = copy_problem(tmp, p)
    keep = [r for r in rows if name not in pick or r["uuid"].replace(name + "-", "") in pick[name]]
    for ax in heldout.get(name, []):
        w = dict(rows[0])
        w["axes"] = ax
        w["uuid"] = name + "-heldout-" + "-".join(str(v) for v in ax.values())
        w["solforge"] = {"note": "held-out shape (tools/gpu_mem2.sh)"}
        keep.append(w)
    with open(os.path.join(dst, "workload.jsonl"), "w") as f:
        for r in keep:
            f.write(json.dumps(r) + "\n")
PY
# fast.cu defaults to the measured first-run versions; the v2 candidates side by side (the knob that
# turns each on): small-T fused_add, double sincos RoPE, group-resident GroupNorm (and with VPT 2).
# (fused_add's RMS_SMALL_T=256 is its default since session 7: its two columns now build the same.)
printf '#define RMS_SMALL_T 256\n' | cat - $FA/solutions/fast.cu >"$tmp/fa_v2.cu"
printf '#define RP_SINCOS_F64 1\n' | cat - $RP/solutions/fast.cu >"$tmp/rp_v2.cu"
printf '#define GN_COOP 1\n#define GN_COOP_VPT 2\n' | cat - $GN/solutions/fast.cu >"$tmp/gn_vpt2.cu"
printf '#define GN_COOP 1\n' | cat - $GN/solutions/fast.cu >"$tmp/gn_coop.cu"
C=tools/calibration/copy
for p in $GN $FA $RP $MEMB; do echo "$tmp/$(basename "$p") $p/solutions/fast.cu"; done |
	{ cat; echo "$tmp/$(basename $FA) $tmp/fa_v2.cu"; echo "$tmp/$(basename $RP) $tmp/rp_v2.cu"
		echo "$tmp/$(basename $GN) $tmp/gn_coop.cu"; echo "$tmp/$(basename $GN) $tmp/gn_vpt2.cu"
		echo "$C $C/solutions/copy.cu"; } |
	xargs -P "$(nproc)" -L 1 sh -c "$S eval \$0 \$1 --backend cuda --prepare-only >>$logs/prepare.log 2>&1" || true
note "build+compile: $(elapsed) s"

ev() { # ev PROBLEM [SOURCE TAG [ONLY]]: fast.cu (or SOURCE) on the selected workloads of PROBLEM's copy
	# in $tmp (those whose uuid contains ONLY, when given)
	local p=$1 name src=${2:-$1/solutions/fast.cu} tag=${3:-} only=()
	[ -n "${4:-}" ] && only=(--only "$4")
	name=$(basename "$p")$tag
	if [ "$(elapsed)" -ge "$budget" ]; then
		note "$name: not run (elapsed $(elapsed) s >= BUDGET_S $budget)"
		return
	fi
	timeout 120 $S eval "$tmp/$(basename "$p")" "$src" --backend cuda --copy-ceiling --rounds 1 --budget-ms 200 \
		${only[@]+"${only[@]}"} -o "$logs/$name.jsonl" >"$logs/$name.txt" 2>&1
	local rc=$?
	[ $rc = 0 ] || status=1
	note "$name: rc=$rc, $(grep -c '"PASSED"' "$logs/$name.jsonl" 2>/dev/null) passed, $(grep -vc '"PASSED"' "$logs/$name.jsonl" 2>/dev/null) not ($(elapsed) s)"
}

has gn && ev $GN
if has copy; then
	wait "$bench_pid"
	if [ -x build/copy_bench ]; then
		timeout 60 build/copy_bench 32 256 1024 4096 >"$logs/copy_bench.txt" 2>&1
		note "copy_bench: rc=$? ($(elapsed) s)"
	else
		note "copy_bench: build failed (see copy_bench_build.log)"
	fi
	timeout 40 python3 - >"$logs/torch_copy.txt" 2>&1 <<'PY'
import torch
for mib in (32, 256, 1024, 4096):
    n = mib * 1048576 // 2
    x = torch.randn(n, device="cuda", dtype=torch.float16); y = torch.empty_like(x)
    for _ in range(5): y.copy_(x)
    a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True); ts = []
    for _ in range(20):
        a.record(); y.copy_(x); b.record(); b.synchronize(); ts.append(a.elapsed_time(b))
    ts.sort(); us = ts[len(ts) // 2] * 1e3
    print("%-30s %9d %11.2f %7.3f" % ("torch copy_", mib, us, 2 * n * 2 / us * 1e-6))
    del x, y
PY
	note "torch copy: rc=$? ($(elapsed) s)"
fi
if has memb; then
	for p in $MEMB; do ev "$p"; done
fi
if has small; then
	ev $FA
	ev $RP
	ev $FA "$tmp/fa_v2.cu" _v2
	ev $RP "$tmp/rp_v2.cu" _v2
	ev $GN "$tmp/gn_coop.cu" _coop
	ev $GN "$tmp/gn_vpt2.cu" _coop_vpt2 c512 # n1-c512-64x64, n2-c512-128x128
fi
wait
rm -rf "$tmp"

python3 - "$logs" >"$out/table.txt" 2>&1 <<'PY'
import glob, json, os, sys
logs = sys.argv[1]
for name in ("copy_bench.txt", "torch_copy.txt"):
    p = os.path.join(logs, name)
    if os.path.exists(p):
        print("== " + name); print(open(p).read().rstrip()); print()
print("%-34s %-34s %-8s %9s %9s %6s %6s" % ("problem", "workload", "status", "T_k us", "copy us", "frac", "TB/s"))
bad = n = 0
for f in sorted(glob.glob(os.path.join(logs, "*.jsonl"))):
    for l in open(f):
        try:
            t = json.loads(l)
        except ValueError:
            continue
        e = t["evaluation"]; s = e.get("solforge", {}); tk = e.get("performance", {}).get("latency_ms")
        c, b, fr = s.get("copy_ms"), s.get("bytes"), s.get("bw_fraction_of_copy")
        n += 1; bad += e["status"] != "PASSED"
        print("%-34.34s %-34.34s %-8.8s %9s %9s %6s %6s" % (os.path.basename(f)[:-6], t["workload"]["uuid"].replace(t["definition"] + "-", ""),
              e["status"], "-" if not tk else "%.2f" % (tk * 1e3), "-" if not c else "%.2f" % (c * 1e3),
              "-" if fr is None else "%.3f" % fr, "-" if not (b and tk) else "%.2f" % (b / tk / 1e9)))
print("workloads: %d evaluated, %d not PASSED" % (n, bad))
PY
{
	echo "gpu_mem2 ($(elapsed) s):"
	cat "$logs/times.txt"
} >"$out/summary.txt"
cat "$out/table.txt" >>"$out/summary.txt"
tar -C "$out" -czf "$out/mem2_logs.tgz" mem2_logs && rm -rf "$logs"
cat "$out/summary.txt"
exit $status
