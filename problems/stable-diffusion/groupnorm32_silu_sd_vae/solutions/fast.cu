/*
 * fast.cu - groupnorm32_silu_sd_vae (GroupNorm(32) + SiLU, fp16 NCHW), the bandwidth-bound version:
 *     h = fp16((x - mean) * rsqrt(var + eps) * gamma[c] + beta[c]);   y = fp16(h * sigmoid(h))
 * with float32 statistics (biased variance) per (sample, group), GroupNorm's fp16 output rounded
 * before SiLU, as the oracle. In NCHW a group is one contiguous run of cnt = C/32*H*W values.
 * Strategies, picked per shape (NOTES.md has the byte floors and measurements):
 *  - fused (cnt <= GN_FUSED_MAX = 8192): one block per group holds the group in registers, exact
 *    two-pass statistics from the registers, one read.
 *  - odd (v6, GN_ODD, default since session 13; cnt % 8 != 0 or unaligned, cnt <= 8192): one block per group,
 *    2-byte loads into registers, one launch (gn_odd.cuh).
 *  - register cluster (v6, GN_CLR, default since session 13; 8192 < cnt <= GN_CLR_MAX): one non-persistent cluster
 *    of up to 16 CTAs per group, the slices in registers, DSMEM statistics (gn_clreg.cuh).
 *  - cluster (v5, GN_CLUSTER, the default since session 16; groups over GN_CLR_MAX held whole in a cluster's
 *    shared memory, H x W <= GN_CL_MAX_HW): a
 *    thread-block cluster per group holds it in shared memory, exchanges slice statistics through
 *    DSMEM and writes y from shared memory: one read, no global waits (gn_cluster.cuh).
 *  - L2 window (v4, GN_L2WIN, off by default; larger groups): a persistent grid reads each chunk for
 *    the statistics and again, some 18 MB later, from L2 to write y: HBM moves the byte floor in one
 *    launch (gn_l2win.cuh).
 *  - ring (v3, GN_RING, off by default; larger groups): a persistent grid whose CTAs keep chunks in a shared-memory
 *    ring (cp.async), publish chunk (mean, M2) partials, meet per group at a counter, merge (Chan) and
 *    write from shared memory: x read once, one launch (gn_ring.cuh).
 *  - group-resident (v2, GN_COOP, off by default; with GN_RING=0): chunks held in registers of
 *    hardware-dispatched blocks that meet per group (see gn_coop).
 *  - split (v1, the fallback: groups too large for the ring, cnt % 8 != 0, unaligned pointers):
 *    kernel 1 writes per-chunk (mean, M2) partials, kernel 2 merges them and writes (reads x twice);
 *    scalar versions for odd sizes and alignments.
 * The workspace (partials) and counters are device buffers owned by this solution, grown when a call
 * needs more (in practice once, in the first call).
 * Knobs (-D): GN_THREADS / GN_VPT split chunk shape, GN_FUSED_MAX, GN_ODD, GN_CLR (+ GN_CLR_THREADS,
 * GN_CLR_MAXCS, GN_CLR_MAX), GN_CLUSTER (+ GN_CL_THREADS, GN_CL_MAXCS,
 * GN_CL_HALF, GN_CL_PARTS, GN_CL_STREAM, GN_CL_MAX_HW), GN_L2WIN (+ GN_L2W_KB,
 * GN_L2W_THREADS, GN_L2W_VPT, GN_L2W_MINB, GN_L2W_CS), GN_SPLIT_FAST (the split apply's math), GN_RING (+ GN_RING_SLOTS,
 * GN_RING_SLOT_VALUES, GN_RING_THREADS, GN_RING_PER_CTA), GN_COOP (+ GN_COOP_VPT), GN_ST_CS 1 =
 * streaming stores.
 */
// solforge-tune: GN_ODD=0,1 GN_CLR=0,1 GN_SPLIT_FAST=1,0 GN_CLUSTER=0,1 GN_RING=0,1 GN_RING_PER_CTA=2,4 GN_RING_SLOTS=7,6 GN_COOP=0,1 GN_FUSED_MAX=8192,4096 GN_ST_CS=0,1
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include "solforge/solution.h"

#ifndef GN_THREADS
#define GN_THREADS 256
#endif
#ifndef GN_VPT
#define GN_VPT 8
#endif
#ifndef GN_FUSED_MAX
#define GN_FUSED_MAX 8192
#endif
#ifndef GN_COOP
#define GN_COOP 0 /* v2 candidate 1 (group-resident, one launch) is unmeasured on a GPU yet (NOTES.md); 0: no group-resident path (the two-kernel split path for every large group) */
#endif
#ifndef GN_COOP_VPT
#define GN_COOP_VPT 4
#endif
#ifndef GN_SPIN_NS
#define GN_SPIN_NS 64 /* pause between polls of a group's counter */
#endif
#ifndef GN_ST_CS
#define GN_ST_CS 0
#endif
#ifndef GN_SPLIT_FAST
#define GN_SPLIT_FAST 1 /* 1 (default since session 4's H200 run: 1.04-1.43x the old apply): the split path's apply
                          * with the L2-window path's math (hw % 8 == 0); 0: the old per-value channel math */
