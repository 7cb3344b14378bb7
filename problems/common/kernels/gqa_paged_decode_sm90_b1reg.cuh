/*
 * gqa_paged_decode_sm90_b1reg.cuh - decode version 6 candidate (-DDEC_B1_REG=1; session 17): decode_b1's attend loop
 * with K and V streamed straight into registers (ld.global.nc) instead of through the cp.async ring. Included by
 * gqa_paged_decode_sm90_b1.cuh (before decode_b1, which calls attend_range_reg at batch 1 when DEC_B1_REG is set);
 * uses the main file's macros, the attend header's ldg_nc and the mma header's primitives. Notes:
 * problems/llama/DECODE_NOTES_B1.md, "Version 6".
 *
 * Why (session 17's gather diagnostic): the same rows, grid and bytes in flight moved into registers (diagnostic 5)
 * took 42.5 us at b1-kv32768 where the ring took 47.2 (both without the math); the ring's barriers cost nothing
 * (diagnostic 6). The math is mma_step's (S = Q.K^T, online softmax, O^T += V^T.P^T on m16n8k16, the same
 * fragment roles, the same softmax code), fed from registers:
 *   warp w takes positions p0 + 8w .. + 7 of each 64-position CTA step (as mma_step's ring rows);
 *   K: lane 4g + t loads row g's 16-B chunks 4i + t (i < 4; a warp instruction reads 64 contiguous bytes of each
 *      of 8 rows). For k-step kk (i = kk / 2, half = kk % 2) its B fragment is words 2 half, 2 half + 1 of chunk
 *      4i + t: logical k 2t, 2t + 1 are physical dims 8 (4i + t) + 4 half + 0, 1 and k 2t + 8, 2t + 9 the next two.
 *      Q's A fragment (mma_init_reg) is permuted the same way, so S is exact (a sum over dims in another order).
 *   V: lane 4g + t loads positions 2t and 2t + 1, chunks g and g + 8 of each (a warp instruction: 8 consecutive
 *      chunks = 128 bytes of 4 rows). M-tile j (chunk slot c = j / 4, word w = j % 4) takes logical dim rows g, g + 8
 *      = physical dims d0 = 8 (g + 8c) + 2w and d0 + 1; its A fragment (V^T) a0 = (V[2t][d0], V[2t + 1][d0]) and
 *      a1 = (V[2t][d0 + 1], V[2t + 1][d0 + 1]) are two prmt of the two positions' word w. The state store maps the
 *      accumulators back to those dims.
 * Rows past p_end are clamped to p_end - 1 (finite, referenced) and masked in S, as the ring does. DEC_REG_STAGES
 * (2) steps are in flight per lane: 2 x 8 x 16 B in registers (64 KiB per CTA, 128 KiB per SM at 2 CTAs/SM).
 * Q's fragments (16 words per lane) live in shared memory, one copy per warp (registers: 2 x 32 for the buffers,
 * 32 accumulators; with Q in registers ptxas spilled 88 bytes at the 128-register cap of 2 CTAs/SM).
 * Page ids: 3 per lane per step (K row g, V rows 2t, 2t + 1); those of step s + STAGES are loaded one step before
 * their rows are issued; decode_b1 supplies the first STAGES steps' ids (pre), loaded at entry as it does for the ring.
 */
#ifndef SF_DECODE_B1REG_CUH
#define SF_DECODE_B1REG_CUH

#ifndef DEC_REG_STAGES
#define DEC_REG_STAGES 2 /* steps whose K / V loads are in flight per lane (each 8 x 16 B of registers) */
#endif
#if DEC_REG_STAGES != 2
#error "DEC_REG_STAGES: the loop is written for 2 register buffers"
#endif
#define DEC_REG_IDS 3 /* page ids per lane per step: K row g, V rows 2t and 2t + 1 */
#define DEC_REG_QS_OFF 32768 /* the per-warp Q fragments' byte offset in the ring (8 x 2 KiB; sm_acc holds the first 16 KiB) */
static_assert(DEC_REG_QS_OFF + ATT_WARPS * (D / 16) * 32 * 8 <= DEC_RING_BYTES && DEC_REG_QS_OFF >= ATT_WARPS * GRP * D * 4,
	      "DEC_REG_QS_OFF: the Q fragments must lie in the ring, past sm_acc");

/* the kv positions whose page ids lane 4g + t needs at the step starting at p0 (unclamped) */
__device__ __forceinline__ void reg_positions(int p0, int pos[DEC_REG_IDS])
{
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
	const int w0 = p0 + warp * 8;
	pos[0] = w0 + g;
	pos[1] = w0 + 2 * t;
	pos[2] = w0 + 2 * t + 1;
}

