#!/usr/bin/env bash
# emu_mma.sh - the CPU emulation of the warp tensor-core primitives (tests/emu/emu.h: mma.sync
# m16n8k16 bf16 -> f32, ldmatrix x1/x2/x4 and .trans, reached through
# problems/common/kernels/sm80_warp_mma.cuh) against plain matrix products on random data, 5 seeds
# (tests/emu/emu_mma_test.cpp; a few seconds). The decode kernel's version 3 that uses them runs in
# tests/suites/emu_kernels.sh. No GPU needed. Ends with "N passed, M failed".
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
TMP=$(mktemp -d /tmp/solforge-emu-mma.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
CXX=${CXX:-g++}
if ! $CXX -std=c++17 -O1 -pthread -Wall -Wextra -Wno-unused-function -Itests/emu tests/emu/emu_mma_test.cpp \
	-o "$TMP/emu_mma" >"$TMP/build.log" 2>&1; then
	echo "FAIL emu_mma: build"
	sed 's/^/    /' "$TMP/build.log" | head -20
	echo "0 passed, 1 failed"
	exit 1
fi
# a fresh seed base per run (5 seeds from it); it is printed so that a failure can be replayed
seed=${EMU_MMA_SEED:-$((RANDOM * 32768 + RANDOM))}
echo "emu_mma: seed base $seed"
"$TMP/emu_mma" "$seed" >"$TMP/out.txt" 2>&1
rc=$?
grep -v '^ok ' "$TMP/out.txt"
if [ "$rc" != 0 ] && ! grep -q ' [1-9][0-9]* failed$' "$TMP/out.txt"; then
	echo "FAIL emu_mma: exit status $rc"
	echo "0 passed, 1 failed"
fi
exit "$rc"
