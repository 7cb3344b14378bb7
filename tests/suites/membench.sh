#!/usr/bin/env bash
# membench.sh - the non-GPU parts of the memory-bandwidth dev bench (tools/membench/, run on a GPU by
# tools/gpu_membw.sh): the host header (bf16 conversion, silu_and_mul CPU reference, tolerance check,
# generator, median) built with g++ and checked on a fresh seed (tests/membench/mb_host_test.cpp); the
# python driver's pure helpers and the variant tables (tests/membench/membench_py_test.py); the
# problem copies of the GPU scripts (tests/membench/problem_subset_test.py); the rmsnorm mode's CPU
# reference (a host-only g++ build of it, tests/membench/mb_rms_ref_so.cpp) driven through rmsbench.py's
# validation, its ratios and its variant table (tests/membench/rmsbench_py_test.py); the GPU scripts'
# syntax; where nvcc exists, tools/membench/rmsnorm.cu compiled for sm_90a with warnings as errors
# (a few seconds; it includes fast.cu). About 1 s without nvcc. Prints ok/FAIL lines and "N passed, M failed".
set -u
cd "$(dirname "$0")/../.." || exit 2
out=${BUILD:-build}/suites
mkdir -p "$out"
P=0
F=0
seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
tally() { # tally FILE: adds the file's "N passed, M failed" line, prints its FAIL lines
	local line
	grep '^FAIL' "$1"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -1)
	if [ -z "$line" ]; then
		echo "FAIL $1: no result"
		F=$((F + 1))
		return
	fi
	P=$((P + $(echo "$line" | cut -d' ' -f1)))
	F=$((F + $(echo "$line" | cut -d' ' -f3)))
}
if ${CXX:-g++} -std=c++17 -O1 -Wall -Wextra -Wshadow -Itools/membench tests/membench/mb_host_test.cpp \
	-o "$out/mb_host_test" >"$out/mb_host_test.log" 2>&1; then
	"$out/mb_host_test" "$seed" >"$out/mb_host_test.out" 2>&1
	tally "$out/mb_host_test.out"
else
	echo "FAIL mb_host_test: build (see $out/mb_host_test.log)"
	F=$((F + 1))
fi
python3 tests/membench/membench_py_test.py "$seed" >"$out/membench_py_test.out" 2>&1
tally "$out/membench_py_test.out"
python3 tests/membench/problem_subset_test.py "$seed" >"$out/problem_subset_test.out" 2>&1
tally "$out/problem_subset_test.out"
if ${CXX:-g++} -std=c++17 -O2 -Wall -Wextra -Wshadow -shared -fPIC -Itools/membench tests/membench/mb_rms_ref_so.cpp \
	-o "$out/mb_rms_ref.so" >"$out/mb_rms_ref_so.log" 2>&1; then
	python3 tests/membench/rmsbench_py_test.py "$seed" "$out/mb_rms_ref.so" >"$out/rmsbench_py_test.out" 2>&1
	tally "$out/rmsbench_py_test.out"
else
	echo "FAIL mb_rms_ref_so: build (see $out/mb_rms_ref_so.log)"
	F=$((F + 1))
fi
if command -v "${NVCC:-nvcc}" >/dev/null 2>&1; then
	if "${NVCC:-nvcc}" -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Itools/membench -Iinclude \
		-Xcompiler -Wall,-Wextra -Werror all-warnings -c tools/membench/rmsnorm.cu -o "$out/rmsnorm.o" \
		>"$out/rmsnorm_nvcc.log" 2>&1; then
		echo "ok tools/membench/rmsnorm.cu compiles for sm_90a (-Werror)"
		P=$((P + 1))
	else
		echo "FAIL tools/membench/rmsnorm.cu: nvcc (see $out/rmsnorm_nvcc.log)"
		F=$((F + 1))
	fi
	# the timing-parity runner (docs/runner.md): builds beside the real one, with its modes compiled in;
	# the real runner has none of their names (getenv's, the rcu_diag* functions, the touch kernel's sink,
	# nor a CU() message quoting them; a missing real runner fails, not passes)
	if make -s BUILD="${BUILD:-build}" diag-runner >"$out/diag_runner.log" 2>&1 &&
		grep -q SF_RUNNER_DIAG "${BUILD:-build}/diag/solforge-runner-cuda" &&
		grep -q rcu_touch_sink "${BUILD:-build}/diag/solforge-runner-cuda" &&
		[ -x "${BUILD:-build}/solforge-runner-cuda" ] && ! grep -q -e SF_RUNNER_DIAG -e rcu_diag -e rcu_touch_sink "${BUILD:-build}/solforge-runner-cuda"; then
		echo "ok make diag-runner: the modes are in build/diag's runner only"
		P=$((P + 1))
	else
		echo "FAIL make diag-runner (see $out/diag_runner.log)"
		F=$((F + 1))
	fi
fi
if python3 -c "import ast, sys; ast.parse(open('tools/membench/flushprobe.py').read())"; then
	echo "ok tools/membench/flushprobe.py parses"
	P=$((P + 1))
else
	echo "FAIL tools/membench/flushprobe.py: syntax"
	F=$((F + 1))
fi
for s in tools/gpu_membw.sh tools/gpu_knobs.sh tools/gpu_rmsbench.sh tools/gpu_flushprobe.sh; do
	if bash -n "$s"; then
		echo "ok $s parses"
		P=$((P + 1))
	else
		echo "FAIL $s: syntax"
		F=$((F + 1))
	fi
done
echo "seed $seed"
echo "$P passed, $F failed"
[ "$F" = 0 ]
