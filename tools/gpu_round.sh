#!/usr/bin/env bash
# gpu_round.sh - one device-tool call that runs several GPU scripts in turn, each under its own time
# limit, and brings everything back as two files: $OUT/summary.txt (each script's last 40 lines) and
# $OUT/round.tgz (every script's full output folder). The compile cache prebuilt by
# tools/prebuild_cache.sh is used when it was carried (.devcache).
#
#   tools/gpu_round.sh SCRIPT:SECONDS [SCRIPT:SECONDS...]     e.g. tools/gpu_memA.sh:200
set -u
cd "$(dirname "$0")/.."
final=${OUT:-build/gpu-round}
mkdir -p "$final"
work=$(mktemp -d /tmp/gpu-round.XXXXXX)
[ -d .devcache ] && export SOLFORGE_CACHE=$PWD/.devcache
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache}
t0=$(date +%s)
make -j"$(nproc)" >"$work/build.log" 2>&1 || { tail -30 "$work/build.log"; echo "gpu_round: build failed"; }
{
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,persistence_mode,compute_mode --format=csv
	nvcc --version | tail -2
	python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)' 2>&1
	uname -r
} >"$work/env.txt" 2>&1
: >"$final/summary.txt"
echo "build: $(($(date +%s) - t0)) s" >>"$final/summary.txt"
for spec in "$@"; do
	s=${spec%:*} lim=${spec##*:}
	name=$(basename "$s" .sh)
	mkdir -p "$work/$name"
	a=$(date +%s)
	OUT="$work/$name" timeout -k 5 "$lim" "$s" >"$work/$name/stdout.txt" 2>&1
	rc=$?
	{
		echo "==== $name (exit $rc, $(($(date +%s) - a)) s)"
		[ -f "$work/$name/summary.txt" ] && cat "$work/$name/summary.txt"
		tail -40 "$work/$name/stdout.txt"
	} >>"$final/summary.txt"
done
tar czf "$final/round.tgz" -C "$work" . 2>/dev/null
cat "$final/summary.txt"
