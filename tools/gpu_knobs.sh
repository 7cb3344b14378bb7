#!/usr/bin/env bash
# gpu_knobs.sh - knob sets of bundled fast.cu solutions side by side in the real evaluator, on a GPU
# machine: for every line of the sweep, `solforge eval --copy-ceiling --no-torch --rounds 1` of the
# problem's fast.cu with that line's -D defines, on a copy of the problem holding only the workloads
# the line names (tools/problem_subset.py). Lines of one problem run back to back, so a knob set and
# the default are compared in the same run on the same workloads (the calibration copy of each workload
# is timed in every eval too). Baselines are not timed: the comparison with torch is tools/gpu_memtable.sh.
#
#   tools/gpu_knobs.sh                      (the built-in sweep below; ~10-20 s per line)
#   KNOBS_FILE=FILE tools/gpu_knobs.sh      (lines "PROBLEM LABEL WORKLOAD_REGEX [-D NAME=VALUE ...]
#                                            [ENV:NAME=VALUE ...]"; PROBLEM@heldout takes the workloads
#                                            from tools/mem_heldout.py's folder of that problem (uuid
#                                            suffixes "heldout-<shape>"), the solution still the bundled
#                                            problems/PROBLEM/solutions/fast.cu; ENV: tokens set that variable for
#                                            the line's eval only, e.g. ENV:SOLFORGE_RUNNER_DIR=build/diag
#                                            with ENV:SF_RUNNER_DIAG=primer for the timing-parity runner,
#                                            built here by `make diag-runner` when a line names build/diag; any
#                                            other token is an eval flag, e.g. --read-ceiling, whose time the
#                                            table then shows as "read us")
#
# Env: DIAG_TIME_FAILED=1 (diagnostic knobs whose outputs are wrong by design, e.g. decode's DEC_DIAG_GATHER:
# every eval gets --diag-time-failed, so a failing line still shows its time, marked '*' in the table (its def/set the
# default's time over it); PASSED lines are unaffected), BUDGET_S (default 240: no eval starts after it), EVAL_TIMEOUT (default 60 s per eval), SEED (the
# evaluations' --seed; default gpu_round's ROUND_SEED or one drawn per run), OUT
# (default build/gpu-knobs). Output: $OUT/summary.txt (a table: problem, workload, knob set, status,
# T_k us, copy us, fraction of copy, and the ratio default / set per workload), logs in
# $OUT/knobs_logs.tgz. Exit 0 when every evaluated workload PASSED.
set -u
cd "$(dirname "$0")/.." || exit 2
out=${OUT:-build/gpu-knobs}
logs=$out/knobs_logs
mkdir -p "$logs"
budget=${BUDGET_S:-240}
# one evaluation seed for every line (SEED, else gpu_round's ROUND_SEED, else drawn here): ragged
# workloads draw their batch composition from it, so the knob sets see the same inputs
seed=${SEED:-${ROUND_SEED:-$((RANDOM * 32768 + RANDOM + 1))}}
t0=$(date +%s)
elapsed() { echo $(($(date +%s) - t0)); }
note() { echo "$*" | tee -a "$logs/times.txt"; }

# The built-in sweep (session 7): small-batch shapes of the RMSNorm family, torch.compile's Triton
# shape for them (1 vector x 512 threads a row), and qk_rmsnorm's load hint and grid.
sweep=$(cat <<'SWEEP'
llama/rmsnorm_h4096 default t1|t16|t64|t3000
llama/rmsnorm_h4096 small256 t1|t16|t64|t3000 -D RMS_SMALL_T=256
llama/fused_add_rmsnorm_h4096 default t1|t16|t64|t3000
llama/fused_add_rmsnorm_h4096 small256 t1|t16|t64|t3000 -D RMS_SMALL_T=256
qwen/qk_rmsnorm_h32_kv4_d128 default t32|t2048|t16384
qwen/qk_rmsnorm_h32_kv4_d128 plain t32|t2048|t16384 -D QKN_NC=0
qwen/qk_rmsnorm_h32_kv4_d128 oneshot t32|t2048|t16384 -D QKN_WAVES=4096
qwen/qk_rmsnorm_h32_kv4_d128 plain_oneshot t32|t2048|t16384 -D QKN_NC=0 -D QKN_WAVES=4096
qwen/qk_rmsnorm_h32_kv4_d128 plain_oneshot_rpt1 t32|t2048|t16384 -D QKN_NC=0 -D QKN_WAVES=4096 -D QKN_RPT=1
qwen/qk_rmsnorm_h32_kv4_d128 plain_oneshot_t128 t32|t2048|t16384 -D QKN_NC=0 -D QKN_WAVES=4096 -D QKN_THREADS=128
SWEEP
)
[ -n "${KNOBS_FILE:-}" ] && sweep=$(cat "$KNOBS_FILE")

