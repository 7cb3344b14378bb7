/*
 * fast.cu - fused_add_rmsnorm_h4096 (Llama-3.1-8B residual add + LlamaRMSNorm), bandwidth-bound:
 *     residual_out = bf16(hidden_states + residual)
 *     output       = bf16(weight * bf16(residual_out * rsqrt(mean(residual_out^2) + eps)))
 * (the norm reads the rounded sum; HF's bf16 cast of the normalized value; as the oracle).
 *
 * One pass over the data: one block per row, both input rows held in registers as 16-byte vectors
 * (VPT vectors of 8 bf16 per thread, loaded with plain ld.global (RMS_NC 1: ld.global.nc.L1::no_allocate) before any arithmetic,
 * the weight slice loaded alongside); the rounded sums are stored to residual_out at once and kept
 * in registers; warp-shuffle + shared-memory sum of squares (its final step
 * unrolled, the mean as sum * (1/H): session 9), then the outputs from the registers
 * with 16-byte stores. VPT and the block size are chosen per row width so that no
 * slot is wasted (4096: 4 vectors x 128 threads; up to RMS_SMALL_T rows: 1 vector x 512 threads, so
 * the per-thread math chain that sets the latency of a small batch is 4x shorter). Rows whose width is not a multiple of 8, pointers
 * that are not 16-byte aligned and rows wider than 512 * 8 vectors take a scalar two-read fallback.
 * Any batch size (0 .. 2^31 - 1 rows).
 *
 * Tuning knobs (-D): RMS_VPT_PREF preferred vectors per thread when several fit equally well,
 * RMS_SMALL_T most rows that take the most threads per row, RMS_NC 0 = plain loads instead of
 * ld.global.nc / __ldg,
 * RMS_ST_CS 1 = streaming (evict-first) stores,
 * RMS_SUM_UNROLL 0 / RMS_MEAN_MUL 0 (rms_rowops.cuh) = the block sum's loop and the fp32 division
 * of session 8 instead of the unrolled final sum and sum * (1/H) at <= 2 vectors per thread
 * (session 9, NOTES.md).
 * Since session 12: RMS_CONST_H (the definition's H by default; 0 = off) runs rows of that width, in calls of
 * at most RMS_CONST_ROWS rows, on rms_vec_c, the same body with nvec and rms_pick's block size as
 * compile-time constants (no bounds tests where the block holds the row exactly); other widths and larger
 * calls take the runtime rms_vec (NOTES.md, session 12).
 */
// solforge-tune: RMS_VPT_PREF=4,2,8 RMS_SMALL_T=256,0,64,1024 RMS_NC=0,1 RMS_ST_CS=0,1
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include "solforge/solution.h"

#ifndef RMS_VPT_PREF
#define RMS_VPT_PREF 4
#endif
#ifndef RMS_SMALL_T
#define RMS_SMALL_T 256 /* batches up to this many rows take the most threads per row (rms_pick); measured in session 7: t1-t64 24-28% faster than 0, t3000 equal (NOTES.md) */
#endif
#ifndef RMS_NC /* 1: row inputs by ld.global.nc.L1::no_allocate, weights by __ldg; 0: plain ld.global (Triton's) */
#define RMS_NC 0 /* measured on the H200 in session 8 (NOTES.md): plain loads 1.8-3.6% faster from 3000 rows, +-1% below */
#endif
#ifndef RMS_ST_CS
#define RMS_ST_CS 0
#endif
/* RMS_CONST_H > 0: rows of this width, in calls of at most RMS_CONST_ROWS rows, run rms_vec_c (nvec and
 * rms_pick's block size compile-time constants: no bounds tests when the block holds the row exactly, row
 * offsets by a constant; session 12, NOTES.md); 0: runtime widths only (session 9's PTX). RMS_CONST_ROWS:
 * without the bounds tests ptxas keeps more live at 3+ vectors per thread (rmsnorm rms_vec_c<4> 63 against
 * rms_vec<4> 48 registers, gemma <3> 56 against 39), fewer blocks per SM where the bandwidth-bound sizes
 * need them; 256 rows are resident at once either way. */
