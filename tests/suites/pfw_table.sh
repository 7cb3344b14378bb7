#!/usr/bin/env bash
# pfw_table.sh - tools/pfw_table.py on synthetic traces: a workload the cap cut before the runner's own
# --timeout shows "cut (Ns)", one in progress longer than that (or with no TRACES.end) "hang/timeout",
# the rest of the list '-', and the exit status says a column did not pass. Random timestamps and
# latencies per run (the seed is printed).
set -u
cd "$(dirname "$0")/../.." || exit 2
seed=${SEED:-$((RANDOM * 32768 + RANDOM))}
tmp=$(mktemp -d /tmp/pfwtab.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
P=0 F=0
check() { # check NAME CONDITION-EXIT-STATUS
	if [ "$2" = 0 ]; then echo "ok $1"; P=$((P + 1)); else echo "FAIL $1"; F=$((F + 1)); fi
}
python3 - "$tmp" "$seed" <<'PY'
import json, os, random, sys, datetime
d, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
wl = ["p-w%d" % i for i in range(4)]
with open(os.path.join(d, "workload.jsonl"), "w") as f:
    for u in wl:
        f.write(json.dumps({"uuid": u}) + "\n")
t0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(seconds=rng.randint(0, 10**7))
def trace(u, k):
    ts = (t0 + datetime.timedelta(seconds=k)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return json.dumps({"workload": {"uuid": u}, "evaluation": {"status": "PASSED", "timestamp": ts,
                       "performance": {"latency_ms": rng.uniform(0.01, 2.0)}}})
for name in ("ref", "cut", "hang", "noend"):
    n = 4 if name == "ref" else 2
    with open(os.path.join(d, name + ".jsonl"), "w") as f:
        for k in range(n):
            f.write(trace(wl[k], 10 * k) + "\n")
    open(os.path.join(d, name + ".wl"), "w").write(os.path.join(d, "workload.jsonl") + "\n")
    open(os.path.join(d, name + ".rc"), "w").write("0\n" if name == "ref" else "124\n")
last = int((t0 + datetime.timedelta(seconds=10)).timestamp())
timeout = rng.randint(20, 60)
cut_s = rng.randint(1, timeout - 1)
open(os.path.join(d, "cut.end"), "w").write("%d %d\n" % (last + cut_s, timeout))
open(os.path.join(d, "hang.end"), "w").write("%d %d\n" % (last + timeout + rng.randint(1, 30), timeout))
open(os.path.join(d, "cut_s"), "w").write(str(cut_s))
# an eval run with --only (gpu_pfw's ONLY, in TRACES.only) killed before its first trace: the workload in progress is
# the first the --only text selects (p-w2 or p-w3, drawn), not the file's first
pick = rng.choice([2, 3])
open(os.path.join(d, "only.jsonl"), "w").close()
open(os.path.join(d, "only.wl"), "w").write(os.path.join(d, "workload.jsonl") + "\n")
open(os.path.join(d, "only.rc"), "w").write("124\n")
open(os.path.join(d, "only.only"), "w").write("w%d\n" % pick)
open(os.path.join(d, "only_pick"), "w").write(str(pick))
PY
cut_s=$(cat "$tmp/cut_s")
for col in cut hang noend only; do
	python3 tools/pfw_table.py --col ref "$tmp/ref.jsonl" --col "$col" "$tmp/$col.jsonl" >"$tmp/$col.out" 2>&1
	echo $? >"$tmp/$col.rc2"
done
grep -q "p-w2 .*cut (${cut_s}s)" "$tmp/cut.out"; check "cap cut ${cut_s} s into a workload, under --timeout: cut (${cut_s}s)" $?
grep -q "p-w3 .* -\$" "$tmp/cut.out"; check "the workload after the cut one: -" $?
grep -q "p-w2 .*hang/timeout" "$tmp/hang.out"; check "in progress longer than --timeout: hang/timeout" $?
grep -q "p-w2 .*hang/timeout" "$tmp/noend.out"; check "no TRACES.end: hang/timeout" $?
[ "$(cat "$tmp/cut.rc2")" = 1 ]; check "a cut column is not a pass (exit 1)" $?
pick=$(cat "$tmp/only_pick")
grep -q "p-w$pick .*hang/timeout" "$tmp/only.out" && ! grep -q "p-w0 .*hang/timeout" "$tmp/only.out"
check "killed under --only w$pick: p-w$pick named in progress, not the file's first" $?
# --ratio A/B: T_k(A) / T_k(B) on the workloads both passed (ref has 4, cut 2: p-w0, p-w1) and their
# geometric mean, recomputed here from the traces; an unknown label is a usage error
python3 tools/pfw_table.py --ratio cut/ref --col ref "$tmp/ref.jsonl" --col cut "$tmp/cut.jsonl" >"$tmp/ratio.out" 2>&1
want=$(python3 - "$tmp" <<'PY'
import json, math, sys
t = {n: {json.loads(l)["workload"]["uuid"]: json.loads(l)["evaluation"]["performance"]["latency_ms"]
         for l in open(f"{sys.argv[1]}/{n}.jsonl")} for n in ("ref", "cut")}
r = [t["cut"][k] / t["ref"][k] for k in t["cut"]]
print(f"{math.exp(sum(map(math.log, r)) / len(r)):.3f} {len(r)}")
PY
)
grep -q "cut/ref geometric mean over ${want#* } workloads: ${want% *}\$" "$tmp/ratio.out"; check "--ratio cut/ref: geometric mean ${want% *} over ${want#* } workloads" $?
[ "$(grep -c '^cut/ref p-w' "$tmp/ratio.out")" = 2 ]; check "--ratio: one line per workload both passed (2)" $?
python3 tools/pfw_table.py --ratio v9/ref --col ref "$tmp/ref.jsonl" --col cut "$tmp/cut.jsonl" >/dev/null 2>&1
[ $? = 2 ]; check "--ratio with a label that is no column: exit 2" $?
echo "seed $seed"
echo "$P passed, $F failed"
[ "$F" = 0 ]
