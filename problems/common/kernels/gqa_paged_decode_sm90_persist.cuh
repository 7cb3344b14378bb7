/*
 * gqa_paged_decode_sm90_persist.cuh - the device helpers of decode version 4 (-DDEC_PERSIST=1, a
 * candidate; gqa_paged_decode_sm90.cu includes this after merge_partials, and its kernel
 * decode_persist owns the shared arrays, so the CPU emulation of tests/emu can rewrite them).
 *
 * Version 4 keeps version 3's items, tensor-core step math and in-kernel merge but changes the
 * schedule: the grid is one wave (G = SMs x CTAs per SM / 8 ranges per kv head); CTA (g, kv head)
 * takes the contiguous item range [g I / G, (g + 1) I / G) of all I items in sequence order, and
 * one cp.async ring runs through the whole range: a "segment" is the part of one sequence inside the
 * range (several items of one sequence are one segment: one softmax state, no partial between
 * them), and the next segment's page ids and copies are issued while the current one ends - its
 * state store, partial, counter and possibly the merge overlap the copies in flight. Thread 0 turns
 * the range into a queue of step descriptors (DEC_PQ slots in shared memory, generated
 * DEC_STAGES + 1 steps ahead); everyone reads them.
 *
 * Descriptor (int[DEC_DW]): b (-1: the range is done), p0 (kv position of ring row 0), p_end,
 * base (kv_indptr[b]), flags (DEC_LAST: the segment's last step; DEC_EMPTY: an empty sequence, no
 * copies: its flush writes zeros and lse -inf), slot (the segment's first item: its partial's
 * row), nseg (segments of sequence b over all CTAs: 1 writes the output directly), s0 (b's first
 * item), n (b's items). The generator cursor (int[DEC_DW]) is thread 0's: b, s0, n, p, p_end, slot,
 * nseg, base, i_begin, i_end.
 */
#define DEC_PQ 8 /* descriptor slots: > DEC_STAGES + 1 */
#define DEC_DW 10
#define DEC_LAST 1
#define DEC_EMPTY 2
#if DEC_PQ < DEC_STAGES + 2
#error "DEC_PQ must exceed DEC_STAGES + 1"
#endif

/*
 * Segments of a sequence whose items are [s0, s0 + n) when I items are split into G ranges
 * [g I / G, (g + 1) I / G) (G <= I, so every range is non-empty): 1 + the number of range starts
 * strictly inside (s0, s0 + n), i.e. ceil((s0 + n) G / I) - ceil((s0 + 1) G / I) more.
 */
__device__ __forceinline__ int dec_nseg(int s0, int n, int I, int G)
{
	const long long a = ((long long)(s0 + n) * G + I - 1) / I, c = ((long long)(s0 + 1) * G + I - 1) / I;
	return 1 + (int)(a > c ? a - c : 0);
}

/* The item of segment k of a sequence whose first item is s0 (k = 0: s0; k >= 1: the start of range
 * g1 + k - 1, g1 the first range starting after s0). */
__device__ __forceinline__ int dec_seg_slot(int s0, int k, int I, int G)
{
	if (k == 0)
		return s0;
	const long long g1 = ((long long)(s0 + 1) * G + I - 1) / I;
	return (int)((g1 + k - 1) * I / G);
}

/* Thread 0: points the cursor at sequence b, whose first item is s0 (the range is cur[8] .. cur[9]). */
__device__ __forceinline__ void dec_gen_open(int *cur, const int32_t *__restrict__ kv_indptr,
					     const int32_t *__restrict__ last_len, int ps, int chunk, int b, int s0, int I,
					     int G)
{
	const int kv_len = kv_len_of(kv_indptr, last_len, ps, b);
	const int n = max(1, (kv_len + chunk - 1) / chunk);
	const int c0 = max(0, cur[8] - s0), c1 = min(n, cur[9] - s0);
	cur[0] = b;
	cur[1] = s0;
	cur[2] = n;
	cur[3] = c0 * chunk;
	cur[4] = min(kv_len, c1 * chunk); /* 0 for an empty sequence */
	cur[5] = s0 + c0;
	cur[6] = dec_nseg(s0, n, I, G);
	cur[7] = kv_indptr[b];
}

/* Thread 0: writes the cursor's next step into desc and advances (to the next sequence of the range
 * after a segment's last step; b = -1 once the range is done). */
__device__ __forceinline__ void dec_gen_emit(int *cur, int *desc, const int32_t *__restrict__ kv_indptr,
					     const int32_t *__restrict__ last_len, int ps, int batch, int chunk, int I, int G)
{
	if (cur[0] < 0) {
		desc[0] = -1;
		return;
	}
	const int p = cur[3], p_end = cur[4];
	const bool empty = p_end <= p, last = empty || p + POS_PER_STEP >= p_end;
	desc[0] = cur[0];
	desc[1] = p;
	desc[2] = p_end;
	desc[3] = cur[7];
	desc[4] = (last ? DEC_LAST : 0) | (empty ? DEC_EMPTY : 0);
	desc[5] = cur[5];
	desc[6] = cur[6];
	desc[7] = cur[1];
	desc[8] = cur[2];
	if (!last) {
		cur[3] = p + POS_PER_STEP;
		return;
	}
	const int s0n = cur[1] + cur[2];
	if (s0n >= cur[9] || cur[0] + 1 >= batch)
		cur[0] = -1;
	else
		dec_gen_open(cur, kv_indptr, last_len, ps, chunk, cur[0] + 1, s0n, I, G);
}

