#!/usr/bin/env bash
# gpu_round.sh - one device-tool call that runs several GPU scripts in turn, each under its own time
# limit, and brings everything back as two files: $OUT/summary.txt (each script's last 40 lines) and
# $OUT/round.tgz (every script's full output folder). The compile cache prebuilt by
# tools/prebuild_cache.sh is used when it was carried (.devcache). On a machine with several GPUs the
# scripts are dealt round-robin to one lane per GPU (CUDA_VISIBLE_DEVICES), lanes run side by side,
# and within a lane scripts run one after another: nothing is ever timed on a GPU another lane uses.
#
#   tools/gpu_round.sh [VAR=VAL,...@]SCRIPT:SECONDS ...     e.g. tools/gpu_memA.sh:200
#                                                          DEADLINE_S=150@tools/gpu_dec.sh:170
# A spec's VAR=VAL list (comma-separated, before '@') is that script's own environment, so two
# scripts that read the same variable can run in one round with different values.
set -u
cd "$(dirname "$0")/.."
final=${OUT:-build/gpu-round}
mkdir -p "$final"
work=$(mktemp -d /tmp/gpu-round.XXXXXX)
# the carried cache comes packed (a third of the size: the device tool carries at most 64 MiB)
[ -f .devcache.tgz ] && tar xzf .devcache.tgz
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
lanes=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$lanes" -ge 1 ] || lanes=1
echo "build: $(($(date +%s) - t0)) s; $lanes GPU lane(s)" >>"$final/summary.txt"
lane() { # lane GPU SPEC...: runs its scripts in order on one GPU
	local gpu=$1 spec s lim name a rc
	shift
	local -a envs
	for spec in "$@"; do
		envs=()
		local idx=${spec%%#*}
		spec=${spec#*#}
		case $spec in *@*) IFS=, read -r -a envs <<<"${spec%%@*}"; spec=${spec#*@} ;; esac
		s=${spec%:*} lim=${spec##*:}
		name=$(spec_name "$idx")
		mkdir -p "$work/$name"
		a=$(date +%s)
		env "${envs[@]}" CUDA_VISIBLE_DEVICES="$gpu" OUT="$work/$name" timeout -k 5 "$lim" "$s" \
			>"$work/$name/stdout.txt" 2>&1
		rc=$?
		{
			echo "==== $name (GPU $gpu, exit $rc, $(($(date +%s) - a)) s)"
			[ -f "$work/$name/summary.txt" ] && cat "$work/$name/summary.txt"
			tail -40 "$work/$name/stdout.txt"
		} >"$work/$name.summary"
	done
}
specs=("$@")
# spec_name I: the output folder of spec I: the script's name, with ".I" when another spec runs the same
# script (two lanes of one script must not share a folder)
spec_name() {
	local sp=${specs[$1]#*@} base j n=0
	base=$(basename "${sp%:*}" .sh)
	for ((j = 0; j < ${#specs[@]}; j++)); do
		sp=${specs[j]#*@}
		[ "$(basename "${sp%:*}" .sh)" = "$base" ] && n=$((n + 1))
	done
	[ "$n" -gt 1 ] && echo "$base.$1" || echo "$base"
}
for ((g = 0; g < lanes; g++)); do
	mine=()
	for ((i = g; i < ${#specs[@]}; i += lanes)); do mine+=("$i#${specs[i]}"); done
	[ ${#mine[@]} -gt 0 ] && lane "$g" "${mine[@]}" &
done
wait
for ((i = 0; i < ${#specs[@]}; i++)); do
	cat "$work/$(spec_name "$i").summary" >>"$final/summary.txt" 2>/dev/null
done
tar czf "$final/round.tgz" -C "$work" . 2>/dev/null
cat "$final/summary.txt"
