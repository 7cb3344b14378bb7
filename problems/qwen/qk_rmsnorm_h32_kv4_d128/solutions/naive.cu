/*
 * naive.cu - qk_rmsnorm_h32_kv4_d128, first correct version: one thread per head row.
 * n = x * (1 / sqrt(mean(x^2) + eps)) in float32, rounded to bf16 as the model does, times the bf16
 * weight, rounded to bf16 (the output dtype).
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include "solforge/solution.h"

__global__ void qk_rmsnorm_kernel(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k,
				  const __nv_bfloat16 *__restrict__ qw, const __nv_bfloat16 *__restrict__ kw, float eps,
				  __nv_bfloat16 *__restrict__ qo, __nv_bfloat16 *__restrict__ ko, int64_t q_rows,
				  int64_t k_rows, int D)
{
	int64_t row = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (row >= q_rows + k_rows)
		return;
	const bool is_q = row < q_rows;
	const int64_t r = is_q ? row : row - q_rows;
	const __nv_bfloat16 *x = (is_q ? q : k) + r * D;
	const __nv_bfloat16 *w = is_q ? qw : kw;
	__nv_bfloat16 *y = (is_q ? qo : ko) + r * D;

	float ss = 0.0f;
	for (int d = 0; d < D; d++) {
		float v = __bfloat162float(x[d]);
		ss += v * v;
	}
	const float inv = 1.0f / sqrtf(ss / (float)D + eps);
	for (int d = 0; d < D; d++) {
		__nv_bfloat16 n = __float2bfloat16_rn(__bfloat162float(x[d]) * inv);
		y[d] = __float2bfloat16_rn(__bfloat162float(w[d]) * __bfloat162float(n));
	}
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 5 || call->n_outputs != 2)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *q = &call->inputs[0], *k = &call->inputs[1];
	const int64_t q_rows = q->shape[0] * q->shape[1], k_rows = k->shape[0] * k->shape[1];
	const int D = (int)q->shape[2];
	const int64_t rows = q_rows + k_rows;
	if (rows == 0)
		return SF_OK;
	cudaStream_t stream = (cudaStream_t)call->stream;
	const int threads = 128;
	const int64_t grid = (rows + threads - 1) / threads;
	qk_rmsnorm_kernel<<<(unsigned)grid, threads, 0, stream>>>(
		(const __nv_bfloat16 *)q->data, (const __nv_bfloat16 *)k->data,
		(const __nv_bfloat16 *)call->inputs[2].data, (const __nv_bfloat16 *)call->inputs[3].data,
		(float)call->scalars[4], (__nv_bfloat16 *)call->outputs[0].data, (__nv_bfloat16 *)call->outputs[1].data,
		q_rows, k_rows, D);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
