/*
 * fast.cu - bandwidth-bound solution of silu_and_mul_i14336: out[t, i] = silu(x[t, i]) * x[t, I + i],
 * silu(g) = g / (1 + exp(-g)) in float32 (__expf, __fdividef), one rounding to bf16.
 *
 * One pass: every thread owns UNROLL 16-byte vectors (8 bf16) of gate and the matching vectors of up
 * (all loads issued before any math, so 2*UNROLL*16 bytes are in flight per thread), and writes one
 * 16-byte vector of out per pair. Defaults (version 2, measured on the H200 in session 7 beside
 * version 1's 2D grid / 256 threads / UNROLL 2 / .cs hints and beside torch.compile: NOTES.md): a
 * one-shot 1-D grid of 128-thread CTAs, one vector pair per thread, plain ld / st (Triton's shape).
 * Structural knobs (-D; tools/membench/ times the same choices beside torch.compile's Triton kernel): SM_HINT = the cache hints of the
 * 16-byte loads / stores (0 plain ld/st as Triton emits, 1 .cs both, 2 ld.nc.L1::no_allocate + plain
 * st, 3 an L2 evict_first policy on both, 4 plain ld + st.cs, 5 ld.cs + plain st); SM_GRID = 0 the
 * 2D grid, 1 a one-shot 1-D grid over the flattened T * I/8 vectors (blocks cross rows, row = v / (I/8):
 * Triton's structure), 2 a persistent 1-D grid of SM_BPS blocks per SM striding over them; THREADS
 * (CTA size) and UNROLL (16-byte vectors per stream per thread) apply to all three. The 1-D grids need
 * T * I/8 < 2^31 (else the 2D grid).
 * Vector path: I % 8 == 0 and x, out 16-byte aligned (every row then is); anything else takes the
 * scalar kernel (one element per thread), correct for any shape. Small T (since session 11):
 * SM_NARROW_MAX > 0 sends T * I <= it to the narrow kernel (SM_NARROW_EPT values per thread, 2-8 byte
 * accesses, SM_NARROW_THREADS-thread CTAs: more CTAs for one token, as torch.compile's kernel at t1).
 */
// solforge-tune: UNROLL=1,2,4 THREADS=128,256,512 SM_HINT=1,0,2,3,4,5 SM_GRID=0,1,2
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include "solforge/solution.h"
#include "../../../common/kernels/gated_narrow.cuh"

#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef THREADS
#define THREADS 128
#endif
#ifndef SM_HINT
#define SM_HINT 0
#endif
#if defined(SM_SILU) || SM_HINT > 5 /* session 16's knobs, measured within +-1.3% of the default and removed */
#error "SM_SILU and SM_HINT 6-8 were removed in session 16 (NOTES.md \"Session 16 measured\"; commit eca4273 holds them)"
#endif
#ifndef SM_GRID
#define SM_GRID 1
#endif
#ifndef SM_CONST_I
#define SM_CONST_I 14336 /* > 0: kernels with I = SM_CONST_I a compile-time constant run when the call's I equals it
			  * (the index division by a constant, as torch.compile's Triton kernel has); the definition's I since
			  * session 11: 1.070 / 1.061 / 1.052 / 1.010 / 1.007x at t1 / t4 / t16 / t64 / t1024 the runtime-I kernels (NOTES.md); 0: runtime I only */
#endif
#ifndef SM_NARROW_MAX
#define SM_NARROW_MAX 229376 /* T * I at or below which the narrow kernel runs (0: never); since session 11: t <= 16 of I 14336: n4t128 1.043 / 1.039 / 1.024 / 1.000 / 0.975x the flat kernel at t1 / t4 / t16 / t64 / t256 (NOTES.md) */
#endif
#ifndef SM_NARROW_EPT
#define SM_NARROW_EPT 4 /* the narrow kernel's elements per thread: 1, 2 or 4 (2-, 4-, 8-byte accesses) */
#endif
#ifndef SM_NARROW_THREADS
#define SM_NARROW_THREADS 128
#endif
#ifndef SM_EXACT
#define SM_EXACT 1 /* since session 23 (NOTES.md "Version 6": t64 1.035x, t256 1.013x, t1024 1.006x, t4096 1.002x; 0: the
		    * checked kernel everywhere): when the 1-D grid covers n exactly (n a multiple of THREADS *
		    * UNROLL, SM_GRID 1: every T of I 14336 at 128 x 1), the flat kernel without its bounds checks, whose
		    * loads wait for the runtime n (a constant-bank load, a compare and an exit before the first address;
		    * torch.compile's Triton kernel at t64 has none: its xnumel is a compile-time multiple of XBLOCK) */
#endif
#ifndef SM_EXACT_NARROW
#define SM_EXACT_NARROW 0 /* candidate (session 23): SM_EXACT's idea for the small-T narrow kernel (n a multiple of
			   * SM_NARROW_THREADS x SM_NARROW_EPT: every T of I 14336 at 128 x 4) */