#endif
#ifndef GN_L2CHUNK_KB
#define GN_L2CHUNK_KB 0 /* > 0 (candidate, session 14, not measured): the split path in ranges of whole groups within a sample of
			 * about this many KB, stats then apply per range, so that the apply's second read of x hits L2
			 * (NOTES.md "Version 7 candidate"); 0: one stats launch over every group, then one apply */
#endif
#ifndef GN_FUSED_PF
#define GN_FUSED_PF 1 /* 1 (default since session 13: 8x8 2.59 -> 1.92 us, 16x16 3.58 -> 2.72, NOTES.md "Version 6
		       * measured"): the fused kernel loads (gamma, beta) beside x and applies with the one-channel math
		       * when hw % 8 == 0; 0: the earlier fused kernel */
#endif
#define GN_GROUPS 32
#define GN_FUSED_THREADS 512 /* most threads of a fused block; GN_FUSED_MAX <= 512 * 16 * 8 */
#define GN_CHUNK (GN_THREADS * GN_VPT * 8)

static __device__ __forceinline__ uint4 gn_ld_stream(const uint4 *p)
{
	uint4 v;
#ifdef __CUDA_ARCH__
	asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
	    : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
	    : "l"(p));
#else /* host-side emulation of the kernel (tests/emu): a plain load */
	v = *p;
#endif
	return v;
}

static __device__ __forceinline__ void gn_st(uint4 *p, uint4 v)
{
#if GN_ST_CS
	__stcs(p, v);
#else
	*p = v;
#endif
}

/* The two fp16 of a 32-bit word as floats (element 2k is the low half): exact. */
static __device__ __forceinline__ float gn_lo(uint32_t u)
{
	return __half2float(__ushort_as_half((unsigned short)(u & 0xffffu)));
}
static __device__ __forceinline__ float gn_hi(uint32_t u)
{
	return __half2float(__ushort_as_half((unsigned short)(u >> 16)));
}
static __device__ __forceinline__ uint32_t gn_pack(float a, float b)
{
	__half2 h = __floats2half2_rn(a, b);
	return *reinterpret_cast<uint32_t *>(&h);
}

static __device__ __forceinline__ float gn_sum8(uint4 v)
{
	return ((gn_lo(v.x) + gn_hi(v.x)) + (gn_lo(v.y) + gn_hi(v.y))) +
	       ((gn_lo(v.z) + gn_hi(v.z)) + (gn_lo(v.w) + gn_hi(v.w)));
}
static __device__ __forceinline__ float gn_dev8(uint4 v, float mean)
{
	const uint32_t u[4] = { v.x, v.y, v.z, v.w };
	float s = 0.0f;
#pragma unroll
	for (int j = 0; j < 4; j++) {
		const float a = gn_lo(u[j]) - mean, b = gn_hi(u[j]) - mean;
		s += a * a;
		s += b * b;
	}
	return s;
}

/* Sum of v over the block (blockDim.x a multiple of 32); every thread gets the same total. red[] must
 * not be used again in the kernel (no trailing barrier): each reduction gets its own array. */
static __device__ __forceinline__ float gn_block_sum(float v, float *red)
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

/* GroupNorm + SiLU of one element with its channel's gamma and beta. */
static __device__ __forceinline__ float gn_one(float x, float mean, float rstd, float gm, float bt)
{
	const float h = __half2float(__float2half_rn((x - mean) * rstd * gm + bt));
	return h / (1.0f + __expf(-h));
}

/* The outputs of 8 consecutive values starting at group offset e0 (channel e / hw within the group;
 * gamma / beta point at the group's first channel). 32-bit offsets: the 16-byte paths require
 * cnt < 2^31. */
static __device__ __forceinline__ uint4 gn_apply8(uint4 v, unsigned e0, unsigned hw, const __half *__restrict__ gamma,
						  const __half *__restrict__ beta, float mean, float rstd)
{
	unsigned ch = e0 / hw, rem = e0 - ch * hw;
	float gm = __half2float(gamma[ch]), bt = __half2float(beta[ch]);
	const uint32_t u[4] = { v.x, v.y, v.z, v.w };
	float o[8];
#pragma unroll
	for (int j = 0; j < 8; j++) {
		if (rem == hw) { /* the next channel starts inside this vector */
			ch++;
			rem = 0;
			gm = __half2float(gamma[ch]);
			bt = __half2float(beta[ch]);
		}
		const float xv = (j & 1) ? gn_hi(u[j >> 1]) : gn_lo(u[j >> 1]);
		o[j] = gn_one(xv, mean, rstd, gm, bt);
		rem++;
	}
	return make_uint4(gn_pack(o[0], o[1]), gn_pack(o[2], o[3]), gn_pack(o[4], o[5]), gn_pack(o[6], o[7]));
}

