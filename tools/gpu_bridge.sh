#!/usr/bin/env bash
# gpu_bridge.sh - the PyTorch bridge on a GPU machine with torch (docs/bridge.md), in one go under a
# wall-time budget (BUDGET seconds, default 230; what does not fit is reported as skipped).
# A first run (default) does public + native; the budget rarely leaves room for more, so a second
# run PHASES="compile xval" adds the torch.compile subset and the every-workload cross-validation.
# PHASES selects phases (default "public native compile xval"); ONLY_PROBLEMS (an extended regex) keeps
# the native problems whose path matches; PHASES=xval XVAL_SKIP=N is a further
# run that goes on with the every-workload cross-validation after its first N workloads.
#
#   build    make; every problem module / solution / baseline built in parallel (--prepare-only)
#   public   `solforge import` of tests/fixtures/public (SOL-ExecBench and FlashInfer-Bench layouts),
#            then each imported problem evaluated end to end against its PyTorch reference
#   native   (NATIVE_JOBS at a time, default 3) every problem's solutions/naive.cu on one workload (the one whose T_sol is nearest
#            PICK_US, default 10 us) with every baseline: the library one (cuBLASLt) and PyTorch eager;
#            --xval where the definition has a reference (the C oracle vs the PyTorch reference)
#   compile  the same with torch.compile for the problems in COMPILE_SET (compile time reported)
#   xval     C oracle vs PyTorch reference on EVERY workload of every problem with a reference
#            (--no-baseline, 1 round), as far as the budget allows (coverage reported)
# Full logs and traces go to $OUT (or build/gpu-bridge), packed into gpu_bridge_logs.tgz beside
# summary.txt; a short table is printed last.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu-bridge}
mkdir -p "$out/traces" "$out/logs"
# a compile cache carried from the development machine (tools/prebuild_cache.sh), as gpu_round.sh
# (unpacked once: tools/gpu_round.sh may already have done it while another lane reads it)
[ -f .devcache.tgz ] && [ ! -d .devcache ] && tar xzf .devcache.tgz
[ -d .devcache ] && export SOLFORGE_CACHE=$PWD/.devcache
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache}
BUDGET=${BUDGET:-230}
PHASES=${PHASES:-"public native compile xval"}
has() { case " $PHASES " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
PICK_US=${PICK_US:-10}
COMPILE_SET=${COMPILE_SET:-"gemm_bf16_n4096_k4096 rmsnorm_h4096 silu_and_mul_i14336 flux_adaln_layernorm_modulate_h3072 rope_llama31_h32_kv8_d128 gqa_paged_decode_h32_kv8_d128_ps16"}
S=build/solforge
T0=$(date +%s)
left() { echo $((BUDGET - ($(date +%s) - T0))); }
summary=()
note() { summary+=("$1"); echo "== $1"; }

if ! make -j"$(nproc)" >"$out/logs/build.log" 2>&1; then
	tail -30 "$out/logs/build.log"
	echo "gpu_bridge: build failed"
	exit 1
fi
{
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv
	nvcc --version | tail -1
	python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))' 2>&1
} >"$out/env.txt" 2>&1
note "env: $(sed -n 2p "$out/env.txt" | cut -c1-60); $(grep '^torch' "$out/env.txt")"
echo "command: OUT=$out BUDGET=$BUDGET PICK_US=$PICK_US tools/gpu_bridge.sh ($(git rev-parse --short HEAD 2>/dev/null))" >>"$out/env.txt"

# imported public-format problems (their solutions are our-ABI .cu files)
$S import tests/fixtures/public/fib -o "$out/imported" >"$out/logs/import_fib.txt" 2>&1
$S import tests/fixtures/public/sol >"$out/logs/import_sol.txt" 2>&1
public="tests/fixtures/public/sol/pub_rmsnorm_h512 tests/fixtures/public/sol/pub_softmax_scaled_v1000 $out/imported/fib_gemm_n256_k512 $out/imported/fib_gelu_tanh_and_mul_i384"

# one workload per native problem: T_sol nearest PICK_US
problems=$(ls -d problems/*/*/ | sed 's:/$::' | while read -r p; do [ -f "$p/solutions/naive.cu" ] && echo "$p"; done |
	grep -E "${ONLY_PROBLEMS:-.}")
