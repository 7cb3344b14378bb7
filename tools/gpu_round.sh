#!/usr/bin/env bash
# gpu_round.sh - one device-tool call that runs several GPU scripts in turn, each under its own time
# limit, and brings everything back: $OUT/summary.txt (each script's last 40 lines), $OUT/NAME.tgz per
# script (its full output folder, packed as soon as it ends; $OUT/done.txt holds the summaries of the
# scripts that ended while the round still runs) and $OUT/round.tgz (the build log and env.txt). The compile cache prebuilt by
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
# --check: validate the specs here, before a device call (a refused round used to cost the machine's start):
# every script exists and is executable, every limit is a number, and with ROUND_S every lane's limits fit
# (LANES: the GPUs of the machine asked for, default 1). Nothing is built or run.
check_only=0
[ "${1:-}" = --check ] && { check_only=1; shift; }
specs=("$@")
if [ "$check_only" = 1 ]; then
	lanes=${LANES:-1}
else
	lanes=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
	[ "$lanes" -ge 1 ] || lanes=1
fi
for sp in "${specs[@]}"; do
	sc=${sp#*@} lim=${sp##*:}
	sc=${sc%:*}
	case $lim in '' | *[!0-9]*) echo "gpu_round: spec '$sp': the limit after the last ':' is not a number of seconds"; exit 2 ;; esac
	[ -x "$sc" ] || { echo "gpu_round: spec '$sp': no executable script $sc"; exit 2; }
done
# ROUND_S (the caller's outer limit, e.g. the `timeout` around this script): every lane's scripts must
# fit it, limits summed, with 10 s to spare; checked before anything is built or run
if [ -n "${ROUND_S:-}" ]; then
	for ((g = 0; g < lanes; g++)); do
		sum=0
		for ((i = g; i < ${#specs[@]}; i += lanes)); do sum=$((sum + ${specs[i]##*:})); done
		if [ $((sum + 10)) -gt "$ROUND_S" ]; then
			echo "gpu_round: lane $g's limits sum to $sum s, more than ROUND_S $ROUND_S - 10 (specs go round-robin: spec 1 to GPU 0, spec 2 to GPU 1, spec 3 to GPU 0, ...)"
			exit 2
		fi
	done
fi
if [ "$check_only" = 1 ]; then
	echo "gpu_round: ${#specs[@]} spec(s) ok on $lanes lane(s)${ROUND_S:+ within ROUND_S $ROUND_S}"
	exit 0
fi
final=${OUT:-build/gpu-round}
mkdir -p "$final"
work=$(mktemp -d /tmp/gpu-round.XXXXXX)
# the carried cache comes packed (a third of the size: the device tool carries at most 64 MiB)
[ -f .devcache.tgz ] && tar xzf .devcache.tgz
[ -d .devcache ] && export SOLFORGE_CACHE=$PWD/.devcache
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache}
# one evaluation seed for the whole round: the development scripts that compare variants in separate
# evaluations (gpu_pfw.sh, gpu_knobs.sh) pass it as `eval --seed`, so ragged workloads (their batch
# composition is drawn from the seed) are the same in every lane; the tables (gpu_memtable.sh) do not
export ROUND_SEED=${ROUND_SEED:-$((RANDOM * 32768 + RANDOM + 1))}
echo "round seed $ROUND_SEED (ROUND_SEED)" >"$work/seed.txt"
t0=$(date +%s)
make -j"$(nproc)" >"$work/build.log" 2>&1 || { tail -30 "$work/build.log"; echo "gpu_round: build failed"; }
{
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,persistence_mode,compute_mode --format=csv
	nvcc --version | tail -2
	python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)' 2>&1
	uname -r
} >"$work/env.txt" 2>&1
: >"$final/summary.txt"
echo "build: $(($(date +%s) - t0)) s; $lanes GPU lane(s); round seed $ROUND_SEED" >>"$final/summary.txt"
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
		# kept at once, so that a round cut by an outer limit still brings back every finished script
		# (session 6 call 3 lost a finished lane because only the end of the round packed anything)
		tar czf "$final/$name.tgz" -C "$work" "$name" "$name.summary" 2>/dev/null
		cat "$work/$name.summary" >>"$final/done.txt"
	done
}
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
: >"$final/done.txt"
for ((g = 0; g < lanes; g++)); do
	mine=()
	for ((i = g; i < ${#specs[@]}; i += lanes)); do mine+=("$i#${specs[i]}"); done
	[ ${#mine[@]} -gt 0 ] && lane "$g" "${mine[@]}" &
done
wait
for ((i = 0; i < ${#specs[@]}; i++)); do
	cat "$work/$(spec_name "$i").summary" >>"$final/summary.txt" 2>/dev/null
done
tar czf "$final/round.tgz" -C "$work" build.log env.txt seed.txt 2>/dev/null
rm -f "$final/done.txt"
cat "$final/summary.txt"
