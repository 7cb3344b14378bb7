/*
 * gqa_paged_prefill_sm90_p8.cuh - version 8 ("v8") of the causal GQA paged prefill attend kernel
 * (gqa_paged_prefill_sm90.cu with -DSF_PREFILL_WGMMA=8): version 6 (gqa_paged_prefill_sm90_p6.cuh: one
 * producer warpgroup with cp.async gathers, two consumer warpgroups with wgmma, setmaxnreg 64 / 216)
 * plus FlashAttention-3's ping-pong of the two consumers on named barriers, so that one consumer's
 * softmax runs while the other's S / PV wgmmas occupy the tensor core.
 *
 * Everything but the turns is v6's (ring, producer, publication lag 2, full / empty mbarriers, masks,
 * rescale vote, epilogue; see p6.cuh's header for their contract). The turns (named barriers
 * P8_TURN_BAR + 0 / + 1, P8_TURN_THREADS = the 256 consumer threads; the producer never uses them):
 *  - consumer c waits for its full barriers, then `bar.sync P8_TURN_BAR + c` before issuing
 *    [S(t), PV(t - 1)], and `bar.arrive P8_TURN_BAR + 1 - c` right after the two wgmma commits: the
 *    tensor core gets 0's pair, 1's pair, 0's pair, ... and each softmax runs under the other's pair;
 *  - consumer 1 arrives once on barrier P8_TURN_BAR before its loop (consumer 0 issues first);
 *    consumer 0 syncs once more on it after its last PV, taking consumer 1's arrival after its last
 *    tile: both barriers end balanced. Every arrival is unconditional (a branch around a wgmma's
 *    neighbourhood made ptxas serialize wgmmas, C7520, in v3pp and v7).
 *  - both consumers walk the same n tiles (consumer 0's last may be fully masked): a consumer that
 *    skipped a tile would leave the other's last bar.sync without its arrival (a hang).
 * Deadlock freedom (PREFILL_NOTES.md, v8): a consumer's turn for tile t needs the other's issue of tile
 * t - 1 + c, which needs only full phases this consumer already waited for (its full waits precede the
 * turn); the producer's waits need consumer work on tiles <= t - 2, done before any turn of tile t.
 * tools/attn_emulate_pp.py --variant 8 replays the three roles with the turns under random
 * interleavings. A CTA whose item has no key (n_kv < 1) returns whole before any barrier, as v6.
 */
#pragma once
#include "gqa_paged_prefill_sm90_p6.cuh"

#define P8_THREADS P6_THREADS
#define P8_SMEM_BYTES P6_SMEM_BYTES
#define P8_TURN_BAR 1		  /* named barriers 1 (consumer 0's turn) and 2 (consumer 1's); 0 = __syncthreads */
#define P8_TURN_THREADS (2 * 128) /* both consumer warpgroups: 128 bar.sync + 128 bar.arrive per phase */

/* Same contract and arguments as prefill_attend (version 1), but the items are 32-token tiles
 * (prefill_plan<PP_TOK>), P6_THREADS threads and P6_SMEM_BYTES of dynamic shared memory. */
