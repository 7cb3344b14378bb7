"""attn_emulate_pp_data.py - the data path of tools/attn_emulate_pp.py (part 2 of its docstring): PPData, one
prefill CTA (an item of 32 tokens, one kv head) on a NaN-initialised shared-memory image, driven by the callbacks
of attn_emulate_pp.Sim: the gathers with each variant's slot rotation, cp.async landing (early / late), the
wgmma reads through desc_add'ed descriptors (tools/attn_emulate_wg.py's sw128 / descriptor / fragment model),
the base-2 online softmax with the per-warpgroup causal limits, the vote-skipped rescale and the epilogue.
tools/attn_emulate_p7.py puts one PPData per unit of a persistent CTA on one image.

The variant state (KB, ST, ROWS, TILE_BYTES, VAR, the MUT set, LEAN) lives in attn_emulate_pp (set_variant, main);
PPData reads it through its class attribute cfg, which attn_emulate_pp.PPData (the class callers use) sets to its
own module, so a run as a script (__main__) and an import of attn_emulate_pp each read their own state.
"""
import numpy as np

import attn_emulate_lean
from attn_emulate import D, GRP, HKV, HQ, LOG2E, bf16_round, bf16_val, kv_len_of
from attn_emulate_wg import NAN16, read_kmajor, read_mnmajor, sw128, wg_desc, wg_desc_mn

PP_TOK, PP_BM = 32, 128
ROW_BYTES = D * 2
Q_BYTES = PP_BM * ROW_BYTES


