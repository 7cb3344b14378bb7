/*
 * gqa_paged_decode_sm90.cu - split-KV GQA paged decode for Llama-3.1-8B (32 q heads, 8 kv heads, head_dim 128), one
 * source for page sizes 1 and 16 (the same file serves gqa_paged_decode_h32_kv8_d128_ps1 and _ps16;
 * it tells them apart by the input count: ps1 has no kv_last_page_len).
 *
 * Memory-bound: every K/V row the page table references is read exactly once. The 4 query heads of a
 * GQA group share each K/V load. Work items are (sequence, chunk of `chunk` kv positions) in sequence
 * order; one CTA (8 warps) per (item, kv head): each half-warp takes 4 consecutive positions per step
 * (lane: 8 dims of K and of V, 16 bytes each), scores the 4 heads, keeps a base-2 online softmax in
 * fp32; the CTA merges its 16 half-warps; a sequence with one chunk writes output and lse directly,
 * otherwise a normalized partial (o, lse) goes to scratch.
 *
 * Version 2 (default): ONE kernel. Each CTA finds its (sequence, chunk) itself: a block-wide scan of
 * the per-sequence chunk counts computed from kv_indptr (256 sequences per pass, early exit). The last
 * CTA of a (sequence, kv head) to finish - an atomic counter in scratch, fenced on both sides - merges
 * that sequence's partials in chunk order (deterministic whoever merges) and resets the counter to 0,
 * so the next call finds every counter zero. An empty sequence gets one item that writes zeros and
 * lse -inf (what the reference writes). K/V go through a cp.async ring in shared memory (DEC_STAGES
 * = 3 steps of 64 positions, 32 KiB each, in flight per CTA); -DDEC_STAGES=0 loads them straight into
 * registers (ld.global.nc, 8 x 16 B per lane) as version 1 does.
 * Version 3 (default; -DDECODE_MMA=0 builds version 2): version 2 with the per-warp math of the ring loop on tensor
 * cores (S = Q K^T and O += P V by mma.sync m16n8k16 from ldmatrix fragments of a swizzled ring;
 * gqa_paged_decode_sm90_mma.cuh), same items, locate scan, ring and merge (the merge loads 4 chunks per
 * warp at once, DEC_MERGE_UNROLL 4, instead of 2).
 * Version 4 (-DDEC_PERSIST=1, candidate): version 3's math and merge on one wave of CTAs, each a
 * contiguous range of items whose sequences stream through one cp.async ring without draining at
 * sequence ends (decode_persist; gqa_paged_decode_sm90_persist.cuh).
 * Version 5 (-DDEC_CLUSTER=CS, candidate): batch <= DEC_CLUSTER_MAXB (1) as one thread-block cluster of CS
 * chunks per (sequence, kv head), merged through distributed shared memory: no locate scan, partials,
 * fences or atomics (decode_cluster; gqa_paged_decode_sm90_cluster.cuh; -DDEC_CLUSTER_MAXKV=K: only below K
 * kv positions). DEC_WAVE_CHUNK (2048, default since session 20; 0: off): decode_fused doubles a host chunk of
 * >= DEC_WAVE_MIN_CHUNK (1024) in its locate scan where the doubled chunk's CTAs fill one wave
 * (locate_item_wave). DEC_EXP_*: timing-only knobs.
 * Batch 1 (DEC_B1, default since session 10): version 3 without the locate scan, the first page ids loaded beside
 * kv_indptr, its own chunk count DEC_B1_ITEMS and a ring of 1-2 steps chosen per call (DEC_B1_STAGES*, session 19)
 * (decode_b1; gqa_paged_decode_sm90_b1.cuh); -DDEC_B1_DYN=1
 * (candidate, session 11): static runs plus units claimed from a counter (decode_b1dyn; _b1dyn.cuh); -DDEC_B1_TMA=1
 * (candidate, session 16): the ring filled by TMA bulk copies on mbarriers (decode_b1tma; _b1tma.cuh). Host helpers
 * (scratch, counters, setup): gqa_paged_decode_sm90_host.cuh.
 * Version 1 (-DDECODE_V1=1, kept for side-by-side timing): three kernels - plan (one CTA writes the
 * item list), attend, merge (one warp per (sequence, q head) with >= 2 chunks).
 * Tuning (-D): DEC_ITEMS (66: target chunk count over the batch, ~2 waves of 2 CTAs/SM x 8 kv heads)
 * and DEC_MIN_CHUNK (128 positions, a multiple of 64). Scratch (partials, counters) is allocated by
 * the solution (cudaMalloc) and regrown when a bigger batch comes; notes in problems/llama/DECODE_NOTES.md.
 * The attention loops and the warp-state combine live in gqa_paged_decode_sm90_attend.cuh, every -D knob, its
 * default and the shapes in gqa_paged_decode_sm90_knobs.cuh.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>
#include "solforge/solution.h"

#include "gqa_paged_decode_sm90_knobs.cuh"

#if DECODE_MMA
#include "gqa_paged_decode_sm90_mma.cuh"
#endif
#include "gqa_paged_decode_sm90_attend.cuh"

#if !DECODE_V1
#if DEC_STAGES > 0
#define DEC_RING_BYTES_OF(ST) ((size_t)(ST) * 2 * POS_PER_STEP * D * 2) /* a ring of ST stages, 32 KiB each */
#define DEC_RING_BYTES DEC_RING_BYTES_OF(DEC_STAGES)
/* The K/V ring of attend_range_cp: the kernel's dynamic shared memory (DEC_RING_BYTES). */
__device__ __forceinline__ uint4 *dec_ring()
{
#ifdef SF_EMU_H
	return emu_shared<uint4>(1000, DEC_RING_BYTES / 16);
#else
	extern __shared__ __align__(16) uint4 dec_ring_smem[];
	return dec_ring_smem;
#endif
}
#else
#define DEC_RING_BYTES ((size_t)0)
#endif

