#!/usr/bin/env bash
# cuda_check.sh - compiles every bundled CUDA source for sm_90a (compile only; CI has no GPU):
# each problem's oracle through the GPU wrapper (src/runner/oracle_gpu.cu), every solutions/*.cu and
# baseline, and the GPU test sources; a source whose wgmma ptxas serialized (C7520) fails too. Prints "ok"/"FAIL" per
# file and closes with "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
out=${BUILD:-build}/cuda-check
mkdir -p "$out"
arch=${SOLFORGE_CUDA_ARCH:-arch=compute_90a,code=sm_90a}
jobs=${JOBS:-$(nproc)}
flags="-std=c++17 -O2 -gencode=$arch -Iinclude -Isrc -Xcompiler -Wall,-Wextra -Werror all-warnings"

list=$(mktemp)
for o in problems/*/*/oracle.c problems/common/oracles/*.c tools/calibration/*/oracle.c; do
	case $o in */test_*) ;; *) echo "oracle $o" ;; esac
done >>"$list"
# a solution whose code (comments and blank lines aside) is the same as one already listed from a
# folder at the same depth compiles to the same object - the thin wrappers of a shared kernel, e.g. the
# four GEMM problems' fast.cu including problems/common/kernels/gemm_bf16_sm90.cu by the same relative
# path - so only the first is compiled (the others are reported "same as" it)
seen=$(mktemp)
for s in problems/*/*/solutions/*.cu problems/common/baselines/*.cu tests/gpu/toy/*.cu tools/calibration/*/solutions/*.cu tests/fixtures/cuda/*/*.cu tests/redteam/cuda/*.cu; do
	case $s in *compile_error*) continue ;; esac
	[ -f "$s" ] || continue
	key="$(dirname "$s" | tr -cd / | wc -c)-$(sed -e 's:/\*.*\*/::g' -e '/^[[:space:]]*\/\?\*/d' -e '/^[[:space:]]*\*/d' \
		-e '/^[[:space:]]*\/\//d' -e '/^[[:space:]]*$/d' "$s" | md5sum | cut -c1-32)"
	first=$(awk -v k="$key" '$1 == k {print $2; exit}' "$seen")
	if [ -n "$first" ]; then
		echo "same $s $first"
	else
		echo "$key $s" >>"$seen"
		echo "source $s"
	fi
done >>"$list"
rm -f "$seen"

compile_one() {
	kind=$1 src=$2
	if [ "$kind" = same ]; then
		echo "ok same $src (as $3)"
		return
	fi
	name=$(echo "$src" | tr '/' '_')
	# shellcheck disable=SC2086
	if [ "$kind" = oracle ]; then
		set -- nvcc $flags --fmad=false "-DSF_ORACLE_SOURCE=\"$PWD/$src\"" -c src/runner/oracle_gpu.cu -o "$out/$name.o"
	else
		set -- nvcc $flags -c "$src" -o "$out/$name.o"
	fi
	if "$@" >"$out/$name.log" 2>&1; then
		# ptxas's C7520 "info": it serialized wgmma (accumulators touched on a path it cannot prove uniform), which
		# -Werror lets through and which cost GEMM version 26's first build 1.3x (session 24)
		if grep -q C7520 "$out/$name.log"; then
			echo "FAIL $kind $src: wgmma serialized by ptxas (C7520)"
			grep -m2 C7520 "$out/$name.log" | sed 's/^/    /'
		else
			echo "ok $kind $src"
		fi
	else
		echo "FAIL $kind $src"
		sed 's/^/    /' "$out/$name.log" | head -30
	fi
}
export -f compile_one
export flags out
results=$(xargs -P "$jobs" -L 1 bash -c 'compile_one "$0" "$1" "$2"' <"$list")
rm -f "$list"
echo "$results"
p=$(echo "$results" | grep -c '^ok ')
f=$(echo "$results" | grep -c '^FAIL ')
echo "$p passed, $f failed"
[ "$f" = 0 ]
