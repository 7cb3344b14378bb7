#!/usr/bin/env bash
# gpu_x86scan.sh - one run on the H200 machine for the raw-system-call check's decoder
# (src/core/x86len.c, docs/security.md "raw system calls"). It needs that machine's nvcc and g++
# (their host code is what the old byte scan misread), not the GPU: builds solforge, rebuilds
# problems/llama/fused_add_rmsnorm_h4096/solutions/fast.cu with -DRMS_SMALL_T=256 exactly as the
# evaluator does, lists where the bytes 0F 05 / 0F 34 / CD 80 occur in its .text and which
# instruction holds each (objdump), runs the import check on it (expected: clean), evaluates it
# (expected: PASSED on every workload, no REWARD_HACK), and runs tests/suites/x86len.sh (objdump
# comparison on that machine's binaries and CUDA builds). Prints a table last. Target: ~2 minutes.
#
# env: FA_FLAGS (default -DRMS_SMALL_T=256). Logs: $OUT (device tool) or build/gpu-x86scan; with
# $OUT set they are packed into $OUT/gpu_x86scan_logs.tgz beside $OUT/summary.txt.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu-x86scan}
mkdir -p "$out"
export SOLFORGE_CACHE=${SOLFORGE_CACHE:-$PWD/build/cache}
FA=problems/llama/fused_add_rmsnorm_h4096
FLAGS=${FA_FLAGS:--DRMS_SMALL_T=256}
if ! make -j"$(nproc)" >"$out/build.log" 2>&1; then
	tail -30 "$out/build.log"
	echo "gpu_x86scan: build failed"
	exit 1
fi
{ nvcc --version | tail -2; g++ --version | head -1; objdump --version | head -1; } >"$out/env.txt" 2>&1

# 1. the build the old scan rejected, with the evaluator's flags (src/core/backend_cuda.c)
so=$out/fa.so
nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Xcompiler -fPIC -shared -Iinclude -cudart shared \
	$FLAGS "$FA/solutions/fast.cu" -o "$so" >"$out/nvcc.log" 2>&1
cc -std=c11 -D_GNU_SOURCE -O2 -Iinclude -Isrc tests/x86/imports_check.c build/libsolforge.a -lm -ldl -lpthread \
	-o "$out/imports_check" >>"$out/build.log" 2>&1
python3 - "$so" >"$out/patterns.txt" 2>&1 <<'EOF'
import re, subprocess, sys
so = sys.argv[1]
sh = subprocess.run(["readelf", "-SW", so], stdout=subprocess.PIPE, text=True).stdout
data = open(so, "rb").read()
for line in sh.splitlines():
    m = re.search(r"\]\s+(\S+)\s+PROGBITS\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+\S+\s+\S*X", line)
    if not m:
        continue
    name, addr, off, size = m.group(1), int(m.group(2), 16), int(m.group(3), 16), int(m.group(4), 16)
    for p in re.finditer(rb"\x0f\x05|\x0f\x34|\xcd\x80", data[off:off + size]):
        a = addr + p.start()
        dis = subprocess.run(["objdump", "-d", "-j", name, "--start-address=0x%x" % (a - 24),
                              "--stop-address=0x%x" % (a + 8), so], stdout=subprocess.PIPE, text=True).stdout
        print("pattern %s at file offset 0x%x (%s):" % (data[off + p.start():off + p.start() + 2].hex(),
                                                        off + p.start(), name))
        print("\n".join(l for l in dis.splitlines() if re.match(r"^\s*[0-9a-f]+:\t", l)))
EOF
npat=$(grep -c '^pattern' "$out/patterns.txt")
check=$("$out/imports_check" "$so" "$FA/solutions/fast.cu")
echo "$check" >"$out/imports_check.txt"

# 2. the evaluation of that build (the same define through -D), a few workloads, lightly timed
ev=$(timeout 150 build/solforge eval "$FA" "$FA/solutions/fast.cu" --backend cuda $(sed 's/-D/-D /' <<<"$FLAGS") \
	--rounds 1 --budget-ms 100 --sample 4 --no-baseline --no-torch >"$out/eval.log" 2>&1; echo $?)
passed=$(grep -c ' PASSED' "$out/eval.log")
hacks=$(grep -c 'REWARD_HACK' "$out/eval.log")

# 3. the decoder against objdump on this machine's binaries and CUDA builds
tests/suites/x86len.sh >"$out/x86len_suite.txt" 2>&1
suite=$(tail -1 "$out/x86len_suite.txt")

{
	echo "gpu_x86scan: fast.cu $FLAGS"
	printf '%-44s %s\n' "byte patterns in executable sections" "$npat (the old scan rejected any)"
	printf '%-44s %s\n' "import check (new decoder)" "rc ${check%% *} (expected 0) ${check#* }"
	printf '%-44s %s\n' "eval: exit, PASSED lines, REWARD_HACK lines" "$ev, $passed, $hacks (expected 0, 4, 0)"
	printf '%-44s %s\n' "tests/suites/x86len.sh" "$suite"
	echo
	head -30 "$out/patterns.txt"
} >"$out/summary.txt"
if [ -n "${OUT:-}" ]; then
	tar -C "$out" -czf "$OUT/gpu_x86scan_logs.tgz" build.log env.txt nvcc.log patterns.txt imports_check.txt \
		eval.log x86len_suite.txt 2>/dev/null
	rm -f "$out/fa.so" "$out/imports_check" "$out"/build.log "$out"/env.txt "$out"/nvcc.log "$out"/patterns.txt \
		"$out"/imports_check.txt "$out"/eval.log "$out"/x86len_suite.txt
fi
cat "$out/summary.txt"