/*
 * Finds work item `item` in sequence order: every sequence b has max(1, ceil(kv_len / chunk)) items
 * (an empty sequence one). The block scans the counts DEC_SCAN_PASS (256) sequences per pass (warp
 * shuffles, then the 8 warp sums) and stops at the pass that holds the item. Sets *sb (sequence, -1
 * when item is past the last one), *sc (chunk within it), *sn (its item count), *s0 (its first
 * item). Every thread of the block must call it; it ends with the block synchronized.
 */
__device__ __forceinline__ void locate_item(const int32_t *__restrict__ kv_indptr, const int32_t *__restrict__ last_len,
					    int ps, int batch, int chunk, int item, int *sb, int *sc, int *sn, int *s0,
					    int *warp_sum)
{
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	if (tid == 0)
		*sb = -1;
	__syncthreads();
	int carry = 0;
	for (int base = 0; base < batch; base += DEC_SCAN_PASS) {
		const int b = base + tid;
		const int cnt = tid < DEC_SCAN_PASS && b < batch
					? max(1, (kv_len_of(kv_indptr, last_len, ps, b) + chunk - 1) / chunk)
					: 0;
		int x = cnt; /* inclusive scan within the warp */
#pragma unroll
		for (int o = 1; o < 32; o <<= 1) {
			const int y = __shfl_up_sync(0xffffffffu, x, o);
			if (lane >= o)
				x += y;
		}
		if (lane == 31)
			warp_sum[warp] = x;
		__syncthreads();
		int before = carry, total = carry;
#pragma unroll
		for (int w = 0; w < ATT_WARPS; w++) {
			before += w < warp ? warp_sum[w] : 0;
			total += warp_sum[w];
		}
		const int excl = before + x - cnt;
		if (cnt > 0 && item >= excl && item < excl + cnt) {
			*sb = b;
			*sc = item - excl;
			*sn = cnt;
			*s0 = excl;
		}
		carry = total;
		__syncthreads(); /* *sb is final for this pass; warp_sum may be rewritten */
		if (*sb >= 0 || item < carry)
			break;
	}
}

#if DEC_WAVE_CHUNK
/*
 * The wave-chunk candidate's locate (batch <= DEC_SCAN_PASS: one pass of the scan covers every sequence): the
 * same scan as locate_item, for the host's chunk and twice it side by side, so the doubled chunk's total item
 * count comes out of the pass locate_item makes anyway (session 20: the separate reduction of session 19 cost
 * ~1% where the rule declines). Doubles *chunk when the doubled chunk's CTAs (items x HKV) fill one wave, between
 * 3/4 and all of `slots`; every CTA reads the same lengths, so all agree. Sets *sb, *sc, *sn, *s0 for the chunk
 * taken, as locate_item does. warp_sum: 2 x ATT_WARPS shared ints. Ends with the block synchronized.
 */
__device__ __forceinline__ void locate_item_wave(const int32_t *__restrict__ kv_indptr, const int32_t *__restrict__ last_len,
						 int ps, int batch, int *chunk, int item, int slots, int *sb, int *sc,
						 int *sn, int *s0, int *warp_sum)
{
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, ch = *chunk;
	if (tid == 0)
		*sb = -1;
	const int len = tid < batch ? kv_len_of(kv_indptr, last_len, ps, tid) : 0;
	const int c1 = tid < batch ? max(1, (len + ch - 1) / ch) : 0;
	const int c2 = tid < batch ? max(1, (len + 2 * ch - 1) / (2 * ch)) : 0;
	int x1 = c1, x2 = c2; /* inclusive scans within the warp */
#pragma unroll
	for (int o = 1; o < 32; o <<= 1) {
		const int y1 = __shfl_up_sync(0xffffffffu, x1, o), y2 = __shfl_up_sync(0xffffffffu, x2, o);
		if (lane >= o) {
			x1 += y1;
			x2 += y2;
		}
	}
	if (lane == 31) {
		warp_sum[warp] = x1;
		warp_sum[ATT_WARPS + warp] = x2;
	}
	__syncthreads();
	int before1 = 0, before2 = 0, total2 = 0;
#pragma unroll
	for (int w = 0; w < ATT_WARPS; w++) {
		before1 += w < warp ? warp_sum[w] : 0;
		before2 += w < warp ? warp_sum[ATT_WARPS + w] : 0;
		total2 += warp_sum[ATT_WARPS + w];
	}
	const long long w = (long long)total2 * HKV;
	const bool dbl = w <= slots && 4 * w >= 3LL * slots;
	const int cnt = dbl ? c2 : c1, excl = (dbl ? before2 + x2 : before1 + x1) - cnt;
	if (cnt > 0 && item >= excl && item < excl + cnt) {
		*sb = tid;
		*sc = item - excl;
		*sn = cnt;
		*s0 = excl;
	}
	__syncthreads();
	*chunk = dbl ? 2 * ch : ch;
}
#endif

