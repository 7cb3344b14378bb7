/*
 * fast.cu - bandwidth-bound Llama-3.1 RoPE (rope_llama31_h32_kv8_d128): q [T, Hq, D] and k [T, Hk, D]
 * rotated with rotate_half pairing (i with i + D/2), llama3-scaled frequencies.
 *
 * The inv_freq table (D/2 floats) is computed on the host exactly as the oracle does (double, libm
 * pow, rounded once to float32), once per head_dim (cached), and passed by value as a kernel
 * parameter: no per-thread pow, no extra copy. One CTA per token: threads t < D/2 compute
 * angle = rn(float(pos) * inv_freq[t]) (one IEEE float32 multiply, bit-identical to the oracle) and
 * its cos / sin (v2: double sincos rounded to float, RP_SINCOS_F64: no Payne-Hanek slow path for
 * the angles > 105615 rad that made precise sincosf ~1 us slower at small T; v1: precise sincosf,
 * ~1 ulp; the atol is 1e-4) into shared memory, once per token
 * for all Hq + Hk heads. Each work item is (head, j): the 8 elements 8j.. and their 8 partners
 * D/2 + 8j.., two 16-byte loads (issued before the sincos stage) and two 16-byte stores; the rotation
 * x1*c - x2*s, x2*c + x1*s is float32, one rounding to bf16.
 * Vector path: (D/2) % 8 == 0 and q, k, q_out, k_out 16-byte aligned; else a scalar kernel, one pair
 * per thread. Correct for any T (0 included) and any head counts; D even, D <= 256.
 * Since session 12 (RP_CONST 1, the default): a call with the definition's head counts and head_dim
 * (Hq 32, Hk 8, D 128) runs an instance of the vector kernel with those three compile-time constants
 * (the work item's head w / hv a shift, the row offsets multiplies by constants: no integer division
 * before the first loads), any other shape the runtime-shape instance; RP_CONST 0: the runtime
 * instance only (session 10's PTX).
 */
// solforge-tune: THREADS_CAP=256,512,1024 RP_SINCOS_F64=1,0
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include <math.h>
#include "solforge/solution.h"

#ifndef THREADS_CAP
#define THREADS_CAP 1024
#endif

#ifndef RP_SINCOS_F64
#define RP_SINCOS_F64 0 /* v2 candidate 1 is unmeasured on a GPU yet (NOTES.md); 1: cos / sin in double (see rp_vec_kernel), 0: precise sincosf */
#endif

/* RP_CONST 1: calls of Hq 32, Hk 8, D 128 (the definition's) take the compile-time-shape instance; 0: runtime
 * shapes only */
#ifndef RP_CONST
#define RP_CONST 1
#endif
#define RP_CONST_HQ 32
#define RP_CONST_HK 8
#define RP_CONST_D 128

#define RP_MAX_HALF 128

typedef struct rp_table {
	float f[RP_MAX_HALF];
} rp_table;

/* inv_freq[i] of the llama3 scaling, in double, rounded once to float32 (as the oracle) */
static float rp_inv_freq(int64_t i, int64_t head_dim)
{
	const double theta = 500000.0, factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0;
	const double old_context_len = 8192.0, pi = 3.14159265358979323846;
	const double inv_freq = 1.0 / pow(theta, (double)(2 * i) / (double)head_dim);
	const double wavelen = 2.0 * pi / inv_freq;
	double f;
	if (wavelen < old_context_len / high_freq_factor) {
		f = inv_freq;
	} else if (wavelen > old_context_len / low_freq_factor) {
		f = inv_freq / factor;
	} else {
		const double smooth = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
		f = (1.0 - smooth) * inv_freq / factor + smooth * inv_freq;
	}
	return (float)f;
}

template <typename P>
static __device__ __forceinline__ float rp_angle(const P *pos, int64_t t, float inv)
{
	return __fmul_rn(__ll2float_rn((long long)pos[t]), inv);
}

