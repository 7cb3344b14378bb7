/*
 * naive.cu - a first, untuned solution of gqa_paged_prefill_causal_h32_kv8_d128_ps16.
 *
 * One thread block per (query token, query head) row, 128 threads (one per head dimension). The
 * block walks the row's allowed kv positions (0 .. kv_len - qo_len + j) in tiles of 32: each warp
 * scores a share of the tile's positions (lane-strided dot product, shuffle reduction), then every
 * thread folds the tile into an online softmax for its own output dimension. fp32 throughout;
 * output rounded to bf16 once at the end; lse = log2 of the sum of exp(scores).
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

enum { IN_Q, IN_K, IN_V, IN_QO_INDPTR, IN_KV_INDPTR, IN_KV_INDICES, IN_LAST_PAGE_LEN, IN_SM_SCALE, N_IN };
enum { OUT_OUTPUT, OUT_LSE, N_OUT };

__global__ void __launch_bounds__(THREADS)
gqa_paged_prefill_naive(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k_cache,
			const __nv_bfloat16 *__restrict__ v_cache, const int32_t *__restrict__ qo_indptr,
			const int32_t *__restrict__ kv_indptr, const int32_t *__restrict__ kv_indices,
			const int32_t *__restrict__ last_page_len, int batch, int page_size, float sm_scale,
			__nv_bfloat16 *__restrict__ out, float *__restrict__ lse)
{
	const int64_t row = blockIdx.x; /* = token * 32 + head, the row of output / lse */
	const int64_t t = row / NUM_QO_HEADS;
	const int kvh = (int)(row % NUM_QO_HEADS) / GROUP;
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

	/* the sequence owning token t: the largest b with qo_indptr[b] <= t (skips empty sequences) */
	int lo = 0, hi = batch - 1;
	while (lo < hi) {
		const int mid = (lo + hi + 1) >> 1;
		if (qo_indptr[mid] <= t)
			lo = mid;
		else
			hi = mid - 1;
	}
	const int b = lo;
	const int64_t q_start = qo_indptr[b], qo_len = qo_indptr[b + 1] - q_start;
	const int64_t page0 = kv_indptr[b], n_pages = kv_indptr[b + 1] - page0;
	const int64_t kv_len = n_pages > 0 ? (n_pages - 1) * page_size + last_page_len[b] : 0;
	const int64_t n_keys = kv_len - qo_len + (t - q_start) + 1; /* causal: positions 0 .. n_keys-1 */

	__shared__ float q_s[HEAD_DIM];
	__shared__ float s_s[TILE];
	q_s[tid] = __bfloat162float(q[row * HEAD_DIM + tid]);
	__syncthreads();

	float m = -INFINITY, l = 0.0f, acc = 0.0f;
	for (int64_t base = 0; base < n_keys; base += TILE) {
		const int n = (int)(n_keys - base < TILE ? n_keys - base : TILE);
		/* scores of the tile: warp w takes positions w, w + 4, ...; lane covers dims lane + 32 i */
		for (int j = warp; j < n; j += WARPS) {
			const int64_t pos = base + j;
			const int64_t page = kv_indices[page0 + pos / page_size];
			const __nv_bfloat16 *kr = k_cache + ((page * page_size + pos % page_size) * NUM_KV_HEADS + kvh) * HEAD_DIM;
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
			const int64_t page = kv_indices[page0 + pos / page_size];
			l += p;
			acc += p * __bfloat162float(
					   v_cache[((page * page_size + pos % page_size) * NUM_KV_HEADS + kvh) * HEAD_DIM + tid]);
		}
		m = m_new;
		__syncthreads(); /* s_s is rewritten by the next tile */
	}
	if (n_keys <= 0) { /* no key (invalid inputs only) */
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
	const int64_t total_q = in[IN_Q].shape[0];
	const int batch = (int)(in[IN_QO_INDPTR].shape[0] - 1);
	const int page_size = (int)in[IN_K].shape[1];
	if (in[IN_Q].shape[1] != NUM_QO_HEADS || in[IN_Q].shape[2] != HEAD_DIM || in[IN_K].shape[2] != NUM_KV_HEADS ||
	    in[IN_K].shape[3] != HEAD_DIM)
		return SF_ERR_UNSUPPORTED;
	if (total_q == 0 || batch < 1)
		return SF_OK;
	if (total_q > INT32_MAX / NUM_QO_HEADS)
		return SF_ERR_UNSUPPORTED; /* one block per row: gridDim.x < 2^31 */
	const float sm_scale = (float)call->scalars[IN_SM_SCALE];
	cudaStream_t stream = (cudaStream_t)call->stream;
	const int64_t rows = total_q * NUM_QO_HEADS;
	gqa_paged_prefill_naive<<<(unsigned)rows, THREADS, 0, stream>>>(
		(const __nv_bfloat16 *)in[IN_Q].data, (const __nv_bfloat16 *)in[IN_K].data,
		(const __nv_bfloat16 *)in[IN_V].data, (const int32_t *)in[IN_QO_INDPTR].data,
		(const int32_t *)in[IN_KV_INDPTR].data, (const int32_t *)in[IN_KV_INDICES].data,
		(const int32_t *)in[IN_LAST_PAGE_LEN].data, batch, page_size, sm_scale,
		(__nv_bfloat16 *)call->outputs[OUT_OUTPUT].data, (float *)call->outputs[OUT_LSE].data);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