#ifndef RMS_CONST_H
#define RMS_CONST_H 4096
#endif
#ifndef RMS_CONST_ROWS
#define RMS_CONST_ROWS 256
#endif
#define RMS_MAX_THREADS 512
#define RMS_FALLBACK_THREADS 256
#define RMS_ROW_NVEC 512 /* 4096 / 8: the problem's row, whose block sizes get the unrolled block sum (rms_rowops.cuh) */

#include "../../../common/kernels/rms_rowops.cuh"

/* bf16(a + b) of two packed pairs: the float32 sum of two bf16 is exact (or within far less than half
 * a bf16 ulp when their exponents differ by more than 16), so one rounding gives the bf16 sum. */
static __device__ __forceinline__ uint32_t rms_add(uint32_t a, uint32_t b)
{
	return rms_pack(rms_lo(a) + rms_lo(b), rms_hi(a) + rms_hi(b));
}

static __device__ __forceinline__ uint32_t rms_word(uint32_t xw, uint32_t ww, float rstd)
{
	const float n0 = rms_round(rms_lo(xw) * rstd), n1 = rms_round(rms_hi(xw) * rstd);
	return rms_pack(rms_lo(ww) * n0, rms_hi(ww) * n1);
}

/* One block per row of nvec 16-byte vectors; thread t holds vectors t, t + blockDim.x, ...; hs is
 * rms_hscale<VPT>(H). A block of rms_warps(RMS_ROW_NVEC, VPT) warps (the problem's row) sums its warps'
 * partials unrolled (rms_block_sum<NW>); other row widths take the loop. */
/* The row kernel's body (rms_vec, rms_vec_c): NV > 0 fixes nvec = NV and the block at rms_warps(NV, VPT) warps
 * (rms_pick's block for that row: the host launches rms_vec_c only with it); red: the kernel's shared rms_red_t
 * array as floats. NV = 0: nvec_rt and blockDim.x (the PTX of session 9's kernel). */
template <int VPT, int NV>
static __device__ __forceinline__ void rms_vec_body(const uint4 *__restrict__ x, const uint4 *__restrict__ r,
						    const uint4 *__restrict__ w, uint4 *__restrict__ y,
						    uint4 *__restrict__ r_out, int nvec_rt, float hs, float eps,
						    float *red)
{
	const int nvec = NV > 0 ? NV : nvec_rt;
	constexpr bool full = NV > 0 && rms_warps(NV, VPT) * 32 * VPT == NV; /* every slot holds a vector */
	const size_t off = (size_t)blockIdx.x * (size_t)nvec;
	const uint4 *xr = x + off, *rr = r + off;
	uint4 *yr = y + off, *ro = r_out + off;
	uint4 xv[VPT], rv[VPT], wv[VPT];
#pragma unroll
	for (int k = 0; k < VPT; k++) {
		const int i = (int)threadIdx.x + k * (NV > 0 ? rms_warps(NV, VPT) * 32 : (int)blockDim.x);
		if (full || i < nvec) {
			xv[k] = rms_ld_stream(xr + i);
			rv[k] = rms_ld_stream(rr + i);
			wv[k] = rms_ld_w(w + i);
		} else {
			xv[k] = make_uint4(0, 0, 0, 0);
			rv[k] = xv[k];
			wv[k] = xv[k];
		}
	}
	/* xv[k] becomes the rounded sum (zero in idle slots: 0 + 0) */
#pragma unroll
	for (int k = 0; k < VPT; k++) {
		xv[k].x = rms_add(xv[k].x, rv[k].x);
		xv[k].y = rms_add(xv[k].y, rv[k].y);
		xv[k].z = rms_add(xv[k].z, rv[k].z);
		xv[k].w = rms_add(xv[k].w, rv[k].w);
		const int i = (int)threadIdx.x + k * (NV > 0 ? rms_warps(NV, VPT) * 32 : (int)blockDim.x);
		if (full || i < nvec)
			rms_st(ro + i, xv[k]);
	}
	float ss = 0.0f;
#pragma unroll
	for (int k = 0; k < VPT; k++) {
		const uint32_t u[4] = { xv[k].x, xv[k].y, xv[k].z, xv[k].w };
#pragma unroll
		for (int j = 0; j < 4; j++) {
			const float a = rms_lo(u[j]), b = rms_hi(u[j]);
			ss += a * a;
			ss += b * b;
		}
	}
	const float total = rms_block_sum<rms_warps(RMS_ROW_NVEC, VPT)>(ss, red);
	const float rstd = rsqrtf(rms_mean<VPT>(total, hs) + eps);
#pragma unroll
	for (int k = 0; k < VPT; k++) {
		const int i = (int)threadIdx.x + k * (NV > 0 ? rms_warps(NV, VPT) * 32 : (int)blockDim.x);
		if (full || i < nvec) {
			uint4 o;
			o.x = rms_word(xv[k].x, wv[k].x, rstd);
			o.y = rms_word(xv[k].y, wv[k].y, rstd);
			o.z = rms_word(xv[k].z, wv[k].z, rstd);
			o.w = rms_word(xv[k].w, wv[k].w, rstd);
			rms_st(yr + i, o);
		}
	}
}

