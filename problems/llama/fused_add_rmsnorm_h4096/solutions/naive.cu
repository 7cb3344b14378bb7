/*
 * Naive CUDA solution of fused_add_rmsnorm_h4096 (Llama-3.1-8B residual add + LlamaRMSNorm):
 *     residual_out = bf16(hidden_states + residual)
 *     output       = weight * bf16(residual_out * rsqrt(mean(residual_out^2) + eps))
 *
 * One 256-thread block per row. Pass 1: each thread forms the rounded sums of a strided slice,
 * writes them to residual_out and accumulates their squares in fp32; a shared-memory tree reduction
 * gives the row sum. Pass 2 recomputes the same rounded sums from the inputs (outputs are
 * write-only) and writes the normalized output. Not tuned.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include "solforge/solution.h"

#define FARMS_THREADS 256

/* bf16(a + b): the fp32 sum of two bf16 values is exact (or off by far less than half a bf16 ulp
 * when their exponents are more than 16 apart), so rounding it to bf16 is the correctly rounded
 * bf16 sum. */
__device__ __forceinline__ __nv_bfloat16 farms_add(__nv_bfloat16 a, __nv_bfloat16 b)
{
	return __float2bfloat16_rn(__bfloat162float(a) + __bfloat162float(b));
}

__global__ void fused_add_rmsnorm_rows(const __nv_bfloat16 *__restrict__ x, const __nv_bfloat16 *__restrict__ r,
				       const __nv_bfloat16 *__restrict__ w, __nv_bfloat16 *__restrict__ y,
				       __nv_bfloat16 *__restrict__ r_out, int64_t H, float eps)
{
	__shared__ float partial[FARMS_THREADS];
	const int64_t row = (int64_t)blockIdx.x * H;
	float sumsq = 0.0f;
	for (int64_t h = threadIdx.x; h < H; h += FARMS_THREADS) {
		const __nv_bfloat16 s = farms_add(x[row + h], r[row + h]);
		r_out[row + h] = s;
		const float v = __bfloat162float(s);
		sumsq += v * v;
	}
	partial[threadIdx.x] = sumsq;
	__syncthreads();
	for (int s = FARMS_THREADS / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s)
			partial[threadIdx.x] += partial[threadIdx.x + s];
		__syncthreads();
	}
	const float rstd = rsqrtf(partial[0] / (float)H + eps);
	for (int64_t h = threadIdx.x; h < H; h += FARMS_THREADS) {
		const float s = __bfloat162float(farms_add(x[row + h], r[row + h]));
		const __nv_bfloat16 n = __float2bfloat16_rn(s * rstd);
		y[row + h] = __float2bfloat16_rn(__bfloat162float(w[h]) * __bfloat162float(n));
	}
}

static int is_bf16(const sf_tensor *t)
{
	return t->dtype.code == SF_CODE_BFLOAT && t->dtype.bits == 16 && t->dtype.lanes == 1;
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 4 || call->n_outputs != 2)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *x = &call->inputs[0], *r = &call->inputs[1], *w = &call->inputs[2];
	const sf_tensor *y = &call->outputs[0], *r_out = &call->outputs[1];
	if (x->ndim != 2 || r->ndim != 2 || w->ndim != 1 || y->ndim != 2 || r_out->ndim != 2 || !is_bf16(x) ||
	    !is_bf16(r) || !is_bf16(w) || !is_bf16(y) || !is_bf16(r_out))
		return SF_ERR_UNSUPPORTED;
	const int64_t T = x->shape[0], H = x->shape[1];
	if (r->shape[0] != T || r->shape[1] != H || w->shape[0] != H || y->shape[0] != T || y->shape[1] != H ||
	    r_out->shape[0] != T || r_out->shape[1] != H || T > 2147483647)
		return SF_ERR_UNSUPPORTED;
	if (T == 0 || H == 0)
		return SF_OK;
	const float eps = (float)call->scalars[3];
	fused_add_rmsnorm_rows<<<(unsigned)T, FARMS_THREADS, 0, (cudaStream_t)call->stream>>>(
		(const __nv_bfloat16 *)x->data, (const __nv_bfloat16 *)r->data, (const __nv_bfloat16 *)w->data,
		(__nv_bfloat16 *)y->data, (__nv_bfloat16 *)r_out->data, H, eps);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
