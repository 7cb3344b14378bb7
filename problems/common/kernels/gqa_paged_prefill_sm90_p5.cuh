/*
 * gqa_paged_prefill_sm90_p5.cuh - version 5 ("v5") of the causal GQA paged prefill attend kernel
 * (gqa_paged_prefill_sm90.cu with -DSF_PREFILL_WGMMA=5): version 3 (v3pp, gqa_paged_prefill_sm90_pp.cuh)
 * with kv tiles of 128 positions, so every cost paid per tile (mbarrier waits and arrivals, the
 * cp.async wait and proxy fence, wgmma fences / commits / waits, descriptors, row-max shuffles, the
 * mask decision, the rescale vote, loop control) is paid once per 128 keys; no ping-pong turns (v3np,
 * without them, measured as fast as v3pp on the H200).
 *
 * A CTA (256 threads, 1 per SM) takes 32 new tokens of one sequence x the 4 query heads of one kv head
 * = 128 rows (row r = token r / 4, head r % 4); warpgroup w owns rows 64 w .. 64 w + 63 (tokens 16 w ..
 * 16 w + 15). Per kv tile t each warpgroup issues S(t) = Q K(t)^T (8 x wgmma m64n128k16, SS: 64 fp32
 * registers) and O += P(t-1) V(t-1) (8 x wgmma m64n128k16, RS) as two groups, runs the softmax of tile
 * t under PV(t-1), then rescales O.
 *
 * Ring: 3 stages of K and 3 of V (32 KiB each, 128B-swizzled [2 dim halves][128 rows][128 B]) + Q
 * (32 KiB) + 1 KiB alignment slack = 225 KiB. cp.async groups: P0 = {Q, K0}, G(-1) = {K1, V0}, then at
 * the end of tile t G(t) = {K(t+2) into K(t-1)'s buffer, V(t+1) into V(t-2)'s}. All 256 threads gather
 * (8 rows of 16 B per cache and tile: rows tid / 16 + 16 i; rows past the CTA's last key copy that key,
 * whose score the causal mask removes, instead of a zero-fill).
 * Synchronisation (no __syncthreads in the loop):
 *  - full_k[s], full_v[s] (mbarrier, 256 arrivals): at tile t, once S(t) is complete (wgmma.wait 1), a
 *    thread retires G(t-1) = {K(t+1), V(t)} (cp.async.wait_group 0), fences its copies to the async
 *    proxy and arrives on full_k(t+1) (when t+1 < n) and full_v(t); a reader waits for the phase
 *    (parity (tile / 3) & 1) before its wgmmas.
 *  - empty_k[s], empty_v[s] (mbarrier, 256 arrivals): a thread arrives once its warpgroup's wgmma that
 *    read K(t) / V(t-1) has retired (wgmma.wait_group 0); a gather into a used buffer waits for both
 *    warpgroups' release of the tile it held (K(t-1) and V(t-2) at the end of tile t).
 * Stage and parity of t are loop-carried (no division by 3 per tile); those of t-1, t+1 and t-2 are
 * selects. The page slots of K(t+2) are fetched at the end of tile t-1 and used for K(t+2) and, a
 * tile later, V(t+2). tools/attn_emulate_pp.py --variant 5 replays this protocol (random
 * interleavings of the two warpgroups) and the data path on the CPU.
 */
#pragma once
#include "gqa_paged_prefill_sm90_pp.cuh"

#define P5_BN 128			   /* kv positions per tile */
#define P5_STAGES 3
#define P5_TILE (P5_BN * ROW_BYTES) /* 32 KiB */
#define P5_ROWS (P5_BN * 16 / PP_THREADS) /* rows of a kv tile one thread gathers: 8 */
#define P5_SMEM_BYTES (1024 + PP_Q_BYTES + 2 * P5_STAGES * P5_TILE)

