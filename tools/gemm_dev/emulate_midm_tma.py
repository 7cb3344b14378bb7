#!/usr/bin/env python3
"""emulate_midm_tma.py - CPU emulation (numpy) of the version-11 candidate epilogue of the v4 swap-AB mid-M kernel
(problems/common/kernels/gemm_bf16_sm90_midm.cuh with -DSF_GEMM_MIDM_TMA=1; GEMM_NOTES_MID_M.md "Version 11"):
the host rule midm_tma_rows (box rows R: NT unsplit, 4 x an even share of the NT / 4 output pairs in a cluster,
else the register stores), each consumer's transposed st.shared.b16 of its outputs into a [R][64] bf16 stage at
the kernel's byte addresses (128-byte swizzle by token row), the stage's place in the CTA's shared memory (the ring
start unsplit; after the reduction slab in a cluster, 1024-aligned, inside the ring) and one TMA store per consumer
of the box (64 columns x R tokens) at (band * 128 + 64 c, 4 p0), read back through the hardware's swizzle (16-byte
group XOR address bits 7..9) and clipped at M and N. Accumulators and the slab come from emulate_wgmma.py's model
of the same kernel. The cluster ranks reduce in descending rank order, each writing its stage right after its
reads, so a stage that overlaps a slab pair another rank still reads corrupts that read. Every output must be
written exactly once and equal A . B^T. Mutations that must be caught: no swizzle on the stage writes, the
stage row not rebased to the share (lr = token), odd shares allowed by the host rule, the cluster stage at the
ring start (over the slab). Not modelled: timing, the bulk-group wait, the named barrier.

    python3 tools/gemm_dev/emulate_midm_tma.py [--quick]   # exit status 1 on a mismatch
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from emulate_wgmma import BK, MIDM_ROWS, midm_plan, partial_tile, reg_map, run_midm  # noqa: E402
from sm90_model import swz128  # noqa: E402


def midm_tma_rows(nt, s, mut=None):
    """mirror of midm_tma_rows in gemm_bf16_sm90_midm.cuh"""
    share = (nt // 4 + s - 1) // s
    if s == 1:
        return nt
    return 4 * share if (share % 2 == 0 or mut == "oddshare") else 0


def stage_addr(chunk, lr, cc, mut=None):
    """midm_stage's byte address of (stage row lr, consumer column cc)"""
    grp = (cc >> 3) if mut == "noswizzle" else ((cc >> 3) ^ (lr & 7))
    return chunk + lr * 128 + (grp << 4) + (cc & 7) * 2


def tma_store(smem, chunk, rows, col0, row0, M, N, store):
    """the TMA store of the [rows][64] box at (col0, row0) from chunk: 128B swizzle from the address bits"""
    assert chunk % 1024 == 0, "a 128B-swizzled TMA box needs a 1024-byte aligned stage"
    for r in range(rows):
        a_row = chunk + r * 128
        for cc in range(64):
            a = swz128(a_row >> 7, cc >> 3) + (cc & 7) * 2  # (a_row: a multiple of 128, as asserted)
            if row0 + r < M and col0 + cc < N:
                store(row0 + r, col0 + cc, smem.get(a, np.nan))


