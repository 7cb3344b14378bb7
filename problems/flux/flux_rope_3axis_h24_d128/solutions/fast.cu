/*
 * fast.cu - bandwidth-bound FLUX.1 3-axis RoPE (flux_rope_3axis_h24_d128) on q, k [B, H, S, 128].
 *
 * Pair p of a head (x[2p], x[2p+1]) rotates by angle = ids[s, axis(p)] * omega_p, omega_p =
 * 1 / theta^(2j/dim) (axes dims 16, 56, 56). The 64 omegas are computed on the host in double with
 * libm pow, as the oracle does (cached per theta), and passed by value as a kernel parameter.
 * Thread layout: a thread owns one 16-byte vector (8 elements = pairs 4v..4v+3, all on one axis since
 * the axis boundaries 8 and 36 are multiples of 4) of one token s, computes its 4 cos/sin once (angle
 * in double, reduced to [-pi, pi] in double, MUFU __sincosf: ~4e-7 absolute against the reference's
 * float64 cos, the atol is 1e-3), and reuses them for ROWS (b, h) rows of both q and k: 2*ROWS 16-byte loads
 * issued before any math. A CTA covers THREADS/16 consecutive tokens (contiguous 256-byte rows) times
 * ROWS (b, h) rows (blockIdx.y). Rotation in float32, one rounding to bf16.
 * Vector path: q, k, q_out, k_out 16-byte aligned; else one pair per thread. Any B, H, S.
 */
// solforge-tune: ROWS=2,4,8 THREADS=128,256,512
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include <math.h>
#include "solforge/solution.h"

#ifndef ROWS
#define ROWS 4
#endif
#ifndef THREADS
#define THREADS 256
#endif

#define FR_D 128
#define FR_PAIRS 64
#define FR_VPR 16 /* 16-byte vectors per head row */

typedef struct fr_table {
	double omega[FR_PAIRS];
} fr_table;

static __host__ __device__ __forceinline__ int fr_axis(int p)
{
	return p < 8 ? 0 : (p < 36 ? 1 : 2);
}

static void fr_build(fr_table *t, double theta)
{
	for (int p = 0; p < FR_PAIRS; p++) {
		int j, dim;
		if (p < 8) {
			j = p;
			dim = 16;
		} else if (p < 36) {
			j = p - 8;
			dim = 56;
		} else {
			j = p - 36;
			dim = 56;
		}
		t->omega[p] = 1.0 / pow(theta, (double)(2 * j) / (double)dim);
	}
}

/* cos / sin of the double angle a: reduced to [-pi, pi] in double (exact to ~1e-16 for the angles
 * here, |a| < 2^20), then the MUFU __sincosf (absolute error ~4e-7 on that range; the atol is 1e-3).
 * Precise sincosf carries a Payne-Hanek slow path that, inlined 4 times, cost ~60 registers. */
static __device__ __forceinline__ void fr_sincos(double a, float *s, float *c)
{
	const double two_pi = 6.283185307179586476925286766559;
	const double k = rint(a * (1.0 / two_pi));
	__sincosf((float)fma(-k, two_pi, a), s, c);
}

static __device__ __forceinline__ uint4 fr_rot(uint4 v, const float *c, const float *s)
{
	uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
	for (int j = 0; j < 4; j++) {
		const float2 x = __bfloat1622float2(*reinterpret_cast<__nv_bfloat162 *>(&w[j]));
		__nv_bfloat162 o = __floats2bfloat162_rn(c[j] * x.x - s[j] * x.y, s[j] * x.x + c[j] * x.y);
		w[j] = *reinterpret_cast<uint32_t *>(&o);
	}
	return make_uint4(w[0], w[1], w[2], w[3]);
}

static __global__ void __launch_bounds__(THREADS) fr_vec_kernel(const uint4 *__restrict__ q, const uint4 *__restrict__ k,
								const float *__restrict__ ids, uint4 *__restrict__ q_out,
								uint4 *__restrict__ k_out, int64_t S, int64_t BH,
								fr_table tab)
{
	const int64_t s = (int64_t)blockIdx.x * (THREADS / FR_VPR) + threadIdx.x / FR_VPR;
	const int v = threadIdx.x % FR_VPR;
	const int64_t bh0 = (int64_t)blockIdx.y * ROWS;
	if (s >= S)
		return;
	uint4 xq[ROWS], xk[ROWS];
#pragma unroll
	for (int r = 0; r < ROWS; r++) {
		if (bh0 + r < BH) {
			const int64_t off = ((bh0 + r) * S + s) * FR_VPR + v;
			xq[r] = __ldcs(q + off);
			xk[r] = __ldcs(k + off);
		}
	}
	const double pos = (double)ids[s * 3 + fr_axis(4 * v)];
	float c[4], sn[4];
#pragma unroll
	for (int j = 0; j < 4; j++)
		fr_sincos(pos * tab.omega[4 * v + j], &sn[j], &c[j]);
#pragma unroll
	for (int r = 0; r < ROWS; r++) {
		if (bh0 + r < BH) {
			const int64_t off = ((bh0 + r) * S + s) * FR_VPR + v;
			__stcs(q_out + off, fr_rot(xq[r], c, sn));
			__stcs(k_out + off, fr_rot(xk[r], c, sn));
		}
	}
}

