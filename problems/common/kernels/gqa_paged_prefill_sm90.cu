/*
 * gqa_paged_prefill_sm90.cu - causal GQA paged prefill for Llama-3.1-8B (32 q heads, 8 kv heads, head_dim 128) in the
 * FlashAttention-2 style with mma.sync m16n8k16 (bf16 in, fp32 accumulate). One source for page sizes
 * 1 and 16 (the same file serves gqa_paged_prefill_causal_h32_kv8_d128_ps1 and _ps16; ps1 has no
 * kv_last_page_len input, told apart by the input count).
 *
 * Work: a CTA of 4 warps takes 16 new tokens of one sequence x the 4 query heads of one kv head,
 * packed as 64 rows of the MMA's M dimension (row r = token r / 4, head r % 4), so each K/V tile
 * loaded serves the whole GQA group. It walks kv tiles of 64 positions from 0 to the last one the
 * tile's last token may see (token j of a sequence with prefix P = kv_len - qo_len sees 0 .. P + j),
 * gathering rows through the page table with cp.async (16 B, zero-fill past the end) into a
 * double-buffered, XOR-swizzled shared-memory ring; K(t+1) and V(t+1) load while tile t computes, and
 * the page ids of tile t+2 are fetched a tile ahead.
 * Scores stay in registers: base-2 online softmax in fp32, P rounded to bf16 for the PV product.
 * A one-CTA plan kernel lists the (sequence, 16-token tile) items; CTAs take them heaviest first
 * (reverse order: last tiles of the last sequence see the most keys).
 *
 * -DSF_PREFILL_WGMMA=1 selects version 2 of the attend kernel (gqa_paged_prefill_sm90_wgmma.cuh: the
 * same items, gathers and softmax on wgmma; Q, K and V tiles 128B-swizzled), 2 the same with the
 * softmax of a tile overlapping the previous tile's PV product, 3 version 3 (gqa_paged_prefill_sm90_pp.cuh:
 * 32-token items, two consumer warpgroups sharing each K/V tile, ping-pong on the tensor core; 4 the
 * same without the ping-pong turns; the default of sessions 5 and 6); 5 version 5 (gqa_paged_prefill_sm90_p5.cuh:
 * v3pp with 128-key tiles and a 3-stage ring, no ping-pong; the default of session 7: every bundled
 * and held-out workload it ran PASSED on the H200, 1.17-1.36x v3pp from 4k tokens, 1.7-2.2 us slower
 * below 100 tokens: ATTN_NOTES.md); 6 version 6 (gqa_paged_prefill_sm90_p6.cuh: v5 with a producer
 * warpgroup doing every gather, setmaxnreg, 384 threads; the default since session 8: every bundled
 * workload of both page sizes and the 7 held-out ps1 compositions PASSED on the H200, 1.09-1.50x v5
 * on 7 of the 9 ps1 workloads of >= 512 tokens, q1000 1% and b16-q8192 4.4% slower: ATTN_NOTES.md); 7
 * version 7 (gqa_paged_prefill_sm90_p7.cuh: v6 made persistent, at most one CTA per SM walking work
 * units from a counter that prefill_plan zeroes; opt-in, 2-3% faster than v6 on the H200:
 * PREFILL_NOTES.md); 8 version 8 (gqa_paged_prefill_sm90_p8.cuh: v6 with FlashAttention-3's ping-pong
 * of the two consumers on named barriers; the default since session 10: PREFILL_NOTES.md; with
 * -DSF_PREFILL_LEAN=1 its consumers are the lean ones of gqa_paged_prefill_sm90_lean.cuh, opt-in, notes'
 * "Version 10"); 9 was version 9
 * (v8 stepping over 64-key halves, the next QK^T before the current softmax: 1.065x slower than v8 on the
 * H200, removed in session 13; PREFILL_NOTES.md "Version 9 measured", git history); 0 keeps the mma.sync
 * kernel below.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>
#include "solforge/solution.h"

#define HQ 32
#define HKV 8
#define GRP 4
#define D 128
#define TOK 16                 /* new tokens per CTA */
#define BM (TOK * GRP)         /* 64 MMA rows */
#define BN 64                  /* kv positions per tile */
#define WARPS 4
#define THREADS (WARPS * 32)
#define ROW_BYTES (D * 2)      /* 256 B: 16 chunks of 16 B */
#define TILE_BYTES (BN * ROW_BYTES)
#define SMEM_BYTES (BM * ROW_BYTES + 4 * TILE_BYTES) /* Q, K[2], V[2]: 80 KiB */
#define PLAN_THREADS 1024
#define LOG2E 1.4426950408889634f
#ifndef SF_PREFILL_WGMMA /* 8 (v8: v6 + the consumers' ping-pong) the default since session 10 (PREFILL_NOTES.md, "Version 8
			  * on the H200"); 6 (v6) before, since session 8 (ATTN_NOTES.md) */
