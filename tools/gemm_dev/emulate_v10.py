#!/usr/bin/env python3
"""emulate_v10.py - CPU emulation (numpy) of the version-10 GEMM kernel's epilogue
(problems/common/kernels/gemm_bf16_sm90_v10.cuh, gemm_v10_kernel<BN>; GEMM_NOTES_LARGE_M.md "Version 10"):
the persistent schedule (CTA b takes tiles b, b + G, ... through wg_raster over 8 tile rows), each consumer
thread's m64nBNk16 accumulators (the wgmma D fragment layout), the kernel's shared-memory writes of each
64 x 64 chunk (byte (16 warp + g) 128 + ((jj ^ g) << 4) + 4 q, and + 8 rows), the TMA store's reading of
the 128-byte-swizzled box [64][64] at (column tn BN + 64 ch, row tm 128 + 64 c) clipped at M and N, and the
double (BN 256, 128) or single (BN 192) buffering: the issuing thread's cp.async.bulk.wait_group.read
kBufs - 1 before a chunk's writes, the TMA reading a committed chunk as LATE as the waits allow (the
adversarial order: a buffer overwritten before its store read it shows as a wrong output). Every output must
be written exactly once and equal A . B^T (M, N edges, N % 8 == 0 as the host requires, 1 .. many tiles per
CTA, all three widths); mutations (a wait that leaves kBufs groups reading, no XOR swizzle in the writes,
the other consumer's rows) must each be caught: the checker can fail. The K loop and ring protocol are the
default kernel's, unchanged (emulate_wgmma.py).

    python3 tools/gemm_dev/emulate_v10.py [--quick]   # exit status 1 on a mismatch
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sm90_model import d_frag, swz128, wg_raster  # noqa: E402
from emulate_wgmma import partial_tile  # noqa: E402

BM, GROUP_M = 128, 8


def bufs(bn):
    """V10Cfg<BN>::kBufs"""
    return 1 if bn == 192 else 2


def smem_bytes(bn):
    """V10Cfg<BN>::kSmemBytes with WgCfg<BN>'s ring (as many 128 x 64 + BN x 64 stages as fit in 200 KB)"""
    stage = BM * 64 * 2 + bn * 64 * 2
    stages = (200 * 1024) // stage
    return stages * stage + 2 * bufs(bn) * 64 * 64 * 2 + 1024 + 256


