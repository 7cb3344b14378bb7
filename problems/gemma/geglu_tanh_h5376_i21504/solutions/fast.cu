/*
 * fast.cu - bandwidth-bound solution of geglu_tanh_h5376_i21504: y[t, j] = bf16(bf16(gelu_tanh(g)) * up)
 * with g = x[t, j], up = x[t, I + j], gelu_tanh(g) = 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3)))
 * in float32 (as g / (1 + exp(-2u)), see gg_act), rounded to bf16 as the oracle does, then multiplied
 * by up in float32 and rounded to bf16 again.
 *
 * One pass: every thread owns UNROLL 16-byte vectors (8 bf16) of gate and the matching vectors of up
 * (all loads issued before any math, so 2*UNROLL*16 bytes are in flight per thread), and writes one
 * 16-byte vector of out per pair. Defaults (version 2, measured on the H200 in session 7 beside
 * version 1's 2D grid / 256 threads / UNROLL 2 / .cs hints and beside torch.compile: NOTES.md): a
 * one-shot 1-D grid of 128-thread CTAs, one vector pair per thread, plain ld / st (Triton's shape).
 * Structural knobs (-D; tools/membench/ times the same choices beside torch.compile's Triton kernel): GG_HINT = the cache hints of the
 * 16-byte loads / stores (0 plain ld/st as Triton emits, 1 .cs both, 2 ld.nc.L1::no_allocate + plain
 * st, 3 an L2 evict_first policy on both, 4 plain ld + st.cs, 5 ld.cs + plain st); GG_GRID = 0 the
 * 2D grid, 1 a one-shot 1-D grid over the flattened T * I/8 vectors (blocks cross rows, row = v / (I/8):
 * Triton's structure), 2 a persistent 1-D grid of GG_BPS blocks per SM striding over them; THREADS
 * (CTA size) and UNROLL (16-byte vectors per stream per thread) apply to all three. The 1-D grids need
 * T * I/8 < 2^31 (else the 2D grid).
 * Vector path: I % 8 == 0 and x, out 16-byte aligned (every row then is); anything else takes the
 * scalar kernel (one element per thread), correct for any shape. Small T (since session 11):
 * GG_NARROW_MAX > 0 sends T * I <= it to the narrow kernel (GG_NARROW_EPT values per thread, 2-8 byte
 * accesses, GG_NARROW_THREADS-thread CTAs: more CTAs for one token, as torch.compile's kernel at t1).
 */
// solforge-tune: UNROLL=1,2,4 THREADS=128,256,512 GG_HINT=1,0,2,3,4,5 GG_GRID=0,1,2
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
#ifndef GG_HINT
#define GG_HINT 0
#endif
#ifndef GG_GRID
#define GG_GRID 1
#endif
#ifndef GG_CONST_I
#define GG_CONST_I 21504 /* > 0: kernels with I = GG_CONST_I a compile-time constant run when the call's I equals it
			  * (the index division by a constant, as torch.compile's Triton kernel has); the definition's I since
			  * session 11: 1.090 / 1.058 / 1.035x at t1 / t4 / t1024 the runtime-I kernels (NOTES.md); 0: runtime I only */
#endif
#ifndef GG_NARROW_MAX
#define GG_NARROW_MAX 131072 /* T * I at or below which the narrow kernel runs (0: never); since session 11: t <= 4 of I 21504 (t16 = 344064 lost: 0.986x): n4t128 1.042 / 1.036 / 0.986 / 0.996 / 0.954x the flat kernel at t1 / t4 / t16 / t64 / t256 (NOTES.md) */
#endif
#ifndef GG_NARROW_EPT
#define GG_NARROW_EPT 4 /* the narrow kernel's elements per thread: 1, 2 or 4 (2-, 4-, 8-byte accesses) */
#endif
#ifndef GG_NARROW_THREADS
#define GG_NARROW_THREADS 128
#endif
#ifndef GG_BPS
#define GG_BPS 8 /* blocks per SM of GG_GRID 2 (-D only: not in the tune space) */
#endif

/* the L2 evict_first policy of GG_HINT 3 (0, unused, otherwise) */
static __device__ __forceinline__ uint64_t gg_policy(void)
{
	uint64_t pol = 0;
#if GG_HINT == 3 && defined(__CUDA_ARCH__)
	asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
#endif
	return pol;
}

/* one 16-byte load of x with the GG_HINT cache hint */
static __device__ __forceinline__ uint4 gg_ld(const uint4 *p, uint64_t pol)
{
	(void)pol;
#if !defined(__CUDA_ARCH__) || GG_HINT == 1 || GG_HINT == 5
	return __ldcs(p);
#else
	uint4 v;
#if GG_HINT == 2
	asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
	    : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
	    : "l"(p));
#elif GG_HINT == 3
	asm("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
	    : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
	    : "l"(p), "l"(pol));
#else
	asm("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
#endif
	return v;
#endif
}

/* one 16-byte store to out with the GG_HINT cache hint */
static __device__ __forceinline__ void gg_st(uint4 *p, uint4 v, uint64_t pol)
{
	(void)pol;
#if !defined(__CUDA_ARCH__) || GG_HINT == 1 || GG_HINT == 4
	__stcs(p, v);
#elif GG_HINT == 3
	asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;" ::"l"(p), "r"(v.x), "r"(v.y),
		     "r"(v.z), "r"(v.w), "l"(pol)
		     : "memory");
#else
	asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
		     : "memory");
