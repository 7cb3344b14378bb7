#!/usr/bin/env python3
"""emulate_tt.py - CPU checks of the mid-M GEMM's narrow token tiles (version 24, SF_GEMM_MIDM_TT_SMALL: FIT 2's two token
tiles of 16 / 32 / 48 tokens at M 17-128) and of the token-tile pair as a weight-multicasting cluster (version 25,
SF_GEMM_MIDM_TT_MC), on emulate_wgmma.py's model of gemm_midm_kernel (plans, TMA boxes, fragments, stores); split out
of that file to keep it under ~800 lines. GEMM_NOTES_MID_M3.md "Version 24" / "Version 25" say what each check covers.

    python3 tools/gemm_dev/emulate_tt.py      # exit status 1 on a failure (tests/suites/gemm_fragments.sh runs it)
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from emulate_wgmma import BK, HB_NT_SMALL, midm_plan_hb_fit, run_midm  # noqa: E402


def check_tt_small(rng):
    """Version 24 (SF_GEMM_MIDM_TT_SMALL with SF_GEMM_MIDM_TT_MIN_M 16, GEMM_NOTES_MID_M3.md "Version 24"): FIT 2's two
    token tiles below 64 tokens. The plans of M 17..128 on the 4096-row shapes (and odd ones) give an instantiated tile
    (16, 32, 48, 64) of ceil(M / 2) rounded up to 16 (two tiles overlap by < 32 tokens) wherever the plan splits K in
    two, and the version-16 plans elsewhere; then the kernel's loads and stores at odd M with each narrow tile (consumer
    widths 8, 16, 24: one, two, three 8-token groups): every output written once and exact, expect_tx = the bytes
    landed; mutations mlo / row0 / tx16 caught. Returns the failure count."""
    bad = 0
    for (N, K) in ((4096, 4096), (4096, 14336), (6144, 4096), (130, 520), (1000, 4104)):
        for M in range(17, 129):
            got = midm_plan_hb_fit(M, N, K, 132, 0, None, 2, 16, 1)
            base = midm_plan_hb_fit(M, N, K, 132, 0, None, 2, 16, 0)
            nt, splits, tt = got
            if tt == 2:
                t = (M + 1) // 2
                ok = (splits == 1 and nt in set(HB_NT_SMALL) | {64} and nt < M <= 2 * nt and 2 * nt - M < 32 and
                      nt == (t + 15) // 16 * 16)
            else:
                ok = got == base
            if not ok:
                print("tt_small plan %dx%d M=%d: nt %d splits %d ttiles %d FAILED" % (N, K, M, nt, splits, tt))
                bad += 1
    for (N, K, M, want) in [(4096, 4096, 64, (32, 1, 2)), (4096, 4096, 32, (16, 1, 2)), (4096, 4096, 128, (64, 1, 2)),
                            (4096, 4096, 77, (48, 1, 2)), (6144, 4096, 64, (64, 1, 1))]:
        got = midm_plan_hb_fit(M, N, K, 132, 0, None, 2, 16, 1)
        if got != want:
            print("tt_small plan %dx%d M=%d: %s, expected %s FAILED" % (N, K, M, got, want))
            bad += 1
    print("tt_small plans: M 17..128 x 5 shapes checked, max err 0")
    for (M, N, K, mutants) in [(17, 66, 136, 0), (31, 64, 72, 1), (32, 70, 200, 0), (33, 66, 136, 1), (47, 64, 72, 0),
                               (49, 66, 72, 1), (64, 64, 136, 0), (77, 70, 72, 0), (96, 64, 72, 0), (127, 66, 72, 0)]:
        nt = midm_plan_hb_fit(M, 4096, 4096, 132, 0, None, 2, 16, 1)[0]
        A = rng.standard_normal((M, K))
        B = rng.standard_normal((N, K))
        for mut in (None,) + (('mlo', 'row0', 'tx16') if mutants else ()):
            if (mut == 'mlo' and 2 * nt == M) or (mut == 'row0' and M - nt == nt):
                continue  # no overlap / the same rows: nothing to catch
            acct = []
            C, writes = run_midm(A, B, nt, 1, 1, hb=True, ttiles=2, acct=acct, xrows=True, mutate=mut)
            err = np.abs(C - A @ B.T).max()
            good = err <= 1e-9 and bool((writes == 1).all()) and all(e == l for e, l in acct)
            if mut is None:
                print("tt_small M=%d N=%d K=%d NT=%d ttiles=2 max err %.2e, every output written once and tx: %s" %
                      (M, N, K, nt, err, good))
                bad += not good
            else:
                print("tt_small mutation %s M=%d NT=%d: %s" % (mut, M, nt, "NOT CAUGHT" if good else "caught"))
                bad += good
    return bad


def tt_mc_ring(kb_n, stages, rng, mutate=None):
    """Version 25 (SF_GEMM_MIDM_TT_MC): the ring protocol of a cluster pair sharing the weight tile, run under a random
    interleaving of its 2 producers and 2 x 8 consumer warps. Per stage s of CTA r: full[r][s] (1 arrival: r's own
    expect_tx of the whole stage, made before the cluster barrier for the first round), its bytes from r's activation load
    and BOTH producers' weight halves (multicast); empty[r][s] 16 arrivals (the 8 warps of both CTAs). A producer issues
    its round-0 activation loads and expects before the cluster barrier and every weight half after it; from round 1 it
    waits empty[own][s] first. Checked: no load lands in a slot of either CTA whose previous data a warp of that CTA
    still has to read, every warp reads the right K block (own activation, both halves) of each stage, and the run ends
    (no deadlock). mutate: 'empty8' (empty counts only the own 8 warps: the partner's multicast may overwrite a slot it
    still reads), 'noremote' (no remote arrival: deadlock), 'early' (the weight halves of round 0 go out before the
    cluster barrier: into an uninitialised partner). Returns None when correct, else the first violation."""
    need = 8 if mutate == 'empty8' else 16
    # slot contents per CTA: [act kb, half0 kb, half1 kb]; reads outstanding per (cta, slot): warps yet to read
    slot = [[[None, None, None] for _ in range(stages)] for _ in range(2)]
    unread = [[0] * stages for _ in range(2)]
    full_tx = [[0] * stages for _ in range(2)]  # bytes (in parts) landed in the current phase
    full_armed = [[False] * stages for _ in range(2)]  # expect_tx made for the current phase
    full_phase = [[0] * stages for _ in range(2)]
    empty_cnt = [[0] * stages for _ in range(2)]
    empty_phase = [[0] * stages for _ in range(2)]
    inited = [False, False]
    synced = False
    prod_it = [0, 0]
    prod_pre = [0, 0]  # round-0 expects + activation loads issued before the barrier
    warp_it = [[0] * 8 for _ in range(2)]
    inflight = []  # (target cta, stage, part, kb): loads issued, not landed
    npre = min(kb_n, stages)

    def land(t, st, part, kb):
        if not inited[t]:
            return "a multicast into CTA %d before its barriers were initialised" % t
        if unread[t][st] > 0:
            return "CTA %d slot %d overwritten (part %d, kb %d) while %d warps still read it" % (t, st, part, kb, unread[t][st])
        slot[t][st][part] = kb
        full_tx[t][st] += 1
        return check_full(t, st)

    def check_full(t, st):
        if full_armed[t][st] and full_tx[t][st] == 3:  # the phase completes: the stage is readable by 8 warps
            full_phase[t][st] += 1
            full_tx[t][st] = 0
            full_armed[t][st] = False
            unread[t][st] = 8
        return None

    steps = 0
    while True:
        acts = []
        for r in range(2):
            if not inited[r]:
                acts.append(('init', r))
                continue
            if prod_pre[r] < npre:
                acts.append(('pre', r))
            elif not synced:
                pass
            elif prod_it[r] < kb_n:
                it = prod_it[r]
                st, rnd = it % stages, it // stages
                if it < npre or empty_phase[r][st] >= rnd:
                    acts.append(('prod', r))
            if synced or mutate == 'early':
                for w in range(8):
                    it = warp_it[r][w]
                    if it < kb_n and full_phase[r][it % stages] > it // stages:
                        acts.append(('warp', r, w))
        if not synced and all(inited) and prod_pre == [npre, npre]:
            acts.append(('sync',))
        if inflight:
            acts.append(('land',))
        if not acts:
            done = all(prod_it[r] == kb_n and all(x == kb_n for x in warp_it[r]) for r in range(2))
            return None if done else "deadlock: producers at %s, warps at %s" % (prod_it, warp_it)
        a = acts[rng.integers(len(acts))]
        steps += 1
        if a[0] == 'init':
            inited[a[1]] = True
            if mutate == 'early':  # round 0's weight halves before the barrier
                r = a[1]
                for it in range(npre):
                    for t in (0, 1):
                        inflight.append((t, it % stages, 1 + r, it))
                prod_it[r] = npre
        elif a[0] == 'pre':
            r = a[1]
            it = prod_pre[r]
            full_armed[r][it % stages] = True
            inflight.append((r, it % stages, 0, it))
            prod_pre[r] += 1
            err = check_full(r, it % stages)
            if err:
                return err
        elif a[0] == 'sync':
            synced = True
        elif a[0] == 'prod':
            r = a[1]
            it = prod_it[r]
            st = it % stages
            if it >= npre:
                full_armed[r][st] = True
                inflight.append((r, st, 0, it))
            for t in (0, 1):  # the multicast weight half r of K block it into both CTAs
                inflight.append((t, st, 1 + r, it))
            prod_it[r] += 1
            err = check_full(r, st)
            if err:
                return err
        elif a[0] == 'land':
            i = rng.integers(len(inflight))
            err = land(*inflight.pop(i))
            if err:
                return err
        else:
            _, r, w = a
            it = warp_it[r][w]
            st = it % stages
            if slot[r][st] != [it, it, it]:
                return "CTA %d warp %d read K block %d from slot %d holding %s" % (r, w, it, st, slot[r][st])
            unread[r][st] -= 1
            warp_it[r][w] += 1
            for t in ((r,) if mutate == 'noremote' else (r, 1 - r)):  # lane 0 local, lane 1 remote
                empty_cnt[t][st] += 1
                if empty_cnt[t][st] == need:
                    empty_cnt[t][st] = 0
                    empty_phase[t][st] += 1


def check_tt_mc(rng):
    """Version 25 (SF_GEMM_MIDM_TT_MC): the weight halves of a cluster pair cover each band's 64 rows once (at N past a
    band edge too: TMA zero-fills rows past N in either half) at 1024-byte aligned offsets, so each CTA's stage receives
    its kTxBytes; the ring protocol (tt_mc_ring) correct under random interleavings, its three mutations caught.
    Returns the failure count."""
    bad = 0
    for N in (4096, 130, 70, 64):
        for band in range((N + 63) // 64):
            rows = []
            for tt in (0, 1):
                r0, dst = band * 64 + tt * 32, tt * (64 * BK * 2 // 2)
                if dst % 1024 or dst + 32 * BK * 2 > 64 * BK * 2:
                    bad += 1
                rows += list(range(r0, r0 + 32))
            if rows != list(range(band * 64, band * 64 + 64)):
                print("tt_mc halves N=%d band %d cover %s FAILED" % (N, band, rows[:4]))
                bad += 1
    for nt in HB_NT_SMALL + (64,):  # the stage: both halves (2 x 4 KB) + the own tile's activation box = kTxBytes
        if 2 * (32 * BK * 2) + nt * BK * 2 != 64 * BK * 2 + nt * BK * 2:
            bad += 1
    runs = 0
    for kb_n, stages in ((64, 16), (64, 14), (3, 16), (17, 4), (40, 2)):
        for _ in range(6):
            err = tt_mc_ring(kb_n, stages, rng)
            runs += 1
            if err:
                print("tt_mc ring kb %d stages %d: %s FAILED" % (kb_n, stages, err))
                bad += 1
    caught = 0
    for mut in ('empty8', 'noremote', 'early'):
        got = [tt_mc_ring(20, 3, rng, mutate=mut) for _ in range(20)]
        if any(got):
            caught += 1
        else:
            print("tt_mc mutation %s NOT CAUGHT in 20 runs" % mut)
            bad += 1
    print("tt_mc: halves on 4 N, %d ring runs correct, %d / 3 protocol mutations caught, max err 0" % (runs, caught))
    return bad


def main():
    seed = int(os.environ.get("EMU_SEED", "0")) or int.from_bytes(os.urandom(4), "little")
    print("emulate_tt: seed %d (EMU_SEED=%d reruns it)" % (seed, seed))
    rng = np.random.default_rng(seed)
    bad = check_tt_small(rng) + check_tt_mc(rng)
    print("emulate_tt: %s" % ("FAILED" if bad else "ok"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
