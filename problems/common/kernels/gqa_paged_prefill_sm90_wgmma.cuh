/*
 * gqa_paged_prefill_sm90_wgmma.cuh - version 2 of the causal GQA paged prefill attend kernel
 * (gqa_paged_prefill_sm90.cu with -DSF_PREFILL_WGMMA=1 or 2): the same work items, plan, page gathers
 * and online softmax as version 1, but both products on Hopper's warpgroup MMA (wgmma, sm_90a).
 *
 * A CTA is one warpgroup (4 warps) on 16 new tokens x the 4 query heads of one kv head = 64 rows (row
 * r = token r / 4, head r % 4), the M of one wgmma m64. Per kv tile of 64 positions:
 *   S = Q K^T   8 x wgmma m64n64k16, A = Q and B = K from shared memory (K-major descriptors);
 *   softmax     in registers on the accumulator layout (base 2, fp32), P rounded to bf16 in registers;
 *   O += P V    4 x wgmma m64n128k16 with A = P from registers and B = V from shared memory through an
 *               MN-major ("transposed B") descriptor: V stays [position][dim] as gathered.
 * Shared tiles are [2 halves of 64 dims][rows][128 B] with the 128-byte swizzle (sm90_wgmma_util.cuh),
 * filled by cp.async 16-byte gathers through the page table (zero-fill past the last position).
 *
 * Pipeline (one warpgroup, 2 K and 2 V buffers, cp.async groups in the order K0 V0 K1 V1 K2 ...):
 *   top of tile t:  wait for K(t) (wait_group 2), proxy fence, barrier; issue S(t) = Q K(t)^T and wait
 *                   (this also retires O += P V of tile t - 1, queued just before on the tensor core);
 *   middle:         wait for V(t) (wait_group 1), proxy fence, barrier (every warp is past S(t) and
 *                   PV(t - 1), so K buffer t % 2 and V buffer (t + 1) % 2 are free); issue the gathers
 *                   of V(t + 1) and K(t + 2), fetch the page ids of tile t + 3; softmax;
 *   end:            issue O += P V(t) and do not wait: it overlaps the next tile's barrier and S.
 * K(t + 2) has about 1.5 tiles and V(t + 1) one tile to arrive. 82 KiB of shared memory: 2 CTAs per SM,
 * whose softmax phases interleave with each other's MMAs.
 *
 * Overlapped order (OVL, -DSF_PREFILL_WGMMA=2): at the top of tile t (K(t), V(t - 1) landed, barrier)
 * S(t) and PV(t - 1) are committed as two groups; wgmma wait 1 gives S(t), whose softmax then runs while
 * the tensor core still works on PV(t - 1); wait 0, rescale O, barrier (buffers free), gathers of
 * V(t + 1) and K(t + 2). PV of the last tile follows the loop, after a wait for every cp.async group
 * (V(n - 1) is younger than the last K waited for).
 * tools/attn_emulate_wg.py replays both orders (fragments, descriptors, cp.async group order) on the CPU.
 */
#pragma once
#include "sm90_wgmma_util.cuh"

#define WG_SMEM_BYTES (1024 + BM * ROW_BYTES + 4 * TILE_BYTES) /* alignment slack, Q, K[2], V[2] */

/* byte offset of 16-byte chunk ch (0..15) of row `row` in a 128B-swizzled [2][rows][128 B] tile */
__device__ __forceinline__ uint32_t sw128(int rows, int row, int ch)
{
	return (uint32_t)((ch >> 3) * rows * 128 + row * 128 + (((ch & 7) ^ (row & 7)) << 4));
}

/*
 * cp.async of kv tile t of one cache (K or V) into the swizzled tile at dst (BN rows). Thread tid copies
 * chunk tid % 16 of rows tid / 16 + 8 i, i = 0..7, whose page ids fetch_pages gave (-1: zero-fill).
 */
template <int PS>
__device__ __forceinline__ void load_kv_tile_wg(uint32_t dst, const __nv_bfloat16 *__restrict__ cache, const int pg[8],
						int ps_rt, int kvh, int t, int tid)
{
	const int ps = PS ? PS : ps_rt;
	const int ch = tid & 15;
#pragma unroll
	for (int i = 0; i < 8; i++) {
		const int row = (tid >> 4) + 8 * i;
		const int pos = t * BN + row;
		const bool ok = pg[i] >= 0;
		const __nv_bfloat16 *src = cache;
		if (ok)
			src = cache + (((size_t)pg[i] * ps + pos % ps) * HKV + kvh) * D + ch * 8;
		cp_async16(dst + sw128(BN, row, ch), src, ok ? 16 : 0);
	}
}

