/*
 * gqa_paged_decode_sm90_mma.cuh - decode version 3 (-DDECODE_MMA=1): the per-warp math of
 * attend_range_cp (gqa_paged_decode_sm90_attend.cuh) on tensor cores. Included by
 * gqa_paged_decode_sm90.cu before the attend header; no includes of its own beyond the primitives.
 *
 * A CTA step is 64 ring rows (positions); warp w takes rows 8w .. 8w+7. Per step and warp:
 *   S = Q . K^T     8 x mma m16n8k16 (k over the 128 dims): A = Q, rows 0..3 = the 4 heads of the
 *                   GQA group, rows 4..15 zero (fragments built once from global memory, bf16
 *                   unscaled); B = the 8 K rows by 4 x ldmatrix.x4 (K is [position][dim]: the "col"
 *                   B operand as stored). Lane 4g + t gets head g (g < 4), positions 2t, 2t+1.
 *   softmax         scores scaled by sm_scale * log2 e in fp32, positions >= p_end masked, running
 *                   max over the quad (2 xor shuffles), base-2 online update. P rounded to bf16 is
 *                   exactly the lane's B fragment b[0] of P^T (head g = column, positions 2t, 2t+1).
 *   O^T += V^T P^T  8 x mma m16n8k16 (m over the 128 dims in tiles of 16, n = 8 heads of which
 *                   0..3 are real, k = 16 positions of which the warp's 8 are the first half: b[1]
 *                   = 0 and a[2], a[3] = 0); A = V^T by 4 x ldmatrix.x4.trans of the 8 V rows.
 *                   The accumulators are 8 x 4 fp32 in place; lane 4g + t holds heads 2t, 2t+1
 *                   (real for t < 2), so the rescale takes those heads' corrections by 2 shuffles.
 * The ring rows are stored swizzled (16-byte chunk c of row r at c ^ (r % 8)) so that the 8 rows of
 * one ldmatrix phase hit 8 different bank groups; attend_range_cp writes them that way under
 * DECODE_MMA. Per warp-step (8 positions): 8 ldmatrix, 16 mma, 4 shuffles, 5 exp2, 32 FMUL of the
 * rescale and ~30 more: ~100 instructions, against version 2's ~550 (FMAs and shuffles).
 */
#ifndef SF_DECODE_MMA_CUH
#define SF_DECODE_MMA_CUH
#include "sm80_warp_mma.cuh"

/* Q fragments of the GQA group of kv head kvh: qa[kk] = {a[0], a[2]} of k-step kk (dims 16 kk ..),
 * head = lane / 4 for lanes < 16, zero for the rest (rows 4..7); clears the softmax state. */
__device__ __forceinline__ void mma_init(const __nv_bfloat16 *__restrict__ q, int b, int kvh, uint32_t qa[D / 16][2],
					 float &m, float &l, float o[D / 16][4])
{
	const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
	for (int kk = 0; kk < D / 16; kk++) {
		if (g < GRP) {
			const uint32_t *row = (const uint32_t *)(q + ((size_t)b * HQ + kvh * GRP + g) * D + 16 * kk);
			qa[kk][0] = row[t];
			qa[kk][1] = row[4 + t];
		} else {
			qa[kk][0] = 0u;
			qa[kk][1] = 0u;
		}
	}
	m = -INFINITY;
	l = 0.0f;
#pragma unroll
	for (int j = 0; j < D / 16; j++)
		o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
}

/*
 * The online softmax of one warp-step (mma_step and the register loop's mma_step_reg): s = the S fragment (head
 * g = lane / 4, positions p, p + 1 of the step, p = its first position of this lane's pair), positions >= p_end
 * masked; updates m, l as mma_step says; OUT: bp = P^T's B fragment (b[0] head g, positions 2t, 2t + 1; b[1] = 0),
 * c0 / c1 = the corrections of heads 2t, 2t + 1 (the accumulator columns), for the caller's rescale.
 */
__device__ __forceinline__ void mma_softmax(const float s[4], int p, int p_end, float scale_log2, float &m, float &l,
					    uint32_t bp[2], float &c0, float &c1)
{
	const int t = threadIdx.x & 3;
	const float s0 = p < p_end ? s[0] * scale_log2 : -INFINITY;
	const float s1 = p + 1 < p_end ? s[1] * scale_log2 : -INFINITY;
	float mx = fmaxf(s0, s1);
	mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
	mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
	mx = fmaxf(m, mx);
	/* mx = -inf only when nothing was valid yet: then corr and the weights are 0 */
	const float mu = mx == -INFINITY ? 0.0f : mx;
	const float corr = exp2f(m - mu);
	m = mx;
	/* P^T's B fragment b[0]: head g, positions 2t, 2t + 1 (b[1], positions 8..15, is 0) */
	const float w0 = exp2f(s0 - mu), w1 = exp2f(s1 - mu);
	bp[0] = pack_bf16x2(w0, w1);
	bp[1] = 0u;
	/* the sum takes the fp32 weights (the lse must be within 1e-4: the bf16-rounded ones, which the
	 * PV product uses, were off by up to 2e-4 in the emulation; the output's bias is ~1e-3) */
	l = l * corr + (w0 + w1);
	/* the accumulator columns are heads 2t, 2t + 1: their corrections live in lanes 8t and 8t + 4 */
	c0 = __shfl_sync(0xffffffffu, corr, 8 * t);
	c1 = __shfl_sync(0xffffffffu, corr, 8 * t + 4);
}