#define SF_PREFILL_WGMMA 8
#endif

struct work_item {
	int b;    /* sequence */
	int tile; /* 16-token tile within the sequence */
};

__device__ __forceinline__ int kv_len_of(const int32_t *kv_indptr, const int32_t *last_len, int ps, int b)
{
	const int n = kv_indptr[b + 1] - kv_indptr[b];
	if (n <= 0)
		return 0;
	return last_len ? (n - 1) * ps + last_len[b] : n * ps;
}

/* What every attend kernel reads of its work item w (a tile of TOKS new tokens of sequence w.b): the
 * sequence's first query row and length, its cached prefix (token j sees kv positions 0 .. prefix +
 * j), the tile's first token and token count, and n_kv, the keys any row of the tile may see. */
struct item_rows {
	int b, q_start, qo_len, prefix, j0, ntok, n_kv;
};
template <int TOKS>
__device__ __forceinline__ item_rows item_rows_of(work_item w, const int32_t *qo_indptr, const int32_t *kv_indptr,
						  const int32_t *last_len, int ps)
{
	item_rows r;
	r.b = w.b;
	r.q_start = qo_indptr[r.b];
	r.qo_len = qo_indptr[r.b + 1] - r.q_start;
	r.prefix = kv_len_of(kv_indptr, last_len, ps, r.b) - r.qo_len;
	r.j0 = w.tile * TOKS;
	r.ntok = min(TOKS, r.qo_len - r.j0);
	r.n_kv = r.prefix + r.j0 + r.ntok;
	return r;
}

/* One CTA: items[] = (b, tile) for every TK-token tile of every sequence in order; *n_items = count. */
template <int TK>
__global__ void __launch_bounds__(PLAN_THREADS)
prefill_plan(const int32_t *__restrict__ qo_indptr, int batch, work_item *__restrict__ items, int *__restrict__ n_items)
{
	__shared__ int warp_sum[PLAN_THREADS / 32];
	__shared__ int carry;
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	if (tid == 0)
		carry = 0;
	__syncthreads();
	for (int base = 0; base < batch; base += PLAN_THREADS) {
		const int b = base + tid;
		const int qlen = b < batch ? qo_indptr[b + 1] - qo_indptr[b] : 0;
		const int cnt = qlen > 0 ? (qlen + TK - 1) / TK : 0;
		int x = cnt;
		for (int o = 1; o < 32; o <<= 1) {
			const int y = __shfl_up_sync(0xffffffffu, x, o);
			if (lane >= o)
				x += y;
		}
		if (lane == 31)
			warp_sum[warp] = x;
		__syncthreads();
		if (warp == 0) {
			int w = warp_sum[lane];
			for (int o = 1; o < 32; o <<= 1) {
				const int y = __shfl_up_sync(0xffffffffu, w, o);
				if (lane >= o)
					w += y;
			}
			warp_sum[lane] = w;
		}
		__syncthreads();
		const int excl = carry + (warp ? warp_sum[warp - 1] : 0) + x - cnt;
		for (int c = 0; c < cnt; c++)
			items[excl + c] = work_item{b, c};
		__syncthreads();
		if (tid == 0)
			carry += warp_sum[PLAN_THREADS / 32 - 1];
		__syncthreads();
	}
	if (tid == 0) {
		*n_items = carry;
#if SF_PREFILL_WGMMA == 7
		n_items[1] = 0; /* v7's unit counter (prefill_attend_p7): zero before every attend launch */
#endif
	}
}

/* byte offset of 16-byte chunk ch (0..15) of row `row` in a swizzled [rows][256 B] tile */
__device__ __forceinline__ uint32_t swz(int row, int ch)
{
	return (uint32_t)(row * ROW_BYTES + ((ch ^ (row & 7)) << 4));
}

