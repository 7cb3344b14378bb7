/*
 * Naive CUDA solution of rmsnorm_h4096 (Llama-3.1-8B LlamaRMSNorm, hidden_size 4096):
 *     output = weight * bf16(x * rsqrt(mean(x^2) + eps))
 * with HF's rounding of the normalized value to bf16 before the weight multiply.
 *
 * One 256-thread block per row: each thread sums the squares of a strided slice in fp32, a shared
 * memory tree reduction gives the row sum, then each thread writes its slice. Any batch_size (up to
 * 2^31 - 1 rows) and any hidden_size work; not tuned.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include "solforge/solution.h"

#define RMS_THREADS 256

__global__ void rmsnorm_rows(const __nv_bfloat16 *__restrict__ x, const __nv_bfloat16 *__restrict__ w,
			     __nv_bfloat16 *__restrict__ y, int64_t H, float eps)
{
	__shared__ float partial[RMS_THREADS];
	const int64_t row = (int64_t)blockIdx.x * H;
	float sumsq = 0.0f;
	for (int64_t h = threadIdx.x; h < H; h += RMS_THREADS) {
		const float v = __bfloat162float(x[row + h]);
		sumsq += v * v;
	}
	partial[threadIdx.x] = sumsq;
	__syncthreads();
	for (int s = RMS_THREADS / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s)
			partial[threadIdx.x] += partial[threadIdx.x + s];
		__syncthreads();
	}
	const float rstd = rsqrtf(partial[0] / (float)H + eps);
	for (int64_t h = threadIdx.x; h < H; h += RMS_THREADS) {
		const __nv_bfloat16 n = __float2bfloat16_rn(__bfloat162float(x[row + h]) * rstd);
		y[row + h] = __float2bfloat16_rn(__bfloat162float(w[h]) * __bfloat162float(n));
	}
}

static int is_bf16(const sf_tensor *t)
{
	return t->dtype.code == SF_CODE_BFLOAT && t->dtype.bits == 16 && t->dtype.lanes == 1;
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 3 || call->n_outputs != 1)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *x = &call->inputs[0], *w = &call->inputs[1], *y = &call->outputs[0];
	if (x->ndim != 2 || w->ndim != 1 || y->ndim != 2 || !is_bf16(x) || !is_bf16(w) || !is_bf16(y))
		return SF_ERR_UNSUPPORTED;
	const int64_t T = x->shape[0], H = x->shape[1];
	if (w->shape[0] != H || y->shape[0] != T || y->shape[1] != H || T > 2147483647)
		return SF_ERR_UNSUPPORTED;
	if (T == 0 || H == 0)
		return SF_OK;
	const float eps = (float)call->scalars[2];
	rmsnorm_rows<<<(unsigned)T, RMS_THREADS, 0, (cudaStream_t)call->stream>>>(
		(const __nv_bfloat16 *)x->data, (const __nv_bfloat16 *)w->data, (__nv_bfloat16 *)y->data, H, eps);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
