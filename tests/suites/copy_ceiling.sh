#!/usr/bin/env bash
# copy_ceiling.sh - `solforge eval --copy-ceiling` / `--read-ceiling` on the cpu backend: the calibration
# copy (read) is timed at each workload's own byte count in the same run, and the trace and the table carry
# copy_ms and bw_fraction_of_copy = copy_ms / latency_ms (read_ms, bw_fraction_of_read).
#
# Cases: the copy problem evaluated with its own copy (fraction near 1: same code, same bytes), seven
# sizes of it (fields present, consistent with latency and bytes, copy time growing with the
# bytes), the table column of a norm problem's oracle, the option absent (no fields), and a workload the cpu backend skips
# (no copy timed); the read problem's cpu kernel against its oracle (and a mutant that reads half of each
# row, which must fail), the read against itself, the read fields on a norm problem (bytes rounded to
# whole 16386-byte rows) and both ceilings' columns in one table; the ceilings built without the candidate's
# -D defines, and no scratch folder of theirs left by an unwritable -o or a SIGINT; --diag-time-failed on a wrong read.
# Prints ok/FAIL per case and "N passed, M failed"; BUILD selects the build folder.
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
READ=tools/calibration/read
RMS=problems/llama/rmsnorm_h4096

# check FILE PYTHON-EXPR-ON-TRACES: runs the expression with `ts` = the list of traces
check() {
	python3 - "$1" "$2" <<'PY'
import json, sys
ts = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
sf = [t["evaluation"]["solforge"] for t in ts]
ok = eval("(" + sys.argv[2] + ")")
if not ok:
    print(json.dumps([{k: s.get(k) for k in ("bytes", "copy_ms", "bw_fraction_of_copy", "bytes_per_s", "read_ms", "read_bytes", "bw_fraction_of_read")} for s in sf]))
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

# 6. the read's cpu kernel passes its oracle on the small workloads (a row, odd counts of rows), and a
#    mutant that reads only the first half of each row fails there
cat >"$TMP/half.c" <<'C'
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "solforge/solution.h"
SF_EXPORT int run(const sf_call *call)
{
	const int64_t B = call->inputs[0].shape[0], R = call->inputs[0].shape[1];
	const uint16_t *x = (const uint16_t *)call->inputs[0].data;
	uint16_t *y = (uint16_t *)call->outputs[0].data;
	for (int64_t b = 0; b < B; b++) {
		float m = -INFINITY;
		uint16_t mb = 0xFF80;
		for (int64_t r = 0; r < R / 2; r++) {
			uint32_t u = (uint32_t)x[b * R + r] << 16;
			float f;
			memcpy(&f, &u, sizeof f);
			if (f > m) {
				m = f;
				mb = x[b * R + r];
			}
		}
		y[b] = mb;
	}
	return SF_OK;
}
C
if "$SF" eval $READ $READ/solutions/read.c "${FAST[@]}" --json >"$TMP/read.jsonl" 2>"$TMP/read.err" &&
	check "$TMP/read.jsonl" 'all(t["evaluation"]["status"] in ("PASSED", "SKIPPED") for t in ts) and [t["workload"]["uuid"] for t in ts if t["evaluation"]["status"] == "PASSED"][:4] == ["read-b1", "read-b3", "read-b64", "read-b257"]' &&
	! "$SF" eval $READ "$TMP/half.c" "${FAST[@]}" --only '=read-b64' --json >"$TMP/half.jsonl" 2>/dev/null &&
	check "$TMP/half.jsonl" 'len(ts) == 1 and ts[0]["evaluation"]["status"] == "INCORRECT_NUMERICAL"'; then
	ok read_kernel_vs_oracle
else
	fail read_kernel_vs_oracle "$(tail -3 "$TMP/read.err"; head -c 300 "$TMP/half.jsonl")"
fi

# 7. the read against itself: exactly the workload's bytes (16386 per row), fraction near 1
if "$SF" eval $READ $READ/solutions/read.c "${FAST[@]}" --read-ceiling --only '=read-b64' --json >"$TMP/rself.jsonl" 2>"$TMP/rself.err" &&
	check "$TMP/rself.jsonl" 'len(ts) == 1 and ts[0]["evaluation"]["status"] == "PASSED" and sf[0]["read_bytes"] == sf[0]["bytes"] == 64 * 16386 and 0.25 < sf[0]["bw_fraction_of_read"] < 4 and "copy_ms" not in sf[0]'; then
	ok read_vs_itself
else
	fail read_vs_itself "$(tail -3 "$TMP/rself.err")"
fi

# 8. a norm problem with the read ceiling: bytes rounded to whole rows, fraction = read_ms / latency
if "$SF" eval $RMS @oracle "${FAST[@]}" --read-ceiling --only '=rmsnorm_h4096-t64' --json >"$TMP/rrms.jsonl" 2>"$TMP/rrms.err" &&
	check "$TMP/rrms.jsonl" '
len(ts) == 1 and sf[0]["read_ms"] > 0 and abs(sf[0]["read_bytes"] - sf[0]["bytes"]) <= 16386 / 2 and sf[0]["read_bytes"] % 16386 == 0
and abs(sf[0]["bw_fraction_of_read"] - sf[0]["read_ms"] / ts[0]["evaluation"]["performance"]["latency_ms"]) < 1e-9'; then
	ok read_fields
	# tools/mem_table.py (gpu_memtable.sh's table) shows the read columns and the read summary line
	if python3 tools/mem_table.py "$TMP/rrms.jsonl" >"$TMP/rrms_table.txt" 2>&1 &&
		grep -q '| read us | of read |' "$TMP/rrms_table.txt" && grep -q '^>= 0.90 of the same-byte read: ' "$TMP/rrms_table.txt"; then
		ok mem_table_read_columns
	else
		fail mem_table_read_columns "$(head -5 "$TMP/rrms_table.txt")"
	fi
else
	fail read_fields "$(tail -3 "$TMP/rrms.err")"
fi

# 8b. a workload of fewer bytes than a few read rows: the read times whole rows (16386 at t1's 24576), the log
#     says the fraction is no same-byte comparison, and mem_table.py leaves it out of the fraction column
if "$SF" eval $RMS @oracle "${FAST[@]}" --read-ceiling --only '=rmsnorm_h4096-t1' --json >"$TMP/rt1.jsonl" 2>/dev/null &&
	check "$TMP/rt1.jsonl" 'len(ts) == 1 and sf[0]["read_bytes"] == 16386 and sf[0]["bytes"] == 24576 and "not a same-byte comparison" in ts[0]["evaluation"]["log"]' &&
	python3 tools/mem_table.py "$TMP/rt1.jsonl" 2>&1 | grep -q '^>= 0.90 of the same-byte read: 0 of 0;'; then
	ok read_fewer_bytes_noted
else
	fail read_fewer_bytes_noted "$(head -c 400 "$TMP/rt1.jsonl")"
fi

# 9. both ceilings: both column pairs, each with a value
if "$SF" eval $RMS @oracle "${FAST[@]}" --copy-ceiling --read-ceiling --only '=rmsnorm_h4096-t4' >"$TMP/both.txt" 2>&1 &&
	grep -q 'of copy .*of read' "$TMP/both.txt" &&
	grep -E '^rmsnorm_h4096-t4 .*PASSED.* [0-9.]+ (us|ms) +[0-9]+\.[0-9]{3} +[0-9.]+ (us|ms) +[0-9]+\.[0-9]{3}$' "$TMP/both.txt" >/dev/null; then
	ok both_columns
else
	fail both_columns "$(cat "$TMP/both.txt")"
fi

# 10. the ceilings are evaluations of their own: the candidate's -D defines do not reach them (a define
#     that breaks read.c's text must leave the read ceiling measured), and no exit path leaves their
#     scratch folders behind (an -o that cannot be written; SIGINT while the candidate runs)
if "$SF" eval $COPY $COPY/solutions/copy.c "${FAST[@]}" --read-ceiling --only '=copy-n2^13' -D 'mb=mb2+' --json \
	>"$TMP/cdef.jsonl" 2>"$TMP/cdef.err" &&
	check "$TMP/cdef.jsonl" 'len(ts) == 1 and sf[0].get("read_ms", 0) > 0'; then
	ok ceiling_without_candidate_defines
else
	fail ceiling_without_candidate_defines "$(tail -3 "$TMP/cdef.err")"
fi
rm -rf "${SOLFORGE_SCRATCH:?}"/*
"$SF" eval $RMS @oracle "${FAST[@]}" --copy-ceiling --read-ceiling --only '=rmsnorm_h4096-t4' \
	-o "$TMP/no/such/dir/t.jsonl" >/dev/null 2>&1
rc=$?
if [ "$rc" != 0 ] && [ -z "$(ls -A "$SOLFORGE_SCRATCH")" ]; then ok unwritable_o_no_scratch_left; else
	fail unwritable_o_no_scratch_left "exit $rc; left: $(ls "$SOLFORGE_SCRATCH" | tr '\n' ' ')"; fi
rm -rf "${SOLFORGE_SCRATCH:?}"/*
"$SF" eval $RMS @oracle "${FAST[@]}" --budget-ms 2000 --copy-ceiling --read-ceiling >/dev/null 2>&1 &
spid=$!
for _ in $(seq 600); do # the candidate's folder is the third: both ceilings are prepared by then
	[ "$(ls "$SOLFORGE_SCRATCH" | wc -l)" -ge 3 ] && break
	sleep 0.1
done
sleep 0.5
kill -INT "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
if [ -z "$(ls -A "$SOLFORGE_SCRATCH")" ]; then ok sigint_no_scratch_left; else
	fail sigint_no_scratch_left "left: $(ls "$SOLFORGE_SCRATCH" | tr '\n' ' ')"; fi

# --diag-time-failed: a read whose outputs are wrong (each maximum's low bit flipped) stays
# INCORRECT_NUMERICAL with no performance block, and carries diag_unchecked_latency_ms with the copy beside
# it (fraction = copy / that time); without the option, no such field
sed 's/y\[b\] = mb;/y[b] = (uint16_t)(mb ^ 1u);/' $READ/solutions/read.c >"$TMP/wrong.c"
if cmp -s $READ/solutions/read.c "$TMP/wrong.c"; then
	fail diag_time_failed "the wrong-output mutation does not apply to read.c"
elif "$SF" eval $READ "$TMP/wrong.c" "${FAST[@]}" --copy-ceiling --diag-time-failed --only '=read-b64' --json \
	>"$TMP/diag.jsonl" 2>"$TMP/diag.err" ; [ -s "$TMP/diag.jsonl" ] &&
	check "$TMP/diag.jsonl" '
len(ts) == 1 and ts[0]["evaluation"]["status"] == "INCORRECT_NUMERICAL" and "performance" not in ts[0]["evaluation"]
and sf[0]["diag_unchecked_latency_ms"] > 0 and sf[0]["copy_ms"] > 0
and abs(sf[0]["bw_fraction_of_copy"] - sf[0]["copy_ms"] / sf[0]["diag_unchecked_latency_ms"]) < 1e-9' &&
	"$SF" eval $READ "$TMP/wrong.c" "${FAST[@]}" --copy-ceiling --only '=read-b64' --json >"$TMP/nodiag.jsonl" 2>/dev/null ;
	[ -s "$TMP/nodiag.jsonl" ] && check "$TMP/nodiag.jsonl" '
ts[0]["evaluation"]["status"] == "INCORRECT_NUMERICAL" and "diag_unchecked_latency_ms" not in sf[0]'; then
	ok diag_time_failed
else
	fail diag_time_failed "$(tail -3 "$TMP/diag.err")"
fi

echo "$P passed, $F failed"
[ "$F" = 0 ]