/* rotate 8 pairs: a = x[8j..8j+7], b = x[D/2+8j..], c/s the 8 cos/sin */
static __device__ __forceinline__ void rp_rot8(uint4 &a, uint4 &b, const float *c, const float *s)
{
	uint32_t aw[4] = {a.x, a.y, a.z, a.w}, bw[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
	for (int j = 0; j < 4; j++) {
		const float2 x1 = __bfloat1622float2(*reinterpret_cast<__nv_bfloat162 *>(&aw[j]));
		const float2 x2 = __bfloat1622float2(*reinterpret_cast<__nv_bfloat162 *>(&bw[j]));
		const float c0 = c[2 * j], c1 = c[2 * j + 1], s0 = s[2 * j], s1 = s[2 * j + 1];
		__nv_bfloat162 o1 = __floats2bfloat162_rn(x1.x * c0 - x2.x * s0, x1.y * c1 - x2.y * s1);
		__nv_bfloat162 o2 = __floats2bfloat162_rn(x2.x * c0 + x1.x * s0, x2.y * c1 + x1.y * s1);
		aw[j] = *reinterpret_cast<uint32_t *>(&o1);
		bw[j] = *reinterpret_cast<uint32_t *>(&o2);
	}
	a = make_uint4(aw[0], aw[1], aw[2], aw[3]);
	b = make_uint4(bw[0], bw[1], bw[2], bw[3]);
}

/* one CTA per token (blockIdx.x); hv = D/16 vector pairs per head; work item w = head * hv + j; cs, sn:
 * the CTA's shared arrays of RP_MAX_HALF floats. CQ, CK, CD > 0: Hq, Hk, D are those constants (the
 * runtime Hq_rt, Hk_rt, D_rt are then ignored; the host takes this instance only when they are equal). */
template <typename P, int CQ, int CK, int CD>
static __device__ __forceinline__ void rp_vec_body(const uint4 *__restrict__ q, const uint4 *__restrict__ k,
						   const P *__restrict__ pos, uint4 *__restrict__ q_out,
						   uint4 *__restrict__ k_out, int Hq_rt, int Hk_rt, int D_rt,
						   const rp_table &tab, float *cs, float *sn)
{
	const int Hq = CQ > 0 ? CQ : Hq_rt, Hk = CK > 0 ? CK : Hk_rt, D = CD > 0 ? CD : D_rt;
	const int64_t t = blockIdx.x;
	const int half = D / 2, hv = half / 8, dv = D / 8; /* dv: 16-byte vectors per head row */
	const int nwork = (Hq + Hk) * hv;
	int w = threadIdx.x;
	uint4 a = make_uint4(0, 0, 0, 0), b = a;
	const uint4 *src = q;
	uint4 *dst = q_out;
	int64_t off = 0;
	if (w < nwork) {
		const int h = w / hv, j = w - h * hv;
		src = h < Hq ? q : k;
		dst = h < Hq ? q_out : k_out;
		off = (h < Hq ? (t * Hq + h) : (t * Hk + (h - Hq))) * dv + j;
		a = __ldcs(src + off);
		b = __ldcs(src + off + hv);
	}
	for (int i = threadIdx.x; i < half; i += blockDim.x) {
#if RP_SINCOS_F64
		/* double sincos of the (exact) float32 angle: no Payne-Hanek slow path below 2^31 rad,
		 * and within a rounding of the oracle's float64 cos / sin */
		double s, c;
		sincos((double)rp_angle(pos, t, tab.f[i]), &s, &c);
		cs[i] = (float)c;
		sn[i] = (float)s;
#else
		float s, c;
		sincosf(rp_angle(pos, t, tab.f[i]), &s, &c);
		cs[i] = c;
		sn[i] = s;
#endif
	}
	__syncthreads();
	for (; w < nwork; w += blockDim.x) {
		const int h = w / hv, j = w - h * hv;
		if (w != (int)threadIdx.x) {
			src = h < Hq ? q : k;
			dst = h < Hq ? q_out : k_out;
			off = (h < Hq ? (t * Hq + h) : (t * Hk + (h - Hq))) * dv + j;
			a = __ldcs(src + off);
			b = __ldcs(src + off + hv);
		}
		rp_rot8(a, b, cs + 8 * j, sn + 8 * j);
		__stcs(dst + off, a);
		__stcs(dst + off + hv, b);
	}
}

template <typename P>
static __global__ void rp_vec_kernel(const uint4 *__restrict__ q, const uint4 *__restrict__ k, const P *__restrict__ pos,
				     uint4 *__restrict__ q_out, uint4 *__restrict__ k_out, int Hq, int Hk, int D,
				     rp_table tab)
{
	__shared__ float cs[RP_MAX_HALF], sn[RP_MAX_HALF];
	rp_vec_body<P, 0, 0, 0>(q, k, pos, q_out, k_out, Hq, Hk, D, tab, cs, sn);
}

#if RP_CONST
/* the definition's shape (Hq 32, Hk 8, D 128) as compile-time constants */
template <typename P>
static __global__ void rp_vec_kernel_c(const uint4 *__restrict__ q, const uint4 *__restrict__ k,
				       const P *__restrict__ pos, uint4 *__restrict__ q_out, uint4 *__restrict__ k_out,
				       int Hq, int Hk, int D, rp_table tab)
{
	__shared__ float cs[RP_MAX_HALF], sn[RP_MAX_HALF];
	rp_vec_body<P, RP_CONST_HQ, RP_CONST_HK, RP_CONST_D>(q, k, pos, q_out, k_out, Hq, Hk, D, tab, cs, sn);
}
#endif

/* any alignment / head_dim: one thread per (token, head, i < D/2) pair */
template <typename P>
static __global__ void rp_scalar_kernel(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k,
					const P *__restrict__ pos, __nv_bfloat16 *__restrict__ q_out,
					__nv_bfloat16 *__restrict__ k_out, int64_t T, int64_t Hq, int64_t Hk, int64_t D,
					rp_table tab)
{
	const int64_t half = D / 2, per_token = (Hq + Hk) * half, total = T * per_token;
	for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
	     e += (int64_t)gridDim.x * blockDim.x) {
		const int64_t t = e / per_token, rem = e % per_token, h = rem / half, i = rem % half;
		float s, c;
		sincosf(rp_angle(pos, t, tab.f[i]), &s, &c);
		const __nv_bfloat16 *src = h < Hq ? q + (t * Hq + h) * D : k + (t * Hk + (h - Hq)) * D;
		__nv_bfloat16 *dst = h < Hq ? q_out + (t * Hq + h) * D : k_out + (t * Hk + (h - Hq)) * D;
		const float x1 = __bfloat162float(src[i]), x2 = __bfloat162float(src[i + half]);
		dst[i] = __float2bfloat16_rn(x1 * c - x2 * s);
		dst[i + half] = __float2bfloat16_rn(x2 * c + x1 * s);
	}
}

