/*
 * gqa_paged_prefill_sm90_pp.cuh - version 3 ("v3pp") of the causal GQA paged prefill attend kernel
 * (gqa_paged_prefill_sm90.cu with -DSF_PREFILL_WGMMA=3): two consumer warpgroups per CTA sharing
 * every K/V tile, FA3-style ping-pong of their tensor-core work, fewer instructions per kv tile.
 *
 * A CTA (256 threads, 1 per SM) takes 32 new tokens of one sequence x the 4 query heads of one kv
 * head = 128 rows (row r = token r / 4, head r % 4); warpgroup w owns rows 64 w .. 64 w + 63 (tokens
 * 16 w .. 16 w + 15), the M of one wgmma m64. Both warpgroups walk the CTA's kv tiles (64 positions,
 * up to the last token's causal limit; warpgroup 0's rows mask what they may not see). Per tile each
 * warpgroup runs version 2's overlapped order: S(t) = Q K(t)^T and O += P(t-1) V(t-1) queued
 * together, the softmax of tile t under PV(t-1), the O rescale after it.
 *
 * Ring: 4 stages of K and 4 of V (16 KiB each, 128B-swizzled) + Q (32 KiB): 161 KiB with the
 * alignment slack. All 256 threads gather (4 rows of 16 B per tile and cache each: half of version
 * 2's per-thread share). cp.async groups, one per tile after the prologue: P0 = {Q, K0},
 * G(-2) = {K1, V0}, G(-1) = {K2, V1}, then at tile t G(t) = {K(t+3), V(t+2)}.
 * Synchronisation (no __syncthreads in the loop, so the warpgroups may drift apart by up to a tile):
 *  - full_k[s], full_v[s] (mbarrier, 256 arrivals): a thread retires its own copies of a tile
 *    (cp.async.wait_group), fences them to the async proxy (fence.proxy.async) and arrives; a reader
 *    waits for the phase before its wgmma. K(t+1) and V(t) are published at tile t, right after the
 *    thread issued its wgmmas (wait_group 1 retires G(t-2)): about 1.5 tiles after their gather.
 *  - empty_k[s], empty_v[s] (mbarrier, 256 arrivals): a thread arrives once its warpgroup's wgmma
 *    that read K(t) / V(t-1) has retired (wgmma.wait_group 0); a gather into a used buffer waits for
 *    both warpgroups' release of the tile it held (K(t-1) and V(t-2) at tile t).
 *  - turn (named barriers 1 and 2, 256 threads: 128 bar.sync + 128 bar.arrive): warpgroup w waits on
 *    barrier 1 + w before issuing a tile's wgmmas and arrives on the other's after, so issues alternate
 *    0, 1, 0, 1, ... and one warpgroup's softmax runs while the other's products occupy the tensor
 *    core. Warpgroup 1 arrives once before the loop (warpgroup 0 goes first); warpgroup 0 syncs once
 *    more after the loop, taking warpgroup 1's arrival after its last tile, so both barriers end
 *    balanced (the arrival stays unconditional: a branch there makes ptxas serialize the wgmmas).
 * Per-tile instruction cuts against version 2: the page slot (page id x ps + position % ps) of a
 * gathered row is computed once and used for K and, a tile later, V of the same positions (one
 * IMAD.WIDE each); descriptors are one 64-bit base plus constants; the O rescale (64 FMUL) is
 * skipped when no row max of the warp changed (warp vote); the mask only on tiles that reach past the
 * warpgroup's first causal limit (version 2's rule). tools/attn_emulate_wg.py --pp replays this
 * protocol on the CPU (random interleavings of the two warpgroups) and the data path.
 */
#pragma once
#include "gqa_paged_prefill_sm90_wgmma.cuh"

#define PP_TOK 32			/* new tokens per CTA */
#define PP_BM (PP_TOK * GRP)		/* 128 rows */
#define PP_THREADS 256
#define PP_STAGES 4
#define PP_ROWS (BN * 16 / PP_THREADS) /* rows of a kv tile one thread gathers: 4 */
#define PP_Q_BYTES (PP_BM * ROW_BYTES) /* 32 KiB */
#define PP_SMEM_BYTES (1024 + PP_Q_BYTES + 2 * PP_STAGES * TILE_BYTES)

namespace sfpp {

__device__ __forceinline__ void bar_sync(int id, int count)
{
	asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}

__device__ __forceinline__ void bar_arrive(int id, int count)
{
	asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(count) : "memory");
}