template <int N>
__device__ __forceinline__ void cp_wait_n(void)
{
	asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

/* Issues S = Q K^T for one kv tile (8 x m64n64k16; not committed). Accumulator element 4 j + e of a
 * thread is row a = 16 warp + lane / 4 (e < 2) or row b = a + 8, position 8 j + 2 (lane % 4) + e % 2. */
__device__ __forceinline__ void qk_tile(float (&s)[32], uint32_t s_q, uint32_t kt)
{
#pragma unroll
	for (int kk = 0; kk < D / 16; kk++)
		sfwg::wgmma_m64n64k16_ss(s, sfwg::wg_desc(s_q + (kk >> 2) * (BM * 128) + (kk & 3) * 32),
					 sfwg::wg_desc(kt + (kk >> 2) * (BN * 128) + (kk & 3) * 32), kk);
}

/* Issues O += P V for one kv tile (4 x m64n128k16, P from registers, V MN-major; not committed). */
__device__ __forceinline__ void pv_tile(float (&o)[64], const uint32_t (&pa)[BN / 16][4], uint32_t vt)
{
#pragma unroll
	for (int kk = 0; kk < BN / 16; kk++)
		sfwg::wgmma_m64n128k16_rs_tb(o, pa[kk], sfwg::wg_desc_mn(vt + kk * 2048, BN * 128));
}

/* 2^x, flushing denormal results to zero (one MUFU.EX2; 2^-inf = 0) */
__device__ __forceinline__ float ex2_ftz(float x)
{
	float y;
	asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
	return y;
}

/*
 * Online softmax of kv tile t on this thread's 32 raw scores (rows a and b): causal mask when the tile
 * reaches past the tile's smallest limit, the tile's row max over the quad on the raw scores (the scale
 * is positive, so scaling commutes with the max), running max m in base-2 units, p = 2^(s scale - m)
 * as one FMA and one MUFU, running sums per lane (the quad sums them at the end). Writes P as bf16 A
 * fragments: k-step kk covers positions 16 kk .. +15 = accumulator columns j = 2 kk, 2 kk + 1, i.e.
 * a0 = row a cols 2c, 2c+1; a1 = row b; a2 = row a cols 8 + 2c, +1; a3 = row b.
 * corr_* = 2^(old m - new m) for the O rescale.
 */
__device__ __forceinline__ void softmax_tile(float (&s)[32], uint32_t (&pa)[BN / 16][4], int t, int lim_a, int lim_b,
					     int lim_min, int c, float scale_log2, float &m_a, float &m_b, float &l_a,
					     float &l_b, float &corr_a, float &corr_b)
{
	const bool need_mask = t * BN + BN - 1 > lim_min;
	float mx_a = -INFINITY, mx_b = -INFINITY;
#pragma unroll
	for (int j = 0; j < BN / 8; j++) {
#pragma unroll
		for (int e = 0; e < 2; e++) {
			if (need_mask) {
				const int kv = t * BN + j * 8 + 2 * c + e;
				if (kv > lim_a)
					s[4 * j + e] = -INFINITY;
				if (kv > lim_b)
					s[4 * j + 2 + e] = -INFINITY;
			}
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
	for (int j = 0; j < BN / 8; j++) {
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
	for (int kk = 0; kk < BN / 16; kk++) {
		pa[kk][0] = pack_bf16(s[8 * kk + 0], s[8 * kk + 1]);
		pa[kk][1] = pack_bf16(s[8 * kk + 2], s[8 * kk + 3]);
		pa[kk][2] = pack_bf16(s[8 * kk + 4], s[8 * kk + 5]);
		pa[kk][3] = pack_bf16(s[8 * kk + 6], s[8 * kk + 7]);
	}
}

__device__ __forceinline__ void rescale_o(float (&o)[64], float corr_a, float corr_b)
{
#pragma unroll
	for (int j = 0; j < D / 8; j++) {
		o[4 * j + 0] *= corr_a;
		o[4 * j + 1] *= corr_a;
		o[4 * j + 2] *= corr_b;
		o[4 * j + 3] *= corr_b;
	}
}

/* Same contract and arguments as prefill_attend (version 1); WG_SMEM_BYTES of dynamic shared memory.
 * OVL selects the overlapped tile order (-DSF_PREFILL_WGMMA=2) over the plain one (=1). */
template <int PS, int OVL>
__global__ void __launch_bounds__(THREADS, 2)
prefill_attend_wg(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k_cache,
		  const __nv_bfloat16 *__restrict__ v_cache, const int32_t *__restrict__ qo_indptr,
		  const int32_t *__restrict__ kv_indptr, const int32_t *__restrict__ kv_indices,
		  const int32_t *__restrict__ last_len, int ps_rt, float scale_log2, const work_item *__restrict__ items,
		  const int *__restrict__ n_items, __nv_bfloat16 *__restrict__ out, float *__restrict__ lse)
{
	extern __shared__ __align__(128) unsigned char smem[]; /* rounded up to 1024 below */
	const int ps = PS ? PS : ps_rt;
	const int kvh = blockIdx.x % HKV;
	const int idx = *n_items - 1 - (int)(blockIdx.x / HKV);
	if (idx < 0)
		return;
	const item_rows it = item_rows_of<TOK>(items[idx], qo_indptr, kv_indptr, last_len, ps);
	const int b = it.b, q_start = it.q_start, prefix = it.prefix;
	const int j0 = it.j0, ntok = it.ntok, n_kv = it.n_kv;
	const int n_tiles = (n_kv + BN - 1) / BN;
	const int32_t *pages = kv_indices + kv_indptr[b];

	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const uint32_t s_q = ((uint32_t)__cvta_generic_to_shared(smem) + 1023u) & ~1023u; /* swizzle atoms */
	const uint32_t s_k = s_q + BM * ROW_BYTES; /* two tiles */
	const uint32_t s_v = s_k + 2 * TILE_BYTES; /* two tiles */

	/* Q: row r = token r / 4 (of the tile), head kvh * 4 + r % 4; rows of missing tokens zero-filled */
	{
		const int ch = tid & 15;
#pragma unroll
		for (int i = 0; i < 8; i++) {
			const int row = (tid >> 4) + 8 * i;
			const int tok = row >> 2;
			const bool ok = tok < ntok;
			const __nv_bfloat16 *src =
				q + ((size_t)(q_start + j0 + (ok ? tok : 0)) * HQ + kvh * GRP + (row & 3)) * D + ch * 8;
			cp_async16(s_q + sw128(BM, row, ch), src, ok ? 16 : 0);
		}
	}
	/* groups: {Q, K0}, {V0}, {K1}; then per tile t: {V(t+1)}, {K(t+2)} */
	int pg_v[8], pg_k[8];
	fetch_pages<PS>(pg_v, pages, ps, 0, n_kv, tid);
	load_kv_tile_wg<PS>(s_k, k_cache, pg_v, ps, kvh, 0, tid);
	cp_commit();
	load_kv_tile_wg<PS>(s_v, v_cache, pg_v, ps, kvh, 0, tid);
	cp_commit();
	fetch_pages<PS>(pg_v, pages, ps, 1, n_kv, tid);
	if (n_tiles > 1)
		load_kv_tile_wg<PS>(s_k + TILE_BYTES, k_cache, pg_v, ps, kvh, 1, tid);
	cp_commit();
	fetch_pages<PS>(pg_k, pages, ps, 2, n_kv, tid);

	const int g = lane >> 2, c = lane & 3;
	/* this thread's accumulator rows: 16 warp + g (a) and + 8 (b); their tokens and causal limits */
	const int tok_a = warp * 4 + (g >> 2), tok_b = tok_a + 2;
	const int lim_a = prefix + j0 + tok_a, lim_b = prefix + j0 + tok_b;
	const int lim_min = prefix + j0; /* the smallest limit of the tile: tiles past it need the mask */

	float o[64];
#pragma unroll
	for (int i = 0; i < 64; i++)
		o[i] = 0.0f;
	float m_a = -INFINITY, m_b = -INFINITY, l_a = 0.0f, l_b = 0.0f;

	if (!OVL) {
		for (int t = 0; t < n_tiles; t++) {
			const int buf = t & 1;
			cp_wait_n<2>();
			sfwg::fence_proxy_async();
			__syncthreads(); /* K(t) (and Q) in shared memory for the async proxy of the whole warpgroup */
			float s[32];
			sfwg::wgmma_fence();
			qk_tile(s, s_q, s_k + buf * TILE_BYTES);
			sfwg::wgmma_commit();
			sfwg::wgmma_wait<0>(); /* S(t) and the previous tile's O += P V are complete */
			sfwg::fence_regs(s);
			sfwg::fence_regs(o);

			cp_wait_n<1>();
			sfwg::fence_proxy_async();
			__syncthreads(); /* V(t) visible; every warp is past S(t) and PV(t - 1): buffers free */
			if (t + 1 < n_tiles)
				load_kv_tile_wg<PS>(s_v + (buf ^ 1) * TILE_BYTES, v_cache, pg_v, ps, kvh, t + 1, tid);
			cp_commit();
			if (t + 2 < n_tiles)
				load_kv_tile_wg<PS>(s_k + buf * TILE_BYTES, k_cache, pg_k, ps, kvh, t + 2, tid);
			cp_commit();
#pragma unroll
			for (int i = 0; i < 8; i++)
				pg_v[i] = pg_k[i];
			fetch_pages<PS>(pg_k, pages, ps, t + 3, n_kv, tid);

			uint32_t pa[BN / 16][4];
			float corr_a, corr_b;
			softmax_tile(s, pa, t, lim_a, lim_b, lim_min, c, scale_log2, m_a, m_b, l_a, l_b, corr_a, corr_b);
			rescale_o(o, corr_a, corr_b);
			sfwg::fence_regs(o);
			sfwg::wgmma_fence();
			pv_tile(o, pa, s_v + buf * TILE_BYTES);
			sfwg::wgmma_commit();
		}
	} else {
		/*
		 * Overlapped order (FA3's intra-warpgroup pipelining): S(t) and PV(t - 1) are queued together,
		 * the softmax of tile t runs while the tensor core still does PV(t - 1), and only the O
		 * rescale waits for it. One cp.async wait per tile (K(t) and V(t - 1) landed); the second
		 * barrier only frees the buffers of S(t) and PV(t - 1) for the gathers of K(t + 2), V(t + 1).
		 */
		uint32_t pa[BN / 16][4];
		float corr_a, corr_b;
		for (int t = 0; t < n_tiles; t++) {
			const int buf = t & 1;
			cp_wait_n<2>();
			sfwg::fence_proxy_async();
			__syncthreads(); /* K(t) and V(t - 1) visible to the async proxy */
			float s[32];
			sfwg::wgmma_fence();
			qk_tile(s, s_q, s_k + buf * TILE_BYTES);
			sfwg::wgmma_commit();
			if (t > 0)
				pv_tile(o, pa, s_v + (buf ^ 1) * TILE_BYTES);
			sfwg::wgmma_commit();
			sfwg::wgmma_wait<1>(); /* S(t) complete; PV(t - 1) may still run */
			sfwg::fence_regs(s);
			softmax_tile(s, pa, t, lim_a, lim_b, lim_min, c, scale_log2, m_a, m_b, l_a, l_b, corr_a, corr_b);
			sfwg::wgmma_wait<0>();
			sfwg::fence_regs(o);
			rescale_o(o, corr_a, corr_b);
			__syncthreads(); /* every warp is past S(t) and PV(t - 1): K buffer t % 2, V buffer (t + 1) % 2 free */
			if (t + 1 < n_tiles)
				load_kv_tile_wg<PS>(s_v + (buf ^ 1) * TILE_BYTES, v_cache, pg_v, ps, kvh, t + 1, tid);
			cp_commit();
			if (t + 2 < n_tiles)
				load_kv_tile_wg<PS>(s_k + buf * TILE_BYTES, k_cache, pg_k, ps, kvh, t + 2, tid);
			cp_commit();
#pragma unroll
			for (int i = 0; i < 8; i++)
				pg_v[i] = pg_k[i];
			fetch_pages<PS>(pg_k, pages, ps, t + 3, n_kv, tid);
		}
		/* the last tile's PV: V(n - 1) is younger than the last K waited for, so wait for every group */
		cp_wait_n<0>();
		sfwg::fence_proxy_async();
		__syncthreads();
		sfwg::fence_regs(o);
		sfwg::wgmma_fence();
		pv_tile(o, pa, s_v + ((n_tiles - 1) & 1) * TILE_BYTES);
		sfwg::wgmma_commit();
	}
	sfwg::wgmma_wait<0>();
	sfwg::fence_regs(o);

	/* finish: the row sums, O / l and the log-sum-exp of rows a and b */
	wg_store_rows(o, l_a, l_b, m_a, m_b, tok_a, tok_b, ntok, g, c, q_start + j0, kvh, out, lse);
}
