#!/usr/bin/env python3
"""attn_emulate_p7.py - CPU emulation of the prefill's version 7 ("v7",
problems/common/kernels/gqa_paged_prefill_sm90_p7.cuh, -DSF_PREFILL_WGMMA=7): version 6 made persistent.
Run through `attn_emulate_pp.py --variant 7 [--ctas N] [--seeds N] [--schedules N] [--quick]
[--protocol-only] [--mutate NAME]` (this module holds the v7 parts; attn_emulate_pp.py the shared Sim,
data path and reference).

A CTA walks a list of work units (32-token item x kv head); its three agents (producer 0, consumers 1,
2) run p7_events(): v6's per-unit program with the ring's stage / parity carried across units (tile
numbers are the CTA's global tile count), plus
  - EMPTY_Q ("EQ", 256 consumer arrivals, one phase per unit): a consumer arrives right after its
    unit's last S retired; the producer waits phase k - 1 before gathering Q of unit k and before
    writing the unit's info;
  - the info slot ("I"): a plain shared store by the producer (released by its next FULL_K arrival),
    read by the consumers after the unit's first FULL_K wait (its last reader must be acquired through
    EQ before the next write);
  - the producer's flush at a unit's end (the last K and V published by wait_group 1 / 0) and the
    consumers' release of the last V;
  - the end: the producer waits EQ, writes "no unit" and arrives on the next FULL_K; the consumers
    read it and stop.
Sim's checks (attn_emulate_pp.py) apply to every buffer including Q (unit k's Q must not be
overwritten before both consumers' S of unit k - 1 retired and were acquired) and the info slot; the
EQ barrier's phases count units (Sim.per). Units are claimed by CTAs in the kernel's order (unit u =
kv head u % 8 of item n_items - 1 - u / 8) through a random interleaving of the CTAs' claims (the
dynamic counter), each CTA first taking unit = its index.

Data path: one attn_emulate_pp.PPData per unit, all of a CTA's units on one shared-memory image and one
list of pending copies; the consumers' O carries over from one unit to the next (stale; NaN before the
first) and the first PV of a unit overwrites it (the kernel's scale-d 0), the rescale is skipped at
tile 0 (the kernel's t > 0), as in the kernel.

Mutations (each must fail): noeq (no EMPTY_Q wait), infoearly (the info written before the EQ wait),
eqearly (EQ arrived before the last S retired), noflush (no flush at a unit's end: deadlock), nolastv
(the last V never released: deadlock in a later unit), acc1 (a unit's first PV accumulates onto the
stale O), parity (full waits one phase off), noempty (gathers without the empty wait).
"""
import sys

import numpy as np

import attn_emulate_pp as pp
from attn_emulate import HKV, check, make_case, reference

MUT = pp.MUT


