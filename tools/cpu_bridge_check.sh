#!/usr/bin/env bash
# cpu_bridge_check.sh - every problem's PyTorch baseline and PyTorch reference checked against its C
# oracle on the cpu backend (no GPU needed; needs a python with torch: SOLFORGE_PYTHON).
#
# For each problem: the first workload (skipped when over --cpu-max-work), the C oracle compiled as
# the candidate (@oracle), the eager torch baseline compared with the oracle like any baseline, and
# --xval (the definition's reference vs the oracle). torch.compile is skipped (minutes per shape on
# a small CPU). Traces go to OUT (default build/cpu-bridge); a table is printed last.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-build/cpu-bridge}
mkdir -p "$out"
export SOLFORGE_BRIDGE_NO_COMPILE=1
for d in $(ls -d problems/*/*/ | sed 's:/$::'); do
	[ -f "$d/definition.json" ] || continue
	u=$(head -1 "$d/workload.jsonl" | python3 -c "import json,sys; print(json.loads(sys.stdin.read())['uuid'])")
	build/solforge eval "$d" @oracle --backend cpu --rounds 1 --budget-ms 20 --max-iters 20 --only "=$u" --xval \
		--json -o "$out/$(basename "$d").jsonl" >"$out/$(basename "$d").log" 2>&1
done
cat "$out"/*.jsonl | python3 -c "
import json, sys
for l in sys.stdin:
    x = json.loads(l); e = x['evaluation']; bl = {b['name']: b for b in e.get('solforge', {}).get('baselines', [])}
    xv = bl.get('pytorch-reference', {})
    print('%-44s %-26s %-8s torch=%-8s xval=%-6s max_abs_err=%s' % (x['definition'], x['workload']['uuid'][-26:], e['status'],
          bl.get('torch', {}).get('status', '-'), xv.get('status', '-'), xv.get('max_abs_err', '-')))
"