/*
 * The total item count, sum over b of max(1, ceil(kv_len_b / chunk)): a block reduction (every
 * thread calls it; red: ATT_WARPS + 1 shared ints). Ends with the block synchronized.
 */
__device__ __forceinline__ int dec_total_items(const int32_t *__restrict__ kv_indptr, const int32_t *__restrict__ last_len,
					       int ps, int batch, int chunk, int *red)
{
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	int x = 0;
	for (int b = tid; b < batch; b += ATT_THREADS)
		x += max(1, (kv_len_of(kv_indptr, last_len, ps, b) + chunk - 1) / chunk);
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		x += __shfl_xor_sync(0xffffffffu, x, o);
	if (lane == 0)
		red[warp] = x;
	__syncthreads();
	int t = 0;
#pragma unroll
	for (int w = 0; w < ATT_WARPS; w++)
		t += red[w];
	__syncthreads(); /* red may be reused */
	return t;
}

/*
 * Version 2, the whole decode in one launch: CTA blockIdx.x = (item = blockIdx.x / HKV, kv head =
 * blockIdx.x % HKV); grid = an upper bound of the item count x HKV (CTAs past the last item exit).
 * A sequence with one item writes output and lse; otherwise the item's partial goes to
 * part_o[(item * HQ + h) * D + d] (normalized) and part_lse[item * HQ + h], and the CTA that brings
 * counters[b * HKV + kvh] to n merges all n partials, writes output and lse, and zeroes the counter.
 */
template <int PS>
__global__ void __launch_bounds__(ATT_THREADS, 2)
decode_fused(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k_cache,
	     const __nv_bfloat16 *__restrict__ v_cache, const int32_t *__restrict__ kv_indptr,
	     const int32_t *__restrict__ kv_indices, const int32_t *__restrict__ last_len, int ps_rt,
	     float scale_log2, int batch, int chunk, float *__restrict__ part_o, float *__restrict__ part_lse,
	     unsigned *__restrict__ counters, __nv_bfloat16 *__restrict__ out, float *__restrict__ lse DEC_EXP_PARAM
	     DEC_WAVE_PARAM)
{
	__shared__ float sm_m[ATT_WARPS][GRP], sm_l[ATT_WARPS][GRP];
#if DEC_STAGES > 0
	uint4 *ring = dec_ring();
	float(*sm_acc)[GRP][D] = (float(*)[GRP][D])ring; /* 16 KiB, written after the ring's last use */
#else
	__shared__ float sm_acc[ATT_WARPS][GRP][D];
#endif
	__shared__ int sh_loc[4 + (DEC_WAVE_CHUNK ? 2 : 1) * ATT_WARPS]; /* b, chunk, n, first item, warp sums */
	__shared__ int sh_last[1];
	const int ps = PS ? PS : ps_rt;
	const int item = blockIdx.x / HKV, kvh = blockIdx.x % HKV;
#if DEC_EXP_UNIFORM /* timing only: every sequence uni_len long, n items each */
	if (threadIdx.x == 0) {
		const int n = max(1, (uni_len + chunk - 1) / chunk);
		sh_loc[0] = item / n < batch ? item / n : -1;
		sh_loc[1] = item % n;
		sh_loc[2] = n;
		sh_loc[3] = item / n * n;
	}
	__syncthreads();
#else
#if DEC_WAVE_CHUNK
	/* the candidate: twice the chunk where that is one full wave of CTAs, decided in the locate scan; only the
	 * doubling that lands on DEC_WAVE_CHUNK from at least DEC_WAVE_MIN_CHUNK (the grid and the partials are sized
	 * for the host's chunk, an upper bound of both) */
	if (2 * chunk <= DEC_WAVE_CHUNK && chunk >= DEC_WAVE_MIN_CHUNK && batch <= DEC_SCAN_PASS)
		locate_item_wave(kv_indptr, last_len, ps, batch, &chunk, item, slots, &sh_loc[0], &sh_loc[1], &sh_loc[2],
				 &sh_loc[3], &sh_loc[4]);
	else
#endif
		locate_item(kv_indptr, last_len, ps, batch, chunk, item, &sh_loc[0], &sh_loc[1], &sh_loc[2], &sh_loc[3],
			    &sh_loc[4]);
#endif
	if (sh_loc[0] < 0)
		return;
	{
		const int b = sh_loc[0], c = sh_loc[1];
#if DEC_EXP_UNIFORM == 2
		const int kv_len = uni_len;
#define DEC_PBASE (b * ((uni_len + ps - 1) / ps))
#else
		const int kv_len = kv_len_of(kv_indptr, last_len, ps, b);
#define DEC_PBASE kv_indptr[b]
#endif
		if (kv_len == 0) { /* empty sequence: zeros and -inf, as the reference */
			for (int o = threadIdx.x; o < GRP * D; o += ATT_THREADS) {
				out[((size_t)b * HQ + kvh * GRP) * D + o] = __float2bfloat16(0.0f);
				if (o % D == 0)
					lse[(size_t)b * HQ + kvh * GRP + o / D] = -INFINITY;
			}
			return;
		}
		const int p_begin = c * chunk;
		const int p_end = min(kv_len, p_begin + chunk);
#if DEC_STAGES > 0
		attend_range_cp<PS>(q, k_cache, v_cache, kv_indices + DEC_PBASE, ps, scale_log2, b, kvh, p_begin, p_end,
				    ring, sm_m, sm_l, sm_acc);
#else
		attend_range<PS>(q, k_cache, v_cache, kv_indices + DEC_PBASE, ps, scale_log2, b, kvh, p_begin, p_end,
				 sm_m, sm_l, sm_acc);
#endif
#undef DEC_PBASE
	}
	__syncthreads();
	/* re-read after the barrier rather than kept live through the loop (register pressure) */
	const int b = sh_loc[0], n = sh_loc[2], s0 = sh_loc[3];
	__nv_bfloat16 *bo = out + ((size_t)b * HQ + kvh * GRP) * D;
	float *blse = lse + (size_t)b * HQ + kvh * GRP;
	if (n == 1) {
		combine_store(sm_m, sm_l, sm_acc, NULL, NULL, bo, blse);
		return;
	}
	const size_t prow = (size_t)item * HQ + kvh * GRP;
	combine_store(sm_m, sm_l, sm_acc, part_o + prow * D, part_lse + prow, NULL, NULL);
#if DEC_EXP_SYNC2 /* timing only: a fence and a counter round trip more (adding 0 changes nothing) */
	__threadfence();
	__syncthreads();
	if (threadIdx.x == 0)
		sh_last[0] = atomicAdd(&counters[b * HKV + kvh], 0u) == 0xffffffffu;
	__syncthreads();
#endif
	/* release: every thread's partial stores are visible device-wide before the count goes up */
	__threadfence();
	__syncthreads();
	if (threadIdx.x == 0)
		sh_last[0] = atomicAdd(&counters[b * HKV + kvh], 1u) == (unsigned)(n - 1);
	__syncthreads();
	if (!sh_last[0])
		return;
	__threadfence(); /* acquire: the other CTAs' partials (ld.cg below reads L2) */
#if DEC_EXP_MERGE2 /* timing only: the same merge once more before the real one */
	merge_partials(part_o, part_lse, [=](int c) { return s0 + c; }, n, kvh, sm_m, sm_l, sm_acc);
	__syncthreads();
#endif
	merge_partials(part_o, part_lse, [=](int c) { return s0 + c; }, n, kvh, sm_m, sm_l, sm_acc);
	__syncthreads();
	combine_store(sm_m, sm_l, sm_acc, NULL, NULL, bo, blse);
	if (threadIdx.x == 0)
		counters[b * HKV + kvh] = 0u; /* the next call (a later kernel on the stream) starts from 0 */
}