#endif
}

/*
 * gelu_tanh(g) in float32, rounded to bf16 and widened back (the oracle's sf_round_bf16). Uses the
 * exact identity 0.5 g (1 + tanh(u)) = g / (1 + exp(-2u)): no cancellation where tanh(u) -> -1, and
 * one MUFU exp + one fast divide instead of IEEE tanhf (~20 instructions per element, which made the
 * kernel issue-bound). Error: a few float32 ulp, far inside rtol 1e-2 / atol 5e-3; exp(-2u) = inf
 * (g < ~-9.4) gives g * 0 = -0, the limit. The bf16 rounding of act can flip by one ulp where the
 * float32 value sits on a rounding boundary: 2^-8 relative, inside the tolerance.
 */
static __device__ __forceinline__ float gg_act(float g)
{
	const float u = 0.79788456080286535588f * (g + 0.044715f * g * g * g);
	return __bfloat162float(__float2bfloat16_rn(__fdividef(g, 1.0f + __expf(-2.0f * u))));
}

/* 8 gate/up pairs packed as bf16x2 words -> 8 outputs */
static __device__ __forceinline__ uint4 gg_vec(uint4 g, uint4 u)
{
	const uint32_t gw[4] = {g.x, g.y, g.z, g.w}, uw[4] = {u.x, u.y, u.z, u.w};
	uint32_t ow[4];
#pragma unroll
	for (int j = 0; j < 4; j++) {
		__nv_bfloat162 gb = *reinterpret_cast<const __nv_bfloat162 *>(&gw[j]);
		__nv_bfloat162 ub = *reinterpret_cast<const __nv_bfloat162 *>(&uw[j]);
		float2 gf = __bfloat1622float2(gb), uf = __bfloat1622float2(ub);
		__nv_bfloat162 o = __floats2bfloat162_rn(gg_act(gf.x) * uf.x, gg_act(gf.y) * uf.y);
		ow[j] = *reinterpret_cast<uint32_t *>(&o);
	}
	return make_uint4(ow[0], ow[1], ow[2], ow[3]);
}

/* grid: x covers a row's ipv = I / 8 vectors (THREADS * UNROLL per CTA), y the tokens (grid-stride
 * when T > 65535); no integer division anywhere */
static __global__ void __launch_bounds__(THREADS) gg_vec_kernel(const uint4 *__restrict__ x, uint4 *__restrict__ out,
								int64_t T, int ipv)
{
	const uint64_t pol = gg_policy();
	const int c0 = blockIdx.x * (THREADS * UNROLL) + threadIdx.x;
	for (int64_t t = blockIdx.y; t < T; t += gridDim.y) {
		const uint4 *row = x + t * 2 * ipv;
		uint4 *orow = out + t * ipv;
		uint4 g[UNROLL], u[UNROLL];
#pragma unroll
		for (int r = 0; r < UNROLL; r++) {
			const int c = c0 + r * THREADS;
			if (c < ipv) {
				g[r] = gg_ld(row + c, pol);
				u[r] = gg_ld(row + ipv + c, pol);
			}
		}
#pragma unroll
		for (int r = 0; r < UNROLL; r++) {
			const int c = c0 + r * THREADS;
			if (c < ipv)
				gg_st(orow + c, gg_vec(g[r], u[r]), pol);
		}
	}
}

