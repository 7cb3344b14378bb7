/*
 * rms_rowops.cuh - the row operations the RMSNorm-family solutions share (rmsnorm_h4096,
 * fused_add_rmsnorm_h4096, gemma_rmsnorm_h5376): 16-byte loads and stores with their knobs, bf16
 * pair unpacking / packing / rounding, the block-wide sum, the mean's scaling, and the host's dtype and
 * alignment checks. A solution includes it after <cuda_runtime.h> and <cuda_bf16.h> (not included here:
 * the host emulation of tests/emu replaces those two in the solution's own text) and after defining
 * RMS_NC and RMS_ST_CS; every function is inline, so a solution that does not use one (gemma has no
 * intermediate rounding) compiles nothing for it.
 *
 * Knobs defined here (-D, for side-by-side timing; both 0 rebuild the kernels of session 8, same PTX):
 * RMS_SUM_UNROLL 1 = the block sum's final step unrolled over a compile-time warp count with 16-byte
 * shared loads (rms_block_sum<NW>), 0 = a loop over blockDim.x / 32 partials; RMS_MEAN_MUL the most
 * vectors per thread whose kernel takes the mean as sum * (1/H) with 1/H from the host (rms_hscale,
 * rms_mean; default 2, the small-batch shapes; 0 = none), the others an fp32 IEEE division sum / H:
 * without the division's slow-path branch ptxas keeps the unpacked row live across the barrier at
 * 3+ vectors per thread (rmsnorm rms_vec<4> 48 -> 62 registers, 10 -> 8 blocks per SM; gemma
 * rms_vec<3> 40 -> 58, 7 -> 4 blocks), a cost the bandwidth-bound large batches would pay.
 * Measured in session 9 (tools/gpu_rmsbench.sh, rmsnorm at T = 1-256: membench v15 against v0, 0.08-0.20
 * us faster; results/h200/2026-11-30-s9/call2/rmsbench_summary.txt).
 */
#ifndef SF_RMS_ROWOPS_CUH
#define SF_RMS_ROWOPS_CUH
#include <stdint.h>
#include "solforge/solution.h"

#if !defined(RMS_NC) || !defined(RMS_ST_CS)
#error "define RMS_NC and RMS_ST_CS before including rms_rowops.cuh"
#endif
#ifndef RMS_SUM_UNROLL
#define RMS_SUM_UNROLL 1
#endif
#ifndef RMS_MEAN_MUL
#define RMS_MEAN_MUL 2
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

/* The shared array of rms_block_sum<NW> in a row kernel: 32 floats, 16-byte aligned (float4) when the
 * final sum reads it with 16-byte loads. Declared as `__shared__ rms_red_t red[RMS_RED_N];` (the plain
 * form tests/emu rewrites) and passed as (float *)red. */
#if RMS_SUM_UNROLL
typedef float4 rms_red_t;
#define RMS_RED_N 8
#else
typedef float rms_red_t;
#define RMS_RED_N 32
#endif

/* Warps of a block holding a row of nvec 16-byte vectors at vpt vectors per thread (the solutions'
 * rms_pick: ceil(nvec / vpt) threads rounded up to a multiple of 32), for rms_block_sum's NW. */
__host__ __device__ constexpr int rms_warps(int nvec, int vpt)
{
	return ((nvec + vpt - 1) / vpt + 31) / 32;
}

/* Sum of v over the block; every thread gets the same total. blockDim.x is a multiple of 32 and at
 * most 1024; red[] (32 floats) is used once per kernel (no reuse, so no trailing barrier). With
 * RMS_SUM_UNROLL and NW > 0, a block of exactly NW warps (a uniform branch) sums the NW partials
 * unrolled, four at a time by 16-byte shared loads (red then 16-byte aligned: rms_red_t); any other
 * block size, and NW = 0, loops over blockDim.x / 32 partials. Both add the partials in warp order
 * starting from 0.0f, so the total is the same bit for bit. */
template <int NW = 0> __device__ __forceinline__ float rms_block_sum(float v, float *red)
{
	static_assert(NW >= 0 && NW <= 32, "a block has at most 32 warps");
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	if ((threadIdx.x & 31) == 0)
		red[threadIdx.x >> 5] = v;
	__syncthreads();
#if RMS_SUM_UNROLL
	if (NW > 0 && blockDim.x == 32u * NW) {
		const float4 *r4 = reinterpret_cast<const float4 *>(red);
		float u = 0.0f;
#pragma unroll
		for (int i = 0; i < NW / 4; i++) {
			const float4 q = r4[i];
			u += q.x;
			u += q.y;
			u += q.z;
			u += q.w;
		}
#pragma unroll
		for (int i = NW / 4 * 4; i < NW; i++)
			u += red[i];
		return u;
	}
#endif
	const int nw = (int)(blockDim.x >> 5);
	float t = 0.0f;
	for (int i = 0; i < nw; i++)
		t += red[i];
	return t;
}

/* Whether the kernel of vpt vectors per thread takes the mean by a multiply (RMS_MEAN_MUL above). */
__host__ __device__ constexpr bool rms_mean_mul(int vpt)
{
	return vpt <= RMS_MEAN_MUL;
}

/* The row-width scalar the host passes to the row kernel of VPT vectors per thread, for rms_mean<VPT>:
 * 1/H when that kernel multiplies (one rounding of the float quotient; exact when H is a power of
 * two), else H. */
template <int VPT> inline float rms_hscale(int64_t H)
{
	return rms_mean_mul(VPT) ? 1.0f / (float)H : (float)H;
}

/* Mean of the squares from their sum and hs = rms_hscale<VPT>(H): total * (1/H) (equal to total / H
 * when H is a power of two, else within one fp32 ulp of it) or the IEEE division total / H (a
 * multi-instruction sequence with a slow-path branch, on the kernel's critical path). */
template <int VPT> __device__ __forceinline__ float rms_mean(float total, float hs)
{
	if (rms_mean_mul(VPT))
		return total * hs;
	return total / hs;
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