#endif
#ifndef SM_BPS
#define SM_BPS 8 /* blocks per SM of SM_GRID 2 (-D only: not in the tune space) */
#endif

/* the L2 evict_first policy of SM_HINT 3 (0, unused, otherwise) */
static __device__ __forceinline__ uint64_t sm_policy(void)
{
	uint64_t pol = 0;
#if SM_HINT == 3 && defined(__CUDA_ARCH__)
	asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
#endif
	return pol;
}

/* one 16-byte load of x with the SM_HINT cache hint */
static __device__ __forceinline__ uint4 sm_ld(const uint4 *p, uint64_t pol)
{
	(void)pol;
#if !defined(__CUDA_ARCH__) || SM_HINT == 1 || SM_HINT == 5
	return __ldcs(p);
#else
	uint4 v;
#if SM_HINT == 2
	asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
	    : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
	    : "l"(p));
#elif SM_HINT == 3
	asm("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
	    : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
	    : "l"(p), "l"(pol));
#else
	asm("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
#endif
	return v;
#endif
}

/* one 16-byte store to out with the SM_HINT cache hint */
static __device__ __forceinline__ void sm_st(uint4 *p, uint4 v, uint64_t pol)
{
	(void)pol;
#if !defined(__CUDA_ARCH__) || SM_HINT == 1 || SM_HINT == 4
	__stcs(p, v);
#elif SM_HINT == 3
	asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;" ::"l"(p), "r"(v.x), "r"(v.y),
		     "r"(v.z), "r"(v.w), "l"(pol)
		     : "memory");
#else
	asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
		     : "memory");
#endif
}

/* silu(g) = g / (1 + exp(-g)) with the MUFU-based __expf and __fdividef (a few ulp: the tolerance is
 * rtol 1e-2, atol 1e-5 on outputs ~1); for g < -88.7 exp(-g) = inf and __fdividef(g, inf) = g * 0 = -0,
 * as the oracle's g / inf. The IEEE expf and division cost ~25 instructions per element, enough to
 * make the issue rate, not HBM, the limit. */
static __device__ __forceinline__ float sm_silu(float g)
{
	return __fdividef(g, 1.0f + __expf(-g));
}

/* 8 gate/up pairs packed as bf16x2 words -> 8 outputs */
static __device__ __forceinline__ uint4 sm_vec(uint4 g, uint4 u)
{
	const uint32_t gw[4] = {g.x, g.y, g.z, g.w}, uw[4] = {u.x, u.y, u.z, u.w};
	uint32_t ow[4];
#pragma unroll
	for (int j = 0; j < 4; j++) {
		__nv_bfloat162 gb = *reinterpret_cast<const __nv_bfloat162 *>(&gw[j]);
		__nv_bfloat162 ub = *reinterpret_cast<const __nv_bfloat162 *>(&uw[j]);
		float2 gf = __bfloat1622float2(gb), uf = __bfloat1622float2(ub);
		__nv_bfloat162 o = __floats2bfloat162_rn(sm_silu(gf.x) * uf.x, sm_silu(gf.y) * uf.y);
		ow[j] = *reinterpret_cast<uint32_t *>(&o);
	}
	return make_uint4(ow[0], ow[1], ow[2], ow[3]);
}

/* grid: x covers a row's ipv = I / 8 vectors (THREADS * UNROLL per CTA), y the tokens (grid-stride
 * when T > 65535); no integer division anywhere */
