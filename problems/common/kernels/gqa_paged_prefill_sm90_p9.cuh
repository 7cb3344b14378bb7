/*
 * gqa_paged_prefill_sm90_p9.cuh - version 9 ("v9") of the causal GQA paged prefill attend kernel
 * (gqa_paged_prefill_sm90.cu with -DSF_PREFILL_WGMMA=9): version 8 (p8.cuh: v6's producer warpgroup and
 * ring, two consumer warpgroups ping-ponging on named barriers) with the next QK^T issued BEFORE the
 * softmax of the current scores (FlashAttention-3's intra-warpgroup overlap taken one step deeper), so
 * that no wgmma latency sits on a consumer's chain softmax -> issue -> softmax.
 *
 * Why halves: with 128-key S the overlap needs S(t) (being softmaxed) + S(t + 1) (in flight) + O + P(t - 1)
 * (PV in flight) = 64 + 64 + 64 + 32 = 224 registers of fragments alone, over setmaxnreg's 216 (the
 * producer spills below 64). So the consumer steps over 64-key halves j (half h = j & 1 of ring tile
 * t = j / 2): S(j) = Q K(t)[64 h ..]^T is 8 x wgmma m64n64k16 SS (32 accumulators), PV(j) = P(j) V(t)[64 h ..]
 * is 4 x m64n128k16 RS. Live: O 64 + S(j) 32 + S(j + 1) 32 + P(j - 1) 16 + P(j) 16 = 160.
 *
 * Consumer step j (unrolled twice per ring tile: s0 / p0 for even halves, s1 / p1 for odd):
 *   wgmma.wait 0 (S(j) and PV(j - 2) retired; both were issued one step ago, before softmax(j - 1))
 *   -> j odd: release K(t) (S of both halves retired); release V(t - 1) (PV(j - 2) = its second half)
 *   -> O *= corr(j - 1) (warp vote as v8; no wgmma in flight here)
 *   -> j odd: full waits K(t + 1) (for S(j + 1)) and V(t) (for PV(j - 1))
 *   -> turn (bar.sync) -> issue S(j + 1) (none after the last half) and PV(j - 1) (none at j = 0), one
 *      commit -> pass the turn (bar.arrive)
 *   -> softmax(j) on S(j), which is complete: P(j) into p[j & 1] (PV(j - 2), its last reader, retired).
 * Prologue: full wait K(0), a turn that issues S(0). Epilogue: wait 0, O *= corr(2n - 1), a turn that
 * issues PV(2n - 1), wait 0, consumer 0's balancing sync, v8's epilogue. Turns per consumer: 2n + 2,
 * v8's balance rule (consumer 1's first arrival, consumer 0's last sync); both consumers walk all 2n
 * halves (fully masked ones too). Every named-barrier arrival is unconditional, the mbarrier arrivals are
 * v8's (V(t - 1)'s release under t > 0); the only branches around a wgmma issue are `t > 0` / `t + 1 < n`
 * (as v8's `t > 0`).
 * ptxas rule found here (C7515 "wgmma serialized: non-wgmma instructions defining accumulator registers
 * ... inside the pipeline stage", C7517 an injected warpgroup.wait): no non-wgmma instruction may write
 * a wgmma accumulator while any wgmma is in flight. Hence the softmax only reads S (p9_softmax), O's
 * zeros are fenced before the prologue, and the rescale stays after wait 0 (FA3's rescale between the
 * two gemms, tried first, drew C7517). And (C7520, "WG.AR in divergent path"): no branch may write the
 * softmax's registers and no loop bound may derive from the thread index. So the causal mask is not a
 * branch in the softmax but a second copy of the tile loop: tiles t < tm = min((prefix + j0 + 1) / 128, n)
 * (wholly visible to every row of the CTA) run p9_softmax<false> (no compare), the rest (at most the last
 * two) p9_softmax<true> (a compare and select per score).
 * Producer: p6_attend's code, repeated (ring, groups {Q, K0}, V0, K1, ..., lag-2 publication, empty waits
 * on tile i - 3, flush). The producer's empty waits need K(i - 3), V(i - 3) released: consumer steps
 * 2 i - 5 and 2 i - 3, before the steps that wait for K(i - 1), V(i - 1) (2 i - 3, 2 i - 1).
 * tools/attn_emulate_pp.py --variant 9 replays the protocol (three roles, random interleavings, the
 * register hazards above) and the data path.
 */
