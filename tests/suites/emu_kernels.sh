#!/usr/bin/env bash
# emu_kernels.sh - the memory-bound fast.cu kernels (and the calibration copy) run on a CPU emulation
# of CUDA (tests/emu/emu.h) and checked element by element against double-precision references of
# their oracles, over workload, held-out and fallback shapes (tests/emu/emu_test.cpp). No GPU needed:
# each .cu is rewritten (its CUDA includes dropped, `k<<<g, b, smem, s>>>(...)` turned into
# `emu_launch(g, b, k, ...)`) and built with g++. Prints each binary's ok/FAIL lines and ends with the
# summed "N passed, M failed".
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
TMP=$(mktemp -d /tmp/solforge-emu.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
CXX=${CXX:-g++}
P=0
F=0
while read -r macro src; do
	name=$(echo "$src" | tr '/' '_')
	python3 - "$src" "$TMP/$name.cpp" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
src = re.sub(r'#include <cuda_(runtime|bf16|fp16)\.h>\n', '', src)
def split_top(s):
    out, depth, cur = [], 0, ''
    for ch in s:
        if ch in '([{': depth += 1
        if ch in ')]}': depth -= 1
        if ch == ',' and depth == 0:
            out.append(cur); cur = ''
        else:
            cur += ch
    out.append(cur)
    return [x.strip() for x in out]
def launch(m):
    cfg = split_top(m.group(2))
    return 'emu_launch(%s, %s, %s, ' % (cfg[0], cfg[1], m.group(1))
src, n = re.subn(r'([A-Za-z_]\w*(?:<\d+>)?)<<<(.*?)>>>\(', launch, src, flags=re.S)
if n == 0:
    sys.exit("no kernel launch found in " + sys.argv[1])
open(sys.argv[2], 'w').write(src)
PY
	if ! $CXX -std=c++17 -O1 -pthread -Wall -Wno-unused-function -Wno-unknown-pragmas -Iinclude -Itests/emu "-D$macro" \
		"-DEMU_SOLUTION=\"$TMP/$name.cpp\"" tests/emu/emu_test.cpp -o "$TMP/$name" >"$TMP/$name.log" 2>&1; then
		echo "FAIL build $src"
		sed 's/^/    /' "$TMP/$name.log" | head -20
		F=$((F + 1))
		continue
	fi
	"$TMP/$name" >"$TMP/$name.out" 2>&1
	sed -E "s#^(ok|FAIL) #\1 $src: #" "$TMP/$name.out" | grep -v " passed, "
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$TMP/$name.out" | tail -1)
	if [ -z "$line" ]; then
		echo "FAIL $src: no result (crashed?)"
		tail -5 "$TMP/$name.out"
		F=$((F + 1))
		continue
	fi
	P=$((P + $(echo "$line" | cut -d' ' -f1)))
	F=$((F + $(echo "$line" | cut -d' ' -f3)))
done <<'LIST'
EMU_RMSNORM problems/llama/rmsnorm_h4096/solutions/fast.cu
EMU_FUSED_ADD problems/llama/fused_add_rmsnorm_h4096/solutions/fast.cu
EMU_GEMMA problems/gemma/gemma_rmsnorm_h5376/solutions/fast.cu
EMU_QK problems/qwen/qk_rmsnorm_h32_kv4_d128/solutions/fast.cu
EMU_GN problems/stable-diffusion/groupnorm32_silu_sd_vae/solutions/fast.cu
EMU_FLUX problems/flux/flux_adaln_layernorm_modulate_h3072/solutions/fast.cu
EMU_COPY tools/calibration/copy/solutions/copy.cu
LIST
echo "$P passed, $F failed"
[ "$F" = 0 ]
