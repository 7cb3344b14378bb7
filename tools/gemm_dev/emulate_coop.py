#!/usr/bin/env python3
"""emulate_coop.py - CPU emulation (numpy) of the index math of the version-9 GEMM kernel
(problems/common/kernels/gemm_bf16_sm90_coop.cuh, gemm_coop_kernel<TM> and coop_launch; GEMM_NOTES_LARGE_M.md
"Version 9"): coop_decide's wave rule and coop_launch's grid (min(tiles, SMs); declined when the TM x (384 - TM) tiles need more
waves than v3a's 128 x 256), the persistent schedule (CTA b takes tiles b, b + G, ... through wg_raster over
1024 / TM tile rows), the TMA boxes (A [TM][64], B [384 - TM][64], zero past M, N and K), each consumer's
operand rows inside a stage taken from the kernel's byte offsets (a_off = c kRowOff 128 + h 64 128,
b_off = kABytes + c kColOff 128), the two m64n128k16 accumulator blocks d[h] per consumer thread in the
wgmma D fragment layout and wg_store_rows<128>'s bounds-checked store. Every output must be written exactly
once and equal A . B^T (odd M, N, K; both tile shapes; 1 .. many tiles per CTA); the Llama shapes' launch
decisions on 132 SMs are listed and checked (taken whenever the tile counts match). Mutations (the
consumer offsets of the other shape, no row check) must each be caught: the checker can fail. The ring protocol is the default kernel's, unchanged (emulate_wgmma.py).

    python3 tools/gemm_dev/emulate_coop.py [--quick]   # exit status 1 on a mismatch
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sm90_model import box, d_frag, wg_raster  # noqa: E402

BK = 64


def cfg(tm):
    """CoopCfg<TM>: (BN, A bytes per stage, raster group, consumer row offset, consumer column offset)"""
    return 384 - tm, tm * BK * 2, 1024 // tm, 128 if tm == 256 else 0, 0 if tm == 256 else 128


def launch(M, N, tm, sms):
    """coop_decide's wave rule and coop_launch's grid, or None when the coop tiles need more waves than v3a's 128 x 256"""
    bn = 384 - tm
    tiles = -(-M // tm) * -(-N // bn)
    plain = -(-M // 128) * -(-N // 256)
    if -(-tiles // sms) > -(-plain // sms):
        return None
    return min(tiles, sms)


def run(A, B, tm, grid, mut=None):
    """gemm_coop_kernel<tm> on grid CTAs: (C, writes per output, tiles per CTA)"""
    M, K = A.shape
    N = B.shape[0]
    bn, abytes, gm, roff, coff = cfg(tm)
    if mut == "other_offsets":
        roff, coff = coff, roff
    tiles_m, tiles_n, kpad = -(-M // tm), -(-N // bn), -(-K // BK) * BK
    C = np.full((M, N), np.nan)
    writes = np.zeros((M, N), dtype=np.int64)
    fr, fc = d_frag(128)  # the m64n128k16 D fragment, as wg_store_rows<128> stores it
    per = []
    for b in range(grid):
        mine = list(range(b, tiles_m * tiles_n, grid))
        per.append(len(mine))
        for t in mine:
            ti, tn = wg_raster(t, tiles_m, tiles_n, gm)
            if not (0 <= ti < tiles_m and 0 <= tn < tiles_n):
                return None, None, per
            a, bb = box(A, ti * tm, tm, kpad), box(B, tn * bn, bn, kpad)  # the stage ring over all K blocks
            for c in range(2):
                b_off = abytes + c * coff * 128
                brow = (b_off - abytes) // 128  # the descriptor's first B row inside the stage
                for h in range(2):
                    arow = (c * roff * 128 + h * 64 * 128) // 128
                    if arow + 64 > tm or brow + 128 > bn:  # a descriptor past its operand block in the stage
                        return None, None, per
                    P = a[arow:arow + 64] @ bb[brow:brow + 128].T  # 4 x k16 per stage, all stages
                    d = P[fr, fc]
                    r = ti * tm + c * roff + h * 64 + fr
                    col = tn * bn + c * coff + fc
                    ok = (col < N) if mut == "no_row_check" else (r < M) & (col < N)
                    if (r[ok] >= M).any():
                        writes[0, 0] += 1000  # a store past row M - 1: outside C, counted as a fault
                        ok &= r < M
                    C[r[ok], col[ok]] = d[ok]
                    np.add.at(writes, (r[ok], col[ok]), 1)
    return C, writes, per


def check(A, B, tm, grid, mut=None):
    C, writes, per = run(A, B, tm, grid, mut)
    if C is None or np.isnan(C).any():
        return False, np.inf, writes, per
    err = np.max(np.abs(C - A @ B.T))
    return err < 1e-9 and (writes == 1).all() and min(per) >= 1, err, writes, per


def main():
    quick = "--quick" in sys.argv
    rng = np.random.default_rng()
    fails, n = 0, 0
    cases = [(1000, 510, 200, 5), (513, 384, 72, 3), (129, 262, 136, 132), (1290, 770, 64, 2), (300, 254, 8, 1),
             (2900, 1030, 96, 7), (257, 130, 24, 4)]
    if not quick:
        cases += [(int(rng.integers(129, 2200)), 2 * int(rng.integers(64, 700)), 8 * int(rng.integers(1, 40)),
                   int(rng.integers(1, 12))) for _ in range(8)]
    for M, N, K, grid in cases:
        A = rng.standard_normal((M, K))
        B = rng.standard_normal((N, K))
        for tm in (256, 128):
            bn = 384 - tm
            g = min(grid, -(-M // tm) * -(-N // bn))
            ok, err, writes, per = check(A, B, tm, g)
            n += 1
            fails += not ok
            print("%s index TM=%d M=%d N=%d K=%d grid=%d (tiles/CTA %d..%d): max err %.2e, writes %d..%d" %
                  ("ok  " if ok else "FAIL", tm, M, N, K, g, min(per), max(per), err, writes.min(), writes.max()))
    # mutations: each must be caught on some case
    A = rng.standard_normal((1000, 72))
    B = rng.standard_normal((390, 72))
    for mut, tm in (("other_offsets", 256), ("other_offsets", 128), ("no_row_check", 256)):
        ok = check(A, B, tm, 3, mut)[0]
        n += 1
        fails += ok
        print("%s mutation %s TM=%d %s" % ("ok  " if not ok else "FAIL", mut, tm, "caught" if not ok else "NOT caught"))
    # the Llama shapes on 132 SMs: taken whenever the tile counts match; TM 128 always (v3a's own tiles)
    for N in (4096, 6144, 28672):
        row = []
        for M in (513, 1000, 1024, 1300, 2048, 2900, 4096, 5000, 8192):
            g256, g128 = launch(M, N, 256, 132), launch(M, N, 128, 132)
            same = -(-M // 256) * 2 == -(-M // 128)
            ok = g128 is not None and (g256 is not None or not same)
            n += 1
            fails += not ok
            row.append("%d:%s" % (M, "same waves" if g256 is not None else "adds a wave"))
        print("wave rule N=%d TM=256 on 132 SMs (before v3a's width plan): %s" % (N, " ".join(row)))
    print("%d checks, %d failed" % (n, fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
