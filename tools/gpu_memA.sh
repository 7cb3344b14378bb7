#!/usr/bin/env bash
# gpu_memA.sh - issue 7 part A on an H200: the memory-bound norm kernels (solutions/fast.cu of six
# problems) evaluated on the cuda backend with `--copy-ceiling` (the calibration copy timed at each
# workload's own byte count in the same run), then on held-out shapes (sizes not in the workload
# files), then the naive.cu of each problem for comparison. Prints one table last:
#   problem, workload, bytes, T_k (fast), copy time, fraction of copy, T_sol, SOL score, status,
#   T_naive and fast's speedup over naive.
#
# Steps (STEPS, default "build fast heldout"; add "naive" when there is time), run in that order
# while the elapsed time is under BUDGET_S (default 180 s; a problem's eval that would start later is
# reported as not run):
#   build    make, and every module / solution compiled in parallel (--prepare-only)
#   fast     eval fast.cu --copy-ceiling --rounds $ROUNDS (default 1: the big workloads' host-side
#            checks dominate the wall time) --budget-ms 300 on every workload
#   heldout  eval fast.cu --rounds 2 on held-out shapes (written here from each problem's first workload)
#   naive    eval naive.cu --rounds 1 --budget-ms 150 (the table puts its time beside fast's)
# PROBLEMS overrides the problem list; PART=1 / PART=2 take the first / last three problems (two device
# calls of ~2-3 min each, when one call of all six would run past 4 minutes). Logs and traces go to $OUT (default build/gpu-memA); with $OUT
# set they are packed into $OUT/memA_logs.tgz beside $OUT/summary.txt (the device tool returns at
# most 8 files). Exit status 0 when every evaluated workload passed.
set -u
cd "$(dirname "$0")/.." || exit 2
out=${OUT:-build/gpu-memA}
mkdir -p "$out"
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache}
export SOLFORGE_HOME=$PWD
steps=${STEPS:-build fast heldout}
budget=${BUDGET_S:-180}
rounds=${ROUNDS:-1}
S=build/solforge
part1="problems/llama/rmsnorm_h4096 problems/llama/fused_add_rmsnorm_h4096 problems/gemma/gemma_rmsnorm_h5376"
part2="problems/qwen/qk_rmsnorm_h32_kv4_d128 problems/stable-diffusion/groupnorm32_silu_sd_vae problems/flux/flux_adaln_layernorm_modulate_h3072"
case ${PART:-} in
1) PROBLEMS=${PROBLEMS:-$part1} ;;
2) PROBLEMS=${PROBLEMS:-$part2} ;;
*) PROBLEMS=${PROBLEMS:-"$part1 $part2"} ;;
esac
t0=$(date +%s)
status=0
notes=()
has() { case " $steps " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
elapsed() { echo $(($(date +%s) - t0)); }
in_time() {
	if [ "$(elapsed)" -ge "$budget" ]; then
		notes+=("$1: not run (elapsed $(elapsed) s >= BUDGET_S $budget)")
		return 1
	fi
	return 0
}

if has build; then
	if ! make -j"$(nproc)" >"$out/build.log" 2>&1; then
		tail -30 "$out/build.log"
		echo "gpu_memA: build failed"
		exit 1
	fi
	C=tools/calibration/copy
	for p in $PROBLEMS; do
		for s in fast naive; do echo "$p $p/solutions/$s.cu"; done
	done | { cat; echo "$C $C/solutions/copy.cu"; echo "$C $C/solutions/copy_simple.cu"; } |
		xargs -P "$(nproc)" -L 1 sh -c "$S eval \$0 \$1 --backend cuda --prepare-only >>$out/prepare.log 2>&1" || true
	# registers and spills of every fast.cu kernel (ptxas -v), for NOTES.md
	for p in $PROBLEMS; do
		echo "== $p/solutions/fast.cu"
		"$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinclude -Xptxas -v -c "$p/solutions/fast.cu" \
			-o /dev/null 2>&1 | grep -E 'registers|spill' | paste - -
	done >"$out/ptxas.txt" 2>&1
	notes+=("build: ok ($(elapsed) s)")
fi

if has fast; then
	: >"$out/fast.jsonl"
	for p in $PROBLEMS; do
		in_time "fast $(basename "$p")" || continue
		name=$(basename "$p")
		$S eval "$p" "$p/solutions/fast.cu" --backend cuda --copy-ceiling --rounds "$rounds" --budget-ms 300 \
			-o "$out/fast_$name.jsonl" >"$out/fast_$name.txt" 2>&1
		rc=$?
		[ $rc = 0 ] || status=1
		cat "$out/fast_$name.jsonl" >>"$out/fast.jsonl" 2>/dev/null
		notes+=("fast $name: exit $rc, $(grep -c '"PASSED"' "$out/fast_$name.jsonl" 2>/dev/null) passed, $(grep -vc '"PASSED"' "$out/fast_$name.jsonl" 2>/dev/null) not ($(elapsed) s)")
	done
fi

if has heldout; then
	: >"$out/heldout.jsonl"
	hd=$(mktemp -d /tmp/memA-heldout.XXXXXX)
	# held-out shapes: the var axes of each problem at sizes its workload file does not have (odd
	# sizes, the scalar and vector paths of every kernel, GroupNorm channel boundaries inside a vector)
	# shellcheck disable=SC2086 # PROBLEMS is a list
	python3 - "$hd" $PROBLEMS <<'PY'
import json, os, shutil, sys
hd, problems = sys.argv[1], sys.argv[2:]
shapes = {
    "rmsnorm_h4096": [{"batch_size": b} for b in (3, 777, 2049)],
    "fused_add_rmsnorm_h4096": [{"batch_size": b} for b in (5, 1500)],
    "gemma_rmsnorm_h5376": [{"num_tokens": b} for b in (2, 333, 2000)],
    "qk_rmsnorm_h32_kv4_d128": [{"T": t} for t in (3, 100, 5000)],
    "groupnorm32_silu_sd_vae": [
        {"batch_size": 1, "num_channels": 64, "height": 33, "width": 35},   # cnt % 8 != 0: scalar split
        {"batch_size": 1, "num_channels": 256, "height": 45, "width": 45},  # fused, channels end mid-vector
        {"batch_size": 1, "num_channels": 256, "height": 99, "width": 99},  # split 16-byte, same
        {"batch_size": 3, "num_channels": 96, "height": 20, "width": 24},   # fused, cpg 3
        {"batch_size": 1, "num_channels": 320, "height": 96, "width": 96},  # split 16-byte, 6 chunks
    ],
    "flux_adaln_layernorm_modulate_h3072": [{"batch_size": b, "seq_len": s} for b, s in ((3, 77), (1, 5000), (2, 1))],
}
for p in problems:
    name = os.path.basename(p.rstrip("/"))
    dst = os.path.join(hd, name)
    shutil.copytree(p, dst)
    first = json.loads(open(os.path.join(p, "workload.jsonl")).readline())
    with open(os.path.join(dst, "workload.jsonl"), "w") as f:
        for ax in shapes.get(name, []):
            w = dict(first)
            w["axes"] = ax
            w["uuid"] = name + "-heldout-" + "-".join(str(v) for v in ax.values())
            w["solforge"] = {"note": "held-out shape (tools/gpu_memA.sh)"}
            f.write(json.dumps(w) + "\n")
PY
	for p in $PROBLEMS; do
		in_time "heldout $(basename "$p")" || continue
		name=$(basename "$p")
		$S eval "$hd/$name" "$p/solutions/fast.cu" --backend cuda --rounds 2 --budget-ms 100 --no-baseline \
			-o "$out/heldout_$name.jsonl" >"$out/heldout_$name.txt" 2>&1
		rc=$?
		[ $rc = 0 ] || status=1
		cat "$out/heldout_$name.jsonl" >>"$out/heldout.jsonl" 2>/dev/null
		notes+=("heldout $name: exit $rc, $(grep -c '"PASSED"' "$out/heldout_$name.jsonl" 2>/dev/null) passed, $(grep -vc '"PASSED"' "$out/heldout_$name.jsonl" 2>/dev/null) not ($(elapsed) s)")
	done
	rm -rf "$hd"
fi

if has naive; then
	: >"$out/naive.jsonl"
	for p in $PROBLEMS; do
		in_time "naive $(basename "$p")" || continue
		name=$(basename "$p")
		$S eval "$p" "$p/solutions/naive.cu" --backend cuda --rounds 1 --budget-ms 150 \
			-o "$out/naive_$name.jsonl" >"$out/naive_$name.txt" 2>&1
		cat "$out/naive_$name.jsonl" >>"$out/naive.jsonl" 2>/dev/null
		notes+=("naive $name: $(grep -c '"PASSED"' "$out/naive_$name.jsonl" 2>/dev/null) passed ($(elapsed) s)")
	done
fi

# the table: one row per workload of fast.cu (and held-out rows), naive's time beside it
python3 - "$out" >"$out/table.txt" 2>&1 <<'PY'
import json, os, statistics, sys
out = sys.argv[1]
def load(name):
    p = os.path.join(out, name)
    if not os.path.exists(p):
        return []
    return [json.loads(l) for l in open(p) if l.strip()]
naive = {t["workload"]["uuid"]: t for t in load("naive.jsonl")}
def us(x):
    return "-" if x is None else "%.2f" % (x * 1e3)
def row(t):
    e = t["evaluation"]; s = e.get("solforge", {}); perf = e.get("performance", {})
    tk = perf.get("latency_ms"); uuid = t["workload"]["uuid"]
    n = naive.get(uuid); tn = n and n["evaluation"].get("performance", {}).get("latency_ms")
    frac = s.get("bw_fraction_of_copy")
    return ("%-36s %-26.26s %12s %10s %10s %6s %9s %6s %-20s %10s %6s" % (
        t["definition"][:36], uuid.replace(t["definition"] + "-", ""), "%.0f" % s["bytes"] if s.get("bytes") else "-",
        us(tk), us(s.get("copy_ms")), "-" if frac is None else "%.3f" % frac, us(s.get("sol_ms")),
        "-" if s.get("sol_score") is None else "%.3f" % s["sol_score"], e["status"], us(tn),
        "-" if not (tk and tn) else "%.2fx" % (tn / tk)), frac, e["status"])
print("%-36s %-26s %12s %10s %10s %6s %9s %6s %-20s %10s %6s" % ("problem", "workload", "bytes", "T_k us", "copy us",
      "frac", "T_sol us", "SOL", "status", "naive us", "vs nv"))
fr, bad = {}, 0
for t in load("fast.jsonl") + load("heldout.jsonl"):
    line, frac, st = row(t)
    print(line)
    if st != "PASSED":
        bad += 1
    if frac is not None:
        fr.setdefault(t["definition"], []).append(frac)
print()
for d, v in fr.items():
    print("%-36s copy fraction: median %.3f, min %.3f, >= 0.9 on %d of %d workloads" % (
        d, statistics.median(v), min(v), sum(x >= 0.9 for x in v), len(v)))
print("workloads not PASSED (fast + held-out): %d" % bad)
PY

{
	echo "gpu_memA summary ($(elapsed) s):"
	for n in "${notes[@]}"; do echo "  $n"; done
	tail -8 "$out/table.txt"
} >"$out/summary.txt"
cat "$out/table.txt"
echo
cat "$out/summary.txt"
if [ -n "${OUT:-}" ]; then
	tar czf "$out/../memA_logs.tgz" -C "$out" --exclude=summary.txt --exclude=table.txt . 2>/dev/null &&
		find "$out" -mindepth 1 ! -name summary.txt ! -name table.txt -delete &&
		mv "$out/../memA_logs.tgz" "$out/"
fi
exit $status
