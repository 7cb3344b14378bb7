#!/usr/bin/env python3
"""emulate_smallm_pf.py - CPU check of the L2 prefetch schedule of the small-M GEMM kernels (candidate
SF_GEMM_SM_PF = D, problems/common/kernels/gemm_bf16_sm90_smallm.cuh: gemm_smallm_kernel's single-buffer batch
loop, contiguous or interleaved K slices, and gemm_smallm16_kernel's), mirroring the kernels' loops warp by warp and
smallm_prefetch's lane -> address map (op 0: one 128-byte line per lane; op 1: one bulk prefetch per row).

A prefetch is a hint (no result depends on it), so what is checked is what the prefetch may not do and what it
must do: every prefetched address lies inside B (rows clamped to N - 1, bytes inside the row's first 2 K); the
ranges of one call cover exactly the U steps of its R rows (every byte of the batch, where the row stride is a
multiple of 128 bytes); each batch the warp loads after its first is prefetched exactly once, D batches before
its load, and no batch is prefetched that the warp does not load (no wasted DRAM bytes). Three mutations of the
rule must be caught.

    python3 tools/gemm_dev/emulate_smallm_pf.py     # exit status 1 on a failure
"""
import sys


def prefetch_ranges(n0, R, N, K, s, U, op, mutate=None):
    """smallm_prefetch<U, R>(B, n0, N, K, s, lane) over the warp's 32 lanes: (row, first byte, bytes) per request,
    bytes relative to the row's start (a line request covers the 128-byte line holding its address)."""
    out = []
    if op == 0:
        lpr = (U * 64 + 127) // 128
        for lane in range(32):
            for i in range(lane, R * lpr, 32):
                r = i % lpr if mutate == 'line' else i // lpr
                row = min(n0 + r, N - 1)
                o = s * 64 + (i % lpr) * 128
                a = row * 2 * K + o  # byte address relative to B (B itself 256-byte aligned)
                out.append((row, o, a - a % 128, 128))
    else:
        for lane in range(min(R, 32)):
            row = min(n0 + lane, N - 1)
            out.append((row, s * 64, row * 2 * K + s * 64, U * 64))
    return out


def smallm_schedule(K, U, D, RG=1, ilv=False, warps=8, mutate=None):
    """gemm_smallm_kernel (SF_GEMM_SM_PIPE 0): per warp the event list [('pf', s) | ('ld', s)] of its batch loop."""
    KS = warps // RG
    steps, full = (K + 31) // 32, K // 32
    ev = []
    for w in range(warps):
        ks = w // RG
        if ilv:
            stride, lim, st = KS * U, full // U * U, ks * U
        else:
            per = (steps + KS - 1) // KS
            s0 = ks * per
            rend = min(s0 + per, steps)
            stride, lim, st = U, min(rend, full), s0
        ev.append((w % RG, loop_events(st, stride, lim, U, D, mutate)))
    return ev


def smallm16_schedule(K, U, D, warps=8, mutate=None):
    """gemm_smallm16_kernel: per warp the event list of its batch loop (contiguous K slices, stride U)."""
    steps, full = (K + 31) // 32, K // 32
    per = (steps + warps - 1) // warps
    ev = []
    for w in range(warps):
        s0 = w * per
        lim = min(min(s0 + per, steps), full)
        ev.append((0, loop_events(s0, U, lim, U, D, mutate)))
    return ev


def loop_events(st, stride, lim, U, D, mutate):
    """The prologue and batch loop as the kernels write them (mutate: 'lim' drops the + U of the loop's range test,
    'pro' starts the prologue at d = 0)."""
    ev = []
    for d in range(0 if mutate == 'pro' else 1, D):
        if st + d * stride + U <= lim:
            ev.append(('pf', st + d * stride))
    while st + U <= lim:
        t = st + D * stride
        if (t <= lim) if mutate == 'lim' else (t + U <= lim):
            ev.append(('pf', t))
        ev.append(('ld', st))
        st += stride
    return ev