/* GG_GRID 1 / 2: a 1-D grid over the n = T * ipv output vectors (n < 2^31), each block on THREADS *
 * UNROLL consecutive ones (crossing rows: row t = v / ipv, one 32-bit division per vector); GG_GRID 1
 * launches one block per such chunk, 2 a persistent grid that strides over them. */
/* the flat kernels' body; CIPV > 0: ipv is that constant (the runtime ipv is ignored) */
template <uint32_t CIPV>
static __device__ __forceinline__ void gg_flat_body(const uint4 *__restrict__ x, uint4 *__restrict__ out, uint32_t n,
						    uint32_t ipv_rt)
{
	const uint32_t ipv = CIPV ? CIPV : ipv_rt;
	const uint64_t pol = gg_policy();
	const uint32_t step = GG_GRID == 2 ? gridDim.x * (uint32_t)(THREADS * UNROLL) : n;
	for (uint32_t base = blockIdx.x * (uint32_t)(THREADS * UNROLL); base < n; base += step) {
		uint4 g[UNROLL], u[UNROLL];
#pragma unroll
		for (int r = 0; r < UNROLL; r++) {
			const uint32_t v = base + threadIdx.x + (uint32_t)(r * THREADS);
			if (v < n) {
				const uint32_t t = v / ipv, c = v - t * ipv;
				const uint4 *row = x + (size_t)t * 2 * ipv;
				g[r] = gg_ld(row + c, pol);
				u[r] = gg_ld(row + ipv + c, pol);
			}
		}
#pragma unroll
		for (int r = 0; r < UNROLL; r++) {
			const uint32_t v = base + threadIdx.x + (uint32_t)(r * THREADS);
			if (v < n)
				gg_st(out + v, gg_vec(g[r], u[r]), pol);
		}
	}
}

static __global__ void __launch_bounds__(THREADS) gg_flat_kernel(const uint4 *__restrict__ x, uint4 *__restrict__ out,
								  uint32_t n, uint32_t ipv)
{
	gg_flat_body<0>(x, out, n, ipv);
}
#if GG_CONST_I > 0
static __global__ void __launch_bounds__(THREADS) gg_flat_kernel_ci(const uint4 *__restrict__ x, uint4 *__restrict__ out,
								     uint32_t n, uint32_t ipv)
{
	gg_flat_body<GG_CONST_I / 8>(x, out, n, ipv);
}
#endif

/* the narrow kernel's activation, for gated_narrow_body */
struct gg_narrow_act {
	static __device__ __forceinline__ float f(float g)
	{
		return gg_act(g);
	}
};
/* Small T (T * I <= GG_NARROW_MAX): EPT = GG_NARROW_EPT consecutive outputs per thread, one GG_NARROW_THREADS-thread CTA
 * per THREADS * EPT of them, so even one token spreads over ~I / (THREADS * EPT) SMs with narrow loads
 * (torch.compile's Triton kernel at t1 / t16: 1 or 2 values per thread, 168-672 CTAs, where the
 * 16-byte flat kernel runs 21-336). n = T * I < 2^32; needs I % EPT == 0 and x, out aligned to
 * 2 * EPT bytes (rows then are). The arithmetic is the vector path's, value by value
 * (the body: problems/common/kernels/gated_narrow.cuh). */
template <uint32_t CI>
static __global__ void __launch_bounds__(GG_NARROW_THREADS)
	gg_narrow_kernel(const __nv_bfloat16 *__restrict__ x, __nv_bfloat16 *__restrict__ out, uint32_t n, uint32_t I_rt)
{
	gated_narrow_body<gg_narrow_act, GG_NARROW_EPT, GG_NARROW_THREADS, CI>(x, out, n, I_rt);
}
static __global__ void gg_scalar_kernel(const __nv_bfloat16 *__restrict__ x, __nv_bfloat16 *__restrict__ out,
					int64_t n, int64_t I)
{
	for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
		const int64_t t = e / I, i = e - t * I;
		const float g = __bfloat162float(x[t * 2 * I + i]), u = __bfloat162float(x[t * 2 * I + I + i]);
		out[e] = __float2bfloat16_rn(gg_act(g) * u);
	}
}

