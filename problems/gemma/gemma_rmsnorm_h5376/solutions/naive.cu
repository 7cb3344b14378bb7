/*
 * naive.cu - a plain, untuned solution of gemma_rmsnorm_h5376 (Gemma-3 RMSNorm, (1 + weight)).
 *
 * One 256-thread block per row: each thread sums the squares of a strided slice of the row in
 * float32, the block reduces them (warp shuffles, then shared memory), and the threads write
 * y = x * rsqrt(mean(x^2) + eps) * (1 + w), rounded once to bf16.
 * Inputs: 0 hidden_states [T, H] bf16, 1 weight [H] bf16, 2 eps (scalar). Output: 0 [T, H] bf16.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include "solforge/solution.h"

#define RMS_THREADS 256

/* Sum of v over the block; every thread gets the result. blockDim.x is a multiple of 32. */
static __device__ float rms_block_sum(float v, float *shared)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	if (lane == 0)
		shared[warp] = v;
	__syncthreads();
	if (warp == 0) {
		float s = lane < (int)(blockDim.x >> 5) ? shared[lane] : 0.0f;
		for (int o = 16; o > 0; o >>= 1)
			s += __shfl_xor_sync(0xffffffffu, s, o);
		if (lane == 0)
			shared[32] = s;
	}
	__syncthreads();
	const float total = shared[32];
	__syncthreads(); /* shared[] may be reused by the next call */
	return total;
}

static __global__ void gemma_rmsnorm_kernel(const __nv_bfloat16 *__restrict__ x, const __nv_bfloat16 *__restrict__ w,
					    __nv_bfloat16 *__restrict__ y, int64_t T, int64_t H, float eps)
{
	__shared__ float shared[33];
	for (int64_t row = blockIdx.x; row < T; row += gridDim.x) {
		const __nv_bfloat16 *xr = x + row * H;
		__nv_bfloat16 *yr = y + row * H;
		float sumsq = 0.0f;
		for (int64_t j = threadIdx.x; j < H; j += blockDim.x) {
			const float v = __bfloat162float(xr[j]);
			sumsq += v * v;
		}
		sumsq = rms_block_sum(sumsq, shared);
		const float inv_rms = rsqrtf(sumsq / (float)H + eps);
		for (int64_t j = threadIdx.x; j < H; j += blockDim.x) {
			const float v = __bfloat162float(xr[j]) * inv_rms;
			yr[j] = __float2bfloat16(v * (1.0f + __bfloat162float(w[j])));
		}
	}
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 3 || call->n_outputs != 1)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *x = &call->inputs[0], *w = &call->inputs[1], *y = &call->outputs[0];
	if (x->ndim != 2 || w->ndim != 1 || y->ndim != 2 || x->dtype.code != SF_CODE_BFLOAT ||
	    w->dtype.code != SF_CODE_BFLOAT || y->dtype.code != SF_CODE_BFLOAT)
		return SF_ERR_UNSUPPORTED;
	const int64_t T = x->shape[0], H = x->shape[1];
	if (w->shape[0] != H || y->shape[0] != T || y->shape[1] != H)
		return SF_ERR_UNSUPPORTED;
	if (T == 0 || H == 0)
		return SF_OK;
	const float eps = (float)call->scalars[2];
	const unsigned blocks = (unsigned)(T < 65536 ? T : 65536);
	gemma_rmsnorm_kernel<<<blocks, RMS_THREADS, 0, (cudaStream_t)call->stream>>>(
		(const __nv_bfloat16 *)x->data, (const __nv_bfloat16 *)w->data, (__nv_bfloat16 *)y->data, T, H, eps);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