__device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, int src_bytes)
{
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_commit(void)
{
	asm volatile("cp.async.commit_group;" ::: "memory");
}
__device__ __forceinline__ void cp_wait1(void)
{
	asm volatile("cp.async.wait_group 1;" ::: "memory");
}

__device__ __forceinline__ void ldsm_x4(uint32_t addr, uint32_t r[4])
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
		     : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t addr, uint32_t r[4])
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
		     : "r"(addr));
}

/* d += a (16x16 bf16, row) * b (16x8 bf16, col), fp32 */
__device__ __forceinline__ void mma16816(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
		     "{%0,%1,%2,%3};"
		     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi)
{
	__nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
	return *(uint32_t *)&v;
}

/*
 * Page ids of the 8 rows this thread copies in kv tile t (rows tid / 16 + 8 i), -1 past n_kv. Loaded a
 * tile ahead of their use so the dependent index latency hides behind a tile's MMAs.
 */
template <int PS>
__device__ __forceinline__ void fetch_pages(int pg[8], const int32_t *__restrict__ pages, int ps_rt, int t, int n_kv,
					    int tid)
{
	const int ps = PS ? PS : ps_rt;
#pragma unroll
	for (int i = 0; i < 8; i++) {
		const int pos = t * BN + (tid >> 4) + 8 * i;
		pg[i] = pos < n_kv ? pages[pos / ps] : -1;
	}
}

/*
 * Issues the cp.async of kv tile t (positions t*64 .. t*64+63; rows past n_kv, pg[i] < 0, are
 * zero-filled) of one cache (K or V) into the swizzled tile at `dst`. Thread tid copies chunk tid % 16
 * of rows tid / 16 + 8 i, i = 0..7, whose page ids fetch_pages gave.
 */
template <int PS>
__device__ __forceinline__ void load_kv_tile(uint32_t dst, const __nv_bfloat16 *__restrict__ cache, const int pg[8],
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
		cp_async16(dst + swz(row, ch), src, ok ? 16 : 0);
	}
}

template <int PS>
__global__ void __launch_bounds__(THREADS, 2)
prefill_attend(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k_cache,
	       const __nv_bfloat16 *__restrict__ v_cache, const int32_t *__restrict__ qo_indptr,
	       const int32_t *__restrict__ kv_indptr, const int32_t *__restrict__ kv_indices,
	       const int32_t *__restrict__ last_len, int ps_rt, float scale_log2,
	       const work_item *__restrict__ items, const int *__restrict__ n_items, __nv_bfloat16 *__restrict__ out,
	       float *__restrict__ lse)
{
	extern __shared__ __align__(128) unsigned char smem[];
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
	const uint32_t s_base = (uint32_t)__cvta_generic_to_shared(smem);
	const uint32_t s_q = s_base;
	const uint32_t s_k = s_base + BM * ROW_BYTES;      /* two tiles */
	const uint32_t s_v = s_k + 2 * TILE_BYTES;         /* two tiles */

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
			cp_async16(s_q + swz(row, ch), src, ok ? 16 : 0);
		}
	}
	int pg[8];
	fetch_pages<PS>(pg, pages, ps, 0, n_kv, tid);
	load_kv_tile<PS>(s_k, k_cache, pg, ps, kvh, 0, tid);
	cp_commit();
	load_kv_tile<PS>(s_v, v_cache, pg, ps, kvh, 0, tid);
	cp_commit();
	fetch_pages<PS>(pg, pages, ps, 1, n_kv, tid); /* tile 1's pages (all -1 past the end) */

	const int g = lane >> 2, c = lane & 3;
	/* this thread's two rows: 16 warp + g and + 8; their tokens and causal limits */
	const int tok_a = warp * 4 + (g >> 2), tok_b = tok_a + 2;
	const int lim_a = prefix + j0 + tok_a, lim_b = prefix + j0 + tok_b;
	const int lim_min = prefix + j0; /* the smallest limit of the tile: tiles past it need the mask */

	uint32_t qa[D / 16][4];
	float o[D / 8][4];
