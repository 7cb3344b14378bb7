#!/usr/bin/env python3
"""attn_emulate_wg.py - CPU emulation of the wgmma prefill kernel's index math (version 2,
problems/common/kernels/gqa_paged_prefill_sm90_wgmma.cuh, built with -DSF_PREFILL_WGMMA=1).

usage: attn_emulate_wg.py [--seeds N] [--mode early|late|both] [--order plain|ovl|both] [--mutate NAME]
                          [--protocol-only]

The machine that writes the kernel has no GPU, so this replays one CTA at a time in numpy, 128 threads
side by side, and compares with the float64 reference of tools/attn_emulate.py:

  - the cp.async gathers (page table, zero-fill) into the 128B-swizzled [2][rows][128 B] tiles at the
    kernel's shared-memory offsets (sw128), on a shared-memory image that starts as NaN;
  - the kernel's cp.async group order (Q+K0, V0, K1, then V(t+1), K(t+2) per tile) and its
    cp.async.wait_group counts: mode "late" lands a group's bytes only when a wait retires it (a read
    of a tile that has not been waited for sees NaN), mode "early" lands them at issue (a tile written
    over before its last reader ran shows up as wrong data); O += P V runs at the wgmma wait of the
    next tile (its latest possible read), S = Q K^T at its issue;
  - the wgmma descriptors exactly as built (wg_desc, wg_desc_mn: bit fields packed, then decoded) and
    the canonical 128B-swizzle operand layouts: K-major element (r, k) at start + (r % 8) 128 + (r / 8)
    SBO + 2 k, MN-major element (k, n) at start + 2 (n % 64) + (n / 64) LBO + (k % 8) 128 + (k / 8) SBO,
    then address bits 4..6 ^= bits 7..9. self_check() first confirms that this model reads the GEMM's
    TMA-written tiles (gemm_bf16_sm90_wgmma.cuh, proven on the GPU) as the GEMM expects;
  - the wgmma accumulator layout (thread 32 w + l: rows 16 w + l / 4 (+ 8), columns 8 j + 2 (l % 4) (+1)),
    the register-A fragment of P (a0..a3 as mma.m16n8k16's A), base-2 online softmax with quad
    reductions, the causal mask with the prefix, the epilogue stores (unwritten outputs stay NaN).

First, always, the synchronization protocol without data (kernel_events / check_protocol): one CTA's
program order transcribed from the .cuh (cp.async gathers, commits, wait_group counts, proxy fences,
barriers, wgmma reads, commits and waits) replayed against the PTX rules for n_tiles 1..64 and larger ones to 1025 in
both orders, plus the CTA coverage (n_tiles holds every key a row may see) of compositions such as q1,
q63, q65, q129 and q1000; --protocol-only stops there (about 2 s).

The PTX semantics are the ISA's documented layouts, not measured on a GPU (the MN-major descriptor in
particular is the part the GPU run confirms). --mutate swaps in a known mistake (lbo_sbo: LBO and SBO
of V exchanged; ring: V(t+1) written into the buffer PV(t) reads; mask: causal limit off by one; wait: the middle cp.async.wait_group 2 instead
of 1, so V(t) may not have landed; tail: the overlapped order's last PV without its cp.async wait;
protocol only: tailskip: the commits inside the tail's load guards, so a tail tile has fewer groups and
wait_group 2 no longer covers K(t); nofence: no fence.proxy.async; nobar2: no second barrier) to
show the emulation catches it. Exit status 1 on any mismatch.
"""
import argparse
import sys

import numpy as np

from attn_emulate import BM, BN, D, GRP, HKV, HQ, LOG2E, TOK, bf16_round, bf16_val, check, kv_len_of, make_case, \
    reference

ROW_BYTES = D * 2
TILE_BYTES = BN * ROW_BYTES
NAN16 = 0x7FC0
MUT = set()


def sw128(rows, row, ch):
    return (ch >> 3) * rows * 128 + row * 128 + (((ch & 7) ^ (row & 7)) << 4)


