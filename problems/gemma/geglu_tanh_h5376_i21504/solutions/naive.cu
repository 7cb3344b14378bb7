/*
 * naive.cu - a plain, untuned solution of geglu_tanh_h5376_i21504 (Gemma-3 gelu_tanh(gate) * up).
 *
 * One thread per output element (grid-stride loop, 64-bit indices): gate = x[t, j], up =
 * x[t, I + j]; the activation is computed in float32 and rounded to bf16 as the model's activation
 * tensor is, then multiplied by up in float32 and rounded to bf16.
 * Input: 0 x [T, 2I] bf16. Output: 0 y [T, I] bf16.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include "solforge/solution.h"

static __global__ void geglu_tanh_kernel(const __nv_bfloat16 *__restrict__ x, __nv_bfloat16 *__restrict__ y,
					 int64_t n, int64_t I)
{
	const int64_t stride = (int64_t)gridDim.x * blockDim.x;
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
		const int64_t t = i / I, j = i - t * I;
		const float g = __bfloat162float(x[t * 2 * I + j]);
		const float up = __bfloat162float(x[t * 2 * I + I + j]);
		const float inner = 0.7978845608028654f * (g + 0.044715f * g * g * g);
		const __nv_bfloat16 act = __float2bfloat16(0.5f * g * (1.0f + tanhf(inner)));
		y[i] = __float2bfloat16(__bfloat162float(act) * up);
	}
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 1 || call->n_outputs != 1)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *x = &call->inputs[0], *y = &call->outputs[0];
	if (x->ndim != 2 || y->ndim != 2 || x->dtype.code != SF_CODE_BFLOAT || y->dtype.code != SF_CODE_BFLOAT)
		return SF_ERR_UNSUPPORTED;
	const int64_t T = x->shape[0], I = x->shape[1] / 2;
	if (x->shape[1] != 2 * I || y->shape[0] != T || y->shape[1] != I)
		return SF_ERR_UNSUPPORTED;
	const int64_t n = T * I;
	if (n == 0)
		return SF_OK;
	const int threads = 256;
	const int64_t want = (n + threads - 1) / threads;
	const unsigned blocks = (unsigned)(want < 65536 ? want : 65536);
	geglu_tanh_kernel<<<blocks, threads, 0, (cudaStream_t)call->stream>>>(
		(const __nv_bfloat16 *)x->data, (__nv_bfloat16 *)y->data, n, I);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
