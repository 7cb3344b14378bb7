#!/usr/bin/env python3
"""attn_emulate_p9.py - CPU emulation of prefill version 9 ("v9",
problems/common/kernels/gqa_paged_prefill_sm90_p9.cuh, -DSF_PREFILL_WGMMA=9), called by
tools/attn_emulate_pp.py --variant 9 (its options).

v9 = v8 (v6's producer, ring and mbarriers, the consumers' ping-pong turns) whose consumers step over
64-key halves j of the 128-key ring tiles and issue S(j + 1) before the softmax of S(j). p9_events(n, w)
transcribes the consumer's program (p6_events of attn_emulate_pp.py is the producer's, unchanged); Sim9
is attn_emulate_pp.Sim with the halves recorded per wgmma read and three register hazards checked at
every step (the order that makes the overlap safe, and ptxas's rule that a non-wgmma instruction must
not write a wgmma accumulator while any wgmma is in flight):
  - softmax(j) while this consumer's S(j) wgmma still runs (its scores are read too early);
  - softmax(j) writes P(j)'s registers (p[j & 1]) while a PV of the same parity, PV(j - 2), still reads them;
  - an O rescale while any wgmma of this consumer is in flight (PV accumulates into O; with S in flight
    ptxas serializes: C7515 / C7517).
It also checks: S issues alternate consumer 0, 1 (2 n each), every K and V tile read twice per consumer
(two halves), Q 2 n times, both turn barriers balanced, plus Sim's rules (no read before publication, no
overwrite before release, parity waits not aliased, no deadlock). PPData9 runs the data path: S halves as
m64n64 (K rows 64 h .. of the stage), PV halves as 4 k-steps of m64n128 (V rows 64 h ..), softmax on 64
keys, masked (base 64 j) only in the tiles from tm = min((prefix + j0 + 1) / 128, n) on (the kernel's two
loops), the vote rescale of O by corr(j - 1) before PV(j - 1).

Mutations (--mutate): nowait9 (no wgmma.wait 0 before an even half's softmax), ekhalf (K(t) released after
its first half), pswap (PV(j - 1) issued with P(j)'s registers), rescalein (the rescale between the issue
and the softmax, FA3's place: a wgmma in flight), skip9 (consumer 0 stops one tile early: deadlock),
noturn0 / turn (v8's balance rules), parity, noempty; vhalf (data: PV's second half reads V rows 0..63),
khalf9 (data: S's second half reads K rows 0..63), tm1 (data: the unmasked loop runs one tile too far).
"""
import numpy as np

import attn_emulate_pp as pp
from attn_emulate import bf16_round, bf16_val, check, make_case, reference
from attn_emulate_wg import read_kmajor, read_mnmajor

MUT = pp.MUT


def p9_events(n, w):
    """agent 0: v6's producer (pp.p6_events); agents 1, 2: the v9 consumers (p9_attend's order). The fourth
    field of a wgmma read is the half index j (S(j): K tile j // 2, half j % 2; PV(j): V tile j // 2)."""
    if w == 0:
        return pp.p6_events(n, 0)
    c, ev = w - 1, []
    if c == 0 and "skip9" in MUT and n >= 2:
        n -= 1
    par = 1 if "parity" in MUT else 0
    if c == 1 and "noturn0" not in MUT:
        ev.append(("barrive", 1))
    ev += [("mwait", ("FK", 0), par, 0), ("bsync", 1 + c), ("read", "Q", 0, 0), ("read", "K0", 0, 0), ("wcommit",),
           ("barrive", 2 - c)]
    st, ph = 0, 0
    for t in range(n):
        sp = 2 if st == 0 else st - 1
        sn = 0 if st == 2 else st + 1
        phn = ph ^ 1 if st == 2 else ph
        j = 2 * t
        # even half: S(2t), PV(2t - 2) retired; issue S(2t + 1) (K(t) keys 64..), PV(2t - 1) (V(t - 1) keys 64..)
        ev += [] if "nowait9" in MUT else [("wwait", 0)]
        if "ekhalf" in MUT:
            ev.append(("arrive", ("EK", st)))
        pv = [("read", f"V{sp}", t - 1, j - 1 if "pswap" not in MUT else j)] if t > 0 else []
        issue = [("bsync", 1 + c), ("read", "Q", 0, j + 1), ("read", f"K{st}", t, j + 1)] + pv + [("wcommit",),
                                                                                                ("barrive", 2 - c)]
        if "rescalein" in MUT:
            ev += issue + [("rescale", j), ("softmax", j)]
        else:
            ev += [("rescale", j)] + issue + [("softmax", j)]
        # odd half: S(2t + 1), PV(2t - 1) retired: K(t), V(t - 1) read; issue S(2t + 2), PV(2t)
        ev.append(("wwait", 0))
        if "ekhalf" not in MUT:
            ev.append(("arrive", ("EK", st)))
        if t > 0:
            ev.append(("arrive", ("EV", sp)))
        ev.append(("rescale", j + 1))
        if t + 1 < n:
            ev.append(("mwait", ("FK", sn), phn ^ par, t + 1))
        ev += [("mwait", ("FV", st), ph, t), ("bsync", 1 + c)]
        if t + 1 < n:
            ev += [("read", "Q", 0, j + 2), ("read", f"K{sn}", t + 1, j + 2)]
        ev += [("read", f"V{st}", t, j if "pswap" not in MUT else j + 1), ("wcommit",), ("barrive", 2 - c),
               ("softmax", j + 1)]
        st, ph = sn, phn
    sl = (n - 1) % pp.ST
    ev += [("wwait", 0), ("rescale", 2 * n), ("bsync", 1 + c), ("read", f"V{sl}", n - 1, 2 * n - 1), ("wcommit",),
           ("barrive", 2 - c), ("wwait", 0)]
    if c == 0 and "turn" not in MUT:
        ev.append(("bsync", 1))
    return ev


