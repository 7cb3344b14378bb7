#!/usr/bin/env bash
# gpu_mho.sh - issue 7's held-out check on an H200: the 14 memory-bound problems' solutions/fast.cu
# (and, with STEPS containing naive, their naive.cu) evaluated on the cuda backend on the held-out
# shapes of tools/mem_heldout.py (sizes no bundled workload has), fast.cu with --copy-ceiling (the
# calibration copy timed at each workload's own byte count in the same run). Prints one table last:
# problem, held-out workload, status, T_k, copy time, fraction of copy, T_sol, naive's status and time.
#
# Steps (STEPS, default "build fast naive"), in that order while the elapsed time is under BUDGET_S
# (default 170 s; an eval that would start later is reported as not run):
#   build   make, then every oracle module and solution compiled in parallel (--prepare-only)
#   fast    eval fast.cu --rounds 1 --budget-ms $BUDGET_MS (default 100) --copy-ceiling --no-baseline
#   naive   eval naive.cu --rounds 1 --budget-ms 50 --no-baseline (correctness first)
# FAST / NAIVE name other files of solutions/ (or @oracle), BACKEND=cpu runs the flow here without a GPU
# (e.g. BACKEND=cpu FAST=@oracle NAIVE=@oracle: large workloads SKIPPED).
# PROBLEMS: a space-separated subset of the held-out folder names (default: all 18: the 14 memory-bound problems and, since session 24, the 4 GEMMs). Logs and traces go
# to $OUT (default build/gpu-mho); with $OUT set they are packed into $OUT/mho_logs.tgz beside
# $OUT/summary.txt and $OUT/table.txt. Exit status 0 when every evaluated workload passed.
set -u
cd "$(dirname "$0")/.." || exit 2
out=${OUT:-build/gpu-mho}
mkdir -p "$out"
[ -f .devcache.tgz ] && [ ! -d .devcache ] && tar xzf .devcache.tgz
[ -d .devcache ] && export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/.devcache}
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache}
export SOLFORGE_HOME=$PWD PYTHONDONTWRITEBYTECODE=1
steps=${STEPS:-build fast naive}
steps=${steps//+/ } # "build+fast" (a tools/gpu_round.sh spec) = "build fast"
budget=${BUDGET_S:-170}
bms=${BUDGET_MS:-100}
backend=${BACKEND:-cuda}
fastsol=${FAST:-fast.cu}
naivesol=${NAIVE:-naive.cu}
S=build/solforge
t0=$(date +%s)
status=0
notes=()
has() { case " $steps " in *" $1 "*) return 0 ;; esac; return 1; }
elapsed() { echo $(($(date +%s) - t0)); }
in_time() {
	if [ "$(elapsed)" -ge "$budget" ]; then
		notes+=("$1: not run (budget ${budget} s spent)")
		status=1
		return 1
	fi
}

if has build; then
	if ! make -j"$(nproc)" >"$out/build.log" 2>&1; then
		tail -30 "$out/build.log"
		echo "gpu_mho: build failed"
		exit 1
	fi
fi
{
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv
	nvcc --version | tail -2
} >"$out/env.txt" 2>&1

held=$(mktemp -d /tmp/mho-heldout.XXXXXX)
if ! python3 tools/mem_heldout.py "$held" >"$out/heldout.txt" 2>&1; then
	cat "$out/heldout.txt"
	echo "gpu_mho: tools/mem_heldout.py failed"
	exit 1
fi
# held-out folder -> its bundled problem folder (for the solutions)
pairs=()
for d in $(python3 tools/mem_heldout.py "$held" --list); do
	n=$(basename "$d")
	sel=${PROBLEMS:-$n}
	case " ${sel//+/ } " in *" $n "*) ;; *) continue ;; esac
	pairs+=("$d $(ls -d problems/*/"$n")")
done
if has build; then
	for pr in "${pairs[@]}"; do
		read -r d p <<<"$pr"
		echo "$d $p/solutions/$fastsol"
		has naive && echo "$d $p/solutions/$naivesol"
	done | grep -v ' .*/@' | xargs -P "$(nproc)" -L 1 sh -c "$S eval \$0 \$1 --backend $backend --prepare-only >/dev/null 2>&1" || true
	notes+=("build + compile: $(elapsed) s")
