#!/usr/bin/env bash
# gpu_dec.sh - one H200 run for the GQA paged decode kernel, version 2 against version 1 (issue 9,
# problems/common/kernels/gqa_paged_decode_sm90.cu; notes: problems/llama/DECODE_NOTES.md "Decode
# version 2"). Builds solforge, reports ptxas registers/spills of each variant, then evaluates
# solutions/fast.cu of gqa_paged_decode_h32_kv8_d128_ps{1,16} as
#   v2     the default build (one launch, cp.async ring),
#   v1     -D DECODE_V1=1 (plan + attend + merge, three launches),
# and, named in VARIANTS, v2reg (-D DEC_STAGES=0: one launch, K/V straight to registers), v2s2
# (-D DEC_STAGES=2), v2i33 / v2i132 (-D DEC_ITEMS=33 / 132: about 1 or 4 waves of chunks),
#   v3     -D DECODE_MMA=1 (version 2 with the attend math on tensor cores, mma.sync + ldmatrix),
#   v3i33 / v3i132   version 3 with -D DEC_ITEMS=33 / 132 (about 1 or 4 waves of chunks), v3c64 version 3
#          with -D DEC_ITEMS=132 -D DEC_MIN_CHUNK=64 (b1-kv4096: 64 chunks of one step instead of 32 of two),
#          v3m2 version 3 with version 2's merge (-D DEC_MERGE_UNROLL=2: 2 chunks' loads per warp at once),
#   v4p    version 4 candidate, -D DEC_PERSIST=1: one wave of CTAs (SMs x resident CTAs / 8 ranges per kv
#          head), each streaming a contiguous item range through one cp.async ring across sequence ends,
#   v4p2   v4p with a 2-step ring (-D DEC_STAGES=2: 64 KiB, room to spare for 2 CTAs/SM),
#   v4ps4  v4p with coarse balance (-D DEC_PERSIST_SPLIT=4: ~4 items per range instead of 16),
# (v3 against v2 on every workload: VARIANTS="v3 v2" DEADLINE_S=210 on 2 GPUs, one variant per GPU),
# with --no-torch, in phases of priority: the 8 smaller bundled workloads, the held-out compositions
# of tools/attn_heldout.py, the 5 largest bundled workloads. The jobs (variant, problem), variant-major,
# are dealt round-robin to the GPUs (lanes in parallel, one evaluation per GPU at a time): with 2 GPUs
# and 2 variants each GPU runs both variants on one problem, with 4 GPUs each job has its own GPU; on
# one GPU everything alternates. Evaluations stop at DEADLINE_S seconds after the start (default 170, builds
# included): what was not reached is listed as such. Prints a table last: problem, workload, variant, status, T_k, TB/s of the K/V bytes the page table references
# (4096 B per kv position), T_sol / T_k, the trace's SOL score when a baseline ran ("-" with
# --no-torch), and the reference variant's T_k / this one's (REF: v1 when v1 ran, else v2).
#
# env: DEADLINE_S (170), ROUNDS (1), BUDGET_MS (150), VARIANTS ("v2 v1"), REF, PHASES
# ("small heldout big"). Logs: $OUT (device tool) or build/gpu-dec; with $OUT set they are packed
# into $OUT/gpu_dec_logs.tgz beside $OUT/summary.txt.
set -u
cd "$(dirname "$0")/.." || exit 2
out=${OUT:-build/gpu-dec}
mkdir -p "$out/traces"
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache}
S=build/solforge
NAMES="gqa_paged_decode_h32_kv8_d128_ps1 gqa_paged_decode_h32_kv8_d128_ps16"
BIG="b4-kv32768 b64-kv4096 b256-kv4096 b32-kv32768 b64-kv12288-ragged"
variants=${VARIANTS:-v2 v1}
t0=$(date +%s)

defs() { # variant -> solforge eval -D flags
	case $1 in
	v1) echo "-D DECODE_V1=1" ;;
	v2) echo "-D DECODE_MMA=0" ;;
	v2reg) echo "-D DEC_STAGES=0" ;;
	v2s2) echo "-D DECODE_MMA=0 -D DEC_STAGES=2" ;;
	v2i33) echo "-D DECODE_MMA=0 -D DEC_ITEMS=33" ;;
	v2i132) echo "-D DECODE_MMA=0 -D DEC_ITEMS=132" ;;
	v3) echo "-D DECODE_MMA=1" ;;
	v3i33) echo "-D DECODE_MMA=1 -D DEC_ITEMS=33" ;;
	v3i132) echo "-D DECODE_MMA=1 -D DEC_ITEMS=132" ;;
	v3c64) echo "-D DECODE_MMA=1 -D DEC_ITEMS=132 -D DEC_MIN_CHUNK=64" ;;
	v3m2) echo "-D DECODE_MMA=1 -D DEC_MERGE_UNROLL=2" ;;
	v4p) echo "-D DECODE_MMA=1 -D DEC_PERSIST=1" ;;
	v4p2) echo "-D DECODE_MMA=1 -D DEC_PERSIST=1 -D DEC_STAGES=2" ;;
	v4ps4) echo "-D DECODE_MMA=1 -D DEC_PERSIST=1 -D DEC_PERSIST_SPLIT=4" ;;
	*) echo "" ;;
	esac
}