#pragma once
#include <type_traits>
#include "gqa_paged_prefill_sm90_p6.cuh" /* sfp6, P6_*, P8_TURN_* */

#define P9_THREADS P6_THREADS
#define P9_SMEM_BYTES P6_SMEM_BYTES

/* Issues S(half h of a 128-key K tile) = Q K[64 h .. 64 h + 63]^T: 8 x wgmma m64n64k16 SS into s (32
 * accumulators, softmax_tile's layout: gqa_paged_prefill_sm90_wgmma.cuh); dkt = the K stage's descriptor.
 * Not committed. */
__device__ __forceinline__ void p9_s_half(float (&s)[32], uint64_t dq, uint64_t dkt, int h)
{
#pragma unroll
	for (int kk = 0; kk < D / 16; kk++)
		sfwg::wgmma_m64n64k16_ss(s, sfpp::desc_add(dq, (kk >> 2) * (PP_BM * 128) + (kk & 3) * 32),
					 sfpp::desc_add(dkt, (kk >> 2) * (P5_BN * 128) + (kk & 3) * 32 + h * 64 * 128), kk);
}

/* Issues O += P V[64 h .. 64 h + 63] for half h of a 128-key V tile (4 x m64n128k16 RS, V MN-major at dvt).
 * Not committed. */
__device__ __forceinline__ void p9_pv_half(float (&o)[64], const uint32_t (&p)[4][4], uint64_t dvt, int h)
{
#pragma unroll
	for (int kk = 0; kk < 4; kk++)
		sfwg::wgmma_m64n128k16_rs_tb(o, p[kk], sfpp::desc_add(dvt, (4 * h + kk) * 2048));
}

/* softmax_tile's online softmax (gqa_paged_prefill_sm90_wgmma.cuh; here j = the 64-key half's index, keys
 * 64 j ..) but S is only read: ptxas serializes the wgmmas (C7515) when a non-wgmma instruction writes a
 * wgmma accumulator while any wgmma is in flight, and here S(j + 1) and PV(j - 1) are in flight during
 * the softmax of S(j), whose registers S(j + 2) reuses. kMask: the causal mask as a select on the values
 * read (every score compared with its row's limit); without it no mask code at all (the tile lies wholly
 * at or below every row's limit). p = 2^(s scale - m) goes to a local array and is packed into P's bf16
 * A fragments. */
template <bool kMask>
__device__ __forceinline__ void p9_softmax(const float (&s)[32], uint32_t (&p)[4][4], int j, int lim_a, int lim_b, int c,
					   float scale_log2, float &m_a, float &m_b, float &l_a, float &l_b, float &corr_a,
					   float &corr_b)
{
	float x[32];
#pragma unroll
	for (int i = 0; i < 8; i++) {
#pragma unroll
		for (int e = 0; e < 2; e++) {
			const int kv = j * 64 + i * 8 + 2 * c + e;
			x[4 * i + e] = kMask && kv > lim_a ? -INFINITY : s[4 * i + e];
			x[4 * i + 2 + e] = kMask && kv > lim_b ? -INFINITY : s[4 * i + 2 + e];
		}
	}
	float mx_a = x[0], mx_b = x[2];
#pragma unroll
	for (int i = 0; i < 8; i++) {
#pragma unroll
		for (int e = 0; e < 2; e++) {
			if (i + e == 0)
				continue;
			mx_a = fmaxf(mx_a, x[4 * i + e]);
			mx_b = fmaxf(mx_b, x[4 * i + 2 + e]);
		}
	}
	mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, 1));
	mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, 2));
	mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, 1));
	mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, 2));
	const float nm_a = fmaxf(m_a, mx_a * scale_log2), nm_b = fmaxf(m_b, mx_b * scale_log2);
	/* a row with no visible key so far keeps m = -inf: subtract 0 instead (weights 0, no NaN) */
	const float mu_a = nm_a == -INFINITY ? 0.0f : nm_a, mu_b = nm_b == -INFINITY ? 0.0f : nm_b;
	corr_a = ex2_ftz(m_a - mu_a);
	corr_b = ex2_ftz(m_b - mu_b);
	m_a = nm_a;
	m_b = nm_b;
	float sum_a = 0.0f, sum_b = 0.0f;