#if DEC_CLUSTER
#include "gqa_paged_decode_sm90_cluster.cuh"
#endif
#if DEC_B1
#include "gqa_paged_decode_sm90_b1.cuh"
#endif
#if DEC_B1_DYN
#include "gqa_paged_decode_sm90_b1dyn.cuh"
#endif

#if DEC_PERSIST
#include "gqa_paged_decode_sm90_persist.cuh"
/*
 * Version 4 (DEC_PERSIST): CTA blockIdx.x = (range g = blockIdx.x / HKV, kv head); the grid is
 * G x HKV (G ranges per kv head, one wave). The CTA counts all I items, takes items [g I / G',
 * (g + 1) I / G') with G' = min(G, I), and streams their segments through one cp.async ring
 * (gqa_paged_decode_sm90_persist.cuh): step s is consumed while steps s + 1 .. s + DEC_STAGES - 1
 * are in flight, across segment ends. Outputs, partials, counters as decode_fused.
 */
template <int PS>
__global__ void __launch_bounds__(ATT_THREADS, 2)
decode_persist(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k_cache,
	       const __nv_bfloat16 *__restrict__ v_cache, const int32_t *__restrict__ kv_indptr,
	       const int32_t *__restrict__ kv_indices, const int32_t *__restrict__ last_len, int ps_rt,
	       float scale_log2, int batch, int chunk, int nranges, float *__restrict__ part_o,
	       float *__restrict__ part_lse, unsigned *__restrict__ counters, __nv_bfloat16 *__restrict__ out,
	       float *__restrict__ lse)
{
	constexpr int RPT = POS_PER_STEP * (D / 8) / ATT_THREADS, BUF = 2 * POS_PER_STEP * (D / 8);
	__shared__ float sm_m[ATT_WARPS][GRP], sm_l[ATT_WARPS][GRP];
	__shared__ float sm_acc[ATT_WARPS][GRP][D]; /* not the ring's: the ring holds the next segment */
	__shared__ int sh_q[DEC_PQ][DEC_DW];        /* step descriptors */
	__shared__ int sh_cur[DEC_DW];              /* thread 0's generator cursor */
	__shared__ int sh_loc[4 + ATT_WARPS];       /* locate_item's b, chunk, n, first item, warp sums */
	__shared__ int sh_last[1];
	uint4 *ring = dec_ring();
	const int ps = PS ? PS : ps_rt;
	const int g = blockIdx.x / HKV, kvh = blockIdx.x % HKV, tid = threadIdx.x;
	const int I = dec_total_items(kv_indptr, last_len, ps, batch, chunk, &sh_loc[4]);
	const int G = min(nranges, I);
	if (g >= G)
		return;
	const int i_begin = (int)((long long)g * I / G), i_end = (int)((long long)(g + 1) * I / G);
	locate_item(kv_indptr, last_len, ps, batch, chunk, i_begin, &sh_loc[0], &sh_loc[1], &sh_loc[2], &sh_loc[3],
		    &sh_loc[4]);
	if (tid == 0) {
		sh_cur[8] = i_begin;
		sh_cur[9] = i_end;
		dec_gen_open(sh_cur, kv_indptr, last_len, ps, chunk, sh_loc[0], sh_loc[3], I, G);
		for (int s = 0; s <= DEC_STAGES; s++)
			dec_gen_emit(sh_cur, sh_q[s], kv_indptr, last_len, ps, batch, chunk, I, G);
	}
	__syncthreads();
	{ /* the first DEC_STAGES steps: every page id load first, then every copy (one latency) */
		int pg0[DEC_STAGES][RPT];
#pragma unroll
		for (int s = 0; s < DEC_STAGES; s++)
			if (sh_q[s][0] >= 0 && !(sh_q[s][4] & DEC_EMPTY))
				dec_fetch_ids(sh_q[s], kv_indices, ps, pg0[s]);
#pragma unroll
		for (int s = 0; s < DEC_STAGES; s++) {
			if (sh_q[s][0] >= 0 && !(sh_q[s][4] & DEC_EMPTY))
				dec_issue(sh_q[s], pg0[s], k_cache, v_cache, ps, kvh, ring + (size_t)s * BUF);
			cp_async_commit(); /* one group per step, empty ones too: the wait count is fixed */
		}
	}
	uint32_t qa[D / 16][2];
	float o[D / 16][4], m, l;
	mma_init(q, sh_q[0][0], kvh, qa, m, l, o);
	for (int s = 0;; s++) {
		const int *d = sh_q[s % DEC_PQ], *dn = sh_q[(s + DEC_STAGES) % DEC_PQ];
		if (d[0] < 0)
			break;
		const bool nx = dn[0] >= 0 && !(dn[4] & DEC_EMPTY);
		int pg[RPT];
		if (nx)
			dec_fetch_ids(dn, kv_indices, ps, pg);
		cp_async_wait<DEC_STAGES - 1>(); /* this thread's copies of step s have landed */
		__syncthreads();                 /* everyone's */
		uint4 *kb = ring + (size_t)(s % DEC_STAGES) * BUF;
		if (!(d[4] & DEC_EMPTY))
			mma_step(kb, d[1], d[2], scale_log2, qa, m, l, o);
		if (tid == 0)
			dec_gen_emit(sh_cur, sh_q[(s + DEC_STAGES + 1) % DEC_PQ], kv_indptr, last_len, ps, batch, chunk, I, G);
		__syncthreads(); /* buffer s % DEC_STAGES is read: refill it */
		if (nx)
			dec_issue(dn, pg, k_cache, v_cache, ps, kvh, kb);
		cp_async_commit();
		if (d[4] & DEC_LAST) { /* the segment ends: its store (and merge) overlap the copies in flight */
			dec_flush(d, kvh, I, G, m, l, o, part_o, part_lse, counters, out, lse, sm_m, sm_l, sm_acc, sh_last);
			const int bn = sh_q[(s + 1) % DEC_PQ][0];
			if (bn < 0) /* the range is done (leaving here keeps qa dead during the flush) */
				break;
			mma_init(q, bn, kvh, qa, m, l, o);
		}
	}
	cp_async_wait<0>();
}
#endif /* DEC_PERSIST */
#endif /* !DECODE_V1 */