template <int PS>
__global__ void __launch_bounds__(P8_THREADS, 1)
prefill_attend_p8(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k_cache,
		  const __nv_bfloat16 *__restrict__ v_cache, const int32_t *__restrict__ qo_indptr,
		  const int32_t *__restrict__ kv_indptr, const int32_t *__restrict__ kv_indices,
		  const int32_t *__restrict__ last_len, int ps_rt, float scale_log2, const work_item *__restrict__ items,
		  const int *__restrict__ n_items, __nv_bfloat16 *__restrict__ out, float *__restrict__ lse)
{
	extern __shared__ __align__(128) unsigned char smem[]; /* rounded up to 1024 below */
	__shared__ __align__(8) uint64_t bars[4 * P5_STAGES];	 /* full_k, full_v, empty_k, empty_v */
	const int ps = PS ? PS : ps_rt;
	const int kvh = blockIdx.x % HKV;
	const int idx = *n_items - 1 - (int)(blockIdx.x / HKV);
	if (idx < 0)
		return;
	const item_rows it = item_rows_of<PP_TOK>(items[idx], qo_indptr, kv_indptr, last_len, ps);
	const int b = it.b, q_start = it.q_start, prefix = it.prefix;
	const int j0 = it.j0, ntok = it.ntok, n_kv = it.n_kv;
	if (n_kv < 1)
		return; /* the whole CTA, before any barrier: no role waits for another */
	const int n = (n_kv + P5_BN - 1) / P5_BN;

	const int tid = threadIdx.x;
	const uint32_t s_q = ((uint32_t)__cvta_generic_to_shared(smem) + 1023u) & ~1023u; /* swizzle atoms */
	const uint32_t s_k = s_q + PP_Q_BYTES;		  /* P5_STAGES tiles */
	const uint32_t s_v = s_k + P5_STAGES * P5_TILE; /* P5_STAGES tiles */
	const uint32_t bar0 = (uint32_t)__cvta_generic_to_shared(bars);
#define FULL_K(s) (bar0 + 8 * (s))
#define FULL_V(s) (bar0 + 8 * (P5_STAGES + (s)))
#define EMPTY_K(s) (bar0 + 8 * (2 * P5_STAGES + (s)))
#define EMPTY_V(s) (bar0 + 8 * (3 * P5_STAGES + (s)))
	if (tid < 4 * P5_STAGES)
		sfwg::mbar_init(bar0 + 8 * tid, tid < 2 * P5_STAGES ? 128 : PP_THREADS);
	__syncthreads();

	if (tid < 128) {
		/* ---- producer warpgroup: every gather, publication by wait_group + proxy fence + arrive ---- */
		sfp6::setmaxnreg_dec();
		const int32_t *pages = kv_indices + kv_indptr[b];
		const uint64_t kb = (uint64_t)(k_cache + kvh * D + (tid & 15) * 8); /* generic = global addresses */
		const uint64_t vb = (uint64_t)(v_cache + kvh * D + (tid & 15) * 8);
		const uint32_t gofs = sw128(P5_BN, tid >> 4, tid & 15); /* this thread's first row in a kv tile */
		int sl[P6_PROWS];
		sfp6::fetch_slots<PS>(sl, pages, ps, 0, n_kv, tid);
		sfp6::load_q(s_q, q, q_start + j0, ntok, kvh, tid);
		int st = 0;	 /* i % 3 */
		uint32_t ph = 0; /* (i / 3) & 1 */
#pragma unroll 1
		for (int i = 0; i < n; i++) {
			const int sp = st == 0 ? 2 : st - 1; /* (i - 1) % 3 */
			if (i >= P5_STAGES)
				sfwg::mbar_wait(EMPTY_K(st), ph ^ 1); /* K(i - 3) released */
			sfp6::gather(s_k + st * P5_TILE + gofs, kb, sl);
			cp_commit(); /* group 2 i (with Q when i = 0) */
			if (i >= 2)
				sfp6::publish<P6_LAG>(FULL_K(sp)); /* group 2 i - 2 = K(i - 1) */
			if (i >= P5_STAGES)
				sfwg::mbar_wait(EMPTY_V(st), ph ^ 1); /* V(i - 3) released */
			sfp6::gather(s_v + st * P5_TILE + gofs, vb, sl);
			cp_commit(); /* group 2 i + 1 */
			if (i == 0)
				sfp6::publish<1>(FULL_K(0)); /* group 0 = {Q, K0} at once: the first tile waits no longer */
			else
				sfp6::publish<P6_LAG>(FULL_V(sp)); /* group 2 i - 1 = V(i - 1) */
			if (i + 1 < n)
				sfp6::fetch_slots<PS>(sl, pages, ps, i + 1, n_kv, tid);
			st = st == 2 ? 0 : st + 1;
			ph ^= st == 0 ? 1u : 0u;
		}
		{
			const int sl_last = (n - 1) % P5_STAGES;
			if (n >= 2)
				sfp6::publish<1>(FULL_K(sl_last)); /* group 2 n - 2 (K0 went out at i = 0) */
			sfp6::publish<0>(FULL_V(sl_last)); /* group 2 n - 1 */
		}
		return; /* no CTA-wide barrier follows */
	}

	/* ---- consumer warpgroups 1, 2: wait full -> turn -> S, PV -> pass the turn -> softmax -> release ---- */
	sfp6::setmaxnreg_inc();
	const int ct = tid - 128, lane = ct & 31, wg = ct >> 7, wi = (ct >> 5) & 3;
	const int g = lane >> 2, c = lane & 3;
	/* accumulator rows: 16 wi + g (a) and + 8 (b) of this warpgroup; their tokens and causal limits */
	const int tok_a = 16 * wg + wi * 4 + (g >> 2), tok_b = tok_a + 2;
	const int lim_a = prefix + j0 + tok_a, lim_b = prefix + j0 + tok_b;
	const int lim_min = prefix + j0 + 16 * wg; /* this warpgroup's smallest limit */
	const uint64_t dq = sfwg::wg_desc(s_q + wg * 64 * 128);
	const uint64_t dk = sfwg::wg_desc(s_k);
	const uint64_t dv = sfwg::wg_desc_mn(s_v, P5_BN * 128);

	float o[64];
#pragma unroll
	for (int i = 0; i < 64; i++)
		o[i] = 0.0f;
	float m_a = -INFINITY, m_b = -INFINITY, l_a = 0.0f, l_b = 0.0f;
	uint32_t pa[P5_BN / 16][4];
	int st = 0;	 /* t % 3 */
	uint32_t ph = 0; /* (t / 3) & 1 */
	if (wg == 1)
		sfpp::bar_arrive(P8_TURN_BAR, P8_TURN_THREADS); /* consumer 0 issues first */
	for (int t = 0; t < n; t++) {
		const int sp = st == 0 ? 2 : st - 1;	/* (t - 1) % 3 */
		const uint32_t php = st == 0 ? ph ^ 1 : ph; /* ((t - 1) / 3) & 1 */
		sfwg::mbar_wait(FULL_K(st), ph);
		if (t > 0)
			sfwg::mbar_wait(FULL_V(sp), php);
		sfpp::bar_sync(P8_TURN_BAR + wg, P8_TURN_THREADS); /* my turn on the tensor core */
		float s[64];
		sfwg::wgmma_fence();
		const uint64_t dkt = sfpp::desc_add(dk, st * P5_TILE);
#pragma unroll
		for (int kk = 0; kk < D / 16; kk++)
			sfwg::wgmma_m64n128k16_ss(s, sfpp::desc_add(dq, (kk >> 2) * (PP_BM * 128) + (kk & 3) * 32),
						  sfpp::desc_add(dkt, (kk >> 2) * (P5_BN * 128) + (kk & 3) * 32), kk);
		sfwg::wgmma_commit();
		if (t > 0)
			sfp5::pv128(o, pa, sfpp::desc_add(dv, sp * P5_TILE));
		sfwg::wgmma_commit();
		sfpp::bar_arrive(P8_TURN_BAR + 1 - wg, P8_TURN_THREADS); /* the other consumer's turn */

		sfwg::wgmma_wait<1>(); /* S(t) complete: K(t) read; PV(t - 1) may still run */
		sfwg::fence_regs(s);
		sfwg::mbar_arrive(EMPTY_K(st));

		float corr_a, corr_b;
		uint32_t pn[P5_BN / 16][4]; /* P(t): pa (P(t - 1)) is an operand of the PV in flight until wait 0 */
		sfp5::softmax128(s, pn, t, lim_a, lim_b, lim_min, c, scale_log2, m_a, m_b, l_a, l_b, corr_a, corr_b);
		sfwg::wgmma_wait<0>();
		sfwg::fence_regs(o);
		if (t > 0)
			sfwg::mbar_arrive(EMPTY_V(sp)); /* V(t - 1) read */
		if (!__all_sync(0xffffffffu, corr_a == 1.0f && corr_b == 1.0f))
			rescale_o(o, corr_a, corr_b);
#pragma unroll
		for (int kk = 0; kk < P5_BN / 16; kk++)
			for (int e = 0; e < 4; e++)
				pa[kk][e] = pn[kk][e];
		st = st == 2 ? 0 : st + 1;
		ph ^= st == 0 ? 1u : 0u;
	}
	/* the last tile's PV (V(n - 1), published by the producer's last wait_group 0) */
	{
		const int sl = (n - 1) % P5_STAGES;
		sfwg::mbar_wait(FULL_V(sl), ((n - 1) / P5_STAGES) & 1);
		sfwg::fence_regs(o);
		sfwg::wgmma_fence();
		sfp5::pv128(o, pa, sfpp::desc_add(dv, sl * P5_TILE));
	}
	sfwg::wgmma_commit();
	sfwg::wgmma_wait<0>();
	sfwg::fence_regs(o);
	if (wg == 0) /* takes consumer 1's arrival after its last tile: both barriers end balanced */
		sfpp::bar_sync(P8_TURN_BAR, P8_TURN_THREADS);
#undef FULL_K
#undef FULL_V
#undef EMPTY_K
#undef EMPTY_V

	/* finish: the row sums, O / l and the log-sum-exp of rows a and b */
	wg_store_rows(o, l_a, l_b, m_a, m_b, tok_a, tok_b, ntok, g, c, q_start + j0, kvh, out, lse);
}
