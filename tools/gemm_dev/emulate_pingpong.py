#!/usr/bin/env python3
"""emulate_pingpong.py - CPU emulation (numpy) of the ping-pong GEMM kernel (problems/common/kernels/
gemm_bf16_sm90_pingpong.cuh, gemm_pingpong_kernel<WM>; GEMM_NOTES_LARGE_M.md "Version 7"), in two parts.

1. Index math: the persistent schedule (CTA b takes tiles b, b + G, ...; its local tile i goes to consumer
   warpgroup i % 2; grouped rasterization over 1024 rows of C), TMA's zero fill past M, N and K, the
   wgmma m64nNk16 accumulator layout of one warpgroup owning a whole WM x BN tile (WM = 128: two row
   blocks of m64n128, WM = 64: one m64n256) and the bounds-checked direct store. Every output must be
   written exactly once and equal A . B^T (odd M, N, K; 1..many tiles per CTA).
2. The synchronization protocol of one CTA, explored over ALL interleavings of its agents (depth-first
   search over the reachable states, memoized): the producer (wait empty[s] with parity ph ^ 1, issue
   the TMA pair), the TMA landings (any order, any time after the issue), and the two consumer
   warpgroups (the turn barrier bar.sync / bar.arrive, wait full[s], a wgmma batch that reads the stage
   until the wgmma wait that retires it -- the longest window the hardware can use --, wait<1>,
   release empty[prev] with 4 warp arrivals, the turn arrive when tile i + 1 exists, wait<0>, the
   last release, the store). mbarriers follow the PTX phase-parity rule (a wait on parity p passes once
   the phase of parity p has completed), named barriers count 128 threads per warpgroup arrival and
   complete at 256. Checked in every state: no deadlock (an agent can move until all are done), no
   named barrier completed by arrivals alone (a second arrive before the matching sync), every stage read
   holds the K block the reader expects and no TMA lands in a stage a batch still reads; at the end,
   every local tile stored once, by its owner, and no barrier left mid-phase. Tile counts per CTA 0..6,
   1..3 K blocks, 2..3 stages. The turn order alone is explored again with every warp an agent (4 per
   warpgroup, a warp may run ahead of its warpgroup's others): tiles issued in order, each barrier
   completed by the owner's warps in bar.sync and the other's in bar.arrive, no deadlock. Mutated
   protocols (the turn arrive always / on its own barrier / before the K loop is issued, a sync on the
   first tile, the cooperative kernel's empty count 8, no skip of the other's stages) must each be
   caught: the checker can fail.
In the ring model a warpgroup is one agent (its 4 warps' empty arrivals together: a barrier completes only
with all four either way). It does not model timing or descriptor decoding.

    python3 tools/gemm_dev/emulate_pingpong.py [--quick]   # exit status 1 on a mismatch
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sm90_model import box, d_frag_blocks  # noqa: E402  (the TMA boxes over all K blocks, zero filled)
from sm90_model import wg_raster as pp_tile  # noqa: E402  (the kernel's pp_tile is the shared raster)

BK = 64


def cfg(wm):
    """(BN, row blocks, accumulators per row block) of consumer tile height wm, as PpCfg<WM>"""
    bn = 128 if wm == 128 else 256
    return bn, wm // 64, bn // 2


def reg_rows_cols(wm, bn):
    """row[h, tid, i], col[h, tid, i] inside the wm x bn tile of accumulator d[h][i] of consumer thread tid"""
    _, mh, nr = cfg(wm)
    assert nr == bn // 2
    return d_frag_blocks(mh, bn)


def run_index(A, B, wm, sms):
    """gemm_pingpong_kernel<wm> on grid min(tiles, sms): returns (C, writes per output, tiles per CTA)"""
    M, K = A.shape
    N = B.shape[0]
    bn = cfg(wm)[0]
    tiles_m, tiles_n = -(-M // wm), -(-N // bn)
    tiles, kpad = tiles_m * tiles_n, -(-K // BK) * BK
    grid = min(tiles, sms)
    gm = 8 * 128 // wm
    C = np.full((M, N), np.nan)
    writes = np.zeros((M, N), dtype=np.int64)
    row, col = reg_rows_cols(wm, bn)
    per_cta = []
    for b in range(grid):
        local = list(range(b, tiles, grid))
        per_cta.append(len(local))
        for i, t in enumerate(local):
            owner = i % 2  # consumer warpgroup of local tile i (checked against the protocol model below)
            assert owner in (0, 1)
            tm, tn = pp_tile(t, tiles_m, tiles_n, gm)
            P = box(A, tm * wm, wm, kpad) @ box(B, tn * bn, bn, kpad).T  # the K loop, all blocks
            d = P[row, col]  # accumulator registers of the owner
            r, c = tm * wm + row, tn * bn + col
            ok = (r < M) & (c < N)  # the store's bounds checks (N even: a pair never straddles N)
            C[r[ok], c[ok]] = d[ok]
            np.add.at(writes, (r[ok], c[ok]), 1)
    return C, writes, per_cta


# ---- the synchronization protocol of one CTA, all interleavings ----


def programs(n, kbc, stages, mut):
    """instruction lists of the producer and consumers 0 / 1 for n local tiles of kbc K blocks each"""
    prod, cons = [], [[], []]
    it = 0
    for i in range(n):
        for kb in range(kbc):
            s, ph = it % stages, (it // stages) & 1
            prod += [("wait_empty", s, ph ^ 1), ("tma", s, (i, kb))]
            it += 1
    for c in (0, 1):
        it, p = 0, cons[c]
        for i in range(n):
            if i % 2 != c:
                if mut != "noskip":
                    it += kbc
                continue
            if i > 0 or mut == "sync_first":
                p.append(("bsync", c))
            prev = None
            for kb in range(kbc):
                s, ph = it % stages, (it // stages) & 1
                p += [("wait_full", s, ph), ("mma", s, (i, kb))]
                if kb > 0:
                    p += [("wait1",), ("arrive_empty", prev)]
                prev = s
                it += 1
            if i + 1 < n or mut == "arrive_always":
                p.append(("barrive", c if mut == "arrive_self" else 1 - c))
            p += [("wait0",), ("arrive_empty", prev), ("store", i)]
    return prod, cons


def explore(n, kbc, stages, mut=None, limit=400000):
    """All interleavings of one CTA's protocol; returns a list of error strings (empty: correct)."""
    prod, cons = programs(n, kbc, stages, mut)
    empty_count = 8 if mut == "empty8" else 4
    # state: (pc_p, pc0, pc1, full, empty, slots, pend, infl0, infl1, nb, wait0, wait1, stored)
    #   full / empty: per stage (completed phases, pending arrivals); slots: content per stage;
    #   pend: frozenset of landed-not-yet TMA (s, tag); infl: tuple of in-flight batches (s, tag);
    #   nb: named barrier counts (ids 0, 1 = consumers' turn barriers); wait: consumer blocked in bar.sync;
    #   stored: tuple of (i, c) stores
    z = tuple((0, 0) for _ in range(stages))
    start = (0, 0, 0, z, z, tuple([None] * stages), frozenset(), (), (), (0, 0), False, False, ())
    seen, stack, errors = {start}, [start], []

    def err(msg):
        if len(errors) < 5:
            errors.append(msg)

    def arrive(bars, s, k, count):
        done, cnt = bars[s]
        cnt += k
        if cnt >= count:
            done, cnt = done + 1, cnt - count
        return bars[:s] + ((done, cnt),) + bars[s + 1:]

    def passes(bars, s, parity):
        return (bars[s][0] & 1) != parity

    while stack:
        st = stack.pop()
        pcp, pc0, pc1, full, empty, slots, pend, inf0, inf1, nb, w0, w1, stored = st
        succ = []
        # producer
        if pcp < len(prod):
            op = prod[pcp]
            if op[0] == "wait_empty":
                if passes(empty, op[1], op[2]):
                    succ.append((pcp + 1, pc0, pc1, full, empty, slots, pend, inf0, inf1, nb, w0, w1, stored))
            else:  # tma: expect_tx arrival now, the bytes land later
                succ.append((pcp + 1, pc0, pc1, full, empty, slots, pend | {(op[1], op[2])}, inf0, inf1, nb, w0, w1,
                             stored))
        # TMA landings, any order
        for (s, tag) in pend:
            if any(x[0] == s for x in inf0 + inf1):
                err("n=%d kb=%d st=%d: TMA of %s lands in stage %d while a wgmma batch reads it" % (n, kbc, stages,
                                                                                                    tag, s))
                continue
            succ.append((pcp, pc0, pc1, arrive(full, s, 1, 1), empty, slots[:s] + (tag,) + slots[s + 1:],
                         pend - {(s, tag)}, inf0, inf1, nb, w0, w1, stored))
        # consumers
        for c in (0, 1):
            pc, inf, w = (pc0, inf0, w0) if c == 0 else (pc1, inf1, w1)
            p = cons[c]
            if pc >= len(p) or w:
                continue
            op = p[pc]
            nfull, nempty, ninf, nnb, nw, nstored, npc = full, empty, inf, nb, w, stored, pc + 1
            other_w = w1 if c == 0 else w0
            if op[0] == "wait_full":
                if not passes(full, op[1], op[2]):
                    continue
            elif op[0] == "mma":
                if slots[op[1]] != op[2]:
                    err("n=%d kb=%d st=%d: consumer %d reads stage %d holding %s, expects %s" %
                        (n, kbc, stages, c, op[1], slots[op[1]], op[2]))
                    continue
                ninf = inf + ((op[1], op[2]),)
            elif op[0] == "wait1":
                ninf = inf[-1:]
            elif op[0] == "wait0":
                ninf = ()
            elif op[0] == "arrive_empty":
                nempty = arrive(empty, op[1], 4, empty_count)  # lane 0 of each of the 4 warps
            elif op[0] == "store":
                nstored = stored + ((op[1], c),)
            elif op[0] in ("bsync", "barrive"):
                b = op[1]
                cnt = nb[b] + 128
                waiter = op[0] == "bsync"
                if cnt == 256:  # completes: releases the waiting warpgroup (there must be one)
                    blocked = (waiter and True) or (other_w and (b == (1 - c)))
                    if not blocked:
                        err("n=%d kb=%d st=%d: named barrier %d completed by arrives alone" % (n, kbc, stages, b))
                        continue
                    cnt = 0
                    if not waiter:  # the other consumer, blocked in bar.sync on b, goes on
                        other_w = False
                    nw = False
                elif cnt > 256:
                    err("n=%d kb=%d st=%d: named barrier %d over-arrived" % (n, kbc, stages, b))
                    continue
                else:
                    nw = waiter  # bar.sync blocks; bar.arrive goes on
                nnb = nb[:b] + (cnt,) + nb[b + 1:]
            if c == 0:
                succ.append((pcp, npc, pc1, nfull, nempty, slots, pend, ninf, inf1, nnb, nw, other_w, nstored))
            else:
                succ.append((pcp, pc0, npc, nfull, nempty, slots, pend, inf0, ninf, nnb, other_w, nw, nstored))
        done = pcp == len(prod) and pc0 == len(cons[0]) and pc1 == len(cons[1]) and not pend and not w0 and not w1
        if done:
            if sorted(stored) != [(i, i % 2) for i in range(n)]:
                err("n=%d kb=%d st=%d: stores %s" % (n, kbc, stages, sorted(stored)))
            if nb != (0, 0) or any(x[1] for x in full + empty):
                err("n=%d kb=%d st=%d: a barrier left mid-phase at exit (%s)" % (n, kbc, stages, nb))
        elif not succ and not errors:
            err("n=%d kb=%d st=%d: DEADLOCK at producer %d/%d, consumers %d/%d %d/%d (blocked %s %s)" %
                (n, kbc, stages, pcp, len(prod), pc0, len(cons[0]), pc1, len(cons[1]), w0, w1))
        for x in succ:
            if x not in seen:
                seen.add(x)
                stack.append(x)
        if len(seen) > limit:
            err("state limit")
            break
    return errors, len(seen)


