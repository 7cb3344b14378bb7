#!/usr/bin/env bash
# gpu_benchhook.sh - checks on an H200 that the bridge keeps inductor's device work in the device slot
# and torch.compile's (re)compiles out of it (tools/bridge/sf_benchgate.py, docs/bridge.md "The device
# slot"), in one go (~3 min):
#   1. tools/bridge/benchgate_selftest.py: real torch, a data-dependent-length function compiled with
#      warm calls: benchmarks outside the slot 0, compiles let the slot go, a recompile in the tasks'
#      hold detected;
#   2. `solforge eval` of the two ragged attention workloads where session 7 (call 3) saw about twice as
#      many inductor benchmarks as autotune holds and 11-23 s holds (decode cpu-b3-kv1500, prefill
#      cpu-b2-q64), side by side (JOBS 2: their timing serialized by the slot), with the phases log.
#      Expected now: benchmarks outside the slot 0, in the tasks' hold 0, dynamo compiles in the
#      tasks' hold 0, warm calls > 0, held_s near the other attention workloads' 4-6 s.
#
#   tools/gpu_benchhook.sh        env: ONLY_DECODE / ONLY_PREFILL (workload uuid substrings), BUDGET_MS (150)
#
# Logs: $OUT (device tool) or build/gpu-benchhook: summary.txt, benchhook_logs.tgz (selftest output,
# eval traces and logs, the phases log, the slot's timing log). Exit 0 when everything passed.
set -u
cd "$(dirname "$0")/.." || exit 2
out=${OUT:-build/gpu-benchhook}
logs=$out/benchhook_logs
rm -rf "$logs"
mkdir -p "$logs"
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache}
export SOLFORGE_HOME=$PWD
budget=${BUDGET_MS:-150}
dec=${ONLY_DECODE:-cpu-b3-kv1500}
pre=${ONLY_PREFILL:-cpu-b2-q64}
status=0
if ! make -j"$(nproc)" >"$logs/build.log" 2>&1; then
	tail -30 "$logs/build.log"
	echo "gpu_benchhook: build failed"
	exit 1
fi
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)' >"$logs/env.txt" 2>&1

t0=$(date +%s)
timeout 120 python3 tools/bridge/benchgate_selftest.py >"$logs/selftest.txt" 2>&1
rc=$?
[ $rc = 0 ] || status=1
echo "selftest: rc $rc, $(($(date +%s) - t0)) s" >"$logs/times.txt"

export SOLFORGE_GPU_LOCKS=$logs/locks
export SOLFORGE_BRIDGE_PHASES=$logs/bridge_phases.jsonl
mkdir -p "$SOLFORGE_GPU_LOCKS"
one_eval() {
	local prob=$1 only=$2 name=$3 s0 rc
	s0=$(date +%s)
	timeout 150 build/solforge eval "problems/llama/$prob" "problems/llama/$prob/solutions/fast.cu" --only "$only" \
		--rounds 3 --budget-ms "$budget" --json -o "$logs/$name.jsonl" >"$logs/$name.out" 2>"$logs/$name.err"
	rc=$?
	echo "$name: rc $rc, $(($(date +%s) - s0)) s" >>"$logs/times.txt"
}
one_eval gqa_paged_decode_h32_kv8_d128_ps1 "$dec" decode &
one_eval gqa_paged_prefill_causal_h32_kv8_d128_ps1 "$pre" prefill &
wait
grep -q ': rc [1-9]' "$logs/times.txt" && status=1

{
	cat "$logs/env.txt"
	cat "$logs/times.txt"
	grep -E '^(ok|FAIL|seed)' "$logs/selftest.txt"
	if [ -f "$logs/bridge_phases.jsonl" ]; then
		python3 tools/bridge/phases_summary.py "$logs/bridge_phases.jsonl"
		python3 - "$logs/bridge_phases.jsonl" <<'EOF'
import json, sys
print(f"{'workload':<52} {'held_s':>7} {'outside':>7} {'in_task':>7} {'comp_in':>7} {'holds':>6} {'bench':>6}  tasks (compile_s/warm_calls/task_s)")
for ln in open(sys.argv[1]):
    r = json.loads(ln)
    ts = " ".join(f"{t['name']}:{t['compile_s']}/{t.get('warm_calls', 0)}/{t['task_s']}" for t in r["tasks"] if t["compile_s"])
    print(f"{str(r.get('what')):<52} {r['held_s']:>7} {str(r.get('benchmarks_outside_slot')):>7} "
          f"{str(r.get('benchmarks_in_task_hold')):>7} {str(r.get('compiles_in_task_hold')):>7} "
          f"{str(r.get('autotune_holds')):>6} {str(r.get('inductor_benchmarks')):>6}  {ts}")
EOF
	else
		echo "no phases log: the bridge did not run"
	fi
} >"$out/summary.txt" 2>&1
python3 - "$logs/bridge_phases.jsonl" <<'EOF' || status=1
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])] if __import__("os").path.exists(sys.argv[1]) else []
bad = [r for r in recs if r.get("benchmarks_outside_slot") != 0 or r.get("benchmarks_in_task_hold") != 0
       or r.get("compiles_in_task_hold") != 0]
sys.exit(1 if bad or len(recs) < 2 else 0)
EOF
cp "$SOLFORGE_GPU_LOCKS"/timing.log "$logs/" 2>/dev/null
if [ -n "${OUT:-}" ]; then
	tar czf "$out/benchhook_logs.tgz" -C "$out" benchhook_logs && rm -rf "$logs"
fi
echo "status $status (0: all checks passed)" >>"$out/summary.txt"
cat "$out/summary.txt"
exit $status