/*
 * One CTA step for this warp: kb = the ring buffer of the step (64 K rows, then 64 V rows, 16
 * swizzled 16-byte chunks each); pos0 = the kv position of ring row 0. Updates m (running max of
 * head g = lane / 4, base 2, quad-uniform), l (this lane's partial sum of its positions' weights)
 * and o (tile j: o[j][0], o[j][1] = heads 2t, 2t + 1 at dim 16j + g; o[j][2], o[j][3] the same at
 * dim 16j + g + 8; meaningful for t < 2). Every lane of the warp must call it.
 * RS: the ring's row pitch in 16-byte chunks; SWZ: rows stored swizzled as above (the defaults, 16 and 1, are
 * attend_range_cp's layout; decode_b1tma's bulk copies cannot swizzle and pad the rows instead: 17 and 0).
 */
template <int RS = D / 8, int SWZ = 1>
__device__ __forceinline__ void mma_step(const uint4 *kb, int pos0, int p_end, float scale_log2,
					 const uint32_t qa[D / 16][2], float &m, float &l, float o[D / 16][4])
{
	constexpr int ROWS = POS_PER_STEP;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, t = lane & 3;
	const int r = warp * 8 + (lane & 7); /* the ring row this lane addresses for ldmatrix */
	const int sw = lane & 7;             /* = r % 8 */
	float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
	for (int x = 0; x < D / 32; x++) { /* dims 32x .. 32x + 31: two k-steps */
		uint32_t kf[4];
		ldsm<4, false>(kf, kb + r * RS + (SWZ ? (4 * x + (lane >> 3)) ^ sw : 4 * x + (lane >> 3)));
		const uint32_t a0[4] = {qa[2 * x][0], 0u, qa[2 * x][1], 0u};
		const uint32_t b0[2] = {kf[0], kf[1]};
		mma_bf16_16816(s, a0, b0, s);
		const uint32_t a1[4] = {qa[2 * x + 1][0], 0u, qa[2 * x + 1][1], 0u};
		const uint32_t b1[2] = {kf[2], kf[3]};
		mma_bf16_16816(s, a1, b1, s);
	}
	uint32_t bp[2];
	float c0, c1;
	mma_softmax(s, pos0 + warp * 8 + 2 * t, p_end, scale_log2, m, l, bp, c0, c1);
	const uint4 *vb = kb + ROWS * RS;
#pragma unroll
	for (int x = 0; x < D / 32; x++) { /* dims 32x .. 32x + 31: two m-tiles of 16 dims */
		uint32_t vf[4]; /* V^T fragments a[0], a[1] of tile 2x, then of tile 2x + 1 */
		ldsm<4, true>(vf, vb + r * RS + (SWZ ? (4 * x + (lane >> 3)) ^ sw : 4 * x + (lane >> 3)));
#pragma unroll
		for (int i = 0; i < 2; i++) {
			float(&oj)[4] = o[2 * x + i];
			oj[0] *= c0;
			oj[1] *= c1;
			oj[2] *= c0;
			oj[3] *= c1;
			const uint32_t av[4] = {vf[2 * i], vf[2 * i + 1], 0u, 0u};
			mma_bf16_16816(oj, av, bp, oj);
		}
	}
}

/* Ends the loop: sums l over the quad and stores the warp's state in sm_m / sm_l / sm_acc[warp] as
 * warp_state_store does (m, l from lanes 4h of heads h < 4; o from the lanes t < 2; tile j's rows at the dims
 * DIMS names: mma_step's layout by default). Every lane of the warp must call it. */
/* the dims of accumulator tile j's rows g (d0) and g + 8 (d1) in mma_step's layout */
struct MmaDims {
	__device__ __forceinline__ void operator()(int j, int g, int &d0, int &d1) const
	{
		d0 = 16 * j + g;
		d1 = d0 + 8;
	}
};
template <class DIMS = MmaDims>
__device__ __forceinline__ void mma_state_store(float m, float l, const float o[D / 16][4], float (*sm_m)[GRP],
						float (*sm_l)[GRP], float (*sm_acc)[GRP][D], DIMS dims = DIMS())
{
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
	l += __shfl_xor_sync(0xffffffffu, l, 1);
	l += __shfl_xor_sync(0xffffffffu, l, 2);
	if (t < 2) {
#pragma unroll
		for (int j = 0; j < D / 16; j++) {
			int d0, d1;
			dims(j, g, d0, d1);
			sm_acc[warp][2 * t][d0] = o[j][0];
			sm_acc[warp][2 * t + 1][d0] = o[j][1];
			sm_acc[warp][2 * t][d1] = o[j][2];
			sm_acc[warp][2 * t + 1][d1] = o[j][3];
		}
	}
	if (t == 0 && g < GRP) {
		sm_m[warp][g] = m;
		sm_l[warp][g] = l;
	}
}
#endif
