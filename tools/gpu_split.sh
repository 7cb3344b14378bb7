#!/usr/bin/env bash
# gpu_split.sh - checks on an H200 that solforge-runner-cuda, now built by the Makefile from four
# files (src/runner/runner_cuda*.cu), behaves as the one-file runner did:
#
#   build     `make` (the same Makefile as CI; nvcc links runner_cuda*.cu), and the runner's dynamic
#             symbol table: nothing of ours exported (the rcu_ functions stay private)
#   smoke     tests/gpu/runner_smoke.sh: the runner driven directly by job files (reference mode, each
#             toy solution: correct, wrong, out of bounds, modified input, side stream, crash, exit(0);
#             the CUDA-event fallback)
#   e2e       tests/gpu/cuda_e2e.sh: the copy passes; each deliberately wrong solution gets its status
#             (wrong values, shape, crash, hang, modified input, error return, side stream ...)
#   redteam   two cuda red-team cases: a result cached by pointer (caught by the audits of timed calls)
#             and a thread left running (the guard check after a call): REWARD_HACK
#   honest    a naive RMSNorm passes with every defense on (reference-mode audits, perturbed inputs)
#   timing    copy-n2^24 timed with CUPTI and with CUDA events (SF_RUNNER_NO_CUPTI=1): both PASSED,
#             the method recorded, the medians (before the split: 0.0186 ms with CUPTI,
#             results/h200/2026-11-29-s2/run3) within 5% of each other
# Needs about 3 minutes. Logs go to $OUT (the device tool's folder) or build/gpu-split, packed into
# gpu_split_logs.tgz beside summary.txt; the last lines printed are the result table.
set -u
cd "$(dirname "$0")/.." || exit 1
out=${OUT:-build/gpu-split}
logs=$out/logs
mkdir -p "$logs"
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache}
S=build/solforge
P=tools/calibration/copy
RT=tests/redteam/cuda
RMS=problems/llama/rmsnorm_h4096
rows=()
fails=0
row() { rows+=("$(printf '%-30s %-34s %s' "$1" "$2" "$3")"); }
bad() { fails=$((fails + 1)); }

t0=$(date +%s)
if ! make -j"$(nproc)" >"$logs/build.log" 2>&1; then
	tail -30 "$logs/build.log"
	echo "gpu_split: build failed"
	exit 1
fi
# the link line the Makefile uses (a dry run, so it is there even when the runner was up to date)
make -n -B build/solforge-runner-cuda 2>/dev/null | grep -E 'nvcc .*-o build/solforge-runner-cuda' >"$logs/nvcc_line.txt"
if grep -q runner_cuda_timing.cu "$logs/nvcc_line.txt"; then row build "runner_cuda*.cu linked" ok; else
	row build "nvcc line without the split files" FAIL; bad; fi
ours=$(readelf --dyn-syms -W build/solforge-runner-cuda | awk '$7 != "UND" && $8 ~ /rcu_|dev_set|timing_plan/' | wc -l)
if [ "$ours" = 0 ]; then row build/exports "no rcu_ symbol exported" ok; else
	row build/exports "$ours rcu_ symbols exported" FAIL; bad; fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >"$logs/env.txt" 2>&1
gpu=$(sed -n 2p "$logs/env.txt" | cut -d, -f1)

