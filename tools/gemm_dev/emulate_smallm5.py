#!/usr/bin/env python3
"""emulate_smallm5.py - CPU emulation (numpy) of the v5 small-M GEMM kernel (gemm_smallm5_kernel in
problems/common/kernels/gemm_bf16_sm90_smallm_v5.cuh, -DSF_GEMM_SMALLM_V=2) and of its host plan
(sm5_plan; tiles of RB = 8 W G rows, W warps of G row groups: 32 .. 256), so that an index slip shows
up without a GPU. It replays, CTA by CTA and lane by lane:
the 2D TMA boxes as TMA writes them into a stage (128-byte swizzle: 16-byte chunk c of box row r at
chunk c ^ (r % 8); zero fill past N, M and K), the consumer lanes' 16-byte shared loads at the byte
addresses the kernel computes, v2's smallm_step (two mma.sync m16n8k16 per 32-wide K step, the PTX ISA
fragment layout, emulate_fragments.mma), the direct bf16-pair store (unsplit) or the fp32 slab and the
rank-share cluster reduction in rank order (split), and checks that every output is written exactly
once and equals A . B^T (float64). Apart from the numbers it models the ring's synchronization (ring_sim):
mbarrier phases and try_wait.parity over many ring wrap-arounds, the TMA refill landing late, and each
consumer load performed at a random moment up to its first use, under random interleavings, with the
release order the kernel is built with (SF_GEMM_SM5_RELEASE, read from the header); the first, racy
order (0) and flipped wait parities must be caught (GEMM_NOTES.md, "Version 5: the ring race").

    python3 tools/gemm_dev/emulate_smallm5.py     # exit status 1 on a mismatch
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from emulate_fragments import mma  # noqa: E402
from sm90_model import swz128  # noqa: E402

MAX_SPLIT = 8
CFGS = {32: (4, 1), 48: (6, 1), 64: (8, 1), 128: (8, 2), 192: (8, 3), 224: (7, 4), 256: (8, 4)}  # rb: (W, G)


def plan(N, K, sms, max_clusters=None, min_rb=32):
    """sm5_plan: (rb, splits) with the least rb * ceil(kb / s), tiles * s <= sms, no empty split,
    max_clusters(rb, s) >= tiles; ties to fewer splits, then smaller rb; (0, 0) when nothing fits."""
    kb = (K + 63) // 64
    best, best_work = (0, 0), None
    for s in range(1, min(MAX_SPLIT, kb) + 1):
        per = (kb + s - 1) // s
        if (kb + per - 1) // per != s:
            continue
        for rb in sorted(CFGS):
            tiles = (N + rb - 1) // rb
            if rb < min_rb or tiles * s > sms or (s > 1 and max_clusters and max_clusters(rb, s) < tiles):
                continue
            work = rb * per
            if best_work is None or work < best_work:
                best, best_work = (rb, s), work
    return best


def tma_box(X, col0, row0, box_rows, smem, base):
    """2D TMA of the box [box_rows][64] at (col0 = K element, row0 = row) of X into smem (a dict of byte
    offset of a 16-byte chunk -> 8 values), 128-byte swizzle, zero fill outside X."""
    R, K = X.shape
    for r in range(box_rows):
        for c in range(8):
            vals = []
            for e in range(8):
                row, col = row0 + r, col0 + 8 * c + e
                vals.append(X[row][col] if row < R and col < K else 0.0)
            smem[base + swz128(r, c)] = vals


def step(acc, av, bv, MH):
    """smallm_step<MH>: acc[t][lane][4] += two m16n8k16 (elements 0-3, then 4-7 of each 8-vector)."""
    for t in range((MH + 1) // 2):
        lo = av[2 * t]
        hi = av[2 * t + 1] if 2 * t + 1 < MH else [[0.0] * 8 for _ in range(32)]
        for half in range(2):
            o = 4 * half
            a = [[lo[l][o:o + 2], hi[l][o:o + 2], lo[l][o + 2:o + 4], hi[l][o + 2:o + 4]] for l in range(32)]
            b = [[bv[l][o:o + 2], bv[l][o + 2:o + 4]] for l in range(32)]
            mma(acc[t], a, b)


def run(A, B, rb, splits):
    """gemm_smallm5_kernel<W, G, MH> (rb = 8 W G) on grid tiles * splits; returns (C, writes per output)."""
    M, K = A.shape
    N = B.shape[0]
    MH = 1 if M <= 8 else 2
    MT = (MH + 1) // 2
    WARPS, kG = CFGS[rb]
    wbytes = rb * 128
    kb_count = (K + 63) // 64
    kb_per = (kb_count + splits - 1) // splits
    tiles = (N + rb - 1) // rb
    C = np.full((M, N), np.nan)
    writes = np.zeros((M, N), dtype=int)
    for tile in range(tiles):
        slabs = []
        for split in range(splits):
            kb0 = split * kb_per
            kb1 = min(kb0 + kb_per, kb_count)
            assert kb1 > kb0, "empty split"
            # acc[warp][i][j][t] = per-lane lists of 4
            acc = [[[[[[0.0] * 4 for _ in range(32)] for _ in range(MT)] for _ in range(2)] for _ in range(kG)]
                   for _ in range(WARPS)]
            for kb in range(kb0, kb1):
                smem = {}
                tma_box(B, kb * 64, tile * rb, rb, smem, 0)
                tma_box(A, kb * 64, 0, 8 * MH, smem, wbytes)
                for w in range(WARPS):
                    xa = [[[None] * 32 for _ in range(MH)] for _ in range(2)]
                    wv = [[[None] * 32 for _ in range(2)] for _ in range(kG)]
                    for lane in range(32):
                        g, q = lane >> 2, lane & 3
                        wrow, xrow = (w * 8 * kG + g) * 128, wbytes + g * 128
                        c0, c1 = (q ^ g) << 4, ((4 + q) ^ g) << 4
                        for h in range(MH):
                            xa[0][h][lane] = smem[xrow + h * 1024 + c0]
                            xa[1][h][lane] = smem[xrow + h * 1024 + c1]
                        for i in range(kG):
                            wv[i][0][lane] = smem[wrow + i * 1024 + c0]
                            wv[i][1][lane] = smem[wrow + i * 1024 + c1]
                    for i in range(kG):
                        for j in range(2):
                            step(acc[w][i][j], xa[j], wv[i][j], MH)
            slab = np.full((16 * MT * (rb // 2), 2), np.nan) if splits > 1 else None
            for w in range(WARPS):
                for lane in range(32):
                    g, q = lane >> 2, lane & 3
                    rloc0 = w * 8 * kG + 2 * q
                    for i in range(kG):
                        for t in range(MT):
                            s = [acc[w][i][0][t][lane][e] + acc[w][i][1][t][lane][e] for e in range(4)]
                            m, n = t * 16 + g, tile * rb + rloc0 + 8 * i
                            if splits == 1:
                                for mm, pair in ((m, s[0:2]), (m + 8, s[2:4])):
                                    if n < N and mm < M:
                                        C[mm, n:n + 2] = pair
                                        writes[mm, n:n + 2] += 1
                            else:
                                p = (rloc0 + 8 * i) >> 1
                                slab[m * (rb // 2) + p] = s[0:2]
                                slab[(m + 8) * (rb // 2) + p] = s[2:4]
            slabs.append(slab)
        if splits == 1:
            continue
        pairs = 16 * MT * (rb // 2)
        share = (pairs + splits - 1) // splits
        for rank in range(splits):
            for p in range(rank * share, min((rank + 1) * share, pairs)):  # threads p0 + tid, stride 256
                m, n = p // (rb // 2), tile * rb + 2 * (p % (rb // 2))
                if m >= M or n >= N:
                    continue
                s0 = s1 = 0.0
                for r in range(splits):  # rank order
                    s0 += slabs[r][p][0]
                    s1 += slabs[r][p][1]
                C[m, n:n + 2] = (s0, s1)
                writes[m, n:n + 2] += 1
    return C, writes


# ---- the ring protocol (mbarrier parity, wrap-around, release order) under random interleavings ----

class Mbar:
    """An mbarrier: `count` arrivals plus a transaction count complete a phase; `phase` counts the phases
    completed. try_wait.parity(p) is true when the current (incomplete) phase's parity differs from p,
    i.e. the last phase of parity p has completed (PTX ISA, mbarrier.test_wait / try_wait .parity)."""

    def __init__(self, count):
        self.count, self.pending, self.tx, self.phase = count, count, 0, 0

    def _check(self):
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.count

    def arrive(self, n=1, tx=0):
        self.tx += tx
        self.pending -= n
        assert self.pending >= 0, "more arrivals than the barrier's count in one phase"
        self._check()

    def complete_tx(self, b):
        self.tx -= b
        self._check()

    def try_wait_parity(self, p):
        return (self.phase & 1) != p


def ring_sim(stages, warps, nkb, release, rng, prod_parity_flip=0, cons_parity_flip=0):
    """One CTA of gemm_smallm5_kernel reduced to its synchronization: the producer (wait empty[s] with
    parity ph ^ 1 ^ prod_parity_flip, expect_tx, TMA refill that lands at a random later time) and
    `warps` consumer warps (wait full[s] with parity ph ^ cons_parity_flip, 16-byte loads, release) over
    nkb K blocks on a ring of `stages` slots, stepped in a random order. A consumer load is performed at
    a random moment between its issue and its first use (the mma); a TMA refill makes the slot's old
    contents unreadable from its issue on. release: SF_GEMM_SM5_RELEASE (0: arrive right after the loads,
    1 / 2: after the mma). Returns (bad reads, deadlocked)."""
    full = [Mbar(1) for _ in range(stages)]
    empty = [Mbar(warps * 32) for _ in range(stages)]
    slot = [None] * stages  # the K block a slot holds (None: being written)
    events = []  # pending asynchronous completions: callables
    bad = [0]

    def producer():
        for it in range(nkb):
            s, ph = it % stages, (it // stages) & 1
            while not empty[s].try_wait_parity(ph ^ 1 ^ prod_parity_flip):
                yield True
            full[s].arrive(1, tx=1)  # expect_tx then the copies
            slot[s] = None

            def land(s=s, kb=it):
                slot[s] = kb
                full[s].complete_tx(1)
            events.append(land)
            yield

    def consumer():
        for it in range(nkb):
            s, ph = it % stages, (it // stages) & 1
            while not full[s].try_wait_parity(ph ^ cons_parity_flip):
                yield True
            loads = []
            for _ in range(2):  # two (or more) loads in flight, each performed on its own
                box = {"done": False}

                def perform(box=box, s=s, kb=it):
                    if not box["done"]:
                        box["done"] = True
                        bad[0] += slot[s] != kb
                loads.append(perform)
                events.append(perform)
            yield
            if release == 0:
                empty[s].arrive(32)
                yield
            for perform in loads:  # the mma: every loaded register is needed now
                perform()
            yield
            if release != 0:
                empty[s].arrive(32)
                yield

    agents = [producer()] + [consumer() for _ in range(warps)]
    spins = 0  # consecutive steps in which every agent only spun and nothing was pending
    while agents or events:
        n = len(agents) + len(events)
        k = int(rng.integers(n))
        if k < len(agents):
            try:
                spun = next(agents[k])
            except StopIteration:
                agents.pop(k)
                spun = None
        else:
            events.pop(k - len(agents))()
            spun = None
        spins = spins + 1 if spun and not events else 0
        if spins > 200 * (warps + 1):
            return bad[0], True
    return bad[0], False


def ring_checks(rng, release):
    """ring_sim on the ring shapes of the measured plans (stages, consumer warps; 64 K blocks = K 4096)
    and on short rings; returns (bad reads, deadlocks) summed over a few random interleavings each."""
    bad = dead = 0
    for stages, warps, nkb, trials in ((6, 7, 64, 6), (3, 7, 64, 6), (2, 4, 40, 10), (28, 6, 64, 2), (5, 8, 13, 10)):
        for _ in range(trials):
            b, d = ring_sim(stages, warps, nkb, release, rng)
            bad += b
            dead += d
    return bad, dead


def kernel_release():
    """The default SF_GEMM_SM5_RELEASE of the kernel header (how a consumer releases a ring stage)."""
    import re
    here = os.path.dirname(os.path.abspath(__file__))
    src = open(os.path.join(here, "..", "..", "problems", "common", "kernels", "gemm_bf16_sm90_smallm_v5.cuh")).read()
    return int(re.search(r"#define SF_GEMM_SM5_RELEASE (\d)", src).group(1))


def main():
    rng = np.random.default_rng()
    bad = 0
    # the Llama plans on 132 SMs (clusters of s fit floor(16 / s) per GPC of 16-18 SMs, 8 GPCs assumed)
    gpc = lambda rb, s: (16 // s) * 8  # noqa: E731
    want = {(4096, 4096): ((32, 1), (128, 4)), (6144, 4096): ((48, 1), (192, 4)), (28672, 4096): ((224, 1), (224, 1)),
            (4096, 14336): ((32, 1), (128, 4))}
    for (N, K), ps in want.items():
        for min_rb, p in zip((32, 128), ps):
            got = plan(N, K, 132, gpc, min_rb)
            print("plan %dx%d on 132 SMs, smallest tile %d: rb %d splits %d ctas %d" %
                  (N, K, min_rb, got[0], got[1], (N + got[0] - 1) // got[0] * got[1]))
            bad += got != p
    # invariants on random shapes: one wave, no empty split, rb and s in range
    for _ in range(3000):
        N, K, sms = int(rng.integers(2, 40000)) & ~1, 8 * int(rng.integers(1, 3000)), int(rng.integers(1, 200))
        rb, s = plan(N, K, sms)
        if rb == 0:
            bad += (N + 255) // 256 <= sms  # rb 256 unsplit always fits when tiles <= sms
            continue
        kb = (K + 63) // 64
        per = (kb + s - 1) // s
        ok = (N + rb - 1) // rb * s <= sms and (kb + per - 1) // per == s and 1 <= s <= MAX_SPLIT
        bad += not ok
    # kernel replays: odd M / N / K, unsplit and split (uneven K shares), both MH
    cases = [(1, 130, 200, 128, 1), (3, 258, 136, 128, 2), (7, 200, 520, 192, 3), (16, 256, 1000, 256, 4),
             (9, 140, 72, 128, 2), (8, 386, 328, 192, 1), (16, 130, 1352, 128, 8), (3, 62, 8, 128, 1),
             (12, 514, 520, 256, 5), (1, 128, 4104, 128, 7), (1, 70, 200, 32, 1), (16, 98, 136, 48, 1),
             (7, 100, 392, 48, 3), (9, 230, 264, 224, 1), (3, 222, 520, 224, 2), (13, 66, 328, 64, 2),
             (16, 34, 1000, 32, 4)]
    for (M, N, K, rb, s) in cases:
        kb = (K + 63) // 64
        per = (kb + s - 1) // s
        assert (kb + per - 1) // per == s, "case with an empty split"
        A = rng.standard_normal((M, K))
        B = rng.standard_normal((N, K))
        C, writes = run(A, B, rb, s)
        err = np.abs(C - A @ B.T).max()  # a NaN (never written) fails too
        once = bool((writes == 1).all())
        print("smallm5 M=%d N=%d K=%d rb=%d splits=%d max err %.2e, every output written once: %s" %
              (M, N, K, rb, s, err, once))
        bad += not (err <= 1e-9 and once)
    # the ring protocol: the kernel's release order must be clean; the racy order and wrong parities caught
    rel = kernel_release()
    rb_, dead = ring_checks(rng, rel)
    print("ring protocol, release order %d (the kernel's): %d stale reads, %d deadlocks" % (rel, rb_, dead))
    bad += rb_ != 0 or dead != 0
    rb0, dead0 = ring_checks(rng, 0)
    print("ring protocol, release order 0 (the first, racy one): %d stale reads (must be > 0)" % rb0)
    bad += rb0 == 0
    for flip in ((1, 0), (0, 1)):
        fb, fd = ring_sim(6, 7, 64, rel, rng, *flip)
        print("ring protocol, producer/consumer parity flipped %s: %d stale reads, deadlock %s (must be caught)" %
              (flip, fb, fd))
        bad += fb == 0 and not fd
    print("emulate_smallm5: %s" % ("FAILED" if bad else "ok"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
