/*
 * read.cu - the calibration read: y[b] = max(x[b, :]) over rows of bf16, the practical read ceiling that
 * read-dominated kernels (small-M GEMM weight streaming) are measured against (`solforge eval
 * --read-ceiling`), so it must be as good a read as we can write. The output is 1/R of the input.
 *
 * One CTA per row (grid B). With R % 8 == 0 and x 16-byte aligned, each thread issues READ_UNROLL
 * 16-byte loads before any compare (READ_THREADS * READ_UNROLL vectors per trip: one trip for the
 * definition's R = 8192 at the defaults 256 x 4, 64 bytes in flight per thread, 16 KiB per CTA), plain
 * ld.global (READ_NC 1: ld.global.nc.L1::no_allocate); otherwise one element per thread and step. The
 * maximum of 16-bit patterns read as bf16 floats starts at -inf and takes a value only when greater (a
 * NaN never is), so any reduction tree gives the oracle's result: per thread, then a warp butterfly,
 * then the warps' maxima in shared memory.
 *
 * Tuning knobs (-D): READ_THREADS, READ_UNROLL, READ_NC.
 */
// solforge-tune: READ_UNROLL=4,2,8 READ_THREADS=256,128,512 READ_NC=0,1
#include <cuda_runtime.h>
#include <stdint.h>
#include "solforge/solution.h"

#ifndef READ_THREADS
#define READ_THREADS 256
#endif
#ifndef READ_UNROLL
#define READ_UNROLL 4
#endif
#ifndef READ_NC
#define READ_NC 0
#endif

static __device__ __forceinline__ uint4 read_ld(const uint4 *p)
{
	uint4 v;
#ifndef __CUDA_ARCH__ /* host-side emulation of the kernel (tests/emu): a plain load */
	v = *p;
#elif !READ_NC
	asm("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
#else
	asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
	    : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
	    : "l"(p));
#endif
	return v;
}

/* bf16 bits -> float (exact) */
static __device__ __forceinline__ float bf16f(uint32_t h16)
{
	return __uint_as_float(h16 << 16);
}

/* m = max(m, the 2 bf16 of w): greater only, so a NaN is never taken */
static __device__ __forceinline__ float max2(float m, uint32_t w)
{
	const float lo = bf16f(w & 0xFFFFu), hi = bf16f(w >> 16);
	m = lo > m ? lo : m;
	return hi > m ? hi : m;
}

__global__ void __launch_bounds__(READ_THREADS)
	read_kernel(const uint16_t *__restrict__ x, uint16_t *__restrict__ y, int64_t R, int vec)
{
	__shared__ float red[READ_THREADS / 32];
	const uint16_t *row = x + (int64_t)blockIdx.x * R;
	float m = __uint_as_float(0xff800000u); /* -inf */
	if (vec) {
		const uint4 *rv = (const uint4 *)row;
		const int64_t n16 = R / 8, chunk = (int64_t)READ_THREADS * READ_UNROLL;
		for (int64_t base = 0; base < n16; base += chunk) {
			uint4 v[READ_UNROLL];
#pragma unroll
			for (int k = 0; k < READ_UNROLL; k++) {
				const int64_t i = base + threadIdx.x + (int64_t)k * READ_THREADS;
				v[k] = i < n16 ? read_ld(rv + i) : make_uint4(0xFF80FF80u, 0xFF80FF80u, 0xFF80FF80u, 0xFF80FF80u);
			}
#pragma unroll
			for (int k = 0; k < READ_UNROLL; k++)
				m = max2(max2(max2(max2(m, v[k].x), v[k].y), v[k].z), v[k].w);
		}
	} else {
		for (int64_t i = threadIdx.x; i < R; i += READ_THREADS) {
			const float f = bf16f(row[i]);
			m = f > m ? f : m;
		}
	}
#pragma unroll
	for (int o = 16; o > 0; o >>= 1) {
		const float t = __shfl_xor_sync(0xffffffffu, m, o);
		m = t > m ? t : m;
	}
	if ((threadIdx.x & 31) == 0)
		red[threadIdx.x / 32] = m;
	__syncthreads();
	if (threadIdx.x == 0) {
		for (int w = 1; w < READ_THREADS / 32; w++)
			m = red[w] > m ? red[w] : m;
		y[blockIdx.x] = (uint16_t)(__float_as_uint(m) >> 16); /* exact: an input's pattern, or -inf */
	}
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 1 || call->n_outputs != 1 || call->inputs[0].ndim != 2 ||
	    call->outputs[0].ndim != 1 || call->outputs[0].shape[0] != call->inputs[0].shape[0])
		return SF_ERR_UNSUPPORTED;
	const int64_t B = call->inputs[0].shape[0], R = call->inputs[0].shape[1];
	if (B == 0)
		return SF_OK;
	if (B > 2147483647 || R < 1)
		return SF_ERR_UNSUPPORTED;
	const uint16_t *x = (const uint16_t *)call->inputs[0].data;
	const int vec = R % 8 == 0 && ((uintptr_t)x & 15u) == 0;
	read_kernel<<<(unsigned)B, READ_THREADS, 0, (cudaStream_t)call->stream>>>(x, (uint16_t *)call->outputs[0].data,
										   R, vec);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
