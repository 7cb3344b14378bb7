#!/usr/bin/env bash
# runner_smoke.sh - smoke test of the cuda runner on a GPU machine (not run by CI).
#
# Builds build/solforge-runner-cuda, the toy problem module of tests/gpu/toy/oracle.c (the cuda
# wrapper src/runner/oracle_gpu.cu, and the cpu wrapper when the cpu runner builds), and the toy
# solutions beside it; writes job files by hand (the format of src/core/job.c's sf_job_to_json);
# runs reference mode, then solution mode once per toy solution, and prints what each produced:
# exit code, status, message, timing method, samples, median ms. The last column says what to expect.
#
# Usage: tests/gpu/runner_smoke.sh [WORKDIR]     (default: a fresh folder under /tmp)
# Exit status: 0 when every row matched its expectation, 1 otherwise.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
W=${1:-$(mktemp -d /tmp/sf-runner-smoke.XXXXXX)}
mkdir -p "$W"
NVCC=${NVCC:-nvcc}
SM="-gencode=arch=compute_90a,code=sm_90a"
TOY=$ROOT/tests/gpu/toy
M=1024
N=4096
FAILS=0

echo "== build (work folder $W)"
make build/solforge-runner-cuda >"$W/make.log" 2>&1 || { cat "$W/make.log"; exit 1; }
RUNNER=$ROOT/build/solforge-runner-cuda
$NVCC -std=c++17 -O2 $SM --fmad=false -Xcompiler -fPIC -shared -Iinclude -Isrc \
	-DSF_ORACLE_SOURCE="\"$TOY/oracle.c\"" src/runner/oracle_gpu.cu -o "$W/module.so" || exit 1
for s in correct wrong oob modin sidestream crash exit0; do
	$NVCC -std=c++17 -O2 $SM -Xcompiler -fPIC -shared -Iinclude -I"$TOY" "$TOY/$s.cu" -o "$W/$s.so" || exit 1
done
HAVE_CPU=0
if make build/solforge-runner-cpu >>"$W/make.log" 2>&1 &&
	${CC:-cc} -std=c11 -O2 -ffp-contract=off -fPIC -shared -Iinclude -Isrc \
		-DSF_ORACLE_SOURCE="\"$TOY/oracle.c\"" src/runner/oracle_cpu.c -o "$W/module_cpu.so" -lm; then
	HAVE_CPU=1
fi

# job MODE OUT_DIR MODULE [SOLUTION]: prints a job file
job() {
	local mode=$1 out=$2 module=$3 sol=${4:-}
	printf '{"mode":"%s","problem_module":"%s",' "$mode" "$module"
	[ -n "$sol" ] && printf '"solution":"%s",' "$sol"
	printf '"entry":"run","out_dir":"%s","device":0,"axes":{"M":%d,"N":%d},' "$out" $M $N
	printf '"inputs":[{"name":"x","dtype":"bfloat16","gen":"normal","a":0,"b":1,"shape":[%d,%d]},' $M $N
	printf '{"name":"perm","dtype":"int32","gen":"custom","a":0,"b":0,"shape":[%d]},' $M
	printf '{"name":"alpha","dtype":"float32","gen":"scalar","a":0.5,"b":0}],'
	printf '"outputs":[{"name":"y","dtype":"bfloat16","gen":"normal","a":0,"b":1,"shape":[%d,%d]}],' $M $N
	printf '"seeds":["11","12345678901234567890"]'
	if [ "$mode" = solution ]; then
		printf ',"timing":{"seed":"77","warmup_ms":10,"min_iters":10,"max_iters":200,"budget_ms":1000,'
		printf '"target_rel_ci":0.02,"flush_bytes":0,"sets":0}'
	fi
	printf '}\n'
}

# summary NAME OUT_DIR EXIT_CODE EXPECT: one line per run
summary() {
	python3 - "$@" <<'EOF'
import json, os, statistics, sys
name, out, code, expect = sys.argv[1:5]
path = os.path.join(out, "result.json")
if not os.path.exists(path):
    got = "no-result"
    line = f"{name:<12} exit={code:<3} no result.json"
else:
    r = json.load(open(path))
    got = r["status"]
    line = f"{name:<12} exit={code:<3} status={got:<20}"
    t = r.get("timing")
    if t:
        s = t["samples_ms"]
        line += (f" method={t['method']} n={len(s)} median={statistics.median(s):.4f}ms"
                 f" min={min(s):.4f} max={max(s):.4f} sets={t['sets']} flush={t['flush_bytes']}"
                 f" timed_wall={t['timed_wall_ms']:.2f}ms wall={t['wall_ms']:.1f}ms")
    if r.get("work"):
        line += f" work={r['work']}"
    if r.get("message"):
        line += f" msg={r['message']!r}"
ok = got == expect
print(f"{'ok  ' if ok else 'FAIL'} {line}   [expect {expect}]")
sys.exit(0 if ok else 1)
EOF
}