class Sim9(pp.Sim):
    """pp.Sim over p9_events, with the halves of the wgmma reads and v9's register hazards."""

    def __init__(self, n, rng, data=None):
        super().__init__(n, rng, data)
        self.ev = [p9_events(n, w) for w in self.ag]

    def running(self, w, kind=None):
        return [(buf, r) for buf, rs in self.reads.items() for r in rs
                if r[1] == w and r[2] == "running" and (kind is None or buf[0] == kind)]

    def step(self, w):
        if self.nb_wait[w] is None:
            e = self.ev[w][self.pc[w]]
            at = f"wg{w} event {self.pc[w]} {e}"
            if e[0] == "softmax":
                j = e[1]
                if any(r[3] == j for _, r in self.running(w, "K")):
                    raise pp.ProtocolError(f"{at}: softmax({j}) reads S({j}) while its wgmma may still run")
                bad = [r[3] for _, r in self.running(w, "V") if (r[3] & 1) == (j & 1)]
                if bad:
                    raise pp.ProtocolError(f"{at}: P({j}) written into p[{j & 1}] while PV({bad[0]}) still reads it")
            elif e[0] == "rescale" and self.running(w):
                raise pp.ProtocolError(f"{at}: O rescaled while wgmmas {[(b, r[3]) for b, r in self.running(w)]} are in "
                                       "flight (PV accumulates into O; ptxas serializes: C7515 / C7517)")
        e = self.ev[w][self.pc[w]] if self.nb_wait[w] is None else None
        super().step(w)
        if e is not None and e[0] == "read":
            self.reads[e[1]][-1].append(e[3])

    def final_checks(self):
        if self.issue != [1, 2] * (2 * self.n):
            raise pp.ProtocolError(f"v9 S issue order {self.issue[:12]}... is not consumer 0, 1, 0, 1, ... per half")
        for b in (1, 2):
            if self.nb[b]:
                raise pp.ProtocolError(f"named barrier {b} ends with a partial phase {sorted(self.nb[b])}")
        want = {(c, t, 0): 1 for c in "KV" for t in range(self.n)}
        want[("Q", 0, 0)] = 1
        if self.loads != want:
            raise pp.ProtocolError(f"gathers per (cache, tile, wg) {sorted(self.loads.items())} != once each")
        want_r = {(c, t, w): 2 for c in "KV" for t in range(self.n) for w in (1, 2)}
        want_r.update({("Q", 0, w): 2 * self.n for w in (1, 2)})
        if self.seen != want_r:
            raise pp.ProtocolError(f"reads per (cache, tile, wg) {sorted(self.seen.items())} wrong (want K, V twice: "
                                   "two halves; Q 2 n)")


