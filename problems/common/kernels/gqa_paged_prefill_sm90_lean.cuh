/*
 * gqa_paged_prefill_sm90_lean.cuh - the lean consumer of prefill version 8 ("v8 lean", -DSF_PREFILL_LEAN=1 or 2 with
 * -DSF_PREFILL_WGMMA=8; PREFILL_NOTES.md "Version 10: the consumer's instruction diet"): helpers that
 * p6_attend<PS, kTurns = true> uses in place of softmax128 / the P copy / the Q descriptor arithmetic when
 * SF_PREFILL_LEAN is on. Without it nothing here is instantiated and v8's PTX is unchanged.
 *
 * What changes against v8's consumer (the same arithmetic per score, so the same results to the bit):
 *  - the softmax writes the exponentials back into S's fp32 registers and does not pack them; P(t) is
 *    packed to bf16 straight into pa after wgmma.wait 0 (FlashAttention-3's order: convert after the
 *    PV wait). v8 packed into pn during the softmax and copied pn to pa after the wait; ptxas merged pn
 *    with pa (the PV's A registers) and so moved the wait (WARPGROUP.DEPBAR.LE gsb0, 0x0) to the top of
 *    the softmax: v8's softmax did NOT run under PV(t - 1), and every tile's chain held S + PV + softmax.
 *    Register fences on S before and after the wait pin the exponentials before it and the packing after;
 *  - the row sums start from the first pair instead of 0 + (2 FADD); the row maxima are FMNMX trees (depth 5,
 *    not a chain of 31 dependent FMNMX; fmax is exact, so the result is the same);
 *  - tile 0 is peeled (consumer below): v8 committed PV(t - 1) under `t > 0`, and for that possibly empty
 *    group ptxas added a dummy HGMMA (its own group), so v8's wait 1 also waited for PV(t - 1);
 *  - Q's descriptor is rebuilt from its low 32 bits broadcast from lane 0 and the constant high word of
 *    wg_desc (stride 1024 B, 128B swizzle), so that ptxas keeps it in uniform registers: one UIADD3.64 per S
 *    wgmma as for K, no R2UR and no vector integer arithmetic (K's and V's were uniform already).
 * SASS per tile (tools/sass_loop_classes.py; PREFILL_NOTES.md, version 10): 402 instructions on the main
 * path against v8's 471, and the softmax's 66 MUFU.EX2 between the wait for S and the wait for PV.
 * SF_PREFILL_LEAN=2 also keeps a warp's running maxima unless one grows by more than LEAN_THR (softmax128_exp's
 * kMode 2): the O rescale then (almost) never runs after tile 0; not bit-identical to v8 (rounding only).
 */
#pragma once

#define LEAN_DESC_HI 0x40000040u /* high word of wg_desc: (1024 >> 4) | 1 << 30 (bit 62) */
#define LEAN_THR 8.0f /* SF_PREFILL_LEAN=2: a warp moves its running maxima only when one grows by more (base 2) */

