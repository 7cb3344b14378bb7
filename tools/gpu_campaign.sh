#!/usr/bin/env bash
# gpu_campaign.sh - the campaign on an H200: a `tune` campaign over 8 bundled problems whose
# solutions/tuned.cu declare solforge-tune parameters (block size, vector width, rows per block,
# pairs per thread), started from naive.cu and tuned.cu as they come, then the report (text + HTML).
#
# Needs SQLite for the campaign: the system's libsqlite3-dev, or .devdeps/ made by tools/devdeps.sh on
# a machine that has it (carried here). Environment: OUT (results folder; default /tmp/sf-gpu-campaign),
# GPUS (device ids, default 0), BUDGET (campaign wall time, default 150s), WORKERS (default 8),
# BUDGET_MS / ROUNDS (timing per workload, default 150 / 2: raise BUDGET_MS to make the runs GPU-bound,
# as tools/gpu_multi.sh does to measure scaling), SEED_CACHE (a compile cache copied in as the
# campaign's starting cache, default .devcache when present: the seeded solutions are then not
# compiled here, the tuner's variants always are).
# --no-torch: the PyTorch baselines (one python + torch start per workload) are left out of this short
# run; the gain is measured against each problem's first solution.
# Writes under $OUT: summary.txt, report.txt, report.html, campaign.db, logs.tgz (build log, campaign
# log, every evaluation's traces and evaluator log, the GPU timing log). Prints the report last.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
OUT=${OUT:-/tmp/sf-gpu-campaign}
GPUS=${GPUS:-0}
BUDGET=${BUDGET:-150s}
WORKERS=${WORKERS:-8}
mkdir -p "$OUT/logs"
t0=$(date +%s)
export PATH=$PATH:/usr/local/cuda/bin
if [ ! -f /usr/include/sqlite3.h ] && [ ! -f .devdeps/sqlite3.h ]; then
	echo "gpu_campaign: no SQLite header here and no .devdeps/ (run tools/devdeps.sh where libsqlite3-dev is, carry .devdeps)" |
		tee "$OUT/summary.txt"
	exit 1
fi
make -j"$(nproc)" >"$OUT/logs/build.log" 2>&1 || {
	echo "gpu_campaign: build failed (logs/build.log)" | tee "$OUT/summary.txt"
	tail -30 "$OUT/logs/build.log"
	tar -C "$OUT" -czf "$OUT/logs.tgz" logs
	exit 1
}
SF=./build/solforge
PROBS=(problems/llama/rmsnorm_h4096 problems/gemma/gemma_rmsnorm_h5376 problems/llama/fused_add_rmsnorm_h4096
	problems/qwen/qk_rmsnorm_h32_kv4_d128 problems/llama/silu_and_mul_i14336 problems/gemma/geglu_tanh_h5376_i21504
	problems/flux/flux_adaln_layernorm_modulate_h3072 problems/llama/rope_llama31_h32_kv8_d128)
DB=$OUT/campaign.db
rm -rf "$DB" "$DB-wal" "$DB-shm" "$DB.d"
export SOLFORGE_CACHE=$OUT/cache
rm -rf "$SOLFORGE_CACHE"
SEED_CACHE=${SEED_CACHE:-.devcache}
[ -f .devcache.tgz ] && [ ! -d .devcache ] && tar xzf .devcache.tgz
[ -d "$SEED_CACHE" ] && cp -r "$SEED_CACHE" "$SOLFORGE_CACHE"
CMD=("$SF" campaign "${PROBS[@]}" --agent tune --workers "$WORKERS" --gpus "$GPUS" --budget "$BUDGET" --db "$DB"
	--solutions naive.cu,tuned.cu --tune-batch 3 --backend cuda --sample 3 --rounds "${ROUNDS:-2}" --budget-ms "${BUDGET_MS:-150}" --no-torch --no-live)
echo "\$ ${CMD[*]}" >"$OUT/logs/campaign.log"
t1=$(date +%s)
timeout 300 "${CMD[@]}" >>"$OUT/logs/campaign.log" 2>&1
rc=$?
t2=$(date +%s)
"$SF" report "$DB" --html "$OUT/report.html" >"$OUT/report.txt" 2>&1
cp "$DB.d/campaign.log" "$OUT/logs/campaign.db.log" 2>/dev/null
cp "$DB.d/locks/timing.log" "$OUT/logs/gpu_timing.log" 2>/dev/null
cp -r "$DB.d/evals" "$OUT/logs/evals" 2>/dev/null
{
	echo "gpu_campaign: $(date -u +%FT%TZ) on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
	echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'); build $((t1 - t0)) s; campaign $((t2 - t1)) s, exit $rc"
	echo "command: ${CMD[*]}"
	grep '^totals:' "$OUT/report.txt"
	echo "evaluations by status:"
	python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); [print("  %-22s %d" % r) for r in c.execute("SELECT status, count(*) FROM evaluations GROUP BY status")]' "$DB" 2>/dev/null
	# how busy each GPU's timing slot was over the campaign (held seconds / campaign seconds): near 1
	# means the GPU was the bottleneck, low means compiling or the CPU side was
	python3 - "$OUT/logs/gpu_timing.log" "$((t2 - t1))" <<'PY' 2>/dev/null
import collections, sys
held = collections.Counter()
for l in open(sys.argv[1]):
    f = l.split()
    if len(f) >= 5:
        held[f[1]] += float(f[4])
span = max(float(sys.argv[2]), 1.0)
print("GPU slot busy: " + ", ".join("%s %.0f s of %.0f s (%.0f%%)" % (k, v, span, 100 * v / span) for k, v in sorted(held.items())))
PY
} >"$OUT/summary.txt"
rm -rf "$OUT/cache"
tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$OUT/logs"
cat "$OUT/summary.txt"
echo
cat "$OUT/report.txt"
