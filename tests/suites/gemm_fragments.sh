#!/usr/bin/env bash
# gemm_fragments.sh - the register-fragment index math of the bf16 GEMM's mma.sync kernels
# (problems/common/kernels/gemm_bf16_sm90_smallm.cuh, _mma.cuh), emulated lane by lane in numpy from the
# PTX ISA fragment layouts (tools/gemm_dev/emulate_fragments.py: odd M/N/K, partial K steps, row groups,
# batch depths) and compared with A . B^T. No GPU needed. Ends with "N passed, M failed".
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
if ! python3 -c 'import numpy' 2>/dev/null; then
	echo "FAIL gemm_fragments: python3 has no numpy"
	echo "0 passed, 1 failed"
	exit 1
fi
out=$(python3 tools/gemm_dev/emulate_fragments.py 2>&1)
rc=$?
pass=$(echo "$out" | grep -c 'max err')
fail=0
if [ $rc != 0 ]; then
	echo "$out" | sed 's/^/FAIL /'
	fail=1
	pass=0
fi
echo "$pass passed, $fail failed"
[ $fail = 0 ]