namespace sflean {

/*
 * kMode 1 (SF_PREFILL_LEAN=1): softmax128's arithmetic on this thread's 64 raw scores of 128-key tile t (element 4 j + e: row a for e <
 * 2, row b otherwise), leaving p = 2^(s scale - m) in s (fp32, not packed): the causal mask only when the
 * tile reaches past the warpgroup's smallest limit, the row max (fmax over 32 values + 2 quad shuffles per
 * row), the running max in base-2 units, one FFMA + one MUFU.EX2 per score, per-lane running sums started
 * from the first pair. corr_* = 2^(old m - new m) for the O rescale. Results equal softmax128's to the bit;
 * `grow` is left alone (the caller votes on corr).
 * kMode 2 (SF_PREFILL_LEAN=2, FlashAttention-4's conditional rescale): the warp keeps its running maxima unless
 * some row's max grows by more than LEAN_THR (grow, warp-uniform: __any_sync); a kept max may lie below the
 * row's true max by up to LEAN_THR, so p <= 2^LEAN_THR = 256 (exact in fp32, bf16's relative precision
 * unchanged) and l uses the same max: O / l and lse = m + log2 l are unchanged in exact arithmetic. After the
 * first tile the O rescale then (almost) never runs; the results differ from v8's by rounding only.
 */
template <int kMode>
__device__ __forceinline__ void softmax128_exp(float (&s)[64], int t, int lim_a, int lim_b, int lim_min, int c,
					       float scale_log2, float &m_a, float &m_b, float &l_a, float &l_b,
					       float &corr_a, float &corr_b, bool &grow)
{
	sfp5::causal_mask128(s, t, lim_a, lim_b, lim_min, c);
	/* the row maxima as trees (depth 5, 31 FMNMX per row as the chain of softmax128, whose 31 dependent FMNMX
	 * were on the consumer's critical path); fmax is exact, so the order does not change the result */
	float ta[32], tb[32];
#pragma unroll
	for (int j = 0; j < P5_BN / 8; j++) {
#pragma unroll
		for (int e = 0; e < 2; e++) {
			ta[2 * j + e] = s[4 * j + e];
			tb[2 * j + e] = s[4 * j + 2 + e];
		}
	}
#define LEAN_TREE_STAGE(W)                                                                                              \
	_Pragma("unroll") for (int i = 0; i < (W); i++)                                                                  \
	{                                                                                                                \
		ta[i] = fmaxf(ta[i], ta[i + (W)]);                                                                       \
		tb[i] = fmaxf(tb[i], tb[i + (W)]);                                                                       \
	}
	LEAN_TREE_STAGE(16)
	LEAN_TREE_STAGE(8)
	LEAN_TREE_STAGE(4)
	LEAN_TREE_STAGE(2)
	LEAN_TREE_STAGE(1)
#undef LEAN_TREE_STAGE
	float mx_a = ta[0], mx_b = tb[0];
	mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, 1));
	mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, 2));
	mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, 1));
	mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, 2));
	float nm_a = fmaxf(m_a, mx_a * scale_log2), nm_b = fmaxf(m_b, mx_b * scale_log2);
	if constexpr (kMode == 2) { /* m = -inf: any finite max grows it */
		grow = __any_sync(0xffffffffu, nm_a > m_a + LEAN_THR || nm_b > m_b + LEAN_THR);
		nm_a = grow ? nm_a : m_a;
		nm_b = grow ? nm_b : m_b;
	}
	/* a row with no visible key so far keeps m = -inf: subtract 0 instead (weights 0, no NaN) */
	const float mu_a = nm_a == -INFINITY ? 0.0f : nm_a, mu_b = nm_b == -INFINITY ? 0.0f : nm_b;
	corr_a = ex2_ftz(m_a - mu_a);
	corr_b = ex2_ftz(m_b - mu_b);
	m_a = nm_a;
	m_b = nm_b;
#pragma unroll
	for (int i = 0; i < 64; i++)
		s[i] = ex2_ftz(fmaf(s[i], scale_log2, (i & 2) ? -mu_b : -mu_a));
	/* softmax128's order: sum = ((0 + (p0 + p1)) + (p4 + p5)) + ...; 0 + x == x, so start from the pair */
	float sum_a = s[0] + s[1], sum_b = s[2] + s[3];
#pragma unroll
	for (int j = 1; j < P5_BN / 8; j++) {
		sum_a += s[4 * j + 0] + s[4 * j + 1];
		sum_b += s[4 * j + 2] + s[4 * j + 3];
	}
	l_a = l_a * corr_a + sum_a;
	l_b = l_b * corr_b + sum_b;
}

/* wgmma.wait_group 0 on the path where no row max of the warp changed: sfwg::wgmma_wait<0> with a different
 * asm text (a PTX comment), so that the two arms of the rescale branch stay apart (lean's wait placement) */
__device__ __forceinline__ void wgmma_wait0_kept()
{
	asm volatile("wgmma.wait_group.sync.aligned 0; // lean: max kept" ::: "memory");
}

/* P(t) as bf16 A fragments straight into pa (k-step kk = positions 16 kk .. +15: a0 = row a cols 2c, 2c + 1;
 * a1 = row b; a2 = row a cols 8 + 2c, +1; a3 = row b), softmax128's packing; only after wgmma.wait 0
 * (pa is PV(t - 1)'s operand until then) */
__device__ __forceinline__ void pack_p(uint32_t (&pa)[P5_BN / 16][4], const float (&s)[64])
{
#pragma unroll
	for (int kk = 0; kk < P5_BN / 16; kk++) {
		pa[kk][0] = pack_bf16(s[8 * kk + 0], s[8 * kk + 1]);
		pa[kk][1] = pack_bf16(s[8 * kk + 2], s[8 * kk + 3]);
		pa[kk][2] = pack_bf16(s[8 * kk + 4], s[8 * kk + 5]);
		pa[kk][3] = pack_bf16(s[8 * kk + 6], s[8 * kk + 7]);
	}
}

