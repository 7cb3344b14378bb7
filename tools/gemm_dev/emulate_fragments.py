#!/usr/bin/env python3
"""emulate_fragments.py - CPU emulation (numpy) of the register-fragment index math of the two mma.sync
kernels in problems/common/kernels/ (gemm_bf16_sm90_smallm.cuh, with its SF_GEMM_SM16 candidate kernel for
M 9..16, and gemm_bf16_sm90_mma.cuh), written
from the PTX ISA's documented fragment layouts of mma.m16n8k16 (.row.col) and ldmatrix .x4, so that an
indexing slip shows up without a GPU. It mirrors the kernels' loops lane by lane (float64 arithmetic)
and compares with A . B^T. It does not model timing, memory ordering or the wgmma kernel.

    python3 tools/gemm_dev/emulate_fragments.py     # exit status 1 on a mismatch
"""
import sys

import numpy as np


def mma(acc, a, b):
    """One m16n8k16: a[lane] = 4 pairs (a0..a3), b[lane] = 2 pairs; acc[lane][4] updated (documented layout)."""
    Am = np.zeros((16, 16))
    Bm = np.zeros((16, 8))
    for lane in range(32):
        g, q = lane >> 2, lane & 3
        for j in range(2):
            Am[g][2 * q + j] = a[lane][0][j]
            Am[g + 8][2 * q + j] = a[lane][1][j]
            Am[g][2 * q + 8 + j] = a[lane][2][j]
            Am[g + 8][2 * q + 8 + j] = a[lane][3][j]
            Bm[2 * q + j][g] = b[lane][0][j]
            Bm[2 * q + 8 + j][g] = b[lane][1][j]
    D = Am @ Bm
    for lane in range(32):
        g, q = lane >> 2, lane & 3
        acc[lane][0] += D[g][2 * q]
        acc[lane][1] += D[g][2 * q + 1]
        acc[lane][2] += D[g + 8][2 * q]
        acc[lane][3] += D[g + 8][2 * q + 1]


