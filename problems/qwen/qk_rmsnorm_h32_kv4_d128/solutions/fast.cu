/*
 * fast.cu - qk_rmsnorm_h32_kv4_d128 (Qwen3 per-head q_norm / k_norm), the bandwidth-bound version:
 *     y = bf16(weight * bf16(x * rsqrt(mean(x^2) + eps)))   per head row of D values
 * (the model's bf16 cast of the normalized value before the weight multiply, as the oracle).
 *
 * q rows [0, T*HQ) and k rows [T*HQ, T*(HQ+HK)) form one index space. A head row of D = 128 bf16 is
 * 16 vectors of 16 bytes: a group of G = D/8 threads (a half warp) holds one row, one vector per
 * thread, and reduces the sum of squares with G-wide xor shuffles (no shared memory, no barrier).
 * Each thread handles RPT rows per iteration (their loads issued together: more bytes in flight), a
 * block-uniform grid-stride loop (so that every lane of a warp reaches every shuffle), and keeps its
 * slice of both weight vectors in registers for the whole kernel. Head sizes whose D/8 is not a
 * power of two up to 32, and unaligned pointers, take a scalar fallback (one warp per row).
 *
 * Defaults (session 7, tools/gpu_knobs.sh on the H200: t32 / t2048 / t16384 1.92 / 11.74 / 76.88 us
 * against version 1's RPT 2, 8 blocks per SM, .nc loads: 2.16 / 12.02 / 82.08): one row per thread, a
 * one-shot grid (QKN_WAVES 4096 never caps it at these sizes), plain loads.
 * Tuning knobs (-D): QKN_RPT rows per thread per iteration, QKN_THREADS block size, QKN_WAVES blocks
 * per SM of the persistent grid (a large value: one block per RPT-row group, no loop), QKN_ST_CS 1 =
 * streaming stores, QKN_NC 0 = plain loads instead of ld.global.nc.L1::no_allocate.
 * Since session 12: QKN_CONST_D 1 (default) = the mean of the squares as ss * (1 / D) with D = 8 * G the
 * kernel's compile-time width (exact: D is a power of two, so the quotient is bit-identical to ss / D for
 * every head size the vector kernel takes), 0 = the runtime fp32 division ss / d (session 7's PTX);
 * QKN_BIG_ROWS > 0 (default 65536, i.e. t >= 1821 of 32 + 4 heads; 0: off) sends calls of at least that many head rows (q and k together) to a
 * second instance with QKN_BIG_RPT rows per thread, QKN_BIG_THREADS-thread CTAs and at least
 * QKN_BIG_MINB CTAs per SM in its launch bounds (torch.compile's large-T shape: 2 rows per thread,
 * 64-thread CTAs, 32 B in flight per thread; NOTES.md, session 12).
 */
// solforge-tune: QKN_RPT=1,2,4 QKN_THREADS=256,128,512 QKN_WAVES=4096,8,4,16 QKN_ST_CS=0,1 QKN_NC=0,1
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include "solforge/solution.h"

#ifndef QKN_RPT
#define QKN_RPT 1
#endif
#ifndef QKN_THREADS
#define QKN_THREADS 256
#endif
#ifndef QKN_WAVES
#define QKN_WAVES 4096
#endif
#ifndef QKN_ST_CS
#define QKN_ST_CS 0
#endif
#ifndef QKN_NC /* 1: loads with ld.global.nc.L1::no_allocate, 0: plain ld.global (Triton's) */
#define QKN_NC 0
#endif
/* QKN_CONST_D 1: the mean as ss * (1 / (8 * G)) from the template's width (bit-identical to ss / D); 0: the
 * runtime ss / d */
#ifndef QKN_CONST_D
#define QKN_CONST_D 1
#endif
#ifndef QKN_BIG_ROWS
#define QKN_BIG_ROWS 65536 /* head rows (T * (HQ + HK)) from which the QKN_BIG_* instance runs (0: never); since session 12:
			   * 1.017 / 1.045 / 1.033x the QKN_RPT 1 kernel at t2048 / t8192 / t16384 (73728+ rows; NOTES.md) */
