/*
 * gqa_paged_decode_sm90_b1.cuh - decode version 3 specialized for batch 1 (DEC_B1; the default since session 10):
 * the kernel decode_b1, which gqa_paged_decode_sm90.cu launches instead of decode_fused when the call's
 * batch is 1 (it includes this file after decode_fused and uses that file's macros, dec_ring and the
 * attend header's attend_range_cp / combine_store / merge_partials). Notes: problems/llama/DECODE_NOTES.md,
 * "Session 10".
 *
 * What it removes from decode_fused's dependent chain at batch 1 (exact: the sequence is 0, and
 * kv_indptr[0] = 0 by the definition, which is checked, not assumed):
 * - the locate scan (item = blockIdx.x / 8 is the chunk of sequence 0; its 2 barriers and its scan;
 *   session 9's "uni1" knob, -0.61 us at b1-kv4096). kv_indptr[0..1] is still loaded (kv_len: how many
 *   chunks there are, and where the last one ends).
 * - DEC_B1_IDS (1 when DEC_B1): the page ids of the ring's first ST steps are loaded at entry,
 *   addressed as if kv_indptr[0] = 0 (index clamped to kv_indices' length: always in bounds), in the
 *   same round trip as kv_indptr, instead of after it (session 9's ids2: one id round trip ~0.7 us).
 *   Once kv_indptr is in, a row is re-loaded the ordinary way (dependent) only when the guess cannot be
 *   used: kv_indptr[0] != 0, or the row is past the chunk's end (it must repeat the last valid row,
 *   as decode_fused's clamp does, so a masked row never reads an unreferenced page).
 * - DEC_B1_PF (1 when DEC_B1_IDS): an L2 prefetch of the rest of the chunk's page ids at entry, so the
 *   ring loop's per-step id loads (one step ahead of their copies) hit L2 instead of DRAM.
 * The host picks the chunk for batch 1 from DEC_B1_ITEMS (default 33) instead of DEC_ITEMS (66).
 * Everything after attend_range_cp is decode_fused's end (dec_b1_tail: partial, fence, counter, the
 * last CTA's merge), with sequence 0 and first item 0.
 *
 * Shared memory: dynamic only (the emulation rewrites __shared__ in the main file alone): the ring of ST
 * steps (DEC_RING_BYTES_OF(ST); since session 19 the host picks ST per call: DEC_B1_STAGES 2, or
 * DEC_B1_STAGES_SHORT 1 for chunks of at most DEC_B1_SHORT_STEPS 2 steps) + DEC_B1_EXTRA bytes after it for
 * sm_m, sm_l (256 B), n (the item count) and the merge flag; sm_acc aliases the ring's head after the loop,
 * as in decode_fused.
 */
#ifndef SF_DECODE_B1_CUH
#define SF_DECODE_B1_CUH
#if DEC_B1_REG
#include "gqa_paged_decode_sm90_b1reg.cuh"
#endif

#if DEC_STAGES == 0 || !DECODE_MMA || DEC_PERSIST
#error "DEC_B1 needs version 3 (the cp.async ring and DECODE_MMA) and not DEC_PERSIST"
#endif
#ifndef DEC_B1_IDS
#define DEC_B1_IDS 1 /* the first steps' page ids loaded at entry, beside kv_indptr */
#endif
#ifndef DEC_B1_PF
#define DEC_B1_PF DEC_B1_IDS /* L2 prefetch of the chunk's remaining page ids at entry */
#endif
#define DEC_B1_EXTRA 512  /* bytes after the ring: sm_m, sm_l, n, merge flag */
#define DEC_RPT (POS_PER_STEP * (D / 8) / ATT_THREADS) /* ring rows per thread per step: 4 */

/* the dynamic shared memory of decode_b1 with a ring of ST steps */
#define DEC_B1_SMEM_OF(ST) (DEC_RING_BYTES_OF(ST) + DEC_B1_EXTRA)

/* The DEC_B1_EXTRA bytes after a ring of ST steps (the emulation: a per-block array of its own). */
template <int ST = DEC_STAGES> __device__ __forceinline__ float *dec_b1_extra()
{
#ifdef SF_EMU_H
	return emu_shared<float>(1001, DEC_B1_EXTRA / 4);
#else
	return (float *)((char *)dec_ring() + DEC_RING_BYTES_OF(ST));
#endif
}