/* slot (page id x ps + position % ps) of the PP_ROWS rows this thread gathers in kv tile t, -1 past n_kv */
template <int PS>
__device__ __forceinline__ void fetch_slots(int (&sl)[PP_ROWS], const int32_t *__restrict__ pages, int ps_rt, int t,
					    int n_kv, int tid)
{
	const int ps = PS ? PS : ps_rt;
#pragma unroll
	for (int i = 0; i < PP_ROWS; i++) {
		const int pos = t * BN + (tid >> 4) + 16 * i;
		sl[i] = pos < n_kv ? pages[pos / ps] * ps + pos % ps : -1;
	}
}

/* cp.async of this thread's PP_ROWS rows (chunk tid % 16 of rows tid / 16 + 16 i) of one kv tile: dst =
 * the tile + sw128(BN, tid / 16, tid % 16) (row r + 16 i lies 16 i x 128 bytes further: same swizzle
 * phase), src = the cache's global address + this thread's (kv head, chunk) byte offset; per row one
 * mad.wide (slot x 2048 B + src) and the zero-fill size (slot -1: 0 bytes from a valid address). */
__device__ __forceinline__ void gather(uint32_t dst, uint64_t src, const int (&sl)[PP_ROWS])
{
#pragma unroll
	for (int i = 0; i < PP_ROWS; i++) {
		uint64_t p;
		asm("mad.wide.u32 %0, %1, %2, %3;" : "=l"(p) : "r"((uint32_t)max(sl[i], 0)), "r"(HKV * D * 2), "l"(src));
		asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst + i * 16 * 128), "l"(p),
			     "r"(sl[i] >= 0 ? 16 : 0)
			     : "memory");
	}
}

/* cp.async of this thread's share of the CTA's Q tile (PP_BM rows: row r = token r / 4 of the tokens
 * from q_row0, head kvh * 4 + r % 4; rows of tokens >= ntok zero-filled) into s_q, 128B-swizzled */
__device__ __forceinline__ void load_q(uint32_t s_q, const __nv_bfloat16 *__restrict__ q, int q_row0, int ntok, int kvh,
				       int tid)
{
	const int ch = tid & 15;
#pragma unroll
	for (int i = 0; i < PP_BM * 16 / PP_THREADS; i++) {
		const int row = (tid >> 4) + 16 * i;
		const int tok = row >> 2;
		const bool ok = tok < ntok;
		const __nv_bfloat16 *src = q + ((size_t)(q_row0 + (ok ? tok : 0)) * HQ + kvh * GRP + (row & 3)) * D + ch * 8;
		cp_async16(s_q + sw128(PP_BM, row, ch), src, ok ? 16 : 0);
	}
}

/* descriptor of a K-major SW128 tile at addr as (address field) + constant bits: the field (addr >> 4,
 * 14 bits) never carries for shared addresses < 256 KiB, so offsets are added to the low word */
__device__ __forceinline__ uint64_t desc_add(uint64_t d, uint32_t bytes)
{
	return d + (bytes >> 4);
}

} /* namespace sfpp */

/* Same contract and arguments as prefill_attend (version 1), but the items are 32-token tiles
 * (prefill_plan<PP_TOK>), PP_THREADS threads and PP_SMEM_BYTES of dynamic shared memory. PING = 0
 * (-DSF_PREFILL_WGMMA=4, "v3np", for measuring the ping-pong's share) drops the turn barriers: the
 * warpgroups are then coupled only through the mbarriers. */
