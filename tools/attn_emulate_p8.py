#!/usr/bin/env python3
"""attn_emulate_p8.py - warp-level check of prefill version 8's turn barriers
(problems/common/kernels/gqa_paged_prefill_sm90_p8.cuh, -DSF_PREFILL_WGMMA=8), called by
tools/attn_emulate_pp.py --variant 8 after its protocol sweep (which models each warpgroup as one agent).

Here each of the 8 consumer warps (consumer c = 0, 1; warp k = 0..3) is its own agent, and named
barriers 1 and 2 follow the PTX rule: bar.arrive / bar.sync add the warp's 32 threads to the
barrier's current phase, a phase completes when P8_TURN_THREADS = 256 threads arrived (whoever they
are), bar.sync waits for the phase it arrived in. Program of warp (c, k) for n tiles: consumer 1
arrives on barrier 1 once; per tile bar.sync 1 + c, "issue" tile t, bar.arrive 2 - c; consumer 0
syncs on barrier 1 once more at the end. Random sticky interleavings of the 8 warps must show: no
deadlock; every phase made of exactly one arrival of each of the 8 warps (a phase never mixes two
rounds of one warp, the argument in PREFILL_NOTES.md v8); issue order: when a warp of consumer c
issues tile t, all 4 warps of the other consumer have issued tile t - 1 + c; both barriers end empty.
--mutate count128 (a phase completing at 128 threads, i.e. one warpgroup's count) must be caught.
"""
import numpy as np

TURN_THREADS = 256


class TurnError(Exception):
    pass


def warp_program(c, n, mut):
    ev = [("arrive", 1)] if c == 1 else []
    for t in range(n):
        ev += [("sync", 1 + c), ("issue", t), ("arrive", 2 - c)]
    if c == 0 and "noturnend" not in mut:
        ev.append(("sync", 1))
    return ev


def run_turns(n, rng, mut=()):
    """One random interleaving of the 8 consumer warps for n tiles; raises TurnError on a violation."""
    need = 128 if "count128" in mut else TURN_THREADS
    warps = [(c, k) for c in (0, 1) for k in range(4)]
    prog = {w: warp_program(w[0], n, mut) for w in warps}
    pc = {w: 0 for w in warps}
    waiting = {}                       # warp -> (barrier, phase) its bar.sync waits for
    phase = {1: 0, 2: 0}
    members = {1: [], 2: []}           # warps arrived in the current phase
    issued = {w: -1 for w in warps}    # last tile issued per warp
    cur = warps[int(rng.integers(0, 8))]
    while True:
        ready = [w for w in warps if pc[w] < len(prog[w]) and not (w in waiting and phase[waiting[w][0]] == waiting[w][1])]
        if not ready:
            if any(pc[w] < len(prog[w]) for w in warps):
                raise TurnError(f"n={n}: deadlock at " + ", ".join(f"{w}: {prog[w][pc[w]] if pc[w] < len(prog[w]) else 'end'}"
                                                                for w in warps))
            break
        if cur not in ready or rng.random() < 0.2:
            cur = ready[int(rng.integers(0, len(ready)))]
        w = cur
        if w in waiting:               # its bar.sync's phase completed
            del waiting[w]
            pc[w] += 1
            continue
        op, arg = prog[w][pc[w]]
        if op == "issue":
            c, t = w[0], arg
            other = [v for v in warps if v[0] != c]
            if any(issued[v] < t - 1 + c for v in other):
                raise TurnError(f"n={n}: warp {w} issues tile {t} before consumer {1 - c} issued tile {t - 1 + c}")
            issued[w] = t
            pc[w] += 1
            continue
        b = arg
        if w in members[b]:
            raise TurnError(f"n={n}: warp {w} arrives twice in phase {phase[b]} of barrier {b}")
        members[b].append(w)
        ph = phase[b]
        if 32 * len(members[b]) == need:
            if len(members[b]) != 8 and "count128" not in mut:
                raise TurnError(f"n={n}: phase {ph} of barrier {b} completed by {members[b]}")
            if sorted(members[b]) != sorted(warps):
                raise TurnError(f"n={n}: phase {ph} of barrier {b} completed by {sorted(members[b])}, not one "
                                f"arrival of each of the 8 consumer warps")
            members[b] = []
            phase[b] += 1
        if op == "sync" and phase[b] == ph:
            waiting[w] = (b, ph)
        else:
            pc[w] += 1
    for b in (1, 2):
        if members[b]:
            raise TurnError(f"n={n}: barrier {b} ends with a partial phase {members[b]}")
    if any(issued[w] != n - 1 for w in warps):
        raise TurnError(f"n={n}: not every warp issued every tile")


def warp_sweep(schedules, mut=()):
    """run_turns over tile counts 1..24, 33, 65 and `schedules` interleavings each; returns the failures."""
    fails = 0
    for n in list(range(1, 25)) + [33, 65]:
        for sd in range(schedules):
            try:
                run_turns(n, np.random.default_rng(5000 * n + sd), mut)
            except TurnError as err:
                print(f"FAIL v8 turn warps: {err}")
                fails += 1
                break
    if not fails:
        print(f"ok   v8 turn barriers per warp: 26 tile counts x {schedules} interleavings of the 8 consumer warps: "
              "no deadlock, each phase one arrival per warp, issues alternate consumer 0, 1, balanced")
    return fails