#if GN_FUSED_PF
static __device__ __forceinline__ uint4 gn_apply8_ch(uint4 v, float a, float c); /* (below) */
#endif

/* Fused: one block per group (blockIdx.x = n * 32 + g), the group's nvec vectors in registers. */
template <int VPT>
__global__ void __launch_bounds__(GN_FUSED_THREADS)
	gn_fused(const uint4 *__restrict__ x, const __half *__restrict__ gamma, const __half *__restrict__ beta,
		 uint4 *__restrict__ y, int64_t nvec, int64_t cpg, int64_t hw, float eps)
{
	__shared__ float red1[32], red2[32];
	const int64_t grp = blockIdx.x;
	const uint4 *xg = x + grp * nvec;
	uint4 *yg = y + grp * nvec;
	const int64_t cbase = (grp % GN_GROUPS) * cpg;
	uint4 v[VPT];
#pragma unroll
	for (int k = 0; k < VPT; k++) {
		const int64_t i = threadIdx.x + (int64_t)k * blockDim.x;
		v[k] = i < nvec ? gn_ld_stream(xg + i) : make_uint4(0, 0, 0, 0);
	}
#if GN_FUSED_PF
	/* v6 candidate: (gamma, beta) of each vector's channel loaded beside x (hw % 8 == 0: one channel per
	 * vector), so no global load sits between the statistics and the stores; VPT <= 8 (registers) */
	const bool pf = VPT <= 8 && hw % 8 == 0;
	uint32_t gb[VPT];
#pragma unroll
	for (int k = 0; k < VPT; k++) {
		const int64_t i = threadIdx.x + (int64_t)k * blockDim.x;
		gb[k] = 0;
		if (pf && i < nvec) {
			const int64_t c = cbase + i * 8 / hw;
			gb[k] = (uint32_t)__ldg((const unsigned short *)gamma + c) | ((uint32_t)__ldg((const unsigned short *)beta + c) << 16);
		}
	}
#endif
	const float cnt = (float)(nvec * 8);
	float s = 0.0f;
#pragma unroll
	for (int k = 0; k < VPT; k++)
		s += gn_sum8(v[k]); /* idle slots hold +0 */
	const float mean = gn_block_sum(s, red1) / cnt;
	float m2 = 0.0f;
#pragma unroll
	for (int k = 0; k < VPT; k++)
		if (threadIdx.x + (int64_t)k * blockDim.x < nvec)
			m2 += gn_dev8(v[k], mean);
	const float rstd = rsqrtf(gn_block_sum(m2, red2) / cnt + eps);
#if GN_FUSED_PF
	if (pf) {
#pragma unroll
		for (int k = 0; k < VPT; k++) {
			const int64_t i = threadIdx.x + (int64_t)k * blockDim.x;
			if (i < nvec) {
				const float a = rstd * __half2float(__ushort_as_half((unsigned short)(gb[k] & 0xffffu)));
				gn_st(yg + i, gn_apply8_ch(v[k], a, __half2float(__ushort_as_half((unsigned short)(gb[k] >> 16))) - mean * a));
			}
		}
		return;
	}
#endif
#pragma unroll
	for (int k = 0; k < VPT; k++) {
		const int64_t i = threadIdx.x + (int64_t)k * blockDim.x;
		if (i < nvec)
			gn_st(yg + i, gn_apply8(v[k], (unsigned)(i * 8), (unsigned)hw, gamma + cbase, beta + cbase, mean, rstd));
	}
}

/* 1 / a, approximate (a in [1, 2^121] here) */
static __device__ __forceinline__ float gn_rcp(float a)
{
#ifdef __CUDA_ARCH__
	float r;
	asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(a));
	return r;
#else
	return 1.0f / a;
#endif
}

/* gn_apply8 with the channel's affine folded: h = fp16(x * a + c), a = rstd * gamma, c = beta - mean * a;
 * y = h / (1 + e^-h), two values per reciprocal: with d = 1 + min(e^-h, 2^60), 1/d0 = d1 / (d0 d1)
 * (3 SFU ops per pair instead of 4; the clamp keeps d0 d1 finite and changes y by < 2^-60 |h|). */
static __device__ __forceinline__ uint4 gn_apply8_fast(uint4 v, unsigned e0, unsigned hw, const __half *__restrict__ gamma,
						       const __half *__restrict__ beta, float mean, float rstd)
{
	unsigned ch = e0 / hw, rem = e0 - ch * hw;
	float a = rstd * __half2float(gamma[ch]), c = __half2float(beta[ch]) - mean * a;
	const uint32_t u[4] = { v.x, v.y, v.z, v.w };
	float h[8];
#pragma unroll
	for (int j = 0; j < 8; j++) {
		if (rem == hw) { /* the next channel starts inside this vector */
			ch++;
			rem = 0;
			a = rstd * __half2float(gamma[ch]);
			c = __half2float(beta[ch]) - mean * a;
		}
		const float xv = (j & 1) ? gn_hi(u[j >> 1]) : gn_lo(u[j >> 1]);
		h[j] = __half2float(__float2half_rn(xv * a + c));
		rem++;
	}
	uint32_t o[4];
#pragma unroll
	for (int j = 0; j < 4; j++) {
		const float d0 = 1.0f + fminf(__expf(-h[2 * j]), 0x1p60f), d1 = 1.0f + fminf(__expf(-h[2 * j + 1]), 0x1p60f);
		const float r = gn_rcp(d0 * d1);
		o[j] = gn_pack(h[2 * j] * (r * d1), h[2 * j + 1] * (r * d0));
	}
	return make_uint4(o[0], o[1], o[2], o[3]);
}