template <int PS, int PING>
__global__ void __launch_bounds__(PP_THREADS, 1)
prefill_attend_pp(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k_cache,
		  const __nv_bfloat16 *__restrict__ v_cache, const int32_t *__restrict__ qo_indptr,
		  const int32_t *__restrict__ kv_indptr, const int32_t *__restrict__ kv_indices,
		  const int32_t *__restrict__ last_len, int ps_rt, float scale_log2, const work_item *__restrict__ items,
		  const int *__restrict__ n_items, __nv_bfloat16 *__restrict__ out, float *__restrict__ lse)
{
	extern __shared__ __align__(128) unsigned char smem[]; /* rounded up to 1024 below */
	__shared__ __align__(8) uint64_t bars[4 * PP_STAGES];	 /* full_k, full_v, empty_k, empty_v */
	const int ps = PS ? PS : ps_rt;
	const int kvh = blockIdx.x % HKV;
	const int idx = *n_items - 1 - (int)(blockIdx.x / HKV);
	if (idx < 0)
		return;
	const item_rows it = item_rows_of<PP_TOK>(items[idx], qo_indptr, kv_indptr, last_len, ps);
	const int b = it.b, q_start = it.q_start, prefix = it.prefix;
	const int j0 = it.j0, ntok = it.ntok, n_kv = it.n_kv;
	const int n = (n_kv + BN - 1) / BN;
	const int32_t *pages = kv_indices + kv_indptr[b];

	const int tid = threadIdx.x, lane = tid & 31, wg = tid >> 7, wi = (tid >> 5) & 3;
	const uint32_t s_q = ((uint32_t)__cvta_generic_to_shared(smem) + 1023u) & ~1023u; /* swizzle atoms */
	const uint32_t s_k = s_q + PP_Q_BYTES;		     /* PP_STAGES tiles */
	const uint32_t s_v = s_k + PP_STAGES * TILE_BYTES; /* PP_STAGES tiles */
	const uint32_t bar0 = (uint32_t)__cvta_generic_to_shared(bars);
#define FULL_K(s) (bar0 + 8 * (s))
#define FULL_V(s) (bar0 + 8 * (PP_STAGES + (s)))
#define EMPTY_K(s) (bar0 + 8 * (2 * PP_STAGES + (s)))
#define EMPTY_V(s) (bar0 + 8 * (3 * PP_STAGES + (s)))
	if (tid < 4 * PP_STAGES)
		sfwg::mbar_init(bar0 + 8 * tid, PP_THREADS);
	__syncthreads();

	sfpp::load_q(s_q, q, q_start + j0, ntok, kvh, tid);
	const uint64_t kb = (uint64_t)(k_cache + kvh * D + (tid & 15) * 8); /* generic = global addresses */
	const uint64_t vb = (uint64_t)(v_cache + kvh * D + (tid & 15) * 8);
	const uint32_t gofs = sw128(BN, tid >> 4, tid & 15); /* this thread's first row in a kv tile */
	int sl_v[PP_ROWS], sl_k[PP_ROWS], sl_n[PP_ROWS];
	{
		int s0[PP_ROWS], s1[PP_ROWS];
		sfpp::fetch_slots<PS>(s0, pages, ps, 0, n_kv, tid);
		sfpp::fetch_slots<PS>(s1, pages, ps, 1, n_kv, tid);
		sfpp::fetch_slots<PS>(sl_v, pages, ps, 2, n_kv, tid);
		sfpp::gather(s_k + gofs, kb, s0); /* P0 = {Q, K0} */
		cp_commit();
		if (n > 1)
			sfpp::gather(s_k + TILE_BYTES + gofs, kb, s1); /* G(-2) = {K1, V0} */
		sfpp::gather(s_v + gofs, vb, s0);
		cp_commit();
		if (n > 2)
			sfpp::gather(s_k + 2 * TILE_BYTES + gofs, kb, sl_v); /* G(-1) = {K2, V1} */
		if (n > 1)
			sfpp::gather(s_v + TILE_BYTES + gofs, vb, s1);
		cp_commit();
		sfpp::fetch_slots<PS>(sl_k, pages, ps, 3, n_kv, tid);
		sfpp::fetch_slots<PS>(sl_n, pages, ps, 4, n_kv, tid);
	}
	cp_wait_n<2>(); /* P0 retired: publish Q and K0 */
	sfwg::fence_proxy_async();
	sfwg::mbar_arrive(FULL_K(0));
	if (PING && wg == 1)
		sfpp::bar_arrive(1, 2 * 128); /* warpgroup 0 issues first */

	const int g = lane >> 2, c = lane & 3;
	/* accumulator rows: 16 wi + g (a) and + 8 (b) of this warpgroup; their tokens and causal limits */
	const int tok_a = 16 * wg + wi * 4 + (g >> 2), tok_b = tok_a + 2;
	const int lim_a = prefix + j0 + tok_a, lim_b = prefix + j0 + tok_b;
	const int lim_min = prefix + j0 + 16 * wg; /* this warpgroup's smallest limit */
	const uint64_t dq = sfwg::wg_desc(s_q + wg * 64 * 128);
	const uint64_t dk = sfwg::wg_desc(s_k);
	const uint64_t dv = sfwg::wg_desc_mn(s_v, BN * 128);

	float o[64];
#pragma unroll
	for (int i = 0; i < 64; i++)
		o[i] = 0.0f;
	float m_a = -INFINITY, m_b = -INFINITY, l_a = 0.0f, l_b = 0.0f;
	uint32_t pa[BN / 16][4];
	for (int t = 0; t < n; t++) {
		const int st = t & (PP_STAGES - 1), sp = (t - 1) & (PP_STAGES - 1);
		sfwg::mbar_wait(FULL_K(st), (t / PP_STAGES) & 1);
		if (t > 0)
			sfwg::mbar_wait(FULL_V(sp), ((t - 1) / PP_STAGES) & 1);
		if (PING)
			sfpp::bar_sync(1 + wg, 2 * 128); /* my turn on the tensor core */
		float s[32];
		sfwg::wgmma_fence();
		const uint64_t dkt = sfpp::desc_add(dk, st * TILE_BYTES);
#pragma unroll
		for (int kk = 0; kk < D / 16; kk++)
			sfwg::wgmma_m64n64k16_ss(s, sfpp::desc_add(dq, (kk >> 2) * (PP_BM * 128) + (kk & 3) * 32),
						 sfpp::desc_add(dkt, (kk >> 2) * (BN * 128) + (kk & 3) * 32), kk);
		sfwg::wgmma_commit();
		if (t > 0) {
			const uint64_t dvt = sfpp::desc_add(dv, sp * TILE_BYTES);
#pragma unroll
			for (int kk = 0; kk < BN / 16; kk++)
				sfwg::wgmma_m64n128k16_rs_tb(o, pa[kk], sfpp::desc_add(dvt, kk * 2048));
		}
		sfwg::wgmma_commit();
		if (PING)
			sfpp::bar_arrive(2 - wg, 2 * 128); /* the other warpgroup's turn */

		cp_wait_n<1>(); /* G(t - 2) = {K(t + 1), V(t)} retired: publish them */
		sfwg::fence_proxy_async();
		if (t + 1 < n)
			sfwg::mbar_arrive(FULL_K((t + 1) & (PP_STAGES - 1)));
		sfwg::mbar_arrive(FULL_V(st));

		sfwg::wgmma_wait<1>(); /* S(t) complete; PV(t - 1) may still run */
		sfwg::fence_regs(s);
		float corr_a, corr_b;
		uint32_t pn[BN / 16][4]; /* P(t): pa (P(t - 1)) is an operand of the PV in flight until wait 0 */
		softmax_tile(s, pn, t, lim_a, lim_b, lim_min, c, scale_log2, m_a, m_b, l_a, l_b, corr_a, corr_b);
		sfwg::wgmma_wait<0>();
		sfwg::fence_regs(o);
		if (!__all_sync(0xffffffffu, corr_a == 1.0f && corr_b == 1.0f))
			rescale_o(o, corr_a, corr_b);
#pragma unroll
		for (int kk = 0; kk < BN / 16; kk++)
			for (int e = 0; e < 4; e++)
				pa[kk][e] = pn[kk][e];
		sfwg::mbar_arrive(EMPTY_K(st)); /* this warpgroup is done with K(t) and V(t - 1) */
		if (t > 0)
			sfwg::mbar_arrive(EMPTY_V(sp));

		/* G(t) = {K(t + 3) into K(t - 1)'s buffer, V(t + 2) into V(t - 2)'s}: both warpgroups released them */
		if (t + 3 < n) {
			if (t >= 1)
				sfwg::mbar_wait(EMPTY_K(sp), ((t - 1) / PP_STAGES) & 1);
			sfpp::gather(s_k + sp * TILE_BYTES + gofs, kb, sl_k);
		}
		if (t + 2 < n) {
			const int s2 = (t + 2) & (PP_STAGES - 1);
			if (t >= 2)
				sfwg::mbar_wait(EMPTY_V(s2), ((t - 2) / PP_STAGES) & 1);
			sfpp::gather(s_v + s2 * TILE_BYTES + gofs, vb, sl_v);
		}
		cp_commit();
#pragma unroll
		for (int i = 0; i < PP_ROWS; i++) {
			sl_v[i] = sl_k[i]; /* V(t + 3) reuses K(t + 3)'s slots */
			sl_k[i] = sl_n[i];
		}
		sfpp::fetch_slots<PS>(sl_n, pages, ps, t + 5, n_kv, tid);
	}
	/* the last tile's PV (V(n - 1) published at tile n - 1) */
	sfwg::mbar_wait(FULL_V((n - 1) & (PP_STAGES - 1)), ((n - 1) / PP_STAGES) & 1);
	sfwg::fence_regs(o);
	sfwg::wgmma_fence();
	{
		const uint64_t dvt = sfpp::desc_add(dv, ((n - 1) & (PP_STAGES - 1)) * TILE_BYTES);
#pragma unroll
		for (int kk = 0; kk < BN / 16; kk++)
			sfwg::wgmma_m64n128k16_rs_tb(o, pa[kk], sfpp::desc_add(dvt, kk * 2048));
	}
	sfwg::wgmma_commit();
	sfwg::wgmma_wait<0>();
	sfwg::fence_regs(o);
	if (PING && wg == 0)
		sfpp::bar_sync(1, 2 * 128); /* takes warpgroup 1's arrival after its last tile: both barriers end balanced */
#undef FULL_K
#undef FULL_V
#undef EMPTY_K
#undef EMPTY_V

	/* finish: the row sums, O / l and the log-sum-exp of rows a and b */
	wg_store_rows(o, l_a, l_b, m_a, m_b, tok_a, tok_b, ntok, g, c, q_start + j0, kvh, out, lse);
}
