#!/usr/bin/env python3
"""emulate_midm_tp.py - CPU emulation (numpy) of the version-14 mid-M candidate, "token pairs"
(problems/common/kernels/gemm_bf16_sm90_midm_tp.cuh, gemm_midm_tp_kernel<128> and midm_tp_take; -DSF_GEMM_MIDM_TP=1,
GEMM_NOTES_MID_M.md "Version 14"), in three parts.

1. Index math, CTA by CTA: grid 2 x ceil(N / 64) in clusters of 2, rank r = blockIdx % 2, half band blockIdx / 2; the
   weight stage of each CTA assembled from the two ranks' multicast halves (rank r: 32 rows from hb * 64 + 32 r, or
   the last 32-row block holding real rows when that half is wholly past N, at byte 4096 r of every CTA in its mask),
   its own activation half (token rows r * 64 .., zero past M and K), the full barrier's bytes against its expect_tx,
   the empty barrier's releasing CTAs against the CTAs its producer writes into, the 1024-byte swizzle-atom alignment
   of every sub-tile, the two consumers' wgmma m64n32k16 D layout (sm90_model.d_frag) and the transposed, bounds-checked
   store. Odd M 65..128, N not a multiple of 64 (a half wholly past N, N < 64), K tails: every output stored once and
   exact; the same with SF_GEMM_MIDM_TP_KC=1 (the consumers split each stage's k16 steps, m64n64 each, and sum through
   the slab). Eight mutations, each must be caught: rank 1's token offset wrong, the multicast halves swapped, the
   multicast to the own CTA only, no clamp of a half wholly past N, the release sent to the own barrier instead of the
   partner's, consumer 1's token offset dropped; KC: the slab written at the own slot, both consumers on k16 steps 0-1;
   with SF_GEMM_MIDM_XROWS=1 (rank 1's box its M - 64 real rows, stale rows past them as 1e6) exact too, and its
   expect_tx of a whole half with the short box caught (nine mutations).
2. The host rule midm_tp_take on the Llama shapes (132 SMs): N 4096 at M 65..128 (128 CTAs), not 6144 / 28672 (192 /
   896 CTAs), not M <= 64 or > 128, not with fewer resident clusters than half bands.
3. The ring protocol over ALL interleavings (emulate_mcast.explore, version 8's checker, with version 14's
   differences: the first ring round's arrive.expect_tx and own activation load issued first, without an empty wait
   (before the cluster barrier), their weight halves after; the exit barrier split, each agent arriving after its last
   release and storing before the wait; SF_GEMM_MIDM_TP_PRE=1's first round loading both halves into the own CTA).
   One unit per CTA, 1..5 K blocks, 2 stages (the ring wraps from 3 blocks on). Mutations: the pre-issue not clamped to the ring, the exit arrive
   before the last release, the local-only release count, the full barrier expecting only the own bytes.

    python3 tools/gemm_dev/emulate_midm_tp.py [--quick]   # exit status 1 on a mismatch
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sm90_model import d_frag  # noqa: E402
from emulate_mcast import explore  # noqa: E402

BK, ROWS, NT = 64, 64, 128
W_BYTES, W_HALF, X_BYTES = ROWS * BK * 2, ROWS * BK, NT // 2 * BK * 2
STAGE_BYTES = W_BYTES + X_BYTES


def midm_tp_take(M, N, sms, resident):
    """mirror of midm_tp_take (gemm_bf16_sm90_midm_tp.cuh)"""
    hbands = (N + ROWS - 1) // ROWS
    return 64 < M <= 128 and 2 * hbands <= sms and (resident < 0 or resident >= hbands)


def box(X, r0, n, kpad):
    """a TMA box of n rows from row r0 over all K (padded to kpad): zero past the rows and K"""
    out = np.zeros((n, kpad))
    if r0 < X.shape[0]:
        r = X[r0:min(r0 + n, X.shape[0])]
        out[:r.shape[0], :X.shape[1]] = r
    return out


def run_tp(A, B, mutate=None, kc=False, xrows=False):
    """gemm_midm_tp_kernel<128>, CTA by CTA: returns (C, writes, problems). kc (SF_GEMM_MIDM_TP_KC=1): consumer c takes
    k16 steps 2c, 2c + 1 of every stage for all 64 tokens (m64n64 D), then the K halves are summed through the slab
    x[owner][i][tid] as the kernel does it (mutations 'kc_owner': the slab written at the own owner's slot;
    'kc_k': both consumers take k16 steps 0, 1). xrows (SF_GEMM_MIDM_XROWS=1): rank 1's box is its M - 64 real rows, its
    expect_tx counts those bytes, the stage rows past them hold stale values (1e6 here); mutation 'xrows_tx': the expect
    of the whole 64-row half with the short box."""
    M, K = A.shape
    N = B.shape[0]
    hbands = (N + ROWS - 1) // ROWS
    kpad = -(-K // BK) * BK
    rows, cols = d_frag(NT // 4)
    rows64, cols64 = d_frag(NT // 2)
    kk = (np.arange(kpad) % BK) // 16  # the k16 step of each K column within its stage
    C = np.full((M, N), np.nan)
    writes = np.zeros((M, N), dtype=int)
    problems = []
    for hb in range(hbands):
        cta = []
        for r in (0, 1):
            wrow = hb * ROWS + r * (ROWS // 2)
            if mutate != 'clamp':
                wrow = min(wrow, (N - 1) // (ROWS // 2) * (ROWS // 2))
            mask = 3 if mutate != 'mask' else 1 << r
            peer = r ^ 1 if mutate != 'peer' else r
            cta.append(dict(wrow=wrow, mask=mask, peer=peer))
            if wrow >= N:
                problems.append("half band %d rank %d: weight box wholly past N (row %d)" % (hb, r, wrow))
        # the ring's accounting: bytes on each full barrier per stage, releases on each empty barrier
        xr = [NT // 2, M - NT // 2 if xrows else NT // 2]  # activation rows each rank's box loads
        land = [xr[0] * BK * 2, xr[1] * BK * 2]
        expect = [W_BYTES + (X_BYTES if mutate == 'xrows_tx' else xr[r] * BK * 2) for r in (0, 1)]
        arrive = [set(), set()]
        for r, c in enumerate(cta):
            for d in (0, 1):
                if c['mask'] >> d & 1:
                    land[d] += W_HALF
            arrive[r].add(r)          # lane 0 of each consumer warp: the own barrier
            arrive[c['peer']].add(r)  # lane 1: the partner's
        for r, c in enumerate(cta):
            dests = {d for d in (0, 1) if c['mask'] >> d & 1}
            if land[r] != expect[r]:
                problems.append("half band %d rank %d: %d bytes land per stage, expect_tx %d" % (hb, r, land[r], expect[r]))
            if arrive[r] != dests or 8 * len(arrive[r]) != 16:
                problems.append("half band %d rank %d: releases from %s (init count 16), producer writes %s" %
                                (hb, r, sorted(arrive[r]), sorted(dests)))
        # each CTA's weight stage (64 rows x K) from the multicast halves; rows never written stay NaN
        ws = [np.full((ROWS, kpad), np.nan) for _ in (0, 1)]
        for p, c in enumerate(cta):
            off = (p if mutate != 'half' else 1 - p) * W_HALF
            assert off % 1024 == 0, "a weight half off its 1024-byte swizzle atom"
            src = box(B, c['wrow'], ROWS // 2, kpad)
            for d in (0, 1):
                if c['mask'] >> d & 1:
                    ws[d][off // 128:off // 128 + ROWS // 2] = src
        for r in (0, 1):
            t_half = r * (NT // 2) if mutate != 'tok' else r * (NT // 4)
            x = box(A, t_half, NT // 2, kpad)  # the own activation half: [64 tokens][K]
            x[xr[r]:] = 1e6 if xrows else x[xr[r]:]  # XROWS: stale stage rows past the short box
            w = np.nan_to_num(ws[r], nan=1e30)  # a weight row never landed poisons its outputs
            if kc:  # each consumer: all 64 tokens over its k16 steps, then the exchange through the slab
                dk = []
                for c in (0, 1):
                    steps = (2 * c, 2 * c + 1) if mutate != 'kc_k' else (0, 1)
                    km = np.isin(kk, steps)
                    dk.append((w[:, km] @ x[:, km].T)[rows64, cols64])  # [tid][32]
                slab = np.full((2, 16, 128), np.nan)
                for c in (0, 1):
                    o = 1 - c if mutate != 'kc_owner' else c
                    slab[o] = (dk[c][:, 16:] if c == 0 else dk[c][:, :16]).T
                for c in (0, 1):
                    d = (dk[c][:, :16] if c == 0 else dk[c][:, 16:]) + slab[c].T  # [tid][16]: m64n32's layout
                    n, m = hb * ROWS + rows, t_half + c * (NT // 4) + cols
                    ok = (n < N) & (m < M)
                    C[m[ok], n[ok]] = d[ok]
                    np.add.at(writes, (m[ok], n[ok]), 1)
                continue
            for c in (0, 1):
                xo = c * (NT // 4) * 128
                assert (W_BYTES + xo) % 1024 == 0 and STAGE_BYTES % 1024 == 0, "a sub-tile off its swizzle atom"
                P = w @ x[c * (NT // 4):(c + 1) * (NT // 4)].T  # [weight row][token] of consumer c
                d = P[rows, cols]  # d[tid][i]
                t0 = t_half + (c * (NT // 4) if mutate != 'cons' else 0)
                n, m = hb * ROWS + rows, t0 + cols
                ok = (n < N) & (m < M)
                C[m[ok], n[ok]] = d[ok]
                np.add.at(writes, (m[ok], n[ok]), 1)
    return C, writes, problems


def check_index(quick):
    rng = np.random.default_rng()
    bad, n = 0, 0
    # odd M 65..127, N not a multiple of 64 (160: the last half band's rank-1 half wholly past N, clamped; 33 and 2:
    # fewer rows than a half band), K tails (200, 72, 8), a long K (1032)
    cases = [(65, 130, 200), (77, 226, 584), (100, 98, 72), (127, 64, 1032), (128, 256, 136), (101, 160, 264),
             (128, 33, 8), (66, 2, 64), (96, 4096 // 16 + 2, 520)]
    if not quick:
        cases += [(int(rng.integers(65, 129)), 2 * int(rng.integers(1, 400)), 8 * int(rng.integers(1, 80))) for _ in range(6)]
    for kc, xrows in ((False, False), (True, False), (False, True), (True, True)):
        for M, N, K in cases if not xrows else cases[:5]:
            A = rng.standard_normal((M, K))
            B = rng.standard_normal((N, K))
            C, writes, probs = run_tp(A, B, kc=kc, xrows=xrows)
            err = np.abs(C - A @ B.T).max()  # NaN (never written) fails
            once = bool((writes == 1).all())
            ok = err <= 1e-9 and once and not probs
            n += 1
            bad += not ok
            print("%s midm_tp%s%s M=%d N=%d K=%d max err %.2e, every output stored once: %s%s" %
                  ("ok  " if ok else "FAIL", " kc" if kc else "", " xrows" if xrows else "", M, N, K, err, once,
                   "; " + "; ".join(probs[:2]) if probs else ""))
    for mut, (M, N, K) in [('tok', (100, 130, 136)), ('half', (77, 128, 72)), ('mask', (128, 64, 64)),
                           ('clamp', (101, 160, 136)), ('peer', (65, 64, 64)), ('cons', (127, 98, 200)),
                           ('kc_owner', (128, 64, 128)), ('kc_k', (100, 64, 200)), ('xrows_tx', (100, 64, 136))]:
        A = rng.standard_normal((M, K))
        B = rng.standard_normal((N, K))
        C, writes, probs = run_tp(A, B, mutate=mut, kc=mut.startswith('kc'), xrows=mut.startswith('xrows'))
        caught = bool(probs) or not (np.abs(C - A @ B.T).max() <= 1e-9 and (writes == 1).all())
        n += 1
        bad += not caught
        print("%s midm_tp mutation %s M=%d N=%d K=%d: %s (max err 0)" % ("ok  " if caught else "FAIL", mut, M, N, K,
                                                                      "caught" if caught else "NOT CAUGHT"))
    # the host rule on the Llama shapes, 132 SMs; 66 clusters of 2 resident unless said
    for (N, M, res, want) in [(4096, 65, 66, True), (4096, 100, 66, True), (4096, 128, 66, True), (4096, 64, 66, False),
                              (4096, 129, 66, False), (6144, 128, 66, False), (28672, 100, 66, False), (4096, 128, 63, False),
                              (4100, 128, 66, True), (4160, 128, 66, True), (4224, 128, 66, True), (4288, 128, 66, False)]:
        got = midm_tp_take(M, N, 132, res)
        n += 1
        bad += got != want
        print("%s midm_tp_take N=%d M=%d resident %d: %s (want %s) max err %s" %
              ("ok  " if got == want else "FAIL", N, M, res, got, want, "0" if got == want else "FAILED"))
    return bad, n


def check_protocol(quick):
    bad, n, states = 0, 0, 0
    # (K blocks, stages, consumer agents per CTA, pre_whole); pre = stages (the kernel's npre = min(blocks, stages))
    # (3 stages with 3 K blocks alone is 0.66 M states, minutes: the wrap of the ring is covered at 2 stages)
    cases = [(1, 2, 1, False), (2, 2, 1, False), (3, 2, 1, False), (4, 2, 1, False), (2, 2, 2, False), (3, 2, 1, True)]
    if not quick:
        cases += [(5, 2, 1, False), (4, 2, 1, True), (2, 2, 2, True)]
    for kb, st, wgs, whole in cases:
        errs, ns = explore(1, kb, st, wgs=wgs, pre=st, split_exit=True, pre_whole=whole)
        states += ns
        n += 1
        if errs:
            bad += 1
            print("FAIL tp protocol kb=%d stages=%d wgs=%d pre_whole=%s: %s" % (kb, st, wgs, whole, "; ".join(errs)))
    print("%s tp protocol: %d cases, %d states, max err 0 (no deadlock, stale read, overwrite, landing out of phase, "
          "arrive on an exited CTA)" % ("ok  " if bad == 0 else "FAIL", len(cases), states))
    for mut, (kb, st) in (("pre_unclamped", (3, 2)), ("arrive_early", (2, 2)), ("local_only", (3, 2)), ("expect_own", (1, 2))):
        errs, _ = explore(1, kb, st, mut=mut, pre=st, split_exit=True)
        n += 1
        if errs:
            print("ok   tp mutation %s caught: %s (max err 0)" % (mut, errs[0][:110]))
        else:
            bad += 1
            print("FAIL tp mutation %s NOT caught (kb %d, stages %d)" % (mut, kb, st))
    return bad, n


def main():
    quick = "--quick" in sys.argv[1:]
    b1, n1 = check_index(quick)
    b2, n2 = check_protocol(quick)
    print("emulate_midm_tp: %d checks, %d failed" % (n1 + n2, b1 + b2))
    return 1 if b1 + b2 else 0


if __name__ == "__main__":
    sys.exit(main())