template <int VPT>
__global__ void __launch_bounds__(RMS_MAX_THREADS)
	rms_vec(const uint4 *__restrict__ x, const uint4 *__restrict__ r, const uint4 *__restrict__ w,
		uint4 *__restrict__ y, uint4 *__restrict__ r_out, int nvec, float hs, float eps)
{
	__shared__ rms_red_t red[RMS_RED_N];
	rms_vec_body<VPT, 0>(x, r, w, y, r_out, nvec, hs, eps, (float *)red);
}

#if RMS_CONST_H > 0
/* the definition's row (H = RMS_CONST_H: nvec = RMS_CONST_H / 8) and the block of rms_pick for it
 * (rms_warps(nvec, VPT) warps) as compile-time constants; the host takes it only for that H and block */
template <int VPT>
__global__ void __launch_bounds__(RMS_MAX_THREADS)
	rms_vec_c(const uint4 *__restrict__ x, const uint4 *__restrict__ r, const uint4 *__restrict__ w,
		uint4 *__restrict__ y, uint4 *__restrict__ r_out, int nvec, float hs, float eps)
{
	__shared__ rms_red_t red[RMS_RED_N];
	rms_vec_body<VPT, RMS_CONST_H / 8>(x, r, w, y, r_out, nvec, hs, eps, (float *)red);
}
#else
#define rms_vec_c rms_vec
#endif

/* Any shape or alignment: one block per row, scalar, the row read twice. */
__global__ void __launch_bounds__(RMS_FALLBACK_THREADS)
	rms_scalar(const __nv_bfloat16 *__restrict__ x, const __nv_bfloat16 *__restrict__ r,
		   const __nv_bfloat16 *__restrict__ w, __nv_bfloat16 *__restrict__ y, __nv_bfloat16 *__restrict__ r_out,
		   int64_t H, float eps)
{
	__shared__ float red[32];
	const int64_t row = (int64_t)blockIdx.x * H;
	float ss = 0.0f;
	for (int64_t j = threadIdx.x; j < H; j += blockDim.x) {
		const float v = rms_round(__bfloat162float(x[row + j]) + __bfloat162float(r[row + j]));
		r_out[row + j] = __float2bfloat16_rn(v);
		ss += v * v;
	}
	const float rstd = rsqrtf(rms_block_sum(ss, red) / (float)H + eps);
	for (int64_t j = threadIdx.x; j < H; j += blockDim.x) {
		const float v = rms_round(__bfloat162float(x[row + j]) + __bfloat162float(r[row + j]));
		const float n = rms_round(v * rstd);
		y[row + j] = __float2bfloat16_rn(__bfloat162float(w[j]) * n);
	}
}

/* Picks vectors per thread and the block size for a row of nvec vectors: the fewest idle slots,
 * ties to the preferred VPT, or with `wide` (few rows: the grid does not fill the GPU and each
 * block's serial per-thread math is the latency) to the fewest vectors per thread, i.e. the most
 * threads. Returns 0 when no block of <= RMS_MAX_THREADS threads holds the row. */
