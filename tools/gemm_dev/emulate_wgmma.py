#!/usr/bin/env python3
"""emulate_wgmma.py - CPU emulation (numpy) of the index math of the wgmma GEMM kernel
(problems/common/kernels/gemm_bf16_sm90_wgmma.cuh, gemm_wgmma_kernel<BN, kCluster>): the work-unit
scheduler (persistent grid, grouped rasterization, K splits), the wgmma m64nNk16 accumulator layout
(PTX ISA: warp w of a warpgroup owns rows 16 w .. 16 w + 15; register 4 j + e of lane (g = lane / 4,
q = lane % 4) is row g + 8 (e >= 2), column 8 j + 2 q + e % 2), TMA's zero fill past M, N and K, and the
two epilogues v3 adds: the direct store for tile widths 128 / 192 / 256 and the cluster split-K
reduction through distributed shared memory (slab pair p of thread j at p * 256 + j, rank r summing
pairs [r * share, (r + 1) * share) over all ranks in rank order), and the pair-multicast schedule (clusters
of 2 over pair units, B stages assembled from the two ranks' multicast halves, the padded tile row past
M loading the last real one); and the v4 mid-M kernel (gemm_bf16_sm90_midm.cuh, gemm_midm_kernel<NT>):
midm_plan (token tile, K splits, no empty split), the swapped operands (weight band of 128 rows as the
wgmma M side, NT tokens as its N side, zero past N, M and K), the transposed direct store and the
transposed cluster reduction; v6's cases (128 x 192 clusters, odd M past 128, SF_GEMM_WG_CL_RT pairs per
DSMEM round trip). Every output must be written exactly once and equal A . B^T. It does not
model timing, barriers or the hardware's descriptor decoding.

    python3 tools/gemm_dev/emulate_wgmma.py     # exit status 1 on a mismatch
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sm90_model import d_frag_blocks, wg_raster  # noqa: E402

BM, BK, GROUP_M = 128, 64, 8


def reg_map(bn):
    """row[c][tid][i], col[c][tid][i] inside a 128 x bn tile of accumulator register i of consumer c, thread tid."""
    row, col = d_frag_blocks(2, bn)
    return np.array(row, dtype=np.int64), np.array(col, dtype=np.int64)


def tile_of(t, tiles_m, tiles_n):
    """the kernel's grouped rasterization: tile t -> (tm, tn)"""
    return wg_raster(t, tiles_m, tiles_n, GROUP_M)


def box(X, r0, rows):
    """TMA box of rows [r0, r0 + rows) of X, zero past its last row"""
    out = np.zeros((rows, X.shape[1]))
    r = X[r0:min(r0 + rows, X.shape[0])]
    if r.shape[0] > 0:
        out[:r.shape[0]] = r
    return out


TAIL_MAX_M = 512  # SF_GEMM_TAILROWS_MAX_M


def a_rows(am, M, bm=BM):
    """wg_a_rows (SF_GEMM_TAILROWS): the A rows the stage of token tile row am loads: bm, or the last row's real ones
    where M <= SF_GEMM_TAILROWS_MAX_M"""
    return M - am * bm if M <= TAIL_MAX_M and am == (M - 1) // bm else bm


