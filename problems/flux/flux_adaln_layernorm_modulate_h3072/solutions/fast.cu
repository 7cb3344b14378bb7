/*
 * fast.cu - flux_adaln_layernorm_modulate_h3072 (FLUX.1-dev AdaLN-Zero), the bandwidth-bound version:
 *     y = bf16(LayerNorm(x) * (1 + scale[b]) + shift[b])     LayerNorm without affine, biased variance
 * computed in float32 and rounded once (as the oracle, in double).
 *
 * One pass over the data: one block per token row, the row held in registers as 16-byte vectors (VPT
 * vectors of 8 bf16 per thread, loaded with ld.global.nc.L1::no_allocate before any arithmetic, the
 * sample's shift and scale slices loaded alongside), the mean and then the variance of the deviations
 * (two block reductions over the registers: exact two-pass statistics without a second read), then
 * the outputs with 16-byte stores. VPT and the block size are chosen per row width so that no slot is
 * wasted (3072: 4 vectors x 96 threads). Rows whose width is not a multiple of 8, pointers that are
 * not 16-byte aligned and rows wider than 512 * 8 vectors take a scalar fallback that reads x three
 * times. Any batch and sequence length (up to 2^31 - 1 rows).
 *
 * Tuning knobs (-D): RMS_VPT_PREF preferred vectors per thread when several fit equally well,
 * RMS_ST_CS 1 = streaming (evict-first) stores.
 * Since session 12: ADL_CONST_H (3072 by default; 0 = off) runs rows of that width, in calls of at most
 * ADL_CONST_ROWS rows, on rms_vec_c: the same body with the width, the block size and h compile-time
 * constants (no bounds tests, the block sums' final loops unrolled); other widths and larger calls take
 * the runtime rms_vec (NOTES.md, session 12).
 */
// solforge-tune: RMS_VPT_PREF=4,2,8 RMS_ST_CS=0,1
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include "solforge/solution.h"

#ifndef RMS_VPT_PREF
#define RMS_VPT_PREF 4
#endif
#ifndef RMS_ST_CS
#define RMS_ST_CS 0
#endif
/* ADL_CONST_H > 0: rows of this width, in calls of at most ADL_CONST_ROWS rows (B * S), run rms_vec_c, the
 * row width and block size compile-time constants (session 12, NOTES.md); 0: runtime widths only (session
 * 10's PTX). ADL_CONST_ROWS: rms_vec_c<4> holds 80 registers against rms_vec<4>'s 62 (8 blocks of 96
 * threads per SM against 10); up to 132 x 8 rows every block is resident at once either way. */
#ifndef ADL_CONST_H
#define ADL_CONST_H 3072
#endif
#ifndef ADL_CONST_ROWS
#define ADL_CONST_ROWS 1056
#endif
#define RMS_MAX_THREADS 512
#define RMS_FALLBACK_THREADS 256

/* 16-byte load that bypasses L1 (the row is read once). */
static __device__ __forceinline__ uint4 rms_ld_stream(const uint4 *p)
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

static __device__ __forceinline__ void rms_st(uint4 *p, uint4 v)
{
#if RMS_ST_CS
	__stcs(p, v);
#else
	*p = v;
#endif
}

/* The two bf16 of a 32-bit word as floats (element 2k is the low half): exact. */
static __device__ __forceinline__ float rms_lo(uint32_t u)
{
	return __uint_as_float(u << 16);
}
static __device__ __forceinline__ float rms_hi(uint32_t u)
{
	return __uint_as_float(u & 0xffff0000u);
}
/* Two floats rounded to bf16 (nearest even), a in the low half. */
static __device__ __forceinline__ uint32_t rms_pack(float a, float b)
{
	__nv_bfloat162 h = __floats2bfloat162_rn(a, b);
	return *reinterpret_cast<uint32_t *>(&h);
}

/* Sum of v over the block; every thread gets the same total. blockDim.x is a multiple of 32 and at
 * most 1024; red[] is used once per kernel (no reuse, so no trailing barrier). NW > 0: the block has
 * exactly NW warps (a compile-time trip count: the final loop unrolled, same order, same total). */