static __global__ void __launch_bounds__(THREADS) sm_vec_kernel(const uint4 *__restrict__ x, uint4 *__restrict__ out,
								int64_t T, int ipv)
{
	const uint64_t pol = sm_policy();
	const int c0 = blockIdx.x * (THREADS * UNROLL) + threadIdx.x;
	for (int64_t t = blockIdx.y; t < T; t += gridDim.y) {
		const uint4 *row = x + t * 2 * ipv;
		uint4 *orow = out + t * ipv;
		uint4 g[UNROLL], u[UNROLL];
#pragma unroll
		for (int r = 0; r < UNROLL; r++) {
			const int c = c0 + r * THREADS;
			if (c < ipv) {
				g[r] = sm_ld(row + c, pol);
				u[r] = sm_ld(row + ipv + c, pol);
			}
		}
#pragma unroll
		for (int r = 0; r < UNROLL; r++) {
			const int c = c0 + r * THREADS;
			if (c < ipv)
				sm_st(orow + c, sm_vec(g[r], u[r]), pol);
		}
	}
}

/* SM_GRID 1 / 2: a 1-D grid over the n = T * ipv output vectors (n < 2^31), each block on THREADS *
 * UNROLL consecutive ones (crossing rows: row t = v / ipv, one 32-bit division per vector); SM_GRID 1
 * launches one block per such chunk, 2 a persistent grid that strides over them. */
/* the flat kernels' body; CIPV > 0: ipv is that constant (the runtime ipv is ignored); EXACT: the grid covers n
 * exactly (SM_GRID 1, n = gridDim.x * THREADS * UNROLL, checked by the host), so no bounds checks */
template <uint32_t CIPV, bool EXACT = false>
static __device__ __forceinline__ void sm_flat_body(const uint4 *__restrict__ x, uint4 *__restrict__ out, uint32_t n,
						    uint32_t ipv_rt)
{
	if (EXACT) {
		const uint32_t ipv = CIPV ? CIPV : ipv_rt;
		const uint64_t pol = sm_policy();
		uint4 g[UNROLL], u[UNROLL];
#pragma unroll
		for (int r = 0; r < UNROLL; r++) {
			const uint32_t v = blockIdx.x * (uint32_t)(THREADS * UNROLL) + threadIdx.x + (uint32_t)(r * THREADS);
			const uint32_t t = v / ipv, c = v - t * ipv;
			const uint4 *row = x + (size_t)t * 2 * ipv;
			g[r] = sm_ld(row + c, pol);
			u[r] = sm_ld(row + ipv + c, pol);
		}
#pragma unroll
		for (int r = 0; r < UNROLL; r++)
			sm_st(out + blockIdx.x * (uint32_t)(THREADS * UNROLL) + threadIdx.x + (uint32_t)(r * THREADS),
			      sm_vec(g[r], u[r]), pol);
		return;
	}
	const uint32_t ipv = CIPV ? CIPV : ipv_rt;
	const uint64_t pol = sm_policy();
	const uint32_t step = SM_GRID == 2 ? gridDim.x * (uint32_t)(THREADS * UNROLL) : n;
	for (uint32_t base = blockIdx.x * (uint32_t)(THREADS * UNROLL); base < n; base += step) {
		uint4 g[UNROLL], u[UNROLL];
#pragma unroll
		for (int r = 0; r < UNROLL; r++) {
			const uint32_t v = base + threadIdx.x + (uint32_t)(r * THREADS);
			if (v < n) {
				const uint32_t t = v / ipv, c = v - t * ipv;
				const uint4 *row = x + (size_t)t * 2 * ipv;
				g[r] = sm_ld(row + c, pol);
				u[r] = sm_ld(row + ipv + c, pol);
			}
		}
#pragma unroll
		for (int r = 0; r < UNROLL; r++) {
			const uint32_t v = base + threadIdx.x + (uint32_t)(r * THREADS);
			if (v < n)
				sm_st(out + v, sm_vec(g[r], u[r]), pol);
		}
	}
}