/*
 * Version 8's consumer warpgroups (both turn roles; v8's contract: p8.cuh's header, p6.cuh's ring and
 * barriers) with the lean body. Tile 0 is peeled: S(0) is issued and committed alone and waited for with
 * wait 0, so every group the tile loop commits holds wgmmas. v8's loop commits PV(t - 1) under `t > 0`;
 * for that possibly empty group ptxas adds a dummy HGMMA.64x8x16 (its own gsb0 group) after the branch,
 * so the loop has three gsb0 groups per tile and v8's "wait 1" (WARPGROUP.DEPBAR.LE gsb0, 0x1) waits for
 * S(t) AND PV(t - 1): v8's softmax never overlapped its own PV. Here wait 1 retires S(t) only; softmax(t)
 * runs under PV(t - 1); wait 0, V's release, P(t)'s packing into pa and the rescale follow. bar0: the 4 *
 * P5_STAGES mbarriers (full_k, full_v, empty_k, empty_v); tid: threadIdx.x (128 .. 383); q_row0: the first
 * query row of the item (q_start + j0); lim0 = prefix + j0. Ends with the rows stored (wg_store_rows).
 */
__device__ __forceinline__ void consumer(uint32_t s_q, uint32_t s_k, uint32_t s_v, uint32_t bar0, int n, int lim0,
					 int ntok, int q_row0, int kvh, float scale_log2, int tid,
					 __nv_bfloat16 *__restrict__ out, float *__restrict__ lse)
{
#define L_FULL_K(s) (bar0 + 8 * (s))
#define L_FULL_V(s) (bar0 + 8 * (P5_STAGES + (s)))
#define L_EMPTY_K(s) (bar0 + 8 * (2 * P5_STAGES + (s)))
#define L_EMPTY_V(s) (bar0 + 8 * (3 * P5_STAGES + (s)))
	const int ct = tid - 128, lane = ct & 31, wg = ct >> 7, wi = (ct >> 5) & 3;
	const int g = lane >> 2, c = lane & 3;
	/* accumulator rows: 16 wi + g (a) and + 8 (b) of this warpgroup; their tokens and causal limits */
	const int tok_a = 16 * wg + wi * 4 + (g >> 2), tok_b = tok_a + 2;
	const int lim_a = lim0 + tok_a, lim_b = lim0 + tok_b;
	const int lim_min = lim0 + 16 * wg; /* this warpgroup's smallest limit */
	/* Q's descriptor: its low word broadcast from lane 0 (the same value in every lane: ptxas then keeps the
	 * descriptor in uniform registers; derived from the warpgroup index it stays in vector registers and costs
	 * 2 R2UR + ~3 integer instructions per S wgmma, v8's SASS) and wg_desc's constant high word */
	const uint32_t dq_lo = __shfl_sync(0xffffffffu, (uint32_t)sfwg::wg_desc(s_q + wg * 64 * 128), 0);
	const uint64_t dq64 = (uint64_t)LEAN_DESC_HI << 32 | dq_lo;
	const uint64_t dk = sfwg::wg_desc(s_k);
	const uint64_t dv = sfwg::wg_desc_mn(s_v, P5_BN * 128);

	float o[64];
#pragma unroll
	for (int i = 0; i < 64; i++)
		o[i] = 0.0f;
	float m_a = -INFINITY, m_b = -INFINITY, l_a = 0.0f, l_b = 0.0f, corr_a, corr_b;
	bool grow = false; /* this tile rescales O (the vote, or SF_PREFILL_LEAN=2's growth rule) */
	uint32_t pa[P5_BN / 16][4];
	if (wg == 1)
		sfpp::bar_arrive(P8_TURN_BAR, P8_TURN_THREADS); /* consumer 0 issues first */
	/* S(t) into s with the K tile of ring stage st */
#define L_ISSUE_S(s, st)                                                                                                \
	do {                                                                                                            \
		const uint64_t dkt = sfpp::desc_add(dk, (st) * P5_TILE);                                                \
		_Pragma("unroll") for (int kk = 0; kk < D / 16; kk++) sfwg::wgmma_m64n128k16_ss(                        \
			s, sfpp::desc_add(dq64, (kk >> 2) * (PP_BM * 128) + (kk & 3) * 32),                             \
			sfpp::desc_add(dkt, (kk >> 2) * (P5_BN * 128) + (kk & 3) * 32), kk);                            \
	} while (0)
	{ /* tile 0: S(0) alone, one group; O is 0, so no rescale */
		sfwg::mbar_wait(L_FULL_K(0), 0);
		sfpp::bar_sync(P8_TURN_BAR + wg, P8_TURN_THREADS);
		float s[64];
		sfwg::wgmma_fence();
		L_ISSUE_S(s, 0);
		sfwg::wgmma_commit();
		sfpp::bar_arrive(P8_TURN_BAR + 1 - wg, P8_TURN_THREADS);
		sfwg::wgmma_wait<0>();
		sfwg::fence_regs(s);
		sfwg::mbar_arrive(L_EMPTY_K(0));
		softmax128_exp<SF_PREFILL_LEAN>(s, 0, lim_a, lim_b, lim_min, c, scale_log2, m_a, m_b, l_a, l_b, corr_a,
						corr_b, grow);
		pack_p(pa, s);
	}
	int st = 1;	 /* t % 3 */
	uint32_t ph = 0; /* (t / 3) & 1 */
	for (int t = 1; t < n; t++) {
		const int sp = st == 0 ? 2 : st - 1;	/* (t - 1) % 3 */
		const uint32_t php = st == 0 ? ph ^ 1 : ph; /* ((t - 1) / 3) & 1 */
		sfwg::mbar_wait(L_FULL_K(st), ph);
		sfwg::mbar_wait(L_FULL_V(sp), php);
		sfpp::bar_sync(P8_TURN_BAR + wg, P8_TURN_THREADS); /* my turn on the tensor core */
		float s[64];
		sfwg::wgmma_fence();
		L_ISSUE_S(s, st);
		sfwg::wgmma_commit();
		sfp5::pv128(o, pa, sfpp::desc_add(dv, sp * P5_TILE)); /* always a real group: no dummy HGMMA */
		sfwg::wgmma_commit();
		sfpp::bar_arrive(P8_TURN_BAR + 1 - wg, P8_TURN_THREADS); /* the other consumer's turn */

		sfwg::wgmma_wait<1>(); /* S(t) complete: K(t) read; PV(t - 1) may still run */
		sfwg::fence_regs(s);
		sfwg::mbar_arrive(L_EMPTY_K(st));
		softmax128_exp<SF_PREFILL_LEAN>(s, t, lim_a, lim_b, lim_min, c, scale_log2, m_a, m_b, l_a, l_b, corr_a,
						corr_b, grow);
		sfwg::fence_regs(s); /* the exponentials before the wait ... */
		if constexpr (SF_PREFILL_LEAN == 1) /* the rescale vote: no lane's max moved */
			grow = !__all_sync(0xffffffffu, corr_a == 1.0f && corr_b == 1.0f);
		/* the wait in both arms of the rescale branch, their asm texts different: a wait sharing the
		 * softmax's basic block may be scheduled to its top by ptxas */
		if (!grow) {
			wgmma_wait0_kept();
			sfwg::fence_regs(o);
		} else {
			sfwg::wgmma_wait<0>();
			sfwg::fence_regs(o);
			rescale_o(o, corr_a, corr_b);
		}
		sfwg::fence_regs(s); /* ... and their packing after it (pa: PV(t - 1)'s operand until the wait) */
		sfwg::mbar_arrive(L_EMPTY_V(sp)); /* V(t - 1) read */
		pack_p(pa, s);
		st = st == 2 ? 0 : st + 1;
		ph ^= st == 0 ? 1u : 0u;
	}
#undef L_ISSUE_S
	{ /* the last tile's PV (V(n - 1), published by the producer's last wait_group 0) */
		const int sl = (n - 1) % P5_STAGES;
		sfwg::mbar_wait(L_FULL_V(sl), ((n - 1) / P5_STAGES) & 1);
		sfwg::fence_regs(o);
		sfwg::wgmma_fence();
		sfp5::pv128(o, pa, sfpp::desc_add(dv, sl * P5_TILE));
	}
	sfwg::wgmma_commit();
	sfwg::wgmma_wait<0>();
	sfwg::fence_regs(o);
	if (wg == 0) /* takes consumer 1's arrival after its last tile: both barriers end balanced */
		sfpp::bar_sync(P8_TURN_BAR, P8_TURN_THREADS);
#undef L_FULL_K
#undef L_FULL_V
#undef L_EMPTY_K
#undef L_EMPTY_V
	wg_store_rows(o, l_a, l_b, m_a, m_b, tok_a, tok_b, ntok, g, c, q_row0, kvh, out, lse);
}

} /* namespace sflean */