namespace sfp5 {

/* slot (page id x ps + position % ps) of the P5_ROWS rows this thread gathers in kv tile t; a position
 * past the CTA's last key (n_kv - 1) takes that key's slot instead of a zero-fill: such a key lies past
 * every row's causal limit, so its score is masked to -inf and its P weight is exactly 0 (2^-inf), and
 * the copied K / V row is real, finite cache data (no select and no src-size operand per gather) */
template <int PS>
__device__ __forceinline__ void fetch_slots(int (&sl)[P5_ROWS], const int32_t *__restrict__ pages, int ps_rt, int t,
					    int n_kv, int tid)
{
	const int ps = PS ? PS : ps_rt;
#pragma unroll
	for (int i = 0; i < P5_ROWS; i++) {
		const int pos = min(t * P5_BN + (tid >> 4) + 16 * i, n_kv - 1);
		sl[i] = pages[pos / ps] * ps + pos % ps;
	}
}

/* cp.async of this thread's P5_ROWS rows (chunk tid % 16 of rows tid / 16 + 16 i) of one kv tile, as
 * sfpp::gather: dst = the tile + sw128(P5_BN, tid / 16, tid % 16), row + 16 i lies 2048 i bytes further;
 * per row one mad.wide (slot x 2048 B + src) and the copy */
__device__ __forceinline__ void gather(uint32_t dst, uint64_t src, const int (&sl)[P5_ROWS])
{
#pragma unroll
	for (int i = 0; i < P5_ROWS; i++) {
		uint64_t p;
		asm("mad.wide.u32 %0, %1, %2, %3;" : "=l"(p) : "r"((uint32_t)sl[i]), "r"(HKV * D * 2), "l"(src));
		asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst + i * 16 * 128), "l"(p) : "memory");
	}
}

/* The causal mask of one 128-key tile t of S (the m64n128 accumulator fragment of a consumer thread, c its quad
 * column): positions past row a's / row b's limit (lim_a, lim_b) set to -inf, only when the tile reaches past the
 * warpgroup's smallest limit lim_min. Shared by softmax128 and the lean consumer's softmax128_exp. */
__device__ __forceinline__ void causal_mask128(float (&s)[64], int t, int lim_a, int lim_b, int lim_min, int c)
{
	if (t * P5_BN + P5_BN - 1 > lim_min) {
		/* the first position this thread's element j = 0 may not see in rows a / b: mask kv > lim */
		const int ra = lim_a - t * P5_BN - 2 * c, rb = lim_b - t * P5_BN - 2 * c;
#pragma unroll
		for (int j = 0; j < P5_BN / 8; j++) {
#pragma unroll
			for (int e = 0; e < 2; e++) {
				if (j * 8 + e > ra)
					s[4 * j + e] = -INFINITY;
				if (j * 8 + e > rb)
					s[4 * j + 2 + e] = -INFINITY;
			}
		}
	}
}

/*
 * Online softmax of 128-key tile t on this thread's 64 raw scores (element 4 j + e: row a for e < 2, row
 * b = a + 8 otherwise, position 8 j + 2 c + e % 2), softmax_tile's rules on twice the columns: causal
 * mask only when the tile reaches past the warpgroup's smallest limit, the row max by fmax over the
 * thread's 32 values per row and 2 quad shuffles, the running max in base-2 units, p = 2^(s scale - m)
 * as one FMA + one MUFU, per-lane running sums. Writes P(t) as bf16 A fragments pn[kk] (k-step kk =
 * positions 16 kk .. +15); corr_* = 2^(old m - new m).
 */