def chunk_index(bn, ch, mut):
    """the kernel's st.shared of chunk ch: for every (tid, accumulator i) of the chunk, the element index
    (byte / 2) of the 8 KB buffer it is written to; -1 for accumulators of other chunks"""
    tid = np.arange(128)[:, None]
    i = np.arange(bn // 2)[None, :]
    warp, lane = tid >> 5, tid & 31
    g, q = lane >> 2, lane & 3
    j, e = i >> 2, i & 3
    jj = j - 8 * ch
    sw = jj if mut == "noswizzle" else jj ^ g
    byte = (16 * warp + g) * 128 + 4 * q + (sw << 4) + np.where(e >= 2, 8 * 128, 0) + 2 * (e & 1)
    return np.where((jj >= 0) & (jj < 8), byte // 2, -1)


def chunk_writes(d, idx):
    """the buffer after all 128 threads wrote their chunk elements (each element written exactly once)"""
    sel = idx >= 0
    flat = idx[sel]
    assert len(np.unique(flat)) == flat.size == 64 * 64, "the chunk's writes are not a permutation of the buffer"
    buf = np.full(64 * 64, np.nan)
    buf[flat] = d[sel]
    return buf


_R, _COL = np.meshgrid(np.arange(64), np.arange(64), indexing="ij")
_SRC = (swz128(_R, _COL >> 3) + 2 * (_COL & 7)) // 2  # element (row, col) of the 128B-swizzled [64][64] bf16 box


def tma_store(C, writes, buf, col0, row0, M, N):
    """cp.async.bulk.tensor store of box [64 rows][64 cols] from a 128B-swizzled buffer, clipped at M and N"""
    nr, nc = min(64, M - row0), min(64, N - col0)
    if nr <= 0 or nc <= 0:
        return
    C[row0:row0 + nr, col0:col0 + nc] = buf[_SRC[:nr, :nc]]
    writes[row0:row0 + nr, col0:col0 + nc] += 1


def run(A, B, bn, grid, mut=None, tail=None, acct=None):
    """gemm_v10_kernel<bn> on grid CTAs: (C, writes per output). tail (SF_GEMM_TAILROWS, version 15): the last token
    tile's A box is its real rows, the stage rows past them hold `tail` (stale: 1e6, NaN); mut may also be
    emulate_wgmma.partial_tile's 'tail_every' / 'tx'; acct receives the stages' (expected, landed) bytes"""
    M, N = A.shape[0], B.shape[0]
    tiles_m, tiles_n = -(-M // BM), -(-N // bn)
    C = np.full((M, N), np.nan)
    writes = np.zeros((M, N), dtype=int)
    nb = bufs(bn)
    wait_n = nb if mut == "wait" else nb - 1
    rmap, cmap = d_frag(bn)
    idx = [chunk_index(bn, ch, mut) for ch in range(bn // 64)]
    for b in range(grid):
        for c in range(2):  # the two consumers: each its own buffers, issuing thread and bulk groups
            smem = [np.full(64 * 64, np.nan) for _ in range(nb)]
            pending = []  # committed stores not yet read: (buffer, col0, row0), oldest first
            e = 0
            for t in range(b, tiles_m * tiles_n, grid):
                tm, tn = wg_raster(t, tiles_m, tiles_n, GROUP_M)
                # the accumulators: the consumer's 64 rows x bn columns of A . B^T (zero past M / N, as TMA fills; with
                # tail the last tile row's stage rows past M stale), the K loop's (emulate_wgmma.partial_tile)
                h = 1 - c if mut == "rows" else c
                kbc = -(-A.shape[1] // 64)
                full = partial_tile(A, B, tm, tn, bn, 0, kbc, tail=tail, mutate=mut,
                                    acct=acct if c == 0 else None)
                blk = full[64 * h:64 * h + 64]
                d = blk[rmap, cmap]
                for ch in range(bn // 64):
                    slot = e % nb
                    while len(pending) > wait_n:  # wait_group.read wait_n: the oldest groups finish reading now
                        s, c0, rr = pending.pop(0)
                        tma_store(C, writes, smem[s], c0, rr, M, N)
                    w = chunk_writes(d, idx[ch])
                    smem[slot] = w  # a pending store of this slot would now read the new data (caught as a mismatch)
                    pending.append((slot, tn * bn + 64 * ch, tm * BM + 64 * c))
                    e += 1
            while pending:  # cp.async.bulk.wait_group 0 before exit
                s, c0, rr = pending.pop(0)
                tma_store(C, writes, smem[s], c0, rr, M, N)
    return C, writes


def check(M, N, K, bn, grid, rng, mut=None):
    A = rng.integers(-3, 4, size=(M, K)).astype(np.float64)
    B = rng.integers(-3, 4, size=(N, K)).astype(np.float64)
    C, writes = run(A, B, bn, grid, mut)
    ref = A @ B.T
    ok = bool((writes == 1).all() and np.array_equal(C, ref))
    err = float(np.nanmax(np.abs(C - ref))) if np.isfinite(C).any() else float("inf")
    return ok, err, int(writes.min()), int(writes.max())


def main():
    quick = "--quick" in sys.argv
    rng = np.random.default_rng(10)
    fails = 0
    for bn in (256, 192, 128):
        assert smem_bytes(bn) <= 227 * 1024, (bn, smem_bytes(bn))
    cases = [(200, 264, 24, 256, 1), (1000, 520, 40, 256, 3), (129, 8, 8, 192, 1), (300, 392, 16, 192, 2),
             (257, 136, 24, 128, 2), (640, 384, 16, 128, 5), (130, 520, 8, 256, 2),
             (520, 1032, 8, 128, 2)]
    if not quick:
        cases += [(1000, 1032, 24, 192, 4), (1100, 776, 16, 256, 7), (513, 1288, 16, 128, 11)]
    for M, N, K, bn, grid in cases:
        tiles = -(-M // BM) * -(-N // bn)
        ok, err, wmin, wmax = check(M, N, K, bn, min(grid, tiles), rng)
        print(f"v10 BN {bn} M {M} N {N} K {K} grid {min(grid, tiles)} ({tiles} tiles): writes {wmin}..{wmax}, max err {err:g}"
              + ("" if ok else "  FAIL"))
        fails += not ok
    # mutations: each must be caught on a case with several chunks per buffer
    for mut, bn in (("wait", 256), ("wait", 192), ("noswizzle", 256), ("rows", 128)):
        ok, _, _, _ = check(300, 264, 16, bn, 2, rng, mut)
        print(f"mutation {mut} (BN {bn}): {'caught' if not ok else 'NOT CAUGHT'}")
        fails += ok
    print(f"{fails} failures")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