class PPData:
    """The data path of one CTA (item (b, tile32), kv head kvh), driven by Sim's callbacks. Use a subclass
    whose cfg is the module holding the variant state (attn_emulate_pp.PPData)."""

    cfg = None  # the module with KB, ST, ROWS, TILE_BYTES, VAR, MUT, LEAN (set by attn_emulate_pp.PPData)

    def var(self, names):
        """the variant state named in `names` (space-separated), read from cfg now, as a tuple"""
        return tuple(getattr(self.cfg, k) for k in names.split())

    def __init__(self, c, b, tile32, kvh, late):
        KB, ST, ROWS, TILE_BYTES, VAR, MUT = self.var("KB ST ROWS TILE_BYTES VAR MUT")
        self.c, self.kvh, self.late, self.ps = c, kvh, late, c["ps"]
        self.q_start = int(c["qo_indptr"][b])
        qo_len = int(c["qo_indptr"][b + 1]) - self.q_start
        prefix = kv_len_of(c, b) - qo_len
        self.j0 = tile32 * PP_TOK
        self.ntok = min(PP_TOK, qo_len - self.j0)
        self.n_kv = prefix + self.j0 + self.ntok
        self.n = (self.n_kv + KB - 1) // KB
        self.pages = c["idx"][c["kv_indptr"][b]:]
        self.qf, self.kf, self.vf = c["q"].reshape(-1), c["k"].reshape(-1), c["v"].reshape(-1)
        self.scale_log2 = np.float32(c["scale"] * LOG2E)
        base = 1024
        self.s_q, self.s_k = base, base + Q_BYTES
        self.s_v = self.s_k + ST * TILE_BYTES
        self.smem = np.full((self.s_v + ST * TILE_BYTES) // 2, NAN16, dtype=np.uint16)
        self.pend = {}  # (w, buf, tile) -> copies not landed (late mode)
        tid = np.arange(256)
        self.fetch = lambda t: [[int(self.pages[(t * KB + (x >> 4) + 16 * i) // self.ps]) * self.ps
                                 + (t * KB + (x >> 4) + 16 * i) % self.ps
                                 if t * KB + (x >> 4) + 16 * i < self.n_kv else -1 for i in range(ROWS)] for x in tid]
        if VAR >= 5:  # v5, v6: a position past n_kv - 1 takes the slot of n_kv - 1 (a real row, masked)
            slot = lambda pos: int(self.pages[pos // self.ps]) * self.ps + pos % self.ps
            rs = 8 if VAR == 6 else 16  # row stride of a thread's rows: 128 producer threads (v6) or 256
            self.fetch = lambda t: [[slot(min(t * KB + (x >> 4) + rs * i, self.n_kv - 1)) for i in range(ROWS)]
                                    for x in tid[:4096 // rs]]
        if VAR == 6:
            self.sl6 = self.fetch(0)  # the producer's slots of the tile it gathers next
        self.s0, self.s1 = self.fetch(0), self.fetch(1)
        if VAR == 5:  # the kernel's two slot sets: sl_v (V(t + 1)) and sl_k (K(t + 2)) at the end of tile t
            self.sl_v, self.sl_k = list(self.s1), self.fetch(2)
        else:
            self.sl_v, self.sl_k, self.sl_n = self.fetch(2), self.fetch(3), self.fetch(4)
            self.pro_k2 = self.sl_v
        lt = np.arange(128)
        wi, lane = lt >> 5, lt & 31
        self.g, self.cc = lane >> 2, lane & 3
        self.st = []
        for w in (0, 1):
            tok_a = 16 * w + 4 * wi + (self.g >> 2)
            lim_a = prefix + self.j0 + tok_a
            lim_min = prefix + self.j0 + 16 * w
            if "limmin" in MUT and w == 0:
                lim_min += 16
            self.st.append(dict(tok_a=tok_a, lim_a=lim_a, lim_b=lim_a + 2, lim_min=lim_min,
                                o=np.zeros((128, 64), dtype=np.float32), m_a=np.full(128, -np.inf, np.float32),
                                m_b=np.full(128, -np.inf, np.float32), l_a=np.zeros(128, np.float32),
                                l_b=np.zeros(128, np.float32), s=None, pa=None, pn=None, corr=None))
        self.rows = lambda n_: 16 * wi[:, None] + self.g[:, None] + 8 * ((np.arange(n_)[None, :] % 4) >= 2)
        self.cols = lambda n_: 8 * (np.arange(n_)[None, :] // 4) + 2 * self.cc[:, None] + (np.arange(n_)[None, :] % 2)
        self.wi = wi
        self.dq = [wg_desc(self.s_q + w * 64 * 128) for w in (0, 1)]
        self.dk = wg_desc(self.s_k)
        self.dv = wg_desc_mn(self.s_v, KB * 128)

    def copy(self, w, buf, tile, dst, src, off, ok):
        if self.late:
            self.pend.setdefault((w, buf, tile), []).append((dst, src, off, ok))
        else:
            self.smem[dst // 2: dst // 2 + 8] = src[off: off + 8] if ok else 0

    def land(self, w, buf, tile):
        for dst, src, off, ok in self.pend.pop((w, buf, tile), []):
            self.smem[dst // 2: dst // 2 + 8] = src[off: off + 8] if ok else 0

    def load6(self, buf, tile):
        """v6: producer thread x copies chunk x % 16 of rows x / 16 + 8 i (i < 16): Q, or K / V with the
        slots it holds (sl6, fetched for this tile after the previous tile's V), at gofs + 1024 i"""
        KB, ROWS, TILE_BYTES = self.var("KB ROWS TILE_BYTES")
        for x in range(128):
            ch = x & 15
            if buf == "Q":
                for i in range(16):
                    row = (x >> 4) + 8 * i
                    tok = row >> 2
                    ok = tok < self.ntok
                    off = ((self.q_start + self.j0 + (tok if ok else 0)) * HQ + self.kvh * GRP + (row & 3)) * D + ch * 8
                    self.copy(0, buf, tile, self.s_q + sw128(PP_BM, row, ch), self.qf, off, ok)
                continue
            src = self.kf if buf[0] == "K" else self.vf
            dst0 = (self.s_k if buf[0] == "K" else self.s_v) + int(buf[1]) * TILE_BYTES + sw128(KB, x >> 4, ch)
            for i in range(ROWS):
                off = self.sl6[x][i] * HKV * D + self.kvh * D + ch * 8
                self.copy(0, buf, tile, dst0 + i * 8 * 128, src, off, True)

    def load(self, w, buf, tile):
        KB, ROWS, TILE_BYTES, VAR, MUT = self.var("KB ROWS TILE_BYTES VAR MUT")
        if VAR == 6:
            return self.load6(buf, tile)
        for x in range(128 * w, 128 * w + 128):
            ch = x & 15
            if buf == "Q":
                for i in range(PP_BM * 16 // 256):
                    row = (x >> 4) + 16 * i
                    tok = row >> 2
                    ok = tok < self.ntok
                    off = ((self.q_start + self.j0 + (tok if ok else 0)) * HQ + self.kvh * GRP + (row & 3)) * D + ch * 8
                    self.copy(w, buf, tile, self.s_q + sw128(PP_BM, row, ch), self.qf, off, ok)
                continue
            kind, sb = buf[0], int(buf[1])
            if VAR == 5:
                if kind == "K":
                    sl = self.s0 if tile == 0 else self.s1 if tile == 1 else self.sl_k
                else:
                    sl = self.s0 if tile == 0 else (self.sl_k if "slotv" in MUT else self.sl_v)
            elif kind == "K":
                sl = {0: self.s0, 1: self.s1, 2: self.pro_k2}.get(tile) if tile < 3 else self.sl_k
            else:
                sl = {0: self.s0, 1: self.s1}.get(tile) if tile < 2 else (self.sl_k if "slotv" in MUT else self.sl_v)
            src = self.kf if kind == "K" else self.vf
            dst0 = (self.s_k if kind == "K" else self.s_v) + sb * TILE_BYTES
            for i in range(ROWS):
                ok = sl[x][i] >= 0
                off = (sl[x][i] if ok else 0) * HKV * D + self.kvh * D + ch * 8
                self.copy(w, buf, tile, dst0 + sw128(KB, x >> 4, ch) + i * 16 * 128, src, off, ok)  # gofs + 2048 i

    def wgmma(self, w, buf, tile, t):
        KB, TILE_BYTES, MUT = self.var("KB TILE_BYTES MUT")
        st = self.st[w]
        if buf == "Q":
            return
        if buf[0] == "K":  # S(t) = Q K^T through desc_add'ed descriptors
            S = np.zeros((64, KB))
            dkt = self.dk + ((int(buf[1]) * TILE_BYTES) >> 4)
            half = (64 if "khalf" in MUT else KB) * 128  # bytes from one 64-dim half of a K tile to the next
            for kk in range(D // 16):
                A = bf16_val(read_kmajor(self.smem, self.dq[w] + (((kk >> 2) * (PP_BM * 128) + (kk & 3) * 32) >> 4), 64))
                B = bf16_val(read_kmajor(self.smem, dkt + (((kk >> 2) * half + (kk & 3) * 32) >> 4), KB))
                S += A.astype(np.float64) @ B.astype(np.float64).T
            st["s"] = S[self.rows(KB // 2), self.cols(KB // 2)].astype(np.float32)
            return
        O = np.zeros((64, 128))
        O[self.rows(64), self.cols(64)] = st["o"]
        dvt = self.dv + ((int(buf[1]) * TILE_BYTES) >> 4)
        for kk in range(KB // 16):
            A = np.zeros((64, 16))
            for r_, (dr, dk_) in enumerate(((0, 0), (8, 0), (0, 8), (8, 8))):
                for e in range(2):
                    A[16 * self.wi + self.g + dr, 2 * self.cc + dk_ + e] = bf16_val(st["pa"][kk][:, r_, e])
            B = bf16_val(read_mnmajor(self.smem, dvt + ((kk * 2048) >> 4), D)).astype(np.float64)
            O += A @ B
        st["o"][:] = O[self.rows(64), self.cols(64)].astype(np.float32)

    def softmax(self, w, t):
        KB, MUT, LEAN = self.var("KB MUT LEAN")
        st, cc = self.st[w], self.cc
        s = st["s"]
        ns = KB // 2  # scores per thread
        ia = (np.arange(ns) % 4) < 2
        if t * KB + KB - 1 > st["lim_min"]:
            kvpos = t * KB + 8 * (np.arange(ns)[None, :] // 4) + 2 * cc[:, None] + (np.arange(ns)[None, :] % 2)
            lim = np.where(ia[None, :], st["lim_a"][:, None], st["lim_b"][:, None])
            s = np.where(kvpos > lim, -np.inf, s).astype(np.float32)
        quad = lambda x: x.reshape(32, 4).max(axis=1).repeat(4)
        nm_a = np.maximum(st["m_a"], (quad(s[:, ia].max(axis=1)) * self.scale_log2).astype(np.float32))
        nm_b = np.maximum(st["m_b"], (quad(s[:, ~ia].max(axis=1)) * self.scale_log2).astype(np.float32))
        if LEAN[0] == 2:  # a warp moves its maxima only when one grows by more than 8 (attn_emulate_lean.py)
            nm_a, nm_b, mx_ab = attn_emulate_lean.kept_max(st["m_a"], st["m_b"], nm_a, nm_b, np)
        mu_a = np.where(nm_a == -np.inf, 0, nm_a).astype(np.float32)
        mu_b = np.where(nm_b == -np.inf, 0, nm_b).astype(np.float32)
        corr_a, corr_b = np.exp2(st["m_a"] - mu_a), np.exp2(st["m_b"] - mu_b)
        st["m_a"], st["m_b"] = nm_a, nm_b
        mu = np.where(ia[None, :], mu_a[:, None], mu_b[:, None])
        if LEAN[0] == 2 and "thrstale" in MUT:  # the exponentials with the true max, m and l with the kept one
            mu = np.where(ia[None, :], mx_ab[0][:, None], mx_ab[1][:, None]).astype(np.float32)
        with np.errstate(invalid="ignore"):
            s = np.exp2((s.astype(np.float64) * np.float64(self.scale_log2) - mu).astype(np.float32))
        st["l_a"] = st["l_a"] * corr_a + s[:, ia].sum(axis=1)
        st["l_b"] = st["l_b"] * corr_b + s[:, ~ia].sum(axis=1)
        st["corr"] = (corr_a, corr_b)
        if LEAN[0]:  # the exponentials stay fp32 until pack
            st["pe"] = s
            return
        pn = []
        for kk in range(KB // 16):
            f = np.zeros((128, 4, 2), dtype=np.uint16)
            for r_ in range(4):
                f[:, r_, 0] = bf16_round(s[:, 8 * kk + 2 * r_])
                f[:, r_, 1] = bf16_round(s[:, 8 * kk + 2 * r_ + 1])
            pn.append(f)
        st["pn"], st["corr"] = pn, (corr_a, corr_b)

    def rescale(self, w, t):
        MUT, LEAN = self.var("MUT LEAN")
        st = self.st[w]
        corr_a, corr_b = st["corr"]
        same = (corr_a == 1) & (corr_b == 1)
        for wi in range(4):  # warp vote: skip when every lane's max is unchanged
            lanes = slice(32 * wi, 32 * wi + 32)
            skip = same[lanes].any() if "vote" in MUT else same[lanes].all()
            if not skip:
                io = (np.arange(64) % 4) < 2
                st["o"][lanes] *= np.where(io[None, :], corr_a[lanes, None], corr_b[lanes, None])
        if not LEAN[0]:
            st["pa"] = st["pn"]

    def pack(self, w, t):
        KB, = self.var("KB")
        self.st[w]["pa"] = attn_emulate_lean.pack_fragments(self.st[w]["pe"], KB, bf16_round, np)

    def rotate(self, w, t):
        VAR, = self.var("VAR")
        if VAR == 6:  # the producer loads the slots of tile t + 1 after gathering V(t)
            self.sl6 = self.fetch(t + 1)
            return
        if VAR == 5:  # sl_v <- sl_k (V(t + 2) reuses K(t + 2)'s slots); sl_k <- the slots of tile t + 3
            nxt = self.fetch(t + 3)
            for x in range(128 * w, 128 * w + 128):
                self.sl_v[x], self.sl_k[x] = self.sl_k[x], nxt[x]
            return
        for x in range(128 * w, 128 * w + 128):
            self.sl_v[x], self.sl_k[x] = self.sl_k[x], self.sl_n[x]
        nxt = self.fetch(t + 5)
        for x in range(128 * w, 128 * w + 128):
            self.sl_n[x] = nxt[x]

    def store(self, out, lse):
        for w in (0, 1):
            st = self.st[w]
            L_a = st["l_a"].reshape(32, 4).sum(axis=1).repeat(4)
            L_b = st["l_b"].reshape(32, 4).sum(axis=1).repeat(4)
            hh = self.g & 3
            je = np.arange(D // 8)[:, None], np.arange(2)[None, :]
            for tok, L, m, sel in ((st["tok_a"], L_a, st["m_a"], 0), (st["tok_a"] + 2, L_b, st["m_b"], 2)):
                x = np.nonzero(tok < self.ntok)[0]  # the threads whose row is a real token
                row, h = self.q_start + self.j0 + tok[x], self.kvh * GRP + hh[x]
                col = 8 * je[0][None] + 2 * self.cc[x][:, None, None] + je[1][None]
                val = st["o"][x[:, None, None], 4 * je[0][None] + sel + je[1][None]] / L[x][:, None, None]
                out[row[:, None, None], h[:, None, None], col] = bf16_val(bf16_round(val))
                q0 = self.cc[x] == 0
                lse[row[q0], h[q0]] = m[x][q0] + np.log2(L[x][q0])
