/*
 * copy.cu - the calibration copy: the practical memory ceiling that memory-bound kernels are measured
 * against (`solforge eval --copy-ceiling`, `--calibrate`), so it must be as good a copy as we can write.
 *
 * 16-byte accesses, plain ld.global / st.global by default (COPY_NC 1: ld.global.nc.L1::no_allocate,
 * optionally with an L2 256-byte prefetch hint; COPY_ST_CS 1: st.global.cs). Each thread issues all
 * of its U loads before the first store (U * 16 bytes in flight per thread); a block copies chunks of
 * COPY_THREADS * U vectors, consecutive threads on consecutive vectors; with COPY_BPS 0 (default) the
 * grid has one block per chunk (no loop), else min(chunks, SMs * COPY_BPS) blocks striding over the
 * chunks (the SM count read from the device once); COPY_BLOCKED 1 gives each block one contiguous run
 * of chunks instead of the grid stride. U is COPY_SMALL_UNROLL for copies of fewer than
 * COPY_SMALL_BYTES bytes read + written, else COPY_UNROLL. Any N: vectors past the end are guarded,
 * and the last N mod 8 elements are copied one by one by block 0. (copy_simple.cu is the first,
 * plainer version.)
 *
 * Defaults (version 3, session 7): 128-thread blocks, one vector per thread, plain accesses, 4 vectors
 * per thread below 24 MiB. tools/membench times 18 copy shapes beside torch's copy_ and torch.compile
 * on the H200 (device time, L2 flushed): the version-2 default (256 threads, 2 vectors, .nc + .cs
 * stores) moved 3.85 TB/s at 1.4 GB where 128 x 1 plain moved 4.28 (torch.compile 4.24, copy_ 4.24)
 * and 3.64 at 44 MB where 128 x 1 moved 3.92; at 11 MB 128 x 4 plain took 6.80 us, 128 x 1 7.49
 * (results/h200/2026-11-30-s7). The 24 MiB switch lies between the two measured sizes.
 *
 * Tuning knobs (-D): COPY_UNROLL, COPY_SMALL_UNROLL, COPY_SMALL_BYTES, COPY_THREADS, COPY_BPS (blocks
 * per SM; 0 = one block per chunk), COPY_BLOCKED (1 = contiguous run per block), COPY_NC (1 =
 * ld.global.nc.L1::no_allocate), COPY_L2_256B (1 = prefetch hint), COPY_ST_CS (1 = evict-first stores).
 */
// solforge-tune: COPY_UNROLL=1,2,4 COPY_SMALL_UNROLL=4,1,2 COPY_THREADS=128,256,512 COPY_BPS=0,4,2,8 COPY_BLOCKED=0,1 COPY_NC=0,1 COPY_L2_256B=0,1 COPY_ST_CS=0,1
#include <cuda_runtime.h>
#include <stdint.h>
#include "solforge/solution.h"

#ifndef COPY_UNROLL
#define COPY_UNROLL 1
#endif
#ifndef COPY_SMALL_UNROLL
#define COPY_SMALL_UNROLL 4
#endif
#ifndef COPY_SMALL_BYTES /* 24 MiB read + written */
#define COPY_SMALL_BYTES 25165824
#endif
#ifndef COPY_THREADS
#define COPY_THREADS 128
#endif
#ifndef COPY_BPS
#define COPY_BPS 0
#endif
#ifndef COPY_BLOCKED
#define COPY_BLOCKED 0
#endif
#ifndef COPY_NC
#define COPY_NC 0
#endif
#ifndef COPY_L2_256B
#define COPY_L2_256B 0
#endif
#ifndef COPY_ST_CS
#define COPY_ST_CS 0
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

template <int U>
__global__ void __launch_bounds__(COPY_THREADS)
	copy_kernel(const uint4 *__restrict__ x, uint4 *__restrict__ y, int64_t n16, const uint16_t *__restrict__ xt,
		    uint16_t *__restrict__ yt, int tail)
{
	const int64_t chunk = (int64_t)COPY_THREADS * U;
#if COPY_BLOCKED /* block b: the contiguous chunks [b * per, (b + 1) * per) */
	const int64_t nch = (n16 + chunk - 1) / chunk, per = (nch + gridDim.x - 1) / gridDim.x;
	const int64_t first = (int64_t)blockIdx.x * per * chunk;
	const int64_t last = first + per * chunk < n16 ? first + per * chunk : n16;
	for (int64_t base = first; base < last; base += chunk) {
#else /* grid-stride over the chunks */
	for (int64_t base = (int64_t)blockIdx.x * chunk; base < n16; base += (int64_t)gridDim.x * chunk) {
#endif
		const int64_t i0 = base + threadIdx.x;
		uint4 v[U];
		if (base + chunk <= n16) { /* full chunk: no guards */
#pragma unroll
			for (int k = 0; k < U; k++)
				v[k] = copy_ld(x + i0 + (int64_t)k * COPY_THREADS);
#pragma unroll
			for (int k = 0; k < U; k++)
				copy_st(y + i0 + (int64_t)k * COPY_THREADS, v[k]);
		} else {
#pragma unroll
			for (int k = 0; k < U; k++)
				if (i0 + (int64_t)k * COPY_THREADS < n16)
					v[k] = copy_ld(x + i0 + (int64_t)k * COPY_THREADS);
#pragma unroll
			for (int k = 0; k < U; k++)
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
	const bool small = 4 * n < (int64_t)COPY_SMALL_BYTES; /* 2n bytes read + 2n written */
	const int64_t chunk = (int64_t)COPY_THREADS * (small ? COPY_SMALL_UNROLL : COPY_UNROLL);
	int64_t blocks = (n16 + chunk - 1) / chunk;
	if (blocks > cap)
		blocks = cap;
	if (blocks < 1)
		blocks = 1;
	if (small)
		copy_kernel<COPY_SMALL_UNROLL><<<(unsigned)blocks, COPY_THREADS, 0, s>>>(
			(const uint4 *)x, (uint4 *)y, n16, x + n16 * 8, y + n16 * 8, tail);
	else
		copy_kernel<COPY_UNROLL><<<(unsigned)blocks, COPY_THREADS, 0, s>>>(
			(const uint4 *)x, (uint4 *)y, n16, x + n16 * 8, y + n16 * 8, tail);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