def partial_tile(A, B, tm, tn, bn, kb0, kb1, pair=False, bm=BM, tail=None, mutate=None, acct=None):
    """128 x bn product of the TMA boxes (zero past M, N, K) over K blocks [kb0, kb1); pair: the padded tile
    row past M loads the last real one, and B arrives as two halves (rank r: rows tn * bn + r * bn / 2 ..
    at stage offset r * bn / 2 rows). tail (SF_GEMM_TAILROWS, version 15; the value of the stale shared-memory rows,
    e.g. 1e6 or NaN): the tile row's A box is its a_rows real rows (the tail map when < bm), the stage rows past them
    keep `tail`; acct (a list) receives (expected, landed) stage bytes: the producer's expect_tx and the boxes' bytes.
    mutate: 'tail_every' (the tail map for every tile row), 'tx' (expect_tx of the whole stage with the short box)"""
    M, K = A.shape
    tiles_m_real = (M + bm - 1) // bm
    am = min(tm, tiles_m_real - 1) if pair else tm
    if tail is None:
        a = box(A, am * bm, bm)
    else:
        ar = a_rows(tiles_m_real - 1, M, bm) if mutate == 'tail_every' else a_rows(am, M, bm)
        a = np.full((bm, K), float(tail))
        a[:ar] = box(A, am * bm, ar)
        if acct is not None:
            stage = (bm + bn) * BK * 2
            acct.append((stage if mutate == 'tx' else stage - (bm - a_rows(am, M, bm)) * BK * 2, (ar + bn) * BK * 2))
    if pair:
        b = np.full((bn, K), np.nan)
        for r in range(2):
            b[r * (bn // 2):(r + 1) * (bn // 2)] = box(B, tn * bn + r * (bn // 2), bn // 2)
        assert not np.isnan(b).any(), "B stage not fully written by the two halves"
    else:
        b = box(B, tn * bn, bn)
    k0, k1 = kb0 * BK, min(kb1 * BK, K)
    return a[:, k0:k1] @ b[:, k0:k1].T


def run(A, B, bn, splits, cluster, sms=132, pair=False, rt=2, tail=None, mutate=None, acct=None, spread=False):
    """C as the kernel writes it (NaN where never written) and the per-output write count; pair: the
    pair-multicast mode with sms resident clusters of 2; rt: output pairs per DSMEM round trip of the cluster
    reduction (SF_GEMM_WG_CL_RT); splits > 1 without cluster: v2's global split-K (fp32 slabs in register order, the
    last unit of a tile summing them in split order; spread: the cooperative mode, each unit summing a 1 / splits
    share of the slab index space); tail, mutate, acct: partial_tile's (SF_GEMM_TAILROWS)"""
    M, K = A.shape
    N = B.shape[0]
    tiles_m_real = (M + BM - 1) // BM
    tiles_m, tiles_n = ((tiles_m_real + 1) // 2 if pair else tiles_m_real), (N + bn - 1) // bn
    if mutate == 'tiles_floor':  # a tile count rounded down: the partial last column of tiles never runs
        tiles_n = N // bn
    tiles, kbc = tiles_m * tiles_n, (K + BK - 1) // BK
    units, kb_per = tiles * splits, (kbc + splits - 1) // splits
    grid = units if cluster else (2 * min(units, sms) if pair else min(units, sms))
    row, col = reg_map(bn)
    nr = bn // 2
    C = np.full((M, N), np.nan)
    writes = np.zeros((M, N), dtype=np.int64)

    def store(r, n, v):
        if r < M and n < N:
            C[r, n] = v
            writes[r, n] += 1

    def tile(tm, tn, kb0, kb1, pr=False):
        return partial_tile(A, B, tm, tn, bn, kb0, kb1, pr, tail=tail, mutate=mutate, acct=acct)

    if not cluster and splits > 1:  # v2's global split-K: slabs part[u][i * 256 + j], reduced per tile
        assert not pair
        part = {}
        for u in range(units):  # every unit's slab (the schedule over CTAs does not change what a unit writes)
            t = u // splits
            kb0 = (u % splits) * kb_per
            kb1 = min(kb0 + kb_per, kbc)
            assert kb1 > kb0, "empty split"
            tm, tn = tile_of(t, tiles_m, tiles_n)
            d = tile(tm, tn, kb0, kb1)[row, col]  # [2][128][nr]
            part[u] = np.stack([d[c].T for c in range(2)], axis=1).reshape(nr, 256)  # slab[i][j], j = tid + 128 c
        for t in range(tiles):
            tm, tn = tile_of(t, tiles_m, tiles_n)
            ranges = []
            if spread:  # unit s2 of the tile sums slab rows [i0, i1): an even share, pairs (i, i + 1) one row
                share = ((nr + splits - 1) // splits + 1) & ~1
                ranges = [(s2 * share, min(s2 * share + share, nr)) for s2 in range(splits)]
            else:  # the last unit sums all of them
                ranges = [(0, nr)]
            for i0, i1 in ranges:
                for i in range(i0, i1):
                    v = sum(part[t * splits + s2][i] for s2 in range(splits))  # split order, per element
                    for j in range(256):
                        c, tid = j // 128, j % 128
                        warp, lane = tid >> 5, tid & 31
                        g, q = lane >> 2, lane & 3
                        j4, e = i >> 2, i & 3
                        r = tm * BM + c * 64 + warp * 16 + g + (8 if e >= 2 else 0)
                        n = tn * bn + j4 * 8 + q * 2 + (e & 1)
                        if r < M and n < N:  # wg_store_rows' and the spread sum's bounds
                            store(r, n, v[j])
        return C, writes
    if not cluster:
        for cta in range(grid):
            u_first, u_step, pr = (cta >> 1, grid >> 1, cta & 1) if pair else (cta, grid, 0)
            for u in range(u_first, units, u_step):
                t = u // splits
                kb0 = (u % splits) * kb_per
                kb1 = min(kb0 + kb_per, kbc)
                tm, tn = tile_of(t, tiles_m, tiles_n)
                if pair:
                    tm = 2 * tm + pr
                d = tile(tm, tn, kb0, kb1, pair)[row, col]  # regs [2][128][nr]
                for c in range(2):
                    for tid in range(128):
                        warp, lane = tid >> 5, tid & 31
                        g, q = lane >> 2, lane & 3
                        row0, col0 = tm * BM + c * 64 + warp * 16 + g, tn * bn + q * 2
                        for j in range(bn // 8):
                            n = col0 + j * 8
                            if n < N:
                                if row0 < M:
                                    store(row0, n, d[c, tid, 4 * j])
                                    store(row0, n + 1, d[c, tid, 4 * j + 1])
                                if row0 + 8 < M:
                                    store(row0 + 8, n, d[c, tid, 4 * j + 2])
                                    store(row0 + 8, n + 1, d[c, tid, 4 * j + 3])
        return C, writes
    assert 1 <= splits <= 8 and grid % splits == 0
    for cl in range(grid // splits):
        slabs = []  # per rank: the float2 slab [nr / 2 * 256][2]
        for rank in range(splits):
            u = cl * splits + rank  # blockIdx.x; the cluster rank is blockIdx.x % splits
            t = u // splits
            assert t == cl
            kb0 = (u % splits) * kb_per
            kb1 = min(kb0 + kb_per, kbc)
            assert kb1 > kb0, "empty split"
            tm, tn = tile_of(t, tiles_m, tiles_n)
            d = tile(tm, tn, kb0, kb1)[row, col]
            slab = np.full((nr // 2 * 256, 2), np.nan)
            put = np.zeros(nr // 2 * 256, dtype=bool)  # written positions (NaN may be a value: stale rows)
            for c in range(2):
                for tid in range(128):
                    j = tid + 128 * c
                    for p in range(nr // 2):
                        slab[p * 256 + j] = (d[c, tid, 2 * p], d[c, tid, 2 * p + 1])
                        put[p * 256 + j] = True
            assert put.all(), "slab position left unwritten"
            assert slab.nbytes // 2 <= 4 * BM * bn, "slab larger than 128 x bn fp32"
            slabs.append(slab)
        tm, tn = tile_of(cl, tiles_m, tiles_n)
        share = (nr // 2 + splits - 1) // splits
        for rank in range(splits):
            p0, p1 = rank * share, min(rank * share + share, nr // 2)
            for c in range(2):
                for tid in range(128):
                    j = tid + 128 * c
                    warp, lane = tid >> 5, tid & 31
                    g, q = lane >> 2, lane & 3
                    row_b, col_b = tm * BM + c * 64 + warp * 16 + g, tn * bn + q * 2
                    for p in range(p0, p1, rt):  # rt pairs per round trip, all but the first guarded
                        for h in range(rt):
                            ph = p + h
                            if ph >= p1:
                                continue
                            s0 = s1 = 0.0
                            for r2 in range(splits):
                                s0 += slabs[r2][ph * 256 + j][0]
                                s1 += slabs[r2][ph * 256 + j][1]
                            r, n = row_b + (8 if ph & 1 else 0), col_b + (ph >> 1) * 8
                            if r < M and n < N:
                                store(r, n, s0)
                                store(r, n + 1, s1)
    return C, writes


MIDM_ROWS, MIDM_MAX_SPLIT, MIDM_PAIRS_PER_TRIP = 128, 8, 4


def midm_plan(M, N, K, sms, pin=0, two_cta=0, max_clusters=None):
    """mirror of midm_plan in gemm_bf16_sm90_midm.cuh: (nt, cps, splits)"""
    nt = next(t for t in (32, 64, 96, 128, 192, 256) if M <= t)
    cps = 2 if two_cta and nt <= 96 else 1
    bands, kb = (N + MIDM_ROWS - 1) // MIDM_ROWS, (K + BK - 1) // BK
    return nt, cps, midm_splits(bands, kb, nt, cps, sms, pin, max_clusters)


def midm_splits(bands, kb, nt, cps, sms, pin=0, max_clusters=None):
    """mirror of midm_splits in gemm_bf16_sm90_midm.cuh"""
    s = pin if pin > 0 else cps * sms // bands
    if pin <= 0 and s > kb // 4:
        s = kb // 4
    s = max(1, min(s, MIDM_MAX_SPLIT))
    s = min(s, kb)
    while pin <= 0 and s > 1 and max_clusters and max_clusters(nt, cps, s) < bands:
        s -= 1
    while s > 1 and (kb + (kb + s - 1) // s - 1) // ((kb + s - 1) // s) != s:
        s -= 1
    return s


def midm_hb_nt(t, fit):
    """mirror of midm_hb_nt (version 16): the half-band token tile of t tokens"""
    if fit and 64 < t <= 192:
        return (t + 15) // 16 * 16
    return next(x for x in (64, 128, 192, 256) if t <= x)


def midm_plan_hb_fit(M, N, K, sms, pin=0, max_clusters=None, fit=0, tt_min_m=64, tt_small=0):
    """mirror of midm_plan_hb with its fit, tt_min_m and tt_small arguments (version 16, SF_GEMM_MIDM_FIT; version 24,
    SF_GEMM_MIDM_TT_SMALL: token tiles below 64 tokens; any K, as the candidates' rule): (nt, splits, ttiles)"""
    nt = midm_hb_nt(M, fit)
    splits = midm_splits((N + 63) // 64, (K + BK - 1) // BK, nt, 1, sms, pin, max_clusters)
    if fit == 2 and splits == 2 and M > tt_min_m:
        t = (M + 1) // 2
        return ((t + 15) // 16 * 16 if tt_small and t <= 64 else midm_hb_nt(t, 1)), 1, 2
    return nt, splits, 1


def midm_plan_hb(M, N, K, sms, pin=0, max_clusters=None):
    """mirror of midm_plan_hb (version 13, half bands): (nt, splits)"""
    return midm_plan_hb_fit(M, N, K, sms, pin, max_clusters)[:2]


def run_midm(A, B, nt, splits, cps=1, hb=False, mutate=None, xrows=False, stale=1e6, ttiles=1, acct=None):
    """C as gemm_midm_kernel<nt, cps, hb> writes it with `splits` K splits (NaN where never written), write counts.
    hb (version 13): 64-row bands, consumer c multiplies them by tokens [c nt / 2, (c + 1) nt / 2).
    mutate (hb only, must be caught): 'tok0' drops consumer 1's token offset in the stores; version 16: 'grp16' stores
    (and reduces) the accumulator groups of a 16-multiple width only (nt / 2 % 16 == 8 loses the last 8 tokens),
    'mlo' token tile 1 stores its tokens below nt too (tile 0's), 'row0' token tile 1 loads rows from nt instead of M - nt.
    xrows (SF_GEMM_MIDM_XROWS on half bands, SF_GEMM_TAILROWS otherwise): the activation box is M rows; the stage's
    rows M..nt - 1 hold stale values (`stale`: 1e6, or NaN), which must reach no stored output.
    ttiles (version 16t, hb, splits 1): token tile tt of a band loads the nt-row box at row0 = M - nt (tt 1) or 0 and
    stores tokens >= nt only when tt is 1. acct (a list) receives the producer's expect_tx and the bytes landed per stage."""
    M, K = A.shape
    N = B.shape[0]
    assert nt <= 256 and nt % 8 == 0 and (M <= nt if ttiles == 1 else (hb and splits == 1 and nt < M <= 2 * nt))
    rows = MIDM_ROWS // 2 if hb else MIDM_ROWS
    nc = nt // 2 if hb else nt  # tokens per consumer (its wgmma N)
    bands, kbc = (N + rows - 1) // rows, (K + BK - 1) // BK
    kb_per = (kbc + splits - 1) // splits
    rr, cc = reg_map(nc)  # rr: weight row in a 128-row tile (consumer c: 64 c ..), cc: token of the consumer
    nr = nc // 2
    ng = nc // 16 * 2 if mutate == 'grp16' else nc // 8  # the kernel's store groups j < kNC / 8 (pairs: 2 per group)
    C = np.full((M, N), np.nan)
    writes = np.zeros((M, N), dtype=np.int64)

    def store_v(m, n, v):  # the stores of index arrays m, n (each checked < M, < N by the caller)
        assert ((m < M) & (n < N)).all()
        C[m, n] = v
        np.add.at(writes, (m, n), 1)

    row0 = 0  # the token tile's first row (version 16t: M - nt for tile 1)
    mlo = 0  # the first token the tile stores (16t: nt for tile 1)

    def t0(c):
        return row0 + (c * (nt // 2) if hb and mutate != 'tok0' else 0)

    def store_ok(m):
        return (m < M) & (m >= mlo)

    for band, tt in [(b, t) for b in range(bands) for t in range(ttiles)]:  # blockIdx.x = band * ttiles + tt (16t)
        row0, mlo = (M - nt, nt if mutate != 'mlo' else 0) if tt else (0, 0)
        regs = []
        for rank in range(splits):  # blockIdx.x = band * splits + rank
            kb0 = rank * kb_per
            kb1 = min(kb0 + kb_per, kbc)
            assert kb1 > kb0, "empty split"
            # TMA boxes: weight rows [band * rows, +rows), token rows [0, nt), both zero past the end
            if ttiles > 1:  # 16t: an nt-row box at row0 (in bounds: nt < M), or past M with 'row0' (zero fill)
                Ax = box(A, (nt if mutate == 'row0' else M - nt) if tt else 0, nt)
                box_rows = nt  # the host's map: min(M, nt) rows
            else:
                Ax = np.vstack([A, np.full((nt - M, K), stale)]) if xrows else A
                box_rows = M if xrows else nt
            if acct is not None:  # kTxBytes (16t build: weight + min(M, NT) rows; XROWS: M rows) vs the boxes' bytes
                for _ in range(kb0, kb1):
                    # 'tx16': the version-13 kTxBytes (M rows); 'txnt': the pre-TAILROWS kTxBytes (NT rows, an M-row box)
                    tx_rows = M if mutate == 'tx16' else (nt if mutate == 'txnt' else min(M, nt))
                    acct.append((rows * BK * 2 + tx_rows * BK * 2 if (xrows or ttiles > 1) else (rows + nt) * BK * 2,
                                 rows * BK * 2 + box_rows * BK * 2))
            tile = partial_tile(B, Ax, band, 0, nt, kb0, kb1, bm=rows)
            if hb:  # both consumers read the same 64 rows; consumer c the token columns c nt / 2 ..
                regs.append(np.stack([tile[rr[c] - 64 * c, cc[c] + c * (nt // 2)] for c in range(2)]))
            else:
                regs.append(tile[rr, cc])
        # thread tid (rows) x accumulator register i (columns) of a consumer, vectorized: warp / lane / g / q per thread
        tid = np.arange(128)[:, None]
        warp, lane = tid >> 5, tid & 31
        g, q = lane >> 2, lane & 3
        if splits == 1:
            d = regs[0]
            i = np.arange(4 * ng)[None, :]  # registers 4 j + e of the stored groups j < ng
            j, e = i >> 2, i & 3
            for c in range(2):
                n_b = band * rows + (0 if hb else c * 64) + warp * 16 + g
                n, m = np.broadcast_arrays(n_b + np.where(e >= 2, 8, 0), t0(c) + 8 * j + 2 * q + (e & 1))
                ok = (n < N) & store_ok(m)
                store_v(m[ok], n[ok], np.broadcast_to(d[c][:, :4 * ng], ok.shape)[ok])
            continue
        slabs = []
        for rank in range(splits):
            slab = np.full((nr // 2 * 256, 2), np.nan)
            put = np.zeros(nr // 2 * 256, dtype=bool)  # written positions (NaN may be a value: stale rows)
            p = np.arange(nr // 2)[None, :]
            for c in range(2):  # pair p of thread tid of consumer c: registers (2 p, 2 p + 1) at p * 256 + tid + 128 c
                idx = p * 256 + tid + 128 * c
                slab[idx] = regs[rank][c].reshape(128, nr // 2, 2)
                put[idx] = True
            assert put.all(), "slab position left unwritten"
            stage = (rows + nt) * BK * 2
            assert slab.shape[0] * 8 <= (200 * 1024 // cps // stage) * stage, "slab larger than the stage ring"
            slabs.append(slab)
        npairs = ng * 2  # kNR / 2
        share = (npairs + splits - 1) // splits
        trip = MIDM_PAIRS_PER_TRIP if cps == 1 else 2
        for rank in range(splits):
            p0, p1 = rank * share, min(rank * share + share, npairs)
            # the kernel's trips of `trip` pairs from p0, each pair guarded by ph < p1: exactly the pairs [p0, p1)
            ph = np.array([p + h for p in range(p0, p1, trip) for h in range(trip) if p + h < p1], dtype=np.int64)[None, :]
            if ph.size == 0:
                continue
            for c in range(2):
                jj = tid + 128 * c
                s0 = slabs[0][ph * 256 + jj, 0].copy()  # summed over the ranks in rank order
                s1 = slabs[0][ph * 256 + jj, 1].copy()
                for r2 in range(1, splits):
                    s0 = s0 + slabs[r2][ph * 256 + jj, 0]
                    s1 = s1 + slabs[r2][ph * 256 + jj, 1]
                n_b = band * rows + (0 if hb else c * 64) + warp * 16 + g
                n, m = np.broadcast_arrays(n_b + np.where(ph & 1, 8, 0), t0(c) + (ph >> 1) * 8 + 2 * q)
                ok = (n < N) & (m < M)
                store_v(m[ok], n[ok], s0[ok])
                ok = (n < N) & (m + 1 < M)
                store_v(m[ok] + 1, n[ok], s1[ok])
    return C, writes


HB_NT = (64, 80, 96, 112, 128, 144, 160, 176, 192, 256)  # the half-band instances of an SF_GEMM_MIDM_FIT build
HB_NT_SMALL = (16, 32, 48)  # version 24 (SF_GEMM_MIDM_TT_SMALL): the narrow token tiles, launched only as two tiles


def hb_cfg_ok(nt, small=False):
    """MidmCfg<nt, 1, 1>'s static_asserts and limits (version 16): NT a multiple of 16 in [64, 256], consumer 1's token
    offset and both stage parts on the 1024-byte swizzle atom, the reduction slab (and v11's store stage) in the ring,
    the barriers in their 256 bytes, the dynamic shared memory <= 227 KB, accumulators <= the NT 256 case's 64;
    small (version 24, SF_GEMM_MIDM_TT_SMALL): NT from 16, the stage count capped at 16 (MidmCfg's kStages)"""
    w, x = 64 * BK * 2, nt * BK * 2
    stage = w + x
    stages = min(16, 200 * 1024 // stage)
    ring = stages * stage
    return (nt % 16 == 0 and (16 if small else 64) <= nt <= 256 and (nt // 2 * 128) % 1024 == 0 and w % 1024 == 0 and x % 1024 == 0 and
            nt * 512 <= ring and nt * 512 + nt * 128 <= ring and 16 * stages <= 256 and ring + 1280 <= 227 * 1024 and
            nt // 4 <= 64 and stages >= 4)


def hook_cases():
    """the token tiles the half-band hook (gemm_bf16_sm90_midm_host.cuh since session 16) launches and queries (an
    SF_GEMM_MIDM_FIT build: every case)"""
    import re
    src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "problems", "common", "kernels",
                            "gemm_bf16_sm90_midm_host.cuh")).read()
    launch = set(int(x) for x in re.findall(r"midm_launch_nt<(\d+), 1, 1>", src))
    query = set(int(x) for x in re.findall(r"midm_max_clusters_nt<(\d+), 1, 1>", src))
    return launch, query


def check_fit(rng):
    """version 16 (SF_GEMM_MIDM_FIT 1 / 2, GEMM_NOTES_MID_M2.md "Version 16"): the exact-fit half-band plan and the stores
    at odd M (every instantiated token tile, unsplit and split K; FIT 2's two token tiles), stale stage rows (1e6, NaN)
    past M reaching no output, expect_tx = the bytes landed, the config limits of each instance, the plan only yielding
    instantiated tiles that the host's switches launch; mutations that must be caught. Returns the failure count."""
    bad = 0
    launch, query = hook_cases()
    if launch != set(HB_NT) | set(HB_NT_SMALL) or query != set(HB_NT):
        print("fit: the hook's cases launch %s query %s, expected %s (+ %s launched) FAILED" %
              (sorted(launch), sorted(query), HB_NT, HB_NT_SMALL))
        bad += 1
    for nt in HB_NT:
        if not hb_cfg_ok(nt):
            print("fit: MidmCfg<%d, 1, 1> violates a limit FAILED" % nt)
            bad += 1
    for nt in HB_NT_SMALL:
        if not hb_cfg_ok(nt, small=True) or hb_cfg_ok(nt):
            print("fit: MidmCfg<%d, 1, 1> (version 24) violates a limit, or passes without TT_SMALL FAILED" % nt)
            bad += 1
    if hb_cfg_ok(8, small=True) or hb_cfg_ok(40, small=True):  # consumer widths 4 / 20: no wgmma n, off the atom
        print("fit: config mutation NT 8 / 40 (version 24) NOT CAUGHT")
        bad += 1
    for nt in (72, 88, 264):  # a multiple of 8 only (consumer 1 off the swizzle atom), past 256: must be refused
        if hb_cfg_ok(nt):
            print("fit: config mutation NT %d NOT CAUGHT" % nt)
            bad += 1
    print("fit config: %d instances within the limits, 3 config mutations caught, max err 0" % len(HB_NT))
    # the plans: every M 17..256 on the Llama shapes (and a few odd ones) yields an instantiated tile that covers M
    for fit in (1, 2):
        for (N, K) in ((4096, 4096), (6144, 4096), (4096, 14336), (130, 520), (1000, 4104)):
            for M in range(17, 257):
                nt, splits, tt = midm_plan_hb_fit(M, N, K, 132, 0, None, fit)
                ok = nt in HB_NT and (M <= nt and (nt - M < 16 or M <= 64 or M > 192) if tt == 1 else
                                      (fit == 2 and splits == 1 and nt < M <= 2 * nt and ((M + 1) // 2 > nt - 16 or nt == 64)))
                if not ok:
                    print("fit plan %dx%d M=%d fit %d: nt %d splits %d ttiles %d FAILED" % (N, K, M, fit, nt, splits, tt))
                    bad += 1
    for (N, K, M, fit, want) in [(4096, 4096, 129, 1, (144, 2, 1)), (4096, 4096, 129, 2, (80, 1, 2)),
                                 (6144, 4096, 129, 1, (144, 1, 1)), (6144, 4096, 160, 2, (160, 1, 1)),
                                 (4096, 14336, 176, 1, (176, 2, 1)), (4096, 14336, 176, 2, (96, 1, 2)),
                                 (4096, 4096, 100, 1, (112, 2, 1)), (4096, 4096, 64, 2, (64, 2, 1)),
                                 (4096, 4096, 192, 1, (192, 2, 1)), (4096, 4096, 200, 1, (256, 2, 1))]:
        got = midm_plan_hb_fit(M, N, K, 132, 0, None, fit)
        if got != want:
            print("fit plan %dx%d M=%d fit %d: %s, expected %s FAILED" % (N, K, M, fit, got, want))
            bad += 1
    print("fit plans: M 17..256 x 5 shapes x fit 1 / 2 checked, max err 0")

    def one(M, N, K, nt, splits, tt, **kw):
        A = rng.standard_normal((M, K))
        B = rng.standard_normal((N, K))
        acct = []
        C, writes = run_midm(A, B, nt, splits, 1, hb=True, ttiles=tt, acct=acct, **kw)
        err = np.abs(C - A @ B.T).max()
        once = bool((writes == 1).all())
        tx = all(e == l for e, l in acct)
        return err, once, tx

    # FIT 1: one split and 2..5 (odd shares of pairs: NT 144 has 18 pairs, 9 per rank at 2 splits), every new tile,
    # N past a band edge (66, 70, 130), stale rows as 1e6 and (where `nan`) as NaN
    grp16 = set()  # the token tiles whose grp16 mutation ran (once each)
    for (M, N, K, pin, nan) in [(129, 66, 136, 1, 1), (131, 64, 200, 2, 0), (143, 70, 136, 3, 0), (144, 64, 72, 1, 0),
                                (145, 66, 136, 2, 0), (160, 64, 72, 1, 0), (175, 130, 200, 5, 0), (176, 64, 136, 2, 0),
                                (192, 66, 72, 1, 0), (65, 64, 264, 2, 1), (77, 66, 72, 1, 0), (97, 70, 200, 3, 0),
                                (112, 64, 72, 1, 0), (113, 66, 136, 2, 0), (89, 64, 72, 1, 0)]:
        nt, splits, tt = midm_plan_hb_fit(M, N, K, 132, pin, None, 1)
        for stale in ((1e6, np.nan) if nan else (1e6,)):
            err, once, tx = one(M, N, K, nt, splits, tt, xrows=True, stale=stale)
            print("fit1 M=%d N=%d K=%d NT=%d splits=%d stale %s max err %.2e, every output written once: %s, tx %s" %
                  (M, N, K, nt, splits, stale, err, once, tx))
            bad += not (err <= 1e-9 and once and tx)
            if M == nt:
                break
        if (nt // 2) % 16 == 8 and nt not in grp16:  # a consumer's last 8-token group (n = 40, 56, 72, 88) is stored
            grp16.add(nt)
            err, once, tx = one(M, N, K, nt, splits, tt, xrows=True, mutate='grp16')
            caught = not (err <= 1e-9 and once)
            print("fit1 mutation grp16 M=%d NT=%d splits=%d: %s" % (M, nt, splits, "caught" if caught else "NOT CAUGHT"))
            bad += not caught
        if M > nt // 2 and nan:
            err, once, tx = one(M, N, K, nt, splits, tt, xrows=True, mutate='tok0')
            caught = not (err <= 1e-9 and once)
            print("fit1 mutation tok0 M=%d NT=%d: %s" % (M, nt, "caught" if caught else "NOT CAUGHT"))
            bad += not caught
    # FIT 2: two token tiles (tile 1 at row M - nt, storing tokens >= nt), the whole K, odd M 65..256
    for (M, N, K, mutants) in [(65, 66, 136, 0), (77, 64, 72, 0), (129, 66, 136, 1), (143, 64, 72, 0), (145, 66, 72, 0),
                               (160, 64, 72, 0), (175, 66, 72, 1), (192, 64, 72, 0), (200, 66, 72, 0), (255, 64, 72, 0)]:
        nt = midm_hb_nt((M + 1) // 2, 1)
        err, once, tx = one(M, N, K, nt, 1, 2, xrows=True)
        print("fit2 M=%d N=%d K=%d NT=%d ttiles=2 max err %.2e, every output written once: %s, tx %s" %
              (M, N, K, nt, err, once, tx))
        bad += not (err <= 1e-9 and once and tx)
        for mut in (('mlo', 'row0', 'tx16') if mutants else ()):
            if (mut == 'mlo' and 2 * nt == M) or (mut == 'row0' and M - nt == nt):
                continue  # no overlap / the same rows: nothing to catch
            err, once, tx = one(M, N, K, nt, 1, 2, xrows=True, mutate=mut)
            caught = not (err <= 1e-9 and once and tx)
            print("fit2 mutation %s M=%d NT=%d: %s" % (mut, M, nt, "caught" if caught else "NOT CAUGHT"))
            bad += not caught
    return bad


WG_SMEM_MAX = 227 * 1024  # the H200's opt-in dynamic shared memory per block


def check_w96(rng):
    """Version 17 (SF_GEMM_V6_BN96, GEMM_NOTES_MID_M2.md): gemm_wgmma_kernel<96, kWgPersistent>, the v6 plan's 128 x 96
    persistent tiles. WgCfg<96>: B box 12 KB and the 28 KB stage on the 1 KB swizzle atom, 7 stages, the shared memory
    within the limit; then odd M past 128 (the SF_GEMM_TAILROWS box: stale stage rows as 1e6 and NaN), N not a multiple
    of 96, grids smaller than the tile count (the ring carried across tiles): every output written once and exact,
    expect_tx = the bytes landed per stage; mutation tiles_floor (the last partial column of tiles dropped) caught.
    Returns the failure count."""
    bad = 0
    b_bytes, stage = 96 * BK * 2, BM * BK * 2 + 96 * BK * 2
    stages = 200 * 1024 // stage
    smem = stages * stage + 1024 + 256
    ok = b_bytes % 1024 == 0 and stage % 1024 == 0 and stages == 7 and smem <= WG_SMEM_MAX and 96 % 8 == 0
    print("w96 WgCfg<96>: B %d B, stage %d B, %d stages, %d B of shared memory: %s" %
          (b_bytes, stage, stages, smem, "ok" if ok else "FAILED"))
    bad += not ok
    for (M, N, K, sms, tail) in [(200, 390, 136, 132, 1e6), (256, 576, 200, 132, None), (193, 200, 520, 3, np.nan),
                                 (129, 96, 72, 1, 1e6), (255, 290, 264, 5, np.nan), (333, 390, 136, 7, 1e6)]:
        A = rng.standard_normal((M, K))
        B = rng.standard_normal((N, K))
        acct = []
        C, writes = run(A, B, 96, 1, False, sms, tail=tail, acct=acct)
        err = np.abs(C - A @ B.T).max()
        once = bool((writes == 1).all())
        tx = all(e == l for e, l in acct)
        print("w96 M=%d N=%d K=%d grid<=%d tail=%s max err %.2e, every output written once: %s, expect_tx = landed: %s" %
              (M, N, K, sms, tail, err, once, tx))
        bad += not (err <= 1e-9 and once and tx)
    A = rng.standard_normal((200, 136))
    B = rng.standard_normal((390, 136))
    C, writes = run(A, B, 96, 1, False, 132, tail=1e6, mutate='tiles_floor')
    caught = not (np.abs(C - A @ B.T).max() <= 1e-9 and (writes == 1).all())
    print("w96 mutation tiles_floor: %s" % ("caught" if caught else "NOT CAUGHT"))
    bad += not caught
    return bad


def check_mw(rng):
    """Version 18 (SF_GEMM_MIDM_MW 1, GEMM_NOTES_MID_M2.md): where the weight has more 128-row bands than SMs and M is
    129..192, the mid-M path runs v4's plan unsplit on full bands: midm_plan gives (192, 1 CTA per SM, 1 split) for
    28672 x 4096 on 132 SMs at every such M; gemm_midm_kernel<192, 1> with the SF_GEMM_TAILROWS M-row box (stale stage
    rows M..191 as 1e6 or NaN), N not a multiple of 128, odd K: every output written once and exact, expect_tx = the
    bytes landed per stage; mutation txnt (kTxBytes of NT rows while the box lands M) caught. Returns the failure count."""
    bad = 0
    plans = {midm_plan(M, 28672, 4096, 132, two_cta=1) for M in range(129, 193)}
    ok = plans == {(192, 1, 1)}
    print("mw plans 28672x4096 M 129..192 (two_cta: bands > SMs): %s: %s" % (sorted(plans), "ok" if ok else "FAILED"))
    bad += not ok
    for (M, N, K, stale) in [(129, 390, 136, 1e6), (143, 200, 72, np.nan), (175, 130, 264, 1e6), (191, 256, 520, np.nan),
                             (192, 300, 136, np.nan)]:
        A = rng.standard_normal((M, K))
        B = rng.standard_normal((N, K))
        acct = []
        C, writes = run_midm(A, B, 192, 1, 1, xrows=True, stale=stale, acct=acct)
        err = np.abs(C - A @ B.T).max()
        once = bool((writes == 1).all())
        tx = all(e == l for e, l in acct)
        print("mw v4 NT 192 M=%d N=%d K=%d stale=%s max err %.2e, every output written once: %s, expect_tx = landed: %s" %
              (M, N, K, stale, err, once, tx))
        bad += not (err <= 1e-9 and once and tx)
    A = rng.standard_normal((143, 72))
    B = rng.standard_normal((200, 72))
    acct = []
    run_midm(A, B, 192, 1, 1, xrows=True, acct=acct, mutate='txnt')
    caught = not all(e == l for e, l in acct)
    print("mw mutation txnt: %s" % ("caught" if caught else "NOT CAUGHT"))
    bad += not caught
    return bad


def main():
    rng = np.random.default_rng()
    if "--mw" in sys.argv:  # version 18 only
        bad = check_mw(rng)
        print("emulate_wgmma --mw: %s" % ("FAILED" if bad else "ok"))
        return 1 if bad else 0
    bad = 0
    if "--fit" in sys.argv:  # version 16 only
        bad = check_fit(rng)
        print("emulate_wgmma --fit: %s" % ("FAILED" if bad else "ok"))
        return 1 if bad else 0
    if "--w96" in sys.argv:  # version 17 only
        bad = check_w96(rng)
        print("emulate_wgmma --w96: %s" % ("FAILED" if bad else "ok"))
        return 1 if bad else 0
    cases = [  # M, N, K, bn, splits, cluster, sms (pair cases: resident clusters of 2)
        (77, 200, 136, 128, 1, False, 3), (130, 390, 200, 192, 1, False, 4), (257, 514, 72, 256, 1, False, 5),
        (3, 256, 64, 256, 1, False, 132), (1000, 392, 128, 192, 1, False, 7),
        (128, 256, 1024, 256, 8, True, 132), (33, 260, 584, 128, 3, True, 132), (200, 130, 200, 128, 4, True, 132),
        (77, 512, 136, 256, 2, True, 132), (129, 386, 420, 256, 7, True, 132), (5, 136, 520, 128, 5, True, 132),
    ]
    pairs = [(300, 520, 136, 256, 1, False, 2), (1000, 400, 72, 192, 1, False, 3), (129, 200, 64, 192, 1, False, 5),
             (513, 260, 128, 256, 1, False, 1)]
    # v6 (GEMM_NOTES.md "Version 6"): 128 x 192 clusters, odd M past 128, and 1..8 pairs per DSMEM round trip
    v6 = [(333, 386, 200, 192, 2, True, 132, 4), (200, 194, 584, 192, 4, True, 132, 3), (511, 130, 136, 128, 2, True, 132, 8),
          (129, 514, 264, 256, 3, True, 132, 4), (77, 200, 424, 192, 7, True, 132, 1), (333, 390, 72, 192, 1, False, 3, 2)]
    for (M, N, K, bn, splits, cluster, sms, rt) in v6:
        A = rng.standard_normal((M, K))
        B = rng.standard_normal((N, K))
        C, writes = run(A, B, bn, splits, cluster, sms, False, rt)
        err = np.abs(C - A @ B.T).max()
        once = bool((writes == 1).all())
        print("wgmma M=%d N=%d K=%d BN=%d splits=%d %s rt=%d max err %.2e, every output written once: %s" %
              (M, N, K, bn, splits, "cluster" if cluster else "persistent", rt, err, once))
        bad += not (err <= 1e-9 and once)
    for (M, N, K, bn, splits, cluster, sms, pair) in [c + (False,) for c in cases] + [c + (True,) for c in pairs]:
        A = rng.standard_normal((M, K))
        B = rng.standard_normal((N, K))
        kbc = (K + BK - 1) // BK
        per = (kbc + splits - 1) // splits
        assert (kbc + per - 1) // per == splits, "case with an empty split"
        C, writes = run(A, B, bn, splits, cluster, sms, pair)
        err = np.abs(C - A @ B.T).max()  # NaN (never written) fails too
        once = bool((writes == 1).all())
        print("wgmma M=%d N=%d K=%d BN=%d splits=%d %s max err %.2e, every output written once: %s" %
              (M, N, K, bn, splits, "pair" if pair else ("cluster" if cluster else "persistent"), err, once))
        bad += not (err <= 1e-9 and once)
    # v4 mid M: (M, N, K, sms, pinned splits); odd M/N/K, every token tile, 1..8 splits, uneven K splits
    for (M, N, K, sms, pin, two) in [(17, 390, 200, 132, 0, 0), (33, 130, 584, 132, 0, 0), (77, 256, 1032, 8, 0, 0),
                                     (200, 136, 264, 132, 3, 0), (256, 128, 1024, 132, 0, 0), (5, 250, 72, 132, 1, 0),
                                     (96, 300, 520, 132, 5, 0), (129, 258, 4104, 132, 0, 0), (64, 126, 8, 132, 0, 0),
                                     (21, 260, 1096, 3, 0, 1), (90, 130, 2056, 132, 0, 1), (120, 200, 584, 132, 0, 1)]:
        nt, cps, splits = midm_plan(M, N, K, sms, pin, two)
        A = rng.standard_normal((M, K))
        B = rng.standard_normal((N, K))
        C, writes = run_midm(A, B, nt, splits, cps)
        err = np.abs(C - A @ B.T).max()
        once = bool((writes == 1).all())
        print("midm M=%d N=%d K=%d NT=%d CPS=%d splits=%d max err %.2e, every output written once: %s" %
              (M, N, K, nt, cps, splits, err, once))
        bad += not (err <= 1e-9 and once)
    # v13 half bands (GEMM_NOTES_MID_M.md "Version 13"): odd M / N / K, every token tile, unsplit and 2..8 splits
    for (M, N, K, sms, pin) in [(17, 200, 136, 132, 1), (33, 130, 584, 132, 0), (64, 96, 1032, 132, 0),
                                (77, 390, 264, 132, 3), (128, 256, 1024, 132, 2), (129, 66, 520, 132, 0),
                                (200, 126, 4104, 132, 0), (256, 64, 200, 132, 1), (5, 300, 2056, 132, 8)]:
        nt, splits = midm_plan_hb(M, N, K, sms, pin)
        A = rng.standard_normal((M, K))
        B = rng.standard_normal((N, K))
        C, writes = run_midm(A, B, nt, splits, 1, hb=True)
        err = np.abs(C - A @ B.T).max()
        once = bool((writes == 1).all())
        print("midm hb M=%d N=%d K=%d NT=%d splits=%d max err %.2e, every output written once: %s" %
              (M, N, K, nt, splits, err, once))
        bad += not (err <= 1e-9 and once)
        if M < nt:  # SF_GEMM_MIDM_XROWS: stale (1e6) stage rows past M reach no stored output
            C, writes = run_midm(A, B, nt, splits, 1, hb=True, xrows=True)
            err = np.abs(C - A @ B.T).max()
            print("midm hb xrows M=%d NT=%d max err %.2e, every output written once: %s" %
                  (M, nt, err, bool((writes == 1).all())))
            bad += not (err <= 1e-9 and (writes == 1).all())
        if M > nt // 2:  # consumer 1 holds real tokens: dropping its offset must be caught
            C, writes = run_midm(A, B, nt, splits, 1, hb=True, mutate='tok0')
            caught = not (np.abs(C - A @ B.T).max() <= 1e-9 and (writes == 1).all())
            print("midm hb mutation tok0 M=%d: %s" % (M, "caught" if caught else "NOT CAUGHT"))
            bad += not caught
    # v13 plans of the Llama shapes on 132 SMs (clusters of 2 assumed to fit): 4096 rows -> 64 bands x 2 splits
    for (N, K, M, want) in [(4096, 4096, 64, (64, 2)), (4096, 4096, 128, (128, 2)), (4096, 14336, 100, (128, 2)),
                            (6144, 4096, 128, (128, 1)), (4096, 4096, 32, (64, 2))]:
        got = midm_plan_hb(M, N, K, 132)
        if got != want:
            print("midm hb plan %dx%d M=%d: %s, expected %s FAILED" % (N, K, M, got, want))
            bad += 1
    # the plans of the four Llama shapes on 132 SMs (clusters assumed to fit), as GEMM_NOTES.md states them
    # (one CTA per SM; with SF_GEMM_MIDM_2CTA, token tiles <= 96 at two per SM and about twice the splits)
    want = {(6144, 4096): (2, 5), (4096, 4096): (4, 8), (28672, 4096): (1, 1), (4096, 14336): (4, 8)}
    for (N, K), (s_one, s_two) in want.items():
        for two in (0, 1):
            for M in (17, 32, 64, 77, 128, 200, 256):
                nt, cps, s = midm_plan(M, N, K, 132, 0, two)
                s_want = s_two if cps == 2 else s_one
                if s != s_want or nt < M or (nt > 32 and M <= nt // 2) or cps != (2 if two and M <= 96 else 1):
                    print("midm plan %dx%d M=%d 2cta=%d: nt %d cps %d splits %d, expected splits %d FAILED" %
                          (N, K, M, two, nt, cps, s, s_want))
                    bad += 1
    bad += check_fit(rng)  # version 16 (SF_GEMM_MIDM_FIT)
    bad += check_w96(rng)  # version 17 (SF_GEMM_V6_BN96)
    bad += check_mw(rng)  # version 18 (SF_GEMM_MIDM_MW)
    print("emulate_wgmma: %s" % ("FAILED" if bad else "ok"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