#pragma unroll
	for (int i = 0; i < D / 8; i++)
		o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
	float m_a = -INFINITY, m_b = -INFINITY, l_a = 0.0f, l_b = 0.0f;

	for (int t = 0; t < n_tiles; t++) {
		const int buf = t & 1;
		cp_wait1();
		__syncthreads(); /* K(t) (and Q) in shared memory for every thread */
		if (t == 0) {
#pragma unroll
			for (int kk = 0; kk < D / 16; kk++) {
				const int row = warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
				ldsm_x4(s_q + swz(row, kk * 2 + (lane >> 4)), qa[kk]);
			}
		}
		if (t + 1 < n_tiles)
			load_kv_tile<PS>(s_k + (buf ^ 1) * TILE_BYTES, k_cache, pg, ps, kvh, t + 1, tid);
		cp_commit();

		/* S = Q K^T: 16 rows x 64 positions per warp, 8 n-tiles of 8 */
		float s[BN / 8][4];
#pragma unroll
		for (int i = 0; i < BN / 8; i++)
			s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.0f;
		const uint32_t kt = s_k + buf * TILE_BYTES;
#pragma unroll
		for (int kk = 0; kk < D / 16; kk++) {
#pragma unroll
			for (int np = 0; np < BN / 16; np++) {
				uint32_t r[4];
				const int row = np * 16 + (lane & 7) + (lane >> 4) * 8;
				ldsm_x4(kt + swz(row, kk * 2 + ((lane >> 3) & 1)), r);
				mma16816(s[2 * np], qa[kk], r[0], r[1]);
				mma16816(s[2 * np + 1], qa[kk], r[2], r[3]);
			}
		}

		/* scale to base 2, causal mask, online softmax (rows a: s[][0..1], rows b: s[][2..3]) */
		const bool need_mask = t * BN + BN - 1 > lim_min;
		float mx_a = m_a, mx_b = m_b;
#pragma unroll
		for (int nt = 0; nt < BN / 8; nt++) {
#pragma unroll
			for (int e = 0; e < 2; e++) {
				float xa = s[nt][e] * scale_log2, xb = s[nt][2 + e] * scale_log2;
				if (need_mask) {
					const int kv = t * BN + nt * 8 + 2 * c + e;
					if (kv > lim_a)
						xa = -INFINITY;
					if (kv > lim_b)
						xb = -INFINITY;
				}
				s[nt][e] = xa;
				s[nt][2 + e] = xb;
				mx_a = fmaxf(mx_a, xa);
				mx_b = fmaxf(mx_b, xb);
			}
		}
		mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, 1));
		mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, 2));
		mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, 1));
		mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, 2));
		/* a row with no visible key so far keeps m = -inf: subtract 0 instead (weights 0, no NaN) */
		const float mu_a = mx_a == -INFINITY ? 0.0f : mx_a, mu_b = mx_b == -INFINITY ? 0.0f : mx_b;
		const float corr_a = exp2f(m_a - mu_a), corr_b = exp2f(m_b - mu_b);
		m_a = mx_a;
		m_b = mx_b;
		float sum_a = 0.0f, sum_b = 0.0f;
#pragma unroll
		for (int nt = 0; nt < BN / 8; nt++) {
			s[nt][0] = exp2f(s[nt][0] - mu_a);
			s[nt][1] = exp2f(s[nt][1] - mu_a);
			s[nt][2] = exp2f(s[nt][2] - mu_b);
			s[nt][3] = exp2f(s[nt][3] - mu_b);
			sum_a += s[nt][0] + s[nt][1];
			sum_b += s[nt][2] + s[nt][3];
		}
		l_a = l_a * corr_a + sum_a;
		l_b = l_b * corr_b + sum_b;
#pragma unroll
		for (int i = 0; i < D / 8; i++) {
			o[i][0] *= corr_a;
			o[i][1] *= corr_a;
			o[i][2] *= corr_b;
			o[i][3] *= corr_b;
		}

		cp_wait1();
		__syncthreads(); /* V(t) in shared memory */
		if (t + 1 < n_tiles) {
			load_kv_tile<PS>(s_v + (buf ^ 1) * TILE_BYTES, v_cache, pg, ps, kvh, t + 1, tid);
			fetch_pages<PS>(pg, pages, ps, t + 2, n_kv, tid); /* used by the next iteration */
		}
		cp_commit();

		/* O += P V: P (bf16) from the score registers as A fragments, V through ldmatrix.trans */
		const uint32_t vt = s_v + buf * TILE_BYTES;
