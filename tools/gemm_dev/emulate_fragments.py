#!/usr/bin/env python3
"""emulate_fragments.py - CPU emulation (numpy) of the register-fragment index math of the two mma.sync
kernels in problems/common/kernels/ (gemm_bf16_sm90_smallm.cuh, with its SF_GEMM_SM16 kernel for M 9..16,
and gemm_bf16_sm90_mma.cuh), written
from the PTX ISA's documented fragment layouts of mma.m16n8k16 (.row.col) and ldmatrix .x4, so that an
indexing slip shows up without a GPU. It mirrors the kernels' loops lane by lane (float64 arithmetic)
and compares with A . B^T. It does not model timing, memory ordering or the wgmma kernel.

    python3 tools/gemm_dev/emulate_fragments.py     # exit status 1 on a mismatch
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


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


def k_loop(step, s0, lim, rend, U):
    """The K order of gemm_smallm16_kernel: batches of U steps from s0 while a whole batch
    fits below lim (step u on accumulator set u & 1, unpredicated), then the remaining steps below rend one by one on
    set 0, predicated (the partial last K step)."""
    st = s0
    while st + U <= lim:
        for u in range(U):
            step(st + u, u & 1, False)
        st += U
    while st < rend:
        step(st, 0, True)
        st += 1


def smallm16(A, B, U=4, warps=8, mutate=None):
    """gemm_smallm16_kernel (SF_GEMM_SM16=1, M 9..16 where its grid is one wave): grid ceil(N / 16), warp w the w-th contiguous
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
            k_loop(step, s0, lim, rend, U)
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


MIDM_ROWS, MIDM_BK, MIDM_MAX_SPLIT, MIDM_TRIP = 128, 64, 8, 4


def midm_mc_take(M, N, nt, cps, s, sms, resident):
    """mirror of midm_mc_take (gemm_bf16_sm90_midm_mc.cuh): whether the v4 plan runs as band pairs"""
    bands = (N + MIDM_ROWS - 1) // MIDM_ROWS
    pairs = (bands + 1) // 2
    return (cps == 1 and 2 * M > nt and 2 * s <= MIDM_MAX_SPLIT and pairs * 2 * s <= sms and
            (resident < 0 or resident >= pairs))