def p7_events(units, w):
    """Agent w's program for a CTA whose units have tile counts `units` (in claim order)."""
    ST = pp.ST
    ev, st, ph, gi = [], 0, 0, 0
    if w == 0:
        for k, n in enumerate(units):
            ev.append(("unit", k))
            for i in range(n):
                sp = 2 if st == 0 else st - 1
                if gi >= ST and "noempty" not in MUT:
                    ev.append(("mwait", ("EK", st), ph ^ 1, gi - ST))
                ev.append(("load", f"K{st}", gi))
                if i == 0:
                    if "infoearly" in MUT:
                        ev.append(("winfo", k))
                    if k > 0 and "noeq" not in MUT:
                        ev.append(("mwait", ("EQ",), (k - 1) & 1, k - 1))
                    ev.append(("load", "Q", k))
                    if "infoearly" not in MUT:
                        ev.append(("winfo", k))
                ev.append(("commit",))
                if i >= 2:
                    ev += [("cpwait", 2), ("fence",), ("arrive", ("FK", sp))]
                if gi >= ST and "noempty" not in MUT:
                    ev.append(("mwait", ("EV", st), ph ^ 1, gi - ST))
                ev += [("load", f"V{st}", gi), ("commit",)]
                if i == 0:
                    ev += [("cpwait", 1), ("fence",), ("arrive", ("FK", st))]
                else:
                    ev += [("cpwait", 2), ("fence",), ("arrive", ("FV", sp))]
                if i + 1 < n:
                    ev.append(("rotate", i))
                st = 0 if st == 2 else st + 1
                ph ^= 1 if st == 0 else 0
                gi += 1
            if "noflush" not in MUT:
                sl = 2 if st == 0 else st - 1
                if n >= 2:
                    ev += [("cpwait", 1), ("fence",), ("arrive", ("FK", sl))]
                ev += [("cpwait", 0), ("fence",), ("arrive", ("FV", sl))]
        if units and "noeq" not in MUT:
            ev.append(("mwait", ("EQ",), (len(units) - 1) & 1, len(units) - 1))
        return ev + [("winfo", "end"), ("arrive", ("FK", st))]
    for k, n in enumerate(units):
        ev += [("mwait", ("FK", st), ph ^ (1 if "parity" in MUT else 0), gi), ("rinfo", k), ("unit", k)]
        for t in range(n):
            sp = 2 if st == 0 else st - 1
            php = ph ^ 1 if st == 0 else ph
            if t > 0:
                ev += [("mwait", ("FK", st), ph, gi), ("mwait", ("FV", sp), php, gi - 1)]
            ev += [("read", "Q", k, t), ("read", f"K{st}", gi, t), ("wcommit",)]
            if t > 0:
                ev.append(("read", f"V{sp}", gi - 1, t - 1))
            ev.append(("wcommit",))
            if "eqearly" in MUT and t == n - 1:
                ev.append(("arrive", ("EQ",)))
            ev += [("wwait", 1), ("arrive", ("EK", st))]
            if t == n - 1 and "eqearly" not in MUT:
                ev.append(("arrive", ("EQ",)))
            ev += [("softmax", t), ("wwait", 0)]
            if t > 0:
                ev.append(("arrive", ("EV", sp)))
            ev.append(("rescale", t))
            st = 0 if st == 2 else st + 1
            ph ^= 1 if st == 0 else 0
            gi += 1
        sl = 2 if st == 0 else st - 1
        ev += [("mwait", ("FV", sl), ph ^ 1 if st == 0 else ph, gi - 1), ("read", f"V{sl}", gi - 1, n - 1),
               ("wcommit",), ("wwait", 0)]
        if "nolastv" not in MUT:
            ev.append(("arrive", ("EV", sl)))
    return ev + [("mwait", ("FK", st), ph, gi), ("rinfo", "end")]


class Sim7(pp.Sim):
    """pp.Sim over a CTA's unit list: the v7 events, the EQ barrier (one phase per unit), the info slot"""

    def __init__(self, units, rng, data=None):
        self.units = list(units)
        super().__init__(sum(units), rng, data)
        self.ev = [p7_events(self.units, w) for w in self.ag]

    def per(self, key):
        return 1 if key[0] == "EQ" else pp.ST

    def step(self, w):
        if self.nb_wait[w] is not None:
            return super().step(w)
        e = self.ev[w][self.pc[w]]
        at = f"agent {w} event {self.pc[w]} {e}"
        if e[0] == "winfo":  # a plain st.shared: its readers of the previous unit must be acquired
            for r in self.reads.get("I", []):
                if r[0] != e[1] and ("I", r[0], r[1]) not in self.read_rel[w]:
                    raise ProtocolError(f"{at}: overwrites the info of unit {r[0]} that agent {r[1]} read without "
                                        f"that read being acquired (EMPTY_Q)")
            self.part[("I", w)] = [e[1], "fenced"]  # generic proxy: released by the next arrival
            self.loads[("I", e[1], w)] = self.loads.get(("I", e[1], w), 0) + 1
        elif e[0] == "rinfo":
            p = self.part.get(("I", 0))
            if not p or p[0] != e[1] or ("I", e[1], 0) not in self.acq[w]:
                raise ProtocolError(f"{at}: reads the info of unit {e[1]} that is not published and acquired "
                                    f"(slot holds {p})")
            self.reads.setdefault("I", []).append([e[1], w, "retired"])
            self.seen[("I", e[1], w)] = self.seen.get(("I", e[1], w), 0) + 1
        elif e[0] == "unit":
            if self.data:
                self.data.unit(w, e[1])
        else:
            return super().step(w)
        self.pc[w] += 1

    def final_checks(self):
        n, nu = self.n, len(self.units)
        want = {(c, t, 0): 1 for c in "KV" for t in range(n)}
        want.update({("Q", k, 0): 1 for k in range(nu)})
        want.update({("I", k, 0): 1 for k in list(range(nu)) + ["end"]})
        if self.loads != want:
            raise ProtocolError(f"writes per (buffer, tile / unit) {sorted(self.loads.items(), key=str)} != once each")
        want_r = {(c, t, w): 1 for c in "KV" for t in range(n) for w in self.readers}
        want_r.update({("Q", k, w): self.units[k] for k in range(nu) for w in self.readers})
        want_r.update({("I", k, w): 1 for k in list(range(nu)) + ["end"] for w in self.readers})
        if self.seen != want_r:
            raise ProtocolError(f"reads per (buffer, tile / unit, agent) {sorted(self.seen.items(), key=str)} wrong")