#pragma unroll
		for (int kk = 0; kk < BN / 16; kk++) {
			uint32_t pa[4];
			pa[0] = pack_bf16(s[2 * kk][0], s[2 * kk][1]);
			pa[1] = pack_bf16(s[2 * kk][2], s[2 * kk][3]);
			pa[2] = pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]);
			pa[3] = pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
			for (int dp = 0; dp < D / 16; dp++) {
				uint32_t r[4];
				const int row = kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
				ldsm_x4_t(vt + swz(row, dp * 2 + (lane >> 4)), r);
				mma16816(o[2 * dp], pa, r[0], r[1]);
				mma16816(o[2 * dp + 1], pa, r[2], r[3]);
			}
		}
	}

	/* finish: the row sums are spread over the 4 lanes of a quad */
	l_a += __shfl_xor_sync(0xffffffffu, l_a, 1);
	l_a += __shfl_xor_sync(0xffffffffu, l_a, 2);
	l_b += __shfl_xor_sync(0xffffffffu, l_b, 1);
	l_b += __shfl_xor_sync(0xffffffffu, l_b, 2);
	const int hh = g & 3; /* rows a and b have the same head (rows differ by 8 = 2 tokens) */
	if (tok_a < ntok) {
		const float inv = 1.0f / l_a;
		const size_t row = (size_t)(q_start + j0 + tok_a) * HQ + kvh * GRP + hh;
#pragma unroll
		for (int i = 0; i < D / 8; i++)
			*(uint32_t *)(out + row * D + i * 8 + 2 * c) = pack_bf16(o[i][0] * inv, o[i][1] * inv);
		if (c == 0)
			lse[row] = m_a + log2f(l_a);
	}
	if (tok_b < ntok) {
		const float inv = 1.0f / l_b;
		const size_t row = (size_t)(q_start + j0 + tok_b) * HQ + kvh * GRP + hh;
#pragma unroll
		for (int i = 0; i < D / 8; i++)
			*(uint32_t *)(out + row * D + i * 8 + 2 * c) = pack_bf16(o[i][2] * inv, o[i][3] * inv);
		if (c == 0)
			lse[row] = m_b + log2f(l_b);
	}
}

/* The epilogue of the wgmma versions (2 and 3): a thread's row sums l_a, l_b are reduced over its quad,
 * then its 64 accumulators o (wgmma m64nNk16 layout: o[4j], o[4j+1] of row a, o[4j+2], o[4j+3] of row b,
 * columns 8j + 2c) are divided by them, rounded to bf16 and stored, and lane c == 0 stores the base-2
 * log-sum-exp m + log2(l). Rows a and b (lane group g) are tokens tok0 + tok_a, tok0 + tok_b of head
 * kvh * GRP + (g & 3);
 * a token at or past ntok is padding and not written. */
__device__ __forceinline__ void wg_store_rows(const float *o, float l_a, float l_b, float m_a, float m_b, int tok_a,
					      int tok_b, int ntok, int g, int c, int tok0, int kvh,
					      __nv_bfloat16 *__restrict__ out, float *__restrict__ lse)
{
	l_a += __shfl_xor_sync(0xffffffffu, l_a, 1);
	l_a += __shfl_xor_sync(0xffffffffu, l_a, 2);
	l_b += __shfl_xor_sync(0xffffffffu, l_b, 1);
	l_b += __shfl_xor_sync(0xffffffffu, l_b, 2);
	const int hh = g & 3; /* rows a and b have the same head (rows differ by 8 = 2 tokens) */
	if (tok_a < ntok) {
		const float inv = 1.0f / l_a;
		const size_t row = (size_t)(tok0 + tok_a) * HQ + kvh * GRP + hh;
#pragma unroll
		for (int j = 0; j < D / 8; j++)
			*(uint32_t *)(out + row * D + j * 8 + 2 * c) = pack_bf16(o[4 * j] * inv, o[4 * j + 1] * inv);
		if (c == 0)
			lse[row] = m_a + log2f(l_a);
	}
	if (tok_b < ntok) {
		const float inv = 1.0f / l_b;
		const size_t row = (size_t)(tok0 + tok_b) * HQ + kvh * GRP + hh;
#pragma unroll
		for (int j = 0; j < D / 8; j++)
			*(uint32_t *)(out + row * D + j * 8 + 2 * c) = pack_bf16(o[4 * j + 2] * inv, o[4 * j + 3] * inv);
		if (c == 0)
			lse[row] = m_b + log2f(l_b);
	}
}