def midm_pair(A, B, nt, splits, mutate=None, trip=MIDM_TRIP):
    """gemm_midm_mc_kernel<nt> (candidate SF_GEMM_MIDM_MC=1, GEMM_NOTES_MID_M.md "Version 12"), CTA by CTA: grid
    ceil(bands / 2) * 2 * splits in clusters of cl = 2 * splits; rank r = blockIdx % cl, band half r / splits, K split
    r % splits, band 2 (blockIdx / cl) + half; the padded band of an odd count loads the last real band's weight.
    Per stage: the own weight box, the activation tile assembled from the multicast halves (producer r: token rows
    [half * nt / 2, +nt / 2) of A, zero past M, into every CTA of its mask at byte kWBytes + half * kXHalf), the full
    barrier's byte count, and the empty barrier's arrivals (lane 0 local, lane 1 on the partner) against the CTAs the
    producer writes into. Then the wgmma D layout (sm90_model.d_frag), the transposed store (unsplit) or the slab +
    rank-share reduction over the band's ranks rb + 0 .. splits - 1, trip pairs per DSMEM round trip
    (SF_GEMM_MIDM_MC_TRIP). Returns (C, writes, problems).
    mutate (must be caught): 'rb' the reduction reads ranks 0 .. splits - 1 (the first band's slabs); 'half' a half
    lands at the other half's offset; 'mask' the multicast goes to the own CTA only; 'peer' lane 1 releases on
    the partner of the next split; 'band' band = blockIdx / cl + half (pairs overlap)."""
    from sm90_model import d_frag
    M, K = A.shape
    N = B.shape[0]
    bands = (N + MIDM_ROWS - 1) // MIDM_ROWS
    pairs, cl = (bands + 1) // 2, 2 * splits
    kbc = (K + MIDM_BK - 1) // MIDM_BK
    kb_per = (kbc + splits - 1) // splits
    w_bytes, x_bytes = MIDM_ROWS * MIDM_BK * 2, nt * MIDM_BK * 2
    x_half = x_bytes // 2
    stages = (200 * 1024) // (w_bytes + x_bytes)
    rows, cols = d_frag(nt)
    C = np.full((M, N), np.nan)
    writes = np.zeros((M, N), dtype=int)
    problems = []

    def box(X, r0, n):
        out = np.zeros((n, K))
        r = X[r0:min(r0 + n, X.shape[0])]
        out[:r.shape[0]] = r
        return out

    for ci in range(pairs):
        cta = []
        for r in range(cl):
            bx = ci * cl + r
            rr = bx % cl
            bh, split = rr // splits, rr % splits
            band = bx // cl * 2 + bh if mutate != 'band' else bx // cl + bh
            wrow = min(band, bands - 1) * MIDM_ROWS
            peer = (1 - bh) * splits + (split if mutate != 'peer' else (split + 1) % splits)
            mask = (1 << split) | ((1 << (splits + split)) if mutate != 'mask' else 0)
            cta.append(dict(bh=bh, split=split, band=band, wrow=wrow, peer=peer, mask=mask))
        # every (band, split) of the cluster's two bands exactly once
        if sorted((c['band'], c['split']) for c in cta) != sorted((2 * ci + h, s) for h in range(2) for s in range(splits)):
            problems.append("cluster %d: (band, split) not each once" % ci)
        # the ring protocol's accounting per CTA: bytes landing on its full barrier and arrivals on its empty barrier
        land = [w_bytes] * cl
        arrive = [set() for _ in range(cl)]
        for r, c in enumerate(cta):
            for d in range(cl):
                if c['mask'] >> d & 1:
                    land[d] += x_half
            arrive[r].add(r)          # lane 0 of each consumer warp: the own barrier
            arrive[c['peer']].add(r)  # lane 1: the partner's
        for r, c in enumerate(cta):
            dests = {d for d in range(cl) if c['mask'] >> d & 1}
            if land[r] != w_bytes + x_bytes:
                problems.append("cluster %d rank %d: %d bytes land per stage, expect_tx %d" % (ci, r, land[r], w_bytes + x_bytes))
            if arrive[r] != dests:  # empty[s] of r must hear from every CTA whose slot s r's producer overwrites
                problems.append("cluster %d rank %d: releases from %s, producer writes %s" % (ci, r, sorted(arrive[r]), sorted(dests)))
            if cta[c['peer']]['split'] != c['split'] or c['peer'] == r:
                problems.append("cluster %d rank %d: partner %d not the other band's same split" % (ci, r, c['peer']))
        # activation stage of each CTA, as 128-byte rows from the stage's activation tile start
        xs = [np.full((nt, K), np.nan) for _ in range(cl)]
        for r, c in enumerate(cta):
            off = w_bytes + (c['bh'] if mutate != 'half' else 1 - c['bh']) * x_half
            assert off % 1024 == 0, "a half off its 1024-byte swizzle atom"
            r0 = (off - w_bytes) // 128
            src = box(A, c['bh'] * (nt // 2), nt // 2)
            for d in range(cl):
                if c['mask'] >> d & 1:
                    xs[d][r0:r0 + nt // 2] = src
        regs, slabs = [], []
        for r, c in enumerate(cta):
            kb0 = c['split'] * kb_per
            kb1 = min(kb0 + kb_per, kbc)
            assert kb1 > kb0, "empty split"
            k0, k1 = kb0 * MIDM_BK, min(kb1 * MIDM_BK, K)
            x = np.nan_to_num(xs[r], nan=1e30)  # a row never landed poisons its tokens
            D = box(B, c['wrow'], MIDM_ROWS)[:, k0:k1] @ x[:, k0:k1].T  # [weight row][token]
            d = np.stack([D[64 * cc + rows, cols] for cc in range(2)])  # d[c][tid][i]
            regs.append(d)
            slab = np.zeros((nt // 4 * 256, 2))
            for cc in range(2):
                for p in range(nt // 4):
                    slab[p * 256 + 128 * cc + np.arange(128)] = d[cc][:, [2 * p, 2 * p + 1]]
            slabs.append(slab)
            assert nt * 512 <= stages * (w_bytes + x_bytes), "slab larger than the ring"

        def store(m, n, v):
            if m < M and n < N:
                C[m, n] = v
                writes[m, n] += 1

        share = (nt // 4 + splits - 1) // splits
        for r, c in enumerate(cta):
            rb = c['bh'] * splits if mutate != 'rb' else 0
            p0, p1 = c['split'] * share, min(c['split'] * share + share, nt // 4)
            for cc in range(2):
                for tid in range(128):
                    warp, lane = tid >> 5, tid & 31
                    g, q = lane >> 2, lane & 3
                    n_b = c['band'] * MIDM_ROWS + cc * 64 + warp * 16 + g
                    if splits == 1:
                        for j in range(nt // 8):
                            for e in range(4):
                                n, m = n_b + (8 if e >= 2 else 0), 8 * j + 2 * q + (e & 1)
                                if n < N and m < M:
                                    store(m, n, regs[r][cc, tid, 4 * j + e])
                        continue
                    jj = tid + 128 * cc
                    for p in range(p0, p1, trip):
                        for h in range(trip):
                            ph = p + h
                            if ph >= p1:
                                continue
                            s0 = sum(slabs[rb + r2][ph * 256 + jj][0] for r2 in range(splits))
                            s1 = sum(slabs[rb + r2][ph * 256 + jj][1] for r2 in range(splits))
                            n, m = n_b + (8 if ph & 1 else 0), (ph >> 1) * 8 + 2 * q
                            if n < N:
                                if m < M:
                                    store(m, n, s0)
                                if m + 1 < M:
                                    store(m + 1, n, s1)
    return C, writes, problems


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
    # version 12 (SF_GEMM_MIDM_MC=1): band-pair clusters sharing the activation tile by multicast; odd M (17 .. 127),
    # odd band counts (a padded band), N and K tails, uneven K splits, unsplit, every token tile 32 .. 256
    for (M, N, K, nt, s, trip) in [(17, 300, 584, 32, 3, 4), (33, 256, 1032, 64, 4, 4), (77, 640, 264, 96, 2, 4),
                                   (100, 130, 520, 128, 1, 4), (127, 512, 4104, 128, 4, 4), (64, 258, 200, 64, 2, 4),
                                   (200, 386, 136, 256, 1, 4), (129, 256, 584, 192, 3, 4), (120, 770, 1096, 128, 2, 4),
                                   (101, 512, 1032, 128, 4, 8), (255, 390, 520, 256, 3, 8)]:
        A = rng.standard_normal((M, K))
        B = rng.standard_normal((N, K))
        C, writes, probs = midm_pair(A, B, nt, s, trip=trip)
        err = np.abs(C - A @ B.T).max()
        once = bool((writes == 1).all())
        print("midm_pair M=%d N=%d K=%d NT=%d splits=%d trip=%d max err %.2e, every output stored once: %s%s" %
              (M, N, K, nt, s, trip, err, once, "; " + "; ".join(probs[:2]) if probs else ""))
        bad += not (err <= 1e-9 and once and not probs)
    for mut, (M, N, K, nt, s) in [('rb', (77, 512, 1032, 96, 4)), ('half', (33, 256, 520, 64, 2)), ('mask', (100, 256, 264, 128, 1)),
                                  ('peer', (64, 256, 1032, 64, 4)), ('band', (17, 512, 264, 32, 2))]:
        A = rng.standard_normal((M, K))
        B = rng.standard_normal((N, K))
        C, writes, probs = midm_pair(A, B, nt, s, mutate=mut)
        caught = bool(probs) or not (np.abs(C - A @ B.T).max() <= 1e-9 and (writes == 1).all())
        print("midm_pair mutation %s M=%d N=%d K=%d: %s" % (mut, M, N, K, "caught" if caught else "NOT CAUGHT"))
        bad += not caught
    # the host rule on the four Llama shapes (132 SMs, clusters resident as the plan needs): the v4 plans at one CTA
    # per SM take pairs (4096^2 / 4096 x 14336: 16 clusters of 8; 6144 x 4096: 24 of 4); 28672 x 4096 (two CTAs per SM
    # at M <= 96) does not; 16 clusters of 8 not resident -> not taken
    for (N, K, M, nt, cps, s, res, want) in [(4096, 4096, 64, 64, 1, 4, 16, True), (4096, 4096, 128, 128, 1, 4, 16, True),
                                             (6144, 4096, 100, 128, 1, 2, 33, True), (4096, 14336, 33, 64, 1, 4, 16, True),
                                             (28672, 4096, 64, 64, 2, 1, 264, False), (4096, 4096, 64, 64, 1, 4, 15, False),
                                             (4096, 4096, 20, 64, 1, 4, 16, False), (1024, 4096, 64, 64, 1, 8, 16, False)]:
        got = midm_mc_take(M, N, nt, cps, s, 132, res)
        print("midm_mc_take %dx%d M=%d nt %d cps %d splits %d resident %d: %s (want %s) max err %s" %
              (N, K, M, nt, cps, s, res, got, want, "0" if got == want else "FAILED"))
        bad += got != want
    A = rng.standard_normal((128, 72))
    B = rng.standard_normal((128, 72))
    err = np.abs(mma_tile(A, B) - A @ B.T).max()
    print("mma tile K=72 max err %.2e" % err)
    bad += err > 1e-9
    print("emulate_fragments: %s" % ("FAILED" if bad else "ok"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
