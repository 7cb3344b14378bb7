#!/usr/bin/env bash
# tests/cli/check_sol_counts.sh - compares `solforge sol` with the hand counts of the problems.
#
# For every problems/*/*/sol_check.json ({"workload": UUID, "flops": {unit: n, ...}, "bytes": n,
# "how": "..."}), runs `solforge sol PROBLEM --json`, finds the line of that workload and compares
# the FLOPs of every unit class (a unit missing on one side counts 0) and the bytes with a relative
# tolerance of 1e-9. Prints one line per problem, `ok NAME` or `FAIL NAME: why`, then
# `N passed, N failed`; exits 0 only when nothing failed.
#
# Usage: tests/cli/check_sol_counts.sh [PROBLEMS_DIR]   (BUILD=dir selects the build folder, default build)
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
SF=$BUILD/solforge
PROBLEMS=${1:-$ROOT/problems}
if [ ! -x "$SF" ]; then
	echo "check_sol_counts: no $SF (run make first)" >&2
	echo "0 passed, 1 failed"
	exit 2
fi
command -v python3 >/dev/null || { echo "check_sol_counts: needs python3" >&2; echo "0 passed, 1 failed"; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
shopt -s nullglob
for chk in "$PROBLEMS"/*/*/sol_check.json; do
	dir=$(dirname "$chk")
	name=$(basename "$dir")
	"$SF" sol "$dir" --json >"$tmp/sol.jsonl" 2>"$tmp/sol.err"
	rc=$?
	if why=$(python3 - "$chk" "$tmp/sol.jsonl" "$rc" "$tmp/sol.err" <<'EOF'
import json, sys
chk_path, sol_path, rc, err_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def bad(msg):
    print(msg)
    sys.exit(1)
try:
    chk = json.load(open(chk_path))
    want_w, want_f, want_b = chk["workload"], chk["flops"], chk["bytes"]
except Exception as e:
    bad("cannot read %s: %s" % (chk_path, e))
rows = []
for i, line in enumerate(open(sol_path)):
    if not line.strip():
        continue
    try:
        rows.append(json.loads(line))
    except ValueError as e:
        bad("solforge sol --json line %d is not JSON: %s" % (i + 1, e))
row = [r for r in rows if r.get("workload") == want_w]
if not row:
    err = open(err_path).read().strip().splitlines()
    bad("no line for workload %s in solforge sol --json (exit %d)%s" % (want_w, rc, (": " + err[0]) if err else ""))
r = row[0]
def close(a, b):
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))
errs = []
got_f = r.get("flops", {})
for u in sorted(set(want_f) | set(got_f)):
    a, b = float(want_f.get(u, 0)), float(got_f.get(u, 0))
    if not close(a, b):
        errs.append("flops.%s: hand %.17g, solforge %.17g" % (u, a, b))
if not close(float(want_b), float(r.get("bytes", float("nan")))):
    errs.append("bytes: hand %.17g, solforge %r" % (want_b, r.get("bytes")))
if errs:
    bad("%s: %s" % (want_w, "; ".join(errs)))
EOF
	); then
		echo "ok $name"
		pass=$((pass + 1))
	else
		echo "FAIL $name: $why"
		fail=$((fail + 1))
	fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