/* This thread's page ids of the rows of step desc (rows tid / 16 + 16 j, clamped to p_end - 1). */
__device__ __forceinline__ void dec_fetch_ids(const int *desc, const int32_t *__restrict__ kv_indices, int ps,
					      int ids[POS_PER_STEP * (D / 8) / ATT_THREADS])
{
	constexpr int RPT = POS_PER_STEP * (D / 8) / ATT_THREADS;
	const int row0 = threadIdx.x / (D / 8), p0 = desc[1], p_end = desc[2];
	const int32_t *pages = kv_indices + desc[3];
#pragma unroll
	for (int j = 0; j < RPT; j++)
		ids[j] = pages[min(p0 + row0 + 16 * j, p_end - 1) / ps];
}

/* Copies the K and V rows of step desc into ring buffer kb (swizzled as version 3 reads them). */
__device__ __forceinline__ void dec_issue(const int *desc, const int ids[POS_PER_STEP * (D / 8) / ATT_THREADS],
					  const __nv_bfloat16 *__restrict__ k_cache,
					  const __nv_bfloat16 *__restrict__ v_cache, int ps, int kvh, uint4 *kb)
{
	constexpr int ROWS = POS_PER_STEP, COLS = D / 8, RPT = ROWS * COLS / ATT_THREADS;
	const int col = threadIdx.x % COLS, row0 = threadIdx.x / COLS, p0 = desc[1], p_end = desc[2];
#pragma unroll
	for (int j = 0; j < RPT; j++) {
		const int r = row0 + 16 * j;
		const int p = min(p0 + r, p_end - 1);
		const size_t off = (((size_t)ids[j] * ps + p % ps) * HKV + kvh) * D + col * 8;
		cp_async16(kb + r * COLS + (col ^ (r & 7)), k_cache + off);
		cp_async16(kb + (ROWS + r) * COLS + (col ^ (r & 7)), v_cache + off);
	}
}

/*
 * Ends segment desc of kv head kvh (every thread calls it): an empty sequence gets zeros and lse
 * -inf; otherwise the warps' states (m, l, o) are combined, and a sequence with one segment writes
 * output and lse, else the segment's partial goes to its slot and the CTA that brings the (sequence,
 * kv head) counter to nseg merges the nseg partials in segment order (deterministic), writes the
 * output and zeroes the counter - as decode_fused does for its items. I, G: the split of the items.
 */
__device__ __forceinline__ void dec_flush(const int *desc, int kvh, int I, int G, float m, float l,
					  const float o[D / 16][4], float *__restrict__ part_o,
					  float *__restrict__ part_lse, unsigned *__restrict__ counters,
					  __nv_bfloat16 *__restrict__ out, float *__restrict__ lse, float (*sm_m)[GRP],
					  float (*sm_l)[GRP], float (*sm_acc)[GRP][D], int *sh_last)
{
	const int b = desc[0];
	__nv_bfloat16 *bo = out + ((size_t)b * HQ + kvh * GRP) * D;
	float *blse = lse + (size_t)b * HQ + kvh * GRP;
	if (desc[4] & DEC_EMPTY) {
		for (int x = threadIdx.x; x < GRP * D; x += ATT_THREADS) {
			bo[x] = __float2bfloat16(0.0f);
			if (x % D == 0)
				blse[x / D] = -INFINITY;
		}
		return;
	}
	mma_state_store(m, l, o, sm_m, sm_l, sm_acc);
	__syncthreads();
	const int nseg = desc[6];
	if (nseg == 1) {
		combine_store(sm_m, sm_l, sm_acc, NULL, NULL, bo, blse);
		return;
	}
	const size_t prow = (size_t)desc[5] * HQ + kvh * GRP;
	combine_store(sm_m, sm_l, sm_acc, part_o + prow * D, part_lse + prow, NULL, NULL);
	__threadfence(); /* release: the partial is visible device-wide before the count goes up */
	__syncthreads();
	if (threadIdx.x == 0)
		sh_last[0] = atomicAdd(&counters[b * HKV + kvh], 1u) == (unsigned)(nseg - 1);
	__syncthreads();
	if (!sh_last[0])
		return;
	__threadfence(); /* acquire */
	const int s0 = desc[7];
	merge_partials(part_o, part_lse, [=](int k) { return dec_seg_slot(s0, k, I, G); }, nseg, kvh, sm_m, sm_l,
		       sm_acc);
	__syncthreads();
	combine_store(sm_m, sm_l, sm_acc, NULL, NULL, bo, blse);
	if (threadIdx.x == 0)
		counters[b * HKV + kvh] = 0u;
}
