#!/usr/bin/env python3
"""attn_emulate_pp.py - CPU emulation of the prefill's version 3 ("v3pp",
problems/common/kernels/gqa_paged_prefill_sm90_pp.cuh, -DSF_PREFILL_WGMMA=3): two consumer warpgroups
per CTA sharing a 4-stage cp.async ring, mbarrier publication / release, ping-pong turns on named
barriers; of version 5 ("v5", gqa_paged_prefill_sm90_p5.cuh, -DSF_PREFILL_WGMMA=5, --variant 5), of
version 6 ("v6", gqa_paged_prefill_sm90_p6.cuh, -DSF_PREFILL_WGMMA=6, --variant 6) and of version 8
("v8", gqa_paged_prefill_sm90_p8.cuh, -DSF_PREFILL_WGMMA=8, --variant 8: v6 plus the consumers' turns). (Version 9 and
its emulation tools/attn_emulate_p9.py were removed in session 13: measured slower than v8.)

usage: attn_emulate_pp.py [--seeds N] [--schedules N] [--quick] [--pingpong 0|1] [--variant 3|5|6|7|8]
                          [--lean] [--mutate NAME] [--protocol-only]
--lean (with --variant 8): -DSF_PREFILL_LEAN=1, the consumers of tools/attn_emulate_lean.py (its docstring).

--pingpong 0 checks -DSF_PREFILL_WGMMA=4 ("v3np"): the same kernel without the turn barriers.
--variant 5 checks v5: 128-key tiles (S m64n128 per warpgroup, 8 gather rows per thread and tile), a 3-stage ring
with G(t) = {K(t+2), V(t+1)} published at tile t+1 after S(t+1) completes, no turns; p5_events() transcribes
prefill_attend_p5 with its loop-carried stage / parity; the data path uses the 128-row K descriptors, the 2-set
slot rotation, the 128-key mask rule and v5's gather of rows past the CTA's last key (the slot of key n_kv - 1,
real data that the mask must remove, instead of a zero-fill).
--variant 6 checks v6: v5's tiles, ring and consumer work, three agents: the producer warpgroup (agent 0, the only
writer: 128 threads x 16 rows per tile, groups {Q, K0}, V0, K1, V1, ..., group g - 2 published after group g is
committed ({Q, K0} after V0's), empty waits before reusing a stage) and two consumers (agents 1, 2: no gathers;
K(t) released after wgmma.wait 1, V(t - 1) after wait 0). Full barriers complete on the producer's arrival,
empty ones on both consumers'. p6_events() transcribes prefill_attend_p6 with its loop-carried stage / parity;
the data path uses the producer's rows (p / 16 + 8 i) and its one slot set, refetched for tile t + 1 after V(t).
--variant 8 checks v8: v6 plus the consumers' turns (named barriers 1, 2; count = both consumers; a second
arrival of one consumer in a phase, a partial phase at the end or S issues not alternating 0, 1, 0, 1 fail),
then per warp in tools/attn_emulate_p8.py (its docstring). Mutations: turn, noturn0, turnown, skipmasked
(consumer 0 stops one tile early), count128, noturnend (tools/attn_emulate_p8.py).

Part 1, the protocol (no data): pp_events() / p5_events() / p6_events() transcribe each agent's program
order (gathers, cp.async commits / wait_group counts, proxy fences, mbarrier arrives and parity waits,
named-barrier syncs and arrives, wgmma reads, commits and waits). Sim runs the lists under a random, sticky
scheduler (agents drift apart as far as the synchronisation lets them) and checks the PTX rules at every
step: a wgmma reads a tile only when every writer's part was retired (wait_group), fenced to the async proxy
and released by an mbarrier arrive whose phase the reader waited for; a gather overwrites a buffer only when
every wgmma that read its old tile retired and the writer acquired that through the empty mbarrier; a
softmax starts only after its S retired; (--lean) P is packed only when no wgmma of its consumer is
unretired; an mbarrier or named-barrier phase takes one arrival per agent; parity waits see the phase the
kernel means; no deadlock; at the end no wgmma in flight, every named-barrier phase complete, every K and V
tile gathered once and read once per reader. A warpgroup is one agent (its 128 threads run the same list).

Part 2, the data (PPData, tools/attn_emulate_pp_data.py): the same scheduler drives the kernel's data path on
a NaN-initialised shared image (tools/attn_emulate_wg.py's sw128 / descriptor / fragment model): the gathers
with the kernel's slot rotation (slot = page x ps + pos % ps), descriptors as one base plus constants
(desc_add), each warpgroup's 64 rows of the 128-row Q, the base-2 online softmax with the per-warpgroup causal
limits, the rescale skipped by warp vote, the epilogue; compared with the float64 reference. Mode "late" lands
copies when wait_group retires them and runs a wgmma's reads when wgmma.wait retires it; "early" does both at
issue.

--mutate: noempty (gathers skip the empty wait), pubearly (publish with wait_group 2), parity (full waits one
phase off), turn (warpgroup 0 without its final sync), arrive2 (K published twice), slotv (V gathered with K's
current slots instead of the previous tile's), vote (rescale skipped when any lane's max is unchanged), limmin
(warpgroup 0 takes warpgroup 1's mask rule, skipping a needed mask; v5 only: evpar (the empty-V wait with the
parity of tile t-1 instead of t-2), khalf (the K descriptor's dim-half stride of a 64-row tile); v6: noempty,
pubearly (wait_group 3), parity, arrive2, evpar (the producer's empty-V parity off), slotv (V(t) gathered with
tile t+1's slots), limmin, khalf, nofence (K published without the proxy fence), ekearly (K(t) released before
S(t) retired)); --lean: packearly, smearly (tools/attn_emulate_lean.py). A data-path mutation's run skips the
protocol sweep. Exit 1 on any failure (or, with --mutate, prints the failure and exits 1: the suite expects that).
"""
import argparse
import sys

