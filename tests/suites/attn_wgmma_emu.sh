#!/usr/bin/env bash
# attn_wgmma_emu.sh - the wgmma paged prefill (problems/common/kernels/gqa_paged_prefill_sm90_wgmma.cuh,
# -DSF_PREFILL_WGMMA=1 and 2) replayed on the CPU by tools/attn_emulate_wg.py: 128B-swizzled cp.async
# gathers, wgmma descriptors decoded through the canonical operand layouts (self-checked against the
# GEMM's proven TMA layout), accumulator / register-A fragments, the cp.async group order with its
# wait counts (early and late landing), both tile orders, on fixed compositions (long prefix, empty and
# single-token sequences, q1000's shape in small: no prefix, an 8-token last item, a partial last kv
# tile; page sizes 1, 16 and a runtime 3), compared with a float64 reference; before it the
# synchronization protocol sweep (cp.async groups, proxy fences, barriers, wgmma waits replayed against
# the PTX rules for n_tiles 1..64 and larger ones to 1025, both orders; CTA coverage of q1, q63, q65,
# q129, q1000, ragged and prefixed compositions). Then deliberate mistakes must be caught: V descriptor LBO/SBO swapped; the
# overlapped order's last PV without its cp.async wait; and, by the protocol sweep alone (seconds): the
# commits inside the tail's load guards, no proxy fence, no second barrier. No GPU needed. Ends with
# "N passed, M failed".
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
if ! python3 -c 'import numpy' 2>/dev/null; then
	echo "FAIL attn_wgmma_emu: python3 has no numpy"
	echo "0 passed, 1 failed"
	exit 1
fi
pass=0
fail=0
out=$(cd tools && python3 attn_emulate_wg.py --seeds 0 2>&1)
if [ $? = 0 ]; then
	pass=$((pass + $(echo "$out" | grep -c '^ok ')))
else
	echo "$out" | grep -v '^ok ' | sed 's/^/FAIL /'
	fail=$((fail + 1))
fi
for m in "lbo_sbo --order plain --mode early" "tail --order ovl --mode late" "tailskip --protocol-only" \
	"nofence --protocol-only" "nobar2 --protocol-only"; do
	# shellcheck disable=SC2086
	if (cd tools && python3 attn_emulate_wg.py --seeds 0 --mutate $m >/dev/null 2>&1); then
		echo "FAIL mutation '$m' was not caught"
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
done
echo "$pass passed, $fail failed"
[ $fail = 0 ]
