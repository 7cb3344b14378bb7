#!/usr/bin/env bash
# cpu_oracle_all.sh - every problem evaluated end to end on the cpu backend with its oracle as the
# solution, on its smallest workload, whatever its size (the work limit is raised): the four problems
# whose smallest tensors are large (gate_up and down GEMMs, fp8 GEMM, NVFP4 MoE) take minutes.
# Closes with "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
S=${BUILD:-build}/solforge
pass=0 fail=0
for d in $(find problems -name definition.json -printf '%h\n' | sort); do
	# the smallest workload by FLOPs + bytes
	uuid=$($S sol "$d" --json 2>/dev/null | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
rows.sort(key=lambda r: sum(r["flops"].values()) + r["bytes"])
print(rows[0]["workload"] if rows else "")')
	if [ -z "$uuid" ]; then
		echo "FAIL $d: no workload"
		fail=$((fail + 1))
		continue
	fi
	out=$($S eval "$d" @oracle --backend cpu --only "=$uuid" --rounds 1 --budget-ms 50 --min-iters 3 \
		--cpu-max-work 1e12 --timeout 1800 --json 2>&1)
	st=$(echo "$out" | python3 -c '
import json, sys
for l in sys.stdin:
    if l.startswith("{"):
        r = json.loads(l)
        if r["workload"]["uuid"] == sys.argv[1]:
            print(r["evaluation"]["status"])' "$uuid")
	if [ "$st" = PASSED ]; then
		echo "ok $d $uuid"
		pass=$((pass + 1))
	else
		echo "FAIL $d $uuid"
		echo "$out" | tail -5 | sed 's/^/    /'
		fail=$((fail + 1))
	fi
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
