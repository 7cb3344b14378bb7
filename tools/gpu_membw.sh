#!/usr/bin/env bash
# gpu_membw.sh - issue 7 (memory-bound ops at >= 90% of HBM, faster than torch.compile): the dev bench
# tools/membench/ on an H200 in one call (~1.5-2.5 min).
#   1. builds tools/membench/{silu_mul,copy}.cu as .so (nvcc -shared, sm_90a) and as stand-alone
#      programs, and solforge (make) for step 4, side by side
#   2. tools/membench/membench.py: silu_and_mul (I 14336; 31 variants, torch eager, torch.compile) and
#      a copy of the same bytes (18 variants, torch copy_, torch.compile clone) at T = SIZES (default
#      1,16,256,1024,16384); validation against the CPU reference (3 seeds) first, then event timing
#      (L2 flush between calls, median of ITERS=30) and a CUDA graph of 10 calls per implementation
#   3. the stand-alone silu_mul program (its own C harness: events, cudaMemset flush) on variants 0 and
#      14 at T 1024, a cross-check of the python timing
#   4. solforge eval of silu_and_mul and geglu fast.cu at t1, t256 and the largest T (one eval per
#      knob set on a problem copy holding those three) with --copy-ceiling --no-torch: today's default
#      (Triton's structure since session 7) and version 1's (SM_GRID=0 THREADS=256 UNROLL=2 SM_HINT=1;
#      GG_ for geglu); a set not
#      started before BUDGET_S (default 150) seconds is reported as not run
# The inductor cache (TORCHINDUCTOR_CACHE_DIR) is kept, so the Triton kernels' .ptx / launch metadata
# (num_warps, XBLOCK, cache qualifiers) come back in the logs. Logs: $OUT/membw_logs.tgz and
# $OUT/summary.txt (default OUT build/gpu-membw); the short table (variant, T, us, TB/s, ratio to
# torch.compile) is printed last. Env: SIZES, ITERS, STEPS (default "bench standalone eval"),
# BUDGET_S. Exit 0 when every implementation passed validation and every eval passed.
set -u
cd "$(dirname "$0")/.." || exit 2
out=${OUT:-build/gpu-membw}
logs=$out/membw_logs
mkdir -p "$logs" build/membench
sizes=${SIZES:-1,16,256,1024,16384}
iters=${ITERS:-30}
steps=${STEPS:-bench standalone eval}
budget=${BUDGET_S:-150}
t0=$(date +%s)
status=0
elapsed() { echo $(($(date +%s) - t0)); }
has() { case " $steps " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
note() { echo "$*" >>"$logs/times.txt"; }
: >"$logs/times.txt"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
# shellcheck disable=SC2054 # the -gencode value holds a comma
NV=("$NVCC" -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Itools/membench)
{
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
	"$NVCC" --version | tail -1
} >"$logs/env.txt" 2>&1

# 1. builds, side by side
pids=()
mains=()
for op in silu_mul copy; do
	"${NV[@]}" -shared -Xcompiler -fPIC -Xptxas -v "tools/membench/$op.cu" -o "build/membench/$op.so" \
		>"$logs/build_$op.log" 2>&1 &
	pids+=($!)
	"${NV[@]}" -DMB_MAIN "tools/membench/$op.cu" -o "build/membench/$op" >"$logs/build_${op}_main.log" 2>&1 &
	mains+=($!)
done
if has eval; then
	make -j"$(nproc)" >"$logs/make.log" 2>&1 &
	make_pid=$!
fi
for p in "${pids[@]}"; do
	if ! wait "$p"; then
		echo "gpu_membw: a bench build failed"
		tail -20 "$logs"/build_*.log
		exit 1
	fi
done
wait "${mains[@]}" # the stand-alone builds (make runs on: waited for in step 4)
note "bench build: $(elapsed) s"

# 2. the bench
if has bench; then
	export TORCHINDUCTOR_CACHE_DIR=$PWD/build/membench/inductor TRITON_CACHE_DIR=$PWD/build/membench/inductor/triton
	rm -rf "$TORCHINDUCTOR_CACHE_DIR"
	timeout 170 python3 tools/membench/membench.py --lib-dir build/membench --sizes "$sizes" --iters "$iters" \
		--out "$logs" >"$logs/membench.txt" 2>"$logs/membench.err"
	rc=$?
	[ $rc = 0 ] || status=1
	note "membench: rc=$rc ($(elapsed) s)"
	# the Triton kernels inductor built: PTX and launch metadata (small files only)
	find "$TORCHINDUCTOR_CACHE_DIR" -type f \( -name '*.ptx' -o -name '*.json' -o -name '*.py' \) -size -400k \
		2>/dev/null | tar -cf "$logs/inductor_cache.tar" -T - 2>/dev/null
	# the cache qualifiers of the Triton loads / stores, counted per kernel
	find "$TORCHINDUCTOR_CACHE_DIR" -name '*.ptx' -print0 2>/dev/null | while IFS= read -r -d '' f; do
		echo "== $f: $(grep -o '\.maxntid [0-9, ]*' "$f" | head -1)"
		grep -oE '(ld|st)\.global[a-zA-Z0-9_:.]*' "$f" | sort | uniq -c
	done >"$logs/triton_ptx_memops.txt" 2>&1
fi

# 3. the stand-alone C harness on two variants
if has standalone && [ -x build/membench/silu_mul ]; then
	{ timeout 30 build/membench/silu_mul 0 1024; timeout 30 build/membench/silu_mul 14 1024; } \
		>"$logs/standalone.txt" 2>&1
	note "standalone: rc=$? ($(elapsed) s)"
fi

# 4. fast.cu knob sets in the real evaluator
if has eval; then
	if ! wait "$make_pid"; then
		note "eval: make failed (see make.log)"
		status=1
	else
		export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache} SOLFORGE_HOME=$PWD
		tmp=$(mktemp -d /tmp/membw.XXXXXX)
		# problem copies holding only t1, t256 and the largest workload (paths in the definition point
		# back at the originals)
		for p in problems/llama/silu_and_mul_i14336 problems/gemma/geglu_tanh_h5376_i21504; do
			python3 tools/problem_subset.py "$tmp" "$p" >/dev/null || status=1
		done
		for spec in "llama/silu_and_mul_i14336 SM" "gemma/geglu_tanh_h5376_i21504 GG"; do
			read -r prob P <<<"$spec"
			name=$(basename "$prob")
			for ks in "default:" "v1_2d_t256_v2_cs:-D ${P}_GRID=0 -D THREADS=256 -D UNROLL=2 -D ${P}_HINT=1"; do
				tag=${ks%%:*}
				knobs=${ks#*:}
				if [ "$(elapsed)" -ge "$budget" ]; then
					note "eval $name $tag: not run (elapsed $(elapsed) s >= BUDGET_S $budget)"
					continue
				fi
				# shellcheck disable=SC2086 # knobs: a list of -D flags
				timeout 60 build/solforge eval "$tmp/$name" "problems/$prob/solutions/fast.cu" --backend cuda \
					--copy-ceiling --no-torch --rounds 1 --budget-ms 200 $knobs \
					-o "$logs/eval_${name}_$tag.jsonl" >"$logs/eval_${name}_$tag.txt" 2>&1
				rc=$?
				[ $rc = 0 ] || status=1
				note "eval $name $tag: rc=$rc ($(elapsed) s)"
			done
		done
		rm -rf "$tmp"
	fi
fi
wait

python3 - "$logs" >"$out/evals.txt" 2>&1 <<'PY'
import glob, json, os, sys
rows = []
for f in sorted(glob.glob(os.path.join(sys.argv[1], "eval_*.jsonl"))):
    for l in open(f):
        try:
            t = json.loads(l)
        except ValueError:
            continue
        e = t["evaluation"]; s = e.get("solforge", {}); tk = e.get("performance", {}).get("latency_ms")
        rows.append("%-58s %-8s %9s %9s %6s" % (os.path.basename(f)[5:-6] + " " + t["workload"]["uuid"].split("-")[-1], e["status"],
                    "-" if not tk else "%.2f" % (tk * 1e3), "-" if not s.get("copy_ms") else "%.2f" % (s["copy_ms"] * 1e3),
                    "-" if s.get("bw_fraction_of_copy") is None else "%.3f" % s["bw_fraction_of_copy"]))
if rows:
    print("%-58s %-8s %9s %9s %6s" % ("eval (problem, knobs, workload)", "status", "T_k us", "copy us", "frac"))
    print("\n".join(rows))
PY
{
	echo "gpu_membw ($(elapsed) s):"
	cat "$logs/times.txt"
	grep -h '^FAIL' "$logs/membench.log" 2>/dev/null
	echo
	cat "$out/evals.txt"
	echo
	[ -s "$logs/standalone.txt" ] && { echo "== stand-alone harness"; cat "$logs/standalone.txt"; echo; }
	tail -3 "$logs/membench.err" 2>/dev/null
	grep -h '^membench:' "$logs/membench.txt" 2>/dev/null
	echo "== short table (device time; ratio = torch.compile / variant, > 1 is faster; full rows in membench.tsv)"
	cat "$logs/membench_short.txt" 2>/dev/null
} >"$out/summary.txt"
tar -C "$out" -czf "$out/membw_logs.tgz" membw_logs && rm -rf "$logs"
cat "$out/summary.txt"
exit $status
