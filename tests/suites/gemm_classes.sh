#!/usr/bin/env bash
# gemm_classes.sh - tools/gemm_classes.py (issue 8's verdict per M class) on synthetic traces: every class met
# exits 0 and says so; one case pushed just under its target (drawn: a mid-M workload under 1.0, a small-M shape
# whose geomean falls under 1.2, a read fraction under 0.90, a large-M shape under 0.97, a FAILED workload) exits 1
# and names it. Speedups are drawn per run around the targets (the seed is printed).
set -u
cd "$(dirname "$0")/../.." || exit 2
seed=${SEED:-$((RANDOM * 32768 + RANDOM))}
echo "seed $seed"
tmp=$(mktemp -d /tmp/gemmcls.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
P=0 F=0
check() { # check NAME CONDITION-EXIT-STATUS
	if [ "$2" = 0 ]; then echo "ok $1"; P=$((P + 1)); else echo "FAIL $1"; F=$((F + 1)); fi
}
python3 - "$tmp" "$seed" <<'PY'
import json, os, random, sys
d, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
shapes = ["gemm_a", "gemm_b", "gemm_c"]
ms = [1, 2, 8, 16, 32, 64, 128, 512, 1024, 4096]
def write(name, edit=None):
    with open(os.path.join(d, name + ".jsonl"), "w") as f:
        for s in shapes:
            for m in ms:
                tk = rng.uniform(0.01, 3.0)
                sp = rng.uniform(1.25, 1.6) if m <= 16 else rng.uniform(1.0, 1.2)
                st, rf = "PASSED", rng.uniform(0.91, 1.1)
                if edit:
                    sp, st, rf = edit(s, m, sp, st, rf)
                t = {"definition": s, "workload": {"uuid": "%s-m%d" % (s, m), "axes": {"M": m}},
                     "evaluation": {"status": st, "performance": {"latency_ms": tk} if st == "PASSED" else None,
                                    "solforge": {"bw_fraction_of_read": rf if m <= 16 else None, "bytes": 2 ** 25 + m,
                                                 "read_bytes": 2 ** 25 + m + rng.randint(0, 4096),
                                                 "baselines": [{"name": "cublasLt", "status": "PASSED", "median_ms": tk * sp},
                                                               {"name": "slow", "status": "PASSED", "median_ms": tk * sp * 3}]}}}
                f.write(json.dumps(t) + "\n")
write("good")
s0 = rng.choice(shapes)
write("mid", lambda s, m, sp, st, rf: (rng.uniform(0.9, 0.995) if (s, m) == (s0, 128) else sp, st, rf))
write("small", lambda s, m, sp, st, rf: (rng.uniform(1.0, 1.1) if m <= 16 else sp, st, rf))
write("read", lambda s, m, sp, st, rf: (sp, st, rng.uniform(0.5, 0.89) if (s, m) == (s0, 8) else rf))
write("big", lambda s, m, sp, st, rf: (rng.uniform(0.8, 0.95) if s == s0 and m >= 1024 else sp, st, rf))
write("failed", lambda s, m, sp, st, rf: (sp, "INCORRECT_NUMERICAL" if (s, m) == (s0, 2) else st, rf))
open(os.path.join(d, "s0"), "w").write(s0)
PY
s0=$(cat "$tmp/s0")
python3 tools/gemm_classes.py "$tmp/good.jsonl" >"$tmp/good.out" 2>&1
rc=$?
check "every class met: exit 0" "$([ $rc = 0 ] && echo 0 || echo 1)"
check "every class met: says so" "$(grep -q "issue 8's targets: all met" "$tmp/good.out" && echo 0 || echo 1)"
check "every class met: 3 large-M lines" "$([ "$(grep -c '^M >= 1024 .* met$' "$tmp/good.out")" = 3 ] && echo 0 || echo 1)"
for c in mid small read big failed; do
	python3 tools/gemm_classes.py "$tmp/$c.jsonl" >"$tmp/$c.out" 2>&1
	rc=$?
	check "$c: exit 1" "$([ $rc = 1 ] && echo 0 || { cat "$tmp/$c.out"; echo 1; })"
	check "$c: not all met" "$(grep -q "targets: not all met" "$tmp/$c.out" && echo 0 || echo 1)"
done
check "mid: names the workload" "$(grep -q "MISSED: $s0 M 128" "$tmp/mid.out" && echo 0 || echo 1)"
check "small: the M <= 16 line missed" "$(grep -q '^M <= 16     geomean .* MISSED' "$tmp/small.out" && echo 0 || echo 1)"
check "read: names the workload" "$(grep -q "read: .*MISSED: $s0 M 8" "$tmp/read.out" && echo 0 || echo 1)"
check "big: the shape missed" "$(grep -q "^M >= 1024   $s0: .*MISSED" "$tmp/big.out" && echo 0 || echo 1)"
check "failed: not judged" "$(grep -q "not judged.*$s0 M 2: INCORRECT_NUMERICAL" "$tmp/failed.out" && echo 0 || echo 1)"
python3 tools/gemm_classes.py "$tmp/none.jsonl" >/dev/null 2>&1
check "no usable trace: exit 2" "$([ $? = 2 ] && echo 0 || echo 1)"
echo "$P passed, $F failed"
[ "$F" = 0 ]
