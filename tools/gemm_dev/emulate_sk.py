#!/usr/bin/env python3
"""emulate_sk.py - CPU check of version 26's stream-K schedule of the half-band GEMM kernel (SF_GEMM_MIDM_SK,
problems/common/kernels/gemm_bf16_sm90_midm_sk.cuh; GEMM_NOTES_MID_M3.md "Version 26").

Mirrors the kernel's schedule (CTA i of G takes the (band, K block) units [sk_bound(i), sk_bound(i + 1)) in band-major
order), its segment loop (a segment ends at the range's end or a band's last unit), and its epilogue protocol: a later
part writes its partial to workspace slot sk_count(b, kbc, seg0) and then sets its flag to the epoch; a cut band's head
waits for the flags of slots 1..sk_count(b, kbc, (b + 1) kbc - 1), adds the partials in slot order and stores. The CTAs
run as coroutines under random interleavings (a head's wait yields until the flag is set), each unit contributing a random
64 x NT block (the wgmma sum over one K block), so the check is: every band stored exactly once, equal to the sum of its
units' blocks in unit order (the kernel's fp32 order), no deadlock, no slot written twice or read before its flag, and
the flags of an earlier launch (a stale epoch) never satisfy a wait. Shapes: the 6144 x 4096 plan on 132 SMs and random
ones under the host's rule. Mutations that must be caught: 'slot' (a part's slot off by one), 'parts' (the head's count
with hi = (b + 1) kbc: one part too many at some bands -> deadlock), 'nowait' (the head reads before the flags),
'epoch' (the flag compared with >= 0 instead of the epoch: a stale flag from the previous launch satisfies it).

    python3 tools/gemm_dev/emulate_sk.py       # exit status 1 on a failure; EMU_SEED=N reruns a seed
"""
import os
import sys

import numpy as np


def sk_bound(j, U, G):
    return j * U // G


def sk_count(b, kbc, hi, U, G):
    """mirror of sk_count: range boundaries x_j, 0 < j < G, with b kbc < x_j <= hi"""
    lo = b * kbc
    j0 = ((lo + 1) * G + U - 1) // U
    j1 = ((hi + 1) * G + U - 1) // U - 1
    n = min(j1, G - 1) - j0 + 1
    return max(n, 0)


def host_takes(bands, kbc, G):
    """the host's rule (midm_hb_hook): fewer bands than SMs, ranges longer than half a band plus one unit"""
    return bands < G and 2 * bands * kbc > G * (kbc + 2)


def run(bands, kbc, G, rng, mutate=None, nt=4):
    """One launch (after a previous one left its flags at epoch - 1). Returns None or the first violation."""
    U = bands * kbc
    blocks = rng.standard_normal((U, nt))  # unit u's contribution (a 64 x NT block, here NT values: enough to tell sums)
    want = [blocks[b * kbc:(b + 1) * kbc].sum(axis=0) for b in range(bands)]
    epoch = 7
    flags = {(b, s): epoch - 1 for b in range(bands) for s in (1, 2)}  # the previous launch's flags
    ws = {}
    stored = {}

    def cta(i):
        u0, u1 = sk_bound(i, U, G), sk_bound(i + 1, U, G)
        d = np.zeros(nt)
        seg0 = u0
        for u in range(u0, u1):
            d = d + blocks[u]
            b = u // kbc
            if u + 1 != u1 and (u + 1) % kbc != 0:
                continue
            head, whole = seg0 == b * kbc, seg0 == b * kbc and u + 1 == (b + 1) * kbc
            if not head:
                slot = sk_count(b, kbc, seg0, U, G) + (1 if mutate == 'slot' else 0)
                if (b, slot) in ws:
                    yield "band %d slot %d written twice" % (b, slot)
                    return
                ws[(b, slot)] = d.copy()
                flags[(b, slot)] = epoch
            else:
                if not whole:
                    parts = sk_count(b, kbc, (b + 1) * kbc - (0 if mutate == 'parts' else 1), U, G)
                    for sl in range(1, parts + 1):
                        if mutate != 'nowait':
                            while not (flags.get((b, sl), -1) >= 0 if mutate == 'epoch' else flags.get((b, sl)) == epoch):
                                yield None  # the polling thread waits
                        if (b, sl) not in ws:
                            yield "band %d head read slot %d before it was written" % (b, sl)
                            return
                        d = d + ws[(b, sl)]
                if b in stored:
                    yield "band %d stored twice" % b
                    return
                stored[b] = d.copy()
            d = np.zeros(nt)
            seg0 = u + 1

    live = {i: cta(i) for i in range(G)}
    steps = 0
    while live:
        steps += 1
        if steps > 40 * (U + G) * 4 + 1000:  # G coroutines, U units: a live run takes ~U + G steps + waits
            return "deadlock: CTAs %s still waiting" % sorted(live)[:6]
        i = list(live)[rng.integers(len(live))]
        try:
            msg = next(live[i])
            if msg:
                return msg
        except StopIteration:
            del live[i]
            continue
    if sorted(stored) != list(range(bands)):
        return "bands stored %d of %d" % (len(stored), bands)
    for b in range(bands):
        if np.abs(stored[b] - want[b]).max() > 1e-9:
            return "band %d sum off by %.3g" % (b, np.abs(stored[b] - want[b]).max())
    return None


def main():
    seed = int(os.environ.get("EMU_SEED", "0")) or int.from_bytes(os.urandom(4), "little")
    print("emulate_sk: seed %d (EMU_SEED=%d reruns it)" % (seed, seed))
    rng = np.random.default_rng(seed)
    bad = 0
    cases = [(96, 64, 132), (96, 64, 114), (96, 224, 132), (1, 4, 1)]  # 6144 x 4096 / 6144 x 14336 on 132 / 114 SMs
    while len(cases) < 24:
        G = int(rng.integers(2, 60))
        bands, kbc = int(rng.integers(1, G)), int(rng.integers(1, 40))
        if host_takes(bands, kbc, G):
            cases.append((bands, kbc, G))
    # a small shape where a range boundary falls on a band's end (what the 'parts' mutation needs to show)
    edge = next((b_, k_, g_) for g_ in range(3, 40) for k_ in range(2, 20) for b_ in range(1, g_)
                if host_takes(b_, k_, g_) and any(sk_bound(j, b_ * k_, g_) % k_ == 0 for j in range(1, g_)))
    cases.append(edge)
    runs = 0
    for bands, kbc, G in cases:
        if not host_takes(bands, kbc, G) and (bands, kbc, G) != (1, 4, 1):
            print("sk case %s outside the host's rule FAILED" % ((bands, kbc, G),))
            bad += 1
            continue
        for _ in range(1 if bands * kbc > 2000 else 3):  # the large shapes once (a pure-Python coroutine per CTA)
            err = run(bands, kbc, G, rng)
            runs += 1
            if err:
                print("sk bands %d kbc %d G %d: %s FAILED" % (bands, kbc, G, err))
                bad += 1
                break
    print("sk schedule: %d launches on %d shapes (6144 x 4096 on 132 SMs among them), every band stored once and "
          "exact, max err 0" % (runs, len(cases)))
    for mut in ('slot', 'parts', 'nowait', 'epoch'):
        got = [run(b, k, g, rng, mutate=mut) for (b, k, g) in cases[4:] for _ in range(2)]  # the small shapes
        if any(got):
            print("sk mutation %s: caught (%s)" % (mut, next(x for x in got if x)))
        else:
            print("sk mutation %s: NOT CAUGHT" % mut)
            bad += 1
    print("emulate_sk: %s" % ("FAILED" if bad else "ok"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