#pragma unroll
	for (int i = 0; i < 8; i++) {
		x[4 * i + 0] = ex2_ftz(fmaf(x[4 * i + 0], scale_log2, -mu_a));
		x[4 * i + 1] = ex2_ftz(fmaf(x[4 * i + 1], scale_log2, -mu_a));
		x[4 * i + 2] = ex2_ftz(fmaf(x[4 * i + 2], scale_log2, -mu_b));
		x[4 * i + 3] = ex2_ftz(fmaf(x[4 * i + 3], scale_log2, -mu_b));
		sum_a += x[4 * i + 0] + x[4 * i + 1];
		sum_b += x[4 * i + 2] + x[4 * i + 3];
	}
	l_a = l_a * corr_a + sum_a;
	l_b = l_b * corr_b + sum_b;
#pragma unroll
	for (int kk = 0; kk < 4; kk++) {
		p[kk][0] = pack_bf16(x[8 * kk + 0], x[8 * kk + 1]);
		p[kk][1] = pack_bf16(x[8 * kk + 2], x[8 * kk + 3]);
		p[kk][2] = pack_bf16(x[8 * kk + 4], x[8 * kk + 5]);
		p[kk][3] = pack_bf16(x[8 * kk + 6], x[8 * kk + 7]);
	}
}

/* The kernel body of version 9: p6_attend's contract (prefill_attend's, version 1, on 32-token items,
 * P9_THREADS threads, P9_SMEM_BYTES of dynamic shared memory, `bars` = 4 * P5_STAGES mbarriers declared in
 * the kernel); the consumers step over 64-key halves with S(j + 1) in flight during softmax(j) (header). */