# the runner smoke test (its own nvcc builds, then the runner on job files) runs while every module and
# solution of the later steps is built, in parallel (nvcc is slow; the GPU is not needed for it)
ts=$(date +%s)
tests/gpu/runner_smoke.sh "$logs/smoke" >"$logs/smoke.txt" 2>&1 &
smoke_pid=$!
{
	for f in $P/solutions/copy.cu $RT/cache_by_pointer.cu $RT/side_thread.cu tests/fixtures/cuda/copy/*.cu; do
		echo "$P $f"
	done
	echo "$RMS $RMS/solutions/naive.cu"
} | grep -v compile_error | xargs -P "$(nproc)" -L 1 sh -c "$S eval \$0 \$1 --backend cuda --prepare-only >/dev/null 2>&1" ||
	true

# --- smoke, e2e ------------------------------------------------------------------------------------
wait $smoke_pid
rc=$?
rm -rf "$logs/smoke" # round files of 8 MB each; smoke.txt has every row
if [ $rc = 0 ]; then row smoke "every row as expected ($(($(date +%s) - ts)) s)" ok; else
	row smoke "exit $rc (logs/smoke.txt)" FAIL; bad; fi
ts=$(date +%s)
BUILD=build tests/gpu/cuda_e2e.sh >"$logs/e2e.txt" 2>&1
rc=$?
line=$(tail -1 "$logs/e2e.txt")
if [ $rc = 0 ]; then row e2e "$line ($(($(date +%s) - ts)) s)" ok; else row e2e "$line (exit $rc)" FAIL; bad; fi

# --- red team --------------------------------------------------------------------------------------
quick=(--backend cuda --rounds 2 --budget-ms 300 --min-iters 20 --max-iters 60 --timeout 60 --no-baseline)
status_of() { awk -v w="$2" '$1 == w { print $2; exit }' "$1"; }
rt() { # rt NAME FILE WORKLOAD STATUS_RE MSG_RE [ENV=V ...]
	local name=$1 file=$2 w=$3 want=$4 msg=$5
	shift 5
	local f=$logs/redteam_$name.txt
	env "$@" "$S" eval $P "$file" "${quick[@]}" --only "=$w" >"$f" 2>&1
	local rc=$? st
	st=$(status_of "$f" "$w")
	if [ "$rc" != 0 ] && [[ $st =~ ^($want)$ ]] && grep -Eq -- "$msg" "$f"; then
		row "redteam/$name" "$st" ok
	else
		row "redteam/$name" "${st:-none} (exit $rc)" "FAIL (want $want)"
		bad
	fi
}
W=copy-n2^20
rt cache_by_pointer $RT/cache_by_pointer.cu $W REWARD_HACK 'timed call'
rt side_thread $RT/side_thread.cu $W REWARD_HACK 'left a thread running'

# --- honest ----------------------------------------------------------------------------------------
# status and latency of the first trace line of a --json output file
field() {
	python3 -c 'import json,sys; e=json.loads(open(sys.argv[1]).readline())["evaluation"]; p=e.get("performance",{})
print(e["status"], p.get("latency_ms", 0), e.get("log", "")[:200].replace("\n", " "))' "$1" 2>/dev/null
}
RW=$(head -1 $RMS/workload.jsonl | python3 -c 'import json,sys; print(json.load(sys.stdin)["uuid"])')
"$S" eval $RMS $RMS/solutions/naive.cu --backend cuda --rounds 2 --budget-ms 500 --timeout 120 --only "=$RW" \
	--no-baseline --json -o "$logs/honest_rmsnorm.jsonl" >"$logs/honest_rmsnorm.txt" 2>&1
st=$(field "$logs/honest_rmsnorm.jsonl" | cut -d' ' -f1)
if [ "$st" = PASSED ]; then row honest/rmsnorm_naive PASSED ok; else row honest/rmsnorm_naive "${st:-none}" FAIL; bad; fi

# --- timing: CUPTI and the CUDA-event fallback -----------------------------------------------------
for m in cupti events; do
	nc=0
	[ $m = events ] && nc=1
	SF_RUNNER_NO_CUPTI=$nc "$S" eval $P $P/solutions/copy.cu --backend cuda --rounds 1 \
		--budget-ms 1000 --no-baseline --only '=copy-n2^24' --json -o "$logs/timing_$m.jsonl" \
		>"$logs/timing_$m.txt" 2>&1
	read -r st ms _ <<<"$(field "$logs/timing_$m.jsonl")"
	meth=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["evaluation"]["solforge"].get("timing_method"))' \
		"$logs/timing_$m.jsonl" 2>/dev/null)
	if [ $m = cupti ]; then ms_cupti=${ms:-0}; else ms_events=${ms:-0}; fi
	if [ "$st" = PASSED ] && [ "$meth" = $m ]; then row "timing/$m" "PASSED $ms ms ($meth)" ok; else
		row "timing/$m" "${st:-none} ${ms:-?} ms (${meth:-?})" FAIL; bad; fi
done
d=$(python3 -c 'import sys; a,b=map(float,sys.argv[1:]); print("%+.1f" % (100*(b-a)/a) if a > 0 else "nan")' \
	"$ms_cupti" "$ms_events")
if python3 -c 'import sys; v=sys.argv[1]; sys.exit(0 if v != "nan" and abs(float(v)) < 5 else 1)' "$d"; then
	row timing/events_vs_cupti "${d}%" ok; else row timing/events_vs_cupti "${d}%" CHECK; fi

t1=$(date +%s)
{
	echo "gpu_split on $gpu, $((t1 - t0)) s, $fails failed"
	printf '%s\n' "${rows[@]}"
} >"$out/summary.txt"
tar czf "$out/gpu_split_logs.tgz" -C "$out" logs && rm -rf "$logs"
cat "$out/summary.txt"
[ "$fails" = 0 ]