/* byte permute (prmt.b32): result byte i = byte (sel >> 4i) & 7 of {y, x} (x bytes 0-3, y bytes 4-7) */
__device__ __forceinline__ uint32_t dec_prmt(uint32_t x, uint32_t y, uint32_t sel)
{
#if defined(__CUDA_ARCH__) && !defined(SF_EMU_H)
	uint32_t r;
	asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(sel));
	return r;
#else
	const uint64_t v = (uint64_t)x | ((uint64_t)y << 32);
	uint32_t r = 0u;
	for (int i = 0; i < 4; i++)
		r |= (uint32_t)((v >> (8 * ((sel >> (4 * i)) & 7u))) & 0xffu) << (8 * i);
	return r;
#endif
}

__device__ __forceinline__ uint32_t u4_word(const uint4 &u, int w)
{
	return w == 0 ? u.x : w == 1 ? u.y : w == 2 ? u.z : u.w;
}

/* Q fragments of kv head kvh's 4 heads in the K layout's dim order (above): qa[kk] = {a[0], a[2]} of k-step kk for
 * head g = lane / 4 < 4, zero for lanes 16..31; clears the softmax state (as mma_init). */
__device__ __forceinline__ void mma_init_reg(const __nv_bfloat16 *__restrict__ q, int b, int kvh, uint32_t qa[D / 16][2],
					     float &m, float &l, float o[D / 16][4])
{
	const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
	for (int kk = 0; kk < D / 16; kk++) {
		const int word = 4 * (4 * (kk >> 1) + t) + 2 * (kk & 1); /* dims 2 word, 2 word + 1 */
		if (g < GRP) {
			const uint32_t *row = (const uint32_t *)(q + ((size_t)b * HQ + kvh * GRP + g) * D);
			qa[kk][0] = row[word];
			qa[kk][1] = row[word + 1];
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

/* Issues the loads of the step starting at p0: kr = K row g's chunks 4i + t, vr[2s + h] = V row 2t + s's chunk
 * g + 8h; ids = the page ids of reg_positions' three positions (clamped to p_end - 1, as they are here). */
template <int PS>
__device__ __forceinline__ void reg_issue(uint4 kr[4], uint4 vr[4], const __nv_bfloat16 *__restrict__ k_cache,
					  const __nv_bfloat16 *__restrict__ v_cache, const int ids[DEC_REG_IDS], int p0,
					  int p_end, int ps_rt, int kvh)
{
	const int ps = PS ? PS : ps_rt, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
	int pos[DEC_REG_IDS];
	reg_positions(p0, pos);
	const int pk = min(pos[0], p_end - 1);
	const size_t ok = (((size_t)ids[0] * ps + pk % ps) * HKV + kvh) * D;
#pragma unroll
	for (int i = 0; i < 4; i++)
		kr[i] = ldg_nc<DEC_CP_L2_B1>(k_cache + ok + (4 * i + t) * 8);
#pragma unroll
	for (int s = 0; s < 2; s++) {
		const int pv = min(pos[1 + s], p_end - 1);
		const size_t ov = (((size_t)ids[1 + s] * ps + pv % ps) * HKV + kvh) * D;
#pragma unroll
		for (int h = 0; h < 2; h++)
			vr[2 * s + h] = ldg_nc<DEC_CP_L2_B1>(v_cache + ov + (g + 8 * h) * 8);
	}
}

/* the page ids of the step starting at p0 (positions clamped to p_end - 1) */
__device__ __forceinline__ void reg_fetch_ids(int ids[DEC_REG_IDS], const int32_t *__restrict__ pages, int ps, int p0,
					      int p_end)
{
	int pos[DEC_REG_IDS];
	reg_positions(p0, pos);
#pragma unroll
	for (int x = 0; x < DEC_REG_IDS; x++)
		ids[x] = pages[min(pos[x], p_end - 1) / ps];
}

/* mma_step on the registers of one step (positions p0 + 8 warp ..): the same m, l, o contract, o's dims permuted
 * as the V layout above says (mma_state_store with RegDims maps them back). */
__device__ __forceinline__ void mma_step_reg(const uint4 kr[4], const uint4 vr[4], int p0, int p_end, float scale_log2,
					     const uint2 *qs, float &m, float &l, float o[D / 16][4])
{
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, t = lane & 3;
	float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
	for (int kk = 0; kk < D / 16; kk++) {
		const uint4 &c = kr[kk >> 1];
		const uint2 qk = qs[kk * 32 + lane]; /* the lane's Q fragment of k-step kk (shared memory: registers are full) */
		const uint32_t a[4] = {qk.x, 0u, qk.y, 0u};
		const uint32_t bk[2] = {(kk & 1) ? c.z : c.x, (kk & 1) ? c.w : c.y};
		mma_bf16_16816(s, a, bk, s);
	}
	uint32_t bp[2];
	float c0, c1;
	mma_softmax(s, p0 + warp * 8 + 2 * t, p_end, scale_log2, m, l, bp, c0, c1);
#pragma unroll
	for (int j = 0; j < D / 16; j++) {
		const uint32_t x = u4_word(vr[j >> 2], j & 3), y = u4_word(vr[2 + (j >> 2)], j & 3);
		const uint32_t av[4] = {dec_prmt(x, y, 0x5410u), dec_prmt(x, y, 0x7632u), 0u, 0u};
		float(&oj)[4] = o[j];
		oj[0] *= c0;
		oj[1] *= c1;
		oj[2] *= c0;
		oj[3] *= c1;
		mma_bf16_16816(oj, av, bp, oj);
	}
}

/* the dims of accumulator tile j's rows g, g + 8 in the V layout above (for mma_state_store) */
struct RegDims {
	__device__ __forceinline__ void operator()(int j, int g, int &d0, int &d1) const
	{
		d0 = 8 * (g + 8 * (j >> 2)) + 2 * (j & 3);
		d1 = d0 + 1;
	}
};

/*
 * attend_range_cp's contract (batch 1: sequence 0) with the register stream: the 4 heads of kv head kvh over
 * positions [p_begin, p_end), each warp's state in sm_m / sm_l / sm_acc[warp] at the end (the caller synchronizes
 * before reading them). pre[s] = the page ids of step s < DEC_REG_STAGES (reg_positions' order).
 */
template <int PS>
__device__ __forceinline__ void attend_range_reg(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k_cache,
						 const __nv_bfloat16 *__restrict__ v_cache, const int32_t *__restrict__ pages,
						 int ps_rt, float scale_log2, int kvh, int p_begin, int p_end,
						 float (*sm_m)[GRP], float (*sm_l)[GRP], float (*sm_acc)[GRP][D],
						 const int (*pre)[DEC_REG_IDS])
{
	const int ps = PS ? PS : ps_rt, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int nsteps = (p_end - p_begin + POS_PER_STEP - 1) / POS_PER_STEP;
	float o[D / 16][4], m, l;
	/* the Q fragments, one copy per warp, in the ring past sm_acc's 16 KiB (the ring is not used here) */
	uint2 *qs = (uint2 *)((char *)dec_ring() + DEC_REG_QS_OFF) + (size_t)warp * (D / 16) * 32;
	{
		uint32_t qa[D / 16][2];
		mma_init_reg(q, 0, kvh, qa, m, l, o);
#pragma unroll
		for (int kk = 0; kk < D / 16; kk++)
			qs[kk * 32 + lane] = uint2{qa[kk][0], qa[kk][1]};
		__syncthreads(); /* (a warp reads only its own copy; the emulation has no __syncwarp) */
	}
	uint4 kr[DEC_REG_STAGES][4], vr[DEC_REG_STAGES][4];
	int nxt[DEC_REG_IDS]; /* the ids of step s + STAGES, loaded during step s - 1 */
#pragma unroll
	for (int k = 0; k < DEC_REG_STAGES; k++)
		if (k < nsteps)
			reg_issue<PS>(kr[k], vr[k], k_cache, v_cache, pre[k], p_begin + k * POS_PER_STEP, p_end, ps, kvh);
	if (DEC_REG_STAGES < nsteps)
		reg_fetch_ids(nxt, pages, ps, p_begin + DEC_REG_STAGES * POS_PER_STEP, p_end);
	for (int s0 = 0; s0 < nsteps; s0 += DEC_REG_STAGES) {
#pragma unroll
		for (int k = 0; k < DEC_REG_STAGES; k++) { /* step s = s0 + k lives in buffer k (a constant index) */
			const int s = s0 + k;
			if (s < nsteps) {
				mma_step_reg(kr[k], vr[k], p_begin + s * POS_PER_STEP, p_end, scale_log2, qs, m, l, o);
				if (s + DEC_REG_STAGES < nsteps) {
					int ids[DEC_REG_IDS];
#pragma unroll
					for (int x = 0; x < DEC_REG_IDS; x++)
						ids[x] = nxt[x];
					if (s + DEC_REG_STAGES + 1 < nsteps)
						reg_fetch_ids(nxt, pages, ps, p_begin + (s + DEC_REG_STAGES + 1) * POS_PER_STEP, p_end);
					reg_issue<PS>(kr[k], vr[k], k_cache, v_cache, ids, p_begin + (s + DEC_REG_STAGES) * POS_PER_STEP,
						      p_end, ps, kvh);
				}
			}
		}
	}
	mma_state_store(m, l, o, sm_m, sm_l, sm_acc, RegDims());
}
#endif
