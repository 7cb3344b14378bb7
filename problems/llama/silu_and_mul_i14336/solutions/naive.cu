/*
 * Naive CUDA solution of silu_and_mul_i14336 (Llama-3.1-8B MLP activation):
 *     out[t, i] = bf16(silu(x[t, i]) * x[t, I + i]),  silu(g) = g / (1 + exp(-g)), in fp32.
 *
 * One thread per output element in a grid-stride loop (64-bit indices), not tuned.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include "solforge/solution.h"

__global__ void silu_and_mul_elems(const __nv_bfloat16 *__restrict__ x, __nv_bfloat16 *__restrict__ out, int64_t T,
				   int64_t I)
{
	const int64_t total = T * I;
	for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
	     e += (int64_t)gridDim.x * blockDim.x) {
		const int64_t t = e / I, i = e % I;
		const float g = __bfloat162float(x[t * 2 * I + i]);
		const float u = __bfloat162float(x[t * 2 * I + I + i]);
		const float silu = g / (1.0f + expf(-g)); /* expf(-g) = inf for g < -88: silu = -0 */
		out[e] = __float2bfloat16_rn(silu * u);
	}
}

static int is_bf16(const sf_tensor *t)
{
	return t->dtype.code == SF_CODE_BFLOAT && t->dtype.bits == 16 && t->dtype.lanes == 1;
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 1 || call->n_outputs != 1)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *x = &call->inputs[0], *out = &call->outputs[0];
	if (x->ndim != 2 || out->ndim != 2 || !is_bf16(x) || !is_bf16(out))
		return SF_ERR_UNSUPPORTED;
	const int64_t T = x->shape[0], I = out->shape[1];
	if (x->shape[1] != 2 * I || out->shape[0] != T)
		return SF_ERR_UNSUPPORTED;
	const int64_t total = T * I;
	if (total == 0)
		return SF_OK;
	const int threads = 256;
	int64_t blocks = (total + threads - 1) / threads;
	if (blocks > (int64_t)1 << 20)
		blocks = (int64_t)1 << 20; /* the grid-stride loop covers the rest */
	silu_and_mul_elems<<<(unsigned)blocks, threads, 0, (cudaStream_t)call->stream>>>(
		(const __nv_bfloat16 *)x->data, (__nv_bfloat16 *)out->data, T, I);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