/* GroupNorm + SiLU of 8 values of one channel (a = rstd * gamma, c = beta - mean * a): the
 * gn_apply8_fast math with the channel test hoisted out (the ncu profile of the split path showed its
 * apply kernel issue-bound, 76 % of issue slots, 1/3 of the lanes predicated off) and h rounded to
 * fp16 two at a time (one pack instruction per pair). For hw % 8 == 0 (every workload). */
static __device__ __forceinline__ uint4 gn_apply8_ch(uint4 v, float a, float c)
{
	const uint32_t u[4] = { v.x, v.y, v.z, v.w };
	uint32_t o[4];
#pragma unroll
	for (int j = 0; j < 4; j++) {
		const uint32_t hp = gn_pack(gn_lo(u[j]) * a + c, gn_hi(u[j]) * a + c); /* h = fp16(x * a + c) */
		const float h0 = gn_lo(hp), h1 = gn_hi(hp);
		const float d0 = 1.0f + fminf(__expf(-h0), 0x1p60f), d1 = 1.0f + fminf(__expf(-h1), 0x1p60f);
		const float r = gn_rcp(d0 * d1);
		o[j] = gn_pack(h0 * (r * d1), h1 * (r * d0));
	}
	return make_uint4(o[0], o[1], o[2], o[3]);
}

/* Split, kernel 1 (16-byte path): block b = chunk b of the flattened (group, chunk) order; writes
 * ws[b] = (mean of the chunk, sum of squared deviations from it). cnt % 8 == 0. */
__global__ void __launch_bounds__(GN_THREADS)
	gn_stats_vec(const uint4 *__restrict__ x, float2 *__restrict__ ws, int64_t cnt, int64_t nchunk)
{
	__shared__ float red1[32], red2[32];
	const int64_t b = blockIdx.x, grp = b / nchunk, start = (b % nchunk) * GN_CHUNK;
	const int64_t len = cnt - start < GN_CHUNK ? cnt - start : GN_CHUNK;
	const int64_t nv = len / 8;
	const uint4 *xc = x + (grp * cnt + start) / 8;
	uint4 v[GN_VPT];
#pragma unroll
	for (int k = 0; k < GN_VPT; k++) {
		const int64_t i = threadIdx.x + (int64_t)k * GN_THREADS;
		v[k] = i < nv ? gn_ld_stream(xc + i) : make_uint4(0, 0, 0, 0);
	}
	float s = 0.0f;
#pragma unroll
	for (int k = 0; k < GN_VPT; k++)
		s += gn_sum8(v[k]);
	const float mean = gn_block_sum(s, red1) / (float)len;
	float m2 = 0.0f;
#pragma unroll
	for (int k = 0; k < GN_VPT; k++)
		if (threadIdx.x + (int64_t)k * GN_THREADS < nv)
			m2 += gn_dev8(v[k], mean);
	m2 = gn_block_sum(m2, red2);
	if (threadIdx.x == 0)
		ws[b] = make_float2(mean, m2);
}

/* Split, kernel 1 (any cnt, any alignment): as gn_stats_vec, scalar, the chunk read twice. */
__global__ void __launch_bounds__(GN_THREADS)
	gn_stats_scalar(const __half *__restrict__ x, float2 *__restrict__ ws, int64_t cnt, int64_t nchunk)
{
	__shared__ float red1[32], red2[32];
	const int64_t b = blockIdx.x, grp = b / nchunk, start = (b % nchunk) * GN_CHUNK;
	const int64_t len = cnt - start < GN_CHUNK ? cnt - start : GN_CHUNK;
	const __half *xc = x + grp * cnt + start;
	float s = 0.0f;
	for (int64_t i = threadIdx.x; i < len; i += GN_THREADS)
		s += __half2float(xc[i]);
	const float mean = gn_block_sum(s, red1) / (float)len;
	float m2 = 0.0f;
	for (int64_t i = threadIdx.x; i < len; i += GN_THREADS) {
		const float d = __half2float(xc[i]) - mean;
		m2 += d * d;
	}
	m2 = gn_block_sum(m2, red2);
	if (threadIdx.x == 0)
		ws[b] = make_float2(mean, m2);
}

/* The mean and rstd of group grp from its nchunk partials (chunk j holds min(GN_CHUNK, cnt - j*GN_CHUNK)
 * values). Every block of the group computes the same values (same order of operations). */
