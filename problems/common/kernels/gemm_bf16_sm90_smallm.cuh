/*
 * gemm_bf16_sm90_smallm.cuh - the small-M path of gemm_bf16_sm90.cu: C[M, N] = A[M, K] . B[N, K]^T for
 * M <= 64, a weight-streaming kernel. At these M the GEMM is bound by reading B (the weight) once, so
 * every SM must keep many 16-byte loads of B in flight and nothing else may get in the way.
 *
 * Work split: a warp owns 32 rows of B (four groups of 8) and a slice of K; the 8 warps of a block own
 * the same 32 rows and consecutive K slices; blockIdx.y splits K further (split-K) when the N/32 row
 * blocks alone cannot fill the GPU. Per 32-wide K step a lane issues one 16-byte load of B per group
 * (ld.global.nc with L1::no_allocate: B is read once) and one 16-byte load of A per 16-row tile, and
 * runs mma.sync m16n8k16 (bf16 in, fp32 accumulate) twice per group and tile.
 *
 * The K permutation trick: an MMA sums over its 16 k indices in any order, so instead of the canonical
 * fragment layout (which wants 4-byte pieces), lane (g = lane/4, q = lane%4) loads the 8 contiguous
 * elements k0 + 8q .. k0 + 8q + 7 of B row g and of A rows g and g + 8, and feeds elements 0-3 to the
 * first MMA and 4-7 to the second: A and B see the same permutation of k, so the sum is unchanged.
 *
 * Reduction, deterministic: the 8 warps' fp32 partials are summed in shared memory in warp order; with
 * one K split the block writes bf16; with S > 1 each block writes its fp32 partial to scratch, and the
 * last block of a row block to arrive (a per-row-block counter) sums the S partials in split order,
 * writes bf16 and resets the counter to 0 for the next call.
 *
 * Requirements (checked by the host): K % 8 == 0, A and B 16-byte aligned, N % 2 == 0.
 */
#pragma once
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>

namespace sfgemm {

const int kSmWarps = 8;	 /* warps per block */
const int kSmGroups = 4; /* 8-row groups of B per warp: 32 rows */
const int kSmUnroll = 4; /* K steps of 32 whose loads are issued together */

__device__ __forceinline__ uint4 ld_stream16(const void *p)
{
	uint4 v;
	asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
		     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
		     : "l"(p));
	return v;
}

__device__ __forceinline__ void mma_16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
					  uint32_t b0, uint32_t b1)
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
		     "{%8, %9}, {%0, %1, %2, %3};"
		     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
		     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/*
 * One launch of the small-M GEMM. MT: 16-row tiles of A (M <= 16 * MT). Grid (ceil(N / 32), S),
 * kSmWarps * 32 threads. steps_per_warp: 32-wide K steps per warp (all warps of all splits tile
 * [0, ceil(K / 32)) in order). part: fp32 scratch [S][M][N] (unused when S == 1); cnt: one int per
 * row block, zero between calls.
 */