#if DECODE_V1
struct work_item {
	int b;     /* sequence */
	int chunk; /* chunk index within the sequence */
};

/*
 * Version 1, one CTA: start[b] = chunks before sequence b (start[batch] = total), items[] = (b, chunk)
 * for every chunk in sequence order, *n_items = total. Chunks of sequence b: ceil(kv_len / chunk).
 */
__global__ void __launch_bounds__(PLAN_THREADS)
decode_plan(const int32_t *__restrict__ kv_indptr, const int32_t *__restrict__ last_len, int ps, int batch,
	    int chunk, int *__restrict__ start, work_item *__restrict__ items, int *__restrict__ n_items)
{
	__shared__ int warp_sum[PLAN_THREADS / 32];
	__shared__ int carry;
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	if (tid == 0)
		carry = 0;
	__syncthreads();
	for (int base = 0; base < batch; base += PLAN_THREADS) {
		const int b = base + tid;
		const int cnt = b < batch ? (kv_len_of(kv_indptr, last_len, ps, b) + chunk - 1) / chunk : 0;
		int x = cnt; /* inclusive warp scan */
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
			warp_sum[lane] = w; /* inclusive over warps */
		}
		__syncthreads();
		const int excl = carry + (warp ? warp_sum[warp - 1] : 0) + x - cnt;
		if (b < batch) {
			start[b] = excl;
			for (int c = 0; c < cnt; c++)
				items[excl + c] = work_item{b, c};
		}
		__syncthreads();
		if (tid == 0)
			carry += warp_sum[PLAN_THREADS / 32 - 1];
		__syncthreads();
	}
	if (tid == 0) {
		start[batch] = carry;
		*n_items = carry;
	}
}

/*
 * Version 1: one CTA per (work item = blockIdx.x / HKV, kv head = blockIdx.x % HKV); items beyond
 * *n_items exit. Writes output/lse when the sequence has one chunk, else part_o[(item * HQ + h) * D
 * + d] (normalized) and part_lse[item * HQ + h] (base 2).
 */