import numpy as np

import attn_emulate_lean
import attn_emulate_pp_data
from attn_emulate import BN, D, HKV, HQ, bf16_round, check, make_case, reference
from attn_emulate_pp_data import PP_TOK, ROW_BYTES
# the variant's geometry (set_variant): keys per tile, ring stages, gather rows per thread and tile
KB, ST, ROWS, TILE_BYTES, VAR = BN, 4, 4, BN * ROW_BYTES, 3
MUT = set()
PING = [1]  # 0: -DSF_PREFILL_WGMMA=4 (v3np), no turn barriers


def set_variant(v):
    """3 / 4: v3pp / v3np (64-key tiles, 4 stages); 5: v5 (128-key tiles, 3 stages, no turns); 6: v6 (v5's
    tiles and ring, one producer warpgroup of 128 threads gathering 16 rows per thread and tile)."""
    global KB, ST, ROWS, TILE_BYTES, VAR
    VAR = v
    KB, ST = (128, 3) if v >= 5 else (BN, 4)
    ROWS = KB * 16 // (128 if v == 6 else 256)
    TURN8[0] = 0
    TILE_BYTES = KB * ROW_BYTES
    PING[0] = 1 if v == 3 else 0


def p5_events(n, w):
    """One warpgroup's events, in the order of prefill_attend_p5 (v5). The stage and parity of each
    barrier are computed by the kernel's own recurrence (st, ph loop-carried; sp, sn, php, ph2 by
    selects); Sim checks them against the tile numbers (the fourth field), which are plain."""
    ev = [("load", "Q", 0), ("load", "K0", 0), ("commit",)]
    if n > 1:
        ev.append(("load", "K1", 1))
    ev += [("load", "V0", 0), ("commit",), ("cpwait", 1), ("fence",), ("arrive", ("FK", 0))]
    st, ph = 0, 0
    for t in range(n):
        sp = 2 if st == 0 else st - 1
        sn = 0 if st == 2 else st + 1
        php = ph ^ 1 if st == 0 else ph
        ph2 = ph if st == 2 else ph ^ 1
        if "parity" in MUT:
            ph ^= 1
        ev.append(("mwait", ("FK", st), ph, t))
        if "parity" in MUT:
            ph ^= 1
        if t > 0:
            ev.append(("mwait", ("FV", sp), php, t - 1))
        ev += [("read", "Q", 0, t), ("read", f"K{st}", t, t), ("wcommit",)]
        if t > 0:
            ev.append(("read", f"V{sp}", t - 1, t - 1))
        ev += [("wcommit",), ("wwait", 1), ("cpwait", 1 if "pubearly" in MUT else 0), ("fence",)]
        if t + 1 < n:
            ev.append(("arrive", ("FK", sn)))
            if "arrive2" in MUT and t == 1:
                ev.append(("arrive", ("FK", sn)))
        ev += [("arrive", ("FV", st)), ("softmax", t), ("wwait", 0), ("rescale", t), ("arrive", ("EK", st))]
        if t > 0:
            ev.append(("arrive", ("EV", sp)))
        if t + 2 < n:
            if t >= 1 and "noempty" not in MUT:
                ev.append(("mwait", ("EK", sp), php, t - 1))
            ev.append(("load", f"K{sp}", t + 2))
        if t + 1 < n:
            if t >= 2:
                ev.append(("mwait", ("EV", sn), php if "evpar" in MUT else ph2, t - 2))
            ev.append(("load", f"V{sn}", t + 1))
        ev += [("commit",), ("rotate", t)]
        st = sn
        ph ^= 1 if st == 0 else 0
    sl = (n - 1) % ST
    ev += [("mwait", ("FV", sl), ((n - 1) // ST) & 1, n - 1), ("read", f"V{sl}", n - 1, n - 1),
           ("wcommit",), ("wwait", 0)]
    return ev


TURN8 = [0]  # --variant 8: v6's events plus the consumers' turns (set_variant(6) first, then TURN8[0] = 1)
LEAN = [0]  # --lean (with --variant 8): v8's lean consumers (tools/attn_emulate_lean.py)


def p6_events(n, w):
    """v6 (prefill_attend_p6): agent 0 is the producer warpgroup, agents 1 and 2 the consumers. Producer:
    cp.async groups {Q, K0}, V0, K1, V1, ...; after committing group g >= 3 it retires group g - 2
    (wait_group 2), fences and arrives on its full barrier ({Q, K0} after V0's commit, wait_group 1;
    the last K and V by wait_group 1 and 0 after the loop); a gather into a stage that held tile i - 3
    waits for the consumers' release (parity ((i - 3) / 3) & 1 = ph ^ 1, st / ph loop-carried as in the
    kernel). Consumer: wait full -> S(t), PV(t - 1) -> wait 1 -> release K(t) -> softmax -> wait 0 ->
    release V(t - 1) -> rescale; the last PV after the loop."""
    ev, st, ph = [], 0, 0
    if w == 0:
        ev.append(("load", "Q", 0))
        lag = 3 if "pubearly" in MUT else 2
        for i in range(n):
            sp = 2 if st == 0 else st - 1
            if i >= ST and "noempty" not in MUT:
                ev.append(("mwait", ("EK", st), ph ^ 1, i - ST))
            ev += [("load", f"K{st}", i), ("commit",)]
            if i >= 2:
                ev += [("cpwait", lag)] + ([] if "nofence" in MUT else [("fence",)]) + [("arrive", ("FK", sp))]
                if "arrive2" in MUT and i == 2:
                    ev.append(("arrive", ("FK", sp)))
            if "slotv" in MUT and i + 1 < n:
                ev.append(("rotate", i))  # V(i) with the slots of tile i + 1
            if i >= ST:
                ev.append(("mwait", ("EV", st), ph if "evpar" in MUT else ph ^ 1, i - ST))
            ev += [("load", f"V{st}", i), ("commit",)]
            if i == 0:  # {Q, K0} at once
                ev += [("cpwait", lag - 1), ("fence",), ("arrive", ("FK", 0))]
            else:
                ev += [("cpwait", lag), ("fence",), ("arrive", ("FV", sp))]
            if i + 1 < n and "slotv" not in MUT:
                ev.append(("rotate", i))
            st = 0 if st == 2 else st + 1
            ph ^= 1 if st == 0 else 0
        sl = (n - 1) % ST
        if n >= 2:
            ev += [("cpwait", 1), ("fence",), ("arrive", ("FK", sl))]
        return ev + [("cpwait", 0), ("fence",), ("arrive", ("FV", sl))]
    c = w - 1  # v8: consumer index; turn barriers 1 + c (mine) and 2 - c (the other's)
    if LEAN[0]:
        return attn_emulate_lean.consumer_events(n, c, ST, TURN8[0], MUT)
    if TURN8[0] and c == 0 and "skipmasked" in MUT and n >= 2:
        n -= 1  # consumer 0 skips the last tile (fully masked for it): the other's last turn never comes
    if TURN8[0] and c == 1 and "noturn0" not in MUT:
        ev.append(("barrive", 1))
    for t in range(n):
        sp = 2 if st == 0 else st - 1
        php = ph ^ 1 if st == 0 else ph
        ev.append(("mwait", ("FK", st), ph ^ (1 if "parity" in MUT else 0), t))
        if t > 0:
            ev.append(("mwait", ("FV", sp), php, t - 1))
        if TURN8[0]:
            ev.append(("bsync", 1 + c))
        ev += [("read", "Q", 0, t), ("read", f"K{st}", t, t), ("wcommit",)]
        if t > 0:
            ev.append(("read", f"V{sp}", t - 1, t - 1))
        ev.append(("wcommit",))
        if TURN8[0]:
            ev.append(("barrive", 1 + c if "turnown" in MUT else 2 - c))
        if "ekearly" in MUT:  # K(t) released before S(t) retired
            ev += [("arrive", ("EK", st)), ("wwait", 1)]
        else:
            ev += [("wwait", 1), ("arrive", ("EK", st))]
        ev += [("softmax", t), ("wwait", 0)]
        if t > 0:
            ev.append(("arrive", ("EV", sp)))
        ev.append(("rescale", t))
        st = 0 if st == 2 else st + 1
        ph ^= 1 if st == 0 else 0
    sl = (n - 1) % ST
    ev += [("mwait", ("FV", sl), ((n - 1) // ST) & 1, n - 1), ("read", f"V{sl}", n - 1, n - 1),
           ("wcommit",), ("wwait", 0)]
    if TURN8[0] and c == 0 and "turn" not in MUT:
        ev.append(("bsync", 1))  # consumer 1's arrival after its last tile: both barriers end balanced
    return ev


def pp_events(n, w):
    """One warpgroup's events, in the order of prefill_attend_pp. Buffers: "Q", "K0".."K3", "V0".."V3";
    mbarriers ("FK", s), ("FV", s), ("EK", s), ("EV", s)."""
    ev = [("load", "Q", 0), ("load", "K0", 0), ("commit",)]
    if n > 1:
        ev.append(("load", "K1", 1))
    ev += [("load", "V0", 0), ("commit",)]
    if n > 2:
        ev.append(("load", "K2", 2))
    if n > 1:
        ev.append(("load", "V1", 1))
    ev += [("commit",), ("cpwait", 2), ("fence",), ("arrive", ("FK", 0))]
    if w == 1 and PING[0]:
        ev.append(("barrive", 1))
    par = 1 if "parity" in MUT else 0
    for t in range(n):
        st, sp = t % ST, (t - 1) % ST
        ev.append(("mwait", ("FK", st), ((t // ST) & 1) ^ par, t))
        if t > 0:
            ev.append(("mwait", ("FV", sp), ((t - 1) // ST) & 1, t - 1))
        ev += ([("bsync", 1 + w)] if PING[0] else []) + [("read", "Q", 0, t), ("read", f"K{st}", t, t), ("wcommit",)]
        if t > 0:
            ev.append(("read", f"V{sp}", t - 1, t - 1))
        ev += [("wcommit",)] + ([("barrive", 2 - w)] if PING[0] else [])
        ev += [("cpwait", 2 if "pubearly" in MUT else 1), ("fence",)]
        if t + 1 < n:
            ev.append(("arrive", ("FK", (t + 1) % ST)))
            if "arrive2" in MUT and t == 1:
                ev.append(("arrive", ("FK", (t + 1) % ST)))
        ev += [("arrive", ("FV", st)), ("wwait", 1), ("softmax", t), ("wwait", 0), ("rescale", t),
               ("arrive", ("EK", st))]
        if t > 0:
            ev.append(("arrive", ("EV", sp)))
        if t + 3 < n:
            if t >= 1 and "noempty" not in MUT:
                ev.append(("mwait", ("EK", sp), ((t - 1) // ST) & 1, t - 1))
            ev.append(("load", f"K{sp}", t + 3))
        if t + 2 < n:
            s2 = (t + 2) % ST
            if t >= 2:
                ev.append(("mwait", ("EV", s2), ((t - 2) // ST) & 1, t - 2))
            ev.append(("load", f"V{s2}", t + 2))
        ev += [("commit",), ("rotate", t)]
    ev += [("mwait", ("FV", (n - 1) % ST), ((n - 1) // ST) & 1, n - 1), ("read", f"V{(n - 1) % ST}", n - 1, n - 1),
           ("wcommit",), ("wwait", 0)]
    if w == 0 and "turn" not in MUT and PING[0]:
        ev.append(("bsync", 1))
    return ev


class ProtocolError(Exception):
    pass


class Sim:
    """Two warpgroups' event lists under a random sticky scheduler, with the protocol checks; `data`
    (a PPData or None) gets the data-path callbacks."""

    def __init__(self, n, rng, data=None):
        self.n, self.rng, self.data = n, rng, data
        evs = p6_events if VAR == 6 else p5_events if VAR == 5 else pp_events
        # agents: v6 = producer 0 (the only writer) + consumers 1, 2 (the readers); else 2 warpgroups doing both
        self.ag = (0, 1, 2) if VAR == 6 else (0, 1)
        self.writers, self.readers = ((0,), (1, 2)) if VAR == 6 else ((0, 1), (0, 1))
        self.coff = 1 if VAR == 6 else 0  # the data path's consumer index = agent - coff
        self.ev = [evs(n, w) for w in self.ag]
        self.pc = [0] * len(self.ag)
        self.groups = [[] for _ in self.ag]  # cp.async committed groups per agent: lists of (buf, tile)
        self.cur = [[] for _ in self.ag]
        self.part = {}                  # (buf, writer) -> [tile, "pending"|"retired"|"fenced"]
        self.acq = [set() for _ in self.ag]  # (buf, tile, writer) an agent may read (published, acquired)
        self.mb = {}                    # mbarrier -> dict(phase, arr set, rel set, done list of rel sets)
        self.nb = {1: set(), 2: set()}  # named barrier -> warpgroups arrived in the current phase
        self.nb_phase = {1: 0, 2: 0}
        self.nb_wait = [None] * len(self.ag)  # (barrier, phase) a warpgroup's bar.sync waits for
        self.wg = [[] for _ in self.ag]  # wgmma committed groups: lists of (buf, tile)
        self.wcur = [[] for _ in self.ag]
        self.reads = {}                 # buf -> list of [tile, reader, "running"|"retired"]
        self.read_rel = [set() for _ in self.ag]  # (buf, tile, reader) retired reads released / acquired
        self.loads, self.seen = {}, {}
        self.issue = []                 # v8: the consumer of each S issue, in issue order (Q reads)

    def per(self, key):
        """tiles per phase of mbarrier `key` (a ring barrier completes once per ST tiles)"""
        return ST

    def mbar(self, key):
        return self.mb.setdefault(key, {"phase": 0, "arr": set(), "rel": set(), "done": []})

    def blocked(self, w):
        if self.nb_wait[w] is not None:
            b, ph = self.nb_wait[w]
            return self.nb_phase[b] == ph
        e = self.ev[w][self.pc[w]]
        if e[0] == "mwait":
            ph = self.mbar(e[1])["phase"]
            if ph >= e[3] // self.per(e[1]) + 2:
                raise ProtocolError(f"wg{w} {e}: the barrier is {ph - e[3] // self.per(e[1]) - 1} phases past the "
                                    f"one meant (tile {e[3]}): the parity wait aliases")
            return (ph & 1) == e[2]  # try_wait.parity p passes once the current phase's parity is not p
        return False

    def step(self, w):
        if self.nb_wait[w] is not None:  # the bar.sync's wait is over
            self.nb_wait[w] = None
            self.pc[w] += 1
            return
        e = self.ev[w][self.pc[w]]
        at = f"wg{w} event {self.pc[w]} {e}"
        k = e[0]
        if k == "load":
            buf, tile = e[1], e[2]
            for r in self.reads.get(buf, []):
                if r[0] != tile and (r[2] != "retired" if r[1] == w else (buf, r[0], r[1]) not in self.read_rel[w]):
                    raise ProtocolError(f"{at}: overwrites {buf} while wg{r[1]}'s wgmma reading tile {r[0]} may "
                                        f"still run ({r[2]}, not acquired by wg{w})")
            p = self.part.get((buf, w))
            if p and p[1] == "pending":
                raise ProtocolError(f"{at}: overwrites {buf} before its own gather of tile {p[0]} retired")
            self.part[(buf, w)] = [tile, "pending"]
            self.cur[w].append((buf, tile))
            key = (buf[0], tile, w)
            self.loads[key] = self.loads.get(key, 0) + 1
            if self.data:
                self.data.load(w, buf, tile)
        elif k == "commit":
            self.groups[w].append(self.cur[w])
            self.cur[w] = []
        elif k == "cpwait":
            while len(self.groups[w]) > e[1]:
                for buf, tile in self.groups[w].pop(0):
                    if self.part[(buf, w)][0] == tile:
                        self.part[(buf, w)][1] = "retired"
                    if self.data:
                        self.data.land(w, buf, tile)
        elif k == "fence":
            for (buf, wr), p in self.part.items():
                if wr == w and p[1] == "retired":
                    p[1] = "fenced"
        elif k == "arrive":
            m = self.mbar(e[1])
            if w in m["arr"]:
                raise ProtocolError(f"{at}: second arrival of wg{w} in phase {m['phase']} of {e[1]}")
            m["arr"].add(w)
            if e[1][0] in ("FK", "FV"):
                m["rel"] |= {(buf, p[0], wr) for (buf, wr), p in self.part.items() if wr == w and p[1] == "fenced"}
            else:
                m["rel"] |= {(buf, r[0], r[1]) for buf, rs in self.reads.items() for r in rs
                             if r[1] == w and r[2] == "retired"}
            if len(m["arr"]) == len(self.writers if e[1][0] in ("FK", "FV") else self.readers):
                m["done"].append(m["rel"])
                m["phase"] += 1
                m["arr"], m["rel"] = set(), set()
        elif k == "mwait":
            m = self.mbar(e[1])
            if m["phase"] != e[3] // self.per(e[1]) + 1:
                raise ProtocolError(f"{at}: passed with {m['phase']} phases complete; tile {e[3]} needs exactly "
                                    f"{e[3] // self.per(e[1]) + 1}")
            for rel in m["done"]:
                (self.acq[w] if e[1][0] in ("FK", "FV") else self.read_rel[w]).update(rel)
        elif k == "bsync":
            b = e[1]
            if w in self.nb[b]:
                raise ProtocolError(f"{at}: wg{w} arrives twice in one phase of named barrier {b}")
            self.nb[b].add(w)
            ph = self.nb_phase[b]
            self.complete_nb(b)
            if self.nb_phase[b] == ph:
                self.nb_wait[w] = (b, ph)
                return
        elif k == "barrive":
            b = e[1]
            if w in self.nb[b]:
                raise ProtocolError(f"{at}: wg{w} arrives twice in one phase of named barrier {b}")
            self.nb[b].add(w)
            self.complete_nb(b)
        elif k == "read":
            buf, tile = e[1], e[2]
            for wr in self.writers:
                p = self.part.get((buf, wr))
                if not p or p[0] != tile:
                    raise ProtocolError(f"{at}: wg{wr}'s half of {buf} holds tile {p[0] if p else None}, not {tile}")
                if (buf, tile, wr) not in self.acq[w]:
                    raise ProtocolError(f"{at}: reads wg{wr}'s half of {buf} (tile {tile}) without an acquired "
                                        f"release of it (retired, fenced, arrived, waited)")
            if buf == "Q":
                self.issue.append(w)
            self.wcur[w].append((buf, tile, e[3]))
            self.reads.setdefault(buf, []).append([tile, w, "running"])
            key = (buf[0], tile, w)
            self.seen[key] = self.seen.get(key, 0) + 1
            if self.data and not self.data.late:
                self.data.wgmma(w - self.coff, buf, tile, e[3])
        elif k == "wcommit":
            self.wg[w].append(self.wcur[w])
            self.wcur[w] = []
        elif k == "wwait":
            while len(self.wg[w]) > e[1]:
                for buf, tile, t in self.wg[w].pop(0):
                    for r in self.reads[buf]:
                        if r[0] == tile and r[1] == w and r[2] == "running":
                            r[2] = "retired"
                    if self.data and self.data.late:
                        self.data.wgmma(w - self.coff, buf, tile, t)
        elif k == "pack":  # lean: P(t) into pa, the A operand of this consumer's last PV
            if self.wg[w] or self.wcur[w]:
                raise ProtocolError(f"{at}: P packed into pa while a wgmma of wg{w} is not retired (wait 0)")
            if self.data:
                self.data.pack(w - self.coff, e[1])
        elif k == "softmax" and any(b[0] == "K" and tl == e[1] for g in self.wg[w] + [self.wcur[w]] for b, tl, _ in g):
            raise ProtocolError(f"{at}: softmax of tile {e[1]} before its S retired (wgmma wait)")
        elif k in ("softmax", "rescale", "rotate"):
            if self.data:
                getattr(self.data, k)(w if k == "rotate" else w - self.coff, e[1])
        self.pc[w] += 1

    def complete_nb(self, b):
        if len(self.nb[b]) == 2:
            self.nb[b] = set()
            self.nb_phase[b] += 1

    def run(self):
        cur = int(self.rng.integers(0, len(self.ag)))
        while any(self.pc[w] < len(self.ev[w]) for w in self.ag):
            ready = [w for w in self.ag if self.pc[w] < len(self.ev[w]) and not self.blocked(w)]
            if not ready:
                raise ProtocolError("deadlock: " + ", ".join(
                    f"agent {w} at {self.ev[w][self.pc[w]] if self.pc[w] < len(self.ev[w]) else 'end'}" for w in self.ag))
            if cur not in ready or self.rng.random() < 0.15:  # sticky: long runs of one warpgroup
                cur = ready[int(self.rng.integers(0, len(ready)))]
            self.step(cur)
        if any(self.wg) or any(self.wcur):
            raise ProtocolError("wgmma groups still in flight at the end")
        self.final_checks()

    def final_checks(self):
        """balanced named barriers; v8: the S issues alternate consumer 0, 1, 0, 1, ...; every tile gathered
        once and read once per reader"""
        if TURN8[0] and self.issue != [1, 2] * self.n:
            raise ProtocolError(f"v8 issue order {self.issue[:12]}... is not consumer 0, 1, 0, 1, ... per tile")
        for b in (1, 2):
            if self.nb[b]:
                raise ProtocolError(f"named barrier {b} ends with a partial phase {sorted(self.nb[b])}")
        want = {(c, t, w): 1 for c in "KV" for t in range(self.n) for w in self.writers}
        want.update({("Q", 0, w): 1 for w in self.writers})
        if self.loads != want:
            raise ProtocolError(f"gathers per (cache, tile, wg) {sorted(self.loads.items())} != once each")
        want_r = {(c, t, w): 1 for c in "KV" for t in range(self.n) for w in self.readers}
        want_r.update({("Q", 0, w): self.n for w in self.readers})
        if self.seen != want_r:
            raise ProtocolError(f"reads per (cache, tile, wg) {sorted(self.seen.items())} wrong")


def vname():
    return ("v8lean" + ("2" if LEAN[0] == 2 else "") if LEAN[0] else "v8") if TURN8[0] else f"v{VAR}" if VAR >= 5 else "v3pp" if PING[0] else "v3np"


PROTO_TILES = list(range(1, 24)) + [31, 32, 33, 64, 65, 129]


def protocol_sweep(schedules):
    fails = 0
    for n in PROTO_TILES:
        for sd in range(schedules):
            try:
                Sim(n, np.random.default_rng(1000 * n + sd)).run()
            except ProtocolError as err:
                print(f"FAIL protocol {vname()} n_tiles={n} schedule {sd}: {err}")
                fails += 1
                break
    if not fails:
        print(f"ok   protocol {vname()}: {len(PROTO_TILES)} tile counts 1..{PROTO_TILES[-1]} x {schedules} random "
              f"interleavings of {'the producer and two consumers' if VAR == 6 else 'the two warpgroups'}: no deadlock, no early read, no early overwrite, barriers balanced")
    return fails


class PPData(attn_emulate_pp_data.PPData):
    """The data path of one CTA (tools/attn_emulate_pp_data.py) with this module's variant state."""

    cfg = sys.modules[__name__]


def emulate_pp(c, late, seed):
    """Every CTA of prefill_plan<32>'s items (heaviest first, as the grid does) under a random schedule."""
    out = np.full((c["total_q"], HQ, D), np.nan)
    lse = np.full((c["total_q"], HQ), np.nan)
    items = [(b, t) for b in range(c["batch"]) for t in range((int(c["qo"][b]) + PP_TOK - 1) // PP_TOK)]
    max_items = c["total_q"] // PP_TOK + c["batch"]
    assert max_items >= len(items)
    rng = np.random.default_rng(seed)
    for blk in range(max_items * HKV):
        kvh, idx = blk % HKV, len(items) - 1 - blk // HKV
        if idx < 0:
            continue
        d = PPData(c, items[idx][0], items[idx][1], kvh, late)
        Sim(d.n, rng, d).run()
        d.store(out, lse)
    return out, lse


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=1, help="random compositions per page size")
    ap.add_argument("--schedules", type=int, default=6, help="random interleavings per tile count")
    ap.add_argument("--mutate", choices=("noempty", "pubearly", "parity", "turn", "arrive2", "slotv", "vote", "limmin",
                                         "evpar", "khalf", "nofence", "ekearly", "noeq", "infoearly", "noflush",
                                         "nolastv", "acc1", "eqearly", "noturn0", "turnown", "skipmasked",
                                         "count128", "noturnend", "packearly", "smearly", "thrstale"))
    ap.add_argument("--lean", type=int, nargs="?", const=1, default=0, choices=(0, 1, 2),
                    help="with --variant 8: -DSF_PREFILL_LEAN=1 (the lean consumers) or 2 (and the kept maxima)")
    ap.add_argument("--protocol-only", action="store_true")
    ap.add_argument("--quick", action="store_true", help="one small ragged ps16 composition, early mode (CI)")
    ap.add_argument("--pingpong", type=int, choices=(0, 1), default=1,
                    help="0: the variant without turn barriers (-DSF_PREFILL_WGMMA=4, v3np)")
    ap.add_argument("--variant", type=int, choices=(3, 5, 6, 7, 8), default=3,
                    help="5: version 5 (-DSF_PREFILL_WGMMA=5: 128-key tiles, 3 stages, no turns); 6: version 6 "
                         "(-DSF_PREFILL_WGMMA=6: v5 with a producer warpgroup); 7: version 7 (persistent v6: "
                         "tools/attn_emulate_p7.py); 8: version 8 (-DSF_PREFILL_WGMMA=8: v6 with the "
                         "consumers' ping-pong turns)")
    ap.add_argument("--ctas", type=int, default=3, help="--variant 7: persistent CTAs per composition")
    args = ap.parse_args()
    if args.variant == 7:
        import attn_emulate_p7
        return attn_emulate_p7.main7(args)
    if args.mutate:
        MUT.add(args.mutate)
    set_variant(6 if args.variant == 8 else args.variant if args.variant >= 5 or args.pingpong else 4)
    TURN8[0] = 1 if args.variant == 8 else 0
    LEAN[0] = args.lean if args.variant == 8 else 0
    # a data-path mutation leaves the event lists alone: its run skips the (then redundant) sweep
    if args.mutate not in ("slotv", "vote", "limmin", "khalf", "thrstale") and protocol_sweep(args.schedules):
        return 1
    if TURN8[0]:  # the turns once more, each consumer warp its own agent (tools/attn_emulate_p8.py)
        import attn_emulate_p8
        if attn_emulate_p8.warp_sweep(max(args.schedules, 4), {args.mutate} - {None}):
            return 1
    if args.protocol_only:
        return 0
    cases = [
        # a prefix longer than the new tokens (every ring stage reused), an empty sequence, 5 tokens; ps 1
        ("ps1 prefix", make_case(np.random.default_rng(21), 1, 0, True, fixed=([37, 0, 5], [420, 9, 70]))),
        # ps 16: 33 tokens (a 1-token second item), empty first, single token after a 300-key prefix
        # ps 16: empty first, 33 tokens (a 1-token second item), 5 tokens after a 50-key prefix (the first
        # warpgroup's first limit 50 sits in the last 16 keys of its tile: the per-warpgroup mask rule),
        # a single token after a 300-key prefix
        ("ps16 ragged", make_case(np.random.default_rng(22), 16, 0, True, fixed=([0, 33, 5, 1], [0, 33, 55, 301]))),
        # the runtime page size (3): 70 tokens over 2 full items + 6, after 130 prefix keys
        ("ps3 runtime", make_case(np.random.default_rng(23), 3, 0, True, fixed=([70], [200]))),
    ]
    if VAR >= 5:
        # v5's tiles are 128 keys: a first limit in the last 16 keys of a tile (prefix 120: wg0's limits
        # 120 .. 124, the per-warpgroup mask rule) and a single token after 519 keys (5 tiles: every
        # stage of the 3-stage ring reused)
        cases.insert(1, ("ps16 ragged128", make_case(np.random.default_rng(24), 16, 0, True,
                                                     fixed=([0, 33, 5, 1], [0, 33, 125, 520]))))
        # long prefixes: 8 tiles of 128 keys (every stage reused twice), 3 items of a 70-token sequence
        cases.append(("ps1 long128", make_case(np.random.default_rng(25), 1, 0, True, fixed=([70, 40], [1000, 300]))))
    # prefix 16, 128 tokens: the last item (tokens 96..127, 144 keys, 2 tiles) gives consumer 0 (limits
    # 112..127) a fully masked tile 1, which it still walks (v8: its turns must stay balanced)
    masked = ("ps1 masked tail", make_case(np.random.default_rng(26), 1, 0, True, fixed=([128], [144])))
    if LEAN[0] == 2:  # keys 300.. 4x larger: maxima grow by more than 8 after tile 0 (the kept-max rule's rescale)
        cases.insert(0, ("ps1 growth", attn_emulate_lean.growth_case(make_case(np.random.default_rng(27), 1, 0, True,
                                                                                fixed=([40], [520])), 300, bf16_round)))
    if args.quick:
        cases = cases[:1] + cases[2:3] + ([masked] if TURN8[0] else []) if LEAN[0] == 2 else \
            cases[1:2] + ([masked] if TURN8[0] else [])
    elif VAR >= 5:
        cases.append(masked)
    for sd in range(0 if args.quick else args.seeds):
        for ps in (1, 16):
            rng = np.random.default_rng(7000 + 100 * sd + ps)
            cases.append((f"ps{ps} seed{sd}", make_case(rng, ps, int(rng.integers(1, 5)), True)))
    fails = n = 0
    for i, (name, c) in enumerate(cases):
        ref = reference(c, True)
        for late in ((False,) if args.quick else (False, True)):
            n += 1
            fails += not check(f"prefill-{vname()} {name} {'late' if late else 'early'} qo={c['qo'].tolist()} "
                               f"kv={c['kv'].tolist()}", emulate_pp(c, late, 31 * i + late), ref)
    print(f"{n - fails} passed, {fails} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ProtocolError as err:
        print(f"FAIL protocol (data run): {err}")
        sys.exit(1)
