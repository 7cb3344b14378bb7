/*
 * naive.cu - a plain, untuned solution of flux_adaln_layernorm_modulate_h3072
 * (y = LayerNorm(x) * (1 + scale) + shift, per-sample shift/scale).
 *
 * One 256-thread block per token row: pass 1 sums the row (float32, block reduction) for the mean,
 * pass 2 sums squared deviations for the biased variance, pass 3 writes
 * (x - mean) * rsqrt(var + eps) * (1 + scale[b, j]) + shift[b, j] rounded once to bf16.
 * Inputs: 0 x [B, S, H] bf16, 1 shift [B, H] bf16, 2 scale [B, H] bf16, 3 eps (scalar).
 * Output: 0 y [B, S, H] bf16.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include "solforge/solution.h"

#define ADALN_THREADS 256

/* Sum of v over the block; every thread gets the result. blockDim.x is a multiple of 32. */
static __device__ float adaln_block_sum(float v, float *shared)
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
	__syncthreads();
	return total;
}

static __global__ void adaln_modulate_kernel(const __nv_bfloat16 *__restrict__ x,
					     const __nv_bfloat16 *__restrict__ shift,
					     const __nv_bfloat16 *__restrict__ scale, __nv_bfloat16 *__restrict__ y,
					     int64_t rows, int64_t S, int64_t H, float eps)
{
	__shared__ float shared[33];
	for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
		const int64_t b = row / S;
		const __nv_bfloat16 *xr = x + row * H;
		const __nv_bfloat16 *sh = shift + b * H, *sc = scale + b * H;
		__nv_bfloat16 *yr = y + row * H;
		float s = 0.0f;
		for (int64_t j = threadIdx.x; j < H; j += blockDim.x)
			s += __bfloat162float(xr[j]);
		const float mean = adaln_block_sum(s, shared) / (float)H;
		float sq = 0.0f;
		for (int64_t j = threadIdx.x; j < H; j += blockDim.x) {
			const float d = __bfloat162float(xr[j]) - mean;
			sq += d * d;
		}
		const float rstd = rsqrtf(adaln_block_sum(sq, shared) / (float)H + eps);
		for (int64_t j = threadIdx.x; j < H; j += blockDim.x) {
			const float xn = (__bfloat162float(xr[j]) - mean) * rstd;
			yr[j] = __float2bfloat16(xn * (1.0f + __bfloat162float(sc[j])) + __bfloat162float(sh[j]));
		}
	}
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 4 || call->n_outputs != 1)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *x = &call->inputs[0], *shift = &call->inputs[1], *scale = &call->inputs[2];
	const sf_tensor *y = &call->outputs[0];
	if (x->ndim != 3 || shift->ndim != 2 || scale->ndim != 2 || y->ndim != 3 || x->dtype.code != SF_CODE_BFLOAT ||
	    shift->dtype.code != SF_CODE_BFLOAT || scale->dtype.code != SF_CODE_BFLOAT ||
	    y->dtype.code != SF_CODE_BFLOAT)
		return SF_ERR_UNSUPPORTED;
	const int64_t B = x->shape[0], S = x->shape[1], H = x->shape[2];
	if (shift->shape[0] != B || shift->shape[1] != H || scale->shape[0] != B || scale->shape[1] != H ||
	    sf_numel(y) != sf_numel(x))
		return SF_ERR_UNSUPPORTED;
	const int64_t rows = B * S;
	if (rows == 0 || H == 0)
		return SF_OK;
	const float eps = (float)call->scalars[3];
	const unsigned blocks = (unsigned)(rows < 65536 ? rows : 65536);
	adaln_modulate_kernel<<<blocks, ADALN_THREADS, 0, (cudaStream_t)call->stream>>>(
		(const __nv_bfloat16 *)x->data, (const __nv_bfloat16 *)shift->data, (const __nv_bfloat16 *)scale->data,
		(__nv_bfloat16 *)y->data, rows, S, H, eps);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