static __global__ void __launch_bounds__(THREADS) sm_flat_kernel(const uint4 *__restrict__ x, uint4 *__restrict__ out,
								  uint32_t n, uint32_t ipv)
{
	sm_flat_body<0>(x, out, n, ipv);
}
#if SM_CONST_I > 0
static __global__ void __launch_bounds__(THREADS) sm_flat_kernel_ci(const uint4 *__restrict__ x, uint4 *__restrict__ out,
								     uint32_t n, uint32_t ipv)
{
	sm_flat_body<SM_CONST_I / 8>(x, out, n, ipv);
}
#if SM_EXACT && SM_GRID == 1
/* the exact-grid candidate (SM_EXACT): n == gridDim.x * THREADS * UNROLL */
static __global__ void __launch_bounds__(THREADS) sm_flat_kernel_cix(const uint4 *__restrict__ x, uint4 *__restrict__ out,
								      uint32_t n, uint32_t ipv)
{
	sm_flat_body<SM_CONST_I / 8, true>(x, out, n, ipv);
}
#endif
#endif

/* the narrow kernel's activation, for gated_narrow_body */
struct sm_narrow_act {
	static __device__ __forceinline__ float f(float g)
	{
		return sm_silu(g);
	}
};
/* Small T (T * I <= SM_NARROW_MAX): EPT = SM_NARROW_EPT consecutive outputs per thread, one SM_NARROW_THREADS-thread CTA
 * per THREADS * EPT of them, so even one token spreads over ~I / (THREADS * EPT) SMs with narrow loads
 * (torch.compile's Triton kernel at t1 / t16: 1 or 2 values per thread, 112-448 CTAs, where the
 * 16-byte flat kernel runs 14-224). n = T * I < 2^32; needs I % EPT == 0 and x, out aligned to
 * 2 * EPT bytes (rows then are). The arithmetic is the vector path's, value by value
 * (the body: problems/common/kernels/gated_narrow.cuh). */
template <uint32_t CI>
static __global__ void __launch_bounds__(SM_NARROW_THREADS)
	sm_narrow_kernel(const __nv_bfloat16 *__restrict__ x, __nv_bfloat16 *__restrict__ out, uint32_t n, uint32_t I_rt)
{
	gated_narrow_body<sm_narrow_act, SM_NARROW_EPT, SM_NARROW_THREADS, CI>(x, out, n, I_rt);
}
#if SM_EXACT_NARROW
/* the narrow kernel without its bounds check (SM_EXACT_NARROW): n == gridDim.x * SM_NARROW_THREADS * SM_NARROW_EPT */
template <uint32_t CI>
static __global__ void __launch_bounds__(SM_NARROW_THREADS)
	sm_narrow_kernel_x(const __nv_bfloat16 *__restrict__ x, __nv_bfloat16 *__restrict__ out, uint32_t n, uint32_t I_rt)
{
	gated_narrow_body<sm_narrow_act, SM_NARROW_EPT, SM_NARROW_THREADS, CI, true>(x, out, n, I_rt);
}
#endif
static __global__ void sm_scalar_kernel(const __nv_bfloat16 *__restrict__ x, __nv_bfloat16 *__restrict__ out,
					int64_t n, int64_t I)
{
	for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
		const int64_t t = e / I, i = e - t * I;
		const float g = __bfloat162float(x[t * 2 * I + i]), u = __bfloat162float(x[t * 2 * I + I + i]);
		out[e] = __float2bfloat16_rn(sm_silu(g) * u);
	}
}

#if SM_GRID == 2
/* the SM count of the current device, read once (the persistent grid of SM_GRID 2) */
static int sm_sms(void)
{
	static int sms = 0;
	if (sms <= 0) {
		int dev = 0;
		if (cudaGetDevice(&dev) != cudaSuccess ||
		    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0)
			sms = 132;
	}
	return sms;
}
#endif

static int sm_is_bf16(const sf_tensor *t)
{
	return t->dtype.code == SF_CODE_BFLOAT && t->dtype.bits == 16 && t->dtype.lanes == 1;
}

/* The entry point: checks dtypes and shapes (SF_ERR_UNSUPPORTED for anything the definition does not
 * allow), takes the vector kernel when alignment and shape permit, else the scalar one, and launches
 * on call->stream; SF_ERR_CUDA if the launch failed. */