class PPData9(pp.PPData):
    """PPData with v9's half-tile wgmmas, softmax on 64 keys and the rescale of O by corr(j - 1)."""

    def __init__(self, *a):
        super().__init__(*a)
        # the kernel's mask rule: tiles t < tm (128 t + 127 <= prefix + j0, the CTA's smallest limit) run the
        # unmasked loop, the rest compare every key with the row's limit
        self.tm = min((self.n_kv - self.ntok + 1) // pp.KB + (1 if "tm1" in MUT else 0), self.n)
        for st in self.st:
            st["s9"], st["p9"] = [None, None], [None, None]
            st["corr"] = (np.ones(128, np.float32), np.ones(128, np.float32))

    def wgmma(self, w, buf, tile, j):
        st, h = self.st[w], j & 1
        if buf == "Q":
            return
        if buf[0] == "K":  # S(j) = Q K[64 h ..]^T: B rows start 64 h rows (8 KiB) into each 64-dim half
            S = np.zeros((64, 64))
            dkt = self.dk + ((int(buf[1]) * pp.TILE_BYTES) >> 4)
            hk = 0 if "khalf9" in MUT else h
            for kk in range(8):
                A = bf16_val(read_kmajor(self.smem, self.dq[w] + (((kk >> 2) * (pp.PP_BM * 128) + (kk & 3) * 32) >> 4),
                                         64))
                B = bf16_val(read_kmajor(self.smem, dkt + (((kk >> 2) * (pp.KB * 128) + (kk & 3) * 32 + hk * 8192) >> 4),
                                         64))
                S += A.astype(np.float64) @ B.astype(np.float64).T
            st["s9"][h] = S[self.rows(32), self.cols(32)].astype(np.float32)
            return
        O = np.zeros((64, 128))
        O[self.rows(64), self.cols(64)] = st["o"]
        dvt = self.dv + ((int(buf[1]) * pp.TILE_BYTES) >> 4)
        hv = 0 if "vhalf" in MUT else h
        for kk in range(4):
            A = np.zeros((64, 16))
            for r_, (dr, dk_) in enumerate(((0, 0), (8, 0), (0, 8), (8, 8))):
                for e in range(2):
                    A[16 * self.wi + self.g + dr, 2 * self.cc + dk_ + e] = bf16_val(st["p9"][h][kk][:, r_, e])
            B = bf16_val(read_mnmajor(self.smem, dvt + (((4 * hv + kk) * 2048) >> 4), 128)).astype(np.float64)
            O += A @ B
        st["o"][:] = O[self.rows(64), self.cols(64)].astype(np.float32)

    def softmax(self, w, j):
        """p9_softmax: mask (base 64 j) by select in the tiles from tm on, row max over the quad, p = 2^(s scale - m),
        P(j) into p9[j & 1]"""
        st, cc = self.st[w], self.cc
        s = st["s9"][j & 1]
        ia = (np.arange(32) % 4) < 2
        if j // 2 >= self.tm:
            kvpos = j * 64 + 8 * (np.arange(32)[None, :] // 4) + 2 * cc[:, None] + (np.arange(32)[None, :] % 2)
            lim = np.where(ia[None, :], st["lim_a"][:, None], st["lim_b"][:, None])
            s = np.where(kvpos > lim, -np.inf, s).astype(np.float32)
        quad = lambda x: x.reshape(32, 4).max(axis=1).repeat(4)
        nm_a = np.maximum(st["m_a"], (quad(s[:, ia].max(axis=1)) * self.scale_log2).astype(np.float32))
        nm_b = np.maximum(st["m_b"], (quad(s[:, ~ia].max(axis=1)) * self.scale_log2).astype(np.float32))
        mu_a = np.where(nm_a == -np.inf, 0, nm_a).astype(np.float32)
        mu_b = np.where(nm_b == -np.inf, 0, nm_b).astype(np.float32)
        corr_a, corr_b = np.exp2(st["m_a"] - mu_a), np.exp2(st["m_b"] - mu_b)
        st["m_a"], st["m_b"] = nm_a, nm_b
        mu = np.where(ia[None, :], mu_a[:, None], mu_b[:, None])
        with np.errstate(invalid="ignore"):
            s = np.exp2((s.astype(np.float64) * np.float64(self.scale_log2) - mu).astype(np.float32))
        st["l_a"] = st["l_a"] * corr_a + s[:, ia].sum(axis=1)
        st["l_b"] = st["l_b"] * corr_b + s[:, ~ia].sum(axis=1)
        p = []
        for kk in range(4):
            f = np.zeros((128, 4, 2), dtype=np.uint16)
            for r_ in range(4):
                f[:, r_, 0] = bf16_round(s[:, 8 * kk + 2 * r_])
                f[:, r_, 1] = bf16_round(s[:, 8 * kk + 2 * r_ + 1])
            p.append(f)
        st["p9"][j & 1], st["corr"] = p, (corr_a, corr_b)

    def rescale(self, w, j):
        """O *= corr(j - 1) where a warp's vote says some lane's max moved (v8's rule, without P's copy)"""
        st = self.st[w]
        corr_a, corr_b = st["corr"]
        same = (corr_a == 1) & (corr_b == 1)
        io = (np.arange(64) % 4) < 2
        for wi in range(4):
            lanes = slice(32 * wi, 32 * wi + 32)
            if not same[lanes].all():
                st["o"][lanes] *= np.where(io[None, :], corr_a[lanes, None], corr_b[lanes, None])


def emulate9(c, late, seed):
    """every CTA of prefill_plan<32>'s items (heaviest first) under a random schedule, v9's data path"""
    out = np.full((c["total_q"], pp.HQ, pp.D), np.nan)
    lse = np.full((c["total_q"], pp.HQ), np.nan)
    items = [(b, t) for b in range(c["batch"]) for t in range((int(c["qo"][b]) + pp.PP_TOK - 1) // pp.PP_TOK)]
    rng = np.random.default_rng(seed)
    for blk in range(len(items) * pp.HKV):
        kvh, idx = blk % pp.HKV, len(items) - 1 - blk // pp.HKV
        d = PPData9(c, items[idx][0], items[idx][1], kvh, late)
        Sim9(d.n, rng, d).run()
        d.store(out, lse)
    return out, lse


def main9(args):
    if args.mutate:
        MUT.add(args.mutate)
    pp.set_variant(6)
    fails = 0
    if args.mutate not in ("vhalf", "khalf9", "tm1"):
        for n in pp.PROTO_TILES:
            for sd in range(args.schedules):
                try:
                    Sim9(n, np.random.default_rng(1000 * n + sd)).run()
                except pp.ProtocolError as err:
                    print(f"FAIL protocol v9 n_tiles={n} schedule {sd}: {err}")
                    fails += 1
                    break
        if fails:
            return 1
        print(f"ok   protocol v9: {len(pp.PROTO_TILES)} tile counts 1..{pp.PROTO_TILES[-1]} x {args.schedules} random "
              "interleavings of the producer and two consumers: no deadlock, no early read or overwrite, S read only "
              "after it retired, P and O not written under a wgmma, turns balanced, S issues alternate 0, 1")
        # the turn program is v8's with 2 n + 2 turns per consumer: v8's per-warp model covers turn counts 1..65
        import attn_emulate_p8
        if attn_emulate_p8.warp_sweep(max(args.schedules, 2), {args.mutate} - {None}):
            return 1
    if args.protocol_only:
        return 0
    rng = np.random.default_rng
    cases = [
        ("ps16 ragged", make_case(rng(22), 16, 0, True, fixed=([0, 33, 5, 1], [0, 33, 55, 301]))),
        ("ps1 masked tail", make_case(rng(26), 1, 0, True, fixed=([128], [144]))),
    ]
    if not args.quick:
        cases += [
            ("ps1 prefix", make_case(rng(21), 1, 0, True, fixed=([37, 0, 5], [420, 9, 70]))),
            ("ps16 ragged128", make_case(rng(24), 16, 0, True, fixed=([0, 33, 5, 1], [0, 33, 125, 520]))),
            ("ps3 runtime", make_case(rng(23), 3, 0, True, fixed=([70], [200]))),
            ("ps1 long128", make_case(rng(25), 1, 0, True, fixed=([70, 40], [1000, 300]))),
        ]
        for sd in range(args.seeds):
            for ps in (1, 16):
                r = rng(7000 + 100 * sd + ps)
                cases.append((f"ps{ps} seed{sd}", make_case(r, ps, int(r.integers(1, 5)), True)))
    n = 0
    for i, (name, c) in enumerate(cases):
        ref = reference(c, True)
        for late in ((False, True) if not args.quick or i == 1 else (False,)):
            n += 1
            fails += not check(f"prefill-v9 {name} {'late' if late else 'early'} qo={c['qo'].tolist()} "
                               f"kv={c['kv'].tolist()}", emulate9(c, late, 31 * i + late), ref)
    print(f"{n - fails} passed, {fails} failed")
    return 1 if fails else 0