#endif
#ifndef QKN_BIG_RPT
#define QKN_BIG_RPT 2
#endif
#ifndef QKN_BIG_THREADS
#define QKN_BIG_THREADS 128
#endif
#ifndef QKN_BIG_MINB
#define QKN_BIG_MINB 16 /* CTAs per SM in the big instance's launch bounds (128 threads x 16: <= 32 registers) */
#endif

static __device__ __forceinline__ uint4 qkn_ld_stream(const uint4 *p)
{
	uint4 v;
#if defined(__CUDA_ARCH__) && !QKN_NC
	asm("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
#elif defined(__CUDA_ARCH__)
	asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
	    : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
	    : "l"(p));
#else /* host-side emulation of the kernel (tests/emu): a plain load */
	v = *p;
#endif
	return v;
}

static __device__ __forceinline__ void qkn_st(uint4 *p, uint4 v)
{
#if QKN_ST_CS
	__stcs(p, v);
#else
	*p = v;
#endif
}

static __device__ __forceinline__ float qkn_lo(uint32_t u)
{
	return __uint_as_float(u << 16);
}
static __device__ __forceinline__ float qkn_hi(uint32_t u)
{
	return __uint_as_float(u & 0xffff0000u);
}
static __device__ __forceinline__ uint32_t qkn_pack(float a, float b)
{
	__nv_bfloat162 h = __floats2bfloat162_rn(a, b);
	return *reinterpret_cast<uint32_t *>(&h);
}
static __device__ __forceinline__ float qkn_round(float a)
{
	return __bfloat162float(__float2bfloat16_rn(a));
}
static __device__ __forceinline__ float qkn_sumsq(uint4 v)
{
	const uint32_t u[4] = { v.x, v.y, v.z, v.w };
	float s = 0.0f;
#pragma unroll
	for (int j = 0; j < 4; j++) {
		const float a = qkn_lo(u[j]), b = qkn_hi(u[j]);
		s += a * a;
		s += b * b;
	}
	return s;
}
static __device__ __forceinline__ uint32_t qkn_word(uint32_t xw, uint32_t ww, float rstd)
{
	const float n0 = qkn_round(qkn_lo(xw) * rstd), n1 = qkn_round(qkn_hi(xw) * rstd);
	return qkn_pack(qkn_lo(ww) * n0, qkn_hi(ww) * n1);
}

/* G threads per row (G = D/8, a power of two <= 32; blockDim.x a multiple of 32). Block iteration it
 * covers rows [it*RB, (it+1)*RB), RB = (blockDim.x/G) * RPT; thread group gi takes rows
 * it*RB + r*(blockDim.x/G) + gi, r < RPT (consecutive groups: consecutive rows, coalesced). d = D as a
 * float (used only with QKN_CONST_D 0). */
template <int G, int RPT>
static __device__ __forceinline__ void qkn_vec_body(const uint4 *__restrict__ q, const uint4 *__restrict__ k,
						    const uint4 *__restrict__ qw, const uint4 *__restrict__ kw,
						    uint4 *__restrict__ qo, uint4 *__restrict__ ko, int64_t q_rows,
						    int64_t rows, float d, float eps)
{
	const int lane = (int)(threadIdx.x & (G - 1));
	const int gi = (int)(threadIdx.x / G), gpb = (int)(blockDim.x / G);
	const int64_t rb = (int64_t)gpb * RPT;
	const uint4 wq = __ldg(qw + lane), wk = __ldg(kw + lane);
	for (int64_t it = blockIdx.x; it * rb < rows; it += gridDim.x) {
		uint4 v[RPT];
		int64_t row[RPT];
#pragma unroll
		for (int r = 0; r < RPT; r++) {
			row[r] = it * rb + (int64_t)r * gpb + gi;
			v[r] = make_uint4(0, 0, 0, 0);
			if (row[r] < q_rows)
				v[r] = qkn_ld_stream(q + row[r] * G + lane);
			else if (row[r] < rows)
				v[r] = qkn_ld_stream(k + (row[r] - q_rows) * G + lane);
		}
#pragma unroll
		for (int r = 0; r < RPT; r++) {
			float ss = qkn_sumsq(v[r]);
#pragma unroll
			for (int o = G / 2; o > 0; o >>= 1)
				ss += __shfl_xor_sync(0xffffffffu, ss, o);
#if QKN_CONST_D
			(void)d;
			const float rstd = rsqrtf(ss * (1.0f / (float)(8 * G)) + eps);
#else
			const float rstd = rsqrtf(ss / d + eps);
#endif
			const bool is_q = row[r] < q_rows;
			const uint4 w = is_q ? wq : wk;
			uint4 out;
			out.x = qkn_word(v[r].x, w.x, rstd);
			out.y = qkn_word(v[r].y, w.y, rstd);
			out.z = qkn_word(v[r].z, w.z, rstd);
			out.w = qkn_word(v[r].w, w.w, rstd);
			if (is_q)
				qkn_st(qo + row[r] * G + lane, out);
			else if (row[r] < rows)
				qkn_st(ko + (row[r] - q_rows) * G + lane, out);
		}
	}
}

