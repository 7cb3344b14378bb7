#!/usr/bin/env bash
# fuzz.sh - builds the libFuzzer harnesses in tests/fuzz (JSON parser, axis expressions) with
# ASan+UBSan and runs each for $1 seconds (default 20). Exits non-zero when a harness crashes or
# does not build; prints "fuzz: skipped (no libFuzzer)" and exits 0 only when clang is absent.
# Corpora persist under $BUILD/fuzz (BUILD defaults to build); crash inputs land there too.
set -u
cd "$(dirname "$0")/.."

secs=${1:-20}
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
	echo "fuzz: FAILED: $cc cannot link -fsanitize=fuzzer (install the libFuzzer runtime," \
		"e.g. apt-get install libclang-rt-\$(clang --version | sed -n 's/.*version \([0-9]*\).*/\1/p;q')-dev)" >&2
	sed 's/^/  /' "$build/probe.log" >&2
	exit 1
fi

flags="-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -g -O1 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc"
status=0
for target in json expr; do
	bin="$build/fuzz_$target"
	corpus="$build/corpus_$target"
	mkdir -p "$corpus"
	# a few seeds so the run starts from valid inputs
	if [ "$target" = json ]; then
		printf '{"a": [1, -2.5e3, true, false, null, "x\\u00e9\\ud83d\\ude00"], "b": {}}' >"$corpus/seed1"
		printf '[NaN, Infinity, -Infinity, 0, -0, 9223372036854775807]' >"$corpus/seed2"
		printf '{"axes": {"M": {"type": "var"}, "N": {"type": "expr", "expression": "2*M"}}}' >"$corpus/seed3"
	else
		printf '2*M*N*K + cdiv(N, 128) // 2 %% 3' >"$corpus/seed1"
		printf 'not (a < b <= c) or sqrt(x) ** -2 and min(1, 2, max(3, abs(-4)))' >"$corpus/seed2"
		printf 'ceil(log2(M)) - floor(1e-5 * N) != 0.5' >"$corpus/seed3"
	fi
	# shellcheck disable=SC2086
	if ! $cc $flags "tests/fuzz/fuzz_$target.c" src/core/$target.c src/core/util.c -lm -lpthread -o "$bin"; then
		echo "fuzz: $target: build failed" >&2
		status=1
		continue
	fi
	echo "fuzz: $target: running ${secs}s"
	if "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$build/crash_${target}_" "$corpus" >"$build/$target.log" 2>&1; then
		echo "fuzz: $target: ok ($(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/$target.log" |
			grep -o '[0-9]*$') runs, corpus $(ls "$corpus" | wc -l))"
	else
		echo "fuzz: $target: FAILED (log: $build/$target.log)" >&2
		grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$build/$target.log" | head -20 >&2
		status=1
	fi
done
exit $status
