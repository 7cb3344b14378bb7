#!/usr/bin/env bash
# fuzz.sh - builds the libFuzzer harnesses tests/fuzz/fuzz_*.c with ASan+UBSan and runs each for
# $1 seconds (default 20); further arguments pick harnesses by name (json, expr, ...).
# A harness lists the sources it links in its top comment ("Sources: tests/fuzz/fuzz_x.c
# src/core/x.c ..."; without that line: src/core/<name>.c and src/core/util.c).
# Exits non-zero when a harness crashes or does not build; prints "fuzz: skipped (no libFuzzer)"
# and exits 0 only when clang is absent. Corpora persist under ${BUILD:-build}/fuzz, and crashing
# inputs are written there as crash_<name>_*.
set -u
cd "$(dirname "$0")/.."

secs=${1:-20}
shift $(($# > 0 ? 1 : 0))
build=${BUILD:-build}/fuzz
cc=${FUZZ_CC:-clang}

if ! command -v "$cc" >/dev/null 2>&1; then
	echo "fuzz: skipped (no libFuzzer): $cc not found"
	exit 0
fi
mkdir -p "$build"

# libFuzzer's runtime ships separately on some systems (Debian: libclang-rt-NN-dev).
probe="$build/probe.c"
printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$probe"
if ! "$cc" -fsanitize=fuzzer "$probe" -o "$build/probe" 2>"$build/probe.log"; then
	ver=$("$cc" --version | sed -n 's/.*version \([0-9]*\).*/\1/p' | head -n 1)
	echo "fuzz: FAILED: $cc cannot link -fsanitize=fuzzer; install the libFuzzer runtime" \
		"(Debian: apt-get install libclang-rt-${ver:-NN}-dev)" >&2
	sed 's/^/  /' "$build/probe.log" >&2
	exit 1
fi

# The src/ files named after "Sources:" in the harness's top comment (up to the word "Build").
sources_of() {
	awk '/\*\//{exit} {print}' "$1" | sed -n '/Sources:/,$p' | sed '/Build/q' |
		grep -o 'src/[A-Za-z0-9_/]*\.c' | sort -u
}

# Seed inputs, so runs start from valid documents.
seed_corpus() {
	case "$1" in
	json)
		printf '{"a": [1, -2.5e3, true, false, null, "x\\u00e9\\ud83d\\ude00"], "b": {}}' >"$2/seed1"
		printf '[NaN, Infinity, -Infinity, 0, -0, 9223372036854775807]' >"$2/seed2"
		printf '{"axes": {"M": {"type": "var"}, "N": {"type": "expr", "expression": "2*M"}}}' >"$2/seed3"
		;;
	problem) # real definitions, each with a few of its workloads (definition, a line "---", the workload lines)
		local i=0 d
		for d in problems/llama/rmsnorm_h4096 problems/llama/gemm_bf16_n4096_k4096 \
			problems/llama/gqa_paged_decode_h32_kv8_d128_ps16 problems/deepseek/moe_grouped_topk_routing_e256_g8_k8; do
			i=$((i + 1))
			{ cat "$d/definition.json"; printf '\n---\n'; head -n 3 "$d/workload.jsonl"; } >"$2/seed$i"
		done
		;;
	expr)
		printf '2*M*N*K + cdiv(N, 128) // 2 %% 3' >"$2/seed1"
		printf 'not (a < b <= c) or sqrt(x) ** -2 and min(1, 2, max(3, abs(-4)))' >"$2/seed2"
		printf 'ceil(log2(M)) - floor(1e-5 * N) != 0.5' >"$2/seed3"
		;;
	esac
}

if [ $# -gt 0 ]; then
	targets="$*"
else
	targets=$(ls tests/fuzz/fuzz_*.c 2>/dev/null | sed 's|.*/fuzz_\(.*\)\.c|\1|')
fi
[ -n "$targets" ] || { echo "fuzz: no harnesses in tests/fuzz" >&2; exit 1; }

flags="-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -g -O1 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc"
status=0
for target in $targets; do
	harness="tests/fuzz/fuzz_$target.c"
	if [ ! -f "$harness" ]; then
		echo "fuzz: $target: no $harness" >&2
		status=1
		continue
	fi
	srcs=$(sources_of "$harness")
	[ -n "$srcs" ] || srcs="src/core/$target.c src/core/util.c"
	bin="$build/fuzz_$target"
	corpus="$build/corpus_$target"
	mkdir -p "$corpus"
	seed_corpus "$target" "$corpus"
	# shellcheck disable=SC2086
	if ! $cc $flags "$harness" $srcs -lm -lpthread -o "$bin"; then
		echo "fuzz: $target: build failed" >&2
		status=1
		continue
	fi
	echo "fuzz: $target: running ${secs}s"
	if "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$build/crash_${target}_" "$corpus" >"$build/$target.log" 2>&1; then
		runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/$target.log" | grep -o '[0-9]*$')
		echo "fuzz: $target: ok (${runs:-?} runs, corpus $(ls "$corpus" | wc -l))"
	else
		echo "fuzz: $target: FAILED (log: $build/$target.log)" >&2
		grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$build/$target.log" | head -20 >&2
		status=1
	fi
done
exit $status
