#!/usr/bin/env bash
# fast_kernels.sh - host-side (CPU) checks of the fast.cu solutions' exact index and rounding logic:
# tests/fast/*_test.cu include a solution whole and call its __host__ __device__ helpers on the CPU
# (nvcc host code: no GPU needed), against numeric.h / the oracle's algorithm, with a fresh seed each
# run. Skips (0 passed, 0 failed) where nvcc is missing.
set -u
cd "$(dirname "$0")/../.." || exit 1
out=${BUILD:-build}/suites
mkdir -p "$out"
nvcc=${NVCC:-nvcc}
if ! command -v "$nvcc" >/dev/null 2>&1; then
	echo "skip: nvcc not found"
	echo "0 passed, 0 failed"
	exit 0
fi
pass=0 fail=0
for src in tests/fast/*_test.cu; do
	name=$(basename "$src" .cu)
	seed=$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')
	if ! "$nvcc" -std=c++17 -O2 -arch=sm_90 -Iinclude -o "$out/$name" "$src" >"$out/$name.log" 2>&1; then
		echo "FAIL $name: build (see $out/$name.log)"
		fail=$((fail + 1))
	elif "$out/$name" "$seed" >"$out/$name.out" 2>&1; then
		echo "ok $name (seed $seed): $(tail -1 "$out/$name.out")"
		pass=$((pass + 1))
	else
		echo "FAIL $name (seed $seed): $(grep -m3 FAIL "$out/$name.out" | tr '\n' ' ') $(tail -1 "$out/$name.out")"
		fail=$((fail + 1))
	fi
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