def smallm(A, B, RG=1, U=8, ilv=False, warps=8):
    """gemm_smallm_kernel (v2): grid ceil(N / (8 RG)), row group w % RG, K slice w / RG (or, ilv, every
    KS-th batch of U steps); returns C."""
    M, K = A.shape
    N = B.shape[0]
    MH = (M + 7) // 8
    MT = (MH + 1) // 2
    KS = warps // RG
    steps, full = (K + 31) // 32, K // 32
    per = (steps + KS - 1) // KS
    C = np.full((M, N), np.nan)
    for blk in range((N + 8 * RG - 1) // (8 * RG)):
        red = {}
        for w in range(warps):
            rg, ks = w % RG, w // RG
            n0 = blk * 8 * RG + rg * 8
            if ilv:
                stride, lim, rstep, rend, st = KS * U, full // U * U, KS, steps, ks * U
            else:
                s0 = ks * per
                rend = min(s0 + per, steps)
                stride, lim, rstep, st = U, min(rend, full), 1, s0
            acc = [[[[0.0] * 4 for _ in range(32)] for _ in range(MT)] for _ in range(2)]

            def load(mat, row, st, lane, ok=True):
                k = st * 32 + (lane & 3) * 8
                return list(mat[row, k:k + 8]) if ok else [0.0] * 8

            def step(st, accset, predicated):
                for t in range(MT):
                    for half in range(2):
                        a, b = [], []
                        for lane in range(32):
                            g, q = lane >> 2, lane & 3
                            ok = (not predicated) or st * 32 + q * 8 < K
                            if not predicated:
                                assert st * 32 + q * 8 + 8 <= K  # the unpredicated batch stays inside K
                            lo = load(A, min(2 * t * 8 + g, M - 1), st, lane, ok)
                            hi = load(A, min((2 * t + 1) * 8 + g, M - 1), st, lane, ok) if 2 * t + 1 < MH else [0.0] * 8
                            bv = load(B, min(n0 + g, N - 1), st, lane, ok)
                            o = 4 * half
                            a.append([lo[o:o + 2], hi[o:o + 2], lo[o + 2:o + 4], hi[o + 2:o + 4]])
                            b.append([bv[o:o + 2], bv[o + 2:o + 4]])
                        mma(acc[accset][t], a, b)
            while st + U <= lim:
                for u in range(U):
                    step(st + u, u & 1, False)
                st += stride
            if ilv:
                st = lim + ks
            while st < rend:
                step(st, 0, True)
                st += rstep
            red[w] = [[[acc[0][t][lane][e] + acc[1][t][lane][e] for e in range(4)] for lane in range(32)]
                      for t in range(MT)]
        for rg in range(RG):
            n0 = blk * 8 * RG + rg * 8
            for lane in range(32):
                g, q = lane >> 2, lane & 3
                n = n0 + 2 * q
                if n >= N:
                    continue
                for t in range(MT):
                    s = [0.0] * 4
                    for j in range(KS):
                        for e in range(4):
                            s[e] += red[rg + j * RG][t][lane][e]
                    m = t * 16 + g
                    if m < M:
                        C[m][n], C[m][n + 1] = s[0], s[1]
                    if m + 8 < M:
                        C[m + 8][n], C[m + 8][n + 1] = s[2], s[3]
    return C


def smallm16(A, B, U=4, warps=8, mutate=None):
    """gemm_smallm16_kernel (candidate SF_GEMM_SM16=1, M 9..16): grid ceil(N / 16), warp w the w-th contiguous
    K slice, both A halves (rows g, 8 + g) against both B row groups (rows n0 + g, n0 + 8 + g) per K step,
    batches of U whole steps, then single predicated steps; warps 0 / 1 reduce row group 0 / 1 in slice
    order. Returns (C, writes): writes[m][n] counts the stores of each output (every one must be 1).
    mutate (must be caught): 'bgroup' second row group reads rows n0 + g; 'ahalf' A halves swapped in the
    second mma of a step; 'tail' the partial last K step dropped; 'slice' K slices of steps // warps (the
    rounding up lost); 'store' row group 1 stored at row group 0's columns. A row of A or B read past M or N
    (a missing clamp) raises IndexError here."""
    M, K = A.shape
    N = B.shape[0]
    assert 9 <= M <= 16 and K % 8 == 0 and N % 2 == 0
    steps, full = (K + 31) // 32, K // 32
    per = (steps + warps - 1) // warps if mutate != 'slice' else max(steps // warps, 1)
    C = np.full((M, N), np.nan)
    writes = np.zeros((M, N), dtype=int)

    def load(mat, row, st, lane, ok=True):
        k = st * 32 + (lane & 3) * 8
        if not 0 <= row < mat.shape[0]:
            raise IndexError("row %d read past %d" % (row, mat.shape[0]))  # numpy would wrap a negative row
        return list(mat[row, k:k + 8]) if ok else [0.0] * 8

    for blk in range((N + 15) // 16):
        n0 = blk * 16
        red = {}
        for w in range(warps):
            s0 = w * per
            rend = min(s0 + per, steps)
            lim = min(rend, full)
            if mutate == 'tail':
                rend = lim
            acc = [[[[0.0] * 4 for _ in range(32)] for _ in range(2)] for _ in range(2)]

            def step(st, accset, predicated):
                for r in range(2):
                    for half in range(2):
                        a, b = [], []
                        for lane in range(32):
                            g, q = lane >> 2, lane & 3
                            ok = (not predicated) or st * 32 + q * 8 < K
                            if not predicated:
                                assert st * 32 + q * 8 + 8 <= K  # the unpredicated batch stays inside K
                            av = [load(A, min(h * 8 + g, M - 1), st, lane, ok) for h in range(2)]
                            brow = n0 + (0 if mutate == 'bgroup' else r * 8) + g
                            bv = load(B, min(brow, N - 1), st, lane, ok)
                            lo, hi = av
                            if mutate == 'ahalf' and half == 1:
                                lo, hi = hi, lo
                            o = 4 * half
                            a.append([lo[o:o + 2], hi[o:o + 2], lo[o + 2:o + 4], hi[o + 2:o + 4]])
                            b.append([bv[o:o + 2], bv[o + 2:o + 4]])
                        mma(acc[accset][r], a, b)
            st = s0
            while st + U <= lim:
                for u in range(U):
                    step(st + u, u & 1, False)
                st += U
            while st < rend:
                step(st, 0, True)
                st += 1
            red[w] = [[[acc[0][r][lane][e] + acc[1][r][lane][e] for e in range(4)] for lane in range(32)]
                      for r in range(2)]
        for r in range(2):  # warp r of the block
            for lane in range(32):
                g, q = lane >> 2, lane & 3
                n = n0 + (0 if mutate == 'store' else r * 8) + 2 * q
                if n >= N:
                    continue
                s = [0.0] * 4
                for j in range(warps):
                    for e in range(4):
                        s[e] += red[j][r][lane][e]
                if g < M:
                    C[g][n], C[g][n + 1] = s[0], s[1]
                    writes[g][n] += 1
                    writes[g][n + 1] += 1
                if g + 8 < M:
                    C[g + 8][n], C[g + 8][n + 1] = s[2], s[3]
                    writes[g + 8][n] += 1
                    writes[g + 8][n + 1] += 1
    return C, writes


def swz(row, chunk):
    return row * 4 + (chunk ^ ((row >> 1) & 3))  # 16-byte slot index, as mma_tile_off / 16


def ldmatrix_x4(slots, addr_slot_of_lane):
    """slots: dict slot -> 8 values; lane i gives the slot of row i%8 of matrix i//8. Returns reg[lane][4] pairs."""
    out = [[None] * 4 for _ in range(32)]
    for mat in range(4):
        rows = [slots[addr_slot_of_lane[mat * 8 + r]] for r in range(8)]
        for t in range(32):
            r, c = t >> 2, (t & 3) * 2
            out[t][mat] = rows[r][c:c + 2]
    return out


def mma_tile(A, B):
    """gemm_mma_kernel for one 128 x 128 block (A [128][K], B [128][K]); returns C [128][128]."""
    K = A.shape[1]
    C = np.zeros((128, 128))
    for kb in range((K + 31) // 32):
        sa, sb = {}, {}
        for idx in range(512):
            row, chunk = idx >> 2, idx & 3
            k = kb * 32 + chunk * 8
            sa[swz(row, chunk)] = list(A[row, k:k + 8]) if k < K else [0.0] * 8
            sb[swz(row, chunk)] = list(B[row, k:k + 8]) if k < K else [0.0] * 8
        assert len(sa) == 512
        for warp in range(8):
            wm, wn = warp >> 2, warp & 3
            acc = [[[[0.0] * 4 for _ in range(32)] for _ in range(4)] for _ in range(4)]
            for ks in range(2):
                af = []
                for i in range(4):
                    addr = [swz(wm * 64 + i * 16 + (l & 15), ks * 2 + (l >> 4)) for l in range(32)]
                    af.append(ldmatrix_x4(sa, addr))
                bf = [None] * 4
                for jj in range(2):
                    addr = [swz(wn * 32 + jj * 16 + ((l >> 3) >> 1) * 8 + (l & 7), ks * 2 + ((l >> 3) & 1))
                            for l in range(32)]
                    r = ldmatrix_x4(sb, addr)
                    bf[jj * 2] = [[r[l][0], r[l][1]] for l in range(32)]
                    bf[jj * 2 + 1] = [[r[l][2], r[l][3]] for l in range(32)]
                for i in range(4):
                    for j in range(4):
                        mma(acc[i][j], af[i], bf[j])
            for i in range(4):
                for j in range(4):
                    for lane in range(32):
                        g, q = lane >> 2, lane & 3
                        m, n = wm * 64 + i * 16 + g, wn * 32 + j * 8 + q * 2
                        C[m][n] += acc[i][j][lane][0]
                        C[m][n + 1] += acc[i][j][lane][1]
                        C[m + 8][n] += acc[i][j][lane][2]
                        C[m + 8][n + 1] += acc[i][j][lane][3]
    return C


def main():
    rng = np.random.default_rng()
    bad = 0
    for (M, N, K, RG, U, ilv) in [(3, 40, 136, 1, 8, 0), (16, 64, 2048, 2, 8, 0), (21, 32, 264, 1, 4, 0),
                                  (1, 34, 1024, 1, 8, 0), (9, 18, 1288, 2, 8, 0), (64, 16, 520, 1, 2, 0),
                                  (33, 26, 4104, 4, 4, 0), (2, 8, 8, 1, 8, 0), (5, 20, 2312, 1, 8, 1),
                                  (12, 16, 1064, 2, 4, 1), (1, 10, 8200, 1, 8, 1)]:
        A = rng.standard_normal((M, K))
        B = rng.standard_normal((N, K))
        err = np.abs(smallm(A, B, RG, U, bool(ilv)) - A @ B.T).max()  # a NaN (never written) fails too
        print("smallm M=%d N=%d K=%d RG=%d U=%d ilv=%d max err %.2e" % (M, N, K, RG, U, ilv, err))
        bad += not err <= 1e-9
    # the M 9..16 candidate (SF_GEMM_SM16=1): every M, odd K tails (K % 32 != 0), N not a multiple of 16,
    # warps with no K steps (K = 8), the launched U = 4 and U = 2 / 1; each output stored exactly once
    for (M, N, K, U) in [(9, 18, 1288, 4), (10, 34, 136, 4), (11, 20, 1064, 2), (12, 16, 2056, 4),
                         (13, 2, 8, 4), (14, 50, 520, 1), (15, 10, 1032, 4), (16, 64, 2048, 4), (16, 30, 4104, 4)]:
        A = rng.standard_normal((M, K))
        B = rng.standard_normal((N, K))
        C, writes = smallm16(A, B, U)
        err = np.abs(C - A @ B.T).max()
        once = bool((writes == 1).all())
        print("smallm16 M=%d N=%d K=%d U=%d max err %.2e, every output stored once: %s" % (M, N, K, U, err, once))
        bad += not (err <= 1e-9 and once)
    # mutations of the candidate's index math: each must be caught (a test that cannot fail is a defect)
    for mut, (M, N, K) in [('bgroup', (16, 18, 136)), ('ahalf', (12, 16, 136)), ('tail', (9, 16, 1288)),
                           ('slice', (11, 16, 1288)), ('store', (10, 16, 136))]:
        A = rng.standard_normal((M, K))
        B = rng.standard_normal((N, K))
        C, writes = smallm16(A, B, 4, mutate=mut)
        caught = not (np.abs(C - A @ B.T).max() <= 1e-9 and (writes == 1).all())
        print("smallm16 mutation %s M=%d N=%d K=%d: %s" % (mut, M, N, K, "caught" if caught else "NOT CAUGHT"))
        bad += not caught
    A = rng.standard_normal((128, 72))
    B = rng.standard_normal((128, 72))
    err = np.abs(mma_tile(A, B) - A @ B.T).max()
    print("mma tile K=72 max err %.2e" % err)
    bad += err > 1e-9
    print("emulate_fragments: %s" % ("FAILED" if bad else "ok"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
