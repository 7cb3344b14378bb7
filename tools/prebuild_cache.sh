#!/usr/bin/env bash
# prebuild_cache.sh - fills a compile cache with every problem module and solution for the cuda
# backend, on a machine WITHOUT a GPU (only nvcc is needed), so that a GPU machine that starts bare
# spends its time timing instead of compiling. The cache key does not depend on the checkout's path
# (src/core/compile.h), so the folder can be carried to another machine with the same nvcc.
#
#   tools/prebuild_cache.sh [CACHE_DIR] [PROBLEM_DIR...]      (defaults: .devcache, every problem)
#
# On the GPU machine: tools/gpu_round.sh unpacks CACHE_DIR.tgz and sets SOLFORGE_CACHE.
set -u
cd "$(dirname "$0")/.."
cache=${1:-.devcache}
shift || true
mkdir -p "$cache"
export SOLFORGE_CACHE=$PWD/$cache
make -j"$(nproc)" build/solforge >/dev/null || exit 1
dirs=${*:-$(find problems tools/calibration -name definition.json -printf '%h\n' | sort)}
for p in $dirs; do
	for s in "$p"/solutions/*.cu; do [ -f "$s" ] && echo "$p $s"; done
done | xargs -P "$(nproc)" -L 1 sh -c './build/solforge eval $0 $1 --backend cuda --prepare-only 2>&1 | sed "s|^|$1: |"' |
	grep -v ' cached ' || true
# packed for the device tool, which carries at most 64 MiB: tools/gpu_round.sh unpacks it
tar czf "$cache.tgz" "$cache" && du -sh "$cache" "$cache.tgz"
