/*
 * copy_simple.cu - the first calibration copy, kept for comparison with copy.cu: 16-byte streaming
 * loads and stores, grid-stride, 4 blocks of 512 threads per SM. Handles any N (a scalar tail for N
 * not a multiple of 8).
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include "solforge/solution.h"

__global__ void copy_kernel(const uint4 *__restrict__ x, uint4 *__restrict__ y, int64_t n16,
			    const uint16_t *__restrict__ xt, uint16_t *__restrict__ yt, int64_t tail)
{
	int64_t stride = (int64_t)gridDim.x * blockDim.x;
	int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	for (; i + 3 * stride < n16; i += 4 * stride) {
		uint4 a = __ldcs(x + i), b = __ldcs(x + i + stride), c = __ldcs(x + i + 2 * stride),
		      d = __ldcs(x + i + 3 * stride);
		__stcs(y + i, a);
		__stcs(y + i + stride, b);
		__stcs(y + i + 2 * stride, c);
		__stcs(y + i + 3 * stride, d);
	}
	for (; i < n16; i += stride)
		__stcs(y + i, __ldcs(x + i));
	int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (t < tail)
		yt[t] = xt[t];
}

SF_EXPORT int run(const sf_call *call)
{
	static int sms;
	if (!sms && cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess)
		return SF_ERR_CUDA;
	int64_t n = call->inputs[0].shape[0];
	int64_t n16 = n / 8, tail = n - n16 * 8;
	const uint16_t *x = (const uint16_t *)call->inputs[0].data;
	uint16_t *y = (uint16_t *)call->outputs[0].data;
	int threads = 512;
	int64_t want = (n16 + threads - 1) / threads;
	int blocks = (int)(want < (int64_t)sms * 4 ? want : (int64_t)sms * 4);
	if (blocks < 1)
		blocks = 1;
	copy_kernel<<<blocks, threads, 0, (cudaStream_t)call->stream>>>((const uint4 *)x, (uint4 *)y, n16,
									     x + n16 * 8, y + n16 * 8, tail);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