/* L2 prefetch of the 128-byte line holding p (a hint: no fault, no effect on results) */
__device__ __forceinline__ void dec_b1_prefetch(const void *p)
{
#if defined(__CUDA_ARCH__) && !defined(SF_EMU_H)
	asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
#else
	(void)p;
#endif
}

/*
 * Version 3 at batch 1: CTA blockIdx.x = (item = chunk of sequence 0, kv head); grid = an upper bound
 * of the item count x HKV (CTAs past the last chunk exit). ST: the ring's steps (dynamic shared memory
 * DEC_B1_SMEM_OF(ST); DEC_B1_REG ignores it and needs DEC_STAGES). n_idx: kv_indices' length (> 0 for the
 * speculative id loads; 0 turns them off). Outputs, partials and counters exactly as decode_fused at
 * batch 1 (partial row = item, counter 0 x HKV + kvh, merge in chunk order).
 */
template <int PS, int ST = DEC_STAGES>
__global__ void __launch_bounds__(ATT_THREADS, 2)
decode_b1(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k_cache,
	  const __nv_bfloat16 *__restrict__ v_cache, const int32_t *__restrict__ kv_indptr,
	  const int32_t *__restrict__ kv_indices, const int32_t *__restrict__ last_len, int ps_rt, float scale_log2,
	  int chunk, int n_idx, float *__restrict__ part_o, float *__restrict__ part_lse,
	  unsigned *__restrict__ counters, __nv_bfloat16 *__restrict__ out, float *__restrict__ lse)
{
	uint4 *ring = dec_ring();
	float(*sm_acc)[GRP][D] = (float(*)[GRP][D])ring; /* 16 KiB, written after the ring's last use */
	float *extra = dec_b1_extra<ST>();
	float(*sm_m)[GRP] = (float(*)[GRP])extra, (*sm_l)[GRP] = sm_m + ATT_WARPS;
	int *sh_n = (int *)(extra + 2 * ATT_WARPS * GRP), *sh_last = sh_n + 1;
	const int ps = PS ? PS : ps_rt, tid = threadIdx.x;
	const int item = blockIdx.x / HKV, kvh = blockIdx.x % HKV, p_begin = item * chunk;
#if DEC_B1_REG
	/* version 6 (DEC_B1_REG): the first steps' page ids in attend_range_reg's order, guessed as below */
	constexpr int FIRST = DEC_REG_STAGES;
	int pre[DEC_REG_STAGES][DEC_REG_IDS], ppos[DEC_REG_STAGES][DEC_REG_IDS];
#pragma unroll
	for (int s = 0; s < DEC_REG_STAGES; s++) {
		reg_positions(p_begin + s * POS_PER_STEP, ppos[s]);
#pragma unroll
		for (int x = 0; x < DEC_REG_IDS; x++)
			pre[s][x] = n_idx > 0 ? kv_indices[min(ppos[s][x] / ps, n_idx - 1)] : 0;
	}
#elif DEC_B1_IDS
	constexpr int FIRST = ST;
	const int row0 = tid / (D / 8); /* attend_range_cp's rows of this thread: row0 + 16 j */
	int pre[ST][DEC_RPT];
	/* the guess kv_indptr[0] = 0: row p of the first steps at kv_indices[p / ps] */
#pragma unroll
	for (int s = 0; s < ST; s++)
#pragma unroll
		for (int j = 0; j < DEC_RPT; j++)
			pre[s][j] = n_idx > 0 ? kv_indices[min((p_begin + s * POS_PER_STEP + row0 + 16 * j) / ps, n_idx - 1)] : 0;
#endif
#if (DEC_B1_IDS || DEC_B1_REG) && DEC_B1_PF
	if (n_idx > 0) { /* the lines of ids after the first steps, to the chunk's end: one per thread */
		const int i0 = min((p_begin + FIRST * POS_PER_STEP) / ps, n_idx);
		const int i1 = min(n_idx, (p_begin + chunk - 1) / ps + 1);
		for (uintptr_t a = ((uintptr_t)(kv_indices + i0) & ~(uintptr_t)127) + (uintptr_t)128 * tid;
		     i0 < i1 && a < (uintptr_t)(kv_indices + i1); a += (uintptr_t)128 * ATT_THREADS)
			dec_b1_prefetch((const void *)a);
	}
#endif
	const int base = kv_indptr[0];
	const int kv_len = kv_len_of(kv_indptr, last_len, ps, 0);
	const int n = max(1, (kv_len + chunk - 1) / chunk);
	if (item >= n)
		return;
	if (kv_len == 0) { /* empty sequence (n = 1, item 0): zeros and -inf, as the reference */
		for (int o = tid; o < GRP * D; o += ATT_THREADS) {
			out[(size_t)kvh * GRP * D + o] = __float2bfloat16(0.0f);
			if (o % D == 0)
				lse[kvh * GRP + o / D] = -INFINITY;
		}
		return;
	}
	if (tid == 0)
		sh_n[0] = n;
	const int p_end = min(kv_len, p_begin + chunk);
	const int32_t *pages = kv_indices + base;
#if DEC_B1_REG
#pragma unroll
	for (int s = 0; s < DEC_REG_STAGES; s++)
#pragma unroll
		for (int x = 0; x < DEC_REG_IDS; x++) /* the dependent load where the guess cannot be used (as below) */
			if (p_begin + s * POS_PER_STEP < p_end && (n_idx <= 0 || base != 0 || ppos[s][x] >= p_end))
				pre[s][x] = pages[min(ppos[s][x], p_end - 1) / ps];
	attend_range_reg<PS>(q, k_cache, v_cache, pages, ps, scale_log2, kvh, p_begin, p_end, sm_m, sm_l, sm_acc, pre);
#elif DEC_B1_IDS
#pragma unroll
	for (int s = 0; s < ST; s++)
#pragma unroll
		for (int j = 0; j < DEC_RPT; j++) {
			const int p = p_begin + s * POS_PER_STEP + row0 + 16 * j;
			/* the ordinary (dependent) load where the guess cannot be used; steps past the end are not issued */
			if (p_begin + s * POS_PER_STEP < p_end && (n_idx <= 0 || base != 0 || p >= p_end))
				pre[s][j] = pages[min(p, p_end - 1) / ps];
		}
	attend_range_cp<PS, 1, DEC_CP_L2_B1, ST>(q, k_cache, v_cache, pages, ps, scale_log2, 0, kvh, p_begin, p_end, ring, sm_m, sm_l,
			       sm_acc, pre
#if DEC_DIAG_GATHER
			       , kv_len /* the diagnostic's address variants (never in the default build) */
#endif
	);
#else
	attend_range_cp<PS, 0, DEC_CP_L2_B1, ST>(q, k_cache, v_cache, pages, ps, scale_log2, 0, kvh, p_begin, p_end, ring, sm_m, sm_l,
			    sm_acc);
#endif
	__syncthreads();
	/* decode_fused's end with sequence 0, first item 0 (n re-read: not kept live through the loop) */
	const int nn = sh_n[0];
	__nv_bfloat16 *bo = out + (size_t)kvh * GRP * D;
	float *blse = lse + kvh * GRP;
	if (nn == 1) {
		combine_store(sm_m, sm_l, sm_acc, NULL, NULL, bo, blse);
		return;
	}
	const size_t prow = (size_t)item * HQ + kvh * GRP;
	combine_store(sm_m, sm_l, sm_acc, part_o + prow * D, part_lse + prow, NULL, NULL);
	/* release: every thread's partial stores are visible device-wide before the count goes up */
	__threadfence();
	__syncthreads();
	if (tid == 0)
		sh_last[0] = atomicAdd(&counters[kvh], 1u) == (unsigned)(nn - 1);
	__syncthreads();
	if (!sh_last[0])
		return;
	__threadfence(); /* acquire: the other CTAs' partials (ld.cg reads L2) */
	merge_partials(part_o, part_lse, [=](int c) { return c; }, nn, kvh, sm_m, sm_l, sm_acc);
	__syncthreads();
	combine_store(sm_m, sm_l, sm_acc, NULL, NULL, bo, blse);
	if (tid == 0)
		counters[kvh] = 0u; /* the next call (a later kernel on the stream) starts from 0 */
}

/* the batch-1 kernel the host launches and its dynamic shared memory (DEC_B1_TMA: the bulk-copy variant) */
#if DEC_B1_TMA
#include "gqa_paged_decode_sm90_b1tma.cuh"
#define DEC_B1_K decode_b1tma
#define DEC_B1_SMEM (DEC_TMA_RING_BYTES + DEC_B1_EXTRA)
#else
#define DEC_B1_K decode_b1
#define DEC_B1_SMEM (DEC_RING_BYTES + DEC_B1_EXTRA)
#endif
#endif