def explore_warps(n, W, mut=None):
    """The turn order alone with every warp an agent (W warps per consumer warpgroup, each arrival 1 of the
    barrier's 2 W): all interleavings; a warp's 'mma' of tile i (its K loop's issue) needs every warp's
    'mma' of tile i - 1 done (the tensor cores fed in tile order), a completion needs the W warps of the
    owner in bar.sync and the W of the other in bar.arrive. Returns a list of errors (empty: correct)."""
    progs = []
    for c in (0, 1):
        p = []
        for i in range(n):
            if i % 2 != c:
                continue
            if i > 0:
                p.append(("bsync", c))
            if mut != "arrive_early":
                p.append(("mma", i))
            if i + 1 < n or mut == "arrive_always":
                p.append(("barrive", 1 - c))
            if mut == "arrive_early":  # the turn passed before the K loop is issued
                p.append(("mma", i))
        progs += [p] * W
    A = len(progs)
    wg = [a // W for a in range(A)]
    # state: pcs, blocked (tuple of bools), barrier arrivals (per barrier: frozenset of (agent, kind)), mma done
    start = (tuple([0] * A), tuple([False] * A), (frozenset(), frozenset()), tuple([0] * max(n, 1)))
    seen, stack, errors = {start}, [start], []
    while stack and len(errors) < 3:
        pcs, blk, bars, done = stack.pop()
        moved = False
        for a in range(A):
            if blk[a] or pcs[a] >= len(progs[a]):
                continue
            op = progs[a][pcs[a]]
            npcs = pcs[:a] + (pcs[a] + 1,) + pcs[a + 1:]
            nblk, nbars, ndone = blk, bars, done
            if op[0] == "mma":
                i = op[1]
                if i > 0 and done[i - 1] < W:
                    errors.append("n=%d W=%d: a warp issues tile %d before tile %d is issued" % (n, W, i, i - 1))
                    continue
                ndone = done[:i] + (done[i] + 1,) + done[i + 1:]
            else:
                b = op[1]
                arr = bars[b] | {(a, op[0])}
                if op[0] == "bsync":
                    nblk = blk[:a] + (True,) + blk[a + 1:]
                if len(arr) == 2 * W:  # completes
                    want = {(x, "bsync") for x in range(A) if wg[x] == b}
                    want |= {(x, "barrive") for x in range(A) if wg[x] != b}
                    if arr != want:
                        errors.append("n=%d W=%d: barrier %d completed by %s" % (n, W, b, sorted(arr)))
                        continue
                    nblk = tuple(False if (x, "bsync") in arr else nblk[x] for x in range(A))
                    arr = frozenset()
                nbars = bars[:b] + (frozenset(arr),) + bars[b + 1:]
            moved = True
            st = (npcs, nblk, nbars, ndone)
            if st not in seen:
                seen.add(st)
                stack.append(st)
        if not moved and not errors:
            if any(pcs[a] < len(progs[a]) or blk[a] for a in range(A)):
                errors.append("n=%d W=%d: DEADLOCK (pcs %s)" % (n, W, pcs))
            elif bars != (frozenset(), frozenset()):
                errors.append("n=%d W=%d: a barrier left mid-phase at exit" % (n, W))
    return errors, len(seen)


def main():
    quick = "--quick" in sys.argv
    rng = np.random.default_rng()
    seed = int(rng.integers(1 << 31))
    rng = np.random.default_rng(seed)
    fails = 0
    # part 1: index math (odd shapes; a few SMs so CTAs take 0..many tiles each, both parities)
    cases = [(200, 258, 136, 4), (64, 512, 64, 3), (1, 2, 8, 5), (333, 390, 200, 5), (129, 130, 72, 7),
             (330, 700, 64, 2)]
    if not quick:
        cases += [(1000, 1030, 264, 11), (513, 768, 128, 132)]
    for wm in (128, 64):
        for (M, N, K, sms) in cases:
            A = rng.standard_normal((M, K))
            B = rng.standard_normal((N, K))
            C, writes, per = run_index(A, B, wm, sms)
            ref = A @ B.T
            err = float(np.nanmax(np.abs(C - ref))) if not np.isnan(C).all() else float("inf")
            once = bool((writes == 1).all())
            ok = once and err < 1e-9
            fails += not ok
            print("pingpong WM=%d M=%d N=%d K=%d sms=%d tiles/CTA %d..%d: max err %.2e, every output written once: %s%s"
                  % (wm, M, N, K, sms, min(per), max(per), err, once, "" if ok else "  FAIL"))
    # the Llama shapes on 132 SMs: the schedule covers every tile once (no numerics)
    for wm in (128, 64):
        bn = cfg(wm)[0]
        for (N, K) in ((6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336)):
            for M in (1000, 1024, 2048, 4096, 5000, 8192):
                tm_, tn_ = -(-M // wm), -(-N // bn)
                tiles = tm_ * tn_
                grid = min(tiles, 132)
                seen = np.zeros((tm_, tn_), dtype=np.int64)
                for t in range(tiles):
                    seen[pp_tile(t, tm_, tn_, 8 * 128 // wm)] += 1
                if not (seen == 1).all() or grid < 1:
                    print("pingpong WM=%d %dx%d M=%d: schedule FAIL (tiles not covered once)" % (wm, N, K, M))
                    fails += 1
    print("pingpong schedule of the Llama shapes (M 1000..8192, 132 SMs, WM 128 / 64): checked")
    # part 2: the protocol, all interleavings
    total = 0
    kbs = (1, 2) if quick else (1, 2, 3)
    for stages in (2, 3):
        for kbc in kbs:
            for n in range(0, 7 if not quick else 6):
                errs, nst = explore(n, kbc, stages)
                total += nst
                if errs:
                    fails += 1
                    print("pingpong protocol FAIL: " + "; ".join(errs))
    print("pingpong protocol: tiles per CTA 0..%d, K blocks %s, stages 2..3: %d states, no deadlock or race: %s"
          % (6 if not quick else 5, kbs, total, fails == 0))
    # the turn order with every warp an agent (a warp running ahead of its warpgroup)
    wtotal, wfail = 0, 0
    for n in range(0, 6 if not quick else 5):
        errs, nst = explore_warps(n, 4 if not quick else 2)
        wtotal += nst
        if errs:
            wfail += 1
            print("pingpong turn order per warp FAIL: " + "; ".join(errs))
    fails += wfail
    print("pingpong turn order per warp (%d warps per warpgroup, tiles per CTA 0..%d): %d states, in tile order, no "
          "deadlock: %s" % (4 if not quick else 2, 5 if not quick else 4, wtotal, wfail == 0))
    for mut in ("arrive_always", "arrive_early"):
        errs = explore_warps(3, 2, mut)[0] + explore_warps(1, 2, mut)[0]
        fails += not errs
        print("pingpong mutation per warp %-13s caught: %s (%s)%s" % (mut, bool(errs), errs[0] if errs else "-",
                                                                      "" if errs else "  FAIL"))
    # mutations: each must be caught somewhere in a few small cases
    for mut in ("arrive_always", "arrive_self", "sync_first", "empty8", "noskip"):
        caught = []
        for (n, kbc, stages) in ((1, 1, 2), (2, 2, 2), (3, 1, 2), (4, 2, 3)):
            errs, _ = explore(n, kbc, stages, mut)
            caught += errs
        ok = bool(caught)
        fails += not ok
        print("pingpong mutation %-13s caught: %s (%s)%s" % (mut, ok, caught[0] if caught else "-",
                                                             "" if ok else "  FAIL"))
    print("seed %d: %s" % (seed, "all passed" if fails == 0 else "%d FAILED" % fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
