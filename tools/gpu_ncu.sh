#!/usr/bin/env bash
# gpu_ncu.sh - Nsight Compute profiles of chosen kernels as solforge eval runs them, on a GPU machine
# whose runtime lets ncu read the hardware counters (Firecracker; see the device library's KINDS.md).
# The clocks are left alone (--clock-control none). Each spec line is
#   NAME PROBLEM_DIR SOLUTION UUID KERNEL_REGEX COUNT [-D NAME=VALUE ...]
# and profiles COUNT launches of the kernels matching KERNEL_REGEX after skipping the first 4 (the
# correctness round and warm-up), with the sandbox, the defenses and CUPTI timing off (ncu owns the
# profiling interface; SOLFORGE_SANDBOX=0 SOLFORGE_DEFENSES=0 SF_RUNNER_NO_CUPTI=1: docs/runner.md).
# NCU_SPECS (spec lines separated by newlines or ';', so one gpu_round.sh spec can carry them) replaces the default set below; NCU_BUDGET (s, default 200)
# is the wall-time budget (specs that do not fit are reported as skipped); NCU_SECTIONS the sections;
# NCU_METRICS ('+'- or comma-separated raw metric names; '+' inside a gpu_round.sh spec, whose list is comma-separated, e.g. sm__cycles_active.min,sm__cycles_active.max) adds them to every
# profile and to the summary (one line per kernel); NCU_BASELINE=1 lets the evaluation run its baselines too (without it: --no-baseline), so a spec can
# profile the baseline's kernel (NCU_TORCH=1 with it: the PyTorch baselines too, whose kernels ncu then sees
# through the bridge's python process; without it --no-torch), e.g. cuBLASLt's GEMM (KERNEL_REGEX "sm90_xmma|cutlass|gemm" on a GEMM
# problem: match the baseline's kernel name, printed in the details page, and skip ours by count).
# Output: $OUT (or build/gpu-ncu): logs/NAME.txt (ncu's details page) per spec, packed into ncu_logs.tgz
# beside summary.txt (per spec: duration, DRAM throughput %, SM throughput %, achieved occupancy, top
# stall reasons), which is printed last.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu-ncu}
mkdir -p "$out/logs"
[ -f .devcache.tgz ] && [ ! -d .devcache ] && tar xzf .devcache.tgz
[ -d .devcache ] && export SOLFORGE_CACHE=$PWD/.devcache
BUDGET=${NCU_BUDGET:-200}
S=build/solforge
T0=$(date +%s)
left() { echo $((BUDGET - ($(date +%s) - T0))); }
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
[ -n "$NCU" ] || { echo "gpu_ncu: ncu not found"; exit 1; }
SECTIONS=${NCU_SECTIONS:-"SpeedOfLight LaunchStats Occupancy WarpStateStats SchedulerStats MemoryWorkloadAnalysis ComputeWorkloadAnalysis"}
sec=()
for s in $SECTIONS; do sec+=(--section "$s"); done
NCU_METRICS=${NCU_METRICS:-}
NCU_METRICS=${NCU_METRICS//+/,}
[ -n "$NCU_METRICS" ] && sec+=(--metrics "$NCU_METRICS")
L=problems/llama
DEFAULT_SPECS="gemm_m16 $L/gemm_bf16_n4096_k4096 fast.cu gemm_bf16_n4096_k4096-m16 gemm_ 1
gemm_m64 $L/gemm_bf16_n4096_k4096 fast.cu gemm_bf16_n4096_k4096-m64 gemm_ 2
gemm_m128 $L/gemm_bf16_n4096_k4096 fast.cu gemm_bf16_n4096_k4096-m128 gemm_ 2
dec_b1_kv4096 $L/gqa_paged_decode_h32_kv8_d128_ps1 fast.cu gqa_paged_decode_h32_kv8_d128_ps1-b1-kv4096 decode_ 1
dec_b1_kv32768 $L/gqa_paged_decode_h32_kv8_d128_ps1 fast.cu gqa_paged_decode_h32_kv8_d128_ps1-b1-kv32768 decode_ 1
dec_b16_kv4096 $L/gqa_paged_decode_h32_kv8_d128_ps1 fast.cu gqa_paged_decode_h32_kv8_d128_ps1-b16-kv4096 decode_ 1
gn_256 problems/stable-diffusion/groupnorm32_silu_sd_vae fast.cu groupnorm32_silu_sd_vae-n1-c512-256x256 gn_ 2
pf_q8192 $L/gqa_paged_prefill_causal_h32_kv8_d128_ps1 fast.cu gqa_paged_prefill_causal_h32_kv8_d128_ps1-q8192 prefill_attend 1
pfw2_q8192 $L/gqa_paged_prefill_causal_h32_kv8_d128_ps1 fast.cu gqa_paged_prefill_causal_h32_kv8_d128_ps1-q8192 prefill_attend 1 -D SF_PREFILL_WGMMA=2"
SPECS=${NCU_SPECS:-$DEFAULT_SPECS}
nobase=--no-baseline
[ "${NCU_BASELINE:-0}" = 1 ] && nobase=
notorch=--no-torch
if [ "${NCU_TORCH:-0}" = 1 ]; then
	[ "${NCU_BASELINE:-0}" = 1 ] || { echo "gpu_ncu: NCU_TORCH=1 needs NCU_BASELINE=1 (the torch baselines are baselines)"; exit 2; }
	notorch=
fi
SPECS=${SPECS//;/$'\n'}
if ! make -j"$(nproc)" >"$out/logs/build.log" 2>&1; then
	tail -30 "$out/logs/build.log"
	echo "gpu_ncu: build failed"
	exit 1
fi
{
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv
	nvcc --version | tail -1
	"$NCU" --version | tail -1
	echo "command: NCU_BUDGET=$BUDGET tools/gpu_ncu.sh ($(git rev-parse --short HEAD 2>/dev/null))"
} >"$out/env.txt" 2>&1
: >"$out/summary.txt"
while read -r name prob sol uuid regex count defs; do
	[ -n "$name" ] || continue
	if [ "$(left)" -lt 25 ]; then
		echo "$name skipped (budget)" >>"$out/summary.txt"
		continue
	fi
	# the builds first, outside ncu (--target-processes all would follow nvcc too: session 12's first GEMM spec, whose
	# build was not in the carried cache, spent its whole 100 s budget compiling under ncu and profiled nothing)
	# shellcheck disable=SC2086 # defs holds "-D NAME=VALUE" pairs
	timeout $(($(left) - 5)) $S eval "$prob" "$prob/solutions/$sol" --backend cuda --prepare-only $nobase $notorch $defs \
		>"$out/logs/$name.build" 2>&1
	# shellcheck disable=SC2086 # defs holds "-D NAME=VALUE" pairs
	SOLFORGE_SANDBOX=0 SOLFORGE_DEFENSES=0 SF_RUNNER_NO_CUPTI=1 timeout $(($(left) - 5)) \
		"$NCU" --target-processes all --clock-control none -k "regex:$regex" --launch-skip 4 \
		--launch-count "$count" "${sec[@]}" --page details --print-units base \
		$S eval "$prob" "$prob/solutions/$sol" --backend cuda --rounds 1 --budget-ms 30 --min-iters 3 \
		--max-iters 6 $nobase $notorch --timeout 170 --only "=$uuid" $defs \
		>"$out/logs/$name.txt" 2>"$out/logs/$name.err"
	rc=$?
	python3 - "$out/logs/$name.txt" "$name" "$rc" "$NCU_METRICS" >>"$out/summary.txt" <<'EOF'
import re, sys
path, name, rc, extra = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
text = open(path, errors="replace").read()
blocks = re.split(r"\n  (?=\S.*\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\))", text)
found = 0
for b in blocks[1:]:
    head = b.splitlines()[0].strip()
    def metric(label):
        m = re.search(r"^\s*" + re.escape(label) + r"\s+(?:(\S*[^\d\s,.]\S*)\s+)?([\d.,]+)\s*$", b, re.M)
        return (m.group(2) + " " + (m.group(1) or "")).strip() if m else "?"
    found += 1
    print(f"{name}: {head[:90]}")
    print(f"    duration {metric('Duration')}  dram {metric('DRAM Throughput')}  mem {metric('Memory Throughput')}"
          f"  sm {metric('Compute (SM) Throughput')}  occ {metric('Achieved Occupancy')}  regs {metric('Registers Per Thread')}"
          f"  grid {metric('Grid Size')}  block {metric('Block Size')}")
    if extra:
        print("    " + "  ".join(f"{m} {metric(m)}" for m in extra.split(",") if m))
if not found:
    print(f"{name}: no kernel profiled (rc {rc}); see logs/{name}.err")
EOF
done <<<"$SPECS"
if [ -n "${OUT:-}" ]; then
	tar -czf "$OUT/ncu_logs.tgz" -C "$out" logs env.txt 2>/dev/null
	rm -rf "$out/logs"
fi
cat "$out/env.txt"
cat "$out/summary.txt"