if ! make -j"$(nproc)" >"$out/build.log" 2>&1; then
	tail -30 "$out/build.log"
	echo "gpu_dec: build failed"
	exit 1
fi
{
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv
	nvcc --version | tail -2
} >"$out/env.txt" 2>&1
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$ngpu" -ge 1 ] || ngpu=1
# the GPUs this script may use: those in CUDA_VISIBLE_DEVICES when it is set (tools/gpu_round.sh gives
# each lane one), else every GPU of the machine
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then IFS=, read -r -a devs <<<"$CUDA_VISIBLE_DEVICES"; else
	devs=($(seq 0 $((ngpu - 1))))
fi
ngpu=${#devs[@]}

# problem folders: the bundled workloads split into small / big, and the held-out compositions
sets=build/gpu-dec-sets
rm -rf "$sets"
python3 tools/attn_heldout.py "$sets/heldout" >"$out/heldout.txt" 2>&1 || echo "gpu_dec: attn_heldout.py failed" >&2
# shellcheck disable=SC2086 # NAMES: a list
python3 - "$sets" "$BIG" $NAMES <<'PY'
import json, os, shutil, sys
sets, big, names = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
for name in names:
    src = os.path.join("problems", "llama", name)
    rows = [l for l in open(os.path.join(src, "workload.jsonl")) if l.strip()]
    for part in ("small", "big"):
        dst = os.path.join(sets, part, name)
        os.makedirs(dst, exist_ok=True)
        shutil.copy(os.path.join(src, "oracle.c"), dst)
        defn = json.load(open(os.path.join(src, "definition.json")))
        for b in defn.get("solforge", {}).get("baselines", []):  # relative to the problem folder
            b["source"] = os.path.abspath(os.path.join(src, b["source"]))
        json.dump(defn, open(os.path.join(dst, "definition.json"), "w"), indent=2)
        with open(os.path.join(dst, "workload.jsonl"), "w") as f:
            for l in rows:
                tag = json.loads(l)["uuid"][len(name) + 1:]
                if (tag in big) == (part == "big"):
                    f.write(l)
PY

# build every variant and the oracle modules at once (the compile cache renames finished builds into
# place, so parallel builds of one entry are safe) and record each variant's registers / spills
for v in $variants; do
	for n in $NAMES; do
		# shellcheck disable=SC2046 # defs: a list of flags
		$S eval "$sets/small/$n" "problems/llama/$n/solutions/fast.cu" --backend cuda $(defs "$v") \
			--prepare-only >"$out/prepare_${v}_$n.log" 2>&1 &
	done
	# shellcheck disable=SC2046
	nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinclude -Xptxas -v $(defs "$v" | sed 's/-D /-D/g') \
		-c "problems/llama/gqa_paged_decode_h32_kv8_d128_ps1/solutions/fast.cu" -o "$out/ptxas_$v.o" \
		>"$out/ptxas_$v.txt" 2>&1 &
done
for ph in heldout big; do # (the oracle modules are keyed by folder: one per set folder)
	for n in $NAMES; do
		$S eval "$sets/$ph/$n" "problems/llama/$n/solutions/fast.cu" --backend cuda --prepare-only \
			>"$out/prepare_${ph}_$n.log" 2>&1 &
	done
done
wait
rm -f "$out"/ptxas_*.o
tb=$(date +%s)
echo "gpu_dec: built in $((tb - t0)) s, $ngpu GPU(s)" >&2
deadline=$((t0 + ${DEADLINE_S:-170}))

# one lane: the evaluations of the given jobs (variant:problem) in phase order, each cut at the deadline
lane() { # gpu jobs...
	local gpu=$1 ph n v job left
	shift
	for ph in ${PHASES:-small heldout big}; do
		for job in "$@"; do
			v=${job%%:*} n=${job#*:}
			left=$((deadline - $(date +%s)))
			if [ "$left" -lt 5 ]; then
				echo "$ph $n $v" >>"$out/not_reached.txt"
				continue
			fi
			# shellcheck disable=SC2046
			# line-buffered: the traces of the workloads done survive a cut at the deadline
			CUDA_VISIBLE_DEVICES=$gpu timeout "$left" stdbuf -oL $S eval "$sets/$ph/$n" \
				"problems/llama/$n/solutions/fast.cu" --backend cuda $(defs "$v") --no-torch \
				--rounds "${ROUNDS:-1}" --budget-ms "${BUDGET_MS:-150}" --json \
				>"$out/traces/${ph}_${v}_$n.jsonl" 2>"$out/traces/${ph}_${v}_$n.err"
			echo "gpu_dec: $ph $n $v rc $? at $(($(date +%s) - t0)) s" >&2
		done
	done
}
rm -f "$out/not_reached.txt"
# jobs (variant:problem) in variant-major order, dealt round-robin to the GPUs: with 2 GPUs and 2
# variants each GPU runs both variants on one problem (side by side on the same GPU), with 4 each GPU one job
jobs=$(for v in $variants; do for n in $NAMES; do echo "$v:$n"; done; done)
if [ "$ngpu" -ge 2 ]; then
	for ((g = 0; g < ngpu; g++)); do
		mine=$(echo "$jobs" | awk -v g="$g" -v n="$ngpu" '(NR - 1) % n == g')
		# shellcheck disable=SC2086 # mine: a list
		[ -n "$mine" ] && lane "${devs[$g]}" $mine 2>>"$out/lanes.log" &
	done
	wait
else
	# shellcheck disable=SC2086 # jobs: a list
	lane "${devs[0]}" $jobs 2>>"$out/lanes.log"
fi
cat "$out/lanes.log" >&2

(
	echo "gpu_dec ($(($(date +%s) - t0)) s, $ngpu GPU(s); $(sed -n 2p "$out/env.txt"))"
	echo "registers / spill stores per kernel (ptxas, sm_90a):"
	for v in $variants; do
		awk -v v="$v" '/Function properties for/ {k = $NF} /spill stores/ {sp = $5}
			/Used [0-9]+ registers/ {sm = match($0, /[0-9]+ bytes smem/) ? substr($0, RSTART, RLENGTH) : "";
				print "  " v " " substr(k, 1, 40) ": " $5 " registers, " sp " bytes spilled, " sm " static"}' \
			"$out/ptxas_$v.txt"
	done
	[ -s "$out/not_reached.txt" ] && echo "not reached before the deadline (phase problem variant):" &&
		sed 's/^/  /' "$out/not_reached.txt"
	python3 - "$out/traces" <<'PY'
import glob, json, os, sys
rows, n, ok = {}, 0, 0
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.jsonl"))):
    ph, v = os.path.basename(path).split("_")[:2]
    for i, line in enumerate(open(path)):
        if not line.startswith("{"):
            continue
        tr = json.loads(line)
        ev = tr["evaluation"]
        sf = ev.get("solforge", {})
        ax = tr["workload"]["axes"]
        lat = (ev.get("performance") or {}).get("latency_ms")
        kv = ax.get("total_kv", ax.get("num_kv_indices", 0))
        prob = tr["definition"].replace("gqa_paged_decode_h32_kv8_d128_", "decode_")
        wl = tr["workload"]["uuid"][len(tr["definition"]) + 1:]
        rows[(prob, wl, v)] = (ev["status"], lat, kv, sf.get("sol_ms"), sf.get("sol_score"),
                               ("small", "heldout", "big").index(ph) if ph in ("small", "heldout", "big") else 9, i)
        n += 1
        ok += ev["status"] == "PASSED"
    err = path[:-6] + ".err"
    if not any(l.startswith("{") for l in open(path)) and os.path.exists(err):
        tail = [l for l in open(err).read().splitlines() if l.strip()]
        print(f"{os.path.basename(path)}: no traces ({tail[-1] if tail else 'empty log'})")
order = {"v4p": -3, "v4p2": -2, "v4ps4": -1, "v3": 0, "v3i33": 1, "v3i132": 2, "v3c64": 3, "v3m2": 3.5, "v2": 4, "v2reg": 5, "v2s2": 6, "v2i33": 7, "v2i132": 8,
         "v1": 9}
ref = os.environ.get("REF") or ("v1" if any(k[2] == "v1" for k in rows) else "v2")
print(f"{'problem':14s} {'workload':28s} {'variant':7s} {'status':20s} {'T_k us':>9s} {'TB/s KV':>8s} "
      f"{'Tsol/Tk':>8s} {'SOL':>6s} {ref + '/this':>8s}")
for key in sorted(rows, key=lambda k: (k[0], rows[k][5], rows[k][6], k[1], order.get(k[2], 9))):
    st, lat, kv, sol, score = rows[key][:5]
    t = f"{lat * 1e3:.1f}" if lat else "-"
    bw = f"{kv * 4096 / (lat * 1e-3) / 1e12:.2f}" if lat else "-"
    fr = f"{sol / lat:.3f}" if lat and sol else "-"
    sc = f"{score:.3f}" if score is not None else "-"
    old = rows.get((key[0], key[1], ref))
    sp = f"{old[1] / lat:.2f}x" if lat and old and old[1] and key[2] != ref else ""
    print(f"{key[0]:14s} {key[1]:28.28s} {key[2]:7s} {st:20.20s} {t:>9s} {bw:>8s} {fr:>8s} {sc:>6s} {sp:>8s}")
print(f"{ok} of {n} evaluated workload runs PASSED")
sys.exit(0 if ok == n and n else 1)
PY
) >"$out/summary.txt"
status=$?
cat "$out/summary.txt"
# the device tool brings back at most 8 files: pack the logs into one archive beside the summary
if [ -n "${OUT:-}" ]; then
	tar czf "$out/../gpu_dec_logs.tgz" -C "$out" --exclude=summary.txt . 2>/dev/null &&
		find "$out" -mindepth 1 ! -name summary.txt -delete &&
		mv "$out/../gpu_dec_logs.tgz" "$out/"
fi
exit $status