#if SF_PREFILL_WGMMA == 6
#include "gqa_paged_prefill_sm90_p6.cuh"
#define ATTEND_KERNEL(PS) prefill_attend_p6<PS>
#define ATTEND_SMEM P6_SMEM_BYTES
#define ATTEND_THREADS P6_THREADS
#define ITEM_TOK PP_TOK
#elif SF_PREFILL_WGMMA == 7
#include "gqa_paged_prefill_sm90_p7.cuh"
#define ATTEND_KERNEL(PS) prefill_attend_p7<PS>
#define ATTEND_SMEM P7_SMEM_BYTES
#define ATTEND_THREADS P7_THREADS
#define ITEM_TOK PP_TOK
#elif SF_PREFILL_WGMMA == 8
#include "gqa_paged_prefill_sm90_p8.cuh"
#define ATTEND_KERNEL(PS) prefill_attend_p8<PS>
#define ATTEND_SMEM P8_SMEM_BYTES
#define ATTEND_THREADS P8_THREADS
#define ITEM_TOK PP_TOK
#elif SF_PREFILL_WGMMA == 9
#error "SF_PREFILL_WGMMA=9: version 9 was removed in session 13 (measured 1.065x slower than v8; PREFILL_NOTES.md)"
#elif SF_PREFILL_WGMMA == 5
#include "gqa_paged_prefill_sm90_p5.cuh"
#define ATTEND_KERNEL(PS) prefill_attend_p5<PS>
#define ATTEND_SMEM P5_SMEM_BYTES
#define ATTEND_THREADS PP_THREADS
#define ITEM_TOK PP_TOK
#elif SF_PREFILL_WGMMA >= 3
#include "gqa_paged_prefill_sm90_pp.cuh"
#define ATTEND_KERNEL(PS) prefill_attend_pp<PS, (SF_PREFILL_WGMMA == 3)>
#define ATTEND_SMEM PP_SMEM_BYTES
#define ATTEND_THREADS PP_THREADS
#define ITEM_TOK PP_TOK
#elif SF_PREFILL_WGMMA
#include "gqa_paged_prefill_sm90_wgmma.cuh"
#define ATTEND_KERNEL(PS) prefill_attend_wg<PS, (SF_PREFILL_WGMMA >= 2)>
#define ATTEND_SMEM WG_SMEM_BYTES
#endif
#ifndef ATTEND_KERNEL
#define ATTEND_KERNEL(PS) prefill_attend<PS>
#define ATTEND_SMEM SMEM_BYTES
#endif
#ifndef ATTEND_THREADS
#define ATTEND_THREADS THREADS
#define ITEM_TOK TOK /* new tokens per work item (CTA) */
#endif

#include "gqa_paged_sm90_scratch.cuh" /* scratch */

#if SF_PREFILL_WGMMA == 7
/* The SM count of the current device (cudaDevAttrMultiProcessorCount, queried once per device), 0 when
 * the query fails. */