ProtocolError = pp.ProtocolError


def unit_lists(rng, count):
    """fixed CTA unit lists (1-tile units, runs of them, long ones, none at all) and `count` random ones"""
    lists = [[], [1], [1, 1], [1] * 7, [2, 1, 3], [5, 4, 3, 2, 1], [3, 3, 3], [7, 1, 7], [23], [4, 1, 1, 1, 9],
             [1, 2], [2, 2, 2, 2], [1, 4, 1, 4, 1], [33, 1], [6, 5]]
    for _ in range(count):
        nu = int(rng.integers(1, 7))
        lists.append([int(x) for x in rng.integers(1, 13, nu)])
    return lists


def protocol_sweep7(schedules):
    fails = 0
    lists = unit_lists(np.random.default_rng(77), 20)
    for li, units in enumerate(lists):
        for sd in range(schedules):
            try:
                Sim7(units, np.random.default_rng(1000 * li + sd)).run()
            except ProtocolError as err:
                print(f"FAIL protocol v7 units={units} schedule {sd}: {err}")
                fails += 1
                break
    if not fails:
        print(f"ok   protocol v7: {len(lists)} CTA unit lists (none, 1-tile units, long and random ones) x {schedules} "
              f"random interleavings of the producer and two consumers: no deadlock, no early read, no early "
              f"overwrite (K, V, Q, info), barriers balanced")
    return fails