def wg_desc(addr):
    return ((addr & 0x3FFFF) >> 4) | (1 << 16) | ((1024 >> 4) << 32) | (1 << 62)


def wg_desc_mn(addr, mn_block_bytes):
    return ((addr & 0x3FFFF) >> 4) | (((mn_block_bytes >> 4) & 0x3FFF) << 16) | ((1024 >> 4) << 32) | (1 << 62)


def decode(desc):
    assert desc >> 62 == 1, "not a 128B-swizzle descriptor"
    return (desc & 0x3FFF) << 4, ((desc >> 16) & 0x3FFF) << 4, ((desc >> 32) & 0x3FFF) << 4


def swizzle(addr):
    return addr ^ (((addr >> 7) & 7) << 4)


def read_kmajor(smem, desc, rows):
    """[rows][16] operand (M or N rows, K 16) through a K-major SW128 descriptor."""
    start, _, sbo = decode(desc)
    r = np.arange(rows)[:, None]
    k = np.arange(16)[None, :]
    addr = swizzle(start + (r % 8) * 128 + (r // 8) * sbo + 2 * k)
    return smem[addr // 2]


def read_mnmajor(smem, desc, n):
    """[16][n] operand B[k][n] through an MN-major SW128 descriptor."""
    start, lbo, sbo = decode(desc)
    k = np.arange(16)[:, None]
    nn = np.arange(n)[None, :]
    addr = swizzle(start + 2 * (nn % 64) + (nn // 64) * lbo + (k % 8) * 128 + (k // 8) * sbo)
    return smem[addr // 2]


def self_check():
    """The model against the proven GEMM: TMA SWIZZLE_128B puts chunk c of row r of a [rows][64] box at
    chunk c ^ (r % 8); the GEMM's k16 step kk reads through wg_desc(base + 32 kk)."""
    rng = np.random.default_rng(3)
    rows = 128
    tile = rng.integers(0, 60000, size=(rows, 64)).astype(np.uint16)
    smem = np.zeros(rows * 64, dtype=np.uint16)
    for r in range(rows):
        for c in range(8):
            dst = r * 128 + ((c ^ (r % 8)) << 4)
            smem[dst // 2: dst // 2 + 8] = tile[r, 8 * c: 8 * c + 8]
    for kk in range(4):
        for half in range(2):  # the GEMM's consumer c reads rows 64 c .. through base + c * 64 * 128
            got = read_kmajor(smem, wg_desc(half * 64 * 128 + kk * 32), 64)
            if not np.array_equal(got, tile[64 * half: 64 * half + 64, 16 * kk: 16 * kk + 16]):
                return False
    return True


class Ring:
    """cp.async groups of one CTA: copies land at issue (early) or when a wait retires them (late)."""

    def __init__(self, smem, late):
        self.smem, self.late, self.pending, self.cur = smem, late, [], []

    def copy(self, dst, src, off, ok):
        if self.late:
            self.cur.append((dst, src, off, ok))
        else:
            self.smem[dst // 2: dst // 2 + 8] = src[off: off + 8] if ok else 0

    def commit(self):
        self.pending.append(self.cur)
        self.cur = []

    def wait(self, n):
        while len(self.pending) > n:
            for dst, src, off, ok in self.pending.pop(0):
                self.smem[dst // 2: dst // 2 + 8] = src[off: off + 8] if ok else 0


def emulate_prefill_wg(c, late, ovl):
    ps = c["ps"]
    out = np.full((c["total_q"], HQ, D), np.nan)
    lse = np.full((c["total_q"], HQ), np.nan)
    items = [(b, t) for b in range(c["batch"]) for t in range((int(c["qo"][b]) + TOK - 1) // TOK)]
    qf, kf, vf = c["q"].reshape(-1), c["k"].reshape(-1), c["v"].reshape(-1)
    scale_log2 = np.float32(c["scale"] * LOG2E)
    max_items = c["total_q"] // TOK + c["batch"]
    tid = np.arange(128)
    warp, lane = tid >> 5, tid & 31
    g, cc = lane >> 2, lane & 3
    # accumulator element i of thread tid: row 16 w + g + 8 (i % 4 >= 2), column 8 (i / 4) + 2 c + i % 2
    def acc_rc(n):
        i = np.arange(n)
        rows = 16 * warp[:, None] + g[:, None] + 8 * ((i[None, :] % 4) >= 2)
        cols = 8 * (i[None, :] // 4) + 2 * cc[:, None] + (i[None, :] % 2)
        return rows, cols
    s_rows, s_cols = acc_rc(BN // 2)     # S: 64 x 64 -> 32 per thread
    o_rows, o_cols = acc_rc(D // 2)      # O: 64 x 128 -> 64 per thread
    base = 1024  # the kernel rounds the dynamic shared base up to 1024; any 1024-aligned base models it
    s_q, s_k = base, base + BM * ROW_BYTES
    s_v = s_k + 2 * TILE_BYTES
    for blk in range(max_items * HKV):
        kvh, idx = blk % HKV, len(items) - 1 - blk // HKV
        if idx < 0:
            continue
        b, tile = items[idx]
        q_start = int(c["qo_indptr"][b])
        qo_len = int(c["qo_indptr"][b + 1]) - q_start
        prefix = kv_len_of(c, b) - qo_len
        j0 = tile * TOK
        ntok = min(TOK, qo_len - j0)
        n_kv = prefix + j0 + ntok
        n_tiles = (n_kv + BN - 1) // BN
        pages = c["idx"][c["kv_indptr"][b]:]
        smem = np.full((s_v + 2 * TILE_BYTES) // 2, NAN16, dtype=np.uint16)
        ring = Ring(smem, late)
        for t_ in tid:
            ch = t_ & 15
            for i in range(8):
                row = (t_ >> 4) + 8 * i
                tok = row >> 2
                ok = tok < ntok
                off = ((q_start + j0 + (tok if ok else 0)) * HQ + kvh * GRP + (row & 3)) * D + ch * 8
                ring.copy(s_q + sw128(BM, row, ch), qf, off, ok)

        def fetch(t):
            return [[int(pages[(t * BN + (t_ >> 4) + 8 * i) // ps]) if t * BN + (t_ >> 4) + 8 * i < n_kv else -1
                     for i in range(8)] for t_ in tid]

        def load(dst, cache, pg, t):
            for t_ in tid:
                ch = t_ & 15
                for i in range(8):
                    row = (t_ >> 4) + 8 * i
                    pos = t * BN + row
                    ok = pg[t_][i] >= 0
                    off = ((pg[t_][i] * ps + pos % ps) * HKV + kvh) * D + ch * 8 if ok else 0
                    ring.copy(dst + sw128(BN, row, ch), cache, off, ok)

        pg_v = fetch(0)
        load(s_k, kf, pg_v, 0)
        ring.commit()
        load(s_v, vf, pg_v, 0)
        ring.commit()
        pg_v = fetch(1)
        if n_tiles > 1:
            load(s_k + TILE_BYTES, kf, pg_v, 1)
        ring.commit()
        pg_k = fetch(2)

        tok_a = warp * 4 + (g >> 2)
        tok_b = tok_a + 2
        lim_a, lim_b, lim_min = prefix + j0 + tok_a, prefix + j0 + tok_b, prefix + j0
        if "mask" in MUT:
            lim_a, lim_b = lim_a + 1, lim_b + 1
        o = np.zeros((128, 64), dtype=np.float32)
        m_a = np.full(128, -np.inf, dtype=np.float32)
        m_b, l_a, l_b = m_a.copy(), np.zeros(128, dtype=np.float32), np.zeros(128, dtype=np.float32)
        pending_pv = None

        def run_pv(pv):
            pa, vt = pv
            O = np.zeros((64, 128), dtype=np.float64)
            O[o_rows, o_cols] = o
            for kk in range(BN // 16):
                A = np.zeros((64, 16), dtype=np.float64)
                # register A: a0 (row g, k 2c..), a1 (row g + 8), a2 (row g, k 8 + 2c..), a3 (row g + 8, k 8 + ..)
                for r_, (dr, dk) in enumerate(((0, 0), (8, 0), (0, 8), (8, 8))):
                    for e in range(2):
                        A[16 * warp + g + dr, 2 * cc + dk + e] = bf16_val(pa[kk][:, r_, e])
                lbo, sbo_v = BN * 128, vt + kk * 2048
                desc = wg_desc_mn(sbo_v, lbo)
                if "lbo_sbo" in MUT:
                    desc = ((sbo_v & 0x3FFFF) >> 4) | (64 << 16) | ((lbo >> 4) << 32) | (1 << 62)
                B = bf16_val(read_mnmajor(smem, desc, D)).astype(np.float64)
                O += A @ B
            o[:] = O[o_rows, o_cols].astype(np.float32)

        st = dict(m_a=m_a, m_b=m_b, l_a=l_a, l_b=l_b)

        def qk(t):
            S = np.zeros((64, 64), dtype=np.float64)
            kt = s_k + (t & 1) * TILE_BYTES
            for kk in range(D // 16):
                A = bf16_val(read_kmajor(smem, wg_desc(s_q + (kk >> 2) * (BM * 128) + (kk & 3) * 32), 64))
                Bm = bf16_val(read_kmajor(smem, wg_desc(kt + (kk >> 2) * (BN * 128) + (kk & 3) * 32), 64))
                S += A.astype(np.float64) @ Bm.astype(np.float64).T
            return S[s_rows, s_cols].astype(np.float32)

        def softmax(s, t):
            """softmax_tile: returns (P fragments, corr per thread element of O); updates m, l."""
            need_mask = t * BN + BN - 1 > lim_min
            ia = (np.arange(32) % 4) < 2  # elements of row a
            if need_mask:
                kvpos = t * BN + 8 * (np.arange(32)[None, :] // 4) + 2 * cc[:, None] + (np.arange(32)[None, :] % 2)
                lim = np.where(ia[None, :], lim_a[:, None], lim_b[:, None])
                s = np.where(kvpos > lim, -np.inf, s).astype(np.float32)
            quad = lambda x: x.reshape(32, 4).max(axis=1).repeat(4)
            # the raw tile max over the quad, then the running max in base-2 units
            nm_a = np.maximum(st["m_a"], (quad(s[:, ia].max(axis=1)) * scale_log2).astype(np.float32))
            nm_b = np.maximum(st["m_b"], (quad(s[:, ~ia].max(axis=1)) * scale_log2).astype(np.float32))
            mu_a = np.where(nm_a == -np.inf, 0, nm_a).astype(np.float32)
            mu_b = np.where(nm_b == -np.inf, 0, nm_b).astype(np.float32)
            corr_a, corr_b = np.exp2(st["m_a"] - mu_a), np.exp2(st["m_b"] - mu_b)
            st["m_a"], st["m_b"] = nm_a, nm_b
            mu = np.where(ia[None, :], mu_a[:, None], mu_b[:, None])
            with np.errstate(invalid="ignore"):  # fma(s, scale, -mu): one rounding
                s = np.exp2((s.astype(np.float64) * np.float64(scale_log2) - mu).astype(np.float32))
            st["l_a"] = st["l_a"] * corr_a + s[:, ia].sum(axis=1)
            st["l_b"] = st["l_b"] * corr_b + s[:, ~ia].sum(axis=1)
            io = (np.arange(64) % 4) < 2
            pa = []
            for kk in range(BN // 16):
                f = np.zeros((128, 4, 2), dtype=np.uint16)
                for r_ in range(4):
                    f[:, r_, 0] = bf16_round(s[:, 8 * kk + 2 * r_])
                    f[:, r_, 1] = bf16_round(s[:, 8 * kk + 2 * r_ + 1])
                pa.append(f)
            return pa, np.where(io[None, :], corr_a[:, None], corr_b[:, None])

        def gathers(t):
            nonlocal pg_v, pg_k
            vbuf = (t & 1) if "ring" in MUT else (t & 1) ^ 1
            if t + 1 < n_tiles:
                load(s_v + vbuf * TILE_BYTES, vf, pg_v, t + 1)
            ring.commit()
            if t + 2 < n_tiles:
                load(s_k + (t & 1) * TILE_BYTES, kf, pg_k, t + 2)
            ring.commit()
            pg_v, pg_k = pg_k, fetch(t + 3)

        pa = None
        for t in range(n_tiles):
            buf = t & 1
            ring.wait(2)
            s = qk(t)  # S(t) reads K at its issue
            if not ovl:
                if pending_pv is not None:  # wgmma wait<0>: the previous tile's PV reads V only now
                    run_pv(pending_pv)
                    pending_pv = None
                ring.wait(2 if "wait" in MUT else 1)
                gathers(t)
                pa, corr = softmax(s, t)
                o *= corr
                pending_pv = (pa, s_v + buf * TILE_BYTES)
            else:
                if t > 0:  # PV(t - 1) queued behind S(t); it runs (reads V) at the wait<0> below
                    pending_pv = (pa, s_v + (buf ^ 1) * TILE_BYTES)
                pa, corr = softmax(s, t)
                if pending_pv is not None:
                    run_pv(pending_pv)
                    pending_pv = None
                o *= corr
                gathers(t)
        if ovl and n_tiles > 0:
            if "tail" not in MUT:
                ring.wait(0)  # V(n - 1) is younger than the last K waited for
            pending_pv = (pa, s_v + ((n_tiles - 1) & 1) * TILE_BYTES)
        if pending_pv is not None:
            run_pv(pending_pv)
        m_a, m_b, l_a, l_b = st["m_a"], st["m_b"], st["l_a"], st["l_b"]
        L_a = l_a.reshape(32, 4).sum(axis=1).repeat(4)
        L_b = l_b.reshape(32, 4).sum(axis=1).repeat(4)
        hh = g & 3
        for t_ in tid:
            for tok, L, m, sel in ((tok_a[t_], L_a[t_], m_a[t_], 0), (tok_b[t_], L_b[t_], m_b[t_], 2)):
                if tok >= ntok:
                    continue
                row, h = q_start + j0 + tok, kvh * GRP + hh[t_]
                for j in range(D // 8):
                    col = 8 * j + 2 * cc[t_]
                    out[row, h, col: col + 2] = bf16_val(bf16_round(o[t_, 4 * j + sel: 4 * j + sel + 2] / L))
                if cc[t_] == 0:
                    lse[row, h] = m + np.log2(L)
    return out, lse


# ---------------------------------------------------------------------------------------------------
# The synchronization protocol, without data: kernel_events() transcribes one CTA's program order of
# prefill_attend_wg (every statement that moves or orders shared memory, in the order of the .cuh) for
# a given n_tiles; check_protocol() replays it against the PTX rules and reports the first violation.
# Everything the protocol depends on (n_tiles, the loop bounds, the t + 1 < n / t + 2 < n load guards)
# is uniform over the CTA's 128 threads - the kernel has no producer warp, no mbarrier and no named
# barrier, so every thread runs this one event list and every __syncthreads is reached by all of them.


def kernel_events(n_tiles, ovl):
    """Events of one CTA: ("load", buf, tile) a cp.async gather (each thread its share), ("commit",),
    ("cpwait", n), ("fence",) fence.proxy.async, ("bar",) __syncthreads, ("read", buf, tile) a wgmma that
    reads that shared tile (queued in the open wgmma group), ("wcommit",), ("wwait", n)."""
    ev = [("load", "Q", 0), ("load", "K0", 0), ("commit",), ("load", "V0", 0), ("commit",)]
    if n_tiles > 1:
        ev.append(("load", "K1", 1))
    ev.append(("commit",))

    def gathers(t):
        if "tailskip" in MUT:  # the commits inside the guards: a tail tile gets fewer groups
            if t + 1 < n_tiles:
                ev.extend([("load", f"V{(t & 1) ^ 1}", t + 1), ("commit",)])
            if t + 2 < n_tiles:
                ev.extend([("load", f"K{t & 1}", t + 2), ("commit",)])
            return
        if t + 1 < n_tiles:
            ev.append(("load", f"V{(t & 1) if 'ring' in MUT else (t & 1) ^ 1}", t + 1))
        ev.append(("commit",))
        if t + 2 < n_tiles:
            ev.append(("load", f"K{t & 1}", t + 2))
        ev.append(("commit",))

    fence = [] if "nofence" in MUT else [("fence",)]
    for t in range(n_tiles):
        b = t & 1
        ev += [("cpwait", 2)] + fence + [("bar",), ("read", "Q", 0), ("read", f"K{b}", t), ("wcommit",)]
        if not ovl:
            ev += [("wwait", 0), ("cpwait", 2 if "wait" in MUT else 1)] + fence + ([] if "nobar2" in MUT else [("bar",)])
            gathers(t)
            ev += [("read", f"V{b}", t), ("wcommit",)]
        else:
            if t > 0:
                ev.append(("read", f"V{b ^ 1}", t - 1))
            ev += [("wcommit",), ("wwait", 1), ("wwait", 0)] + ([] if "nobar2" in MUT else [("bar",)])
            gathers(t)
    if ovl and n_tiles > 0:
        ev += ([] if "tail" in MUT else [("cpwait", 0)]) + fence + [("bar",), ("read", f"V{(n_tiles - 1) & 1}", n_tiles - 1),
                                                                   ("wcommit",)]
    ev.append(("wwait", 0))
    return ev


def check_protocol(ev, n_tiles):
    """None when the events keep the rules, else the first violation as text. Rules (PTX ISA):
    a cp.async write is complete for its thread once a cp.async.wait_group retires its committed group
    (wait_group n: all but the newest n committed groups; uncommitted copies are never retired); the
    async proxy (wgmma) sees it after that thread's fence.proxy.async and a barrier of all writers; a
    wgmma's shared reads are over for its warp when a wgmma.wait_group retires its group, for the CTA
    after a barrier following that; a buffer may be written again only then. Also: every K and V tile
    0 .. n_tiles - 1 is loaded once and read once by its product, Q read once per tile, nothing left
    in flight on the tensor core at the end."""
    groups, cur = [], []           # cp.async: committed groups (lists of writes), the open one
    state = {}                     # buf -> [tile, "pending" | "done" | "fenced" | "visible"]
    wg, wcur = [], []              # wgmma: committed groups (lists of (buf, tile)), the open one
    reads = {}                     # buf -> [tile, "running" | "retired"] of reads not yet over for the CTA
    loads, seen = {}, {}
    for i, e in enumerate(ev):
        at = f"event {i} {e}"
        if e[0] == "load":
            for r in reads.get(e[1], []):  # still running, or retired by this warp only (no barrier since)
                return f"{at}: overwrites {e[1]} while the wgmma reading tile {r[0]} may still run ({r[1]})"
            st = state.get(e[1])
            if st and st[1] != "visible":
                return f"{at}: overwrites {e[1]} before tile {st[0]}'s own gather was retired"
            state[e[1]] = [e[2], "pending"]
            cur.append(e[1])
            key = (e[1][0], e[2])
            loads[key] = loads.get(key, 0) + 1
        elif e[0] == "commit":
            groups.append(cur)
            cur = []
        elif e[0] == "cpwait":
            while len(groups) > e[1]:
                for buf in groups.pop(0):
                    state[buf][1] = "done"
        elif e[0] == "fence":
            for st in state.values():
                if st[1] == "done":
                    st[1] = "fenced"
        elif e[0] == "bar":
            for st in state.values():
                if st[1] == "fenced":
                    st[1] = "visible"
            for buf in reads:  # reads over for the whole CTA are forgotten
                reads[buf] = [r for r in reads[buf] if r[1] != "retired"]
        elif e[0] == "read":
            st = state.get(e[1])
            if not st or st[0] != e[2]:
                return f"{at}: {e[1]} holds tile {st[0] if st else None}, not {e[2]}"
            if st[1] != "visible":
                return f"{at}: reads {e[1]} (tile {e[2]}) while its gather is {st[1]} (not retired, fenced and barriered)"
            wcur.append((e[1], e[2]))
            reads.setdefault(e[1], []).append([e[2], "running"])
            key = (e[1][0], e[2])
            seen[key] = seen.get(key, 0) + 1
        elif e[0] == "wcommit":
            wg.append(wcur)
            wcur = []
        elif e[0] == "wwait":
            while len(wg) > e[1]:
                for buf, tile in wg.pop(0):
                    for r in reads[buf]:
                        if r[0] == tile and r[1] == "running":
                            r[1] = "retired"
    if wcur or wg:
        return "wgmma groups still in flight at the end"
    want = {("K", t): 1 for t in range(n_tiles)}
    want.update({("V", t): 1 for t in range(n_tiles)})
    want[("Q", 0)] = 1
    if loads != want:
        return f"loads per tile {sorted(loads.items())} != once each of K, V 0..{n_tiles - 1} and Q"
    want_r = dict(want)
    want_r[("Q", 0)] = n_tiles
    if seen != want_r:
        return f"reads per tile {sorted(seen.items())} != K(t), V(t) once each, Q once per tile"
    return None


def cta_tiles(qo, kv):
    """n_tiles of every CTA (sequence, 16-token tile) of a composition, with the coverage check: every
    key a row of the CTA may see lies in tiles 0 .. n_tiles - 1 and n_kv never passes kv_len.
    Returns (list of n_tiles, error text or None)."""
    out = []
    for q_len, kv_len in zip(qo, kv):
        prefix = kv_len - q_len
        for tile in range((q_len + TOK - 1) // TOK):
            j0 = tile * TOK
            ntok = min(TOK, q_len - j0)
            n_kv = prefix + j0 + ntok
            n_tiles = (n_kv + BN - 1) // BN
            last_key = prefix + j0 + ntok - 1  # the last valid row's causal limit
            if ntok < 1 or n_kv > kv_len or last_key >= n_tiles * BN or last_key < (n_tiles - 1) * BN:
                return out, f"qo {q_len} kv {kv_len} tile {tile}: n_kv {n_kv}, n_tiles {n_tiles} do not cover its keys"
            out.append(n_tiles)
    return out, None


# compositions for the protocol sweep: the bundled workloads' shapes (q1000 = 62 x 16 + 8 tokens,
# 15 x 64 + 40 keys), sizes off every tile multiple, prefixes, single tokens, ragged batches
PROTO_SHAPES = [([1], [1]), ([63], [63]), ([64], [64]), ([65], [65]), ([127], [127]), ([129], [129]),
                ([1000], [1000]), ([512], [512]), ([4095], [4095]), ([17], [17]), ([1], [777]), ([5], [69]),
                ([100, 1, 33, 0, 65], [2000, 1, 97, 5, 130]), ([1024, 1024], [8704, 8704]),
                ([2048], [34816 // 16 + 7]), ([16] * 3, [16, 80, 144]), ([333, 7], [5000, 7])]


# n_tiles checked: every value to 64 (the loop is periodic in t with period 2 after the prologue), the
# tile multiples around 128 and 256, and the largest bundled CTAs (b1-q2048-kv34816: 544 tiles)
PROTO_TILES = list(range(1, 65)) + [127, 128, 129, 255, 256, 257, 300, 543, 544, 545, 1025]


def protocol_sweep():
    """Checks both tile orders for every n_tiles of PROTO_TILES and the coverage of every CTA of
    PROTO_SHAPES. Returns the number of failures (printed)."""
    fails = 0
    for ovl in (False, True):
        for n in PROTO_TILES:
            err = check_protocol(kernel_events(n, ovl), n)
            if err:
                print(f"FAIL protocol {'ovl' if ovl else 'plain'} n_tiles={n}: {err}")
                fails += 1
                break
    ctas = 0
    for qo, kv in PROTO_SHAPES:
        tiles, err = cta_tiles(qo, kv)
        ctas += len(tiles)
        if err:
            print(f"FAIL coverage {err}")
            fails += 1
    if not fails:
        print(f"ok   protocol: cp.async groups / proxy fences / barriers / wgmma waits balanced for n_tiles "
              f"1..64 and {len(PROTO_TILES) - 64} larger up to {PROTO_TILES[-1]}, both orders; {ctas} CTAs of {len(PROTO_SHAPES)} compositions (q1000 ...) covered")
    return fails


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--mode", choices=("early", "late", "both"), default="both")
    ap.add_argument("--order", choices=("plain", "ovl", "both"), default="both",
                    help="the kernel's tile order: -DSF_PREFILL_WGMMA=1 (plain) or 2 (ovl)")
    ap.add_argument("--mutate", choices=("lbo_sbo", "ring", "mask", "wait", "tail", "tailskip", "nofence", "nobar2"))
    ap.add_argument("--protocol-only", action="store_true", help="only the synchronization protocol sweep (fast)")
    args = ap.parse_args()
    if args.mutate:
        MUT.add(args.mutate)
    if protocol_sweep():
        return 1
    if args.protocol_only:
        return 0
    if not self_check():
        print("FAIL descriptor model does not read the GEMM's TMA tiles as the GEMM expects")
        return 1
    print("ok   descriptor model reproduces the GEMM's proven K-major SW128 reads")
    modes = (False, True) if args.mode == "both" else ((args.mode == "late"),)
    orders = (False, True) if args.order == "both" else ((args.order == "ovl"),)
    fails = n = 0
    cases = []
    for ps in (1, 16):
        # a prefix of 150 (unmasked kv tiles, 3+ tiles: the ring wraps), an empty sequence, 5 tokens
        cases.append((f"ps{ps} fixed", make_case(np.random.default_rng(7 + ps), ps, 0, True,
                                                  fixed=([37, 0, 5], [187, 9, 70]))))
    # the runtime page size (3), a 330-token prefix (6 kv tiles: the rings wrap thrice), one single token
    cases.append(("ps3 fixed", make_case(np.random.default_rng(11), 3, 0, True, fixed=([20, 1], [350, 1]))))
    # q1000's shape in small (no prefix, the last item 8 tokens = 1000 - 62 x 16, the last kv tile partial)
    # next to a sequence one key past two tiles (129) with a 1-token tail item
    cases.append(("ps1 q1000-like", make_case(np.random.default_rng(13), 1, 0, True, fixed=([72, 17], [72, 129]))))
    for seed in range(args.seeds):
        for ps in (1, 16):
            rng = np.random.default_rng(5000 + 1000 * seed + ps)
            cases.append((f"ps{ps} seed{seed}", make_case(rng, ps, int(rng.integers(1, 5)), True)))
    for name, c in cases:
        ref = reference(c, True)
        for ovl in orders:
            for late in modes:
                n += 1
                fails += not check(f"prefill-wg{2 if ovl else 1} {name} {'late' if late else 'early'} "
                                   f"qo={c['qo'].tolist()} kv={c['kv'].tolist()}", emulate_prefill_wg(c, late, ovl), ref)
    print(f"{n - fails} passed, {fails} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
