#!/usr/bin/env bash
# gpu_suite_quick.sh - correctness of every workload of the given problems on the cuda backend with
# as little timing as the evaluator allows (1 correctness round, 2-3 timed calls): for slow first
# solutions (naive attention at 16k tokens takes ~1 s a call), where the question is "does it pass",
# not "how fast" (no PyTorch baselines: --no-torch). Writes $OUT/suite.jsonl and $OUT/suite.txt.
# SOLUTIONS (optional, e.g. "naive.cu") limits each problem to those solution files; ONLY (optional,
# with SOLUTIONS; space-separated) evaluates only the workloads whose uuid contains one of the words,
# one eval each (what an earlier run's time limit cut).
#
#   SUITE_DIRS="problems/llama/..." tools/gpu_suite_quick.sh
set -u
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu-suite-quick}
mkdir -p "$out"
: >"$out/suite.jsonl"
status=0
for d in ${SUITE_DIRS:?set SUITE_DIRS}; do
	for s in ${SOLUTIONS:-}; do
		for w in ${ONLY:-""}; do
			./build/solforge eval "$d" "$d/solutions/$s" --backend cuda --rounds 1 --min-iters 2 --max-iters 3 \
				--budget-ms 1 --no-torch --no-baseline --timeout 300 ${w:+--only "$w"} --json -o "$out/part.jsonl" \
				>>"$out/suite.txt" 2>>"$out/suite.err" || status=1
			cat "$out/part.jsonl" >>"$out/suite.jsonl"
		done
	done
	[ -n "${SOLUTIONS:-}" ] && continue
	./build/solforge suite "$d" --backend cuda --rounds 1 --min-iters 2 --max-iters 3 --budget-ms 1 --no-torch \
		--timeout 300 -o "$out/part.jsonl" >>"$out/suite.txt" 2>>"$out/suite.err" || status=1
	cat "$out/part.jsonl" >>"$out/suite.jsonl"
done
rm -f "$out/part.jsonl"
echo "quick suite: $(grep -c '"PASSED"' "$out/suite.jsonl") workloads passed, $(grep -vc '"PASSED"' "$out/suite.jsonl") not" | tee "$out/summary.txt"
exit $status