__device__ __forceinline__ void softmax128(float (&s)[64], uint32_t (&pn)[P5_BN / 16][4], int t, int lim_a, int lim_b,
					   int lim_min, int c, float scale_log2, float &m_a, float &m_b, float &l_a,
					   float &l_b, float &corr_a, float &corr_b)
{
	causal_mask128(s, t, lim_a, lim_b, lim_min, c);
	float mx_a = s[0], mx_b = s[2];
#pragma unroll
	for (int j = 0; j < P5_BN / 8; j++) {
#pragma unroll
		for (int e = 0; e < 2; e++) {
			if (j + e == 0)
				continue;
			mx_a = fmaxf(mx_a, s[4 * j + e]);
			mx_b = fmaxf(mx_b, s[4 * j + 2 + e]);
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
	for (int j = 0; j < P5_BN / 8; j++) {
		s[4 * j + 0] = ex2_ftz(fmaf(s[4 * j + 0], scale_log2, -mu_a));
		s[4 * j + 1] = ex2_ftz(fmaf(s[4 * j + 1], scale_log2, -mu_a));
		s[4 * j + 2] = ex2_ftz(fmaf(s[4 * j + 2], scale_log2, -mu_b));
		s[4 * j + 3] = ex2_ftz(fmaf(s[4 * j + 3], scale_log2, -mu_b));
		sum_a += s[4 * j + 0] + s[4 * j + 1];
		sum_b += s[4 * j + 2] + s[4 * j + 3];
	}
	l_a = l_a * corr_a + sum_a;
	l_b = l_b * corr_b + sum_b;
#pragma unroll
	for (int kk = 0; kk < P5_BN / 16; kk++) {
		pn[kk][0] = pack_bf16(s[8 * kk + 0], s[8 * kk + 1]);
		pn[kk][1] = pack_bf16(s[8 * kk + 2], s[8 * kk + 3]);
		pn[kk][2] = pack_bf16(s[8 * kk + 4], s[8 * kk + 5]);
		pn[kk][3] = pack_bf16(s[8 * kk + 6], s[8 * kk + 7]);
	}
}

/* Issues O += P V for one 128-key tile (8 x m64n128k16, P from registers, V MN-major at descriptor dvt) */
__device__ __forceinline__ void pv128(float (&o)[64], const uint32_t (&pa)[P5_BN / 16][4], uint64_t dvt)
{
#pragma unroll
	for (int kk = 0; kk < P5_BN / 16; kk++)
		sfwg::wgmma_m64n128k16_rs_tb(o, pa[kk], sfpp::desc_add(dvt, kk * 2048));
}

} /* namespace sfp5 */

/* Same contract and arguments as prefill_attend (version 1), but the items are 32-token tiles
 * (prefill_plan<PP_TOK>), PP_THREADS threads and P5_SMEM_BYTES of dynamic shared memory. */
template <int PS>
__global__ void __launch_bounds__(PP_THREADS, 1)
prefill_attend_p5(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k_cache,
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
	const int n = (n_kv + P5_BN - 1) / P5_BN;
	const int32_t *pages = kv_indices + kv_indptr[b];

	const int tid = threadIdx.x, lane = tid & 31, wg = tid >> 7, wi = (tid >> 5) & 3;
	const uint32_t s_q = ((uint32_t)__cvta_generic_to_shared(smem) + 1023u) & ~1023u; /* swizzle atoms */
	const uint32_t s_k = s_q + PP_Q_BYTES;		  /* P5_STAGES tiles */
	const uint32_t s_v = s_k + P5_STAGES * P5_TILE; /* P5_STAGES tiles */
	const uint32_t bar0 = (uint32_t)__cvta_generic_to_shared(bars);
#define FULL_K(s) (bar0 + 8 * (s))
#define FULL_V(s) (bar0 + 8 * (P5_STAGES + (s)))
#define EMPTY_K(s) (bar0 + 8 * (2 * P5_STAGES + (s)))
#define EMPTY_V(s) (bar0 + 8 * (3 * P5_STAGES + (s)))
	if (tid < 4 * P5_STAGES)
		sfwg::mbar_init(bar0 + 8 * tid, PP_THREADS);
	__syncthreads();

	sfpp::load_q(s_q, q, q_start + j0, ntok, kvh, tid);
	const uint64_t kb = (uint64_t)(k_cache + kvh * D + (tid & 15) * 8); /* generic = global addresses */
	const uint64_t vb = (uint64_t)(v_cache + kvh * D + (tid & 15) * 8);
	const uint32_t gofs = sw128(P5_BN, tid >> 4, tid & 15); /* this thread's first row in a kv tile */
	int sl_v[P5_ROWS], sl_k[P5_ROWS]; /* at the end of tile t: slots of V(t + 1) and K(t + 2) */
	{
		int s0[P5_ROWS];
		sfp5::fetch_slots<PS>(s0, pages, ps, 0, n_kv, tid);
		sfp5::fetch_slots<PS>(sl_v, pages, ps, 1, n_kv, tid);
		sfp5::gather(s_k + gofs, kb, s0); /* P0 = {Q, K0} */
		cp_commit();
		if (n > 1)
			sfp5::gather(s_k + P5_TILE + gofs, kb, sl_v); /* G(-1) = {K1, V0} */
		sfp5::gather(s_v + gofs, vb, s0);
		cp_commit();
		sfp5::fetch_slots<PS>(sl_k, pages, ps, 2, n_kv, tid);
	}
	cp_wait_n<1>(); /* P0 retired: publish Q and K0 */
	sfwg::fence_proxy_async();
	sfwg::mbar_arrive(FULL_K(0));

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
	for (int t = 0; t < n; t++) {
		const int sp = st == 0 ? 2 : st - 1;	/* (t - 1) % 3 = (t + 2) % 3 */
		const int sn = st == 2 ? 0 : st + 1;	/* (t + 1) % 3 = (t - 2) % 3 */
		const uint32_t php = st == 0 ? ph ^ 1 : ph; /* ((t - 1) / 3) & 1 */
		const uint32_t ph2 = st == 2 ? ph : ph ^ 1; /* ((t - 2) / 3) & 1 */
		sfwg::mbar_wait(FULL_K(st), ph);
		if (t > 0)
			sfwg::mbar_wait(FULL_V(sp), php);
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

		sfwg::wgmma_wait<1>(); /* S(t) complete; PV(t - 1) may still run */
		sfwg::fence_regs(s);
		cp_wait_n<0>(); /* G(t - 1) = {K(t + 1), V(t)} retired: publish them */
		sfwg::fence_proxy_async();
		if (t + 1 < n)
			sfwg::mbar_arrive(FULL_K(sn));
		sfwg::mbar_arrive(FULL_V(st));

		float corr_a, corr_b;
		uint32_t pn[P5_BN / 16][4]; /* P(t): pa (P(t - 1)) is an operand of the PV in flight until wait 0 */
		sfp5::softmax128(s, pn, t, lim_a, lim_b, lim_min, c, scale_log2, m_a, m_b, l_a, l_b, corr_a, corr_b);
		sfwg::wgmma_wait<0>();
		sfwg::fence_regs(o);
		if (!__all_sync(0xffffffffu, corr_a == 1.0f && corr_b == 1.0f))
			rescale_o(o, corr_a, corr_b);
#pragma unroll
		for (int kk = 0; kk < P5_BN / 16; kk++)
			for (int e = 0; e < 4; e++)
				pa[kk][e] = pn[kk][e];
		sfwg::mbar_arrive(EMPTY_K(st)); /* this warpgroup is done with K(t) and V(t - 1) */
		if (t > 0)
			sfwg::mbar_arrive(EMPTY_V(sp));

		/* G(t) = {K(t + 2) into K(t - 1)'s buffer, V(t + 1) into V(t - 2)'s}: both warpgroups released them */
		if (t + 2 < n) {
			if (t >= 1)
				sfwg::mbar_wait(EMPTY_K(sp), php);
			sfp5::gather(s_k + sp * P5_TILE + gofs, kb, sl_k);
		}
		if (t + 1 < n) {
			if (t >= 2)
				sfwg::mbar_wait(EMPTY_V(sn), ph2);
			sfp5::gather(s_v + sn * P5_TILE + gofs, vb, sl_v);
		}
		cp_commit();
#pragma unroll
		for (int i = 0; i < P5_ROWS; i++)
			sl_v[i] = sl_k[i]; /* V(t + 2) reuses K(t + 2)'s slots */
		sfp5::fetch_slots<PS>(sl_k, pages, ps, t + 3, n_kv, tid);
		st = sn;
		ph ^= st == 0 ? 1u : 0u;
	}
	/* the last tile's PV (V(n - 1) published at tile n - 1) */
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
#undef FULL_K
#undef FULL_V
#undef EMPTY_K
#undef EMPTY_V

	/* finish: the row sums, O / l and the log-sum-exp of rows a and b */
	wg_store_rows(o, l_a, l_b, m_a, m_b, tok_a, tok_b, ntok, g, c, q_start + j0, kvh, out, lse);
}