template <int G>
__global__ void __launch_bounds__(1024)
	qkn_vec(const uint4 *__restrict__ q, const uint4 *__restrict__ k, const uint4 *__restrict__ qw,
		const uint4 *__restrict__ kw, uint4 *__restrict__ qo, uint4 *__restrict__ ko, int64_t q_rows,
		int64_t rows, float d, float eps)
{
	qkn_vec_body<G, QKN_RPT>(q, k, qw, kw, qo, ko, q_rows, rows, d, eps);
}

#if QKN_BIG_ROWS > 0
/* the large-call instance (QKN_BIG_*): the same body, QKN_BIG_RPT rows per thread, QKN_BIG_THREADS threads */
template <int G>
__global__ void __launch_bounds__(QKN_BIG_THREADS, QKN_BIG_MINB)
	qkn_vec_big(const uint4 *__restrict__ q, const uint4 *__restrict__ k, const uint4 *__restrict__ qw,
		    const uint4 *__restrict__ kw, uint4 *__restrict__ qo, uint4 *__restrict__ ko, int64_t q_rows,
		    int64_t rows, float d, float eps)
{
	qkn_vec_body<G, QKN_BIG_RPT>(q, k, qw, kw, qo, ko, q_rows, rows, d, eps);
}
#endif

/* Any D and alignment: one warp per row, scalar, the row read twice. */
__global__ void qkn_scalar(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k,
			   const __nv_bfloat16 *__restrict__ qw, const __nv_bfloat16 *__restrict__ kw,
			   __nv_bfloat16 *__restrict__ qo, __nv_bfloat16 *__restrict__ ko, int64_t q_rows, int64_t rows,
			   int64_t D, float eps)
{
	const int lane = (int)(threadIdx.x & 31);
	const int64_t wpb = blockDim.x / 32;
	for (int64_t row = blockIdx.x * wpb + threadIdx.x / 32; row < rows; row += (int64_t)gridDim.x * wpb) {
		const bool is_q = row < q_rows;
		const int64_t base = (is_q ? row : row - q_rows) * D;
		const __nv_bfloat16 *x = is_q ? q : k, *w = is_q ? qw : kw;
		__nv_bfloat16 *y = is_q ? qo : ko;
		float ss = 0.0f;
		for (int64_t j = lane; j < D; j += 32) {
			const float v = __bfloat162float(x[base + j]);
			ss += v * v;
		}
		for (int o = 16; o > 0; o >>= 1)
			ss += __shfl_xor_sync(0xffffffffu, ss, o);
		const float rstd = rsqrtf(ss / (float)D + eps);
		for (int64_t j = lane; j < D; j += 32) {
			const float n = qkn_round(__bfloat162float(x[base + j]) * rstd);
			y[base + j] = __float2bfloat16_rn(__bfloat162float(w[j]) * n);
		}
	}
}

static int qkn_is_bf16(const sf_tensor *t)
{
	return t->dtype.code == SF_CODE_BFLOAT && t->dtype.bits == 16 && t->dtype.lanes == 1;
}

static int qkn_aligned(const void *p)
{
	return ((uintptr_t)p & 15u) == 0;
}

SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 5 || call->n_outputs != 2)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *q = &call->inputs[0], *k = &call->inputs[1], *qw = &call->inputs[2], *kw = &call->inputs[3];
	const sf_tensor *qo = &call->outputs[0], *ko = &call->outputs[1];
	if (q->ndim != 3 || k->ndim != 3 || qw->ndim != 1 || kw->ndim != 1 || qo->ndim != 3 || ko->ndim != 3)
		return SF_ERR_UNSUPPORTED;
	if (!qkn_is_bf16(q) || !qkn_is_bf16(k) || !qkn_is_bf16(qw) || !qkn_is_bf16(kw) || !qkn_is_bf16(qo) ||
	    !qkn_is_bf16(ko))
		return SF_ERR_UNSUPPORTED;
	const int64_t D = q->shape[2];
	if (k->shape[2] != D || qw->shape[0] != D || kw->shape[0] != D || sf_numel(qo) != sf_numel(q) ||
	    sf_numel(ko) != sf_numel(k))
		return SF_ERR_UNSUPPORTED;
	const int64_t q_rows = q->shape[0] * q->shape[1], rows = q_rows + k->shape[0] * k->shape[1];
	if (rows == 0 || D == 0)
		return SF_OK;
	const float eps = (float)call->scalars[4];
	cudaStream_t s = (cudaStream_t)call->stream;
	static int sms;
	if (!sms && cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess)
		return SF_ERR_CUDA;
	const int64_t G = D / 8;
	const int vec = D % 8 == 0 && G <= 32 && (G & (G - 1)) == 0 && qkn_aligned(q->data) && qkn_aligned(k->data) &&
			qkn_aligned(qw->data) && qkn_aligned(kw->data) && qkn_aligned(qo->data) && qkn_aligned(ko->data);
	const int64_t cap = (int64_t)sms * QKN_WAVES;
	const uint4 *qv = (const uint4 *)q->data, *kv = (const uint4 *)k->data;
	const uint4 *qwv = (const uint4 *)qw->data, *kwv = (const uint4 *)kw->data;
	uint4 *qov = (uint4 *)qo->data, *kov = (uint4 *)ko->data;
#if QKN_BIG_ROWS > 0
	if (vec && G == 16 && rows >= (int64_t)QKN_BIG_ROWS) { /* the definition's D = 128 only */
		const int64_t rb = (int64_t)(QKN_BIG_THREADS / 16) * QKN_BIG_RPT;
		int64_t grid = (rows + rb - 1) / rb;
		if (grid > cap)
			grid = cap;
		qkn_vec_big<16><<<(unsigned)grid, QKN_BIG_THREADS, 0, s>>>(qv, kv, qwv, kwv, qov, kov, q_rows, rows,
									      (float)D, eps);
	} else
#endif
	if (vec) {
		const int64_t rb = (int64_t)(QKN_THREADS / G) * QKN_RPT;
		int64_t grid = (rows + rb - 1) / rb;
		if (grid > cap)
			grid = cap;
		const unsigned g = (unsigned)grid;
		switch (G) {
		case 1: qkn_vec<1><<<g, QKN_THREADS, 0, s>>>(qv, kv, qwv, kwv, qov, kov, q_rows, rows, (float)D, eps); break;
		case 2: qkn_vec<2><<<g, QKN_THREADS, 0, s>>>(qv, kv, qwv, kwv, qov, kov, q_rows, rows, (float)D, eps); break;
		case 4: qkn_vec<4><<<g, QKN_THREADS, 0, s>>>(qv, kv, qwv, kwv, qov, kov, q_rows, rows, (float)D, eps); break;
		case 8: qkn_vec<8><<<g, QKN_THREADS, 0, s>>>(qv, kv, qwv, kwv, qov, kov, q_rows, rows, (float)D, eps); break;
		case 16: qkn_vec<16><<<g, QKN_THREADS, 0, s>>>(qv, kv, qwv, kwv, qov, kov, q_rows, rows, (float)D, eps); break;
		default: qkn_vec<32><<<g, QKN_THREADS, 0, s>>>(qv, kv, qwv, kwv, qov, kov, q_rows, rows, (float)D, eps); break;
		}
	} else {
		int64_t grid = (rows + 7) / 8;
		if (grid > cap)
			grid = cap;
		qkn_scalar<<<(unsigned)grid, 256, 0, s>>>((const __nv_bfloat16 *)q->data, (const __nv_bfloat16 *)k->data,
							  (const __nv_bfloat16 *)qw->data, (const __nv_bfloat16 *)kw->data,
							  (__nv_bfloat16 *)qo->data, (__nv_bfloat16 *)ko->data, q_rows, rows,
							  D, eps);
	}
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