static __device__ __forceinline__ void gn_merge(const float2 *__restrict__ ws, int64_t grp, int64_t cnt,
						int64_t nchunk, float eps, float *red1, float *red2, float *mean,
						float *rstd)
{
	const float2 *p = ws + grp * nchunk;
	float s = 0.0f;
	for (int64_t j = threadIdx.x; j < nchunk; j += blockDim.x) {
		const int64_t n = cnt - j * GN_CHUNK < GN_CHUNK ? cnt - j * GN_CHUNK : GN_CHUNK;
		s += (float)n * p[j].x;
	}
	const float m = gn_block_sum(s, red1) / (float)cnt;
	float q = 0.0f;
	for (int64_t j = threadIdx.x; j < nchunk; j += blockDim.x) {
		const int64_t n = cnt - j * GN_CHUNK < GN_CHUNK ? cnt - j * GN_CHUNK : GN_CHUNK;
		const float d = p[j].x - m;
		q += p[j].y + (float)n * d * d;
	}
	*mean = m;
	*rstd = rsqrtf(gn_block_sum(q, red2) / (float)cnt + eps);
}

/* Split, kernel 2 (16-byte path): block blockIdx.x handles chunk total - 1 - blockIdx.x. */
__global__ void __launch_bounds__(GN_THREADS)
	gn_apply_vec(const uint4 *__restrict__ x, const __half *__restrict__ gamma, const __half *__restrict__ beta,
		     const float2 *__restrict__ ws, uint4 *__restrict__ y, int64_t cnt, int64_t nchunk, int64_t cpg,
		     int64_t hw, float eps)
{
	__shared__ float red1[32], red2[32];
	const int64_t b = (int64_t)gridDim.x - 1 - blockIdx.x, grp = b / nchunk, start = (b % nchunk) * GN_CHUNK;
	const int64_t len = cnt - start < GN_CHUNK ? cnt - start : GN_CHUNK;
	const int64_t nv = len / 8, off = (grp * cnt + start) / 8;
	const int64_t cbase = (grp % GN_GROUPS) * cpg;
	uint4 v[GN_VPT];
#pragma unroll
	for (int k = 0; k < GN_VPT; k++) {
		const int64_t i = threadIdx.x + (int64_t)k * GN_THREADS;
		v[k] = i < nv ? gn_ld_stream(x + off + i) : make_uint4(0, 0, 0, 0);
	}
	float mean, rstd;
	gn_merge(ws, grp, cnt, nchunk, eps, red1, red2, &mean, &rstd);
#if GN_SPLIT_FAST
	if (hw % 8 == 0) { /* one channel per vector: the L2-window path's math */
#pragma unroll
		for (int k = 0; k < GN_VPT; k++) {
			const int i = (int)threadIdx.x + k * GN_THREADS;
			if (i < nv) {
				const int64_t ch = cbase + (start + i * 8) / hw;
				const float ga = rstd * __half2float(gamma[ch]);
				gn_st(y + off + i, gn_apply8_ch(v[k], ga, __half2float(beta[ch]) - mean * ga));
			}
		}
		return;
	}
#endif
#pragma unroll
	for (int k = 0; k < GN_VPT; k++) {
		const int64_t i = threadIdx.x + (int64_t)k * GN_THREADS;
		if (i < nv)
			gn_st(y + off + i, gn_apply8(v[k], (unsigned)(start + i * 8), (unsigned)hw, gamma + cbase, beta + cbase, mean, rstd));
	}
}

/* Split, kernel 2 (any cnt, any alignment): scalar. */
__global__ void __launch_bounds__(GN_THREADS)
	gn_apply_scalar(const __half *__restrict__ x, const __half *__restrict__ gamma, const __half *__restrict__ beta,
			const float2 *__restrict__ ws, __half *__restrict__ y, int64_t cnt, int64_t nchunk, int64_t cpg,
			int64_t hw, float eps)
{
	__shared__ float red1[32], red2[32];
	const int64_t b = (int64_t)gridDim.x - 1 - blockIdx.x, grp = b / nchunk, start = (b % nchunk) * GN_CHUNK;
	const int64_t len = cnt - start < GN_CHUNK ? cnt - start : GN_CHUNK;
	const int64_t off = grp * cnt + start, cbase = (grp % GN_GROUPS) * cpg;
	float mean, rstd;
	gn_merge(ws, grp, cnt, nchunk, eps, red1, red2, &mean, &rstd);
	for (int64_t i = threadIdx.x; i < len; i += GN_THREADS) {
		const int64_t c = cbase + (start + i) / hw;
		const float o = gn_one(__half2float(x[off + i]), mean, rstd, __half2float(gamma[c]), __half2float(beta[c]));
		y[off + i] = __float2half_rn(o);
	}
}