template <int PS>
__device__ __forceinline__ void p9_attend(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k_cache,
					  const __nv_bfloat16 *__restrict__ v_cache, const int32_t *__restrict__ qo_indptr,
					  const int32_t *__restrict__ kv_indptr, const int32_t *__restrict__ kv_indices,
					  const int32_t *__restrict__ last_len, int ps_rt, float scale_log2,
					  const work_item *__restrict__ items, const int *__restrict__ n_items,
					  __nv_bfloat16 *__restrict__ out, float *__restrict__ lse, uint64_t *bars)
{
	extern __shared__ __align__(128) unsigned char smem[]; /* rounded up to 1024 below */
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
		/* ---- producer warpgroup: p6_attend's, unchanged ---- */
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
				sfp6::publish<1>(FULL_K(0)); /* group 0 = {Q, K0} at once */
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

	/* ---- consumers: per 64-key half j: wait 0 -> releases -> rescale -> full waits -> turn -> S(j + 1),
	 *      PV(j - 1) -> pass -> softmax(j) ---- */
	sfp6::setmaxnreg_inc();
	const int ct = tid - 128, lane = ct & 31, wg = ct >> 7, wi = (ct >> 5) & 3;
	const int g = lane >> 2, c = lane & 3;
	const int tok_a = 16 * wg + wi * 4 + (g >> 2), tok_b = tok_a + 2;
	const int lim_a = prefix + j0 + tok_a, lim_b = prefix + j0 + tok_b;
	const uint64_t dq = sfwg::wg_desc(s_q + wg * 64 * 128);
	const uint64_t dk = sfwg::wg_desc(s_k);
	const uint64_t dv = sfwg::wg_desc_mn(s_v, P5_BN * 128);

	float o[64];
#pragma unroll
	for (int i = 0; i < 64; i++)
		o[i] = 0.0f;
	float m_a = -INFINITY, m_b = -INFINITY, l_a = 0.0f, l_b = 0.0f;
	float corr_a = 1.0f, corr_b = 1.0f; /* corr(j - 1): applied to O before PV(j - 1) is issued */
	float s0[32], s1[32];		    /* S of the even / odd halves (64 keys each) */
	uint32_t p0[4][4], p1[4][4];	    /* P of the even / odd halves: PV's A operands */
	sfwg::fence_regs(o); /* O's zeros before the first wgmma: no accumulator defined inside a pipeline stage */
	if (wg == 1)
		sfpp::bar_arrive(P8_TURN_BAR, P8_TURN_THREADS); /* consumer 0 issues first */
	/* prologue turn: S(0) = Q K(0)[keys 0..63] */
	sfwg::mbar_wait(FULL_K(0), 0);
	sfpp::bar_sync(P8_TURN_BAR + wg, P8_TURN_THREADS);
	sfwg::wgmma_fence();
	p9_s_half(s0, dq, dk, 0);
	sfwg::wgmma_commit();
	sfpp::bar_arrive(P8_TURN_BAR + 1 - wg, P8_TURN_THREADS);
	int st = 0;	 /* t % 3 */
	uint32_t ph = 0; /* (t / 3) & 1 */
	auto tile = [&](int t, auto masked) {
		const int sp = st == 0 ? 2 : st - 1; /* (t - 1) % 3 */
		const int sn = st == 2 ? 0 : st + 1; /* (t + 1) % 3 */
		const uint32_t phn = st == 2 ? ph ^ 1 : ph; /* ((t + 1) / 3) & 1 */
		/* -- half j = 2 t: S(2 t) and PV(2 t - 2) retired; issue S(2 t + 1) (K(t), keys 64..127) and
		 *    PV(2 t - 1) (V(t - 1), keys 64..127) -- */
		sfwg::wgmma_wait<0>();
		sfwg::fence_regs(o);
		sfwg::fence_regs(s0);
		if (!__all_sync(0xffffffffu, corr_a == 1.0f && corr_b == 1.0f))
			rescale_o(o, corr_a, corr_b); /* corr(2 t - 1); no wgmma in flight */
		sfpp::bar_sync(P8_TURN_BAR + wg, P8_TURN_THREADS);
		sfwg::wgmma_fence();
		p9_s_half(s1, dq, sfpp::desc_add(dk, st * P5_TILE), 1);
		if (t > 0)
			p9_pv_half(o, p1, sfpp::desc_add(dv, sp * P5_TILE), 1);
		sfwg::wgmma_commit();
		sfpp::bar_arrive(P8_TURN_BAR + 1 - wg, P8_TURN_THREADS);
		p9_softmax<decltype(masked)::value>(s0, p0, 2 * t, lim_a, lim_b, c, scale_log2, m_a, m_b, l_a, l_b,
						    corr_a, corr_b);

		/* -- half j = 2 t + 1: S(2 t + 1) and PV(2 t - 1) retired: K(t) and V(t - 1) read; issue S(2 t + 2)
		 *    (K(t + 1), keys 0..63) and PV(2 t) (V(t), keys 0..63) -- */
		sfwg::wgmma_wait<0>();
		sfwg::fence_regs(o);
		sfwg::fence_regs(s1);
		sfwg::mbar_arrive(EMPTY_K(st));
		if (t > 0)
			sfwg::mbar_arrive(EMPTY_V(sp));
		if (!__all_sync(0xffffffffu, corr_a == 1.0f && corr_b == 1.0f))
			rescale_o(o, corr_a, corr_b); /* corr(2 t) */
		if (t + 1 < n)
			sfwg::mbar_wait(FULL_K(sn), phn);
		sfwg::mbar_wait(FULL_V(st), ph);
		sfpp::bar_sync(P8_TURN_BAR + wg, P8_TURN_THREADS);
		sfwg::wgmma_fence();
		if (t + 1 < n)
			p9_s_half(s0, dq, sfpp::desc_add(dk, sn * P5_TILE), 0);
		p9_pv_half(o, p0, sfpp::desc_add(dv, st * P5_TILE), 0);
		sfwg::wgmma_commit();
		sfpp::bar_arrive(P8_TURN_BAR + 1 - wg, P8_TURN_THREADS);
		p9_softmax<decltype(masked)::value>(s1, p1, 2 * t + 1, lim_a, lim_b, c, scale_log2, m_a, m_b, l_a, l_b,
						    corr_a, corr_b);
		st = sn;
		ph = phn;
	};
	/* tiles 0 .. tm - 1 lie wholly at or below the CTA's smallest limit prefix + j0 (128 t + 127 <= it): no
	 * mask; the rest (at most the last two tiles) take the compare-and-select mask. Two loops of one body:
	 * a mask branch inside the softmax writes registers in a divergent path, and a loop bound derived from
	 * the thread index (this warpgroup's lim_min) is divergent to ptxas: both made it serialize the wgmmas
	 * (C7520); prefix + j0 comes from loads, the same for every thread */
	const int tm = min((prefix + j0 + 1) / P5_BN, n);
	int t = 0;
	for (; t < tm; t++)
		tile(t, std::false_type());
	for (; t < n; t++)
		tile(t, std::true_type());
	/* the last half's PV (V(n - 1), keys 64..127) after PV(2 n - 2) retired and O *= corr(2 n - 1) */
	{
		const int sl = (n - 1) % P5_STAGES;
		sfwg::wgmma_wait<0>();
		sfwg::fence_regs(o);
		if (!__all_sync(0xffffffffu, corr_a == 1.0f && corr_b == 1.0f))
			rescale_o(o, corr_a, corr_b);
		sfpp::bar_sync(P8_TURN_BAR + wg, P8_TURN_THREADS);
		sfwg::wgmma_fence();
		p9_pv_half(o, p1, sfpp::desc_add(dv, sl * P5_TILE), 1);
		sfwg::wgmma_commit();
		sfpp::bar_arrive(P8_TURN_BAR + 1 - wg, P8_TURN_THREADS);
	}
	sfwg::wgmma_wait<0>();
	sfwg::fence_regs(o);
	if (wg == 0) /* takes consumer 1's arrival after its last turn: both barriers end balanced */
		sfpp::bar_sync(P8_TURN_BAR, P8_TURN_THREADS);
#undef FULL_K
#undef FULL_V
#undef EMPTY_K
#undef EMPTY_V

	/* finish: the row sums, O / l and the log-sum-exp of rows a and b */
	wg_store_rows(o, l_a, l_b, m_a, m_b, tok_a, tok_b, ntok, g, c, q_start + j0, kvh, out, lse);
}

/* Same contract and arguments as prefill_attend (version 1), but the items are 32-token tiles
 * (prefill_plan<PP_TOK>), P9_THREADS threads and P9_SMEM_BYTES of dynamic shared memory. */
template <int PS>
__global__ void __launch_bounds__(P9_THREADS, 1)
prefill_attend_p9(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k_cache,
		  const __nv_bfloat16 *__restrict__ v_cache, const int32_t *__restrict__ qo_indptr,
		  const int32_t *__restrict__ kv_indptr, const int32_t *__restrict__ kv_indices,
		  const int32_t *__restrict__ last_len, int ps_rt, float scale_log2, const work_item *__restrict__ items,
		  const int *__restrict__ n_items, __nv_bfloat16 *__restrict__ out, float *__restrict__ lse)
{
	__shared__ __align__(8) uint64_t bars[4 * P5_STAGES]; /* full_k, full_v, empty_k, empty_v */
	p9_attend<PS>(q, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices, last_len, ps_rt, scale_log2, items,
		      n_items, out, lse, bars);
}