template <int NW>
static __device__ __forceinline__ float rms_block_sum(float v, float *red)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	if ((threadIdx.x & 31) == 0)
		red[threadIdx.x >> 5] = v;
	__syncthreads();
	const int nw = NW > 0 ? NW : (int)(blockDim.x >> 5);
	float t = 0.0f;
	for (int i = 0; i < nw; i++)
		t += red[i];
	return t;
}

/* (x - mean) * rstd * (1 + scale) + shift for the two elements of a word. */
static __device__ __forceinline__ uint32_t rms_word(uint32_t xw, uint32_t shw, uint32_t scw, float mean, float rstd)
{
	const float a = (rms_lo(xw) - mean) * rstd * (1.0f + rms_lo(scw)) + rms_lo(shw);
	const float b = (rms_hi(xw) - mean) * rstd * (1.0f + rms_hi(scw)) + rms_hi(shw);
	return rms_pack(a, b);
}

/* One block per row of nvec 16-byte vectors; thread t holds vectors t, t + blockDim.x, ...
 * Rows of sample b = row / S use shift and scale row b; h = the row width as a float. NV > 0 (rms_vec_c):
 * nvec = NV, h = 8 * NV and the block is adl_threads(NV, VPT) threads, all compile-time constants
 * (no bounds tests when the block holds the row exactly, the block sums' final loops unrolled, the
 * two divisions by a constant); the runtime nvec_rt and h_rt are then ignored. red1, red2: the
 * kernel's two shared arrays of 32 floats. */
static __host__ __device__ constexpr int adl_threads(int nvec, int vpt)
{
	return ((nvec + vpt - 1) / vpt + 31) / 32 * 32;
}
template <int VPT, int NV>
static __device__ __forceinline__ void rms_vec_body(const uint4 *__restrict__ x, const uint4 *__restrict__ shift,
						    const uint4 *__restrict__ scale, uint4 *__restrict__ y,
						    int nvec_rt, unsigned S, float h_rt, float eps, float *red1,
						    float *red2)
{
	const int nvec = NV > 0 ? NV : nvec_rt;
	const float h = NV > 0 ? (float)(8 * NV) : h_rt;
	constexpr bool full = NV > 0 && adl_threads(NV, VPT) * VPT == NV; /* every slot holds a vector */
	constexpr int NW = NV > 0 ? adl_threads(NV, VPT) / 32 : 0;
	const unsigned row = blockIdx.x, b = row / S;
	const uint4 *xr = x + (size_t)row * (size_t)nvec;
	const uint4 *shr = shift + (size_t)b * (size_t)nvec, *scr = scale + (size_t)b * (size_t)nvec;
	uint4 *yr = y + (size_t)row * (size_t)nvec;
	uint4 xv[VPT], shv[VPT], scv[VPT];
#pragma unroll
	for (int k = 0; k < VPT; k++) {
		const int i = (int)threadIdx.x + k * (NV > 0 ? adl_threads(NV, VPT) : (int)blockDim.x);
		if (full || i < nvec) {
			xv[k] = rms_ld_stream(xr + i);
			shv[k] = __ldg(shr + i);
			scv[k] = __ldg(scr + i);
		} else {
			xv[k] = make_uint4(0, 0, 0, 0);
			shv[k] = xv[k];
			scv[k] = xv[k];
		}
	}
	float sum = 0.0f;
#pragma unroll
	for (int k = 0; k < VPT; k++) {
		const uint32_t u[4] = { xv[k].x, xv[k].y, xv[k].z, xv[k].w };
#pragma unroll
		for (int j = 0; j < 4; j++)
			sum += rms_lo(u[j]) + rms_hi(u[j]);
	}
	const float mean = rms_block_sum<NW>(sum, red1) / h;
	float sq = 0.0f;
#pragma unroll
	for (int k = 0; k < VPT; k++) {
		const int i = (int)threadIdx.x + k * (NV > 0 ? adl_threads(NV, VPT) : (int)blockDim.x);
		if (full || i < nvec) { /* idle slots hold zeros, not the mean: leave them out */
			const uint32_t u[4] = { xv[k].x, xv[k].y, xv[k].z, xv[k].w };
#pragma unroll
			for (int j = 0; j < 4; j++) {
				const float d0 = rms_lo(u[j]) - mean, d1 = rms_hi(u[j]) - mean;
				sq += d0 * d0;
				sq += d1 * d1;
			}
		}
	}
	const float rstd = rsqrtf(rms_block_sum<NW>(sq, red2) / h + eps);
#pragma unroll
	for (int k = 0; k < VPT; k++) {
		const int i = (int)threadIdx.x + k * (NV > 0 ? adl_threads(NV, VPT) : (int)blockDim.x);
		if (full || i < nvec) {
			uint4 o;
			o.x = rms_word(xv[k].x, shv[k].x, scv[k].x, mean, rstd);
			o.y = rms_word(xv[k].y, shv[k].y, scv[k].y, mean, rstd);
			o.z = rms_word(xv[k].z, shv[k].z, scv[k].z, mean, rstd);
			o.w = rms_word(xv[k].w, shv[k].w, scv[k].w, mean, rstd);
			rms_st(yr + i, o);
		}
	}
}

