"""attn_emulate_lean.py - the consumers of prefill version 8's lean body (-DSF_PREFILL_WGMMA=8
-DSF_PREFILL_LEAN=1, problems/common/kernels/gqa_paged_prefill_sm90_lean.cuh, sflean::consumer) for
tools/attn_emulate_pp.py --variant 8 --lean: the program order of one consumer warpgroup and the data path's
two lean steps (exponentials kept in fp32, packed into the PV's A registers only after wgmma.wait 0).

Program (consumer c = 0, 1; its turns are v8's, so tools/attn_emulate_p8.py's per-warp model holds as is):
  c == 1: arrive on turn barrier 1
  tile 0 (peeled): wait full K(0); turn; S(0) (Q, K0); commit; pass the turn; wgmma.wait 0; release K(0);
                   softmax(0); pack P(0)
  tile t >= 1:     wait full K(t), V(t - 1); turn; S(t); commit; PV(t - 1); commit (never an empty group);
                   pass the turn; wait 1; release K(t); softmax(t); wait 0; rescale; release V(t - 1); pack P(t)
  after the loop:  wait full V(n - 1); PV(n - 1); commit; wait 0; c == 0: the balancing sync on barrier 1
The emulator's Sim checks at "pack" that no wgmma of this consumer is committed and unretired (pa is the
in-flight PV's operand until wait 0); the late data mode catches the same through the PV's result.
Mutations: packearly (pack before wait 0), smearly (softmax before wait 1: the late mode reads a stale S).

--lean 2 (-DSF_PREFILL_LEAN=2): the same program; the softmax keeps a warp's running maxima unless one of its
rows' maxima grows by more than LEAN_THR = 8 (base 2; kept_max), so after the first tile the O rescale (almost)
never runs. growth_case makes a composition whose maxima do grow by more than 8 after tile 0. Mutation
thrstale: the exponentials with the true max while m and l keep the old one (caught by the data path).
"""

THR = 8.0  # LEAN_THR of the kernel


def consumer_events(n, c, st_count, turns, mut):
    """Event list of consumer c (attn_emulate_pp.Sim's event vocabulary) for n tiles, st_count ring stages."""
    ev = [("barrive", 1)] if (turns and c == 1) else []
    ev += [("mwait", ("FK", 0), 0, 0)]
    if turns:
        ev.append(("bsync", 1 + c))
    ev += [("read", "Q", 0, 0), ("read", "K0", 0, 0), ("wcommit",)]
    if turns:
        ev.append(("barrive", 2 - c))
    ev += [("wwait", 0), ("arrive", ("EK", 0)), ("softmax", 0), ("pack", 0)]
    st, ph = 1 % st_count, 0
    for t in range(1, n):
        sp = st_count - 1 if st == 0 else st - 1
        php = ph ^ 1 if st == 0 else ph
        ev += [("mwait", ("FK", st), ph, t), ("mwait", ("FV", sp), php, t - 1)]
        if turns:
            ev.append(("bsync", 1 + c))
        ev += [("read", "Q", 0, t), ("read", f"K{st}", t, t), ("wcommit",), ("read", f"V{sp}", t - 1, t - 1),
               ("wcommit",)]
        if turns:
            ev.append(("barrive", 2 - c))
        if "smearly" in mut:
            ev += [("softmax", t), ("wwait", 1), ("arrive", ("EK", st))]
        else:
            ev += [("wwait", 1), ("arrive", ("EK", st)), ("softmax", t)]
        if "packearly" in mut:
            ev += [("pack", t), ("wwait", 0), ("rescale", t), ("arrive", ("EV", sp))]
        else:
            ev += [("wwait", 0), ("rescale", t), ("arrive", ("EV", sp)), ("pack", t)]
        st = 0 if st == st_count - 1 else st + 1
        ph ^= 1 if st == 0 else 0
    sl = (n - 1) % st_count
    ev += [("mwait", ("FV", sl), ((n - 1) // st_count) & 1, n - 1), ("read", f"V{sl}", n - 1, n - 1),
           ("wcommit",), ("wwait", 0)]
    if turns and c == 0:
        ev.append(("bsync", 1))
    return ev


def pack_fragments(s, kb, bf16_round, np):
    """P as the PV's bf16 A fragments (k-step kk: [thread, register r, element e] = s[:, 8 kk + 2 r + e]),
    the kernel's pack_p (and softmax128's packing)"""
    out = []
    for kk in range(kb // 16):
        f = np.zeros((s.shape[0], 4, 2), dtype=np.uint16)
        for r_ in range(4):
            f[:, r_, 0] = bf16_round(s[:, 8 * kk + 2 * r_])
            f[:, r_, 1] = bf16_round(s[:, 8 * kk + 2 * r_ + 1])
        out.append(f)
    return out


def kept_max(m_a, m_b, nm_a, nm_b, np):
    """SF_PREFILL_LEAN=2's rule on one warpgroup's 128 threads (warp = 32 consecutive threads): a warp takes the
    new maxima nm_* only when any of its lanes' grows by more than THR over m_* (m = -inf: any finite one).
    Returns the kept maxima and the true ones (for the thrstale mutation)."""
    need = (nm_a > m_a + np.float32(THR)) | (nm_b > m_b + np.float32(THR))
    grow = need.reshape(4, 32).any(axis=1).repeat(32)
    mx = (np.where(nm_a == -np.inf, 0, nm_a), np.where(nm_b == -np.inf, 0, nm_b))
    return np.where(grow, nm_a, m_a).astype(np.float32), np.where(grow, nm_b, m_b).astype(np.float32), mx


def growth_case(c, pos0, bf16_round):
    """c (one sequence) with the keys at positions >= pos0 scaled by 4 (rounded to bf16 again): their scores
    are 4x larger, so row maxima grow by more than THR after the first tiles"""
    ps, kvl = c["ps"], int(c["kv"][0])
    for p in range(pos0, kvl):
        page = int(c["idx"][int(c["kv_indptr"][0]) + p // ps])
        c["k"][page, p % ps] = bf16_round(c["k"][page, p % ps] * 4.0)
    return c
