#!/usr/bin/env bash
# copy_ceiling.sh - `solforge eval --copy-ceiling` on the cpu backend: the calibration copy is timed
# at each workload's own byte count in the same run, and the trace and the table carry copy_ms and
# bw_fraction_of_copy = copy_ms / latency_ms.
#
# Cases: the copy problem evaluated with its own copy (fraction near 1: same code, same bytes), seven
# sizes of it (fields present, consistent with latency and bytes, copy time growing with the
# bytes), the table column of a norm problem's oracle, the option absent (no fields), and a workload the cpu backend skips
# (no copy timed). Prints ok/FAIL per case and "N passed, M failed"; BUILD selects the build folder.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
SF=$BUILD/solforge
if [ ! -x "$SF" ]; then
	echo "FAIL build: no $SF (run make first)"
	echo "0 passed, 1 failed"
	exit 1
fi
TMP=$(mktemp -d /tmp/solforge-copy-ceiling.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$TMP/cache}
export SOLFORGE_SCRATCH=$TMP/scratch
export SOLFORGE_HOME=$ROOT
mkdir -p "$SOLFORGE_SCRATCH"
P=0
F=0
ok() { echo "ok $1"; P=$((P + 1)); }
fail() {
	echo "FAIL $1: $2"
	F=$((F + 1))
}
FAST=(--backend cpu --budget-ms 100 --min-iters 3 --rounds 1 --timeout 60)
COPY=tools/calibration/copy
RMS=problems/llama/rmsnorm_h4096

# check FILE PYTHON-EXPR-ON-TRACES: runs the expression with `ts` = the list of traces
check() {
	python3 - "$1" "$2" <<'PY'
import json, sys
ts = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
sf = [t["evaluation"]["solforge"] for t in ts]
ok = eval("(" + sys.argv[2] + ")")
if not ok:
    print(json.dumps([{k: s.get(k) for k in ("bytes", "copy_ms", "bw_fraction_of_copy", "bytes_per_s")} for s in sf]))
sys.exit(0 if ok else 1)
PY
}

# 1. copy against itself: the ceiling copies exactly the workload's bytes (4 N), and the fraction is
#    near 1 (0.25 .. 4: a shared machine is noisy)
if "$SF" eval $COPY $COPY/solutions/copy.c "${FAST[@]}" --copy-ceiling --only '=copy-n2^20' --json >"$TMP/self.jsonl" 2>"$TMP/self.err" &&
	check "$TMP/self.jsonl" 'len(ts) == 1 and ts[0]["evaluation"]["status"] == "PASSED" and sf[0]["copy_bytes"] == sf[0]["bytes"] == 4 * 2**20 and 0.25 < sf[0]["bw_fraction_of_copy"] < 4'; then
	ok copy_vs_itself
else
	fail copy_vs_itself "$(tail -3 "$TMP/self.err")"
fi

# 2. several sizes (the copy problem's 2^13 .. 2^19): fields present and consistent with latency and
# bytes; the biggest workload's copy is slower than the smallest's
if "$SF" eval $COPY $COPY/solutions/copy.c "${FAST[@]}" --copy-ceiling --only 'n2^1' --json >"$TMP/rms.jsonl" 2>"$TMP/rms.err" &&
	check "$TMP/rms.jsonl" '
len(ts) >= 2 and all(t["evaluation"]["status"] == "PASSED" for t in ts)
and all(s["copy_ms"] > 0 and s["copy_bytes"] == s["bytes"] and abs(s["bw_fraction_of_copy"] - s["copy_ms"] / t["evaluation"]["performance"]["latency_ms"]) < 1e-9 * s["bw_fraction_of_copy"] + 1e-12
        and abs(s["bytes_per_s"] - s["bytes"] / (t["evaluation"]["performance"]["latency_ms"] * 1e-3)) < 1e-6 * s["bytes_per_s"]
        for t, s in zip(ts, sf))
and max(sf, key=lambda s: s["bytes"])["copy_ms"] > min(sf, key=lambda s: s["bytes"])["copy_ms"]'; then
	ok fields_consistent
else
	fail fields_consistent "$(tail -3 "$TMP/rms.err")"
fi

# 3. the table has the copy columns with a value
if "$SF" eval $RMS @oracle "${FAST[@]}" --copy-ceiling --only '=rmsnorm_h4096-t4' >"$TMP/table.txt" 2>&1 &&
	grep -q 'of copy' "$TMP/table.txt" && grep -E '^rmsnorm_h4096-t4 .*PASSED.* [0-9.]+ (us|ms) +[0-9]+\.[0-9]{3}$' "$TMP/table.txt" >/dev/null; then
	ok table_column
else
	fail table_column "$(cat "$TMP/table.txt")"
fi

# 4. without the option: no copy fields, no column
if "$SF" eval $RMS @oracle "${FAST[@]}" --only '=rmsnorm_h4096-t4' --json >"$TMP/none.jsonl" 2>/dev/null &&
	check "$TMP/none.jsonl" 'len(ts) == 1 and "copy_ms" not in sf[0] and "bw_fraction_of_copy" not in sf[0]'; then
	ok absent_without_option
else
	fail absent_without_option "copy fields without --copy-ceiling"
fi

# 5. a skipped workload times no copy
if "$SF" eval $RMS @oracle "${FAST[@]}" --copy-ceiling --only '=rmsnorm_h4096-t65536' --json >"$TMP/skip.jsonl" 2>/dev/null &&
	check "$TMP/skip.jsonl" 'len(ts) == 1 and ts[0]["evaluation"]["status"] == "SKIPPED" and "copy_ms" not in sf[0]'; then
	ok skipped_no_copy
else
	fail skipped_no_copy "a skipped workload has copy fields"
fi

echo "$P passed, $F failed"
[ "$F" = 0 ]