template <int VPT>
__global__ void __launch_bounds__(RMS_MAX_THREADS)
	rms_vec(const uint4 *__restrict__ x, const uint4 *__restrict__ shift, const uint4 *__restrict__ scale,
		uint4 *__restrict__ y, int nvec, unsigned S, float h, float eps)
{
	__shared__ float red1[32], red2[32];
	rms_vec_body<VPT, 0>(x, shift, scale, y, nvec, S, h, eps, red1, red2);
}

#if ADL_CONST_H > 0
/* the definition's row (H = ADL_CONST_H) and rms_pick's block for it as compile-time constants */
template <int VPT>
__global__ void __launch_bounds__(RMS_MAX_THREADS)
	rms_vec_c(const uint4 *__restrict__ x, const uint4 *__restrict__ shift, const uint4 *__restrict__ scale,
		  uint4 *__restrict__ y, int nvec, unsigned S, float h, float eps)
{
	__shared__ float red1[32], red2[32];
	rms_vec_body<VPT, ADL_CONST_H / 8>(x, shift, scale, y, nvec, S, h, eps, red1, red2);
}
#else
#define rms_vec_c rms_vec
#endif

/* Any shape or alignment: one block per row, scalar, x read three times. */
__global__ void __launch_bounds__(RMS_FALLBACK_THREADS)
	rms_scalar(const __nv_bfloat16 *__restrict__ x, const __nv_bfloat16 *__restrict__ shift,
		   const __nv_bfloat16 *__restrict__ scale, __nv_bfloat16 *__restrict__ y, int64_t S, int64_t H,
		   float eps)
{
	__shared__ float red1[32], red2[32];
	const int64_t row = (int64_t)blockIdx.x * H, b = (int64_t)blockIdx.x / S;
	float sum = 0.0f;
	for (int64_t j = threadIdx.x; j < H; j += blockDim.x)
		sum += __bfloat162float(x[row + j]);
	const float mean = rms_block_sum<0>(sum, red1) / (float)H;
	float sq = 0.0f;
	for (int64_t j = threadIdx.x; j < H; j += blockDim.x) {
		const float d = __bfloat162float(x[row + j]) - mean;
		sq += d * d;
	}
	const float rstd = rsqrtf(rms_block_sum<0>(sq, red2) / (float)H + eps);
	for (int64_t j = threadIdx.x; j < H; j += blockDim.x) {
		const float xn = (__bfloat162float(x[row + j]) - mean) * rstd;
		y[row + j] = __float2bfloat16_rn(xn * (1.0f + __bfloat162float(scale[b * H + j])) +
						 __bfloat162float(shift[b * H + j]));
	}
}

static int rms_is_bf16(const sf_tensor *t)
{
	return t->dtype.code == SF_CODE_BFLOAT && t->dtype.bits == 16 && t->dtype.lanes == 1;
}

static int rms_aligned(const void *p)
{
	return ((uintptr_t)p & 15u) == 0;
}

/* Picks vectors per thread and the block size for a row of nvec vectors: the fewest idle slots,
 * ties to the preferred VPT. Returns 0 when no block of <= RMS_MAX_THREADS threads holds the row. */