# compare A B: max |a - b| of tensor y in two safetensors files (needs torch + safetensors)
compare() {
	python3 - "$@" <<'EOF' 2>/dev/null || echo "     (compare skipped: no torch/safetensors)"
import sys
from safetensors.torch import load_file
a = load_file(sys.argv[1])["y"].double()
b = load_file(sys.argv[2])["y"].double()
d = (a - b).abs().max().item()
tol = (1e-2 + 1e-2 * b.abs()).sub((a - b).abs()).min().item() >= 0
print(f"     y vs reference: max |diff| = {d:.3g}, within atol=rtol=1e-2: {tol}")
EOF
}

echo "== reference mode"
REF=$W/ref
mkdir -p "$REF"
job reference "$REF" "$W/module.so" >"$W/ref.json"
"$RUNNER" "$W/ref.json" 2>"$W/ref.err"
summary reference "$REF" $? ok || FAILS=$((FAILS + 1))
ls -l "$REF"
if [ $HAVE_CPU = 1 ]; then
	CREF=$W/ref_cpu
	mkdir -p "$CREF"
	job reference "$CREF" "$W/module_cpu.so" >"$W/ref_cpu.json"
	build/solforge-runner-cpu "$W/ref_cpu.json" 2>"$W/ref_cpu.err"
	summary reference-cpu "$CREF" $? ok || FAILS=$((FAILS + 1))
	for r in 0 1; do
		if cmp -s "$REF/round$r.safetensors" "$CREF/round$r.safetensors"; then
			echo "ok   round$r: GPU and CPU references are byte-identical (inputs drawn identically)"
		else
			echo "FAIL round$r: GPU and CPU references differ"
			FAILS=$((FAILS + 1))
		fi
	done
fi

echo "== solution mode"
# name expected-status
for pair in correct:ok wrong:ok oob:wrote_out_of_bounds modin:inputs_modified sidestream:ok crash:no-result \
	exit0:no-result; do
	s=${pair%%:*}
	expect=${pair##*:}
	OUT=$W/sol_$s
	mkdir -p "$OUT"
	job solution "$OUT" "$W/module.so" "$W/$s.so" >"$W/sol_$s.json"
	timeout 120 "$RUNNER" "$W/sol_$s.json" >"$W/sol_$s.out" 2>"$W/sol_$s.err"
	code=$?
	summary "$s" "$OUT" $code "$expect" || FAILS=$((FAILS + 1))
	if [ -s "$W/sol_$s.err" ]; then
		sed 's/^/     stderr: /' "$W/sol_$s.err" | head -5
	fi
	if [ -f "$OUT/round0.safetensors" ] && [ "$expect" = ok ]; then
		compare "$OUT/round0.safetensors" "$REF/round0.safetensors"
	fi
done
echo "   (expect: correct within tolerance, median a few us; wrong NOT within tolerance; sidestream's"
echo "    median >= ~2 ms: its side-stream spin is counted; crash: exit 3 + illegal address on stderr)"

echo "== solution mode, CUDA-event fallback (SF_RUNNER_NO_CUPTI=1)"
for pair in correct:ok sidestream:ok; do
	s=${pair%%:*}
	OUT=$W/ev_$s
	mkdir -p "$OUT"
	job solution "$OUT" "$W/module.so" "$W/$s.so" >"$W/ev_$s.json"
	SF_RUNNER_NO_CUPTI=1 timeout 120 "$RUNNER" "$W/ev_$s.json" >"$W/ev_$s.out" 2>"$W/ev_$s.err"
	summary "events-$s" "$OUT" $? ok || FAILS=$((FAILS + 1))
done
echo "   (expect method=events; events-sidestream's median is small: events see the call's stream only)"

echo "== $FAILS unexpected result(s); files in $W"
[ $FAILS = 0 ]
