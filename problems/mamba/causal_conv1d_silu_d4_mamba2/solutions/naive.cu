/*
 * naive.cu - a plain, untuned solution of causal_conv1d_silu_d4_mamba2 (Mamba-2 causal depthwise
 * conv1d + SiLU, no initial state).
 *
 * One thread per output element (grid-stride loop, 64-bit indices): acc = bias[d] +
 * sum_k weight[d, k] * x[b, d, t - (W-1) + k] over the taps inside the sequence, in float32, then
 * y = acc / (1 + exp(-acc)) rounded to bf16.
 * Inputs: 0 x [B, D, L] bf16, 1 weight [D, W] bf16, 2 bias [D] bf16. Output: 0 y [B, D, L] bf16.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include "solforge/solution.h"

static __global__ void causal_conv1d_silu_kernel(const __nv_bfloat16 *__restrict__ x,
						 const __nv_bfloat16 *__restrict__ w,
						 const __nv_bfloat16 *__restrict__ bias, __nv_bfloat16 *__restrict__ y,
						 int64_t n, int64_t D, int64_t L, int64_t W)
{
	const int64_t stride = (int64_t)gridDim.x * blockDim.x;
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
		const int64_t t = i % L;
		const int64_t row = i / L; /* b * D + d */
		const int64_t d = row % D;
		float acc = __bfloat162float(bias[d]);
		for (int64_t k = 0; k < W; k++) {
			const int64_t src = t - (W - 1) + k;
			if (src >= 0)
				acc += __bfloat162float(w[d * W + k]) * __bfloat162float(x[row * L + src]);
		}
		y[i] = __float2bfloat16(acc / (1.0f + expf(-acc)));
	}
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 3 || call->n_outputs != 1)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *x = &call->inputs[0], *w = &call->inputs[1], *bias = &call->inputs[2];
	const sf_tensor *y = &call->outputs[0];
	if (x->ndim != 3 || w->ndim != 2 || bias->ndim != 1 || y->ndim != 3 || x->dtype.code != SF_CODE_BFLOAT ||
	    w->dtype.code != SF_CODE_BFLOAT || bias->dtype.code != SF_CODE_BFLOAT || y->dtype.code != SF_CODE_BFLOAT)
		return SF_ERR_UNSUPPORTED;
	const int64_t D = x->shape[1], L = x->shape[2], W = w->shape[1];
	if (w->shape[0] != D || bias->shape[0] != D || sf_numel(y) != sf_numel(x))
		return SF_ERR_UNSUPPORTED;
	const int64_t n = sf_numel(x);
	if (n == 0)
		return SF_OK;
	const int threads = 256;
	const int64_t want = (n + threads - 1) / threads;
	const unsigned blocks = (unsigned)(want < 65536 ? want : 65536);
	causal_conv1d_silu_kernel<<<blocks, threads, 0, (cudaStream_t)call->stream>>>(
		(const __nv_bfloat16 *)x->data, (const __nv_bfloat16 *)w->data, (const __nv_bfloat16 *)bias->data,
		(__nv_bfloat16 *)y->data, n, D, L, W);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