static int rp_is_bf16(const sf_tensor *t)
{
	return t->dtype.code == SF_CODE_BFLOAT && t->dtype.bits == 16 && t->dtype.lanes == 1;
}

template <typename P>
static void rp_launch(const sf_call *call, const rp_table *tab, int64_t T, int64_t Hq, int64_t Hk, int64_t D)
{
	const sf_tensor *in = call->inputs, *out = call->outputs;
	cudaStream_t st = (cudaStream_t)call->stream;
	const int64_t half = D / 2;
	const int aligned = ((uintptr_t)in[0].data | (uintptr_t)in[1].data | (uintptr_t)out[0].data |
			     (uintptr_t)out[1].data) % 16 == 0;
	if (half % 8 == 0 && aligned && T <= 0x7fffffff && (Hq + Hk) * (half / 8) <= 0x7fffffff) {
		int64_t nwork = (Hq + Hk) * (half / 8);
		int64_t threads = (nwork > half ? nwork : half);
		threads = (threads + 31) / 32 * 32;
		if (threads > THREADS_CAP)
			threads = THREADS_CAP;
#if RP_CONST
		if (Hq == RP_CONST_HQ && Hk == RP_CONST_HK && D == RP_CONST_D)
			rp_vec_kernel_c<P><<<(unsigned)T, (unsigned)threads, 0, st>>>(
				(const uint4 *)in[0].data, (const uint4 *)in[1].data, (const P *)in[2].data,
				(uint4 *)out[0].data, (uint4 *)out[1].data, (int)Hq, (int)Hk, (int)D, *tab);
		else
#endif
			rp_vec_kernel<P><<<(unsigned)T, (unsigned)threads, 0, st>>>(
				(const uint4 *)in[0].data, (const uint4 *)in[1].data, (const P *)in[2].data,
				(uint4 *)out[0].data, (uint4 *)out[1].data, (int)Hq, (int)Hk, (int)D, *tab);
	} else {
		const int64_t total = T * (Hq + Hk) * half;
		int64_t blocks = (total + 255) / 256;
		if (blocks > 65536)
			blocks = 65536;
		rp_scalar_kernel<P><<<(unsigned)blocks, 256, 0, st>>>(
			(const __nv_bfloat16 *)in[0].data, (const __nv_bfloat16 *)in[1].data, (const P *)in[2].data,
			(__nv_bfloat16 *)out[0].data, (__nv_bfloat16 *)out[1].data, T, Hq, Hk, D, *tab);
	}
}