/* Group-resident path, one launch: the group's chunks run as concurrent blocks that meet at a
 * per-group arrival counter. Block b (taken from a ticket counter in dispatch order, not blockIdx:
 * a block holding ticket b implies tickets < b are running or done) loads chunk b into registers,
 * publishes its (mean, M2), waits until all nchunk chunks of its group have published, merges them
 * (the split path's gn_merge order) and writes the outputs from its registers: x is read once.
 * Progress needs the nchunk blocks of a group resident together; with tickets only the group holding
 * the newest ticket can be incomplete, so nchunk <= the resident capacity (occupancy x SMs, checked
 * on the host) suffices. sync[0] is the ticket, sync[1 + g] group g's counter: arrivals count to
 * nchunk, departures to 2 * nchunk, and the last to depart (or the last ticket) resets it to 0 for
 * the next launch. */
static __device__ __forceinline__ unsigned gn_ld_acquire(const unsigned *p)
{
	unsigned v;
#ifdef __CUDA_ARCH__
	asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
#else /* host-side emulation (tests/emu): blocks are threads */
	v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
#ifdef SF_EMU_H
	emu_yield();
#endif
#endif
	return v;
}

static __device__ __forceinline__ void gn_backoff(void)
{
#ifdef __CUDA_ARCH__
	__nanosleep(GN_SPIN_NS);
#endif
}

/* gn_merge for partials written by other blocks of this launch: coherent (L2) loads, never the
 * read-only path. */
static __device__ __forceinline__ void gn_merge_cg(const float2 *ws, int64_t grp, int64_t cnt, int64_t nchunk,
						   int64_t chunk, float eps, float *red1, float *red2, float *mean,
						   float *rstd)
{
	const float2 *p = ws + grp * nchunk;
	float s = 0.0f;
	for (int64_t j = threadIdx.x; j < nchunk; j += blockDim.x) {
		const int64_t n = cnt - j * chunk < chunk ? cnt - j * chunk : chunk;
		s += (float)n * __ldcg(p + j).x;
	}
	const float m = gn_block_sum(s, red1) / (float)cnt;
	float q = 0.0f;
	for (int64_t j = threadIdx.x; j < nchunk; j += blockDim.x) {
		const int64_t n = cnt - j * chunk < chunk ? cnt - j * chunk : chunk;
		const float2 pj = __ldcg(p + j);
		const float d = pj.x - m;
		q += pj.y + (float)n * d * d;
	}
	*mean = m;
	*rstd = rsqrtf(gn_block_sum(q, red2) / (float)cnt + eps);
}

template <int VPT>
__global__ void __launch_bounds__(GN_THREADS)
	gn_coop(const uint4 *__restrict__ x, const __half *__restrict__ gamma, const __half *__restrict__ beta,
		float2 *ws, unsigned *sync, uint4 *__restrict__ y, int64_t cnt, int64_t nchunk, int64_t cpg, int64_t hw,
		float eps)
{
	__shared__ float red1[32], red2[32], red3[32], red4[32];
	__shared__ unsigned tk[1];
	const int64_t chunk = (int64_t)GN_THREADS * VPT * 8;
	if (threadIdx.x == 0) {
		const unsigned t = atomicAdd(sync, 1u);
		if (t == gridDim.x - 1)
			atomicExch(sync, 0u); /* every ticket is taken */
		tk[0] = t;
	}
	__syncthreads();
	const int64_t b = tk[0], grp = b / nchunk, start = (b % nchunk) * chunk;
	const int64_t len = cnt - start < chunk ? cnt - start : chunk;
	const int64_t nv = len / 8, off = (grp * cnt + start) / 8;
	const int64_t cbase = (grp % GN_GROUPS) * cpg;
	uint4 v[VPT];
#pragma unroll
	for (int k = 0; k < VPT; k++) {
		const int64_t i = threadIdx.x + (int64_t)k * GN_THREADS;
		v[k] = i < nv ? gn_ld_stream(x + off + i) : make_uint4(0, 0, 0, 0);
	}
	float s = 0.0f;
#pragma unroll
	for (int k = 0; k < VPT; k++)
		s += gn_sum8(v[k]);
	const float cmean = gn_block_sum(s, red1) / (float)len;
	float m2 = 0.0f;
#pragma unroll
	for (int k = 0; k < VPT; k++)
		if (threadIdx.x + (int64_t)k * GN_THREADS < nv)
			m2 += gn_dev8(v[k], cmean);
	m2 = gn_block_sum(m2, red2);
	unsigned *gc = sync + 1 + grp;
	if (threadIdx.x == 0) {
		ws[b] = make_float2(cmean, m2);
		__threadfence(); /* the partial is visible before the arrival */
		atomicAdd(gc, 1u);
		while (gn_ld_acquire(gc) < (unsigned)nchunk)
			gn_backoff(); /* fewer polls of L2 while the group's other chunks load */
		__threadfence();
	}
	__syncthreads();
	float mean, rstd;
	gn_merge_cg(ws, grp, cnt, nchunk, chunk, eps, red3, red4, &mean, &rstd);
	if (threadIdx.x == 0 && atomicAdd(gc, 1u) == 2u * (unsigned)nchunk - 1u)
		atomicExch(gc, 0u); /* every block of the group has read the partials */
#pragma unroll
	for (int k = 0; k < VPT; k++) {
		const int64_t i = threadIdx.x + (int64_t)k * GN_THREADS;
		if (i < nv)
			gn_st(y + off + i, gn_apply8(v[k], (unsigned)(start + i * 8), (unsigned)hw, gamma + cbase, beta + cbase, mean, rstd));
	}
}