fi

run_step() { # step solution extra-flags...: solution @NAME as is, else PROBLEM/solutions/NAME
	local step=$1 sol=$2 pr d p n rc sp
	shift 2
	: >"$out/$step.jsonl"
	for pr in "${pairs[@]}"; do
		read -r d p <<<"$pr"
		n=$(basename "$d")
		in_time "$step $n" || continue
		case $sol in @*) sp=$sol ;; *) sp=$p/solutions/$sol ;; esac
		timeout 150 $S eval "$d" "$sp" --backend "$backend" --rounds 1 --no-baseline "$@" \
			-o "$out/${step}_$n.jsonl" >"$out/${step}_$n.txt" 2>&1
		rc=$?
		[ $rc = 0 ] || status=1
		cat "$out/${step}_$n.jsonl" >>"$out/$step.jsonl" 2>/dev/null
		notes+=("$step $n: exit $rc, $(grep -c '"PASSED"' "$out/${step}_$n.jsonl" 2>/dev/null) of $(wc -l <"$d/workload.jsonl") PASSED ($(elapsed) s)")
	done
}
has fast && run_step fast "$fastsol" --budget-ms "$bms" --copy-ceiling
has naive && run_step naive "$naivesol" --budget-ms 50

python3 - "$out" >"$out/table.txt" 2>&1 <<'PY'
import json, os, sys
out = sys.argv[1]
def load(name):
    p = os.path.join(out, name)
    return [json.loads(l) for l in open(p) if l.strip()] if os.path.exists(p) else []
naive = {t["workload"]["uuid"]: t for t in load("naive.jsonl")}
def us(x):
    return "-" if x is None else "%.2f" % (x * 1e3)
print("%-36s %-22s %-18s %10s %10s %6s %9s %-18s %10s" % ("problem", "held-out workload", "fast status", "T_k us",
      "copy us", "frac", "T_sol us", "naive status", "naive us"))
bad = skipped = 0
fast = {t["workload"]["uuid"]: t for t in load("fast.jsonl")}
for u in list(fast) + [u for u in naive if u not in fast]:
    f, n = fast.get(u), naive.get(u)
    t = f or n
    e = f["evaluation"] if f else {}
    s = e.get("solforge", {})
    ne = n["evaluation"] if n else {}
    frac = s.get("bw_fraction_of_copy")
    print("%-36.36s %-22.22s %-18s %10s %10s %6s %9s %-18s %10s" % (
        t["definition"], u.split("-heldout-")[-1], e.get("status", "-"),
        us(e.get("performance", {}).get("latency_ms")), us(s.get("copy_ms")),
        "-" if frac is None else "%.3f" % frac, us(s.get("sol_ms")), ne.get("status", "-"),
        us(ne.get("performance", {}).get("latency_ms"))))
    for st in ([e.get("status")] if f else []) + ([ne.get("status")] if n else []):
        skipped += st == "SKIPPED"
        bad += st not in ("PASSED", "SKIPPED")
print("held-out evaluations not PASSED: %d, SKIPPED: %d (fast %d traces, naive %d)" % (
    bad, skipped, len(fast), len(naive)))
PY

{
	echo "gpu_mho summary ($(elapsed) s, $(sed -n 2p "$out/env.txt")):"
	for n in "${notes[@]}"; do echo "  $n"; done
	tail -1 "$out/table.txt"
} >"$out/summary.txt"
cat "$out/table.txt"
echo
cat "$out/summary.txt"
rm -rf "$held"
if [ -n "${OUT:-}" ]; then
	tar czf "$out/../mho_logs.tgz" -C "$out" --exclude=summary.txt --exclude=table.txt . 2>/dev/null &&
		find "$out" -mindepth 1 ! -name summary.txt ! -name table.txt -delete &&
		mv "$out/../mho_logs.tgz" "$out/"
fi
exit $status
