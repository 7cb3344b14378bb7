/*
 * copy.cu - the calibration copy: the practical memory ceiling that memory-bound kernels are measured
 * against (`solforge eval --copy-ceiling`, `--calibrate`), so it must be as good a copy as we can write.
 *
 * 16-byte accesses: loads with ld.global.nc.L1::no_allocate (optionally with an L2 256-byte prefetch
 * hint), stores st.global.cs (evict-first: the copy is never read back). Each thread issues all
 * COPY_UNROLL loads of its chunk before the first store (COPY_UNROLL * 16 bytes in flight per
 * thread); a block copies chunks of COPY_THREADS * COPY_UNROLL vectors, consecutive threads on
 * consecutive vectors; the grid is min(chunks, SMs * COPY_BPS) blocks striding over the chunks (the
 * SM count read from the device once), or with COPY_BPS 0 one block per chunk (a grid as large as
 * the data, no loop); COPY_BLOCKED 1 gives each block one contiguous run of chunks instead of the
 * grid stride (longer sequential DRAM streams per SM). COPY_NC 0 uses plain ld.global.v4 (L1-allocating) instead of the non-coherent
 * no-allocate path. Any N: vectors past the end are guarded, and the last N mod 8
 * elements are copied one by one by block 0. (copy_simple.cu is the first, plainer version.)
 *
 * Tuning knobs (-D): COPY_UNROLL, COPY_THREADS, COPY_BPS (blocks per SM; 0 = one block per chunk),
 * COPY_BLOCKED (1 = contiguous run per block), COPY_NC (1 = ld.global.nc.L1::no_allocate), COPY_L2_256B (1 = prefetch hint), COPY_ST_CS (1 =
 * evict-first stores). tools/gpu_mem2.sh times variants side by side at 32 MB - 4 GiB.
 */
// solforge-tune: COPY_UNROLL=2,4,8 COPY_THREADS=256,512,1024 COPY_BPS=0,4,2,8 COPY_BLOCKED=0,1 COPY_NC=1,0 COPY_L2_256B=0,1 COPY_ST_CS=1,0
#include <cuda_runtime.h>
#include <stdint.h>
#include "solforge/solution.h"

#ifndef COPY_UNROLL
#define COPY_UNROLL 2
#endif
#ifndef COPY_THREADS
#define COPY_THREADS 256
#endif
#ifndef COPY_BPS
#define COPY_BPS 0
#endif
#ifndef COPY_BLOCKED
#define COPY_BLOCKED 0
#endif
#ifndef COPY_NC
#define COPY_NC 1
#endif
#ifndef COPY_L2_256B
#define COPY_L2_256B 0
#endif
#ifndef COPY_ST_CS
#define COPY_ST_CS 1
#endif

static __device__ __forceinline__ uint4 copy_ld(const uint4 *p)
{
	uint4 v;
#ifndef __CUDA_ARCH__ /* host-side emulation of the kernel (tests/emu): a plain load */
	v = *p;
#elif !COPY_NC
	asm("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
	    : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
	    : "l"(p));
#elif COPY_L2_256B
	asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
	    : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
	    : "l"(p));
#else
	asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
	    : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
	    : "l"(p));
#endif
	return v;
}

static __device__ __forceinline__ void copy_st(uint4 *p, uint4 v)
{
#if COPY_ST_CS && defined(__CUDA_ARCH__)
	asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
		     : "memory");
#else
	*p = v;
#endif
}

__global__ void __launch_bounds__(COPY_THREADS)
	copy_kernel(const uint4 *__restrict__ x, uint4 *__restrict__ y, int64_t n16, const uint16_t *__restrict__ xt,
		    uint16_t *__restrict__ yt, int tail)
{
	const int64_t chunk = (int64_t)COPY_THREADS * COPY_UNROLL;
#if COPY_BLOCKED /* block b: the contiguous chunks [b * per, (b + 1) * per) */
	const int64_t nch = (n16 + chunk - 1) / chunk, per = (nch + gridDim.x - 1) / gridDim.x;
	const int64_t first = (int64_t)blockIdx.x * per * chunk;
	const int64_t last = first + per * chunk < n16 ? first + per * chunk : n16;
	for (int64_t base = first; base < last; base += chunk) {
#else /* grid-stride over the chunks */
	for (int64_t base = (int64_t)blockIdx.x * chunk; base < n16; base += (int64_t)gridDim.x * chunk) {
#endif
		const int64_t i0 = base + threadIdx.x;
		uint4 v[COPY_UNROLL];
		if (base + chunk <= n16) { /* full chunk: no guards */
#pragma unroll
			for (int k = 0; k < COPY_UNROLL; k++)
				v[k] = copy_ld(x + i0 + (int64_t)k * COPY_THREADS);
#pragma unroll
			for (int k = 0; k < COPY_UNROLL; k++)
				copy_st(y + i0 + (int64_t)k * COPY_THREADS, v[k]);
		} else {
#pragma unroll
			for (int k = 0; k < COPY_UNROLL; k++)
				if (i0 + (int64_t)k * COPY_THREADS < n16)
					v[k] = copy_ld(x + i0 + (int64_t)k * COPY_THREADS);
#pragma unroll
			for (int k = 0; k < COPY_UNROLL; k++)
				if (i0 + (int64_t)k * COPY_THREADS < n16)
					copy_st(y + i0 + (int64_t)k * COPY_THREADS, v[k]);
		}
	}
	if (blockIdx.x == 0 && (int)threadIdx.x < tail)
		yt[threadIdx.x] = xt[threadIdx.x];
}

/* Fallback for unaligned pointers: one element per thread, grid-stride. */
__global__ void copy_scalar(const uint16_t *__restrict__ x, uint16_t *__restrict__ y, int64_t n)
{
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
		y[i] = x[i];
}

SF_EXPORT int run(const sf_call *call)
{
	static int sms;
	if (!sms && cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess)
		return SF_ERR_CUDA;
	if (call->n_inputs != 1 || call->n_outputs != 1 || call->inputs[0].ndim != 1 ||
	    call->outputs[0].ndim != 1 || call->outputs[0].shape[0] != call->inputs[0].shape[0])
		return SF_ERR_UNSUPPORTED;
	const int64_t n = call->inputs[0].shape[0];
	if (n == 0)
		return SF_OK;
	const uint16_t *x = (const uint16_t *)call->inputs[0].data;
	uint16_t *y = (uint16_t *)call->outputs[0].data;
	cudaStream_t s = (cudaStream_t)call->stream;
	const int64_t cap = COPY_BPS > 0 ? (int64_t)sms * COPY_BPS : 2147483647; /* 0: one block per chunk */
	if ((((uintptr_t)x | (uintptr_t)y) & 15u) != 0) {
		int64_t blocks = (n + 255) / 256;
		copy_scalar<<<(unsigned)(blocks < cap ? blocks : cap), 256, 0, s>>>(x, y, n);
		return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
	}
	const int64_t n16 = n / 8;
	const int tail = (int)(n - n16 * 8);
	const int64_t chunk = (int64_t)COPY_THREADS * COPY_UNROLL;
	int64_t blocks = (n16 + chunk - 1) / chunk;
	if (blocks > cap)
		blocks = cap;
	if (blocks < 1)
		blocks = 1;
	copy_kernel<<<(unsigned)blocks, COPY_THREADS, 0, s>>>((const uint4 *)x, (uint4 *)y, n16, x + n16 * 8, y + n16 * 8,
							      tail);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