#include "gn_shared.cuh"
#include "gn_ring.cuh"
#include "gn_l2win.cuh"
#include "gn_cluster.cuh"
#include "gn_odd.cuh"
#include "gn_clreg.cuh"
#include "gn_host.cuh"

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 4 || call->n_outputs != 1)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *x = &call->inputs[0], *gamma = &call->inputs[1], *beta = &call->inputs[2];
	const sf_tensor *y = &call->outputs[0];
	if (x->ndim != 4 || gamma->ndim != 1 || beta->ndim != 1 || y->ndim != 4 || !gn_is_f16(x) || !gn_is_f16(gamma) ||
	    !gn_is_f16(beta) || !gn_is_f16(y))
		return SF_ERR_UNSUPPORTED;
	const int64_t N = x->shape[0], C = x->shape[1], HW = x->shape[2] * x->shape[3];
	if (C % GN_GROUPS != 0 || gamma->shape[0] != C || beta->shape[0] != C || sf_numel(y) != sf_numel(x))
		return SF_ERR_UNSUPPORTED;
	if (N == 0 || C == 0 || HW == 0)
		return SF_OK;
	const int64_t cpg = C / GN_GROUPS, cnt = cpg * HW, groups = N * GN_GROUPS;
	const float eps = (float)call->scalars[3];
	cudaStream_t s = (cudaStream_t)call->stream;
	const int vec = cnt % 8 == 0 && cnt <= 2147483647 && gn_aligned(x->data) && gn_aligned(y->data);
	const __half *gp = (const __half *)gamma->data, *bp = (const __half *)beta->data;
	if (vec && cnt <= GN_FUSED_MAX && cnt <= (int64_t)GN_FUSED_THREADS * 16 * 8 && groups <= 2147483647) {
		int threads = 0;
		const int vpt = gn_pick_fused(cnt / 8, &threads);
		const uint4 *xv = (const uint4 *)x->data;
		uint4 *yv = (uint4 *)y->data;
		const unsigned g = (unsigned)groups;
		switch (vpt) {
		case 1: gn_fused<1><<<g, threads, 0, s>>>(xv, gp, bp, yv, cnt / 8, cpg, HW, eps); break;
		case 2: gn_fused<2><<<g, threads, 0, s>>>(xv, gp, bp, yv, cnt / 8, cpg, HW, eps); break;
		case 4: gn_fused<4><<<g, threads, 0, s>>>(xv, gp, bp, yv, cnt / 8, cpg, HW, eps); break;
		case 8: gn_fused<8><<<g, threads, 0, s>>>(xv, gp, bp, yv, cnt / 8, cpg, HW, eps); break;
		case 16: gn_fused<16><<<g, threads, 0, s>>>(xv, gp, bp, yv, cnt / 8, cpg, HW, eps); break;
		default: return SF_ERR_INTERNAL;
		}
		return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
	}
	if (GN_ODD && !vec && cnt <= GN_ODD_MAX) { /* v6: odd or unaligned small groups in one launch */
		if (gn_odd_launch((const __half *)x->data, gp, bp, (__half *)y->data, cnt, groups, cpg, HW, eps, s) == cudaSuccess)
			return SF_OK;
		(void)cudaGetLastError(); /* a launch refused for its configuration (not sticky): the split path */
	}
	struct gn_clr_plan crp;
	if (GN_CLR && vec && gn_plan_clr(cnt, groups, HW, &crp)) { /* v6: one cluster per mid-size group */
		if (gn_clr_launch(&crp, (const uint4 *)x->data, gp, bp, (uint4 *)y->data, cnt, groups, cpg, HW, eps, s) == cudaSuccess)
			return SF_OK;
		(void)cudaGetLastError(); /* a launch refused for its configuration (not sticky): the paths below */
	}
	struct gn_cl_plan clp;
	if (GN_CLUSTER && vec && gn_plan_cl(cnt, groups, cpg, HW, &clp)) {
		if (gn_cl_launch(&clp, (const uint4 *)x->data, gp, bp, (uint4 *)y->data, cnt, groups, cpg, HW, eps, s) == cudaSuccess)
			return SF_OK;
		(void)cudaGetLastError(); /* a launch refused for its configuration (not sticky): the paths below */
	}
	struct gn_l2w_plan lp;
	if (GN_L2WIN && vec && gn_plan_l2w(cnt, groups, &lp)) {
		if (gn_workspace(lp.total) || gn_sync_area(4 * groups + 4))
			return SF_ERR_CUDA;
		gn_l2w<<<(unsigned)lp.grid, GN_L2W_THREADS, 0, s>>>((const uint4 *)x->data, gp, bp, gn_ws, gn_sync + 4,
								     (uint4 *)y->data, (int)cnt, (int)lp.nchunk, (int)lp.total, lp.look,
								     (int)cpg, (int)HW, eps);
		if (cudaGetLastError() == cudaSuccess)
			return SF_OK;
		/* a launch refused for its configuration (not sticky): the paths below */
	}
	struct gn_ring_plan rp;
	if (GN_RING && vec && gn_plan_ring(cnt, groups, &rp)) {
		if (gn_workspace(groups * rp.nchunk) || gn_sync_area(groups))
			return SF_ERR_CUDA;
		gn_ring<<<(unsigned)rp.grid, GN_RING_THREADS, rp.smem, s>>>((const uint4 *)x->data, gp, bp, gn_ws, gn_sync,
									  (uint4 *)y->data, cnt, rp.cv, rp.nchunk,
									  groups * rp.nchunk, rp.look, cpg, HW, eps);
		if (cudaGetLastError() == cudaSuccess)
			return SF_OK;
		/* a launch refused for its configuration (not sticky): the paths below */
	}
	int64_t cn = 0;
	const int cvpt = vec && GN_COOP ? gn_pick_coop(cnt, &cn) : 0;
	if (cvpt && groups * cn <= 2147483647) {
		if (gn_workspace(groups * cn) || gn_sync_area(groups))
			return SF_ERR_CUDA;
		const uint4 *xv = (const uint4 *)x->data;
		uint4 *yv = (uint4 *)y->data;
		const unsigned g = (unsigned)(groups * cn);
		switch (cvpt) {
		case 2: gn_coop<2><<<g, GN_THREADS, 0, s>>>(xv, gp, bp, gn_ws, gn_sync, yv, cnt, cn, cpg, HW, eps); break;
		case 4: gn_coop<4><<<g, GN_THREADS, 0, s>>>(xv, gp, bp, gn_ws, gn_sync, yv, cnt, cn, cpg, HW, eps); break;
		case 8: gn_coop<8><<<g, GN_THREADS, 0, s>>>(xv, gp, bp, gn_ws, gn_sync, yv, cnt, cn, cpg, HW, eps); break;
		case 16: gn_coop<16><<<g, GN_THREADS, 0, s>>>(xv, gp, bp, gn_ws, gn_sync, yv, cnt, cn, cpg, HW, eps); break;
		default: return SF_ERR_INTERNAL;
		}
		return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
	}
	const int64_t nchunk = (cnt + GN_CHUNK - 1) / GN_CHUNK, total = groups * nchunk;
	if (total > 2147483647)
		return SF_ERR_UNSUPPORTED;
	if (gn_workspace(total))
		return SF_ERR_CUDA;