class P7Data:
    """The data path of one persistent CTA: a PPData per unit on one shared image; Sim's callbacks go to
    the unit the calling agent is in (agent 0 = producer; consumer index ci = agent - 1)."""

    def __init__(self, c, unit_items, late):
        self.late = late
        self.d = [pp.PPData(c, b, tile32, kvh, late) for b, tile32, kvh in unit_items]
        self.smem, self.pend = self.d[0].smem, {}
        for d in self.d:
            d.smem, d.pend = self.smem, self.pend
        self.cur = [None, None, None]
        self.o_prev = [np.full((128, 64), np.nan, np.float32) for _ in range(2)]

    def unit(self, w, k):
        if w > 0:  # a consumer: O carries over (stale) from its previous unit
            ci = w - 1
            if self.cur[w] is not None:
                self.o_prev[ci] = self.d[self.cur[w]].st[ci]["o"]
            self.d[k].st[ci]["o"] = self.o_prev[ci].copy()
        self.cur[w] = k

    def load(self, w, buf, tile):
        self.d[self.cur[0]].load(w, buf, tile)

    def land(self, w, buf, tile):
        for dst, src, off, ok in self.pend.pop((w, buf, tile), []):
            self.smem[dst // 2: dst // 2 + 8] = src[off: off + 8] if ok else 0

    def rotate(self, w, t):
        self.d[self.cur[0]].rotate(w, t)

    def wgmma(self, ci, buf, tile, t):
        d = self.d[self.cur[ci + 1]]
        if buf[0] == "V" and t == 0 and "acc1" not in MUT:  # the unit's first PV: scale-d 0
            d.st[ci]["o"][:] = 0
        d.wgmma(ci, buf, tile, t)

    def softmax(self, ci, t):
        self.d[self.cur[ci + 1]].softmax(ci, t)

    def rescale(self, ci, t):
        d = self.d[self.cur[ci + 1]]
        if t == 0:  # the kernel skips it (t > 0): PV(0) overwrites O
            d.st[ci]["pa"] = d.st[ci]["pn"]
        else:
            d.rescale(ci, t)


def emulate_p7(c, late, seed, ctas):
    """Every unit of prefill_plan<32>'s items, in the kernel's order, over `ctas` persistent CTAs whose
    claims interleave at random; each CTA's units run under one random schedule of its three agents."""
    out = np.full((c["total_q"], pp.HQ, pp.D), np.nan)
    lse = np.full((c["total_q"], pp.HQ), np.nan)
    items = [(b, t) for b in range(c["batch"]) for t in range((int(c["qo"][b]) + pp.PP_TOK - 1) // pp.PP_TOK)]
    rng = np.random.default_rng(seed)
    nunits = len(items) * HKV
    per_cta = [[u] for u in range(min(ctas, nunits))]
    for u in range(len(per_cta), nunits):  # the counter: the next unit goes to whichever CTA claims first
        per_cta[int(rng.integers(0, len(per_cta)))].append(u)
    for us in per_cta:
        unit_items = []
        for u in us:
            b, t32 = items[len(items) - 1 - u // HKV]
            unit_items.append((b, t32, u % HKV))
        data = P7Data(c, unit_items, late)
        Sim7([d.n for d in data.d], rng, data).run()
        for d in data.d:
            d.store(out, lse)
    return out, lse


def main7(args):
    pp.set_variant(6)  # v6's geometry: 128-key tiles, 3 stages, 128 producer threads x 16 rows
    pp.VAR = 6
    if args.mutate:
        MUT.add(args.mutate)
    if args.mutate not in ("acc1",) and protocol_sweep7(args.schedules):
        return 1
    if args.protocol_only:
        return 0
    rng = np.random.default_rng
    cases = [
        # ps16: an empty first sequence, 33 tokens (a 1-token second item), 5 tokens whose first limit sits in
        # the last keys of a tile, a single token after 519 keys (5 tiles): units of 1 and 5 tiles mixed
        ("ps16 ragged128", make_case(rng(24), 16, 0, True, fixed=([0, 33, 5, 1], [0, 33, 125, 520]))),
        # ps1: a prefix longer than the new tokens, an empty sequence, 5 tokens
        ("ps1 prefix", make_case(rng(21), 1, 0, True, fixed=([37, 0, 5], [420, 9, 70]))),
        # the runtime page size (3)
        ("ps3 runtime", make_case(rng(23), 3, 0, True, fixed=([70], [200]))),
        ("ps1 long128", make_case(rng(25), 1, 0, True, fixed=([70, 40], [1000, 300]))),
    ]
    if args.quick:
        cases = cases[:1]
    for sd in range(0 if args.quick else args.seeds):
        for ps in (1, 16):
            r = rng(7000 + 100 * sd + ps)
            cases.append((f"ps{ps} seed{sd}", make_case(r, ps, int(r.integers(1, 5)), True)))
    fails = n = 0
    for i, (name, c) in enumerate(cases):
        ref = reference(c, True)
        for late in ((False,) if args.quick else (False, True)):
            n += 1
            fails += not check(f"prefill-v7 {name} {'late' if late else 'early'} ctas={args.ctas} "
                               f"qo={c['qo'].tolist()} kv={c['kv'].tolist()}",
                               emulate_p7(c, late, 31 * i + late, args.ctas), ref)
    print(f"{n - fails} passed, {fails} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    print("run it as: attn_emulate_pp.py --variant 7 ...", file=sys.stderr)
    sys.exit(2)
