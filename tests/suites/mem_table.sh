#!/usr/bin/env bash
# mem_table.sh - tools/mem_table.py (the memory-bound / attention tables of gpu_memtable.sh) on synthetic traces:
# the best PASSED baseline is the one shown and the speedup is T_b / T_k; a workload whose baselines all ran and
# failed says "(none: N failed (STATUS))" and is listed on its own line, while one without baselines (--no-torch)
# shows a bare "-" and is not listed; the counts line counts only compared workloads; a FAILED trace exits 1.
# Times and how many baselines fail are drawn per run (the seed is printed).
set -u
cd "$(dirname "$0")/../.." || exit 2
seed=${SEED:-$((RANDOM * 32768 + RANDOM))}
echo "seed $seed"
tmp=$(mktemp -d /tmp/memtable.XXXXXX)
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
        F += 1; print("FAIL", name, detail[:600])
def trace(uuid, tk_ms, baselines, status="PASSED"):
    sf = {"bytes": 1e9, "sol_bound_by": "memory", "copy_ms": tk_ms * 0.9, "bw_fraction_of_copy": 0.9,
          "sol_score": 0.8, "baselines": baselines}
    return {"definition": "prob_x", "workload": {"uuid": uuid, "axes": {}},
            "evaluation": {"status": status, "performance": {"latency_ms": tk_ms}, "solforge": sf}}
rows, expect_best, expect_failed, expect_bare = [], {}, [], []
for i in range(rng.randint(3, 8)):
    tk = rng.uniform(0.01, 2.0)
    kind = rng.choice(["compared", "all_failed", "none"]) if i > 2 else ["compared", "all_failed", "none"][i]
    uuid = f"prob_x-w{i}"
    if kind == "compared":
        bs = [{"name": f"b{j}", "status": "PASSED", "median_ms": tk * rng.uniform(0.5, 3.0)} for j in range(rng.randint(1, 4))]
        # a failed one beside, timed faster than every passing one: must be ignored
        bs.insert(rng.randint(0, len(bs)), {"name": "broken", "status": "INCORRECT_NUMERICAL", "median_ms": tk * 0.1})
        best = min((b for b in bs if b["status"] == "PASSED"), key=lambda b: b["median_ms"])
        expect_best[uuid] = (best["name"], best["median_ms"] / tk)
    elif kind == "all_failed":
        n = rng.randint(1, 4)
        bs = [{"name": f"b{j}", "status": rng.choice(["RUNTIME_ERROR", "TIMEOUT"])} for j in range(n)]
        expect_failed.append((uuid, n, sorted({b["status"] for b in bs})))
    else:
        bs = []
        expect_bare.append(uuid)
    rows.append(trace(uuid, tk, bs))
path = os.path.join(d, "t.jsonl")
with open(path, "w") as f:
    f.write("\n".join(json.dumps(r) for r in rows) + "\n")
out = subprocess.run([sys.executable, "tools/mem_table.py", path], capture_output=True, text=True)
lines = {l.split(" | ")[1]: l for l in out.stdout.splitlines() if l.startswith("| prob_x | prob_x-")}
check("exit_0_all_passed", out.returncode == 0, out.stdout + out.stderr)
for uuid, (name, sp) in expect_best.items():
    cols = [c.strip() for c in lines.get(uuid, "").split("|")]
    check(f"best_baseline_{uuid}", len(cols) > 10 and cols[8] == name and abs(float(cols[10]) - sp) < 0.006, lines.get(uuid, "missing"))
for uuid, n, sts in expect_failed:
    check(f"all_failed_said_{uuid}", f"(none: {n} failed ({', '.join(sts)}))" in lines.get(uuid, ""), lines.get(uuid, "missing"))
for uuid in expect_bare:
    cols = [c.strip() for c in lines.get(uuid, "").split("|")]
    check(f"no_baselines_bare_{uuid}", len(cols) > 10 and cols[8] == "-", lines.get(uuid, "missing"))
listed = [l for l in out.stdout.splitlines() if l.startswith("workloads whose every baseline failed")]
want = sorted(u for u, _, _ in expect_failed)
got = sorted(listed[0].split(": ", 2)[2].split(", ")) if listed else []
check("failed_list_exact", got == want, f"{listed} vs {want}")
counts = [l for l in out.stdout.splitlines() if l.startswith("workloads: ")]
check("faster_count_over_compared", bool(counts) and f"of {len(expect_best)}" in counts[0].split("faster than the best baseline: ")[1],
      counts[0] if counts else "no counts line")
# a FAILED workload: exit 1
rows[0]["evaluation"]["status"] = "INCORRECT_NUMERICAL"
with open(path, "w") as f:
    f.write("\n".join(json.dumps(r) for r in rows) + "\n")
out = subprocess.run([sys.executable, "tools/mem_table.py", path], capture_output=True, text=True)
check("exit_1_on_failed_trace", out.returncode == 1, out.stdout[-300:])
print(f"{P} passed, {F} failed")
sys.exit(1 if F else 0)
PY