def run(A, B, nt, splits, cps=1, mut=None):
    """C as the v11 build writes it (NaN where never written), write counts, and whether the TMA path ran"""
    M, K = A.shape
    N = B.shape[0]
    rows = midm_tma_rows(nt, splits, mut) if N % 8 == 0 else 0
    if rows == 0:  # the host keeps the register stores (emulate_wgmma.py checks those)
        C, writes = run_midm(A, B, nt, splits, cps)
        return C, writes, False
    bands, kbc = (N + MIDM_ROWS - 1) // MIDM_ROWS, (K + BK - 1) // BK
    kb_per = (kbc + splits - 1) // splits
    row, col = reg_map(nt)
    nr = nt // 2
    stage_b = (MIDM_ROWS + nt) * BK * 2
    ring = (200 * 1024 // cps // stage_b) * stage_b
    C = np.full((M, N), np.nan)
    writes = np.zeros((M, N), dtype=np.int64)

    def store(m, n, v):
        C[m, n] = v
        writes[m, n] += 1

    for band in range(bands):
        regs = []
        for rank in range(splits):
            kb0 = rank * kb_per
            kb1 = min(kb0 + kb_per, kbc)
            assert kb1 > kb0, "empty split"
            regs.append(partial_tile(B, A, band, 0, nt, kb0, kb1, bm=MIDM_ROWS)[row, col])
        if splits == 1:
            smem = {}
            for c in range(2):
                chunk = c * nt * 128
                assert chunk + nt * 128 <= ring
                for tid in range(128):
                    warp, lane = tid >> 5, tid & 31
                    g, q = lane >> 2, lane & 3
                    for j in range(nt // 8):
                        for e in range(4):
                            lr = 8 * j + 2 * q + (e & 1)
                            smem[stage_addr(chunk, lr, 16 * warp + g + (8 if e >= 2 else 0), mut)] = regs[0][c, tid, 4 * j + e]
            for c in range(2):
                tma_store(smem, c * nt * 128, rows, band * MIDM_ROWS + 64 * c, 0, M, N, store)
            continue
        # cluster: each CTA's shared memory as {byte address: value}; the slab's float pair p of thread j at
        # (p * 256 + j) * 8 (first float) and + 4 (second)
        smem = []
        for rank in range(splits):
            d = {}
            for c in range(2):
                for tid in range(128):
                    for p in range(nr // 2):
                        a = (p * 256 + tid + 128 * c) * 8
                        d[a], d[a + 4] = regs[rank][c, tid, 2 * p], regs[rank][c, tid, 2 * p + 1]
            smem.append(d)
        share = (nr // 2 + splits - 1) // splits
        for rank in reversed(range(splits)):  # the last rank stages first: its stage may clobber slabs still read
            p0, p1 = rank * share, min(rank * share + share, nr // 2)
            staged = {}
            for c in range(2):
                chunk = (0 if mut == "overlap" else nt * 512) + c * (4 * share) * 128
                assert chunk + 4 * share * 128 <= ring, "stage past the ring"
                for tid in range(128):
                    j = tid + 128 * c
                    warp, lane = tid >> 5, tid & 31
                    g, q = lane >> 2, lane & 3
                    for ph in range(p0, p1):
                        s0 = sum(smem[r2].get((ph * 256 + j) * 8, np.nan) for r2 in range(splits))
                        s1 = sum(smem[r2].get((ph * 256 + j) * 8 + 4, np.nan) for r2 in range(splits))
                        m = (ph >> 1) * 8 + 2 * q
                        base_row = 0 if mut == "rowbase" else 4 * p0
                        cc = 16 * warp + g + (8 if ph & 1 else 0)
                        staged[stage_addr(chunk, m - base_row, cc, mut)] = s0
                        staged[stage_addr(chunk, m + 1 - base_row, cc, mut)] = s1
            for a in staged:  # 2-byte writes into this CTA's memory: a slab float they hit is garbage from now on
                if (a & ~3) in smem[rank]:
                    smem[rank][a & ~3] = np.nan
            if p0 < p1 and 4 * p0 < M:  # as the kernel: no box wholly past M
                for c in range(2):
                    chunk = (0 if mut == "overlap" else nt * 512) + c * (4 * share) * 128
                    tma_store(staged, chunk, rows, band * MIDM_ROWS + 64 * c, 4 * p0, M, N, store)
    return C, writes, True


def check(M, N, K, sms, pin, two, rng, mut=None):
    nt, cps, splits = midm_plan(M, N, K, sms, pin, two)
    A = rng.integers(-3, 4, size=(M, K)).astype(np.float64)
    B = rng.integers(-3, 4, size=(N, K)).astype(np.float64)
    try:
        C, writes, tma = run(A, B, nt, splits, cps, mut)
    except AssertionError as ex:  # a placement the kernel must not make (unaligned or past the ring)
        print(f"  assertion: {ex}")
        return False, float("inf"), nt, cps, splits, True
    ref = A @ B.T
    ok = bool((writes == 1).all() and np.array_equal(C, ref))
    err = float(np.nanmax(np.abs(C - ref))) if np.isfinite(C).any() else float("inf")
    return ok, err, nt, cps, splits, tma


def main():
    quick = "--quick" in sys.argv
    rng = np.random.default_rng(11)
    fails = 0
    # (M, N, K, sms, pinned splits, 2 CTAs per SM): unsplit, even shares 2..16, odd shares (register fallback),
    # N % 8 != 0 (fallback), M past a box of R rows, tokens >= M inside the last box
    cases = [(17, 392, 200, 132, 1, 0), (64, 256, 264, 132, 4, 0), (77, 264, 520, 132, 2, 0), (128, 136, 264, 132, 4, 0),
             (33, 256, 136, 132, 2, 1), (96, 200, 520, 132, 3, 0), (96, 200, 520, 132, 5, 0), (64, 130, 264, 132, 2, 0),
             (200, 136, 264, 132, 2, 0), (17, 128, 264, 132, 4, 0)]
    if not quick:
        cases += [(256, 264, 520, 132, 8, 0), (120, 384, 1032, 132, 0, 0), (21, 520, 1096, 3, 0, 1), (90, 136, 2056, 132, 0, 1)]
    ran_tma = 0
    for M, N, K, sms, pin, two in cases:
        ok, err, nt, cps, splits, tma = check(M, N, K, sms, pin, two, rng)
        ran_tma += tma
        print(f"midm v11 M {M} N {N} K {K} NT {nt} CPS {cps} splits {splits} {'TMA' if tma else 'register'} stores"
              f" (R {midm_tma_rows(nt, splits) if N % 8 == 0 else 0}): max err {err:g}" + ("" if ok else "  FAIL"))
        fails += not ok
    if ran_tma < 6:
        print(f"only {ran_tma} cases ran the TMA path  FAIL")
        fails += 1
    # the Llama shapes' default plans (132 SMs, SF_GEMM_MIDM_2CTA=1: two CTAs per SM only when the bands outnumber
    # the SMs) all take the TMA path: even shares, N % 8 == 0
    for N, K in ((4096, 4096), (6144, 4096), (28672, 4096), (4096, 14336)):
        two = int((N + MIDM_ROWS - 1) // MIDM_ROWS > 132)
        for M in (17, 32, 64, 77, 96, 128):
            nt, cps, s = midm_plan(M, N, K, 132, 0, two)
            if midm_tma_rows(nt, s) == 0:
                print(f"midm v11 plan {N}x{K} M {M} 2cta {two}: nt {nt} splits {s} keeps the register stores  FAIL")
                fails += 1
    for mut, case in (("noswizzle", (64, 256, 264, 132, 4, 0)), ("noswizzle", (77, 136, 264, 132, 1, 0)),
                      ("rowbase", (64, 256, 264, 132, 4, 0)), ("oddshare", (96, 200, 520, 132, 5, 0)),
                      ("overlap", (64, 256, 264, 132, 2, 0))):
        ok = check(*case, rng, mut)[0]
        print(f"mutation {mut} {case}: {'caught' if not ok else 'NOT CAUGHT'}")
        fails += ok
    print(f"{fails} failures")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
