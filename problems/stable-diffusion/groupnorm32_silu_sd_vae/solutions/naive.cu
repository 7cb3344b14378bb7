/*
 * naive.cu - a plain, untuned solution of groupnorm32_silu_sd_vae (GroupNorm(32) + SiLU, fp16 NCHW).
 *
 * One 512-thread block per (sample, group): pass 1 sums the group's C/32*H*W values (float32 per
 * thread, then a block reduction) for the mean, pass 2 sums the squared deviations for the biased
 * variance, pass 3 writes h = (x - mean) * rsqrt(var + eps) * gamma[c] + beta[c] rounded to fp16
 * (GroupNorm's output dtype), then y = h / (1 + exp(-h)) rounded to fp16 (SiLU on that tensor).
 * Inputs: 0 x [N, C, H, W] fp16, 1 gamma [C] fp16, 2 beta [C] fp16, 3 eps (scalar).
 * Output: 0 y [N, C, H, W] fp16.
 */
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include "solforge/solution.h"

#define GN_GROUPS 32
#define GN_THREADS 512

/* Sum of v over the block; every thread gets the result. blockDim.x is a multiple of 32. */
static __device__ float gn_block_sum(float v, float *shared)
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

static __global__ void groupnorm_silu_kernel(const __half *__restrict__ x, const __half *__restrict__ gamma,
					     const __half *__restrict__ beta, __half *__restrict__ y, int64_t C,
					     int64_t HW, float eps)
{
	__shared__ float shared[33];
	const int64_t n = blockIdx.x / GN_GROUPS, g = blockIdx.x % GN_GROUPS;
	const int64_t cpg = C / GN_GROUPS;
	const int64_t cnt = cpg * HW;
	const int64_t base = (n * C + g * cpg) * HW;

	float s = 0.0f;
	for (int64_t i = threadIdx.x; i < cnt; i += blockDim.x)
		s += __half2float(x[base + i]);
	const float mean = gn_block_sum(s, shared) / (float)cnt;

	float sq = 0.0f;
	for (int64_t i = threadIdx.x; i < cnt; i += blockDim.x) {
		const float d = __half2float(x[base + i]) - mean;
		sq += d * d;
	}
	const float var = gn_block_sum(sq, shared) / (float)cnt;
	const float rstd = rsqrtf(var + eps);

	for (int64_t i = threadIdx.x; i < cnt; i += blockDim.x) {
		const int64_t c = g * cpg + i / HW;
		const float xn = (__half2float(x[base + i]) - mean) * rstd;
		const __half h = __float2half(xn * __half2float(gamma[c]) + __half2float(beta[c]));
		const float hf = __half2float(h);
		y[base + i] = __float2half(hf / (1.0f + expf(-hf)));
	}
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 4 || call->n_outputs != 1)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *x = &call->inputs[0], *gamma = &call->inputs[1], *beta = &call->inputs[2];
	const sf_tensor *y = &call->outputs[0];
	if (x->ndim != 4 || gamma->ndim != 1 || beta->ndim != 1 || y->ndim != 4)
		return SF_ERR_UNSUPPORTED;
	if (x->dtype.code != SF_CODE_FLOAT || x->dtype.bits != 16 || gamma->dtype.code != SF_CODE_FLOAT ||
	    gamma->dtype.bits != 16 || beta->dtype.code != SF_CODE_FLOAT || beta->dtype.bits != 16 ||
	    y->dtype.code != SF_CODE_FLOAT || y->dtype.bits != 16)
		return SF_ERR_UNSUPPORTED;
	const int64_t N = x->shape[0], C = x->shape[1], HW = x->shape[2] * x->shape[3];
	if (C % GN_GROUPS != 0 || gamma->shape[0] != C || beta->shape[0] != C || sf_numel(y) != sf_numel(x))
		return SF_ERR_UNSUPPORTED;
	if (N == 0 || C == 0 || HW == 0)
		return SF_OK;
	const float eps = (float)call->scalars[3];
	groupnorm_silu_kernel<<<(unsigned)(N * GN_GROUPS), GN_THREADS, 0, (cudaStream_t)call->stream>>>(
		(const __half *)x->data, (const __half *)gamma->data, (const __half *)beta->data, (__half *)y->data, C,
		HW, eps);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
