#!/usr/bin/env bash
# gpu_redteam.sh - issue 4 on a GPU machine (an H200): the cuda red-team cases, honest solutions
# under the defenses (baselines included), and the overhead benchmark of the defenses.
#
#   env       GPU, driver, CUDA, kernel, Landlock ABI (what the sandbox can use here)
#   honest    honest solutions PASS with every defense on: the copy, a naive RMSNorm, a naive GEMM
#             with its cuBLASLt baseline (the baseline must be used: it runs inside the sandbox too),
#             the tuned sm90 GEMM (fast.cu: TMA, a declared driver entry-point lookup)
#   redteam   every tests/redteam/cuda/*.cu case ends with its expected status, never PASSED; and
#             sol_skip_after_first with SOLFORGE_DEFENSES=0 is still REWARD_HACK (speed of light)
#   overhead  honest solutions timed with the issue-4 defenses on and off (SOLFORGE_DEFENSES=0
#             SOLFORGE_SANDBOX=0), alternating on/off/on/off; the % difference of the mean medians
# Needs about 3 minutes. Logs go to $OUT (the device tool's folder) or build/gpu-redteam, packed into
# gpu_redteam_logs.tgz beside summary.txt; the last lines printed are the result table.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu-redteam}
logs=$out/logs
mkdir -p "$logs"
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache}
S=build/solforge
P=tools/calibration/copy
RT=tests/redteam/cuda
rows=()
fails=0
row() { rows+=("$(printf '%-34s %-22s %s' "$1" "$2" "$3")"); }

t0=$(date +%s)
if ! make -j"$(nproc)" >"$logs/build.log" 2>&1; then
	tail -30 "$logs/build.log"
	echo "gpu_redteam: build failed"
	exit 1
fi
{
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
	nvcc --version | tail -2
	uname -r
	python3 -c 'import ctypes; l = ctypes.CDLL(None); print("landlock abi", l.syscall(444, None, 0, 1))'
	grep -E 'Seccomp|NoNewPrivs' /proc/self/status
} >"$logs/env.txt" 2>&1
gpu=$(sed -n 2p "$logs/env.txt" | cut -d, -f1)
ll=$(grep -o 'landlock abi .*' "$logs/env.txt")

