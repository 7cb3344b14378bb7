/*
 * naive.cu - gemm_fp8_blockscale_n7168_k2048, first correct version: one thread per output element
 * (grid-stride over M*N). Each 128-wide k-block is summed in float32 (the e4m3 products are exact), then
 * scaled by A_scale[m, kb] * B_scale[n/128, kb] and added to a float32 accumulator, as DeepGEMM promotes
 * its partial sums; the result is rounded to bf16.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <stdint.h>
#include "solforge/solution.h"

__device__ __forceinline__ float fbg_e4m3(uint8_t code)
{
	__nv_fp8_e4m3 v;
	v.__x = code;
	return float(v);
}

__global__ void fp8_blockscale_gemm_kernel(const uint8_t *__restrict__ A, const float *__restrict__ As,
					   const uint8_t *__restrict__ B, const float *__restrict__ Bs,
					   __nv_bfloat16 *__restrict__ C, int64_t M, int64_t N, int64_t K)
{
	const int64_t KB = K / 128;
	const int64_t stride = (int64_t)gridDim.x * blockDim.x;
	for (int64_t item = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; item < M * N; item += stride) {
		const int64_t m = item / N, n = item % N;
		const uint8_t *a = A + m * K, *b = B + n * K;
		float acc = 0.0f;
		for (int64_t kb = 0; kb < KB; kb++) {
			float blk = 0.0f;
			for (int64_t k = kb * 128; k < kb * 128 + 128; k++)
				blk += fbg_e4m3(a[k]) * fbg_e4m3(b[k]);
			acc += blk * (As[m * KB + kb] * Bs[(n / 128) * KB + kb]);
		}
		C[item] = __float2bfloat16_rn(acc);
	}
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 4 || call->n_outputs != 1)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *A = &call->inputs[0], *B = &call->inputs[2];
	const int64_t M = A->shape[0], K = A->shape[1], N = B->shape[0];
	if (K % 128 != 0 || N % 128 != 0)
		return SF_ERR_UNSUPPORTED;
	if (M * N == 0)
		return SF_OK;
	cudaStream_t stream = (cudaStream_t)call->stream;
	const int threads = 256;
	int64_t grid = (M * N + threads - 1) / threads;
	if (grid > (1 << 30))
		grid = 1 << 30;
	fp8_blockscale_gemm_kernel<<<(unsigned)grid, threads, 0, stream>>>(
		(const uint8_t *)A->data, (const float *)call->inputs[1].data, (const uint8_t *)B->data,
		(const float *)call->inputs[3].data, (__nv_bfloat16 *)call->outputs[0].data, M, N, K);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