static int sm_count(void)
{
	static int dev_done = -1, count;
	int dev;
	if (cudaGetDevice(&dev) != cudaSuccess)
		return 0;
	if (dev != dev_done) {
		if (cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
			return 0;
		dev_done = dev;
	}
	return count;
}
#endif

template <int PS>
static int launch(unsigned grid, cudaStream_t stream, const sf_call *call, const int32_t *last, int ps, float scale_log2,
		  const work_item *items, const int *n_items)
{
	static int attr_done;
	if (!attr_done) {
		if (cudaFuncSetAttribute(ATTEND_KERNEL(PS), cudaFuncAttributeMaxDynamicSharedMemorySize, ATTEND_SMEM) !=
		    cudaSuccess)
			return SF_ERR_CUDA;
		attr_done = 1;
	}
	const sf_tensor *in = call->inputs;
#if SF_PREFILL_WGMMA == 7 /* v7 also takes the unit counter (the int after n_items) and the store sink (scratch
			   * header bytes 256 ..; the items start at 256 + P7_SINK_BYTES) */
	ATTEND_KERNEL(PS)<<<grid, ATTEND_THREADS, ATTEND_SMEM, stream>>>(
		(const __nv_bfloat16 *)in[0].data, (const __nv_bfloat16 *)in[1].data, (const __nv_bfloat16 *)in[2].data,
		(const int32_t *)in[3].data, (const int32_t *)in[4].data, (const int32_t *)in[5].data, last, ps,
		scale_log2, items, n_items, (int *)n_items + 1, (unsigned char *)n_items + 256,
		(__nv_bfloat16 *)call->outputs[0].data, (float *)call->outputs[1].data);
#else
	ATTEND_KERNEL(PS)<<<grid, ATTEND_THREADS, ATTEND_SMEM, stream>>>(
		(const __nv_bfloat16 *)in[0].data, (const __nv_bfloat16 *)in[1].data, (const __nv_bfloat16 *)in[2].data,
		(const int32_t *)in[3].data, (const int32_t *)in[4].data, (const int32_t *)in[5].data, last, ps,
		scale_log2, items, n_items, (__nv_bfloat16 *)call->outputs[0].data, (float *)call->outputs[1].data);
#endif
	return SF_OK;
}

SF_EXPORT int run(const sf_call *call)
{
	/* ps1: q k v qo_indptr kv_indptr kv_indices sm_scale; ps16: ... kv_indices kv_last_page_len sm_scale */
	const int has_last = call->n_inputs == 8;
	if ((call->n_inputs != 7 && call->n_inputs != 8) || call->n_outputs != 2)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *in = call->inputs;
	if (in[0].ndim != 3 || in[0].shape[1] != HQ || in[0].shape[2] != D || in[1].ndim != 4 ||
	    in[1].shape[2] != HKV || in[1].shape[3] != D)
		return SF_ERR_UNSUPPORTED;
	const int64_t total_q = in[0].shape[0];
	const int64_t batch64 = in[3].shape[0] - 1;
	const int64_t n_idx = in[5].shape[0];
	const int ps = (int)in[1].shape[1];
	if (total_q == 0 || batch64 < 1)
		return SF_OK;
	if (batch64 > (1 << 24) || total_q > INT32_MAX / HQ || n_idx * ps > INT32_MAX / 2)
		return SF_ERR_UNSUPPORTED;
	const int batch = (int)batch64;
	const float scale_log2 = (float)call->scalars[has_last ? 7 : 6] * LOG2E;
	const int32_t *last = has_last ? (const int32_t *)in[6].data : NULL;
	cudaStream_t stream = (cudaStream_t)call->stream;

	const int64_t max_items = total_q / ITEM_TOK + batch; /* >= sum of ceil(qo_len / ITEM_TOK) */
	if (max_items * HKV > INT32_MAX)
		return SF_ERR_UNSUPPORTED;
#if SF_PREFILL_WGMMA == 7
	const size_t head = 256 + P7_SINK_BYTES; /* n_items, v7's counter; v7's store sink */
#else
	const size_t head = 256;
#endif
	char *s = (char *)scratch(head + sizeof(work_item) * (size_t)max_items);
	if (!s)
		return SF_ERR_CUDA;
	int *n_items = (int *)s;
	work_item *items = (work_item *)(s + head);

	prefill_plan<ITEM_TOK><<<1, PLAN_THREADS, 0, stream>>>((const int32_t *)in[3].data, batch, items, n_items);
#if SF_PREFILL_WGMMA == 7 /* persistent: at most one CTA per SM, each walking units */
	const int sms = sm_count();
	if (sms < 1)
		return SF_ERR_CUDA;
	const unsigned grid = (unsigned)(max_items * HKV < sms ? max_items * HKV : sms);
#else
	const unsigned grid = (unsigned)(max_items * HKV);
#endif
	int rc;
	if (ps == 1)
		rc = launch<1>(grid, stream, call, last, ps, scale_log2, items, n_items);
	else if (ps == 16)
		rc = launch<16>(grid, stream, call, last, ps, scale_log2, items, n_items);
	else
		rc = launch<0>(grid, stream, call, last, ps, scale_log2, items, n_items);
	if (rc != SF_OK)
		return rc;
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