template <int PS>
__global__ void __launch_bounds__(ATT_THREADS, 2)
decode_attend(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k_cache,
	      const __nv_bfloat16 *__restrict__ v_cache, const int32_t *__restrict__ kv_indptr,
	      const int32_t *__restrict__ kv_indices, const int32_t *__restrict__ last_len, int ps_rt,
	      float scale_log2, int chunk, const int *__restrict__ start, const work_item *__restrict__ items,
	      const int *__restrict__ n_items, float *__restrict__ part_o, float *__restrict__ part_lse,
	      __nv_bfloat16 *__restrict__ out, float *__restrict__ lse)
{
	__shared__ float sm_m[ATT_WARPS][GRP], sm_l[ATT_WARPS][GRP];
	__shared__ float sm_acc[ATT_WARPS][GRP][D];
	const int ps = PS ? PS : ps_rt;
	const int item = blockIdx.x / HKV, kvh = blockIdx.x % HKV;
	if (item >= *n_items)
		return;
	const work_item w = items[item];
	const int b = w.b;
	const int kv_len = kv_len_of(kv_indptr, last_len, ps, b);
	const int p_begin = w.chunk * chunk;
	const int p_end = min(kv_len, p_begin + chunk);
	attend_range<PS>(q, k_cache, v_cache, kv_indices + kv_indptr[b], ps, scale_log2, b, kvh, p_begin, p_end,
			 sm_m, sm_l, sm_acc);
	__syncthreads();
	if (start[b + 1] - start[b] == 1)
		combine_store(sm_m, sm_l, sm_acc, NULL, NULL, out + ((size_t)b * HQ + kvh * GRP) * D,
			      lse + (size_t)b * HQ + kvh * GRP);
	else
		combine_store(sm_m, sm_l, sm_acc, part_o + ((size_t)item * HQ + kvh * GRP) * D,
			      part_lse + (size_t)item * HQ + kvh * GRP, NULL, NULL);
}

/*
 * Version 1: one warp per (sequence, q head) row: combines the partials of a sequence with >= 2
 * chunks; a sequence with no kv position gets zeros and lse -inf (what the reference writes); one
 * chunk: done.
 */
__global__ void __launch_bounds__(256)
decode_merge(const int *__restrict__ start, const float *__restrict__ part_o, const float *__restrict__ part_lse,
	     int batch, __nv_bfloat16 *__restrict__ out, float *__restrict__ lse)
{
	const int row = blockIdx.x * 8 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
	if (row >= batch * HQ)
		return;
	const int b = row / HQ, h = row % HQ;
	const int s0 = start[b], n = start[b + 1] - s0;
	if (n == 1)
		return;
	if (n == 0) {
		for (int d = lane; d < D; d += 32)
			out[(size_t)row * D + d] = __float2bfloat16(0.0f);
		if (lane == 0)
			lse[row] = -INFINITY;
		return;
	}
	float mx = -INFINITY;
	for (int c = 0; c < n; c++)
		mx = fmaxf(mx, part_lse[(size_t)(s0 + c) * HQ + h]);
	float wsum = 0.0f, a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
	for (int c = 0; c < n; c++) {
		const float wt = exp2f(part_lse[(size_t)(s0 + c) * HQ + h] - mx);
		wsum += wt;
		const float4 v = *(const float4 *)(part_o + ((size_t)(s0 + c) * HQ + h) * D + lane * 4);
		a[0] = fmaf(wt, v.x, a[0]);
		a[1] = fmaf(wt, v.y, a[1]);
		a[2] = fmaf(wt, v.z, a[2]);
		a[3] = fmaf(wt, v.w, a[3]);
	}
	const float inv = 1.0f / wsum;
	__nv_bfloat162 lo2 = __floats2bfloat162_rn(a[0] * inv, a[1] * inv);
	__nv_bfloat162 hi2 = __floats2bfloat162_rn(a[2] * inv, a[3] * inv);
	uint2 pk;
	pk.x = *(uint32_t *)&lo2;
	pk.y = *(uint32_t *)&hi2;
	*(uint2 *)(out + (size_t)row * D + lane * 4) = pk;
	if (lane == 0)
		lse[row] = mx + log2f(wsum);
}
#endif /* DECODE_V1 */

#include "gqa_paged_decode_sm90_host.cuh"