targets=build/solforge
grep -q 'ENV:SOLFORGE_RUNNER_DIR=build/diag' <<<"$sweep" && targets="$targets diag-runner"
# shellcheck disable=SC2086 # targets: a list
make -j"$(nproc)" $targets >"$logs/make.log" 2>&1 || {
	note "make failed (see make.log)"
	exit 1
}
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache} SOLFORGE_HOME=$PWD
tmp=$(mktemp -d /tmp/knobs.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# write_table: the table of every line evaluated so far into $out/table.txt (after each line, so a
# run cut by its lane's time limit still leaves its table)
write_table() {
python3 - "$logs" >"$out/table.txt" 2>&1 <<'PY'
import glob, json, os, re, sys
rows, default = [], {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "[0-9][0-9]_*.jsonl"))):
    label = re.sub(r"^\d\d_", "", os.path.basename(f)[:-6])
    for l in open(f):
        try:
            t = json.loads(l)
        except ValueError:
            continue
        e = t["evaluation"]
        s = e.get("solforge", {})
        tk = e.get("performance", {}).get("latency_ms")
        wl = t["workload"]["uuid"]
        diag = tk is None and s.get("diag_unchecked_latency_ms") is not None  # DIAG_TIME_FAILED: wrong outputs
        rows.append((wl, label, e["status"], s.get("diag_unchecked_latency_ms") if diag else tk, s.get("copy_ms"),
                     s.get("bw_fraction_of_copy"), diag, s.get("read_ms")))
        if label.endswith("_default") and tk:
            default[wl] = tk
reads = any(r[7] for r in rows)  # a line with --read-ceiling: the same-byte read's time beside the copy's
print("%-44s %-44s %-8s %9s %9s %6s %8s" % ("workload", "knob set (problem_label)", "status", "T_k us", "copy us",
                                           "frac", "def/set") + ("  read us" if reads else ""))
for wl, label, st, tk, cp, fr, diag, rd in rows:
    ratio = "%.3f" % (default[wl] / tk) if tk and wl in default else "-"
    print("%-44s %-44s %-8s %9s %9s %6s %8s" % (wl, label, st[:8], "-" if not tk else "%.2f%s" % (tk * 1e3, "*" if diag else ""),
          "-" if not cp else "%.2f" % (cp * 1e3), "-" if fr is None else "%.3f" % fr, ratio)
          + (" %8s" % ("-" if not rd else "%.2f" % (rd * 1e3)) if reads else ""))
if any(r[6] for r in rows):
    print("* diagnostic time of a build whose outputs are wrong by design (--diag-time-failed; its frac is copy / it)")
PY
}
status=0
i=0
while read -r prob label regex defines; do
	[ -n "$prob" ] || continue
	i=$((i + 1))
	src=problems/$prob
	case $prob in
	*@heldout) # the held-out shapes of tools/mem_heldout.py (written once per run)
		prob=${prob%@heldout}
		[ -d "$tmp/heldout" ] || python3 tools/mem_heldout.py "$tmp/heldout" >"$logs/heldout.txt" 2>&1
		src=$tmp/heldout/$(basename "$prob")
		;;
	esac
	name=$(basename "$prob")
	if [ "$(elapsed)" -ge "$budget" ]; then
		note "$name $label: not run (elapsed $(elapsed) s >= BUDGET_S $budget)"
		continue
	fi
	mkdir -p "$tmp/$i"
	if ! python3 tools/problem_subset.py "$tmp/$i" "$src" "$regex" >"$logs/subset_$i.txt" 2>&1; then
		note "$name $label: $(cat "$logs/subset_$i.txt")"
		status=1
		continue
	fi
	# ENV:NAME=VALUE tokens: the line's environment (a relative SOLFORGE_RUNNER_DIR made absolute)
	envs=() flags=()
	for tok in $defines; do
		case $tok in
		ENV:SOLFORGE_RUNNER_DIR=/*) envs+=("${tok#ENV:}") ;;
		ENV:SOLFORGE_RUNNER_DIR=*) envs+=("SOLFORGE_RUNNER_DIR=$PWD/${tok#ENV:SOLFORGE_RUNNER_DIR=}") ;;
		ENV:*=*) envs+=("${tok#ENV:}") ;;
		*) flags+=("$tok") ;;
		esac
	done
	[ "${DIAG_TIME_FAILED:-0}" = 1 ] && flags+=(--diag-time-failed)
	timeout "${EVAL_TIMEOUT:-60}" env "${envs[@]}" build/solforge eval "$tmp/$i/$name" "problems/$prob/solutions/fast.cu" --backend cuda \
		--copy-ceiling --no-torch --rounds 1 --budget-ms 200 --seed "$seed" "${flags[@]}" \
		-o "$logs/$(printf '%02d' $i)_${name}_$label.jsonl" >"$logs/$(printf '%02d' $i)_${name}_$label.txt" 2>&1
	rc=$?
	[ $rc = 0 ] || status=1
	note "$name $label: rc=$rc ($(elapsed) s)"
	write_table
done <<<"$sweep"

write_table
tar czf "$out/knobs_logs.tgz" -C "$out" knobs_logs
{
	echo "gpu_knobs (seed $seed, $(elapsed) s, $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader 2>/dev/null | head -1)):"
	cat "$logs/times.txt"
	echo
	cat "$out/table.txt"
} >"$out/summary.txt"
cat "$out/summary.txt"
exit $status