: >"$out/picks.txt"
for p in $problems; do
	u=$($S sol "$p" --hw H200_SXM --json 2>/dev/null | python3 -c "
import json, math, sys
ws = [json.loads(l) for l in sys.stdin if l.strip()]
w = min(ws, key=lambda w: abs(math.log(max(w['sol_ms'] * 1e3, 1e-6) / $PICK_US)))
print(w['workload'])")
	echo "$p $u" >>"$out/picks.txt"
done

# build everything in parallel first (nvcc is slow; the GPU is not needed for it)
{
	for p in $problems; do echo "$p $p/solutions/naive.cu"; done
	for p in $public; do echo "$p tests/fixtures/public/solutions/$(basename "$p").cu"; done
} | xargs -P "$(nproc)" -L 1 sh -c "$S eval \$0 \$1 --backend cuda --prepare-only >/dev/null 2>&1" || true
note "build: $(( $(date +%s) - T0 )) s"

EV=(--backend cuda --rounds 1 --budget-ms 150 --min-iters 10 --max-iters 300)

# 1. public
n_pub=0 n_pub_ok=0
for p in $public; do
	has public || continue
	[ "$(left)" -gt 20 ] || { note "public: $(basename "$p") skipped (budget)"; continue; }
	name=$(basename "$p")
	$S eval "$p" "tests/fixtures/public/solutions/$name.cu" "${EV[@]}" --json -o "$out/traces/public_$name.jsonl" \
		>"$out/logs/public_$name.log" 2>&1
	rc=$?
	n_pub=$((n_pub + 1))
	[ $rc -eq 0 ] && n_pub_ok=$((n_pub_ok + 1))
done
has public && note "public: $n_pub_ok of $n_pub imported problems PASSED on every workload against their PyTorch reference"

# 2. native, eager (and xval on the picked workload), NATIVE_JOBS at a time: every GPU timing (the
#    candidate's, cuBLASLt's, torch's) takes the device's slot in $out/locks (docs/campaign.md, gpulock),
#    so evaluations overlap only in their CPU parts (python + torch start, input generation)
export SOLFORGE_GPU_LOCKS=$out/locks
mkdir -p "$SOLFORGE_GPU_LOCKS"
native_deadline=$((T0 + BUDGET - 15))
for p in $problems; do
	has native || continue
	echo "$p $(awk -v p="$p" '$1 == p {print $2}' "$out/picks.txt")"
done | xargs -P "${NATIVE_JOBS:-3}" -L 1 sh -c '
	name=$(basename "$0")
	if [ "$(date +%s)" -ge '"$native_deadline"' ]; then echo "== native: $name skipped (budget)"; exit 0; fi
	SOLFORGE_BRIDGE_NO_COMPILE=1 '"$S"' eval "$0" "$0/solutions/naive.cu" '"${EV[*]}"' --only "=$1" --xval --json \
		-o "'"$out"'/traces/native_$name.jsonl" >"'"$out"'/logs/native_$name.log" 2>&1'
for p in $problems; do
	has native || break
	[ -s "$out/traces/native_$(basename "$p").jsonl" ] ||
		note "native: $(basename "$p") has no trace (budget, or see logs/native_$(basename "$p").log)"
done

# 3. torch.compile on a subset
for name in $COMPILE_SET; do
	has compile || continue
	p=$(ls -d problems/*/"$name" 2>/dev/null | head -1)
	[ -n "$p" ] || continue
	[ "$(left)" -gt 40 ] || { note "compile: $name skipped (budget)"; continue; }
	u=$(awk -v p="$p" '$1 == p {print $2}' "$out/picks.txt")
	$S eval "$p" "$p/solutions/naive.cu" "${EV[@]}" --only "=$u" --json -o "$out/traces/compile_$name.jsonl" \
		>"$out/logs/compile_$name.log" 2>&1
done

# 4. xval on every workload of problems with a reference: XVAL_JOBS (8) at a time (nothing is timed),
#    each started only while the budget lasts; the coverage file says what ran
deadline=$((T0 + BUDGET - 10))
# nothing in this phase is timed or compared by speed, so its evaluations do not queue for the GPU slot
# (the bridge holds the slot for the whole torch process, start-up included: ~6 s per workload, which
# would serialize the phase); do not run it beside timed work on the same GPU
unset SOLFORGE_GPU_LOCKS
for p in $problems; do
	python3 -c "import json,sys; sys.exit(0 if json.load(open('$p/definition.json')).get('reference') else 1)" || continue
	for u in $(python3 -c "import json; [print(json.loads(l)['uuid']) for l in open('$p/workload.jsonl') if l.strip()]"); do
		echo "$p $u"
	done
done | tail -n +$((${XVAL_SKIP:-0} + 1)) >"$out/xval_list.txt"
# XVAL_LIST: a file of "PROBLEM_DIR UUID" lines to run instead (e.g. what an earlier run left)
[ -n "${XVAL_LIST:-}" ] && cp "$XVAL_LIST" "$out/xval_list.txt"
has xval && xargs -P "${XVAL_JOBS:-8}" -L 1 sh -c '
	if [ "$(date +%s)" -ge '"$deadline"' ]; then echo "$(basename "$0") $1 skipped(budget)"; exit 0; fi
	'"$S"' eval "$0" "$0/solutions/naive.cu" --backend cuda --rounds 1 --budget-ms 1 --min-iters 1 --max-iters 3 \
		--no-baseline --xval --only "=$1" --json -o "'"$out"'/traces/xval_$(basename "$0")_$1.jsonl" \
		>>"'"$out"'/logs/xval_$(basename "$0")_$1.log" 2>&1
	echo "$(basename "$0") $1 run"' <"$out/xval_list.txt" >"$out/xval_coverage.txt"
has xval || sed 's/$/ skipped(phase)/' "$out/xval_list.txt" >"$out/xval_coverage.txt"

# summary table
python3 - "$out" <<'EOF' >"$out/table.txt"
import glob, json, os, sys
out = sys.argv[1]
def lines(pat):
    for f in sorted(glob.glob(os.path.join(out, "traces", pat))):
        for l in open(f):
            if l.strip():
                yield os.path.basename(f), json.loads(l)
def bl(x, name):
    for b in x["evaluation"].get("solforge", {}).get("baselines", []):
        if b["name"] == name:
            return b
    return None
def ms(b):
    if not b:
        return "-"
    if b.get("median_ms") is not None:
        s = "%.4f" % b["median_ms"]
        return s + (" (c %.0fs)" % b["compile_s"] if b.get("compile_s") is not None else "")
    return b["status"]
print("native problems, one workload each (ms; T_b = fastest correct baseline of the run)")
print("%-42s %-28s %-11s %-11s %-11s %-16s %-16s %s" % ("problem", "workload", "status", "naive", "cublasLt", "torch", "torch.compile", "T_b by / xval"))
comp = {x["definition"]: x for _, x in lines("compile_*.jsonl")}
for _, x in lines("native_*.jsonl"):
    e = x["evaluation"]; sf = e.get("solforge", {}); perf = e.get("performance", {})
    xv = bl(x, "pytorch-reference")
    c = comp.get(x["definition"])
    tc = bl(c, "torch.compile") if c else None
    print("%-42s %-28s %-11s %-11s %-11s %-16s %-16s %s" % (x["definition"][:42], x["workload"]["uuid"][:28], e["status"][:11],
          "%.4f" % perf["latency_ms"] if perf.get("latency_ms") else "-", ms(bl(x, "cublasLt")), ms(bl(x, "torch")), ms(tc),
          "%s / %s" % (sf.get("baseline", "-"), xv["status"] if xv else "no ref")))
print()
print("imported public-format problems (PyTorch reference as the oracle)")
for f, x in lines("public_*.jsonl"):
    e = x["evaluation"]
    print("%-42s %-28s %-20s %s" % (x["definition"][:42], x["workload"]["uuid"][:28], e["status"], e.get("performance", {}).get("latency_ms", "-")))
print()
agree = {}
for _, x in lines("xval_*.jsonl"):
    xv = bl(x, "pytorch-reference")
    k = x["definition"]
    agree.setdefault(k, []).append(xv["status"] if xv else "status " + x["evaluation"]["status"])
print("cross-validation, C oracle vs PyTorch reference, every workload run:")
for k, v in agree.items():
    print("  %-42s %d workloads: %s" % (k, len(v), ", ".join("%s x%d" % (s, v.count(s)) for s in sorted(set(v)))))
EOF
cp "$out/table.txt" "$out/summary.txt"
printf '%s\n' "${summary[@]}" >>"$out/summary.txt"
echo "xval coverage: $(grep -c ' run$' "$out/xval_coverage.txt") workloads run, $(grep -c skipped "$out/xval_coverage.txt") skipped (budget)" >>"$out/summary.txt"
echo "wall: $(( $(date +%s) - T0 )) s" >>"$out/summary.txt"
if [ -n "${OUT:-}" ]; then
	tar -czf "$OUT/gpu_bridge_logs.tgz" -C "$out" traces logs picks.txt xval_coverage.txt xval_list.txt env.txt table.txt imported 2>/dev/null
	rm -rf "$out/traces" "$out/logs" "$out/imported" "$out/picks.txt" "$out/xval_coverage.txt" "$out/xval_list.txt" "$out/table.txt"
fi
cat "$out/summary.txt"