SF_EXPORT int run(const sf_call *call)
{
	if (call->n_inputs != 1 || call->n_outputs != 1)
		return SF_ERR_UNSUPPORTED;
	const sf_tensor *x = &call->inputs[0], *o = &call->outputs[0];
	if (x->ndim != 2 || o->ndim != 2 || !sm_is_bf16(x) || !sm_is_bf16(o))
		return SF_ERR_UNSUPPORTED;
	const int64_t T = x->shape[0], I = o->shape[1];
	if (x->shape[1] != 2 * I || o->shape[0] != T)
		return SF_ERR_UNSUPPORTED;
	if (T == 0 || I == 0)
		return SF_OK;
	cudaStream_t st = (cudaStream_t)call->stream;
#if SM_NARROW_MAX > 0
	const unsigned nal = 2 * SM_NARROW_EPT; /* the narrow kernel's alignment */
	if (SM_NARROW_MAX > 0 && T * I <= (int64_t)SM_NARROW_MAX && T * I < 0xffffffffLL - SM_NARROW_THREADS * SM_NARROW_EPT &&
	    I % SM_NARROW_EPT == 0 && (uintptr_t)x->data % nal == 0 && (uintptr_t)o->data % nal == 0) {
		const int64_t n = T * I, per = SM_NARROW_THREADS * SM_NARROW_EPT;
		const unsigned nb = (unsigned)((n + per - 1) / per);
#if SM_EXACT_NARROW
		if (SM_CONST_I > 0 && I == SM_CONST_I && n % per == 0)
			sm_narrow_kernel_x<SM_CONST_I><<<nb, SM_NARROW_THREADS, 0, st>>>(
				(const __nv_bfloat16 *)x->data, (__nv_bfloat16 *)o->data, (uint32_t)n, (uint32_t)I);
		else
#endif
		if (SM_CONST_I > 0 && I == SM_CONST_I)
			sm_narrow_kernel<SM_CONST_I><<<nb, SM_NARROW_THREADS, 0, st>>>(
				(const __nv_bfloat16 *)x->data, (__nv_bfloat16 *)o->data, (uint32_t)n, (uint32_t)I);
		else
			sm_narrow_kernel<0><<<nb, SM_NARROW_THREADS, 0, st>>>(
				(const __nv_bfloat16 *)x->data, (__nv_bfloat16 *)o->data, (uint32_t)n, (uint32_t)I);
	} else
#endif
	if (I % 8 == 0 && I / 8 <= 0x3fffffff && ((uintptr_t)x->data % 16) == 0 && ((uintptr_t)o->data % 16) == 0) {
		const int64_t ipv = I / 8;
		if (SM_GRID != 0 && T * ipv <= 0x7fffffff) {
			int64_t blocks = (T * ipv + THREADS * UNROLL - 1) / (THREADS * UNROLL);
			#if SM_GRID == 2
			if (blocks > (int64_t)sm_sms() * SM_BPS)
				blocks = (int64_t)sm_sms() * SM_BPS;
#endif
#if SM_CONST_I > 0
#if SM_EXACT && SM_GRID == 1
			if (I == SM_CONST_I && (T * ipv) % (THREADS * UNROLL) == 0)
				sm_flat_kernel_cix<<<(unsigned)blocks, THREADS, 0, st>>>((const uint4 *)x->data, (uint4 *)o->data,
										      (uint32_t)(T * ipv), (uint32_t)ipv);
			else
#endif
			if (I == SM_CONST_I)
				sm_flat_kernel_ci<<<(unsigned)blocks, THREADS, 0, st>>>((const uint4 *)x->data, (uint4 *)o->data,
										     (uint32_t)(T * ipv), (uint32_t)ipv);
			else
#endif
				sm_flat_kernel<<<(unsigned)blocks, THREADS, 0, st>>>((const uint4 *)x->data, (uint4 *)o->data,
										(uint32_t)(T * ipv), (uint32_t)ipv);
		} else {
			const dim3 grid((unsigned)((ipv + THREADS * UNROLL - 1) / (THREADS * UNROLL)),
					(unsigned)(T < 65535 ? T : 65535));
			sm_vec_kernel<<<grid, THREADS, 0, st>>>((const uint4 *)x->data, (uint4 *)o->data, T, (int)ipv);
		}
	} else {
		const int64_t n = T * I;
		int64_t blocks = (n + 255) / 256;
		if (blocks > 65536)
			blocks = 65536;
		sm_scalar_kernel<<<(unsigned)blocks, 256, 0, st>>>((const __nv_bfloat16 *)x->data,
								  (__nv_bfloat16 *)o->data, n, I);
	}
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