def check(kind, N, K, U, D, op, RG=1, ilv=False, mutate=None):
    """All rules on the first and the last block of the grid; returns a list of problems (empty: ok)."""
    probs = []
    R = 16 if kind == 'smallm16' else 8
    rows_per_block = 16 if kind == 'smallm16' else 8 * RG
    nblk = (N + rows_per_block - 1) // rows_per_block
    sched = smallm16_schedule(K, U, D, mutate=mutate) if kind == 'smallm16' else \
        smallm_schedule(K, U, D, RG, ilv, mutate=mutate)
    for blk in sorted({0, nblk - 1}):
        for w, (rg, ev) in enumerate(sched):
            n0 = blk * rows_per_block + rg * 8
            lds = [s for e, s in ev if e == 'ld']
            pfs = [s for e, s in ev if e == 'pf']
            if sorted(pfs) != sorted(lds[1:]) or len(set(pfs)) != len(pfs):
                probs.append("blk %d warp %d: prefetched %s, loaded %s" % (blk, w, pfs, lds))
            for i, (e, s) in enumerate(ev):
                if e != 'pf':
                    continue
                before = sum(1 for e2, _ in ev[:i] if e2 == 'ld')
                if s in lds and before != max(0, lds.index(s) - D):
                    probs.append("blk %d warp %d: batch %d prefetched after %d loads, not %d batches ahead" %
                                 (blk, w, s, before, D))
                cover = {}
                for row, o, a, n in prefetch_ranges(n0, R, N, K, s, U, op, mutate):
                    if not (0 <= row < N and 0 <= o and o + (U * 64 if op else 1) <= 2 * K and s + U <= K // 32):
                        probs.append("blk %d warp %d: prefetch row %d byte %d outside B" % (blk, w, row, o))
                    cover.setdefault(row, set()).update(range(a - row * 2 * K, a - row * 2 * K + n))
                if (2 * K) % 128 == 0 or op == 1:
                    for r in range(R):
                        row = min(n0 + r, N - 1)
                        miss = set(range(s * 64, (s + U) * 64)) - cover.get(row, set())
                        if miss:
                            probs.append("blk %d warp %d: batch %d row %d: %d bytes not prefetched" %
                                         (blk, w, s, row, len(miss)))
    return probs


def prefetch_next(blk, grid, nsm, bpsm, rows_per_block, rg8, N, K, s0, lim, op, mutate=None):
    """smallm_prefetch_next<bpsm> of one warp (SF_GEMM_SM_XPF): (row, first byte, byte address, bytes) per request,
    [] where the rule declines (no next block, too many generations, a generation over SF_GEMM_SM_XPF_MB)."""
    L = bpsm * nsm
    nxt = blk + L
    if lim <= s0 or nxt >= grid or grid > XPF_WAVES * L or L * rows_per_block * K * 2 > XPF_MB << 20:
        return []
    r0 = nxt * rows_per_block + (0 if mutate == 'xrow' else rg8)
    out = []
    if op == 0:
        lpr = ((lim - s0) * 64 + 127) // 128
        for lane in range(32):
            for i in range(lane, 8 * lpr, 32):
                row = min(r0 + i // lpr, N - 1)
                o = s0 * 64 + (i % lpr) * 128
                a = row * 2 * K + o
                out.append((row, o, a - a % 128, 128))
    else:
        for lane in range(8):
            row = min(r0 + lane, N - 1)
            out.append((row, s0 * 64, row * 2 * K + s0 * 64, (lim - s0) * 64))
    return out


XPF_WAVES, XPF_MB = 4, 24  # the header's defaults of SF_GEMM_SM_XPF_WAVES / _MB


def check_xpf(N, K, U, RG, nsm, op, mutate=None):
    """gemm_smallm_kernel with SF_GEMM_SM_XPF=1 (contiguous slices): every block's warps, at their first batch, prefetch
    exactly the whole-step bytes [64 s0, 64 lim) of the rows that the same warp of block b + L loads, inside B;
    returns (problems, number of blocks that prefetched)."""
    KS = 8 // RG
    steps, full = (K + 31) // 32, K // 32
    per = (steps + KS - 1) // KS
    grid = (N + 8 * RG - 1) // (8 * RG)
    probs, active = [], 0
    for blk in range(grid):
        did = False
        for w in range(8):
            rg, ks = w % RG, w // RG
            s0 = ks * per
            rend = min(s0 + per, steps)
            lim = min(rend, full)
            if s0 + U > lim:  # no whole batch: the loop (and its prefetch) never runs
                continue
            reqs = prefetch_next(blk, grid, nsm, 2, 8 * RG, rg * 8, N, K, s0, rend if mutate == 'xlim' else lim, op,
                                 mutate)
            if not reqs:
                continue
            did = True
            cover = {}
            for row, o, a, n in reqs:
                if not (0 <= row < N and 0 <= o and o + (n if op else 1) <= 2 * K):
                    probs.append("blk %d warp %d: prefetch row %d byte %d outside B" % (blk, w, row, o))
                cover.setdefault(row, set()).update(range(a - row * 2 * K, a - row * 2 * K + n))
            want = {min((blk + 2 * nsm) * 8 * RG + rg * 8 + g, N - 1) for g in range(8)}
            if set(cover) != want:
                probs.append("blk %d warp %d: prefetched rows %s, block %d's warp loads %s" %
                             (blk, w, sorted(cover), blk + 2 * nsm, sorted(want)))
            for row in want:
                got = cover.get(row, set())
                need = set(range(s0 * 64, lim * 64))
                if (2 * K) % 128 == 0 or op == 1:
                    if need - got:
                        probs.append("blk %d warp %d row %d: %d bytes not prefetched" % (blk, w, row, len(need - got)))
                if op == 1 and got - need:
                    probs.append("blk %d warp %d row %d: %d bytes past its whole steps" % (blk, w, row, len(got - need)))
        active += did
    return probs, active


def main():
    bad = 0
    cases = []
    # gemm_smallm_kernel: the Llama K (16 and 56 steps per warp), K tails, RG 1 / 2, interleaved slices, U 8 / 4 / 2
    for (N, K) in [(4096, 4096), (6144, 4096), (4096, 14336), (40, 4104), (34, 1288), (18, 136), (8, 8)]:
        for (U, RG, ilv) in [(8, 1, False), (8, 2, False), (4, 1, False), (2, 1, False), (8, 1, True)]:
            for D in (1, 2, 3):
                for op in (0, 1):
                    cases.append(('smallm', N, K, U, D, op, RG, ilv))
    # gemm_smallm16_kernel: U 4 (launched) and 2
    for (N, K) in [(4096, 4096), (4096, 14336), (18, 1288), (2, 8), (30, 4104)]:
        for U in (4, 2):
            for D in (1, 2, 3):
                for op in (0, 1):
                    cases.append(('smallm16', N, K, U, D, op, 1, False))
    nok = 0
    for c in cases:
        probs = check(*c)
        if probs:
            print("prefetch %s N=%d K=%d U=%d D=%d op=%d RG=%d ilv=%d FAILED: %s" % (c + (probs[0],)))
            bad += 1
        else:
            nok += 1
    print("prefetch schedules: %d cases ok max err 0" % nok if not bad else "prefetch schedules: %d FAILED" % bad)
    # mutations of the rule: each must be caught (a check that cannot fail is a defect)
    for mut, c in [('lim', ('smallm', 40, 4104, 8, 1, 0, 1, False)), ('pro', ('smallm', 4096, 4096, 8, 1, 0, 1, False)),
                   ('line', ('smallm16', 4096, 4096, 4, 1, 0, 1, False)), ('lim', ('smallm16', 30, 4104, 4, 2, 1, 1, False))]:
        caught = bool(check(*c, mutate=mut))
        print("prefetch mutation %s on %s N=%d K=%d: %s" % (mut, c[0], c[1], c[2], "caught" if caught else "NOT CAUGHT"))
        bad += not caught
    # the cross-block lookahead (SF_GEMM_SM_XPF=1): on 132 SMs it runs on 4096^2 and 6144 x 4096 (1.94 / 2.91 generations of
    # 17 MB), not on 28672 x 4096 (13.6 generations) nor 4096 x 14336 (60 MB a generation); K tails and RG 2 on small SM counts
    for (N, K, U, RG, nsm, op, want) in [(4096, 4096, 8, 1, 132, 0, 248), (4096, 4096, 8, 1, 132, 1, 248),
                                         (6144, 4096, 8, 1, 132, 0, 504), (28672, 4096, 8, 1, 132, 0, 0),
                                         (4096, 14336, 8, 1, 132, 1, 0), (104, 4104, 8, 1, 3, 0, 7), (100, 1288, 4, 2, 2, 1, 3),
                                         (34, 1032, 2, 1, 1, 0, 3)]:
        probs, active = check_xpf(N, K, U, RG, nsm, op)
        if probs or active != want:
            print("xpf N=%d K=%d U=%d RG=%d SMs %d op %d FAILED: %d blocks prefetched (want %d) %s" %
                  (N, K, U, RG, nsm, op, active, want, probs[:1]))
            bad += 1
        else:
            print("xpf N=%d K=%d U=%d RG=%d SMs %d op %d: %d blocks prefetch the next generation, max err 0" %
                  (N, K, U, RG, nsm, op, active))
    for mut, c in [('xrow', (100, 1288, 4, 2, 2, 1)), ('xlim', (104, 4104, 8, 1, 3, 1))]:
        caught = bool(check_xpf(*c, mutate=mut)[0])
        print("xpf mutation %s N=%d K=%d: %s" % (mut, c[0], c[1], "caught" if caught else "NOT CAUGHT"))
        bad += not caught
    print("emulate_smallm_pf: %s" % ("FAILED" if bad else "ok"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
