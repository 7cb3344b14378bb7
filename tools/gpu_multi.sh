#!/usr/bin/env bash
# gpu_multi.sh - issue 10 on a machine with two or more GPUs (nvidia-h200-x2): the campaign's GPU pool
# over several GPUs. Three parts, everything logged under $OUT (default build/gpu-multi):
#   agree     the same solutions timed on GPU 0 and GPU 1, alternating (0,1,0,1): the medians must agree
#             within 2% (calibration copy at 2^24 elements, the llama RMSNorm fast.cu at 4096 tokens)
#   scale     the same `tune` campaign (tools/gpu_campaign.sh) run with every GPU and with GPU 0 alone,
#             BUDGET each, fresh database and compile cache each: finished evaluations per hour, and the
#             GPU timing log (which GPU timed what, when; no two timings overlap on one GPU)
# The campaign on every GPU is also issue 6's H200 record (its report: all/report.txt, report.html).
set -u
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu-multi}
mkdir -p "$out"
export PATH=$PATH:/usr/local/cuda/bin
BUDGET=${BUDGET:-60s}
# the scaling runs time each workload for BUDGET_MS (default 1000 ms): evaluations are then bound by the
# GPU timing slots, not by nvcc compiling the tuner's variants on the host's cores (which does not
# scale with the GPU count); each run's summary says how busy its slots were
export BUDGET_MS=${BUDGET_MS:-1000}
ngpu=$(nvidia-smi -L | grep -c '^GPU')
all=$(seq -s, 0 $((ngpu - 1)))
make -j"$(nproc)" >"$out/build.log" 2>&1 || { echo "gpu_multi: build failed"; tail -20 "$out/build.log"; exit 1; }
S=./build/solforge
: >"$out/agree.txt"
for spec in "tools/calibration/copy tools/calibration/copy/solutions/copy.cu =copy-n2^24" \
	"problems/llama/rmsnorm_h4096 problems/llama/rmsnorm_h4096/solutions/fast.cu =rmsnorm_h4096-t4096"; do
	set -- $spec
	for g in 0 1 0 1; do
		ms=$(CUDA_VISIBLE_DEVICES=$g $S eval "$1" "$2" --backend cuda --only "$3" --json --no-baseline --no-torch 2>/dev/null |
			python3 -c 'import json,sys; [print(json.loads(l)["evaluation"]["performance"]["latency_ms"]) for l in sys.stdin if "latency_ms" in l]')
		echo "$3 gpu$g ${ms:-nan}" >>"$out/agree.txt"
	done
done
python3 - "$out/agree.txt" >"$out/agree_summary.txt" <<'PY'
import sys, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for l in open(sys.argv[1]):
    w, g, v = l.split()
    d[w][g].append(float(v))
ok = bool(d)
for w, gs in d.items():
    med = {g: sorted(v)[len(v) // 2] for g, v in gs.items()}
    vals = list(med.values())
    diff = (max(vals) - min(vals)) / min(vals) if vals and min(vals) > 0 else float("nan")
    ok &= len(vals) >= 2 and diff <= 0.02
    print("%s: %s; GPUs differ by %.2f%%" % (w, ", ".join("%s %.4f ms" % kv for kv in sorted(med.items())), 100 * diff))
print("agree: " + ("PASS" if ok else "FAIL") + " (within 2%)")
PY
cat "$out/agree_summary.txt"
runs=("all:$all")
[ "$ngpu" -gt 1 ] && runs+=("one:0")
for r in "${runs[@]}"; do
	name=${r%%:*} gpus=${r#*:}
	OUT="$out/$name" GPUS=$gpus BUDGET=$BUDGET tools/gpu_campaign.sh >"$out/$name.stdout" 2>&1
	grep '^GPU slot busy' "$out/$name/summary.txt" | sed "s/^/$name: /" >>"$out/scale.txt"
	python3 - "$out/$name/campaign.db" "$name" "$gpus" >>"$out/scale.txt" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
n, t0, t1 = c.execute("SELECT count(*), min(started), max(finished) FROM evaluations WHERE finished IS NOT NULL").fetchone()
by = c.execute("SELECT gpu, count(*) FROM evaluations WHERE finished IS NOT NULL GROUP BY gpu").fetchall()
span = (t1 - t0) if n else 0
print("%s (GPUs %s): %d evaluations in %.0f s = %.0f per hour; by GPU: %s" % (
    sys.argv[2], sys.argv[3], n, span, 3600.0 * n / span if span else 0, ", ".join("%s %d" % g for g in by)))
PY
done
cat "$out/scale.txt"
