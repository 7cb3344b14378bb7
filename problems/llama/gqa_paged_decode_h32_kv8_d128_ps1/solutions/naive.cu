/*
 * naive.cu - a first, untuned solution of gqa_paged_decode_h32_kv8_d128_ps1.
 *
 * One thread block per (sequence, query head) row, 128 threads (one per head dimension). The block
 * walks the sequence's kv positions (0 .. kv_len - 1) in tiles of 32: each warp scores a share of the
 * tile's positions (lane-strided dot product, shuffle reduction), then every thread folds the tile
 * into an online softmax for its own output dimension. fp32 throughout; output rounded to bf16 once
 * at the end; lse = log2 of the sum of exp(scores).
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>
#include "solforge/solution.h"

#define NUM_QO_HEADS 32
#define NUM_KV_HEADS 8
#define GROUP (NUM_QO_HEADS / NUM_KV_HEADS)
#define HEAD_DIM 128
#define THREADS HEAD_DIM      /* one thread per output dimension */
#define WARPS (THREADS / 32)
#define TILE 32               /* kv positions scored per step */

enum { IN_Q, IN_K, IN_V, IN_KV_INDPTR, IN_KV_INDICES, IN_SM_SCALE, N_IN };
enum { OUT_OUTPUT, OUT_LSE, N_OUT };

__global__ void __launch_bounds__(THREADS)
gqa_paged_decode_naive(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k_cache,
		       const __nv_bfloat16 *__restrict__ v_cache, const int32_t *__restrict__ kv_indptr,
		       const int32_t *__restrict__ kv_indices, float sm_scale, __nv_bfloat16 *__restrict__ out,
		       float *__restrict__ lse)
{
	const int64_t row = blockIdx.x; /* = sequence * 32 + head, the row of output / lse */
	const int64_t b = row / NUM_QO_HEADS;
	const int kvh = (int)(row % NUM_QO_HEADS) / GROUP;
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const int64_t page0 = kv_indptr[b], kv_len = kv_indptr[b + 1] - page0; /* one token per page */

	__shared__ float q_s[HEAD_DIM];
	__shared__ float s_s[TILE];
	q_s[tid] = __bfloat162float(q[row * HEAD_DIM + tid]);
	__syncthreads();

	float m = -INFINITY, l = 0.0f, acc = 0.0f;
	for (int64_t base = 0; base < kv_len; base += TILE) {
		const int n = (int)(kv_len - base < TILE ? kv_len - base : TILE);
		/* scores of the tile: warp w takes positions w, w + 4, ...; lane covers dims lane + 32 i */
		for (int j = warp; j < n; j += WARPS) {
			const int64_t pos = base + j;
			const int64_t slot = kv_indices[page0 + pos];
			const __nv_bfloat16 *kr = k_cache + (slot * NUM_KV_HEADS + kvh) * HEAD_DIM;
			float s = 0.0f;
			for (int d = lane; d < HEAD_DIM; d += 32)
				s += q_s[d] * __bfloat162float(kr[d]);
			for (int off = 16; off > 0; off >>= 1)
				s += __shfl_xor_sync(0xffffffffu, s, off);
			if (lane == 0)
				s_s[j] = s * sm_scale;
		}
		__syncthreads();
		/* online softmax update for this thread's dimension */
		float m_new = m;
		for (int j = 0; j < n; j++)
			m_new = fmaxf(m_new, s_s[j]);
		const float corr = expf(m - m_new); /* 0 on the first tile (m = -inf) */
		l *= corr;
		acc *= corr;
		for (int j = 0; j < n; j++) {
			const float p = expf(s_s[j] - m_new);
			const int64_t pos = base + j;
			const int64_t slot = kv_indices[page0 + pos];
			l += p;
			acc += p * __bfloat162float(v_cache[(slot * NUM_KV_HEADS + kvh) * HEAD_DIM + tid]);
		}
		m = m_new;
		__syncthreads(); /* s_s is rewritten by the next tile */
	}
	if (kv_len <= 0) { /* no key (invalid inputs only) */
		out[row * HEAD_DIM + tid] = __float2bfloat16(0.0f);
		if (tid == 0)
			lse[row] = -INFINITY;
		return;
	}
	out[row * HEAD_DIM + tid] = __float2bfloat16(acc / l);
	if (tid == 0)
		lse[row] = (m + logf(l)) * 1.4426950408889634f; /* log2(e) */
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != N_IN || call->n_outputs != N_OUT)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *in = call->inputs;
	const int64_t batch = in[IN_Q].shape[0];
	if (in[IN_Q].shape[1] != NUM_QO_HEADS || in[IN_Q].shape[2] != HEAD_DIM || in[IN_K].shape[1] != 1 ||
	    in[IN_K].shape[2] != NUM_KV_HEADS || in[IN_K].shape[3] != HEAD_DIM)
		return SF_ERR_UNSUPPORTED;
	if (batch == 0)
		return SF_OK;
	if (batch > INT32_MAX / NUM_QO_HEADS)
		return SF_ERR_UNSUPPORTED; /* one block per row: gridDim.x < 2^31 */
	const float sm_scale = (float)call->scalars[IN_SM_SCALE];
	cudaStream_t stream = (cudaStream_t)call->stream;
	const int64_t rows = batch * NUM_QO_HEADS;
	gqa_paged_decode_naive<<<(unsigned)rows, THREADS, 0, stream>>>(
		(const __nv_bfloat16 *)in[IN_Q].data, (const __nv_bfloat16 *)in[IN_K].data,
		(const __nv_bfloat16 *)in[IN_V].data, (const int32_t *)in[IN_KV_INDPTR].data,
		(const int32_t *)in[IN_KV_INDICES].data, sm_scale, (__nv_bfloat16 *)call->outputs[OUT_OUTPUT].data,
		(float *)call->outputs[OUT_LSE].data);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