/* any alignment: one thread per (b, h, s, pair) */
static __global__ void fr_scalar_kernel(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k,
					const float *__restrict__ ids, __nv_bfloat16 *__restrict__ q_out,
					__nv_bfloat16 *__restrict__ k_out, int64_t n_pairs, int64_t S, fr_table tab)
{
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n_pairs;
	     i += (int64_t)gridDim.x * blockDim.x) {
		const int p = (int)(i % FR_PAIRS);
		const int64_t s = (i / FR_PAIRS) % S;
		float sn, c;
		fr_sincos((double)ids[s * 3 + fr_axis(p)] * tab.omega[p], &sn, &c);
		const int64_t e = 2 * i;
		const float q0 = __bfloat162float(q[e]), q1 = __bfloat162float(q[e + 1]);
		const float k0 = __bfloat162float(k[e]), k1 = __bfloat162float(k[e + 1]);
		q_out[e] = __float2bfloat16_rn(c * q0 - sn * q1);
		q_out[e + 1] = __float2bfloat16_rn(sn * q0 + c * q1);
		k_out[e] = __float2bfloat16_rn(c * k0 - sn * k1);
		k_out[e + 1] = __float2bfloat16_rn(sn * k0 + c * k1);
	}
}

static int fr_is_bf16(const sf_tensor *t)
{
	return t->dtype.code == SF_CODE_BFLOAT && t->dtype.bits == 16 && t->dtype.lanes == 1;
}

/* The entry point: checks dtypes and shapes (SF_ERR_UNSUPPORTED for anything the definition does not
 * allow), takes the vector kernel when alignment and shape permit, else the scalar one, and launches
 * on call->stream; SF_ERR_CUDA if the launch failed. */
SF_EXPORT int run(const sf_call *call)
{
	static fr_table tab;
	static double tab_theta = NAN; /* theta the cached table was built for */
	if (call->n_inputs != 4 || call->n_outputs != 2)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *q = &call->inputs[0], *k = &call->inputs[1], *ids = &call->inputs[2];
	const sf_tensor *qo = &call->outputs[0], *ko = &call->outputs[1];
	if (q->ndim != 4 || k->ndim != 4 || ids->ndim != 2 || qo->ndim != 4 || ko->ndim != 4 || !fr_is_bf16(q) ||
	    !fr_is_bf16(k) || !fr_is_bf16(qo) || !fr_is_bf16(ko) || ids->dtype.code != SF_CODE_FLOAT ||
	    ids->dtype.bits != 32)
		return SF_ERR_UNSUPPORTED;
	const int64_t S = q->shape[2];
	for (int d = 0; d < 4; d++)
		if (k->shape[d] != q->shape[d] || qo->shape[d] != q->shape[d] || ko->shape[d] != q->shape[d])
			return SF_ERR_UNSUPPORTED;
	if (q->shape[3] != FR_D || ids->shape[0] != S || ids->shape[1] != 3)
		return SF_ERR_UNSUPPORTED;
	const int64_t BH = q->shape[0] * q->shape[1];
	if (BH == 0 || S == 0)
		return SF_OK;
	const double theta = call->scalars[3]; /* as the oracle reads it */
	if (!(tab_theta == theta)) {
		fr_build(&tab, theta);
		tab_theta = theta;
	}
	cudaStream_t st = (cudaStream_t)call->stream;
	const int aligned = ((uintptr_t)q->data | (uintptr_t)k->data | (uintptr_t)qo->data | (uintptr_t)ko->data) % 16 == 0;
	const int64_t gx = (S + THREADS / FR_VPR - 1) / (THREADS / FR_VPR), gy = (BH + ROWS - 1) / ROWS;
	if (aligned && gx <= 0x7fffffff && gy <= 65535) {
		fr_vec_kernel<<<dim3((unsigned)gx, (unsigned)gy), THREADS, 0, st>>>(
			(const uint4 *)q->data, (const uint4 *)k->data, (const float *)ids->data, (uint4 *)qo->data,
			(uint4 *)ko->data, S, BH, tab);
	} else {
		const int64_t n_pairs = sf_numel(q) / 2;
		int64_t blocks = (n_pairs + 255) / 256;
		if (blocks > 65536)
			blocks = 65536;
		fr_scalar_kernel<<<(unsigned)blocks, 256, 0, st>>>(
			(const __nv_bfloat16 *)q->data, (const __nv_bfloat16 *)k->data, (const float *)ids->data,
			(__nv_bfloat16 *)qo->data, (__nv_bfloat16 *)ko->data, n_pairs, S, tab);
	}
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