GEMM=problems/llama/gemm_bf16_n4096_k4096
GW=gemm_bf16_n4096_k4096-m512
RMS=problems/llama/rmsnorm_h4096
RW=$(head -1 $RMS/workload.jsonl | python3 -c 'import json,sys; print(json.load(sys.stdin)["uuid"])')
# every module and solution built first, in parallel (nvcc is slow; the GPU is not needed for it)
{
	for f in $P/solutions/copy.cu $RT/*.cu; do echo "$P $f"; done
	echo "$RMS $RMS/solutions/naive.cu"
	echo "$GEMM $GEMM/solutions/naive.cu"
	[ -f $GEMM/solutions/fast.cu ] && echo "$GEMM $GEMM/solutions/fast.cu"
} | xargs -P "$(nproc)" -L 1 sh -c "$S eval \$0 \$1 --backend cuda --prepare-only >/dev/null 2>&1" || true

quick=(--backend cuda --rounds 2 --budget-ms 300 --min-iters 20 --max-iters 60 --timeout 60 --no-baseline)

# status of workload W in eval output file F
status_of() { awk -v w="$2" '$1 == w { print $2; exit }' "$1"; }

# --- honest ----------------------------------------------------------------------------------------
honest() { # honest NAME PROBLEM SOLUTION WORKLOAD [extra flags]
	local name=$1 p=$2 s=$3 w=$4
	shift 4
	local f=$logs/honest_$name.txt
	"$S" eval "$p" "$s" --backend cuda --rounds 2 --budget-ms 500 --timeout 120 --only "=$w" "$@" --json \
		-o "$logs/honest_$name.jsonl" >"$f" 2>&1
	local st
	st=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["evaluation"]["status"])' \
		"$logs/honest_$name.jsonl" 2>/dev/null)
	if [ "$st" = PASSED ]; then row "honest/$name" PASSED ok; else
		row "honest/$name" "${st:-none}" FAIL; fails=$((fails + 1)); fi
}
honest copy_n2^20 $P $P/solutions/copy.cu 'copy-n2^20' --no-baseline
honest rmsnorm $RMS $RMS/solutions/naive.cu "$RW" --no-baseline
honest gemm_with_baseline $GEMM $GEMM/solutions/naive.cu "$GW"
# the tuned sm90 GEMM: TMA through a declared driver entry-point lookup, the shared CUDA runtime
[ -f $GEMM/solutions/fast.cu ] && honest gemm_fast $GEMM $GEMM/solutions/fast.cu "$GW" --no-baseline
if python3 - "$logs/honest_gemm_with_baseline.jsonl" <<'EOF'
import json, sys
ok = False
for l in open(sys.argv[1]):  # every line (one per workload): T_b and each baseline's verdict, for the log
    t = json.loads(l)
    e = t["evaluation"]
    tb = e.get("performance", {}).get("reference_latency_ms", 0)
    bls = [(b.get("name"), b.get("status"), b.get("median_ms")) for b in e.get("solforge", {}).get("baselines", [])]
    print("gemm_baseline_in_sandbox:", t["workload"]["uuid"], e["status"], "T_b", tb, "by", e.get("solforge", {}).get("baseline"), bls, file=sys.stderr)
    ok = ok or (tb or 0) > 0
sys.exit(0 if ok else 1)
EOF
then row "honest/gemm_baseline_in_sandbox" "T_b measured" ok; else
	row "honest/gemm_baseline_in_sandbox" "no T_b" FAIL; fails=$((fails + 1)); fi

# --- red team --------------------------------------------------------------------------------------
rt() { # rt NAME FILE WORKLOAD STATUS_RE MSG_RE [ENV=V ...]
	local name=$1 file=$2 w=$3 want=$4 msg=$5
	shift 5
	local f=$logs/redteam_$name.txt
	env "$@" "$S" eval $P "$file" "${quick[@]}" --only "=$w" >"$f" 2>&1
	local rc=$? st
	st=$(status_of "$f" "$w")
	if [ "$rc" != 0 ] && [ "$st" != PASSED ] && [[ $st =~ ^($want)$ ]] && grep -Eq -- "$msg" "$f"; then
		row "redteam/$name" "$st" ok
	else
		row "redteam/$name" "${st:-none} (exit $rc)" "FAIL (want $want)"
		fails=$((fails + 1))
	fi
}
W=copy-n2^20
rt cache_by_pointer $RT/cache_by_pointer.cu $W REWARD_HACK 'timed call'
rt cache_by_fingerprint $RT/cache_by_fingerprint.cu $W REWARD_HACK 'timed call'
rt persisting_l2 $RT/persisting_l2.cu $W REWARD_HACK 'imports cudaStreamSetAttribute'
rt cupti_disable $RT/cupti_disable.cu $W REWARD_HACK 'imports cuptiActivityDisable'
rt side_thread $RT/side_thread.cu $W REWARD_HACK 'left a thread running'
rt fork_declared $RT/fork_declared.cu $W REWARD_HACK 'forbidden system call'
rt sol_skip_after_first $RT/sol_skip_after_first.cu copy-n2^24 REWARD_HACK 'timed call|speed of light'
rt sol_skip_defenses_off $RT/sol_skip_after_first.cu copy-n2^24 REWARD_HACK 'timed call|speed of light' \
	SOLFORGE_DEFENSES=0
for f in $RT/*.cu; do
	b=$(basename "$f" .cu)
	grep -q "redteam/$b" <(printf '%s\n' "${rows[@]}") || { row "coverage/$b" "not run" FAIL; fails=$((fails + 1)); }
done

# --- overhead --------------------------------------------------------------------------------------
# T_k (median of the timed calls) with the defenses on and off; perturbation, audits, thread checks and
# the sandbox all act outside the timed window, so the difference should be noise (<2%)
bench() { # bench NAME PROBLEM SOLUTION WORKLOAD
	local name=$1 p=$2 s=$3 w=$4
	local -a on=() off=()
	for i in 1 2; do
		for mode in on off; do
			local j=$logs/overhead_${name}_${mode}_$i.jsonl
			if [ $mode = on ]; then
				"$S" eval "$p" "$s" --backend cuda --rounds 1 --budget-ms 1000 --no-baseline --only "=$w" \
					--json -o "$j" >/dev/null 2>&1
			else
				SOLFORGE_DEFENSES=0 SOLFORGE_SANDBOX=0 "$S" eval "$p" "$s" --backend cuda --rounds 1 \
					--budget-ms 1000 --no-baseline --only "=$w" --json -o "$j" >/dev/null 2>&1
			fi
		done
	done
	python3 - "$logs" "$name" >>"$logs/overhead.txt" <<'EOF'
import glob, json, sys
logs, name = sys.argv[1], sys.argv[2]
def med(mode):
    v = []
    for f in sorted(glob.glob(f"{logs}/overhead_{name}_{mode}_*.jsonl")):
        t = json.loads(open(f).readline())
        v.append(t["evaluation"].get("performance", {}).get("latency_ms", float("nan")))
    return v
on, off = med("on"), med("off")
m_on, m_off = sum(on) / len(on), sum(off) / len(off)
ext = []
for f in sorted(glob.glob(f"{logs}/overhead_{name}_on_*.jsonl")):
    ext.append(json.loads(open(f).readline())["evaluation"].get("solforge", {}).get("external_ms"))
print(f"{name} on_ms={['%.5f' % x for x in on]} off_ms={['%.5f' % x for x in off]} "
      f"diff={100 * (m_on - m_off) / m_off:+.2f}% external_ms={ext}")
EOF
	local d
	d=$(grep "^$name " "$logs/overhead.txt" | tail -1 | grep -o 'diff=[^ ]*' | cut -d= -f2)
	row "overhead/$name" "T_k on vs off ${d:-?}" "$(python3 -c "import sys; v=sys.argv[1].rstrip('%'); print('ok' if v not in ('', '?') and abs(float(v)) < 2 else 'CHECK')" "${d:-?}" 2>/dev/null)"
}
: >"$logs/overhead.txt"
bench copy_n2^24 $P $P/solutions/copy.cu 'copy-n2^24'
bench copy_n2^16 $P $P/solutions/copy.cu 'copy-n2^16'
if [ -f $GEMM/solutions/fast.cu ]; then bench gemm_fast $GEMM $GEMM/solutions/fast.cu "$GW"; else
	bench gemm $GEMM $GEMM/solutions/naive.cu "$GW"; fi

t1=$(date +%s)
{
	echo "gpu_redteam on $gpu ($ll), $((t1 - t0)) s, $fails failed"
	printf '%s\n' "${rows[@]}"
	echo "--- overhead detail"
	cat "$logs/overhead.txt"
} >"$out/summary.txt"
tar czf "$out/gpu_redteam_logs.tgz" -C "$out" logs && rm -rf "$logs"
cat "$out/summary.txt"
[ "$fails" = 0 ]