#if GN_L2CHUNK_KB
	if (vec) { /* ranges of groups within a sample, each ~GN_L2CHUNK_KB: its apply re-reads x from L2 */
		const int64_t per0 = ((int64_t)GN_L2CHUNK_KB << 10) / (cnt * 2), per = per0 < 1 ? 1 : per0;
		for (int64_t n = 0; n < N; n++)
			for (int64_t g0 = 0; g0 < GN_GROUPS; g0 += per) {
				const int64_t r = GN_GROUPS - g0 < per ? GN_GROUPS - g0 : per, G = n * GN_GROUPS + g0;
				const uint4 *xr = (const uint4 *)x->data + G * (cnt / 8);
				gn_stats_vec<<<(unsigned)(r * nchunk), GN_THREADS, 0, s>>>(xr, gn_ws + G * nchunk, cnt, nchunk);
				/* gamma / beta from the range's first channel: the kernel's group index is range-relative */
				gn_apply_vec<<<(unsigned)(r * nchunk), GN_THREADS, 0, s>>>(xr, gp + g0 * cpg, bp + g0 * cpg, gn_ws + G * nchunk,
											(uint4 *)y->data + G * (cnt / 8), cnt, nchunk, cpg, HW, eps);
			}
		return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
	}
#endif
	if (vec) {
		gn_stats_vec<<<(unsigned)total, GN_THREADS, 0, s>>>((const uint4 *)x->data, gn_ws, cnt, nchunk);
		gn_apply_vec<<<(unsigned)total, GN_THREADS, 0, s>>>((const uint4 *)x->data, gp, bp, gn_ws,
								     (uint4 *)y->data, cnt, nchunk, cpg, HW, eps);
	} else {
		gn_stats_scalar<<<(unsigned)total, GN_THREADS, 0, s>>>((const __half *)x->data, gn_ws, cnt, nchunk);
		gn_apply_scalar<<<(unsigned)total, GN_THREADS, 0, s>>>((const __half *)x->data, gp, bp, gn_ws,
								        (__half *)y->data, cnt, nchunk, cpg, HW, eps);
	}
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
