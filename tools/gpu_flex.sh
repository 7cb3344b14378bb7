#!/usr/bin/env bash
# gpu_flex.sh - the FlexAttention baselines of the paged GQA attention problems on an H200 with torch
# (problems/common/baselines/torch/attention_flex.py, docs/bridge.md), in one go under a wall-time
# budget (FLEX_BUDGET, else BUDGET, seconds, default 220; workloads that do not fit are reported as skipped).
# Each picked workload is evaluated with solutions/fast.cu and every baseline (torch, torch.compile,
# flex_attention), 2 rounds (ragged decode workloads change the padded kv length between rounds:
# that exercises the recompile), and the trace's solforge.baselines is tabulated: status vs the C
# oracle (output and base-2 lse), median ms, compile_s. The first four workloads (one per problem)
# come first; then tests/bridge/test_attention_flex.py (2 seeds of random ragged batches through the
# compiled entries on cuda vs attention.py's float32 baselines), then the next four while the budget
# lasts.
# Full logs and traces go to $OUT (or build/gpu-flex), packed into gpu_flex_logs.tgz beside
# summary.txt; the table is printed last.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu-flex}
mkdir -p "$out/traces" "$out/logs"
BUDGET=${FLEX_BUDGET:-${BUDGET:-220}}
BACKEND=${BACKEND:-cuda}   # BACKEND=cpu SOL=@oracle PICKS="..." tests this script without a GPU
SOL=${SOL:-fast.cu}
S=build/solforge
T0=$(date +%s)
sol() { case $SOL in @*) echo "$SOL" ;; *) echo "$P/$1/solutions/$SOL" ;; esac; }
left() { echo $((BUDGET - ($(date +%s) - T0))); }
P=problems/llama
PF=gqa_paged_prefill_causal_h32_kv8_d128
DC=gqa_paged_decode_h32_kv8_d128
PICKS="${PICKS:-${PF}_ps1:b8-q2048-kv6144-e2 ${PF}_ps16:q8192 ${DC}_ps1:b64-kv12288-ragged ${DC}_ps16:b64-kv4096
${PF}_ps16:b8-q2048-kv6144-e2 ${PF}_ps1:q16384 ${DC}_ps16:b16-kv4096-ragged ${DC}_ps1:b256-kv4096}"

if ! make -j"$(nproc)" >"$out/logs/build.log" 2>&1; then
	tail -30 "$out/logs/build.log"
	echo "gpu_flex: build failed"
	exit 1
fi
{
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
	python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))' 2>&1
	echo "command: OUT=$out BUDGET=$BUDGET tools/gpu_flex.sh ($(git rev-parse --short HEAD 2>/dev/null))"
} >"$out/env.txt" 2>&1
for pr in $PF"_ps1" $PF"_ps16" $DC"_ps1" $DC"_ps16"; do
	echo "$P/$pr $(sol "$pr")"
done | xargs -P 4 -L 1 sh -c "$S eval \$0 \$1 --backend $BACKEND --prepare-only >/dev/null 2>&1" || true
echo "build: $(($(date +%s) - T0)) s" >>"$out/env.txt"

n=0
for pick in $PICKS; do
	n=$((n + 1))
	if [ $n -eq 5 ] && [ "$BACKEND" = cuda ] && [ "$(left)" -gt 60 ]; then
		# random ragged batches through the compiled entries vs attention.py's float32 baselines
		timeout $(($(left) > 100 ? 90 : $(left) - 10)) python3 tests/bridge/test_attention_flex.py 2 cuda \
			>"$out/logs/test_attention_flex.log" 2>&1
		echo "test_attention_flex rc=$? $(grep -h 'checks passed' "$out/logs/test_attention_flex.log")" >>"$out/env.txt"
	fi
	pr=${pick%%:*}
	w=${pick#*:}
	u="$pr-$w"
	if [ "$(left)" -lt 45 ]; then
		echo "$u skipped (budget)" >>"$out/skipped.txt"
		continue
	fi
	t0=$(date +%s)
	timeout $(($(left) - 5)) $S eval "$P/$pr" "$(sol "$pr")" --backend "$BACKEND" --rounds 2 \
		--budget-ms 300 --only "=$u" --json -o "$out/traces/$u.jsonl" >"$out/logs/$u.log" 2>&1
	echo "$u rc=$? $(($(date +%s) - t0)) s" >>"$out/env.txt"
done

python3 - "$out" <<'EOF' >"$out/table.txt"
import glob, json, os, sys
out = sys.argv[1]
print(f"{'workload':58s} {'baseline':15s} {'status':22s} {'median_ms':>10s} {'compile_s':>9s}")
for f in sorted(glob.glob(os.path.join(out, "traces", "*.jsonl"))):
    for l in open(f):
        if not l.strip():
            continue
        t = json.loads(l)
        e = t["evaluation"]
        sf = e.get("solforge", {})
        u = t["workload"]["uuid"].replace("gqa_paged_", "")
        print(f"{u:58s} {t['solution'][-15:]:15s} {e['status']:22s} {e.get('performance', {}).get('latency_ms') or 0:10.4f}"
              f" {'T_b=' + str(sf.get('baseline')):>9s}")
        for b in sf.get("baselines", []):
            print(f"{'':58s} {b['name']:15s} {b['status']:22s} {b.get('median_ms') or 0:10.4f} "
                  f"{b.get('compile_s') or 0:9.1f}")
EOF
[ -f "$out/skipped.txt" ] && cat "$out/skipped.txt" >>"$out/table.txt"
{ cat "$out/env.txt"; cat "$out/table.txt"; } >"$out/summary.txt"
grep -h "^test_attention_flex" "$out/env.txt" >>"$out/table.txt"
tar czf "$out/gpu_flex_logs.tgz" -C "$out" traces logs env.txt 2>/dev/null
rm -rf "$out/traces" "$out/logs"
cat "$out/table.txt"
