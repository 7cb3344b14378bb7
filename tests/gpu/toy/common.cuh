/*
 * common.cuh - shared by the toy solutions of tests/gpu/runner_smoke.sh (problem: oracle.c beside):
 * y[i, j] = alpha * x[perm[i], j], x and y bfloat16 [M, N], perm int32 [M], alpha a float32 scalar.
 */
#include <cuda_bf16.h>
#include <stdint.h>
#include "solforge/solution.h"

/* mode 0: correct; 1: wrong (ignores perm and alpha); 2: also writes one element past y;
 * 3: also overwrites x[0] */
__global__ void toy_kernel(const __nv_bfloat16 *x, const int32_t *perm, float alpha, __nv_bfloat16 *y, int64_t m,
			   int64_t n, int mode)
{
	int64_t stride = (int64_t)gridDim.x * blockDim.x;
	for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < m * n; e += stride) {
		int64_t i = e / n, j = e % n;
		float v = mode == 1 ? __bfloat162float(x[e]) : alpha * __bfloat162float(x[(int64_t)perm[i] * n + j]);
		y[e] = __float2bfloat16_rn(v);
	}
	if (blockIdx.x == 0 && threadIdx.x == 0) {
		if (mode == 2)
			y[m * n] = __float2bfloat16_rn(1.0f);
		if (mode == 3)
			((__nv_bfloat16 *)x)[0] = __float2bfloat16_rn(123.0f);
	}
}

static inline int toy_launch(const sf_call *call, int mode, cudaStream_t s)
{
	if (call->n_inputs != 3 || call->n_outputs != 1)
		return SF_ERR_UNSUPPORTED;
	int64_t m = call->inputs[0].shape[0], n = call->inputs[0].shape[1];
	float alpha = (float)call->scalars[2];
	int64_t blocks = (m * n + 255) / 256;
	if (blocks > 4096)
		blocks = 4096;
	if (blocks < 1)
		blocks = 1;
	toy_kernel<<<(unsigned)blocks, 256, 0, s>>>((const __nv_bfloat16 *)call->inputs[0].data,
						    (const int32_t *)call->inputs[1].data, alpha,
						    (__nv_bfloat16 *)call->outputs[0].data, m, n, mode);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