SF_EXPORT int run(const sf_call *call)
{
	/* ps1: q k v kv_indptr kv_indices sm_scale; ps16: ... kv_indices kv_last_page_len sm_scale */
	const int has_last = call->n_inputs == 7;
	if ((call->n_inputs != 6 && call->n_inputs != 7) || call->n_outputs != 2)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *in = call->inputs;
	const int i_scale = has_last ? 6 : 5;
	if (in[0].ndim != 3 || in[0].shape[1] != HQ || in[0].shape[2] != D || in[1].ndim != 4 ||
	    in[1].shape[2] != HKV || in[1].shape[3] != D)
		return SF_ERR_UNSUPPORTED;
	const int64_t batch64 = in[0].shape[0];
	const int64_t n_idx = in[4].shape[0];
	const int ps = (int)in[1].shape[1];
	if (batch64 < 1)
		return SF_OK;
	if (batch64 > (1 << 24) || n_idx * ps > INT32_MAX / 2)
		return SF_ERR_UNSUPPORTED;
	const int batch = (int)batch64;
	const float scale_log2 = (float)call->scalars[i_scale] * LOG2E;
	cudaStream_t stream = (cudaStream_t)call->stream;

	/* chunk: about DEC_ITEMS chunks x 8 kv heads over the whole batch (66: 4 CTAs per SM of 132,
	 * 2 waves at 2 CTAs/SM), a multiple of 64 positions, at least DEC_MIN_CHUNK */
	const int64_t total_kv_max = n_idx * ps;
#if DEC_PERSIST
	/* version 4: items of about total / (ranges x DEC_PERSIST_SPLIT) positions, any size (steps are
	 * masked), at least DEC_PERSIST_MIN_CHUNK; one wave of ranges x 8 CTAs */
	const int pkind = ps == 1 ? 0 : ps == 16 ? 1 : 2;
	if (dec_setup(pkind) != cudaSuccess)
		return SF_ERR_CUDA;
	const int64_t nranges = g_ranges[pkind];
	int64_t chunk = (total_kv_max + nranges * DEC_PERSIST_SPLIT - 1) / (nranges * DEC_PERSIST_SPLIT);
	if (chunk < DEC_PERSIST_MIN_CHUNK)
		chunk = DEC_PERSIST_MIN_CHUNK;
#else
	const int64_t items_aim = DEC_B1 && batch == 1 ? DEC_B1_ITEMS : DEC_ITEMS; /* (DEC_B1 0: DEC_ITEMS) */
	int64_t chunk = (total_kv_max + items_aim - 1) / items_aim;
	chunk = (chunk + POS_PER_STEP - 1) / POS_PER_STEP * POS_PER_STEP;
	if (chunk < DEC_MIN_CHUNK)
		chunk = DEC_MIN_CHUNK;
#endif
	/* sum over b of max(1, ceil(kv_len_b / chunk)) <= floor(total / chunk) + batch */
	const int64_t max_items = total_kv_max / chunk + batch;
	if (max_items * HKV > INT32_MAX)
		return SF_ERR_UNSUPPORTED;

	const __nv_bfloat16 *q = (const __nv_bfloat16 *)in[0].data;
	const __nv_bfloat16 *kc = (const __nv_bfloat16 *)in[1].data;
	const __nv_bfloat16 *vc = (const __nv_bfloat16 *)in[2].data;
	const int32_t *kv_indptr = (const int32_t *)in[3].data;
	const int32_t *kv_indices = (const int32_t *)in[4].data;
	const int32_t *last = has_last ? (const int32_t *)in[5].data : NULL;
	__nv_bfloat16 *out = (__nv_bfloat16 *)call->outputs[0].data;
	float *lse = (float *)call->outputs[1].data;
#if DEC_PERSIST
	const unsigned grid = (unsigned)(nranges * HKV);
#else
	const unsigned grid = (unsigned)(max_items * HKV);
#endif

#if DECODE_V1
	const size_t o_start = 0;
	const size_t o_nitems = align256(o_start + sizeof(int) * (size_t)(batch + 1));
	const size_t o_items = align256(o_nitems + sizeof(int));
	const size_t o_plse = align256(o_items + sizeof(work_item) * (size_t)max_items);
	const size_t o_po = align256(o_plse + sizeof(float) * (size_t)max_items * HQ);
	const size_t total = o_po + sizeof(float) * (size_t)max_items * HQ * D;
	char *s = (char *)scratch(total);
	if (!s)
		return SF_ERR_CUDA;
	int *start = (int *)(s + o_start);
	int *n_items = (int *)(s + o_nitems);
	work_item *items = (work_item *)(s + o_items);
	float *part_lse = (float *)(s + o_plse);
	float *part_o = (float *)(s + o_po);

	decode_plan<<<1, PLAN_THREADS, 0, stream>>>(kv_indptr, last, ps, batch, (int)chunk, start, items, n_items);
	if (ps == 1)
		decode_attend<1><<<grid, ATT_THREADS, 0, stream>>>(q, kc, vc, kv_indptr, kv_indices, last, ps, scale_log2,
								  (int)chunk, start, items, n_items, part_o, part_lse,
								  out, lse);
	else if (ps == 16)
		decode_attend<16><<<grid, ATT_THREADS, 0, stream>>>(q, kc, vc, kv_indptr, kv_indices, last, ps, scale_log2,
								   (int)chunk, start, items, n_items, part_o, part_lse,
								   out, lse);
	else
		decode_attend<0><<<grid, ATT_THREADS, 0, stream>>>(q, kc, vc, kv_indptr, kv_indices, last, ps, scale_log2,
								  (int)chunk, start, items, n_items, part_o, part_lse,
								  out, lse);
	decode_merge<<<(unsigned)((batch * HQ + 7) / 8), 256, 0, stream>>>(start, part_o, part_lse, batch, out, lse);
#else
#if DEC_CLUSTER
	cudaError_t cl_err = cudaSuccess;
	if (dec_cluster_try(q, kc, vc, kv_indptr, kv_indices, last, ps, scale_log2, batch, total_kv_max, out, lse, stream,
			    &cl_err))
		return cl_err == cudaSuccess ? SF_OK : SF_ERR_CUDA;
#endif
#if DEC_B1_DYN
	/* batch 1: C CTAs per kv head (<= DEC_B1_ITEMS), static runs of Fs steps, the rest in claimed units;
	 * partial rows <= C + units (+1: the tests' mutation writes one row off) */
	const int64_t nst = (total_kv_max + POS_PER_STEP - 1) / POS_PER_STEP;
	int64_t dyn_c = nst < DEC_B1_ITEMS ? nst : DEC_B1_ITEMS, dyn_f;
	if (dyn_c < 1)
		dyn_c = 1;
	if (nst < (int64_t)DEC_B1_DYN_MIN * dyn_c) { /* short: all static (as decode_b1) */
		dyn_f = (nst + dyn_c - 1) / dyn_c;
		if (dyn_f < 1)
			dyn_f = 1;
		dyn_c = (nst + dyn_f - 1) / dyn_f;
		if (dyn_c < 1)
			dyn_c = 1;
	} else {
		dyn_f = nst * DEC_B1_DYN_PCT / (100 * dyn_c);
		if (dyn_f < 1)
			dyn_f = 1;
	}
	const int64_t dyn_left = nst > dyn_c * dyn_f ? nst - dyn_c * dyn_f : 0;
	const int64_t dyn_rows = dyn_c + (dyn_left + DEC_B1_DYN_U - 1) / DEC_B1_DYN_U + 1;
	const int64_t p_rows = batch == 1 && dyn_rows > max_items ? dyn_rows : max_items;
	const size_t o_po = align256(sizeof(float) * (size_t)p_rows * HQ);
	char *s = (char *)scratch(o_po + sizeof(float) * (size_t)p_rows * HQ * D);
	unsigned *cnt = counters((size_t)batch * HKV + HKV, stream); /* + the claim counters */
#else
	const size_t o_po = align256(sizeof(float) * (size_t)max_items * HQ);
	char *s = (char *)scratch(o_po + sizeof(float) * (size_t)max_items * HQ * D);
	unsigned *cnt = counters((size_t)batch * HKV, stream);
#endif
	if (!s || !cnt)
		return SF_ERR_CUDA;
	float *part_lse = (float *)s;
	float *part_o = (float *)(s + o_po);
	/* the ring needs more than the default 48 KiB of dynamic shared memory: opt in once per kernel */
	const int kind = ps == 1 ? 0 : ps == 16 ? 1 : 2;
	if (dec_setup(kind) != cudaSuccess)
		return SF_ERR_CUDA;
	/* (launches written out per page size, or through a DEC_BY_KIND pointer: the CPU emulation rewrites
	 * `name<<<...>>>(` and `kernel<N><<<...>>>(` only) */
#if DEC_PERSIST
	if (kind == 0)
		decode_persist<1><<<grid, ATT_THREADS, DEC_RING_BYTES, stream>>>(q, kc, vc, kv_indptr, kv_indices, last, ps,
										 scale_log2, batch, (int)chunk, (int)nranges,
										 part_o, part_lse, cnt, out, lse);
	else if (kind == 1)
		decode_persist<16><<<grid, ATT_THREADS, DEC_RING_BYTES, stream>>>(q, kc, vc, kv_indptr, kv_indices, last, ps,
										  scale_log2, batch, (int)chunk, (int)nranges,
										  part_o, part_lse, cnt, out, lse);
	else
		decode_persist<0><<<grid, ATT_THREADS, DEC_RING_BYTES, stream>>>(q, kc, vc, kv_indptr, kv_indices, last, ps,
										 scale_log2, batch, (int)chunk, (int)nranges,
										 part_o, part_lse, cnt, out, lse);
#else
#if DEC_B1
	if (batch == 1) { /* version 3 without the locate scan (n_idx: the speculative page-id loads' bound) */
		/* the ring's depth by the chunk's steps (DEC_B1_STAGES_SHORT for short chunks, else DEC_B1_STAGES) */
		const int sh = chunk / POS_PER_STEP <= DEC_B1_SHORT_STEPS;
		if (dec_b1_setup(kind, sh) != cudaSuccess)
			return SF_ERR_CUDA;
		const int ni = (int)n_idx;
#if DEC_B1_DYN
		const auto b1dyn = DEC_BY_KIND(decode_b1dyn, kind);
		b1dyn<<<(unsigned)(dyn_c * HKV), ATT_THREADS, DEC_RING_BYTES + DEC_B1_EXTRA, stream>>>(
			q, kc, vc, kv_indptr, kv_indices, last, ps, scale_log2, (int)dyn_c, (int)dyn_f, ni, part_o, part_lse, cnt,
			out, lse);
		return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
#endif /* (decode_b1 stays referenced there, unreachable: as before) */
		const auto b1 = DEC_B1_PICK(kind, sh);
		b1<<<grid, ATT_THREADS, DEC_B1_SMEM_PICK(sh), stream>>>(q, kc, vc, kv_indptr, kv_indices, last, ps, scale_log2,
							       (int)chunk, ni, part_o, part_lse, cnt, out, lse);
		return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
	}
#endif
	if (kind == 0)
		decode_fused<1><<<grid, ATT_THREADS, DEC_RING_BYTES, stream>>>(q, kc, vc, kv_indptr, kv_indices, last, ps,
									       scale_log2, batch, (int)chunk, part_o,
									       part_lse, cnt, out, lse DEC_EXP_ARG DEC_WAVE_ARG);
	else if (kind == 1)
		decode_fused<16><<<grid, ATT_THREADS, DEC_RING_BYTES, stream>>>(q, kc, vc, kv_indptr, kv_indices, last, ps,
										scale_log2, batch, (int)chunk, part_o,
										part_lse, cnt, out, lse DEC_EXP_ARG DEC_WAVE_ARG);
	else
		decode_fused<0><<<grid, ATT_THREADS, DEC_RING_BYTES, stream>>>(q, kc, vc, kv_indptr, kv_indices, last, ps,
									       scale_log2, batch, (int)chunk, part_o,
									       part_lse, cnt, out, lse DEC_EXP_ARG DEC_WAVE_ARG);
#endif
#endif
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