template <int MT>
__global__ void __launch_bounds__(kSmWarps * 32) gemm_smallm_kernel(const __nv_bfloat16 *__restrict__ A,
								    const __nv_bfloat16 *__restrict__ B,
								    __nv_bfloat16 *__restrict__ C, float *part,
								    int *cnt, int M, int N, int K, int steps_per_warp)
{
	__shared__ float red[kSmWarps][16][32 + 1]; /* one 16-row tile of the 8 warps' partials */
	__shared__ int last;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int g = lane >> 2, q = lane & 3;
	const int n_blk = blockIdx.x * 32;
	const int S = gridDim.y, s = blockIdx.y;
	const int step0 = (s * kSmWarps + warp) * steps_per_warp;
	const int k_steps = (K + 31) / 32;
	const int step_end = min(step0 + steps_per_warp, k_steps);

	float acc[MT][kSmGroups][4];
#pragma unroll
	for (int t = 0; t < MT; t++)
#pragma unroll
		for (int j = 0; j < kSmGroups; j++)
#pragma unroll
			for (int e = 0; e < 4; e++)
				acc[t][j][e] = 0.0f;

	/* row pointers of this lane (clamped to row 0 when out of range; the load is then skipped) */
	const __nv_bfloat16 *brow[kSmGroups];
	bool bok[kSmGroups];
#pragma unroll
	for (int j = 0; j < kSmGroups; j++) {
		const int n = n_blk + j * 8 + g;
		bok[j] = n < N;
		brow[j] = B + (size_t)(bok[j] ? n : 0) * K + q * 8;
	}
	const __nv_bfloat16 *arow[MT][2];
	bool aok[MT][2];
#pragma unroll
	for (int t = 0; t < MT; t++)
#pragma unroll
		for (int h = 0; h < 2; h++) {
			const int m = t * 16 + h * 8 + g;
			aok[t][h] = m < M;
			arow[t][h] = A + (size_t)(aok[t][h] ? m : 0) * K + q * 8;
		}

	for (int st = step0; st < step_end; st += kSmUnroll) {
		uint4 bv[kSmUnroll][kSmGroups];
		uint4 av[kSmUnroll][MT][2];
#pragma unroll
		for (int u = 0; u < kSmUnroll; u++) {
			const int k = (st + u) * 32 + q * 8;
			const bool kok = st + u < step_end && k < K;
#pragma unroll
			for (int j = 0; j < kSmGroups; j++)
				bv[u][j] = (kok && bok[j]) ? ld_stream16(brow[j] + (size_t)(st + u) * 32) : make_uint4(0, 0, 0, 0);
#pragma unroll
			for (int t = 0; t < MT; t++)
#pragma unroll
				for (int h = 0; h < 2; h++)
					av[u][t][h] = (kok && aok[t][h]) ? __ldg((const uint4 *)(arow[t][h] + (size_t)(st + u) * 32))
									 : make_uint4(0, 0, 0, 0);
		}
#pragma unroll
		for (int u = 0; u < kSmUnroll; u++)
#pragma unroll
			for (int t = 0; t < MT; t++)
#pragma unroll
				for (int j = 0; j < kSmGroups; j++) {
					mma_16816(acc[t][j], av[u][t][0].x, av[u][t][1].x, av[u][t][0].y, av[u][t][1].y, bv[u][j].x,
						  bv[u][j].y);
					mma_16816(acc[t][j], av[u][t][0].z, av[u][t][1].z, av[u][t][0].w, av[u][t][1].w, bv[u][j].z,
						  bv[u][j].w);
				}
	}

	/* block reduction, one 16-row tile at a time; thread i then owns (row i / 16, cols 2 (i % 16) + {0, 1}) */
	const int r_row = threadIdx.x >> 4, r_col = (threadIdx.x & 15) * 2;
	float out[MT][2];
#pragma unroll
	for (int t = 0; t < MT; t++) {
#pragma unroll
		for (int j = 0; j < kSmGroups; j++) {
			red[warp][g][j * 8 + q * 2] = acc[t][j][0];
			red[warp][g][j * 8 + q * 2 + 1] = acc[t][j][1];
			red[warp][g + 8][j * 8 + q * 2] = acc[t][j][2];
			red[warp][g + 8][j * 8 + q * 2 + 1] = acc[t][j][3];
		}
		__syncthreads();
		float s0 = 0.0f, s1 = 0.0f;
#pragma unroll
		for (int w = 0; w < kSmWarps; w++) {
			s0 += red[w][r_row][r_col];
			s1 += red[w][r_row][r_col + 1];
		}
		out[t][0] = s0;
		out[t][1] = s1;
		__syncthreads();
	}
	const int n = n_blk + r_col;
	if (S == 1) {
#pragma unroll
		for (int t = 0; t < MT; t++) {
			const int m = t * 16 + r_row;
			if (m < M && n < N)
				*(__nv_bfloat162 *)(C + (size_t)m * N + n) = __floats2bfloat162_rn(out[t][0], out[t][1]);
		}
		return;
	}
#pragma unroll
	for (int t = 0; t < MT; t++) {
		const int m = t * 16 + r_row;
		if (m < M && n < N)
			__stcg((float2 *)(part + ((size_t)s * M + m) * N + n), make_float2(out[t][0], out[t][1]));
	}
	__threadfence();
	__syncthreads();
	if (threadIdx.x == 0)
		last = atomicAdd(&cnt[blockIdx.x], 1) == S - 1;
	__syncthreads();
	if (!last)
		return;
	__threadfence();
#pragma unroll
	for (int t = 0; t < MT; t++) {
		const int m = t * 16 + r_row;
		if (m < M && n < N) {
			float s0 = 0.0f, s1 = 0.0f;
			for (int i = 0; i < S; i++) {
				const float2 v = __ldcg((const float2 *)(part + ((size_t)i * M + m) * N + n));
				s0 += v.x;
				s1 += v.y;
			}
			*(__nv_bfloat162 *)(C + (size_t)m * N + n) = __floats2bfloat162_rn(s0, s1);
		}
	}
	if (threadIdx.x == 0)
		cnt[blockIdx.x] = 0;
}

} /* namespace sfgemm */
