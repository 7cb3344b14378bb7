#!/usr/bin/env python3
"""emulate_tailrows.py - CPU emulation (numpy) of the version-15 candidate of the bf16 GEMM (-DSF_GEMM_TAILROWS=1;
GEMM_NOTES_MID_M.md "Version 15"): the last token tile's A box is its M % 128 real rows (a second A map) in
gemm_wgmma_kernel (gemm_bf16_sm90_wgmma.cuh: persistent unsplit, v2's global split-K with the last-unit and the
spread reductions, cluster split-K through DSMEM, pair multicast) and gemm_v10_kernel (gemm_bf16_sm90_v10.cuh: the
TMA-store epilogue clipped at M), and v4's swap-AB kernel outside the half bands loads an M-row activation box
(gemm_bf16_sm90_midm.cuh, the two-CTA plans of 28672 x 4096). The stage rows past the short box keep STALE values
(modelled as 1e6 and as NaN: shared memory never written holds any bits), which must reach no stored output
through any epilogue or reduction: every output written once and equal to A . B^T. Also checked: the producer's
expect_tx equals the bytes its boxes land (stage by stage; a mismatch would hang the full barrier); the host's map
rule (box M % 128 rows when M % 128 != 0) against the kernel's wg_a_rows; every A / activation stage offset is
1024-byte aligned, so TMA's 128-byte swizzle (chunk c of the row at address a lands at c ^ ((a >> 7) & 7)) puts
row i of an r-row box where the 128-row box puts it, which the wgmma descriptors read. Mutations that must be
caught: the tail map used for every tile row ('tail_every'), the whole stage expected with the short box ('tx').
The index math of the kernels themselves is emulate_wgmma.py's and emulate_v10.py's (imported, with their tail
options).

    python3 tools/gemm_dev/emulate_tailrows.py [--quick]   # exit status 1 on a mismatch
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import emulate_v10  # noqa: E402
from emulate_wgmma import BK, BM, TAIL_MAX_M, a_rows, midm_plan, run, run_midm  # noqa: E402

STALE = (1e6, float("nan"))


def tma_swizzled(addr, chunk):
    """TMA's 128-byte swizzle by absolute shared-memory address: 16-byte chunk `chunk` of the 128-byte row that starts
    at addr lands at addr + ((chunk ^ ((addr >> 7) & 7)) << 4)"""
    return addr + ((chunk ^ ((addr >> 7) & 7)) << 4)


def check_layout():
    """stage offsets 1024-aligned for every ring the candidate loads short boxes into, and row i of an r-row box
    landing where the 128-row box (and the wgmma descriptor: row i at 128 i, chunk c at c ^ (i % 8)) puts it"""
    bad = 0
    offsets = []
    for bn in (128, 192, 256):  # WgCfg<BN> (also V10Cfg's ring): stage = A [128][64] + B [BN][64]
        stage = (BM + bn) * BK * 2
        offsets += [s * stage for s in range(200 * 1024 // stage)]
    for cps in (1, 2):  # MidmCfg<NT, CPS> (not half bands): weight [128][64] then activations [NT][64]
        for nt in ((32, 64, 96, 128, 192, 256) if cps == 1 else (32, 64, 96)):
            stage = (128 + nt) * BK * 2
            offsets += [s * stage + 128 * BK * 2 for s in range(200 * 1024 // cps // stage)]
    base = 3 * 1024  # the kernels' ring base: (raw + 1023) & ~1023
    for off in offsets:
        if (base + off) % 1024:
            print("stage offset %d not 1024-byte aligned FAILED" % off)
            bad += 1
    for off in offsets[:8]:
        for r in (1, 7, 8, 72, 77, 127, 128):
            for i in range(r):
                for c in range(8):
                    want = base + off + i * 128 + ((c ^ (i & 7)) << 4)
                    if tma_swizzled(base + off + i * 128, c) != want:
                        bad += 1
    print("layout: %d stage offsets 1024-byte aligned, short boxes land as the 128-row box: %s, max err %d" %
          (len(offsets), "ok" if not bad else "FAILED", bad))
    return bad


def check_host_rule():
    """make_a_maps: box M % 128 rows when M % 128 != 0 and M <= SF_GEMM_TAILROWS_MAX_M (else a copy of the 128-row map); the kernel loads through it
    exactly where wg_a_rows < 128, and its box is what wg_a_rows counts; TMA boxes are 1..256 rows"""
    bad = 0
    for M in range(1, 2049):
        last = (M - 1) // BM
        box = M % BM if M % BM and M <= TAIL_MAX_M else None
        for am in range(last + 1):
            ar = a_rows(am, M)
            uses_tail = ar < BM
            if uses_tail != (am == last and box is not None) or (uses_tail and not 1 <= ar == box <= 256):
                bad += 1
    print("host rule: the tail map's box is wg_a_rows of the last tile row at M 1..2048: %s, max err %d" %
          ("ok" if not bad else "FAILED", bad))
    return bad


def verdict(C, writes, A, B, acct):
    err = np.abs(C - A @ B.T).max()  # NaN (never written, or a stale value stored) fails too
    once = bool((writes == 1).all())
    tx_ok = all(e == l for e, l in acct)
    return bool(err <= 1e-9 and once and tx_ok), err, once, tx_ok


def main():
    quick = "--quick" in sys.argv
    rng = np.random.default_rng(15)
    bad = check_layout() + check_host_rule()
    # gemm_wgmma_kernel: (M, N, K, BN, splits, cluster, sms, pair, spread): every mode at M % 128 in {1, 72, 77, 127}
    cases = [(200, 256, 136, 128, 1, False, 3, False, False), (77, 200, 72, 256, 1, False, 132, False, False),
             (333, 392, 72, 192, 1, False, 4, False, False), (129, 130, 200, 128, 4, True, 132, False, False),
             (200, 260, 512, 256, 4, True, 132, False, False), (333, 194, 200, 192, 2, True, 132, False, False),
             (200, 256, 520, 256, 3, False, 132, False, False), (255, 130, 264, 128, 3, False, 132, False, True),
             (300, 520, 136, 256, 1, False, 2, True, False), (129, 200, 64, 192, 1, False, 5, True, False),
             (256, 200, 136, 128, 2, True, 132, False, False)]
    if not quick:
        cases += [(511, 390, 200, 128, 1, False, 7, False, False), (1000, 260, 72, 256, 1, False, 5, False, False),
                  (77, 514, 136, 256, 2, True, 132, False, False), (130, 256, 1024, 256, 8, False, 132, False, True),
                  (513, 260, 128, 256, 1, False, 1, True, False)]
    for i, (M, N, K, bn, splits, cluster, sms, pair, spread) in enumerate(cases):
        A = rng.standard_normal((M, K))
        B = rng.standard_normal((N, K))
        stale = STALE[i % 2]
        acct = []
        C, writes = run(A, B, bn, splits, cluster, sms, pair, tail=stale, acct=acct, spread=spread)
        ok, err, once, tx_ok = verdict(C, writes, A, B, acct)
        mode = "pair" if pair else ("cluster" if cluster else ("v2 split" + (" spread" if spread else "") if splits > 1
                                                                else "persistent"))
        print("tailrows wgmma M=%d N=%d K=%d BN=%d splits=%d %s stale %g: max err %.2e, written once: %s, "
              "expect_tx = landed bytes: %s" % (M, N, K, bn, splits, mode, stale, err, once, tx_ok))
        bad += not ok
    # gemm_v10_kernel (integers, exact): M edges with and without a tail, 1 .. many tiles per CTA, every width
    for i, (M, N, K, bn, grid) in enumerate([(200, 264, 24, 256, 1), (1000, 520, 40, 256, 3), (129, 8, 8, 192, 1),
                                             (333, 392, 16, 192, 2), (257, 136, 24, 128, 2), (640, 384, 16, 128, 5),
                                             (5000 if not quick else 1300, 136, 8, 256, 7)]):
        A = rng.integers(-3, 4, size=(M, K)).astype(np.float64)
        B = rng.integers(-3, 4, size=(N, K)).astype(np.float64)
        tiles = -(-M // BM) * -(-N // bn)
        acct = []
        C, writes = emulate_v10.run(A, B, bn, min(grid, tiles), tail=STALE[i % 2], acct=acct)
        ok, err, once, tx_ok = verdict(C, writes, A, B, acct)
        print("tailrows v10 M=%d N=%d K=%d BN=%d grid %d stale %g: max err %.2e, written once: %s, expect_tx = landed "
              "bytes: %s" % (M, N, K, bn, min(grid, tiles), STALE[i % 2], err, once, tx_ok))
        bad += not ok
    # v4 outside the half bands (the two-CTA plans of 28672 x 4096 and v4's one-CTA plans): M-row activation box
    for i, (M, N, K, sms, pin, two) in enumerate([(17, 390, 200, 132, 0, 1), (33, 260, 584, 132, 0, 1),
                                                  (77, 256, 1032, 8, 0, 1), (90, 130, 2056, 132, 0, 1),
                                                  (21, 260, 1096, 3, 0, 1), (77, 300, 520, 132, 5, 0),
                                                  (200, 136, 264, 132, 3, 0), (5, 250, 72, 132, 1, 0)]):
        nt, cps, splits = midm_plan(M, N, K, sms, pin, two)
        A = rng.standard_normal((M, K))
        B = rng.standard_normal((N, K))
        C, writes = run_midm(A, B, nt, splits, cps, xrows=True, stale=STALE[i % 2])
        ok, err, once, _ = verdict(C, writes, A, B, [])
        print("tailrows midm M=%d N=%d K=%d NT=%d CPS=%d splits=%d stale %g: max err %.2e, written once: %s" %
              (M, N, K, nt, cps, splits, STALE[i % 2], err, once))
        bad += not ok
    # mutations: each must be caught
    for mut, (M, N, K, bn, splits, cluster) in (("tail_every", (200, 256, 72, 128, 1, False)),
                                                ("tail_every", (333, 194, 136, 192, 2, True)),
                                                ("tx", (200, 256, 72, 256, 1, False)), ("tx", (129, 130, 200, 128, 2, True))):
        A = rng.standard_normal((M, K))
        B = rng.standard_normal((N, K))
        acct = []
        C, writes = run(A, B, bn, splits, cluster, 132, tail=1e6, mutate=mut, acct=acct)
        caught = not verdict(C, writes, A, B, acct)[0]
        print("tailrows mutation %s (M=%d BN=%d %s): %s" % (mut, M, bn, "cluster" if cluster else "persistent",
                                                           "caught" if caught else "NOT CAUGHT"))
        bad += not caught
    A = rng.integers(-3, 4, size=(300, 16)).astype(np.float64)
    B = rng.integers(-3, 4, size=(264, 16)).astype(np.float64)
    acct = []
    C, writes = emulate_v10.run(A, B, 256, 2, mut="tail_every", tail=1e6, acct=acct)
    caught = not verdict(C, writes, A, B, acct)[0]
    print("tailrows mutation tail_every (v10 M=300 BN=256): %s" % ("caught" if caught else "NOT CAUGHT"))
    bad += not caught
    print("emulate_tailrows: %s" % ("FAILED" if bad else "ok"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
