#!/usr/bin/env bash
# nvfp4_fast.sh - builds tests/fast/nvfp4_fast_test.cu (host code only: no GPU needed) and checks the
# NVFP4 fast solution's block quantizer against numeric.h's encoders with a fresh seed each run.
# Skips (0 passed, 0 failed) where nvcc is missing.
set -u
cd "$(dirname "$0")/../.."
out=${BUILD:-build}/suites
mkdir -p "$out"
if ! command -v "${NVCC:-nvcc}" >/dev/null 2>&1; then
	echo "skip: nvcc not found"
	echo "0 passed, 0 failed"
	exit 0
fi
if ! "${NVCC:-nvcc}" -std=c++17 -O2 -Iinclude -o "$out/nvfp4_fast_test" tests/fast/nvfp4_fast_test.cu \
	>"$out/nvfp4_fast_test.log" 2>&1; then
	echo "FAIL nvfp4_fast_test: build (see $out/nvfp4_fast_test.log)"
	echo "0 passed, 1 failed"
	exit 1
fi
seed=$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')
echo "seed $seed"
"$out/nvfp4_fast_test" "$seed"
