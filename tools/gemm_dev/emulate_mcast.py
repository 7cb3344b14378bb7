#!/usr/bin/env python3
"""emulate_mcast.py - CPU emulation (numpy) of the version-8 clustered GEMM kernel (problems/common/kernels/
gemm_bf16_sm90_mcast.cuh, gemm_mcast_kernel<BN> and mc_launch; GEMM_NOTES_LARGE_M.md "Version 8"), in two parts.

1. Index math: the host's wave rule and grid (2 x min(pair units, resident clusters)), the schedule (cluster
   k takes pair units k, k + G, ...; grouped raster over 8 pair rows; CTA rank r computes tile (2 pm + r, tn),
   A of a padded row clamped to the last real tile row), W assembled from the two ranks' halves (rank r
   loads rows tn BN + r BN / 2 .. of the stage and multicasts them to the same offset of both CTAs), TMA's
   zero fill past M, N and K, the wgmma m64nBNk16 accumulator layout of the two consumer warpgroups and the
   bounds-checked store. Every output written exactly once and equal to A . B^T (odd M, N, K; widths 256 and
   192; 1 .. many pair units per cluster; odd tile-row counts); the Llama shapes' decisions on 66 clusters.
2. The two-CTA ring protocol, explored over ALL interleavings (depth-first search over reachable states,
   memoized). Agents per CTA: the producer (wait empty[s] with parity ph ^ 1, then arrive.expect_tx of the
   whole stage and the TMA issue: own A, own W half multicast to both CTAs), each TMA landing (separately
   in each destination CTA, any order, any time after the issue), two consumer warpgroups (wait full[s]
   with parity ph, a wgmma batch that reads the stage until the wgmma wait that retires it, then the
   release: 4 local and 4 remote arrivals, each an asynchronous event applied at any later time, and
   the store) and the exit cluster barrier (a CTA exits when every agent of both CTAs is there and its
   own arrivals are applied). mbarriers follow the PTX rules: a phase completes when its pending arrival
   count and its tx-count are both 0 (the tx-count may go negative: bytes before the expect), a wait on
   parity p passes once the phase of parity p has completed. Checked in every state: no deadlock; every
   TMA landing belongs to the full barrier's current phase and never hits a stage a batch of that CTA
   still reads; every batch reads the K block it expects in A and both W halves; no arrival or landing
   on an exited CTA; at the end every tile stored once (padded rows: none) and every barrier at rest.
   Mutated protocols (no remote release with the local-only count 8, the full barrier expecting only the
   own bytes, the release before the retiring wait, the remote release on the wrong stage, a padded tile
   skipped, no exit barrier) must each be caught: the checker can fail.
A consumer warpgroup is one agent (its 4 warps' arrivals as one event per barrier: a phase completes only
with all of them either way). It does not model timing or descriptor decoding.

    python3 tools/gemm_dev/emulate_mcast.py [--quick]   # exit status 1 on a mismatch
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sm90_model import box, d_frag_blocks  # noqa: E402  (the TMA box with zero fill past the rows and K)

BK, BM, GROUP = 64, 128, 8


def mc_unit(u, pairs_m, tiles_n):
    """the kernel's mc_unit: pair unit u -> (pair row pm, tile column tn), groups of 8 pair rows"""
    group = u // (GROUP * tiles_n)
    first_m = group * GROUP
    gsz = min(pairs_m - first_m, GROUP)
    r = u % (GROUP * tiles_n)
    return first_m + r % gsz, r // gsz