static int rms_pick(int nvec, int wide, int *threads)
{
	static const int cand[] = { RMS_VPT_PREF, 4, 3, 6, 2, 8, 1 };
	static const int cand_wide[] = { 1, 2, 3, 4, 6, 8, 1 };
	int best = 0, best_waste = 1 << 30;
	for (unsigned c = 0; c < sizeof cand / sizeof cand[0]; c++) {
		const int v = wide ? cand_wide[c] : cand[c];
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
	if (call->n_inputs != 4 || call->n_outputs != 2)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *x = &call->inputs[0], *r = &call->inputs[1], *w = &call->inputs[2];
	const sf_tensor *y = &call->outputs[0], *ro = &call->outputs[1];
	if (x->ndim != 2 || r->ndim != 2 || w->ndim != 1 || y->ndim != 2 || ro->ndim != 2 || !rms_is_bf16(x) ||
	    !rms_is_bf16(r) || !rms_is_bf16(w) || !rms_is_bf16(y) || !rms_is_bf16(ro))
		return SF_ERR_UNSUPPORTED;
	const int64_t T = x->shape[0], H = x->shape[1];
	if (r->shape[0] != T || r->shape[1] != H || w->shape[0] != H || y->shape[0] != T || y->shape[1] != H ||
	    ro->shape[0] != T || ro->shape[1] != H || T > 2147483647)
		return SF_ERR_UNSUPPORTED;
	if (T == 0 || H == 0)
		return SF_OK;
	const float eps = (float)call->scalars[3];
	cudaStream_t s = (cudaStream_t)call->stream;
	int threads = 0, vpt = 0;
	if (H % 8 == 0 && H / 8 <= 8 * RMS_MAX_THREADS && rms_aligned(x->data) && rms_aligned(r->data) &&
	    rms_aligned(w->data) && rms_aligned(y->data) && rms_aligned(ro->data))
		vpt = rms_pick((int)(H / 8), T <= RMS_SMALL_T, &threads);
	const uint4 *xv = (const uint4 *)x->data, *rv = (const uint4 *)r->data, *wv = (const uint4 *)w->data;
	uint4 *yv = (uint4 *)y->data, *rov = (uint4 *)ro->data;
	const int nvec = (int)(H / 8);
	const unsigned grid = (unsigned)T;
#if RMS_CONST_H > 0
	const int cw = vpt > 0 && H == RMS_CONST_H && T <= RMS_CONST_ROWS &&
		       threads == rms_warps(nvec, vpt) * 32;
#else
	const int cw = 0; /* rms_vec_c is rms_vec: the branch folds */
#endif
	switch (vpt) {
	case 1:
		rms_launch<1>(cw, grid, threads, s, xv, rv, wv, yv, rov, nvec, rms_hscale<1>(H), eps);
		break;
	case 2:
		rms_launch<2>(cw, grid, threads, s, xv, rv, wv, yv, rov, nvec, rms_hscale<2>(H), eps);
		break;
	case 3:
		rms_launch<3>(cw, grid, threads, s, xv, rv, wv, yv, rov, nvec, rms_hscale<3>(H), eps);
		break;
	case 4:
		rms_launch<4>(cw, grid, threads, s, xv, rv, wv, yv, rov, nvec, rms_hscale<4>(H), eps);
		break;
	case 6:
		rms_launch<6>(cw, grid, threads, s, xv, rv, wv, yv, rov, nvec, rms_hscale<6>(H), eps);
		break;
	case 8:
		rms_launch<8>(cw, grid, threads, s, xv, rv, wv, yv, rov, nvec, rms_hscale<8>(H), eps);
		break;
	default:
		rms_scalar<<<grid, RMS_FALLBACK_THREADS, 0, s>>>(
			(const __nv_bfloat16 *)x->data, (const __nv_bfloat16 *)r->data, (const __nv_bfloat16 *)w->data,
			(__nv_bfloat16 *)y->data, (__nv_bfloat16 *)ro->data, H, eps);
	}
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