#if GG_GRID == 2
/* the SM count of the current device, read once (the persistent grid of GG_GRID 2) */
static int gg_sms(void)
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

static int gg_is_bf16(const sf_tensor *t)
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
	if (x->ndim != 2 || o->ndim != 2 || !gg_is_bf16(x) || !gg_is_bf16(o))
		return SF_ERR_UNSUPPORTED;
	const int64_t T = x->shape[0], I = o->shape[1];
	if (x->shape[1] != 2 * I || o->shape[0] != T)
		return SF_ERR_UNSUPPORTED;
	if (T == 0 || I == 0)
		return SF_OK;
	cudaStream_t st = (cudaStream_t)call->stream;
#if GG_NARROW_MAX > 0
	const unsigned nal = 2 * GG_NARROW_EPT; /* the narrow kernel's alignment */
	if (GG_NARROW_MAX > 0 && T * I <= (int64_t)GG_NARROW_MAX && T * I < 0xffffffffLL - GG_NARROW_THREADS * GG_NARROW_EPT &&
	    I % GG_NARROW_EPT == 0 && (uintptr_t)x->data % nal == 0 && (uintptr_t)o->data % nal == 0) {
		const int64_t n = T * I, per = GG_NARROW_THREADS * GG_NARROW_EPT;
		const unsigned nb = (unsigned)((n + per - 1) / per);
		if (GG_CONST_I > 0 && I == GG_CONST_I)
			gg_narrow_kernel<GG_CONST_I><<<nb, GG_NARROW_THREADS, 0, st>>>(
				(const __nv_bfloat16 *)x->data, (__nv_bfloat16 *)o->data, (uint32_t)n, (uint32_t)I);
		else
			gg_narrow_kernel<0><<<nb, GG_NARROW_THREADS, 0, st>>>(
				(const __nv_bfloat16 *)x->data, (__nv_bfloat16 *)o->data, (uint32_t)n, (uint32_t)I);
	} else
#endif
	if (I % 8 == 0 && I / 8 <= 0x3fffffff && ((uintptr_t)x->data % 16) == 0 && ((uintptr_t)o->data % 16) == 0) {
		const int64_t ipv = I / 8;
		if (GG_GRID != 0 && T * ipv <= 0x7fffffff) {
			int64_t blocks = (T * ipv + THREADS * UNROLL - 1) / (THREADS * UNROLL);
			#if GG_GRID == 2
			if (blocks > (int64_t)gg_sms() * GG_BPS)
				blocks = (int64_t)gg_sms() * GG_BPS;
#endif
#if GG_CONST_I > 0
			if (I == GG_CONST_I)
				gg_flat_kernel_ci<<<(unsigned)blocks, THREADS, 0, st>>>((const uint4 *)x->data, (uint4 *)o->data,
										     (uint32_t)(T * ipv), (uint32_t)ipv);
			else
#endif
				gg_flat_kernel<<<(unsigned)blocks, THREADS, 0, st>>>((const uint4 *)x->data, (uint4 *)o->data,
										(uint32_t)(T * ipv), (uint32_t)ipv);
		} else {
			const dim3 grid((unsigned)((ipv + THREADS * UNROLL - 1) / (THREADS * UNROLL)),
					(unsigned)(T < 65535 ? T : 65535));
			gg_vec_kernel<<<grid, THREADS, 0, st>>>((const uint4 *)x->data, (uint4 *)o->data, T, (int)ipv);
		}
	} else {
		const int64_t n = T * I;
		int64_t blocks = (n + 255) / 256;
		if (blocks > 65536)
			blocks = 65536;
		gg_scalar_kernel<<<(unsigned)blocks, 256, 0, st>>>((const __nv_bfloat16 *)x->data,
								  (__nv_bfloat16 *)o->data, n, I);
	}
	return cudaGetLastError() == cudaSuccess ? SF_OK : SF_ERR_CUDA;
}
