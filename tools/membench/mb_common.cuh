/*
 * mb_common.cuh - device side of the memory-bandwidth dev bench (tools/membench/): 16-byte loads and
 * stores with one cache-hint policy each (a template parameter, so every variant is its own kernel),
 * the grid kinds, and the stand-alone timing harness (CUDA events around each call, a 256 MB L2 flush
 * between calls, the median). Included by silu_mul.cu and copy.cu.
 */
#ifndef MB_COMMON_CUH
#define MB_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include "mb_host.h"

/* Cache-hint policies of the 16-byte loads / stores. Plain is what Triton emits for a pointwise
 * kernel (ld.global.v4.b32 / st.global.v4.b32, no qualifier). */
enum {
	MB_H_NONE = 0,  /* ld.global      / st.global */
	MB_H_CS = 1,    /* ld.global.cs   / st.global.cs (fast.cu today: __ldcs / __stcs) */
	MB_H_NC = 2,    /* ld.global.nc.L1::no_allocate / st.global */
	MB_H_EF = 3,    /* ld / st with an L2::cache_hint evict_first policy (createpolicy) */
	MB_H_CSLD = 4,  /* ld.global.cs   / st.global */
	MB_H_CSST = 5,  /* ld.global      / st.global.cs */
	MB_H_NC256 = 6, /* ld.global.nc.L1::no_allocate.L2::256B (prefetch hint) / st.global */
	MB_H_NCCS = 7,  /* ld.global.nc.L1::no_allocate / st.global.cs (the calibration copy today) */
	MB_H_L1EL = 8,  /* ld.global.L1::evict_last / st.global (Triton's eviction_policy="evict_last") */
};
/* Grid kinds */
enum {
	MB_G_2D = 0,      /* x = column chunks of a row, y = rows (silu only) */
	MB_G_FLAT = 1,    /* one-shot 1-D grid over the flattened vectors (Triton / inductor) */
	MB_G_PERSIST = 2, /* 1-D grid of SMs * bps blocks striding over the flattened vectors */
};

static __device__ __forceinline__ uint64_t mb_policy_ef()
{
	uint64_t pol;
	asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
	return pol;
}

template <int H> static __device__ __forceinline__ uint4 mb_ld(const uint4 *p, uint64_t pol)
{
	uint4 v;
	if (H == MB_H_CS || H == MB_H_CSLD)
		asm("ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
	else if (H == MB_H_NC || H == MB_H_NCCS)
		asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
		    : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
		    : "l"(p));
	else if (H == MB_H_NC256)
		asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
		    : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
		    : "l"(p));
	else if (H == MB_H_L1EL)
		asm("ld.global.L1::evict_last.v4.u32 {%0, %1, %2, %3}, [%4];"
		    : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
		    : "l"(p));
	else if (H == MB_H_EF)
		asm("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
		    : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
		    : "l"(p), "l"(pol));
	else
		asm("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
	return v;
}

template <int H> static __device__ __forceinline__ void mb_st(uint4 *p, uint4 v, uint64_t pol)
{
	if (H == MB_H_CS || H == MB_H_CSST || H == MB_H_NCCS)
		asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
			     : "memory");
	else if (H == MB_H_EF)
		asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;" ::"l"(p), "r"(v.x), "r"(v.y),
			     "r"(v.z), "r"(v.w), "l"(pol)
			     : "memory");
	else
		asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
			     : "memory");
}

/* The SM count of the current device (read once; inline: rmsnorm.cu does not use it). */
static inline int mb_sms(void)
{
	static int sms = 0;
	if (!sms) {
		int dev = 0;
		cudaGetDevice(&dev);
		cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
		if (sms <= 0)
			sms = 132;
	}
	return sms;
}

#ifdef MB_MAIN
#define MB_CHECK(call)                                                                                         \
	do {                                                                                                   \
		cudaError_t e_ = (call);                                                                       \
		if (e_ != cudaSuccess) {                                                                       \
			fprintf(stderr, "cuda call failed: %s (%s:%d)\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
			exit(1);                                                                               \
		}                                                                                              \
	} while (0)

/* Times fn(arg) alone ITERS times: before each call a 256 MB buffer is written (L2 flush), then CUDA
 * events around the call; returns the median in microseconds. */
static float mb_time_us(void (*fn)(void *), void *arg, int iters)
{
	static void *flush = NULL;
	const size_t flush_bytes = (size_t)256 << 20;
	if (!flush)
		MB_CHECK(cudaMalloc(&flush, flush_bytes));
	cudaEvent_t a, b;
	MB_CHECK(cudaEventCreate(&a));
	MB_CHECK(cudaEventCreate(&b));
	float *ts = (float *)malloc(sizeof(float) * (size_t)iters);
	for (int k = 0; k < 3; k++)
		fn(arg);
	for (int k = 0; k < iters; k++) {
		MB_CHECK(cudaMemsetAsync(flush, k & 0xff, flush_bytes, 0));
		MB_CHECK(cudaEventRecord(a, 0));
		fn(arg);
		MB_CHECK(cudaEventRecord(b, 0));
		MB_CHECK(cudaEventSynchronize(b));
		MB_CHECK(cudaEventElapsedTime(&ts[k], a, b));
	}
	MB_CHECK(cudaGetLastError());
	const float med = mb_median(ts, iters) * 1e3f;
	free(ts);
	cudaEventDestroy(a);
	cudaEventDestroy(b);
	return med;
}
#endif

#endif
