#!/usr/bin/env bash
# gpu_flexdiag.sh - tools/flex_diag.py on a GPU machine (the flex_attention prefill baseline on the cpu-* geometry,
# three variants each, against attention.py's float32 reference); table to stdout, tracebacks under $OUT.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu-flexdiag}
mkdir -p "$out"
python3 tools/flex_diag.py "$out" ${FLEX_DIAG_SEED:-} 2>&1 | tee "$out/flex_diag.txt"
exit "${PIPESTATUS[0]}"
