/*
 * rms_rowops.cuh - the row operations the RMSNorm-family solutions share (rmsnorm_h4096,
 * fused_add_rmsnorm_h4096, gemma_rmsnorm_h5376): 16-byte loads and stores with their knobs, bf16
 * pair unpacking / packing / rounding, the block-wide sum, and the host's dtype and alignment checks.
 * A solution includes it after <cuda_runtime.h> and <cuda_bf16.h> (not included here: the host
 * emulation of tests/emu replaces those two in the solution's own text) and after defining RMS_NC and
 * RMS_ST_CS; every function is inline, so a solution that does not use one (gemma has no
 * intermediate rounding) compiles nothing for it.
 */
#ifndef SF_RMS_ROWOPS_CUH
#define SF_RMS_ROWOPS_CUH
#include <stdint.h>
#include "solforge/solution.h"

#if !defined(RMS_NC) || !defined(RMS_ST_CS)
#error "define RMS_NC and RMS_ST_CS before including rms_rowops.cuh"
#endif

/* A row input's 16-byte load: plain, or with RMS_NC one that bypasses L1 (the row is read once). */
__device__ __forceinline__ uint4 rms_ld_stream(const uint4 *p)
{
	uint4 v;
#ifdef __CUDA_ARCH__
#if RMS_NC
	asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
	    : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
	    : "l"(p));
#else
	asm("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
#endif
#else /* host-side emulation of the kernel (tests/emu): a plain load */
	v = *p;
#endif
	return v;
}

/* The weight's 16-byte load: read-only path (__ldg) with RMS_NC, else a plain ld.global. */
__device__ __forceinline__ uint4 rms_ld_w(const uint4 *p)
{
#if RMS_NC || !defined(__CUDA_ARCH__)
	return __ldg(p);
#else
	uint4 v;
	asm("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
	return v;
#endif
}

__device__ __forceinline__ void rms_st(uint4 *p, uint4 v)
{
#if RMS_ST_CS
	__stcs(p, v);
#else
	*p = v;
#endif
}

/* The two bf16 of a 32-bit word as floats (element 2k is the low half): exact. */
__device__ __forceinline__ float rms_lo(uint32_t u)
{
	return __uint_as_float(u << 16);
}
__device__ __forceinline__ float rms_hi(uint32_t u)
{
	return __uint_as_float(u & 0xffff0000u);
}
/* Two floats rounded to bf16 (nearest even), a in the low half. */
__device__ __forceinline__ uint32_t rms_pack(float a, float b)
{
	__nv_bfloat162 h = __floats2bfloat162_rn(a, b);
	return *reinterpret_cast<uint32_t *>(&h);
}
/* bf16 value of a float (rounded), back as float: the model's intermediate cast. */
__device__ __forceinline__ float rms_round(float a)
{
	return __bfloat162float(__float2bfloat16_rn(a));
}

/* Sum of v over the block; every thread gets the same total. blockDim.x is a multiple of 32 and at
 * most 1024; red[] is used once per kernel (no reuse, so no trailing barrier). */
__device__ __forceinline__ float rms_block_sum(float v, float *red)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	if ((threadIdx.x & 31) == 0)
		red[threadIdx.x >> 5] = v;
	__syncthreads();
	const int nw = (int)(blockDim.x >> 5);
	float t = 0.0f;
	for (int i = 0; i < nw; i++)
		t += red[i];
	return t;
}

inline int rms_is_bf16(const sf_tensor *t)
{
	return t->dtype.code == SF_CODE_BFLOAT && t->dtype.bits == 16 && t->dtype.lanes == 1;
}

inline int rms_aligned(const void *p)
{
	return ((uintptr_t)p & 15u) == 0;
}

#endif /* SF_RMS_ROWOPS_CUH */