def decide(M, N, bn, sms, slots):
    """mc_launch's rule: grid (2 x clusters) or None when the pairs would add a wave"""
    tiles_m, tiles_n = -(-M // BM), -(-N // bn)
    pu, tiles = (tiles_m + 1) // 2 * tiles_n, tiles_m * tiles_n
    if -(-pu // slots) > -(-tiles // sms):
        return None
    return 2 * min(pu, slots)


def reg_rows_cols(bn):
    """row[c, tid, i], col[c, tid, i] inside the 128 x bn tile of accumulator d[i] of consumer c thread tid"""
    return d_frag_blocks(2, bn)


def run_index(A, B, bn, grid):
    """gemm_mcast_kernel<bn> on grid CTAs: returns (C, writes per output, units per cluster)"""
    M, K = A.shape
    N = B.shape[0]
    tiles_m, tiles_n = -(-M // BM), -(-N // bn)
    pairs_m, kpad, half = (tiles_m + 1) // 2, -(-K // BK) * BK, bn // 2
    units = pairs_m * tiles_n
    C = np.full((M, N), np.nan)
    writes = np.zeros((M, N), dtype=np.int64)
    row, col = reg_rows_cols(bn)
    per = []
    for cl in range(grid // 2):
        mine = list(range(cl, units, grid // 2))
        per.append(len(mine))
        for u in mine:
            pm, tn = mc_unit(u, pairs_m, tiles_n)
            # the W stage as both CTAs hold it: rank r's half at rows r * half of the stage
            W = np.concatenate([box(B, tn * bn + r * half, half, kpad) for r in (0, 1)])
            for rank in (0, 1):
                tm = 2 * pm + rank
                a = box(A, min(tm, tiles_m - 1) * BM, BM, kpad)  # padded row: the last real one
                P = a @ W.T
                d = P[row, col]
                r, c = tm * BM + row, tn * bn + col
                ok = (r < M) & (c < N)
                C[r[ok], c[ok]] = d[ok]
                np.add.at(writes, (r[ok], c[ok]), 1)
    return C, writes, per


def check_index(quick):
    rng = np.random.default_rng()
    fails, n = 0, 0
    cases = [(1000, 510, 200, 256, 5), (640, 384, 136, 192, 3), (129, 262, 72, 256, 66), (1290, 770, 64, 192, 2),
             (300, 254, 8, 256, 1), (2900, 1024, 96, 256, 7)]
    if not quick:
        cases += [(int(rng.integers(129, 2000)), 2 * int(rng.integers(64, 700)), 8 * int(rng.integers(1, 40)),
                   int(rng.choice([192, 256])), int(rng.integers(1, 9))) for _ in range(6)]
    for M, N, K, bn, slots in cases:
        A = rng.standard_normal((M, K))
        B = rng.standard_normal((N, K))
        tiles_m, tiles_n = -(-M // BM), -(-N // bn)
        pu = (tiles_m + 1) // 2 * tiles_n
        grid = 2 * min(pu, slots)  # the grid the host launches once the rule takes the pairs
        C, writes, per = run_index(A, B, bn, grid)
        err = np.nanmax(np.abs(C - A @ B.T)) if not np.isnan(C).any() else np.inf
        ok = err < 1e-9 and (writes == 1).all() and min(per) >= 1
        n += 1
        fails += not ok
        print("%s index M=%d N=%d K=%d BN=%d clusters=%d (pair units/cluster %d..%d): max err %.2e, writes %d..%d" %
              ("ok  " if ok else "FAIL", M, N, K, bn, grid // 2, min(per), max(per), err, writes.min(), writes.max()))
    # the rule on 132 SMs / 66 resident clusters: an even tile-row count always pairs (the same waves), a
    # taken plan never launches more clusters than resident or than pair units, a refused one adds a wave
    nd = 0
    for (N, bn) in ((4096, 256), (6144, 192), (6144, 256), (28672, 256)):
        for M in (513, 640, 1000, 1024, 1300, 2048, 2900, 4096, 5000, 8192):
            g = decide(M, N, bn, 132, 66)
            tiles_m, tiles_n = -(-M // BM), -(-N // bn)
            pu = (tiles_m + 1) // 2 * tiles_n
            ok = (g is not None or tiles_m % 2 == 1) and (g is None or g <= min(132, 2 * pu))
            ok = ok and (g is not None or -(-pu // 66) > -(-(tiles_m * tiles_n) // 132))
            nd += 1
            n += 1
            fails += not ok
            if not ok or (g is None):
                print("%s rule N=%d BN=%d M=%d (tile rows %d): %s" % ("ok  " if ok else "FAIL", N, bn, M, tiles_m,
                                                                       "grid %d" % g if g else "v3a (pairs add a wave)"))
    print("ok   rule: %d Llama-shape decisions on 66 clusters (max err 0)" % nd)
    return fails, n


# ---- the two-CTA ring protocol, all interleavings ----

PARTS = ("A", "H0", "H1")


def explore(n_units, kbc, stages, pad=False, mut=None, wgs=1, limit=2000000):
    """All interleavings of the cluster's protocol for n_units pair units of kbc K blocks with wgs consumer
    agents per CTA (1: both warpgroups in step, 2: each its own); pad: the last unit's rank-1 tile is a
    padded row. Returns (errors, states)."""
    T = n_units * kbc
    per = 8 // wgs  # warp arrivals per release event of one consumer agent on one barrier
    empty_count = 8 if mut == "local_only" else 16
    expect = 2 if mut == "expect_own" else 3

    def cons_prog(rank):
        prog, it = [], 0
        for u in range(n_units):
            if mut == "skip_pad" and pad and rank == 1 and u == n_units - 1:
                continue
            prev = None
            for kb in range(kbc):
                prog.append(("wait", it))
                if mut == "release_early":
                    prog += [("rloc", it), ("rrem", it)]
                if kb > 0:
                    prog.append(("retire", prev))
                    if mut != "release_early":
                        prog += [("rloc", prev), ("rrem", prev)]
                prev = it
                it += 1
            prog.append(("retire", prev))
            if mut != "release_early":
                prog += [("rloc", prev), ("rrem", prev)]
            prog.append(("store", u))
        if mut == "local_only":
            prog = [op for op in prog if op[0] != "rrem"]
        return prog

    progs = [cons_prog(0), cons_prog(1)]
    plen = [(n_units - 1) * kbc if (mut == "skip_pad" and pad and r == 1) else T for r in (0, 1)]
    na = 2 * wgs
    # state: (producer pcs (2: 2 it + 0 waits empty, + 1 issues), consumer pcs (na), full per CTA per stage
    #   (completed phases, pending arrivals, tx-count), empty per CTA per stage (completed phases, pending),
    #   slot tags per CTA per stage (A, H0, H1), pending landings {(cta, s, part, it)}, reading per consumer
    #   agent (stage blocks in flight), stored tiles, exited per CTA)
    zf = tuple((0, 1, 0) for _ in range(stages))
    ze = tuple((0, empty_count) for _ in range(stages))
    zs = tuple((None, None, None) for _ in range(stages))
    start = ((0, 0), (0,) * na, (zf, zf), (ze, ze), (zs, zs), frozenset(), ((),) * na, frozenset(), (False, False))
    seen, stack, errors = {start}, [start], []
    tag = "u=%d kb=%d st=%d pad=%s wgs=%d" % (n_units, kbc, stages, pad, wgs)

    def err(msg):
        if len(errors) < 5 and msg not in errors:
            errors.append(msg)

    def set2(t, i, v):
        return t[:i] + (v,) + t[i + 1:]

    def full_step(f, s, dpend, dtx):
        ph, pend, tx = f[s]
        pend, tx = pend - dpend, tx + dtx
        if pend == 0 and tx == 0:
            ph, pend = ph + 1, 1
        return set2(f, s, (ph, pend, tx))

    def empty_step(e, s, k):
        ph, pend = e[s]
        pend -= k
        if pend == 0:
            ph, pend = ph + 1, empty_count
        return None if pend < 0 else set2(e, s, (ph, pend))

    def done(ppc, cpcs, cta):
        return ppc[cta] >= 2 * plen[cta] and all(cpcs[cta * wgs + g] >= len(progs[cta]) for g in range(wgs))

    while stack:
        st = stack.pop()
        if len(seen) > limit:
            err("state limit %d reached" % limit)
            break
        ppc, cpcs, full, empty, slots, land, reading, stored, exited = st
        succ = []
        for cta in (0, 1):
            if exited[cta]:
                continue
            peer = 1 - cta
            pc = ppc[cta]
            if pc < 2 * plen[cta]:  # the producer
                it = pc // 2
                s, ph = it % stages, (it // stages) & 1
                if pc % 2 == 0:
                    if (empty[cta][s][0] & 1) != (ph ^ 1):
                        succ.append((set2(ppc, cta, pc + 1), cpcs, full, empty, slots, land, reading, stored, exited))
                else:  # arrive.expect_tx, then the TMA: own A and own W half here (one landing), the half in the peer
                    nf = set2(full, cta, full_step(full[cta], s, 1, expect))
                    nl = land | {(cta, s, "AH%d" % cta, it), (peer, s, "H%d" % cta, it)}
                    succ.append((set2(ppc, cta, pc + 1), cpcs, nf, empty, slots, nl, reading, stored, exited))
            for g in range(wgs):  # the consumers
                a = cta * wgs + g
                prog = progs[cta]
                if cpcs[a] >= len(prog):
                    continue
                op, x = prog[cpcs[a]]
                ncp = set2(cpcs, a, cpcs[a] + 1)
                s = x % stages
                if op == "wait":
                    if (full[cta][s][0] & 1) == (x // stages) & 1:
                        continue
                    if slots[cta][s] != (x, x, x):
                        err("%s: CTA %d reads stage %d expecting block %d, holds %s" % (tag, cta, s, x, slots[cta][s]))
                        continue
                    succ.append((ppc, ncp, full, empty, slots, land, set2(reading, a, reading[a] + (x,)), stored, exited))
                elif op == "retire":
                    succ.append((ppc, ncp, full, empty, slots, land, set2(reading, a, tuple(y for y in reading[a] if y != x)),
                                 stored, exited))
                elif op in ("rloc", "rrem"):
                    dst = cta if op == "rloc" else peer
                    if op == "rrem" and mut == "wrong_slot":
                        s = (s + 1) % stages
                    if exited[dst]:
                        err("%s: CTA %d arrives on exited CTA %d" % (tag, cta, dst))
                        continue
                    ne = empty_step(empty[dst], s, per)
                    if ne is None:
                        err("%s: empty barrier over-arrived" % tag)
                        continue
                    succ.append((ppc, ncp, full, set2(empty, dst, ne), slots, land, reading, stored, exited))
                else:  # store (a padded row stores nothing)
                    mine = frozenset() if (pad and x == n_units - 1 and cta == 1) else frozenset({(cta, g, x)})
                    succ.append((ppc, ncp, full, empty, slots, land, reading, stored | mine, exited))
        for L in land:  # TMA landings, any order
            cta, s, part, it = L
            if exited[cta]:
                err("%s: TMA lands in exited CTA %d" % (tag, cta))
                continue
            if full[cta][s][0] != it // stages:
                err("%s: block %d lands in CTA %d stage %d outside its full phase (%d)" % (tag, it, cta, s, full[cta][s][0]))
                continue
            if any(y % stages == s for g in range(wgs) for y in reading[cta * wgs + g]):
                err("%s: block %d lands in CTA %d stage %d while a batch reads it" % (tag, it, cta, s))
                continue
            sl = slots[cta][s]
            for p in (("A", part[1:]) if part.startswith("AH") else (part,)):
                sl = set2(sl, PARTS.index(p), it)
            nb = 2 if part.startswith("AH") else 1
            succ.append((ppc, cpcs, set2(full, cta, full_step(full[cta], s, 0, -nb)), empty,
                         set2(slots, cta, set2(slots[cta], s, sl)), land - {L}, reading, stored, exited))
        for cta in (0, 1):  # exit: the cluster barrier waits for every agent of both CTAs
            if not exited[cta] and (done(ppc, cpcs, cta) if mut == "no_exit_barrier" else done(ppc, cpcs, 0) and done(ppc, cpcs, 1)):
                succ.append((ppc, cpcs, full, empty, slots, land, reading, stored, set2(exited, cta, True)))
        if not succ:
            if exited != (True, True):
                err("%s: deadlock (producers %s, consumers %s of %s)" % (tag, ppc, cpcs, [len(p) for p in progs]))
                continue
            want = {(c, g, u) for u in range(n_units) for c in (0, 1) for g in range(wgs)
                    if not (pad and c == 1 and u == n_units - 1)}
            if stored != want:
                err("%s: stores %s, expected %s" % (tag, sorted(stored), sorted(want)))
            if land:
                err("%s: landings left over at exit" % tag)
            for cta in (0, 1):
                if any(f[1:] != (1, 0) for f in full[cta]) or any(e[1] != empty_count for e in empty[cta]):
                    err("%s: a barrier left mid-phase in CTA %d" % (tag, cta))
            continue
        for nx in succ:
            if nx not in seen:
                seen.add(nx)
                stack.append(nx)
    return errors, len(seen)


def check_protocol(quick):
    fails, n, states = 0, 0, 0
    # (pair units, K blocks, stages, padded last row, consumer agents per CTA)
    cases = [(1, 1, 2, False, 1), (1, 2, 2, False, 1), (2, 1, 2, True, 1), (1, 3, 2, False, 1), (1, 2, 3, True, 1),
             (2, 2, 2, False, 1), (3, 1, 2, True, 1), (2, 3, 2, True, 1), (1, 2, 2, False, 2), (2, 1, 2, True, 2)]
    if not quick:
        cases += [(3, 2, 2, True, 1), (2, 3, 3, False, 1), (1, 3, 2, False, 2), (2, 2, 2, True, 2)]
    for u, kb, st, pad, wgs in cases:
        errs, ns = explore(u, kb, st, pad, wgs=wgs)
        states += ns
        n += 1
        if errs:
            fails += 1
            print("FAIL protocol units=%d kb=%d stages=%d pad=%s wgs=%d: %s" % (u, kb, st, pad, wgs, "; ".join(errs)))
    print("%s protocol: %d cases, %d states, max err 0 (no deadlock, stale read, overwrite, landing out of phase)" %
          ("ok  " if fails == 0 else "FAIL", len(cases), states))
    # each mutation must be caught: the checker can fail
    for mut, case in (("local_only", (1, 3, 2, False)), ("expect_own", (1, 1, 2, False)), ("release_early", (1, 3, 2, False)),
                      ("wrong_slot", (1, 3, 2, False)), ("skip_pad", (2, 1, 2, True)), ("no_exit_barrier", (1, 2, 2, False))):
        errs, _ = explore(*case, mut=mut)
        n += 1
        if errs:
            print("ok   mutation %s caught: %s (max err 0)" % (mut, errs[0][:120]))
        else:
            fails += 1
            print("FAIL mutation %s NOT caught on %s" % (mut, case))
    return fails, n


def main():
    quick = "--quick" in sys.argv[1:]
    f1, n1 = check_index(quick)
    f2, n2 = check_protocol(quick)
    print("%d checks, %d failed" % (n1 + n2, f1 + f2))
    return 1 if f1 + f2 else 0


if __name__ == "__main__":
    sys.exit(main())
