#!/usr/bin/env bash
# gpu_flushpair.sh - ours against the C baselines (e.g. cuBLASLt) under both L2 flushes, on a GPU machine: for every
# case PROBLEM%UUID of FLUSHPAIR_CASES (space-separated; PROBLEM as problems/FAMILY/NAME without the prefix), one
# `solforge eval --no-torch --rounds 1` of solutions/fast.cu with the diagnostic runner (make diag-runner) and no
# mode (the evaluator's memset flush), and one with SF_RUNNER_DIAG=readflush (the flush by reads: clean lines;
# docs/runner.md, "Timing parity"). The C baselines run in the same runner, so both sides of each ratio see the same
# flush. Table (ours, best baseline, ratio per flush) in $OUT/summary.txt; traces beside it.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu-flushpair}
mkdir -p "$out"
CASES=${FLUSHPAIR_CASES:-"llama/gemm_bf16_n4096_k4096%gemm_bf16_n4096_k4096-m64"}
make -j"$(nproc)" >"$out/make.log" 2>&1 && make diag-runner >>"$out/make.log" 2>&1 || { tail -20 "$out/make.log"; exit 1; }
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache}
for c in $CASES; do
	p=${c%%%*} u=${c#*%}
	for mode in memset readflush; do
		d=()
		[ $mode = readflush ] && d=(SF_RUNNER_DIAG=readflush)
		env SOLFORGE_RUNNER_DIR="$PWD/build/diag" "${d[@]}" timeout "${EVAL_TIMEOUT:-90}" build/solforge eval "problems/$p" \
			"problems/$p/solutions/fast.cu" --backend cuda --no-torch --rounds 1 --only "=$u" -o "$out/$u.$mode.jsonl" \
			>"$out/$u.$mode.txt" 2>&1
		echo "$u $mode: rc $?"
	done
done
python3 - "$out" >"$out/summary.txt" <<'PY'
import glob, json, os, sys
rows = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.jsonl"))):
    uuid, mode = os.path.basename(f)[:-6].rsplit(".", 1)
    for l in open(f):
        e = json.loads(l)["evaluation"]
        tk = e.get("performance", {}).get("latency_ms")
        bs = [b for b in e.get("solforge", {}).get("baselines", []) if b.get("status") == "PASSED" and b.get("median_ms")]
        b = min(bs, key=lambda b: b["median_ms"]) if bs else None
        rows.setdefault(uuid, {})[mode] = (e["status"], tk, b)
print("%-36s %-9s %-8s %9s %-10s %9s %7s" % ("workload", "flush", "status", "ours us", "baseline", "T_b us", "T_b/T_k"))
for u, m in rows.items():
    for mode in ("memset", "readflush"):
        if mode not in m:
            continue
        st, tk, b = m[mode]
        print("%-36s %-9s %-8s %9s %-10s %9s %7s" % (u, mode, st[:8], "%.2f" % (tk * 1e3) if tk else "-",
              b["name"][:10] if b else "-", "%.2f" % (b["median_ms"] * 1e3) if b else "-",
              "%.3f" % (b["median_ms"] / tk) if b and tk else "-"))
PY
cat "$out/summary.txt"
