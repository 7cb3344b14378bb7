#!/usr/bin/env bash
# baseline_coverage.sh - tools/baseline_coverage.py on synthetic traces: a workload without a compared trace is
# NEVER; the latest session is taken by its number (s12 after s5 on one date), not by the path's spelling; per-baseline
# traces of one session add up to "every baseline"; a baseline that failed is named with its status; the ratio is
# the smallest T_b / T_k of that session's traces; a FAILED candidate trace compares nothing. Times are drawn per
# run (the seed is printed).
set -u
cd "$(dirname "$0")/../.." || exit 2
seed=${SEED:-$((RANDOM * 32768 + RANDOM))}
echo "seed $seed"
tmp=$(mktemp -d /tmp/basecov.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" "$seed" <<'PY'
import json, os, random, subprocess, sys
d, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
P = F = 0
def check(name, cond, detail=""):
    global P, F
    if cond:
        P += 1; print("ok", name)
    else:
        F += 1; print("FAIL", name, detail[:800])
names = ["b_one", "b_two", "b_three"]
prob = os.path.join(d, "prob")
os.makedirs(prob)
json.dump({"name": "prob", "solforge": {"baselines": [{"name": n} for n in names]}}, open(os.path.join(prob, "definition.json"), "w"))
uuids = ["prob-w%d" % i for i in range(5)]
with open(os.path.join(prob, "workload.jsonl"), "w") as f:
    for u in uuids:
        f.write(json.dumps({"uuid": u}) + "\n")
def trace(u, tk, bases, status="PASSED"):
    return {"workload": {"uuid": u}, "evaluation": {"status": status, "performance": {"latency_ms": tk},
            "solforge": {"baselines": [{"name": n, "status": s, "median_ms": m} for n, s, m in bases]}}}
def write(session, name, traces):
    p = os.path.join(d, "results", session, "call1", "traces")
    os.makedirs(p, exist_ok=True)
    with open(os.path.join(p, name + ".jsonl"), "a") as f:
        for t in traces:
            f.write(json.dumps(t) + "\n")
tk = [rng.uniform(0.01, 5) for _ in uuids]
r = [rng.uniform(1.1, 4) for _ in uuids]
# w0: never traced; w1: s5 has all three (an old, higher ratio), s12 has only b_one PASSED and b_two TIMEOUT
write("2026-11-30-s5", "a", [trace(uuids[1], tk[1], [(n, "PASSED", tk[1] * (r[1] + 1)) for n in names])])
write("2026-11-30-s12", "a", [trace(uuids[1], tk[1], [("b_one", "PASSED", tk[1] * r[1]), ("b_two", "TIMEOUT", None)])])
# w2: s12, one eval per baseline (three traces, each its own candidate time): every baseline, the smallest ratio
rs = [rng.uniform(1.1, 4) for _ in names]
write("2026-11-30-s12", "b", [trace(uuids[2], tk[2] * (1 + 0.1 * i), [(n, "PASSED", tk[2] * (1 + 0.1 * i) * rs[i])]) for i, n in enumerate(names)])
# w3: only a FAILED candidate trace (compares nothing); w4: a trace whose every baseline failed
write("2026-12-01-s13", "c", [trace(uuids[3], tk[3], [(n, "PASSED", tk[3] * 2) for n in names], status="INCORRECT_NUMERICAL"),
                              trace(uuids[4], tk[4], [(n, "RUNTIME_ERROR", None) for n in names])])
out = subprocess.run([sys.executable, "tools/baseline_coverage.py", prob, "--traces", os.path.join(d, "results", "*", "**", "*.jsonl")],
                     capture_output=True, text=True)
rows = {ln.split(":")[0].strip(): ln.split(":", 1)[1].strip() for ln in out.stdout.splitlines() if ln.startswith("  ")}
check("exit_0", out.returncode == 0, out.stderr)
check("never", rows.get(uuids[0]) == "NEVER" and rows.get(uuids[3]) == "NEVER" and rows.get(uuids[4]) == "NEVER", str(rows))
check("latest_by_number", rows.get(uuids[1], "").startswith("2026-11-30-s12: 1/3 baselines")
      and "b_two: TIMEOUT" in rows.get(uuids[1], "") and "b_three: not run" in rows.get(uuids[1], "")
      and rows.get(uuids[1], "").endswith(f"T_b/T_k {r[1]:.2f}"), rows.get(uuids[1], ""))
check("per_baseline_evals_add_up", rows.get(uuids[2]) == f"2026-11-30-s12: 3/3 baselines, T_b/T_k {min(rs):.2f}", rows.get(uuids[2], ""))
check("counts", out.stdout.strip().splitlines()[-1] == "workloads: 5; against every baseline 1, against some 1, never 3", out.stdout)
bad = subprocess.run([sys.executable, "tools/baseline_coverage.py"], capture_output=True, text=True)
check("usage", bad.returncode == 2, bad.stderr)
print(f"{P} passed, {F} failed")
sys.exit(1 if F else 0)
PY