static int rms_pick(int nvec, int *threads)
{
	static const int cand[] = { RMS_VPT_PREF, 4, 3, 6, 2, 8, 1 };
	int best = 0, best_waste = 1 << 30;
	for (unsigned c = 0; c < sizeof cand / sizeof cand[0]; c++) {
		const int v = cand[c];
		int t = (nvec + v - 1) / v;
		t = (t + 31) / 32 * 32;
		if (t > RMS_MAX_THREADS)
			continue;
		const int waste = t * v - nvec;
		if (waste < best_waste) {
			best = v;
			best_waste = waste;
			*threads = t;
		}
	}
	return best;
}

/* The vpt-V launch: the compile-time-width instance rms_vec_c when cw, else rms_vec (the same arguments). */
template <int V, typename... A>
static void rms_launch(int cw, unsigned grid, int threads, cudaStream_t s, A... args)
{
	if (cw)
		rms_vec_c<V><<<grid, threads, 0, s>>>(args...);
	else
		rms_vec<V><<<grid, threads, 0, s>>>(args...);
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 4 || call->n_outputs != 1)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *x = &call->inputs[0], *sh = &call->inputs[1], *sc = &call->inputs[2];
	const sf_tensor *y = &call->outputs[0];
	if (x->ndim != 3 || sh->ndim != 2 || sc->ndim != 2 || y->ndim != 3 || !rms_is_bf16(x) || !rms_is_bf16(sh) ||
	    !rms_is_bf16(sc) || !rms_is_bf16(y))
		return SF_ERR_UNSUPPORTED;
	const int64_t B = x->shape[0], S = x->shape[1], H = x->shape[2];
	if (sh->shape[0] != B || sh->shape[1] != H || sc->shape[0] != B || sc->shape[1] != H || y->shape[0] != B ||
	    y->shape[1] != S || y->shape[2] != H || B * S > 2147483647)
		return SF_ERR_UNSUPPORTED;
	const int64_t rows = B * S;
	if (rows == 0 || H == 0)
		return SF_OK;
	const float eps = (float)call->scalars[3];
	cudaStream_t s = (cudaStream_t)call->stream;
	int threads = 0, vpt = 0;
	if (H % 8 == 0 && H / 8 <= 8 * RMS_MAX_THREADS && rms_aligned(x->data) && rms_aligned(sh->data) &&
	    rms_aligned(sc->data) && rms_aligned(y->data))
		vpt = rms_pick((int)(H / 8), &threads);
	const uint4 *xv = (const uint4 *)x->data, *shv = (const uint4 *)sh->data, *scv = (const uint4 *)sc->data;
	uint4 *yv = (uint4 *)y->data;
	const int nvec = (int)(H / 8);
	const unsigned grid = (unsigned)rows, su = (unsigned)S;
#if ADL_CONST_H > 0
	const int cw = vpt > 0 && H == ADL_CONST_H && rows <= (int64_t)ADL_CONST_ROWS &&
		       threads == adl_threads(nvec, vpt);
#else
	const int cw = 0; /* rms_vec_c is rms_vec: the branch folds */
#endif
	switch (vpt) {
	case 1:
		rms_launch<1>(cw, grid, threads, s, xv, shv, scv, yv, nvec, su, (float)H, eps);
		break;
	case 2:
		rms_launch<2>(cw, grid, threads, s, xv, shv, scv, yv, nvec, su, (float)H, eps);
		break;
	case 3:
		rms_launch<3>(cw, grid, threads, s, xv, shv, scv, yv, nvec, su, (float)H, eps);
		break;
	case 4:
		rms_launch<4>(cw, grid, threads, s, xv, shv, scv, yv, nvec, su, (float)H, eps);
		break;
	case 6:
		rms_launch<6>(cw, grid, threads, s, xv, shv, scv, yv, nvec, su, (float)H, eps);
		break;
	case 8:
		rms_launch<8>(cw, grid, threads, s, xv, shv, scv, yv, nvec, su, (float)H, eps);
		break;
	default:
		rms_scalar<<<grid, RMS_FALLBACK_THREADS, 0, s>>>(
			(const __nv_bfloat16 *)x->data, (const __nv_bfloat16 *)sh->data, (const __nv_bfloat16 *)sc->data,
			(__nv_bfloat16 *)y->data, S, H, eps);
	}
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