/* The entry point: checks dtypes and shapes (SF_ERR_UNSUPPORTED for anything the definition does not
 * allow), takes the vector kernel when alignment and shape permit, else the scalar one, and launches
 * on call->stream; SF_ERR_CUDA if the launch failed. */
SF_EXPORT int run(const sf_call *call)
{
	static rp_table tab;
	static int64_t tab_dim = -1; /* head_dim the cached table was built for */
	if (call->n_inputs != 3 || call->n_outputs != 2)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *q = &call->inputs[0], *k = &call->inputs[1], *pos = &call->inputs[2];
	const sf_tensor *q_out = &call->outputs[0], *k_out = &call->outputs[1];
	if (q->ndim != 3 || k->ndim != 3 || pos->ndim != 1 || q_out->ndim != 3 || k_out->ndim != 3 || !rp_is_bf16(q) ||
	    !rp_is_bf16(k) || !rp_is_bf16(q_out) || !rp_is_bf16(k_out) || pos->dtype.code != SF_CODE_INT ||
	    (pos->dtype.bits != 64 && pos->dtype.bits != 32))
		return SF_ERR_UNSUPPORTED;
	const int64_t T = q->shape[0], Hq = q->shape[1], D = q->shape[2], Hk = k->shape[1];
	if (k->shape[0] != T || k->shape[2] != D || pos->shape[0] != T || D % 2 != 0 || D / 2 > RP_MAX_HALF)
		return SF_ERR_UNSUPPORTED;
	for (int d = 0; d < 3; d++)
		if (q_out->shape[d] != q->shape[d] || k_out->shape[d] != k->shape[d])
			return SF_ERR_UNSUPPORTED;
	if (T == 0 || Hq + Hk == 0 || D == 0)
		return SF_OK;
	if (tab_dim != D) {
		for (int64_t i = 0; i < D / 2; i++)
			tab.f[i] = rp_inv_freq(i, D);
		tab_dim = D;
	}
	if (pos->dtype.bits == 64)
		rp_launch<int64_t>(call, &tab, T, Hq, Hk, D);
	else
		rp_launch<int32_t>(call, &tab, T, Hq, Hk, D);
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
